// Softmax over the last axis, hls4ml's stable form (docs/fpga.md): d_j = x_j - max x (exact),
// e_j = exp table[d_j] (exp_precision), S = sum e_j (exact), inv = reciprocal table[S]
// (inv_precision), y_j = cast(e_j * inv). RTL: triad_softmax, its stages sized by the delay
// model for the design's clock (6 to 9 cycles).
// On a QDQ integer grid (input k, real s * k) followed by a QuantizeLinear (s_y, z): e_j from an
// exact-index table (2^IN_W entries, 24 fraction bits) and the QuantizeLinear's k by an exact
// division, y_j = min(round_half_even(e_j * R / (S * 2^R_FRAC)), qmax - z), R = 2^R_FRAC / s_y
// (triad_softmax_q); the QuantizeLinear that follows then only clamps.
#include "fpga/layers/DelayModel.h"
#include "fpga/layers/Layer.h"
#include "ir/ops/Normalization.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace triad::fpga {

namespace {

int64_t tableIndex(int64_t raw, int shift, int64_t offset, int64_t size) {
  return std::clamp<int64_t>(shiftFloor(raw, shift) + offset, 0, size - 1);
}

int log2Step(double v) {
  int e = 0;
  double m = std::frexp(v, &e);
  TRIAD_ASSERT(m == 0.5, "{} is not a power of two", v);
  return e - 1;
}

// triad_softmax's registers for a clock (its header): MAX_SPLIT when the comparisons and the
// select of the maximum do not fit one stage; SUM_REGS where the adder tree over the exp
// entries (fed by a block RAM's slow clock-to-out) and the reciprocal's index need them.
struct SoftmaxStages {
  bool maxSplit = false;
  uint32_t sumRegs = 0;
  int64_t latency() const { return (maxSplit ? 2 : 1) + 5 + std::popcount(sumRegs); }
};

SoftmaxStages softmaxStages(double clockMhz, int64_t n, int inW, int expW, int idxW, int invShift) {
  SoftmaxStages st;
  if (clockMhz <= 0) return st;
  using namespace delay;
  const double budget = stageBudget(clockMhz);
  int ni = int(n);
  double select = kLut * (lutLevels(std::max(1, ni - 1)) + lutLevels(2 * ni));
  st.maxSplit = adderLevel(inW + 1) + select > budget;
  int ds = 0;
  while ((int64_t(1) << ds) < n)
    ++ds;
  // The first stage starts at the exp tables' outputs, later than a flip-flop's.
  double left = budget - (kBramOut - kFfOut);
  for (int l = 1; l <= ds; ++l) {
    double c = adderLevel(expW + l);
    if (c > left) {
      st.sumRegs |= 1u << (l - 1);
      left = budget;
    }
    left -= c;
  }
  // The reciprocal's index (the sum's bits above the table's range: saturate; a multiplexer)
  // into the block RAM's address (a longer setup than a flip-flop's).
  int high = std::max(1, expW + ds - std::max(0, invShift) - idxW);
  double index = kLut * (lutLevels(high) + 1) + (kBramSetup - kFfSetup);
  if (index > left) st.sumRegs |= 1u << ds;
  return st;
}

ir::Support supportsSoftmax(const ir::Node& n) {
  const ir::Shape& sh = n.input(0)->type().shape;
  if (sh.empty() ||
      n.attrs<ir::SoftmaxAttrs>().axes != std::vector<int64_t>{int64_t(sh.size()) - 1})
    return {false, "only a softmax over the last axis is supported"};
  return {};
}

class Softmax final : public Layer {
public:
  int64_t rows = 0, cols = 0;

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    const LayerQuant& q = info.quant;
    const Quant& res = q.result();
    int64_t n = int64_t(info.table.size());
    FixedFormat pf = productFormat(q.exp.format, q.inv.format);
    std::vector<int64_t> e(static_cast<size_t>(cols)), out(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t* row = &x[size_t(r * cols)];
      int64_t mx = *std::max_element(row, row + cols);
      int64_t sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        e[size_t(c)] = info.table[size_t(tableIndex(row[c] - mx, info.tableShift, n, n))];
        sum += e[size_t(c)];
      }
      int64_t inv = info.invTable[size_t(tableIndex(sum, info.invShift, 0, n))];
      for (int64_t c = 0; c < cols; ++c) {
        CastStatus st;
        out[size_t(r * cols + c)] = cast(multiply(e[size_t(c)], q.exp.format, inv, q.inv.format),
                                         pf, res.format, res.rounding, res.overflow, &st);
        rep.saturated += st.saturated;
        rep.wrapped += st.wrapped;
      }
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const LayerQuant& q = info.quant;
    const FixedFormat& outF = info.outFormat;
    const FixedFormat& ef = q.exp.format;
    const FixedFormat& rf = q.inv.format;
    requireSigned(outF, info.name, "result");
    requireSigned(ef, info.name, "exp table");
    requireSigned(rf, info.name, "reciprocal table");
    if (a.geom.c != cols)
      fail(ErrorKind::Unsupported, "layer '{}' (Softmax) takes rows of {}, the stream has {}",
           info.name, cols, a.geom.c);
    int64_t n = cols, size = int64_t(info.table.size());
    SoftmaxStages st =
        softmaxStages(s.clockMhz, n, a.format.width, ef.width, log2Exact(size), info.invShift);
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {n * a.format.width}, n * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' (Softmax): {} x {} -> {} x {}\n"
        "  exp table: {} entries over [-{}, 0) in {}, index = clamp(floor((x - max) / 2^{}) + {}, "
        "0, {});\n"
        "  reciprocal table: {} entries over [0, {}) in {}, index = clamp(floor(sum / 2^{}), 0, "
        "{});\n"
        "  y = cast(exp * reciprocal) to {} ({}, {}); latency {} cycles{}",
        escape::comment(info.name), n, formatToString(a.format), n, formatToString(outF), size,
        q.tableRange, formatToString(ef), info.tableShift, size, size - 1, size, q.invRange,
        formatToString(rf), info.invShift, size - 1, formatToString(outF),
        toString(q.result().rounding), toString(q.result().overflow), st.latency(),
        s.clockMhz > 0 ? fmt::format(" (stages for {:g} MHz)", s.clockMhz) : "");
    r.module.add(hdl::LocalParam{"EXP_TABLE", size * ef.width, tableLiteral(info.table, ef.width),
                                 "entry j at [j*W +: W], the last entry first"});
    r.module.add(
        hdl::LocalParam{"INV_TABLE", size * rf.width, tableLiteral(info.invTable, rf.width), {}});
    hdl::Instance inst{"triad_softmax",
                       "u_softmax",
                       {{"N", std::to_string(n)},
                        {"IN_W", std::to_string(a.format.width)},
                        {"SIZE", std::to_string(size)},
                        {"IDX_W", std::to_string(log2Exact(size))},
                        {"EXP_SHIFT", std::to_string(info.tableShift)},
                        {"EXP_W", std::to_string(ef.width)},
                        {"EXP_FRAC", std::to_string(ef.fracBits())},
                        {"INV_SHIFT", std::to_string(info.invShift)},
                        {"INV_W", std::to_string(rf.width)},
                        {"INV_FRAC", std::to_string(rf.fracBits())},
                        {"MAX_SPLIT", st.maxSplit ? "1" : "0"},
                        {"SUM_REGS", fmt::format("32'h{:x}", st.sumRegs)}},
                       hdl::streamConnections("in", "out"),
                       {}};
    for (auto& p : resultParams(outF, q.result()))
      inst.params.push_back(p);
    inst.params.push_back({"EXP_TABLE", "EXP_TABLE"});
    inst.params.push_back({"INV_TABLE", "INV_TABLE"});
    r.module.add(std::move(inst));
    r.blocks.insert("triad_softmax");
    r.latency = st.latency();
    r.multipliers = n;
    r.memoryBits = size * (ef.width + rf.width);
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = "Softmax";
    return r;
  }
};

/// Softmax on a QDQ grid into its QuantizeLinear (triad_softmax_q).
class SoftmaxGrid final : public Layer {
public:
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> table; // exp(-s d) at d = 0 .. 2^IN_W - 1, kExpFrac fraction bits
  int64_t r = 0;              // 2^rFrac / s_y
  int rFrac = 0, rW = 32, qBits = 0;
  int64_t hi = 0;
  static constexpr int kExpFrac = 24;

  int64_t divide(int64_t e, int64_t sum) const {
    using u128 = unsigned __int128;
    u128 num = u128(e) * u128(r), den = u128(sum) << rFrac;
    u128 q = num / den, rem = num - q * den;
    if (2 * rem > den || (2 * rem == den && (q & 1))) ++q;
    return std::min<int64_t>(int64_t(q), hi);
  }

  void exec(RawValues& val, LayerReport&) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    std::vector<int64_t> e(static_cast<size_t>(cols)), out(x.size());
    for (int64_t rr = 0; rr < rows; ++rr) {
      const int64_t* row = &x[size_t(rr * cols)];
      int64_t mx = *std::max_element(row, row + cols), sum = 0;
      for (int64_t c = 0; c < cols; ++c)
        sum += e[size_t(c)] = table[size_t(mx - row[c])];
      for (int64_t c = 0; c < cols; ++c)
        out[size_t(rr * cols + c)] = divide(e[size_t(c)], sum);
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    if (a.geom.c != cols)
      fail(ErrorKind::Unsupported, "layer '{}' (Softmax) takes rows of {}, the stream has {}",
           info.name, cols, a.geom.c);
    int64_t n = cols, size = int64_t(table.size());
    int ew = kExpFrac + 1;
    RtlLayer rl;
    rl.module = layerModule(s.module, {"in"}, {n * a.format.width}, n * outF.width);
    rl.module.comment = fmt::format(
        "Layer '{}' (Softmax on a QDQ grid, into its QuantizeLinear): {} x {} -> {} x {}\n"
        "  exp table: {} entries exp(-s d), d = max - x, s = {:.9g}, ufixed<{},1>;\n"
        "  y = min(round_half_even(e * R / (sum * 2^{})), {}), R = {} (1 / {:.9g}): an exact "
        "division",
        escape::comment(info.name), n, formatToString(a.format), n, formatToString(outF), size,
        scale, ew, rFrac, hi, r, scaleOut);
    rl.module.add(hdl::LocalParam{"EXP_TABLE", size * ew, tableLiteral(table, ew),
                                  "entry d at [d*W +: W], the last entry first"});
    hdl::Instance inst{"triad_softmax_q",
                       "u_softmax",
                       {{"N", std::to_string(n)},
                        {"IN_W", std::to_string(a.format.width)},
                        {"SIZE", std::to_string(size)},
                        {"EXP_W", std::to_string(ew)},
                        {"R_W", std::to_string(rW)},
                        {"R_FRAC", std::to_string(rFrac)},
                        {"R", fmt::format("{}'d{}", rW, r)},
                        {"Q_B", std::to_string(qBits)},
                        {"OUT_W", std::to_string(outF.width)},
                        {"HI", fmt::format("{}'d{}", qBits + 1, hi)},
                        {"EXP_TABLE", "EXP_TABLE"}},
                       hdl::streamConnections("in", "out"),
                       {}};
    rl.module.add(std::move(inst));
    rl.blocks.insert("triad_softmax_q");
    rl.latency = 4;
    rl.multipliers = n;
    rl.memoryBits = size * ew;
    rl.out = a.geom;
    rl.outFormat = outF;
    rl.summary = "Softmax (QDQ)";
    return rl;
  }
  double scale = 1, scaleOut = 1;
};

std::unique_ptr<Layer> planSoftmaxGrid(const ir::Node& n, PlanContext& ctx, const RealAffine& a,
                                       int in) {
  const FixedFormat& inF = ctx.format(in);
  const std::vector<ir::Node*>& users = n.output(0)->users();
  const ir::Node* q = users.size() == 1 ? users[0] : nullptr;
  bool isOutput = std::find(ctx.graph.outputs().begin(), ctx.graph.outputs().end(), n.output(0)) !=
                  ctx.graph.outputs().end();
  if (!q || q->kind() != ir::OpKind::QuantizeLinear || isOutput)
    unsupportedNode(n, "a Softmax on a QDQ integer grid must be followed by a QuantizeLinear "
                       "(its only use) on the FPGA");
  if (!a.perTensor() || a.hasOffset() || inF.fracBits() != 0 || inF.width > 12)
    unsupportedNode(n, fmt::format("its input is on a grid of {} in {}; a Softmax takes integers "
                                   "of at most 12 bits on one scale",
                                   a.describe(), formatToString(inF)));
  auto need = [&](size_t i, const char* what) {
    if (!q->input(i) || !q->input(i)->isConstant() || q->input(i)->constant().numElements() != 1)
      unsupportedNode(*q, fmt::format("its {} must be one constant", what));
    return q->input(i)->constant().getDouble(0);
  };
  double sy = need(1, "scale");
  int64_t z = q->input(2) ? int64_t(need(2, "zero point")) : 0;
  ir::DType t = q->output(0)->type().dtype;
  if (t != ir::DType::U8 && t != ir::DType::I8)
    unsupportedNode(*q, "after a Softmax on the FPGA, int8 and uint8 are supported");
  int64_t qmin = t == ir::DType::U8 ? 0 : -128, qmax = t == ir::DType::U8 ? 255 : 127;
  auto L = std::make_unique<SoftmaxGrid>();
  L->info.inputs = {in};
  const ir::Shape& sh = n.input(0)->type().shape;
  L->cols = sh.back();
  L->rows = ir::numElements(sh) / std::max<int64_t>(L->cols, 1);
  L->scale = a.scale[0];
  L->scaleOut = sy;
  for (int64_t d = 0; d < (int64_t(1) << inF.width); ++d)
    L->table.push_back(int64_t(
        std::nearbyint(std::ldexp(std::exp(-a.scale[0] * double(d)), SoftmaxGrid::kExpFrac))));
  int rInt = 1;
  while (std::ldexp(1.0, rInt) <= 1.0 / sy)
    ++rInt;
  L->rFrac = L->rW - rInt;
  L->r = int64_t(std::nearbyint(std::ldexp(1.0 / sy, L->rFrac)));
  L->hi = qmax - z;
  int w = 2;
  while (L->hi > (int64_t(1) << (w - 1)) - 1 || qmin - z < -(int64_t(1) << (w - 1)))
    ++w;
  if (qmin - z > 0) unsupportedNode(*q, "its zero point is below the type's range");
  FixedFormat outF{w, w, true};
  L->qBits = std::max({L->rW - L->rFrac + 1, w - 1, 2});
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  L->info.quant.roles[size_t(Role::Result)] = Quant{outF, Rounding::Convergent, Overflow::Saturate};
  L->info.hi = L->hi;
  ctx.realApplied = true;
  ctx.setReal(n.output(0)->id(), RealAffine{{sy}, {}});
  return L;
}

std::unique_ptr<Layer> planSoftmax(const ir::Node& n, PlanContext& ctx) {
  if (const RealAffine* a = ctx.real(n.input(0)->id()))
    return planSoftmaxGrid(n, ctx, *a, ctx.dataInput(n, 0));
  auto L = std::make_unique<Softmax>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  const ir::Shape& sh = n.input(0)->type().shape;
  L->cols = sh.back();
  L->rows = ir::numElements(sh) / std::max<int64_t>(L->cols, 1);
  RoleRanges rr;
  rr[3] = 1.0;
  L->info.quant = resolveLayer(ctx.config, n.name(), rr, 8);
  LayerQuant& q = L->info.quant;
  if (q.invRange == 0) q.invRange = std::ldexp(1.0, int(std::ceil(std::log2(double(L->cols)))));
  // exp table: N entries over [-R, 0), step 2^s; index = floor(d / step) + N.
  double step = q.tableRange / double(q.tableSize);
  L->info.tableShift = ctx.format(in).fracBits() + log2Step(step);
  for (int64_t i = 0; i < q.tableSize; ++i)
    L->info.table.push_back(quantize(std::exp(-q.tableRange + (double(i) + 0.5) * step),
                                     q.exp.format, q.exp.rounding, q.exp.overflow));
  // reciprocal table: N entries over [0, invRange); index = floor(sum / istep).
  double istep = q.invRange / double(q.tableSize);
  L->info.invShift = q.exp.format.fracBits() + log2Step(istep);
  for (int64_t i = 0; i < q.tableSize; ++i)
    L->info.invTable.push_back(
        quantize(1.0 / ((double(i) + 0.5) * istep), q.inv.format, q.inv.rounding, q.inv.overflow));
  productFormat(q.exp.format, q.inv.format);
  return L;
}

} // namespace

extern const LayerKind kSoftmaxLayer{
    "Softmax", {ir::OpKind::Softmax}, supportsSoftmax, planSoftmax};

} // namespace triad::fpga
