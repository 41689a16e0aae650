// Imported precisions: QONNX's Quant (and BipolarQuant, Trunc on constants) as the model's own
// fixed-point formats (docs/fpga.md, "Imported precisions").
//
// - On constants (weights, biases: Brevitas puts a Quant on each): not a layer. The emulator
//   folds the quantizer (its reference kernel) and the reading layer takes the exact format of
//   its values as its weight or bias precision: a power-of-two scale 2^-f per tensor or per
//   channel with zero point 0 gives fixed<b, b - f> (unsigned b bits: fixed<b+1, b+1-f>, since
//   the RTL blocks are signed); other scales are folded when the quantized values are exact in
//   some fixed<W,I> of at most 32 bits, and refused naming the node otherwise.
// - On data: a layer. y = cast(clamp(x, LO, HI)) to fixed<b, b - f> (unsigned: fixed<b+1, b+1-f>
//   with LO = 0; narrow ranges clamp at the narrow bound), rounding ROUND -> convergent, FLOOR
//   -> truncate, saturating. Clamping before rounding equals QONNX's order because both are
//   monotone. RTL: triad_clip. Scale per tensor and a power of two, zero point 0.
// - ONNX's QuantizeLinear on data (QDQ models) is the same layer: int8 -> fixed<8, 8-f>, uint8
//   -> fixed<9, 9-f> clamped at 0, round half to even (convergent), saturating; the
//   DequantizeLinear reading it with the same scale and zero point passes the stream on (its
//   values are the fixed-point values already), when the scale is a power of two and the zero
//   point 0.
// - Any other QuantizeLinear on data (ONNX Runtime's calibrated scales and zero points) puts the
//   stream on its integer grid: the stream carries k = q - z in fixed<W,W> (W: the fewest bits
//   that hold [qmin - z, qmax - z]) and the planner knows its real value s * k (RealAffine). The
//   layer is a requantization (Requant): k = clamp(round_half_even(x * M[c] + T[c]), qmin - z,
//   qmax - z), M[c] = (real scale of the input's fixed-point values) / s, T[c] its offset / s, in
//   fixed point with 24-32 significant bits (triad_scale, then triad_clip). Layers between (Relu,
//   pooling, reshapes, DequantizeLinear) pass the RealAffine on; Dense and Conv read DQ'd int8
//   weights as integers (fpga/layers/Dense.cpp); BatchNormalization folds into it.
#include "fpga/layers/Layer.h"
#include "ir/ops/QuantizeQonnx.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <variant>

namespace triad::fpga {

bool isConstantQuantizer(const ir::Node& n) {
  if (n.kind() != ir::OpKind::Quant && n.kind() != ir::OpKind::BipolarQuant &&
      n.kind() != ir::OpKind::Trunc)
    return false;
  for (ir::Value* v : n.inputs())
    if (v && !v->isConstant()) return false;
  return true;
}

bool RealAffine::hasOffset() const {
  return std::any_of(offset.begin(), offset.end(), [](double o) { return o != 0; });
}

double RealAffine::real(int64_t raw, const FixedFormat& f, int64_t i, int64_t plane) const {
  int64_t c =
      scale.size() > 1 || offset.size() > 1
          ? (i / std::max<int64_t>(plane, 1)) % int64_t(std::max(scale.size(), offset.size()))
          : 0;
  return dequantize(raw, f) * scaleAt(c) + offsetAt(c);
}

std::string RealAffine::describe() const {
  std::string r = scale.size() == 1 ? fmt::format("{:.9g}", scale[0])
                                    : fmt::format("per channel ({})", scale.size());
  if (hasOffset())
    r += offset.size() == 1 ? fmt::format(" + {:.9g}", offset[0]) : " + an offset per channel";
  return r;
}

int64_t InputGrid::quantize(double x) const {
  // ONNX Runtime: float32 x / scale, rounded half to even, saturated (NaN: the zero point).
  float v = float(x) / float(scale);
  if (std::isnan(v)) return std::clamp<int64_t>(0, lo, hi);
  double r = ir::ops::roundHalfEven(double(v));
  return r <= double(lo) ? lo : r >= double(hi) ? hi : int64_t(r);
}

const RealAffine* PlanContext::real(int valueId) const {
  auto it = real_.find(valueId);
  return it == real_.end() ? nullptr : &it->second;
}

const ir::DequantizedFrom* PlanContext::quantizedConstant(const ir::Value* v) const {
  if (!v || !v->isConstant()) return nullptr;
  return v->dequantizedFrom().get();
}

Requant Requant::plan(const FixedFormat& in, const std::vector<double>& mult,
                      const std::vector<double>& off, int64_t lo, int64_t hi) {
  Requant r;
  r.in = in;
  r.lo = lo;
  r.hi = hi;
  int w = 2;
  while (lo < -(int64_t(1) << (w - 1)) || hi > (int64_t(1) << (w - 1)) - 1)
    ++w;
  r.out = FixedFormat{w, w, true};
  // The multiplier: 25 bits (24 significant, 2^-25 relative at worst for the largest M: far
  // below float32's own rounding in ONNX Runtime's requantization), fewer where the product
  // would pass 60 bits; 25 x 25 bits fit two DSP48E1s.
  int mw = std::clamp(60 - in.width, 16, 25);
  r.mf = FixedFormat{mw, autoIntBits(maxAbsOf(mult), mw, true), true};
  int pFrac = in.fracBits() + r.mf.fracBits();
  double maxT = maxAbsOf(off);
  if (maxT == 0) {
    r.tf = FixedFormat{2, 2 - pFrac, true};
  } else {
    int ti = autoIntBits(maxT, 32, true);
    r.tf = FixedFormat{32, ti, true};
    if (r.tf.fracBits() > pFrac) r.tf = FixedFormat{std::max(2, ti + pFrac), ti, true};
  }
  Quant q{r.mf, Rounding::Convergent, Overflow::Saturate};
  int64_t sat = 0;
  r.m = quantizeAll(mult, q, &sat);
  r.t = quantizeAll(off.empty() ? std::vector<double>(1, 0.0) : off,
                    Quant{r.tf, Rounding::Convergent, Overflow::Saturate}, &sat);
  TRIAD_ASSERT(sat == 0, "requantization constants saturated");
  return r;
}

int64_t Requant::apply(int64_t x, int64_t c, CastStatus* st) const {
  FixedFormat pf = productFormat(in, mf);
  int64_t p = multiply(x, in, m[m.size() == 1 ? 0 : size_t(c)], mf);
  int64_t y = cast(add(p, pf, t[t.size() == 1 ? 0 : size_t(c)], tf), sumFormat(pf, tf), out,
                   Rounding::Convergent, Overflow::Saturate, st);
  return std::clamp(y, lo, hi);
}

bool isConstantOperand(const ir::Value* v) {
  return v && (v->isConstant() || (v->producer() && isConstantQuantizer(*v->producer())));
}

namespace {

/// e with 2^e == s, or nullopt when s is not a power of two.
std::optional<int> powerOfTwo(double s) {
  if (!(s > 0) || !std::isfinite(s)) return std::nullopt;
  int e = 0;
  double m = std::frexp(s, &e); // s = m * 2^e, m in [0.5, 1)
  if (m != 0.5) return std::nullopt;
  return e - 1;
}

/// The quantizer's parameters when they are constants of one element (scale per tensor).
struct QuantParams {
  std::vector<double> scale, zero;
  int bits = 0;
};

std::optional<std::string> readParams(const ir::Node& n, QuantParams& p) {
  for (size_t i = 1; i < 4; ++i)
    if (!n.input(i) || !n.input(i)->isConstant())
      return fmt::format("input {} ({}) must be a constant", i,
                         i == 1   ? "scale"
                         : i == 2 ? "zeropt"
                                  : "bitwidth");
  p.scale = n.input(1)->constant().toDoubleVector();
  p.zero = n.input(2)->constant().toDoubleVector();
  p.bits = int(n.input(3)->constant().getDouble(0));
  return std::nullopt;
}

/// The format in which a data quantizer's outputs are exact, and its integer range, or why not.
struct DataQuant {
  FixedFormat format;
  Rounding rounding = Rounding::Convergent;
  int64_t minInt = 0, maxInt = 0;
};

std::variant<DataQuant, std::string> qdqQuant(const ir::Node& n) {
  for (size_t i = 1; i < 3; ++i)
    if (n.input(i) && !n.input(i)->isConstant())
      return fmt::format("input {} ({}) must be a constant", i, i == 1 ? "scale" : "zero point");
  if (!n.input(2))
    return "QuantizeLinear without a zero point (uint8, zero point 0) is not supported";
  std::vector<double> scale = n.input(1)->constant().toDoubleVector();
  std::vector<int64_t> zero = n.input(2)->constant().toInt64Vector();
  if (scale.size() != 1)
    return fmt::format("the scale has {} elements; on data the FPGA takes one scale per tensor",
                       scale.size());
  if (zero[0] != 0) return fmt::format("zero point {} is not 0", zero[0]);
  std::optional<int> e = powerOfTwo(scale[0]);
  if (!e)
    return fmt::format("scale {} is not a power of two: x / scale has no fixed-point form",
                       scale[0]);
  ir::DType t = n.output(0)->type().dtype;
  if (t != ir::DType::I8 && t != ir::DType::U8)
    return fmt::format("QuantizeLinear to {} (int8 and uint8 are supported)", dtypeName(t));
  bool isSigned = t == ir::DType::I8;
  DataQuant d;
  d.rounding = Rounding::Convergent;
  int width = isSigned ? 8 : 9;
  d.format = FixedFormat{width, width + *e, true};
  d.minInt = isSigned ? -128 : 0;
  d.maxInt = isSigned ? 127 : 255;
  return d;
}

std::variant<DataQuant, std::string> dataQuant(const ir::Node& n) {
  if (n.kind() == ir::OpKind::QuantizeLinear) return qdqQuant(n);
  if (n.kind() != ir::OpKind::Quant)
    return fmt::format("{} on data has no fixed-point form (only Quant has)", opKindName(n.kind()));
  QuantParams p;
  if (auto why = readParams(n, p)) return *why;
  const auto& a = n.attrs<ir::QonnxQuantAttrs>();
  if (p.scale.size() != 1)
    return fmt::format("the scale has {} elements; on data the FPGA takes one scale per tensor",
                       p.scale.size());
  for (double z : p.zero)
    if (z != 0) return fmt::format("zero point {} is not 0", z);
  std::optional<int> e = powerOfTwo(p.scale[0]);
  if (!e)
    return fmt::format("scale {} is not a power of two: x / scale has no fixed-point form "
                       "(use a power-of-two scale, e.g. Brevitas' *FixedPoint quantizers)",
                       p.scale[0]);
  if (p.bits < 2 && a.isSigned) return "a signed 1-bit (bipolar) quantizer has no fixed format";
  DataQuant d;
  if (a.rounding == ir::QonnxRounding::HalfEven)
    d.rounding = Rounding::Convergent;
  else if (a.rounding == ir::QonnxRounding::Floor)
    d.rounding = Rounding::Truncate;
  else
    return fmt::format("rounding_mode {} has no fixed-point cast (ROUND and FLOOR have)",
                       toString(a.rounding));
  int width = a.isSigned ? p.bits : p.bits + 1;
  d.format = FixedFormat{width, width + *e, true};
  if (width > 32) return fmt::format("{} bits are more than the FPGA's 32-bit values", width);
  d.minInt = ir::ops::qonnxMinInt(a.isSigned, a.narrow, p.bits);
  d.maxInt = ir::ops::qonnxMaxInt(a.isSigned, a.narrow, p.bits);
  return d;
}

/// A bound of the quantizer's integer range (in its grid, fraction bits `frac`) in the input
/// format, or nullopt when it is not exactly representable there.
std::optional<int64_t> boundIn(int64_t k, int frac, const FixedFormat& in) {
  int sh = in.fracBits() - frac;
  if (sh >= 0) {
    if (sh > 40) return std::nullopt;
    __int128 r = __int128(k) << sh;
    if (r < minRaw(in)) return minRaw(in); // below the input's range: no value is below it
    if (r > maxRaw(in)) return std::nullopt;
    return int64_t(r);
  }
  if (k % (int64_t(1) << -sh) != 0) return std::nullopt;
  return k >> -sh;
}

/// Whether a DequantizeLinear undoes the QuantizeLinear that feeds it (same scale and zero
/// point): then it passes the fixed-point stream on.
std::optional<std::string> dequantizeMismatch(const ir::Node& n) {
  const ir::Node* q = n.input(0)->producer();
  if (!q || q->kind() != ir::OpKind::QuantizeLinear)
    return "a DequantizeLinear on the FPGA must read a QuantizeLinear (a QDQ pair)";
  for (size_t i = 1; i < 3; ++i) {
    const ir::Value *a = n.input(i), *b = q->input(i);
    if (!a || !b || !a->isConstant() || !b->isConstant() ||
        a->constant().toDoubleVector() != b->constant().toDoubleVector())
      return fmt::format("its {} differs from its QuantizeLinear's ('{}')",
                         i == 1 ? "scale" : "zero point", q->name());
  }
  return std::nullopt;
}

/// A QuantizeLinear's integer grid: real = scale * k, k = q - z in [lo, hi].
struct Grid {
  double scale = 1;
  int64_t lo = 0, hi = 0;
};

std::variant<Grid, std::string> qdqGrid(const ir::Node& n) {
  for (size_t i = 1; i < 3; ++i)
    if (n.input(i) && !n.input(i)->isConstant())
      return fmt::format("input {} ({}) must be a constant", i, i == 1 ? "scale" : "zero point");
  std::vector<double> scale = n.input(1)->constant().toDoubleVector();
  if (scale.size() != 1)
    return fmt::format("the scale has {} elements; on data the FPGA takes one scale per tensor",
                       scale.size());
  if (!(scale[0] > 0) || !std::isfinite(scale[0]))
    return fmt::format("scale {} is not positive", scale[0]);
  int64_t z = n.input(2) ? n.input(2)->constant().toInt64Vector().at(0) : 0;
  ir::DType t = n.output(0)->type().dtype;
  int64_t qmin = 0, qmax = 0;
  switch (t) {
  case ir::DType::I8:
    qmin = -128, qmax = 127;
    break;
  case ir::DType::U8:
    qmin = 0, qmax = 255;
    break;
  case ir::DType::I16:
    qmin = -32768, qmax = 32767;
    break;
  case ir::DType::U16:
    qmin = 0, qmax = 65535;
    break;
  default:
    return fmt::format("QuantizeLinear to {} (int8, uint8, int16 and uint16 are supported)",
                       dtypeName(t));
  }
  return Grid{scale[0], qmin - z, qmax - z};
}

/// A QuantizeLinear of the power-of-two form (the QuantLayer below) on a value that is not on a
/// grid.
bool fixedForm(const ir::Node& n, const PlanContext& ctx) {
  return n.kind() != ir::OpKind::QuantizeLinear ||
         (std::holds_alternative<DataQuant>(qdqQuant(n)) && !ctx.real(n.input(0)->id()));
}

ir::Support supportsQuant(const ir::Node& n) {
  if (isConstantQuantizer(n)) return {}; // folded into the layer that reads it
  if (n.kind() == ir::OpKind::DequantizeLinear) {
    if (auto why = dequantizeMismatch(n)) return {false, *why};
    return {};
  }
  if (n.kind() == ir::OpKind::QuantizeLinear) {
    if (auto g = qdqGrid(n); std::holds_alternative<std::string>(g))
      return {false, std::get<std::string>(g)};
    return {};
  }
  if (auto d = dataQuant(n); std::holds_alternative<std::string>(d))
    return {false, std::get<std::string>(d)};
  return {};
}

/// A QuantizeLinear onto an integer grid (Requant): triad_scale, then triad_clip.
class RequantLayer final : public Layer {
public:
  Requant rq;
  int64_t plane = 1, channels = 1;

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    std::vector<int64_t> out(x.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CastStatus st;
      out[i] = rq.apply(x[i], (int64_t(i) / plane) % channels, &st);
      rep.saturated += st.saturated;
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    int64_t n = a.geom.c;
    if (rq.m.size() > 1 && (a.geom.chw || n != int64_t(rq.m.size())))
      fail(ErrorKind::Unsupported,
           "layer '{}' (QuantizeLinear) requantizes {} channels; the stream has {} elements per "
           "transfer{}",
           info.name, rq.m.size(), n, a.geom.chw ? " (a flattened pixel stream)" : "");
    auto lit = [n](const std::vector<int64_t>& v, int w) {
      std::string l = "{";
      for (int64_t i = n; i-- > 0;)
        l += hdl::hexLiteral(v[v.size() == 1 ? 0 : size_t(i)], w) + (i > 0 ? ", " : "");
      return l + "}";
    };
    const FixedFormat& outF = rq.out;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {n * a.format.width}, n * outF.width);
    std::vector<std::string> ms;
    for (size_t c = 0; c < rq.m.size() && c < 4; ++c)
      ms.push_back(fmt::format("{:.9g}", dequantize(rq.m[c], rq.mf)));
    r.module.comment =
        fmt::format("Layer '{}' (QuantizeLinear onto an integer grid): {} x {} -> {} x {}\n"
                    "  k = clamp(round_half_even(x * M + T), {}, {}); M {} ({}{}), T {}",
                    escape::comment(info.name), n, formatToString(a.format), n,
                    formatToString(outF), rq.lo, rq.hi, formatToString(rq.mf), fmt::join(ms, ", "),
                    rq.m.size() > 4 ? ", ..." : "", formatToString(rq.tf));
    r.module.add(hdl::LocalParam{"M", n * rq.mf.width, lit(rq.m, rq.mf.width),
                                 "requantization multipliers, one per element"});
    r.module.add(hdl::LocalParam{"T", n * rq.tf.width, lit(rq.t, rq.tf.width), "offsets"});
    r.module.addStreamWires("mid", n * outF.width);
    hdl::Instance sc{"triad_scale",
                     "u_scale",
                     {{"N", std::to_string(n)},
                      {"IN_W", std::to_string(a.format.width)},
                      {"IN_FRAC", std::to_string(a.format.fracBits())},
                      {"S_W", std::to_string(rq.mf.width)},
                      {"S_FRAC", std::to_string(rq.mf.fracBits())},
                      {"T_W", std::to_string(rq.tf.width)},
                      {"T_FRAC", std::to_string(rq.tf.fracBits())}},
                     hdl::streamConnections("in", "mid"),
                     {}};
    Quant res{outF, Rounding::Convergent, Overflow::Saturate};
    for (auto& p : resultParams(outF, res))
      sc.params.push_back(p);
    sc.params.push_back({"S", "M"});
    sc.params.push_back({"T", "T"});
    r.module.add(std::move(sc));
    hdl::Instance cl{"triad_clip",
                     "u_clip",
                     {{"N", std::to_string(n)},
                      {"IN_W", std::to_string(outF.width)},
                      {"IN_FRAC", "0"},
                      {"LO", hdl::hexLiteral(rq.lo, outF.width)},
                      {"HI", hdl::hexLiteral(rq.hi, outF.width)}},
                     hdl::streamConnections("mid", "out"),
                     {}};
    for (auto& p : resultParams(outF, res))
      cl.params.push_back(p);
    r.module.add(std::move(cl));
    r.blocks = {"triad_scale", "triad_clip"};
    r.latency = 2;
    r.multipliers = n;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = "requantize";
    return r;
  }
};

class QuantLayer final : public Layer {
public:
  int64_t lo = 0, hi = 0; // clamp bounds in the input format

  void exec(RawValues& val, LayerReport& rep) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    const Quant& res = info.quant.result();
    std::vector<int64_t> out(x.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CastStatus st;
      out[i] = cast(std::clamp(x[i], lo, hi), info.inFormat, res.format, res.rounding, res.overflow,
                    &st);
      rep.saturated += st.saturated;
      rep.wrapped += st.wrapped;
    }
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const Quant& res = info.quant.result();
    const FixedFormat& outF = info.outFormat;
    int64_t n = a.geom.c;
    int inW = a.format.width;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {n * inW}, n * outF.width);
    hdl::Instance inst;
    inst.name = "u_quant";
    inst.module = "triad_clip";
    inst.ports = hdl::streamConnections("in", "out");
    inst.params = {{"N", std::to_string(n)},
                   {"IN_W", std::to_string(inW)},
                   {"IN_FRAC", std::to_string(a.format.fracBits())},
                   {"LO", hdl::hexLiteral(lo, inW)},
                   {"HI", hdl::hexLiteral(hi, inW)}};
    for (auto& p : resultParams(outF, res))
      inst.params.push_back(p);
    r.module.comment =
        fmt::format("Layer '{}' ({}, imported): {} x {} -> {} x {}\n  clamp [{}, {}], {}, {}",
                    escape::comment(info.name), info.op, n, formatToString(a.format), n,
                    formatToString(outF), dequantize(lo, a.format), dequantize(hi, a.format),
                    toString(res.rounding), toString(res.overflow));
    r.blocks.insert(inst.module);
    r.module.add(std::move(inst));
    r.latency = 1;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = info.op;
    return r;
  }
};

std::unique_ptr<Layer> planRequant(const ir::Node& n, PlanContext& ctx) {
  auto gv = qdqGrid(n);
  if (auto* why = std::get_if<std::string>(&gv)) unsupportedNode(n, *why);
  const Grid& g = std::get<Grid>(gv);
  int in = ctx.dataInput(n, 0);
  const FixedFormat& inF = ctx.format(in);
  const RealAffine* a = ctx.real(in);
  ctx.realApplied = true;
  ctx.setReal(n.output(0)->id(), RealAffine{{g.scale}, {}});
  // A graph input the host quantized onto this very grid: the stream passes.
  if (ctx.inputGrid && a && n.input(0)->producer() == nullptr && ctx.inputGrid->scale == g.scale &&
      ctx.inputGrid->lo == g.lo && ctx.inputGrid->hi == g.hi) {
    auto L = std::make_unique<PassThroughLayer>();
    L->info.inputs = {in};
    L->info.passThrough = true;
    L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
    return L;
  }
  std::vector<double> mult, off;
  size_t nc = a ? std::max(a->scale.size(), a->offset.size()) : 1;
  for (size_t c = 0; c < nc; ++c) {
    mult.push_back((a ? a->scaleAt(int64_t(c)) : 1.0) / g.scale);
    off.push_back(a ? a->offsetAt(int64_t(c)) / g.scale : 0.0);
  }
  const ir::Shape& sh = n.input(0)->type().shape;
  Requant rq = Requant::plan(inF, mult, off, g.lo, g.hi);
  // Already on this grid (e.g. a Softmax that divided into it): only the clamp.
  if (std::all_of(mult.begin(), mult.end(), [](double m) { return m == 1; }) &&
      std::all_of(off.begin(), off.end(), [](double o) { return o == 0; }) && inF.fracBits() == 0) {
    auto L = std::make_unique<QuantLayer>();
    L->info.inputs = {in};
    L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
    L->info.quant.roles[size_t(Role::Result)] =
        Quant{rq.out, Rounding::Convergent, Overflow::Saturate};
    L->lo = std::max(g.lo, minRaw(inF));
    L->hi = std::min(g.hi, maxRaw(inF));
    L->info.lo = L->lo;
    L->info.hi = L->hi;
    return L;
  }
  auto L = std::make_unique<RequantLayer>();
  if (nc > 1) {
    if (sh.size() < 2 || sh[1] != int64_t(nc))
      unsupportedNode(n, fmt::format("its input {} has {} channel scales along axis 1",
                                     ir::shapeToString(sh), nc));
    L->channels = int64_t(nc);
    for (size_t d = 2; d < sh.size(); ++d)
      L->plane *= sh[d];
  }
  L->rq = rq;
  L->info.inputs = {in};
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  L->info.quant.roles[size_t(Role::Result)] =
      Quant{L->rq.out, Rounding::Convergent, Overflow::Saturate};
  L->info.lo = g.lo;
  L->info.hi = g.hi;
  return L;
}

std::unique_ptr<Layer> planQuant(const ir::Node& n, PlanContext& ctx) {
  if (n.kind() == ir::OpKind::DequantizeLinear) {
    if (auto why = dequantizeMismatch(n)) unsupportedNode(n, *why);
    auto L = std::make_unique<PassThroughLayer>();
    L->info.inputs = {ctx.dataInput(n, 0)};
    L->info.passThrough = true;
    L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
    return L;
  }
  if (!fixedForm(n, ctx)) return planRequant(n, ctx);
  auto d = dataQuant(n);
  if (auto* why = std::get_if<std::string>(&d)) unsupportedNode(n, *why);
  const DataQuant& q = std::get<DataQuant>(d);
  auto L = std::make_unique<QuantLayer>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  const FixedFormat& inF = ctx.format(in);
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  Quant& res = L->info.quant.roles[size_t(Role::Result)];
  res = Quant{q.format, q.rounding, Overflow::Saturate};
  int frac = q.format.fracBits();
  L->lo = minRaw(inF);
  L->hi = maxRaw(inF);
  if (q.minInt != minRaw(q.format)) {
    auto b = boundIn(q.minInt, frac, inF);
    if (!b)
      unsupportedNode(n, fmt::format("the lower bound {} of its range is not exact in the input "
                                     "format {}",
                                     q.minInt * std::ldexp(1.0, -frac), formatToString(inF)));
    L->lo = *b;
  }
  if (q.maxInt != maxRaw(q.format)) {
    auto b = boundIn(q.maxInt, frac, inF);
    if (!b)
      unsupportedNode(n, fmt::format("the upper bound {} of its range is not exact in the input "
                                     "format {}",
                                     q.maxInt * std::ldexp(1.0, -frac), formatToString(inF)));
    L->hi = *b;
  }
  L->info.lo = L->lo;
  L->info.hi = L->hi;
  ctx.setImported(n.output(0)->id(), res);
  return L;
}

} // namespace

std::optional<Quant> importedInputQuant(const ir::Graph& g) {
  std::optional<Quant> common;
  for (ir::Value* v : g.inputs()) {
    if (v->users().empty()) return std::nullopt;
    for (ir::Node* u : v->users()) {
      if ((u->kind() != ir::OpKind::Quant && u->kind() != ir::OpKind::QuantizeLinear) ||
          u->input(0) != v)
        return std::nullopt;
      auto d = dataQuant(*u);
      if (!std::holds_alternative<DataQuant>(d)) return std::nullopt;
      const DataQuant& q = std::get<DataQuant>(d);
      Quant mine{q.format, q.rounding, Overflow::Saturate};
      if (common && (common->format != mine.format || common->rounding != mine.rounding))
        return std::nullopt;
      common = mine;
    }
  }
  return common;
}

std::optional<std::pair<InputGrid, FixedFormat>> importedInputGrid(const ir::Graph& g) {
  std::optional<Grid> common;
  for (ir::Value* v : g.inputs()) {
    if (v->users().empty()) return std::nullopt;
    for (ir::Node* u : v->users()) {
      if (u->kind() != ir::OpKind::QuantizeLinear || u->input(0) != v ||
          std::holds_alternative<DataQuant>(qdqQuant(*u)))
        return std::nullopt;
      auto gv = qdqGrid(*u);
      if (!std::holds_alternative<Grid>(gv)) return std::nullopt;
      const Grid& mine = std::get<Grid>(gv);
      if (common && (common->scale != mine.scale || common->lo != mine.lo || common->hi != mine.hi))
        return std::nullopt;
      common = mine;
    }
  }
  if (!common) return std::nullopt;
  Requant r = Requant::plan(FixedFormat{32, 32, true}, {1.0}, {}, common->lo, common->hi);
  return std::pair{InputGrid{common->scale, common->lo, common->hi}, r.out};
}

void propagateReal(const ir::Node& n, const LayerInfo& info, PlanContext& ctx) {
  const RealAffine* a = nullptr;
  std::string from;
  for (size_t i = 0; i < info.inputs.size(); ++i) {
    int id = info.inputs[i];
    const RealAffine* r = id >= 0 ? ctx.real(id) : nullptr;
    if (!r && !a) continue;
    if (i > 0 || !r)
      unsupportedNode(n, fmt::format("its operands are on different QDQ integer grids or only "
                                     "some are ({}); the FPGA applies a grid's scale only in a "
                                     "QuantizeLinear, Dense, Conv or BatchNormalization",
                                     r ? r->describe() : a->describe()));
    a = r;
    from = ctx.graph.values()[size_t(id)]->name();
  }
  if (!a) return;
  using K = ir::OpKind;
  K k = n.kind();
  bool positive = std::all_of(a->scale.begin(), a->scale.end(), [](double s) { return s > 0; });
  bool passes = false;
  std::string why = "it does not commute with the scale";
  if (k == K::DequantizeLinear || k == K::Identity) {
    passes = true;
  } else if (k == K::Relu) {
    passes = positive && !a->hasOffset();
    why = "Relu commutes with a positive scale and no offset";
  } else if (k == K::MaxPool || k == K::GlobalMaxPool || k == K::GlobalAveragePool) {
    passes = positive;
    why = "pooling commutes with positive scales";
  } else if (k == K::Flatten || k == K::Reshape || k == K::Squeeze || k == K::Unsqueeze) {
    const ir::Shape& in = n.input(0)->type().shape;
    const ir::Shape& out = n.output(0)->type().shape;
    int64_t plane = 1;
    for (size_t d = 2; d < in.size(); ++d)
      plane *= in[d];
    passes = a->perTensor() || (in.size() >= 2 && out.size() == 2 && plane == 1 && out[1] == in[1]);
    why = "a reshape keeps per-channel scales only when the channels stay on axis 1";
  }
  if (!passes)
    unsupportedNode(n, fmt::format("its input '{}' is on a QDQ integer grid (real = k * {}); {}: "
                                   "the FPGA applies a grid's scale only in a QuantizeLinear, "
                                   "Dense, Conv or BatchNormalization",
                                   from, a->describe(), why));
  ctx.setReal(n.output(0)->id(), *a);
}

std::variant<Quant, std::string> constantQuantizerFormat(const ir::Node& n,
                                                         const ir::Tensor& values) {
  // A power-of-two scale (per tensor or per channel) with zero point 0: the quantizer's own
  // format. Else the narrowest format in which the folded values are exact, if it is at most 8
  // bits wider than the quantizer (a scale m·2^-f with a small odd m, e.g. 3·2^-5): any float32
  // is exact in some fixed<W,I>, but a scale such as 0.3 would give ~25-bit weights.
  int maxWidth = 32;
  if (n.kind() == ir::OpKind::Quant) {
    QuantParams p;
    if (!readParams(n, p)) {
      maxWidth = std::min(32, p.bits + 1 + 8);
      const auto& a = n.attrs<ir::QonnxQuantAttrs>();
      bool zero = std::all_of(p.zero.begin(), p.zero.end(), [](double z) { return z == 0; });
      std::optional<int> fMax, iMax;
      for (double s : p.scale) {
        std::optional<int> e = powerOfTwo(s);
        if (!e) {
          fMax.reset();
          break;
        }
        int frac = -*e, width = a.isSigned ? p.bits : p.bits + 1;
        fMax = std::max(fMax.value_or(frac), frac);
        iMax = std::max(iMax.value_or(width - frac), width - frac);
      }
      if (zero && fMax && !(p.bits == 1 && a.isSigned) && *fMax + *iMax <= 32)
        return Quant{FixedFormat{*fMax + *iMax, *iMax, true}, Rounding::Convergent,
                     Overflow::Saturate};
    }
  }
  std::vector<double> v = values.toDoubleVector();
  double maxAbs = maxAbsOf(v);
  for (int frac = -32; frac <= 32; ++frac) {
    bool exact = true;
    for (double x : v)
      if (double r = std::ldexp(x, frac); r != std::floor(r)) {
        exact = false;
        break;
      }
    if (!exact) continue;
    // Integer bits: the fewest that hold every value (sign included).
    int width = 1;
    while (width <= maxWidth) {
      FixedFormat f{width, width - frac, true};
      if (std::all_of(v.begin(), v.end(), [&](double x) {
            double r = std::ldexp(x, frac);
            return r >= double(minRaw(f)) && r <= double(maxRaw(f));
          }))
        return Quant{f, Rounding::Convergent, Overflow::Saturate};
      ++width;
    }
    break;
  }
  return fmt::format("node '{}' ({}): its values (max |x| {}) are not exact in any fixed<W,I> of "
                     "at most {} bits (scale {}, not a power of two); set the reading layer's "
                     "weight/bias precision in the config to quantize them anyway",
                     n.name(), opKindName(n.kind()), maxAbs, maxWidth,
                     n.input(1) && n.input(1)->isConstant() ? n.input(1)->constant().getDouble(0)
                                                            : 0.0);
}

extern const LayerKind kQuantLayer{"Quant",
                                   {ir::OpKind::Quant, ir::OpKind::BipolarQuant, ir::OpKind::Trunc,
                                    ir::OpKind::QuantizeLinear, ir::OpKind::DequantizeLinear},
                                   supportsQuant,
                                   planQuant};

} // namespace triad::fpga
