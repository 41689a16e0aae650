// Activations from a lookup table (triad_lut): Sigmoid, Tanh, HardSigmoid, HardSwish. A table of
// N entries (table_size) over [-R, R) (table_range: 8 for Sigmoid, HardSigmoid and HardSwish, 4
// for Tanh), entry i = f(-R + (i + 1/2) * step), step = 2R/N, in the result format (convergent,
// saturate); index = clamp(floor(x / step) + N/2, 0, N-1), an arithmetic shift of the raw input.
// HardSwish grows like x beyond the range: inputs past R read the last entry (the per-layer
// error report shows it; raise table_range when the inputs are larger).
#include "fpga/layers/Layer.h"
#include "ir/ops/Activation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace triad::fpga {

namespace {

int log2Step(double v) {
  int e = 0;
  double m = std::frexp(v, &e);
  TRIAD_ASSERT(m == 0.5, "{} is not a power of two", v);
  return e - 1;
}

class Lut final : public Layer {
public:
  const char* fn = "";

  void exec(RawValues& val, LayerReport&) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    int64_t n = int64_t(info.table.size());
    std::vector<int64_t> out(x.size());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = info.table[size_t(
          std::clamp<int64_t>(shiftFloor(x[i], info.tableShift) + n / 2, 0, n - 1))];
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    int64_t n = a.geom.c, size = int64_t(info.table.size());
    int outW = outF.width;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {n * a.format.width}, n * outW);
    r.module.comment = fmt::format(
        "Layer '{}' ({}): {} x {} -> {} x {}\n"
        "  table of {} entries over [-{}, {}) in {}: entry j = {}(-R + (j + 1/2) * step),\n"
        "  index = clamp(floor(x / 2^{}) + {}, 0, {}) on the raw input",
        escape::comment(info.name), info.op, n, formatToString(a.format), n, formatToString(outF),
        size, info.quant.tableRange, info.quant.tableRange, formatToString(outF), fn,
        info.tableShift, size / 2, size - 1);
    r.module.add(
        hdl::LocalParam{"TABLE", size * outW, tableLiteral(info.table, outW),
                        fmt::format("entry j at [j*{} +: {}], the last entry first", outW, outW)});
    r.module.add(hdl::Instance{"triad_lut",
                               "u_lut",
                               {{"N", std::to_string(n)},
                                {"IN_W", std::to_string(a.format.width)},
                                {"SHIFT", std::to_string(info.tableShift)},
                                {"SIZE", std::to_string(size)},
                                {"IDX_W", std::to_string(log2Exact(size))},
                                {"OUT_W", std::to_string(outW)},
                                {"TABLE", "TABLE"}},
                               hdl::streamConnections("in", "out"),
                               {}});
    r.blocks.insert("triad_lut");
    r.latency = 1;
    r.memoryBits = size * outW;
    r.out = a.geom;
    r.outFormat = outF;
    r.summary = info.op;
    return r;
  }
};

std::unique_ptr<Layer> planLut(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Lut>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  double defaultRange = n.kind() == ir::OpKind::Tanh ? 4 : 8;
  RoleRanges rr;
  double alpha = 0.2, beta = 0.5;
  if (n.kind() == ir::OpKind::HardSigmoid) {
    alpha = n.attrs<ir::HardSigmoidAttrs>().alpha;
    beta = n.attrs<ir::HardSigmoidAttrs>().beta;
  }
  rr[3] = n.kind() == ir::OpKind::HardSwish ? ctx.range(n.output(0)->id()) : std::optional(1.0);
  L->info.quant = resolveLayer(ctx.config, n.name(), rr, defaultRange);
  const LayerQuant& q = L->info.quant;
  double step = 2 * q.tableRange / double(q.tableSize);
  L->info.tableShift = ctx.format(in).fracBits() + log2Step(step);
  ir::OpKind k = n.kind();
  L->fn = k == ir::OpKind::Sigmoid       ? "sigmoid"
          : k == ir::OpKind::Tanh        ? "tanh"
          : k == ir::OpKind::HardSigmoid ? "hardsigmoid"
                                         : "hardswish";
  for (int64_t i = 0; i < q.tableSize; ++i) {
    double x = -q.tableRange + (double(i) + 0.5) * step;
    double hs = std::clamp(alpha * x + beta, 0.0, 1.0);
    double y = k == ir::OpKind::Sigmoid       ? 1 / (1 + std::exp(-x))
               : k == ir::OpKind::Tanh        ? std::tanh(x)
               : k == ir::OpKind::HardSigmoid ? hs
                                              : x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    L->info.table.push_back(
        quantize(y, q.result().format, Rounding::Convergent, Overflow::Saturate));
  }
  return L;
}

ir::Support supportsLut(const ir::Node&) {
  return {};
}

} // namespace

extern const LayerKind kLutLayer{
    "Lookup table",
    {ir::OpKind::Sigmoid, ir::OpKind::Tanh, ir::OpKind::HardSigmoid, ir::OpKind::HardSwish},
    supportsLut,
    planLut};

} // namespace triad::fpga
