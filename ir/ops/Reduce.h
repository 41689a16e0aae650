// Attributes of the reduction ops (Reduce*, ArgMax/ArgMin, CumSum), shared by every target's
// lowering. Axes are resolved at import: non-negative, sorted, opset differences gone.
#pragma once

#include "ir/Attrs.h"

namespace triad::ir {

/// Reduce*: the axes actually reduced (sorted, non-negative). Empty means "no reduction" (the
/// op is then an identity, as with noop_with_empty_axes=1); "all axes" is spelled out.
struct ReduceAttrs : AttrsOf<ReduceAttrs> {
  std::vector<int64_t> axes;
  bool keepdims = true;
  template <class F> void fields(F&& f) const {
    f("axes", axes);
    f("keepdims", keepdims);
  }
};

/// ArgMax / ArgMin over one non-negative axis; ties resolve to the first index unless
/// selectLastIndex.
struct ArgReduceAttrs : AttrsOf<ArgReduceAttrs> {
  int64_t axis = 0;
  bool keepdims = true;
  bool selectLastIndex = false;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("keepdims", keepdims);
    f("selectLastIndex", selectLastIndex);
  }
};

/// CumSum along a non-negative axis (the ONNX 'axis' input, a shape operand).
struct CumSumAttrs : AttrsOf<CumSumAttrs> {
  int64_t axis = 0;
  bool exclusive = false;
  bool reverse = false;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("exclusive", exclusive);
    f("reverse", reverse);
  }
};

} // namespace triad::ir
