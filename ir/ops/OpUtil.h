// Helpers shared by the op families in ir/ops/: shape arithmetic, broadcasting, attribute
// validation, and small dispatch utilities for reference kernels.
//
// Errors thrown from parse/infer are triad::Error without node context; the frontend and the
// verifier prefix them with the node's name and op type.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/OpDef.h"
#include "ir/Tensor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace triad::ir::ops {

template <typename... Args>
[[noreturn]] void invalid(fmt::format_string<Args...> f, Args&&... args) {
  fail(ErrorKind::InvalidModel, f, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... args) {
  fail(ErrorKind::Unsupported, f, std::forward<Args>(args)...);
}

/// A dimension computed from a model's numbers (Tile's repeats, Resize's scales): `d * factor`,
/// or floor(`d * scale`) for a scale that must be finite and positive (else InvalidModel naming
/// `what`). A result beyond any possible tensor throws Resource instead of wrapping around.
int64_t multipliedDim(int64_t d, int64_t factor, std::string_view what);
int64_t scaledDim(int64_t d, double scale, std::string_view what);

/// The spatial dims of an [N, C, spatial...] shape (none for rank < 3).
Shape spatialOf(const Shape& s);

/// Resolves a possibly negative axis against `rank` ([-rank, rank-1] is valid).
int64_t normalizeAxis(int64_t axis, int64_t rank, std::string_view what = "axis");
/// Same for a list; also rejects duplicates.
std::vector<int64_t> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                   std::string_view what = "axes");

/// Numpy-style multidirectional broadcasting of shapes; throws naming both shapes.
Shape broadcastShapes(const Shape& a, const Shape& b);
Shape broadcastShapes(const std::vector<Shape>& shapes);

/// Maps each linear index of `outShape` to the linear index in a tensor of shape `inShape`
/// that broadcasts to it. Precomputed once per (in, out) pair.
std::vector<int64_t> broadcastIndexMap(const Shape& inShape, const Shape& outShape);

/// Input/output type checks used by shape rules.
void requireFloat(const TensorType& t, std::string_view what);
void requireSameDType(const TensorType& a, const TensorType& b, std::string_view what);
void requireRank(const TensorType& t, int64_t rank, std::string_view what);
void requireRankAtLeast(const TensorType& t, int64_t rank, std::string_view what);

/// The ONNX tensor a shape operand holds, as int64 values (nullopt when the input is absent).
std::optional<std::vector<int64_t>> constInts(const ParseContext& ctx, size_t input);
std::optional<std::vector<double>> constDoubles(const ParseContext& ctx, size_t input);

/// Attribute helpers that validate while reading.
std::vector<int64_t> intsOr(const AttrReader& a, std::string_view name, std::vector<int64_t> dflt);
std::vector<float> floatsOr(const AttrReader& a, std::string_view name, std::vector<float> dflt);
/// Reads a string attribute that must be one of `allowed`; the error lists the valid values.
std::string enumAttr(const AttrReader& a, std::string_view name, std::string dflt,
                     std::initializer_list<std::string_view> allowed);

/// `t` with another shape (dtype and fixed-point format kept).
TensorType withShape(const TensorType& t, Shape s);
/// The type of ONNX input i at parse time; the input must be present (checked by arity).
const TensorType& inputType(const ParseContext& ctx, size_t i);

/// Element i of an int32/int64 index tensor, with a negative value resolved against `dim`;
/// an index out of range is a Runtime error naming `what` (indices are data, not the model).
int64_t readIndex(const Tensor& t, int64_t i, int64_t dim, std::string_view what);

/// Shape rule "one output with the type of input i".
std::vector<TensorType> sameAsInput(const InferContext& ctx, size_t i = 0);

/// Calls f(T{}) for float storage types only (F32, F16, F64); others are an internal error
/// (shape rules reject them before a kernel runs).
template <typename F> decltype(auto) visitFloat(DType t, F&& f) {
  switch (t) {
  case DType::F32:
    return f(float{});
  case DType::F16:
    return f(Half{});
  case DType::F64:
    return f(double{});
  default:
    TRIAD_ASSERT(false, "kernel expects a float type, got {}", dtypeName(t));
  }
  return f(float{});
}

/// Iterates a multi-index over `shape` in row-major order, calling f(index vector, linear).
void forEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& f);

/// Whether integer dtype `t` is one of the listed ones (for type-constraint checks).
bool dtypeIn(DType t, std::initializer_list<DType> allowed);

} // namespace triad::ir::ops
