// The CPU code generator's output as text: a golden file pins the generated C++ of a small
// shipped model (names after the layers, shape comments, the C API), and the standalone sources
// of every shipped model compile warning-free under -Wall -Wextra -Werror, as users build them.
#include "Golden.h"
#include "cpu/CpuTarget.h"
#include "frontend/OnnxImporter.h"
#include "ir/System.h"
#include "ir/passes/Pass.h"

#include <filesystem>
#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace triad;
namespace fs = std::filesystem;

namespace {

ir::Graph shippedModel(const std::string& name) {
  frontend::ImportOptions io;
  io.batch = 1;
  auto r = frontend::importOnnxFile(fs::path(TRIAD_SOURCE_DIR) / "models" / (name + ".onnx"), io);
  ir::defaultPipeline().run(r.graph);
  return std::move(r.graph);
}

} // namespace

TEST(CpuCodeGen, JetMlpSourceGolden) {
  cpu::CodeGenOptions o;
  o.standalone = true;
  cpu::GeneratedCode code = cpu::generateCpp(shippedModel("jet_mlp"), o);
  triad::testing::expectGolden(code.source, "jet_mlp_cpu.cpp");
  triad::testing::expectGolden(code.header, "jet_mlp_cpu.h");
}

TEST(CpuCodeGen, StandaloneSourcesCompileWithoutWarnings) {
  const char* cxx = std::getenv("TRIAD_CXX") ? std::getenv("TRIAD_CXX") : "c++";
  fs::path root = fs::path(TRIAD_BINARY_DIR) / "test-cache" / "codegen-warnings";
  for (std::string name : {"jet_mlp", "digits_mlp", "digits_cnn", "resblock_cnn"}) {
    SCOPED_TRACE(name);
    cpu::CodeGenOptions o;
    o.standalone = true;
    fs::path dir = root / name;
    fs::remove_all(dir);
    cpu::writeSources(cpu::generateCpp(shippedModel(name), o), dir, /*example=*/true);
    for (const char* file : {"model.cpp", "main.cpp"}) {
      std::string cmd = fmt::format("{} -std=c++17 -march=native -O1 -fsyntax-only -Wall -Wextra "
                                    "-Werror {} 2>&1",
                                    cxx, triad::shellQuote((dir / file).string()));
      int status = -1;
      std::string output = triad::runCapture(cmd, &status);
      EXPECT_EQ(status, 0) << cmd << "\n" << output;
    }
  }
}
