// Fixed-point arithmetic (fpga/FixedPoint.h), the quantization config and the bit-accurate
// emulator (fpga/Emulator.h), checked against hand-computed raw values.
#include "fpga/Emulator.h"
#include "fpga/FixedPoint.h"
#include "fpga/QuantConfig.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/ops/Linear.h"

#include <gtest/gtest.h>

using namespace triad;
using namespace triad::fpga;

namespace {

const FixedFormat F84{8, 4, true};   // lsb 1/16, raw [-128, 127]
const FixedFormat U83{8, 3, false};  // lsb 1/32, raw [0, 255]
const FixedFormat F63{6, 3, true};   // lsb 1/8, raw [-32, 31]
const FixedFormat F62{6, 2, true};   // lsb 1/16
const FixedFormat F124{12, 4, true}; // lsb 1/256

int64_t q(double x, Rounding r, Overflow o = Overflow::Saturate, const FixedFormat& f = F84) {
  return quantize(x, f, r, o);
}

template <typename F> void expectUsageError(F&& f, const std::string& needle) {
  try {
    f();
    FAIL() << "no error; expected one mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

} // namespace

TEST(FixedPoint, TruncateRoundsTowardMinusInfinity) {
  EXPECT_EQ(q(1.03125, Rounding::Truncate), 16);   // 16.5 lsb
  EXPECT_EQ(q(1.09375, Rounding::Truncate), 17);   // 17.5
  EXPECT_EQ(q(-1.03125, Rounding::Truncate), -17); // -16.5
  EXPECT_EQ(q(-1.09375, Rounding::Truncate), -18); // -17.5
  EXPECT_EQ(q(-1.01, Rounding::Truncate), -17);    // -16.16
  EXPECT_EQ(q(1.06, Rounding::Truncate), 16);      // 16.96
  EXPECT_EQ(q(-2.0, Rounding::Truncate), -32);     // exact
}

TEST(FixedPoint, RoundHalfUpBreaksTiesTowardPlusInfinity) {
  EXPECT_EQ(q(1.03125, Rounding::RoundHalfUp), 17);
  EXPECT_EQ(q(1.09375, Rounding::RoundHalfUp), 18);
  EXPECT_EQ(q(-1.03125, Rounding::RoundHalfUp), -16);
  EXPECT_EQ(q(-1.09375, Rounding::RoundHalfUp), -17);
  EXPECT_EQ(q(-1.01, Rounding::RoundHalfUp), -16);
  EXPECT_EQ(q(-1.04, Rounding::RoundHalfUp), -17); // -16.64
}

TEST(FixedPoint, ConvergentBreaksTiesToEven) {
  EXPECT_EQ(q(1.03125, Rounding::Convergent), 16);
  EXPECT_EQ(q(1.09375, Rounding::Convergent), 18);
  EXPECT_EQ(q(-1.03125, Rounding::Convergent), -16);
  EXPECT_EQ(q(-1.09375, Rounding::Convergent), -18);
  EXPECT_EQ(q(-1.01, Rounding::Convergent), -16);
  EXPECT_EQ(q(-1.04, Rounding::Convergent), -17);
}

TEST(FixedPoint, SaturateClampsToTheRange) {
  CastStatus st;
  EXPECT_EQ(quantize(8.0, F84, Rounding::Truncate, Overflow::Saturate, &st), 127);
  EXPECT_TRUE(st.saturated);
  EXPECT_FALSE(st.wrapped);
  EXPECT_EQ(q(-9.0, Rounding::Truncate), -128);
  EXPECT_EQ(q(1e30, Rounding::Truncate), 127);
  EXPECT_EQ(q(-0.5, Rounding::Truncate, Overflow::Saturate, U83), 0);
  EXPECT_EQ(q(9.0, Rounding::Truncate, Overflow::Saturate, U83), 255);
  CastStatus ok;
  EXPECT_EQ(quantize(-8.0, F84, Rounding::Truncate, Overflow::Saturate, &ok), -128);
  EXPECT_FALSE(ok.saturated);
  EXPECT_DOUBLE_EQ(maxValue(F84), 7.9375);
  EXPECT_DOUBLE_EQ(minValue(F84), -8.0);
}

TEST(FixedPoint, WrapKeepsTheLowBits) {
  CastStatus st;
  EXPECT_EQ(quantize(8.0, F84, Rounding::Truncate, Overflow::Wrap, &st), -128); // 128 - 256
  EXPECT_TRUE(st.wrapped);
  EXPECT_FALSE(st.saturated);
  EXPECT_EQ(q(-9.0, Rounding::Truncate, Overflow::Wrap), 112); // -144 + 256
  EXPECT_EQ(q(20.0, Rounding::Truncate, Overflow::Wrap), 64);  // 320 - 256
  EXPECT_EQ(q(-0.5, Rounding::Truncate, Overflow::Wrap, U83), 240);
  EXPECT_EQ(wrapBits(300, 8, false), 44);
  EXPECT_EQ(wrapBits(-129, 8, true), 127);
  EXPECT_EQ(q(0x1p70, Rounding::Truncate, Overflow::Wrap), 0); // all low bits zero
}

TEST(FixedPoint, CastBetweenFormats) {
  // fixed<8,4> raw 107 (6.6875) -> fixed<6,3>: 53.5 lsb, then out of [-32, 31].
  EXPECT_EQ(cast(107, F84, F63, Rounding::Truncate, Overflow::Saturate), 31);
  EXPECT_EQ(cast(107, F84, F63, Rounding::Truncate, Overflow::Wrap), 53 - 64);
  EXPECT_EQ(cast(107, F84, F63, Rounding::RoundHalfUp, Overflow::Wrap), 54 - 64);
  EXPECT_EQ(cast(107, F84, F63, Rounding::Convergent, Overflow::Wrap), 54 - 64);
  // raw -27 (-1.6875) -> -13.5 lsb
  EXPECT_EQ(cast(-27, F84, F63, Rounding::Truncate, Overflow::Wrap), -14);
  EXPECT_EQ(cast(-27, F84, F63, Rounding::RoundHalfUp, Overflow::Wrap), -13);
  EXPECT_EQ(cast(-27, F84, F63, Rounding::Convergent, Overflow::Wrap), -14);
  // raw -25 (-1.5625) -> -12.5 lsb: convergent goes to -12 (even)
  EXPECT_EQ(cast(-25, F84, F63, Rounding::Convergent, Overflow::Wrap), -12);
  // Widening is exact.
  EXPECT_EQ(cast(-5, F84, F124, Rounding::Truncate, Overflow::Wrap), -80);
  // Signed to unsigned: negative values saturate to 0.
  CastStatus st;
  EXPECT_EQ(cast(-1, F84, U83, Rounding::Truncate, Overflow::Saturate, &st), 0);
  EXPECT_TRUE(st.saturated);
  for (int64_t r = -128; r <= 127; ++r)
    EXPECT_EQ(dequantize(cast(r, F84, F124, Rounding::Truncate, Overflow::Wrap), F124),
              dequantize(r, F84));
}

TEST(FixedPoint, ExactProductsAndSums) {
  // 1.5 (fixed<8,4> raw 24) * -0.75 (fixed<6,2> raw -12)
  FixedFormat p = productFormat(F84, F62);
  EXPECT_EQ(p, (FixedFormat{14, 6, true}));
  int64_t r = multiply(24, F84, -12, F62);
  EXPECT_EQ(r, -288);
  EXPECT_DOUBLE_EQ(dequantize(r, p), -1.125);
  EXPECT_EQ(sumFormat(F84, F62), (FixedFormat{9, 5, true}));
  EXPECT_EQ(add(24, F84, -12, F62), 12);
  EXPECT_EQ(sumFormat(F84, U83), (FixedFormat{10, 5, true}));
  EXPECT_EQ(add(-16, F84, 255, U83), -32 + 255); // -1 + 7.96875 in 1/32 units
  EXPECT_EQ(productFormat(FixedFormat{32, 16, true}, FixedFormat{32, 16, true}).width, 64);
  EXPECT_EQ(multiply(INT32_MIN, FixedFormat{32, 16, true}, INT32_MIN, FixedFormat{32, 16, true}),
            int64_t(1) << 62);
}

TEST(FixedPoint, ParseAndPrintFormats) {
  EXPECT_EQ(parseFormat("fixed<16,6>"), (FixedFormat{16, 6, true}));
  EXPECT_EQ(parseFormat("ufixed<8,3>"), (FixedFormat{8, 3, false}));
  EXPECT_EQ(parseFormat("ap_fixed<16,6>"), (FixedFormat{16, 6, true}));
  EXPECT_EQ(parseFormat(" ap_ufixed< 8 , 3 > "), (FixedFormat{8, 3, false}));
  EXPECT_EQ(parseFormat("fixed<8,-2>"), (FixedFormat{8, -2, true}));
  EXPECT_EQ(formatToString(FixedFormat{16, 6, true}), "fixed<16,6>");
  EXPECT_EQ(formatToString(FixedFormat{8, 3, false}), "ufixed<8,3>");
  expectUsageError([] { parseFormat("fixed<16>"); }, "fixed<16>");
  expectUsageError([] { parseFormat("float<16,6>"); }, "unknown type name");
  expectUsageError([] { parseFormat("ap_fixed<16,6,AP_RND>"); }, "rounding");
  expectUsageError([] { parseFormat("fixed<a,6>"); }, "'a' is not an integer");
  expectUsageError([] { parseFormat("fixed<0,0>"); }, "width");
  expectUsageError([] { parseFormat("fixed<70,6>"); }, "width");
  expectUsageError([] { parseFormat("fixed<16,6"); }, "missing");
  EXPECT_EQ(parseRounding("AP_RND_CONV"), Rounding::Convergent);
  EXPECT_EQ(parseOverflow("sat"), Overflow::Saturate);
  expectUsageError([] { parseRounding("nearest"); }, "nearest");
}

TEST(QuantConfig, ResolvesPerLayerAndRole) {
  QuantConfig c = QuantConfig::fromJson(R"({
    "default": {"precision": "fixed<12,4>", "result": {"overflow": "saturate"}},
    "input": "ufixed<8,1>",
    "layers": {"fc": {"weight": "fixed<8,2>", "accumulator": {"precision": "fixed<24,8>",
                      "rounding": "round_half_up"}}}})",
                                        "cfg.json");
  LayerQuant fc = resolveLayer(c, "fc", {});
  EXPECT_EQ(fc.weight().format, (FixedFormat{8, 2, true}));
  EXPECT_EQ(fc.weight().rounding, Rounding::Convergent);
  EXPECT_EQ(fc.weight().overflow, Overflow::Saturate);
  EXPECT_EQ(fc.bias().format, (FixedFormat{12, 4, true}));
  EXPECT_EQ(fc.acc().format, (FixedFormat{24, 8, true}));
  EXPECT_EQ(fc.acc().rounding, Rounding::RoundHalfUp);
  EXPECT_EQ(fc.acc().overflow, Overflow::Wrap);
  EXPECT_EQ(fc.result().overflow, Overflow::Saturate);
  EXPECT_EQ(fc.result().rounding, Rounding::Truncate);
  EXPECT_EQ(resolveInput(c, {}).format, (FixedFormat{8, 1, false}));
  LayerQuant other = resolveLayer(QuantConfig{}, "x", {});
  EXPECT_EQ(other.result().format, (FixedFormat{16, 6, true}));
  // "auto": integer bits from the observed range (+1 margin for non-constant roles).
  QuantConfig a = QuantConfig::fromJson(R"({"default": {"precision": "auto"}})", "a.json");
  LayerQuant al = resolveLayer(a, "x", RoleRanges{0.3, 1.0, 20.0, std::nullopt});
  EXPECT_EQ(al.weight().format, (FixedFormat{16, 0, true})); // 0.3 < 2^-1
  EXPECT_EQ(al.bias().format, (FixedFormat{16, 2, true}));   // 1.0 needs 2 bits
  EXPECT_EQ(al.acc().format, (FixedFormat{16, 7, true}));    // 20 -> 6 bits, + margin
  EXPECT_EQ(autoIntBits(0.3, 16, false), -1);
}

TEST(QuantConfig, ErrorsNameTheKey) {
  expectUsageError(
      [] { QuantConfig::fromJson(R"({"layers": {"fc": {"wieght": "x"}}})", "c.json"); },
      "layers['fc'].wieght");
  expectUsageError(
      [] { QuantConfig::fromJson(R"({"default": {"precision": "fixed<16>"}})", "c.json"); },
      "default.precision");
  expectUsageError(
      [] { QuantConfig::fromJson(R"({"default": {"result": {"rounding": "up"}}})", "c.json"); },
      "default.result.rounding");
  expectUsageError([] { QuantConfig::fromJson(R"({"default": {"table_size": 1000}})", "c.json"); },
                   "table_size");
  expectUsageError([] { QuantConfig::fromJson("{", "c.json"); }, "not valid JSON");
  // Found by the quant_config fuzz target: a number beyond double escaped as json's out_of_range
  // (an internal error, exit 70).
  expectUsageError([] { QuantConfig::fromJson(R"({"auto_margin": 1e400})", "c.json"); },
                   "c.json: not valid JSON");
  QuantConfig wide = QuantConfig::fromJson(R"({"layers": {"fc": {"result": "fixed<40,8>"}}})", "c");
  expectUsageError([&] { resolveLayer(wide, "fc", {}); }, "layer 'fc'");
}

namespace {

// x [1,2] -> Gemm(B [2,2], C [2]) named "fc" -> y
ir::Graph tinyGemm() {
  ir::Graph g;
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {1, 2}, {}});
  ir::Value* B =
      g.addConstant("B", ir::Tensor::fromVector<float>({2, 2}, {0.5f, -0.25f, 1.0f, 0.3f}));
  ir::Value* C = g.addConstant("C", ir::Tensor::fromVector<float>({2}, {0.1f, -2.0f}));
  ir::Node* n = g.addNode(ir::OpKind::Gemm, "fc", {x, B, C}, std::make_shared<ir::GemmAttrs>(),
                          {"y"}, {ir::TensorType{ir::DType::F32, {1, 2}, {}}});
  g.addOutput(n->output(0));
  return g;
}

QuantConfig tinyConfig(const std::string& acc) {
  return QuantConfig::fromJson(
      fmt::format(R"({{"input": "fixed<8,4>", "layers": {{"fc": {{"weight": "fixed<8,2>",
        "bias": "fixed<8,4>", "accumulator": "{}", "result": "fixed<8,4>"}}}}}})",
                  acc),
      "tiny");
}

} // namespace

TEST(Emulator, TinyGemmHandComputed) {
  ir::Graph g = tinyGemm();
  Emulator emu(g, tinyConfig("fixed<10,5>"));
  ir::Tensor x = ir::Tensor::fromVector<float>({1, 2}, {1.5f, -0.75f}); // raw 24, -12
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1));
  // w (frac 6): 0.5->32 -0.25->-16 1.0->64 0.3->19; b (frac 4): 0.1->2 -2.0->-32.
  // n=0: 24*32=768 -> 24 (frac 5); -12*64=-768 -> -24; bias 2 -> 4; acc 4 -> result 2.
  // n=1: 24*-16=-384 -> -12; -12*19=-228 -> -7.125 truncated to -8; bias -64; acc -84 -> -42.
  ASSERT_EQ(r.raw.size(), 1u);
  EXPECT_EQ(r.raw[0].dtype(), ir::DType::Fixed);
  EXPECT_EQ(r.raw[0].type().fixed, (FixedFormat{8, 4, true}));
  EXPECT_EQ(r.raw[0].data<int64_t>()[0], 2);
  EXPECT_EQ(r.raw[0].data<int64_t>()[1], -42);
  EXPECT_FLOAT_EQ(r.values[0].data<float>()[1], -2.625f);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[1].name, "fc");
  EXPECT_EQ(r.layers[1].wrapped, 0);
  EXPECT_EQ(r.layers[1].saturated, 0);
  // float: y = [1.5*0.5 - 0.75*1 + 0.1, 1.5*-0.25 - 0.75*0.3 - 2] = [0.1, -2.6]
  EXPECT_NEAR(r.layers[1].maxAbsError, 0.025, 1e-6);
}

TEST(Emulator, AccumulatorWrapsModuloItsWidth) {
  ir::Graph g = tinyGemm();
  Emulator emu(g, tinyConfig("fixed<7,2>")); // raw [-64, 63]: -84 wraps to 44
  ir::Tensor x = ir::Tensor::fromVector<float>({1, 2}, {1.5f, -0.75f});
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1));
  EXPECT_EQ(r.raw[0].data<int64_t>()[0], 2);
  EXPECT_EQ(r.raw[0].data<int64_t>()[1], 22);
  EXPECT_EQ(r.layers[1].wrapped, 1);
}

TEST(Emulator, UnsupportedOpNamesTheNode) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {1, 4}, {}});
  g.addOutput(g.addNode(ir::OpKind::Exp, "/act/Exp", {x}, nullptr, {"y"},
                        {ir::TensorType{ir::DType::F32, {1, 4}, {}}})
                  ->output(0));
  try {
    Emulator emu(g, QuantConfig{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("'/act/Exp' (Exp)"), std::string::npos) << e.what();
  }
}

namespace {

// Top-1 accuracy of the emulator (and of float) on a shipped test split.
std::pair<double, double> accuracy(const std::string& model, const std::string& xs,
                                   const std::string& ys, const QuantConfig& cfg) {
  std::string dir = std::string(TRIAD_SOURCE_DIR) + "/models/";
  ir::Tensor x = frontend::readNpy(dir + xs);
  ir::Tensor y = frontend::readNpy(dir + ys);
  frontend::ImportOptions o;
  o.batch = x.shape()[0];
  auto imp = frontend::importOnnxFile(dir + model, o);
  Emulator emu(imp.graph, cfg, std::span<const ir::Tensor>(&x, 1));
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1));
  auto top1 = [&](const ir::Tensor& t) {
    int64_t cols = t.shape()[1], ok = 0;
    for (int64_t i = 0; i < t.shape()[0]; ++i) {
      int64_t best = 0;
      for (int64_t c = 1; c < cols; ++c)
        if (t.getDouble(i * cols + c) > t.getDouble(i * cols + best)) best = c;
      ok += best == y.getInt(i);
    }
    return double(ok) / double(t.shape()[0]);
  };
  return {top1(r.values[0]), top1(r.floatRef[0])};
}

} // namespace

// Issue 4: digits_mlp at the default fixed<16,6> within 0.5 points of float. The logits of the
// last layer reach 54, beyond fixed<16,6>'s range [-32, 32): the default result mode saturates
// and the default accumulator is exact, so the class order survives.
TEST(Emulator, DigitsMlpAtDefaultFixed16_6KeepsAccuracy) {
  auto [fixedAcc, floatAcc] =
      accuracy("digits_mlp.onnx", "digits_test_x_flat.npy", "digits_test_y.npy", QuantConfig{});
  EXPECT_NEAR(floatAcc, 0.9722, 1e-3);
  EXPECT_GE(fixedAcc, floatAcc - 0.005);
}

// With hls4ml's defaults (16-bit wrapping accumulator and results) the same model loses most of
// its accuracy: the wrapped logits change classes. The report's wrap counts show where.
TEST(Emulator, DigitsMlpWithWrappingResultsLosesAccuracy) {
  QuantConfig cfg = QuantConfig::fromJson(
      R"({"default": {"precision": "fixed<16,6>", "result": {"overflow": "wrap"},
                      "accumulator": "fixed<16,6>"}})",
      "digits-wrap");
  auto [fixedAcc, floatAcc] =
      accuracy("digits_mlp.onnx", "digits_test_x_flat.npy", "digits_test_y.npy", cfg);
  EXPECT_LT(fixedAcc, floatAcc - 0.1);
}

TEST(QuantConfig, ExactAccumulatorFormat) {
  // 64 products of fixed<16,6> x fixed<16,6> plus a bias: 65 terms need 7 more bits.
  EXPECT_EQ(exactAccumulator(FixedFormat{16, 6, true}, FixedFormat{16, 6, true}, 64),
            (FixedFormat{39, 19, true}));
  EXPECT_EQ(exactAccumulator(FixedFormat{8, 3, false}, FixedFormat{4, 1, true}, 3),
            (FixedFormat{14, 6, true}));
  QuantConfig bad = QuantConfig::fromJson(R"({"default": {"weight": "exact"}})", "bad");
  try {
    resolveLayer(bad, "fc", RoleRanges{});
    FAIL() << "exact weights accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("accumulators only"), std::string::npos) << e.what();
  }
}

TEST(Emulator, JetMlpAtDefaultFixed16_6) {
  auto [fixedAcc, floatAcc] =
      accuracy("jet_mlp.onnx", "jet_test_x.npy", "jet_test_y.npy", QuantConfig{});
  EXPECT_GE(fixedAcc, floatAcc - 0.005);
}

TEST(Emulator, SigmoidAndTanhTables) {
  for (ir::OpKind k : {ir::OpKind::Sigmoid, ir::OpKind::Tanh}) {
    ir::Graph g;
    ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {1, 201}, {}});
    ir::Node* n =
        g.addNode(k, "act", {x}, nullptr, {"y"}, {ir::TensorType{ir::DType::F32, {1, 201}, {}}});
    g.addOutput(n->output(0));
    Emulator emu(g, QuantConfig{});
    std::vector<float> xs;
    for (int i = 0; i <= 200; ++i)
      xs.push_back(float(i - 100) / 10.0f); // -10 .. 10, including 0 at index 100
    ir::Tensor t = ir::Tensor::fromVector<float>({1, 201}, xs);
    EmulatorResult r = emu.run(std::span<const ir::Tensor>(&t, 1));
    // Sigmoid: 1024 entries over [-8, 8), step 1/64, midpoints: x=0 -> sigmoid(1/128) -> raw 514.
    // Tanh: over [-4, 4), step 1/128: x=0 -> tanh(1/256) * 1024 = 4.0 -> raw 4.
    EXPECT_EQ(r.raw[0].data<int64_t>()[100], k == ir::OpKind::Sigmoid ? 514 : 4);
    EXPECT_LT(r.layers[1].maxAbsError, 0.01);
  }
}

TEST(Emulator, ConfigNamingAnUnknownLayerIsAnError) {
  ir::Graph g = tinyGemm();
  QuantConfig c = QuantConfig::fromJson(R"({"layers": {"fc2": "fixed<8,2>"}})", "c.json");
  expectUsageError([&] { Emulator emu(g, c); }, "'fc2'");
}
