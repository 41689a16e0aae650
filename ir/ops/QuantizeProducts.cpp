// Integer products of the Quantize family (registered by registerQuantizeOps in Quantize.cpp):
//   MatMulInteger  Y(int32) = (A - a_zp) x (B - b_zp)                 (numpy matmul shapes)
//   QLinearMatMul  y = saturate(round((A - a_zp) x (B - b_zp) * a_s*b_s/y_s) + y_zp)
//   ConvInteger    Y(int32) = conv(X - x_zp, W - w_zp)                 (Conv's attributes)
//   QLinearConv    y = saturate(round((conv(X - x_zp, W - w_zp) + B) * x_s*w_s/y_s) + y_zp)
// Operands are shifted by their zero points into int32 first; padding reads the zero point
// (0 after the shift). Sums are exact in int64 and wrap to int32 as ONNX Runtime's int32
// accumulators do; the requantization multiplier and the scaling are float, as in ONNX Runtime.
// A's zero point / scale may be per row ([M], or an N-D shape broadcasting to A for
// MatMulInteger), B's per column ([N]); W's per output channel ([M]).
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/OpUtil.h"
#include "ir/ops/Quantize.h"

#include <fmt/ranges.h>

namespace triad::ir {
using namespace ops;

namespace {

bool isInt8(DType t) {
  return t == DType::U8 || t == DType::I8;
}
bool isPerTensor(const Shape& s) {
  return s.size() <= 1 && numElements(s) == 1;
}

void requireInt8(const TensorType& t, std::string_view what) {
  if (!isInt8(t.dtype))
    unsupported("{} has element type {}; only uint8 and int8 are supported", what,
                dtypeName(t.dtype));
}

void requirePerTensor(const TensorType& t, std::string_view what) {
  if (!isPerTensor(t.shape))
    invalid("{} {} must have one element (per-tensor quantization)", what, shapeToString(t.shape));
}

/// A scale or zero point that is per tensor or a 1-D vector of `n` elements.
void requirePerTensorOr(const TensorType& t, int64_t n, std::string_view what,
                        std::string_view perWhat) {
  if (!isPerTensor(t.shape) && t.shape != Shape{n})
    invalid("{} {} must have one element or shape [{}] ({})", what, shapeToString(t.shape), n,
            perWhat);
}

/// Float scales (any float dtype) as float, the precision ONNX Runtime requantizes in.
std::vector<float> floatsOf(const Tensor& t) {
  std::vector<double> d = t.toDoubleVector();
  return {d.begin(), d.end()};
}

/// `t` minus its zero point `zp` (nullptr: 0) as int32, `zpShape` being the zero point's shape
/// broadcast against t's (empty for a per-tensor zero point).
std::vector<int32_t> shifted(const Tensor& t, const Tensor* zp, const Shape& zpShape) {
  std::vector<int64_t> z = zp ? zp->toInt64Vector() : std::vector<int64_t>{0};
  std::vector<int64_t> map;
  if (z.size() > 1) map = broadcastIndexMap(zpShape, t.shape());
  std::vector<int32_t> out(size_t(t.numElements()));
  visitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = t.data<T>();
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = int32_t(int64_t(p[i]) - z[map.empty() ? 0 : size_t(map[i])]);
    } else {
      TRIAD_ASSERT(false, "integer product of {}", dtypeName(t.dtype()));
    }
  });
  return out;
}

/// Writes saturate(roundHalfEven(acc[i] * mult[param(i)]) + zp) into y (uint8 or int8).
template <typename P>
void requantize(const std::vector<int32_t>& acc, const std::vector<float>& mult, int64_t zp,
                Tensor& y, P&& param) {
  visitDType(y.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    if constexpr (std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t>) {
      Q* out = y.data<Q>();
      for (size_t i = 0; i < acc.size(); ++i)
        out[i] = quantizeValue<Q>(float(acc[i]) * mult[size_t(param(int64_t(i)))], zp);
    } else {
      TRIAD_ASSERT(false, "requantize to {}", dtypeName(y.dtype()));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Integer matmul

/// numpy matmul: 1-D operands are promoted (A: [K] -> [1,K], B: [K] -> [K,1]) and the promoted
/// dim removed from the result; batch dims broadcast.
/// The zero point's shape as it broadcasts against A ([..., M, K]): per tensor -> [], a per-row
/// vector [M] -> [M, 1], N-D shapes ([..., M, 1]) as they are.
Shape zpShapeForA(const Shape& zp, const Shape& a) {
  if (isPerTensor(zp)) return {};
  if (zp.size() == 1 && a.size() >= 2) return {zp[0], 1};
  return zp;
}
/// Same for B ([..., K, N]): a per-column vector [N] broadcasts as it is.
Shape zpShapeForB(const Shape& zp) {
  return isPerTensor(zp) ? Shape{} : zp;
}

void requireBroadcastsTo(const Shape& p, const Shape& operand, const Shape& original,
                         std::string_view what) {
  bool ok = p.size() <= operand.size();
  for (size_t i = 0; ok && i < p.size(); ++i) {
    int64_t d = p[p.size() - 1 - i], o = operand[operand.size() - 1 - i];
    ok = d == 1 || d == o;
  }
  if (!ok)
    invalid("{} {} does not broadcast to its operand {}", what, shapeToString(original),
            shapeToString(operand));
}

/// Y[b, m, n] = sum_k A[b, m, k] * B[b, k, n] over int32 operands, wrapping to int32.
std::vector<int32_t> matmulInt(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                               const MatMulShapes& s) {
  std::vector<int64_t> amap = broadcastIndexMap(s.aBatch, s.batch);
  std::vector<int64_t> bmap = broadcastIndexMap(s.bBatch, s.batch);
  int64_t nb = numElements(s.batch), M = s.M, K = s.K, N = s.N;
  std::vector<int32_t> y(size_t(nb * M * N));
  std::vector<int64_t> row(static_cast<size_t>(N));
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int32_t* a0 = a.data() + amap[size_t(bi)] * M * K;
    const int32_t* b0 = b.data() + bmap[size_t(bi)] * K * N;
    int32_t* y0 = y.data() + bi * M * N;
    for (int64_t m = 0; m < M; ++m) {
      std::fill(row.begin(), row.end(), 0);
      for (int64_t k = 0; k < K; ++k) {
        int64_t av = a0[m * K + k];
        if (av == 0) continue;
        const int32_t* brow = b0 + k * N;
        for (int64_t n = 0; n < N; ++n)
          row[size_t(n)] += av * brow[n];
      }
      for (int64_t n = 0; n < N; ++n)
        y0[m * N + n] = int32_t(row[size_t(n)]); // modular, as int32 accumulation
    }
  }
  return y;
}

// MatMulInteger: A, B, a_zero_point?, b_zero_point?
std::vector<TensorType> inferMatMulInteger(const InferContext& ctx) {
  const TensorType& A = ctx.in(0);
  const TensorType& B = ctx.in(1);
  requireInt8(A, "input A");
  requireInt8(B, "input B");
  MatMulShapes s = matmulShapes(A.shape, B.shape);
  if (ctx.has(2)) {
    requireSameDType(A, ctx.in(2), "inputs A and a_zero_point");
    requireBroadcastsTo(zpShapeForA(ctx.in(2).shape, A.shape), A.shape, ctx.in(2).shape,
                        "input a_zero_point");
  }
  if (ctx.has(3)) {
    requireSameDType(B, ctx.in(3), "inputs B and b_zero_point");
    requireBroadcastsTo(zpShapeForB(ctx.in(3).shape), B.shape, ctx.in(3).shape,
                        "input b_zero_point");
  }
  return {TensorType{DType::I32, s.out, {}}};
}

void evalMatMulInteger(const EvalContext& ctx) {
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(1);
  const Tensor* azp = ctx.has(2) ? &ctx.in(2) : nullptr;
  const Tensor* bzp = ctx.has(3) ? &ctx.in(3) : nullptr;
  std::vector<int32_t> a = shifted(A, azp, azp ? zpShapeForA(azp->shape(), A.shape()) : Shape{});
  std::vector<int32_t> b = shifted(B, bzp, bzp ? zpShapeForB(bzp->shape()) : Shape{});
  std::vector<int32_t> y = matmulInt(a, b, matmulShapes(A.shape(), B.shape()));
  std::copy(y.begin(), y.end(), ctx.out(0).data<int32_t>());
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
std::vector<TensorType> inferQLinearMatMul(const InferContext& ctx) {
  const TensorType& A = ctx.in(0);
  const TensorType& B = ctx.in(3);
  requireInt8(A, "input a");
  requireInt8(B, "input b");
  requireInt8(ctx.in(7), "input y_zero_point");
  requireSameDType(A, ctx.in(2), "inputs a and a_zero_point");
  requireSameDType(B, ctx.in(5), "inputs b and b_zero_point");
  for (size_t i : {1, 4, 6})
    requireFloat(ctx.in(i), i == 1 ? "input a_scale" : i == 4 ? "input b_scale" : "input y_scale");
  MatMulShapes s = matmulShapes(A.shape, B.shape);
  requirePerTensorOr(ctx.in(1), s.M, "input a_scale", "per-row quantization of a");
  requirePerTensorOr(ctx.in(2), s.M, "input a_zero_point", "per-row quantization of a");
  requirePerTensorOr(ctx.in(4), s.N, "input b_scale", "per-column quantization of b");
  requirePerTensorOr(ctx.in(5), s.N, "input b_zero_point", "per-column quantization of b");
  requirePerTensor(ctx.in(6), "input y_scale");
  requirePerTensor(ctx.in(7), "input y_zero_point");
  return {TensorType{ctx.in(7).dtype, s.out, {}}};
}

void evalQLinearMatMul(const EvalContext& ctx) {
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(3);
  MatMulShapes s = matmulShapes(A.shape(), B.shape());
  std::vector<int32_t> a = shifted(A, &ctx.in(2), zpShapeForA(ctx.in(2).shape(), A.shape()));
  std::vector<int32_t> b = shifted(B, &ctx.in(5), zpShapeForB(ctx.in(5).shape()));
  std::vector<int32_t> acc = matmulInt(a, b, s);
  // mult[m, n] = a_scale[m] * b_scale[n] / y_scale, in float as ONNX Runtime computes it.
  std::vector<float> as = floatsOf(ctx.in(1)), bs = floatsOf(ctx.in(4));
  float ys = floatsOf(ctx.in(6))[0];
  int64_t M = s.M, N = s.N;
  std::vector<float> mult(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      mult[size_t(m * N + n)] =
          as[as.size() == 1 ? 0 : size_t(m)] * bs[bs.size() == 1 ? 0 : size_t(n)] / ys;
  requantize(acc, mult, ctx.in(7).getInt(0), ctx.out(0), [&](int64_t i) { return i % (M * N); });
}

// ---------------------------------------------------------------------------------------------
// Integer convolution

/// Conv attributes of ConvInteger (w = input 1) and QLinearConv (w = input 3).
std::shared_ptr<const Attrs> parseIntConv(const ParseContext& ctx, size_t wIndex) {
  const TensorType& X = parseInputType(ctx, 0, "input x");
  const TensorType& W = parseInputType(ctx, wIndex, "input w");
  if (X.rank() < 3)
    invalid("input x must have rank >= 3 ([N, C, spatial...]), has shape {}",
            shapeToString(X.shape));
  size_t k = size_t(X.rank() - 2);
  auto a = std::make_shared<ConvAttrs>();
  a->kernel = intsOr(ctx.attrs, "kernel_shape", spatialOf(W.shape));
  if (a->kernel.size() != k)
    invalid("attribute 'kernel_shape' = [{}] does not match the {} spatial dims of input x {}",
            fmt::join(a->kernel, ","), k, shapeToString(X.shape));
  for (int64_t v : a->kernel)
    if (v < 1)
      invalid("attribute 'kernel_shape' = [{}] must be positive", fmt::join(a->kernel, ","));
  WindowParams w = parseWindow(ctx.attrs, spatialOf(X.shape), a->kernel);
  a->strides = w.strides;
  a->pads = w.pads;
  a->dilations = w.dilations;
  a->group = ctx.attrs.getInt("group", 1);
  if (a->group < 1) invalid("attribute 'group' = {} must be positive", a->group);
  return a;
}

/// Shape of a per-output-channel zero point [M] broadcast against w [M, C/group, k...].
Shape channelParamShape(const Shape& zp, const Shape& w) {
  if (isPerTensor(zp)) return {};
  Shape s(w.size(), 1);
  s[0] = zp[0];
  return s;
}

/// acc[n, m, o] = sum_{c < C/group, tap} x[n, g*C/group + c, o*s + tap*d - pad] * w[m, c, tap]
/// over the shifted int32 operands (g = m's group; positions in the padding read 0).
std::vector<int32_t> convInt(const ConvAttrs& a, const std::vector<int32_t>& x, const Shape& xs,
                             const std::vector<int32_t>& w, const Shape& ys) {
  Shape inSp = spatialOf(xs), outSp = spatialOf(ys);
  int64_t N = xs[0], C = xs[1], M = ys[1];
  int64_t Cg = C / a.group, Mg = M / a.group;
  int64_t inSize = numElements(inSp), outSize = numElements(outSp);
  int64_t taps = numElements(a.kernel), rows = Cg * taps;
  // src[tap * outSize + o]: input spatial offset read by output position o at that tap.
  std::vector<int64_t> src =
      windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  std::vector<int32_t> col(size_t(rows * outSize)); // [Cg * taps, outSize]
  std::vector<int64_t> acc(static_cast<size_t>(outSize));
  std::vector<int32_t> y(size_t(N * M * outSize));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < a.group; ++g) {
      for (int64_t c = 0; c < Cg; ++c) {
        const int32_t* plane = x.data() + (n * C + g * Cg + c) * inSize;
        for (int64_t t = 0; t < taps; ++t) {
          int32_t* row = col.data() + (c * taps + t) * outSize;
          const int64_t* s = src.data() + t * outSize;
          for (int64_t o = 0; o < outSize; ++o)
            row[o] = s[o] < 0 ? 0 : plane[s[o]];
        }
      }
      for (int64_t m = 0; m < Mg; ++m) {
        std::fill(acc.begin(), acc.end(), 0);
        const int32_t* wrow = w.data() + (g * Mg + m) * rows;
        for (int64_t r = 0; r < rows; ++r) {
          int64_t wv = wrow[r];
          if (wv == 0) continue;
          const int32_t* crow = col.data() + r * outSize;
          for (int64_t o = 0; o < outSize; ++o)
            acc[size_t(o)] += wv * crow[o];
        }
        int32_t* yrow = y.data() + (n * M + g * Mg + m) * outSize;
        for (int64_t o = 0; o < outSize; ++o)
          yrow[o] = int32_t(acc[size_t(o)]);
      }
    }
  return y;
}

// ConvInteger: x, w, x_zero_point?, w_zero_point?
std::shared_ptr<const Attrs> parseConvInteger(const ParseContext& ctx) {
  return parseIntConv(ctx, 1);
}

std::vector<TensorType> inferConvInteger(const InferContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& W = ctx.in(1);
  requireInt8(X, "input x");
  requireInt8(W, "input w");
  Shape out = convOutputShape(a, X, W, "x", "w");
  if (ctx.has(2)) {
    requireSameDType(X, ctx.in(2), "inputs x and x_zero_point");
    requirePerTensor(ctx.in(2), "input x_zero_point");
  }
  if (ctx.has(3)) {
    requireSameDType(W, ctx.in(3), "inputs w and w_zero_point");
    requirePerTensorOr(ctx.in(3), W.shape[0], "input w_zero_point",
                       "per-output-channel quantization");
  }
  return {TensorType{DType::I32, out, {}}};
}

void evalConvInteger(const EvalContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const Tensor& X = ctx.in(0);
  const Tensor& W = ctx.in(1);
  const Tensor* wzp = ctx.has(3) ? &ctx.in(3) : nullptr;
  std::vector<int32_t> x = shifted(X, ctx.has(2) ? &ctx.in(2) : nullptr, {});
  std::vector<int32_t> w =
      shifted(W, wzp, wzp ? channelParamShape(wzp->shape(), W.shape()) : Shape{});
  std::vector<int32_t> y = convInt(a, x, X.shape(), w, ctx.out(0).shape());
  std::copy(y.begin(), y.end(), ctx.out(0).data<int32_t>());
}

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?
std::shared_ptr<const Attrs> parseQLinearConv(const ParseContext& ctx) {
  return parseIntConv(ctx, 3);
}

std::vector<TensorType> inferQLinearConv(const InferContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& W = ctx.in(3);
  requireInt8(X, "input x");
  requireInt8(W, "input w");
  requireInt8(ctx.in(7), "input y_zero_point");
  requireSameDType(X, ctx.in(2), "inputs x and x_zero_point");
  requireSameDType(W, ctx.in(5), "inputs w and w_zero_point");
  for (size_t i : {1, 4, 6})
    requireFloat(ctx.in(i), i == 1 ? "input x_scale" : i == 4 ? "input w_scale" : "input y_scale");
  Shape out = convOutputShape(a, X, W, "x", "w");
  int64_t M = W.shape[0];
  requirePerTensor(ctx.in(1), "input x_scale");
  requirePerTensor(ctx.in(2), "input x_zero_point");
  requirePerTensorOr(ctx.in(4), M, "input w_scale", "per-output-channel quantization");
  requirePerTensorOr(ctx.in(5), M, "input w_zero_point", "per-output-channel quantization");
  requirePerTensor(ctx.in(6), "input y_scale");
  requirePerTensor(ctx.in(7), "input y_zero_point");
  if (ctx.has(8)) {
    if (ctx.in(8).dtype != DType::I32)
      invalid("input B has element type {}; it must be int32", dtypeName(ctx.in(8).dtype));
    if (ctx.in(8).shape != Shape{M})
      invalid("input B {} must have shape [{}]", shapeToString(ctx.in(8).shape), M);
  }
  return {TensorType{ctx.in(7).dtype, out, {}}};
}

void evalQLinearConv(const EvalContext& ctx) {
  const auto& a = ctx.as<ConvAttrs>();
  const Tensor& X = ctx.in(0);
  const Tensor& W = ctx.in(3);
  Tensor& Y = ctx.out(0);
  std::vector<int32_t> x = shifted(X, &ctx.in(2), {});
  std::vector<int32_t> w = shifted(W, &ctx.in(5), channelParamShape(ctx.in(5).shape(), W.shape()));
  std::vector<int32_t> acc = convInt(a, x, X.shape(), w, Y.shape());
  int64_t M = Y.shape()[1];
  int64_t outSize = Y.numElements() / (Y.shape()[0] * M);
  if (ctx.has(8)) {
    const int32_t* bias = ctx.in(8).data<int32_t>();
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] = int32_t(int64_t(acc[i]) + bias[(int64_t(i) / outSize) % M]);
  }
  // mult[m] = x_scale * w_scale[m] / y_scale, in float as ONNX Runtime computes it.
  float xs = floatsOf(ctx.in(1))[0], ys = floatsOf(ctx.in(6))[0];
  std::vector<float> ws = floatsOf(ctx.in(4));
  std::vector<float> mult(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m)
    mult[size_t(m)] = xs * ws[ws.size() == 1 ? 0 : size_t(m)] / ys;
  requantize(acc, mult, ctx.in(7).getInt(0), Y, [&](int64_t i) { return (i / outSize) % M; });
}

// ---------------------------------------------------------------------------------------------
// MACs

int64_t macsMatMulLike(const InferContext& ctx, std::span<const TensorType> outs, size_t a) {
  return outs[0].numElements() * ctx.in(a).shape.back();
}

int64_t macsConvLike(const InferContext& ctx, std::span<const TensorType> outs, size_t w) {
  const Shape& ws = ctx.in(w).shape;
  int64_t perOutput = 1;
  for (size_t i = 1; i < ws.size(); ++i)
    perOutput *= ws[i];
  return outs[0].numElements() * perOutput;
}

} // namespace

void registerQuantizeProducts(OpTable& table) {
  table.add({.kind = OpKind::MatMulInteger,
             .minInputs = 2,
             .maxInputs = 4,
             .sinceOpset = 10,
             .infer = inferMatMulInteger,
             .eval = evalMatMulInteger,
             .macs = [](const InferContext& c, std::span<const TensorType> o) {
               return macsMatMulLike(c, o, 0);
             }});
  table.add({.kind = OpKind::QLinearMatMul,
             .minInputs = 8,
             .maxInputs = 8,
             .sinceOpset = 10,
             .infer = inferQLinearMatMul,
             .eval = evalQLinearMatMul,
             .macs = [](const InferContext& c, std::span<const TensorType> o) {
               return macsMatMulLike(c, o, 0);
             }});
  table.add({.kind = OpKind::ConvInteger,
             .minInputs = 2,
             .maxInputs = 4,
             .sinceOpset = 10,
             .parse = parseConvInteger,
             .infer = inferConvInteger,
             .eval = evalConvInteger,
             .macs = [](const InferContext& c, std::span<const TensorType> o) {
               return macsConvLike(c, o, 1);
             }});
  table.add({.kind = OpKind::QLinearConv,
             .minInputs = 8,
             .maxInputs = 9,
             .sinceOpset = 10,
             .parse = parseQLinearConv,
             .infer = inferQLinearConv,
             .eval = evalQLinearConv,
             .macs = [](const InferContext& c, std::span<const TensorType> o) {
               return macsConvLike(c, o, 3);
             }});
}

} // namespace triad::ir
