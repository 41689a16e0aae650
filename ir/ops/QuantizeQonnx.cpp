// QONNX's quantization ops Quant, BipolarQuant and Trunc (domain qonnx.custom_op.general; the
// semantics and their sources are in QuantizeQonnx.h).
#include "ir/ops/QuantizeQonnx.h"
#include "ir/ops/OpUtil.h"

#include <cctype>

namespace triad::ir {
using namespace ops;

namespace {

constexpr std::string_view kQonnxDomain = "qonnx.custom_op.general";

QonnxRounding parseRounding(const AttrReader& attrs, std::string_view dflt) {
  std::string s = attrs.getString("rounding_mode", std::string(dflt));
  std::string u;
  for (char c : s)
    u += char(std::toupper(static_cast<unsigned char>(c)));
  if (u == "ROUND" || u == "HALF_EVEN") return QonnxRounding::HalfEven;
  if (u == "CEIL") return QonnxRounding::Ceil;
  if (u == "FLOOR") return QonnxRounding::Floor;
  if (u == "UP") return QonnxRounding::Up;
  if (u == "DOWN" || u == "ROUND_TO_ZERO") return QonnxRounding::Down;
  if (u == "HALF_UP") return QonnxRounding::HalfUp;
  if (u == "HALF_DOWN") return QonnxRounding::HalfDown;
  unsupported("attribute 'rounding_mode' has value \"{}\"; supported values: ROUND, HALF_EVEN, "
              "CEIL, FLOOR, UP, DOWN, ROUND_TO_ZERO, HALF_UP, HALF_DOWN",
              s);
}

bool boolAttr(const AttrReader& attrs, std::string_view name, bool dflt) {
  int64_t v = attrs.getInt(name, dflt ? 1 : 0);
  if (v != 0 && v != 1) invalid("attribute '{}' = {} must be 0 or 1", name, v);
  return v == 1;
}

/// A bit width from its tensor: one element holding an integer in [1, 32]. `kind` is the error
/// kind: InvalidModel at import (a constant of the model), Runtime for a computed one.
int bitWidthOf(const Tensor& t, std::string_view what, ErrorKind kind) {
  if (t.numElements() != 1)
    fail(kind, "input {} must have one element, has shape {}", what, shapeToString(t.shape()));
  double b = t.toDoubleVector()[0];
  if (!(b >= 1 && b <= 32) || b != std::floor(b))
    fail(kind, "input {} = {} must be an integer from 1 to 32", what, b);
  return int(b);
}

/// Checks the bit-width inputs when constant at import (run-time values are checked by eval).
void checkConstBitWidths(const ParseContext& ctx, std::initializer_list<size_t> inputs,
                         std::initializer_list<std::string_view> names) {
  auto name = names.begin();
  for (size_t i : inputs) {
    if (const Tensor* t = ctx.constInput(i)) bitWidthOf(*t, *name, ErrorKind::InvalidModel);
    ++name;
  }
}

std::shared_ptr<const Attrs> parseQuant(const ParseContext& ctx) {
  auto a = std::make_shared<QonnxQuantAttrs>();
  a->isSigned = boolAttr(ctx.attrs, "signed", true);
  a->narrow = boolAttr(ctx.attrs, "narrow", false);
  a->rounding = parseRounding(ctx.attrs, "ROUND");
  checkConstBitWidths(ctx, {3}, {"bitwidth"});
  return a;
}

std::shared_ptr<const Attrs> parseTrunc(const ParseContext& ctx) {
  auto a = std::make_shared<QonnxQuantAttrs>();
  // Trunc v1 (five inputs) has only rounding_mode; v2 (six) also signed and narrow.
  bool v2 = ctx.inputTypes.size() >= 6;
  a->isSigned = v2 ? boolAttr(ctx.attrs, "signed", true) : true;
  a->narrow = v2 ? boolAttr(ctx.attrs, "narrow", false) : false;
  a->rounding = parseRounding(ctx.attrs, "FLOOR");
  if (v2)
    checkConstBitWidths(ctx, {3, 5}, {"input_bit_width", "output_bit_width"});
  else
    checkConstBitWidths(ctx, {3, 4}, {"input_bit_width", "output_bit_width"});
  return a;
}

void requireF32(const TensorType& t, std::string_view what) {
  if (t.dtype != DType::F32)
    unsupported("input {} has element type {}; QONNX quantizers take f32", what,
                dtypeName(t.dtype));
}

void requireBitWidthType(const TensorType& t, std::string_view what) {
  if (!isFloat(t.dtype) &&
      !dtypeIn(t.dtype, {DType::I64, DType::I32, DType::I16, DType::I8, DType::U8}))
    invalid("input {} has element type {}; expected a float or integer type", what,
            dtypeName(t.dtype));
  if (t.numElements() != 1)
    invalid("input {} must have one element, has shape {}", what, shapeToString(t.shape));
}

/// The output shape: x broadcast with the float parameters (numpy rules, as QONNX computes).
Shape broadcastParams(const InferContext& ctx, std::initializer_list<size_t> params) {
  std::vector<Shape> shapes{ctx.in(0).shape};
  for (size_t i : params)
    shapes.push_back(ctx.in(i).shape);
  return broadcastShapes(shapes);
}

std::vector<TensorType> inferQuant(const InferContext& ctx) {
  requireF32(ctx.in(0), "X");
  requireF32(ctx.in(1), "scale");
  requireF32(ctx.in(2), "zeropt");
  requireBitWidthType(ctx.in(3), "bitwidth");
  return {TensorType{DType::F32, broadcastParams(ctx, {1, 2}), {}}};
}

std::vector<TensorType> inferBipolarQuant(const InferContext& ctx) {
  requireF32(ctx.in(0), "X");
  requireF32(ctx.in(1), "scale");
  return {TensorType{DType::F32, broadcastParams(ctx, {1}), {}}};
}

std::vector<TensorType> inferTrunc(const InferContext& ctx) {
  bool v2 = ctx.inputs.size() >= 6;
  requireF32(ctx.in(0), "X");
  requireF32(ctx.in(1), "scale");
  requireF32(ctx.in(2), "zeropt");
  requireBitWidthType(ctx.in(3), "input_bit_width");
  if (v2) {
    requireF32(ctx.in(4), "output_scale");
    requireBitWidthType(ctx.in(5), "output_bit_width");
    return {TensorType{DType::F32, broadcastParams(ctx, {1, 2, 4}), {}}};
  }
  requireBitWidthType(ctx.in(4), "output_bit_width");
  return {TensorType{DType::F32, broadcastParams(ctx, {1, 2}), {}}};
}

/// Element e of input i broadcast to the output: an index map per operand.
struct Broadcaster {
  std::vector<std::vector<int64_t>> maps;
  Broadcaster(const EvalContext& ctx, std::initializer_list<size_t> inputs) {
    const Shape& out = ctx.out(0).shape();
    for (size_t i : inputs)
      maps.push_back(broadcastIndexMap(ctx.in(i).shape(), out));
  }
};

void evalQuant(const EvalContext& ctx) {
  const auto& a = ctx.as<QonnxQuantAttrs>();
  int bits = bitWidthOf(ctx.in(3), "bitwidth", ErrorKind::Runtime);
  bool bipolar = bits == 1 && a.isSigned; // as QONNX's executor: a signed 1-bit Quant is ±1
  auto lo = float(qonnxMinInt(a.isSigned, a.narrow, bits));
  auto hi = float(qonnxMaxInt(a.isSigned, a.narrow, bits));
  Broadcaster b(ctx, {0, 1, 2});
  const float* x = ctx.in(0).data<float>();
  const float* s = ctx.in(1).data<float>();
  const float* z = ctx.in(2).data<float>();
  float* y = ctx.out(0).data<float>();
  int64_t n = ctx.out(0).numElements();
  for (int64_t e = 0; e < n; ++e)
    y[e] = qonnxQuant(x[b.maps[0][size_t(e)]], s[b.maps[1][size_t(e)]], z[b.maps[2][size_t(e)]], lo,
                      hi, bipolar, a.rounding);
}

void evalBipolarQuant(const EvalContext& ctx) {
  Broadcaster b(ctx, {0, 1});
  const float* x = ctx.in(0).data<float>();
  const float* s = ctx.in(1).data<float>();
  float* y = ctx.out(0).data<float>();
  int64_t n = ctx.out(0).numElements();
  for (int64_t e = 0; e < n; ++e) {
    float q = x[b.maps[0][size_t(e)]] >= 0.0f ? 1.0f : -1.0f;
    y[e] = q * s[b.maps[1][size_t(e)]];
  }
}

void evalTrunc(const EvalContext& ctx) {
  const auto& a = ctx.as<QonnxQuantAttrs>();
  bool v2 = ctx.inputs.size() >= 6;
  int inBits = bitWidthOf(ctx.in(3), "input_bit_width", ErrorKind::Runtime);
  int outBits = bitWidthOf(ctx.in(v2 ? 5 : 4), "output_bit_width", ErrorKind::Runtime);
  auto lo = float(qonnxMinInt(a.isSigned, a.narrow, outBits));
  auto hi = float(qonnxMaxInt(a.isSigned, a.narrow, outBits));
  Broadcaster b = v2 ? Broadcaster(ctx, {0, 1, 2, 4}) : Broadcaster(ctx, {0, 1, 2});
  const float* x = ctx.in(0).data<float>();
  const float* s = ctx.in(1).data<float>();
  const float* z = ctx.in(2).data<float>();
  const float* os = v2 ? ctx.in(4).data<float>() : nullptr;
  float* y = ctx.out(0).data<float>();
  int64_t n = ctx.out(0).numElements();
  for (int64_t e = 0; e < n; ++e) {
    float scale = s[b.maps[1][size_t(e)]], zp = z[b.maps[2][size_t(e)]];
    float q = roundHalfEven(x[b.maps[0][size_t(e)]] / scale + zp);
    if (v2) {
      // The truncation scale is the power of two nearest out_scale / scale (in log2).
      float outScale = os[b.maps[3][size_t(e)]];
      float t = std::exp2(roundHalfEven(std::log2(outScale / scale)));
      q = q / t;
      q = q > hi ? hi : q;
      q = q < lo ? lo : q;
      q = qonnxRound(q, a.rounding);
      float r = q - zp / t;
      y[e] = r * outScale;
    } else {
      // v1: 2^(in_bits - out_bits) dropped, no clamp, rescaled by `scale` (as QONNX computes).
      float t = std::exp2(float(inBits - outBits));
      q = qonnxRound(q / t, a.rounding);
      float r = q - zp;
      y[e] = r * scale;
    }
  }
}

} // namespace

void registerQuantizeQonnx(OpTable& table) {
  table.add({.kind = OpKind::Quant,
             .domain = kQonnxDomain,
             .minInputs = 4,
             .maxInputs = 4,
             .foldable = false,
             .parse = parseQuant,
             .infer = inferQuant,
             .eval = evalQuant});
  table.add({.kind = OpKind::BipolarQuant,
             .domain = kQonnxDomain,
             .minInputs = 2,
             .maxInputs = 2,
             .foldable = false,
             .infer = inferBipolarQuant,
             .eval = evalBipolarQuant});
  table.add({.kind = OpKind::Trunc,
             .domain = kQonnxDomain,
             .minInputs = 5,
             .maxInputs = 6,
             .foldable = false,
             .parse = parseTrunc,
             .infer = inferTrunc,
             .eval = evalTrunc});
}

} // namespace triad::ir
