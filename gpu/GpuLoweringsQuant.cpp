// Integer products on the GPU (gpu/GpuLowering.h's table): QLinearConv, QLinearMatMul and
// MatMulInteger through the tiled GEMM, implicit-GEMM and direct convolution generators in their
// integer form (IntOperands): 8-bit operands shifted by their zero points as they are loaded,
// int32 sums, and an epilogue that adds the int32 bias and requantizes exactly as the reference
// does (ir/ops/QuantizeProducts.cpp): y = saturate(roundHalfEven(float(sum) * m) + y_zp) with
// m = x_scale * w_scale / y_scale computed here in float, as the reference computes it. The
// CPU and GPU targets get these nodes from fuse-qdq (ir/passes/FuseQdq.cpp), so a QDQ model's
// tensors stay 8-bit between layers.
//
// Compiled when the scales and zero points are constants, the activation's per tensor and the
// weights' per tensor or per output channel with one zero point for all channels (symmetric
// per-channel weights, ONNX Runtime's quantize_static default); anything else runs on the host.
#include "gpu/GpuLowering.h"
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

bool constantScalar(const Value* v) {
  return v && v->isConstant() && v->constant().numElements() == 1;
}

/// A constant whose elements are all equal (a zero point per channel that is one value).
bool uniformConstant(const Value* v) {
  if (!v || !v->isConstant()) return false;
  std::vector<int64_t> z = v->constant().toInt64Vector();
  return std::all_of(z.begin(), z.end(), [&](int64_t x) { return x == z[0]; });
}

/// The shift of an operand by its (optional) constant zero point: "" for 0.
std::string shiftOf(const Value* zp) {
  if (!zp) return "";
  int64_t z = zp->constant().getInt(0);
  return z == 0 ? "" : fmt::format("{}", z);
}

/// An 8-bit integer operand with a constant per-tensor (or uniform) zero point `zp` (absent: 0)
/// of its own type.
Support int8Operand(const Value* v, const Value* zp, std::string_view what) {
  if (!isInt8(v->type().dtype))
    return no(fmt::format("{} is {}, not uint8 or int8", what, dtypeName(v->type().dtype)));
  if (zp && !uniformConstant(zp))
    return no(fmt::format("{}'s zero point is not a constant with one value", what));
  if (zp && zp->type().dtype != v->type().dtype)
    return no(fmt::format("{}'s zero point has another type", what));
  return {};
}

/// A constant float scale with one element, or `n` (per channel) where n > 0.
Support floatScale(const Value* s, int64_t n, std::string_view what) {
  if (!s || !s->isConstant() || !isFloat(s->type().dtype))
    return no(fmt::format("{} is not a constant float", what));
  int64_t e = s->constant().numElements();
  if (e != 1 && !(n > 0 && e == n && s->type().shape.size() == 1))
    return no(fmt::format("{} is neither per tensor nor per channel", what));
  return {};
}

std::vector<float> floatsOf(const Value* v) {
  std::vector<double> d = v->constant().toDoubleVector();
  return {d.begin(), d.end()};
}

/// The requantization multipliers x_scale * w_scale[c] / y_scale, in float as the reference
/// computes them (one, or one per channel).
std::vector<float> multipliers(const Value* xs, const Value* ws, const Value* ys) {
  float x = floatsOf(xs)[0], y = floatsOf(ys)[0];
  std::vector<float> w = floatsOf(ws), m(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    m[i] = x * w[i] / y;
  return m;
}

/// The epilogue's first statements: the int32 sum `iacc` plus the bias (wrapping, as the
/// reference's int32 accumulators), requantized into `acc` of the output's type. `channel` is
/// the epilogue's variable of the channel a per-channel multiplier or bias is indexed by.
std::string requantize(GpuLowerContext& c, const std::vector<float>& mult, const Value* bias,
                       const Value* yzp, const std::string& channel,
                       std::vector<std::string>& extra, const std::string& key) {
  std::string sum = "iacc";
  std::string code;
  if (bias) {
    std::string b = c.pointer("q_bias", bias);
    code += fmt::format("const int q_sum = as_int((uint)iacc + (uint){}[{}]); // + bias\n", b,
                        bias->type().numElements() == 1 ? "0" : channel);
    sum = "q_sum";
  }
  std::string m;
  if (mult.size() == 1) {
    m = floatLiteral(mult[0]);
  } else {
    extra.push_back("__global const float* restrict q_mult");
    c.bindPacked(
        "q_mult", key, [mult] { return mult; },
        fmt::format("requantization multipliers x_scale * w_scale / y_scale [{}]", mult.size()));
    m = fmt::format("q_mult[{}]", channel);
  }
  std::string ty = clTypeName(c.node.output(0)->type().dtype);
  code += fmt::format("{0} acc = triad_quantize_linear_{0}((float){1} * {2}, {3}); // requantize\n",
                      ty, sum, m, yzp ? yzp->constant().getInt(0) : 0);
  return code;
}

/// Whether the dot4 form is wanted: TRIAD_GPU_INT8_DOT=0 turns it off (for comparisons).
bool dot4Wanted() {
  const char* e = std::getenv("TRIAD_GPU_INT8_DOT");
  return !(e && std::string_view(e) == "0");
}

/// The dot4 form (IntOperands::dot4) for constant weights `w` given as `rows` x `k` bytes
/// (output channels or columns by k) when they fit int8 after their zero point: packs them as
/// words (kernel parameter `param`) and binds the compensation x_zp * row sum (`q_comp`, indexed
/// by `channel`). False (nothing bound) when the form does not apply.
bool bindDot4(GpuLowerContext& c, IntOperands& io, const Value* w, std::vector<uint8_t> rowsByK,
              const Value* wzp, const Value* xzp, int64_t rows, int64_t k, const std::string& param,
              const std::string& channel, std::vector<std::string>& extra) {
  if (!dot4Wanted()) return false;
  const bool isSigned = w->type().dtype == DType::I8;
  const int64_t wz = wzp ? wzp->constant().getInt(0) : 0;
  auto bytes = std::make_shared<const std::vector<uint8_t>>(std::move(rowsByK));
  if (packInt8Words(bytes->data(), isSigned, rows, k, wz).empty()) return false;
  const int64_t xz = xzp ? xzp->constant().getInt(0) : 0;
  c.bindPacked(
      param, fmt::format("int8 words {} {}", w->id(), wz),
      [=] { return packInt8Words(bytes->data(), isSigned, rows, k, wz); },
      fmt::format("{} {} - zero point as int8, 4 per word along k", w->name(),
                  typeToString(w->type())));
  if (xz != 0) {
    extra.push_back("__global const int* restrict q_comp");
    c.bindPacked(
        "q_comp", fmt::format("int8 compensation {} {} {}", w->id(), wz, xz),
        [=] {
          std::vector<float> out(static_cast<size_t>(rows));
          for (int64_t r = 0; r < rows; ++r) {
            int64_t sum = 0;
            for (int64_t i = 0; i < k; ++i) {
              uint8_t v = (*bytes)[size_t(r * k + i)];
              sum += (isSigned ? int64_t(int8_t(v)) : int64_t(v)) - wz;
            }
            int32_t comp = int32_t(uint32_t(uint64_t(xz * sum))); // wraps as the sums do
            std::memcpy(&out[size_t(r)], &comp, 4);
          }
          return out;
        },
        fmt::format("x_zp * row sums of {} (int32)", w->name()));
    io.compensation = fmt::format("q_comp[{}]", channel);
  }
  io.dot4 = true;
  // PTX's dp4a on NVIDIA devices that have it (sm_61 on); TRIAD_GPU_DP4A=0 for the portable form.
  const char* ptx = std::getenv("TRIAD_GPU_DP4A");
  io.ptxDp4a = c.options.device && c.options.device->nvComputeCapability >= 61 &&
               !(ptx && std::string_view(ptx) == "0");
  io.aShift.clear();
  io.bShift.clear();
  io.bPad = unsigned(uint8_t(int8_t(xz)));
  return true;
}

/// A constant's bytes as stored.
std::vector<uint8_t> bytesOf(const Value* v) {
  const Tensor& t = v->constant();
  const auto* p = reinterpret_cast<const uint8_t*>(t.raw());
  return {p, p + t.byteSize()};
}

IntOperands operandsOf(const Value* w, const Value* wzp, const Value* x, const Value* xzp,
                       DType out) {
  IntOperands o;
  o.aType = clTypeName(w->type().dtype);
  o.bType = clTypeName(x->type().dtype);
  o.aShift = shiftOf(wzp);
  o.bShift = shiftOf(xzp);
  o.cType = clTypeName(out);
  return o;
}

// --- QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B? --------------------------

Support supportsQLinearConv(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  size_t r = shapeOf(n.input(0)).size();
  if (r != 3 && r != 4) return no("only 1-D and 2-D convolutions are compiled");
  const int64_t M = shapeOf(n.input(3))[0];
  for (Support s : {int8Operand(n.input(0), n.input(2), "x"),
                    int8Operand(n.input(3), n.input(5), "w"), floatScale(n.input(1), 0, "x_scale"),
                    floatScale(n.input(4), M, "w_scale"), floatScale(n.input(6), 0, "y_scale")})
    if (!s.ok) return s;
  if (!constantScalar(n.input(7))) return no("y_zero_point is not a constant scalar");
  if (!isInt8(n.output(0)->type().dtype)) return no("the output is not uint8 or int8");
  if (!convShapeOf(n, 3)) return no("pads or strides the generator does not cover");
  return {};
}

void emitQLinearConv(GpuLowerContext& c) {
  const Node& n = c.node;
  ConvShape s = *convShapeOf(n, 3);
  bool oneD = shapeOf(n.input(0)).size() == 3;
  const Value* w = n.input(3);
  std::vector<float> mult = multipliers(n.input(1), n.input(4), n.input(6));
  std::vector<std::string> extra;
  std::string pre = requantize(c, mult, n.input(8), n.input(7), "k", extra,
                               fmt::format("qconv multipliers {}", n.output(0)->id()));
  EpilogueIndex index;
  index.linear = fmt::format("((n * {} + k) * {} + oh) * {} + ow", s.K, s.outH(), s.outW());
  index.coords = oneD ? std::vector<std::string>{"n", "k", "ow"}
                      : std::vector<std::string>{"n", "k", "oh", "ow"};
  Epilogue epi = c.epilogue(index, pre);
  epi.params.insert(epi.params.end(), extra.begin(), extra.end());
  IntOperands io = operandsOf(w, n.input(5), n.input(0), n.input(2), n.output(0)->type().dtype);
  io.cType = clTypeName(c.output(0)->type().dtype); // the group's output (after its tail)
  c.conv = s;
  if (useImplicitGemm(s)) {
    GemmShape gs = implicitGemmShape(s);
    GemmParams p = tunedOrDefault(c, gs, panelConvShape(s), false,
                                  [&] { return TuningDb::convKey(s, *c.options.device); });
    io.packedA = true;
    std::vector<std::string> comp;
    if (w->isConstant() &&
        bindDot4(c, io, w, bytesOf(w), n.input(5), n.input(2), s.K, (s.C / s.group) * s.R * s.S,
                 "W", fmt::format("g * {} + row", s.K / s.group), comp)) {
      p.vectorWidth = 1;
      epi.params.insert(epi.params.end(), comp.begin(), comp.end());
    }
    c.kernel = generateConv2DImplicitGemm(c.layer, s, p, epi, &io);
    c.kind = io.dot4 ? "qconv (implicit GEMM, int8 dot4)" : "qconv (implicit GEMM, int8)";
    c.gemm = gs;
    c.params = p.toString();
  } else {
    ConvParams p;
    p.workW = int(std::min<int64_t>(4, s.outW()));
    p.wgW = int(std::min<int64_t>(8, (s.outW() + p.workW - 1) / p.workW));
    p.wgH = int(std::min<int64_t>(8, s.outH()));
    c.kernel = generateConv2D(c.layer, s, p, epi, &io);
    c.kind = s.depthwise() ? "qconv (depthwise, int8)" : "qconv (direct, int8)";
    c.params = p.toString();
  }
  c.bind = {{"X", n.input(0)}, {"W", w}, {"Y", c.output(0)}};
}

// --- QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp ----------------------------
// --- MatMulInteger: a, b, a_zp?, b_zp? -> int32 --------------------------------------------------

bool quantLinear(const Node& n) {
  return n.kind() == OpKind::QLinearMatMul;
}

Support supportsIntMatMul(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  const bool q = quantLinear(n);
  const size_t b = q ? 3 : 1;
  auto p = planMatMul(n, b);
  if (!p) return no("batch dims that broadcast partially are not compiled");
  const Value* azp = q ? n.input(2) : n.inputs().size() > 2 ? n.input(2) : nullptr;
  const Value* bzp = q ? n.input(5) : n.inputs().size() > 3 ? n.input(3) : nullptr;
  if (auto s = both(int8Operand(n.input(0), azp, "a"), int8Operand(n.input(b), bzp, "b")); !s.ok)
    return s;
  if (azp && azp->constant().numElements() != 1) return no("a's zero point is not per tensor");
  if (!q) {
    if (n.output(0)->type().dtype != DType::I32) return no("the output is not int32");
    return {};
  }
  for (Support s :
       {floatScale(n.input(1), 0, "a_scale"), floatScale(n.input(4), p->shape.N, "b_scale"),
        floatScale(n.input(6), 0, "y_scale")})
    if (!s.ok) return s;
  if (!constantScalar(n.input(7))) return no("y_zero_point is not a constant scalar");
  if (!isInt8(n.output(0)->type().dtype)) return no("the output is not uint8 or int8");
  // A per-column b_scale of a 1-D B ([K]) has no columns to index.
  if (n.input(4)->constant().numElements() > 1 && shapeOf(n.input(3)).size() < 2)
    return no("b_scale per column of a 1-D b");
  return {};
}

void emitIntMatMul(GpuLowerContext& c) {
  const Node& n = c.node;
  const bool q = quantLinear(n);
  const size_t bi = q ? 3 : 1;
  MatMulPlan p = *planMatMul(n, bi);
  GemmShape& s = p.shape;
  std::string linear = p.batched ? fmt::format("batch * {} + row * {} + col", s.M * s.N, s.N)
                                 : fmt::format("row * {} + col", s.N);
  std::vector<std::string> coords;
  const Shape& out = shapeOf(c.output(0));
  if (!p.batched && out.size() == 2 && shapeOf(n.input(0)).size() == 2) coords = {"row", "col"};
  std::vector<std::string> extra;
  std::string pre = "int acc = iacc;\n";
  if (q)
    pre = requantize(c, multipliers(n.input(1), n.input(4), n.input(6)), nullptr, n.input(7), "col",
                     extra, fmt::format("qmatmul multipliers {}", n.output(0)->id()));
  Epilogue epi = c.epilogue({linear, coords}, pre);
  epi.params.insert(epi.params.end(), extra.begin(), extra.end());
  const Value* azp = q ? n.input(2) : n.inputs().size() > 2 ? n.input(2) : nullptr;
  const Value* bzp = q ? n.input(5) : n.inputs().size() > 3 ? n.input(3) : nullptr;
  // A is the activation and B the weights here (Y = A . B): IntOperands' A/B as the GEMM's.
  IntOperands io = operandsOf(n.input(0), azp, n.input(bi), bzp, n.output(0)->type().dtype);
  io.cType = clTypeName(c.output(0)->type().dtype);
  GemmParams params =
      tunedOrDefault(c, s, s, false, [&] { return TuningDb::gemmKey(s, *c.options.device); });
  // dot4 for a constant 2-D B: packed by column ([N][K/4] words).
  const Value* b = n.input(bi);
  if (b->isConstant() && shapeOf(b).size() == 2 && !p.batched && s.batch == 1) {
    std::vector<uint8_t> kn = bytesOf(b), nk(kn.size()); // [K][N] -> [N][K]
    for (int64_t kk = 0; kk < s.K; ++kk)
      for (int64_t nn = 0; nn < s.N; ++nn)
        nk[size_t(nn * s.K + kk)] = kn[size_t(kk * s.N + nn)];
    std::vector<std::string> comp;
    if (bindDot4(c, io, b, std::move(nk), bzp, azp, s.N, s.K, "B", "col", comp)) {
      params.vectorWidth = 1;
      epi.params.insert(epi.params.end(), comp.begin(), comp.end());
    }
  }
  c.kernel = generateGemm(c.layer, s, params, epi, &io);
  c.bind = {{"A", n.input(0)}, {"B", n.input(bi)}, {"C", c.output(0)}};
  c.kind = q ? "qgemm (int8" : "gemm (int8 -> int32";
  c.kind += io.dot4 ? ", dot4)" : ")";
  c.gemm = s;
  c.params = params.toString();
}

} // namespace

void addQuantLowerings(std::unordered_map<OpKind, GpuLowering>& table) {
  table[OpKind::QLinearConv] = {supportsQLinearConv, emitQLinearConv, true};
  table[OpKind::QLinearMatMul] = {supportsIntMatMul, emitIntMatMul, true};
  table[OpKind::MatMulInteger] = {supportsIntMatMul, emitIntMatMul, true};
}

} // namespace triad::gpu
