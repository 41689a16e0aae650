// Dense: Gemm (transA = 0, constant B, optional constant bias C) and MatMul by a constant 2-D
// matrix. Per row: y_n = cast(sum_k cast(x_k * w_nk) + cast(b_n)) (DenseCore). In RTL one
// triad_dense per layer; a Dense after Flatten of a pixel stream first collects the frame's
// transfers into one vector (triad_collect) and reads its weights in that order.
#include "fpga/Cmvm.h"
#include "fpga/layers/DelayModel.h"
#include "fpga/layers/DenseCore.h"
#include "ir/ops/Linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace triad::fpga {

namespace {

using i128 = __int128;

} // namespace

void DenseCore::row(const int64_t* x, int64_t* y, LayerReport& rep) const {
  const Quant& qw = q->weight();
  const Quant& qa = q->acc();
  const Quant& qb = q->bias();
  const Quant& res = q->result();
  FixedFormat pf = productFormat(in, qw.format);
  const FixedFormat& af = qa.format;
  // A product cast to the accumulator is exact when it keeps every fraction bit and fits.
  bool exactCast =
      af.fracBits() >= pf.fracBits() && af.width - af.fracBits() >= pf.width - pf.fracBits();
  int sh = af.fracBits() - pf.fracBits();
  for (int64_t n = 0; n < N; ++n) {
    CastStatus st;
    i128 exact = 0;
    const int64_t* wr = &w[size_t(n * K)];
    if (exactCast) {
      for (int64_t k = 0; k < K; ++k)
        exact += i128(x[k]) * wr[k] * (i128(1) << sh);
    } else {
      for (int64_t k = 0; k < K; ++k)
        exact += cast(multiply(x[k], in, wr[k], qw.format), pf, af, qa.rounding, qa.overflow, &st);
    }
    if (!b.empty()) exact += cast(b[size_t(n)], qb.format, af, qa.rounding, qa.overflow, &st);
    // The sum wraps modulo 2^accWidth whatever the order of additions.
    int64_t acc = wrapBits(exact, af.width, af.isSigned);
    if (acc != exact) st.wrapped = true;
    y[n] = cast(acc, af, res.format, res.rounding, res.overflow, &st);
    rep.saturated += st.saturated;
    rep.wrapped += st.wrapped;
  }
}

namespace {

/// Per output channel n: the scale of a folded DequantizeLinear constant `v` (per tensor, or
/// along `axis` with N entries) and its integers in the order of `values` (the float constant
/// rearranged as [N][...]); refuses naming `node` when the constant is not one.
std::vector<double> gridScales(const PlanContext& ctx, const ir::Node& node, const ir::Value* v,
                               int axis, int64_t N, const char* what) {
  const ir::DequantizedFrom* q = ctx.quantizedConstant(v);
  if (!q)
    unsupportedNode(node, fmt::format("its input is on a QDQ integer grid, but its {} is not a "
                                      "DequantizeLinear of integer constants",
                                      what));
  if (q->zeroPoint)
    for (int64_t z : q->zeroPoint->toInt64Vector())
      if (z != 0)
        unsupportedNode(node, fmt::format("its {} has zero point {} (0 is supported)", what, z));
  std::vector<double> s = q->scale->toDoubleVector();
  if (s.size() == 1) return std::vector<double>(size_t(N), s[0]);
  if (q->axis != axis || int64_t(s.size()) != N)
    unsupportedNode(node, fmt::format("its {} is quantized along axis {}; per output channel "
                                      "(axis {}) or per tensor is supported",
                                      what, q->axis, axis));
  return s;
}

/// The integer of a DequantizeLinear output x = float(k * scale): k, checked.
int64_t gridInteger(double x, double scale, const ir::Node& node, const char* what) {
  double k = std::nearbyint(x / scale);
  if (float(float(k) * float(scale)) != float(x) || std::fabs(k) > double(int64_t(1) << 31))
    unsupportedNode(node,
                    fmt::format("its {} {} is not an integer times its scale {}", what, x, scale));
  return int64_t(k);
}

int signedBits(int64_t maxAbs) {
  int b = 2;
  while (b < 63 && (int64_t(1) << (b - 1)) <= maxAbs)
    ++b;
  return b;
}

DenseCore planGridCore(LayerInfo& info, PlanContext& ctx, const RealAffine& ra,
                       const std::vector<double>& w, const std::vector<double>& bias, int64_t K,
                       int64_t N, int inputValue, const ir::Value* weightValue,
                       const ir::Value* biasValue, const ir::Node& node, int weightOutAxis) {
  if (!ra.perTensor() || ra.hasOffset())
    unsupportedNode(node, fmt::format("its input is on a QDQ integer grid with {}; the FPGA "
                                      "multiplies integers on a grid of one scale, no offset",
                                      ra.describe()));
  double sx = ra.scale[0];
  std::vector<double> sw = gridScales(ctx, node, weightValue, weightOutAxis, N, "weight");
  const ir::DequantizedFrom* wq = ctx.quantizedConstant(weightValue);
  int wBits = wq->q->dtype() == ir::DType::I8    ? 8
              : wq->q->dtype() == ir::DType::U8  ? 9
              : wq->q->dtype() == ir::DType::I16 ? 16
                                                 : 32;
  DenseCore c;
  c.K = K;
  c.N = N;
  c.in = ctx.format(inputValue);
  int64_t maxW = 0, maxB = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      int64_t v = gridInteger(w[size_t(n * K + k)], sw[size_t(n)], node, "weight");
      c.w.push_back(v);
      maxW = std::max(maxW, std::abs(v));
    }
  if (!bias.empty()) {
    // ONNX Runtime's bias scale is float(s_x * s_w[n]): within float32's rounding of it.
    std::vector<double> sb(static_cast<size_t>(N));
    if (ctx.quantizedConstant(biasValue)) {
      sb = gridScales(ctx, node, biasValue, 0, N, "bias");
      for (int64_t n = 0; n < N; ++n)
        if (std::fabs(sb[size_t(n)] - sx * sw[size_t(n)]) > 1e-6 * sx * sw[size_t(n)])
          unsupportedNode(node, fmt::format("its bias scale {} is not input scale {} x weight "
                                            "scale {}: the bias is not on the accumulator's grid",
                                            sb[size_t(n)], sx, sw[size_t(n)]));
    } else {
      for (int64_t n = 0; n < N; ++n)
        sb[size_t(n)] = sx * sw[size_t(n)];
    }
    for (int64_t n = 0; n < N; ++n) {
      int64_t v = gridInteger(bias[size_t(n)], sb[size_t(n)], node, "bias");
      c.b.push_back(v);
      maxB = std::max(maxB, std::abs(v));
    }
  }
  info.quant = resolveLayer(ctx.config, info.name, RoleRanges{});
  info.quant.exactAccumulator = false;
  int f = c.in.fracBits();
  int64_t maxX = std::max(-minRaw(c.in), maxRaw(c.in));
  // The bias counts in units of s_x * s_w[n] (the input's integers, 2^-f of them per raw unit).
  __int128 maxAcc = __int128(K) * maxX * maxW + (__int128(maxB) << std::max(0, f));
  int accW =
      std::max(signedBits(int64_t(std::min<__int128>(maxAcc, INT64_MAX / 2))), c.in.width + wBits);
  if (accW > 48) unsupportedNode(node, fmt::format("its exact accumulator needs {} bits", accW));
  FixedFormat wf{wBits, wBits, true}, bf{signedBits(maxB), signedBits(maxB), true},
      af{accW, accW - f, true};
  info.quant.roles[size_t(Role::Weight)] = Quant{wf, Rounding::Convergent, Overflow::Saturate};
  info.quant.roles[size_t(Role::Bias)] = Quant{bf, Rounding::Convergent, Overflow::Saturate};
  info.quant.roles[size_t(Role::Accumulator)] = Quant{af, Rounding::Truncate, Overflow::Wrap};
  info.quant.roles[size_t(Role::Result)] = Quant{af, Rounding::Truncate, Overflow::Saturate};
  info.usesWeights = info.usesAcc = true;
  info.fanIn = K;
  info.fanOut = N;
  info.weights = c.w;
  info.biases = c.b;
  RealAffine out;
  for (int64_t n = 0; n < N; ++n)
    out.scale.push_back(sx * sw[size_t(n)]);
  if (std::all_of(out.scale.begin(), out.scale.end(), [&](double v) { return v == out.scale[0]; }))
    out.scale.resize(1);
  else if (node.output(0)->type().rank() < 2 || node.output(0)->type().shape[1] != N)
    unsupportedNode(node, "per-channel weight scales need the output channels on axis 1");
  ctx.setReal(node.output(0)->id(), out);
  ctx.realApplied = true;
  return c;
}

} // namespace

DenseCore planDenseCore(LayerInfo& info, PlanContext& ctx, const std::vector<double>& w,
                        const std::vector<double>& bias, int64_t K, int64_t N, int inputValue,
                        std::optional<double> outRange, const ir::Value* weightValue,
                        const ir::Value* biasValue, const ir::Node* node, int weightOutAxis) {
  if (const RealAffine* ra = ctx.real(inputValue)) {
    TRIAD_ASSERT(node, "layer '{}' on a QDQ grid without its node", info.name);
    if (!weightValue)
      unsupportedNode(*node, "its input is on a QDQ integer grid and its weights are scaled "
                             "(alpha != 1)");
    return planGridCore(info, ctx, *ra, w, bias, K, N, inputValue, weightValue, biasValue, *node,
                        weightOutAxis);
  }
  RoleRanges rr;
  rr[0] = maxAbsOf(w);
  if (!bias.empty()) rr[1] = maxAbsOf(bias);
  rr[2] = rr[3] = outRange;
  info.quant = resolveLayer(ctx.config, info.name, rr);
  // Imported precisions: the model's own weight and bias formats (QONNX Quant on them); a
  // quantizer whose values have no exact format needs the role set in the config.
  for (auto [v, role] : {std::pair{weightValue, Role::Weight}, std::pair{biasValue, Role::Bias}}) {
    if (ctx.configSets(info.name, role)) continue;
    if (auto q = ctx.imported(v)) info.quant.roles[size_t(role)] = *q;
    if (auto why = ctx.importError(v))
      fail(ErrorKind::Unsupported, "layer '{}': {} {}", info.name, toString(role), *why);
  }
  DenseCore c;
  c.K = K;
  c.N = N;
  c.in = ctx.format(inputValue);
  c.w = quantizeAll(w, info.quant.weight(), &info.constSaturated);
  c.b = quantizeAll(bias, info.quant.bias(), &info.constSaturated);
  info.usesWeights = info.usesAcc = true;
  productFormat(c.in, info.quant.weight().format); // asserts the width
  if (info.quant.exactAccumulator)
    info.quant.roles[size_t(Role::Accumulator)].format =
        exactAccumulator(c.in, info.quant.weight().format, K);
  // In a model with imported precisions the layer passes its exact sum on (the model's next
  // Quant rounds it), where the config sets no result and the sum fits a 32-bit value.
  if (ctx.importedMode && info.quant.exactAccumulator && !ctx.configSets(info.name, Role::Result) &&
      info.quant.acc().format.width <= 32)
    info.quant.roles[size_t(Role::Result)].format = info.quant.acc().format;
  info.fanIn = K;
  info.fanOut = N;
  info.weights = c.w;
  info.biases = c.b;
  return c;
}

namespace {

int treeDepth(int64_t kPerOutput) {
  int depth = 0;
  while ((int64_t(1) << depth) < kPerOutput)
    ++depth;
  return depth;
}

// Bits of the largest |w| (triad_dense's W_MAG).
int weightMagnitudeBits(const DenseCore& c) {
  int64_t maxAbs = 0;
  for (int64_t v : c.w)
    maxAbs = std::max(maxAbs, v < 0 ? -v : v);
  int bits = 0;
  while (bits < 62 && (int64_t(1) << bits) <= maxAbs)
    ++bits;
  return bits;
}

} // namespace

int denseLeafWidth(const DenseCore& c) {
  const FixedFormat& wf = c.q->weight().format;
  const FixedFormat& af = c.q->acc().format;
  int pw = c.in.width + wf.width, pfrac = c.in.fracBits() + wf.fracBits();
  int ew = std::min(pw, c.in.width + weightMagnitudeBits(c));
  int shl = std::max(0, af.fracBits() - pfrac), shr = std::max(0, pfrac - af.fracBits());
  int range = shr == 0 ? ew + shl : std::max(2, ew + 1 - shr);
  return std::min(range, af.width);
}

uint64_t uniformStageMask(int stageLevels, int depth) {
  uint64_t mask = 0;
  for (int l = 0; stageLevels > 0 && l <= depth && l < 64; ++l)
    if (l % stageLevels == 0) mask |= uint64_t(1) << l;
  return mask;
}

uint64_t stageMaskFor(const DenseCore& c, int64_t reuse, const RtlSettings& s) {
  int depth = treeDepth(denseLeaves(c.K, reuse));
  if (s.stageLevels > 0 || s.clockMhz <= 0) return uniformStageMask(s.stageLevels, depth);
  using namespace delay;
  const int accW = c.q->acc().format.width, leafW = denseLeafWidth(c);
  const double budget = stageBudget(s.clockMhz);
  // Level l adds nodes of min(leaf + l, acc) bits. The first adder stage starts at the
  // products' registers, which synthesis puts inside the DSP48E1s (their M registers: the
  // post-adder's output 1.82 ns after the clock, not 0.30): it holds fewer levels.
  uint64_t mask = 1;
  double left = budget - (kDspMregOut - kFfOut);
  for (int l = 1; l <= depth; ++l) {
    double c = adderLevel(std::min(leafW + l, accW));
    if (c > left && l > 1) {
      mask |= uint64_t(1) << (l - 1);
      left = budget;
    }
    left -= c;
  }
  // The last stage: the accumulate (acc or bias + the tree's output) and the output cast.
  if (adderLevel(accW) + kCast > left) mask |= uint64_t(1) << depth;
  return mask;
}

int64_t denseLatency(int64_t reuse, int64_t kPerOutput, uint64_t stageMask, bool weightRom) {
  // triad_dense's LATENCY: R + 1 + the registered levels (bit 0: the products) + the ROM's
  // read stage.
  int depth = treeDepth(kPerOutput);
  uint64_t levels = depth >= 63 ? ~uint64_t(0) : (uint64_t(2) << depth) - 1;
  return reuse + 1 + std::popcount(stageMask & levels) + (weightRom && reuse > 1 ? 1 : 0);
}

int64_t denseLeaves(int64_t nIn, int64_t reuse) {
  return reuse >= 1 && reuse <= nIn ? nIn / reuse : 1;
}

bool validDenseReuse(int64_t nIn, int64_t nOut, int64_t reuse) {
  if (reuse < 1 || nIn < 1) return false;
  if (reuse <= nIn) return nIn % reuse == 0;
  return reuse % nIn == 0 && nOut % (reuse / nIn) == 0;
}

std::vector<int64_t> denseReuseFactors(int64_t nIn, int64_t nOut) {
  std::vector<int64_t> v;
  for (int64_t r = 1; r <= nIn; ++r)
    if (nIn % r == 0) v.push_back(r);
  for (int64_t d = 2; d <= nOut; ++d)
    if (nOut % d == 0) v.push_back(nIn * d);
  return v;
}

uint16_t constTerms(int64_t w, int maxTerms) {
  if (maxTerms <= 0) return 0;
  if (w == 0) return uint16_t(1u << 14);
  std::vector<std::pair<int, bool>> digits = cmvm::signedDigits(w); // shift, negative
  if (int(digits.size()) > std::min(maxTerms, 2) || digits.back().first > 31) return 0;
  auto [a, negA] = digits.back();
  if (digits.size() == 1) return uint16_t((2u << 14) | (negA ? 1u << 13 : 0) | unsigned(a) << 8);
  auto [bShift, negB] = digits.front();
  if (negA && negB) return 0; // -(2^a + 2^b): a negation more; left to a multiplier
  return uint16_t((3u << 14) | (negA ? 1u << 13 : 0) | unsigned(a) << 8 | (negB ? 1u << 7 : 0) |
                  unsigned(bShift));
}

namespace {

// Weight tables above this many entries are written a row (or ROM word) per literal.
constexpr int64_t kPackedWeights = 8192;

// A table localparam's concatenation, one row per line (rows from the top, each most
// significant first): a literal per value, or one packed literal per row.
std::string concatRows(const std::vector<std::vector<int64_t>>& rows, int width, bool packed) {
  std::string s = "{";
  for (size_t r = 0; r < rows.size(); ++r) {
    s += "\n      ";
    if (packed) {
      s += hdl::packedHexLiteral(rows[r], width);
    } else {
      for (size_t i = 0; i < rows[r].size(); ++i)
        s += (i > 0 ? ", " : "") + hdl::hexLiteral(rows[r][i], width);
    }
    if (r + 1 < rows.size()) s += ",";
  }
  return s + "\n  }";
}

} // namespace

int64_t addDenseInstance(hdl::Module& m, const DenseCore& c, const std::string& layer,
                         const std::vector<int64_t>& perm, int64_t reuse, uint64_t stageMask,
                         int shiftAddDigits, bool weightRom, const std::string& inPrefix,
                         const std::string& outPrefix) {
  int64_t nIn = perm.empty() ? c.K : int64_t(perm.size());
  if (!validDenseReuse(nIn, c.N, reuse))
    fail(ErrorKind::Usage,
         "reuse factor {} is not valid for layer '{}' ({} inputs, {} outputs): it must divide the "
         "input count, or be the input count times a divisor of the output count; valid: {}",
         reuse, layer, nIn, c.N, fmt::join(denseReuseFactors(nIn, c.N), ", "));
  const LayerQuant& q = *c.q;
  const FixedFormat& wf = q.weight().format;
  const FixedFormat& bf = q.bias().format;
  const FixedFormat& af = q.acc().format;
  requireSigned(wf, layer, "weight");
  requireSigned(bf, layer, "bias");
  requireSigned(af, layer, "accumulator");
  auto weight = [&](int64_t o, int64_t i) {
    int64_t src = perm.empty() ? i : perm[size_t(i)];
    return src < 0 ? 0 : c.w[size_t(o * c.K + src)];
  };
  const char* permNote =
      perm.empty() ? "" : "\ncolumns in the order the stream delivers them (zeros: not connected)";
  const bool rom = weightRom && reuse > 1;
  // Large tables as one literal per row (or ROM word): Verilator's constant folding of a
  // concatenation takes time quadratic in its items (AD08's 81,920 weights: hours).
  const bool packed = c.N * nIn > kPackedWeights;
  std::vector<std::vector<int64_t>> rows; // from the top row, each most significant first
  if (rom) {
    // ROM words: word t holds weight m*R + t of every multiplier m (w[o][i] at o*nIn + i).
    const int64_t nm = c.N * nIn / reuse;
    for (int64_t t = reuse; t-- > 0;) {
      rows.emplace_back();
      for (int64_t mi = nm; mi-- > 0;)
        rows.back().push_back(weight((mi * reuse + t) / nIn, (mi * reuse + t) % nIn));
    }
    m.add(hdl::LocalParam{
        "WEIGHTS", c.N * nIn * wf.width, concatRows(rows, wf.width, packed),
        fmt::format("a ROM of {} words, one per cycle of a vector, word {} first: multiplier m's "
                    "weight at bit m*{} of its word (w[o][i] is weight o*{} + i, multiplier m "
                    "reads weights m*{} .. m*{} + {}){}",
                    reuse, reuse - 1, wf.width, nIn, reuse, reuse, reuse - 1, permNote)});
  } else {
    for (int64_t o = c.N; o-- > 0;) {
      rows.emplace_back();
      for (int64_t i = nIn; i-- > 0;)
        rows.back().push_back(weight(o, i));
    }
    m.add(hdl::LocalParam{"WEIGHTS", c.N * nIn * wf.width, concatRows(rows, wf.width, packed),
                          fmt::format("w[o][i] at bit (o*{} + i)*{}; one row o per line, o = {} "
                                      "first{}",
                                      nIn, wf.width, c.N - 1, permNote)});
  }
  std::string b = "{";
  for (int64_t o = c.N; o-- > 0;)
    b += hdl::hexLiteral(c.b.empty() ? 0 : c.b[size_t(o)], bf.width) + (o > 0 ? ", " : "");
  m.add(hdl::LocalParam{"BIASES", c.N * bf.width, b + "}", {}});
  // The largest |w| bounds the products (and the adder tree's widths).
  int wMag = std::min(weightMagnitudeBits(c), wf.width);
  // At reuse 1 every weight is a constant: the ones with at most shiftAddDigits signed digits
  // become shifts and adds (triad_dense's W_TERMS) instead of multipliers.
  std::string terms;
  int64_t lutProducts = 0;
  if (reuse == 1 && shiftAddDigits > 0) {
    std::vector<std::vector<int64_t>> codes;
    for (int64_t o = c.N; o-- > 0;) {
      codes.emplace_back();
      for (int64_t i = nIn; i-- > 0;) {
        uint16_t t = constTerms(weight(o, i), shiftAddDigits);
        lutProducts += t != 0;
        codes.back().push_back(t);
      }
    }
    terms = concatRows(codes, 16, packed);
    m.add(hdl::LocalParam{
        "W_TERMS", c.N * nIn * 16, terms,
        fmt::format("products built from shifts and adds: {} of {} (16 bits per weight: 0 "
                    "multiply, else kind, signs and shifts of its digits)",
                    lutProducts, c.N * nIn)});
  }
  hdl::Instance inst;
  inst.module = "triad_dense";
  inst.name = "u_dense";
  inst.params = {{"N_IN", std::to_string(nIn)},
                 {"N_OUT", std::to_string(c.N)},
                 {"REUSE", std::to_string(reuse)},
                 {"IN_W", std::to_string(c.in.width)},
                 {"IN_FRAC", std::to_string(c.in.fracBits())},
                 {"W_W", std::to_string(wf.width)},
                 {"W_FRAC", std::to_string(wf.fracBits())},
                 {"B_W", std::to_string(bf.width)},
                 {"B_FRAC", std::to_string(bf.fracBits())},
                 {"ACC_W", std::to_string(af.width)},
                 {"ACC_FRAC", std::to_string(af.fracBits())},
                 {"OUT_W", std::to_string(q.result().format.width)},
                 {"OUT_FRAC", std::to_string(q.result().format.fracBits())},
                 {"ACC_ROUNDING", std::to_string(roundingCode(q.acc().rounding))},
                 {"ACC_SATURATE", std::to_string(saturateCode(q.acc().overflow))},
                 {"RES_ROUNDING", std::to_string(roundingCode(q.result().rounding))},
                 {"RES_SATURATE", std::to_string(saturateCode(q.result().overflow))},
                 {"WEIGHTS", "WEIGHTS"},
                 {"BIASES", "BIASES"}};
  if (stageMask != 0) inst.params.push_back({"STAGE_MASK", fmt::format("64'h{:x}", stageMask)});
  inst.params.push_back({"W_MAG", std::to_string(wMag)});
  if (!terms.empty()) inst.params.push_back({"W_TERMS", "W_TERMS"});
  if (rom) inst.params.push_back({"WEIGHT_ROM", "1"});
  inst.ports = hdl::streamConnections(inPrefix, outPrefix);
  m.add(std::move(inst));
  return c.N * nIn / reuse;
}

bool usesAdderGraph(const DenseCore& c, const RtlSettings& s) {
  return s.strategy == Strategy::ShiftAdd ||
         (s.strategy == Strategy::Auto && s.reuse == 1 && cmvmApplies(c));
}

std::string productsText(const DenseCore& c, const RtlSettings& s) {
  if (usesAdderGraph(c, s)) return "no multiplier (strategy shift_add: an adder graph)";
  return fmt::format("{} multipliers", c.N * c.K / std::max<int64_t>(s.reuse, 1));
}

void addDenseCore(RtlLayer& r, const DenseCore& c, const std::string& layer,
                  const std::vector<int64_t>& perm, std::optional<int64_t> rawMin,
                  const RtlSettings& s, const std::string& inPrefix, const std::string& outPrefix) {
  r.stageLevels = s.stageLevels;
  r.reuse = s.reuse;
  if (s.strategy == Strategy::ShiftAdd && s.reuse != 1)
    fail(ErrorKind::Usage,
         "layer '{}': strategy shift_add builds the products from constant weights, which needs "
         "reuse 1 (it has reuse {})",
         layer, s.reuse);
  if (usesAdderGraph(c, s)) {
    r.adderGraph = addAdderGraph(r.module, c, layer, perm, rawMin, s, inPrefix, outPrefix);
    r.multipliers = 0;
    r.latency += r.adderGraph->stages + 2;
    r.blocks.insert({"triad_pipe", "triad_cast"});
    r.summary = fmt::format("reuse 1, shift_add ({} adders)", r.adderGraph->adders);
    return;
  }
  const int64_t nIn = perm.empty() ? c.K : int64_t(perm.size());
  r.stageMask = stageMaskFor(c, s.reuse, s);
  r.shiftAddDigits = s.reuse == 1 ? s.shiftAddDigits : 0;
  r.weightRom = s.weightRom && s.reuse > 1;
  r.multipliers = addDenseInstance(r.module, c, layer, perm, s.reuse, r.stageMask, s.shiftAddDigits,
                                   r.weightRom, inPrefix, outPrefix);
  r.blocks.insert("triad_dense");
  r.latency += denseLatency(s.reuse, denseLeaves(nIn, s.reuse), r.stageMask, r.weightRom);
  r.summary = fmt::format("reuse {}{}", s.reuse, r.weightRom ? ", weights in a ROM" : "");
}

namespace {

ir::Support supportsDense(const ir::Node& n) {
  if (!isConstantOperand(n.input(1))) return {false, "the weight matrix B must be a constant"};
  if (n.input(1)->type().rank() != 2) return {false, "the weight matrix must be 2-D"};
  if (n.kind() == ir::OpKind::Gemm) {
    if (n.attrs<ir::GemmAttrs>().transA) return {false, "transA=1 is not supported"};
    if (n.input(2) && !isConstantOperand(n.input(2)))
      return {false, "the bias C must be a constant"};
  } else if (n.input(0)->type().rank() < 1) {
    return {false, "scalar input"};
  }
  return {};
}

class Dense final : public Layer {
public:
  DenseCore core;
  int64_t M = 0; // rows

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    std::vector<int64_t> out(size_t(M * core.N));
    for (int64_t m = 0; m < M; ++m)
      core.row(&x[size_t(m * core.K)], &out[size_t(m * core.N)], rep);
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    RtlLayer r;
    const LayerQuant& q = info.quant;
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    // A Flatten of a pixel stream: collect the frame, weights in the stream's order.
    std::vector<int64_t> perm;
    if (a.geom.transfers() > 1 && !a.geom.seq && !a.geom.chw)
      fail(ErrorKind::Unsupported,
           "layer '{}' ({}) multiplies along the last axis of a pixel stream; the Verilog emitter "
           "takes vectors, rows or a Flatten of pixels",
           info.name, info.op);
    bool collect = a.geom.transfers() > 1 && (a.geom.chw || a.geom.elements() == core.K);
    int64_t perTransfer = collect ? a.geom.elements() : a.geom.c;
    if (perTransfer != core.K)
      fail(ErrorKind::Unsupported, "layer '{}' takes {} inputs per row, the stream has {}",
           info.name, core.K, perTransfer);
    if (collect && a.geom.chw) {
      int64_t hw = a.geom.transfers();
      for (int64_t t = 0; t < hw; ++t)
        for (int64_t ch = 0; ch < a.geom.c; ++ch)
          perm.push_back(ch * hw + t);
    }
    r.module = layerModule(s.module, {"in"}, {a.geom.c * a.format.width}, core.N * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' ({}): {} x {} -> {} x {}\n"
        "  weights {}, bias {}, accumulator {} ({}, {}), result {} ({}, {}),\n"
        "  reuse {}: {}, a new input every {} cycle(s){}",
        escape::comment(info.name), info.op, core.K, formatToString(core.in), core.N,
        formatToString(outF), formatToString(q.weight().format), formatToString(q.bias().format),
        formatToString(q.acc().format), toString(q.acc().rounding), toString(q.acc().overflow),
        formatToString(outF), toString(q.result().rounding), toString(q.result().overflow), s.reuse,
        productsText(core, s), s.reuse,
        collect ? fmt::format("\n  input: {} transfers of {} collected into one vector",
                              a.geom.transfers(), a.geom.c)
                : "");
    std::string src = "in";
    if (collect) {
      r.module.addStreamWires("col", core.K * a.format.width);
      r.module.add(hdl::Instance{"triad_collect",
                                 "u_collect",
                                 {{"FRAME", std::to_string(a.geom.transfers())},
                                  {"N", std::to_string(a.geom.c)},
                                  {"W", std::to_string(a.format.width)}},
                                 hdl::streamConnections("in", "col"),
                                 {}});
      r.blocks.insert("triad_collect");
      src = "col";
      r.latency += 1;
    }
    addDenseCore(r, core, info.name, perm, a.rawMin, s, src, "out");
    r.out = {1, 1, core.N, false};
    if (!collect) r.out = {a.geom.h, a.geom.w, core.N, false};
    r.outFormat = outF;
    return r;
  }
};

std::unique_ptr<Layer> planDense(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Dense>();
  int in = ctx.dataInput(n, 0);
  const ir::Shape& aShape = n.input(0)->type().shape;
  const ir::Tensor& B = ctx.constInput(n, 1, "the weight matrix B");
  std::vector<double> bv = B.toDoubleVector();
  bool transB = false;
  double alpha = 1, beta = 1;
  int64_t K = 0;
  if (n.kind() == ir::OpKind::Gemm) {
    const auto& a = n.attrs<ir::GemmAttrs>();
    transB = a.transB;
    alpha = a.alpha;
    beta = a.beta;
    K = aShape[1];
    L->M = aShape[0];
  } else {
    K = aShape.back();
    L->M = ir::numElements(aShape) / std::max<int64_t>(K, 1);
  }
  int64_t N = transB ? B.shape()[0] : B.shape()[1];
  std::vector<double> w(size_t(N * K)), bias;
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t k = 0; k < K; ++k)
      w[size_t(nn * K + k)] = alpha * bv[size_t(transB ? nn * K + k : k * N + nn)];
  if (n.kind() == ir::OpKind::Gemm && n.input(2)) {
    const ir::Tensor& C = ctx.constInput(n, 2, "the bias C");
    std::vector<double> cv = C.toDoubleVector();
    bias.resize(size_t(N));
    if (C.numElements() == 1)
      std::fill(bias.begin(), bias.end(), beta * cv[0]);
    else if (C.numElements() == N && C.shape().back() == N)
      for (int64_t nn = 0; nn < N; ++nn)
        bias[size_t(nn)] = beta * cv[size_t(nn)];
    else
      unsupportedNode(n, fmt::format("bias of shape {} (expected [{}] or [1,{}])",
                                     ir::shapeToString(C.shape()), N, N));
  }
  L->info.name = n.name(); // the config is read by layer name
  L->core = planDenseCore(L->info, ctx, w, bias, K, N, in, ctx.range(n.output(0)->id()),
                          alpha == 1 ? n.input(1) : nullptr,
                          n.kind() == ir::OpKind::Gemm && beta == 1 ? n.input(2) : nullptr, &n,
                          transB ? 0 : 1);
  L->core.q = &L->info.quant;
  L->info.inputs = {in};
  return L;
}

} // namespace

extern const LayerKind kDenseLayer{
    "Dense", {ir::OpKind::Gemm, ir::OpKind::MatMul}, supportsDense, planDense};

} // namespace triad::fpga
