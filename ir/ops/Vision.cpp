// Vision ops: sampling (GridSample, RoiAlign), image layout (Col2Im, CenterCropPad) and the
// normalizations that ONNX defines as functions (GroupNormalization, MeanVarianceNormalization).
// Einsum and Det live in ir/ops/Einsum.cpp and are registered from here.
//
// Sampling kernels compute coordinates and interpolation weights in the input precision (float
// for f16/f32, double for f64) like ONNX Runtime, so that rounding (nearest mode) and floor
// decisions agree with it; normalization statistics are accumulated in double.
#include "ir/ops/Vision.h"
#include "ir/ops/OpUtil.h"

#include <fmt/ranges.h>
#include <numeric>

namespace triad::ir {
using namespace ops;

namespace {

/// Compute type of the sampling kernels for storage type T.
template <typename T>
using ComputeOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<int64_t>());
}

// ---------------------------------------------------------------------------------------------
// GridSample

std::shared_ptr<const Attrs> parseGridSample(const ParseContext& ctx) {
  auto a = std::make_shared<GridSampleAttrs>();
  // Opset 20 renamed bilinear/bicubic to linear/cubic (and allowed N-D inputs).
  std::string mode =
      ctx.opset >= 20 ? enumAttr(ctx.attrs, "mode", "linear", {"linear", "nearest", "cubic"})
                      : enumAttr(ctx.attrs, "mode", "bilinear", {"bilinear", "nearest", "bicubic"});
  a->mode = mode == "nearest"                        ? GridSampleMode::Nearest
            : (mode == "bicubic" || mode == "cubic") ? GridSampleMode::Bicubic
                                                     : GridSampleMode::Bilinear;
  std::string pad = enumAttr(ctx.attrs, "padding_mode", "zeros", {"zeros", "border", "reflection"});
  a->padding = pad == "zeros"    ? GridSamplePadding::Zeros
               : pad == "border" ? GridSamplePadding::Border
                                 : GridSamplePadding::Reflection;
  a->alignCorners = ctx.attrs.getInt("align_corners", 0) != 0;
  return a;
}

std::vector<TensorType> inferGridSample(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  const TensorType& G = ctx.in(1);
  requireFloat(X, "input X");
  requireFloat(G, "input grid");
  if (X.rank() != 4 && X.rank() >= 3 && X.rank() == G.rank())
    unsupported("input X has shape {}: only 4-D GridSample (2 spatial dims) is supported",
                shapeToString(X.shape));
  requireRank(X, 4, "input X");
  requireRank(G, 4, "input grid");
  if (G.shape[0] != X.shape[0] || G.shape[3] != 2)
    invalid("input grid {} must have shape [N, H_out, W_out, 2] with N = {} (from X {})",
            shapeToString(G.shape), X.shape[0], shapeToString(X.shape));
  return {TensorType{X.dtype, {X.shape[0], X.shape[1], G.shape[1], G.shape[2]}, {}}};
}

/// Maps x outside [lo, hi] back inside by reflecting at the borders as often as needed.
template <typename C> C reflect(C x, C lo, C hi) {
  C range = hi - lo;
  if (range <= C(0)) return lo; // a one-pixel image with align_corners
  if (x < lo) {
    C dx = lo - x;
    auto n = int64_t(dx / range);
    C r = dx - C(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    C dx = x - hi;
    auto n = int64_t(dx / range);
    C r = dx - C(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/// Keys cubic convolution coefficients (alpha = -0.75) for fractional offset t in [0, 1).
template <typename C> void cubicCoeffs(C t, C coeffs[4]) {
  const C A = C(-0.75);
  C x = std::abs(t);
  C x1 = x + 1, x2 = 1 - x, x3 = 2 - x;
  coeffs[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
  coeffs[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  coeffs[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  coeffs[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

template <typename T> void gridSampleKernel(const EvalContext& ctx) {
  using C = ComputeOf<T>;
  const auto& a = ctx.as<GridSampleAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& xs = X.shape();
  int64_t N = xs[0], Ch = xs[1], H = xs[2], W = xs[3];
  int64_t Ho = ctx.out(0).shape()[2], Wo = ctx.out(0).shape()[3];
  std::vector<double> grid = ctx.in(1).toDoubleVector(); // [N, Ho, Wo, 2], exact for any float
  const T* x = X.data<T>();
  T* y = ctx.out(0).data<T>();

  // The valid coordinate range: pixel centers with align_corners, else the outer pixel edges.
  C xMin = a.alignCorners ? C(0) : C(-0.5), xMax = a.alignCorners ? C(W - 1) : C(W) - C(0.5);
  C yMin = a.alignCorners ? C(0) : C(-0.5), yMax = a.alignCorners ? C(H - 1) : C(H) - C(0.5);
  auto denormalize = [&](C v, int64_t len) {
    return a.alignCorners ? (v + 1) / 2 * C(len - 1) : ((v + 1) * C(len) - 1) / 2;
  };

  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < Ch; ++c) {
      const T* img = x + (n * Ch + c) * H * W;
      // Pixel (r, col) with the padding mode applied to out-of-image positions.
      auto pixel = [&](int64_t r, int64_t col) -> C {
        switch (a.padding) {
        case GridSamplePadding::Zeros:
          return (r >= 0 && r < H && col >= 0 && col < W) ? C(img[r * W + col]) : C(0);
        case GridSamplePadding::Border:
          r = std::clamp<int64_t>(r, 0, H - 1);
          col = std::clamp<int64_t>(col, 0, W - 1);
          return C(img[r * W + col]);
        case GridSamplePadding::Reflection:
          col = int64_t(reflect(C(col), xMin, xMax));
          r = int64_t(reflect(C(r), yMin, yMax));
          return C(img[r * W + col]);
        }
        return C(0);
      };
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          size_t g = size_t(((n * Ho + oy) * Wo + ox) * 2);
          C gx = denormalize(C(grid[g]), W), gy = denormalize(C(grid[g + 1]), H);
          if (a.mode == GridSampleMode::Nearest) {
            gx = std::nearbyint(gx); // round half to even, like nearbyintf
            gy = std::nearbyint(gy);
          }
          if (gx < xMin || gx > xMax || gy < yMin || gy > yMax) {
            if (a.padding == GridSamplePadding::Border) {
              gx = std::clamp(gx, C(0), C(W - 1));
              gy = std::clamp(gy, C(0), C(H - 1));
            } else if (a.padding == GridSamplePadding::Reflection) {
              gx = reflect(gx, xMin, xMax);
              gy = reflect(gy, yMin, yMax);
            }
          }
          C v = 0;
          if (a.mode == GridSampleMode::Nearest) {
            v = pixel(int64_t(gy), int64_t(gx));
          } else if (a.mode == GridSampleMode::Bilinear) {
            auto x1 = int64_t(std::floor(gx)), y1 = int64_t(std::floor(gy));
            C dx1 = gx - C(x1), dx2 = C(x1 + 1) - gx;
            C dy1 = gy - C(y1), dy2 = C(y1 + 1) - gy;
            v = dy2 * (dx2 * pixel(y1, x1) + dx1 * pixel(y1, x1 + 1)) +
                dy1 * (dx2 * pixel(y1 + 1, x1) + dx1 * pixel(y1 + 1, x1 + 1));
          } else {
            // 4x4 neighbourhood whose second row/column holds floor(g).
            auto x0 = int64_t(std::floor(gx)) - 1, y0 = int64_t(std::floor(gy)) - 1;
            C cx[4], cy[4];
            cubicCoeffs(gx - C(x0) - 1, cx);
            cubicCoeffs(gy - C(y0) - 1, cy);
            for (int64_t i = 0; i < 4; ++i) {
              C row = 0;
              for (int64_t j = 0; j < 4; ++j)
                row += cx[j] * pixel(y0 + i, x0 + j);
              v += cy[i] * row;
            }
          }
          y[((n * Ch + c) * Ho + oy) * Wo + ox] = T(v);
        }
    }
}

void evalGridSample(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { gridSampleKernel<decltype(tag)>(ctx); });
}

// ---------------------------------------------------------------------------------------------
// RoiAlign

std::shared_ptr<const Attrs> parseRoiAlign(const ParseContext& ctx) {
  auto a = std::make_shared<RoiAlignAttrs>();
  a->mode = enumAttr(ctx.attrs, "mode", "avg", {"avg", "max"}) == "avg" ? RoiPoolMode::Avg
                                                                        : RoiPoolMode::Max;
  // Opset 10 had no coordinate_transformation_mode and behaved as "output_half_pixel".
  if (ctx.opset >= 16)
    a->halfPixel = enumAttr(ctx.attrs, "coordinate_transformation_mode", "half_pixel",
                            {"half_pixel", "output_half_pixel"}) == "half_pixel";
  else
    a->halfPixel = false;
  a->outputHeight = ctx.attrs.getInt("output_height", 1);
  a->outputWidth = ctx.attrs.getInt("output_width", 1);
  a->samplingRatio = ctx.attrs.getInt("sampling_ratio", 0);
  a->spatialScale = ctx.attrs.getFloat("spatial_scale", 1.0f);
  if (a->outputHeight < 1 || a->outputWidth < 1)
    invalid("attributes 'output_height' ({}) and 'output_width' ({}) must be >= 1", a->outputHeight,
            a->outputWidth);
  if (a->samplingRatio < 0)
    invalid("attribute 'sampling_ratio' ({}) must be >= 0", a->samplingRatio);
  return a;
}

std::vector<TensorType> inferRoiAlign(const InferContext& ctx) {
  const auto& a = ctx.as<RoiAlignAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& rois = ctx.in(1);
  const TensorType& idx = ctx.in(2);
  requireFloat(X, "input X");
  requireRank(X, 4, "input X");
  requireSameDType(X, rois, "inputs X and rois");
  requireRank(rois, 2, "input rois");
  requireRank(idx, 1, "input batch_indices");
  if (idx.dtype != DType::I64)
    invalid("input batch_indices has element type {}; it must be i64", dtypeName(idx.dtype));
  if (rois.shape[1] != 4 || idx.shape[0] != rois.shape[0])
    invalid("input rois {} must have shape [num_rois, 4] and batch_indices {} shape [num_rois]",
            shapeToString(rois.shape), shapeToString(idx.shape));
  return {TensorType{X.dtype, {rois.shape[0], X.shape[1], a.outputHeight, a.outputWidth}, {}}};
}

/// One bilinear sample: four flat positions in a [H, W] plane and their weights.
template <typename C> struct BilinearSample {
  int64_t pos[4] = {0, 0, 0, 0};
  C w[4] = {0, 0, 0, 0};
};

template <typename T> void roiAlignKernel(const EvalContext& ctx) {
  using C = ComputeOf<T>;
  const auto& a = ctx.as<RoiAlignAttrs>();
  const Tensor& X = ctx.in(0);
  int64_t N = X.shape()[0], Ch = X.shape()[1], H = X.shape()[2], W = X.shape()[3];
  int64_t R = ctx.in(1).shape()[0], PH = a.outputHeight, PW = a.outputWidth;
  const T* x = X.data<T>();
  const T* rois = ctx.in(1).data<T>();
  const int64_t* batch = ctx.in(2).data<int64_t>();
  T* y = ctx.out(0).data<T>();
  C scale = C(a.spatialScale), offset = a.halfPixel ? C(0.5) : C(0);

  for (int64_t r = 0; r < R; ++r) {
    int64_t b = batch[r];
    if (b < 0 || b >= N)
      fail(ErrorKind::Runtime, "batch_indices[{}] = {} is out of range for X with batch {}", r, b,
           N);
    C startW = C(rois[r * 4 + 0]) * scale - offset, startH = C(rois[r * 4 + 1]) * scale - offset;
    C endW = C(rois[r * 4 + 2]) * scale - offset, endH = C(rois[r * 4 + 3]) * scale - offset;
    C roiW = endW - startW, roiH = endH - startH;
    if (!a.halfPixel) { // legacy behaviour: malformed ROIs become 1x1
      roiW = std::max(roiW, C(1));
      roiH = std::max(roiH, C(1));
    }
    C binH = roiH / C(PH), binW = roiW / C(PW);
    // Samples per bin in each direction: fixed, or adaptive to the bin size.
    // An empty, inverted or NaN ROI (possible with half_pixel) has no adaptive samples: its
    // bins are 0, as in ONNX Runtime.
    auto adaptive = [](C extent) { return extent > C(0) ? int64_t(std::ceil(extent)) : 0; };
    int64_t gridH = a.samplingRatio > 0 ? a.samplingRatio : adaptive(roiH / C(PH));
    int64_t gridW = a.samplingRatio > 0 ? a.samplingRatio : adaptive(roiW / C(PW));
    C count = C(std::max<int64_t>(gridH * gridW, 1));

    // Sample positions and weights are the same for every channel: compute them once,
    // ordered [ph][pw][iy][ix].
    std::vector<BilinearSample<C>> samples;
    samples.reserve(size_t(PH * PW * std::max<int64_t>(gridH * gridW, 0)));
    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw)
        for (int64_t iy = 0; iy < gridH; ++iy) {
          C yy = startH + C(ph) * binH + (C(iy) + C(0.5)) * binH / C(gridH);
          for (int64_t ix = 0; ix < gridW; ++ix) {
            C xx = startW + C(pw) * binW + (C(ix) + C(0.5)) * binW / C(gridW);
            BilinearSample<C> s;
            // Outside (or NaN): contributes 0.
            if (!(yy >= C(-1) && yy <= C(H) && xx >= C(-1) && xx <= C(W))) {
              samples.push_back(s);
              continue;
            }
            C sy = std::max(yy, C(0)), sx = std::max(xx, C(0));
            auto yLow = int64_t(sy), xLow = int64_t(sx), yHigh = yLow + 1, xHigh = xLow + 1;
            if (yLow >= H - 1) {
              yHigh = yLow = H - 1;
              sy = C(yLow);
            }
            if (xLow >= W - 1) {
              xHigh = xLow = W - 1;
              sx = C(xLow);
            }
            C ly = sy - C(yLow), lx = sx - C(xLow), hy = 1 - ly, hx = 1 - lx;
            s.pos[0] = yLow * W + xLow;
            s.pos[1] = yLow * W + xHigh;
            s.pos[2] = yHigh * W + xLow;
            s.pos[3] = yHigh * W + xHigh;
            s.w[0] = hy * hx;
            s.w[1] = hy * lx;
            s.w[2] = ly * hx;
            s.w[3] = ly * lx;
            samples.push_back(s);
          }
        }

    int64_t perBin = gridH * gridW;
    for (int64_t c = 0; c < Ch; ++c) {
      const T* plane = x + (b * Ch + c) * H * W;
      T* out = y + (r * Ch + c) * PH * PW;
      for (int64_t bin = 0; bin < PH * PW; ++bin) {
        const BilinearSample<C>* s = samples.data() + bin * perBin;
        C v = 0;
        if (a.mode == RoiPoolMode::Avg) {
          for (int64_t i = 0; i < perBin; ++i)
            for (int k = 0; k < 4; ++k)
              v += s[i].w[k] * C(plane[s[i].pos[k]]);
          v /= count;
        } else {
          for (int64_t i = 0; i < perBin; ++i) {
            C m = s[i].w[0] * C(plane[s[i].pos[0]]);
            for (int k = 1; k < 4; ++k)
              m = std::max(m, s[i].w[k] * C(plane[s[i].pos[k]]));
            v = i == 0 ? m : std::max(v, m);
          }
        }
        out[bin] = T(v);
      }
    }
  }
}

void evalRoiAlign(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { roiAlignKernel<decltype(tag)>(ctx); });
}

// ---------------------------------------------------------------------------------------------
// Col2Im

std::shared_ptr<const Attrs> parseCol2Im(const ParseContext& ctx) {
  auto a = std::make_shared<Col2ImAttrs>();
  a->imageShape = *constInts(ctx, 1);
  a->blockShape = *constInts(ctx, 2);
  size_t nd = a->imageShape.size();
  if (nd == 0 || a->blockShape.size() != nd)
    invalid("inputs image_shape [{}] and block_shape [{}] must be non-empty and of equal length",
            fmt::join(a->imageShape, ","), fmt::join(a->blockShape, ","));
  a->dilations = intsOr(ctx.attrs, "dilations", std::vector<int64_t>(nd, 1));
  a->pads = intsOr(ctx.attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  a->strides = intsOr(ctx.attrs, "strides", std::vector<int64_t>(nd, 1));
  if (a->dilations.size() != nd || a->strides.size() != nd || a->pads.size() != 2 * nd)
    invalid("attributes 'dilations' [{}], 'strides' [{}] need {} values and 'pads' [{}] {}",
            fmt::join(a->dilations, ","), fmt::join(a->strides, ","), nd, fmt::join(a->pads, ","),
            2 * nd);
  for (size_t i = 0; i < nd; ++i) {
    if (a->imageShape[i] < 1 || a->blockShape[i] < 1)
      invalid("inputs image_shape [{}] and block_shape [{}] must be positive",
              fmt::join(a->imageShape, ","), fmt::join(a->blockShape, ","));
    if (a->dilations[i] < 1 || a->strides[i] < 1)
      invalid("attributes 'dilations' [{}] and 'strides' [{}] must be positive",
              fmt::join(a->dilations, ","), fmt::join(a->strides, ","));
    if (a->pads[i] < 0 || a->pads[i + nd] < 0)
      invalid("attribute 'pads' [{}] must be non-negative", fmt::join(a->pads, ","));
  }
  return a;
}

/// Number of sliding blocks along each spatial dim.
std::vector<int64_t> col2imBlocks(const Col2ImAttrs& a) {
  size_t nd = a.imageShape.size();
  std::vector<int64_t> blocks(nd);
  for (size_t i = 0; i < nd; ++i)
    blocks[i] = (a.imageShape[i] + a.pads[i] + a.pads[i + nd] -
                 a.dilations[i] * (a.blockShape[i] - 1) - 1) /
                    a.strides[i] +
                1;
  return blocks;
}

std::vector<TensorType> inferCol2Im(const InferContext& ctx) {
  const auto& a = ctx.as<Col2ImAttrs>();
  const TensorType& X = ctx.in(0);
  requireRank(X, 3, "input");
  if (X.dtype == DType::Bool) unsupported("Col2Im on bool is not supported");
  int64_t K = product(a.blockShape);
  if (X.shape[1] % K != 0)
    invalid("input {}: dimension 1 must be a multiple of prod(block_shape) = {}",
            shapeToString(X.shape), K);
  std::vector<int64_t> blocks = col2imBlocks(a);
  for (int64_t b : blocks)
    if (b < 1)
      invalid("image_shape [{}] with pads and block_shape [{}] leaves no sliding block",
              fmt::join(a.imageShape, ","), fmt::join(a.blockShape, ","));
  if (X.shape[2] != product(blocks))
    invalid("input {}: dimension 2 must be the number of sliding blocks {} = [{}]",
            shapeToString(X.shape), product(blocks), fmt::join(blocks, ","));
  TensorType out = X;
  out.shape = {X.shape[0], X.shape[1] / K};
  out.shape.insert(out.shape.end(), a.imageShape.begin(), a.imageShape.end());
  return {out};
}

void evalCol2Im(const EvalContext& ctx) {
  const auto& a = ctx.as<Col2ImAttrs>();
  const Tensor& X = ctx.in(0);
  std::vector<int64_t> blocks = col2imBlocks(a);
  int64_t K = product(a.blockShape), L = product(blocks), img = product(a.imageShape);
  int64_t NC = X.shape()[0] * (X.shape()[1] / K);
  std::vector<int64_t> target = col2imTargets(a);

  visitDType(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      TRIAD_ASSERT(false, "Col2Im on bool");
    } else {
      const T* x = X.data<T>();
      T* y = ctx.out(0).data<T>(); // zero-initialised
      for (int64_t p = 0; p < NC; ++p)
        for (int64_t kl = 0; kl < K * L; ++kl)
          if (int64_t pos = target[size_t(kl)]; pos >= 0)
            y[p * img + pos] = T(y[p * img + pos] + x[p * K * L + kl]);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// CenterCropPad

std::shared_ptr<const Attrs> parseCenterCropPad(const ParseContext& ctx) {
  auto a = std::make_shared<CenterCropPadAttrs>();
  a->sizes = *constInts(ctx, 1);
  if (!ctx.hasInput(0)) invalid("input 0 is required");
  int64_t rank = ctx.inputTypes[0]->rank();
  auto axes = ctx.attrs.getInts("axes");
  if (axes) {
    a->axes = normalizeAxes(*axes, rank, "attribute 'axes'");
  } else {
    if (int64_t(a->sizes.size()) != rank)
      invalid("input shape has {} values; without 'axes' it needs one per input dim ({})",
              a->sizes.size(), rank);
    a->axes.resize(size_t(rank));
    std::iota(a->axes.begin(), a->axes.end(), 0);
  }
  if (a->sizes.size() != a->axes.size())
    invalid("input shape [{}] must have one value per axis in 'axes' ({} axes)",
            fmt::join(a->sizes, ","), a->axes.size());
  for (int64_t s : a->sizes)
    if (s < 0) invalid("input shape [{}] has a negative size", fmt::join(a->sizes, ","));
  return a;
}

std::vector<TensorType> inferCenterCropPad(const InferContext& ctx) {
  const auto& a = ctx.as<CenterCropPadAttrs>();
  TensorType out = ctx.in(0);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    if (a.axes[i] >= out.rank())
      invalid("axis {} is out of range for input {}", a.axes[i], shapeToString(out.shape));
    out.shape[size_t(a.axes[i])] = a.sizes[i];
  }
  return {out};
}

void evalCenterCropPad(const EvalContext& ctx) {
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  const Shape& xs = X.shape();
  const Shape& ys = Y.shape();
  size_t rank = xs.size();
  // Per dim: input index = output index + shift; shift > 0 crops, shift < 0 pads. The odd
  // element goes to the end in both cases, hence floor division of the difference.
  std::vector<int64_t> shift(rank, 0);
  for (size_t d = 0; d < rank; ++d)
    shift[d] = xs[d] >= ys[d] ? (xs[d] - ys[d]) / 2 : -((ys[d] - xs[d]) / 2);
  std::vector<int64_t> xStrides = stridesOf(xs);
  size_t esize = dtypeSize(X.dtype());
  const uint8_t* src = X.raw();
  uint8_t* dst = Y.raw(); // zero-initialised: the padding
  forEachIndex(ys, [&](const std::vector<int64_t>& idx, int64_t lin) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = idx[d] + shift[d];
      if (i < 0 || i >= xs[d]) return;
      off += i * xStrides[d];
    }
    std::memcpy(dst + size_t(lin) * esize, src + size_t(off) * esize, esize);
  });
}

// ---------------------------------------------------------------------------------------------
// GroupNormalization

std::shared_ptr<const Attrs> parseGroupNorm(const ParseContext& ctx) {
  auto a = std::make_shared<GroupNormAttrs>();
  auto g = ctx.attrs.getInt("num_groups");
  if (!g) invalid("attribute 'num_groups' is required");
  if (*g < 1) invalid("attribute 'num_groups' ({}) must be >= 1", *g);
  a->numGroups = *g;
  a->epsilon = ctx.attrs.getFloat("epsilon", 1e-5f);
  // Opset 21 made scale and bias per channel and added stash_type (the precision of the
  // statistics: we always use double, which is at least that).
  a->perChannelAffine = ctx.opset >= 21;
  if (ctx.opset >= 21) (void)ctx.attrs.getInt("stash_type");
  return a;
}

std::vector<TensorType> inferGroupNorm(const InferContext& ctx) {
  const auto& a = ctx.as<GroupNormAttrs>();
  const TensorType& X = ctx.in(0);
  requireFloat(X, "input X");
  requireRankAtLeast(X, 2, "input X");
  int64_t C = X.shape[1];
  if (C % a.numGroups != 0)
    invalid("input X {} has {} channels, not a multiple of 'num_groups' ({})",
            shapeToString(X.shape), C, a.numGroups);
  int64_t n = a.perChannelAffine ? C : a.numGroups;
  const char* what = a.perChannelAffine ? "channels" : "groups";
  for (size_t i : {size_t(1), size_t(2)}) {
    const char* name = i == 1 ? "input scale" : "input bias";
    requireSameDType(X, ctx.in(i), i == 1 ? "inputs X and scale" : "inputs X and bias");
    if (ctx.in(i).shape != Shape{n})
      invalid("{} {} must have shape [{}] (one value per {})", name, shapeToString(ctx.in(i).shape),
              n, what);
  }
  return {X};
}

void evalGroupNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<GroupNormAttrs>();
  const Tensor& X = ctx.in(0);
  std::vector<double> scale = ctx.in(1).toDoubleVector(), bias = ctx.in(2).toDoubleVector();
  const Shape& s = X.shape();
  int64_t N = s[0], C = s[1], G = a.numGroups, CG = C / G;
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d)
    inner *= s[d];
  int64_t groupSize = CG * inner; // a group's elements are contiguous in [N, C, inner]
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < G; ++g) {
        const T* xp = x + (n * G + g) * groupSize;
        T* yp = y + (n * G + g) * groupSize;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < groupSize; ++i)
          sum += double(xp[i]);
        double mean = groupSize ? sum / double(groupSize) : 0.0;
        for (int64_t i = 0; i < groupSize; ++i)
          sq += (double(xp[i]) - mean) * (double(xp[i]) - mean);
        double inv = 1.0 / std::sqrt((groupSize ? sq / double(groupSize) : 0.0) + a.epsilon);
        for (int64_t i = 0; i < groupSize; ++i) {
          size_t p = size_t(a.perChannelAffine ? g * CG + i / inner : g);
          yp[i] = T((double(xp[i]) - mean) * inv * scale[p] + bias[p]);
        }
      }
  });
}

// ---------------------------------------------------------------------------------------------
// MeanVarianceNormalization

std::shared_ptr<const Attrs> parseMVN(const ParseContext& ctx) {
  auto a = std::make_shared<MVNAttrs>();
  if (!ctx.hasInput(0)) invalid("input 0 is required");
  int64_t rank = ctx.inputTypes[0]->rank();
  std::vector<int64_t> axes = intsOr(ctx.attrs, "axes", {0, 2, 3});
  a->axes = normalizeAxes(axes, rank, "attribute 'axes'");
  std::sort(a->axes.begin(), a->axes.end());
  return a;
}

std::vector<TensorType> inferMVN(const InferContext& ctx) {
  const auto& a = ctx.as<MVNAttrs>();
  requireFloat(ctx.in(0), "input X");
  for (int64_t ax : a.axes)
    if (ax >= ctx.in(0).rank())
      invalid("axis {} is out of range for input X {}", ax, shapeToString(ctx.in(0).shape));
  return {ctx.in(0)};
}

void evalMVN(const EvalContext& ctx) {
  const auto& a = ctx.as<MVNAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& s = X.shape();
  // Map every element to its group: its index with the normalized axes removed.
  Shape kept = s;
  for (int64_t ax : a.axes)
    kept[size_t(ax)] = 1;
  std::vector<int64_t> group = broadcastIndexMap(kept, s);
  int64_t numGroups = numElements(kept);
  double count = double(X.numElements()) / double(std::max<int64_t>(numGroups, 1));
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    size_t n = size_t(X.numElements());
    std::vector<double> mean(size_t(numGroups), 0.0), var(size_t(numGroups), 0.0);
    for (size_t i = 0; i < n; ++i)
      mean[size_t(group[i])] += double(x[i]);
    for (double& m : mean)
      m /= count;
    for (size_t i = 0; i < n; ++i) {
      double d = double(x[i]) - mean[size_t(group[i])];
      var[size_t(group[i])] += d * d;
    }
    // ONNX's function body: (X - mean) / (sqrt(var) + 1e-9).
    for (size_t i = 0; i < n; ++i) {
      size_t g = size_t(group[i]);
      y[i] = T((double(x[i]) - mean[g]) / (std::sqrt(var[g] / count) + 1e-9));
    }
  });
}

} // namespace

std::vector<int64_t> ops::col2imTargets(const Col2ImAttrs& a) {
  size_t nd = a.imageShape.size();
  std::vector<int64_t> blocks = col2imBlocks(a);
  int64_t K = product(a.blockShape), L = product(blocks);
  std::vector<int64_t> imgStrides = stridesOf(a.imageShape);
  std::vector<int64_t> target(size_t(K * L), -1);
  forEachIndex(a.blockShape, [&](const std::vector<int64_t>& kIdx, int64_t k) {
    forEachIndex(blocks, [&](const std::vector<int64_t>& lIdx, int64_t l) {
      int64_t pos = 0;
      for (size_t d = 0; d < nd; ++d) {
        int64_t i = lIdx[d] * a.strides[d] - a.pads[d] + kIdx[d] * a.dilations[d];
        if (i < 0 || i >= a.imageShape[d]) return;
        pos += i * imgStrides[d];
      }
      target[size_t(k * L + l)] = pos;
    });
  });
  return target;
}

void registerVisionOps(OpTable& table) {
  table.add({.kind = OpKind::GridSample,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 16,
             .parse = parseGridSample,
             .infer = inferGridSample,
             .eval = evalGridSample});
  table.add({.kind = OpKind::RoiAlign,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 10,
             .parse = parseRoiAlign,
             .infer = inferRoiAlign,
             .eval = evalRoiAlign});
  table.add({.kind = OpKind::Col2Im,
             .minInputs = 3,
             .maxInputs = 3,
             .shapeOperands = {1, 2},
             .sinceOpset = 18,
             .parse = parseCol2Im,
             .infer = inferCol2Im,
             .eval = evalCol2Im});
  table.add({.kind = OpKind::CenterCropPad,
             .minInputs = 2,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 18,
             .parse = parseCenterCropPad,
             .infer = inferCenterCropPad,
             .eval = evalCenterCropPad});
  table.add({.kind = OpKind::GroupNormalization,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 18,
             .parse = parseGroupNorm,
             .infer = inferGroupNorm,
             .eval = evalGroupNorm});
  table.add({.kind = OpKind::MeanVarianceNormalization,
             .sinceOpset = 9,
             .parse = parseMVN,
             .infer = inferMVN,
             .eval = evalMVN});
  registerLinearAlgebraOps(table);
}

} // namespace triad::ir
