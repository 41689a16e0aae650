// Unit tests of the Movement and Reduce op families: attribute parsing (shape operands
// resolved into attributes), shape rules with their diagnostics, and reference-kernel numerics.
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

// ---- Movement ----------------------------------------------------------------------------------

TEST(Movement, ReshapeResolvesZeroAndMinusOne) {
  Tensor x = iota({2, 3, 4});
  Tensor shape = i64({3}, {0, -1, 2});
  NodeRun r = runNode(OpKind::Reshape, {&x, &shape});
  EXPECT_EQ(r.types[0].shape, (Shape{2, 6, 2}));
  EXPECT_EQ(dynamic_cast<const ReshapeAttrs&>(*r.attrs).shape, (Shape{2, 6, 2}));
  EXPECT_EQ(vals<float>(r.outs[0]), vals<float>(x));
  Tensor zeroShape = i64({2}, {0, 24});
  Tensor empty = iota({0, 24});
  EXPECT_EQ(
      runNode(OpKind::Reshape, {&empty, &zeroShape}, LiteralAttrs({{"allowzero", int64_t(1)}}))
          .types[0]
          .shape,
      (Shape{0, 24}));
}

TEST(Movement, ReshapeDiagnostics) {
  Tensor x = iota({2, 3});
  Tensor twoInferred = i64({2}, {-1, -1});
  Tensor wrongCount = i64({2}, {4, 2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Reshape, {&x, &twoInferred});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Reshape, {&x, &wrongCount}); }), ErrorKind::InvalidModel);
}

TEST(Movement, TransposeAnyDType) {
  Tensor x = Tensor::fromVector<int8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = run(OpKind::Transpose, {&x});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<int8_t>(y), (std::vector<int8_t>{1, 4, 2, 5, 3, 6}));
  Tensor b = Tensor::fromVector<bool>({1, 2}, {true, false});
  EXPECT_EQ(
      run(OpKind::Transpose, {&b}, LiteralAttrs({{"perm", std::vector<int64_t>{1, 0}}})).shape(),
      (Shape{2, 1}));
  EXPECT_EQ(
      errorOf([&] {
        runNode(OpKind::Transpose, {&x}, LiteralAttrs({{"perm", std::vector<int64_t>{0, 0}}}));
      }),
      ErrorKind::InvalidModel);
}

TEST(Movement, SliceNegativeStepsAndClamping) {
  Tensor x = iota({10});
  Tensor starts = i64({1}, {-1}), ends = i64({1}, {INT64_MIN}), axes = i64({1}, {0}),
         steps = i64({1}, {-3});
  Tensor y = run(OpKind::Slice, {&x, &starts, &ends, &axes, &steps});
  EXPECT_EQ(vals<float>(y), (std::vector<float>{9, 6, 3, 0}));
  Tensor s2 = i64({1}, {2}), e2 = i64({1}, {1000});
  EXPECT_EQ(vals<float>(run(OpKind::Slice, {&x, &s2, &e2})),
            (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
  Tensor zero = i64({1}, {0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Slice, {&x, &s2, &e2, &axes, &zero});
            }),
            ErrorKind::InvalidModel);
}

// Fuzz findings: a Slice of a scalar indexed its empty shape; steps near the int64 limits
// overflowed the element count.
TEST(Movement, SliceOfScalarAndExtremeSteps) {
  Tensor scalar = Tensor::scalar(1.0f);
  Tensor s0 = i64({1}, {0}), e1 = i64({1}, {1});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Slice, {&scalar, &s0, &e1}); }), ErrorKind::InvalidModel);
  Tensor x = iota({10});
  Tensor axes = i64({1}, {0}), big = i64({1}, {INT64_MAX}), small = i64({1}, {INT64_MIN});
  Tensor last = i64({1}, {-1});
  EXPECT_EQ(vals<float>(run(OpKind::Slice, {&x, &s0, &big, &axes, &big})), (std::vector<float>{0}));
  EXPECT_EQ(vals<float>(run(OpKind::Slice, {&x, &last, &small, &axes, &small})),
            (std::vector<float>{9}));
  Tensor back = i64({1}, {-4});
  EXPECT_EQ(vals<float>(run(OpKind::Slice, {&x, &last, &small, &axes, &back})),
            (std::vector<float>{9, 5, 1}));
}

TEST(Movement, EyeLikeDiagonalsBeyondTheMatrix) {
  Tensor x = iota({2, 3});
  for (int64_t k : {INT64_MAX, int64_t(3), INT64_MIN, int64_t(-2)})
    EXPECT_EQ(vals<float>(run(OpKind::EyeLike, {&x}, LiteralAttrs({{"k", k}}))),
              (std::vector<float>(6, 0.0f)))
        << k;
  EXPECT_EQ(vals<float>(run(OpKind::EyeLike, {&x}, LiteralAttrs({{"k", int64_t(2)}}))),
            (std::vector<float>{0, 0, 1, 0, 0, 0}));
}

TEST(Movement, SqueezeUnsqueeze) {
  Tensor x = iota({1, 3, 1});
  EXPECT_EQ(run(OpKind::Squeeze, {&x}).shape(), (Shape{3}));
  Tensor ax = i64({1}, {1});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Squeeze, {&x, &ax}); }), ErrorKind::InvalidModel);
  Tensor uax = i64({2}, {-1, 0});
  EXPECT_EQ(run(OpKind::Unsqueeze, {&x, &uax}).shape(), (Shape{1, 1, 3, 1, 1}));
  // Before opset 13 axes is an attribute.
  EXPECT_EQ(
      run(OpKind::Unsqueeze, {&x}, LiteralAttrs({{"axes", std::vector<int64_t>{1}}}), 11).shape(),
      (Shape{1, 1, 3, 1}));
}

TEST(Movement, ConcatAndSplit) {
  Tensor a = iota({2, 2}), b = f32({2, 1}, {10, 11});
  Tensor c = run(OpKind::Concat, {&a, &b}, LiteralAttrs({{"axis", int64_t(-1)}}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{0, 1, 10, 2, 3, 11}));
  Tensor bad = iota({3, 1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Concat, {&a, &bad}, LiteralAttrs({{"axis", int64_t(1)}}));
            }),
            ErrorKind::InvalidModel);

  Tensor x = iota({7});
  NodeRun r = runNode(OpKind::Split, {&x}, LiteralAttrs({{"num_outputs", int64_t(3)}}), 18, 3);
  EXPECT_EQ(r.types[0].shape, (Shape{3}));
  EXPECT_EQ(r.types[2].shape, (Shape{1}));
  EXPECT_EQ(vals<float>(r.outs[2]), (std::vector<float>{6}));
  Tensor six = iota({6});
  NodeRun eq = runNode(OpKind::Split, {&six}, {}, 13, 2); // equal parts from the output count
  EXPECT_EQ(vals<float>(eq.outs[1]), (std::vector<float>{3, 4, 5}));
  Tensor split = i64({2}, {2, 3});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Split, {&six, &split}, {}, 13, 2);
            }),
            ErrorKind::InvalidModel);
}

TEST(Movement, GatherFamily) {
  Tensor data = iota({3, 2});
  Tensor idx = i64({2}, {-1, 0});
  EXPECT_EQ(vals<float>(run(OpKind::Gather, {&data, &idx})), (std::vector<float>{4, 5, 0, 1}));
  Tensor oob = i64({1}, {3});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Gather, {&data, &oob}); }), ErrorKind::Runtime);
  Tensor fidx = f32({1}, {0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Gather, {&data, &fidx}, {}, 18, 1, false);
            }),
            ErrorKind::InvalidModel);

  Tensor eidx = i64({2, 2}, {1, 0, 0, 0});
  Tensor sq = iota({2, 2});
  EXPECT_EQ(
      vals<float>(run(OpKind::GatherElements, {&sq, &eidx}, LiteralAttrs({{"axis", int64_t(1)}}))),
      (std::vector<float>{1, 0, 2, 2}));

  // batch_dims = 1: data [2,2,2], indices [2,1] -> picks data[b, idx[b]].
  Tensor nd = iota({2, 2, 2});
  Tensor ndIdx = i64({2, 1}, {1, 0});
  Tensor y = run(OpKind::GatherND, {&nd, &ndIdx}, LiteralAttrs({{"batch_dims", int64_t(1)}}));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Movement, PadModes) {
  Tensor x = f32({3}, {1, 2, 3});
  Tensor pads = i64({2}, {2, 1});
  Tensor value = f32({}, {9});
  auto pad = [&](const char* mode) {
    return vals<float>(run(OpKind::Pad, {&x, &pads, &value}, LiteralAttrs({{"mode", mode}})));
  };
  EXPECT_EQ(pad("constant"), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  EXPECT_EQ(pad("reflect"), (std::vector<float>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(pad("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(pad("wrap"), (std::vector<float>{2, 3, 1, 2, 3, 1}));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Pad, {&x, &pads}, LiteralAttrs({{"mode", "mirror"}}));
            }),
            ErrorKind::Unsupported);
  // Pads on selected axes (opset 18), negative pads crop.
  Tensor m = iota({2, 3});
  Tensor p2 = i64({2}, {-1, 0});
  Tensor axes = i64({1}, {1});
  Tensor y = run(OpKind::Pad, {&m, &p2, nullptr, &axes});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 2, 4, 5}));
  // Opset < 11: pads attribute.
  EXPECT_EQ(
      run(OpKind::Pad, {&x}, LiteralAttrs({{"pads", std::vector<int64_t>{1, 0}}}), 10).shape(),
      (Shape{4}));
}

TEST(Movement, ExpandTileShapeSize) {
  Tensor x = f32({2, 1}, {1, 2});
  Tensor shape = i64({3}, {2, 1, 3});
  Tensor y = run(OpKind::Expand, {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vals<float>(y)[3], 2.0f);
  Tensor bad = i64({2}, {3, 1}); // 2 vs 3 on axis 0
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Expand, {&x, &bad}); }), ErrorKind::InvalidModel);
  Tensor reps = i64({2}, {2, 2});
  EXPECT_EQ(vals<float>(run(OpKind::Tile, {&x, &reps})),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  Tensor t = iota({2, 3, 4});
  EXPECT_EQ(vals<int64_t>(run(OpKind::Shape, {&t}, LiteralAttrs({{"start", int64_t(-2)}}))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(vals<int64_t>(run(OpKind::Size, {&t})), (std::vector<int64_t>{24}));
}

TEST(Movement, ConstantsAndRange) {
  Tensor c = run(OpKind::Constant, {}, LiteralAttrs({{"value_ints", std::vector<int64_t>{4, 5}}}));
  EXPECT_EQ(vals<int64_t>(c), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Constant, {}); }), ErrorKind::InvalidModel);
  Tensor shape = i64({2}, {2, 2});
  Tensor cos = run(OpKind::ConstantOfShape, {&shape},
                   LiteralAttrs({{"value", Tensor::fromVector<int32_t>({1}, {7})}}));
  EXPECT_EQ(vals<int32_t>(cos), (std::vector<int32_t>{7, 7, 7, 7}));
  Tensor s = Tensor::scalar<int32_t>(10), l = Tensor::scalar<int32_t>(4),
         d = Tensor::scalar<int32_t>(-3);
  EXPECT_EQ(vals<int32_t>(run(OpKind::Range, {&s, &l, &d})), (std::vector<int32_t>{10, 7}));
  Tensor zero = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Range, {&s, &l, &zero}); }), ErrorKind::InvalidModel);
}

TEST(Movement, DropoutInference) {
  Tensor x = f32({2}, {1, 2});
  NodeRun r = runNode(OpKind::Dropout, {&x}, LiteralAttrs({{"seed", int64_t(0)}}), 13, 2);
  EXPECT_EQ(vals<float>(r.outs[0]), vals<float>(x));
  EXPECT_EQ(vals<bool>(r.outs[1]), (std::vector<bool>{true, true}));
  Tensor ratio = f32({}, {0.5f});
  Tensor training = Tensor::scalar<bool>(true);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Dropout, {&x, &ratio, &training});
            }),
            ErrorKind::Unsupported);
  Tensor zero = f32({}, {0.0f});
  EXPECT_EQ(vals<float>(run(OpKind::Dropout, {&x, &zero, &training})), vals<float>(x));
}

TEST(Movement, DepthSpaceRoundTrip) {
  Tensor x = iota({1, 8, 2, 3});
  for (const char* mode : {"DCR", "CRD"}) {
    Tensor y = run(OpKind::DepthToSpace, {&x},
                   LiteralAttrs({{"blocksize", int64_t(2)}, {"mode", std::string(mode)}}));
    EXPECT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
    if (std::string(mode) == "DCR") {
      Tensor back = run(OpKind::SpaceToDepth, {&y}, LiteralAttrs({{"blocksize", int64_t(2)}}));
      EXPECT_EQ(vals<float>(back), vals<float>(x));
    }
  }
  Tensor odd = iota({1, 3, 2, 2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::DepthToSpace, {&odd}, LiteralAttrs({{"blocksize", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
}

// Found by fuzzing: blocksize INT64_MAX overflowed blocksize^2 in the shape rule.
TEST(Movement, DepthSpaceBlocksizeBeyondInt64) {
  Tensor x = iota({1, 4, 2, 2});
  for (OpKind k : {OpKind::DepthToSpace, OpKind::SpaceToDepth})
    for (int64_t b : {std::numeric_limits<int64_t>::max(), int64_t(1) << 31, int64_t(0)})
      EXPECT_EQ(errorOf([&] {
                  runNode(k, {&x}, LiteralAttrs({{"blocksize", b}}));
                }),
                ErrorKind::InvalidModel)
          << opKindName(k) << " blocksize " << b;
}

TEST(Movement, TriluOneHotEyeLike) {
  Tensor x = iota({3, 3});
  Tensor k = i64({}, {1});
  EXPECT_EQ(vals<float>(run(OpKind::Trilu, {&x, &k})),
            (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  EXPECT_EQ(vals<float>(run(OpKind::Trilu, {&x}, LiteralAttrs({{"upper", int64_t(0)}}))),
            (std::vector<float>{0, 0, 0, 3, 4, 0, 6, 7, 8}));
  Tensor idx = i64({2}, {-1, 1});
  Tensor depth = f32({}, {3});
  Tensor onOff = f32({2}, {0, 5});
  Tensor oh = run(OpKind::OneHot, {&idx, &depth, &onOff}, LiteralAttrs({{"axis", int64_t(0)}}));
  EXPECT_EQ(oh.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(oh), (std::vector<float>{0, 0, 0, 5, 5, 0}));
  Tensor e = run(OpKind::EyeLike, {&x}, LiteralAttrs({{"dtype", int64_t(7)}, {"k", int64_t(-1)}}));
  EXPECT_EQ(e.dtype(), DType::I64);
  EXPECT_EQ(vals<int64_t>(e), (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(Movement, Resize) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 2});
  Tensor up =
      run(OpKind::Resize, {&x, nullptr, &scales},
          LiteralAttrs({{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}}));
  EXPECT_EQ(up.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(vals<float>(up)[0], 1.0f);
  EXPECT_EQ(vals<float>(up)[15], 4.0f);
  // Bilinear, align_corners: corners are kept, the middle is the mean.
  Tensor sizes = i64({4}, {1, 1, 3, 3});
  Tensor lin =
      run(OpKind::Resize, {&x, nullptr, nullptr, &sizes},
          LiteralAttrs({{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}));
  EXPECT_FLOAT_EQ(vals<float>(lin)[4], 2.5f);
  EXPECT_FLOAT_EQ(vals<float>(lin)[8], 4.0f);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Resize, {&x, nullptr, &scales, &sizes});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Resize, {&x, nullptr, &scales},
                      LiteralAttrs({{"mode", "nearest"}, {"antialias", int64_t(1)}}));
            }),
            ErrorKind::Unsupported);
  // Upsample-9 maps onto the same kernel (asymmetric, floor).
  Tensor u = run(OpKind::Upsample, {&x, &scales}, LiteralAttrs({{"mode", "nearest"}}), 9);
  EXPECT_EQ(vals<float>(u), vals<float>(up));
}

// ---- Reduce ------------------------------------------------------------------------------------

// Found by fuzzing: the mean of no int64 elements is NaN in double, whose cast to int64 is
// undefined behaviour; it gives 0.
TEST(Reduce, MeanOfNoIntegersIsZero) {
  Tensor x = Tensor::fromVector<int64_t>({2, 0}, {});
  Tensor m = run(OpKind::ReduceMean, {&x}, LiteralAttrs({{"axes", std::vector<int64_t>{1}}}), 13);
  EXPECT_EQ(m.shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<int64_t>(m), (std::vector<int64_t>{0, 0}));
}

TEST(Reduce, SumMeanKeepdimsAndNoop) {
  Tensor x = iota({2, 3});
  Tensor axes = i64({1}, {-1});
  Tensor s = run(OpKind::ReduceSum, {&x, &axes}, {}, 13);
  EXPECT_EQ(s.shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<float>(s), (std::vector<float>{3, 12}));
  Tensor m = run(OpKind::ReduceMean, {&x}, LiteralAttrs({{"keepdims", int64_t(0)}}));
  EXPECT_EQ(m.shape(), (Shape{}));
  EXPECT_FLOAT_EQ(vals<float>(m)[0], 2.5f);
  Tensor noop = run(OpKind::ReduceSum, {&x}, LiteralAttrs({{"noop_with_empty_axes", int64_t(1)}}));
  EXPECT_EQ(vals<float>(noop), vals<float>(x));
  // Before opset 18 axes is an attribute (ReduceMax-13).
  Tensor mx = run(OpKind::ReduceMax, {&x}, LiteralAttrs({{"axes", std::vector<int64_t>{0}}}), 13);
  EXPECT_EQ(vals<float>(mx), (std::vector<float>{3, 4, 5}));
  Tensor bad = i64({1}, {2});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::ReduceSum, {&x, &bad}); }), ErrorKind::InvalidModel);
  Tensor b = Tensor::fromVector<bool>({2}, {true, false});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::ReduceSum, {&b}); }), ErrorKind::Unsupported);
}

TEST(Reduce, OtherKinds) {
  Tensor x = f32({3}, {-1, 2, 2});
  auto one = [&](OpKind k) { return vals<float>(run(k, {&x}))[0]; };
  EXPECT_FLOAT_EQ(one(OpKind::ReduceL1), 5.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceL2), 3.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceSumSquare), 9.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceProd), -4.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceMin), -1.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceLogSum), std::log(3.0f));
  EXPECT_NEAR(one(OpKind::ReduceLogSumExp), std::log(std::exp(-1.0f) + 2 * std::exp(2.0f)), 1e-5);
  Tensor ints = Tensor::fromVector<int32_t>({3}, {7, -9, 4});
  EXPECT_EQ(vals<int32_t>(run(OpKind::ReduceMax, {&ints})), (std::vector<int32_t>{7}));
  EXPECT_EQ(vals<int32_t>(run(OpKind::ReduceSum, {&ints})), (std::vector<int32_t>{2}));
}

TEST(Reduce, ArgMaxMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 2, 0, 0});
  Tensor first = run(OpKind::ArgMax, {&x}, LiteralAttrs({{"axis", int64_t(1)}}));
  EXPECT_EQ(first.shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<int64_t>(first), (std::vector<int64_t>{1, 0}));
  Tensor last = run(
      OpKind::ArgMin, {&x},
      LiteralAttrs(
          {{"axis", int64_t(-1)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(1)}}));
  EXPECT_EQ(last.shape(), (Shape{2}));
  EXPECT_EQ(vals<int64_t>(last), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ArgMax, {&x}, LiteralAttrs({{"axis", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(Reduce, CumSum) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor axis = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(vals<float>(run(OpKind::CumSum, {&x, &axis})), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(vals<float>(run(OpKind::CumSum, {&x, &axis},
                            LiteralAttrs({{"exclusive", int64_t(1)}, {"reverse", int64_t(1)}}))),
            (std::vector<float>{9, 7, 4, 0}));
  Tensor badAxis = Tensor::scalar<int32_t>(1);
  EXPECT_EQ(errorOf([&] { runNode(OpKind::CumSum, {&x, &badAxis}); }), ErrorKind::InvalidModel);
}

} // namespace
