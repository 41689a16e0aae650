// Pooling: MaxPool and AveragePool over 2-D windows (triad_window + triad_pool) and
// GlobalMaxPool / GlobalAveragePool over the whole frame (triad_global_pool); so is a window
// pool whose window is the frame.
// Max: the largest raw value (the padding reads the format's minimum), cast to the result.
// Average: the exact sum of the window times the reciprocal of its size, quantized once to
// fixed<18,2> (16 fraction bits, convergent), the exact product cast to the result. Padded
// windows average over the full window (count_include_pad=1, or no padding).
#include "ir/ops/Pool.h"
#include "fpga/layers/Window.h"

#include <fmt/format.h>

#include <algorithm>

namespace triad::fpga {

namespace {

const FixedFormat kRecipFormat{18, 2, true};

bool isMax(ir::OpKind k) {
  return k == ir::OpKind::MaxPool || k == ir::OpKind::GlobalMaxPool;
}

// The pool arithmetic of one channel over `count` values.
struct PoolArith {
  bool max = true;
  FixedFormat in;
  int64_t recip = 0;
  const Quant* res = nullptr;
  int64_t reduce(const int64_t* v, int64_t count, int64_t stride, LayerReport& rep) const {
    CastStatus st;
    int64_t y;
    if (max) {
      int64_t m = v[0];
      for (int64_t k = 1; k < count; ++k)
        m = std::max(m, v[k * stride]);
      y = cast(m, in, res->format, res->rounding, res->overflow, &st);
    } else {
      __int128 s = 0;
      for (int64_t k = 0; k < count; ++k)
        s += v[k * stride];
      // s * recip is exact: |s| < 2^(Win + log2 count), recip 18 bits.
      int frac = in.fracBits() + kRecipFormat.fracBits();
      FixedFormat pf{63, 63 - frac, true};
      y = cast(int64_t(s * recip), pf, res->format, res->rounding, res->overflow, &st);
    }
    rep.saturated += st.saturated;
    rep.wrapped += st.wrapped;
    return y;
  }
  std::vector<hdl::Param> params(const FixedFormat& out) const {
    std::vector<hdl::Param> p = {{"MODE", max ? "0" : "1"},
                                 {"IN_W", std::to_string(in.width)},
                                 {"IN_FRAC", std::to_string(in.fracBits())},
                                 {"RECIP_W", std::to_string(kRecipFormat.width)},
                                 {"RECIP_FRAC", std::to_string(kRecipFormat.fracBits())},
                                 {"RECIP", hdl::hexLiteral(max ? 0 : recip, kRecipFormat.width)}};
    for (auto& r : resultParams(out, *res))
      p.push_back(r);
    return p;
  }
};

PoolArith planArith(ir::OpKind k, const FixedFormat& in, const Quant& res, int64_t count) {
  PoolArith a;
  a.max = isMax(k);
  a.in = in;
  a.res = &res;
  if (!a.max)
    a.recip = quantize(1.0 / double(count), kRecipFormat, Rounding::Convergent, Overflow::Saturate);
  return a;
}

/// On a QDQ integer grid (the scale goes on to the next QuantizeLinear), where the config sets
/// no result: the max keeps the input format, the average its exact product with the
/// reciprocal (exact when the window's size is a power of two).
void gridResult(const ir::Node& n, const PlanContext& ctx, int in, LayerQuant& q) {
  if (!ctx.real(in) || ctx.configSets(n.name(), Role::Result)) return;
  const FixedFormat& f = ctx.format(in);
  q.roles[size_t(Role::Result)] = Quant{
      isMax(n.kind()) ? f : FixedFormat{f.width + kRecipFormat.fracBits() + 1, f.intBits + 1, true},
      Rounding::Convergent, Overflow::Saturate};
}

ir::Support supportsPool(const ir::Node& n) {
  if (n.input(0)->type().rank() != 4) return {false, "only 2-D pooling is supported"};
  if (n.outputs().size() > 1 && n.output(1)) return {false, "the Indices output is not supported"};
  if (n.kind() == ir::OpKind::AveragePool) {
    const auto& a = n.attrs<ir::PoolAttrs>();
    bool padded = std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; });
    if (padded && !a.countIncludePad)
      return {false, "a padded AveragePool must count the padding (count_include_pad=1)"};
  }
  return {};
}

class Pool final : public Layer {
public:
  Window2d win;
  PoolArith arith;
  int64_t batch = 0;

  void exec(RawValues& val, LayerReport& rep) const override {
    int64_t plane = win.OH * win.OW, K = win.KH * win.KW;
    std::vector<int64_t> out(size_t(batch * win.C * plane));
    win.forEach(val[size_t(info.input)], batch, arith.max ? minRaw(info.inFormat) : 0,
                [&](int64_t b, int64_t oy, int64_t ox, const int64_t* w) {
                  for (int64_t c = 0; c < win.C; ++c)
                    out[size_t((b * win.C + c) * plane + oy * win.OW + ox)] =
                        arith.reduce(&w[c], K, win.C, rep);
                });
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    win.requireStream(a, info);
    int64_t K = win.KH * win.KW;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {win.C * a.format.width}, win.C * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' ({}): {}x{}x{} {} -> {}x{}x{} {}\n"
        "  window {}x{}, stride {}x{}, pads t{} l{} b{} r{}{}",
        escape::comment(info.name), info.op, win.H, win.W, win.C, formatToString(a.format), win.OH,
        win.OW, win.C, formatToString(outF), win.KH, win.KW, win.SH, win.SW, win.padT, win.padL,
        win.padB, win.padR,
        arith.max ? ""
                  : fmt::format("; sum x {} ({}) cast to {}", dequantize(arith.recip, kRecipFormat),
                                formatToString(kRecipFormat), formatToString(outF)));
    r.module.addStreamWires("win", win.size() * a.format.width);
    addWindowInstance(r.module, win, a.format.width, arith.max ? minRaw(a.format) : 0, "win");
    hdl::Instance inst{"triad_pool",
                       "u_pool",
                       {{"N", std::to_string(win.C)}, {"K", std::to_string(K)}},
                       hdl::streamConnections("win", "out"),
                       {}};
    for (auto& p : arith.params(outF))
      inst.params.push_back(p);
    r.module.add(std::move(inst));
    r.blocks = {"triad_window", "triad_pool"};
    r.latency = 2;
    win.addCosts(r, a.format.width);
    r.multipliers = arith.max ? 0 : win.C;
    r.out = {win.OH, win.OW, win.C, false};
    r.outFormat = outF;
    r.summary = info.op;
    // A maximum over windows that each hold at least one input is bounded below as its input.
    if (arith.max && outF == a.format) r.outMin = a.rawMin;
    return r;
  }
};

std::unique_ptr<Layer> planGlobalPool(const ir::Node& n, PlanContext& ctx);

// A window over the whole frame (PyTorch's avg_pool2d(x, 8) on 8x8): one output pixel, the same
// arithmetic as a global pool over H x W, which needs no line buffer.
bool coversFrame(const ir::Node& n) {
  const auto& a = n.attrs<ir::PoolAttrs>();
  const ir::Shape& s = n.input(0)->type().shape;
  const ir::Shape& o = n.output(0)->type().shape;
  bool unpadded = std::all_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p == 0; });
  bool undilated =
      std::all_of(a.dilations.begin(), a.dilations.end(), [](int64_t d) { return d == 1; });
  return s.size() == 4 && o.size() == 4 && a.kernel.size() == 2 && a.kernel[0] == s[2] &&
         a.kernel[1] == s[3] && o[2] == 1 && o[3] == 1 && unpadded && undilated;
}

std::unique_ptr<Layer> planPool(const ir::Node& n, PlanContext& ctx) {
  if (coversFrame(n)) return planGlobalPool(n, ctx);
  auto L = planWindowLayer<Pool, ir::PoolAttrs>(n, ctx);
  int in = L->info.inputs[0];
  RoleRanges rr;
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  gridResult(n, ctx, in, L->info.quant);
  L->arith = planArith(n.kind(), ctx.format(in), L->info.quant.result(), L->win.KH * L->win.KW);
  return L;
}

class GlobalPool final : public Layer {
public:
  PoolArith arith;
  int64_t batch = 0, C = 0, HW = 0, H = 0, W = 0;

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    std::vector<int64_t> out(size_t(batch * C));
    for (int64_t p = 0; p < batch * C; ++p)
      out[size_t(p)] = arith.reduce(&x[size_t(p * HW)], HW, 1, rep);
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    requireSigned(a.format, info.name, "input");
    if (!(a.geom == StreamGeom{H, W, C, false}))
      fail(ErrorKind::Unsupported, "layer '{}' ({}) needs a {}x{}x{} pixel stream", info.name,
           info.op, H, W, C);
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {C * a.format.width}, C * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' ({}): {}x{}x{} {} -> {} x {}{}", escape::comment(info.name), info.op, H, W, C,
        formatToString(a.format), C, formatToString(outF),
        arith.max ? ""
                  : fmt::format("; sum x {} ({})", dequantize(arith.recip, kRecipFormat),
                                formatToString(kRecipFormat)));
    hdl::Instance inst{"triad_global_pool",
                       "u_pool",
                       {{"N", std::to_string(C)}, {"FRAME", std::to_string(HW)}},
                       hdl::streamConnections("in", "out"),
                       {}};
    for (auto& p : arith.params(outF))
      inst.params.push_back(p);
    r.module.add(std::move(inst));
    r.blocks = {"triad_global_pool"};
    r.latency = 2;
    r.lookahead = HW;
    r.multipliers = arith.max ? 0 : C;
    r.out = {1, 1, C, false};
    r.outFormat = outF;
    r.summary = info.op;
    return r;
  }
};

ir::Support supportsGlobalPool(const ir::Node& n) {
  if (n.input(0)->type().rank() != 4) return {false, "only 2-D global pooling is supported"};
  return {};
}

std::unique_ptr<Layer> planGlobalPool(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<GlobalPool>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  const ir::Shape& s = n.input(0)->type().shape;
  L->batch = s[0];
  L->C = s[1];
  L->H = s[2];
  L->W = s[3];
  L->HW = s[2] * s[3];
  RoleRanges rr;
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  gridResult(n, ctx, in, L->info.quant);
  L->arith = planArith(n.kind(), ctx.format(in), L->info.quant.result(), L->HW);
  return L;
}

} // namespace

extern const LayerKind kPoolLayer{
    "Pool", {ir::OpKind::MaxPool, ir::OpKind::AveragePool}, supportsPool, planPool};
extern const LayerKind kGlobalPoolLayer{"Global pool",
                                        {ir::OpKind::GlobalMaxPool, ir::OpKind::GlobalAveragePool},
                                        supportsGlobalPool,
                                        planGlobalPool};

} // namespace triad::fpga
