// Resize (opsets 10 to 19 and later) and Upsample (opsets 7, 9), which maps onto the same kernel.
// Registered from registerMovementOps (Movement.cpp).
//
// The kernel follows the ONNX reference implementation (onnx/reference/ops/op_resize.py): the
// interpolation is separable, so every output coordinate of every axis gets a list of
// (input index, weight) taps, and an output element is the weighted sum over the tensor product
// of its axes' taps. Coordinates and weights are computed in double.
#include "ir/ops/Movement.h"
#include "ir/ops/OpUtil.h"

#include <limits>

namespace triad::ir {
using namespace ops;

namespace {

ResizeMode parseMode(const AttrReader& attrs, bool allowCubic) {
  std::string m = allowCubic ? enumAttr(attrs, "mode", "nearest", {"nearest", "linear", "cubic"})
                             : enumAttr(attrs, "mode", "nearest", {"nearest", "linear"});
  return m == "nearest"  ? ResizeMode::Nearest
         : m == "linear" ? ResizeMode::Linear
                         : ResizeMode::Cubic;
}

// Resize-11+: roi, scales, sizes are inputs 1..3; Resize-10: scales is input 1.
std::shared_ptr<const Attrs> parseResize(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  int64_t r = int64_t(in.size());
  auto a = std::make_shared<ResizeAttrs>();
  if (ctx.opset < 11) {
    a->mode = parseMode(ctx.attrs, false);
    a->coord = ResizeCoord::Asymmetric;
    a->nearest = NearestMode::Simple;
    auto scales = constDoubles(ctx, 1);
    if (!scales) invalid("input 'scales' is required");
    if (int64_t(scales->size()) != r)
      invalid("input 'scales' has {} entries, the input has rank {}", scales->size(), r);
    a->scales = *scales;
    for (size_t d = 0; d < in.size(); ++d) {
      a->outShape.push_back(scaledDim(in[d], a->scales[d], "input 'scales'"));
    }
    return a;
  }
  a->mode = parseMode(ctx.attrs, true);
  // half_pixel_symmetric exists from opset 19.
  std::string coord =
      ctx.opset >= 19
          ? enumAttr(ctx.attrs, "coordinate_transformation_mode", "half_pixel",
                     {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"})
          : enumAttr(ctx.attrs, "coordinate_transformation_mode", "half_pixel",
                     {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                      "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  a->coord = coord == "half_pixel"             ? ResizeCoord::HalfPixel
             : coord == "pytorch_half_pixel"   ? ResizeCoord::PytorchHalfPixel
             : coord == "align_corners"        ? ResizeCoord::AlignCorners
             : coord == "asymmetric"           ? ResizeCoord::Asymmetric
             : coord == "tf_half_pixel_for_nn" ? ResizeCoord::TfHalfPixelForNN
             : coord == "half_pixel_symmetric" ? ResizeCoord::HalfPixelSymmetric
                                               : ResizeCoord::TfCropAndResize;
  std::string nm = enumAttr(ctx.attrs, "nearest_mode", "round_prefer_floor",
                            {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  a->nearest = nm == "round_prefer_floor"  ? NearestMode::RoundPreferFloor
               : nm == "round_prefer_ceil" ? NearestMode::RoundPreferCeil
               : nm == "floor"             ? NearestMode::Floor
                                           : NearestMode::Ceil;
  a->cubicCoeffA = ctx.attrs.getFloat("cubic_coeff_a", -0.75f);
  a->excludeOutside = ctx.attrs.getInt("exclude_outside", 0) != 0;
  a->extrapolationValue = ctx.attrs.getFloat("extrapolation_value", 0.0f);
  a->antialias = ctx.attrs.getInt("antialias", 0) != 0;
  if (a->antialias && a->mode == ResizeMode::Nearest)
    unsupported("attribute 'antialias' = 1 with mode 'nearest'");
  std::string policy = enumAttr(ctx.attrs, "keep_aspect_ratio_policy", "stretch",
                                {"stretch", "not_larger", "not_smaller"});

  std::vector<int64_t> axes;
  if (auto ax = ctx.attrs.getInts("axes"))
    axes = normalizeAxes(*ax, r, "axes");
  else
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  size_t na = axes.size();

  auto scales = constDoubles(ctx, 2);
  auto sizes = constInts(ctx, 3);
  if (scales && scales->empty()) scales.reset();
  if (sizes && sizes->empty()) sizes.reset();
  if (bool(scales) == bool(sizes))
    invalid("exactly one of the inputs 'scales' and 'sizes' must be given");

  a->scales.assign(size_t(r), 1.0);
  a->outShape = in;
  if (sizes) {
    if (sizes->size() != na)
      invalid("input 'sizes' has {} entries, expected {}", sizes->size(), na);
    for (size_t i = 0; i < na; ++i) {
      size_t d = size_t(axes[i]);
      if ((*sizes)[i] < 0) invalid("input 'sizes' has a negative entry {}", (*sizes)[i]);
      if (in[d] == 0) invalid("cannot resize axis {} of size 0", d);
      a->outShape[d] = (*sizes)[i];
      a->scales[d] = double((*sizes)[i]) / double(in[d]);
    }
    if (policy != "stretch") {
      double s = a->scales[size_t(axes[0])];
      for (int64_t d : axes)
        s = policy == "not_larger" ? std::min(s, a->scales[size_t(d)])
                                   : std::max(s, a->scales[size_t(d)]);
      for (int64_t d : axes) {
        a->scales[size_t(d)] = s;
        a->outShape[size_t(d)] = int64_t(s * double(in[size_t(d)]) + 0.5); // round half up
      }
    }
  } else {
    if (scales->size() != na)
      invalid("input 'scales' has {} entries, expected {}", scales->size(), na);
    for (size_t i = 0; i < na; ++i) {
      size_t d = size_t(axes[i]);
      a->scales[d] = (*scales)[i];
      a->outShape[d] = scaledDim(in[d], (*scales)[i], "input 'scales'");
    }
  }
  if (a->coord == ResizeCoord::TfCropAndResize) {
    auto roi = constDoubles(ctx, 1);
    if (!roi || roi->size() != 2 * na)
      invalid("coordinate_transformation_mode 'tf_crop_and_resize' needs input 'roi' with {} "
              "entries",
              2 * na);
    a->roi.assign(size_t(r), 0.0);
    a->roi.resize(size_t(2 * r), 1.0);
    for (size_t i = 0; i < na; ++i) {
      a->roi[size_t(axes[i])] = (*roi)[i];
      a->roi[size_t(axes[i] + r)] = (*roi)[i + na];
    }
  }
  return a;
}

// Upsample-7 (scales attribute) and Upsample-9 (scales input 1): asymmetric coordinates.
std::shared_ptr<const Attrs> parseUpsample(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  auto a = std::make_shared<ResizeAttrs>();
  a->mode = parseMode(ctx.attrs, false);
  a->coord = ResizeCoord::Asymmetric;
  a->nearest = NearestMode::Simple;
  std::optional<std::vector<double>> scales;
  if (ctx.opset < 9) {
    if (auto f = ctx.attrs.getFloats("scales")) scales = std::vector<double>(f->begin(), f->end());
  } else {
    scales = constDoubles(ctx, 1);
  }
  if (!scales) invalid("'scales' is required");
  if (scales->size() != in.size())
    invalid("'scales' has {} entries, the input has rank {}", scales->size(), in.size());
  a->scales = *scales;
  for (size_t d = 0; d < in.size(); ++d) {
    if (a->scales[d] < 1) invalid("'scales' entry {} is below 1", a->scales[d]);
    a->outShape.push_back(scaledDim(in[d], a->scales[d], "'scales'"));
  }
  return a;
}

std::vector<TensorType> inferResize(const InferContext& ctx) {
  const auto& a = ctx.as<ResizeAttrs>();
  const TensorType& in = ctx.in(0);
  if (a.outShape.size() != in.shape.size())
    invalid("resize of rank {} applied to {}", a.outShape.size(), shapeToString(in.shape));
  if (in.dtype == DType::Bool || in.dtype == DType::Fixed)
    unsupported("Resize on {} is not supported", dtypeName(in.dtype));
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (in.shape[d] == 0 && a.outShape[d] != 0) invalid("cannot resize axis {} of size 0", d);
  TensorType out = in;
  out.shape = a.outShape;
  return {out};
}

// ---- kernel ------------------------------------------------------------------------------------

using Tap = ResizeTap;
using AxisTaps = ResizeAxisTaps;

std::vector<double> coefficients(const ResizeAttrs& a, double ratio, double scale, bool integral) {
  switch (a.mode) {
  case ResizeMode::Nearest: {
    if (integral) return {0, 1};
    bool up = false;
    switch (a.nearest) {
    case NearestMode::RoundPreferFloor:
      up = ratio > 0.5;
      break;
    case NearestMode::RoundPreferCeil:
      up = ratio >= 0.5;
      break;
    case NearestMode::Floor:
      up = false;
      break;
    case NearestMode::Ceil:
      up = true;
      break;
    case NearestMode::Simple:
      up = scale < 1.0;
      break;
    }
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  case ResizeMode::Linear: {
    if (!a.antialias) return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = int64_t(std::floor(-1 / s)) + 1;
    int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      double v = std::clamp(1 - std::abs((double(i) - ratio) * s), 0.0, 1.0);
      c.push_back(v);
      sum += v;
    }
    for (double& v : c)
      v /= sum;
    return c;
  }
  case ResizeMode::Cubic: {
    double A = a.cubicCoeffA;
    if (!a.antialias) {
      double r = ratio, q = 1 - ratio;
      return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
              ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * q - (A + 3)) * q * q + 1,
              ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
    }
    double s = std::min(scale, 1.0);
    auto W = [&](double x) {
      x = std::abs(x);
      if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
      if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0.0;
    };
    int64_t iStart = int64_t(std::floor(-2 / s)) + 1, iEnd = 2 - iStart;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = iStart; i < iEnd; ++i) {
      c.push_back(W(s * (double(i) - ratio)));
      sum += c.back();
    }
    for (double& v : c)
      v /= sum;
    return c;
  }
  }
  return {};
}

AxisTaps axisTaps(const ResizeAttrs& a, size_t d, int64_t inDim, int64_t outDim, size_t rank) {
  AxisTaps t;
  double scale = a.scales[d];
  double in = double(inDim);
  double outW = scale * in; // the reference uses the real-valued output length
  for (int64_t xo = 0; xo < outDim; ++xo) {
    double x = double(xo), xi = 0;
    bool outside = false;
    switch (a.coord) {
    case ResizeCoord::HalfPixel:
      xi = (x + 0.5) / scale - 0.5;
      break;
    case ResizeCoord::PytorchHalfPixel:
      xi = outW == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
      break;
    case ResizeCoord::AlignCorners:
      xi = outW == 1 ? 0 : x * (in - 1) / (outW - 1);
      break;
    case ResizeCoord::Asymmetric:
      xi = x / scale;
      break;
    case ResizeCoord::TfHalfPixelForNN:
      xi = (x + 0.5) / scale;
      break;
    case ResizeCoord::HalfPixelSymmetric: {
      // half_pixel, shifted so that the centre of the input maps to the centre of the output
      // when the integer output length differs from the real one.
      double center = in / 2;
      xi = center * (1 - double(outDim) / outW) + (x + 0.5) / scale - 0.5;
      break;
    }
    case ResizeCoord::TfCropAndResize: {
      double s = a.roi[d], e = a.roi[d + rank];
      xi = outW == 1 ? (e - s) * (in - 1) / 2 : x * (e - s) * (in - 1) / (outW - 1);
      xi += s * (in - 1);
      outside = xi < 0 || xi > in - 1;
      break;
    }
    }
    t.outside.push_back(outside);
    std::vector<Tap> taps;
    if (!outside) {
      bool integral = xi == std::floor(xi);
      double ratio = integral ? 1.0 : xi - std::floor(xi);
      std::vector<double> c = coefficients(a, ratio, scale, integral);
      int64_t n = int64_t(c.size());
      TRIAD_ASSERT(n % 2 == 0, "odd tap count");
      // The n nearest indices to xi on the edge-padded axis, preferring lower ones (see
      // _get_neighbor in the reference): a window starting m-1 below x0 = xi - ratio.
      int64_t pad = (n + 1) / 2, limit = inDim + 2 * pad;
      int64_t x0 = int64_t(std::llround(xi - ratio)) + pad;
      int64_t ws = std::clamp<int64_t>(x0 - n / 2 + 1, 0, limit - n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t idx = ws + i - pad;
        if (a.excludeOutside && (idx < 0 || idx >= inDim)) c[size_t(i)] = 0;
        sum += c[size_t(i)];
      }
      for (int64_t i = 0; i < n; ++i) {
        double w = a.excludeOutside ? c[size_t(i)] / sum : c[size_t(i)];
        if (w != 0) taps.push_back({std::clamp<int64_t>(ws + i - pad, 0, inDim - 1), w});
      }
    }
    t.taps.push_back(std::move(taps));
  }
  return t;
}

template <typename T> void resizeKernel(const ResizeAttrs& a, const Tensor& X, Tensor& Y) {
  const Shape& in = X.shape();
  const Shape& out = Y.shape();
  size_t r = in.size();
  std::vector<AxisTaps> axes;
  for (size_t d = 0; d < r; ++d)
    axes.push_back(axisTaps(a, d, in[d], out[d], r));
  std::vector<int64_t> st = stridesOf(in);
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  std::vector<int64_t> idx(r, 0);
  int64_t n = numElements(out);
  // Weighted sum over the tensor product of the taps of axes d..r-1.
  auto sum = [&](auto& self, size_t d, int64_t off) -> double {
    if (d == r) return double(px[off]);
    double acc = 0;
    for (const Tap& t : axes[d].taps[size_t(idx[d])])
      acc += t.weight * self(self, d + 1, off + t.index * st[d]);
    return acc;
  };
  for (int64_t o = 0; o < n; ++o) {
    bool outside = false;
    for (size_t d = 0; d < r; ++d)
      outside = outside || axes[d].outside[size_t(idx[d])];
    double v = outside ? double(a.extrapolationValue) : sum(sum, 0, 0);
    if constexpr (std::is_same_v<T, Half>)
      py[o] = Half(float(v));
    else if constexpr (std::is_integral_v<T>) // saturate (cubic overshoots), then truncate
      py[o] = static_cast<T>(std::clamp(v, double(std::numeric_limits<T>::lowest()),
                                        double(std::numeric_limits<T>::max())));
    else
      py[o] = static_cast<T>(v);
    for (int64_t d = int64_t(r) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < out[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

void evalResize(const EvalContext& ctx) {
  const auto& a = ctx.as<ResizeAttrs>();
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      TRIAD_ASSERT(false, "Resize on bool");
    else
      resizeKernel<T>(a, ctx.in(0), ctx.out(0));
  });
}

} // namespace

namespace ops {

ResizeAxisTaps resizeAxisTaps(const ResizeAttrs& a, size_t axis, int64_t inDim, int64_t outDim,
                              size_t rank) {
  return axisTaps(a, axis, inDim, outDim, rank);
}

std::vector<ResizeAxisTable> resizeAxisTables(const ResizeAttrs& a, const Shape& x,
                                              const Shape& y) {
  size_t r = x.size();
  std::vector<int64_t> xs = stridesOf(x);
  std::vector<ResizeAxisTable> tables(r);
  for (size_t d = 0; d < r; ++d) {
    ResizeAxisTaps t = resizeAxisTaps(a, d, x[d], y[d], r);
    ResizeAxisTable& tab = tables[d];
    bool id = x[d] == y[d];
    for (int64_t o = 0; o < y[d] && id; ++o)
      id = !t.outside[size_t(o)] && t.taps[size_t(o)].size() == 1 &&
           t.taps[size_t(o)][0].index == o && t.taps[size_t(o)][0].weight == 1.0;
    tab.identity = id;
    if (id) continue;
    for (int64_t o = 0; o < y[d]; ++o) {
      for (const ResizeTap& tap : t.taps[size_t(o)]) {
        tab.offsets.push_back(tap.index * xs[d]);
        tab.weights.push_back(tap.weight);
      }
      tab.starts.push_back(int64_t(tab.offsets.size()));
      tab.outside.push_back(t.outside[size_t(o)] ? 1 : 0);
      tab.anyOutside = tab.anyOutside || t.outside[size_t(o)];
    }
  }
  return tables;
}

void registerResizeOps(OpTable& table) {
  table.add({.kind = OpKind::Resize,
             .maxInputs = 4,
             .shapeOperands = {1, 2, 3},
             .sinceOpset = 10,
             .parse = parseResize,
             .infer = inferResize,
             .eval = evalResize});
  table.add({.kind = OpKind::Upsample,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 7,
             .parse = parseUpsample,
             .infer = inferResize,
             .eval = evalResize});
}

} // namespace ops
} // namespace triad::ir
