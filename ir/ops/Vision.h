// Attributes of the Vision family (sampling, image and linear-algebra ops), shared by every
// target's lowering. All ONNX strings, defaults, negative axes, shape operands and opset
// differences are resolved by the parsers in ir/ops/Vision.cpp and ir/ops/Einsum.cpp.
#pragma once

#include "ir/Attrs.h"

#include <string>
#include <string_view>
#include <vector>

namespace triad::ir {

class OpTable;
/// Registers Einsum and Det (ir/ops/Einsum.cpp); called by registerVisionOps.
void registerLinearAlgebraOps(OpTable& table);

/// GridSample interpolation. Opset 16 spells them bilinear/nearest/bicubic, opset 20
/// linear/nearest/cubic; both map here.
enum class GridSampleMode { Bilinear, Nearest, Bicubic };
inline std::string_view toString(GridSampleMode m) {
  switch (m) {
  case GridSampleMode::Bilinear:
    return "bilinear";
  case GridSampleMode::Nearest:
    return "nearest";
  case GridSampleMode::Bicubic:
    return "bicubic";
  }
  return "?";
}

/// How GridSample reads pixels outside the image.
enum class GridSamplePadding { Zeros, Border, Reflection };
inline std::string_view toString(GridSamplePadding p) {
  switch (p) {
  case GridSamplePadding::Zeros:
    return "zeros";
  case GridSamplePadding::Border:
    return "border";
  case GridSamplePadding::Reflection:
    return "reflection";
  }
  return "?";
}

/// GridSample: X [N, C, H, W], Grid [N, Ho, Wo, 2] holding normalized (x, y) in [-1, 1]
/// -> Y [N, C, Ho, Wo]. alignCorners: -1 and 1 are the centers of the corner pixels (else their
/// outer edges).
struct GridSampleAttrs : AttrsOf<GridSampleAttrs> {
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool alignCorners = false;
  template <class F> void fields(F&& f) const {
    f("mode", mode);
    f("padding", padding);
    f("alignCorners", alignCorners);
  }
};

enum class RoiPoolMode { Avg, Max };
inline std::string_view toString(RoiPoolMode m) {
  return m == RoiPoolMode::Avg ? "avg" : "max";
}

/// RoiAlign: X [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2) in input coordinates scaled by
/// spatialScale, batchIndices [R] (int64) -> Y [R, C, outputHeight, outputWidth].
/// halfPixel: shift ROI corners by -0.5 pixel (coordinate_transformation_mode "half_pixel", the
/// default from opset 16; opset 10 behaves as "output_half_pixel", i.e. no shift, and forces
/// malformed ROIs to 1x1). samplingRatio 0: adaptive ceil(roi_size / output_size) samples per bin.
/// Max mode follows ONNX Runtime and the ONNX reference: the maximum over samples of the
/// largest *weighted* bilinear corner term.
struct RoiAlignAttrs : AttrsOf<RoiAlignAttrs> {
  RoiPoolMode mode = RoiPoolMode::Avg;
  bool halfPixel = true;
  int64_t outputHeight = 1;
  int64_t outputWidth = 1;
  int64_t samplingRatio = 0;
  float spatialScale = 1.0f;
  template <class F> void fields(F&& f) const {
    f("mode", mode);
    f("halfPixel", halfPixel);
    f("outputHeight", outputHeight);
    f("outputWidth", outputWidth);
    f("samplingRatio", samplingRatio);
    f("spatialScale", spatialScale);
  }
};

/// Col2Im: input [N, C * prod(blockShape), L] -> output [N, C, *imageShape], summing the
/// sliding blocks back into the image (the inverse layout of im2col). imageShape and blockShape
/// come from the shape operands (inputs 1 and 2). pads: begins then ends, one per spatial dim.
struct Col2ImAttrs : AttrsOf<Col2ImAttrs> {
  std::vector<int64_t> imageShape, blockShape, dilations, pads, strides;
  template <class F> void fields(F&& f) const {
    f("imageShape", imageShape);
    f("blockShape", blockShape);
    f("dilations", dilations);
    f("pads", pads);
    f("strides", strides);
  }
};

namespace ops {
/// Col2Im's scatter table: for every (kernel offset k, sliding block l) pair, row-major
/// [prod(blockShape), prod(blocks)], the flat image position the input column adds to, or -1
/// where it falls into the padding. Shared by every (n, c) plane.
std::vector<int64_t> col2imTargets(const Col2ImAttrs& a);
} // namespace ops

/// CenterCropPad: for each axes[i] (normalized, distinct), center-crop or zero-pad the input to
/// sizes[i]. When the difference is odd, the crop keeps the extra element at the end and the
/// pad puts the extra zero at the end. sizes comes from the `shape` operand (input 1).
struct CenterCropPadAttrs : AttrsOf<CenterCropPadAttrs> {
  std::vector<int64_t> axes, sizes;
  template <class F> void fields(F&& f) const {
    f("axes", axes);
    f("sizes", sizes);
  }
};

/// GroupNormalization: X [N, C, ...] split into numGroups groups of C / numGroups channels;
/// each (n, group) is normalized with its own mean/variance, then scaled and shifted.
/// perChannelAffine false (opset 18): scale and bias are [numGroups]; true (opset 21): [C].
/// Statistics are computed in double (opset 21's stash_type asks for at least f32).
struct GroupNormAttrs : AttrsOf<GroupNormAttrs> {
  int64_t numGroups = 1;
  float epsilon = 1e-5f;
  bool perChannelAffine = false;
  template <class F> void fields(F&& f) const {
    f("numGroups", numGroups);
    f("epsilon", epsilon);
    f("perChannelAffine", perChannelAffine);
  }
};

/// MeanVarianceNormalization: Y = (X - mean) / (sqrt(var) + 1e-9) with mean and (biased)
/// variance over `axes` (normalized, ascending; ONNX default [0, 2, 3]).
struct MVNAttrs : AttrsOf<MVNAttrs> {
  std::vector<int64_t> axes;
  template <class F> void fields(F&& f) const { f("axes", axes); }
};

/// Einsum with the equation resolved against the input ranks: every subscript is a label id
/// (letters and each ellipsis dimension get distinct ids), so kernels never parse text.
/// inputLabels concatenates the labels of every input (input i has rank inputRanks[i], one label
/// per dim; a label repeated within an input takes a diagonal and its dims must agree).
/// outputLabels are distinct; all other labels are summed over. Across inputs a dim of size 1
/// broadcasts against the label's size (numpy semantics). Label ids: 'A'..'Z' -> 0..25,
/// 'a'..'z' -> 26..51 (so id order is ASCII order, used by implicit outputs), ellipsis dims ->
/// 52.. (right-aligned across inputs). `equation` is the text without spaces, for printing.
struct EinsumAttrs : AttrsOf<EinsumAttrs> {
  std::string equation;
  std::vector<int64_t> inputRanks, inputLabels, outputLabels;
  template <class F> void fields(F&& f) const {
    f("equation", equation);
    f("inputRanks", inputRanks);
    f("inputLabels", inputLabels);
    f("outputLabels", outputLabels);
  }
};

namespace ops {

/// Size of every label id of an Einsum (-1: unused) given its input shapes; dims of size 1
/// broadcast across inputs, a label repeated within one input needs equal dims.
std::vector<int64_t> einsumLabelSizes(const EinsumAttrs& a, const std::vector<Shape>& shapes);

/// How an Einsum iterates: the loop labels (the output's, then every other used label, summed),
/// each loop's extent, and per input the offset step of each loop (a label repeated in one
/// input adds up its strides: a diagonal; a broadcast dim of size 1 contributes 0).
struct EinsumLoops {
  std::vector<int64_t> labels, extent;
  std::vector<std::vector<int64_t>> stride; // [input][loop]
};
EinsumLoops einsumLoops(const EinsumAttrs& a, const std::vector<Shape>& shapes);

} // namespace ops

} // namespace triad::ir
