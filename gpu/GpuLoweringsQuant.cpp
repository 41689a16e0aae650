// Integer products on the GPU (gpu/GpuLowering.h's table): QLinearConv, ConvInteger,
// QLinearMatMul and MatMulInteger through the tiled GEMM, implicit-GEMM and direct convolution
// generators in their integer form (IntOperands): 8-bit operands shifted by their zero points as
// they are loaded, int32 sums, and an epilogue that adds the int32 bias and requantizes exactly as
// the reference does (ir/ops/QuantizeProducts.cpp): y = saturate(roundHalfEven(float(sum) * m) +
// y_zp) with m = x_scale * w_scale / y_scale in float, computed here from constants as the
// reference computes it, or in the kernel in the same order (triad_div_rn) from run-time scales.
// The CPU and GPU targets get these nodes from fuse-qdq (ir/passes/FuseQdq.cpp), so a QDQ model's
// tensors stay 8-bit between layers.
//
// Compiled when the activation's scale and zero point are per tensor and the weights' per tensor
// or per output channel with one zero point for all channels (symmetric per-channel weights,
// ONNX Runtime's quantize_static default), as constants or run-time inputs; constant weights with
// a constant zero point take the dot4 form. Anything else runs on the host.
#include "gpu/GpuLowering.h"
#include "ir/Escape.h"
#include "ir/ops/Quantize.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace triad::gpu {

using namespace ir;
using namespace lower;

namespace {

bool isInt8(DType t) {
  return t == DType::U8 || t == DType::I8;
}

/// A constant whose elements are all equal (a zero point per channel that is one value).
bool uniformConstant(const Value* v) {
  if (!v || !v->isConstant()) return false;
  std::vector<int64_t> z = v->constant().toInt64Vector();
  return std::all_of(z.begin(), z.end(), [&](int64_t x) { return x == z[0]; });
}

/// An 8-bit integer operand whose zero point `zp` (absent: 0), of its own type, is a constant
/// with one value (per tensor, or per channel all equal) or a run-time scalar.
Support int8Operand(const Value* v, const Value* zp, std::string_view what) {
  if (!isInt8(v->type().dtype))
    return no(fmt::format("{} is {}, not uint8 or int8", what, dtypeName(v->type().dtype)));
  if (zp && !uniformConstant(zp) && !(!zp->isConstant() && zp->type().numElements() == 1))
    return no(fmt::format("{}'s zero point has more than one value", what));
  if (zp && zp->type().dtype != v->type().dtype)
    return no(fmt::format("{}'s zero point has another type", what));
  return {};
}

/// A float scale with one element, or `n` (per channel) where n > 0; float32 when read at run
/// time.
Support floatScale(const Value* s, int64_t n, std::string_view what) {
  if (!s || !isFloat(s->type().dtype)) return no(fmt::format("{} is not a float", what));
  if (!s->isConstant() && s->type().dtype != DType::F32)
    return no(fmt::format("{} is read at run time and is not float32", what));
  int64_t e = s->type().numElements();
  if (e != 1 && !(n > 0 && e == n && s->type().shape.size() == 1))
    return no(fmt::format("{} is neither per tensor nor per channel", what));
  return {};
}

/// A zero point in the kernel: `shift` subtracted from an element ("" for 0), `byte` its bits as
/// a uint (the dot4 form's padding); a run-time one is read through a pointer named `name`.
struct ZeroPoint {
  std::string shift, byte = "0u";
};
ZeroPoint zeroPoint(GpuLowerContext& c, const Value* zp, const std::string& name) {
  if (!zp) return {};
  if (zp->isConstant()) {
    int64_t z = zp->constant().getInt(0);
    return {z == 0 ? "" : fmt::format("{}", z), fmt::format("{}u", unsigned(uint8_t(int8_t(z))))};
  }
  std::string p = c.pointer(name, zp);
  return {fmt::format("(int){}[0]", p), zp->type().dtype == DType::I8
                                            ? fmt::format("(uint)as_uchar({}[0])", p)
                                            : fmt::format("(uint){}[0]", p)};
}

/// With a scale read at run time the multiplier is computed in the kernel, which reads every
/// scale that is not a constant scalar through a float pointer: those must be float32.
Support scalesSupported(const Value* xs, const Value* ws, const Value* ys) {
  if (xs->isConstant() && ws->isConstant() && ys->isConstant()) return {};
  for (const Value* v : {xs, ws, ys})
    if (!(v->isConstant() && v->type().numElements() == 1) && v->type().dtype != DType::F32)
      return no("a scale read at run time beside one that is not float32");
  return {};
}

std::vector<float> floatsOf(const Value* v) {
  std::vector<double> d = v->constant().toDoubleVector();
  return {d.begin(), d.end()};
}

/// The requantization multiplier x_scale * w_scale[c] / y_scale, the epilogue's `channel` being
/// c. From constants: computed here in float as the reference does, a literal or a packed table
/// (`key`). With a run-time scale: computed in the kernel in the same order, the division
/// rounded correctly (triad_div_rn).
std::string multiplier(GpuLowerContext& c, const Value* xs, const Value* ws, const Value* ys,
                       const std::string& channel, std::vector<std::string>& extra,
                       const std::string& key) {
  if (xs->isConstant() && ws->isConstant() && ys->isConstant()) {
    float x = floatsOf(xs)[0], y = floatsOf(ys)[0];
    std::vector<float> w = floatsOf(ws), m(w.size());
    for (size_t i = 0; i < w.size(); ++i)
      m[i] = x * w[i] / y;
    if (m.size() == 1) return floatLiteral(m[0]);
    extra.push_back("__global const float* restrict q_mult");
    c.bindPacked(
        "q_mult", key, [m] { return m; },
        fmt::format("requantization multipliers x_scale * w_scale / y_scale [{}]", m.size()));
    return fmt::format("q_mult[{}]", channel);
  }
  auto term = [&](const Value* v, const std::string& name) {
    if (v->isConstant() && v->type().numElements() == 1) return floatLiteral(floatsOf(v)[0]);
    return fmt::format("{}[{}]", c.pointer(name, v), v->type().numElements() == 1 ? "0" : channel);
  };
  std::string x = term(xs, "q_xscale"), w = term(ws, "q_wscale"), y = term(ys, "q_yscale");
  return fmt::format("triad_div_rn({} * {}, {})", x, w, y);
}

/// The epilogue's first statements: the int32 sum `iacc` plus the bias (wrapping, as the
/// reference's int32 accumulators), requantized with `mult` into `q_val` of the output's type.
/// `channel` is the epilogue's variable of the channel a per-channel bias is indexed by.
std::string requantize(GpuLowerContext& c, const std::string& mult, const Value* bias,
                       const ZeroPoint& yzp, const std::string& channel) {
  std::string sum = "iacc";
  std::string code;
  if (bias) {
    std::string b = c.pointer("q_bias", bias);
    code += fmt::format("const int q_sum = as_int((uint)iacc + (uint){}[{}]); // + bias\n", b,
                        bias->type().numElements() == 1 ? "0" : channel);
    sum = "q_sum";
  }
  std::string ty = clTypeName(c.node.output(0)->type().dtype);
  code += fmt::format(
      "const {0} q_val = triad_quantize_linear_{0}((float){1} * {2}, {3}); // requantize\n", ty,
      sum, mult, yzp.shift.empty() ? "0" : yzp.shift);
  return code;
}

/// Whether the dot4 form is wanted: TRIAD_GPU_INT8_DOT=0 turns it off (for comparisons).
bool dot4Wanted() {
  const char* e = std::getenv("TRIAD_GPU_INT8_DOT");
  return !(e && std::string_view(e) == "0");
}

/// Constant weights for the dot4 form: given as `rows` x `k` bytes (output channels or columns
/// by k), shifted by their constant zero point into int8 and packed as words once
/// (packInt8Words), with the row sums of the shifted weights (the compensation's). Empty when the
/// form does not apply (not wanted, a run-time zero point, or a weight outside int8 after the
/// shift).
struct Dot4Weights {
  std::shared_ptr<const std::vector<float>> words; // float-sized slots for the weights buffer
  std::vector<int32_t> rowSums;                    // |sum| < 2^31 for k < 2^23
  int64_t zero = 0;
  explicit operator bool() const { return words != nullptr; }
};
Dot4Weights dot4Weights(const Value* w, const std::vector<uint8_t>& rowsByK, const Value* wzp,
                        int64_t rows, int64_t k) {
  if (!dot4Wanted() || !w->isConstant() || (wzp && !wzp->isConstant())) return {};
  const bool isSigned = w->type().dtype == DType::I8;
  Dot4Weights d;
  d.zero = wzp ? wzp->constant().getInt(0) : 0;
  std::vector<float> words = packInt8Words(rowsByK.data(), isSigned, rows, k, d.zero);
  if (words.empty()) return {};
  d.words = std::make_shared<const std::vector<float>>(std::move(words));
  d.rowSums.assign(size_t(rows), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) {
      uint8_t v = rowsByK[size_t(r * k + i)];
      d.rowSums[size_t(r)] += int32_t((isSigned ? int64_t(int8_t(v)) : int64_t(v)) - d.zero);
    }
  return d;
}

/// The dot4 form (IntOperands::dot4) with weights `d`: binds them as words (kernel parameter
/// `param`) and, where the activations' zero point `xzp` is not 0, their row sums (`q_wsum`,
/// indexed by `channel`, a parameter added to `params`) for the compensation xzp * row sum;
/// the operands are then read as stored (no shifts), one word at a time (vector width 1).
void bindDot4(GpuLowerContext& c, IntOperands& io, GemmParams& p, const Value* w,
              const Dot4Weights& d, const ZeroPoint& xzp, const std::string& param,
              const std::string& channel, std::vector<std::string>& params) {
  c.bindPacked(
      param, fmt::format("int8 words {} {}", w->id(), d.zero), [d] { return *d.words; },
      fmt::format("{} {} - zero point as int8, 4 per word along k", w->name(),
                  typeToString(w->type())));
  if (!xzp.shift.empty()) {
    params.push_back("__global const int* restrict q_wsum");
    c.bindPacked(
        "q_wsum", fmt::format("int8 row sums {} {}", w->id(), d.zero),
        [d] {
          std::vector<float> out(d.rowSums.size());
          std::memcpy(out.data(), d.rowSums.data(), out.size() * 4);
          return out;
        },
        fmt::format("row sums of {} - zero point (int32)", w->name()));
    // Wrapping like the sums: (uint) arithmetic.
    io.compensation = fmt::format("(uint)({}) * (uint)q_wsum[{}]", xzp.shift, channel);
  }
  io.dot4 = true;
  // PTX's dp4a on NVIDIA devices that have it (sm_61 on); TRIAD_GPU_DP4A=0 for the portable form.
  const char* ptx = std::getenv("TRIAD_GPU_DP4A");
  io.ptxDp4a = c.options.device && c.options.device->nvComputeCapability >= 61 &&
               !(ptx && std::string_view(ptx) == "0");
  io.aShift.clear();
  io.bShift.clear();
  io.bPad = xzp.byte;
  p.vectorWidth = 1;
}

/// A constant's bytes as stored.
std::vector<uint8_t> bytesOf(const Value* v) {
  const Tensor& t = v->constant();
  const auto* p = reinterpret_cast<const uint8_t*>(t.raw());
  return {p, p + t.byteSize()};
}

// --- QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B? --------------------------
// --- ConvInteger: x, w, x_zp?, w_zp? -> int32 ----------------------------------------------------

/// Where a Conv-like integer node keeps its operands.
struct ConvInputs {
  const Value *x, *w, *xzp, *wzp;
  size_t wIndex;
};
ConvInputs convInputs(const Node& n) {
  auto opt = [&](size_t i) { return i < n.inputs().size() ? n.input(i) : nullptr; };
  if (n.kind() == OpKind::ConvInteger) return {n.input(0), n.input(1), opt(2), opt(3), 1};
  return {n.input(0), n.input(3), n.input(2), n.input(5), 3};
}

Support supportsQLinearConv(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  size_t r = shapeOf(n.input(0)).size();
  if (r != 3 && r != 4) return no("only 1-D and 2-D convolutions are compiled");
  ConvInputs in = convInputs(n);
  if (n.kind() == OpKind::ConvInteger) {
    for (Support s : {int8Operand(in.x, in.xzp, "x"), int8Operand(in.w, in.wzp, "w")})
      if (!s.ok) return s;
    if (in.xzp && in.xzp->type().numElements() != 1) return no("x_zero_point is not per tensor");
    if (n.output(0)->type().dtype != DType::I32) return no("the output is not int32");
    if (!convShapeOf(n, in.wIndex)) return no("pads or strides the generator does not cover");
    return {};
  }
  const int64_t M = shapeOf(n.input(3))[0];
  for (Support s :
       {int8Operand(n.input(0), n.input(2), "x"), int8Operand(n.input(3), n.input(5), "w"),
        floatScale(n.input(1), 0, "x_scale"), floatScale(n.input(4), M, "w_scale"),
        floatScale(n.input(6), 0, "y_scale"), int8Operand(n.output(0), n.input(7), "y")})
    if (!s.ok) return s;
  if (n.input(7)->type().numElements() != 1) return no("y_zero_point is not per tensor");
  if (n.input(2)->type().numElements() != 1) return no("x_zero_point is not per tensor");
  if (auto s = scalesSupported(n.input(1), n.input(4), n.input(6)); !s.ok) return s;
  if (!convShapeOf(n, 3)) return no("pads or strides the generator does not cover");
  return {};
}

void emitQLinearConv(GpuLowerContext& c) {
  const Node& n = c.node;
  const ConvInputs in = convInputs(n);
  const bool q = n.kind() == OpKind::QLinearConv;
  ConvShape s = *convShapeOf(n, in.wIndex);
  bool oneD = shapeOf(n.input(0)).size() == 3;
  const Value* w = in.w;
  const int64_t Kg = s.K / s.group, Kw = (s.C / s.group) * s.R * s.S;
  const bool igemm = useImplicitGemm(s);
  Dot4Weights d4 =
      igemm && w->isConstant() ? dot4Weights(w, bytesOf(w), in.wzp, s.K, Kw) : Dot4Weights{};
  std::vector<std::string> extra;
  ZeroPoint xzp = zeroPoint(c, in.xzp, "q_xzp");
  ZeroPoint wzp = d4 ? ZeroPoint{} : zeroPoint(c, in.wzp, "q_wzp");
  std::string pre = "const int q_val = iacc;\n"; // ConvInteger: the int32 sums
  if (q) {
    ZeroPoint yzp = zeroPoint(c, n.input(7), "q_yzp");
    std::string mult = multiplier(c, n.input(1), n.input(4), n.input(6), "k", extra,
                                  fmt::format("qconv multipliers {}", n.output(0)->id()));
    pre = requantize(c, mult, n.inputs().size() > 8 ? n.input(8) : nullptr, yzp, "k");
  }
  EpilogueIndex index;
  index.linear = fmt::format("((n * {} + k) * {} + oh) * {} + ow", s.K, s.outH(), s.outW());
  index.coords = oneD ? std::vector<std::string>{"n", "k", "ow"}
                      : std::vector<std::string>{"n", "k", "oh", "ow"};
  Epilogue epi = c.epilogue(index, pre);
  epi.params.insert(epi.params.end(), extra.begin(), extra.end());
  IntOperands io;
  io.aType = clTypeName(w->type().dtype);
  io.bType = clTypeName(in.x->type().dtype);
  io.cType = clTypeName(c.output(0)->type().dtype); // the group's output (after its tail)
  io.aShift = wzp.shift;                            // the plain form (bindDot4 clears them)
  io.bShift = xzp.shift;
  c.conv = s;
  if (igemm) {
    GemmShape gs = implicitGemmShape(s);
    GemmParams p = tunedOrDefault(c, gs, panelConvShape(s), false,
                                  [&] { return TuningDb::convKey(s, *c.options.device); });
    io.packedA = true;
    if (d4) bindDot4(c, io, p, w, d4, xzp, "W", fmt::format("g * {} + row", Kg), epi.params);
    c.kernel = generateConv2DImplicitGemm(c.layer, s, p, epi, &io);
    c.kind = io.dot4 ? "qconv (implicit GEMM, int8 dot4)" : "qconv (implicit GEMM, int8)";
    if (!q) c.kind = io.dot4 ? "conv (int8 -> int32, dot4)" : "conv (int8 -> int32)";
    c.gemm = gs;
    c.params = p.toString();
  } else {
    ConvParams p = directConvParams(s);
    c.kernel = generateConv2D(c.layer, s, p, epi, &io);
    c.kind = s.depthwise() ? "qconv (depthwise, int8)" : "qconv (direct, int8)";
    if (!q) c.kind = "conv (direct, int8 -> int32)";
    c.params = p.toString();
  }
  c.bind = {{"X", in.x}, {"W", w}, {"Y", c.output(0)}};
}

// --- QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp ----------------------------
// --- MatMulInteger: a, b, a_zp?, b_zp? -> int32 --------------------------------------------------

bool quantLinear(const Node& n) {
  return n.kind() == OpKind::QLinearMatMul;
}

const Value* aZeroPoint(const Node& n) {
  return quantLinear(n) ? n.input(2) : n.inputs().size() > 2 ? n.input(2) : nullptr;
}
const Value* bZeroPoint(const Node& n) {
  return quantLinear(n) ? n.input(5) : n.inputs().size() > 3 ? n.input(3) : nullptr;
}

Support supportsIntMatMul(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  const bool q = quantLinear(n);
  const size_t b = q ? 3 : 1;
  auto p = planMatMul(n, b);
  if (!p) return no("batch dims that broadcast partially are not compiled");
  const Value* azp = aZeroPoint(n);
  const Value* bzp = bZeroPoint(n);
  if (auto s = both(int8Operand(n.input(0), azp, "a"), int8Operand(n.input(b), bzp, "b")); !s.ok)
    return s;
  if (azp && azp->type().numElements() != 1) return no("a's zero point is not per tensor");
  if (bzp && !bzp->isConstant() && bzp->type().numElements() != 1)
    return no("b's zero point is not per tensor");
  if (!q) {
    if (n.output(0)->type().dtype != DType::I32) return no("the output is not int32");
    return {};
  }
  for (Support s :
       {floatScale(n.input(1), 0, "a_scale"), floatScale(n.input(4), p->shape.N, "b_scale"),
        floatScale(n.input(6), 0, "y_scale"), int8Operand(n.output(0), n.input(7), "y")})
    if (!s.ok) return s;
  if (n.input(7)->type().numElements() != 1) return no("y_zero_point is not per tensor");
  if (auto s = scalesSupported(n.input(1), n.input(4), n.input(6)); !s.ok) return s;
  // A per-column b_scale of a 1-D B ([K]) has no columns to index.
  if (n.input(4)->type().numElements() > 1 && shapeOf(n.input(3)).size() < 2)
    return no("b_scale per column of a 1-D b");
  return {};
}

void emitIntMatMul(GpuLowerContext& c) {
  const Node& n = c.node;
  const bool q = quantLinear(n);
  const size_t bi = q ? 3 : 1;
  MatMulPlan p = *planMatMul(n, bi);
  GemmShape& s = p.shape;
  // dot4 for a constant 2-D B, packed by column ([N][K/4] words).
  const Value* b = n.input(bi);
  Dot4Weights d4;
  if (b->isConstant() && shapeOf(b).size() == 2 && !p.batched && s.batch == 1) {
    std::vector<uint8_t> kn = bytesOf(b), nk(kn.size()); // [K][N] -> [N][K]
    for (int64_t kk = 0; kk < s.K; ++kk)
      for (int64_t nn = 0; nn < s.N; ++nn)
        nk[size_t(nn * s.K + kk)] = kn[size_t(kk * s.N + nn)];
    d4 = dot4Weights(b, nk, bZeroPoint(n), s.N, s.K);
  }
  std::vector<std::string> extra;
  ZeroPoint azp = zeroPoint(c, aZeroPoint(n), "q_azp");
  ZeroPoint bzp = d4 ? ZeroPoint{} : zeroPoint(c, bZeroPoint(n), "q_bzp");
  std::string pre = "const int q_val = iacc;\n";
  if (q)
    pre = requantize(c,
                     multiplier(c, n.input(1), n.input(4), n.input(6), "col", extra,
                                fmt::format("qmatmul multipliers {}", n.output(0)->id())),
                     nullptr, zeroPoint(c, n.input(7), "q_yzp"), "col");
  Epilogue epi = c.epilogue(matMulEpilogueIndex(n, p, c.output(0)), pre);
  epi.params.insert(epi.params.end(), extra.begin(), extra.end());
  // A is the activation and B the weights here (Y = A . B): IntOperands' A/B as the GEMM's.
  IntOperands io;
  io.aType = clTypeName(n.input(0)->type().dtype);
  io.bType = clTypeName(b->type().dtype);
  io.cType = clTypeName(c.output(0)->type().dtype);
  io.aShift = azp.shift; // the plain form (bindDot4 clears them)
  io.bShift = bzp.shift;
  GemmParams params =
      tunedOrDefault(c, s, s, false, [&] { return TuningDb::gemmKey(s, *c.options.device); });
  if (d4) bindDot4(c, io, params, b, d4, azp, "B", "col", epi.params);
  c.kernel = generateGemm(c.layer, s, params, epi, &io);
  c.bind = {{"A", n.input(0)}, {"B", b}, {"C", c.output(0)}};
  c.kind = q ? "qgemm (int8" : "gemm (int8 -> int32";
  c.kind += io.dot4 ? ", dot4)" : ")";
  c.gemm = s;
  c.params = params.toString();
}

// --- DynamicQuantizeLinear: x (f32) -> y (uint8), y_scale, y_zero_point ------------------------

Support supportsDynamicQuantize(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  if (n.input(0)->type().dtype != DType::F32) return no("x is not float32");
  return {};
}

/// Two kernels, in the reference's order of operations (ir/ops/Quantize.cpp): the range, each
/// work-group reducing its share in local memory and folding it into two scratch ints with
/// atomic_max (max(x, 0) and max(-x, 0) as float bits, which order like the floats since both
/// are >= 0; NaNs are skipped as std::min/max skip them); then one work-item per element
/// computing scale and zero point from the range (the divisions rounded correctly, an all-zero
/// input getting scale 1 as in ONNX Runtime) and quantizing its element.
void emitDynamicQuantize(GpuLowerContext& c) {
  const Node& n = c.node;
  const int64_t total = numElements(shapeOf(n.input(0)));
  const std::string shape = shapeToString(shapeOf(n.input(0)));
  c.scratch("q_range", 2, fmt::format("the range of {}", n.input(0)->name()));

  // The range: `groups` work-groups of `wg` work-items striding over the tensor.
  const bool cpu = c.options.device && c.options.device->type == "CPU";
  int wg = 1;
  while (!cpu && wg * 2 <= 256 && size_t(wg * 2) <= c.options.maxWorkGroupSize)
    wg *= 2;
  const int64_t groups = std::clamp<int64_t>(ceilDiv(total, int64_t(wg) * 8), 1, cpu ? 64 : 1024);
  GeneratedKernel r;
  r.name = c.freshName("range");
  r.range.dims = 1;
  r.range.global = {size_t(groups * wg), 1, 1};
  r.range.local = {size_t(wg), 1, 1};
  r.params = {"X", "q_range"};
  {
    CodeWriter w;
    w.line("// Layer: {} (DynamicQuantizeLinear, the range of X{})", escape::comment(c.layer),
           shape);
    w.line("//   q_range = {{max(x, 0), max(-x, 0)}} as float bits (NaNs skipped), per work-group "
           "in local memory, then atomic_max; launch: {}.",
           r.range.toString());
    w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", wg);
    std::string head = fmt::format("void {}(", r.name);
    w.open("{}{})", head,
           joinParams({"__global const float* restrict X", "__global int* restrict q_range"},
                      int(head.size())));
    w.line("__local float hi_s[{}], nlo_s[{}];", wg, wg);
    w.line("const int t = get_local_id(0);");
    w.line("float hi = 0.0f, nlo = 0.0f;");
    w.open("for (int i = get_global_id(0); i < {}; i += {})", total, groups * wg);
    w.line("const float v = X[i];");
    w.line("hi = v > hi ? v : hi;");
    w.line("nlo = -v > nlo ? -v : nlo;");
    w.close();
    w.line("hi_s[t] = hi;");
    w.line("nlo_s[t] = nlo;");
    w.line("barrier(CLK_LOCAL_MEM_FENCE);");
    w.open("for (int s = {}; s > 0; s >>= 1)", wg / 2);
    w.open("if (t < s)");
    w.line("hi_s[t] = hi_s[t + s] > hi_s[t] ? hi_s[t + s] : hi_s[t];");
    w.line("nlo_s[t] = nlo_s[t + s] > nlo_s[t] ? nlo_s[t + s] : nlo_s[t];");
    w.close();
    w.line("barrier(CLK_LOCAL_MEM_FENCE);");
    w.close();
    w.open("if (t == 0)");
    w.line("atomic_max(&q_range[0], as_int(hi_s[0]));");
    w.line("atomic_max(&q_range[1], as_int(nlo_s[0]));");
    w.close();
    w.close();
    r.source = w.str();
  }
  c.preStep(std::move(r), {{"X", n.input(0)}}, "dynamic quantize (range)");

  // The elements.
  std::vector<std::string> params = {"__global const float* restrict X",
                                     "__global uchar* restrict Y",
                                     "__global const int* restrict q_range"};
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  const bool scaleOut = n.outputs().size() > 1, zeroOut = n.outputs().size() > 2;
  if (scaleOut) params.push_back("__global float* restrict Y_scale");
  if (zeroOut) params.push_back("__global uchar* restrict Y_zp");
  if (scaleOut) c.bind["Y_scale"] = c.output(1);
  if (zeroOut) c.bind["Y_zp"] = c.output(2);
  CodeWriter w = openPerElementKernel(
      c, "DynamicQuantizeLinear, f32 -> uint8",
      {fmt::format("X{} -> Y uint8 with scale and zero point from the range [min(x, 0), max(x, "
                   "0)] onto [0, 255]",
                   shape)},
      params, total);
  w.line("const float hi = as_float(q_range[0]), lo = -as_float(q_range[1]);");
  w.line("const float scale = hi == lo ? 1.0f : triad_div_rn(hi - lo, 255.0f);");
  w.line("const int zp = (int)rint(clamp(0.0f - triad_div_rn(lo, scale), 0.0f, 255.0f));");
  w.line("Y[idx] = triad_quantize_linear_uchar(triad_div_rn(X[idx], scale), zp);");
  if (scaleOut || zeroOut) {
    w.open("if (idx == 0)");
    if (scaleOut) w.line("Y_scale[0] = scale;");
    if (zeroOut) w.line("Y_zp[0] = (uchar)zp;");
    w.close();
  }
  w.close();
  c.kernel.source = w.str();
  c.kind = "dynamic quantize";
}

} // namespace

void addQuantLowerings(std::unordered_map<OpKind, GpuLowering>& table) {
  table[OpKind::QLinearConv] = {supportsQLinearConv, emitQLinearConv, true, true};
  table[OpKind::ConvInteger] = {supportsQLinearConv, emitQLinearConv, true, true};
  table[OpKind::DynamicQuantizeLinear] = {supportsDynamicQuantize, emitDynamicQuantize, false};
  table[OpKind::QLinearMatMul] = {supportsIntMatMul, emitIntMatMul, true, true};
  table[OpKind::MatMulInteger] = {supportsIntMatMul, emitIntMatMul, true, true};
}

} // namespace triad::gpu
