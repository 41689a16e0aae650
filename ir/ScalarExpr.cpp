#include "ir/ScalarExpr.h"

#include "ir/ops/Activation.h"
#include "ir/ops/Elementwise.h"

#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <unordered_map>

namespace triad::ir {

namespace {

using Operands = std::span<const std::string>;
using ExprFn = std::function<std::string(const Node&, Operands)>;

/// How an op's expression is typed: float math (every input and the output f32), a predicate
/// (f32 inputs, bool output), boolean logic (bool in and out), or special rules.
enum class Typing { Real, Predicate, Logic, Cast, Where };

struct Entry {
  Typing typing;
  ExprFn expr;
};

std::string flit(float v) {
  return floatLiteral(v);
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

Entry unary(const char* fmtText) {
  return {Typing::Real, [fmtText](const Node&, Operands o) {
            return fmt::format(fmt::runtime(fmtText), fmt::arg("x", o[0]));
          }};
}
Entry binary(const char* fmtText, Typing t = Typing::Real) {
  return {t, [fmtText](const Node&, Operands o) {
            return fmt::format(fmt::runtime(fmtText), fmt::arg("a", o[0]), fmt::arg("b", o[1]));
          }};
}
// Folds a variadic op (Sum, Min, ...) left to right with a binary pattern.
Entry variadic(const char* fmtText, bool mean = false) {
  return {Typing::Real, [fmtText, mean](const Node&, Operands o) {
            std::string acc = o[0];
            for (size_t i = 1; i < o.size(); ++i)
              acc = fmt::format(fmt::runtime(fmtText), fmt::arg("a", acc), fmt::arg("b", o[i]));
            if (mean) acc = fmt::format("({} / {})", acc, flit(float(o.size())));
            return acc;
          }};
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

const std::unordered_map<OpKind, Entry>& table() {
  static const std::unordered_map<OpKind, Entry> t = [] {
    std::unordered_map<OpKind, Entry> m;
    // Arithmetic (float). Integer arithmetic stays with the reference kernels.
    m[OpKind::Add] = binary("({a} + {b})");
    m[OpKind::Sub] = binary("({a} - {b})");
    m[OpKind::Mul] = binary("({a} * {b})");
    m[OpKind::Div] = binary("({a} / {b})");
    m[OpKind::Pow] = {Typing::Real, [](const Node& n, Operands o) {
                        // Small integral exponents as products (exact, and what PyTorch's
                        // x.pow(2)/x**3 in GELU/LayerNorm patterns mean); pow() otherwise.
                        if (auto e = constScalar(n, 1)) {
                          if (*e == 1.0f) return o[0];
                          if (*e == 2.0f) return fmt::format("({0} * {0})", o[0]);
                          if (*e == 3.0f) return fmt::format("({0} * {0} * {0})", o[0]);
                          if (*e == 0.5f) return fmt::format("sqrt({})", o[0]);
                        }
                        return fmt::format("pow({}, {})", o[0], o[1]);
                      }};
    // Min/Max propagate NaN like the reference (numpy semantics): (a != a) tests NaN.
    m[OpKind::Min] = variadic(
        "(({a}) != ({a}) ? ({a}) : ({b}) != ({b}) ? ({b}) : ({b}) < ({a}) ? ({b}) : ({a}))");
    m[OpKind::Max] = variadic(
        "(({a}) != ({a}) ? ({a}) : ({b}) != ({b}) ? ({b}) : ({a}) < ({b}) ? ({b}) : ({a}))");
    m[OpKind::Sum] = variadic("({a} + {b})");
    m[OpKind::Mean] = variadic("({a} + {b})", true);
    // Unary math.
    m[OpKind::Sqrt] = unary("sqrt({x})");
    m[OpKind::Exp] = unary("exp({x})");
    m[OpKind::Log] = unary("log({x})");
    m[OpKind::Neg] = unary("(-{x})");
    m[OpKind::Abs] = unary("fabs({x})");
    m[OpKind::Reciprocal] = unary("(1.0f / {x})");
    m[OpKind::Floor] = unary("floor({x})");
    m[OpKind::Ceil] = unary("ceil({x})");
    m[OpKind::Round] = unary("rint({x})"); // halves to even, as the reference's nearbyint
    m[OpKind::Sign] = unary("({x} > 0.0f ? 1.0f : {x} < 0.0f ? -1.0f : {x})");
    m[OpKind::Erf] = unary("erf({x})");
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
    // Activations.
    m[OpKind::Relu] = unary("({x} < 0.0f ? 0.0f : {x})");
    m[OpKind::LeakyRelu] = {Typing::Real, [](const Node& n, Operands o) {
                              return fmt::format("({0} < 0.0f ? {1} * {0} : {0})", o[0],
                                                 flit(attrsOf<AlphaAttrs>(n).alpha));
                            }};
    m[OpKind::PRelu] = binary("({a} < 0.0f ? {b} * {a} : {a})");
    // The reference's stable form: exp of a non-positive number only.
    m[OpKind::Sigmoid] =
        unary("({x} >= 0.0f ? 1.0f / (1.0f + exp(-{x})) : exp({x}) / (1.0f + exp({x})))");
    m[OpKind::Tanh] = unary("tanh({x})");
    m[OpKind::HardSigmoid] = {
        Typing::Real, [](const Node& n, Operands o) {
          const auto& a = attrsOf<HardSigmoidAttrs>(n);
          std::string v = fmt::format("({} * {} + {})", flit(a.alpha), o[0], flit(a.beta));
          return fmt::format("({0} < 0.0f ? 0.0f : {0} > 1.0f ? 1.0f : {0})", v);
        }};
    m[OpKind::HardSwish] = unary("({x} * ({x} / 6.0f + 0.5f < 0.0f ? 0.0f : {x} / 6.0f + 0.5f > "
                                 "1.0f ? 1.0f : {x} / 6.0f + 0.5f))");
    m[OpKind::Clip] = {
        Typing::Real, [](const Node& n, Operands o) {
          const auto& a = attrsOf<ClipAttrs>(n);
          std::string lo = o.size() > 1 && !o[1].empty() ? o[1] : a.min ? flit(*a.min) : "";
          std::string hi = o.size() > 2 && !o[2].empty() ? o[2] : a.max ? flit(*a.max) : "";
          std::string v = o[0];
          // Same order as the reference: max with min first, then min with max.
          if (!lo.empty()) v = fmt::format("({0} < {1} ? {1} : {0})", v, lo);
          if (!hi.empty()) v = fmt::format("({0} > {1} ? {1} : {0})", v, hi);
          return v;
        }};
    m[OpKind::Gelu] = {Typing::Real, [](const Node& n, Operands o) {
                         if (attrsOf<GeluAttrs>(n).approximate == GeluApproximation::Tanh)
                           return fmt::format("(0.5f * {0} * (1.0f + tanh(0.7978845608f * ({0} + "
                                              "0.044715f * {0} * {0} * {0}))))",
                                              o[0]);
                         return fmt::format("(0.5f * {0} * (1.0f + erf({0} * 0.70710678118f)))",
                                            o[0]);
                       }};
    m[OpKind::Elu] = {Typing::Real, [](const Node& n, Operands o) {
                        return fmt::format("({0} < 0.0f ? {1} * expm1({0}) : {0})", o[0],
                                           flit(attrsOf<AlphaAttrs>(n).alpha));
                      }};
    m[OpKind::Selu] = {Typing::Real, [](const Node& n, Operands o) {
                         const auto& a = attrsOf<SeluAttrs>(n);
                         return fmt::format("({0} > 0.0f ? {1} * {0} : {1} * ({2} * expm1({0})))",
                                            o[0], flit(a.gamma), flit(a.alpha));
                       }};
    m[OpKind::Celu] = {Typing::Real, [](const Node& n, Operands o) {
                         return fmt::format("({0} > 0.0f ? {0} : {1} * expm1({0} / {1}))", o[0],
                                            flit(attrsOf<AlphaAttrs>(n).alpha));
                       }};
    m[OpKind::Softplus] = unary("(({x} > 0.0f ? {x} : 0.0f) + log1p(exp(-fabs({x}))))");
    m[OpKind::Softsign] = unary("({x} / (1.0f + fabs({x})))");
    m[OpKind::ThresholdedRelu] = {Typing::Real, [](const Node& n, Operands o) {
                                    return fmt::format("({0} > {1} ? {0} : 0.0f)", o[0],
                                                       flit(attrsOf<AlphaAttrs>(n).alpha));
                                  }};
    m[OpKind::Mish] = unary("({x} * tanh(({x} > 0.0f ? {x} : 0.0f) + log1p(exp(-fabs({x})))))");
    m[OpKind::Shrink] = {Typing::Real, [](const Node& n, Operands o) {
                           const auto& a = attrsOf<ShrinkAttrs>(n);
                           return fmt::format("({0} < -{1} ? {0} + {2} : {0} > {1} ? {0} - {2} : "
                                              "0.0f)",
                                              o[0], flit(a.lambd), flit(a.bias));
                         }};
    // Predicates and logic.
    m[OpKind::Equal] = binary("({a} == {b})", Typing::Predicate);
    m[OpKind::Less] = binary("({a} < {b})", Typing::Predicate);
    m[OpKind::LessOrEqual] = binary("({a} <= {b})", Typing::Predicate);
    m[OpKind::Greater] = binary("({a} > {b})", Typing::Predicate);
    m[OpKind::GreaterOrEqual] = binary("({a} >= {b})", Typing::Predicate);
    m[OpKind::IsNaN] = {Typing::Predicate,
                        [](const Node&, Operands o) { return fmt::format("({0} != {0})", o[0]); }};
    m[OpKind::IsInf] = {Typing::Predicate, [](const Node& n, Operands o) {
                          const auto& a = attrsOf<IsInfAttrs>(n);
                          std::string pos = fmt::format("({} == INFINITY)", o[0]);
                          std::string neg = fmt::format("({} == -INFINITY)", o[0]);
                          if (a.detectPositive && a.detectNegative)
                            return fmt::format("({} || {})", pos, neg);
                          return a.detectPositive ? pos : a.detectNegative ? neg : "false";
                        }};
    m[OpKind::Not] = {Typing::Logic,
                      [](const Node&, Operands o) { return fmt::format("(!{})", o[0]); }};
    m[OpKind::And] = binary("({a} && {b})", Typing::Logic);
    m[OpKind::Or] = binary("({a} || {b})", Typing::Logic);
    m[OpKind::Xor] = binary("({a} != {b})", Typing::Logic);
    // Casts between float32, bool and integers where C's conversion is ONNX's: int/bool ->
    // float, float -> bool. (float -> int needs the reference's out-of-range rule.)
    m[OpKind::Cast] = {Typing::Cast, [](const Node& n, Operands o) {
                         DType to = n.output(0)->type().dtype;
                         if (to == DType::Bool) return fmt::format("({} != 0)", o[0]);
                         return fmt::format("(({}){})", cppTypeName(to), o[0]);
                       }};
    m[OpKind::Where] = {Typing::Where, [](const Node&, Operands o) {
                          return fmt::format("({} ? {} : {})", o[0], o[1], o[2]);
                        }};
    return m;
  }();
  return t;
}

bool isIntegerOrBool(DType t) {
  switch (t) {
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U64:
  case DType::U32:
  case DType::U16:
  case DType::U8:
  case DType::Bool:
    return true;
  default:
    return false;
  }
}

} // namespace

bool hasScalarExpr(const Node& n) {
  auto it = table().find(n.kind());
  if (it == table().end()) return false;
  auto allInputs = [&](auto pred) {
    for (Value* v : n.inputs())
      if (v && !pred(v->type().dtype)) return false;
    return true;
  };
  auto is = [](DType want) { return [want](DType t) { return t == want; }; };
  DType out = n.output(0)->type().dtype;
  if (n.outputs().size() != 1) return false;
  // Variadic Min/Max repeat their operands in the folded expression: keep it small.
  if ((n.kind() == OpKind::Min || n.kind() == OpKind::Max) && n.inputs().size() > 3) return false;
  switch (it->second.typing) {
  case Typing::Real:
    return out == DType::F32 && allInputs(is(DType::F32));
  case Typing::Predicate:
    return out == DType::Bool && allInputs(is(DType::F32));
  case Typing::Logic:
    return out == DType::Bool && allInputs(is(DType::Bool));
  case Typing::Cast: {
    DType in = n.input(0)->type().dtype;
    if (out == DType::F32) return in == DType::F32 || isIntegerOrBool(in);
    if (out == DType::Bool) return in == DType::F32 || isIntegerOrBool(in);
    return false;
  }
  case Typing::Where: {
    if (n.input(0)->type().dtype != DType::Bool) return false;
    DType a = n.input(1)->type().dtype;
    return a == out && n.input(2)->type().dtype == out &&
           (out == DType::F32 || isIntegerOrBool(out));
  }
  }
  return false;
}

std::string scalarExpr(const Node& n, std::span<const std::string> operands) {
  auto it = table().find(n.kind());
  TRIAD_ASSERT(it != table().end(), "no scalar expression for {}", opKindName(n.kind()));
  return it->second.expr(n, operands);
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

std::string scalarLiteral(const Tensor& t, int64_t index) {
  switch (t.dtype()) {
  case DType::F32:
    return flit(t.data<float>()[index]);
  case DType::Bool:
    return t.data<bool>()[index] ? "true" : "false";
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
                                             "atanh", "pow",  "tanh", "expm1", "log1p"};
  return f;
}

} // namespace triad::ir
