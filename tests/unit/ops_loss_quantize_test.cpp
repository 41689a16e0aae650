// Unit tests of the Loss and Quantize op families: attribute parsing (reduction, ignore_index,
// axis, opset differences), shape rules with their diagnostics, and reference-kernel numerics
// (the ONNX documentation examples plus hand-computed cases).
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Loss.h"
#include "ir/ops/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

// ---------------------------------------------------------------------------------------------
// Loss

TEST(OpsLoss, NllShapes) {
  Types in{tt(DType::F32, {3, 5, 2, 4}), tt(DType::I64, {3, 2, 4}), std::nullopt};
  EXPECT_EQ(parseAndInfer(OpKind::NegativeLogLikelihoodLoss, in)[0], tt(DType::F32, {}));
  EXPECT_EQ(parseAndInfer(OpKind::NegativeLogLikelihoodLoss, in,
                          LiteralAttrs({{"reduction", "none"}}))[0],
            tt(DType::F32, {3, 2, 4}));
  Types sce{tt(DType::F64, {3, 5}), tt(DType::I32, {3})};
  auto out =
      parseAndInfer(OpKind::SoftmaxCrossEntropyLoss, sce, LiteralAttrs({{"reduction", "sum"}}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], tt(DType::F64, {}));
  EXPECT_EQ(out[1], tt(DType::F64, {3, 5})); // log_prob
}

TEST(OpsLoss, Diagnostics) {
  auto nll = [](Types in, LiteralAttrs a = {}) {
    return errorOf([&] { parseAndInfer(OpKind::NegativeLogLikelihoodLoss, in, a); });
  };
  // Target must drop exactly the class dim.
  EXPECT_EQ(nll({tt(DType::F32, {3, 5, 2}), tt(DType::I64, {3, 5})}), ErrorKind::InvalidModel);
  EXPECT_EQ(nll({tt(DType::F32, {3, 5}), tt(DType::F32, {3})}), ErrorKind::InvalidModel);
  EXPECT_EQ(nll({tt(DType::F32, {3}), tt(DType::I64, {3})}), ErrorKind::InvalidModel);
  EXPECT_EQ(nll({tt(DType::F32, {3, 5}), tt(DType::I64, {3}), tt(DType::F32, {4})}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(nll({tt(DType::F32, {3, 5}), tt(DType::I64, {3}), tt(DType::F64, {5})}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(nll({tt(DType::I32, {3, 5}), tt(DType::I64, {3})}), ErrorKind::Unsupported);
  EXPECT_EQ(
      nll({tt(DType::F32, {3, 5}), tt(DType::I64, {3})}, LiteralAttrs({{"reduction", "max"}})),
      ErrorKind::Unsupported);
  // A target outside [0, C) that is not ignore_index is a run-time error.
  Tensor x(DType::F32, {2, 3});
  Tensor t = vec<int64_t>({2}, {0, 3});
  EXPECT_EQ(errorOf([&] { run(OpKind::NegativeLogLikelihoodLoss, {&x, &t}); }), ErrorKind::Runtime);
  EXPECT_NO_THROW(
      run(OpKind::NegativeLogLikelihoodLoss, {&x, &t}, LiteralAttrs({{"ignore_index", 3}})));
}

TEST(OpsLoss, NllNumerics) {
  // input [N=2, C=3, d=2]; loss[n, d] = -input[n, target[n, d], d] * w[target].
  Tensor x = vec<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor t = vec<int64_t>({2, 2}, {0, 2, 1, 1});
  Tensor w = vec<float>({3}, {1.0f, 0.5f, 2.0f});
  expectValues(run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, nullptr},
                   LiteralAttrs({{"reduction", "none"}})),
               {-1, -6, -9, -10});
  expectValues(
      run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, &w}, LiteralAttrs({{"reduction", "none"}})),
      {-1, -12, -4.5, -5});
  expectValues(
      run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, &w}, LiteralAttrs({{"reduction", "sum"}})),
      {-22.5});
  // mean divides by the sum of the weights of the targets: 1 + 2 + 0.5 + 0.5.
  expectValues(run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, &w}), {-22.5 / 4.0});
  // ignore_index 1 drops the two elements of class 1 from the sum and the divisor.
  expectValues(
      run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, &w}, LiteralAttrs({{"ignore_index", 1}})),
      {-13.0 / 3.0});
  expectValues(run(OpKind::NegativeLogLikelihoodLoss, {&x, &t, nullptr},
                   LiteralAttrs({{"ignore_index", 1}})),
               {-7.0 / 2.0});
  // Every element ignored: 0 / 0.
  Tensor t1 = vec<int64_t>({2, 2}, {1, 1, 1, 1});
  EXPECT_TRUE(std::isnan(
      run(OpKind::NegativeLogLikelihoodLoss, {&x, &t1}, LiteralAttrs({{"ignore_index", 1}}))
          .getDouble(0)));
}

TEST(OpsLoss, SoftmaxCrossEntropy) {
  Tensor x = vec<float>({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor t = vec<int32_t>({2}, {2, 0});
  auto outs = runNode(OpKind::SoftmaxCrossEntropyLoss, {&x, &t},
                      LiteralAttrs({{"reduction", "none"}}), 18, 2)
                  .outs;
  double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  double lse1 = std::log(3.0);
  expectValues(outs[0], {lse0 - 3, lse1});
  expectValues(outs[1], {1 - lse0, 2 - lse0, 3 - lse0, -lse1, -lse1, -lse1});
  expectValues(run(OpKind::SoftmaxCrossEntropyLoss, {&x, &t}), {(lse0 - 3 + lse1) / 2});
  // Half precision goes through the same double math.
  Tensor xh = x.castTo(DType::F16);
  expectValues(run(OpKind::SoftmaxCrossEntropyLoss, {&xh, &t}), {(lse0 - 3 + lse1) / 2}, 1e-3);
}

// ---------------------------------------------------------------------------------------------
// QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear

TEST(OpsQuantize, RoundHalfEven) {
  EXPECT_EQ(ops::roundHalfEven(2.5f), 2.0f);
  EXPECT_EQ(ops::roundHalfEven(3.5f), 4.0f);
  EXPECT_EQ(ops::roundHalfEven(-2.5f), -2.0f);
  EXPECT_EQ(ops::roundHalfEven(-3.5), -4.0);
  EXPECT_EQ(ops::roundHalfEven(2.4f), 2.0f);
  EXPECT_EQ(ops::roundHalfEven(-2.6f), -3.0f);
  EXPECT_EQ(ops::quantizeValue<int8_t>(300.0f, 0), 127);
  EXPECT_EQ(ops::quantizeValue<int8_t>(-300.0f, 0), -128);
  EXPECT_EQ(ops::quantizeValue<uint8_t>(std::nanf(""), 7), 7);
}

TEST(OpsQuantize, QuantizeLinearPerTensor) {
  // The ONNX example: round(x / 2) + 128, saturated.
  Tensor x = vec<float>({6}, {0, 2, 3, 1000, -254, -1000});
  Tensor s = Tensor::scalar<float>(2.0f);
  Tensor zp = Tensor::scalar<uint8_t>(128);
  Tensor y = run(OpKind::QuantizeLinear, {&x, &s, &zp});
  EXPECT_EQ(y.dtype(), DType::U8);
  expectValues(y, {128, 129, 130, 255, 1, 0});
  // No zero point: uint8 with zero point 0. Ties go to even: 1/2 -> 0, 3/2 -> 2, 5/2 -> 2.
  Tensor x2 = vec<float>({4}, {1, 3, 5, -3});
  Tensor y2 = run(OpKind::QuantizeLinear, {&x2, &s, nullptr});
  EXPECT_EQ(y2.dtype(), DType::U8);
  expectValues(y2, {0, 2, 2, 0});
  Tensor zi = Tensor::scalar<int8_t>(-1);
  Tensor y3 = run(OpKind::QuantizeLinear, {&x2, &s, &zi});
  EXPECT_EQ(y3.dtype(), DType::I8);
  expectValues(y3, {-1, 1, 1, -3});
  // int32 input (opset 10) and a [1]-shaped scale count as per tensor.
  Tensor xi = vec<int32_t>({3}, {-7, 7, 500});
  Tensor s1 = vec<float>({1}, {3.0f});
  expectValues(run(OpKind::QuantizeLinear, {&xi, &s1, &zi}, {}, 10), {-3, 1, 127});
}

TEST(OpsQuantize, PerAxis) {
  // x [1, 3, 2] with per-channel (axis 1) scales and zero points.
  Tensor x = vec<float>({1, 3, 2}, {-1, 1, 4, 8, 30, 60});
  Tensor s = vec<float>({3}, {1.0f, 2.0f, 10.0f});
  Tensor zp = vec<uint8_t>({3}, {10, 0, 100});
  Tensor q = run(OpKind::QuantizeLinear, {&x, &s, &zp});
  expectValues(q, {9, 11, 2, 4, 103, 106});
  Tensor dq = run(OpKind::DequantizeLinear, {&q, &s, &zp});
  EXPECT_EQ(dq.dtype(), DType::F32);
  expectValues(dq, {-1, 1, 4, 8, 30, 60});
  // A negative axis resolves against x's rank; axis 2 uses the last dim.
  Tensor s2 = vec<float>({2}, {1.0f, 4.0f});
  expectValues(run(OpKind::QuantizeLinear, {&x, &s2, nullptr}, LiteralAttrs({{"axis", -1}})),
               {0, 0, 4, 2, 30, 15});
  auto a =
      parseAttrs(OpKind::QuantizeLinear, LiteralAttrs({{"axis", -1}}), typesOf({&x, &s2, nullptr}));
  EXPECT_EQ(static_cast<const QuantizeLinearAttrs&>(*a).axis, 2);
}

TEST(OpsQuantize, Dequantize) {
  // The ONNX example: (x - 128) * 2.
  Tensor x = vec<uint8_t>({4}, {0, 3, 128, 255});
  Tensor s = Tensor::scalar<float>(2.0f);
  Tensor zp = Tensor::scalar<uint8_t>(128);
  expectValues(run(OpKind::DequantizeLinear, {&x, &s, &zp}), {-256, -250, 0, 254});
  Tensor xi = vec<int32_t>({2}, {-5, 100000});
  Tensor y = run(OpKind::DequantizeLinear, {&xi, &s, nullptr});
  expectValues(y, {-10, 200000});
  // The output takes the scale's float type.
  Tensor sd = Tensor::scalar<double>(0.5);
  EXPECT_EQ(run(OpKind::DequantizeLinear, {&x, &sd, &zp}).dtype(), DType::F64);
}

TEST(OpsQuantize, QuantizeDiagnostics) {
  auto q = [](Types in, LiteralAttrs a = {}, int opset = 18) {
    return errorOf([&] { parseAndInfer(OpKind::QuantizeLinear, in, a, opset); });
  };
  Types perAxis{tt(DType::F32, {2, 3}), tt(DType::F32, {3}), tt(DType::U8, {3})};
  // The default axis is 1, so a [3] scale matches x [2, 3]; a [2] scale does not.
  EXPECT_NO_THROW(parseAndInfer(OpKind::QuantizeLinear, perAxis));
  EXPECT_EQ(q({tt(DType::F32, {2, 3}), tt(DType::F32, {2})}), ErrorKind::InvalidModel);
  EXPECT_EQ(q(perAxis, LiteralAttrs({{"axis", 2}})), ErrorKind::InvalidModel); // out of range
  EXPECT_EQ(q(perAxis, {}, 10), ErrorKind::InvalidModel);                      // before opset 13
  EXPECT_EQ(q({tt(DType::F32, {3}), tt(DType::F32, {}), tt(DType::I32, {})}),
            ErrorKind::Unsupported); // quantized type
  EXPECT_EQ(q({tt(DType::U8, {3}), tt(DType::F32, {})}), ErrorKind::Unsupported);
  EXPECT_EQ(q({tt(DType::F32, {3}), tt(DType::I32, {})}), ErrorKind::Unsupported); // scale type
  EXPECT_EQ(q({tt(DType::F32, {2, 3}), tt(DType::F32, {3}), tt(DType::U8, {})},
              LiteralAttrs({{"axis", 1}})),
            ErrorKind::InvalidModel); // zero point shape differs from scale
  auto dq = [](Types in) { return errorOf([&] { parseAndInfer(OpKind::DequantizeLinear, in); }); };
  EXPECT_EQ(dq({tt(DType::F32, {3}), tt(DType::F32, {})}), ErrorKind::Unsupported);
  EXPECT_EQ(dq({tt(DType::U8, {3}), tt(DType::F32, {}), tt(DType::I8, {})}),
            ErrorKind::InvalidModel);
}

TEST(OpsQuantize, DynamicQuantizeLinear) {
  Tensor x = vec<float>({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f});
  auto outs = runNode(OpKind::DynamicQuantizeLinear, {&x}, {}, 11, 3).outs;
  expectValues(outs[0], {153, 255, 0, 26, 221, 179});
  EXPECT_NEAR(outs[1].getDouble(0), 5.0 / 255.0, 1e-7);
  EXPECT_EQ(outs[2].getInt(0), 153);
  // All zeros: scale 1, zero point 0.
  Tensor z(DType::F32, {2});
  auto zo = runNode(OpKind::DynamicQuantizeLinear, {&z}, {}, 11, 3).outs;
  EXPECT_EQ(zo[1].getDouble(0), 1.0);
  EXPECT_EQ(zo[2].getInt(0), 0);
  EXPECT_EQ(errorOf([] { parseAndInfer(OpKind::DynamicQuantizeLinear, {tt(DType::F64, {2})}); }),
            ErrorKind::Unsupported);
}

// ---------------------------------------------------------------------------------------------
// Integer products

TEST(OpsQuantize, MatMulInteger) {
  // The ONNX example.
  Tensor A = vec<uint8_t>({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  Tensor B = vec<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor azp = vec<uint8_t>({1}, {12});
  Tensor bzp = vec<uint8_t>({1}, {0});
  Tensor Y = run(OpKind::MatMulInteger, {&A, &B, &azp, &bzp});
  EXPECT_EQ(Y.dtype(), DType::I32);
  expectValues(Y, {-38, -83, -44, -98, -50, -113, -56, -128});
  // Per-row A zero point [M] and per-column B zero point [N].
  Tensor azr = vec<uint8_t>({4}, {12, 11, 10, 9});
  Tensor bzc = vec<uint8_t>({2}, {1, 0});
  Tensor Y2 = run(OpKind::MatMulInteger, {&A, &B, &azr, &bzc});
  // Row m of A - zp: [-1,-5,-9] for every m; B - zp: [[0,4],[1,5],[2,6]].
  expectValues(Y2, {-23, -83, -23, -83, -23, -83, -23, -83});
  // Signed operands without zero points, batched with broadcasting.
  Tensor As = vec<int8_t>({2, 1, 2}, {-128, 127, 1, -1});
  Tensor Bs = vec<int8_t>({2, 1}, {-128, 2});
  Tensor Y3 = run(OpKind::MatMulInteger, {&As, &Bs, nullptr, nullptr});
  EXPECT_EQ(Y3.shape(), (Shape{2, 1, 1}));
  expectValues(Y3, {16384 + 254, -130});
  EXPECT_EQ(errorOf([] {
              parseAndInfer(OpKind::MatMulInteger, {tt(DType::F32, {2, 3}), tt(DType::U8, {3, 2})});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([] {
              parseAndInfer(OpKind::MatMulInteger, {tt(DType::U8, {2, 3}), tt(DType::U8, {2, 2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([] {
              parseAndInfer(OpKind::MatMulInteger,
                            {tt(DType::U8, {2, 3}), tt(DType::U8, {3, 2}), tt(DType::U8, {3})});
            }),
            ErrorKind::InvalidModel); // a per-row zero point needs M = 2 elements
}

TEST(OpsQuantize, QLinearMatMul) {
  // The ONNX 2-D example.
  Tensor a = vec<uint8_t>({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  Tensor as = vec<float>({1}, {0.0066f});
  Tensor azp = vec<uint8_t>({1}, {113});
  Tensor b = vec<uint8_t>({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  Tensor bs = vec<float>({1}, {0.00705f});
  Tensor bzp = vec<uint8_t>({1}, {114});
  Tensor ys = vec<float>({1}, {0.0107f});
  Tensor yzp = vec<uint8_t>({1}, {118});
  Tensor y = run(OpKind::QLinearMatMul, {&a, &as, &azp, &b, &bs, &bzp, &ys, &yzp}, {}, 10);
  EXPECT_EQ(y.dtype(), DType::U8);
  expectValues(y, {168, 115, 255, 1, 66, 151});
  // Per-column b scale with equal entries gives the same result.
  Tensor bs3 = vec<float>({3}, {0.00705f, 0.00705f, 0.00705f});
  Tensor bzp3 = vec<uint8_t>({3}, {114, 114, 114});
  expectValues(run(OpKind::QLinearMatMul, {&a, &as, &azp, &b, &bs3, &bzp3, &ys, &yzp}, {}, 10),
               {168, 115, 255, 1, 66, 151});
  Types bad = typesOf({&a, &as, &azp, &b, &bs, &bzp, &ys, &yzp});
  bad[4] = tt(DType::F32, {4}); // b_scale must be per tensor or [N = 3]
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::QLinearMatMul, bad, {}, 10); }),
            ErrorKind::InvalidModel);
  bad = typesOf({&a, &as, &azp, &b, &bs, &bzp, &ys, &yzp});
  bad[2] = tt(DType::I8, {1}); // a_zero_point type differs from a
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::QLinearMatMul, bad, {}, 10); }),
            ErrorKind::InvalidModel);
}

TEST(OpsQuantize, ConvInteger) {
  // The ONNX example with padding: x = 2..10 as [1,1,3,3], x_zero_point 1, w = ones [1,1,2,2].
  Tensor x = vec<uint8_t>({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor xzp = Tensor::scalar<uint8_t>(1);
  Tensor w = vec<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = run(OpKind::ConvInteger, {&x, &w, &xzp, nullptr},
                 LiteralAttrs({{"pads", Ints{1, 1, 1, 1}}}), 10);
  EXPECT_EQ(y.dtype(), DType::I32);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  expectValues(y, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
  expectValues(run(OpKind::ConvInteger, {&x, &w, &xzp, nullptr}, {}, 10), {12, 16, 24, 28});
  // auto_pad resolves into explicit pads in ConvAttrs.
  auto a = parseAttrs(OpKind::ConvInteger, LiteralAttrs({{"auto_pad", "SAME_UPPER"}}),
                      typesOf({&x, &w, &xzp, nullptr}), 10);
  EXPECT_EQ(static_cast<const ConvAttrs&>(*a).pads, (Ints{0, 0, 1, 1}));
  // Per-output-channel w zero point, two groups.
  Tensor x2 = vec<int8_t>({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor w2 = vec<int8_t>({2, 1, 1, 1}, {5, -5});
  Tensor wzp = vec<int8_t>({2}, {1, -1});
  expectValues(
      run(OpKind::ConvInteger, {&x2, &w2, nullptr, &wzp}, LiteralAttrs({{"group", 2}}), 10),
      {4, 8, -12, -16});
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::ConvInteger,
                            {x.type(), w.type(), tt(DType::U8, {2}), std::nullopt}, {}, 10);
            }),
            ErrorKind::InvalidModel); // x zero point must be per tensor
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::ConvInteger, {x.type(), tt(DType::U8, {1, 2, 2, 2})}, {}, 10);
            }),
            ErrorKind::InvalidModel); // channels
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::ConvInteger, {x.type(), w.type()},
                            LiteralAttrs({{"kernel_shape", Ints{3}}}), 10);
            }),
            ErrorKind::InvalidModel);
}

TEST(OpsQuantize, QLinearConv) {
  // 1x1 conv on [1,1,2,2]: y = round((x - 10) * 3 * 0.5 * 2 / 1.5 + bias term) + 5.
  Tensor x = vec<uint8_t>({1, 1, 2, 2}, {10, 11, 12, 13});
  Tensor xs = Tensor::scalar<float>(0.5f);
  Tensor xzp = Tensor::scalar<uint8_t>(10);
  Tensor w = vec<int8_t>({2, 1, 1, 1}, {3, -3});
  Tensor ws = vec<float>({2}, {2.0f, 1.0f});
  Tensor wzp = vec<int8_t>({2}, {0, 0});
  Tensor ys = Tensor::scalar<float>(1.5f);
  Tensor yzp = Tensor::scalar<int8_t>(5);
  Tensor B = vec<int32_t>({2}, {0, 1});
  Tensor y = run(OpKind::QLinearConv, {&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &B}, {}, 10);
  EXPECT_EQ(y.dtype(), DType::I8);
  // Channel 0: acc = 3 * (0,1,2,3), mult = 0.5*2/1.5 = 2/3 -> 0, 2, 4, 6 (+5).
  // Channel 1: acc = -3 * (0..3) + 1, mult = 1/3 -> 1/3, -2/3, -5/3, -8/3 -> 0, -1, -2, -3 (+5).
  expectValues(y, {5, 7, 9, 11, 5, 4, 3, 2});
  Types bad = typesOf({&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &B});
  bad[8] = tt(DType::I32, {3});
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::QLinearConv, bad, {}, 10); }),
            ErrorKind::InvalidModel);
  bad[8] = tt(DType::F32, {2});
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::QLinearConv, bad, {}, 10); }),
            ErrorKind::InvalidModel);
  bad = typesOf({&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &B});
  bad[7] = tt(DType::I32, {});
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::QLinearConv, bad, {}, 10); }),
            ErrorKind::Unsupported);
}

} // namespace
