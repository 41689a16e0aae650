// QDQ integer grids on the FPGA (fpga/layers/Quant.cpp): the requantization arithmetic
// k = clamp(round_half_even(x * M + T), qmin - z, qmax - z) in fixed point (ties, saturation,
// negative values, zero points), the host's input quantization (ONNX Runtime's QuantizeLinear),
// and the emulator on a small QDQ graph against ONNX's reference semantics.
#include "fpga/Emulator.h"
#include "fpga/layers/Layer.h"
#include "frontend/OnnxImporter.h"
#include "ir/Interpreter.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Quantize.h"
#include "ir/passes/Pass.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace triad;
using namespace triad::fpga;

namespace {

// An integer input (fixed<16,16>): x * M rounds like the real product.
const FixedFormat kInt16{16, 16, true};

TEST(FpgaRequant, TiesRoundToEven) {
  // M = 0.5: x * M is a tie for every odd x.
  Requant r = Requant::plan(kInt16, {0.5}, {}, -128, 127);
  EXPECT_EQ(r.apply(1, 0), 0);   // 0.5 -> 0
  EXPECT_EQ(r.apply(3, 0), 2);   // 1.5 -> 2
  EXPECT_EQ(r.apply(5, 0), 2);   // 2.5 -> 2
  EXPECT_EQ(r.apply(-1, 0), 0);  // -0.5 -> 0
  EXPECT_EQ(r.apply(-3, 0), -2); // -1.5 -> -2
  EXPECT_EQ(r.apply(-5, 0), -2); // -2.5 -> -2
  EXPECT_EQ(r.apply(4, 0), 2);
}

TEST(FpgaRequant, NegativeValuesAndNonPowerOfTwoMultipliers) {
  double m = 0.0123456789;
  Requant r = Requant::plan(FixedFormat{24, 24, true}, {m}, {}, -128, 127);
  for (int64_t x : {-9000, -4567, -1, 0, 1, 81, 4567, 9000}) {
    double exact = double(x) * m;
    EXPECT_EQ(r.apply(x, 0), int64_t(std::nearbyint(exact))) << x; // no ties at these x
  }
  // 24 significant bits: the multiplier is within 2^-24 of m (relative).
  EXPECT_NEAR(dequantize(r.m[0], r.mf), m, m * std::ldexp(1.0, -24));
}

TEST(FpgaRequant, SaturatesAtTheGridBoundsOfTheZeroPoint) {
  // uint8 with zero point 167: k = q - z in [-167, 88].
  Requant r = Requant::plan(kInt16, {0.25}, {}, 0 - 167, 255 - 167);
  EXPECT_EQ(formatToString(r.out), "fixed<9,9>");
  EXPECT_EQ(r.apply(1000, 0), 88);
  EXPECT_EQ(r.apply(-1000, 0), -167);
  EXPECT_EQ(r.apply(352, 0), 88); // exactly the bound
  EXPECT_EQ(r.apply(356, 0), 88); // 89 clamps
  EXPECT_EQ(r.apply(-668, 0), -167);
  EXPECT_EQ(r.apply(-672, 0), -167); // -168 clamps
  // int8 with zero point -128 (ReLU folded into the QuantizeLinear): k in [0, 255].
  Requant u = Requant::plan(kInt16, {1.0}, {}, -128 + 128, 127 + 128);
  EXPECT_EQ(u.apply(-5, 0), 0);
  EXPECT_EQ(u.apply(255, 0), 255);
  EXPECT_EQ(u.apply(300, 0), 255);
}

TEST(FpgaRequant, PerChannelMultipliersAndOffsets) {
  // A BatchNormalization folded into the requantization: y = x * M[c] + T[c].
  Requant r = Requant::plan(kInt16, {0.5, -2.0}, {10.25, -3.5}, -128, 127);
  EXPECT_EQ(r.apply(4, 0), 12);  // 2 + 10.25 = 12.25
  EXPECT_EQ(r.apply(4, 1), -12); // -8 - 3.5 = -11.5 -> -12 (even)
  EXPECT_EQ(r.apply(-1, 1), -2); // 2 - 3.5 = -1.5 -> -2
  EXPECT_EQ(r.apply(100, 1), -128);
}

TEST(FpgaRequant, FractionalInputsKeepTheirBinaryPoint) {
  // x in fixed<16,8>: raw 384 is 1.5; times M = 3 is 4.5 -> 4.
  Requant r = Requant::plan(FixedFormat{16, 8, true}, {3.0}, {}, -128, 127);
  EXPECT_EQ(r.apply(384, 0), 4);
  EXPECT_EQ(r.apply(-384, 0), -4);
  EXPECT_EQ(r.apply(385, 0), 5); // 1.50390625 * 3 = 4.51...
}

TEST(FpgaRequant, InputGridIsOnnxRuntimesQuantizeLinear) {
  // ONNX: q = saturate(round_half_even(x / s) + z); the FPGA's input is k = q - z.
  InputGrid g{0.25, 0 - 119, 255 - 119};
  EXPECT_EQ(g.quantize(0.125), 0); // 0.5 -> 0
  EXPECT_EQ(g.quantize(0.375), 2); // 1.5 -> 2
  EXPECT_EQ(g.quantize(-0.375), -2);
  EXPECT_EQ(g.quantize(1e6), 136);
  EXPECT_EQ(g.quantize(-1e6), -119);
  EXPECT_EQ(g.quantize(std::nan("")), 0);
  // float32 division, as ONNX Runtime does it: 0.3 / 0.1 is 2.9999998 in float32 but
  // 3.0000000000000004 in double; both round to 3. 0.35 / 0.1 = 3.4999998 (f32) -> 3.
  InputGrid d{0.1f, -128, 127};
  EXPECT_EQ(d.quantize(0.3f), 3);
  EXPECT_EQ(d.quantize(0.35f), int64_t(ir::ops::roundHalfEven(0.35f / 0.1f)));
}

// A tiny QDQ MLP with calibrated (non-power-of-two) scales and zero points: the emulator's
// integers dequantized equal ONNX's reference semantics (the interpreter) exactly here.
TEST(FpgaRequant, EmulatorRunsAQdqGemmOnTheIntegerGrid) {
  ir::Graph g;
  auto scalar = [&](const std::string& name, ir::DType t, double v) {
    ir::Tensor s(t, {});
    if (t == ir::DType::F32) s.data<float>()[0] = float(v);
    if (t == ir::DType::U8) s.data<uint8_t>()[0] = uint8_t(v);
    if (t == ir::DType::I8) s.data<int8_t>()[0] = int8_t(v);
    if (t == ir::DType::I32) s.data<int32_t>()[0] = int32_t(v);
    return g.addConstant(name, std::move(s));
  };
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {4, 3}, {}});
  auto qa = std::make_shared<ir::QuantizeLinearAttrs>();
  qa->outputType = ir::DType::U8;
  auto da = std::make_shared<ir::QuantAxisAttrs>();
  ir::Value *sx = scalar("sx", ir::DType::F32, 0.0371), *zx = scalar("zx", ir::DType::U8, 119);
  ir::Node* q = g.addNode(ir::OpKind::QuantizeLinear, "q_in", {x, sx, zx}, qa, {"xq"},
                          {ir::TensorType{ir::DType::U8, {4, 3}, {}}});
  ir::Node* dq = g.addNode(ir::OpKind::DequantizeLinear, "dq_in", {q->output(0), sx, zx}, da,
                           {"xd"}, {ir::TensorType{ir::DType::F32, {4, 3}, {}}});
  // Weights [2, 3] int8 with scale 0.0113 (per tensor), bias int32 with scale sx * sw.
  ir::Tensor wi(ir::DType::I8, {2, 3});
  int8_t wv[6] = {-127, 5, 64, 99, -3, 17};
  std::copy(wv, wv + 6, wi.data<int8_t>());
  ir::Tensor bi(ir::DType::I32, {2});
  bi.data<int32_t>()[0] = -1234;
  bi.data<int32_t>()[1] = 777;
  double sw = 0.0113;
  ir::Value *w = g.addConstant("w_q", wi), *swv = scalar("sw", ir::DType::F32, sw),
            *zw = scalar("zw", ir::DType::I8, 0);
  ir::Value *b = g.addConstant("b_q", bi),
            *sb = scalar("sb", ir::DType::F32, double(float(0.0371f * float(sw)))),
            *zb = scalar("zb", ir::DType::I32, 0);
  ir::Node* dw = g.addNode(ir::OpKind::DequantizeLinear, "dq_w", {w, swv, zw}, da, {"wd"},
                           {ir::TensorType{ir::DType::F32, {2, 3}, {}}});
  ir::Node* db = g.addNode(ir::OpKind::DequantizeLinear, "dq_b", {b, sb, zb}, da, {"bd"},
                           {ir::TensorType{ir::DType::F32, {2}, {}}});
  auto ga = std::make_shared<ir::GemmAttrs>();
  ga->transB = true;
  ir::Node* gemm =
      g.addNode(ir::OpKind::Gemm, "gemm", {dq->output(0), dw->output(0), db->output(0)}, ga, {"y"},
                {ir::TensorType{ir::DType::F32, {4, 2}, {}}});
  ir::Value *sy = scalar("sy", ir::DType::F32, 0.0517), *zy = scalar("zy", ir::DType::U8, 100);
  ir::Node* qy = g.addNode(ir::OpKind::QuantizeLinear, "q_y", {gemm->output(0), sy, zy}, qa, {"yq"},
                           {ir::TensorType{ir::DType::U8, {4, 2}, {}}});
  ir::Node* dy = g.addNode(ir::OpKind::DequantizeLinear, "dq_y", {qy->output(0), sy, zy}, da,
                           {"out"}, {ir::TensorType{ir::DType::F32, {4, 2}, {}}});
  g.addOutput(dy->output(0));
  ir::defaultPipeline().run(g); // folds the weight and bias DequantizeLinear, recording them
  int recorded = 0;
  for (const auto& v : g.values())
    recorded += v->isConstant() && v->dequantizedFrom() != nullptr;
  ASSERT_EQ(recorded, 2);

  Emulator emu(g, QuantConfig{});
  ASSERT_TRUE(emu.inputGrid().has_value());
  EXPECT_EQ(emu.inputGrid()->lo, -119);
  ir::Tensor in(ir::DType::F32, {4, 3});
  float xs[12] = {0.3f, -1.2f, 2.5f, 4.0f, -4.4f, 0.01f, 1.5f, 1.5f, 1.5f, -0.2f, 3.3f, -2.2f};
  std::copy(xs, xs + 12, in.data<float>());
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&in, 1), true);
  const LayerInfo* fc = nullptr;
  for (const LayerInfo& l : emu.layers())
    if (l.name == "gemm") fc = &l;
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(formatToString(fc->quant.weight().format), "fixed<8,8>"); // the int8 weights
  EXPECT_EQ(fc->weights[0], -127);
  EXPECT_EQ(fc->biases[1], 777);
  // Equal to the reference semantics (float32 Gemm, QuantizeLinear, DequantizeLinear).
  const ir::Tensor& ref = r.floatRef.at(0);
  for (int64_t i = 0; i < ref.numElements(); ++i)
    EXPECT_EQ(r.values[0].data<float>()[i], ref.data<float>()[i]) << i;
}

// A Softmax on a grid into its QuantizeLinear (triad_softmax_q's arithmetic): the exact division
// gives ONNX's k = round_half_even(p / s_y) for 40 rows of 5 logits (no row near a tie), and a
// Sigmoid on a grid is refused naming the node.
TEST(FpgaRequant, SoftmaxOnAGridDividesExactlyIntoItsQuantizeLinear) {
  auto build = [](ir::Graph& g, ir::OpKind act) {
    auto scalar = [&](const std::string& name, ir::DType t, double v) {
      ir::Tensor s(t, {});
      if (t == ir::DType::F32) s.data<float>()[0] = float(v);
      if (t == ir::DType::U8) s.data<uint8_t>()[0] = uint8_t(v);
      return g.addConstant(name, std::move(s));
    };
    ir::TensorType f{ir::DType::F32, {40, 5}, {}}, u{ir::DType::U8, {40, 5}, {}};
    ir::Value* x = g.addInput("x", f);
    auto qa = std::make_shared<ir::QuantizeLinearAttrs>();
    auto da = std::make_shared<ir::QuantAxisAttrs>();
    ir::Value *s = scalar("s", ir::DType::F32, 0.1218), *z = scalar("z", ir::DType::U8, 171);
    ir::Node* q = g.addNode(ir::OpKind::QuantizeLinear, "q", {x, s, z}, qa, {"xq"}, {u});
    ir::Node* d =
        g.addNode(ir::OpKind::DequantizeLinear, "dq", {q->output(0), s, z}, da, {"xd"}, {f});
    std::shared_ptr<const ir::Attrs> aa;
    if (act == ir::OpKind::Softmax) {
      auto sa = std::make_shared<ir::SoftmaxAttrs>();
      sa->axes = {1};
      aa = sa;
    } else {
      aa = std::make_shared<ir::NoAttrs>();
    }
    ir::Node* sm = g.addNode(act, "act", {d->output(0)}, aa, {"p"}, {f});
    ir::Value *sy = scalar("sy", ir::DType::F32, 1.0 / 255), *zy = scalar("zy", ir::DType::U8, 0);
    ir::Node* qy =
        g.addNode(ir::OpKind::QuantizeLinear, "q_y", {sm->output(0), sy, zy}, qa, {"pq"}, {u});
    ir::Node* dy =
        g.addNode(ir::OpKind::DequantizeLinear, "dq_y", {qy->output(0), sy, zy}, da, {"out"}, {f});
    g.addOutput(dy->output(0));
  };
  ir::Graph g;
  build(g, ir::OpKind::Softmax);
  Emulator emu(g, QuantConfig{});
  ir::Tensor in(ir::DType::F32, {40, 5});
  for (int64_t i = 0; i < 200; ++i)
    in.data<float>()[i] = float(std::sin(double(i) * 1.7) * 6.0 + double(i % 5) * 0.3);
  EmulatorResult r = emu.run(std::span<const ir::Tensor>(&in, 1), true);
  const ir::Tensor& ref = r.floatRef.at(0);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < ref.numElements(); ++i) {
    EXPECT_EQ(r.values[0].data<float>()[i], ref.data<float>()[i]) << i;
    nonzero += ref.data<float>()[i] > 0;
  }
  EXPECT_GT(nonzero, 80); // not all clamped to 0

  ir::Graph h;
  build(h, ir::OpKind::Sigmoid);
  try {
    Emulator bad(h, QuantConfig{});
    FAIL() << "a Sigmoid on a QDQ grid was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'act' (Sigmoid)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("QDQ integer grid"), std::string::npos) << e.what();
  }
}

} // namespace
