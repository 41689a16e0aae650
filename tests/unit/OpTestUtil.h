// Shared scaffolding of the op-family unit tests (ops_*_test.cpp): an AttrReader over literal
// attributes standing in for the ONNX frontend, a driver that imports, infers and evaluates one
// node the way the frontend does, small tensor constructors, value extractors and numeric
// comparison helpers.
#pragma once

#include "ir/OpDef.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace triad::optest {

using ir::DType;
using ir::Shape;
using ir::Tensor;
using ir::TensorType;

using Ints = std::vector<int64_t>;
/// Per input: its type, or nullopt for an absent optional input.
using Types = std::vector<std::optional<TensorType>>;

/// One literal attribute value. A string literal becomes a std::string (so
/// `{"mode", "cubic"}` works without spelling out `std::string("cubic")`).
struct AttrValue : std::variant<int64_t, float, std::string, std::vector<int64_t>,
                                std::vector<float>, Tensor, std::vector<std::string>> {
  using variant::variant;
  AttrValue(const char* s) : variant(std::string(s)) {}
};

/// An AttrReader over a literal map, standing in for the ONNX frontend:
/// `LiteralAttrs({{"axis", int64_t(1)}, {"mode", "cubic"}})`. Reading an attribute as the wrong
/// type fails with ErrorKind::InvalidModel, as the frontend does.
class LiteralAttrs : public ir::AttrReader {
public:
  LiteralAttrs(std::initializer_list<std::pair<const std::string, AttrValue>> attrs = {})
      : attrs_(attrs) {}

  bool has(std::string_view name) const override { return attrs_.count(std::string(name)) != 0; }
  std::optional<int64_t> getInt(std::string_view name) const override { return get<int64_t>(name); }
  std::optional<float> getFloat(std::string_view name) const override { return get<float>(name); }
  std::optional<std::string> getString(std::string_view name) const override {
    return get<std::string>(name);
  }
  std::optional<std::vector<int64_t>> getInts(std::string_view name) const override {
    return get<std::vector<int64_t>>(name);
  }
  std::optional<std::vector<float>> getFloats(std::string_view name) const override {
    return get<std::vector<float>>(name);
  }
  std::optional<std::vector<std::string>> getStrings(std::string_view name) const override {
    return get<std::vector<std::string>>(name);
  }
  std::optional<Tensor> getTensor(std::string_view name) const override {
    return get<Tensor>(name);
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> result;
    for (const auto& [name, value] : attrs_)
      result.push_back(name);
    return result;
  }
  using AttrReader::getFloat;
  using AttrReader::getInt;
  using AttrReader::getString;

private:
  template <typename T> std::optional<T> get(std::string_view name) const {
    auto it = attrs_.find(std::string(name));
    if (it == attrs_.end()) return std::nullopt;
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    fail(ErrorKind::InvalidModel, "attribute '{}' has the wrong type", name);
  }

  std::map<std::string, AttrValue> attrs_;
};

/// The types of `inputs` (nullopt where an input is absent, i.e. nullptr).
inline Types typesOf(const std::vector<const Tensor*>& inputs) {
  Types types;
  for (const Tensor* t : inputs)
    types.push_back(t ? std::optional(t->type()) : std::nullopt);
  return types;
}

/// Runs an op's attribute parser on input types alone (no input is a known constant, so shape
/// operands cannot be resolved this way; use runNode() for ops that have them).
inline std::shared_ptr<const ir::Attrs> parseAttrs(ir::OpKind kind, const LiteralAttrs& attrs,
                                                   const Types& types, int opset = 18,
                                                   int numOutputs = 1) {
  const ir::OpDef& def = ir::opDef(kind);
  if (!def.parse) return std::make_shared<ir::NoAttrs>();
  std::vector<const Tensor*> noConsts(types.size(), nullptr);
  return def.parse(ir::ParseContext{attrs, opset, noConsts, types, numOutputs});
}

/// Runs an op's shape rule on (IR) input types; no input value is known.
inline std::vector<TensorType> inferTypes(ir::OpKind kind, const ir::Attrs& attrs,
                                          const Types& types) {
  std::vector<const Tensor*> noConsts(types.size(), nullptr);
  return ir::opDef(kind).infer(ir::InferContext{attrs, types, noConsts});
}

/// Output types of a node given only its input types: parseAttrs() then inferTypes().
inline std::vector<TensorType> parseAndInfer(ir::OpKind kind, const Types& types,
                                             const LiteralAttrs& attrs = {}, int opset = 18) {
  return inferTypes(kind, *parseAttrs(kind, attrs, types, opset), types);
}

/// The result of runNode(): parsed attributes, inferred output types and, when evaluated, the
/// first `numOutputs` outputs.
struct NodeRun {
  std::shared_ptr<const ir::Attrs> attrs;
  std::vector<TensorType> types;
  std::vector<Tensor> outs;
};

/// Imports one node like the frontend does: every ONNX input (nullptr: absent) is a known
/// constant at parse time; shape operands are then dropped, and so are trailing absent inputs.
/// Infers the output types and, if `eval`, evaluates the first `numOutputs` outputs with the
/// reference kernel.
inline NodeRun runNode(ir::OpKind kind, const std::vector<const Tensor*>& onnxInputs,
                       const LiteralAttrs& attrs = {}, int opset = 18, int numOutputs = 1,
                       bool eval = true) {
  const ir::OpDef& def = ir::opDef(kind);
  Types types = typesOf(onnxInputs);
  NodeRun r;
  r.attrs = def.parse ? def.parse(ir::ParseContext{attrs, opset, onnxInputs, types, numOutputs})
                      : std::make_shared<ir::NoAttrs>();
  Types irTypes;
  std::vector<const Tensor*> irInputs;
  for (size_t i = 0; i < onnxInputs.size(); ++i)
    if (!def.isShapeOperand(int(i))) {
      irTypes.push_back(types[i]);
      irInputs.push_back(onnxInputs[i]);
    }
  while (!irInputs.empty() && !irInputs.back()) {
    irInputs.pop_back();
    irTypes.pop_back();
  }
  r.types = inferTypes(kind, *r.attrs, irTypes);
  if (!eval) return r;
  for (int i = 0; i < numOutputs; ++i)
    r.outs.emplace_back(r.types.at(size_t(i)));
  def.eval(ir::EvalContext{*r.attrs, irInputs, r.outs});
  return r;
}

/// runNode() without evaluation: the node's output types.
inline std::vector<TensorType> typesFor(ir::OpKind kind, const std::vector<const Tensor*>& inputs,
                                        const LiteralAttrs& attrs = {}, int opset = 18) {
  return runNode(kind, inputs, attrs, opset, 1, /*eval=*/false).types;
}

/// runNode() returning the node's first output.
inline Tensor run(ir::OpKind kind, const std::vector<const Tensor*>& inputs,
                  const LiteralAttrs& attrs = {}, int opset = 18) {
  return runNode(kind, inputs, attrs, opset).outs.at(0);
}

/// The kind of the triad::Error that `f` throws; a test failure (and ErrorKind::Internal) if it
/// throws none.
inline ErrorKind errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "expected a triad::Error";
  return ErrorKind::Internal;
}

/// Runs f and expects a triad::Error of `kind` whose message contains every `needles` entry.
template <typename F> void expectError(F&& f, ErrorKind kind, std::vector<std::string> needles) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message lacks '" << n << "': " << e.what();
  }
}

inline TensorType tt(DType dtype, Shape shape) {
  return TensorType{dtype, std::move(shape), {}};
}

template <typename T> Tensor vec(Shape shape, std::vector<T> values) {
  return Tensor::fromVector<T>(std::move(shape), values);
}
inline Tensor f32(Shape shape, std::vector<float> values) {
  return vec<float>(std::move(shape), std::move(values));
}
inline Tensor i64(Shape shape, std::vector<int64_t> values) {
  return vec<int64_t>(std::move(shape), std::move(values));
}
/// A 1-D int64 tensor holding `values`.
inline Tensor i64(std::vector<int64_t> values) {
  Shape shape{int64_t(values.size())};
  return vec<int64_t>(std::move(shape), std::move(values));
}
inline Tensor i32(Shape shape, std::vector<int32_t> values) {
  return vec<int32_t>(std::move(shape), std::move(values));
}
inline Tensor boolT(Shape shape, std::vector<bool> values) {
  return vec<bool>(std::move(shape), std::move(values));
}

/// 0, 1, 2, ... in row-major order.
inline Tensor iota(Shape shape, DType dtype = DType::F32) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setDouble(i, double(i));
  return t;
}

/// Uniform values in [-1, 1), reproducible from `seed`.
inline Tensor randomTensor(Shape shape, unsigned seed, DType dtype = DType::F32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setDouble(i, dist(rng));
  return t;
}

/// The elements of `t`, which must hold T.
template <typename T> std::vector<T> vals(const Tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}
/// The elements of `t` converted to double.
inline std::vector<double> dvals(const Tensor& t) {
  return t.toDoubleVector();
}

/// Element-wise |got - want| <= tol, with equal sizes.
inline void expectNear(const std::vector<double>& got, const std::vector<double>& want,
                       double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "at element " << i;
}
/// Element-wise |got - want| <= tol, with equal shapes.
inline void expectNear(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  expectNear(dvals(got), dvals(want), tol);
}
/// The elements of `got` (any shape) are `want`, up to `tol`.
inline void expectValues(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.numElements(), int64_t(want.size()));
  expectNear(dvals(got), want, tol);
}

} // namespace triad::optest
