// Unit tests of the Vision op family (GridSample, RoiAlign, Col2Im, CenterCropPad,
// GroupNormalization, MeanVarianceNormalization, Einsum, Det): attribute parsing with shape
// operands and opset differences, shape rules with their diagnostics, and reference-kernel
// numerics checked against hand-computed values or naive loops written here.
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Vision.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

// ---------------------------------------------------------------------------------------------
// GridSample

TEST(VisionOps, GridSampleShapeAndModes) {
  Tensor x = iota({2, 3, 4, 5});
  Tensor g = randomTensor({2, 6, 7, 2}, 1);
  auto t = typesFor(OpKind::GridSample, {&x, &g}, {}, 16);
  EXPECT_EQ(t[0].shape, (Shape{2, 3, 6, 7}));
  // Opset 20 renamed the modes; the old names are refused there and vice versa.
  EXPECT_NO_THROW(typesFor(OpKind::GridSample, {&x, &g}, LiteralAttrs({{"mode", "cubic"}}), 20));
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GridSample, {&x, &g}, LiteralAttrs({{"mode", "cubic"}}), 16);
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GridSample, {&x, &g}, LiteralAttrs({{"padding_mode", "wrap"}}), 16);
            }),
            ErrorKind::Unsupported);
  Tensor badGrid = randomTensor({2, 6, 7, 3}, 1);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GridSample, {&x, &badGrid}, {}, 16);
            }),
            ErrorKind::InvalidModel);
  Tensor x5 = iota({1, 1, 2, 2, 2});
  Tensor g5 = randomTensor({1, 2, 2, 2, 3}, 1);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GridSample, {&x5, &g5}, {}, 20);
            }),
            ErrorKind::Unsupported);
  Tensor xi = iota({1, 1, 2, 2}, DType::I32);
  Tensor gi = randomTensor({1, 2, 2, 2}, 1);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GridSample, {&xi, &gi}, {}, 16);
            }),
            ErrorKind::Unsupported);
}

TEST(VisionOps, GridSampleIdentityGridReproducesInput) {
  // With align_corners, grid points -1, 0, 1 hit the pixel centers of a 3-wide image exactly.
  Tensor x = randomTensor({1, 2, 3, 3}, 2);
  Tensor g(DType::F32, {1, 3, 3, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      g.setDouble((i * 3 + j) * 2, double(j) - 1.0);
      g.setDouble((i * 3 + j) * 2 + 1, double(i) - 1.0);
    }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    Tensor y = run(OpKind::GridSample, {&x, &g},
                   LiteralAttrs({{"align_corners", int64_t(1)}, {"mode", std::string(mode)}}), 16);
    for (int64_t i = 0; i < x.numElements(); ++i)
      EXPECT_NEAR(y.getDouble(i), x.getDouble(i), 1e-5) << mode << " at " << i;
  }
}

TEST(VisionOps, GridSampleBilinearPadding) {
  // X = [[0, 1], [2, 3]]; without align_corners the image spans [-1, 1] edge to edge.
  Tensor x = f32({1, 1, 2, 2}, {0, 1, 2, 3});
  // Points: center (0,0); far outside (-3,-3) and (3,3).
  Tensor g = f32({1, 1, 3, 2}, {0, 0, -3, -3, 3, 3});
  expectValues(run(OpKind::GridSample, {&x, &g}, {}, 16), {1.5, 0, 0});
  expectValues(run(OpKind::GridSample, {&x, &g}, LiteralAttrs({{"padding_mode", "border"}}), 16),
               {1.5, 0, 3});
  // Reflection: x = ((3 + 1) * 2 - 1) / 2 = 3.5 reflects at 1.5 to -0.5, i.e. the left edge.
  expectValues(
      run(OpKind::GridSample, {&x, &g}, LiteralAttrs({{"padding_mode", "reflection"}}), 16),
      {1.5, 3, 0});
}

// ---------------------------------------------------------------------------------------------
// RoiAlign

TEST(VisionOps, RoiAlignShapeAndDiagnostics) {
  Tensor x = iota({2, 3, 8, 8});
  Tensor rois = f32({2, 4}, {0, 0, 4, 4, 1, 1, 6, 6});
  Tensor idx = i64({0, 1});
  LiteralAttrs attrs({{"output_height", int64_t(2)}, {"output_width", int64_t(3)}});
  EXPECT_EQ(typesFor(OpKind::RoiAlign, {&x, &rois, &idx}, attrs, 16)[0].shape, (Shape{2, 3, 2, 3}));
  Tensor idx32 = Tensor::fromVector<int32_t>({2}, {0, 1});
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::RoiAlign, {&x, &rois, &idx32}, attrs, 16);
            }),
            ErrorKind::InvalidModel);
  Tensor rois5 = randomTensor({2, 5}, 3);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::RoiAlign, {&x, &rois5, &idx}, attrs, 16);
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::RoiAlign, {&x, &rois, &idx}, LiteralAttrs({{"mode", "sum"}}), 16);
            }),
            ErrorKind::Unsupported);
  Tensor badIdx = i64({0, 2});
  EXPECT_EQ(errorOf([&] {
              run(OpKind::RoiAlign, {&x, &rois, &badIdx}, attrs, 16);
            }),
            ErrorKind::Runtime);
}

TEST(VisionOps, RoiAlignInvertedOrNaNRoiIsZeroNotACrash) {
  // half_pixel keeps inverted ROIs as they are; with adaptive sampling both counts would be
  // negative (their product positive): such a ROI has no samples and its bins are 0, as in
  // ONNX Runtime. A NaN ROI likewise.
  Tensor x = iota({1, 2, 6, 6});
  Tensor rois = f32({2, 4}, {5, 5, 1, 1, NAN, 0, 3, 3});
  Tensor idx = i64({0, 0});
  for (const char* mode : {"avg", "max"}) {
    Tensor y = run(OpKind::RoiAlign, {&x, &rois, &idx},
                   LiteralAttrs({{"output_height", int64_t(2)},
                                 {"output_width", int64_t(2)},
                                 {"mode", std::string(mode)}}),
                   16);
    ASSERT_EQ(y.numElements(), 16);
    for (int64_t i = 0; i < 16; ++i)
      EXPECT_EQ(y.getDouble(i), 0.0) << mode << " at " << i;
  }
}

TEST(VisionOps, RoiAlignAveragesBilinearSamples) {
  // X[h, w] = w: bilinear sampling is exact, so each bin's average is the mean of its sample
  // x-coordinates. ROI x in [0, 4] with half_pixel -> [-0.5, 3.5]; 2 bins of width 2 with 2
  // samples each, at -0.5 + 2 * bin + (i + 0.5) = 0, 1 -> mean 0.5; bin 2: 2, 3 -> 2.5.
  Tensor x(DType::F32, {1, 1, 4, 6});
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t w = 0; w < 6; ++w)
      x.setDouble(h * 6 + w, double(w));
  Tensor rois = f32({1, 4}, {0, 0, 4, 4});
  Tensor idx = i64({0});
  LiteralAttrs attrs({{"output_height", int64_t(1)},
                      {"output_width", int64_t(2)},
                      {"sampling_ratio", int64_t(2)}});
  expectValues(run(OpKind::RoiAlign, {&x, &rois, &idx}, attrs, 16), {0.5, 2.5});
  // Opset 10 (output_half_pixel): no shift; samples at 0.5, 1.5 and 2.5, 3.5.
  expectValues(run(OpKind::RoiAlign, {&x, &rois, &idx}, attrs, 10), {1.0, 3.0});
}

// ---------------------------------------------------------------------------------------------
// Col2Im

TEST(VisionOps, Col2ImShapeAndDiagnostics) {
  Tensor x = iota({2, 6, 12});
  Tensor image = i64({4, 5});
  Tensor block = i64({1, 3});
  // 2 channels of 1x3 blocks over a 4x5 image: 4 * 3 = 12 blocks.
  EXPECT_EQ(typesFor(OpKind::Col2Im, {&x, &image, &block})[0].shape, (Shape{2, 2, 4, 5}));
  Tensor block2 = i64({2, 2});
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::Col2Im, {&x, &image, &block2});
            }),
            ErrorKind::InvalidModel); // 6 channels not a multiple of 4
  Tensor x13 = iota({2, 6, 13});
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::Col2Im, {&x13, &image, &block});
            }),
            ErrorKind::InvalidModel); // wrong block count
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::Col2Im, {&x, &image, &block}, LiteralAttrs({{"strides", Ints{1}}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(VisionOps, Col2ImSumsOverlappingBlocks) {
  // 1-D image of 4 with blocks of 2, stride 1: blocks cover [0,1], [1,2], [2,3]; all ones in
  // the columns -> interior pixels receive 2.
  Tensor x = f32({1, 2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor image = i64({1, 4});
  Tensor block = i64({1, 2});
  expectValues(run(OpKind::Col2Im, {&x, &image, &block}), {1, 2, 2, 1});
  // Padding 1 on each side along w: 5 blocks, the padded positions are dropped.
  Tensor xp = iota({1, 2, 5});
  LiteralAttrs pads({{"pads", Ints{0, 1, 0, 1}}});
  // Block l covers image w = l - 1 (offset 0, value l) and w = l (offset 1, value 5 + l).
  expectValues(run(OpKind::Col2Im, {&xp, &image, &block}, pads), {1 + 5, 2 + 6, 3 + 7, 4 + 8});
}

// ---------------------------------------------------------------------------------------------
// CenterCropPad

TEST(VisionOps, CenterCropPadCropsAndPads) {
  Tensor x = iota({5, 2}, DType::I32);
  Tensor shape = i64({2, 5});
  // Rows: crop 5 -> 2 starts at 1; cols: pad 2 -> 5 puts 1 zero before, 2 after.
  Tensor y = run(OpKind::CenterCropPad, {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_EQ(y.dtype(), DType::I32);
  expectValues(y, {0, 2, 3, 0, 0, 0, 4, 5, 0, 0});
  Tensor one = i64({3});
  Tensor yc = run(OpKind::CenterCropPad, {&x, &one}, LiteralAttrs({{"axes", Ints{-2}}}));
  expectValues(yc, {2, 3, 4, 5, 6, 7});
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::CenterCropPad, {&x, &one});
            }),
            ErrorKind::InvalidModel); // one size for a rank-2 input without axes
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::CenterCropPad, {&x, &one}, LiteralAttrs({{"axes", Ints{2}}}));
            }),
            ErrorKind::InvalidModel);
}

// ---------------------------------------------------------------------------------------------
// GroupNormalization and MeanVarianceNormalization

TEST(VisionOps, GroupNormMatchesNaive) {
  Tensor x = randomTensor({2, 4, 3}, 5);
  Tensor scale = f32({2}, {2.0f, -1.0f});
  Tensor bias = f32({2}, {0.5f, 1.0f});
  LiteralAttrs attrs({{"num_groups", int64_t(2)}, {"epsilon", 1e-3f}});
  Tensor y = run(OpKind::GroupNormalization, {&x, &scale, &bias}, attrs, 18);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t g = 0; g < 2; ++g) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < 6; ++i)
        sum += x.getDouble(n * 12 + g * 6 + i);
      double mean = sum / 6;
      for (int64_t i = 0; i < 6; ++i)
        sq += std::pow(x.getDouble(n * 12 + g * 6 + i) - mean, 2);
      for (int64_t i = 0; i < 6; ++i) {
        int64_t p = n * 12 + g * 6 + i;
        double want = (x.getDouble(p) - mean) / std::sqrt(sq / 6 + 1e-3) * scale.getDouble(g) +
                      bias.getDouble(g);
        EXPECT_NEAR(y.getDouble(p), want, 1e-5);
      }
    }
  // Opset 21: scale and bias are per channel.
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GroupNormalization, {&x, &scale, &bias}, attrs, 21);
            }),
            ErrorKind::InvalidModel);
  Tensor s4 = f32({4}, {1, 1, 1, 1}), b4 = f32({4}, {0, 0, 0, 0});
  EXPECT_NO_THROW(typesFor(OpKind::GroupNormalization, {&x, &s4, &b4}, attrs, 21));
  LiteralAttrs three({{"num_groups", int64_t(3)}});
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GroupNormalization, {&x, &scale, &bias}, three);
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              typesFor(OpKind::GroupNormalization, {&x, &scale, &bias});
            }),
            ErrorKind::InvalidModel); // num_groups is required
}

TEST(VisionOps, MeanVarianceNormalization) {
  Tensor x = randomTensor({2, 3, 2, 2}, 7);
  Tensor y = run(OpKind::MeanVarianceNormalization, {&x}, {}, 13);
  // Default axes [0, 2, 3]: per channel, zero mean and unit variance.
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i)
        sum += y.getDouble((n * 3 + c) * 4 + i);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i)
        sq += std::pow(y.getDouble((n * 3 + c) * 4 + i), 2);
    EXPECT_NEAR(sum / 8, 0.0, 1e-6);
    EXPECT_NEAR(sq / 8, 1.0, 1e-5);
  }
  Tensor v = f32({1, 4}, {1, 2, 3, 4});
  expectValues(run(OpKind::MeanVarianceNormalization, {&v}, LiteralAttrs({{"axes", Ints{-1}}}), 13),
               {-1.5 / std::sqrt(1.25), -0.5 / std::sqrt(1.25), 0.5 / std::sqrt(1.25),
                1.5 / std::sqrt(1.25)});
  EXPECT_EQ(errorOf([&] { typesFor(OpKind::MeanVarianceNormalization, {&v}, {}, 13); }),
            ErrorKind::InvalidModel); // default axes need rank 4
}

// ---------------------------------------------------------------------------------------------
// Einsum

Tensor einsum(const std::string& eq, const std::vector<const Tensor*>& in) {
  return run(OpKind::Einsum, in, LiteralAttrs({{"equation", eq}}), 12);
}

TEST(VisionOps, EinsumMatmulTransposeAndImplicit) {
  Tensor a = randomTensor({2, 3}, 11, DType::F64), b = randomTensor({3, 4}, 12, DType::F64);
  Tensor y = einsum("ij, jk -> ik", {&a, &b});
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 3; ++j)
        s += a.getDouble(i * 3 + j) * b.getDouble(j * 4 + k);
      EXPECT_NEAR(y.getDouble(i * 4 + k), s, 1e-12);
    }
  // Implicit output: letters used once, in ASCII order (uppercase first).
  EXPECT_EQ(einsum("ij,jk", {&a, &b}).shape(), (Shape{2, 4}));
  Tensor t = einsum("ji", {&a});
  EXPECT_EQ(t.shape(), (Shape{3, 2})); // implicit "ji" -> "ij" transposes
  EXPECT_EQ(t.getDouble(1), a.getDouble(3));
  EXPECT_EQ(einsum("bA", {&a}).shape(), (Shape{3, 2}));
  Tensor s = einsum("ij->", {&a});
  EXPECT_EQ(s.shape(), Shape{});
  double total = 0;
  for (int64_t i = 0; i < 6; ++i)
    total += a.getDouble(i);
  EXPECT_NEAR(s.getDouble(0), total, 1e-12);
}

TEST(VisionOps, EinsumDiagonalsEllipsisAndBroadcast) {
  Tensor m = iota({3, 3}, DType::I64);
  expectValues(einsum("ii", {&m}), {0 + 4 + 8});  // trace
  expectValues(einsum("ii->i", {&m}), {0, 4, 8}); // diagonal
  Tensor bm = iota({2, 2, 2});
  expectValues(einsum("...ii->...i", {&bm}), {0, 3, 4, 7});
  // Ellipsis dims broadcast: [2,1,3] x [4,3] over "...j" -> [2,4].
  Tensor p = iota({2, 1, 3}), q = iota({4, 3});
  Tensor y = einsum("...j,...j->...", {&p, &q});
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_NEAR(y.getDouble(1 * 4 + 2), 3 * 6 + 4 * 7 + 5 * 8, 1e-5);
  // Implicit output keeps the ellipsis dims first.
  EXPECT_EQ(einsum("i...", {&p}).shape(), (Shape{1, 3, 2}));
  // Three operands.
  Tensor v = f32({3}, {1, 2, 3});
  expectValues(einsum("i,i,i->", {&v, &v, &v}), {1 + 8 + 27});
}

TEST(VisionOps, EinsumDiagnostics) {
  Tensor a = iota({2, 3}), b = iota({4, 3});
  auto parseErr = [&](const std::string& eq, std::vector<const Tensor*> in) {
    return errorOf([&] { typesFor(OpKind::Einsum, in, LiteralAttrs({{"equation", eq}}), 12); });
  };
  EXPECT_EQ(parseErr("ij,jk->ik", {&a, &b}), ErrorKind::InvalidModel); // 3 vs 4
  EXPECT_EQ(parseErr("ijk", {&a}), ErrorKind::InvalidModel);           // rank mismatch
  EXPECT_EQ(parseErr("ij,jk", {&a}), ErrorKind::InvalidModel);         // term count
  EXPECT_EQ(parseErr("i1", {&a}), ErrorKind::InvalidModel);            // bad character
  EXPECT_EQ(parseErr("ij->k", {&a}), ErrorKind::InvalidModel);         // unknown output label
  EXPECT_EQ(parseErr("ij->ii", {&a}), ErrorKind::InvalidModel);        // repeated output label
  EXPECT_EQ(parseErr("ii", {&a}), ErrorKind::InvalidModel);            // diagonal of 2x3
  EXPECT_EQ(parseErr("...i->i", {&a}), ErrorKind::InvalidModel);       // ellipsis dropped
  Tensor bools(DType::Bool, {2});
  EXPECT_EQ(parseErr("i", {&bools}), ErrorKind::Unsupported);
}

// ---------------------------------------------------------------------------------------------
// Det

TEST(VisionOps, DetBatchedWithPivoting) {
  // [[0,1],[2,3]] needs a row swap: det = -2. Then a 3x3 and a singular matrix.
  Tensor x = f32({2, 2}, {0, 1, 2, 3});
  Tensor y = run(OpKind::Det, {&x}, {}, 11);
  EXPECT_EQ(y.shape(), Shape{});
  expectValues(y, {-2});
  Tensor b = f32({2, 3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2, 1, 2, 3, 2, 4, 6, 0, 1, 5});
  expectValues(run(OpKind::Det, {&b}, {}, 11), {2 * (6 - 2) - 0 + 1 * (1 - 3), 0});
  Tensor ns = iota({2, 3});
  EXPECT_EQ(errorOf([&] { typesFor(OpKind::Det, {&ns}, {}, 11); }), ErrorKind::InvalidModel);
  Tensor i = iota({2, 2}, DType::I32);
  EXPECT_EQ(errorOf([&] { typesFor(OpKind::Det, {&i}, {}, 11); }), ErrorKind::Unsupported);
}

} // namespace
