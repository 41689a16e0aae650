// Fuzz target `onnx_interp`: ONNX model bytes -> import -> the reference interpreter on inputs
// derived from the model bytes, then the pass pipeline and the interpreter again (the outputs'
// types must not change). Models whose values exceed a small budget are skipped before anything
// runs (kMaxValueElements, kMaxTotalElements, kMaxMacs), so that the fuzzer explores kernels and
// their attribute handling instead of reporting the time and memory that large tensors need;
// bounding a run's memory is the CLI's job (--max-memory), not the interpreter's.
#include "frontend/OnnxImporter.h"
#include "ir/Cost.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"
#include "ir/passes/Pass.h"
#include "tests/fuzz/FuzzHarness.h"

using namespace triad;

namespace {

constexpr int64_t kMaxValueElements = int64_t(1) << 16; // one value
constexpr int64_t kMaxTotalElements = int64_t(1) << 20; // all values of the graph together
constexpr int64_t kMaxMacs = int64_t(1) << 24;          // ir::nodeWork over all nodes

// Elements of a shape, or -1 when over kMaxValueElements (counted here: a product of dims
// beyond int64 must not overflow in the harness itself).
int64_t boundedElements(const ir::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || (d > 0 && n > kMaxValueElements / d)) return -1;
    n *= d;
  }
  return n;
}

bool withinBudget(const ir::Graph& g) {
  int64_t total = 0, macs = 0;
  for (const auto& v : g.values()) {
    int64_t n = boundedElements(v->type().shape);
    if (n < 0) return false;
    total += n;
  }
  for (const auto& n : g.nodes()) {
    int64_t m = ir::nodeWork(*n).macs;
    if (m < 0 || m > kMaxMacs) return false;
    macs += m;
  }
  return total <= kMaxTotalElements && macs <= kMaxMacs;
}

// Deterministic input values: small integers and fractions from the model's bytes (so that the
// fuzzer can steer them a little), plus the odd zero, negative and large value.
std::vector<ir::Tensor> makeInputs(const ir::Graph& g, std::string_view bytes) {
  uint32_t h = 2166136261u;
  for (unsigned char c : bytes.substr(0, 256))
    h = (h ^ c) * 16777619u;
  std::vector<ir::Tensor> inputs;
  for (const ir::Value* v : g.inputs()) {
    ir::Tensor t(v->type());
    for (int64_t i = 0; i < t.numElements(); ++i) {
      h = h * 1103515245u + 12345u;
      int k = int((h >> 16) % 23) - 11; // -11..11
      double x = k * 0.375;
      if (ir::isInteger(t.dtype()) || t.dtype() == ir::DType::Bool)
        x = ir::isSignedInteger(t.dtype()) ? k % 4 : (k + 11) % 4;
      t.setDouble(i, x);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(fuzz::asText(data, size));
  fuzz::guarded([&] {
    frontend::ImportResult r = frontend::importOnnxBytes(bytes, fuzz::scratchDir(), "fuzz.onnx");
    if (!withinBudget(r.graph)) return;
    std::vector<ir::Tensor> inputs = makeInputs(r.graph, bytes);
    std::vector<ir::Tensor> before = ir::Interpreter(r.graph).run(inputs);
    ir::PassOptions po;
    po.print = [](std::string_view) {};
    ir::defaultPipeline().run(r.graph, po);
    if (!withinBudget(r.graph)) return;
    std::vector<ir::Tensor> after = ir::Interpreter(r.graph).run(inputs);
    if (after.size() != before.size()) fuzz::finding("passes", "the number of outputs changed");
    for (size_t i = 0; i < after.size(); ++i)
      if (after[i].type() != before[i].type())
        fuzz::finding("passes", fmt::format("output {} was {}, is {} after the passes", i,
                                            ir::typeToString(before[i].type()),
                                            ir::typeToString(after[i].type())));
  });
  return 0;
}
