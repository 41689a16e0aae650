// Unit tests of the Elementwise and Activation op families: attribute parsing, shape and type
// rules with their diagnostics, and reference-kernel numerics.
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

// --- shape and type rules ----------------------------------------------------------------------

TEST(ElementwiseInfer, BinaryBroadcasts) {
  NoAttrs none;
  auto out = inferTypes(OpKind::Add, none, {tt(DType::F32, {2, 1, 4}), tt(DType::F32, {3, 1})});
  EXPECT_EQ(out[0], tt(DType::F32, {2, 3, 4}));
  out = inferTypes(OpKind::Less, none, {tt(DType::I64, {5}), tt(DType::I64, {})});
  EXPECT_EQ(out[0], tt(DType::Bool, {5}));
}

TEST(ElementwiseInfer, BinaryDiagnostics) {
  NoAttrs none;
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Add, none, {tt(DType::F32, {2}), tt(DType::F32, {3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Mul, none, {tt(DType::F32, {2}), tt(DType::I32, {2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Add, none, {tt(DType::Bool, {2}), tt(DType::Bool, {2})});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::And, none, {tt(DType::F32, {2}), tt(DType::F32, {2})});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] { inferTypes(OpKind::Sqrt, none, {tt(DType::I32, {2})}); }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] { inferTypes(OpKind::Neg, none, {tt(DType::U8, {2})}); }),
            ErrorKind::Unsupported);
  TensorType fixed{DType::Fixed, {2}, FixedSpec{}};
  EXPECT_EQ(errorOf([&] { inferTypes(OpKind::Relu, none, {fixed}); }), ErrorKind::Unsupported);
}

TEST(ElementwiseInfer, UnsupportedMessageListsTypes) {
  NoAttrs none;
  try {
    inferTypes(OpKind::BitwiseNot, none, {tt(DType::F32, {2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("i64"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("f32,"), std::string::npos) << e.what();
  }
}

TEST(ElementwiseInfer, VariadicAndWhere) {
  NoAttrs none;
  auto out = inferTypes(OpKind::Sum, none,
                        {tt(DType::F32, {3, 1}), tt(DType::F32, {4}), tt(DType::F32, {1, 1, 1})});
  EXPECT_EQ(out[0], tt(DType::F32, {1, 3, 4}));
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Max, none, {tt(DType::F32, {3}), tt(DType::F64, {3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] { inferTypes(OpKind::Mean, none, {tt(DType::I32, {3})}); }),
            ErrorKind::Unsupported);
  out = inferTypes(OpKind::Where, none,
                   {tt(DType::Bool, {2, 1}), tt(DType::I64, {3}), tt(DType::I64, {1})});
  EXPECT_EQ(out[0], tt(DType::I64, {2, 3}));
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Where, none,
                         {tt(DType::F32, {2}), tt(DType::F32, {2}), tt(DType::F32, {2})});
            }),
            ErrorKind::InvalidModel);
}

TEST(ElementwiseInfer, PowMixedTypes) {
  NoAttrs none;
  auto out = inferTypes(OpKind::Pow, none, {tt(DType::I32, {2, 3}), tt(DType::F32, {3})});
  EXPECT_EQ(out[0], tt(DType::I32, {2, 3}));
  EXPECT_EQ(errorOf([&] {
              inferTypes(OpKind::Pow, none, {tt(DType::F32, {2}), tt(DType::Bool, {2})});
            }),
            ErrorKind::Unsupported);
}

TEST(ElementwiseParse, Diagnostics) {
  Tensor x = f32({2}, {1, 2});
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::BitShift, LiteralAttrs{}, typesOf({&x, &x}));
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::BitShift, LiteralAttrs{{{"direction", "UP"}}}, typesOf({&x, &x}));
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] { parseAttrs(OpKind::Cast, LiteralAttrs{}, typesOf({&x})); }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::Cast, LiteralAttrs{{{"to", int64_t(8)}}}, typesOf({&x}));
            }),
            ErrorKind::Unsupported); // STRING
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::Cast, LiteralAttrs{{{"to", int64_t(16)}}}, typesOf({&x}));
            }),
            ErrorKind::Unsupported); // BFLOAT16
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::Mod, LiteralAttrs{{{"fmod", int64_t(2)}}}, typesOf({&x, &x}));
            }),
            ErrorKind::InvalidModel);
  // Float Mod needs fmod=1.
  EXPECT_EQ(errorOf([&] { run(OpKind::Mod, {&x, &x}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::Gelu, LiteralAttrs{{{"approximate", "erf"}}}, typesOf({&x}));
            }),
            ErrorKind::Unsupported);
  auto a = parseAttrs(OpKind::Cast, LiteralAttrs{{{"to", int64_t(10)}}}, typesOf({&x}));
  EXPECT_EQ(static_cast<const CastAttrs&>(*a).to, DType::F16);
  EXPECT_EQ(a->printed()[0].second, "f16");
}

// --- kernels -----------------------------------------------------------------------------------

TEST(ElementwiseEval, ArithmeticBroadcast) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3}, {10, 20, 30});
  EXPECT_EQ(vals<float>(run(OpKind::Add, {&a, &b})), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor c = f32({2, 1}, {2, 4});
  EXPECT_EQ(vals<float>(run(OpKind::Div, {&a, &c})),
            (std::vector<float>{0.5f, 1, 1.5f, 1, 1.25f, 1.5f}));
  Tensor s = f32({}, {1});
  EXPECT_EQ(vals<float>(run(OpKind::Sub, {&s, &a})), (std::vector<float>{0, -1, -2, -3, -4, -5}));
}

TEST(ElementwiseEval, IntegerEdgeCases) {
  Tensor a = vec<uint8_t>({3}, {250, 7, 9});
  Tensor b = vec<uint8_t>({3}, {10, 0, 2});
  EXPECT_EQ(vals<uint8_t>(run(OpKind::Add, {&a, &b})), (std::vector<uint8_t>{4, 7, 11}));
  EXPECT_EQ(vals<uint8_t>(run(OpKind::Div, {&a, &b})), (std::vector<uint8_t>{25, 0, 4}));
  int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor c = vec<int32_t>({3}, {mn, -7, 7});
  Tensor d = vec<int32_t>({3}, {-1, 2, -2});
  EXPECT_EQ(vals<int32_t>(run(OpKind::Div, {&c, &d})), (std::vector<int32_t>{mn, -3, -3}));
  EXPECT_EQ(vals<int32_t>(run(OpKind::Mul, {&c, &d})), (std::vector<int32_t>{mn, -14, -14}));
  Tensor u = vec<uint16_t>({1}, {65535});
  EXPECT_EQ(vals<uint16_t>(run(OpKind::Mul, {&u, &u})), (std::vector<uint16_t>{1}));
}

TEST(ElementwiseEval, Mod) {
  Tensor a = vec<int32_t>({4}, {-7, 7, -7, 5});
  Tensor b = vec<int32_t>({4}, {3, -3, -3, 0});
  EXPECT_EQ(vals<int32_t>(run(OpKind::Mod, {&a, &b})), (std::vector<int32_t>{2, -2, -1, 0}));
  EXPECT_EQ(vals<int32_t>(run(OpKind::Mod, {&a, &b}, LiteralAttrs{{{"fmod", int64_t(1)}}})),
            (std::vector<int32_t>{-1, 1, -1, 0}));
  Tensor x = f32({2}, {-7.5f, 7.5f});
  Tensor y = f32({2}, {2, -2});
  EXPECT_EQ(vals<float>(run(OpKind::Mod, {&x, &y}, LiteralAttrs{{{"fmod", int64_t(1)}}})),
            (std::vector<float>{-1.5f, 1.5f}));
}

TEST(ElementwiseEval, Pow) {
  Tensor xi = vec<int64_t>({3}, {2, 3, -2});
  Tensor yi = vec<int64_t>({3}, {10, 39, -1});
  EXPECT_EQ(vals<int64_t>(run(OpKind::Pow, {&xi, &yi})),
            (std::vector<int64_t>{1024, 4052555153018976267LL, 0}));
  Tensor yf = f32({1}, {0.5f});
  Tensor xi2 = vec<int32_t>({2}, {9, 10});
  EXPECT_EQ(vals<int32_t>(run(OpKind::Pow, {&xi2, &yf})), (std::vector<int32_t>{3, 3}));
  Tensor xf = f32({2}, {2, 4});
  Tensor e = vec<uint64_t>({2}, {3, 0});
  EXPECT_EQ(vals<float>(run(OpKind::Pow, {&xf, &e})), (std::vector<float>{8, 1}));
}

TEST(ElementwiseEval, ComparisonsAndLogic) {
  Tensor a = f32({3}, {1, 2, NAN});
  Tensor b = f32({}, {2});
  EXPECT_EQ(vals<bool>(run(OpKind::Less, {&a, &b})), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(vals<bool>(run(OpKind::GreaterOrEqual, {&a, &b})),
            (std::vector<bool>{false, true, false}));
  EXPECT_EQ(vals<bool>(run(OpKind::Equal, {&a, &b})), (std::vector<bool>{false, true, false}));
  Tensor p = vec<bool>({2, 2}, {true, true, false, false});
  Tensor q = vec<bool>({2}, {true, false});
  EXPECT_EQ(vals<bool>(run(OpKind::Xor, {&p, &q})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(vals<bool>(run(OpKind::Not, {&q})), (std::vector<bool>{false, true}));
  Tensor s = vec<uint8_t>({3}, {1, 255, 16});
  Tensor n = vec<uint8_t>({3}, {3, 1, 9});
  EXPECT_EQ(vals<uint8_t>(run(OpKind::BitShift, {&s, &n}, LiteralAttrs{{{"direction", "LEFT"}}})),
            (std::vector<uint8_t>{8, 254, 0}));
  EXPECT_EQ(vals<uint8_t>(run(OpKind::BitShift, {&s, &n}, LiteralAttrs{{{"direction", "RIGHT"}}})),
            (std::vector<uint8_t>{0, 127, 0}));
  Tensor i = vec<int16_t>({2}, {0, 5});
  EXPECT_EQ(vals<int16_t>(run(OpKind::BitwiseNot, {&i})), (std::vector<int16_t>{-1, -6}));
}

TEST(ElementwiseEval, Unary) {
  Tensor x = f32({4}, {-2.5f, -0.5f, 0.5f, 2.5f});
  EXPECT_EQ(vals<float>(run(OpKind::Round, {&x})), (std::vector<float>{-2, -0, 0, 2}));
  EXPECT_EQ(vals<float>(run(OpKind::Sign, {&x})), (std::vector<float>{-1, -1, 1, 1}));
  EXPECT_EQ(vals<float>(run(OpKind::Abs, {&x})), (std::vector<float>{2.5f, 0.5f, 0.5f, 2.5f}));
  Tensor i = vec<int8_t>({3}, {-128, -3, 4});
  EXPECT_EQ(vals<int8_t>(run(OpKind::Abs, {&i})), (std::vector<int8_t>{-128, 3, 4}));
  EXPECT_EQ(vals<int8_t>(run(OpKind::Neg, {&i})), (std::vector<int8_t>{-128, 3, -4}));
  Tensor h = vec<Half>({2}, {Half(4.0f), Half(0.25f)});
  Tensor r = run(OpKind::Sqrt, {&h});
  EXPECT_EQ(r.dtype(), DType::F16);
  EXPECT_EQ(float(r.data<Half>()[0]), 2.0f);
  EXPECT_EQ(float(r.data<Half>()[1]), 0.5f);
  float inf = std::numeric_limits<float>::infinity();
  Tensor v = f32({4}, {inf, -inf, NAN, 1});
  EXPECT_EQ(vals<bool>(run(OpKind::IsInf, {&v})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(vals<bool>(run(OpKind::IsInf, {&v}, LiteralAttrs{{{"detect_positive", int64_t(0)}}})),
            (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(vals<bool>(run(OpKind::IsNaN, {&v})), (std::vector<bool>{false, false, true, false}));
}

TEST(ElementwiseEval, Variadic) {
  Tensor a = f32({3}, {1, 2, 3});
  Tensor b = f32({2, 1}, {10, 20});
  Tensor c = f32({}, {100});
  EXPECT_EQ(vals<float>(run(OpKind::Sum, {&a, &b, &c})),
            (std::vector<float>{111, 112, 113, 121, 122, 123}));
  EXPECT_EQ(vals<float>(run(OpKind::Mean, {&a, &b})),
            (std::vector<float>{5.5f, 6, 6.5f, 10.5f, 11, 11.5f}));
  EXPECT_EQ(vals<float>(run(OpKind::Max, {&a})), (std::vector<float>{1, 2, 3}));
  Tensor n = f32({3}, {NAN, 0, 5});
  auto mn = vals<float>(run(OpKind::Min, {&a, &n}));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], 0);
  EXPECT_EQ(mn[2], 3);
  Tensor u = vec<uint32_t>({2}, {7, 1});
  Tensor w = vec<uint32_t>({2}, {3, 9});
  EXPECT_EQ(vals<uint32_t>(run(OpKind::Max, {&u, &w})), (std::vector<uint32_t>{7, 9}));
}

TEST(ElementwiseEval, Where) {
  Tensor c = vec<bool>({2, 1}, {true, false});
  Tensor x = vec<int64_t>({3}, {1, 2, 3});
  Tensor y = vec<int64_t>({}, {-1});
  EXPECT_EQ(vals<int64_t>(run(OpKind::Where, {&c, &x, &y})),
            (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(ElementwiseEval, CastToAndFromHalf) {
  // 1 + 2^-11 is a tie between two halves (rounds to even: 1); a hair above it must round up.
  // Going through float would lose the hair and round down.
  Tensor d = vec<double>({4}, {1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, 65519.0, 1e-8});
  Tensor h = run(OpKind::Cast, {&d}, LiteralAttrs{{{"to", int64_t(10)}}});
  ASSERT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x3c00);
  EXPECT_EQ(h.data<Half>()[1].bits, 0x3c01);
  EXPECT_EQ(h.data<Half>()[2].bits, 0x7bff); // 65504
  EXPECT_EQ(h.data<Half>()[3].bits, 0x0000); // below half of the smallest subnormal
  Tensor back = run(OpKind::Cast, {&h}, LiteralAttrs{{{"to", int64_t(1)}}});
  EXPECT_EQ(vals<float>(back), (std::vector<float>{1.0f, 1.0f + 0x1p-10f, 65504.0f, 0.0f}));
  Tensor i = vec<int32_t>({2}, {70000, -3});
  Tensor hi = run(OpKind::Cast, {&i}, LiteralAttrs{{{"to", int64_t(10)}}});
  EXPECT_TRUE(std::isinf(float(hi.data<Half>()[0])));
  EXPECT_EQ(float(hi.data<Half>()[1]), -3.0f);
  Tensor f = f32({3}, {-1.7f, 2.9f, 0.0f});
  EXPECT_EQ(vals<int32_t>(run(OpKind::Cast, {&f}, LiteralAttrs{{{"to", int64_t(6)}}})),
            (std::vector<int32_t>{-1, 2, 0}));
  EXPECT_EQ(vals<bool>(run(OpKind::Cast, {&f}, LiteralAttrs{{{"to", int64_t(9)}}})),
            (std::vector<bool>{true, true, false}));
}

TEST(ElementwiseEval, CastLike) {
  Tensor x = f32({2}, {1.5f, -2.5f});
  Tensor like = vec<Half>({}, {Half(0.0f)});
  Tensor r = run(OpKind::CastLike, {&x, &like});
  EXPECT_EQ(r.dtype(), DType::F16);
  EXPECT_EQ(r.shape(), Shape{2});
  EXPECT_EQ(float(r.data<Half>()[1]), -2.5f);
}

// --- activations -------------------------------------------------------------------------------

TEST(ActivationEval, Basic) {
  Tensor x = f32({4}, {-2, -0.5f, 0, 3});
  EXPECT_EQ(vals<float>(run(OpKind::Relu, {&x})), (std::vector<float>{0, 0, 0, 3}));
  EXPECT_EQ(vals<float>(run(OpKind::LeakyRelu, {&x})), (std::vector<float>{-0.02f, -0.005f, 0, 3}));
  EXPECT_EQ(vals<float>(run(OpKind::ThresholdedRelu, {&x})), (std::vector<float>{0, 0, 0, 3}));
  expectNear(dvals(run(OpKind::HardSigmoid, {&x})), {0.1f, 0.4f, 0.5f, 1}, 1e-6f);
  expectNear(dvals(run(OpKind::HardSwish, {&x})),
             {-2 * (-2.0f / 6 + 0.5f), -0.5f * (-0.5f / 6 + 0.5f), 0, 3}, 1e-6f);
  EXPECT_EQ(vals<float>(run(OpKind::Shrink, {&x}, LiteralAttrs{{{"bias", 1.0f}, {"lambd", 1.0f}}})),
            (std::vector<float>{-1, 0, 0, 2}));
  auto sel = vals<float>(run(OpKind::Selu, {&x}));
  EXPECT_NEAR(sel[0], 1.0507010f * 1.6732632f * (std::exp(-2.0f) - 1), 1e-6);
  EXPECT_FLOAT_EQ(sel[3], 3 * 1.0507010f);
  Tensor big = f32({3}, {-100, 0, 100});
  auto sp = vals<float>(run(OpKind::Softplus, {&big}));
  EXPECT_FLOAT_EQ(sp[1], std::log(2.0f));
  EXPECT_FLOAT_EQ(sp[2], 100);
  EXPECT_GE(sp[0], 0);
  auto sg = vals<float>(run(OpKind::Sigmoid, {&big}));
  EXPECT_EQ(sg[0], std::exp(-100.0f) / (1 + std::exp(-100.0f)));
  EXPECT_EQ(sg[1], 0.5f);
  EXPECT_EQ(sg[2], 1.0f);
  auto ge = vals<float>(run(OpKind::Gelu, {&x}));
  EXPECT_NEAR(ge[3], 2.99595031f, 1e-6);
  auto gt = vals<float>(run(OpKind::Gelu, {&x}, LiteralAttrs{{{"approximate", "tanh"}}}));
  EXPECT_NEAR(gt[3], 2.99636261f, 1e-6);
  Tensor i = vec<int32_t>({3}, {-5, 0, 5});
  EXPECT_EQ(vals<int32_t>(run(OpKind::Relu, {&i})), (std::vector<int32_t>{0, 0, 5}));
}

TEST(ActivationEval, PRelu) {
  Tensor x = f32({2, 2}, {-1, 2, -3, 4});
  Tensor s = f32({2}, {0.5f, 0.25f});
  EXPECT_EQ(vals<float>(run(OpKind::PRelu, {&x, &s})), (std::vector<float>{-0.5f, 2, -1.5f, 4}));
  Tensor bad = f32({2, 2, 1}, {1, 1, 1, 1});
  EXPECT_EQ(errorOf([&] { run(OpKind::PRelu, {&x, &bad}); }), ErrorKind::InvalidModel);
}

TEST(ActivationEval, Clip) {
  Tensor x = f32({5}, {-INFINITY, -2, 0.5f, 3, NAN});
  Tensor lo = f32({}, {-1});
  Tensor hi = f32({1}, {1});
  auto r = vals<float>(run(OpKind::Clip, {&x, &lo, &hi}));
  EXPECT_EQ((std::vector<float>(r.begin(), r.begin() + 4)), (std::vector<float>{-1, -1, 0.5f, 1}));
  EXPECT_TRUE(std::isnan(r[4]));
  r = vals<float>(run(OpKind::Clip, {&x, nullptr, &hi}));
  EXPECT_EQ(r[0], -INFINITY);
  EXPECT_EQ(r[3], 1);
  // Opset 6: bounds are attributes.
  r = vals<float>(run(OpKind::Clip, {&x}, LiteralAttrs{{{"min", 0.0f}}}, 6));
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[3], 3);
  // Attributes are ignored from opset 11 (they no longer exist).
  r = vals<float>(run(OpKind::Clip, {&x}, LiteralAttrs{{{"min", 0.0f}}}, 13));
  EXPECT_EQ(r[1], -2);
  Tensor i = vec<int8_t>({3}, {-128, 0, 127});
  Tensor imax = vec<int8_t>({}, {5});
  EXPECT_EQ(vals<int8_t>(run(OpKind::Clip, {&i, nullptr, &imax})),
            (std::vector<int8_t>{-128, 0, 5}));
  Tensor vecMin = f32({2}, {0, 1});
  EXPECT_EQ(errorOf([&] { run(OpKind::Clip, {&x, &vecMin}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] { run(OpKind::Clip, {&x, &imax}); }), ErrorKind::InvalidModel);
}

// Every op of both families, on every dtype: either the shape rule refuses the dtype (as a user
// error) or the kernel runs; a kernel must never meet a dtype its rule let through unchecked.
TEST(ElementwiseEval, EveryAcceptedDTypeRuns) {
  const std::vector<OpKind> ops = {
#define TRIAD_OP(Kind, OnnxName, Family) OpKind::Kind,
#include "ir/Ops.def"
#undef TRIAD_OP
  };
  std::map<OpKind, LiteralAttrs> attrs = {{OpKind::BitShift, LiteralAttrs{{{"direction", "LEFT"}}}},
                                          {OpKind::Cast, LiteralAttrs{{{"to", int64_t(10)}}}},
                                          {OpKind::Mod, LiteralAttrs{{{"fmod", int64_t(1)}}}}};
  int ran = 0;
  for (OpKind k : ops) {
    const OpDef* d = findOp(k);
    std::string fam;
#define TRIAD_OP(Kind, OnnxName, Family)                                                           \
  if (k == OpKind::Kind) fam = #Family;
#include "ir/Ops.def"
#undef TRIAD_OP
    if (fam != "Elementwise" && fam != "Activation") continue;
    ASSERT_NE(d, nullptr) << opKindName(k) << " is not registered";
    for (DType t : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I16,
                    DType::I8, DType::U64, DType::U32, DType::U16, DType::U8, DType::Bool}) {
      Tensor x(t, {2, 3});
      for (int64_t j = 0; j < x.numElements(); ++j)
        x.setDouble(j, double(j % 3));
      Tensor s(t, {3});
      Tensor cond(DType::Bool, {3});
      int n = std::max(d->minInputs, 1);
      std::vector<const Tensor*> in(size_t(n), &x);
      if (n >= 2) in[1] = &s;
      if (k == OpKind::Where) in = {&cond, &x, &s};
      if (k == OpKind::Clip) in = {&x};
      try {
        run(k, in, attrs.count(k) ? attrs[k] : LiteralAttrs{});
        ++ran;
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal)
            << opKindName(k) << " on " << dtypeName(t) << ": " << e.what();
      }
    }
  }
  EXPECT_GT(ran, 300);
}

} // namespace
