// Unit tests of the Scatter and Signal op families: attribute parsing (shape operands resolved
// into attributes), shape rules with their diagnostics, and reference-kernel numerics.
#include "OpTestUtil.h"
#include "ir/OpDef.h"
#include "ir/ops/Scatter.h"
#include "ir/ops/Signal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

using namespace triad;
using namespace triad::ir;
using namespace triad::optest;

namespace {

// ---- Scatter family ----------------------------------------------------------------------------

TEST(ScatterOps, ScatterElementsAxisAndNegativeIndices) {
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = i64({1, 2}, {1, -2});
  Tensor upd = f32({1, 2}, {1.1f, 2.1f});
  Tensor y =
      run(OpKind::ScatterElements, {&data, &idx, &upd}, LiteralAttrs({{"axis", int64_t(1)}}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
  // Default axis 0, int32 indices.
  Tensor d2 = f32({3, 3}, std::vector<float>(9, 0));
  Tensor i2 = i32({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor u2 = f32({2, 3}, {1, 1.1f, 1.2f, 2, 2.1f, 2.2f});
  EXPECT_EQ(vals<float>(run(OpKind::ScatterElements, {&d2, &i2, &u2})),
            (std::vector<float>{2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f}));
}

TEST(ScatterOps, ScatterElementsReductions) {
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = i64({1, 3}, {1, 1, 3});
  Tensor upd = f32({1, 3}, {1.5f, 3.0f, 0.5f});
  auto reduce = [&](const char* r) {
    return vals<float>(run(OpKind::ScatterElements, {&data, &idx, &upd},
                           LiteralAttrs({{"axis", int64_t(1)}, {"reduction", std::string(r)}})));
  };
  EXPECT_EQ(reduce("add"), (std::vector<float>{1, 6.5f, 3, 4.5f, 5}));
  EXPECT_EQ(reduce("mul"), (std::vector<float>{1, 9, 3, 2, 5}));
  EXPECT_EQ(reduce("max"), (std::vector<float>{1, 3, 3, 4, 5}));
  EXPECT_EQ(reduce("min"), (std::vector<float>{1, 1.5f, 3, 0.5f, 5}));
  EXPECT_EQ(reduce("none"), (std::vector<float>{1, 3, 3, 0.5f, 5})); // last duplicate wins
  // max/min exist from opset 18 only.
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterElements, {&data, &idx, &upd},
                      LiteralAttrs({{"axis", int64_t(1)}, {"reduction", "max"}}), 16);
            }),
            ErrorKind::Unsupported);
  // Integer data.
  Tensor di = i64({4}, {1, 2, 3, 4}), ii = i64({2}, {0, 0}), ui = i64({2}, {10, 20});
  EXPECT_EQ(vals<int64_t>(run(OpKind::ScatterElements, {&di, &ii, &ui},
                              LiteralAttrs({{"reduction", "add"}}))),
            (std::vector<int64_t>{31, 2, 3, 4}));
}

TEST(ScatterOps, ScatterElementsDiagnostics) {
  Tensor data = f32({2, 3}, std::vector<float>(6, 0));
  Tensor idx = i64({2, 2}, {0, 1, 1, 0});
  Tensor badUpd = f32({2, 3}, std::vector<float>(6, 1));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterElements, {&data, &idx, &badUpd});
            }),
            ErrorKind::InvalidModel);
  Tensor upd = f32({2, 2}, {1, 2, 3, 4});
  Tensor fidx = f32({2, 2}, {0, 1, 1, 0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterElements, {&data, &fidx, &upd});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(
      errorOf([&] {
        runNode(OpKind::ScatterElements, {&data, &idx, &upd}, LiteralAttrs({{"axis", int64_t(2)}}));
      }),
      ErrorKind::InvalidModel);
  Tensor far = i64({2, 2}, {0, 5, 1, 0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterElements, {&data, &far, &upd});
            }),
            ErrorKind::Runtime);
}

TEST(ScatterOps, DeprecatedScatterIsScatterElements) {
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = i64({1, 2}, {1, 3});
  Tensor upd = f32({1, 2}, {1.1f, 2.1f});
  Tensor y = run(OpKind::Scatter, {&data, &idx, &upd}, LiteralAttrs({{"axis", int64_t(1)}}), 10);
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
}

TEST(ScatterOps, ScatterNDSlicesAndReductions) {
  // ONNX example: data [4,4,4], indices [[0],[2]] replace two [4,4] slices.
  Tensor data = iota({4, 4, 4});
  Tensor idx = i64({2, 1}, {0, 2});
  std::vector<float> u(32);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = 100.0f + float(i);
  Tensor upd = f32({2, 4, 4}, u);
  std::vector<float> y = vals<float>(run(OpKind::ScatterND, {&data, &idx, &upd}));
  EXPECT_EQ(y[0], 100.0f);
  EXPECT_EQ(y[16], 16.0f);
  EXPECT_EQ(y[32], 116.0f);
  EXPECT_EQ(y[63], 63.0f);
  // Element-wise updates with duplicates and 'add'; negative indices.
  Tensor d1 = f32({2, 2}, {1, 2, 3, 4});
  Tensor i1 = i64({3, 2}, {0, 0, -2, 0, 1, -1});
  Tensor u1 = f32({3}, {10, 20, 30});
  EXPECT_EQ(
      vals<float>(run(OpKind::ScatterND, {&d1, &i1, &u1}, LiteralAttrs({{"reduction", "add"}}))),
      (std::vector<float>{31, 2, 3, 34}));
  EXPECT_EQ(
      vals<float>(run(OpKind::ScatterND, {&d1, &i1, &u1}, LiteralAttrs({{"reduction", "min"}}))),
      (std::vector<float>{1, 2, 3, 4}));
}

TEST(ScatterOps, ScatterNDDiagnostics) {
  Tensor data = iota({2, 2});
  Tensor tooDeep = i64({1, 3}, {0, 0, 0});
  Tensor u = f32({1}, {1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterND, {&data, &tooDeep, &u});
            }),
            ErrorKind::InvalidModel);
  Tensor idx = i64({1, 1}, {0});
  Tensor wrongUpd = f32({1, 3}, {1, 2, 3});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterND, {&data, &idx, &wrongUpd});
            }),
            ErrorKind::InvalidModel);
  Tensor i32idx = i32({1, 1}, {0});
  Tensor okUpd = f32({1, 2}, {1, 2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterND, {&data, &i32idx, &okUpd});
            }),
            ErrorKind::InvalidModel);
  Tensor far = i64({1, 1}, {2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ScatterND, {&data, &far, &okUpd});
            }),
            ErrorKind::Runtime);
}

TEST(ScatterOps, CompressAxisAndFlattened) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor c0 = boolT({3}, {false, true, true});
  NodeRun r = runNode(OpKind::Compress, {&x, &c0}, LiteralAttrs({{"axis", int64_t(0)}}));
  EXPECT_EQ(r.types[0].shape, (Shape{2, 2}));
  EXPECT_EQ(dynamic_cast<const CompressAttrs&>(*r.attrs).selected, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vals<float>(r.outs[0]), (std::vector<float>{3, 4, 5, 6}));
  Tensor c1 = boolT({2}, {false, true});
  EXPECT_EQ(vals<float>(run(OpKind::Compress, {&x, &c1}, LiteralAttrs({{"axis", int64_t(-1)}}))),
            (std::vector<float>{2, 4, 6}));
  // No axis: flattened; a condition shorter than the input drops the rest.
  Tensor c2 = boolT({5}, {false, true, false, false, true});
  Tensor y = run(OpKind::Compress, {&x, &c2});
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{2, 5}));
  // Nothing selected: an empty output.
  Tensor none = boolT({3}, {false, false, false});
  EXPECT_EQ(run(OpKind::Compress, {&x, &none}, LiteralAttrs({{"axis", int64_t(0)}})).shape(),
            (Shape{0, 2}));
}

TEST(ScatterOps, CompressDiagnostics) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor tooLong = boolT({4}, {false, false, false, true});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Compress, {&x, &tooLong}, LiteralAttrs({{"axis", int64_t(0)}}));
            }),
            ErrorKind::InvalidModel);
  Tensor notBool = i64({3}, {0, 1, 1});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Compress, {&x, &notBool}); }), ErrorKind::InvalidModel);
  Tensor c = boolT({2}, {true, true});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Compress, {&x, &c}, LiteralAttrs({{"axis", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(ScatterOps, TopKLargestSmallestAndTies) {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, 4, 6, 4});
  Tensor k = i64({1}, {3});
  NodeRun r = runNode(OpKind::TopK, {&x, &k}, LiteralAttrs({{"axis", int64_t(-1)}}), 11, 2);
  EXPECT_EQ(r.types[0].shape, (Shape{2, 3}));
  EXPECT_EQ(r.types[1].dtype, DType::I64);
  EXPECT_EQ(vals<float>(r.outs[0]), (std::vector<float>{3, 3, 2, 6, 5, 4}));
  EXPECT_EQ(vals<int64_t>(r.outs[1]),
            (std::vector<int64_t>{1, 2, 3, 2, 0, 1})); // ties: lower first
  NodeRun s = runNode(OpKind::TopK, {&x, &k}, LiteralAttrs({{"largest", int64_t(0)}}), 11, 2);
  EXPECT_EQ(vals<float>(s.outs[0]), (std::vector<float>{1, 2, 3, 4, 4, 5}));
  EXPECT_EQ(vals<int64_t>(s.outs[1]), (std::vector<int64_t>{0, 3, 1, 1, 3, 0}));
  // Axis 0 of a 3-D int tensor; NaN ranks first among the largest.
  Tensor xi = Tensor::fromVector<int32_t>({3, 1, 2}, {5, 1, 7, 9, 6, 3});
  Tensor k1 = i64({1}, {1});
  NodeRun t = runNode(OpKind::TopK, {&xi, &k1}, LiteralAttrs({{"axis", int64_t(0)}}), 11, 2);
  EXPECT_EQ(vals<int32_t>(t.outs[0]), (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(vals<int64_t>(t.outs[1]), (std::vector<int64_t>{1, 1}));
  Tensor xn = f32({3}, {1, NAN, 2});
  Tensor k2 = i64({1}, {2});
  EXPECT_EQ(vals<int64_t>(runNode(OpKind::TopK, {&xn, &k2}, {}, 11, 2).outs[1]),
            (std::vector<int64_t>{1, 2}));
  // Opset 1: k is an attribute.
  EXPECT_EQ(
      vals<float>(runNode(OpKind::TopK, {&x}, LiteralAttrs({{"k", int64_t(1)}}), 1, 2).outs[0]),
      (std::vector<float>{3, 6}));
}

TEST(ScatterOps, TopKDiagnostics) {
  Tensor x = f32({2, 4}, std::vector<float>(8, 0));
  Tensor big = i64({1}, {5});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::TopK, {&x, &big}, {}, 11, 2);
            }),
            ErrorKind::InvalidModel);
  Tensor two = i64({2}, {1, 2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::TopK, {&x, &two}, {}, 11, 2);
            }),
            ErrorKind::InvalidModel);
  Tensor k = i64({1}, {1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::TopK, {&x, &k}, LiteralAttrs({{"axis", int64_t(2)}}), 11, 2);
            }),
            ErrorKind::InvalidModel);
  Tensor b = boolT({2}, {true, false});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::TopK, {&b, &k}, {}, 11, 2); }), ErrorKind::InvalidModel);
}

TEST(ScatterOps, ReverseSequence) {
  // ONNX example 1: time_axis 0, batch_axis 1.
  Tensor x = f32({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  Tensor lens = i64({4}, {4, 3, 2, 1});
  Tensor y = run(OpKind::ReverseSequence, {&x, &lens},
                 LiteralAttrs({{"time_axis", int64_t(0)}, {"batch_axis", int64_t(1)}}), 10);
  EXPECT_EQ(vals<float>(y),
            (std::vector<float>{3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
  // Rank 3, batch_axis 0, trailing feature dim moves with its time step.
  Tensor x3 = iota({2, 3, 2});
  Tensor l3 = i64({2}, {3, 0});
  Tensor y3 = run(OpKind::ReverseSequence, {&x3, &l3},
                  LiteralAttrs({{"time_axis", int64_t(1)}, {"batch_axis", int64_t(0)}}), 10);
  EXPECT_EQ(vals<float>(y3), (std::vector<float>{4, 5, 2, 3, 0, 1, 6, 7, 8, 9, 10, 11}));
}

TEST(ScatterOps, ReverseSequenceDiagnostics) {
  Tensor x = iota({2, 3});
  Tensor lens = i64({3}, {1, 1, 1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ReverseSequence, {&x, &lens},
                      LiteralAttrs({{"time_axis", int64_t(1)}, {"batch_axis", int64_t(1)}}), 10);
            }),
            ErrorKind::InvalidModel);
  Tensor wrongLen = i64({2}, {1, 1}); // batch (axis 1) has 3 entries
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ReverseSequence, {&x, &wrongLen}, {}, 10);
            }),
            ErrorKind::InvalidModel);
  Tensor tooLong = i64({3}, {1, 3, 1}); // time axis 0 has 2 entries
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ReverseSequence, {&x, &tooLong}, {}, 10);
            }),
            ErrorKind::Runtime);
}

TEST(ScatterOps, MaxUnpool) {
  Tensor x = f32({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor i = i64({1, 1, 2, 2}, {5, 7, 13, 15});
  LiteralAttrs k2s2(
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  Tensor y = run(OpKind::MaxUnpool, {&x, &i}, k2s2, 11);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  // output_shape equal to the inferred shape is accepted; a different one is refused because
  // ONNX's reference and ONNX Runtime disagree on its meaning (onnx/onnx#2398).
  Tensor same = i64({4}, {1, 1, 4, 4});
  EXPECT_EQ(runNode(OpKind::MaxUnpool, {&x, &i, &same}, k2s2, 11).types[0].shape,
            (Shape{1, 1, 4, 4}));
  Tensor os = i64({4}, {1, 1, 5, 5});
  Tensor i5 = i64({1, 1, 2, 2}, {6, 8, 16, 18});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MaxUnpool, {&x, &i5, &os}, k2s2, 11);
            }),
            ErrorKind::Unsupported);
  // Pads shrink the inferred shape: (2 - 1) * 2 - 1 - 0 + 2 = 3.
  LiteralAttrs padded({{"kernel_shape", std::vector<int64_t>{2, 2}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 0, 0}}});
  Tensor i3 = i64({1, 1, 2, 2}, {0, 2, 6, 8});
  EXPECT_EQ(run(OpKind::MaxUnpool, {&x, &i3}, padded, 11).shape(), (Shape{1, 1, 3, 3}));
}

TEST(ScatterOps, MaxUnpoolDiagnostics) {
  Tensor x = f32({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor i = i64({1, 1, 2, 2}, {5, 7, 13, 16});
  LiteralAttrs k2s2(
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::MaxUnpool, {&x, &i}, k2s2, 11); }), ErrorKind::Runtime);
  LiteralAttrs k1d({{"kernel_shape", std::vector<int64_t>{2}}});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MaxUnpool, {&x, &i}, k1d, 11);
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MaxUnpool, {&x, &i}, {}, 11);
            }),
            ErrorKind::InvalidModel);
  Tensor os = i64({3}, {1, 1, 5});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MaxUnpool, {&x, &i, &os}, k2s2, 11);
            }),
            ErrorKind::InvalidModel);
  Tensor xi = i64({1, 1, 2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MaxUnpool, {&xi, &i}, k2s2, 11);
            }),
            ErrorKind::Unsupported);
}

// ---- Signal family -----------------------------------------------------------------------------

TEST(SignalOps, Windows) {
  Tensor four = i64({}, {4});
  NodeRun r = runNode(OpKind::HannWindow, {&four}, {}, 17);
  EXPECT_EQ(r.types[0], (TensorType{DType::F32, {4}, {}}));
  expectNear(dvals(r.outs[0]), {0, 0.5, 1, 0.5}, 1e-7);
  Tensor three = i32({}, {3});
  expectNear(
      dvals(run(OpKind::HammingWindow, {&three}, LiteralAttrs({{"periodic", int64_t(0)}}), 17)),
      {4.0 / 46.0, 1.0, 4.0 / 46.0}, 1e-7);
  // Blackman, periodic, as float64.
  Tensor y =
      run(OpKind::BlackmanWindow, {&four}, LiteralAttrs({{"output_datatype", int64_t(11)}}), 17);
  EXPECT_EQ(y.dtype(), DType::F64);
  expectNear(dvals(y), {0, 0.34, 1, 0.34}, 1e-12);
  Tensor one = i64({}, {1});
  expectNear(dvals(run(OpKind::HannWindow, {&one}, LiteralAttrs({{"periodic", int64_t(0)}}), 17)),
             {1}, 0);
}

TEST(SignalOps, WindowDiagnostics) {
  Tensor four = i64({}, {4});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::HannWindow, {&four}, LiteralAttrs({{"output_datatype", int64_t(16)}}),
                      17); // bfloat16
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::HannWindow, {&four}, LiteralAttrs({{"output_datatype", int64_t(9)}}),
                      17); // bool
            }),
            ErrorKind::InvalidModel);
  Tensor neg = i64({}, {-1});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::HannWindow, {&neg}, {}, 17); }), ErrorKind::InvalidModel);
}

TEST(SignalOps, DFTRealComplexOnesidedPadded) {
  // [batch 1, n 4, real]: DFT of [1,2,3,4] = [10, -2+2i, -2, -2-2i].
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  Tensor y = run(OpKind::DFT, {&x}, {}, 17);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 2}));
  expectNear(dvals(y), {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  Tensor h = run(OpKind::DFT, {&x}, LiteralAttrs({{"onesided", int64_t(1)}}), 17);
  EXPECT_EQ(h.shape(), (Shape{1, 3, 2}));
  expectNear(dvals(h), {10, 0, -2, 2, -2, 0}, 1e-5);
  // dft_length 2 truncates, 6 zero-pads.
  Tensor len2 = i64({}, {2});
  expectNear(dvals(run(OpKind::DFT, {&x, &len2}, {}, 17)), {3, 0, -1, 0}, 1e-6);
  Tensor len6 = i64({}, {6});
  Tensor y6 = run(OpKind::DFT, {&x, &len6}, {}, 17);
  EXPECT_EQ(y6.shape(), (Shape{1, 6, 2}));
  EXPECT_NEAR(y6.getDouble(0), 10, 1e-5);
  // Inverse of the complex spectrum gives back the signal.
  Tensor yi = run(OpKind::DFT, {&y}, LiteralAttrs({{"inverse", int64_t(1)}}), 17);
  expectNear(dvals(yi), {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
}

TEST(SignalOps, DFTAxes) {
  // [1, 2, 3, 1]: transform along axis 2 (and -2 = axis 2 too) vs axis 1.
  Tensor x = f32({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6});
  double c = std::cos(2 * std::numbers::pi / 3), s = std::sin(2 * std::numbers::pi / 3);
  std::vector<double> want = {
      6,  0, 1 + 2 * c + 3 * c, -2 * s + 3 * s, 1 + 2 * c + 3 * c, 2 * s - 3 * s,
      15, 0, 4 + 11 * c,        -5 * s + 6 * s, 4 + 11 * c,        5 * s - 6 * s};
  expectNear(dvals(run(OpKind::DFT, {&x}, LiteralAttrs({{"axis", int64_t(2)}}), 17)), want, 1e-5);
  expectNear(dvals(run(OpKind::DFT, {&x}, LiteralAttrs({{"axis", int64_t(-2)}}), 17)), want, 1e-5);
  Tensor y1 = run(OpKind::DFT, {&x}, {}, 17); // axis 1: [1+4, 1-4], ...
  expectNear(dvals(y1), {5, 0, 7, 0, 9, 0, -3, 0, -3, 0, -3, 0}, 1e-5);
  // Opset 20: axis is input 2, default -2.
  Tensor ax = i64({}, {1});
  expectNear(dvals(run(OpKind::DFT, {&x, nullptr, &ax}, {}, 20)), dvals(y1), 1e-6);
  expectNear(dvals(run(OpKind::DFT, {&x}, {}, 20)), want, 1e-5);
}

TEST(SignalOps, DFTDiagnostics) {
  Tensor cx = f32({1, 4, 2}, std::vector<float>(8, 0));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::DFT, {&cx}, LiteralAttrs({{"onesided", int64_t(1)}}), 17);
            }),
            ErrorKind::InvalidModel);
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::DFT, {&x},
                      LiteralAttrs({{"onesided", int64_t(1)}, {"inverse", int64_t(1)}}), 17);
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::DFT, {&x}, LiteralAttrs({{"axis", int64_t(2)}}), 17);
            }),
            ErrorKind::InvalidModel);
  Tensor three = f32({1, 4, 3}, std::vector<float>(12, 0));
  EXPECT_EQ(errorOf([&] { runNode(OpKind::DFT, {&three}, {}, 17); }), ErrorKind::InvalidModel);
  Tensor zero = i64({}, {0});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::DFT, {&x, &zero}, {}, 17); }), ErrorKind::InvalidModel);
  Tensor xi = i64({1, 4, 1}, {1, 2, 3, 4});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::DFT, {&xi}, {}, 17); }), ErrorKind::Unsupported);
}

TEST(SignalOps, STFTMatchesFramewiseDFT) {
  Tensor sig = iota({1, 10, 1});
  Tensor step = i64({}, {3});
  Tensor len = i64({}, {4});
  NodeRun r = runNode(OpKind::STFT, {&sig, &step, nullptr, &len}, {}, 17);
  EXPECT_EQ(r.types[0].shape, (Shape{1, 3, 3, 2})); // frames (10-4)/3+1, bins 4/2+1
  std::vector<double> y = dvals(r.outs[0]);
  // Frame 1 is [3,4,5,6]: X0 = 18, X1 = -2+2i, X2 = -2.
  expectNear({y.begin() + 6, y.begin() + 12}, {18, 0, -2, 2, -2, 0}, 1e-5);
  // With a window (its length sets the frame length), two-sided.
  Tensor win = f32({4}, {0, 1, 1, 0});
  NodeRun w =
      runNode(OpKind::STFT, {&sig, &step, &win}, LiteralAttrs({{"onesided", int64_t(0)}}), 17);
  EXPECT_EQ(w.types[0].shape, (Shape{1, 3, 4, 2}));
  // Frame 0 windowed: [0,1,2,0]: X0 = 3, X1 = -2-1i, X2 = 1, X3 = -2+1i.
  std::vector<double> yw = dvals(w.outs[0]);
  expectNear({yw.begin(), yw.begin() + 8}, {3, 0, -2, -1, 1, 0, -2, 1}, 1e-5);
}

TEST(SignalOps, STFTDiagnostics) {
  Tensor sig = iota({1, 10, 1});
  Tensor step = i64({}, {3});
  Tensor len = i64({}, {5});
  Tensor win = f32({4}, {1, 1, 1, 1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::STFT, {&sig, &step, &win, &len}, {}, 17);
            }),
            ErrorKind::InvalidModel);
  Tensor zeroStep = i64({}, {0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::STFT, {&sig, &zeroStep, &win}, {}, 17);
            }),
            ErrorKind::InvalidModel);
  Tensor longLen = i64({}, {11});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::STFT, {&sig, &step, nullptr, &longLen}, {}, 17);
            }),
            ErrorKind::InvalidModel);
  Tensor csig = f32({1, 10, 2}, std::vector<float>(20, 0));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::STFT, {&csig, &step, &win}, {}, 17);
            }),
            ErrorKind::InvalidModel); // complex signal with default onesided = 1
}

TEST(SignalOps, MelWeightMatrix) {
  // The ONNX node test: 8 mel bins, 16-point DFT, 8192 Hz, 0..4096 Hz.
  Tensor mel = i32({}, {8}), dft = i32({}, {16}), sr = i32({}, {8192});
  Tensor lo = f32({}, {0}), hi = f32({}, {4096});
  NodeRun r = runNode(OpKind::MelWeightMatrix, {&mel, &dft, &sr, &lo, &hi}, {}, 17);
  EXPECT_EQ(r.types[0], (TensorType{DType::F32, {9, 8}, {}}));
  std::vector<float> want(72, 0);
  for (auto [row, col] : std::vector<std::pair<int, int>>{
           {0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}})
    want[size_t(row * 8 + col)] = 1;
  EXPECT_EQ(vals<float>(r.outs[0]), want);
  // Triangles with slopes: 2 bins, 64-point DFT.
  Tensor two = i64({}, {2}), d64 = i64({}, {64}), sr2 = i64({}, {1000});
  Tensor lo2 = f32({}, {0}), hi2 = f32({}, {500});
  NodeRun t = runNode(OpKind::MelWeightMatrix, {&two, &d64, &sr2, &lo2, &hi2},
                      LiteralAttrs({{"output_datatype", int64_t(11)}}), 17);
  const auto& bins = dynamic_cast<const MelWeightMatrixAttrs&>(*t.attrs).bins;
  ASSERT_EQ(bins.size(), 4u);
  EXPECT_EQ(t.outs[0].dtype(), DType::F64);
  // Column 0 rises from bins[0] to 1 at bins[1].
  EXPECT_EQ(t.outs[0].getDouble(bins[1] * 2), 1.0);
  EXPECT_NEAR(t.outs[0].getDouble((bins[1] + 1) * 2),
              double(bins[2] - bins[1] - 1) / double(bins[2] - bins[1]), 1e-12);
}

TEST(SignalOps, MelWeightMatrixDiagnostics) {
  Tensor mel = i32({}, {8}), dft = i32({}, {16}), sr = i32({}, {8192});
  Tensor lo = f32({}, {0}), past = f32({}, {8192});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MelWeightMatrix, {&mel, &dft, &sr, &lo, &past}, {}, 17);
            }),
            ErrorKind::InvalidModel);
  Tensor zero = i32({}, {0}), hi = f32({}, {4096});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::MelWeightMatrix, {&zero, &dft, &sr, &lo, &hi}, {}, 17);
            }),
            ErrorKind::InvalidModel);
}

} // namespace
