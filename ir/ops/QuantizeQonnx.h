// QONNX's quantization ops (domain qonnx.custom_op.general, also finn.custom_op.general and
// onnx.brevitas): Quant, BipolarQuant and Trunc, as Brevitas and HGQ export them. They are
// "fake quantizers": float in, float out, every output on the grid (q - zero_point) · scale of a
// `bit_width`-bit integer q.
//
// The arithmetic follows QONNX's reference executor (numpy on float32 tensors) step for step,
// so that the interpreter matches it bit for bit:
//   Quant:  q = x / scale + zero_point (two float32 operations); 1-bit signed: q = q >= 0 ? 1 : -1;
//           else clamp q to [min_int, max_int] (bounds converted to float32), then round with
//           rounding_mode; y = (q - zero_point) · scale.
//   BipolarQuant: y = (x >= 0 ? 1 : -1) · scale.
//   Trunc:  q = roundHalfEven(x / scale + zero_point); t = 2^roundHalfEven(log2(out_scale /
//           scale)); q = q / t, clamped to out_bit_width's range, rounded with rounding_mode
//           (default FLOOR); y = (q - zero_point / t) · out_scale. (QONNX ignores the inputs
//           in_bit_width and out_zero_point; so does Triad.)
// min_int / max_int: signed [-2^(b-1) (+1 if narrow), 2^(b-1) - 1], unsigned [0, 2^b - 1
// (-1 if narrow)].
// Scale, zero point (and Trunc's out_scale) broadcast against x with numpy rules; bit widths are
// one-element tensors holding an integer in [1, 32].
#pragma once

#include "ir/Attrs.h"
#include "ir/ops/Quantize.h"

#include <cmath>
#include <cstdint>
#include <string_view>

namespace triad::ir {

/// rounding_mode of Quant and Trunc (names case-insensitive in the model). ROUND and HALF_EVEN
/// round half to even (numpy's round); UP / DOWN round away from / toward zero (DOWN is also
/// Brevitas' ROUND_TO_ZERO, which QONNX's executor does not name); HALF_UP / HALF_DOWN round to
/// nearest with ties away from / toward zero.
enum class QonnxRounding : uint8_t { HalfEven, Ceil, Floor, Up, Down, HalfUp, HalfDown };

inline std::string_view toString(QonnxRounding r) {
  switch (r) {
  case QonnxRounding::HalfEven:
    return "ROUND";
  case QonnxRounding::Ceil:
    return "CEIL";
  case QonnxRounding::Floor:
    return "FLOOR";
  case QonnxRounding::Up:
    return "UP";
  case QonnxRounding::Down:
    return "ROUND_TO_ZERO";
  case QonnxRounding::HalfUp:
    return "HALF_UP";
  case QonnxRounding::HalfDown:
    return "HALF_DOWN";
  }
  return "?";
}

/// Quant's and Trunc's attributes (Trunc's default rounding is FLOOR, Quant's ROUND).
struct QonnxQuantAttrs : AttrsOf<QonnxQuantAttrs> {
  bool isSigned = true;
  bool narrow = false;
  QonnxRounding rounding = QonnxRounding::HalfEven;
  template <class F> void fields(F&& f) const {
    f("signed", isSigned);
    f("narrow", narrow);
    f("rounding_mode", rounding);
  }
};

namespace ops {

/// Smallest and largest integer of a `bits`-bit quantizer (QONNX's min_int / max_int).
inline int64_t qonnxMinInt(bool isSigned, bool narrow, int bits) {
  if (!isSigned) return 0;
  return -(int64_t(1) << (bits - 1)) + (narrow ? 1 : 0);
}
inline int64_t qonnxMaxInt(bool isSigned, bool narrow, int bits) {
  if (!isSigned) return (int64_t(1) << bits) - (narrow ? 2 : 1);
  return (int64_t(1) << (bits - 1)) - 1;
}

/// numpy's sign: -1, 0 (+0 for either zero) or 1; NaN stays NaN.
template <typename F> F numpySign(F v) {
  return v > F(0) ? F(1) : v < F(0) ? F(-1) : v == F(0) ? F(0) : v;
}

/// Rounds v to an integer-valued F with mode r, with QONNX's numpy formulas (UP, HALF_UP and
/// HALF_DOWN as sign(v) · f(|v|), in F's precision, so their zeros and ties are numpy's).
template <typename F> F qonnxRound(F v, QonnxRounding r) {
  switch (r) {
  case QonnxRounding::HalfEven:
    return roundHalfEven(v);
  case QonnxRounding::Ceil:
    return std::ceil(v);
  case QonnxRounding::Floor:
    return std::floor(v);
  case QonnxRounding::Up:
    return numpySign(v) * std::ceil(std::fabs(v));
  case QonnxRounding::Down:
    return std::trunc(v);
  case QonnxRounding::HalfUp:
    return numpySign(v) * std::floor(std::fabs(v) + F(0.5));
  case QonnxRounding::HalfDown:
    return numpySign(v) * std::ceil(std::fabs(v) - F(0.5));
  }
  return v;
}

/// Quant on one element, in float32 as QONNX's executor computes it. lo/hi: qonnxMinInt /
/// qonnxMaxInt as float; bipolar: a signed 1-bit quantizer (QONNX maps it to ±1).
inline float qonnxQuant(float x, float scale, float zeroPoint, float lo, float hi, bool bipolar,
                        QonnxRounding r) {
  float q = x / scale;
  q = q + zeroPoint;
  if (bipolar) {
    q = q >= 0.0f ? 1.0f : -1.0f;
  } else {
    q = q > hi ? hi : q;
    q = q < lo ? lo : q;
    q = qonnxRound(q, r);
  }
  float y = q - zeroPoint;
  return y * scale;
}

} // namespace ops

} // namespace triad::ir
