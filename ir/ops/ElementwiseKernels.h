// The shared drivers of the elementwise and activation families: every such op is a small
// functor (its math) run by one of these drivers (the loops, broadcasting and dtype dispatch).
//
// A functor exposes `operator()` for the *compute* types it accepts: float/double for float
// inputs (f16 is computed in float and rounded back, as ONNX Runtime does), the integer types,
// bool. The accepted set is stated once, as constraints on operator(); shape rules derive the
// dtype check from it (accepts<Op>) and kernels dispatch on it, so the two cannot disagree.
// The result type decides the output dtype: bool results give a bool tensor, anything else
// is converted back to the input's storage type.
#pragma once

#include "ir/ops/OpUtil.h"

#include <concepts>
#include <limits>
#include <type_traits>

namespace triad::ir::ops {

/// The type elementwise math runs in for storage type T.
template <typename T> using ComputeOf = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <typename T>
concept RealC = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <typename T>
concept IntC = std::integral<T> && !std::is_same_v<T, bool>;
template <typename T>
concept NumC = RealC<T> || IntC<T>;
template <typename T>
concept BoolC = std::is_same_v<T, bool>;

/// Unsigned type for wrapping integer arithmetic on T (at least 32 bits so that uint16 * uint16
/// is not promoted to a signed int that overflows).
template <IntC T>
using WrapOf = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

/// Converts a real to integer type T with Cast semantics (truncation); NaN and out-of-range
/// values, which ONNX leaves undefined, give 0 instead of undefined behaviour.
template <IntC T> T realToInt(double v) {
  double t = std::trunc(v);
  // [lowest, 2^digits) is the exact range of T; both bounds are exact doubles.
  constexpr double lo = double(std::numeric_limits<T>::lowest());
  double hiExcl = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (!(t >= lo && t < hiExcl)) return T(0);
  return static_cast<T>(t);
}

// --- dtype acceptance --------------------------------------------------------------------------

/// Whether Op accepts N operands of dtype t. Fixed point is never accepted here: its arithmetic
/// (scaling, saturation) belongs to the quantizer, not to these reference kernels.
template <typename Op, size_t N = 1> bool accepts(DType t) {
  if (t == DType::Fixed) return false;
  return visitDType(t, [](auto tag) {
    using C = ComputeOf<decltype(tag)>;
    if constexpr (N == 1)
      return std::is_invocable_v<const Op&, C>;
    else if constexpr (N == 2)
      return std::is_invocable_v<const Op&, C, C>;
    else
      return std::is_invocable_v<const Op&, C, C, C>;
  });
}

/// "f32, f16, f64" for the dtypes Op accepts (for error messages).
template <typename Op, size_t N = 1> std::string acceptedTypes() {
  std::string s;
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I16, DType::I8,
                  DType::U64, DType::U32, DType::U16, DType::U8, DType::Bool})
    if (accepts<Op, N>(t)) s += (s.empty() ? "" : ", ") + std::string(dtypeName(t));
  return s;
}

template <typename Op, size_t N = 1>
void requireAccepts(const TensorType& t, std::string_view what) {
  if (!accepts<Op, N>(t.dtype))
    unsupported("{} has element type {}; supported: {}", what, dtypeName(t.dtype),
                acceptedTypes<Op, N>());
}

/// The output dtype of Op on N operands of dtype t (t must be accepted).
template <typename Op, size_t N = 1> DType resultDType(DType t) {
  return visitDType(t, [t](auto tag) {
    using C = ComputeOf<decltype(tag)>;
    if constexpr (N == 1 && std::is_invocable_v<const Op&, C>)
      return std::is_same_v<std::invoke_result_t<const Op&, C>, bool> ? DType::Bool : t;
    else if constexpr (N == 2 && std::is_invocable_v<const Op&, C, C>)
      return std::is_same_v<std::invoke_result_t<const Op&, C, C>, bool> ? DType::Bool : t;
    else
      return t;
  });
}

// --- loops -------------------------------------------------------------------------------------

/// y[i] = f(x[i]) over equal-shaped tensors.
template <typename TX, typename TY, typename F> void mapUnary(const Tensor& X, Tensor& Y, F&& f) {
  TRIAD_ASSERT(X.numElements() == Y.numElements(), "mapUnary sizes");
  const TX* x = X.data<TX>();
  TY* y = Y.data<TY>();
  for (int64_t i = 0, n = Y.numElements(); i < n; ++i)
    y[i] = f(x[i]);
}

/// Y = X broadcast (numpy rules) to Y's shape, same dtype.
template <typename T> void broadcastTo(const Tensor& X, Tensor& Y) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  if (X.shape() == Y.shape()) {
    std::copy(x, x + X.numElements(), y);
    return;
  }
  std::vector<int64_t> m = broadcastIndexMap(X.shape(), Y.shape());
  for (int64_t i = 0, n = Y.numElements(); i < n; ++i)
    y[i] = x[m[size_t(i)]];
}

/// y[o] = f(a[.], b[.]) over the numpy broadcast of A and B, which must equal Y's shape.
/// Y may alias A (in-place accumulation by the variadic ops): each output element is written
/// after its own operands are read.
template <typename TA, typename TB, typename TY, typename F>
void broadcastBinary(const Tensor& A, const Tensor& B, Tensor& Y, F&& f) {
  const TA* a = A.data<TA>();
  const TB* b = B.data<TB>();
  TY* y = Y.data<TY>();
  int64_t n = Y.numElements();
  bool aFull = A.shape() == Y.shape(), bFull = B.shape() == Y.shape();
  if (aFull && bFull) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = f(a[i], b[i]);
  } else if (aFull && B.numElements() == 1) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = f(a[i], b[0]);
  } else if (bFull && A.numElements() == 1) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = f(a[0], b[i]);
  } else {
    std::vector<int64_t> am = broadcastIndexMap(A.shape(), Y.shape());
    std::vector<int64_t> bm = broadcastIndexMap(B.shape(), Y.shape());
    for (int64_t i = 0; i < n; ++i)
      y[i] = f(a[am[size_t(i)]], b[bm[size_t(i)]]);
  }
}

// --- op-level drivers --------------------------------------------------------------------------

/// Shape rule of a unary op: same shape, dtype from the functor's result.
template <typename Op> std::vector<TensorType> inferUnary(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  requireAccepts<Op>(x, "input");
  return {TensorType{resultDType<Op>(x.dtype), x.shape, {}}};
}

template <typename Op> void evalUnary(const EvalContext& ctx, const Op& op) {
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    if constexpr (std::is_invocable_v<const Op&, C>) {
      using R = std::invoke_result_t<const Op&, C>;
      using TY = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
      mapUnary<T, TY>(ctx.in(0), ctx.out(0), [&](T x) { return TY(op(C(x))); });
    } else {
      TRIAD_ASSERT(false, "unary kernel called on {}", dtypeName(ctx.in(0).dtype()));
    }
  });
}

/// Shape rule of a binary op with numpy broadcasting and equal operand dtypes.
template <typename Op> std::vector<TensorType> inferBinary(const InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  requireSameDType(a, b, "inputs A and B");
  requireAccepts<Op, 2>(a, "input A");
  return {TensorType{resultDType<Op, 2>(a.dtype), broadcastShapes(a.shape, b.shape), {}}};
}

template <typename Op> void evalBinary(const EvalContext& ctx, const Op& op) {
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    if constexpr (std::is_invocable_v<const Op&, C, C>) {
      using R = std::invoke_result_t<const Op&, C, C>;
      using TY = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
      broadcastBinary<T, T, TY>(ctx.in(0), ctx.in(1), ctx.out(0),
                                [&](T a, T b) { return TY(op(C(a), C(b))); });
    } else {
      TRIAD_ASSERT(false, "binary kernel called on {}", dtypeName(ctx.in(0).dtype()));
    }
  });
}

/// The OpDef of a one-input op run by evalUnary. Op is default-constructed, or built from the
/// node's attributes when A (its attribute struct) is given.
template <typename Op, typename A = void>
OpDef unaryOpDef(OpKind kind, int sinceOpset, ParseFn parse = {}) {
  return {.kind = kind,
          .sinceOpset = sinceOpset,
          .parse = std::move(parse),
          .infer = inferUnary<Op>,
          .eval = [](const EvalContext& ctx) {
            if constexpr (std::is_void_v<A>)
              evalUnary(ctx, Op{});
            else
              evalUnary(ctx, Op(ctx.as<A>()));
          }};
}

/// The OpDef of a two-input broadcasting op run by evalBinary (same conventions).
template <typename Op, typename A = void>
OpDef binaryOpDef(OpKind kind, int sinceOpset, ParseFn parse = {}) {
  return {.kind = kind,
          .minInputs = 2,
          .maxInputs = 2,
          .sinceOpset = sinceOpset,
          .parse = std::move(parse),
          .infer = inferBinary<Op>,
          .eval = [](const EvalContext& ctx) {
            if constexpr (std::is_void_v<A>)
              evalBinary(ctx, Op{});
            else
              evalBinary(ctx, Op(ctx.as<A>()));
          }};
}

} // namespace triad::ir::ops
