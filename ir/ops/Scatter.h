// Attributes of the scatter, selection and sorting ops (ScatterElements, Scatter, ScatterND,
// Compress, TopK, ReverseSequence, MaxUnpool), shared by every target's lowering.
//
// Everything is resolved at import: negative axes made positive, shape operands (Compress's
// condition, TopK's K, MaxUnpool's output_shape) folded into attributes, opset differences gone.
#pragma once

#include "ir/Attrs.h"
#include "ir/OpDef.h"

#include <string_view>

namespace triad::ir {

/// How a scatter combines an update u with the current element e: None writes u (with
/// duplicate indices the last update in row-major order wins), Add e+u, Mul e*u, Max, Min.
enum class ScatterReduction : uint8_t { None, Add, Mul, Max, Min };

inline std::string_view toString(ScatterReduction r) {
  switch (r) {
  case ScatterReduction::None:
    return "none";
  case ScatterReduction::Add:
    return "add";
  case ScatterReduction::Mul:
    return "mul";
  case ScatterReduction::Max:
    return "max";
  case ScatterReduction::Min:
    return "min";
  }
  return "?";
}

/// ScatterElements and the opset 9/10 Scatter: updates[i] goes to data[i with i[axis] replaced
/// by indices[i]]. axis is non-negative.
struct ScatterElementsAttrs : AttrsOf<ScatterElementsAttrs> {
  int64_t axis = 0;
  ScatterReduction reduction = ScatterReduction::None;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("reduction", reduction);
  }
};

/// ScatterND: indices [..., k] address slices data[i0..ik-1, :, ...].
struct ScatterNDAttrs : AttrsOf<ScatterNDAttrs> {
  ScatterReduction reduction = ScatterReduction::None;
  template <class F> void fields(F&& f) const { f("reduction", reduction); }
};

/// Compress: keeps the slices `selected` (ascending positions along `axis`, taken from the
/// constant 'condition' input). axis == -1: the input is flattened first and `selected` are
/// element positions; the output is then 1-D.
struct CompressAttrs : AttrsOf<CompressAttrs> {
  int64_t axis = -1;
  std::vector<int64_t> selected;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("selected", selected);
  }
};

/// TopK: the k largest (or smallest) elements along `axis` (non-negative), always returned sorted
/// (best first, ties broken by the lower index, NaN ranks above every number); `sorted` only
/// records the ONNX attribute (unsorted order is unspecified there, so sorted output is valid).
struct TopKAttrs : AttrsOf<TopKAttrs> {
  int64_t k = 1;
  int64_t axis = -1;
  bool largest = true;
  bool sorted = true;
  template <class F> void fields(F&& f) const {
    f("k", k);
    f("axis", axis);
    f("largest", largest);
    f("sorted", sorted);
  }
};

/// ReverseSequence: per batch entry b, the first sequence_lens[b] entries along timeAxis are
/// reversed. batchAxis and timeAxis are 0 and 1 in some order.
struct ReverseSequenceAttrs : AttrsOf<ReverseSequenceAttrs> {
  int64_t batchAxis = 1;
  int64_t timeAxis = 0;
  template <class F> void fields(F&& f) const {
    f("batchAxis", batchAxis);
    f("timeAxis", timeAxis);
  }
};

/// MaxUnpool: Y (zeros, shape outShape) gets Y.flat[I[i]] = X[i]. The indices are flat indices
/// into outShape (what MaxPool on the original tensor returns). outShape is output_shape when
/// given, else per spatial dim (in - 1) * stride - padBegin - padEnd + kernel.
struct MaxUnpoolAttrs : AttrsOf<MaxUnpoolAttrs> {
  std::vector<int64_t> kernel, strides, pads; // pads: [begin..., end...]
  Shape outShape;
  template <class F> void fields(F&& f) const {
    f("kernel", kernel);
    f("strides", strides);
    f("pads", pads);
    f("outShape", outShape);
  }
};

} // namespace triad::ir
