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

#include "ir/Escape.h"
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
  // Round half to even, whatever the FP environment's rounding mode, without libm calls or
  // branches (floor is one instruction; selects and min/max keep saturating outputs, half of a
  // ReLU's, from costing a mispredicted branch each): below 2^23 (2^52 for double) v + 0.5 is
  // exact, so floor(v + 0.5) is round half up, and a tie is where v + 0.5 is a whole number,
  // moved down to the even one; larger magnitudes (and NaN, handled below) are whole already.
  body.line("// round half to even, whatever the FP environment's rounding mode");
  body.open(fmt::format("auto round_half_even = []({0} v) -> {0}", f));
  body.line("const {0} s = v + ({0})0.5;", f);
  body.line("const {} r = std::floor(s);", f);
  body.line("const {0} even = r - ((r == s && r != ({0})2 * std::floor(r * ({0})0.5)) ? ({0})1 : "
            "({0})0);",
            f);
  body.line("return std::fabs(v) < ({}){} ? even : v;", f,
            f == "double" ? "4503599627370496.0" : "8388608.0f");
  body.close("};");
  body.line("// saturate(round(v) + zero point) into {}; NaN quantizes to the zero point", qt);
  body.open(fmt::format("auto quantize = [&]({} v, int64_t zp) -> {}", f, qt));
  body.line("const {0} r = (v != v ? ({0})0 : round_half_even(v)) + ({0})zp;", f);
  body.line("return ({})std::min(std::max(r, ({}){}), ({}){});", qt, f, lo, f, hi);
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

// --- The packed int8 kernels (cpu/runtime/triad_int8.h) ----------------------------------------

bool present(const Node& n, size_t i) {
  return i < n.inputs().size() && n.input(i) != nullptr;
}
int64_t countOf(const Node& n, size_t i) {
  return numElements(shapeOf(n.input(i)));
}
/// A constant zero point with one entry or `channels` entries (absent: fine).
bool packableZeroPoint(const Node& n, size_t i, int64_t channels) {
  if (!present(n, i)) return true;
  int64_t k = countOf(n, i);
  return n.input(i)->isConstant() && (k == 1 || k == channels);
}
std::string optionalInput(const LowerContext& c, size_t i) {
  return present(c.node, i) ? c.inputs[i] : std::string("nullptr");
}
std::string optionalCount(const Node& n, size_t i) {
  return present(n, i) ? std::to_string(countOf(n, i)) : std::string("1");
}
const char* quantLo(DType t) {
  return t == DType::U8 ? "0" : "-128";
}
const char* quantHi(DType t) {
  return t == DType::U8 ? "255" : "127";
}

/// Emits `float* mult` (in `scratch`) = x_scale * w_scale[i] / y_scale for i < count, in float as
/// the reference computes it (w_scale per tensor or with `count` entries), and declares the
/// requantizing epilogue `epi` over `y` with that multiplier and input `yzi`'s zero point.
void emitRequantEpi(LowerContext& c, const std::string& scratch, size_t xsi, size_t wsi, size_t ysi,
                    size_t yzi, int64_t count, const std::string& ldy, bool perCol) {
  const Node& n = c.node;
  bool scalarW = countOf(n, wsi) == 1;
  c.body.line("float* mult = (float*){}; // x_scale * w_scale / y_scale, in float", scratch);
  c.body.line("const float xs = (float){}[0], ys = (float){}[0];", c.inputs[xsi], c.inputs[ysi]);
  c.body.line("for (int64_t i = 0; i < {}; ++i) mult[i] = xs * (float){}[{}] / ys;",
              scalarW ? 1 : count, c.inputs[wsi], scalarW ? "0" : "i");
  DType yt = dtypeOf(n.output(0));
  c.body.line("triad_rt::QRequantEpi<{}> epi;", cppTypeName(yt));
  c.body.line("epi.y = {}; epi.ldy = {}; epi.mult = mult; epi.scalar_mult = {}; epi.per_col = {};",
              c.outputs[0], ldy, scalarW ? "true" : "false", perCol ? "true" : "false");
  c.body.line("epi.zp = (int){}[0]; epi.lo = {}; epi.hi = {};", c.inputs[yzi], quantLo(yt),
              quantHi(yt));
}

/// Whether an integer convolution runs on the packed kernels: 1-D or 2-D, constant 8-bit
/// weights with a constant zero point per tensor or per output channel, a per-tensor input zero
/// point, and (QLinearConv) per-tensor x and y scales and a w scale per tensor or channel.
bool packedIntConv(const Node& n) {
  bool q = n.kind() == OpKind::QLinearConv;
  size_t wi = q ? 3 : 1, wzi = q ? 5 : 3;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  if ((x.size() != 3 && x.size() != 4) || !n.input(wi)->isConstant()) return false;
  int64_t M = y[1];
  if (!packableZeroPoint(n, wzi, M) || (present(n, 2) && countOf(n, 2) != 1)) return false;
  if (q && (countOf(n, 1) != 1 || countOf(n, 6) != 1 || (countOf(n, 4) != 1 && countOf(n, 4) != M)))
    return false;
  // int offsets in the kernels: planes, im2col and packed operands below 2^31 bytes
  const auto& a = n.attrs<ConvAttrs>();
  int64_t K = x[1] / a.group * numElements(a.kernel), P = numElements(y, 2);
  return numElements(x) < (int64_t(1) << 31) && numElements(y) < (int64_t(1) << 31) &&
         K * (P + 16) * 4 < (int64_t(1) << 31);
}

/// The integer convolution on triad_rt::qconv2d: weights shifted and packed once at creation,
/// the input packed per run (im2col unless pointwise), the epilogue storing the int32 sums
/// (ConvInteger) or requantizing them with the bias (QLinearConv).
void emitPackedIntConv(LowerContext& c) {
  const Node& n = c.node;
  bool q = n.kind() == OpKind::QLinearConv;
  size_t wi = q ? 3 : 1, wzi = q ? 5 : 3;
  const Shape& y = shapeOf(n.output(0));
  int64_t M = y[1], P = numElements(y, 2);
  c.body.line("// {}: {} * {} -> {}, int32 sums of (x - x_zp) * (w - w_zp) on the packed int8 "
              "kernel (triad_int8.h){}",
              opKindName(n.kind()), shapeComment(n.input(0)->type()),
              shapeComment(n.input(wi)->type()), shapeComment(n.output(0)->type()),
              q ? ", requantized per output channel" : "");
  std::vector<std::string> shapeLines = conv2dShapeLines(n);
  for (const std::string& l : shapeLines)
    c.body.line("{}", l);
  std::string packed = "pk_" + c.ident;
  c.fields.line("void* {} = nullptr; // {}: shifted weights packed for the int8 kernel", packed,
                escape::comment(n.name()));
  c.create.open("");
  for (const std::string& l : shapeLines)
    c.create.line("{}", l);
  c.create.line("m.{} = m.alloc(triad_rt::qconv_weights_bytes(s));", packed);
  c.create.line("triad_rt::qconv_pack_weights(s, {}, {}, {}, m.{});", c.inputs[wi],
                optionalInput(c, wzi), optionalCount(n, wzi), packed);
  int64_t multBytes = q ? (M * 4 + 63) / 64 * 64 : 0;
  std::string scratch = c.scratch(fmt::format("{} + triad_rt::qconv_scratch_bytes(s)", multBytes));
  c.create.close();
  std::string xzp = present(n, 2) ? fmt::format("(int){}[0]", c.inputs[2]) : std::string("0");
  if (q) {
    emitRequantEpi(c, scratch, 1, 4, 6, 7, M, std::to_string(P), false);
    c.body.line("epi.period = {}; epi.bias = {};", M, optionalInput(c, 8));
  } else {
    c.body.line("triad_rt::QStoreEpi epi{{{}, {}}};", c.outputs[0], P);
  }
  c.body.line("triad_rt::qconv2d(s, {}, {}, m.{}, (char*){} + {}, epi);", c.inputs[0], xzp, packed,
              scratch, multBytes);
}

/// Whether an integer MatMul runs on the packed kernels: a constant rank-2 B with a constant
/// zero point per tensor or per column, a per-tensor A zero point, and (QLinearMatMul)
/// per-tensor a and y scales and a b scale per tensor or column.
bool packedIntMatMul(const Node& n) {
  bool q = n.kind() == OpKind::QLinearMatMul;
  size_t ib = q ? 3 : 1, iaz = 2, ibz = q ? 5 : 3;
  const Shape& as = shapeOf(n.input(0));
  const Shape& bs = shapeOf(n.input(ib));
  if (as.size() < 2 || bs.size() != 2 || !n.input(ib)->isConstant()) return false;
  int64_t N = bs[1];
  if (!packableZeroPoint(n, ibz, N) || (present(n, iaz) && countOf(n, iaz) != 1)) return false;
  if (present(n, ibz) && shapeOf(n.input(ibz)).size() > 1) return false;
  if (q && (countOf(n, 1) != 1 || countOf(n, 6) != 1 || (countOf(n, 4) != 1 && countOf(n, 4) != N)))
    return false;
  int64_t rows = numElements(as) / as.back();
  return numElements(as) < (int64_t(1) << 31) && rows * N < (int64_t(1) << 31) &&
         (bs[0] + 1) * (N + 16) * 4 < (int64_t(1) << 31);
}

/// MatMulInteger / QLinearMatMul on triad_rt::qmatmul: B shifted and packed once at creation,
/// A's rows (every batch) packed per run.
void emitPackedIntMatMul(LowerContext& c) {
  const Node& n = c.node;
  bool q = n.kind() == OpKind::QLinearMatMul;
  size_t ib = q ? 3 : 1, ibz = q ? 5 : 3;
  const Shape& as = shapeOf(n.input(0));
  int64_t K = as.back(), N = shapeOf(n.input(ib))[1], rows = numElements(as) / K;
  c.body.line("// {}: {} x {} -> {} ({} rows), int32 sums of (a - a_zp) * (b - b_zp) on the packed "
              "int8 kernel (triad_int8.h){}",
              opKindName(n.kind()), shapeComment(n.input(0)->type()),
              shapeComment(n.input(ib)->type()), shapeComment(n.output(0)->type()), rows,
              q ? ", requantized" : "");
  std::string packed = "pk_" + c.ident;
  c.fields.line("void* {} = nullptr; // {}: shifted B packed for the int8 kernel", packed,
                escape::comment(n.name()));
  c.create.line("m.{} = m.alloc(triad_rt::qmatmul_weights_bytes({}, {}));", packed, K, N);
  c.create.line("triad_rt::qmatmul_pack_b({}, {}, {}, {}, {}, m.{});", K, N, c.inputs[ib],
                optionalInput(c, ibz), optionalCount(n, ibz), packed);
  int64_t multBytes = q ? (N * 4 + 63) / 64 * 64 : 0;
  std::string scratch =
      c.scratch(fmt::format("{} + triad_rt::qmatmul_scratch_bytes({}, {})", multBytes, rows, K));
  std::string azp = present(n, 2) ? fmt::format("(int){}[0]", c.inputs[2]) : std::string("0");
  if (q)
    emitRequantEpi(c, scratch, 1, 4, 6, 7, N, std::to_string(N), true);
  else
    c.body.line("triad_rt::QStoreEpi epi{{{}, {}}};", c.outputs[0], N);
  c.body.line("triad_rt::qmatmul({}, {}, {}, {}, {}, {}, m.{}, (char*){} + {}, epi);", rows, N, K,
              c.inputs[0], K, azp, packed, scratch, multBytes);
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
  if (packedIntMatMul(n)) return emitPackedIntMatMul(c);
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
  // K sums of 8-bit operands shifted by their zero points (each product at most 255 * 255 in
  // magnitude) cannot leave int32 when K <= 33025: then a row of int32 accumulators, updated
  // along B's rows (vectorized over the columns), gives the reference's int64 sums exactly.
  bool narrow = K <= 33025;
  std::string scratch =
      c.scratch(fmt::format("{} * sizeof(int32_t)", na + nbElems + (narrow ? N : 0)));
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
  if (narrow) {
    c.body.line("int32_t* __restrict accr = sb + {}; // the row's int32 sums (exact: K <= 33025)",
                nbElems);
    c.body.line("for (int64_t col = 0; col < {}; ++col) accr[col] = 0;", N);
    c.body.open(fmt::format("for (int64_t k = 0; k < {}; ++k)", K));
    c.body.line("const int32_t av = a0[row * {} + k];", K);
    c.body.line("const int32_t* __restrict br = b0 + k * {};", N);
    c.body.line("for (int64_t col = 0; col < {}; ++col) accr[col] += av * br[col];", N);
    c.body.close();
  }
  c.body.open(fmt::format("for (int64_t col = 0; col < {}; ++col)", N));
  if (narrow) {
    c.body.line("const int64_t acc = accr[col];");
  } else {
    c.body.line("int64_t acc = 0;");
    c.body.line("for (int64_t k = 0; k < {}; ++k) acc += (int64_t)a0[row * {} + k] * b0[k * {} + "
                "col];",
                K, K, N);
  }
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
  if (packedIntConv(n)) return emitPackedIntConv(c);
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
  // Cg * taps sums of shifted 8-bit operands (each product at most 255 * 255 in magnitude)
  // cannot leave int32 when Cg * taps <= 33025: then int32 sums give the reference's int64 sums
  // exactly (the columns below must also fit a 256 MiB scratch).
  bool narrow = Cg * taps <= 33025 && Cg * taps * outSize <= (int64_t(1) << 26);
  if (!narrow)
    c.body.line("const int32_t* src = (const int32_t*){}; // [tap][output position] -> input "
                "position, -1 in the padding",
                c.data(int32Table(table)));
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
  // The narrow path: per image and group, the shifted input gathered once into columns
  // col[ci * taps + t][o] (im2col, 0 in the padding), then per output channel a row of int32 sums
  // updated column by column (contiguous, vectorized over the output positions).
  int64_t cols = Cg * taps;
  if (narrow) {
    std::vector<int64_t> padded = table;
    for (int64_t& v : padded)
      if (v < 0) v = inSize; // the zero after the plane
    c.body.line("const int32_t* srcz = (const int32_t*){}; // src with the padding at {}",
                c.data(int32Table(padded)), inSize);
    std::string scratch =
        c.scratch(fmt::format("{} * sizeof(int32_t)", (inSize + 1) + cols * outSize + outSize));
    c.body.line("int32_t* __restrict xs = (int32_t*){}; // one plane + 1: x - x_zp, then 0",
                scratch);
    c.body.line("int32_t* __restrict col = xs + {}; // [Cg * taps][output position]", inSize + 1);
    c.body.line("int32_t* __restrict accv = col + {}; // [output position] int32 sums",
                cols * outSize);
  }
  c.body.open(fmt::format("for (int64_t img = 0; img < {}; ++img)", N));
  c.body.open(fmt::format("for (int64_t g = 0; g < {}; ++g)", a.group));
  if (narrow) {
    c.body.open(fmt::format("for (int64_t ci = 0; ci < {}; ++ci)", Cg));
    c.body.line("const {}* plane = x + (img * {} + g * {} + ci) * {};", typeOf(n.input(0)), C, Cg,
                inSize);
    c.body.line("for (int64_t i = 0; i < {}; ++i) xs[i] = (int32_t)((int64_t)plane[i] - x_zp);",
                inSize);
    c.body.line("xs[{}] = 0;", inSize);
    c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", taps));
    c.body.line("const int32_t* __restrict st = srcz + t * {};", outSize);
    c.body.line("int32_t* __restrict cr = col + (ci * {} + t) * {};", taps, outSize);
    c.body.line("for (int64_t o = 0; o < {}; ++o) cr[o] = xs[st[o]];", outSize);
    c.body.close();
    c.body.close();
  }
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
  if (narrow) {
    c.body.line("for (int64_t o = 0; o < {}; ++o) accv[o] = 0;", outSize);
    c.body.open(fmt::format("for (int64_t k = 0; k < {}; ++k)", cols));
    c.body.line("const int32_t wv = (int32_t)((int64_t)wr[k] - wz);");
    c.body.line("if (wv == 0) continue;");
    c.body.line("const int32_t* __restrict cr = col + k * {};", outSize);
    c.body.line("for (int64_t o = 0; o < {}; ++o) accv[o] += wv * cr[o];", outSize);
    c.body.close();
    c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outSize));
    c.body.line("const int64_t acc = accv[o];");
  } else {
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
  }
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

// --- Col2Im -------------------------------------------------------------------------------------

Support supportsCol2Im(const Node& n) {
  DType t = dtypeOf(n.input(0));
  if (t == DType::Bool || t == DType::F16 || t == DType::Fixed)
    return no(fmt::format("Col2Im on {} is not compiled", dtypeName(t)));
  const Shape& x = shapeOf(n.input(0));
  if (numElements(x, 1) >= (int64_t(1) << 31) ||
      numElements(shapeOf(n.output(0)), 2) >= (int64_t(1) << 31))
    return no("tables of 2^31 entries or more");
  return {};
}

/// Scatter-add of every column entry into its image position, through the reference's table
/// (ops::col2imTargets: [kernel offset][block] -> flat image position, -1 in the padding).
void emitCol2Im(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<Col2ImAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t K = numElements(a.blockShape), KL = K * x[2]; // one plane: K rows of L blocks
  int64_t NC = x[0] * (x[1] / K), img = numElements(a.imageShape);
  std::string t = typeOf(n.input(0));
  c.body.line(
      "// Col2Im {} -> {}: image [{}], block [{}], strides [{}], pads [{}], dilations [{}]; "
      "{} planes of {} column entries added into their image positions",
      shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()),
      fmt::join(a.imageShape, ", "), fmt::join(a.blockShape, ", "), fmt::join(a.strides, ", "),
      fmt::join(a.pads, ", "), fmt::join(a.dilations, ", "), NC, KL);
  c.body.line("const int32_t* target = (const int32_t*){}; // [kernel offset][block] -> image "
              "position, -1 in the padding",
              c.data(int32Table(ops::col2imTargets(a))));
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("std::memset(y, 0, {});", NC * img * elemBytes(n.input(0)));
  c.body.open(fmt::format("for (int64_t p = 0; p < {}; ++p)", NC));
  c.body.line("const {}* xp = x + p * {};", t, KL);
  c.body.line("{}* yp = y + p * {};", t, img);
  c.body.open(fmt::format("for (int64_t kl = 0; kl < {}; ++kl)", KL));
  c.body.line("const int32_t pos = target[kl];");
  c.body.line("if (pos >= 0) yp[pos] = ({})(yp[pos] + xp[kl]);", t);
  c.body.close();
  c.body.close();
}

// --- GridSample ---------------------------------------------------------------------------------

Support supportsGridSample(const Node& n) {
  if (!isF32OrF64(dtypeOf(n.input(0))) || !isF32OrF64(dtypeOf(n.input(1))))
    return no("only float32 and float64 inputs are compiled");
  return {};
}

/// Per output position: the grid point is unnormalised and padded (clamped or reflected) once,
/// then every channel is sampled; the math is the reference's (ir/ops/Vision.cpp), in float
/// (double for f64 images).
void emitGridSample(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<GridSampleAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  int64_t N = x[0], Ch = x[1], H = x[2], W = x[3], Ho = y[2], Wo = y[3];
  std::string t = typeOf(n.input(0));
  std::string real = dtypeOf(n.input(0)) == DType::F64 ? "double" : "float";
  c.body.line("// GridSample {}, padding {}, align_corners {}: {} at grid {} -> {}, coordinates in "
              "{}",
              toString(a.mode), toString(a.padding), a.alignCorners ? 1 : 0,
              shapeComment(n.input(0)->type()), shapeComment(n.input(1)->type()),
              shapeComment(n.output(0)->type()), real);
  c.body.line("using real = {};", real);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("const {}* __restrict grid = {};", typeOf(n.input(1)), c.inputs[1]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("// the valid coordinate range: pixel centers with align_corners, else the outer "
              "pixel edges");
  if (a.alignCorners) {
    c.body.line("const real x_min = (real)0, x_max = (real){};", W - 1);
    c.body.line("const real y_min = (real)0, y_max = (real){};", H - 1);
  } else {
    c.body.line("const real x_min = (real)-0.5, x_max = (real){} - (real)0.5;", W);
    c.body.line("const real y_min = (real)-0.5, y_max = (real){} - (real)0.5;", H);
  }
  if (a.padding == GridSamplePadding::Zeros)
    c.body.line("(void)x_min; (void)x_max; (void)y_min; (void)y_max; // zeros: no clamping");
  bool reflection = a.padding == GridSamplePadding::Reflection;
  if (reflection) {
    c.body.line("// maps v outside [lo, hi] back inside by reflecting at the borders as often as "
                "needed");
    c.body.open("auto reflect = [](real v, real lo, real hi) -> real");
    c.body.line("const real range = hi - lo;");
    c.body.line("if (range <= (real)0) return lo; // a one-pixel image with align_corners");
    c.body.open("if (v < lo)");
    c.body.line("const real dx = lo - v;");
    c.body.line("const int64_t k = (int64_t)(dx / range);");
    c.body.line("const real r = dx - (real)k * range;");
    c.body.line("return k % 2 == 0 ? lo + r : hi - r;");
    c.body.close();
    c.body.open("if (v > hi)");
    c.body.line("const real dx = v - hi;");
    c.body.line("const int64_t k = (int64_t)(dx / range);");
    c.body.line("const real r = dx - (real)k * range;");
    c.body.line("return k % 2 == 0 ? hi - r : lo + r;");
    c.body.close();
    c.body.line("return v;");
    c.body.close("};");
  }
  c.body.line("// pixel (r, col) of a plane, with the padding mode applied outside the image");
  c.body.open(fmt::format("auto pixel = [&](const {}* img, int64_t r, int64_t col) -> real", t));
  switch (a.padding) {
  case GridSamplePadding::Zeros:
    c.body.line("return (r >= 0 && r < {0} && col >= 0 && col < {1}) ? (real)img[r * {1} + col] : "
                "(real)0;",
                H, W);
    break;
  case GridSamplePadding::Border:
    c.body.line("r = std::clamp<int64_t>(r, 0, {});", H - 1);
    c.body.line("col = std::clamp<int64_t>(col, 0, {});", W - 1);
    c.body.line("return (real)img[r * {} + col];", W);
    break;
  case GridSamplePadding::Reflection:
    c.body.line("col = (int64_t)reflect((real)col, x_min, x_max);");
    c.body.line("r = (int64_t)reflect((real)r, y_min, y_max);");
    c.body.line("// in range already for any coordinate the reference reads; guards memory");
    c.body.line("r = std::clamp<int64_t>(r, 0, {});", H - 1);
    c.body.line("col = std::clamp<int64_t>(col, 0, {});", W - 1);
    c.body.line("return (real)img[r * {} + col];", W);
    break;
  }
  c.body.close("};");
  if (a.mode == GridSampleMode::Bicubic) {
    c.body.line("// Keys cubic convolution coefficients (alpha = -0.75) for offset t in [0, 1)");
    c.body.open("auto cubic_coeffs = [](real t, real* coeffs)");
    c.body.line("const real A = (real)-0.75;");
    c.body.line("const real d = std::abs(t);");
    c.body.line("const real d1 = d + 1, d2 = 1 - d, d3 = 2 - d;");
    c.body.line("coeffs[0] = ((A * d1 - 5 * A) * d1 + 8 * A) * d1 - 4 * A;");
    c.body.line("coeffs[1] = ((A + 2) * d - (A + 3)) * d * d + 1;");
    c.body.line("coeffs[2] = ((A + 2) * d2 - (A + 3)) * d2 * d2 + 1;");
    c.body.line("coeffs[3] = ((A * d3 - 5 * A) * d3 + 8 * A) * d3 - 4 * A;");
    c.body.close("};");
  }
  auto denorm = [&](const std::string& v, int64_t len) {
    return a.alignCorners ? fmt::format("((real){} + 1) / 2 * (real){}", v, len - 1)
                          : fmt::format("(((real){} + 1) * (real){} - 1) / 2", v, len);
  };
  c.body.open(fmt::format("for (int64_t b = 0; b < {}; ++b)", N));
  c.body.open(fmt::format("for (int64_t oy = 0; oy < {}; ++oy)", Ho));
  c.body.open(fmt::format("for (int64_t ox = 0; ox < {}; ++ox)", Wo));
  c.body.line("const {}* g = grid + ((b * {} + oy) * {} + ox) * 2;", typeOf(n.input(1)), Ho, Wo);
  c.body.line("real gx = {};", denorm("g[0]", W));
  c.body.line("real gy = {};", denorm("g[1]", H));
  if (a.mode == GridSampleMode::Nearest) {
    c.body.line("gx = std::nearbyint(gx); // round half to even");
    c.body.line("gy = std::nearbyint(gy);");
  }
  if (a.padding != GridSamplePadding::Zeros) {
    c.body.open("if (gx < x_min || gx > x_max || gy < y_min || gy > y_max)");
    if (a.padding == GridSamplePadding::Border) {
      c.body.line("gx = std::clamp(gx, (real)0, (real){});", W - 1);
      c.body.line("gy = std::clamp(gy, (real)0, (real){});", H - 1);
    } else {
      c.body.line("gx = reflect(gx, x_min, x_max);");
      c.body.line("gy = reflect(gy, y_min, y_max);");
    }
    c.body.close();
  }
  std::string sample;
  switch (a.mode) {
  case GridSampleMode::Nearest:
    c.body.line("const int64_t px = (int64_t)gx, py = (int64_t)gy;");
    sample = "const real v = pixel(img, py, px);";
    break;
  case GridSampleMode::Bilinear:
    c.body.line("const int64_t x1 = (int64_t)std::floor(gx), y1 = (int64_t)std::floor(gy);");
    c.body.line("const real dx1 = gx - (real)x1, dx2 = (real)(x1 + 1) - gx;");
    c.body.line("const real dy1 = gy - (real)y1, dy2 = (real)(y1 + 1) - gy;");
    sample = "const real v = dy2 * (dx2 * pixel(img, y1, x1) + dx1 * pixel(img, y1, x1 + 1)) + dy1 "
             "* (dx2 * pixel(img, y1 + 1, x1) + dx1 * pixel(img, y1 + 1, x1 + 1));";
    break;
  case GridSampleMode::Bicubic:
    c.body.line("// 4x4 neighbourhood whose second row and column hold floor(g)");
    c.body.line(
        "const int64_t x0 = (int64_t)std::floor(gx) - 1, y0 = (int64_t)std::floor(gy) - 1;");
    c.body.line("real cx[4], cy[4];");
    c.body.line("cubic_coeffs(gx - (real)x0 - 1, cx);");
    c.body.line("cubic_coeffs(gy - (real)y0 - 1, cy);");
    break;
  }
  c.body.open(fmt::format("for (int64_t ch = 0; ch < {}; ++ch)", Ch));
  c.body.line("const {}* img = x + (b * {} + ch) * {};", t, Ch, H * W);
  if (a.mode == GridSampleMode::Bicubic) {
    c.body.line("real v = 0;");
    c.body.open("for (int64_t i = 0; i < 4; ++i)");
    c.body.line("real row = 0;");
    c.body.line("for (int64_t j = 0; j < 4; ++j) row += cx[j] * pixel(img, y0 + i, x0 + j);");
    c.body.line("v += cy[i] * row;");
    c.body.close();
  } else {
    c.body.line("{}", sample);
  }
  c.body.line("y[((b * {} + ch) * {} + oy) * {} + ox] = ({})v;", Ch, Ho, Wo, t);
  c.body.close();
  c.body.close();
  c.body.close();
  c.body.close();
}

// --- RoiAlign -----------------------------------------------------------------------------------

Support supportsRoiAlign(const Node& n) {
  if (!isF32OrF64(dtypeOf(n.input(0))) || dtypeOf(n.input(1)) != dtypeOf(n.input(0)))
    return no("only float32 and float64 inputs are compiled");
  if (dtypeOf(n.input(2)) != DType::I64) return no("batch indices must be int64");
  return {};
}

/// Per ROI and bin, the reference's bilinear sample points (ir/ops/Vision.cpp) are computed from
/// the ROI read at run time, and each one is applied to every channel; sums and maxima in float
/// (double for f64), in the reference's order.
void emitRoiAlign(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<RoiAlignAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], Ch = x[1], H = x[2], W = x[3];
  int64_t R = shapeOf(n.input(1))[0], PH = a.outputHeight, PW = a.outputWidth;
  std::string t = typeOf(n.input(0));
  bool avg = a.mode == RoiPoolMode::Avg;
  c.body.line("// RoiAlign {}, {}x{} bins, sampling_ratio {}{}, spatial_scale {}, {}: {} with rois "
              "{} -> {}",
              toString(a.mode), PH, PW, a.samplingRatio, a.samplingRatio == 0 ? " (adaptive)" : "",
              a.spatialScale, a.halfPixel ? "half_pixel" : "output_half_pixel",
              shapeComment(n.input(0)->type()), shapeComment(n.input(1)->type()),
              shapeComment(n.output(0)->type()));
  c.body.line("using real = {}; // the output's type too: bins accumulate in place", t);
  c.body.line("const real* __restrict x = {};", c.inputs[0]);
  c.body.line("const real* __restrict rois = {};", c.inputs[1]);
  c.body.line("const int64_t* __restrict batch = {};", c.inputs[2]);
  c.body.line("real* __restrict y = {};", c.outputs[0]);
  c.body.line("const real scale = (real){}, offset = (real){};", floatLiteral(a.spatialScale),
              a.halfPixel ? "0.5" : "0");
  c.body.open(fmt::format("for (int64_t r = 0; r < {}; ++r)", R));
  c.body.line("const int64_t b = batch[r];");
  c.body.line("if (b < 0 || b >= {}) return m.fail(\"RoiAlign '{}': a batch index is out of range "
              "[0, {})\");",
              N, cEscape(n.name()), N);
  c.body.line("const real start_w = (real)rois[r * 4 + 0] * scale - offset, start_h = "
              "(real)rois[r * 4 + 1] * scale - offset;");
  c.body.line("const real end_w = (real)rois[r * 4 + 2] * scale - offset, end_h = (real)rois[r * "
              "4 + 3] * scale - offset;");
  c.body.line("real roi_w = end_w - start_w, roi_h = end_h - start_h;");
  if (!a.halfPixel) {
    c.body.line("roi_w = std::max(roi_w, (real)1); // legacy: malformed ROIs become 1x1");
    c.body.line("roi_h = std::max(roi_h, (real)1);");
  }
  c.body.line("const real bin_h = roi_h / (real){}, bin_w = roi_w / (real){};", PH, PW);
  if (a.samplingRatio > 0) {
    c.body.line("const int64_t grid_h = {0}, grid_w = {0}; // samples per bin", a.samplingRatio);
  } else {
    c.body.line("// samples per bin: adaptive to the bin size (none for an empty, inverted or NaN "
                "ROI)");
    c.body.line("const real ext_h = roi_h / (real){}, ext_w = roi_w / (real){};", PH, PW);
    c.body.line("const int64_t grid_h = ext_h > 0 ? (int64_t)std::ceil(ext_h) : 0;");
    c.body.line("const int64_t grid_w = ext_w > 0 ? (int64_t)std::ceil(ext_w) : 0;");
  }
  if (avg) c.body.line("const real count = (real)std::max<int64_t>(grid_h * grid_w, 1);");
  c.body.line("real* yr = y + r * {}; // this ROI's output", Ch * PH * PW);
  c.body.open(fmt::format("for (int64_t ph = 0; ph < {}; ++ph)", PH));
  c.body.open(fmt::format("for (int64_t pw = 0; pw < {}; ++pw)", PW));
  c.body.line("const int64_t bin = ph * {} + pw;", PW);
  c.body.line("for (int64_t ch = 0; ch < {}; ++ch) yr[ch * {} + bin] = 0;", Ch, PH * PW);
  if (!avg) c.body.line("int64_t i = 0; // sample index in the bin");
  c.body.open("for (int64_t iy = 0; iy < grid_h; ++iy)");
  c.body.line("const real yy = start_h + (real)ph * bin_h + ((real)iy + (real)0.5) * bin_h / "
              "(real)grid_h;");
  c.body.open("for (int64_t ix = 0; ix < grid_w; ++ix)");
  c.body.line("const real xx = start_w + (real)pw * bin_w + ((real)ix + (real)0.5) * bin_w / "
              "(real)grid_w;");
  c.body.line("// four corners and their weights; a sample outside the image (or at a NaN "
              "position) contributes 0");
  c.body.line("int64_t pos[4] = {{0, 0, 0, 0}};");
  c.body.line("real w[4] = {{0, 0, 0, 0}};");
  c.body.open(fmt::format("if (!(yy < (real)-1 || yy > (real){} || xx < (real)-1 || xx > (real){} "
                          "|| yy != yy || xx != xx))",
                          H, W));
  c.body.line("real sy = std::max(yy, (real)0), sx = std::max(xx, (real)0);");
  c.body.line("int64_t y_low = (int64_t)sy, x_low = (int64_t)sx, y_high = y_low + 1, x_high = "
              "x_low + 1;");
  c.body.open(fmt::format("if (y_low >= {})", H - 1));
  c.body.line("y_high = y_low = {};", H - 1);
  c.body.line("sy = (real)y_low;");
  c.body.close();
  c.body.open(fmt::format("if (x_low >= {})", W - 1));
  c.body.line("x_high = x_low = {};", W - 1);
  c.body.line("sx = (real)x_low;");
  c.body.close();
  c.body.line("const real ly = sy - (real)y_low, lx = sx - (real)x_low, hy = 1 - ly, hx = 1 - lx;");
  c.body.line("pos[0] = y_low * {0} + x_low; pos[1] = y_low * {0} + x_high;", W);
  c.body.line("pos[2] = y_high * {0} + x_low; pos[3] = y_high * {0} + x_high;", W);
  c.body.line("w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;");
  c.body.close();
  c.body.open(fmt::format("for (int64_t ch = 0; ch < {}; ++ch)", Ch));
  c.body.line("const real* plane = x + (b * {} + ch) * {};", Ch, H * W);
  c.body.line("real& v = yr[ch * {} + bin];", PH * PW);
  if (avg) {
    c.body.line("for (int k = 0; k < 4; ++k) v += w[k] * plane[pos[k]];");
  } else {
    c.body.line("// the largest weighted corner term, as ONNX Runtime");
    c.body.line("real mx = w[0] * plane[pos[0]];");
    c.body.line("for (int k = 1; k < 4; ++k) mx = std::max(mx, w[k] * plane[pos[k]]);");
    c.body.line("v = i == 0 ? mx : std::max(v, mx);");
  }
  c.body.close();
  if (!avg) c.body.line("++i;");
  c.body.close();
  c.body.close();
  if (avg)
    c.body.line("for (int64_t ch = 0; ch < {}; ++ch) yr[ch * {} + bin] /= count;", Ch, PH * PW);
  c.body.close();
  c.body.close();
  c.body.close();
}

// --- DFT, STFT ----------------------------------------------------------------------------------

Support supportsDFT(const Node& n) {
  return requireF32OrF64Input(n);
}

/// Emits the reference's dftLine over in_re/in_im (`used` points) for output bin k: sums in
/// double over the twiddle table, entry k * t mod L, then `store(re, im)`.
void emitDftLine(Code& body, int64_t L, int64_t used, bool inverse, const std::string& store) {
  body.line("double re = 0, im = 0;");
  body.line("int64_t j = 0; // k * t mod {}", L);
  body.line("const int64_t step = k % {};", L);
  body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", used));
  body.line("const double cs = tw_cos[j], sn = {}tw_sin[j];", inverse ? "" : "-");
  body.line("re += in_re[t] * cs - in_im[t] * sn;");
  body.line("im += in_re[t] * sn + in_im[t] * cs;");
  body.line("j += step;");
  body.line("if (j >= {0}) j -= {0};", L);
  body.close();
  if (inverse) {
    body.line("re *= 1.0 / {}.0; // inverse: 1/length", L);
    body.line("im *= 1.0 / {}.0;", L);
  }
  body.line("{}", store);
}

std::string twiddleTable(LowerContext& c, int64_t L) {
  ops::Twiddles tw(L);
  std::vector<double> both = tw.cos;
  both.insert(both.end(), tw.sin.begin(), tw.sin.end());
  return c.data(doubleBytes(both));
}

void emitDFT(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<DFTAttrs>();
  const Shape& s = shapeOf(n.input(0));
  size_t axis = size_t(a.axis);
  int64_t ch = s.back(), len = s[axis], outLen = shapeOf(n.output(0))[axis], L = a.length;
  int64_t outer = numElements(s, 0, axis), inner = numElements(s, axis + 1, s.size() - 1);
  int64_t used = std::min(len, L); // input points read; the rest is zero padding
  std::string t = typeOf(n.input(0));
  c.body.line("// {}DFT along axis {}, length {}{}: {} -> {}; {} of {} input points read, sums in "
              "double over the reference's twiddle table",
              a.inverse ? "inverse " : "", a.axis, L, a.onesided ? ", one-sided" : "",
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()), used, len);
  std::string table = twiddleTable(c, L);
  c.body.line("const double* tw_cos = (const double*){}; // cos, sin of 2 pi j / {}", table, L);
  c.body.line("const double* tw_sin = tw_cos + {};", L);
  std::string scratch = c.scratch(fmt::format("{} * sizeof(double)", 2 * used));
  c.body.line("double* in_re = (double*){};", scratch);
  c.body.line("double* in_im = in_re + {};", used);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t e = 0; e < {}; ++e)", inner));
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", used));
  c.body.line("const {}* p = x + ((o * {} + t) * {} + e) * {};", t, len, inner, ch);
  c.body.line("in_re[t] = (double)p[0];");
  c.body.line("in_im[t] = {};", ch == 2 ? "(double)p[1]" : "0.0");
  c.body.close();
  c.body.open(fmt::format("for (int64_t k = 0; k < {}; ++k)", outLen));
  emitDftLine(c.body, L, used, a.inverse,
              fmt::format("{0}* q = y + ((o * {1} + k) * {2} + e) * 2; q[0] = ({0})re; q[1] = "
                          "({0})im;",
                          t, outLen, inner));
  c.body.close();
  c.body.close();
  c.body.close();
}

Support supportsSTFT(const Node& n) {
  return requireF32OrF64Input(n);
}

void emitSTFT(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<STFTAttrs>();
  const Shape& s = shapeOf(n.input(0));
  const Shape& ys = shapeOf(n.output(0));
  int64_t batch = s[0], len = s[1], ch = s[2], frames = ys[1], bins = ys[2], L = a.frameLength;
  bool window = n.inputs().size() > 1 && n.input(1);
  std::string t = typeOf(n.input(0));
  c.body.line("// STFT {} -> {}: {} frames of {} samples every {}{}{}; DFT sums in double over the "
              "reference's twiddle table",
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()), frames, L,
              a.frameStep, window ? ", windowed" : "", a.onesided ? ", one-sided" : "");
  std::string table = twiddleTable(c, L);
  c.body.line("const double* tw_cos = (const double*){}; // cos, sin of 2 pi j / {}", table, L);
  c.body.line("const double* tw_sin = tw_cos + {};", L);
  std::string scratch = c.scratch(fmt::format("{} * sizeof(double)", 2 * L));
  c.body.line("double* in_re = (double*){};", scratch);
  c.body.line("double* in_im = in_re + {};", L);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  if (window) c.body.line("const {}* __restrict window = {};", t, c.inputs[1]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("for (int64_t b = 0; b < {}; ++b)", batch));
  c.body.open(fmt::format("for (int64_t f = 0; f < {}; ++f)", frames));
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", L));
  c.body.line("const {}* p = x + (b * {} + f * {} + t) * {};", t, len, a.frameStep, ch);
  if (window) {
    c.body.line("const double w = (double)window[t];");
    c.body.line("in_re[t] = (double)p[0] * w;");
    c.body.line("in_im[t] = {};", ch == 2 ? "(double)p[1] * w" : "0.0");
  } else {
    c.body.line("in_re[t] = (double)p[0];");
    c.body.line("in_im[t] = {};", ch == 2 ? "(double)p[1]" : "0.0");
  }
  c.body.close();
  c.body.open(fmt::format("for (int64_t k = 0; k < {}; ++k)", bins));
  emitDftLine(c.body, L, L, false,
              fmt::format("{0}* q = y + ((b * {1} + f) * {2} + k) * 2; q[0] = ({0})re; q[1] = "
                          "({0})im;",
                          t, frames, bins));
  c.body.close();
  c.body.close();
  c.body.close();
}

} // namespace

void addSignalLowerings(LoweringTable& t) {
  // Per tensor, both are elementwise (ir/ScalarExpr.cpp) and fuse with their neighbours.
  t[OpKind::QuantizeLinear] = {supportsQuantize, emitQuantize, false, nullptr, true};
  t[OpKind::DequantizeLinear] = {supportsDequantize, emitDequantize, false, nullptr, true};
  t[OpKind::DynamicQuantizeLinear] = {supportsDynamicQuantize, emitDynamicQuantize, false};
  t[OpKind::MatMulInteger] = {supportsIntMatMul, emitIntMatMul, false};
  t[OpKind::QLinearMatMul] = {supportsIntMatMul, emitIntMatMul, false};
  t[OpKind::ConvInteger] = {supportsIntConv, emitIntConv, false};
  t[OpKind::QLinearConv] = {supportsIntConv, emitIntConv, false};
  t[OpKind::Col2Im] = {supportsCol2Im, emitCol2Im, false};
  t[OpKind::GridSample] = {supportsGridSample, emitGridSample, false};
  t[OpKind::RoiAlign] = {supportsRoiAlign, emitRoiAlign, false};
  t[OpKind::DFT] = {supportsDFT, emitDFT, false};
  t[OpKind::STFT] = {supportsSTFT, emitSTFT, false};
}

} // namespace triad::cpu
