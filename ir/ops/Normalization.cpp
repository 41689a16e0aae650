// Normalizations (BatchNormalization in inference mode, InstanceNormalization,
// LayerNormalization, LRN) and the softmax-like ops (Softmax, LogSoftmax, Hardmax).
// Statistics and sums are accumulated in double and rounded once to the output type.
#include "ir/ops/Normalization.h"
#include "ir/ops/Conv.h"
#include "ir/ops/OpUtil.h"

#include <fmt/ranges.h>
#include <limits>

namespace triad::ir {
using namespace ops;

namespace {

void requireChannelVector(const InferContext& ctx, size_t i, int64_t C, std::string_view what) {
  const TensorType& t = ctx.in(i);
  requireFloat(t, what);
  if (t.shape != Shape{C})
    invalid("{} {} must have shape [{}] (the channels of X)", what, shapeToString(t.shape), C);
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization (inference only)

std::shared_ptr<const Attrs> parseBatchNorm(const ParseContext& ctx) {
  auto a = std::make_shared<NormAttrs>();
  a->epsilon = ctx.attrs.getFloat("epsilon", 1e-5f);
  (void)ctx.attrs.getFloat("momentum"); // only updates running statistics in training
  if (ctx.opset >= 14 && ctx.attrs.getInt("training_mode", 0) != 0)
    unsupported("attribute 'training_mode' = 1: only inference-mode BatchNormalization is "
                "supported");
  if (ctx.opset < 9 && ctx.attrs.getInt("spatial", 1) == 0)
    unsupported("attribute 'spatial' = 0 (per-activation statistics) is not supported");
  if (ctx.numOutputs > 1)
    unsupported("the node declares {} outputs; the running/saved statistics outputs exist only "
                "in training mode, and only inference (output Y alone) is supported",
                ctx.numOutputs);
  return a;
}

std::vector<TensorType> inferBatchNorm(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  requireFloat(X, "input X");
  requireRankAtLeast(X, 2, "input X");
  int64_t C = X.shape[1];
  requireChannelVector(ctx, 1, C, "input scale");
  requireChannelVector(ctx, 2, C, "input B");
  requireChannelVector(ctx, 3, C, "input mean");
  requireChannelVector(ctx, 4, C, "input var");
  return {X};
}

void evalBatchNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<NormAttrs>();
  const Tensor& X = ctx.in(0);
  std::vector<double> scale = ctx.in(1).toDoubleVector(), bias = ctx.in(2).toDoubleVector();
  std::vector<double> mean = ctx.in(3).toDoubleVector(), var = ctx.in(4).toDoubleVector();
  int64_t N = X.shape()[0], C = X.shape()[1];
  int64_t inner = numElements(X.shape(), 2, X.shape().size());
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        size_t ci = size_t(c);
        double inv = 1.0 / std::sqrt(var[ci] + double(a.epsilon));
        int64_t base = (n * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          y[base + i] = T((double(x[base + i]) - mean[ci]) * inv * scale[ci] + bias[ci]);
      }
  });
}

// ---------------------------------------------------------------------------------------------
// InstanceNormalization

std::shared_ptr<const Attrs> parseEpsilon(const ParseContext& ctx) {
  auto a = std::make_shared<NormAttrs>();
  a->epsilon = ctx.attrs.getFloat("epsilon", 1e-5f);
  return a;
}

std::vector<TensorType> inferInstanceNorm(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  requireFloat(X, "input X");
  requireRankAtLeast(X, 3, "input X");
  requireChannelVector(ctx, 1, X.shape[1], "input scale");
  requireChannelVector(ctx, 2, X.shape[1], "input B");
  requireSameDType(X, ctx.in(1), "inputs X and scale");
  requireSameDType(X, ctx.in(2), "inputs X and B");
  return {X};
}

void evalInstanceNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<NormAttrs>();
  const Tensor& X = ctx.in(0);
  std::vector<double> scale = ctx.in(1).toDoubleVector(), bias = ctx.in(2).toDoubleVector();
  int64_t N = X.shape()[0], C = X.shape()[1];
  int64_t inner = numElements(X.shape(), 2, X.shape().size());
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const T* xp = x + (n * C + c) * inner;
        T* yp = y + (n * C + c) * inner;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < inner; ++i)
          sum += double(xp[i]);
        double mean = sum / double(inner);
        for (int64_t i = 0; i < inner; ++i)
          sq += (double(xp[i]) - mean) * (double(xp[i]) - mean);
        double inv = 1.0 / std::sqrt(sq / double(inner) + double(a.epsilon));
        for (int64_t i = 0; i < inner; ++i)
          yp[i] = T((double(xp[i]) - mean) * inv * scale[size_t(c)] + bias[size_t(c)]);
      }
  });
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization

std::shared_ptr<const Attrs> parseLayerNorm(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input X");
  auto a = std::make_shared<LayerNormAttrs>();
  if (X.rank() < 1) invalid("input X must have rank >= 1, has shape {}", shapeToString(X.shape));
  a->axis = normalizeAxis(ctx.attrs.getInt("axis", -1), X.rank(), "attribute 'axis'");
  a->epsilon = ctx.attrs.getFloat("epsilon", 1e-5f);
  int64_t stash = ctx.attrs.getInt("stash_type", 1);
  if (stash != 1)
    unsupported("attribute 'stash_type' = {}; only 1 (float32 statistics) is supported", stash);
  return a;
}

std::vector<TensorType> inferLayerNorm(const InferContext& ctx) {
  const auto& a = ctx.as<LayerNormAttrs>();
  const TensorType& X = ctx.in(0);
  requireFloat(X, "input X");
  if (a.axis >= X.rank())
    invalid("axis {} is out of range for input X {}", a.axis, shapeToString(X.shape));
  Shape norm(X.shape.begin() + a.axis, X.shape.end());
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has(i)) continue;
    std::string_view what = i == 1 ? "input Scale" : "input B";
    requireSameDType(X, ctx.in(i), i == 1 ? "inputs X and Scale" : "inputs X and B");
    if (ctx.in(i).rank() > int64_t(norm.size()) || broadcastShapes(ctx.in(i).shape, norm) != norm)
      invalid("{} {} does not broadcast to the normalized shape {}", what,
              shapeToString(ctx.in(i).shape), shapeToString(norm));
  }
  Shape stat(X.shape.begin(), X.shape.begin() + a.axis);
  stat.resize(X.shape.size(), 1);
  return {X, TensorType{DType::F32, stat, {}}, TensorType{DType::F32, stat, {}}};
}

void evalLayerNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<LayerNormAttrs>();
  const Tensor& X = ctx.in(0);
  Shape norm(X.shape().begin() + a.axis, X.shape().end());
  int64_t outer = numElements(X.shape(), 0, size_t(a.axis)), inner = numElements(norm);
  std::vector<int64_t> smap, bmap;
  if (ctx.has(1)) smap = broadcastIndexMap(ctx.in(1).shape(), norm);
  if (ctx.has(2)) bmap = broadcastIndexMap(ctx.in(2).shape(), norm);
  float* meanOut = ctx.outputs.size() > 1 ? ctx.out(1).data<float>() : nullptr;
  float* invOut = ctx.outputs.size() > 2 ? ctx.out(2).data<float>() : nullptr;
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    const T* scale = ctx.has(1) ? ctx.in(1).data<T>() : nullptr;
    const T* bias = ctx.has(2) ? ctx.in(2).data<T>() : nullptr;
    T* y = ctx.out(0).data<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* xr = x + r * inner;
      T* yr = y + r * inner;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < inner; ++i)
        sum += double(xr[i]);
      double mean = sum / double(inner);
      for (int64_t i = 0; i < inner; ++i)
        sq += (double(xr[i]) - mean) * (double(xr[i]) - mean);
      double inv = 1.0 / std::sqrt(sq / double(inner) + double(a.epsilon));
      for (int64_t i = 0; i < inner; ++i) {
        // ONNX rounds the normalized value to T before applying Scale and B.
        double v = double(T((double(xr[i]) - mean) * inv));
        if (scale) v *= double(scale[smap[size_t(i)]]);
        if (bias) v += double(bias[bmap[size_t(i)]]);
        yr[i] = T(v);
      }
      if (meanOut) meanOut[r] = float(mean);
      if (invOut) invOut[r] = float(inv);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2) + epsilon) * Scale, the mean over the
// axes from 'axis' on; statistics in float or wider ('stash_type' 1).

std::vector<TensorType> inferRmsNorm(const InferContext& ctx) {
  return {inferLayerNorm(ctx).front()};
}

void evalRmsNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<LayerNormAttrs>();
  const Tensor& X = ctx.in(0);
  Shape norm(X.shape().begin() + a.axis, X.shape().end());
  int64_t outer = numElements(X.shape(), 0, size_t(a.axis)), inner = numElements(norm);
  std::vector<int64_t> smap = broadcastIndexMap(ctx.in(1).shape(), norm);
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    const T* scale = ctx.in(1).data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* xr = x + r * inner;
      double sq = 0;
      for (int64_t i = 0; i < inner; ++i)
        sq += double(xr[i]) * double(xr[i]);
      double inv = 1.0 / std::sqrt(sq / double(inner) + double(a.epsilon));
      // As the reference: the normalized value in T, then times Scale.
      for (int64_t i = 0; i < inner; ++i)
        y[r * inner + i] = T(double(T(double(xr[i]) * inv)) * double(scale[smap[size_t(i)]]));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// LpNormalization: Y = X / ||X||_p along 'axis' (p 1 or 2); a zero norm gives zeros.

std::shared_ptr<const Attrs> parseLpNorm(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input");
  auto a = std::make_shared<LpNormAttrs>();
  if (X.rank() < 1) invalid("input must have rank >= 1, has shape {}", shapeToString(X.shape));
  a->axis = normalizeAxis(ctx.attrs.getInt("axis", -1), X.rank(), "attribute 'axis'");
  a->p = ctx.attrs.getInt("p", 2);
  if (a->p != 1 && a->p != 2) invalid("attribute 'p' is {}; it must be 1 or 2", a->p);
  return a;
}

std::vector<TensorType> inferLpNorm(const InferContext& ctx) {
  requireFloat(ctx.in(0), "input");
  return {ctx.in(0)};
}

void evalLpNorm(const EvalContext& ctx) {
  const auto& a = ctx.as<LpNormAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& s = X.shape();
  int64_t outer = numElements(s, 0, size_t(a.axis)), dim = s[size_t(a.axis)];
  int64_t inner = numElements(s, size_t(a.axis) + 1, s.size());
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double norm = 0;
        for (int64_t k = 0; k < dim; ++k) {
          double v = double(x[(o * dim + k) * inner + i]);
          norm += a.p == 1 ? std::abs(v) : v * v;
        }
        if (a.p == 2) norm = std::sqrt(norm);
        for (int64_t k = 0; k < dim; ++k) {
          int64_t at = (o * dim + k) * inner + i;
          y[at] = norm == 0 ? T(0) : T(double(x[at]) / norm);
        }
      }
  });
}

// ---------------------------------------------------------------------------------------------
// LRN

std::shared_ptr<const Attrs> parseLRN(const ParseContext& ctx) {
  auto a = std::make_shared<LRNAttrs>();
  std::optional<int64_t> size = ctx.attrs.getInt("size");
  if (!size) invalid("attribute 'size' is required");
  if (*size < 1) invalid("attribute 'size' = {} must be positive", *size);
  a->size = *size;
  a->alpha = ctx.attrs.getFloat("alpha", 1e-4f);
  a->beta = ctx.attrs.getFloat("beta", 0.75f);
  a->bias = ctx.attrs.getFloat("bias", 1.0f);
  return a;
}

std::vector<TensorType> inferLRN(const InferContext& ctx) {
  requireFloat(ctx.in(0), "input X");
  requireRankAtLeast(ctx.in(0), 2, "input X");
  return {ctx.in(0)};
}

void evalLRN(const EvalContext& ctx) {
  const auto& a = ctx.as<LRNAttrs>();
  const Tensor& X = ctx.in(0);
  int64_t N = X.shape()[0], C = X.shape()[1];
  int64_t inner = numElements(X.shape(), 2, X.shape().size());
  int64_t before = (a.size - 1) / 2, after = a.size - 1 - before; // floor / ceil of (size-1)/2
  double scale = double(a.alpha) / double(a.size);
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(C - 1, c + after);
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t cc = lo; cc <= hi; ++cc) {
            double v = double(x[(n * C + cc) * inner + i]);
            sq += v * v;
          }
          int64_t at = (n * C + c) * inner + i;
          y[at] = T(double(x[at]) / std::pow(double(a.bias) + scale * sq, double(a.beta)));
        }
      }
  });
}

// ---------------------------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax

std::shared_ptr<const Attrs> parseSoftmax(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input");
  auto a = std::make_shared<SoftmaxAttrs>();
  int64_t rank = X.rank();
  if (ctx.opset < 13) {
    // Coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])]: the op spans axis..rank-1.
    int64_t axis = ctx.attrs.getInt("axis", 1);
    if (rank == 0) return a;
    if (axis < -rank || axis > rank)
      invalid("attribute 'axis' = {} is out of range for rank {}", axis, rank);
    if (axis < 0) axis += rank;
    for (int64_t d = axis; d < rank; ++d)
      a->axes.push_back(d);
  } else {
    int64_t axis = ctx.attrs.getInt("axis", -1);
    if (rank == 0) return a;
    a->axes.push_back(normalizeAxis(axis, rank, "attribute 'axis'"));
  }
  return a;
}

std::vector<TensorType> inferSoftmax(const InferContext& ctx) {
  const auto& a = ctx.as<SoftmaxAttrs>();
  requireFloat(ctx.in(0), "input");
  for (size_t i = 0; i < a.axes.size(); ++i)
    if (a.axes[i] >= ctx.in(0).rank() || (i > 0 && a.axes[i] != a.axes[i - 1] + 1))
      invalid("axes [{}] are not contiguous dims of input {}", fmt::join(a.axes, ","),
              shapeToString(ctx.in(0).shape));
  return {ctx.in(0)};
}

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

template <typename T> void softmaxKernel(const EvalContext& ctx, SoftmaxKind kind) {
  const auto& a = ctx.as<SoftmaxAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& s = X.shape();
  // View X as [outer, len, inner]; the op runs along len.
  size_t first = a.axes.empty() ? s.size() : size_t(a.axes.front());
  size_t last = a.axes.empty() ? s.size() : size_t(a.axes.back()) + 1;
  int64_t outer = numElements(s, 0, first), len = numElements(s, first, last);
  int64_t inner = numElements(s, last, s.size());
  const T* x = X.data<T>();
  T* y = ctx.out(0).data<T>();
  std::vector<double> e(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      auto at = [&](int64_t j) { return base + j * inner; };
      double mx = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t j = 0; j < len; ++j)
        if (double(x[at(j)]) > mx || j == 0) {
          mx = double(x[at(j)]);
          arg = j;
        }
      if (kind == SoftmaxKind::Hardmax) {
        for (int64_t j = 0; j < len; ++j)
          y[at(j)] = T(j == arg ? 1.0 : 0.0);
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        e[size_t(j)] = std::exp(double(x[at(j)]) - mx);
        sum += e[size_t(j)];
      }
      double logSum = std::log(sum);
      for (int64_t j = 0; j < len; ++j)
        y[at(j)] = kind == SoftmaxKind::Softmax ? T(e[size_t(j)] / sum)
                                                : T(double(x[at(j)]) - mx - logSum);
    }
}

EvalFn softmaxEval(SoftmaxKind kind) {
  return [kind](const EvalContext& ctx) {
    visitFloat(ctx.in(0).dtype(), [&](auto tag) { softmaxKernel<decltype(tag)>(ctx, kind); });
  };
}

} // namespace

void registerNormalizationOps(OpTable& table) {
  table.add({.kind = OpKind::BatchNormalization,
             .minInputs = 5,
             .maxInputs = 5,
             .minOutputs = 1,
             .maxOutputs = 5, // outputs past Y exist only in training mode (refused by parse)
             .parse = parseBatchNorm,
             .infer = inferBatchNorm,
             .eval = evalBatchNorm});
  table.add({.kind = OpKind::InstanceNormalization,
             .minInputs = 3,
             .maxInputs = 3,
             .parse = parseEpsilon,
             .infer = inferInstanceNorm,
             .eval = evalInstanceNorm});
  table.add({.kind = OpKind::LayerNormalization,
             .minInputs = 2,
             .maxInputs = 3,
             .minOutputs = 1,
             .maxOutputs = 3,
             .sinceOpset = 17,
             .parse = parseLayerNorm,
             .infer = inferLayerNorm,
             .eval = evalLayerNorm});
  table.add({.kind = OpKind::RMSNormalization,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 23,
             .parse = parseLayerNorm, // the same attributes: axis, epsilon, stash_type
             .infer = inferRmsNorm,
             .eval = evalRmsNorm});
  table.add({.kind = OpKind::LpNormalization,
             .parse = parseLpNorm,
             .infer = inferLpNorm,
             .eval = evalLpNorm});
  table.add({.kind = OpKind::LRN, .parse = parseLRN, .infer = inferLRN, .eval = evalLRN});
  for (auto [kind, sk] : {std::pair{OpKind::Softmax, SoftmaxKind::Softmax},
                          std::pair{OpKind::LogSoftmax, SoftmaxKind::LogSoftmax},
                          std::pair{OpKind::Hardmax, SoftmaxKind::Hardmax}})
    table.add(
        {.kind = kind, .parse = parseSoftmax, .infer = inferSoftmax, .eval = softmaxEval(sk)});
}

} // namespace triad::ir
