// BatchNormalization that no Conv or Dense absorbed (the fold-batchnorm pass folds the rest):
// a per-channel affine map y = cast(x * s + t), s = scale / sqrt(var + eps) in the weight
// format, t = B - mean * s in the bias format; the product and the sum are exact (triad_scale).
// On a QDQ integer grid it is no layer: the per-channel map joins the grid's RealAffine and the
// next QuantizeLinear's requantization applies it (its multiplier and offset per channel).
#include "fpga/layers/Layer.h"
#include "ir/ops/Normalization.h"

#include <fmt/format.h>

#include <cmath>

namespace triad::fpga {

namespace {

ir::Support supportsScale(const ir::Node& n) {
  for (size_t i = 1; i < 5; ++i)
    if (!n.input(i) || !n.input(i)->isConstant())
      return {false, "scale, bias, mean and variance must be constants (inference mode)"};
  if (n.outputs().size() > 1) return {false, "training-mode outputs are not supported"};
  return {};
}

class Scale final : public Layer {
public:
  std::vector<int64_t> s, t;
  int64_t batch = 0, C = 0, plane = 1;

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    const Quant& res = info.quant.result();
    const FixedFormat& wf = info.quant.weight().format;
    const FixedFormat& bf = info.quant.bias().format;
    FixedFormat pf = productFormat(info.inFormat, wf);
    FixedFormat sf = sumFormat(pf, bf);
    std::vector<int64_t> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      size_t c = size_t((int64_t(i) / plane) % C);
      CastStatus st;
      int64_t p = multiply(x[i], info.inFormat, s[c], wf);
      out[i] = cast(add(p, pf, t[c], bf), sf, res.format, res.rounding, res.overflow, &st);
      rep.saturated += st.saturated;
      rep.wrapped += st.wrapped;
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& st) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    const FixedFormat& wf = info.quant.weight().format;
    const FixedFormat& bf = info.quant.bias().format;
    requireSigned(outF, info.name, "result");
    requireSigned(wf, info.name, "scale (weight)");
    requireSigned(bf, info.name, "shift (bias)");
    if (a.geom.c != C)
      fail(ErrorKind::Unsupported,
           "layer '{}' (BatchNormalization) scales {} channels, the "
           "stream has {} per transfer",
           info.name, C, a.geom.c);
    if (bf.fracBits() > a.format.fracBits() + wf.fracBits())
      fail(ErrorKind::Unsupported,
           "layer '{}': the shift format {} has more fraction bits than the product {} x {}",
           info.name, formatToString(bf), formatToString(a.format), formatToString(wf));
    RtlLayer r;
    r.module = layerModule(st.module, {"in"}, {C * a.format.width}, C * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' (BatchNormalization): {} x {} -> {} x {}\n  y = cast(x * s + t), s {}, t {}, "
        "result {} ({}, {})",
        escape::comment(info.name), C, formatToString(a.format), C, formatToString(outF),
        formatToString(wf), formatToString(bf), formatToString(outF),
        toString(info.quant.result().rounding), toString(info.quant.result().overflow));
    auto lit = [](const std::vector<int64_t>& v, int w) {
      std::string l = "{";
      for (size_t i = v.size(); i-- > 0;)
        l += hdl::hexLiteral(v[i], w) + (i > 0 ? ", " : "");
      return l + "}";
    };
    r.module.add(hdl::LocalParam{"S", C * wf.width, lit(s, wf.width), "per-channel scale"});
    r.module.add(hdl::LocalParam{"T", C * bf.width, lit(t, bf.width), "per-channel shift"});
    hdl::Instance inst{"triad_scale",
                       "u_scale",
                       {{"N", std::to_string(C)},
                        {"IN_W", std::to_string(a.format.width)},
                        {"IN_FRAC", std::to_string(a.format.fracBits())},
                        {"S_W", std::to_string(wf.width)},
                        {"S_FRAC", std::to_string(wf.fracBits())},
                        {"T_W", std::to_string(bf.width)},
                        {"T_FRAC", std::to_string(bf.fracBits())}},
                       hdl::streamConnections("in", "out"),
                       {}};
    for (auto& p : resultParams(outF, info.quant.result()))
      inst.params.push_back(p);
    inst.params.push_back({"S", "S"});
    inst.params.push_back({"T", "T"});
    r.module.add(std::move(inst));
    r.blocks = {"triad_scale"};
    r.latency = 1;
    r.multipliers = C;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = "BatchNormalization";
    return r;
  }
};

std::unique_ptr<Layer> planScale(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Scale>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  const ir::Shape& sh = n.input(0)->type().shape;
  if (sh.size() < 2) unsupportedNode(n, "the input needs a channel axis");
  L->batch = sh[0];
  L->C = sh[1];
  for (size_t d = 2; d < sh.size(); ++d)
    L->plane *= sh[d];
  if (sh.size() == 3)
    unsupportedNode(n, "a BatchNormalization over [N, C, L] is not supported (channels must be "
                       "the stream's elements)");
  float eps = n.attrs<ir::NormAttrs>().epsilon;
  auto sc = ctx.constInput(n, 1, "scale").toDoubleVector();
  auto sh2 = ctx.constInput(n, 2, "B").toDoubleVector();
  auto mean = ctx.constInput(n, 3, "mean").toDoubleVector();
  auto var = ctx.constInput(n, 4, "var").toDoubleVector();
  std::vector<double> s(size_t(L->C)), t(size_t(L->C));
  for (int64_t c = 0; c < L->C; ++c) {
    s[size_t(c)] = sc[size_t(c)] / std::sqrt(var[size_t(c)] + double(eps));
    t[size_t(c)] = sh2[size_t(c)] - mean[size_t(c)] * s[size_t(c)];
  }
  if (const RealAffine* a = ctx.real(in)) {
    RealAffine y;
    for (int64_t c = 0; c < L->C; ++c) {
      y.scale.push_back(s[size_t(c)] * a->scaleAt(c));
      y.offset.push_back(s[size_t(c)] * a->offsetAt(c) + t[size_t(c)]);
    }
    ctx.setReal(n.output(0)->id(), std::move(y));
    ctx.realApplied = true;
    auto P = std::make_unique<PassThroughLayer>();
    P->info.inputs = {in};
    P->info.passThrough = true;
    P->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
    return P;
  }
  RoleRanges rr;
  rr[0] = maxAbsOf(s);
  rr[1] = maxAbsOf(t);
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  L->s = quantizeAll(s, L->info.quant.weight(), &L->info.constSaturated);
  L->t = quantizeAll(t, L->info.quant.bias(), &L->info.constSaturated);
  L->info.usesWeights = true;
  return L;
}

} // namespace

extern const LayerKind kScaleLayer{
    "BatchNormalization (affine)", {ir::OpKind::BatchNormalization}, supportsScale, planScale};

} // namespace triad::fpga
