// Convolutions: Conv and ConvTranspose, over any number (>= 1) of spatial dims.
//
// Both kernels reduce to a dense product in double precision:
//   Conv:          im2col (gather X into [C/group * K, outSpatial]) then Y = W x col;
//   ConvTranspose: col = W^T x X ([M/group * K, inSpatial]) then col2im (scatter-add into Y);
// where K is the number of kernel taps. The product is tiled so that the reference interpreter
// runs a ResNet-50 in seconds.
#include "ir/ops/Conv.h"
#include "ir/ops/OpUtil.h"

#include <fmt/ranges.h>

namespace triad::ir {
using namespace ops;

namespace ops {

const TensorType& parseInputType(const ParseContext& ctx, size_t i, std::string_view what) {
  if (!ctx.hasInput(i)) invalid("{} is missing", what);
  return *ctx.inputTypes[i];
}

namespace {
void requireCount(const std::vector<int64_t>& v, size_t n, std::string_view attr) {
  if (v.size() != n)
    invalid("attribute '{}' has {} values [{}], expected {} for {} spatial dims", attr, v.size(),
            fmt::join(v, ","), n, attr == "pads" ? n / 2 : n);
}
void requirePositive(const std::vector<int64_t>& v, std::string_view attr) {
  for (int64_t x : v)
    if (x < 1) invalid("attribute '{}' = [{}] must be positive", attr, fmt::join(v, ","));
}
} // namespace

WindowParams parseWindow(const AttrReader& a, const Shape& inSpatial,
                         const std::vector<int64_t>& kernel, bool readDilations) {
  size_t k = kernel.size();
  WindowParams w;
  w.strides = intsOr(a, "strides", std::vector<int64_t>(k, 1));
  requireCount(w.strides, k, "strides");
  requirePositive(w.strides, "strides");
  w.dilations = std::vector<int64_t>(k, 1);
  if (readDilations) {
    w.dilations = intsOr(a, "dilations", w.dilations);
    requireCount(w.dilations, k, "dilations");
    requirePositive(w.dilations, "dilations");
  }
  std::string autoPad =
      enumAttr(a, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  // Read even when auto_pad overrides it, so the attribute counts as understood.
  std::vector<int64_t> pads = intsOr(a, "pads", std::vector<int64_t>(2 * k, 0));
  if (autoPad == "NOTSET") {
    requireCount(pads, 2 * k, "pads");
    for (int64_t p : pads)
      if (p < 0) invalid("attribute 'pads' = [{}] must be non-negative", fmt::join(pads, ","));
    w.pads = pads;
    return w;
  }
  w.autoPadded = true;
  w.pads.assign(2 * k, 0);
  if (autoPad == "VALID") return w;
  for (size_t d = 0; d < k; ++d) {
    // SAME: output = ceil(in / stride); the padding that makes the windows cover it.
    int64_t in = inSpatial[d], s = w.strides[d];
    int64_t out = (in + s - 1) / s;
    int64_t span = (kernel[d] - 1) * w.dilations[d] + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    int64_t small = total / 2, big = total - total / 2;
    // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning.
    w.pads[d] = autoPad == "SAME_UPPER" ? small : big;
    w.pads[d + k] = autoPad == "SAME_UPPER" ? big : small;
  }
  return w;
}

int64_t windowOutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t padBegin, int64_t padEnd, bool ceilMode) {
  int64_t span = in + padBegin + padEnd - ((kernel - 1) * dilation + 1);
  if (span < 0) return 0;
  if (!ceilMode) return span / stride + 1;
  int64_t out = (span + stride - 1) / stride + 1;
  // The last window must start inside the input or the begin padding.
  if ((out - 1) * stride >= in + padBegin) --out;
  return out;
}

std::vector<int64_t> windowIndexTable(const Shape& from, const Shape& to,
                                      const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& strides,
                                      const std::vector<int64_t>& dilations,
                                      const std::vector<int64_t>& pads) {
  size_t k = from.size();
  TRIAD_ASSERT(to.size() == k && kernel.size() == k, "window ranks differ");
  int64_t nFrom = numElements(from), nTaps = numElements(kernel);
  // coord[d][tap_d * from[d] + a_d]: the coordinate in `to` along dim d, or -1 outside it.
  std::vector<std::vector<int64_t>> coord(k);
  for (size_t d = 0; d < k; ++d) {
    coord[d].resize(size_t(kernel[d] * from[d]));
    for (int64_t t = 0; t < kernel[d]; ++t)
      for (int64_t a = 0; a < from[d]; ++a) {
        int64_t b = a * strides[d] + t * dilations[d] - pads[d];
        coord[d][size_t(t * from[d] + a)] = (b >= 0 && b < to[d]) ? b : -1;
      }
  }
  std::vector<int64_t> toStrides = stridesOf(to);
  std::vector<int64_t> table(size_t(nTaps * nFrom));
  std::vector<int64_t> fromStrides = stridesOf(from), tapStrides = stridesOf(kernel);
  // rows[d]: dim d's coordinates for the current tap, indexed by a_d.
  std::vector<const int64_t*> rows(k);
  int64_t* out = table.data();
  for (int64_t t = 0; t < nTaps; ++t) {
    for (size_t d = 0; d < k; ++d)
      rows[d] = coord[d].data() + (t / tapStrides[d]) % kernel[d] * from[d];
    for (int64_t a = 0; a < nFrom; ++a) {
      int64_t lin = 0;
      for (size_t d = 0; d < k; ++d) {
        int64_t c = rows[d][(a / fromStrides[d]) % from[d]];
        if (c < 0) {
          lin = -1;
          break;
        }
        lin += c * toStrides[d];
      }
      *out++ = lin;
    }
  }
  return table;
}

void gemmAccumulate(int64_t M, int64_t N, int64_t K, const double* A, int64_t am, int64_t ak,
                    const double* B, int64_t ldb, double* C, int64_t ldc) {
  // Tiles: a [kTileK, kTileN] block of B stays in cache while every row of C reads it. Four
  // products are summed per pass over a C segment, in the same order as one at a time, so the
  // result equals the plain triple loop.
  constexpr int64_t kTileN = 64, kTileK = 256;
  for (int64_t j0 = 0; j0 < N; j0 += kTileN) {
    int64_t jn = std::min(kTileN, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
      int64_t kn = std::min(kTileK, K - k0);
      for (int64_t m = 0; m < M; ++m) {
        double* __restrict c = C + m * ldc + j0;
        const double* a = A + m * am + k0 * ak;
        const double* b = B + k0 * ldb + j0;
        int64_t kk = 0;
        for (; kk + 4 <= kn; kk += 4) {
          double a0 = a[kk * ak], a1 = a[(kk + 1) * ak], a2 = a[(kk + 2) * ak],
                 a3 = a[(kk + 3) * ak];
          const double* __restrict b0 = b + kk * ldb;
          const double* __restrict b1 = b0 + ldb;
          const double* __restrict b2 = b1 + ldb;
          const double* __restrict b3 = b2 + ldb;
          for (int64_t j = 0; j < jn; ++j)
            c[j] = c[j] + a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
        }
        for (; kk < kn; ++kk) {
          double a0 = a[kk * ak];
          const double* __restrict b0 = b + kk * ldb;
          for (int64_t j = 0; j < jn; ++j)
            c[j] += a0 * b0[j];
        }
      }
    }
  }
}

} // namespace ops

namespace {

template <typename T> std::vector<double> toDoubles(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<double> v(size_t(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double(p[i]);
  return v;
}

/// kernel_shape, or the spatial dims of W when absent.
std::vector<int64_t> parseKernel(const ParseContext& ctx, const TensorType& X,
                                 const TensorType& W) {
  if (X.rank() < 3)
    invalid("input X must have rank >= 3 ([N, C, spatial...]), has shape {}",
            shapeToString(X.shape));
  size_t k = size_t(X.rank() - 2);
  if (W.rank() != X.rank())
    invalid("input W {} must have the rank of input X {} ([M, C/group, kernel...])",
            shapeToString(W.shape), shapeToString(X.shape));
  std::vector<int64_t> kernel = intsOr(ctx.attrs, "kernel_shape", spatialOf(W.shape));
  if (kernel.size() != k)
    invalid("attribute 'kernel_shape' = [{}] does not match the {} spatial dims of input X {}",
            fmt::join(kernel, ","), k, shapeToString(X.shape));
  for (int64_t v : kernel)
    if (v < 1) invalid("attribute 'kernel_shape' = [{}] must be positive", fmt::join(kernel, ","));
  return kernel;
}

int64_t parseGroup(const ParseContext& ctx) {
  int64_t g = ctx.attrs.getInt("group", 1);
  if (g < 1) invalid("attribute 'group' = {} must be positive", g);
  return g;
}

// ---------------------------------------------------------------------------------------------
// Conv

std::shared_ptr<const Attrs> parseConv(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input X");
  const TensorType& W = parseInputType(ctx, 1, "input W");
  auto a = std::make_shared<ConvAttrs>();
  a->kernel = parseKernel(ctx, X, W);
  WindowParams w = parseWindow(ctx.attrs, spatialOf(X.shape), a->kernel);
  a->strides = w.strides;
  a->pads = w.pads;
  a->dilations = w.dilations;
  a->group = parseGroup(ctx);
  return a;
}

} // namespace

Shape ops::convOutputShape(const ConvAttrs& a, const TensorType& X, const TensorType& W,
                           std::string_view xName, std::string_view wName) {
  size_t k = a.kernel.size();
  requireRank(X, int64_t(k) + 2, fmt::format("input {}", xName));
  requireRank(W, int64_t(k) + 2, fmt::format("input {}", wName));
  int64_t C = X.shape[1], M = W.shape[0];
  if (C % a.group != 0 || M % a.group != 0)
    invalid("group {} does not divide the input channels ({}) and output channels ({})", a.group, C,
            M);
  if (W.shape[1] != C / a.group)
    invalid("input {} {} must have {} input channels per group ({} {} with group {})", wName,
            shapeToString(W.shape), C / a.group, xName, shapeToString(X.shape), a.group);
  if (spatialOf(W.shape) != a.kernel)
    invalid("input {} {} does not match kernel_shape [{}]", wName, shapeToString(W.shape),
            fmt::join(a.kernel, ","));
  Shape out{X.shape[0], M};
  for (size_t d = 0; d < k; ++d) {
    int64_t o = windowOutSize(X.shape[d + 2], a.kernel[d], a.strides[d], a.dilations[d], a.pads[d],
                              a.pads[d + k]);
    if (o < 1)
      invalid("kernel {} (dilation {}) is larger than spatial dim {} of size {} plus padding",
              a.kernel[d], a.dilations[d], d, X.shape[d + 2]);
    out.push_back(o);
  }
  return out;
}

namespace {

std::vector<TensorType> inferConv(const InferContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& W = ctx.in(1);
  requireFloat(X, "input X");
  requireSameDType(X, W, "inputs X and W");
  Shape out = convOutputShape(a, X, W);
  if (ctx.has(2)) {
    requireSameDType(X, ctx.in(2), "inputs X and B");
    if (ctx.in(2).shape != Shape{out[1]})
      invalid("bias B {} must have shape [{}]", shapeToString(ctx.in(2).shape), out[1]);
  }
  return {TensorType{X.dtype, out, {}}};
}

template <typename T> void convKernel(const EvalContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  Shape inSp = spatialOf(X.shape()), outSp = spatialOf(Y.shape());
  int64_t N = X.shape()[0], C = X.shape()[1], M = Y.shape()[1];
  int64_t Cg = C / a.group, Mg = M / a.group;
  int64_t inSize = numElements(inSp), outSize = numElements(outSp);
  int64_t taps = numElements(a.kernel), rows = Cg * taps;
  std::vector<double> w = toDoubles<T>(ctx.in(1)); // [M, Cg * taps]
  std::vector<double> bias(size_t(M), 0.0);
  if (ctx.has(2)) bias = toDoubles<T>(ctx.in(2));
  // src[tap * outSize + o]: input spatial offset read by output position o at that tap.
  std::vector<int64_t> src =
      windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  std::vector<double> col(size_t(rows * outSize)); // [Cg * taps, outSize]
  std::vector<double> acc(size_t(Mg * outSize));   // [Mg, outSize]
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < a.group; ++g) {
      for (int64_t c = 0; c < Cg; ++c) {
        const T* plane = px + (n * C + g * Cg + c) * inSize;
        for (int64_t t = 0; t < taps; ++t) {
          double* row = col.data() + (c * taps + t) * outSize;
          const int64_t* s = src.data() + t * outSize;
          for (int64_t o = 0; o < outSize; ++o)
            row[o] = s[o] < 0 ? 0.0 : double(plane[s[o]]);
        }
      }
      for (int64_t m = 0; m < Mg; ++m)
        std::fill_n(acc.data() + m * outSize, outSize, bias[size_t(g * Mg + m)]);
      gemmAccumulate(Mg, outSize, rows, w.data() + g * Mg * rows, rows, 1, col.data(), outSize,
                     acc.data(), outSize);
      T* y = py + (n * M + g * Mg) * outSize;
      for (int64_t i = 0; i < Mg * outSize; ++i)
        y[i] = T(acc[size_t(i)]);
    }
}

void evalConv(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { convKernel<decltype(tag)>(ctx); });
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

std::shared_ptr<const Attrs> parseConvTranspose(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input X");
  const TensorType& W = parseInputType(ctx, 1, "input W");
  auto a = std::make_shared<ConvTransposeAttrs>();
  a->kernel = parseKernel(ctx, X, W);
  size_t k = a->kernel.size();
  Shape inSp = spatialOf(X.shape);
  a->group = parseGroup(ctx);
  a->strides = intsOr(ctx.attrs, "strides", std::vector<int64_t>(k, 1));
  a->dilations = intsOr(ctx.attrs, "dilations", std::vector<int64_t>(k, 1));
  a->outputPadding = intsOr(ctx.attrs, "output_padding", std::vector<int64_t>(k, 0));
  requireCount(a->strides, k, "strides");
  requirePositive(a->strides, "strides");
  requireCount(a->dilations, k, "dilations");
  requirePositive(a->dilations, "dilations");
  requireCount(a->outputPadding, k, "output_padding");
  for (int64_t p : a->outputPadding)
    if (p < 0)
      invalid("attribute 'output_padding' = [{}] must be non-negative",
              fmt::join(a->outputPadding, ","));
  std::string autoPad =
      enumAttr(ctx.attrs, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  a->pads = intsOr(ctx.attrs, "pads", std::vector<int64_t>(2 * k, 0));
  std::optional<std::vector<int64_t>> outShape = ctx.attrs.getInts("output_shape");
  if (outShape && outShape->size() == k + 2) // some exporters include N and C
    outShape->erase(outShape->begin(), outShape->begin() + 2);
  if (outShape) requireCount(*outShape, k, "output_shape");
  if (autoPad == "VALID") {
    a->pads.assign(2 * k, 0);
  } else if (autoPad != "NOTSET" && !outShape) {
    // SAME: output = input * stride.
    outShape = std::vector<int64_t>(k);
    for (size_t d = 0; d < k; ++d)
      (*outShape)[d] = inSp[d] * a->strides[d];
  }
  if (outShape && autoPad != "VALID") {
    // Fold the requested output size into pads. A negative total (output larger than the
    // natural size) extends the end, as output_padding would.
    for (size_t d = 0; d < k; ++d) {
      int64_t natural = a->strides[d] * (inSp[d] - 1) + a->outputPadding[d] +
                        (a->kernel[d] - 1) * a->dilations[d] + 1;
      int64_t total = natural - (*outShape)[d];
      int64_t small = total / 2, big = total - total / 2;
      if (total < 0) {
        a->pads[d] = 0;
        a->pads[d + k] = total;
      } else if (autoPad == "SAME_UPPER") {
        a->pads[d] = small;
        a->pads[d + k] = big;
      } else { // SAME_LOWER, or output_shape with NOTSET
        a->pads[d] = big;
        a->pads[d + k] = small;
      }
    }
  } else {
    requireCount(a->pads, 2 * k, "pads");
    for (int64_t p : a->pads)
      if (p < 0) invalid("attribute 'pads' = [{}] must be non-negative", fmt::join(a->pads, ","));
  }
  return a;
}

std::vector<TensorType> inferConvTranspose(const InferContext& ctx) {
  const auto& a = ctx.as<ConvTransposeAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& W = ctx.in(1);
  requireFloat(X, "input X");
  requireSameDType(X, W, "inputs X and W");
  size_t k = a.kernel.size();
  requireRank(X, int64_t(k) + 2, "input X");
  requireRank(W, int64_t(k) + 2, "input W");
  int64_t C = X.shape[1];
  if (C % a.group != 0) invalid("group {} does not divide the input channels ({})", a.group, C);
  if (W.shape[0] != C)
    invalid("input W {} must have {} rows (the input channels of X {})", shapeToString(W.shape), C,
            shapeToString(X.shape));
  if (spatialOf(W.shape) != a.kernel)
    invalid("input W {} does not match kernel_shape [{}]", shapeToString(W.shape),
            fmt::join(a.kernel, ","));
  int64_t M = W.shape[1] * a.group;
  if (ctx.has(2)) {
    requireSameDType(X, ctx.in(2), "inputs X and B");
    if (ctx.in(2).shape != Shape{M})
      invalid("bias B {} must have shape [{}]", shapeToString(ctx.in(2).shape), M);
  }
  Shape out{X.shape[0], M};
  for (size_t d = 0; d < k; ++d) {
    int64_t o = a.strides[d] * (X.shape[d + 2] - 1) + a.outputPadding[d] +
                (a.kernel[d] - 1) * a.dilations[d] + 1 - a.pads[d] - a.pads[d + k];
    if (o < 1)
      invalid("output spatial dim {} would have size {} (pads [{}] too large)", d, o,
              fmt::join(a.pads, ","));
    out.push_back(o);
  }
  return {TensorType{X.dtype, out, {}}};
}

template <typename T> void convTransposeKernel(const EvalContext& ctx) {
  const auto& a = ctx.as<ConvTransposeAttrs>();
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  Shape inSp = spatialOf(X.shape()), outSp = spatialOf(Y.shape());
  int64_t N = X.shape()[0], C = X.shape()[1], M = Y.shape()[1];
  int64_t Cg = C / a.group, Mg = M / a.group;
  int64_t inSize = numElements(inSp), outSize = numElements(outSp);
  int64_t taps = numElements(a.kernel), rows = Mg * taps;
  std::vector<double> x = toDoubles<T>(X);
  std::vector<double> w = toDoubles<T>(ctx.in(1)); // [C, Mg * taps]
  std::vector<double> bias(size_t(M), 0.0);
  if (ctx.has(2)) bias = toDoubles<T>(ctx.in(2));
  // dst[tap * inSize + i]: output spatial offset that input position i feeds at that tap.
  std::vector<int64_t> dst =
      windowIndexTable(inSp, outSp, a.kernel, a.strides, a.dilations, a.pads);
  std::vector<double> col(size_t(rows * inSize)); // [Mg * taps, inSize]
  std::vector<double> acc(size_t(Mg * outSize));  // [Mg, outSize]
  T* py = Y.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < a.group; ++g) {
      // col[r, i] = sum_c W[g*Cg + c, r] * X[n, g*Cg + c, i]
      std::fill(col.begin(), col.end(), 0.0);
      gemmAccumulate(rows, inSize, Cg, w.data() + g * Cg * rows, 1, rows,
                     x.data() + (n * C + g * Cg) * inSize, inSize, col.data(), inSize);
      for (int64_t m = 0; m < Mg; ++m) {
        double* yrow = acc.data() + m * outSize;
        std::fill_n(yrow, outSize, bias[size_t(g * Mg + m)]);
        for (int64_t t = 0; t < taps; ++t) {
          const double* crow = col.data() + (m * taps + t) * inSize;
          const int64_t* d = dst.data() + t * inSize;
          for (int64_t i = 0; i < inSize; ++i)
            if (d[i] >= 0) yrow[d[i]] += crow[i];
        }
      }
      T* y = py + (n * M + g * Mg) * outSize;
      for (int64_t i = 0; i < Mg * outSize; ++i)
        y[i] = T(acc[size_t(i)]);
    }
}

void evalConvTranspose(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { convTransposeKernel<decltype(tag)>(ctx); });
}

// Conv: every output element is a dot product over W's [C/group, k1..kk] slice.
int64_t macsConv(const InferContext& ctx, std::span<const TensorType> outs) {
  const Shape& w = ctx.in(1).shape;
  return outs[0].numElements() * (numElements(w) / w[0]);
}

// ConvTranspose: every input element scatters into W's [M/group, k1..kk] slice.
int64_t macsConvTranspose(const InferContext& ctx, std::span<const TensorType>) {
  const Shape& w = ctx.in(1).shape;
  return ctx.in(0).numElements() * (numElements(w) / w[0]);
}

} // namespace

void registerConvOps(OpTable& table) {
  table.add({.kind = OpKind::Conv,
             .minInputs = 2,
             .maxInputs = 3,
             .parse = parseConv,
             .infer = inferConv,
             .eval = evalConv,
             .macs = macsConv});
  table.add({.kind = OpKind::ConvTranspose,
             .minInputs = 2,
             .maxInputs = 3,
             .parse = parseConvTranspose,
             .infer = inferConvTranspose,
             .eval = evalConvTranspose,
             .macs = macsConvTranspose});
}

} // namespace triad::ir
