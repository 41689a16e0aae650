// Elementwise ops: unary and binary math, comparisons, logic, bit operations, casts, the
// variadic Sum/Mean/Min/Max, and Where.
//
// Every op is a functor (its math per element, in the compute type: float for f16) run by the
// shared drivers of ir/ops/ElementwiseKernels.h; the functor's constraints are the op's dtype
// set. Binary ops broadcast numpy-style; integer arithmetic wraps (two's complement), and
// integer division or modulo by zero gives 0 rather than trapping.
#include "ir/ops/Elementwise.h"
#include "ir/ops/ElementwiseKernels.h"

#include <cstring>

#include <bit>

namespace triad::ir {
using namespace ops;

namespace {

// --- binary arithmetic -------------------------------------------------------------------------

struct AddOp {
  template <RealC T> T operator()(T a, T b) const { return a + b; }
  template <IntC T> T operator()(T a, T b) const { return T(WrapOf<T>(a) + WrapOf<T>(b)); }
};
struct SubOp {
  template <RealC T> T operator()(T a, T b) const { return a - b; }
  template <IntC T> T operator()(T a, T b) const { return T(WrapOf<T>(a) - WrapOf<T>(b)); }
};
struct MulOp {
  template <RealC T> T operator()(T a, T b) const { return a * b; }
  template <IntC T> T operator()(T a, T b) const { return T(WrapOf<T>(a) * WrapOf<T>(b)); }
};
// Integer division truncates toward zero (C++, ONNX Runtime); x/0 gives 0 and MIN/-1 wraps.
struct DivOp {
  template <RealC T> T operator()(T a, T b) const { return a / b; }
  template <IntC T> T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return T(WrapOf<T>(0) - WrapOf<T>(a));
    return T(a / b);
  }
};
struct ModOp {
  bool fmod = false;
  explicit ModOp(const ModAttrs& a) : fmod(a.fmod) {}
  // fmod 0 on floats (opset 28): floored, the sign of b, as numpy's mod; a zero result is a
  // zero with b's sign.
  template <RealC T> T operator()(T a, T b) const {
    T r = std::fmod(a, b);
    if (fmod) return r;
    if (r == 0) return b < 0 ? -T(0) : T(0);
    return (r < 0) != (b < 0) ? r + b : r;
  }
  template <IntC T> T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return 0; // MIN % -1 traps in C++
    T r = T(a % b);
    if constexpr (std::is_signed_v<T>)
      if (!fmod && r != 0 && (r < 0) != (b < 0)) r = T(r + b);
    return r;
  }
};
// Min/Max propagate NaN like numpy's minimum/maximum (the ONNX reference).
struct MinOp {
  template <NumC T> T operator()(T a, T b) const {
    if constexpr (RealC<T>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <NumC T> T operator()(T a, T b) const {
    if constexpr (RealC<T>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return a < b ? b : a;
  }
};

// Pow: the exponent may have another dtype than the base; the result has the base's dtype.
// int^int is exact (wrapping) repeated squaring; a negative exponent gives the truncated real
// result (0 unless the base is +-1). Float bases compute in the base's precision when both
// operands are f32/f16, in double otherwise; int^real computes in double and truncates.
template <typename A, typename B> A powElem(A a, B b) {
  if constexpr (IntC<A> && IntC<B>) {
    using W = WrapOf<A>;
    if constexpr (std::is_signed_v<B>) {
      if (b < 0) {
        if (a == 1) return 1;
        if constexpr (std::is_signed_v<A>)
          if (a == -1) return (b & 1) ? A(-1) : A(1);
        return 0;
      }
    }
    W result = 1, base = W(a);
    for (auto e = std::make_unsigned_t<B>(b); e; e >>= 1) {
      if (e & 1) result = W(result * base);
      base = W(base * base);
    }
    return A(result);
  } else if constexpr (IntC<A>) {
    return realToInt<A>(std::pow(double(a), double(b)));
  } else if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
    return std::pow(a, b);
  } else {
    return A(std::pow(double(a), double(b)));
  }
}

// Dtype sets for ops whose kernels are not single-type functors.
struct AnyNumeric {
  template <NumC T> T operator()(T x) const { return x; }
};
struct AnyType {
  template <typename T> T operator()(T x) const { return x; }
};

// --- comparisons and logic ---------------------------------------------------------------------

struct EqualOp {
  template <typename T>
  requires NumC<T> || BoolC<T>
  bool operator()(T a, T b) const { return a == b; }
};
struct LessOp {
  template <NumC T> bool operator()(T a, T b) const { return a < b; }
};
struct LessOrEqualOp {
  template <NumC T> bool operator()(T a, T b) const { return a <= b; }
};
struct GreaterOp {
  template <NumC T> bool operator()(T a, T b) const { return a > b; }
};
struct GreaterOrEqualOp {
  template <NumC T> bool operator()(T a, T b) const { return a >= b; }
};
struct AndOp {
  template <BoolC T> bool operator()(T a, T b) const { return a && b; }
};
struct OrOp {
  template <BoolC T> bool operator()(T a, T b) const { return a || b; }
};
struct XorOp {
  template <BoolC T> bool operator()(T a, T b) const { return a != b; }
};
struct NotOp {
  template <BoolC T> bool operator()(T a) const { return !a; }
};
struct BitwiseAndOp {
  template <IntC T> T operator()(T a, T b) const { return T(a & b); }
};
struct BitwiseOrOp {
  template <IntC T> T operator()(T a, T b) const { return T(a | b); }
};
struct BitwiseXorOp {
  template <IntC T> T operator()(T a, T b) const { return T(a ^ b); }
};
struct BitwiseNotOp {
  template <IntC T> T operator()(T a) const { return T(~a); }
};
// Shifts by a negative amount or by the bit width or more give what the sign fill alone
// gives: -1 for a right shift of a negative value, else 0. Signed types (opset 28) shift right
// arithmetically; left shifts drop the bits moved past the top.
struct BitShiftOp {
  ShiftDirection direction = ShiftDirection::Left;
  explicit BitShiftOp(const BitShiftAttrs& a) : direction(a.direction) {}
  template <IntC T> T operator()(T a, T b) const {
    bool right = direction == ShiftDirection::Right;
    if (uint64_t(b) >= sizeof(T) * 8) return right && a < 0 ? T(-1) : T(0);
    return right ? T(a >> b) : T(WrapOf<std::make_unsigned_t<T>>(a) << b);
  }
};

// --- unary math --------------------------------------------------------------------------------

#define TRIAD_REAL_UNARY(Name, expr)                                                               \
  struct Name {                                                                                    \
    template <RealC T> T operator()(T x) const { return expr; }                                    \
  };
TRIAD_REAL_UNARY(SqrtOp, std::sqrt(x))
TRIAD_REAL_UNARY(ExpOp, std::exp(x))
TRIAD_REAL_UNARY(LogOp, std::log(x))
TRIAD_REAL_UNARY(ReciprocalOp, T(1) / x)
TRIAD_REAL_UNARY(FloorOp, std::floor(x))
TRIAD_REAL_UNARY(CeilOp, std::ceil(x))
TRIAD_REAL_UNARY(RoundOp, std::nearbyint(x)) // halves to even (default rounding mode)
TRIAD_REAL_UNARY(ErfOp, std::erf(x))
TRIAD_REAL_UNARY(SinOp, std::sin(x))
TRIAD_REAL_UNARY(CosOp, std::cos(x))
TRIAD_REAL_UNARY(TanOp, std::tan(x))
TRIAD_REAL_UNARY(AsinOp, std::asin(x))
TRIAD_REAL_UNARY(AcosOp, std::acos(x))
TRIAD_REAL_UNARY(AtanOp, std::atan(x))
TRIAD_REAL_UNARY(SinhOp, std::sinh(x))
TRIAD_REAL_UNARY(CoshOp, std::cosh(x))
TRIAD_REAL_UNARY(AsinhOp, std::asinh(x))
TRIAD_REAL_UNARY(AcoshOp, std::acosh(x))
TRIAD_REAL_UNARY(AtanhOp, std::atanh(x))
#undef TRIAD_REAL_UNARY

struct NegOp {
  template <RealC T> T operator()(T x) const { return -x; }
  template <IntC T>
  requires std::is_signed_v<T> T operator()(T x) const { return T(WrapOf<T>(0) - WrapOf<T>(x)); }
};
struct AbsOp {
  template <RealC T> T operator()(T x) const { return std::abs(x); }
  template <IntC T> T operator()(T x) const {
    if constexpr (std::is_signed_v<T>)
      return x < 0 ? T(WrapOf<T>(0) - WrapOf<T>(x)) : x;
    else
      return x;
  }
};
// Sign of NaN is NaN, of -0 is -0 (numpy).
struct SignOp {
  template <NumC T> T operator()(T x) const {
    if (x > 0) return T(1);
    if constexpr (std::is_signed_v<T>)
      if (x < 0) return T(-1);
    return x;
  }
};
struct IsNaNOp {
  template <RealC T> bool operator()(T x) const { return std::isnan(x); }
};
struct IsInfOp {
  bool positive = true, negative = true;
  explicit IsInfOp(const IsInfAttrs& a) : positive(a.detectPositive), negative(a.detectNegative) {}
  template <RealC T> bool operator()(T x) const {
    return std::isinf(x) && (x > 0 ? positive : negative);
  }
};

// --- Mod, BitShift, IsInf ----------------------------------------------------------------------

std::shared_ptr<const Attrs> parseMod(const ParseContext& ctx) {
  auto a = std::make_shared<ModAttrs>();
  int64_t fmod = ctx.attrs.getInt("fmod", 0);
  if (fmod != 0 && fmod != 1) invalid("attribute 'fmod' must be 0 or 1, got {}", fmod);
  // Floored modulo of floats (fmod 0) is defined from opset 28; before, floats need fmod 1.
  if (ctx.opset < 28 && fmod == 0 && ctx.hasInput(0) && isFloat(ctx.inputTypes[0]->dtype))
    invalid("attribute 'fmod' must be 1 for {} inputs before opset 28",
            dtypeName(ctx.inputTypes[0]->dtype));
  a->fmod = fmod == 1;
  return a;
}

std::shared_ptr<const Attrs> parseBitShift(const ParseContext& ctx) {
  if (!ctx.attrs.has("direction")) invalid("attribute 'direction' is required");
  auto a = std::make_shared<BitShiftAttrs>();
  a->direction = enumAttr(ctx.attrs, "direction", "LEFT", {"LEFT", "RIGHT"}) == "LEFT"
                     ? ShiftDirection::Left
                     : ShiftDirection::Right;
  return a;
}

std::shared_ptr<const Attrs> parseIsInf(const ParseContext& ctx) {
  auto a = std::make_shared<IsInfAttrs>();
  a->detectPositive = ctx.attrs.getInt("detect_positive", 1) != 0;
  a->detectNegative = ctx.attrs.getInt("detect_negative", 1) != 0;
  return a;
}

// --- Pow ---------------------------------------------------------------------------------------

std::vector<TensorType> inferPow(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const TensorType& y = ctx.in(1);
  requireAccepts<AnyNumeric>(x, "input X (base)");
  requireAccepts<AnyNumeric>(y, "input Y (exponent)");
  return {TensorType{x.dtype, broadcastShapes(x.shape, y.shape), {}}};
}

void evalPow(const EvalContext& ctx) {
  visitDType(ctx.in(0).dtype(), [&](auto baseTag) {
    using TA = decltype(baseTag);
    using CA = ComputeOf<TA>;
    visitDType(ctx.in(1).dtype(), [&](auto expTag) {
      using TB = decltype(expTag);
      using CB = ComputeOf<TB>;
      if constexpr (NumC<CA> && NumC<CB>)
        broadcastBinary<TA, TB, TA>(ctx.in(0), ctx.in(1), ctx.out(0),
                                    [](TA a, TB b) { return TA(powElem(CA(a), CB(b))); });
      else
        TRIAD_ASSERT(false, "Pow on bool");
    });
  });
}

// --- Sum, Mean, Min, Max -----------------------------------------------------------------------

template <typename Op> std::vector<TensorType> inferVariadic(const InferContext& ctx) {
  if (ctx.inputs.empty()) invalid("at least one input is required");
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has(i)) invalid("input {} is absent", i);
    requireSameDType(ctx.in(0), ctx.in(i), fmt::format("inputs 0 and {}", i));
    shapes.push_back(ctx.in(i).shape);
  }
  requireAccepts<Op, 2>(ctx.in(0), "input 0");
  return {TensorType{ctx.in(0).dtype, broadcastShapes(shapes), {}}};
}

// Folds the inputs left to right into the output (rounding to the storage type at each step,
// as ONNX Runtime does); Mean then divides by the input count.
template <typename Op> void evalVariadic(const EvalContext& ctx, bool mean) {
  Tensor& Y = ctx.out(0);
  visitDType(Y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    if constexpr (std::is_invocable_v<Op, C, C>) {
      broadcastTo<T>(ctx.in(0), Y);
      for (size_t i = 1; i < ctx.inputs.size(); ++i)
        broadcastBinary<T, T, T>(Y, ctx.in(i), Y, [](T a, T b) { return T(Op{}(C(a), C(b))); });
      if constexpr (RealC<C>)
        if (mean) {
          C n = C(ctx.inputs.size());
          for (T& v : Y.values<T>())
            v = T(C(v) / n);
        }
    } else {
      TRIAD_ASSERT(false, "variadic kernel on {}", dtypeName(Y.dtype()));
    }
  });
}

// Sum and Mean are float-only in ONNX.
struct RealAddOp {
  template <RealC T> T operator()(T a, T b) const { return a + b; }
};

template <typename Op> OpDef variadicDef(OpKind kind, bool mean) {
  OpDef d{.kind = kind, .minInputs = 1, .maxInputs = -1, .sinceOpset = 6};
  d.infer = inferVariadic<Op>;
  if (mean)
    d.eval = [](const EvalContext& ctx) { evalVariadic<Op>(ctx, true); };
  else
    d.eval = [](const EvalContext& ctx) { evalVariadic<Op>(ctx, false); };
  return d;
}

// --- Where -------------------------------------------------------------------------------------

std::vector<TensorType> inferWhere(const InferContext& ctx) {
  const TensorType& c = ctx.in(0);
  const TensorType& x = ctx.in(1);
  const TensorType& y = ctx.in(2);
  if (c.dtype != DType::Bool)
    invalid("input 'condition' must be bool, has element type {}", dtypeName(c.dtype));
  requireSameDType(x, y, "inputs X and Y");
  requireAccepts<AnyType>(x, "input X");
  return {TensorType{x.dtype, broadcastShapes({c.shape, x.shape, y.shape}), {}}};
}

void evalWhere(const EvalContext& ctx) {
  const Tensor& C = ctx.in(0);
  const Tensor& X = ctx.in(1);
  const Tensor& Yin = ctx.in(2);
  Tensor& Out = ctx.out(0);
  std::vector<int64_t> cm = broadcastIndexMap(C.shape(), Out.shape());
  std::vector<int64_t> xm = broadcastIndexMap(X.shape(), Out.shape());
  std::vector<int64_t> ym = broadcastIndexMap(Yin.shape(), Out.shape());
  visitDType(Out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c = C.data<bool>();
    const T* x = X.data<T>();
    const T* y = Yin.data<T>();
    T* o = Out.data<T>();
    for (size_t i = 0, n = size_t(Out.numElements()); i < n; ++i)
      o[i] = c[cm[i]] ? x[xm[i]] : y[ym[i]];
  });
}

// --- Cast, CastLike ----------------------------------------------------------------------------

// 'saturate' (opset 19) governs only casts to float8 types and 'round_mode' (opset 24) only
// casts to float8e8m0; Triad has neither type (they are refused as element types), so both are
// read for their validity alone.
void readFloat8CastAttrs(const ParseContext& ctx) {
  if (ctx.opset >= 19) {
    std::optional<int64_t> saturate = ctx.attrs.getInt("saturate");
    if (saturate && *saturate != 0 && *saturate != 1)
      invalid("attribute 'saturate' is {}; it must be 0 or 1", *saturate);
  }
  if (ctx.opset >= 24) (void)enumAttr(ctx.attrs, "round_mode", "up", {"up", "down", "nearest"});
}

std::shared_ptr<const Attrs> parseCast(const ParseContext& ctx) {
  std::optional<int64_t> to = ctx.attrs.getInt("to");
  if (!to) invalid("attribute 'to' is required");
  std::optional<DType> t = dtypeFromOnnx(int32_t(*to));
  if (!t)
    unsupported("attribute 'to' is {} ({}); that element type is not supported", *to,
                onnxElemTypeName(int32_t(*to)));
  readFloat8CastAttrs(ctx);
  auto a = std::make_shared<CastAttrs>();
  a->to = *t;
  return a;
}

std::shared_ptr<const Attrs> parseCastLike(const ParseContext& ctx) {
  readFloat8CastAttrs(ctx);
  return std::make_shared<NoAttrs>();
}

void requireCastable(const TensorType& t, std::string_view what) {
  if (t.dtype == DType::Fixed)
    unsupported("{} has element type {}; fixed-point casts go through the quantizer", what,
                dtypeName(t.dtype));
}

std::vector<TensorType> inferCast(const InferContext& ctx) {
  requireCastable(ctx.in(0), "input");
  return {TensorType{ctx.as<CastAttrs>().to, ctx.in(0).shape, {}}};
}

// BitCast (opset 26): the same bytes (little endian, as Triad's tensors) read as another type
// of the same width.
std::vector<TensorType> inferBitCast(const InferContext& ctx) {
  requireCastable(ctx.in(0), "input");
  DType to = ctx.as<CastAttrs>().to, from = ctx.in(0).dtype;
  if (to == DType::Fixed || dtypeSize(to) != dtypeSize(from))
    invalid("attribute 'to' is {}, whose width differs from the input's {}", dtypeName(to),
            dtypeName(from));
  return {TensorType{to, ctx.in(0).shape, {}}};
}

void evalBitCast(const EvalContext& ctx) {
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  std::memcpy(Y.raw(), X.raw(), X.byteSize());
  if (Y.dtype() == DType::Bool) // a nonzero byte is true, stored as 1
    for (size_t i = 0; i < Y.byteSize(); ++i)
      Y.raw()[i] = Y.raw()[i] != 0;
}

std::vector<TensorType> inferCastLike(const InferContext& ctx) {
  requireCastable(ctx.in(0), "input");
  requireCastable(ctx.in(1), "input 'target_type'");
  return {TensorType{ctx.in(1).dtype, ctx.in(0).shape, {}}};
}

// Rounds a double to the nearest binary16 (ties to even) in one step: going through float
// first would round twice and can be off by one ulp on ties.
Half halfFromDouble(double d) {
  Half h;
  if (std::isnan(d)) return Half(float(d));
  uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  double a = std::fabs(d);
  if (a >= 65520.0) { // rounds to infinity (65504 is the largest finite half)
    h.bits = uint16_t(sign | 0x7c00u);
  } else if (a < 0x1p-14) { // subnormal: units of 2^-24 (1024 units = smallest normal)
    h.bits = uint16_t(sign | uint16_t(std::nearbyint(a * 0x1p24)));
  } else {
    int e;
    std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1): exponent of the leading bit is e - 1
    int exp = e - 1;
    double q = std::nearbyint(std::ldexp(a, 10 - exp)); // [1024, 2048]
    if (q >= 2048.0) {
      q = 1024.0;
      ++exp;
    }
    h.bits = uint16_t(sign | uint16_t((exp + 15) << 10) | uint16_t(uint32_t(q) - 1024u));
  }
  return h;
}

void evalCast(const EvalContext& ctx) {
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  if (Y.dtype() != DType::F16 || X.dtype() == DType::F16) {
    Y = X.castTo(Y.dtype());
    return;
  }
  // To f16 from a wider type: every source value is exact in double (integers beyond 2^53
  // overflow f16 anyway), so convert through double with a single rounding.
  visitDType(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half>)
      TRIAD_ASSERT(false, "f16 to f16");
    else
      mapUnary<T, Half>(X, Y, [](T v) { return halfFromDouble(double(v)); });
  });
}

} // namespace

void registerElementwiseOps(OpTable& table) {
  // Numpy broadcasting of the binary ops dates from opset 7 (earlier: broadcast/axis attrs).
  table.add(binaryOpDef<AddOp>(OpKind::Add, 7));
  table.add(binaryOpDef<SubOp>(OpKind::Sub, 7));
  table.add(binaryOpDef<MulOp>(OpKind::Mul, 7));
  table.add(binaryOpDef<DivOp>(OpKind::Div, 7));
  table.add({.kind = OpKind::Pow,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 7,
             .infer = inferPow,
             .eval = evalPow});
  table.add(binaryOpDef<ModOp, ModAttrs>(OpKind::Mod, 10, parseMod));
  table.add(variadicDef<MinOp>(OpKind::Min, false));
  table.add(variadicDef<MaxOp>(OpKind::Max, false));
  table.add(variadicDef<RealAddOp>(OpKind::Sum, false));
  table.add(variadicDef<RealAddOp>(OpKind::Mean, true));

  table.add(binaryOpDef<EqualOp>(OpKind::Equal, 7));
  table.add(binaryOpDef<LessOp>(OpKind::Less, 7));
  table.add(binaryOpDef<LessOrEqualOp>(OpKind::LessOrEqual, 12));
  table.add(binaryOpDef<GreaterOp>(OpKind::Greater, 7));
  table.add(binaryOpDef<GreaterOrEqualOp>(OpKind::GreaterOrEqual, 12));
  table.add(binaryOpDef<AndOp>(OpKind::And, 7));
  table.add(binaryOpDef<OrOp>(OpKind::Or, 7));
  table.add(binaryOpDef<XorOp>(OpKind::Xor, 7));
  table.add(unaryOpDef<NotOp>(OpKind::Not, 1));
  table.add(binaryOpDef<BitShiftOp, BitShiftAttrs>(OpKind::BitShift, 11, parseBitShift));
  table.add(binaryOpDef<BitwiseAndOp>(OpKind::BitwiseAnd, 18));
  table.add(binaryOpDef<BitwiseOrOp>(OpKind::BitwiseOr, 18));
  table.add(binaryOpDef<BitwiseXorOp>(OpKind::BitwiseXor, 18));
  table.add(unaryOpDef<BitwiseNotOp>(OpKind::BitwiseNot, 18));
  table.add({.kind = OpKind::Where,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 9,
             .infer = inferWhere,
             .eval = evalWhere});

  // Opset 1 versions differ only by the ignored legacy 'consumed_inputs' attribute.
  table.add(unaryOpDef<SqrtOp>(OpKind::Sqrt, 1));
  table.add(unaryOpDef<ExpOp>(OpKind::Exp, 1));
  table.add(unaryOpDef<LogOp>(OpKind::Log, 1));
  table.add(unaryOpDef<NegOp>(OpKind::Neg, 1));
  table.add(unaryOpDef<AbsOp>(OpKind::Abs, 1));
  table.add(unaryOpDef<ReciprocalOp>(OpKind::Reciprocal, 1));
  table.add(unaryOpDef<FloorOp>(OpKind::Floor, 1));
  table.add(unaryOpDef<CeilOp>(OpKind::Ceil, 1));
  table.add(unaryOpDef<RoundOp>(OpKind::Round, 11));
  table.add(unaryOpDef<SignOp>(OpKind::Sign, 9));
  table.add(unaryOpDef<ErfOp>(OpKind::Erf, 9));
  table.add(unaryOpDef<SinOp>(OpKind::Sin, 7));
  table.add(unaryOpDef<CosOp>(OpKind::Cos, 7));
  table.add(unaryOpDef<TanOp>(OpKind::Tan, 7));
  table.add(unaryOpDef<AsinOp>(OpKind::Asin, 7));
  table.add(unaryOpDef<AcosOp>(OpKind::Acos, 7));
  table.add(unaryOpDef<AtanOp>(OpKind::Atan, 7));
  table.add(unaryOpDef<SinhOp>(OpKind::Sinh, 9));
  table.add(unaryOpDef<CoshOp>(OpKind::Cosh, 9));
  table.add(unaryOpDef<AsinhOp>(OpKind::Asinh, 9));
  table.add(unaryOpDef<AcoshOp>(OpKind::Acosh, 9));
  table.add(unaryOpDef<AtanhOp>(OpKind::Atanh, 9));
  table.add(unaryOpDef<IsNaNOp>(OpKind::IsNaN, 9));
  table.add(unaryOpDef<IsInfOp, IsInfAttrs>(OpKind::IsInf, 10, parseIsInf));

  // Cast's 'to' was a string before opset 6.
  table.add({.kind = OpKind::Cast,
             .sinceOpset = 6,
             .parse = parseCast,
             .infer = inferCast,
             .eval = evalCast});
  table.add({.kind = OpKind::BitCast,
             .sinceOpset = 26,
             .parse = parseCast,
             .infer = inferBitCast,
             .eval = evalBitCast});
  table.add({.kind = OpKind::CastLike,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 15,
             .parse = parseCastLike,
             .infer = inferCastLike,
             .eval = evalCast});
}

} // namespace triad::ir
