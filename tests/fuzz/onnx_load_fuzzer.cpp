// Fuzz target `onnx_load`: ONNX model bytes -> frontend import (protobuf parse, opset and
// function inlining, ONNX shape inference, initializers with external data resolved in the
// scratch folder, every node through its op's parser and shape rule, import-time folding) ->
// IR verifier -> the target-independent pass pipeline (what `triad run --opt` and every compiled
// target run) -> the IR printer. Mutated by the ONNX-aware mutator (OnnxMutator.h) in the
// libFuzzer build.
#include "frontend/OnnxImporter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/passes/Pass.h"
#include "tests/fuzz/FuzzHarness.h"

using namespace triad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(fuzz::asText(data, size));
  fuzz::guarded([&] {
    frontend::ImportResult r = frontend::importOnnxBytes(bytes, fuzz::scratchDir(), "fuzz.onnx");
    // The importer verifies too; a problem here is a bug in the importer (Internal).
    ir::verifyOrThrow(r.graph, ErrorKind::Internal);
    (void)ir::printGraph(r.graph);
    ir::PassOptions po;
    po.print = [](std::string_view) {};
    ir::defaultPipeline().run(r.graph, po); // verifies after every changing pass (Internal)
    (void)ir::printGraph(r.graph);
  });
  return 0;
}
