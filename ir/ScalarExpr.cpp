#include "ir/ScalarExpr.h"

#include "ir/ops/Activation.h"
#include "ir/ops/Elementwise.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/QuantizeQonnx.h"

#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <unordered_map>

namespace triad::ir {

namespace {

using Operands = std::span<const std::string>;
using ExprFn = std::function<std::string(const Node&, Operands, ScalarDialect)>;

/// How an op's expression is typed: math (every input and the output of one dtype; Pow's
/// exponent may differ), a predicate (inputs of one dtype, bool output), boolean logic (bool in
/// and out), or special rules.
enum class Typing { Real, Predicate, Logic, Cast, Where };

/// Dtype classes, as bits: which operand dtypes an entry has an expression for.
enum : unsigned { kF32 = 1, kF64 = 2, kF16 = 4, kSigned = 8, kUnsigned = 16, kBool = 32 };
constexpr unsigned kReal = kF32 | kF64 | kF16;
constexpr unsigned kInt = kSigned | kUnsigned;

struct Entry {
  Typing typing;
  ExprFn expr;
  unsigned types = kReal;    // operand dtypes (Real, Predicate); f16 computes in float
  bool moreOps = false;      // beyond the core: needs ScalarTypes::moreOps
  bool convertsHalf = false; // converts float16 operands itself (else scalarExpr does)
};

std::string flit(float v) {
  return floatLiteral(v);
}

unsigned dtypeBit(DType t) {
  switch (t) {
  case DType::F32:
    return kF32;
  case DType::F64:
    return kF64;
  case DType::F16:
    return kF16;
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
    return kSigned;
  case DType::U64:
  case DType::U32:
  case DType::U16:
  case DType::U8:
    return kUnsigned;
  case DType::Bool:
    return kBool;
  case DType::Fixed:
    return 0;
  }
  return 0;
}

bool isInt(DType t) {
  return (dtypeBit(t) & kInt) != 0;
}
DType inType(const Node& n, size_t i = 0) {
  return n.input(i)->type().dtype;
}

/// A call of a run-time helper: `triad_rt::name<T...>(args)` in C++ (cpu/runtime/
/// triad_scalar.h), `triad_name_T..(args)` in OpenCL C, whose helpers are generated per
/// instantiation (gpu/ScalarHelpers.cpp).
std::string helper(ScalarDialect d, const std::string& name, const std::vector<DType>& types,
                   const std::string& args) {
  std::string s = fmt::format("{}{}", d == ScalarDialect::Cpp ? "triad_rt::" : "triad_", name);
  if (d == ScalarDialect::Cpp && !types.empty()) {
    std::vector<std::string> names;
    for (DType t : types)
      names.push_back(cppTypeName(t));
    s += fmt::format("<{}>", fmt::join(names, ", "));
  } else {
    for (DType t : types)
      s += fmt::format("_{}", scalarTypeName(t, d));
  }
  return fmt::format("{}({})", s, args);
}

// Float16 values are their bits in generated code; math converts them (triad_scalar.h).
std::string halfToFloat(const std::string& x, ScalarDialect d) {
  return helper(d, "half_to_float", {}, x);
}
std::string halfFromFloat(const std::string& x, ScalarDialect d) {
  return helper(d, "half_from_float", {}, x);
}

/// The unsigned type integer arithmetic on t wraps in (the reference's WrapOf: at least 32
/// bits, so that uint16 * uint16 is not promoted to an int that overflows).
std::string wrapType(DType t, ScalarDialect d) {
  return scalarTypeName(dtypeSize(t) <= 4 ? DType::U32 : DType::U64, d);
}
/// `a op b` on integers of dtype t with two's complement wrap-around (no signed overflow).
std::string wrapping(DType t, const std::string& a, const char* op, const std::string& b,
                     ScalarDialect d) {
  return fmt::format("(({0})(({1}){2} {3} ({1}){4}))", scalarTypeName(t, d), wrapType(t, d), a, op,
                     b);
}
/// -x on integers of dtype t, wrapping (MIN stays MIN).
std::string wrappingNeg(DType t, const std::string& x, ScalarDialect d) {
  return fmt::format("(({0})(({1})0 - ({1}){2}))", scalarTypeName(t, d), wrapType(t, d), x);
}

} // namespace

std::string floatLiteral(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

namespace {

Entry unary(const char* fmtText, unsigned types = kReal) {
  return {Typing::Real,
          [fmtText](const Node&, Operands o, ScalarDialect) {
            return fmt::format(fmt::runtime(fmtText), fmt::arg("x", o[0]));
          },
          types};
}
Entry binary(const char* fmtText, Typing t = Typing::Real, unsigned types = kReal) {
  return {t,
          [fmtText](const Node&, Operands o, ScalarDialect) {
            return fmt::format(fmt::runtime(fmtText), fmt::arg("a", o[0]), fmt::arg("b", o[1]));
          },
          types};
}
/// Add, Sub, Mul: the C operator on floats, wrapping on integers.
Entry arithmetic(const char* op) {
  return {Typing::Real,
          [op](const Node& n, Operands o, ScalarDialect d) {
            DType t = inType(n);
            if (isInt(t)) return wrapping(t, o[0], op, o[1], d);
            return fmt::format("({} {} {})", o[0], op, o[1]);
          },
          kReal | kInt};
}
/// A unary op with a float form and an integer form (`intFmt` with {x}, {T} the type, {W} its
/// wrapping type; `unsignedFmt` for unsigned types when they differ).
Entry unaryTyped(const char* realFmt, const char* intFmt, const char* unsignedFmt, unsigned types) {
  return {Typing::Real,
          [=](const Node& n, Operands o, ScalarDialect d) {
            DType t = inType(n);
            const char* f = !isInt(t)                                            ? realFmt
                            : dtypeBit(t) == kUnsigned && unsignedFmt != nullptr ? unsignedFmt
                                                                                 : intFmt;
            return fmt::format(fmt::runtime(f), fmt::arg("x", o[0]),
                               fmt::arg("T", scalarTypeName(t, d)), fmt::arg("W", wrapType(t, d)));
          },
          types};
}
// Folds a variadic op (Sum, Min, ...) left to right with a binary pattern (`intFmt` on
// integers; `halfFn`, a triad_rt function of two float16 bit patterns, on float16). Float16
// rounds after every step, as the reference stores each partial result.
Entry variadic(const char* realFmt, const char* intFmt = nullptr, const char* halfFn = nullptr,
               bool mean = false) {
  return {Typing::Real,
          [realFmt, intFmt, halfFn, mean](const Node& n, Operands o, ScalarDialect d) {
            DType t = inType(n);
            bool half = t == DType::F16;
            auto in = [half, d](const std::string& x) { return half ? halfToFloat(x, d) : x; };
            auto out = [half, d](const std::string& x) { return half ? halfFromFloat(x, d) : x; };
            const char* f = isInt(t) ? intFmt : realFmt;
            std::string acc = o[0];
            for (size_t i = 1; i < o.size(); ++i)
              acc = half && halfFn ? helper(d, halfFn, {}, acc + ", " + o[i])
                                   : out(fmt::format(fmt::runtime(f), fmt::arg("a", in(acc)),
                                                     fmt::arg("b", in(o[i]))));
            if (mean) acc = out(fmt::format("({} / {})", in(acc), flit(float(o.size()))));
            return acc;
          },
          intFmt ? kReal | kInt : kReal, false, true};
}
Entry bitwise(const char* op) {
  return {Typing::Real,
          [op](const Node& n, Operands o, ScalarDialect d) {
            return fmt::format("(({})({} {} {}))", scalarTypeName(inType(n), d), o[0], op, o[1]);
          },
          kInt, true};
}
template <typename A> const A& attrsOf(const Node& n) {
  return n.attrs<A>();
}

/// The constant scalar value of input i, if it is one.
std::optional<float> constScalar(const Node& n, size_t i) {
  Value* v = n.input(i);
  if (!v || !v->isConstant() || v->constant().numElements() != 1) return std::nullopt;
  if (v->type().dtype != DType::F32) return std::nullopt;
  return v->constant().data<float>()[0];
}

/// Pow as the reference's powElem: the result has the base's dtype; int^int is exact wrapping
/// repeated squaring, int^real truncates the double result, float bases compute in float when
/// both operands are f32/f16 and in double otherwise.
std::string powExpr(const Node& n, Operands o, ScalarDialect d) {
  DType a = inType(n, 0), b = inType(n, 1);
  if (a == DType::F32 && b == DType::F32) {
    // Small integral exponents as products (exact, and what PyTorch's x.pow(2)/x**3 in
    // GELU/LayerNorm patterns mean); pow() otherwise.
    if (auto e = constScalar(n, 1)) {
      if (*e == 1.0f) return o[0];
      if (*e == 2.0f) return fmt::format("({0} * {0})", o[0]);
      if (*e == 3.0f) return fmt::format("({0} * {0} * {0})", o[0]);
      if (*e == 0.5f) return fmt::format("sqrt({})", o[0]);
    }
    return fmt::format("pow({}, {})", o[0], o[1]);
  }
  std::string x = a == DType::F16 ? halfToFloat(o[0], d) : o[0];
  std::string y = b == DType::F16 ? halfToFloat(o[1], d) : o[1];
  if (isInt(a) && isInt(b)) return helper(d, "ipow", {a, b}, x + ", " + y);
  if (isInt(a))
    return helper(d, "real_to_int", {a}, fmt::format("pow((double){}, (double){})", x, y));
  bool floatMath = a != DType::F64 && (b == DType::F32 || b == DType::F16);
  std::string r = floatMath ? fmt::format("pow({}, {})", x, y)
                            : fmt::format("(({})pow((double){}, (double){}))",
                                          a == DType::F64 ? "double" : "float", x, y);
  return a == DType::F16 ? halfFromFloat(r, d) : r;
}

/// Mod as the reference: C's fmod (fmod=1) or the divisor's sign (fmod=0, integers only);
/// integer x % 0 and x % -1 give 0.
std::string modExpr(const Node& n, Operands o, ScalarDialect d) {
  bool fmodMode = attrsOf<ModAttrs>(n).fmod;
  DType t = inType(n);
  const std::string &a = o[0], &b = o[1];
  if (!isInt(t)) {
    std::string r = fmt::format("fmod({}, {})", a, b);
    if (fmodMode) return r;
    // Floored (opset 28), as the reference's ModOp: the sign of b, a zero result included.
    return fmt::format("({0} == 0.0f ? ({1} < 0.0f ? -0.0f : 0.0f) : ({0} < 0.0f) != ({1} < "
                       "0.0f) ? {0} + {1} : {0})",
                       r, b);
  }
  if (d == ScalarDialect::OpenCL)
    return fmt::format("triad_int_mod{}_{}({}, {})", fmodMode ? "_fmod" : "", scalarTypeName(t, d),
                       a, b);
  return fmt::format("triad_rt::int_mod<{}, {}>({}, {})", fmodMode ? "true" : "false",
                     cppTypeName(t), a, b);
}

/// Integer division truncates; x / 0 gives 0 and MIN / -1 wraps (the reference's DivOp).
std::string divExpr(const Node& n, Operands o, ScalarDialect d) {
  DType t = inType(n);
  const std::string &a = o[0], &b = o[1];
  if (!isInt(t)) return fmt::format("({} / {})", a, b);
  std::string T = scalarTypeName(t, d);
  if (dtypeBit(t) == kUnsigned)
    return fmt::format("({1} == 0 ? ({0})0 : ({0})({2} / {1}))", T, b, a);
  return fmt::format("({1} == 0 ? ({0})0 : {1} == -1 ? {3} : ({0})({2} / {1}))", T, b, a,
                     wrappingNeg(t, a, d));
}

/// Shifts by the bit width or more give 0 (the reference's BitShiftOp; unsigned only).
/// As the reference's BitShiftOp: a negative or too large amount gives the sign fill alone (-1
/// for a right shift of a negative value, else 0).
std::string bitShiftExpr(const Node& n, Operands o, ScalarDialect d) {
  DType t = inType(n);
  std::string T = scalarTypeName(t, d);
  bool left = attrsOf<BitShiftAttrs>(n).direction == ShiftDirection::Left;
  std::string shifted = left ? fmt::format("({})(({}){} << {})", T, wrapType(t, d), o[0], o[1])
                             : fmt::format("({})({} >> {})", T, o[0], o[1]);
  std::string fill = !left && dtypeBit(t) == kSigned
                         ? fmt::format("({0} < 0 ? ({1})-1 : ({1})0)", o[0], T)
                         : fmt::format("({})0", T);
  return fmt::format("(({}){} >= {}u ? {} : {})", scalarTypeName(DType::U64, d), o[1],
                     dtypeSize(t) * 8, fill, shifted);
}

/// Cast (and CastLike) as the reference's Tensor::castTo / evalCast: C conversions, except
/// float16, which is converted in one rounding from double, -> bool (nonzero), and real ->
/// integer (triad_rt::cast_to_int: truncation with the reference's wrap rule).
std::string castExpr(const Node& n, Operands o, ScalarDialect d) {
  DType from = inType(n), to = n.output(0)->type().dtype;
  const std::string& x = o[0];
  if (to == DType::Bool)
    return from == DType::F16 ? fmt::format("({} != 0.0f)", halfToFloat(x, d))
                              : fmt::format("({} != 0)", x);
  if (to == DType::F16) {
    if (from == DType::F16) return x;
    // OpenCL C without doubles: every source but float64 converts to float exactly, or (integers
    // beyond 2^24) to a float that rounds to infinity in float16 as the exact value does.
    if (d == ScalarDialect::OpenCL && from != DType::F64)
      return halfFromFloat(fmt::format("(float){}", x), d);
    return helper(d, "half_from_double", {}, "(double)" + x);
  }
  bool toInt = (dtypeBit(to) & kInt) != 0, fromReal = (dtypeBit(from) & kReal) != 0;
  std::string v = from == DType::F16 ? halfToFloat(x, d) : x;
  if (toInt && fromReal) { // the reference's wrap rule, defined out of range too
    if (d == ScalarDialect::OpenCL && from != DType::F64) // float math is exact here
      return helper(d, "cast_float_to", {to}, v);
    return helper(d, "cast_to_int", {to}, "(double)" + v);
  }
  return fmt::format("(({}){})", scalarTypeName(to, d), v);
}

const std::unordered_map<OpKind, Entry>& table() {
  static const std::unordered_map<OpKind, Entry> t = [] {
    std::unordered_map<OpKind, Entry> m;
    // Arithmetic: floats, and integers wrapping (two's complement) as the reference does.
    m[OpKind::Add] = arithmetic("+");
    m[OpKind::Sub] = arithmetic("-");
    m[OpKind::Mul] = arithmetic("*");
    m[OpKind::Div] = {Typing::Real, divExpr, kReal | kInt};
    m[OpKind::Pow] = {Typing::Real, powExpr, kReal | kInt, false, true};
    m[OpKind::Mod] = {Typing::Real, modExpr, kReal | kInt, true};
    // Min/Max propagate NaN like the reference (numpy semantics): (a != a) tests NaN.
    m[OpKind::Min] = variadic(
        "(({a}) != ({a}) ? ({a}) : ({b}) != ({b}) ? ({b}) : ({b}) < ({a}) ? ({b}) : ({a}))",
        "({b} < {a} ? {b} : {a})", "half_min");
    m[OpKind::Max] = variadic(
        "(({a}) != ({a}) ? ({a}) : ({b}) != ({b}) ? ({b}) : ({a}) < ({b}) ? ({b}) : ({a}))",
        "({a} < {b} ? {b} : {a})", "half_max");
    m[OpKind::Sum] = variadic("({a} + {b})");
    m[OpKind::Mean] = variadic("({a} + {b})", nullptr, nullptr, true);
    // Bit operations (integers only).
    m[OpKind::BitShift] = {Typing::Real, bitShiftExpr, kInt, true};
    m[OpKind::BitwiseAnd] = bitwise("&");
    m[OpKind::BitwiseOr] = bitwise("|");
    m[OpKind::BitwiseXor] = bitwise("^");
    m[OpKind::BitwiseNot] = unaryTyped("", "(({T})~{x})", nullptr, kInt);
    m[OpKind::BitwiseNot].moreOps = true;
    // Unary math.
    m[OpKind::Sqrt] = unary("sqrt({x})");
    m[OpKind::Exp] = unary("exp({x})");
    m[OpKind::Log] = unary("log({x})");
    m[OpKind::Neg] = unaryTyped("(-{x})", "(({T})(({W})0 - ({W}){x}))", nullptr, kReal | kSigned);
    m[OpKind::Abs] =
        unaryTyped("fabs({x})", "({x} < 0 ? ({T})(({W})0 - ({W}){x}) : {x})", "{x}", kReal | kInt);
    m[OpKind::Reciprocal] = unary("(1.0f / {x})");
    m[OpKind::Floor] = unary("floor({x})");
    m[OpKind::Ceil] = unary("ceil({x})");
    m[OpKind::Round] = unary("rint({x})"); // halves to even, as the reference's nearbyint
    m[OpKind::Sign] = unaryTyped("({x} > 0.0f ? 1.0f : {x} < 0.0f ? -1.0f : {x})",
                                 "({x} > 0 ? ({T})1 : {x} < 0 ? ({T})-1 : {x})",
                                 "({x} > 0 ? ({T})1 : {x})", kReal | kInt);
    // erf and tanh are the run-time's approximations in float (see cpu/CodeGen.cpp), so no
    // float16 (which the reference computes with std:: in float); double calls std::.
    m[OpKind::Erf] = unary("erf({x})", kF32 | kF64);
    m[OpKind::Sin] = unary("sin({x})");
    m[OpKind::Cos] = unary("cos({x})");
    m[OpKind::Tan] = unary("tan({x})");
    m[OpKind::Asin] = unary("asin({x})");
    m[OpKind::Acos] = unary("acos({x})");
    m[OpKind::Atan] = unary("atan({x})");
    m[OpKind::Sinh] = unary("sinh({x})");
    m[OpKind::Cosh] = unary("cosh({x})");
    m[OpKind::Asinh] = unary("asinh({x})");
    m[OpKind::Acosh] = unary("acosh({x})");
    m[OpKind::Atanh] = unary("atanh({x})");
    // Activations. Float attributes are float literals: in double math they convert exactly
    // as the reference's T(alpha).
    m[OpKind::Relu] =
        unaryTyped("({x} < 0.0f ? 0.0f : {x})", "({x} < 0 ? ({T})0 : {x})", "{x}", kReal | kInt);
    m[OpKind::LeakyRelu] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                              return fmt::format("({0} < 0.0f ? {1} * {0} : {0})", o[0],
                                                 flit(attrsOf<AlphaAttrs>(n).alpha));
                            }};
    m[OpKind::PRelu] = {Typing::Real,
                        [](const Node& n, Operands o, ScalarDialect d) {
                          DType t = inType(n);
                          if (isInt(t))
                            return fmt::format("({0} < 0 ? {1} : {0})", o[0],
                                               wrapping(t, o[0], "*", o[1], d));
                          return fmt::format("({0} < 0.0f ? {1} * {0} : {0})", o[0], o[1]);
                        },
                        kReal | kSigned};
    // The reference's stable form: exp of a non-positive number only.
    m[OpKind::Sigmoid] =
        unary("({x} >= 0.0f ? 1.0f / (1.0f + exp(-{x})) : exp({x}) / (1.0f + exp({x})))");
    m[OpKind::Tanh] = unary("tanh({x})", kF32 | kF64);
    m[OpKind::HardSigmoid] = {
        Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
          const auto& a = attrsOf<HardSigmoidAttrs>(n);
          std::string v = fmt::format("({} * {} + {})", flit(a.alpha), o[0], flit(a.beta));
          return fmt::format("({0} < 0.0f ? 0.0f : {0} > 1.0f ? 1.0f : {0})", v);
        }};
    m[OpKind::HardSwish] = unary("({x} * ({x} / 6.0f + 0.5f < 0.0f ? 0.0f : {x} / 6.0f + 0.5f > "
                                 "1.0f ? 1.0f : {x} / 6.0f + 0.5f))");
    m[OpKind::Clip] = {
        Typing::Real,
        [](const Node& n, Operands o, ScalarDialect) {
          const auto& a = attrsOf<ClipAttrs>(n);
          std::string lo = o.size() > 1 && !o[1].empty() ? o[1] : a.min ? flit(*a.min) : "";
          std::string hi = o.size() > 2 && !o[2].empty() ? o[2] : a.max ? flit(*a.max) : "";
          std::string v = o[0];
          // Same order as the reference: max with min first, then min with max.
          if (!lo.empty()) v = fmt::format("({0} < {1} ? {1} : {0})", v, lo);
          if (!hi.empty()) v = fmt::format("({0} > {1} ? {1} : {0})", v, hi);
          return v;
        },
        kReal | kInt};
    // Float32 only: the constants are float literals (the reference's are T(...) of doubles)
    // and erf/tanh are the run-time's float approximations.
    m[OpKind::Gelu] = {Typing::Real,
                       [](const Node& n, Operands o, ScalarDialect) {
                         if (attrsOf<GeluAttrs>(n).approximate == GeluApproximation::Tanh)
                           return fmt::format("(0.5f * {0} * (1.0f + tanh(0.7978845608f * ({0} + "
                                              "0.044715f * {0} * {0} * {0}))))",
                                              o[0]);
                         return fmt::format("(0.5f * {0} * (1.0f + erf({0} * 0.70710678118f)))",
                                            o[0]);
                       },
                       kF32};
    m[OpKind::Elu] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                        return fmt::format("({0} < 0.0f ? {1} * expm1({0}) : {0})", o[0],
                                           flit(attrsOf<AlphaAttrs>(n).alpha));
                      }};
    m[OpKind::Selu] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                         const auto& a = attrsOf<SeluAttrs>(n);
                         return fmt::format("({0} > 0.0f ? {1} * {0} : {1} * ({2} * expm1({0})))",
                                            o[0], flit(a.gamma), flit(a.alpha));
                       }};
    m[OpKind::Celu] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                         return fmt::format("({0} > 0.0f ? {0} : {1} * expm1({0} / {1}))", o[0],
                                            flit(attrsOf<AlphaAttrs>(n).alpha));
                       }};
    m[OpKind::Softplus] = unary("(({x} > 0.0f ? {x} : 0.0f) + log1p(exp(-fabs({x}))))");
    m[OpKind::Softsign] = unary("({x} / (1.0f + fabs({x})))");
    m[OpKind::ThresholdedRelu] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                                    return fmt::format("({0} > {1} ? {0} : 0.0f)", o[0],
                                                       flit(attrsOf<AlphaAttrs>(n).alpha));
                                  }};
    m[OpKind::Mish] =
        unary("({x} * tanh(({x} > 0.0f ? {x} : 0.0f) + log1p(exp(-fabs({x})))))", kF32 | kF64);
    // Swish: x * sigmoid(alpha * x), the sigmoid in the reference's stable form.
    m[OpKind::Swish] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                          std::string ax =
                              fmt::format("({} * {})", flit(attrsOf<AlphaAttrs>(n).alpha), o[0]);
                          return fmt::format("({0} * ({1} >= 0.0f ? 1.0f / (1.0f + exp(-{1})) : "
                                             "exp({1}) / (1.0f + exp({1}))))",
                                             o[0], ax);
                        }};
    m[OpKind::Shrink] = {Typing::Real, [](const Node& n, Operands o, ScalarDialect) {
                           const auto& a = attrsOf<ShrinkAttrs>(n);
                           return fmt::format("({0} < -{1} ? {0} + {2} : {0} > {1} ? {0} - {2} : "
                                              "0.0f)",
                                              o[0], flit(a.lambd), flit(a.bias));
                         }};
    // Predicates and logic.
    m[OpKind::Equal] = binary("({a} == {b})", Typing::Predicate, kReal | kInt | kBool);
    m[OpKind::Less] = binary("({a} < {b})", Typing::Predicate, kReal | kInt);
    m[OpKind::LessOrEqual] = binary("({a} <= {b})", Typing::Predicate, kReal | kInt);
    m[OpKind::Greater] = binary("({a} > {b})", Typing::Predicate, kReal | kInt);
    m[OpKind::GreaterOrEqual] = binary("({a} >= {b})", Typing::Predicate, kReal | kInt);
    m[OpKind::IsNaN] = {Typing::Predicate, [](const Node&, Operands o, ScalarDialect) {
                          return fmt::format("({0} != {0})", o[0]);
                        }};
    m[OpKind::IsInf] = {Typing::Predicate, [](const Node& n, Operands o, ScalarDialect) {
                          const auto& a = attrsOf<IsInfAttrs>(n);
                          std::string pos = fmt::format("({} == INFINITY)", o[0]);
                          std::string neg = fmt::format("({} == -INFINITY)", o[0]);
                          if (a.detectPositive && a.detectNegative)
                            return fmt::format("({} || {})", pos, neg);
                          return a.detectPositive ? pos : a.detectNegative ? neg : "false";
                        }};
    m[OpKind::Not] = {Typing::Logic, [](const Node&, Operands o, ScalarDialect) {
                        return fmt::format("(!{})", o[0]);
                      }};
    m[OpKind::And] = binary("({a} && {b})", Typing::Logic);
    m[OpKind::Or] = binary("({a} || {b})", Typing::Logic);
    m[OpKind::Xor] = binary("({a} != {b})", Typing::Logic);
    // Casts: see hasScalarExpr for the pairs; float -> int wraps as the reference does.
    m[OpKind::Cast] = {Typing::Cast, castExpr};
    m[OpKind::CastLike] = {Typing::Cast, castExpr, kReal, true};
    m[OpKind::Where] = {Typing::Where, [](const Node&, Operands o, ScalarDialect) {
                          return fmt::format("({} ? {} : {})", o[0], o[1], o[2]);
                        }};
    return m;
  }();
  return t;
}

bool isIntegerOrBool(DType t) {
  return (dtypeBit(t) & (kInt | kBool)) != 0;
}

// QONNX's fake quantizers (ir/ops/QuantizeQonnx.h) in float32, step for step as the reference
// computes them: Quant (with a constant bit width, which fixes its integer range) and
// BipolarQuant. C++ only (ScalarTypes::moreOps): OpenCL's float division is not correctly
// rounded by default, and x / scale must be.

bool isQonnxQuantizer(const Node& n) {
  return n.kind() == OpKind::Quant || n.kind() == OpKind::BipolarQuant;
}

bool hasQonnxExpr(const Node& n, ScalarTypes types) {
  if (!types.exactDivision || n.outputs().size() != 1) return false;
  if (n.kind() == OpKind::Quant) {
    Value* bits = n.input(3);
    if (!bits || !bits->isConstant() || bits->constant().numElements() != 1) return false;
    double b = bits->constant().getDouble(0);
    if (!(b >= 1 && b <= 32) || b != std::floor(b)) return false; // the reference reports it
  }
  return true;
}

/// r rounded as `mode` does, with the reference's numpy formulas; `v` is evaluated several times.
std::string qonnxRoundExpr(QonnxRounding mode, const std::string& v) {
  auto sign = [&] { return fmt::format("({0} > 0.0f ? 1.0f : {0} < 0.0f ? -1.0f : 0.0f)", v); };
  switch (mode) {
  case QonnxRounding::HalfEven:
    return fmt::format("rint({})", v);
  case QonnxRounding::Ceil:
    return fmt::format("ceil({})", v);
  case QonnxRounding::Floor:
    return fmt::format("floor({})", v);
  case QonnxRounding::Down: // trunc, from the functions every prelude has
    return fmt::format("({0} < 0.0f ? ceil({0}) : floor({0}))", v);
  case QonnxRounding::Up:
    return fmt::format("({} * ceil(fabs({})))", sign(), v);
  case QonnxRounding::HalfUp:
    return fmt::format("({} * floor(fabs({}) + 0.5f))", sign(), v);
  case QonnxRounding::HalfDown:
    return fmt::format("({} * ceil(fabs({}) - 0.5f))", sign(), v);
  }
  return v;
}

/// x / y rounded correctly: C++'s division, or the OpenCL dialect's triad_div_rn (OpenCL C's
/// own division may be off by ulps).
std::string exactDiv(const std::string& x, const std::string& y, ScalarDialect d) {
  if (d == ScalarDialect::OpenCL) return fmt::format("triad_div_rn({}, {})", x, y);
  return fmt::format("{} / {}", x, y);
}

std::string qonnxExpr(const Node& n, Operands o, ScalarDialect d) {
  if (n.kind() == OpKind::BipolarQuant)
    return fmt::format("(({} >= 0.0f ? 1.0f : -1.0f) * {})", o[0], o[1]);
  const auto& a = n.attrs<QonnxQuantAttrs>();
  int bits = int(n.input(3)->constant().getDouble(0));
  // q = x / scale + zero point, two float operations (a NaN stays NaN through the clamp).
  std::string q = fmt::format("({} + {})", exactDiv(o[0], o[1], d), o[2]);
  std::string r;
  if (bits == 1 && a.isSigned) {
    r = fmt::format("({} >= 0.0f ? 1.0f : -1.0f)", q);
  } else {
    std::string lo = flit(float(ops::qonnxMinInt(a.isSigned, a.narrow, bits)));
    std::string hi = flit(float(ops::qonnxMaxInt(a.isSigned, a.narrow, bits)));
    std::string c = fmt::format("({0} > {1} ? {1} : {0} < {2} ? {2} : {0})", q, hi, lo);
    r = qonnxRoundExpr(a.rounding, c);
  }
  return fmt::format("(({} - {}) * {})", r, o[2], o[1]);
}

// QuantizeLinear and DequantizeLinear per tensor (one scale, one zero point) in float32, as the
// reference computes them (ir/ops/Quantize.cpp): y = quantize_linear<Q>(x / scale, zp) and
// y = float(int32(x - zp)) * scale. Only where ScalarTypes::exactDivision: x / scale must be
// correctly rounded (C++'s division, the OpenCL dialect's triad_div_rn). Blocked forms, and
// per-axis ones but where ScalarTypes::axisQdq, keep their own lowering.

bool isQdq(const Node& n) {
  return n.kind() == OpKind::QuantizeLinear || n.kind() == OpKind::DequantizeLinear;
}

bool hasQdqExpr(const Node& n, ScalarTypes types) {
  if (!types.exactDivision || n.outputs().size() != 1) return false;
  // Per tensor; or, where the target broadcasts operands by qdqOperandShape (axisQdq), per
  // channel of one axis.
  const Shape& xs = n.input(0)->type().shape;
  int64_t axis = n.kind() == OpKind::QuantizeLinear ? n.attrs<QuantizeLinearAttrs>().axis
                                                    : n.attrs<QuantAxisAttrs>().axis;
  const bool perAxis = types.axisQdq && axis >= 0 && axis < int64_t(xs.size());
  for (size_t i : {size_t(1), size_t(2)}) {
    if (i >= n.inputs().size() || !n.input(i)) continue;
    const TensorType& t = n.input(i)->type();
    if (t.numElements() != 1 && !(perAxis && t.shape == Shape{xs[size_t(axis)]})) return false;
  }
  DType x = n.input(0)->type().dtype, out = n.output(0)->type().dtype;
  if (n.input(1)->type().dtype != DType::F32) return false;
  auto q16 = [](DType t) {
    return t == DType::U8 || t == DType::I8 || t == DType::U16 || t == DType::I16;
  };
  if (n.kind() == OpKind::QuantizeLinear)
    return n.attrs<QuantizeLinearAttrs>().blockSize == 0 && x == DType::F32 && q16(out);
  return n.attrs<QuantAxisAttrs>().blockSize == 0 && (q16(x) || x == DType::I32) &&
         out == DType::F32;
}

std::string qdqExpr(const Node& n, Operands o, ScalarDialect d) {
  const bool hasZp = n.inputs().size() > 2 && n.input(2);
  const std::string zp = hasZp ? o[2] : std::string("0");
  const std::string i32 = scalarTypeName(DType::I32, d); // int32_t in C++, int in OpenCL C
  if (n.kind() == OpKind::QuantizeLinear)
    return helper(d, "quantize_linear", {n.output(0)->type().dtype},
                  fmt::format("{}, {}", exactDiv(o[0], o[1], d),
                              hasZp ? fmt::format("({}){}", i32, zp) : zp));
  if (n.input(0)->type().dtype != DType::I32)
    return fmt::format("((float)(({0}){1} - ({0}){2}) * {3})", i32, o[0], zp, o[1]);
  // The difference wraps to int32.
  if (d == ScalarDialect::OpenCL)
    return fmt::format("((float)as_int((uint){} - (uint){}) * {})", o[0], zp, o[1]);
  return fmt::format("((float)(int32_t)((int64_t){} - (int64_t){}) * {})", o[0], zp, o[1]);
}

} // namespace

Shape qdqOperandShape(const Node& n, size_t input) {
  const Value* v = n.input(input);
  if (!isQdq(n) || (input != 1 && input != 2) || v->type().numElements() == 1)
    return v->type().shape;
  int64_t axis = n.kind() == OpKind::QuantizeLinear ? n.attrs<QuantizeLinearAttrs>().axis
                                                    : n.attrs<QuantAxisAttrs>().axis;
  const Shape& xs = n.input(0)->type().shape;
  Shape s(xs.size() - size_t(axis), 1);
  s[0] = v->type().numElements();
  return s;
}

bool hasScalarExpr(const Node& n, ScalarTypes types) {
  if (isQonnxQuantizer(n)) return hasQonnxExpr(n, types);
  if (isQdq(n)) return hasQdqExpr(n, types);
  auto it = table().find(n.kind());
  if (it == table().end()) return false;
  const Entry& entry = it->second;
  if (entry.moreOps && !types.moreOps) return false;
  auto allInputs = [&](auto pred) {
    for (Value* v : n.inputs())
      if (v && !pred(v->type().dtype)) return false;
    return true;
  };
  DType out = n.output(0)->type().dtype;
  if (n.outputs().size() != 1) return false;
  // Variadic Min/Max repeat their operands in the folded expression: keep it small.
  if ((n.kind() == OpKind::Min || n.kind() == OpKind::Max) && n.inputs().size() > 3) return false;
  // The dtypes the target computes with (float32 always).
  unsigned allowed = kF32 | (types.f64 ? kF64 : 0u) | (types.f16 ? kF16 : 0u) |
                     (types.integers ? kInt | kBool : 0u);
  DType in = n.input(0)->type().dtype;
  switch (entry.typing) {
  case Typing::Real:
  case Typing::Predicate: {
    if (!(dtypeBit(in) & entry.types & allowed)) return false;
    if (out != (entry.typing == Typing::Real ? in : DType::Bool)) return false;
    for (size_t i = 1; i < n.inputs().size(); ++i) {
      Value* v = n.input(i);
      if (!v) continue;
      DType t = v->type().dtype;
      // Pow's exponent may have any numeric dtype.
      bool ok = n.kind() == OpKind::Pow && i == 1 ? (dtypeBit(t) & (kReal | kInt) & allowed) != 0
                                                  : t == in;
      if (!ok) return false;
    }
    // Pow computes in double unless both operands are float32/float16.
    if (n.kind() == OpKind::Pow && !types.f64) {
      auto f = [](DType t) { return t == DType::F32 || t == DType::F16; };
      DType e = n.input(1)->type().dtype;
      if (!(isInt(in) && isInt(e)) && !(f(in) && f(e))) return false;
    }
    return true;
  }
  case Typing::Logic:
    return out == DType::Bool && allInputs([](DType t) { return t == DType::Bool; });
  case Typing::Cast: {
    // The core: int/bool/f32 -> f32 or bool.
    if ((out == DType::F32 || out == DType::Bool) && (in == DType::F32 || isIntegerOrBool(in)))
      return true;
    return (dtypeBit(in) & allowed) && (dtypeBit(out) & allowed);
  }
  case Typing::Where: {
    if (in != DType::Bool) return false;
    DType a = n.input(1)->type().dtype;
    return a == out && n.input(2)->type().dtype == out &&
           (out == DType::F32 || isIntegerOrBool(out) || (dtypeBit(out) & allowed) != 0);
  }
  }
  return false;
}

std::string scalarExpr(const Node& n, std::span<const std::string> operands, ScalarDialect d) {
  if (isQonnxQuantizer(n)) return qonnxExpr(n, operands, d);
  if (isQdq(n)) return qdqExpr(n, operands, d);
  auto it = table().find(n.kind());
  TRIAD_ASSERT(it != table().end(), "no scalar expression for {}", opKindName(n.kind()));
  const Entry& entry = it->second;
  bool half = (entry.typing == Typing::Real || entry.typing == Typing::Predicate) &&
              !entry.convertsHalf && inType(n) == DType::F16;
  if (!half) return entry.expr(n, operands, d);
  // Float16 math runs in float on the converted operands and rounds the result back, as the
  // reference's kernels do (ComputeOf<Half> is float).
  std::vector<std::string> ops(operands.begin(), operands.end());
  for (size_t i = 0; i < ops.size(); ++i)
    if (n.input(i) && n.input(i)->type().dtype == DType::F16) ops[i] = halfToFloat(ops[i], d);
  std::string e = entry.expr(n, ops, d);
  return n.output(0)->type().dtype == DType::F16 ? halfFromFloat(e, d) : e;
}

std::string cppTypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I64:
    return "int64_t";
  case DType::I32:
    return "int32_t";
  case DType::I16:
    return "int16_t";
  case DType::I8:
    return "int8_t";
  case DType::U64:
    return "uint64_t";
  case DType::U32:
    return "uint32_t";
  case DType::U16:
    return "uint16_t";
  case DType::U8:
    return "uint8_t";
  case DType::Bool:
    return "bool";
  case DType::F16:
    return "uint16_t"; // storage only: binary16 bits
  case DType::Fixed:
    return "int64_t"; // storage of fixed-point values (raw integers)
  }
  return "void";
}

std::string scalarTypeName(DType t, ScalarDialect d) {
  if (d == ScalarDialect::Cpp) return cppTypeName(t);
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I64:
  case DType::Fixed:
    return "long";
  case DType::I32:
    return "int";
  case DType::I16:
    return "short";
  case DType::I8:
    return "char";
  case DType::U64:
    return "ulong";
  case DType::U32:
    return "uint";
  case DType::U16:
  case DType::F16: // binary16 bits
    return "ushort";
  case DType::U8:
    return "uchar";
  case DType::Bool:
    return "bool";
  }
  return "void";
}

std::string scalarLiteral(const Tensor& t, int64_t index) {
  switch (t.dtype()) {
  case DType::F32:
    return flit(t.data<float>()[index]);
  case DType::Bool:
    return t.data<bool>()[index] ? "true" : "false";
  case DType::F64: {
    double v = t.data<double>()[index];
    if (std::isnan(v)) return "(double)NAN";
    if (std::isinf(v)) return v > 0 ? "(double)INFINITY" : "(-(double)INFINITY)";
    std::string s = fmt::format("{}", v); // shortest text that reads back as v
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return v < 0 ? "(" + s + ")" : s;
  }
  case DType::F16:
    return fmt::format("uint16_t(0x{:04x})", t.data<Half>()[index].bits);
  default:
    return visitDType(t.dtype(), [&](auto tag) -> std::string {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        T v = t.data<T>()[index];
        if constexpr (std::is_signed_v<T>) {
          if (v == std::numeric_limits<T>::min())
            return fmt::format("({}({}) - 1)", cppTypeName(t.dtype()), int64_t(v) + 1);
        }
        return fmt::format("{}({})", cppTypeName(t.dtype()), v);
      } else {
        TRIAD_ASSERT(false, "no C literal for element type {}", dtypeName(t.dtype()));
        return std::string();
      }
    });
  }
}

std::optional<ReduceExpr> reduceExpr(OpKind k) {
  switch (k) {
  case OpKind::ReduceSum:
    return ReduceExpr{"0", "acc += v;", "acc"};
  case OpKind::ReduceMean:
    return ReduceExpr{"0", "acc += v;", "acc / count"};
  case OpKind::ReduceProd:
    return ReduceExpr{"1", "acc *= v;", "acc"};
  case OpKind::ReduceL1:
    return ReduceExpr{"0", "acc += fabs(v);", "acc"};
  case OpKind::ReduceL2:
    return ReduceExpr{"0", "acc += v * v;", "sqrt(acc)"};
  case OpKind::ReduceSumSquare:
    return ReduceExpr{"0", "acc += v * v;", "acc"};
  case OpKind::ReduceLogSum:
    return ReduceExpr{"0", "acc += v;", "log(acc)"};
  case OpKind::ReduceLogSumExp:
    return ReduceExpr{"0", "if (mx - mx == 0) acc += exp(v - mx);",
                      "mx - mx == 0 ? mx + log(acc) : mx", true};
  case OpKind::ReduceMax: // the first NaN sticks; an empty reduction gives -inf
    return ReduceExpr{"-INFINITY", "if (acc == acc && (v > acc || v != v)) acc = v;", "acc"};
  case OpKind::ReduceMin:
    return ReduceExpr{"INFINITY", "if (acc == acc && (v < acc || v != v)) acc = v;", "acc"};
  default:
    return std::nullopt;
  }
}

const std::vector<std::string>& scalarMathFunctions() {
  static const std::vector<std::string> f = {"sqrt",  "exp",  "log",  "fabs",  "floor", "ceil",
                                             "rint",  "erf",  "sin",  "cos",   "tan",   "asin",
                                             "acos",  "atan", "sinh", "cosh",  "asinh", "acosh",
                                             "atanh", "pow",  "tanh", "expm1", "log1p", "fmod"};
  return f;
}

} // namespace triad::ir
