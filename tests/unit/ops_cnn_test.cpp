// Unit tests of the Conv, Pool and Normalization op families: attribute parsing (auto_pad,
// output_shape, opset differences), shape rules with their diagnostics, and reference-kernel
// numerics (checked against naive direct loops written here).
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

Tensor naiveConv(const Tensor& X, const Tensor& W, const Tensor* B, const ConvAttrs& a,
                 const Shape& outShape) {
  Tensor Y(DType::F32, outShape);
  size_t k = a.kernel.size();
  Shape inSp(X.shape().begin() + 2, X.shape().end()), outSp(outShape.begin() + 2, outShape.end());
  int64_t C = X.shape()[1], M = outShape[1], Cg = C / a.group, Mg = M / a.group;
  auto xs = stridesOf(X.shape()), ws = stridesOf(W.shape()), ys = stridesOf(outShape);
  Shape ySp(outShape.begin() + 2, outShape.end());
  for (int64_t n = 0; n < outShape[0]; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / Mg;
      for (int64_t o = 0; o < numElements(outSp); ++o)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t t = 0; t < numElements(a.kernel); ++t) {
            int64_t xi = n * xs[0] + (g * Cg + c) * xs[1], wi = m * ws[0] + c * ws[1];
            int64_t orem = o, trem = t;
            bool inside = true;
            for (size_t d = k; d-- > 0;) {
              int64_t od = orem % outSp[d], td = trem % a.kernel[d];
              orem /= outSp[d];
              trem /= a.kernel[d];
              int64_t id = od * a.strides[d] + td * a.dilations[d] - a.pads[d];
              if (id < 0 || id >= inSp[d]) inside = false;
              xi += id * xs[d + 2];
              wi += td * ws[d + 2];
            }
            if (inside)
              Y.data<float>()[n * ys[0] + m * ys[1] + o] +=
                  X.data<float>()[xi] * W.data<float>()[wi];
          }
      if (B)
        for (int64_t o = 0; o < numElements(outSp); ++o)
          Y.data<float>()[n * ys[0] + m * ys[1] + o] += B->data<float>()[m];
    }
  return Y;
}

// Naive ConvTranspose: every input element scatters into the output.
Tensor naiveConvTranspose(const Tensor& X, const Tensor& W, const ConvTransposeAttrs& a,
                          const Shape& outShape) {
  Tensor Y(DType::F32, outShape);
  size_t k = a.kernel.size();
  Shape inSp(X.shape().begin() + 2, X.shape().end()), outSp(outShape.begin() + 2, outShape.end());
  int64_t C = X.shape()[1], M = outShape[1], Cg = C / a.group, Mg = M / a.group;
  auto xs = stridesOf(X.shape()), ws = stridesOf(W.shape()), ys = stridesOf(outShape);
  for (int64_t n = 0; n < X.shape()[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < numElements(inSp); ++i)
        for (int64_t mm = 0; mm < Mg; ++mm)
          for (int64_t t = 0; t < numElements(a.kernel); ++t) {
            int64_t m = (c / Cg) * Mg + mm;
            int64_t yi = n * ys[0] + m * ys[1], wi = c * ws[0] + mm * ws[1];
            int64_t irem = i, trem = t;
            bool inside = true;
            for (size_t d = k; d-- > 0;) {
              int64_t id = irem % inSp[d], td = trem % a.kernel[d];
              irem /= inSp[d];
              trem /= a.kernel[d];
              int64_t od = id * a.strides[d] + td * a.dilations[d] - a.pads[d];
              if (od < 0 || od >= outSp[d]) inside = false;
              yi += od * ys[d + 2];
              wi += td * ws[d + 2];
            }
            if (inside)
              Y.data<float>()[yi] +=
                  X.data<float>()[n * xs[0] + c * xs[1] + i] * W.data<float>()[wi];
          }
  return Y;
}

// ---------------------------------------------------------------------------------------------
// Conv

TEST(ConvOps, BasicConvWithPadding) {
  Tensor x = iota({1, 1, 5, 5});
  Tensor w = Tensor::fromVector<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  Tensor y = run(OpKind::Conv, {&x, &w}, LiteralAttrs({{"pads", Ints{1, 1, 1, 1}}}));
  expectValues(y, {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                   117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
}

TEST(ConvOps, AutoPadResolvesToExplicitPads) {
  TensorType x{DType::F32, {1, 1, 5, 5}, {}}, w{DType::F32, {1, 1, 2, 2}, {}};
  std::vector<std::optional<TensorType>> types{x, w};
  auto upper = parseAttrs(OpKind::Conv, LiteralAttrs({{"auto_pad", "SAME_UPPER"}}), types);
  auto lower = parseAttrs(OpKind::Conv, LiteralAttrs({{"auto_pad", "SAME_LOWER"}}), types);
  // Kernel 2 over 5 with stride 1: one pad in total, at the end (UPPER) or beginning (LOWER).
  EXPECT_EQ(static_cast<const ConvAttrs&>(*upper).pads, (Ints{0, 0, 1, 1}));
  EXPECT_EQ(static_cast<const ConvAttrs&>(*lower).pads, (Ints{1, 1, 0, 0}));
  EXPECT_EQ(static_cast<const ConvAttrs&>(*upper).kernel, (Ints{2, 2}));
  EXPECT_EQ(inferTypes(OpKind::Conv, *upper, types)[0].shape, (Shape{1, 1, 5, 5}));
  // Stride 2: output ceil(5/2) = 3.
  auto s2 = parseAttrs(
      OpKind::Conv,
      LiteralAttrs(
          {{"auto_pad", "SAME_LOWER"}, {"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}),
      {x, TensorType{DType::F32, {1, 1, 3, 3}, {}}});
  EXPECT_EQ(static_cast<const ConvAttrs&>(*s2).pads, (Ints{1, 1, 1, 1}));
}

struct ConvCase {
  Shape x, w;
  LiteralAttrs attrs;
  bool bias;
};

TEST(ConvOps, MatchesNaiveLoops1D2D3D) {
  std::vector<ConvCase> cases = {
      {{2, 3, 11}, {4, 3, 3}, LiteralAttrs({{"strides", Ints{2}}, {"pads", Ints{1, 2}}}), true},
      {{1, 4, 7, 6},
       {6, 2, 3, 2},
       LiteralAttrs({{"group", int64_t(2)}, {"dilations", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}}),
       true},
      {{1, 4, 9, 9},
       {4, 1, 3, 3},
       LiteralAttrs({{"group", int64_t(4)}, {"strides", Ints{2, 2}}}),
       false},                                              // depthwise
      {{1, 8, 5, 5}, {300, 8, 1, 1}, LiteralAttrs(), true}, // 1x1, many outputs (several tiles)
      {{1, 2, 5, 4, 6},
       {3, 2, 2, 3, 2},
       LiteralAttrs({{"strides", Ints{1, 2, 2}}, {"pads", Ints{1, 1, 0, 0, 1, 1}}}),
       true},
  };
  unsigned seed = 1;
  for (const ConvCase& c : cases) {
    Tensor x = randomTensor(c.x, seed++), w = randomTensor(c.w, seed++);
    Tensor b = randomTensor({c.w[0]}, seed++);
    std::vector<const Tensor*> in{&x, &w};
    if (c.bias) in.push_back(&b);
    auto a = parseAttrs(OpKind::Conv, c.attrs, typesOf(in));
    Tensor y = run(OpKind::Conv, in, c.attrs);
    expectNear(
        y, naiveConv(x, w, c.bias ? &b : nullptr, static_cast<const ConvAttrs&>(*a), y.shape()));
  }
}

TEST(ConvOps, HalfAndDoubleMatchFloat) {
  Tensor x = randomTensor({1, 2, 6, 6}, 7), w = randomTensor({3, 2, 3, 3}, 8);
  Tensor yf = run(OpKind::Conv, {&x, &w});
  Tensor xd = x.castTo(DType::F64), wd = w.castTo(DType::F64);
  Tensor yd = run(OpKind::Conv, {&xd, &wd});
  EXPECT_EQ(yd.dtype(), DType::F64);
  expectNear(yd, yf, 1e-5);
  Tensor xh = x.castTo(DType::F16), wh = w.castTo(DType::F16);
  Tensor yh = run(OpKind::Conv, {&xh, &wh});
  EXPECT_EQ(yh.dtype(), DType::F16);
  expectNear(yh, yf, 2e-2);
}

TEST(ConvOps, Diagnostics) {
  TensorType x{DType::F32, {1, 4, 5, 5}, {}};
  // group 3 does not divide 4 channels.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {3, 1, 3, 3}, {}}},
                            LiteralAttrs({{"group", int64_t(3)}}));
            }),
            ErrorKind::InvalidModel);
  // W has the wrong number of input channels.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {2, 3, 3, 3}, {}}});
            }),
            ErrorKind::InvalidModel);
  // kernel_shape disagrees with the rank.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {2, 4, 3, 3}, {}}},
                            LiteralAttrs({{"kernel_shape", Ints{3}}}));
            }),
            ErrorKind::InvalidModel);
  // pads with the wrong count.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {2, 4, 3, 3}, {}}},
                            LiteralAttrs({{"pads", Ints{1, 1}}}));
            }),
            ErrorKind::InvalidModel);
  // Kernel larger than the padded input.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {2, 4, 7, 7}, {}}});
            }),
            ErrorKind::InvalidModel);
  // Integer convolution is not supported.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {TensorType{DType::I32, {1, 4, 5, 5}, {}},
                                           TensorType{DType::I32, {2, 4, 3, 3}, {}}});
            }),
            ErrorKind::Unsupported);
  // Bad auto_pad value.
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Conv, {x, TensorType{DType::F32, {2, 4, 3, 3}, {}}},
                            LiteralAttrs({{"auto_pad", "FULL"}}));
            }),
            ErrorKind::Unsupported);
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

TEST(ConvTransposeOps, DefaultShapeAndValues) {
  // ONNX test_convtranspose_1d: X [1,1,3] = [0,1,2], W [1,2,3] of ones.
  Tensor x = Tensor::fromVector<float>({1, 1, 3}, {0, 1, 2});
  Tensor w = Tensor::fromVector<float>({1, 2, 3}, std::vector<float>(6, 1.0f));
  Tensor y = run(OpKind::ConvTranspose, {&x, &w});
  EXPECT_EQ(y.shape(), (Shape{1, 2, 5}));
  expectValues(y, {0, 1, 3, 3, 2, 0, 1, 3, 3, 2});
}

TEST(ConvTransposeOps, OutputShapeAndAutoPadFoldIntoPads) {
  TensorType x{DType::F32, {1, 1, 3, 3}, {}}, w{DType::F32, {1, 2, 3, 3}, {}};
  // Natural size 3*(3-1)+3 = 9 and 2*(3-1)+3 = 7; output_shape [10, 8] extends the end.
  auto t = parseAndInfer(OpKind::ConvTranspose, {x, w},
                         LiteralAttrs({{"strides", Ints{3, 2}}, {"output_shape", Ints{10, 8}}}));
  EXPECT_EQ(t[0].shape, (Shape{1, 2, 10, 8}));
  auto same = parseAndInfer(OpKind::ConvTranspose, {x, w},
                            LiteralAttrs({{"strides", Ints{2, 2}}, {"auto_pad", "SAME_UPPER"}}));
  EXPECT_EQ(same[0].shape, (Shape{1, 2, 6, 6}));
  auto pads = parseAndInfer(OpKind::ConvTranspose, {x, w},
                            LiteralAttrs({{"strides", Ints{3, 2}}, {"pads", Ints{1, 2, 1, 2}}}));
  EXPECT_EQ(pads[0].shape, (Shape{1, 2, 7, 3}));
}

TEST(ConvTransposeOps, MatchesNaiveLoops) {
  std::vector<std::pair<ConvCase, Ints>> cases = {
      {{{2, 3, 5}, {3, 2, 3}, LiteralAttrs({{"strides", Ints{2}}, {"pads", Ints{1, 0}}}), false},
       {}},
      {{{1, 4, 4, 3},
        {4, 3, 3, 2},
        LiteralAttrs({{"group", int64_t(2)},
                      {"strides", Ints{2, 3}},
                      {"dilations", Ints{1, 2}},
                      {"output_padding", Ints{1, 0}}}),
        false},
       {}},
      {{{1, 2, 3, 2, 3}, {2, 2, 2, 2, 3}, LiteralAttrs({{"strides", Ints{2, 1, 2}}}), false}, {}},
  };
  unsigned seed = 11;
  for (auto& [c, unused] : cases) {
    Tensor x = randomTensor(c.x, seed++), w = randomTensor(c.w, seed++);
    std::vector<const Tensor*> in{&x, &w};
    auto a = parseAttrs(OpKind::ConvTranspose, c.attrs, typesOf(in));
    Tensor y = run(OpKind::ConvTranspose, in, c.attrs);
    expectNear(y, naiveConvTranspose(x, w, static_cast<const ConvTransposeAttrs&>(*a), y.shape()));
  }
}

TEST(ConvTransposeOps, Diagnostics) {
  TensorType x{DType::F32, {1, 4, 3, 3}, {}};
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::ConvTranspose, {x, TensorType{DType::F32, {3, 2, 3, 3}, {}}});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::ConvTranspose, {x, TensorType{DType::F32, {4, 2, 3, 3}, {}}},
                            LiteralAttrs({{"output_padding", Ints{1}}}));
            }),
            ErrorKind::InvalidModel);
}

// ---------------------------------------------------------------------------------------------
// Pooling

TEST(PoolOps, MaxPoolWithIndicesAndStorageOrder) {
  // ONNX test_maxpool_with_argmax_2d_precomputed_strides: X [1,1,5,5] = 1..25.
  Tensor x = iota({1, 1, 5, 5});
  for (float& v : x.values<float>())
    v += 1;
  LiteralAttrs attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  auto rowMajor = runNode(OpKind::MaxPool, {&x}, attrs, 12, 2).outs;
  expectValues(rowMajor[0], {7, 9, 17, 19});
  expectValues(rowMajor[1], {6, 8, 16, 18});
  LiteralAttrs colAttrs(
      {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"storage_order", int64_t(1)}});
  auto colMajor = runNode(OpKind::MaxPool, {&x}, colAttrs, 12, 2).outs;
  EXPECT_EQ(colMajor[1].dtype(), DType::I64);
  expectValues(colMajor[1], {6, 16, 8, 18});
}

TEST(PoolOps, MaxPoolCeilModeDilationsAndUint8) {
  TensorType x{DType::F32, {1, 1, 4, 4}, {}};
  auto ceil = parseAndInfer(
      OpKind::MaxPool, {x},
      LiteralAttrs(
          {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t(1)}}));
  EXPECT_EQ(ceil[0].shape, (Shape{1, 1, 2, 2}));
  auto floor = parseAndInfer(OpKind::MaxPool, {x},
                             LiteralAttrs({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}));
  EXPECT_EQ(floor[0].shape, (Shape{1, 1, 1, 1}));
  Tensor xi = iota({1, 1, 4, 4});
  Tensor y = run(OpKind::MaxPool, {&xi},
                 LiteralAttrs({{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}));
  expectValues(y, {10, 11, 14, 15});
  Tensor xu = xi.castTo(DType::U8);
  Tensor yu = run(OpKind::MaxPool, {&xu}, LiteralAttrs({{"kernel_shape", Ints{4, 4}}}));
  EXPECT_EQ(yu.dtype(), DType::U8);
  expectValues(yu, {15});
}

TEST(PoolOps, AveragePoolPadding) {
  Tensor x = Tensor::fromVector<float>({1, 1, 3}, {1, 2, 3});
  LiteralAttrs attrs({{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}});
  expectValues(run(OpKind::AveragePool, {&x}, attrs), {1, 1.5, 2.5, 3});
  LiteralAttrs incl(
      {{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}, {"count_include_pad", int64_t(1)}});
  expectValues(run(OpKind::AveragePool, {&x}, incl), {0.5, 1.5, 2.5, 1.5});
  // 3-D, SAME_UPPER.
  Tensor x3 = iota({1, 1, 2, 2, 2});
  Tensor y3 = run(OpKind::AveragePool, {&x3},
                  LiteralAttrs({{"kernel_shape", Ints{2, 2, 2}}, {"auto_pad", "SAME_UPPER"}}));
  EXPECT_EQ(y3.shape(), (Shape{1, 1, 2, 2, 2}));
  expectValues(y3, {3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7});
}

TEST(PoolOps, LpPoolAndGlobalPools) {
  Tensor x = Tensor::fromVector<float>({1, 1, 4}, {3, -4, 0, 1});
  expectValues(
      run(OpKind::LpPool, {&x}, LiteralAttrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}})),
      {5, 1});
  Tensor g = iota({2, 2, 3, 1});
  Tensor avg = run(OpKind::GlobalAveragePool, {&g});
  EXPECT_EQ(avg.shape(), (Shape{2, 2, 1, 1}));
  expectValues(avg, {1, 4, 7, 10});
  expectValues(run(OpKind::GlobalMaxPool, {&g}), {2, 5, 8, 11});
}

TEST(PoolOps, Diagnostics) {
  TensorType x{DType::F32, {1, 1, 4, 4}, {}};
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::MaxPool, {x}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::MaxPool, {x}, LiteralAttrs({{"kernel_shape", Ints{2, 2, 2}}}));
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::AveragePool, {TensorType{DType::I32, {1, 1, 4, 4}, {}}},
                            LiteralAttrs({{"kernel_shape", Ints{2, 2}}}));
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(
                  OpKind::MaxPool, {x},
                  LiteralAttrs({{"kernel_shape", Ints{2, 2}}, {"storage_order", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::GlobalMaxPool, {TensorType{DType::F32, {4, 4}, {}}});
            }),
            ErrorKind::InvalidModel);
}

// ---------------------------------------------------------------------------------------------
// Normalization

TEST(NormOps, BatchNormalizationInference) {
  Tensor x = Tensor::fromVector<float>({1, 2, 2}, {1, 2, 3, 5});
  Tensor s = Tensor::fromVector<float>({2}, {1, 2});
  Tensor b = Tensor::fromVector<float>({2}, {0, 1});
  Tensor m = Tensor::fromVector<float>({2}, {1, 4});
  Tensor v = Tensor::fromVector<float>({2}, {1, 4});
  Tensor y =
      run(OpKind::BatchNormalization, {&x, &s, &b, &m, &v}, LiteralAttrs({{"epsilon", 0.0f}}));
  expectValues(y, {0, 1, 0, 2});
}

TEST(NormOps, BatchNormalizationTrainingIsUnsupported) {
  std::vector<TensorType> in{TensorType{DType::F32, {1, 2, 2}, {}}};
  for (int i = 0; i < 4; ++i)
    in.push_back(TensorType{DType::F32, {2}, {}});
  std::vector<std::optional<TensorType>> types(in.begin(), in.end());
  EXPECT_EQ(errorOf([&] {
              parseAttrs(OpKind::BatchNormalization, LiteralAttrs({{"training_mode", int64_t(1)}}),
                         types);
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] { parseAttrs(OpKind::BatchNormalization, LiteralAttrs(), types, 9, 5); }),
            ErrorKind::Unsupported);
  in[1].shape = {3};
  EXPECT_EQ(
      errorOf([&] { parseAndInfer(OpKind::BatchNormalization, Types(in.begin(), in.end())); }),
      ErrorKind::InvalidModel);
}

TEST(NormOps, InstanceNormalization) {
  Tensor x = Tensor::fromVector<float>({1, 2, 2}, {1, 3, 5, 9});
  Tensor s = Tensor::fromVector<float>({2}, {2, 1});
  Tensor b = Tensor::fromVector<float>({2}, {0, 7});
  expectValues(run(OpKind::InstanceNormalization, {&x, &s, &b}, LiteralAttrs({{"epsilon", 0.0f}})),
               {-2, 2, 6, 8});
}

TEST(NormOps, LayerNormalizationWithStatistics) {
  Tensor x = Tensor::fromVector<float>({2, 2}, {1, 3, 2, 6});
  Tensor s = Tensor::fromVector<float>({2}, {1, 2});
  Tensor b = Tensor::fromVector<float>({2}, {0, 1});
  auto outs =
      runNode(OpKind::LayerNormalization, {&x, &s, &b}, LiteralAttrs({{"epsilon", 0.0f}}), 17, 3)
          .outs;
  expectValues(outs[0], {-1, 3, -1, 3});
  EXPECT_EQ(outs[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(outs[1].dtype(), DType::F32);
  expectValues(outs[1], {2, 4});
  expectValues(outs[2], {1, 0.5});
  // axis 0: statistics over everything, shape [1, 1].
  auto all =
      parseAndInfer(OpKind::LayerNormalization, {x.type(), TensorType{DType::F32, {2, 2}, {}}},
                    LiteralAttrs({{"axis", int64_t(0)}}), 17);
  EXPECT_EQ(all[1].shape, (Shape{1, 1}));
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::LayerNormalization, {x.type(), TensorType{DType::F32, {3}, {}}},
                            {}, 17);
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::LayerNormalization, {x.type(), s.type()},
                            LiteralAttrs({{"axis", int64_t(2)}}), 17);
            }),
            ErrorKind::InvalidModel);
}

TEST(NormOps, LRN) {
  Tensor x = Tensor::fromVector<float>({1, 3, 1}, {1, 2, 3});
  Tensor y =
      run(OpKind::LRN, {&x},
          LiteralAttrs({{"size", int64_t(3)}, {"alpha", 3.0f}, {"beta", 1.0f}, {"bias", 1.0f}}));
  // sums of squares over channel windows: {1+4, 1+4+9, 4+9}; alpha/size = 1.
  expectValues(y, {1.0 / 6, 2.0 / 15, 3.0 / 14});
  EXPECT_EQ(errorOf([&] { parseAndInfer(OpKind::LRN, {x.type()}); }), ErrorKind::InvalidModel);
}

TEST(NormOps, SoftmaxAxisSemanticsByOpset) {
  Tensor x = Tensor::fromVector<float>({1, 2, 2}, {0, 0, 0, 0});
  // Opset 13: over the last axis only.
  expectValues(run(OpKind::Softmax, {&x}, {}, 13), {0.5, 0.5, 0.5, 0.5});
  // Opset 11, default axis 1: coerced to [1, 4].
  expectValues(run(OpKind::Softmax, {&x}, {}, 11), {0.25, 0.25, 0.25, 0.25});
  Tensor l = Tensor::fromVector<float>({2, 2}, {1000, 1000, 0, std::log(3.0f)});
  expectValues(run(OpKind::LogSoftmax, {&l}, {}, 13),
               {std::log(0.5), std::log(0.5), std::log(0.25), std::log(0.75)});
  Tensor h = Tensor::fromVector<float>({2, 3}, {1, 3, 3, 2, 0, 1});
  expectValues(run(OpKind::Hardmax, {&h}, {}, 13), {0, 1, 0, 1, 0, 0});
  expectValues(run(OpKind::Hardmax, {&h}, LiteralAttrs({{"axis", int64_t(0)}}), 13),
               {0, 1, 1, 1, 0, 0});
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Softmax, {h.type()}, LiteralAttrs({{"axis", int64_t(2)}}), 13);
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              parseAndInfer(OpKind::Softmax, {TensorType{DType::I32, {2}, {}}}, {}, 13);
            }),
            ErrorKind::Unsupported);
}

} // namespace
