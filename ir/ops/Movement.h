// Attributes of the shape and data movement ops (Reshape, Transpose, Slice, Gather, Pad,
// Resize, ...), shared by every target's lowering.
//
// Everything here is resolved at import: shapes taken from shape operands, negative axes made
// positive, defaults filled in, opset differences gone. A lowering never recomputes them.
#pragma once

#include "ir/Attrs.h"
#include "ir/OpDef.h"

#include <optional>

namespace triad::ir {

/// Reshape: the resolved target shape (0 and -1 already replaced).
struct ReshapeAttrs : AttrsOf<ReshapeAttrs> {
  Shape shape;
  template <class F> void fields(F&& f) const { f("shape", shape); }
};

/// Flatten: output is [prod(dims[0:axis]), prod(dims[axis:])]; axis in [0, rank].
struct FlattenAttrs : AttrsOf<FlattenAttrs> {
  int64_t axis = 1;
  template <class F> void fields(F&& f) const { f("axis", axis); }
};

/// Transpose: output dim i is input dim perm[i] (always a full permutation).
struct TransposeAttrs : AttrsOf<TransposeAttrs> {
  std::vector<int64_t> perm;
  template <class F> void fields(F&& f) const { f("perm", perm); }
};

/// Squeeze / Unsqueeze: sorted, non-negative axes (of the input for Squeeze, of the output for
/// Unsqueeze).
struct AxesAttrs : AttrsOf<AxesAttrs> {
  std::vector<int64_t> axes;
  template <class F> void fields(F&& f) const { f("axes", axes); }
};

/// Ops with one non-negative axis: Concat, Gather, GatherElements.
struct AxisAttrs : AttrsOf<AxisAttrs> {
  int64_t axis = 0;
  template <class F> void fields(F&& f) const { f("axis", axis); }
};

/// Split: the size of every output along `axis` (one entry per output).
struct SplitAttrs : AttrsOf<SplitAttrs> {
  int64_t axis = 0;
  std::vector<int64_t> split;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("split", split);
  }
};

/// Slice, resolved for every input axis: output dim d reads input indices
/// starts[d] + i * steps[d] for i in [0, outShape[d]). Starts are already clamped.
struct SliceAttrs : AttrsOf<SliceAttrs> {
  std::vector<int64_t> starts, steps;
  Shape outShape;
  template <class F> void fields(F&& f) const {
    f("starts", starts);
    f("steps", steps);
    f("outShape", outShape);
  }
};

/// GatherND.
struct GatherNDAttrs : AttrsOf<GatherNDAttrs> {
  int64_t batchDims = 0;
  template <class F> void fields(F&& f) const { f("batchDims", batchDims); }
};

/// Expand: the resolved output shape (input broadcast with the shape operand).
/// Tile: the resolved output shape too (input dims times repeats).
struct OutShapeAttrs : AttrsOf<OutShapeAttrs> {
  Shape outShape;
  template <class F> void fields(F&& f) const { f("outShape", outShape); }
};

enum class PadMode { Constant, Reflect, Edge, Wrap };
inline std::string_view toString(PadMode m) {
  switch (m) {
  case PadMode::Constant:
    return "constant";
  case PadMode::Reflect:
    return "reflect";
  case PadMode::Edge:
    return "edge";
  case PadMode::Wrap:
    return "wrap";
  }
  return "?";
}

/// Pad: `pads` holds 2*rank entries [begin_0..begin_{r-1}, end_0..end_{r-1}] (negative values
/// crop); `value` is a scalar of the input's element type (used by Constant mode).
struct PadAttrs : AttrsOf<PadAttrs> {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> pads;
  Tensor value;
  template <class F> void fields(F&& f) const {
    f("mode", mode);
    f("pads", pads);
    f("value", value);
  }
};

/// Shape: the output holds input dims [start, end) (already clamped to [0, rank]).
struct ShapeAttrs : AttrsOf<ShapeAttrs> {
  int64_t start = 0, end = 0;
  template <class F> void fields(F&& f) const {
    f("start", start);
    f("end", end);
  }
};

/// Constant: the value (already converted from value_float(s)/value_int(s)).
/// ConstantOfShape: `value` is a one-element tensor, `shape` the output shape.
struct ConstantAttrs : AttrsOf<ConstantAttrs> {
  Tensor value;
  Shape shape; // ConstantOfShape only
  template <class F> void fields(F&& f) const {
    f("value", value);
    f("shape", shape);
  }
};

/// Range: output[i] = start + i * delta for i in [0, count); start and delta are scalars of
/// the output element type.
struct RangeAttrs : AttrsOf<RangeAttrs> {
  Tensor start, delta;
  int64_t count = 0;
  template <class F> void fields(F&& f) const {
    f("start", start);
    f("delta", delta);
    f("count", count);
  }
};

enum class DepthToSpaceMode { DCR, CRD };
inline std::string_view toString(DepthToSpaceMode m) {
  return m == DepthToSpaceMode::DCR ? "DCR" : "CRD";
}

/// DepthToSpace and SpaceToDepth (whose 'mode' exists from opset 28).
struct BlockAttrs : AttrsOf<BlockAttrs> {
  int64_t blocksize = 1;
  DepthToSpaceMode mode = DepthToSpaceMode::DCR;
  template <class F> void fields(F&& f) const {
    f("blocksize", blocksize);
    f("mode", mode);
  }
};

/// Trilu: keep elements with (col - row) >= k (upper) or <= k (lower) of the last two dims.
struct TriluAttrs : AttrsOf<TriluAttrs> {
  bool upper = true;
  int64_t k = 0;
  template <class F> void fields(F&& f) const {
    f("upper", upper);
    f("k", k);
  }
};

/// OneHot: `axis` is the output axis that holds `depth` classes (non-negative).
struct OneHotAttrs : AttrsOf<OneHotAttrs> {
  int64_t axis = -1;
  int64_t depth = 0;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("depth", depth);
  }
};

/// EyeLike: ones on diagonal k of a 2-D tensor with the input's shape and element type `dtype`.
struct EyeLikeAttrs : AttrsOf<EyeLikeAttrs> {
  DType dtype = DType::F32;
  int64_t k = 0;
  template <class F> void fields(F&& f) const {
    f("dtype", dtypeName(dtype));
    f("k", k);
  }
};

enum class ResizeMode { Nearest, Linear, Cubic };
inline std::string_view toString(ResizeMode m) {
  switch (m) {
  case ResizeMode::Nearest:
    return "nearest";
  case ResizeMode::Linear:
    return "linear";
  case ResizeMode::Cubic:
    return "cubic";
  }
  return "?";
}

/// How an output coordinate maps back to an input coordinate (ONNX
/// coordinate_transformation_mode; Upsample and Resize-10 use Asymmetric).
enum class ResizeCoord {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNN,
  TfCropAndResize,
  HalfPixelSymmetric, // opset 19
};
inline std::string_view toString(ResizeCoord c) {
  switch (c) {
  case ResizeCoord::HalfPixel:
    return "half_pixel";
  case ResizeCoord::PytorchHalfPixel:
    return "pytorch_half_pixel";
  case ResizeCoord::AlignCorners:
    return "align_corners";
  case ResizeCoord::Asymmetric:
    return "asymmetric";
  case ResizeCoord::TfHalfPixelForNN:
    return "tf_half_pixel_for_nn";
  case ResizeCoord::TfCropAndResize:
    return "tf_crop_and_resize";
  case ResizeCoord::HalfPixelSymmetric:
    return "half_pixel_symmetric";
  }
  return "?";
}

/// Rounding of the input coordinate in nearest mode. Simple is the legacy rule of Upsample and
/// Resize-10 (floor when upsampling, ceil when downsampling an axis).
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };
inline std::string_view toString(NearestMode m) {
  switch (m) {
  case NearestMode::RoundPreferFloor:
    return "round_prefer_floor";
  case NearestMode::RoundPreferCeil:
    return "round_prefer_ceil";
  case NearestMode::Floor:
    return "floor";
  case NearestMode::Ceil:
    return "ceil";
  case NearestMode::Simple:
    return "simple";
  }
  return "?";
}

/// Resize and Upsample, resolved for every input axis: `scales[d]` is the scale used by the
/// coordinate transform (out/in when sizes were given), `outShape` the output shape, `roi`
/// 2*rank entries [starts..., ends...] (tf_crop_and_resize only; else empty).
struct ResizeAttrs : AttrsOf<ResizeAttrs> {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  float cubicCoeffA = -0.75f;
  bool excludeOutside = false;
  bool antialias = false;
  float extrapolationValue = 0.0f;
  std::vector<double> scales;
  std::vector<double> roi;
  Shape outShape;
  template <class F> void fields(F&& f) const {
    f("mode", mode);
    f("coord", coord);
    f("nearest", nearest);
    f("cubicCoeffA", cubicCoeffA);
    f("excludeOutside", excludeOutside);
    f("antialias", antialias);
    f("extrapolationValue", extrapolationValue);
    f("scales", scales);
    f("roi", roi);
    f("outShape", outShape);
  }
};

namespace ops {
/// dst[i] = src[map[i]] element-wise (byte copies, any dtype); map[i] < 0 writes `fill`'s only
/// element instead (fill must then be non-null and of dst's dtype).
void gatherElements(const Tensor& src, Tensor& dst, const std::vector<int64_t>& map,
                    const Tensor* fill = nullptr);
/// Resize's separable interpolation along one axis: for every output coordinate, the input
/// indices (clamped) and weights it sums, or `outside` (tf_crop_and_resize: the extrapolation
/// value). The reference kernel and code generators both start from these taps.
struct ResizeTap {
  int64_t index;
  double weight;
};
struct ResizeAxisTaps {
  std::vector<std::vector<ResizeTap>> taps; // per output coordinate
  std::vector<bool> outside;
};
ResizeAxisTaps resizeAxisTaps(const ResizeAttrs& a, size_t axis, int64_t inDim, int64_t outDim,
                              size_t rank);
/// The same taps flattened into the tables generated code indexes (CPU and OpenCL): output
/// coordinate o of the axis sums taps starts[o] .. starts[o + 1] - 1, each reading the input at
/// element offset offsets[k] (index * the axis's stride in `x`) with weights[k]. An identity
/// axis (same size, every coordinate reading its own with weight 1) has no tables.
struct ResizeAxisTable {
  bool identity = false;
  bool anyOutside = false;
  std::vector<int64_t> starts{0}, offsets;
  std::vector<double> weights;
  std::vector<int> outside; // 1 where the coordinate takes the extrapolation value
};
std::vector<ResizeAxisTable> resizeAxisTables(const ResizeAttrs& a, const Shape& x, const Shape& y);
/// Registration helpers of the Movement family split over several files.
void registerIndexingOps(OpTable& table); // Gather*, Pad, OneHot, Trilu, EyeLike, D2S, S2D
void registerResizeOps(OpTable& table);   // Resize, Upsample
} // namespace ops

} // namespace triad::ir
