// Attributes and shared arithmetic of the integer quantization ops (QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger,
// ConvInteger): the int8 paths that the FPGA and CPU targets lower.
//
// Quantization is affine: real = (q - zero_point) * scale. Scales and zero points are ordinary
// IR inputs (they may be computed at run time, e.g. by DynamicQuantizeLinear); targets that need
// them constant check Value::isConstant themselves.
//
// QLinearConv and ConvInteger take ConvAttrs (ir/ops/Conv.h; auto_pad resolved into pads);
// QLinearMatMul, MatMulInteger and DynamicQuantizeLinear take no attributes.
#pragma once

#include "ir/Attrs.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace triad::ir {

/// Which scale / zero point applies to an element of x (QuantizeLinear, DequantizeLinear):
///   axis == -1                  per tensor: scale and zero point have one element;
///   axis >= 0, blockSize == 0   per axis: scale is [x.shape[axis]];
///   axis >= 0, blockSize > 0    blocked: scale has x's rank, with dim `axis` of size
///                               ceil(x.shape[axis] / blockSize) (element i of that dim uses
///                               block i / blockSize).
/// The zero point, when present, has the scale's shape.
struct QuantAxisAttrs : AttrsOf<QuantAxisAttrs> {
  int64_t axis = -1; // normalized against x's rank; -1: per tensor
  int64_t blockSize = 0;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("blockSize", blockSize);
  }
};

/// QuantizeLinear: y = saturate(roundHalfEven(x / scale) + zero_point), y of `outputType` (the
/// zero point's type when present; else output_dtype, default uint8).
struct QuantizeLinearAttrs : AttrsOf<QuantizeLinearAttrs> {
  int64_t axis = -1;
  int64_t blockSize = 0;
  DType outputType = DType::U8;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("blockSize", blockSize);
    f("outputType", dtypeName(outputType));
  }
};

namespace ops {

/// Round half to even (ONNX's rounding for every quantizing op), independent of the FP
/// environment's rounding mode.
template <typename F> F roundHalfEven(F v) {
  F r = std::round(v); // half away from zero
  if (std::fabs(v - std::trunc(v)) == F(0.5)) r = F(2) * std::round(v * F(0.5));
  return r;
}

/// saturate(roundHalfEven(v) + zeroPoint) into Q's range; NaN quantizes to the zero point.
template <typename Q, typename F> Q quantizeValue(F v, int64_t zeroPoint) {
  F r = (std::isnan(v) ? F(0) : roundHalfEven(v)) + F(zeroPoint);
  F lo = F(std::numeric_limits<Q>::min()), hi = F(std::numeric_limits<Q>::max());
  return static_cast<Q>(r < lo ? lo : r > hi ? hi : r);
}

} // namespace ops

} // namespace triad::ir
