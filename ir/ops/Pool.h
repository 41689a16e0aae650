// Attributes of the windowed pooling ops (MaxPool, AveragePool, LpPool), shared by every
// target's lowering. GlobalAveragePool and GlobalMaxPool take no attributes.
//
// Layout: X is [N, C, D1, ..., Dk]; the window slides over the k spatial dims. Padding is explicit
// after parse (auto_pad resolved against the input shape; ceilMode then false).
#pragma once

#include "ir/Attrs.h"

namespace triad::ir {

struct PoolAttrs : AttrsOf<PoolAttrs> {
  std::vector<int64_t> kernel;    // k values
  std::vector<int64_t> strides;   // k values
  std::vector<int64_t> pads;      // 2k values: begin..., end...
  std::vector<int64_t> dilations; // k values
  /// Output size uses ceil instead of floor; a window starting in the end padding is dropped.
  bool ceilMode = false;
  /// AveragePool: divide by the window size including padded positions (those inside the
  /// explicit pads; never positions past them that ceil mode adds) instead of the valid count.
  bool countIncludePad = false;
  /// MaxPool's Indices output: 0 row-major, 1 column-major flattening within each [n, c] plane
  /// (the plane offset (n * C + c) * D1 * ... * Dk is added either way).
  int64_t storageOrder = 0;
  /// LpPool: the norm's exponent.
  int64_t p = 2;
  template <class F> void fields(F&& f) const {
    f("kernel", kernel);
    f("strides", strides);
    f("pads", pads);
    f("dilations", dilations);
    f("ceilMode", ceilMode);
    f("countIncludePad", countIncludePad);
    f("storageOrder", storageOrder);
    f("p", p);
  }
};

namespace ops {

/// Column-major offset of the row-major offset `rowMajor` within a plane of shape `sp`
/// (MaxPool's Indices with storage_order 1).
int64_t columnMajor(int64_t rowMajor, const Shape& sp);

/// Per output position: the number of window taps inside the input plus its explicit pads
/// (AveragePool's divisor with count_include_pad).
std::vector<int64_t> paddedWindowCounts(const PoolAttrs& a, const Shape& inSp, const Shape& outSp);

} // namespace ops

} // namespace triad::ir
