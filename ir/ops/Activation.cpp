// Activation ops: elementwise nonlinearities, most with scalar attributes.
//
// Like the elementwise family, each op is a functor run by the drivers of
// ir/ops/ElementwiseKernels.h (f16 computes in float, f32 in float, f64 in double, as ONNX
// Runtime does). Clip and PRelu take extra inputs and have their own shape rules.
#include "ir/ops/Activation.h"
#include "ir/ops/ElementwiseKernels.h"

#include <numbers>

namespace triad::ir {
using namespace ops;

namespace {

// Numerically stable forms: sigmoid never evaluates exp of a large positive number, and
// softplus(x) = max(x, 0) + log1p(exp(-|x|)) does not overflow for large x.
template <RealC T> T sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}
template <RealC T> T softplus(T x) {
  return (x > 0 ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
}

struct ReluOp {
  template <NumC T> T operator()(T x) const { return x < 0 ? T(0) : x; }
};
struct LeakyReluOp {
  float alpha;
  explicit LeakyReluOp(const AlphaAttrs& a) : alpha(a.alpha) {}
  template <RealC T> T operator()(T x) const { return x < 0 ? T(alpha) * x : x; }
};
// PRelu: y = x < 0 ? slope * x : x, slope unidirectionally broadcast to x.
struct PReluOp {
  template <RealC T> T operator()(T x, T slope) const { return x < 0 ? slope * x : x; }
  template <IntC T> T operator()(T x, T slope) const {
    return x < 0 ? T(WrapOf<T>(x) * WrapOf<T>(slope)) : x;
  }
};
struct SigmoidOp {
  template <RealC T> T operator()(T x) const { return sigmoid(x); }
};
struct TanhOp {
  template <RealC T> T operator()(T x) const { return std::tanh(x); }
};
// Written so that NaN propagates (std::min/max would drop it depending on argument order).
template <RealC T> T clamp01(T v) {
  return v < T(0) ? T(0) : v > T(1) ? T(1) : v;
}
struct HardSigmoidOp {
  float alpha, beta;
  explicit HardSigmoidOp(const HardSigmoidAttrs& a) : alpha(a.alpha), beta(a.beta) {}
  template <RealC T> T operator()(T x) const { return clamp01(T(alpha) * x + T(beta)); }
};
// HardSwish: x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
struct HardSwishOp {
  template <RealC T> T operator()(T x) const { return x * clamp01(x / T(6) + T(0.5)); }
};
struct GeluOp {
  GeluApproximation approximate;
  explicit GeluOp(const GeluAttrs& a) : approximate(a.approximate) {}
  template <RealC T> T operator()(T x) const {
    if (approximate == GeluApproximation::Tanh) {
      const T k = T(std::sqrt(2.0 / std::numbers::pi));
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
  }
};
struct EluOp {
  float alpha;
  explicit EluOp(const AlphaAttrs& a) : alpha(a.alpha) {}
  template <RealC T> T operator()(T x) const { return x < 0 ? T(alpha) * std::expm1(x) : x; }
};
struct SeluOp {
  float alpha, gamma;
  explicit SeluOp(const SeluAttrs& a) : alpha(a.alpha), gamma(a.gamma) {}
  template <RealC T> T operator()(T x) const {
    return x > 0 ? T(gamma) * x : T(gamma) * (T(alpha) * std::expm1(x));
  }
};
// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
struct CeluOp {
  float alpha;
  explicit CeluOp(const AlphaAttrs& a) : alpha(a.alpha) {}
  template <RealC T> T operator()(T x) const {
    return x > 0 ? x : T(alpha) * std::expm1(x / T(alpha));
  }
};
struct SoftplusOp {
  template <RealC T> T operator()(T x) const { return softplus(x); }
};
struct SoftsignOp {
  template <RealC T> T operator()(T x) const { return x / (T(1) + std::abs(x)); }
};
struct ThresholdedReluOp {
  float alpha;
  explicit ThresholdedReluOp(const AlphaAttrs& a) : alpha(a.alpha) {}
  template <RealC T> T operator()(T x) const { return x > T(alpha) ? x : T(0); }
};
struct MishOp {
  template <RealC T> T operator()(T x) const { return x * std::tanh(softplus(x)); }
};
// Swish (opset 24): x * sigmoid(alpha * x).
struct SwishOp {
  float alpha;
  explicit SwishOp(const AlphaAttrs& a) : alpha(a.alpha) {}
  template <RealC T> T operator()(T x) const { return x * sigmoid(T(alpha) * x); }
};
// Shrink on integers compares and offsets in double and truncates, like ONNX Runtime's
// float arithmetic followed by a cast.
struct ShrinkOp {
  float bias, lambd;
  explicit ShrinkOp(const ShrinkAttrs& a) : bias(a.bias), lambd(a.lambd) {}
  template <RealC T> T operator()(T x) const {
    return x < -T(lambd) ? x + T(bias) : x > T(lambd) ? x - T(bias) : T(0);
  }
  template <IntC T> T operator()(T x) const {
    double v = double(x);
    return v < -double(lambd)  ? realToInt<T>(v + double(bias))
           : v > double(lambd) ? realToInt<T>(v - double(bias))
                               : T(0);
  }
};

// --- parsers -----------------------------------------------------------------------------------

ParseFn parseAlpha(float dflt) {
  return [dflt](const ParseContext& ctx) -> std::shared_ptr<const Attrs> {
    auto a = std::make_shared<AlphaAttrs>();
    a->alpha = ctx.attrs.getFloat("alpha", dflt);
    return a;
  };
}

std::shared_ptr<const Attrs> parseHardSigmoid(const ParseContext& ctx) {
  auto a = std::make_shared<HardSigmoidAttrs>();
  a->alpha = ctx.attrs.getFloat("alpha", 0.2f);
  a->beta = ctx.attrs.getFloat("beta", 0.5f);
  return a;
}

std::shared_ptr<const Attrs> parseSelu(const ParseContext& ctx) {
  auto a = std::make_shared<SeluAttrs>();
  a->alpha = ctx.attrs.getFloat("alpha", a->alpha);
  a->gamma = ctx.attrs.getFloat("gamma", a->gamma);
  return a;
}

std::shared_ptr<const Attrs> parseShrink(const ParseContext& ctx) {
  auto a = std::make_shared<ShrinkAttrs>();
  a->bias = ctx.attrs.getFloat("bias", 0.0f);
  a->lambd = ctx.attrs.getFloat("lambd", 0.5f);
  return a;
}

std::shared_ptr<const Attrs> parseGelu(const ParseContext& ctx) {
  auto a = std::make_shared<GeluAttrs>();
  a->approximate = enumAttr(ctx.attrs, "approximate", "none", {"none", "tanh"}) == "tanh"
                       ? GeluApproximation::Tanh
                       : GeluApproximation::None;
  return a;
}

// --- PRelu -------------------------------------------------------------------------------------

std::vector<TensorType> inferPRelu(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const TensorType& slope = ctx.in(1);
  requireSameDType(x, slope, "inputs X and slope");
  requireAccepts<PReluOp, 2>(x, "input X");
  if (broadcastShapes(x.shape, slope.shape) != x.shape)
    invalid("slope {} does not broadcast to the input {}", shapeToString(slope.shape),
            shapeToString(x.shape));
  return {x};
}

// --- Clip --------------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseClip(const ParseContext& ctx) {
  auto a = std::make_shared<ClipAttrs>();
  if (ctx.opset < 11) {
    a->min = ctx.attrs.getFloat("min");
    a->max = ctx.attrs.getFloat("max");
  }
  return a;
}

struct ClipTypes {
  template <NumC T> T operator()(T x) const { return x; }
};

std::vector<TensorType> inferClip(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  requireAccepts<ClipTypes>(x, "input");
  const auto& a = ctx.as<ClipAttrs>();
  if ((a.min || a.max) && !isFloat(x.dtype))
    invalid("attribute bounds 'min'/'max' need a float input, got {}", dtypeName(x.dtype));
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!ctx.has(i)) continue;
    const char* name = i == 1 ? "min" : "max";
    requireSameDType(x, ctx.in(i), fmt::format("inputs 'input' and '{}'", name));
    if (ctx.in(i).numElements() != 1)
      invalid("input '{}' must be a scalar, has shape {}", name, shapeToString(ctx.in(i).shape));
  }
  return {x};
}

void evalClip(const EvalContext& ctx) {
  const auto& a = ctx.as<ClipAttrs>();
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    if constexpr (NumC<C>) {
      // Unbounded sides: infinities for floats (so that +-inf pass through), extremes for ints.
      C lo = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                  : std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::has_infinity ? std::numeric_limits<C>::infinity()
                                                  : std::numeric_limits<C>::max();
      if (ctx.has(1))
        lo = C(ctx.in(1).data<T>()[0]);
      else if (a.min)
        lo = C(*a.min);
      if (ctx.has(2))
        hi = C(ctx.in(2).data<T>()[0]);
      else if (a.max)
        hi = C(*a.max);
      // min(max(x, lo), hi): with lo > hi every element becomes hi (numpy.clip); NaN stays.
      mapUnary<T, T>(ctx.in(0), ctx.out(0), [lo, hi](T v) {
        C x = C(v);
        if (x < lo) x = lo;
        if (x > hi) x = hi;
        return T(x);
      });
    } else {
      TRIAD_ASSERT(false, "Clip on {}", dtypeName(ctx.in(0).dtype()));
    }
  });
}

} // namespace

void registerActivationOps(OpTable& table) {
  table.add(unaryOpDef<ReluOp>(OpKind::Relu, 1));
  table.add(unaryOpDef<LeakyReluOp, AlphaAttrs>(OpKind::LeakyRelu, 1, parseAlpha(0.01f)));
  table.add({.kind = OpKind::PRelu,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 6,
             .infer = inferPRelu,
             .eval = [](const EvalContext& ctx) { evalBinary(ctx, PReluOp{}); }});
  table.add(unaryOpDef<SigmoidOp>(OpKind::Sigmoid, 1));
  table.add(unaryOpDef<TanhOp>(OpKind::Tanh, 1));
  table.add(unaryOpDef<HardSigmoidOp, HardSigmoidAttrs>(OpKind::HardSigmoid, 1, parseHardSigmoid));
  table.add(unaryOpDef<HardSwishOp>(OpKind::HardSwish, 14));
  // Bounds are attributes before opset 11 and optional inputs 1 (min) and 2 (max) from 11.
  table.add({.kind = OpKind::Clip,
             .minInputs = 1,
             .maxInputs = 3,
             .sinceOpset = 6,
             .parse = parseClip,
             .infer = inferClip,
             .eval = evalClip});
  table.add(unaryOpDef<GeluOp, GeluAttrs>(OpKind::Gelu, 20, parseGelu));
  table.add(unaryOpDef<EluOp, AlphaAttrs>(OpKind::Elu, 1, parseAlpha(1.0f)));
  table.add(unaryOpDef<SeluOp, SeluAttrs>(OpKind::Selu, 1, parseSelu));
  table.add(unaryOpDef<CeluOp, AlphaAttrs>(OpKind::Celu, 12, parseAlpha(1.0f)));
  table.add(unaryOpDef<SoftplusOp>(OpKind::Softplus, 1));
  table.add(unaryOpDef<SoftsignOp>(OpKind::Softsign, 1));
  table.add(
      unaryOpDef<ThresholdedReluOp, AlphaAttrs>(OpKind::ThresholdedRelu, 10, parseAlpha(1.0f)));
  table.add(unaryOpDef<MishOp>(OpKind::Mish, 18));
  table.add(unaryOpDef<SwishOp, AlphaAttrs>(OpKind::Swish, 24, parseAlpha(1.0f)));
  table.add(unaryOpDef<ShrinkOp, ShrinkAttrs>(OpKind::Shrink, 9, parseShrink));
}

} // namespace triad::ir
