// Fuzz target `onnx_codegen` (issue 25): ONNX model bytes -> import -> every generator that turns
// the model into text — the CPU target's C++ (run-time and standalone forms), the GPU target's
// OpenCL C, the FPGA target's Verilog and Verilator testbench, the IR printer and its DOT — each
// text checked for a line that begins with a payload line of tests/fuzz/Payloads.h (a model
// string that left its comment or literal: finding "code injection"). With TRIAD_FUZZ_COMPILE=1
// (the regression replay sets it) the C++ is also compiled, loaded and run once, and the marker
// file is checked after every input (finding "code execution", FuzzHarness.h). Models over the
// onnx_interp budget are skipped.
#include "cpu/CodeGen.h"
#include "cpu/CpuTarget.h"
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/OnnxImporter.h"
#include "gpu/GpuCodeGen.h"
#include "ir/Printer.h"
#include "tests/fuzz/FuzzHarness.h"
#include "tests/fuzz/Payloads.h"

#include <cstdlib>
#include <string_view>

using namespace triad;

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 16; // each value
constexpr size_t kMaxNodes = 64;

bool small(const ir::Graph& g) {
  if (g.nodes().size() > kMaxNodes) return false;
  for (const auto& v : g.values()) {
    int64_t n = 1;
    for (int64_t d : v->type().shape) {
      if (d < 0 || (d > 0 && n > kMaxElements / d)) return false;
      n *= d;
    }
  }
  return true;
}

void checkText(std::string_view what, std::string_view text) {
  if (std::string line = fuzz::injectedLine(text); !line.empty())
    fuzz::finding("code injection", std::string(what) +
                                        ": a generated line begins with a model "
                                        "string: " +
                                        line);
}

/// A generator may refuse a model (unsupported op, dtype) with a user error; only what it
/// writes is judged here.
template <typename F> void generator(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Internal) throw;
  }
}

bool compileWanted() {
  const char* v = std::getenv("TRIAD_FUZZ_COMPILE");
  return v && std::string_view(v) == "1";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(fuzz::asText(data, size));
  fuzz::guarded([&] {
    frontend::ImportResult r = frontend::importOnnxBytes(bytes, fuzz::scratchDir(), "fuzz.onnx");
    const ir::Graph& g = r.graph;
    if (!small(g)) return;
    checkText("the IR printer", ir::printGraph(g));
    checkText("the DOT export", ir::toDot(g));
    generator([&] {
      cpu::CodeGenOptions co;
      for (bool standalone : {false, true}) {
        co.standalone = standalone;
        cpu::GeneratedCode c = cpu::generateCpp(g, co);
        checkText("the CPU target's C++", c.source);
        checkText("the CPU target's header", c.header);
        for (const auto& [name, text] : c.extraFiles)
          checkText(name, text);
      }
    });
    generator([&] { checkText("the GPU target's OpenCL C", gpu::generateOpenCL(g).source); });
    generator([&] {
      fpga::Emulator emu(g, fpga::QuantConfig{});
      fpga::VerilogOptions vo;
      vo.name = g.name;
      fpga::VerilogDesign d = fpga::emitVerilog(g, emu, vo);
      for (const auto& [name, text] : d.files())
        checkText(name, text);
      checkText("the Verilator testbench", d.testbench);
    });
    if (compileWanted())
      generator([&] {
        cpu::CpuOptions o;
        o.flags = "-O0";
        std::unique_ptr<ir::Target> target = cpu::makeCpuTarget(o);
        std::unique_ptr<ir::Executable> exe = target->compile(g);
        std::vector<ir::Tensor> inputs;
        for (const ir::Value* v : g.inputs())
          inputs.emplace_back(v->type());
        exe->run(inputs);
      });
  });
  return 0;
}
