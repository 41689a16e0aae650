// Attributes of the convolutions (Conv, ConvTranspose), shared by every target's lowering, and
// the sliding-window helpers that the pooling family reuses.
//
// Layout: X is [N, C, D1, ..., Dk] (k >= 1 spatial dims). All padding is explicit after parse:
// `pads` holds k begin values followed by k end values, auto_pad already resolved against the
// input shape.
#pragma once

#include "ir/Attrs.h"
#include "ir/OpDef.h"

namespace triad::ir {

/// Conv: Y[n, m, o...] = B[m] + sum_{c in group(m), k...} X[n, c, o*s + k*d - padBegin] * W[m, c,
/// k]. W is [M, C/group, k1..kk].
struct ConvAttrs : AttrsOf<ConvAttrs> {
  std::vector<int64_t> kernel;    // k1..kk (from kernel_shape or W's shape)
  std::vector<int64_t> strides;   // k values
  std::vector<int64_t> pads;      // 2k values: begin..., end...
  std::vector<int64_t> dilations; // k values
  int64_t group = 1;
  template <class F> void fields(F&& f) const {
    f("kernel", kernel);
    f("strides", strides);
    f("pads", pads);
    f("dilations", dilations);
    f("group", group);
  }
};

/// ConvTranspose (the gradient of Conv): every input position i scatters into output positions
/// i*s + k*d - padBegin. W is [C, M/group, k1..kk]. Output spatial size per dim:
///   s*(in-1) + outputPadding + (k-1)*d + 1 - padBegin - padEnd.
/// output_shape and auto_pad are folded into `pads` at parse time (pads may then be negative,
/// which grows the output), so this formula always gives the output shape.
struct ConvTransposeAttrs : AttrsOf<ConvTransposeAttrs> {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> pads; // 2k values: begin..., end...
  std::vector<int64_t> dilations;
  std::vector<int64_t> outputPadding; // k values
  int64_t group = 1;
  template <class F> void fields(F&& f) const {
    f("kernel", kernel);
    f("strides", strides);
    f("pads", pads);
    f("dilations", dilations);
    f("outputPadding", outputPadding);
    f("group", group);
  }
};

namespace ops {

/// Strides, explicit pads and dilations of a sliding window, read from the ONNX attributes
/// strides / pads / dilations / auto_pad of Conv and the pooling ops.
struct WindowParams {
  std::vector<int64_t> strides, pads, dilations;
  bool autoPadded = false; // auto_pad was SAME_* or VALID (pooling then ignores ceil_mode)
};

/// Reads the window attributes for `kernel` over the input spatial dims `inSpatial`, resolving
/// auto_pad (SAME_UPPER/SAME_LOWER: output = ceil(in / stride); VALID: no padding) into explicit
/// pads. `readDilations` false: the op has no dilations attribute (all ones).
WindowParams parseWindow(const AttrReader& attrs, const Shape& inSpatial,
                         const std::vector<int64_t>& kernel, bool readDilations = true);

/// Output shape [N, M, out...] of a convolution of X [N, C, in...] with W [M, C/group, k...],
/// checking both against the attributes; errors name the inputs as `xName` / `wName` (ONNX calls
/// them X, W in Conv and x, w in ConvInteger/QLinearConv). Shared by every conv-like op.
Shape convOutputShape(const ConvAttrs& a, const TensorType& X, const TensorType& W,
                      std::string_view xName = "X", std::string_view wName = "W");

/// Output size of one spatial dim of a sliding window with explicit pads. In ceil mode a last
/// window that would start in the end padding is dropped (as PyTorch and ONNX Runtime do).
int64_t windowOutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t padBegin, int64_t padEnd, bool ceilMode = false);

/// For each kernel tap (row-major over `kernel`) and each position a of grid `from` (row-major),
/// the row-major index in grid `to` of a * stride + tap * dilation - padBegin per dim, or -1
/// where that falls outside `to`. Result: [numElements(kernel), numElements(from)].
/// Conv/pooling use it as from = output, to = input; ConvTranspose the other way round.
std::vector<int64_t> windowIndexTable(const Shape& from, const Shape& to,
                                      const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& strides,
                                      const std::vector<int64_t>& dilations,
                                      const std::vector<int64_t>& pads);

/// C[m, j] += sum_k A[m * am + k * ak] * B[k * ldb + j] for m < M, j < N (cache-tiled; the
/// summation order per element is k = 0, 1, ..., as in a plain loop).
void gemmAccumulate(int64_t M, int64_t N, int64_t K, const double* A, int64_t am, int64_t ak,
                    const double* B, int64_t ldb, double* C, int64_t ldc);

/// The input type of ONNX input `i` at parse time; throws when the frontend does not know it.
const TensorType& parseInputType(const ParseContext& ctx, size_t i, std::string_view what);

} // namespace ops

} // namespace triad::ir
