// Attributes of the normalizations and the softmax-like ops, shared by every target's lowering.
#pragma once

#include "ir/Attrs.h"

namespace triad::ir {

/// BatchNormalization (inference: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel
/// of X [N, C, ...]) and InstanceNormalization (the same with mean/var of each [n, c] plane).
struct NormAttrs : AttrsOf<NormAttrs> {
  float epsilon = 1e-5f;
  template <class F> void fields(F&& f) const { f("epsilon", epsilon); }
};

/// LayerNormalization: normalizes over dims [axis, rank) of X; Scale and B broadcast to
/// X.shape[axis:]. Optional outputs Mean and InvStdDev are f32 with shape
/// X.shape[:axis] + [1] * (rank - axis). Statistics are computed in (at least) f32.
struct LayerNormAttrs : AttrsOf<LayerNormAttrs> {
  int64_t axis = 0; // normalized to [0, rank)
  float epsilon = 1e-5f;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("epsilon", epsilon);
  }
};

/// LpNormalization: X divided by its L1 or L2 norm along `axis` (zero where the norm is zero).
struct LpNormAttrs : AttrsOf<LpNormAttrs> {
  int64_t axis = 0; // normalized to [0, rank)
  int64_t p = 2;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("p", p);
  }
};

/// LRN across channels of X [N, C, ...]:
///   Y = X / (bias + alpha / size * sum_{c' in [c - (size-1)/2, c + ceil((size-1)/2)]}
///   X[c']^2)^beta
struct LRNAttrs : AttrsOf<LRNAttrs> {
  int64_t size = 1;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
  template <class F> void fields(F&& f) const {
    f("size", size);
    f("alpha", alpha);
    f("beta", beta);
    f("bias", bias);
  }
};

/// Softmax, LogSoftmax, Hardmax: the operation runs over the flattened contiguous dims `axes`
/// (ascending, normalized) for every index of the other dims. From opset 13 that is the single
/// `axis`; before, ONNX coerced X to 2-D at `axis`, i.e. axes = [axis, rank). Empty for a scalar.
struct SoftmaxAttrs : AttrsOf<SoftmaxAttrs> {
  std::vector<int64_t> axes;
  template <class F> void fields(F&& f) const { f("axes", axes); }
};

} // namespace triad::ir
