// Unit tests of the Movement and Reduce op families: attribute parsing (shape operands
// resolved into attributes), shape rules with their diagnostics, and reference-kernel numerics.
#include "ir/OpDef.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <variant>

using namespace triad;
using namespace triad::ir;

namespace {

using AttrValue =
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, Tensor>;

// An AttrReader over a literal map, standing in for the ONNX frontend.
class FakeAttrs : public AttrReader {
public:
  FakeAttrs(std::initializer_list<std::pair<const std::string, AttrValue>> l = {}) : m_(l) {}
  bool has(std::string_view n) const override { return m_.count(std::string(n)) != 0; }
  template <typename T> std::optional<T> get(std::string_view n) const {
    auto it = m_.find(std::string(n));
    if (it == m_.end()) return std::nullopt;
    if (auto* v = std::get_if<T>(&it->second)) return *v;
    fail(ErrorKind::InvalidModel, "attribute '{}' has the wrong type", n);
  }
  std::optional<int64_t> getInt(std::string_view n) const override { return get<int64_t>(n); }
  std::optional<float> getFloat(std::string_view n) const override { return get<float>(n); }
  std::optional<std::string> getString(std::string_view n) const override {
    return get<std::string>(n);
  }
  std::optional<std::vector<int64_t>> getInts(std::string_view n) const override {
    return get<std::vector<int64_t>>(n);
  }
  std::optional<std::vector<float>> getFloats(std::string_view n) const override {
    return get<std::vector<float>>(n);
  }
  std::optional<Tensor> getTensor(std::string_view n) const override { return get<Tensor>(n); }
  std::vector<std::string> names() const override {
    std::vector<std::string> v;
    for (auto& [k, _] : m_)
      v.push_back(k);
    return v;
  }
  using AttrReader::getFloat;
  using AttrReader::getInt;
  using AttrReader::getString;

private:
  std::map<std::string, AttrValue> m_;
};

struct NodeRun {
  std::shared_ptr<const Attrs> attrs;
  std::vector<TensorType> types;
  std::vector<Tensor> outs;
};

// Imports one node like the frontend does: every ONNX input is known (constant) at parse time,
// shape operands are then dropped; infers and evaluates `numOutputs` outputs.
NodeRun runNode(OpKind k, const std::vector<const Tensor*>& onnxInputs, const FakeAttrs& attrs = {},
                int opset = 18, int numOutputs = 1, bool eval = true) {
  const OpDef& d = opDef(k);
  std::vector<std::optional<TensorType>> types;
  for (auto* t : onnxInputs)
    types.push_back(t ? std::optional(t->type()) : std::nullopt);
  NodeRun r;
  r.attrs = d.parse ? d.parse(ParseContext{attrs, opset, onnxInputs, types, numOutputs})
                    : std::make_shared<NoAttrs>();
  std::vector<std::optional<TensorType>> irTypes;
  std::vector<const Tensor*> irInputs;
  for (size_t i = 0; i < onnxInputs.size(); ++i)
    if (!d.isShapeOperand(int(i))) {
      irTypes.push_back(types[i]);
      irInputs.push_back(onnxInputs[i]);
    }
  std::vector<const Tensor*> noConsts(irInputs.size(), nullptr);
  r.types = d.infer(InferContext{*r.attrs, irTypes, noConsts});
  if (!eval) return r;
  for (int i = 0; i < numOutputs; ++i)
    r.outs.emplace_back(r.types[size_t(i)]);
  d.eval(EvalContext{*r.attrs, irInputs, r.outs});
  return r;
}

Tensor run1(OpKind k, const std::vector<const Tensor*>& in, const FakeAttrs& attrs = {},
            int opset = 18) {
  return runNode(k, in, attrs, opset).outs.at(0);
}

ErrorKind errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Internal; // no error: the tests expect one
}

Tensor f32(Shape s, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(s), v);
}
Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::fromVector<int64_t>(std::move(s), v);
}
Tensor iota(Shape s) {
  std::vector<float> v(size_t(numElements(s)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  return f32(std::move(s), v);
}
template <typename T> std::vector<T> vals(const Tensor& t) {
  auto s = t.values<T>();
  return {s.begin(), s.end()};
}

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
  EXPECT_EQ(runNode(OpKind::Reshape, {&empty, &zeroShape}, FakeAttrs({{"allowzero", int64_t(1)}}))
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
  Tensor y = run1(OpKind::Transpose, {&x});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<int8_t>(y), (std::vector<int8_t>{1, 4, 2, 5, 3, 6}));
  Tensor b = Tensor::fromVector<bool>({1, 2}, {true, false});
  EXPECT_EQ(
      run1(OpKind::Transpose, {&b}, FakeAttrs({{"perm", std::vector<int64_t>{1, 0}}})).shape(),
      (Shape{2, 1}));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Transpose, {&x}, FakeAttrs({{"perm", std::vector<int64_t>{0, 0}}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(Movement, SliceNegativeStepsAndClamping) {
  Tensor x = iota({10});
  Tensor starts = i64({1}, {-1}), ends = i64({1}, {INT64_MIN}), axes = i64({1}, {0}),
         steps = i64({1}, {-3});
  Tensor y = run1(OpKind::Slice, {&x, &starts, &ends, &axes, &steps});
  EXPECT_EQ(vals<float>(y), (std::vector<float>{9, 6, 3, 0}));
  Tensor s2 = i64({1}, {2}), e2 = i64({1}, {1000});
  EXPECT_EQ(vals<float>(run1(OpKind::Slice, {&x, &s2, &e2})),
            (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
  Tensor zero = i64({1}, {0});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Slice, {&x, &s2, &e2, &axes, &zero});
            }),
            ErrorKind::InvalidModel);
}

TEST(Movement, SqueezeUnsqueeze) {
  Tensor x = iota({1, 3, 1});
  EXPECT_EQ(run1(OpKind::Squeeze, {&x}).shape(), (Shape{3}));
  Tensor ax = i64({1}, {1});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Squeeze, {&x, &ax}); }), ErrorKind::InvalidModel);
  Tensor uax = i64({2}, {-1, 0});
  EXPECT_EQ(run1(OpKind::Unsqueeze, {&x, &uax}).shape(), (Shape{1, 1, 3, 1, 1}));
  // Before opset 13 axes is an attribute.
  EXPECT_EQ(
      run1(OpKind::Unsqueeze, {&x}, FakeAttrs({{"axes", std::vector<int64_t>{1}}}), 11).shape(),
      (Shape{1, 1, 3, 1}));
}

TEST(Movement, ConcatAndSplit) {
  Tensor a = iota({2, 2}), b = f32({2, 1}, {10, 11});
  Tensor c = run1(OpKind::Concat, {&a, &b}, FakeAttrs({{"axis", int64_t(-1)}}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{0, 1, 10, 2, 3, 11}));
  Tensor bad = iota({3, 1});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Concat, {&a, &bad}, FakeAttrs({{"axis", int64_t(1)}}));
            }),
            ErrorKind::InvalidModel);

  Tensor x = iota({7});
  NodeRun r = runNode(OpKind::Split, {&x}, FakeAttrs({{"num_outputs", int64_t(3)}}), 18, 3);
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
  EXPECT_EQ(vals<float>(run1(OpKind::Gather, {&data, &idx})), (std::vector<float>{4, 5, 0, 1}));
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
      vals<float>(run1(OpKind::GatherElements, {&sq, &eidx}, FakeAttrs({{"axis", int64_t(1)}}))),
      (std::vector<float>{1, 0, 2, 2}));

  // batch_dims = 1: data [2,2,2], indices [2,1] -> picks data[b, idx[b]].
  Tensor nd = iota({2, 2, 2});
  Tensor ndIdx = i64({2, 1}, {1, 0});
  Tensor y = run1(OpKind::GatherND, {&nd, &ndIdx}, FakeAttrs({{"batch_dims", int64_t(1)}}));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Movement, PadModes) {
  Tensor x = f32({3}, {1, 2, 3});
  Tensor pads = i64({2}, {2, 1});
  Tensor value = f32({}, {9});
  auto pad = [&](const char* mode) {
    return vals<float>(run1(OpKind::Pad, {&x, &pads, &value}, FakeAttrs({{"mode", mode}})));
  };
  EXPECT_EQ(pad("constant"), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  EXPECT_EQ(pad("reflect"), (std::vector<float>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(pad("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(pad("wrap"), (std::vector<float>{2, 3, 1, 2, 3, 1}));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Pad, {&x, &pads}, FakeAttrs({{"mode", "mirror"}}));
            }),
            ErrorKind::Unsupported);
  // Pads on selected axes (opset 18), negative pads crop.
  Tensor m = iota({2, 3});
  Tensor p2 = i64({2}, {-1, 0});
  Tensor axes = i64({1}, {1});
  Tensor y = run1(OpKind::Pad, {&m, &p2, nullptr, &axes});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 2, 4, 5}));
  // Opset < 11: pads attribute.
  EXPECT_EQ(run1(OpKind::Pad, {&x}, FakeAttrs({{"pads", std::vector<int64_t>{1, 0}}}), 10).shape(),
            (Shape{4}));
}

TEST(Movement, ExpandTileShapeSize) {
  Tensor x = f32({2, 1}, {1, 2});
  Tensor shape = i64({3}, {2, 1, 3});
  Tensor y = run1(OpKind::Expand, {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vals<float>(y)[3], 2.0f);
  Tensor bad = i64({2}, {3, 1}); // 2 vs 3 on axis 0
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Expand, {&x, &bad}); }), ErrorKind::InvalidModel);
  Tensor reps = i64({2}, {2, 2});
  EXPECT_EQ(vals<float>(run1(OpKind::Tile, {&x, &reps})),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  Tensor t = iota({2, 3, 4});
  EXPECT_EQ(vals<int64_t>(run1(OpKind::Shape, {&t}, FakeAttrs({{"start", int64_t(-2)}}))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(vals<int64_t>(run1(OpKind::Size, {&t})), (std::vector<int64_t>{24}));
}

TEST(Movement, ConstantsAndRange) {
  Tensor c = run1(OpKind::Constant, {}, FakeAttrs({{"value_ints", std::vector<int64_t>{4, 5}}}));
  EXPECT_EQ(vals<int64_t>(c), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Constant, {}); }), ErrorKind::InvalidModel);
  Tensor shape = i64({2}, {2, 2});
  Tensor cos = run1(OpKind::ConstantOfShape, {&shape},
                    FakeAttrs({{"value", Tensor::fromVector<int32_t>({1}, {7})}}));
  EXPECT_EQ(vals<int32_t>(cos), (std::vector<int32_t>{7, 7, 7, 7}));
  Tensor s = Tensor::scalar<int32_t>(10), l = Tensor::scalar<int32_t>(4),
         d = Tensor::scalar<int32_t>(-3);
  EXPECT_EQ(vals<int32_t>(run1(OpKind::Range, {&s, &l, &d})), (std::vector<int32_t>{10, 7}));
  Tensor zero = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(errorOf([&] { runNode(OpKind::Range, {&s, &l, &zero}); }), ErrorKind::InvalidModel);
}

TEST(Movement, DropoutInference) {
  Tensor x = f32({2}, {1, 2});
  NodeRun r = runNode(OpKind::Dropout, {&x}, FakeAttrs({{"seed", int64_t(0)}}), 13, 2);
  EXPECT_EQ(vals<float>(r.outs[0]), vals<float>(x));
  EXPECT_EQ(vals<bool>(r.outs[1]), (std::vector<bool>{true, true}));
  Tensor ratio = f32({}, {0.5f});
  Tensor training = Tensor::scalar<bool>(true);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Dropout, {&x, &ratio, &training});
            }),
            ErrorKind::Unsupported);
  Tensor zero = f32({}, {0.0f});
  EXPECT_EQ(vals<float>(run1(OpKind::Dropout, {&x, &zero, &training})), vals<float>(x));
}

TEST(Movement, DepthSpaceRoundTrip) {
  Tensor x = iota({1, 8, 2, 3});
  for (const char* mode : {"DCR", "CRD"}) {
    Tensor y = run1(OpKind::DepthToSpace, {&x},
                    FakeAttrs({{"blocksize", int64_t(2)}, {"mode", std::string(mode)}}));
    EXPECT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
    if (std::string(mode) == "DCR") {
      Tensor back = run1(OpKind::SpaceToDepth, {&y}, FakeAttrs({{"blocksize", int64_t(2)}}));
      EXPECT_EQ(vals<float>(back), vals<float>(x));
    }
  }
  Tensor odd = iota({1, 3, 2, 2});
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::DepthToSpace, {&odd}, FakeAttrs({{"blocksize", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(Movement, TriluOneHotEyeLike) {
  Tensor x = iota({3, 3});
  Tensor k = i64({}, {1});
  EXPECT_EQ(vals<float>(run1(OpKind::Trilu, {&x, &k})),
            (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 0, 0}));
  EXPECT_EQ(vals<float>(run1(OpKind::Trilu, {&x}, FakeAttrs({{"upper", int64_t(0)}}))),
            (std::vector<float>{0, 0, 0, 3, 4, 0, 6, 7, 8}));
  Tensor idx = i64({2}, {-1, 1});
  Tensor depth = f32({}, {3});
  Tensor onOff = f32({2}, {0, 5});
  Tensor oh = run1(OpKind::OneHot, {&idx, &depth, &onOff}, FakeAttrs({{"axis", int64_t(0)}}));
  EXPECT_EQ(oh.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(oh), (std::vector<float>{0, 0, 0, 5, 5, 0}));
  Tensor e = run1(OpKind::EyeLike, {&x}, FakeAttrs({{"dtype", int64_t(7)}, {"k", int64_t(-1)}}));
  EXPECT_EQ(e.dtype(), DType::I64);
  EXPECT_EQ(vals<int64_t>(e), (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(Movement, Resize) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 2});
  Tensor up =
      run1(OpKind::Resize, {&x, nullptr, &scales},
           FakeAttrs({{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}}));
  EXPECT_EQ(up.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(vals<float>(up)[0], 1.0f);
  EXPECT_EQ(vals<float>(up)[15], 4.0f);
  // Bilinear, align_corners: corners are kept, the middle is the mean.
  Tensor sizes = i64({4}, {1, 1, 3, 3});
  Tensor lin =
      run1(OpKind::Resize, {&x, nullptr, nullptr, &sizes},
           FakeAttrs({{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}));
  EXPECT_FLOAT_EQ(vals<float>(lin)[4], 2.5f);
  EXPECT_FLOAT_EQ(vals<float>(lin)[8], 4.0f);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Resize, {&x, nullptr, &scales, &sizes});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::Resize, {&x, nullptr, &scales},
                      FakeAttrs({{"mode", "nearest"}, {"antialias", int64_t(1)}}));
            }),
            ErrorKind::Unsupported);
  // Upsample-9 maps onto the same kernel (asymmetric, floor).
  Tensor u = run1(OpKind::Upsample, {&x, &scales}, FakeAttrs({{"mode", "nearest"}}), 9);
  EXPECT_EQ(vals<float>(u), vals<float>(up));
}

// ---- Reduce ------------------------------------------------------------------------------------

TEST(Reduce, SumMeanKeepdimsAndNoop) {
  Tensor x = iota({2, 3});
  Tensor axes = i64({1}, {-1});
  Tensor s = run1(OpKind::ReduceSum, {&x, &axes}, {}, 13);
  EXPECT_EQ(s.shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<float>(s), (std::vector<float>{3, 12}));
  Tensor m = run1(OpKind::ReduceMean, {&x}, FakeAttrs({{"keepdims", int64_t(0)}}));
  EXPECT_EQ(m.shape(), (Shape{}));
  EXPECT_FLOAT_EQ(vals<float>(m)[0], 2.5f);
  Tensor noop = run1(OpKind::ReduceSum, {&x}, FakeAttrs({{"noop_with_empty_axes", int64_t(1)}}));
  EXPECT_EQ(vals<float>(noop), vals<float>(x));
  // Before opset 18 axes is an attribute (ReduceMax-13).
  Tensor mx = run1(OpKind::ReduceMax, {&x}, FakeAttrs({{"axes", std::vector<int64_t>{0}}}), 13);
  EXPECT_EQ(vals<float>(mx), (std::vector<float>{3, 4, 5}));
  Tensor bad = i64({1}, {2});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::ReduceSum, {&x, &bad}); }), ErrorKind::InvalidModel);
  Tensor b = Tensor::fromVector<bool>({2}, {true, false});
  EXPECT_EQ(errorOf([&] { runNode(OpKind::ReduceSum, {&b}); }), ErrorKind::Unsupported);
}

TEST(Reduce, OtherKinds) {
  Tensor x = f32({3}, {-1, 2, 2});
  auto one = [&](OpKind k) { return vals<float>(run1(k, {&x}))[0]; };
  EXPECT_FLOAT_EQ(one(OpKind::ReduceL1), 5.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceL2), 3.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceSumSquare), 9.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceProd), -4.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceMin), -1.0f);
  EXPECT_FLOAT_EQ(one(OpKind::ReduceLogSum), std::log(3.0f));
  EXPECT_NEAR(one(OpKind::ReduceLogSumExp), std::log(std::exp(-1.0f) + 2 * std::exp(2.0f)), 1e-5);
  Tensor ints = Tensor::fromVector<int32_t>({3}, {7, -9, 4});
  EXPECT_EQ(vals<int32_t>(run1(OpKind::ReduceMax, {&ints})), (std::vector<int32_t>{7}));
  EXPECT_EQ(vals<int32_t>(run1(OpKind::ReduceSum, {&ints})), (std::vector<int32_t>{2}));
}

TEST(Reduce, ArgMaxMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 2, 0, 0});
  Tensor first = run1(OpKind::ArgMax, {&x}, FakeAttrs({{"axis", int64_t(1)}}));
  EXPECT_EQ(first.shape(), (Shape{2, 1}));
  EXPECT_EQ(vals<int64_t>(first), (std::vector<int64_t>{1, 0}));
  Tensor last = run1(
      OpKind::ArgMin, {&x},
      FakeAttrs(
          {{"axis", int64_t(-1)}, {"keepdims", int64_t(0)}, {"select_last_index", int64_t(1)}}));
  EXPECT_EQ(last.shape(), (Shape{2}));
  EXPECT_EQ(vals<int64_t>(last), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(errorOf([&] {
              runNode(OpKind::ArgMax, {&x}, FakeAttrs({{"axis", int64_t(2)}}));
            }),
            ErrorKind::InvalidModel);
}

TEST(Reduce, CumSum) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor axis = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(vals<float>(run1(OpKind::CumSum, {&x, &axis})), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(vals<float>(run1(OpKind::CumSum, {&x, &axis},
                             FakeAttrs({{"exclusive", int64_t(1)}, {"reverse", int64_t(1)}}))),
            (std::vector<float>{9, 7, 4, 0}));
  Tensor badAxis = Tensor::scalar<int32_t>(1);
  EXPECT_EQ(errorOf([&] { runNode(OpKind::CumSum, {&x, &badAxis}); }), ErrorKind::InvalidModel);
}

} // namespace
