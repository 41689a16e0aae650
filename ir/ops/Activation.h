// Attributes of the activation ops, shared by every target's lowering. Relu, PRelu, Sigmoid,
// Tanh, HardSwish, Softplus, Softsign and Mish take no attributes (NoAttrs).
#pragma once

#include "ir/Attrs.h"

#include <optional>
#include <string_view>

namespace triad::ir {

/// One scalar parameter: LeakyRelu (slope for x < 0, default 0.01), Elu and Celu (alpha,
/// default 1), ThresholdedRelu (threshold, default 1).
struct AlphaAttrs : AttrsOf<AlphaAttrs> {
  float alpha = 1.0f;
  template <class F> void fields(F&& f) const { f("alpha", alpha); }
};

/// HardSigmoid: y = max(0, min(1, alpha * x + beta)).
struct HardSigmoidAttrs : AttrsOf<HardSigmoidAttrs> {
  float alpha = 0.2f;
  float beta = 0.5f;
  template <class F> void fields(F&& f) const {
    f("alpha", alpha);
    f("beta", beta);
  }
};

/// Selu: y = gamma * (x > 0 ? x : alpha * (exp(x) - 1)).
struct SeluAttrs : AttrsOf<SeluAttrs> {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  template <class F> void fields(F&& f) const {
    f("alpha", alpha);
    f("gamma", gamma);
  }
};

/// Shrink: y = x < -lambd ? x + bias : x > lambd ? x - bias : 0.
struct ShrinkAttrs : AttrsOf<ShrinkAttrs> {
  float bias = 0.0f;
  float lambd = 0.5f;
  template <class F> void fields(F&& f) const {
    f("bias", bias);
    f("lambd", lambd);
  }
};

/// Clip bounds given as attributes (ONNX opset < 11). From opset 11 the bounds are the optional
/// IR inputs 1 (min) and 2 (max) and these stay unset. An input, when present, wins over the
/// attribute; with neither, that side is unbounded. y = min(max(x, min), max).
struct ClipAttrs : AttrsOf<ClipAttrs> {
  std::optional<float> min;
  std::optional<float> max;
  template <class F> void fields(F&& f) const {
    f("min", min);
    f("max", max);
  }
};

enum class GeluApproximation : uint8_t { None, Tanh };
inline std::string_view toString(GeluApproximation a) {
  return a == GeluApproximation::None ? "none" : "tanh";
}

/// Gelu: exact y = x/2 * (1 + erf(x/sqrt(2))), or the tanh approximation
/// y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
struct GeluAttrs : AttrsOf<GeluAttrs> {
  GeluApproximation approximate = GeluApproximation::None;
  template <class F> void fields(F&& f) const { f("approximate", approximate); }
};

} // namespace triad::ir
