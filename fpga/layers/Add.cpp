// Add (a residual join of two streams, or a stream plus a constant that is the same for every
// transfer: a scalar, a row, a per-channel bias) and Concat of channels. Add: both operands
// aligned to the finer binary point with one more integer bit (exact), cast to the result
// (triad_add). Concat: each operand cast to the result format, a's elements first
// (triad_concat).
#include "fpga/layers/Layer.h"
#include "ir/ops/Movement.h"

#include <fmt/format.h>

#include <algorithm>

namespace triad::fpga {

namespace {

// Flat input index for every output index under numpy broadcasting.
std::vector<int64_t> broadcastMap(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> map(size_t(ir::numElements(out)));
  auto inStrides = ir::stridesOf(in);
  size_t off = out.size() - in.size();
  std::vector<int64_t> idx(out.size(), 0);
  for (size_t flat = 0; flat < map.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1) src += idx[d + off] * inStrides[d];
    map[flat] = src;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return map;
}

// Element e of transfer t of a sample of `shape` ([B, C, H, W]: channels-last pixels; else rows
// of the last dimension) as a flat index into the sample.
int64_t logicalIndex(const ir::Shape& shape, int64_t t, int64_t e) {
  if (shape.size() == 4) return e * shape[2] * shape[3] + t;
  return t * shape.back() + e;
}

class Add final : public Layer {
public:
  std::vector<ir::Shape> inShapes;
  int constIndex = -1;

  void exec(RawValues& val, LayerReport& rep) const override {
    const Quant& res = info.quant.result();
    FixedFormat f[2];
    const std::vector<int64_t>* src[2];
    for (int i = 0; i < 2; ++i) {
      if (info.inputs[size_t(i)] < 0) {
        f[i] = info.quant.bias().format;
        src[i] = &info.constRaw;
      } else {
        f[i] = formats[size_t(i)];
        src[i] = &val[size_t(info.inputs[size_t(i)])];
      }
    }
    FixedFormat sf = sumFormat(f[0], f[1]);
    auto m0 = broadcastMap(inShapes[0], outShape);
    auto m1 = broadcastMap(inShapes[1], outShape);
    std::vector<int64_t> out(m0.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CastStatus st;
      int64_t s = add((*src[0])[size_t(m0[i])], f[0], (*src[1])[size_t(m1[i])], f[1]);
      out[i] = cast(s, sf, res.format, res.rounding, res.overflow, &st);
      rep.saturated += st.saturated;
      rep.wrapped += st.wrapped;
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const LayerQuant& q = info.quant;
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    int64_t n = a.geom.c;
    bool join = ops.size() == 2;
    FixedFormat bf = join ? ops[1].format : q.bias().format;
    RtlLayer r;
    if (join) {
      if (!(ops[1].geom == a.geom))
        fail(ErrorKind::Unsupported,
             "layer '{}' (Add): the operands are streams of different shapes ({}x{}x{} and "
             "{}x{}x{}); the Verilog emitter adds streams of equal shape",
             info.name, a.geom.h, a.geom.w, a.geom.c, ops[1].geom.h, ops[1].geom.w, ops[1].geom.c);
      r.module =
          layerModule(s.module, {"a", "b"}, {n * a.format.width, n * bf.width}, n * outF.width);
      r.operandPrefixes = {"a", "b"};
    } else {
      r.module = layerModule(s.module, {"in"}, {n * a.format.width}, n * outF.width);
    }
    requireSigned(bf, info.name, join ? "second operand" : "constant (bias)");
    r.module.comment = fmt::format(
        "Layer '{}' (Add): {} x {} -> {} x {}\n  {} + {}{} exact, result {} ({}, {})",
        escape::comment(info.name), n, formatToString(a.format), n, formatToString(outF),
        formatToString(a.format), formatToString(bf), join ? "" : " (constant)",
        formatToString(outF), toString(q.result().rounding), toString(q.result().overflow));
    hdl::Instance inst{"triad_add",
                       "u_add",
                       {{"N", std::to_string(n)},
                        {"A_W", std::to_string(a.format.width)},
                        {"A_FRAC", std::to_string(a.format.fracBits())},
                        {"B_W", std::to_string(bf.width)},
                        {"B_FRAC", std::to_string(bf.fracBits())}},
                       {{"clk", "clk"}, {"rst_n", "rst_n"}},
                       {}};
    for (auto& p : resultParams(outF, q.result()))
      inst.params.push_back(p);
    std::string ap = join ? "a" : "in";
    inst.ports.insert(
        inst.ports.end(),
        {{"a_tdata", ap + "_tdata"}, {"a_tvalid", ap + "_tvalid"}, {"a_tready", ap + "_tready"}});
    if (join) {
      inst.ports.insert(
          inst.ports.end(),
          {{"b_tdata", "b_tdata"}, {"b_tvalid", "b_tvalid"}, {"b_tready", "b_tready"}});
    } else {
      // The constant must be the same in every transfer of every sample.
      std::vector<int64_t> row(static_cast<size_t>(n));
      auto map = broadcastMap(inShapes[size_t(constIndex)], outShape);
      int64_t perSample = ir::numElements(outShape) / std::max<int64_t>(outShape[0], 1);
      ir::Shape sample = outShape;
      for (int64_t t = 0; t < a.geom.transfers(); ++t)
        for (int64_t e = 0; e < n; ++e)
          for (int64_t b = 0; b < outShape[0]; ++b) {
            int64_t v =
                info.constRaw[size_t(map[size_t(b * perSample + logicalIndex(sample, t, e))])];
            if (t == 0 && b == 0)
              row[size_t(e)] = v;
            else if (row[size_t(e)] != v)
              fail(ErrorKind::Unsupported,
                   "layer '{}' (Add): the constant of shape {} differs between transfers of the "
                   "stream; the Verilog emitter adds a scalar, a row or a per-channel constant",
                   info.name, ir::shapeToString(inShapes[size_t(constIndex)]));
          }
      std::string lit = "{";
      for (int64_t i = n; i-- > 0;)
        lit += hdl::hexLiteral(row[size_t(i)], bf.width) + (i > 0 ? ", " : "");
      r.module.add(hdl::LocalParam{
          "B", n * bf.width, lit + "}",
          fmt::format("the constant operand, element i at [i*{} +: {}]", bf.width, bf.width)});
      r.module.addRaw("  /* verilator lint_off UNUSEDSIGNAL */\n");
      r.module.add(hdl::Wire{"b_tready", 1, "always valid: not needed"});
      r.module.addRaw("  /* verilator lint_on UNUSEDSIGNAL */\n");
      inst.ports.insert(inst.ports.end(),
                        {{"b_tdata", "B"}, {"b_tvalid", "1'b1"}, {"b_tready", "b_tready"}});
    }
    inst.ports.insert(
        inst.ports.end(),
        {{"out_tdata", "out_tdata"}, {"out_tvalid", "out_tvalid"}, {"out_tready", "out_tready"}});
    r.module.add(std::move(inst));
    r.blocks.insert("triad_add");
    r.latency = 1;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = "Add";
    return r;
  }

  std::vector<FixedFormat> formats; // the data operands' formats (by operand index)
};

/// Add of two streams on QDQ grids (a residual in ONNX Runtime's QDQ models): b is rescaled
/// onto a's scale by a fixed-point multiplier M[c] = s_b[c] / s_a[c] (24 bits, exact product),
/// a passes (times 1, for equal latency), the sum is exact (triad_scale twice, triad_add); the
/// result's RealAffine is a's scale and the offsets' sum, applied by the next QuantizeLinear.
class AddGrid final : public Layer {
public:
  FixedFormat fa, fb, one{2, 2, true}, mf;
  std::vector<int64_t> m; // raw multipliers (one: per tensor)
  int64_t plane = 1, channels = 1;

  FixedFormat pa() const { return productFormat(fa, one); }
  FixedFormat pb() const { return productFormat(fb, mf); }

  void exec(RawValues& val, LayerReport&) const override {
    const std::vector<int64_t>& a = val[size_t(info.inputs[0])];
    const std::vector<int64_t>& b = val[size_t(info.inputs[1])];
    std::vector<int64_t> out(a.size());
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t c = m.size() == 1 ? 0 : (int64_t(i) / plane) % channels;
      out[i] = add(multiply(a[i], fa, 1, one), pa(), multiply(b[i], fb, m[size_t(c)], mf), pb());
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    if (ops.size() != 2 || !(ops[1].geom == a.geom))
      fail(ErrorKind::Unsupported, "layer '{}' (Add): the operands are streams of different shapes",
           info.name);
    int64_t n = a.geom.c;
    if (m.size() > 1 && (a.geom.chw || n != int64_t(m.size())))
      fail(ErrorKind::Unsupported,
           "layer '{}' (Add): per-channel grid scales need channels as the "
           "stream's elements",
           info.name);
    const FixedFormat& outF = info.outFormat;
    RtlLayer r;
    r.module = layerModule(s.module, {"a", "b"}, {n * a.format.width, n * ops[1].format.width},
                           n * outF.width);
    r.operandPrefixes = {"a", "b"};
    r.module.comment =
        fmt::format("Layer '{}' (Add of two QDQ grids): {} x {} + {} x {} -> {} x {}\n"
                    "  a * 1 + b * M exact, M = s_b / s_a in {} ({:.9g}{})",
                    escape::comment(info.name), n, formatToString(a.format), n,
                    formatToString(ops[1].format), n, formatToString(outF), formatToString(mf),
                    dequantize(m[0], mf), m.size() > 1 ? ", ..." : "");
    std::string lit = "{";
    for (int64_t i = n; i-- > 0;)
      lit += hdl::hexLiteral(m[m.size() == 1 ? 0 : size_t(i)], mf.width) + (i > 0 ? ", " : "");
    r.module.add(hdl::LocalParam{"M", n * mf.width, lit + "}", "b's multipliers"});
    std::string ones = "{";
    for (int64_t i = n; i-- > 0;)
      ones += hdl::hexLiteral(1, 2) + (i > 0 ? ", " : "");
    r.module.add(hdl::LocalParam{"ONE", n * 2, ones + "}", {}});
    auto scale = [&](const std::string& name, const std::string& from, const std::string& to,
                     const FixedFormat& in, const FixedFormat& sf, const std::string& sp) {
      FixedFormat pf = productFormat(in, sf);
      r.module.addStreamWires(to, n * pf.width);
      hdl::Instance inst{"triad_scale",
                         name,
                         {{"N", std::to_string(n)},
                          {"IN_W", std::to_string(in.width)},
                          {"IN_FRAC", std::to_string(in.fracBits())},
                          {"S_W", std::to_string(sf.width)},
                          {"S_FRAC", std::to_string(sf.fracBits())},
                          {"T_W", "2"},
                          {"T_FRAC", std::to_string(pf.fracBits())},
                          {"OUT_W", std::to_string(pf.width)},
                          {"OUT_FRAC", std::to_string(pf.fracBits())},
                          {"ROUNDING", "0"},
                          {"SATURATE", "0"},
                          {"S", sp},
                          {"T", fmt::format("{}'d0", 2 * n)}},
                         hdl::streamConnections(from, to),
                         {}};
      r.module.add(std::move(inst));
    };
    scale("u_scale_a", "a", "as", fa, one, "ONE");
    scale("u_scale_b", "b", "bs", fb, mf, "M");
    FixedFormat ap = pa(), bp = pb();
    hdl::Instance inst{"triad_add",
                       "u_add",
                       {{"N", std::to_string(n)},
                        {"A_W", std::to_string(ap.width)},
                        {"A_FRAC", std::to_string(ap.fracBits())},
                        {"B_W", std::to_string(bp.width)},
                        {"B_FRAC", std::to_string(bp.fracBits())}},
                       {{"clk", "clk"}, {"rst_n", "rst_n"}},
                       {}};
    for (auto& p : resultParams(outF, info.quant.result()))
      inst.params.push_back(p);
    for (std::string x : {"a", "b"})
      for (std::string sig : {"tdata", "tvalid", "tready"})
        inst.ports.push_back({x + "_" + sig, x + "s_" + sig});
    for (std::string sig : {"tdata", "tvalid", "tready"})
      inst.ports.push_back({"out_" + sig, "out_" + sig});
    r.module.add(std::move(inst));
    r.blocks = {"triad_scale", "triad_add"};
    r.latency = 2;
    r.multipliers = n;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = "Add (QDQ)";
    return r;
  }
};

std::unique_ptr<Layer> planAddGrid(const ir::Node& n, PlanContext& ctx) {
  int ia = ctx.dataInput(n, 0), ib = ctx.dataInput(n, 1);
  const RealAffine *a = ctx.real(ia), *b = ctx.real(ib);
  if (!a || !b || n.input(0)->type().shape != n.input(1)->type().shape)
    unsupportedNode(n, "an Add on QDQ integer grids takes two operands of the same shape, both on "
                       "grids");
  auto L = std::make_unique<AddGrid>();
  L->fa = ctx.format(ia);
  L->fb = ctx.format(ib);
  size_t nc = std::max({a->scale.size(), b->scale.size(), a->offset.size(), b->offset.size()});
  const ir::Shape& sh = n.input(0)->type().shape;
  if (nc > 1) {
    if (sh.size() < 2 || sh[1] != int64_t(nc))
      unsupportedNode(n, "per-channel grid scales need the channels on axis 1");
    L->channels = int64_t(nc);
    for (size_t d = 2; d < sh.size(); ++d)
      L->plane *= sh[d];
  }
  std::vector<double> mult;
  RealAffine y;
  for (size_t c = 0; c < nc; ++c) {
    int64_t ci = int64_t(c);
    mult.push_back(b->scaleAt(ci) / a->scaleAt(ci));
    y.scale.push_back(a->scaleAt(ci));
    y.offset.push_back(a->offsetAt(ci) + b->offsetAt(ci));
  }
  L->mf = FixedFormat{24, autoIntBits(maxAbsOf(mult), 24, true), true};
  int64_t sat = 0;
  L->m = quantizeAll(mult, Quant{L->mf, Rounding::Convergent, Overflow::Saturate}, &sat);
  L->info.inputs = {ia, ib};
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  FixedFormat out = sumFormat(L->pa(), L->pb());
  if (out.width > 48) unsupportedNode(n, fmt::format("the exact sum needs {} bits", out.width));
  L->info.quant.roles[size_t(Role::Result)] = Quant{out, Rounding::Truncate, Overflow::Wrap};
  ctx.setReal(n.output(0)->id(), std::move(y));
  ctx.realApplied = true;
  return L;
}

ir::Support supportsAdd(const ir::Node& n) {
  if (n.input(0)->isConstant() && n.input(1)->isConstant())
    return {false, "both operands are constants"};
  return {};
}

std::unique_ptr<Layer> planAdd(const ir::Node& n, PlanContext& ctx) {
  for (size_t i = 0; i < 2; ++i)
    if (!n.input(i)->isConstant() && ctx.real(n.input(i)->id())) return planAddGrid(n, ctx);
  auto L = std::make_unique<Add>();
  RoleRanges rr;
  L->formats.resize(2);
  for (size_t i = 0; i < 2; ++i) {
    ir::Value* v = n.input(i);
    L->inShapes.push_back(v->type().shape);
    if (v->isConstant()) {
      if (L->constIndex >= 0) unsupportedNode(n, "both operands are constants");
      L->constIndex = int(i);
      L->info.inputs.push_back(-1);
      rr[1] = maxAbsOf(v->constant().toDoubleVector());
    } else {
      int id = ctx.dataInput(n, i);
      L->info.inputs.push_back(id);
      L->formats[i] = ctx.format(id);
    }
  }
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  if (L->constIndex >= 0) {
    L->info.constRaw = quantizeAll(n.input(size_t(L->constIndex))->constant().toDoubleVector(),
                                   L->info.quant.bias(), &L->info.constSaturated);
    L->info.constShape = L->inShapes[size_t(L->constIndex)];
    L->info.usesWeights = true;
  }
  return L;
}

// Concat of two streams along the channel axis (1 for [B, C, H, W], the last for vectors).
class Concat final : public Layer {
public:
  ir::Shape aShape, bShape;
  FixedFormat fa, fb;

  void exec(RawValues& val, LayerReport& rep) const override {
    const Quant& res = info.quant.result();
    const auto& a = val[size_t(info.inputs[0])];
    const auto& b = val[size_t(info.inputs[1])];
    // Per sample (and per leading index for vectors): a's block, then b's.
    int64_t rows =
        aShape[0] * (aShape.size() == 4 ? 1 : ir::numElements(aShape) / aShape[0] / aShape.back());
    int64_t na = int64_t(a.size()) / rows, nb = int64_t(b.size()) / rows;
    std::vector<int64_t> out;
    out.reserve(a.size() + b.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < na; ++i) {
        CastStatus st;
        out.push_back(cast(a[size_t(r * na + i)], fa, res.format, res.rounding, res.overflow, &st));
        rep.saturated += st.saturated;
        rep.wrapped += st.wrapped;
      }
      for (int64_t i = 0; i < nb; ++i) {
        CastStatus st;
        out.push_back(cast(b[size_t(r * nb + i)], fb, res.format, res.rounding, res.overflow, &st));
        rep.saturated += st.saturated;
        rep.wrapped += st.wrapped;
      }
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    const StreamGeom &ga = ops[0].geom, &gb = ops[1].geom;
    if (ga.h != gb.h || ga.w != gb.w || ga.chw || gb.chw)
      fail(ErrorKind::Unsupported, "layer '{}' (Concat): the operands' frames differ", info.name);
    RtlLayer r;
    int64_t nOut = ga.c + gb.c;
    r.module =
        layerModule(s.module, {"a", "b"}, {ga.c * ops[0].format.width, gb.c * ops[1].format.width},
                    nOut * outF.width);
    r.operandPrefixes = {"a", "b"};
    r.module.comment = fmt::format("Layer '{}' (Concat): {} x {} and {} x {} -> {} x {} (channels)",
                                   escape::comment(info.name), ga.c, formatToString(ops[0].format),
                                   gb.c, formatToString(ops[1].format), nOut, formatToString(outF));
    hdl::Instance inst{"triad_concat",
                       "u_concat",
                       {{"NA", std::to_string(ga.c)},
                        {"NB", std::to_string(gb.c)},
                        {"A_W", std::to_string(ops[0].format.width)},
                        {"A_FRAC", std::to_string(ops[0].format.fracBits())},
                        {"B_W", std::to_string(ops[1].format.width)},
                        {"B_FRAC", std::to_string(ops[1].format.fracBits())}},
                       {{"clk", "clk"},
                        {"rst_n", "rst_n"},
                        {"a_tdata", "a_tdata"},
                        {"a_tvalid", "a_tvalid"},
                        {"a_tready", "a_tready"},
                        {"b_tdata", "b_tdata"},
                        {"b_tvalid", "b_tvalid"},
                        {"b_tready", "b_tready"},
                        {"out_tdata", "out_tdata"},
                        {"out_tvalid", "out_tvalid"},
                        {"out_tready", "out_tready"}},
                       {}};
    for (auto& p : resultParams(outF, info.quant.result()))
      inst.params.push_back(p);
    r.module.add(std::move(inst));
    r.blocks.insert("triad_concat");
    r.latency = 1;
    r.out = {ga.h, ga.w, nOut, false};
    r.outFormat = outF;
    r.summary = "Concat";
    return r;
  }
};

ir::Support supportsConcat(const ir::Node& n) {
  if (n.inputs().size() != 2) return {false, "only a Concat of two inputs is supported"};
  const ir::Shape& sh = n.output(0)->type().shape;
  int64_t axis = n.attrs<ir::AxisAttrs>().axis;
  if (axis < 0) axis += int64_t(sh.size());
  int64_t want = sh.size() == 4 ? 1 : int64_t(sh.size()) - 1;
  if (sh.size() < 2 || axis != want)
    return {false, "only a Concat of channels (axis 1 of [N,C,H,W], the last axis of vectors) "
                   "is supported"};
  return {};
}

std::unique_ptr<Layer> planConcat(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Concat>();
  int a = ctx.dataInput(n, 0), b = ctx.dataInput(n, 1);
  L->info.inputs = {a, b};
  L->aShape = n.input(0)->type().shape;
  L->bShape = n.input(1)->type().shape;
  L->fa = ctx.format(a);
  L->fb = ctx.format(b);
  RoleRanges rr;
  rr[3] = ctx.range(n.output(0)->id());
  L->info.quant = resolveLayer(ctx.config, n.name(), rr);
  return L;
}

} // namespace

extern const LayerKind kAddLayer{"Add", {ir::OpKind::Add}, supportsAdd, planAdd};
extern const LayerKind kConcatLayer{"Concat", {ir::OpKind::Concat}, supportsConcat, planConcat};

} // namespace triad::fpga
