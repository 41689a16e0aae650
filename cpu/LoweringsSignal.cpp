// CPU lowerings: signal, vision and quantized ops (DFT, STFT, Col2Im, GridSample, RoiAlign,
// QuantizeLinear, ...). See cpu/Lowering.h for the table these entries join.
//
// Every lowering mirrors its reference kernel in ir/ops/ (Quantize*.cpp, Vision.cpp,
// Signal.cpp): the same compute types (float, or double for f64 tensors; int64 sums wrapped to
// int32 for the integer products; double for the DFTs), the same rounding (half to even) and
// saturation. Index math that depends only on static shapes and attributes (convolution windows,
// Col2Im block positions, DFT twiddles) comes from the reference's shared helpers at compile
// time and is stored with the weights; data that arrives at run time (scales, zero points, grids,
// ROIs, batch indices) is read by the generated loops.
#include "cpu/LoweringUtil.h"

#include "ir/ScalarExpr.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/Signal.h"
#include "ir/ops/Vision.h"

#include <cstring>
#include <fmt/ranges.h>

namespace triad::cpu {

using namespace ir;
using namespace lower;

namespace {

// --- Shared helpers -----------------------------------------------------------------------------

bool isQuant8(DType t) {
  return t == DType::U8 || t == DType::I8;
}
bool isQuant16(DType t) {
  return isQuant8(t) || t == DType::U16 || t == DType::I16;
}
bool isF32OrF64(DType t) {
  return t == DType::F32 || t == DType::F64;
}
DType dtypeOf(const Value* v) {
  return v->type().dtype;
}
std::string typeOf(const Value* v) {
  return cppTypeName(dtypeOf(v));
}

/// The linear index into a tensor of shape `param` that broadcasts (numpy, right-aligned) to
/// element `i` (an expression) of a tensor of shape `operand`.
std::string bcastIndex(const std::string& i, const Shape& operand, const Shape& param) {
  size_t r = operand.size();
  Shape p(r, 1);
  for (size_t k = 0; k < param.size() && k < r; ++k)
    p[r - 1 - k] = param[param.size() - 1 - k];
  std::vector<int64_t> os = stridesOf(operand), ps = stridesOf(p);
  std::string e;
  for (size_t d = 0; d < r; ++d) {
    if (p[d] == 1) continue;
    std::string t = fmt::format("{} / {} % {}", i, os[d], operand[d]);
    if (ps[d] != 1) t = fmt::format("({}) * {}", t, ps[d]);
    e += e.empty() ? t : " + " + t;
  }
  return e.empty() ? "0" : e;
}

/// A table of int32 values for c.data().
std::vector<uint8_t> int32Bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(int32_t));
  for (size_t i = 0; i < v.size(); ++i) {
    auto x = int32_t(v[i]);
    std::memcpy(bytes.data() + i * sizeof(int32_t), &x, sizeof x);
  }
  return bytes;
}

std::vector<uint8_t> doubleBytes(const std::vector<double>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(double));
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

/// Emits the reference's quantizing step as local lambdas over compute type `f` ("float" or
/// "double"): `round_half_even` (ops::roundHalfEven) and `quantize(v, zp)`
/// (ops::quantizeValue<Q>): saturate(roundHalfEven(v) + zp) into Q, NaN giving the zero point.
void emitQuantizeFn(Code& body, const std::string& f, DType q) {
  int64_t lo = 0, hi = 0;
  switch (q) {
  case DType::U8:
    hi = 255;
    break;
  case DType::I8:
    lo = -128, hi = 127;
    break;
  case DType::U16:
    hi = 65535;
    break;
  default: // I16
    lo = -32768, hi = 32767;
    break;
  }
  std::string qt = cppTypeName(q);
  body.line("// round half to even, whatever the FP environment's rounding mode");
  body.open(fmt::format("auto round_half_even = []({0} v) -> {0}", f));
  body.line("{} r = std::round(v);", f);
  body.line("if (std::fabs(v - std::trunc(v)) == ({0})0.5) r = ({0})2 * std::round(v * ({0})0.5);",
            f);
  body.line("return r;");
  body.close("};");
  body.line("// saturate(round(v) + zero point) into {}; NaN quantizes to the zero point", qt);
  body.open(fmt::format("auto quantize = [&]({} v, int64_t zp) -> {}", f, qt));
  body.line("const {0} r = (std::isnan(v) ? ({0})0 : round_half_even(v)) + ({0})zp;", f);
  body.line("const {0} lo = ({0}){1}, hi = ({0}){2};", f, lo, hi);
  body.line("return ({})(r < lo ? lo : r > hi ? hi : r);", qt);
  body.close("};");
}

// --- QuantizeLinear, DequantizeLinear -----------------------------------------------------------

/// x viewed as [outer, axisDim, inner] around the quantization axis (the reference's
/// QuantLayout): emits loops that define `e` (the element), `s` (its scale, as `f`) and `z` (its
/// zero point, int64) and then run `stmt`.
void emitQuantLoops(LowerContext& c, const Shape& x, int64_t axis, int64_t blockSize,
                    const std::string& f, const std::string& scale, const std::string& zp,
                    const std::string& stmt) {
  auto params = [&](const std::string& p) {
    c.body.line("const {} s = ({}){}[{}];", f, f, scale, p);
    c.body.line("const int64_t z = {};",
                zp.empty() ? std::string("0") : fmt::format("(int64_t){}[{}]", zp, p));
  };
  if (axis < 0) { // per tensor
    params("0");
    c.body.open(fmt::format("for (int64_t e = 0; e < {}; ++e)", numElements(x)));
    c.body.line("{}", stmt);
    c.body.close();
    return;
  }
  int64_t outer = numElements(x, 0, size_t(axis)), dim = x[size_t(axis)];
  int64_t inner = numElements(x, size_t(axis) + 1);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t ch = 0; ch < {}; ++ch)", dim));
  if (blockSize == 0) params("ch");
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  if (blockSize > 0) {
    int64_t blocks = (dim + blockSize - 1) / blockSize;
    c.body.line("const int64_t p = (o * {} + ch / {}) * {} + i; // block {} of the axis", blocks,
                blockSize, inner, blockSize);
    params("p");
  }
  c.body.line("const int64_t e = (o * {} + ch) * {} + i;", dim, inner);
  c.body.line("{}", stmt);
  c.body.close();
  c.body.close();
  c.body.close();
}

std::string granularity(int64_t axis, int64_t blockSize) {
  if (axis < 0) return "per tensor";
  if (blockSize == 0) return fmt::format("per axis {}", axis);
  return fmt::format("axis {} in blocks of {}", axis, blockSize);
}

Support supportsQuantize(const Node& n) {
  DType x = dtypeOf(n.input(0));
  if (!isF32OrF64(x) && x != DType::I32)
    return no(fmt::format("QuantizeLinear from {} is not compiled", dtypeName(x)));
  if (!isF32OrF64(dtypeOf(n.input(1)))) return no("scales must be float32 or float64");
  if (!isQuant16(dtypeOf(n.output(0))))
    return no(fmt::format("QuantizeLinear to {}", dtypeName(dtypeOf(n.output(0)))));
  return {};
}

void emitQuantize(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<QuantizeLinearAttrs>();
  DType q = dtypeOf(n.output(0));
  // The reference divides in float (double for f64 input).
  std::string f = dtypeOf(n.input(0)) == DType::F64 ? "double" : "float";
  c.body.line("// QuantizeLinear {}: {} -> {}, y = saturate(round_half_even(x / scale) + zero "
              "point) in {}",
              granularity(a.axis, a.blockSize), shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()), f);
  c.body.line("const {}* __restrict x = {};", typeOf(n.input(0)), c.inputs[0]);
  c.body.line("const {}* __restrict scale = {};", typeOf(n.input(1)), c.inputs[1]);
  bool zp = n.input(2) != nullptr;
  if (zp) c.body.line("const {}* __restrict zero_point = {};", typeOf(n.input(2)), c.inputs[2]);
  c.body.line("{}* __restrict y = {};", cppTypeName(q), c.outputs[0]);
  emitQuantizeFn(c.body, f, q);
  emitQuantLoops(c, shapeOf(n.input(0)), a.axis, a.blockSize, f, "scale", zp ? "zero_point" : "",
                 fmt::format("y[e] = quantize(({})x[e] / s, z);", f));
}

Support supportsDequantize(const Node& n) {
  DType x = dtypeOf(n.input(0));
  if (!isQuant16(x) && x != DType::I32)
    return no(fmt::format("DequantizeLinear from {} is not compiled", dtypeName(x)));
  if (!isF32OrF64(dtypeOf(n.input(1)))) return no("scales must be float32 or float64");
  return {};
}

void emitDequantize(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<QuantAxisAttrs>();
  std::string f = dtypeOf(n.output(0)) == DType::F64 ? "double" : "float";
  c.body.line("// DequantizeLinear {}: {} -> {}, y = (float)(int32_t)(x - zero point) * scale in "
              "{}",
              granularity(a.axis, a.blockSize), shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()), f);
  c.body.line("const {}* __restrict x = {};", typeOf(n.input(0)), c.inputs[0]);
  c.body.line("const {}* __restrict scale = {};", typeOf(n.input(1)), c.inputs[1]);
  bool zp = n.input(2) != nullptr;
  if (zp) c.body.line("const {}* __restrict zero_point = {};", typeOf(n.input(2)), c.inputs[2]);
  c.body.line("{}* __restrict y = {};", typeOf(n.output(0)), c.outputs[0]);
  emitQuantLoops(
      c, shapeOf(n.input(0)), a.axis, a.blockSize, f, "scale", zp ? "zero_point" : "",
      fmt::format("y[e] = ({})(({})(int32_t)((int64_t)x[e] - z) * s);", typeOf(n.output(0)), f));
}

// --- DynamicQuantizeLinear ----------------------------------------------------------------------

Support supportsDynamicQuantize(const Node& n) {
  return requireInput0(n, {DType::F32});
}

void emitDynamicQuantize(LowerContext& c) {
  const Node& n = c.node;
  int64_t total = numElements(shapeOf(n.input(0)));
  c.body.line("// DynamicQuantizeLinear {}: [min(x, 0), max(x, 0)] onto uint8 [0, 255]",
              shapeComment(n.input(0)->type()));
  c.body.line("const float* __restrict x = {};", c.inputs[0]);
  c.body.line("uint8_t* __restrict y = {};", c.outputs[0]);
  emitQuantizeFn(c.body, "float", DType::U8);
  c.body.line("float lo = 0.0f, hi = 0.0f; // the range always includes 0 (NaN is skipped)");
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", total));
  c.body.line("lo = std::min(lo, x[i]);");
  c.body.line("hi = std::max(hi, x[i]);");
  c.body.close();
  c.body.line("// scale 1 for an all-zero input, as ONNX Runtime");
  c.body.line("const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;");
  c.body.line("const float zpf = std::clamp(0.0f - lo / scale, 0.0f, 255.0f);");
  c.body.line("const uint8_t zp = (uint8_t)round_half_even(zpf);");
  c.body.line("for (int64_t i = 0; i < {}; ++i) y[i] = quantize(x[i] / scale, zp);", total);
  if (c.outputs.size() > 1) c.body.line("*(float*){} = scale;", c.outputs[1]);
  if (c.outputs.size() > 2) c.body.line("*(uint8_t*){} = zp;", c.outputs[2]);
}

// --- MatMulInteger, QLinearMatMul ---------------------------------------------------------------

/// The zero point's shape as it broadcasts against A / B (the reference's zpShapeForA/B).
Shape zpShapeForA(const Shape& zp, const Shape& a) {
  if (numElements(zp) == 1 && zp.size() <= 1) return {};
  if (zp.size() == 1 && a.size() >= 2) return {zp[0], 1};
  return zp;
}
Shape zpShapeForB(const Shape& zp) {
  return numElements(zp) == 1 && zp.size() <= 1 ? Shape{} : zp;
}

Support supportsIntMatMul(const Node& n) {
  bool q = n.kind() == OpKind::QLinearMatMul;
  size_t bi = q ? 3 : 1;
  if (!isQuant8(dtypeOf(n.input(0))) || !isQuant8(dtypeOf(n.input(bi))))
    return no("operands must be uint8 or int8");
  if (q) {
    for (size_t i : {1, 4, 6})
      if (!isF32OrF64(dtypeOf(n.input(i)))) return no("scales must be float32 or float64");
    if (!isQuant8(dtypeOf(n.output(0)))) return no("the output must be uint8 or int8");
  }
  return {};
}

/// Y[b, m, n] = sum_k (A - a_zp)[b, m, k] * (B - b_zp)[b, k, n], summed exactly in int64 and
/// wrapped to int32 as the reference (int32 accumulators); QLinearMatMul then requantizes with
/// a_scale[m] * b_scale[n] / y_scale in float.
void emitIntMatMul(LowerContext& c) {
  const Node& n = c.node;
  bool q = n.kind() == OpKind::QLinearMatMul;
  size_t ia = 0, ib = q ? 3 : 1, iaz = q ? 2 : 2, ibz = q ? 5 : 3;
  const Shape& as = shapeOf(n.input(ia));
  const Shape& bs = shapeOf(n.input(ib));
  ops::MatMulShapes s = ops::matmulShapes(as, bs);
  int64_t M = s.M, K = s.K, N = s.N, nb = numElements(s.batch);
  int64_t na = numElements(as), nbElems = numElements(bs);
  c.body.line("// {}: {} x {} -> {} ({} x [{}, {}] x [{}, {}]), int32 accumulation{}",
              opKindName(n.kind()), shapeComment(n.input(ia)->type()),
              shapeComment(n.input(ib)->type()), shapeComment(n.output(0)->type()), nb, M, K, K, N,
              q ? ", requantized with a_scale * b_scale / y_scale in float" : "");
  c.body.line("const {}* __restrict a = {};", typeOf(n.input(ia)), c.inputs[ia]);
  c.body.line("const {}* __restrict b = {};", typeOf(n.input(ib)), c.inputs[ib]);
  std::string scratch = c.scratch(fmt::format("{} * sizeof(int32_t)", na + nbElems));
  c.body.line("int32_t* __restrict sa = (int32_t*){}; // A - a_zero_point", scratch);
  c.body.line("int32_t* __restrict sb = sa + {}; // B - b_zero_point", na);
  auto shift = [&](const std::string& dst, const std::string& src, int64_t count, size_t zi,
                   const Shape& operand, bool isA) {
    if (zi < n.inputs().size() && n.input(zi)) {
      const Shape& zs = shapeOf(n.input(zi));
      Shape p = isA ? zpShapeForA(zs, operand) : zpShapeForB(zs);
      c.body.line("const {}* __restrict {}_zp = {};", typeOf(n.input(zi)), src, c.inputs[zi]);
      c.body.line("for (int64_t i = 0; i < {}; ++i) {}[i] = (int32_t)((int64_t){}[i] - "
                  "(int64_t){}_zp[{}]);",
                  count, dst, src, src, bcastIndex("i", operand, p));
    } else {
      c.body.line("for (int64_t i = 0; i < {}; ++i) {}[i] = (int32_t){}[i];", count, dst, src);
    }
  };
  shift("sa", "a", na, iaz, as, true);
  shift("sb", "b", nbElems, ibz, bs, false);
  std::string yt = typeOf(n.output(0));
  c.body.line("{}* __restrict y = {};", yt, c.outputs[0]);
  if (q) {
    c.body.line("const {}* __restrict a_scale = {};", typeOf(n.input(1)), c.inputs[1]);
    c.body.line("const {}* __restrict b_scale = {};", typeOf(n.input(4)), c.inputs[4]);
    c.body.line("const float y_scale = (float){}[0];", c.inputs[6]);
    c.body.line("const int64_t y_zp = (int64_t){}[0];", c.inputs[7]);
    emitQuantizeFn(c.body, "float", dtypeOf(n.output(0)));
  }
  c.body.open(fmt::format("for (int64_t bt = 0; bt < {}; ++bt)", nb));
  c.body.line("const int32_t* a0 = sa + ({}) * {};", bcastIndex("bt", s.batch, s.aBatch), M * K);
  c.body.line("const int32_t* b0 = sb + ({}) * {};", bcastIndex("bt", s.batch, s.bBatch), K * N);
  c.body.open(fmt::format("for (int64_t row = 0; row < {}; ++row)", M));
  c.body.open(fmt::format("for (int64_t col = 0; col < {}; ++col)", N));
  c.body.line("int64_t acc = 0;");
  c.body.line(
      "for (int64_t k = 0; k < {}; ++k) acc += (int64_t)a0[row * {} + k] * b0[k * {} + col];", K, K,
      N);
  if (!q) {
    c.body.line("y[(bt * {} + row) * {} + col] = (int32_t)acc; // modular, as int32 accumulation",
                M, N);
  } else {
    bool rowScale = numElements(shapeOf(n.input(1))) != 1;
    bool colScale = numElements(shapeOf(n.input(4))) != 1;
    c.body.line("const float mult = (float)a_scale[{}] * (float)b_scale[{}] / y_scale;",
                rowScale ? "row" : "0", colScale ? "col" : "0");
    c.body.line("y[(bt * {} + row) * {} + col] = quantize((float)(int32_t)acc * mult, y_zp);", M,
                N);
  }
  c.body.close();
  c.body.close();
  c.body.close();
}

// --- ConvInteger, QLinearConv -------------------------------------------------------------------

Support supportsIntConv(const Node& n) {
  bool q = n.kind() == OpKind::QLinearConv;
  size_t wi = q ? 3 : 1;
  if (!isQuant8(dtypeOf(n.input(0))) || !isQuant8(dtypeOf(n.input(wi))))
    return no("x and w must be uint8 or int8");
  if (q) {
    for (size_t i : {1, 4, 6})
      if (!isF32OrF64(dtypeOf(n.input(i)))) return no("scales must be float32 or float64");
    if (!isQuant8(dtypeOf(n.output(0)))) return no("the output must be uint8 or int8");
  }
  const Shape& y = shapeOf(n.output(0));
  if (numElements(n.attrs<ConvAttrs>().kernel) * numElements(y, 2) >= (int64_t(1) << 31))
    return no("window tables of 2^31 entries or more");
  return {};
}

/// acc[n, m, o] = sum_{c, tap} (x - x_zp)[n, g*C/group + c, src[tap][o]] * (w - w_zp)[m, c, tap]
/// with the reference's window table src (ops::windowIndexTable; -1 in the padding, which reads
/// the zero point, i.e. 0 after the shift), summed in int64 and wrapped to int32. QLinearConv
/// adds the int32 bias and requantizes with x_scale * w_scale[m] / y_scale in float.
void emitIntConv(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ConvAttrs>();
  bool q = n.kind() == OpKind::QLinearConv;
  size_t wi = q ? 3 : 1, xzi = 2, wzi = q ? 5 : 3;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  Shape inSp(x.begin() + 2, x.end()), outSp(y.begin() + 2, y.end());
  int64_t N = x[0], C = x[1], M = y[1], Cg = C / a.group, Mg = M / a.group;
  int64_t inSize = numElements(inSp), outSize = numElements(outSp), taps = numElements(a.kernel);
  std::vector<int64_t> table =
      ops::windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  c.body.line("// {}: {} * {} -> {}, kernel [{}], strides [{}], pads [{}], dilations [{}], group "
              "{}; int32 accumulation{}",
              opKindName(n.kind()), shapeComment(n.input(0)->type()),
              shapeComment(n.input(wi)->type()), shapeComment(n.output(0)->type()),
              fmt::join(a.kernel, ", "), fmt::join(a.strides, ", "), fmt::join(a.pads, ", "),
              fmt::join(a.dilations, ", "), a.group,
              q ? ", requantized with x_scale * w_scale / y_scale in float" : "");
  c.body.line("const int32_t* src = (const int32_t*){}; // [tap][output position] -> input "
              "position, -1 in the padding",
              c.data(int32Bytes(table)));
  c.body.line("const {}* __restrict x = {};", typeOf(n.input(0)), c.inputs[0]);
  c.body.line("const {}* __restrict w = {};", typeOf(n.input(wi)), c.inputs[wi]);
  bool hasXz = xzi < n.inputs().size() && n.input(xzi);
  bool hasWz = wzi < n.inputs().size() && n.input(wzi);
  c.body.line("const int64_t x_zp = {};",
              hasXz ? fmt::format("(int64_t){}[0]", c.inputs[xzi]) : std::string("0"));
  bool perChannelWz = hasWz && numElements(shapeOf(n.input(wzi))) != 1;
  if (hasWz) c.body.line("const {}* __restrict w_zp = {};", typeOf(n.input(wzi)), c.inputs[wzi]);
  std::string yt = typeOf(n.output(0));
  c.body.line("{}* __restrict y = {};", yt, c.outputs[0]);
  bool bias = q && n.inputs().size() > 8 && n.input(8);
  if (q) {
    c.body.line("const float x_scale = (float){}[0];", c.inputs[1]);
    c.body.line("const {}* __restrict w_scale = {};", typeOf(n.input(4)), c.inputs[4]);
    c.body.line("const float y_scale = (float){}[0];", c.inputs[6]);
    c.body.line("const int64_t y_zp = (int64_t){}[0];", c.inputs[7]);
    if (bias) c.body.line("const int32_t* __restrict bias = {};", c.inputs[8]);
    emitQuantizeFn(c.body, "float", dtypeOf(n.output(0)));
  }
  c.body.open(fmt::format("for (int64_t img = 0; img < {}; ++img)", N));
  c.body.open(fmt::format("for (int64_t g = 0; g < {}; ++g)", a.group));
  c.body.open(fmt::format("for (int64_t oc = g * {0}; oc < (g + 1) * {0}; ++oc)", Mg));
  c.body.line("const {}* wr = w + oc * {};", typeOf(n.input(wi)), Cg * taps);
  c.body.line("const int64_t wz = {};", !hasWz         ? std::string("0")
                                        : perChannelWz ? std::string("(int64_t)w_zp[oc]")
                                                       : std::string("(int64_t)w_zp[0]"));
  if (q) {
    bool perChannelWs = numElements(shapeOf(n.input(4))) != 1;
    c.body.line("const float mult = x_scale * (float)w_scale[{}] / y_scale;",
                perChannelWs ? "oc" : "0");
  }
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outSize));
  c.body.line("int64_t acc = 0;");
  c.body.open(fmt::format("for (int64_t ci = 0; ci < {}; ++ci)", Cg));
  c.body.line("const {}* plane = x + (img * {} + g * {} + ci) * {};", typeOf(n.input(0)), C, Cg,
              inSize);
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", taps));
  c.body.line("const int32_t at = src[t * {} + o];", outSize);
  c.body.line("if (at >= 0) acc += (int64_t)(int32_t)((int64_t)wr[ci * {} + t] - wz) * "
              "(int32_t)((int64_t)plane[at] - x_zp);",
              taps);
  c.body.close();
  c.body.close();
  std::string at = fmt::format("(img * {} + oc) * {} + o", M, outSize);
  if (!q) {
    c.body.line("y[{}] = (int32_t)acc; // modular, as int32 accumulation", at);
  } else {
    c.body.line("int32_t acc32 = (int32_t)acc;");
    if (bias) c.body.line("acc32 = (int32_t)((int64_t)acc32 + bias[oc]);");
    c.body.line("y[{}] = quantize((float)acc32 * mult, y_zp);", at);
  }
  c.body.close();
  c.body.close();
  c.body.close();
  c.body.close();
}

} // namespace

void addSignalLowerings(LoweringTable& t) {
  t[OpKind::QuantizeLinear] = {supportsQuantize, emitQuantize, false};
  t[OpKind::DequantizeLinear] = {supportsDequantize, emitDequantize, false};
  t[OpKind::DynamicQuantizeLinear] = {supportsDynamicQuantize, emitDynamicQuantize, false};
  t[OpKind::MatMulInteger] = {supportsIntMatMul, emitIntMatMul, false};
  t[OpKind::QLinearMatMul] = {supportsIntMatMul, emitIntMatMul, false};
  t[OpKind::ConvInteger] = {supportsIntConv, emitIntConv, false};
  t[OpKind::QLinearConv] = {supportsIntConv, emitIntConv, false};
}

} // namespace triad::cpu
