// Pass-through layers: Identity, Dropout (inference), Flatten, Reshape, Squeeze, Unsqueeze. Raw
// values and the format are unchanged; in RTL the stream is renamed. Flatten of a pixel stream
// keeps its transfers and marks it as the NCHW flattening (StreamGeom::chw), which the Dense
// that reads it accounts for in its weight order: the layout change is explicit there.
#include "fpga/layers/Layer.h"

#include <fmt/format.h>

namespace triad::fpga {

namespace {

StreamGeom geomOfShape(const ir::Shape& s) {
  if (s.size() == 4) return {s[2], s[3], s[1], false};
  if (s.size() == 3) return {1, s[1], s[2], false, true};
  if (s.size() == 2) return {1, 1, s[1], false};
  return {1, 1, s.empty() ? 1 : s[0], false};
}

class Pass final : public Layer {
public:
  void exec(RawValues& val, LayerReport&) const override {
    val[size_t(info.output)] = val[size_t(info.input)];
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings&) const override {
    const StreamGeom& in = ops[0].geom;
    StreamGeom out = geomOfShape(outShape);
    RtlLayer r;
    r.passThrough = true;
    r.outFormat = ops[0].format;
    if (in == out || (in.transfers() == 1 && out.transfers() == 1 && in.c == out.c)) {
      r.out = out;
    } else if (in.transfers() == 1 && out.transfers() == 1 && in.elements() == out.c) {
      r.out = out;
    } else if (!in.chw && outShape.size() == 2 && in.elements() == out.c) {
      r.out = in;
      r.out.chw = in.transfers() > 1;
    } else {
      fail(ErrorKind::Unsupported,
           "layer '{}' ({}) changes the stream from {} x {} transfers of {} to {}; the Verilog "
           "emitter passes Flatten of pixels and reshapes of vectors",
           info.name, info.op, in.h, in.w, in.c, ir::shapeToString(outShape));
    }
    return r;
  }
};

ir::Support supportsPass(const ir::Node&) {
  return {};
}

std::unique_ptr<Layer> planPass(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Pass>();
  L->info.inputs = {ctx.dataInput(n, 0)};
  for (size_t i = 1; i < n.inputs().size(); ++i)
    if (n.input(i) && !n.input(i)->isConstant())
      unsupportedNode(n, fmt::format("input {} must be a constant (a shape)", i));
  L->info.passThrough = true;
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  return L;
}

} // namespace

extern const LayerKind kReshapeLayer{"Reshape",
                                     {ir::OpKind::Identity, ir::OpKind::Dropout,
                                      ir::OpKind::Flatten, ir::OpKind::Reshape, ir::OpKind::Squeeze,
                                      ir::OpKind::Unsqueeze},
                                     supportsPass,
                                     planPass};

} // namespace triad::fpga
