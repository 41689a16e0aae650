// Pooling: MaxPool (with optional Indices), AveragePool, LpPool over any number (>= 1) of spatial
// dims, and the global variants. X is [N, C, D1..Dk]; each [n, c] plane is pooled on its own.
#include "ir/ops/Pool.h"
#include "ir/ops/Conv.h"
#include "ir/ops/OpUtil.h"

#include <fmt/ranges.h>
#include <limits>

namespace triad::ir {
using namespace ops;

namespace ops {

/// Column-major offset of the row-major offset `rowMajor` within a plane of shape `sp`.
int64_t columnMajor(int64_t rowMajor, const Shape& sp) {
  int64_t out = 0, scale = 1;
  std::vector<int64_t> strides = stridesOf(sp);
  for (size_t d = 0; d < sp.size(); ++d) {
    out += (rowMajor / strides[d]) % sp[d] * scale;
    scale *= sp[d];
  }
  return out;
}

/// Per output position: the number of window taps inside the input plus its explicit pads
/// (AveragePool's divisor with count_include_pad).
std::vector<int64_t> paddedWindowCounts(const PoolAttrs& a, const Shape& inSp, const Shape& outSp) {
  size_t k = inSp.size();
  std::vector<std::vector<int64_t>> perDim(k);
  for (size_t d = 0; d < k; ++d)
    for (int64_t o = 0; o < outSp[d]; ++o) {
      int64_t n = 0;
      for (int64_t t = 0; t < a.kernel[d]; ++t) {
        int64_t pos = o * a.strides[d] + t * a.dilations[d]; // in padded coordinates
        if (pos < inSp[d] + a.pads[d] + a.pads[d + k]) ++n;
      }
      perDim[d].push_back(n);
    }
  std::vector<int64_t> counts(size_t(numElements(outSp)));
  std::vector<int64_t> strides = stridesOf(outSp);
  for (size_t o = 0; o < counts.size(); ++o) {
    int64_t c = 1;
    for (size_t d = 0; d < k; ++d)
      c *= perDim[d][size_t((int64_t(o) / strides[d]) % outSp[d])];
    counts[o] = c;
  }
  return counts;
}

} // namespace ops

namespace {

// ---------------------------------------------------------------------------------------------
// Windowed pools

std::shared_ptr<const Attrs> parsePool(const ParseContext& ctx, OpKind kind) {
  const TensorType& X = parseInputType(ctx, 0, "input X");
  if (X.rank() < 3)
    invalid("input X must have rank >= 3 ([N, C, spatial...]), has shape {}",
            shapeToString(X.shape));
  size_t k = size_t(X.rank() - 2);
  auto a = std::make_shared<PoolAttrs>();
  std::optional<std::vector<int64_t>> kernel = ctx.attrs.getInts("kernel_shape");
  if (!kernel) invalid("attribute 'kernel_shape' is required");
  if (kernel->size() != k)
    invalid("attribute 'kernel_shape' = [{}] does not match the {} spatial dims of input X {}",
            fmt::join(*kernel, ","), k, shapeToString(X.shape));
  for (int64_t v : *kernel)
    if (v < 1) invalid("attribute 'kernel_shape' = [{}] must be positive", fmt::join(*kernel, ","));
  a->kernel = *kernel;
  // dilations: MaxPool from opset 10, LpPool from 18, AveragePool from 19.
  bool hasDilations = kind == OpKind::MaxPool  ? ctx.opset >= 10
                      : kind == OpKind::LpPool ? ctx.opset >= 18
                                               : ctx.opset >= 19;
  WindowParams w = parseWindow(ctx.attrs, spatialOf(X.shape), a->kernel, hasDilations);
  a->strides = w.strides;
  a->pads = w.pads;
  a->dilations = w.dilations;
  // With auto_pad the output size is fixed (ceil(in / stride) or VALID) and ceil_mode is moot.
  a->ceilMode = ctx.attrs.getInt("ceil_mode", 0) != 0 && !w.autoPadded;
  if (kind == OpKind::MaxPool) {
    a->storageOrder = ctx.attrs.getInt("storage_order", 0);
    if (a->storageOrder != 0 && a->storageOrder != 1)
      invalid("attribute 'storage_order' = {} must be 0 (row-major) or 1 (column-major)",
              a->storageOrder);
  } else if (kind == OpKind::AveragePool) {
    a->countIncludePad = ctx.attrs.getInt("count_include_pad", 0) != 0;
  } else {
    // LpPool-1 had a float p; from opset 2 it is an integer.
    if (ctx.opset < 2) {
      float p = ctx.attrs.getFloat("p", 2.0f);
      if (p != std::floor(p)) unsupported("attribute 'p' = {} (non-integer norm)", p);
      a->p = int64_t(p);
    } else {
      a->p = ctx.attrs.getInt("p", 2);
    }
    if (a->p < 1) invalid("attribute 'p' = {} must be >= 1", a->p);
  }
  return a;
}

std::vector<TensorType> inferPool(const InferContext& ctx, OpKind kind) {
  const auto& a = ctx.as<PoolAttrs>();
  const TensorType& X = ctx.in(0);
  size_t k = a.kernel.size();
  requireRank(X, int64_t(k) + 2, "input X");
  if (kind == OpKind::MaxPool) {
    if (!isFloat(X.dtype) && !dtypeIn(X.dtype, {DType::I8, DType::U8}))
      unsupported("input X has element type {}; MaxPool supports f32, f16, f64, i8 and u8",
                  dtypeName(X.dtype));
  } else {
    requireFloat(X, "input X");
  }
  Shape out{X.shape[0], X.shape[1]};
  for (size_t d = 0; d < k; ++d) {
    int64_t o = windowOutSize(X.shape[d + 2], a.kernel[d], a.strides[d], a.dilations[d], a.pads[d],
                              a.pads[d + k], a.ceilMode);
    if (o < 1)
      invalid("kernel {} (dilation {}) is larger than spatial dim {} of size {} plus padding",
              a.kernel[d], a.dilations[d], d, X.shape[d + 2]);
    out.push_back(o);
  }
  std::vector<TensorType> types{TensorType{X.dtype, out, {}}};
  if (kind == OpKind::MaxPool) types.push_back(TensorType{DType::I64, out, {}});
  return types;
}

template <typename T> T lowestValue() {
  if constexpr (std::is_same_v<T, Half>)
    return Half(-std::numeric_limits<float>::infinity());
  else if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

template <typename T> void maxPoolKernel(const EvalContext& ctx) {
  const auto& a = ctx.as<PoolAttrs>();
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  Shape inSp = spatialOf(X.shape()), outSp = spatialOf(Y.shape());
  int64_t planes = X.shape()[0] * X.shape()[1];
  int64_t inSize = numElements(inSp), outSize = numElements(outSp), taps = numElements(a.kernel);
  // src[tap * outSize + o]: input offset read at that tap by output position o, -1 in padding.
  std::vector<int64_t> src =
      windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  int64_t* pi = ctx.outputs.size() > 1 ? ctx.out(1).data<int64_t>() : nullptr;
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  std::vector<double> best(static_cast<size_t>(outSize));
  std::vector<int64_t> arg(static_cast<size_t>(outSize));
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* x = px + plane * inSize;
    std::fill(arg.begin(), arg.end(), -1);
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t* s = src.data() + t * outSize;
      // Strict '>' keeps the first maximum in window order, as ONNX Runtime does.
      for (int64_t o = 0; o < outSize; ++o)
        if (s[o] >= 0 && (arg[size_t(o)] < 0 || double(x[s[o]]) > best[size_t(o)])) {
          best[size_t(o)] = double(x[s[o]]);
          arg[size_t(o)] = s[o];
        }
    }
    for (int64_t o = 0; o < outSize; ++o) {
      int64_t i = arg[size_t(o)];
      py[plane * outSize + o] = i < 0 ? lowestValue<T>() : x[i];
      if (pi)
        pi[plane * outSize + o] =
            i < 0 ? -1 : plane * inSize + (a.storageOrder == 1 ? columnMajor(i, inSp) : i);
    }
  }
}

void evalMaxPool(const EvalContext& ctx) {
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      TRIAD_ASSERT(false, "MaxPool on bool");
    else
      maxPoolKernel<T>(ctx);
  });
}

// AveragePool and LpPool: a sum over the valid taps, then a per-position finish.
template <typename T> void sumPoolKernel(const EvalContext& ctx, bool lp) {
  const auto& a = ctx.as<PoolAttrs>();
  const Tensor& X = ctx.in(0);
  Tensor& Y = ctx.out(0);
  Shape inSp = spatialOf(X.shape()), outSp = spatialOf(Y.shape());
  int64_t planes = X.shape()[0] * X.shape()[1];
  int64_t inSize = numElements(inSp), outSize = numElements(outSp), taps = numElements(a.kernel);
  std::vector<int64_t> src =
      windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  std::vector<int64_t> padded;
  if (!lp && a.countIncludePad) padded = paddedWindowCounts(a, inSp, outSp);
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  std::vector<double> sum(static_cast<size_t>(outSize));
  std::vector<int64_t> count(static_cast<size_t>(outSize));
  double p = double(a.p);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* x = px + plane * inSize;
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0);
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t* s = src.data() + t * outSize;
      for (int64_t o = 0; o < outSize; ++o) {
        if (s[o] < 0) continue;
        double v = double(x[s[o]]);
        if (lp) v = a.p == 1 ? std::fabs(v) : a.p == 2 ? v * v : std::pow(std::fabs(v), p);
        sum[size_t(o)] += v;
        ++count[size_t(o)];
      }
    }
    T* y = py + plane * outSize;
    for (int64_t o = 0; o < outSize; ++o) {
      double s = sum[size_t(o)];
      if (lp)
        y[o] = T(a.p == 1 ? s : a.p == 2 ? std::sqrt(s) : std::pow(s, 1.0 / p));
      else
        y[o] = T(s / double(padded.empty() ? count[size_t(o)] : padded[size_t(o)]));
    }
  }
}

void evalAveragePool(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { sumPoolKernel<decltype(tag)>(ctx, false); });
}

void evalLpPool(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { sumPoolKernel<decltype(tag)>(ctx, true); });
}

// ---------------------------------------------------------------------------------------------
// Global pools: Y[n, c, 1, ..., 1] = mean / max over the plane.

std::vector<TensorType> inferGlobalPool(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  requireRankAtLeast(X, 3, "input X");
  requireFloat(X, "input X");
  Shape out = X.shape;
  std::fill(out.begin() + 2, out.end(), 1);
  return {TensorType{X.dtype, out, {}}};
}

template <typename T> void globalPoolKernel(const EvalContext& ctx, bool isMax) {
  const Tensor& X = ctx.in(0);
  int64_t planes = X.shape()[0] * X.shape()[1];
  int64_t size = numElements(spatialOf(X.shape()));
  const T* px = X.data<T>();
  T* py = ctx.out(0).data<T>();
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* x = px + plane * size;
    double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i)
      acc = isMax ? std::max(acc, double(x[i])) : acc + double(x[i]);
    py[plane] = T(isMax ? acc : acc / double(size));
  }
}

void evalGlobalAveragePool(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { globalPoolKernel<decltype(tag)>(ctx, false); });
}

void evalGlobalMaxPool(const EvalContext& ctx) {
  visitFloat(ctx.in(0).dtype(), [&](auto tag) { globalPoolKernel<decltype(tag)>(ctx, true); });
}

} // namespace

void registerPoolOps(OpTable& table) {
  table.add({.kind = OpKind::MaxPool,
             .minOutputs = 1,
             .maxOutputs = 2,
             .parse = [](const ParseContext& c) { return parsePool(c, OpKind::MaxPool); },
             .infer = [](const InferContext& c) { return inferPool(c, OpKind::MaxPool); },
             .eval = evalMaxPool});
  table.add({.kind = OpKind::AveragePool,
             .parse = [](const ParseContext& c) { return parsePool(c, OpKind::AveragePool); },
             .infer = [](const InferContext& c) { return inferPool(c, OpKind::AveragePool); },
             .eval = evalAveragePool});
  table.add({.kind = OpKind::LpPool,
             .parse = [](const ParseContext& c) { return parsePool(c, OpKind::LpPool); },
             .infer = [](const InferContext& c) { return inferPool(c, OpKind::LpPool); },
             .eval = evalLpPool});
  table.add(
      {.kind = OpKind::GlobalAveragePool, .infer = inferGlobalPool, .eval = evalGlobalAveragePool});
  table.add({.kind = OpKind::GlobalMaxPool, .infer = inferGlobalPool, .eval = evalGlobalMaxPool});
}

} // namespace triad::ir
