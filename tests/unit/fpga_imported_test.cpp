// Imported precisions on the FPGA (fpga/layers/Quant.cpp): QONNX Quant nodes as fixed-point
// formats, the emulator exact against the interpreter and QONNX's executor, the config winning,
// and the refusals naming the node.
#include "fpga/Emulator.h"
#include "fpga/QuantConfig.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <set>

using namespace triad;
using namespace triad::fpga;
namespace fs = std::filesystem;

namespace {

fs::path src() {
  return fs::path(TRIAD_SOURCE_DIR);
}

const LayerInfo& layerNamed(const Emulator& e, const std::string& name) {
  for (const LayerInfo& l : e.layers())
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

TEST(FpgaImported, JetQmlpTakesTheModelsFormatsAndEqualsTheInterpreter) {
  ir::Tensor x = frontend::readNpy(src() / "models" / "jet_test_x.npy");
  ir::Tensor ref = frontend::readNpy(src() / "models" / "ref" / "jet_qmlp_output.npy");
  frontend::ImportOptions o;
  o.batch = x.shape()[0];
  auto imp = frontend::importOnnxFile(src() / "models" / "jet_qmlp.onnx", o);
  Emulator emu(imp.graph, QuantConfig{});
  EXPECT_EQ(formatToString(emu.inputQuant().format), "fixed<8,4>");
  const LayerInfo& fc1 = layerNamed(emu, "/fc1/Gemm");
  EXPECT_EQ(formatToString(fc1.quant.weight().format), "fixed<6,1>");               // int6, 2^-5
  EXPECT_EQ(formatToString(fc1.quant.bias().format), "fixed<16,7>");                // int16, 2^-9
  EXPECT_EQ(formatToString(fc1.outFormat), formatToString(fc1.quant.acc().format)); // exact
  // fc2: int6 per output channel, scales 2^-4..2^-7: the finest fraction, the widest integer.
  EXPECT_EQ(formatToString(layerNamed(emu, "/fc2/Gemm").quant.weight().format), "fixed<9,2>");
  EXPECT_EQ(formatToString(layerNamed(emu, "/relu1/act_quant/Quant").outFormat), "fixed<9,3>");
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1));
  ASSERT_EQ(r.values.size(), 1u);
  int64_t differ = 0;
  for (int64_t i = 0; i < ref.numElements(); ++i)
    differ += r.values[0].getDouble(i) != ref.getDouble(i) ||
              r.values[0].getDouble(i) != r.floatRef[0].getDouble(i);
  EXPECT_EQ(differ, 0) << "of " << ref.numElements();
}

TEST(FpgaImported, TheConfigWinsOverTheModel) {
  auto imp = frontend::importOnnxFile(src() / "models" / "jet_qmlp.onnx");
  QuantConfig c = QuantConfig::fromJson(
      R"({"layers": {"/fc1/Gemm": {"weight": "fixed<12,2>", "result": "fixed<16,6>"}}})", "t");
  Emulator emu(imp.graph, c);
  const LayerInfo& fc1 = layerNamed(emu, "/fc1/Gemm");
  EXPECT_EQ(formatToString(fc1.quant.weight().format), "fixed<12,2>");
  EXPECT_EQ(formatToString(fc1.quant.bias().format), "fixed<16,7>"); // still the model's
  EXPECT_EQ(formatToString(fc1.outFormat), "fixed<16,6>");
}

// The one-node Quant tests on data: the emulator runs those with a power-of-two scale per
// tensor, zero point 0 and ROUND/FLOOR (equal to QONNX's executor) and refuses the others with
// an Unsupported error naming the node.
TEST(FpgaImported, NodeTestsRunExactlyOrAreRefusedNamingTheNode) {
  const std::set<std::string> runs = {"quant_int8_narrow", "quant_mode_half_even",
                                      "quant_domain_finn", "quant_domain_brevitas",
                                      "quant_int32",       "quant_unsigned_1bit"};
  std::set<std::string> ran;
  for (const auto& e : fs::directory_iterator(src() / "tests" / "data" / "qonnx")) {
    std::string name = e.path().filename().string();
    ir::Tensor x = frontend::readNpy(e.path() / "input_0.npy");
    ir::Tensor want = frontend::readNpy(e.path() / "output_0.npy");
    frontend::ImportOptions o;
    o.batch = x.shape()[0];
    auto imp = frontend::importOnnxFile(e.path() / "model.onnx", o);
    try {
      Emulator emu(imp.graph, QuantConfig{});
      EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1), false);
      for (int64_t i = 0; i < want.numElements(); ++i)
        ASSERT_EQ(r.values[0].getDouble(i), want.getDouble(i)) << name << " element " << i;
      ran.insert(name);
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), ErrorKind::Unsupported) << name << ": " << err.what();
      EXPECT_NE(std::string(err.what()).find("node '/"), std::string::npos)
          << name << ": " << err.what();
    }
  }
  EXPECT_EQ(ran, runs);
}

} // namespace
