// Integer quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (here) and
// the integer products QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger
// (QuantizeProducts.cpp).
//
// Float arithmetic follows ONNX Runtime: scales, divisions and requantization multipliers are
// computed in float (double for f64 tensors), products of integers are accumulated exactly and
// wrap to int32 like ONNX Runtime's int32 accumulators; rounding is half to even.
#include "ir/ops/Quantize.h"
#include "ir/ops/Conv.h"
#include "ir/ops/OpUtil.h"

namespace triad::ir {
using namespace ops;

void registerQuantizeProducts(OpTable& table); // QuantizeProducts.cpp
void registerQuantizeQonnx(OpTable& table);    // QuantizeQonnx.cpp

namespace {

bool isQuantType(DType t) {
  return dtypeIn(t, {DType::U8, DType::I8, DType::U16, DType::I16});
}

bool isPerTensor(const Shape& s) {
  return s.size() <= 1 && numElements(s) == 1;
}

/// Reads axis / block_size of QuantizeLinear and DequantizeLinear (input 0 is x, input 1 the
/// scale) and decides the granularity from the scale's shape.
QuantAxisAttrs parseQuantAxis(const ParseContext& ctx) {
  const TensorType& X = parseInputType(ctx, 0, "input x");
  const TensorType& S = parseInputType(ctx, 1, "input scale");
  QuantAxisAttrs a;
  int64_t axis = ctx.opset >= 13 ? ctx.attrs.getInt("axis", 1) : 1;
  int64_t blockSize = ctx.opset >= 21 ? ctx.attrs.getInt("block_size", 0) : 0;
  if (blockSize < 0) invalid("attribute 'block_size' = {} must be non-negative", blockSize);
  if (blockSize == 0 && isPerTensor(S.shape)) return a; // axis is irrelevant
  if (ctx.opset < 13)
    invalid("input scale {} must be a scalar before opset 13 (per-axis quantization needs "
            "opset 13)",
            shapeToString(S.shape));
  a.axis = normalizeAxis(axis, X.rank(), "attribute 'axis'");
  a.blockSize = blockSize;
  return a;
}

/// Checks the scale (input 1) and optional zero point (input 2) against x (input 0).
void checkQuantParams(const InferContext& ctx, int64_t axis, int64_t blockSize) {
  const TensorType& X = ctx.in(0);
  const TensorType& S = ctx.in(1);
  requireFloat(S, "input scale");
  if (axis < 0) {
    if (!isPerTensor(S.shape))
      invalid("input scale {} must have one element (per-tensor quantization)",
              shapeToString(S.shape));
  } else if (axis >= X.rank()) {
    invalid("axis {} is out of range for input x {}", axis, shapeToString(X.shape));
  } else if (blockSize == 0) {
    if (S.shape != Shape{X.shape[size_t(axis)]})
      invalid("input scale {} must have shape [{}] (dim {} of input x {}) for per-axis "
              "quantization",
              shapeToString(S.shape), X.shape[size_t(axis)], axis, shapeToString(X.shape));
  } else {
    Shape want = X.shape;
    want[size_t(axis)] = (X.shape[size_t(axis)] + blockSize - 1) / blockSize;
    if (S.shape != want)
      invalid("input scale {} must have shape {} (input x {} in blocks of {} along axis {})",
              shapeToString(S.shape), shapeToString(want), shapeToString(X.shape), blockSize, axis);
  }
  const TensorType* zp = ctx.has(2) ? &ctx.in(2) : nullptr;
  // Per tensor: any one-element shape ([] or [1]) for either; otherwise the same shape.
  if (zp && zp->shape != S.shape && !(axis < 0 && isPerTensor(zp->shape)))
    invalid("input zero_point {} must have the shape of input scale {}", shapeToString(zp->shape),
            shapeToString(S.shape));
}

/// x viewed as [outer, axisDim, inner] around the quantization axis, and the index of the scale
/// / zero point of each element.
struct QuantLayout {
  int64_t outer = 1, axisDim = 1, inner = 1;
  int64_t blockSize = 0, numBlocks = 1;
  bool perTensor = true;

  QuantLayout(const Shape& x, int64_t axis, int64_t bs) : blockSize(bs) {
    if (axis < 0) {
      inner = numElements(x);
      return;
    }
    perTensor = false;
    for (int64_t d = 0; d < int64_t(x.size()); ++d)
      (d < axis ? outer : d == axis ? axisDim : inner) *= x[size_t(d)];
    if (bs > 0) numBlocks = (axisDim + bs - 1) / bs;
  }
  /// Calls f(elementIndex, paramIndex) for every element in order.
  template <typename F> void forEach(F&& f) const {
    int64_t e = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < axisDim; ++a) {
        if (perTensor || blockSize == 0) {
          int64_t p = perTensor ? 0 : a;
          for (int64_t i = 0; i < inner; ++i)
            f(e++, p);
        } else {
          int64_t p0 = (o * numBlocks + a / blockSize) * inner;
          for (int64_t i = 0; i < inner; ++i)
            f(e++, p0 + i);
        }
      }
  }
};

/// Zero points as int64 (all zero when the optional input is absent).
std::vector<int64_t> zeroPoints(const EvalContext& ctx, size_t i, int64_t count) {
  if (ctx.has(i)) return ctx.in(i).toInt64Vector();
  return std::vector<int64_t>(size_t(count), 0);
}

// ---------------------------------------------------------------------------------------------
// QuantizeLinear

std::shared_ptr<const Attrs> parseQuantize(const ParseContext& ctx) {
  QuantAxisAttrs q = parseQuantAxis(ctx);
  auto a = std::make_shared<QuantizeLinearAttrs>();
  a->axis = q.axis;
  a->blockSize = q.blockSize;
  if (ctx.opset >= 19) (void)ctx.attrs.getInt("saturate"); // only affects float8 outputs
  // 'precision' (opset 23): the float type of the division x / y_scale, by default y_scale's.
  // Triad divides in y_scale's type (f32 also for f16 scales, as ONNX Runtime does), so only
  // that type is accepted.
  if (std::optional<int64_t> precision =
          ctx.opset >= 23 ? ctx.attrs.getInt("precision") : std::nullopt;
      precision && *precision != 0) {
    std::optional<DType> p = dtypeFromOnnx(int32_t(*precision));
    if (!p || !isFloat(*p))
      invalid("attribute 'precision' = {} ({}) is not a float type", *precision,
              onnxElemTypeName(int32_t(*precision)));
    if (ctx.hasInput(1) && *p != ctx.inputTypes[1]->dtype)
      unsupported("attribute 'precision' = {} divides in {}, not in the type of y_scale ({})",
                  *precision, dtypeName(*p), dtypeName(ctx.inputTypes[1]->dtype));
  }
  std::optional<int64_t> outDType =
      ctx.opset >= 21 ? ctx.attrs.getInt("output_dtype") : std::nullopt;
  if (ctx.hasInput(2)) {
    a->outputType = ctx.inputTypes[2]->dtype;
    if (outDType && *outDType != 0 && dtypeFromOnnx(int32_t(*outDType)) != a->outputType)
      invalid("attribute 'output_dtype' = {} differs from the type of input y_zero_point ({})",
              *outDType, dtypeName(a->outputType));
  } else if (outDType && *outDType != 0) {
    std::optional<DType> t = dtypeFromOnnx(int32_t(*outDType));
    if (!t)
      unsupported("attribute 'output_dtype' = {} ({}) is not supported", *outDType,
                  onnxElemTypeName(int32_t(*outDType)));
    a->outputType = *t;
  }
  return a;
}

std::vector<TensorType> inferQuantize(const InferContext& ctx) {
  const auto& a = ctx.as<QuantizeLinearAttrs>();
  const TensorType& X = ctx.in(0);
  if (!isFloat(X.dtype) && X.dtype != DType::I32)
    unsupported("input x has element type {}; QuantizeLinear supports f32, f16, f64 and int32",
                dtypeName(X.dtype));
  if (!isQuantType(a.outputType))
    unsupported("quantized type {} is not supported (uint8, int8, uint16, int16 are)",
                dtypeName(a.outputType));
  if (ctx.has(2) && ctx.in(2).dtype != a.outputType)
    invalid("input y_zero_point has element type {}, expected {}", dtypeName(ctx.in(2).dtype),
            dtypeName(a.outputType));
  checkQuantParams(ctx, a.axis, a.blockSize);
  return {TensorType{a.outputType, X.shape, {}}};
}

template <typename X, typename Q>
void quantizeKernel(const EvalContext& ctx, const QuantLayout& layout) {
  // ONNX Runtime divides in float (double for f64 input, which it does not define).
  using F = std::conditional_t<std::is_same_v<X, double>, double, float>;
  std::vector<double> s = ctx.in(1).toDoubleVector();
  std::vector<F> scale(s.begin(), s.end());
  std::vector<int64_t> zp = zeroPoints(ctx, 2, int64_t(scale.size()));
  const X* x = ctx.in(0).data<X>();
  Q* y = ctx.out(0).data<Q>();
  layout.forEach([&](int64_t e, int64_t p) {
    y[e] = quantizeValue<Q>(F(x[e]) / scale[size_t(p)], zp[size_t(p)]);
  });
}

void evalQuantize(const EvalContext& ctx) {
  const auto& a = ctx.as<QuantizeLinearAttrs>();
  QuantLayout layout(ctx.in(0).shape(), a.axis, a.blockSize);
  visitDType(ctx.in(0).dtype(), [&](auto xtag) {
    using X = decltype(xtag);
    if constexpr (std::is_same_v<X, int32_t> || std::is_same_v<X, float> ||
                  std::is_same_v<X, double> || std::is_same_v<X, Half>) {
      visitDType(a.outputType, [&](auto qtag) {
        using Q = decltype(qtag);
        if constexpr (std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t> ||
                      std::is_same_v<Q, uint16_t> || std::is_same_v<Q, int16_t>)
          quantizeKernel<X, Q>(ctx, layout);
        else
          TRIAD_ASSERT(false, "QuantizeLinear to {}", dtypeName(a.outputType));
      });
    } else {
      TRIAD_ASSERT(false, "QuantizeLinear from {}", dtypeName(ctx.in(0).dtype()));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// DequantizeLinear

std::shared_ptr<const Attrs> parseDequantize(const ParseContext& ctx) {
  // 'output_dtype' (opset 23): the output's float type, by default x_scale's, which is the
  // only one Triad produces.
  if (std::optional<int64_t> outDType =
          ctx.opset >= 23 ? ctx.attrs.getInt("output_dtype") : std::nullopt;
      outDType && *outDType != 0 && ctx.hasInput(1)) {
    std::optional<DType> t = dtypeFromOnnx(int32_t(*outDType));
    if (t != ctx.inputTypes[1]->dtype)
      unsupported("attribute 'output_dtype' = {} ({}) differs from the type of x_scale ({})",
                  *outDType, onnxElemTypeName(int32_t(*outDType)),
                  dtypeName(ctx.inputTypes[1]->dtype));
  }
  return std::make_shared<QuantAxisAttrs>(parseQuantAxis(ctx));
}

std::vector<TensorType> inferDequantize(const InferContext& ctx) {
  const auto& a = ctx.as<QuantAxisAttrs>();
  const TensorType& X = ctx.in(0);
  if (!isQuantType(X.dtype) && X.dtype != DType::I32)
    unsupported("input x has element type {}; DequantizeLinear supports uint8, int8, uint16, "
                "int16 and int32",
                dtypeName(X.dtype));
  if (ctx.has(2)) requireSameDType(X, ctx.in(2), "inputs x and x_zero_point");
  checkQuantParams(ctx, a.axis, a.blockSize);
  return {TensorType{ctx.in(1).dtype, X.shape, {}}}; // the scale's float type
}

template <typename X, typename Y>
void dequantizeKernel(const EvalContext& ctx, const QuantLayout& layout) {
  using F = std::conditional_t<std::is_same_v<Y, double>, double, float>;
  std::vector<double> s = ctx.in(1).toDoubleVector();
  std::vector<F> scale(s.begin(), s.end());
  std::vector<int64_t> zp = zeroPoints(ctx, 2, int64_t(scale.size()));
  const X* x = ctx.in(0).data<X>();
  Y* y = ctx.out(0).data<Y>();
  layout.forEach([&](int64_t e, int64_t p) {
    // int32 difference as ONNX Runtime computes it, then one float multiply.
    y[e] = Y(F(int32_t(int64_t(x[e]) - zp[size_t(p)])) * scale[size_t(p)]);
  });
}

void evalDequantize(const EvalContext& ctx) {
  const auto& a = ctx.as<QuantAxisAttrs>();
  QuantLayout layout(ctx.in(0).shape(), a.axis, a.blockSize);
  visitDType(ctx.in(0).dtype(), [&](auto xtag) {
    using X = decltype(xtag);
    if constexpr (std::is_same_v<X, uint8_t> || std::is_same_v<X, int8_t> ||
                  std::is_same_v<X, uint16_t> || std::is_same_v<X, int16_t> ||
                  std::is_same_v<X, int32_t>) {
      visitFloat(ctx.out(0).dtype(),
                 [&](auto ytag) { dequantizeKernel<X, decltype(ytag)>(ctx, layout); });
    } else {
      TRIAD_ASSERT(false, "DequantizeLinear from {}", dtypeName(ctx.in(0).dtype()));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// DynamicQuantizeLinear: x (f32) -> y (uint8), y_scale (f32 scalar), y_zero_point (uint8
// scalar), with the range [min(x, 0), max(x, 0)] mapped onto [0, 255].

std::vector<TensorType> inferDynamicQuantize(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  if (X.dtype != DType::F32)
    unsupported("input x has element type {}; DynamicQuantizeLinear is defined for f32 only",
                dtypeName(X.dtype));
  return {TensorType{DType::U8, X.shape, {}}, TensorType{DType::F32, {}, {}},
          TensorType{DType::U8, {}, {}}};
}

void evalDynamicQuantize(const EvalContext& ctx) {
  const Tensor& X = ctx.in(0);
  const float* x = X.data<float>();
  int64_t n = X.numElements();
  float lo = 0.0f, hi = 0.0f; // the range always includes 0
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  // As ONNX Runtime: scale 1 for an all-zero input (the ONNX formula would divide by 0).
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  float zpf = std::clamp(0.0f - lo / scale, 0.0f, 255.0f);
  auto zp = static_cast<uint8_t>(roundHalfEven(zpf));
  uint8_t* y = ctx.out(0).data<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    y[i] = quantizeValue<uint8_t>(x[i] / scale, zp);
  if (ctx.outputs.size() > 1) ctx.out(1).data<float>()[0] = scale;
  if (ctx.outputs.size() > 2) ctx.out(2).data<uint8_t>()[0] = zp;
}

} // namespace

void registerQuantizeOps(OpTable& table) {
  table.add({.kind = OpKind::QuantizeLinear,
             .minInputs = 2,
             .maxInputs = 3,
             .sinceOpset = 10,
             .parse = parseQuantize,
             .infer = inferQuantize,
             .eval = evalQuantize});
  table.add({.kind = OpKind::DequantizeLinear,
             .minInputs = 2,
             .maxInputs = 3,
             .sinceOpset = 10,
             .parse = parseDequantize,
             .infer = inferDequantize,
             .eval = evalDequantize});
  table.add({.kind = OpKind::DynamicQuantizeLinear,
             .minInputs = 1,
             .maxInputs = 1,
             .minOutputs = 3,
             .maxOutputs = 3,
             .sinceOpset = 11,
             .infer = inferDynamicQuantize,
             .eval = evalDynamicQuantize});
  registerQuantizeProducts(table);
  registerQuantizeQonnx(table);
}

} // namespace triad::ir
