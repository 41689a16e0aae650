// Elementwise activations in logic: Relu (max(x, 0)), Clip (bounds quantized to the input
// format; Relu6 is a Clip), LeakyRelu (x >= 0 ? x : x * alpha, alpha in the weight format).
// Each is cast to the result format; one register stage (triad_relu, triad_clip,
// triad_leaky_relu), one element per channel of every transfer.
#include "ir/ops/Activation.h"
#include "fpga/layers/Layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace triad::fpga {

namespace {

ir::Support supportsActivation(const ir::Node& n) {
  if (n.kind() == ir::OpKind::Clip)
    for (size_t i = 1; i < n.inputs().size(); ++i)
      if (n.input(i) && !n.input(i)->isConstant())
        return {false, fmt::format("the {} bound must be a constant", i == 1 ? "min" : "max")};
  return {};
}

class Activation final : public Layer {
public:
  ir::OpKind kind{};
  int64_t alpha = 0, lo = 0, hi = 0;

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    const Quant& res = info.quant.result();
    const Quant& qw = info.quant.weight();
    const FixedFormat& inF = info.inFormat;
    std::vector<int64_t> out(x.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CastStatus st;
      int64_t v = x[i];
      if (kind == ir::OpKind::Relu)
        out[i] = cast(std::max<int64_t>(v, 0), inF, res.format, res.rounding, res.overflow, &st);
      else if (kind == ir::OpKind::Clip)
        out[i] = cast(std::clamp(v, lo, hi), inF, res.format, res.rounding, res.overflow, &st);
      else if (v >= 0)
        out[i] = cast(v, inF, res.format, res.rounding, res.overflow, &st);
      else
        out[i] = cast(multiply(v, inF, alpha, qw.format), productFormat(inF, qw.format), res.format,
                      res.rounding, res.overflow, &st);
      rep.saturated += st.saturated;
      rep.wrapped += st.wrapped;
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const Quant& res = info.quant.result();
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    int64_t n = a.geom.c;
    int inW = a.format.width;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {n * inW}, n * outF.width);
    std::string what;
    hdl::Instance inst;
    inst.name = "u_" + escape::identifier(opKindName(kind), escape::Lang::Verilog);
    inst.ports = hdl::streamConnections("in", "out");
    inst.params = {{"N", std::to_string(n)},
                   {"IN_W", std::to_string(inW)},
                   {"IN_FRAC", std::to_string(a.format.fracBits())}};
    if (kind == ir::OpKind::Relu) {
      inst.module = "triad_relu";
    } else if (kind == ir::OpKind::Clip) {
      inst.module = "triad_clip";
      what = fmt::format("\n  bounds [{}, {}] ({}), result {} ({}, {})", dequantize(lo, a.format),
                         dequantize(hi, a.format), formatToString(a.format), formatToString(outF),
                         toString(res.rounding), toString(res.overflow));
      inst.params.push_back({"LO", hdl::hexLiteral(lo, inW)});
      inst.params.push_back({"HI", hdl::hexLiteral(hi, inW)});
    } else {
      const FixedFormat& wf = info.quant.weight().format;
      requireSigned(wf, info.name, "slope (weight)");
      inst.module = "triad_leaky_relu";
      what = fmt::format("\n  slope {} ({}), result {} ({}, {})", dequantize(alpha, wf),
                         formatToString(wf), formatToString(outF), toString(res.rounding),
                         toString(res.overflow));
      inst.params.push_back({"A_W", std::to_string(wf.width)});
      inst.params.push_back({"A_FRAC", std::to_string(wf.fracBits())});
      inst.params.push_back({"ALPHA", hdl::hexLiteral(alpha, wf.width)});
      r.multipliers = n;
    }
    for (auto& p : resultParams(outF, res))
      inst.params.push_back(p);
    r.module.comment =
        fmt::format("Layer '{}' ({}): {} x {} -> {} x {}{}", escape::comment(info.name), info.op, n,
                    formatToString(a.format), n, formatToString(outF), what);
    r.blocks.insert(inst.module);
    r.module.add(std::move(inst));
    r.latency = 1;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = info.op;
    // Relu, and Clip from a bound >= 0, never give a negative result (their cast saturates or
    // keeps every integer bit).
    bool keeps = res.overflow == Overflow::Saturate ||
                 outF.width - outF.fracBits() >= a.format.width - a.format.fracBits();
    if (keeps && (kind == ir::OpKind::Relu || (kind == ir::OpKind::Clip && lo >= 0))) r.outMin = 0;
    return r;
  }
};

std::unique_ptr<Layer> planActivation(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Activation>();
  L->kind = n.kind();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  RoleRanges rr;
  if (n.kind() == ir::OpKind::LeakyRelu) rr[0] = std::fabs(n.attrs<ir::AlphaAttrs>().alpha);
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  const FixedFormat& inF = ctx.format(in);
  // With imported precisions, Relu and Clip keep their input's format (exact; the model's next
  // Quant rounds) where the config sets no result.
  if (ctx.importedMode && n.kind() != ir::OpKind::LeakyRelu &&
      !ctx.configSets(n.name(), Role::Result))
    L->info.quant.roles[size_t(Role::Result)].format = inF;
  if (n.kind() == ir::OpKind::LeakyRelu) {
    const Quant& qw = L->info.quant.weight();
    CastStatus st;
    L->alpha = quantize(n.attrs<ir::AlphaAttrs>().alpha, qw.format, qw.rounding, qw.overflow, &st);
    L->info.constSaturated += st.saturated || st.wrapped;
    L->info.usesWeights = true;
  } else if (n.kind() == ir::OpKind::Clip) {
    const auto& a = n.attrs<ir::ClipAttrs>();
    auto bound = [&](size_t i, std::optional<float> attr, int64_t dflt) {
      double v;
      if (n.input(i))
        v = ctx.constInput(n, i, i == 1 ? "min" : "max").getDouble(0);
      else if (attr)
        v = *attr;
      else
        return dflt;
      return quantize(v, inF, Rounding::Convergent, Overflow::Saturate);
    };
    L->lo = bound(1, a.min, minRaw(inF));
    L->hi = bound(2, a.max, maxRaw(inF));
  }
  L->info.alpha = L->alpha;
  L->info.lo = L->lo;
  L->info.hi = L->hi;
  return L;
}

} // namespace

extern const LayerKind kActivationLayer{"Activation",
                                        {ir::OpKind::Relu, ir::OpKind::LeakyRelu, ir::OpKind::Clip},
                                        supportsActivation,
                                        planActivation};

} // namespace triad::fpga
