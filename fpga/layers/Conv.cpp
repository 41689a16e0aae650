// Conv (2-D, any kernel, stride, dilation, explicit pads, groups and depthwise): the window of
// every output position (triad_window's line buffers, element (ky*KW + kx)*C + c, zeros in the
// padding) is a row of the Dense core (triad_dense) whose weights are the kernel in window order,
// zero where an input channel is outside the output channel's group. Same arithmetic as Dense.
#include "ir/ops/Conv.h"
#include "fpga/layers/DenseCore.h"
#include "fpga/layers/Window.h"

#include <fmt/format.h>

namespace triad::fpga {

void Window2d::gather(const int64_t* sample, int64_t oy, int64_t ox, int64_t pad,
                      int64_t* win) const {
  for (int64_t ky = 0; ky < KH; ++ky)
    for (int64_t kx = 0; kx < KW; ++kx) {
      int64_t y = oy * SH + ky * DH - padT, x = ox * SW + kx * DW - padL;
      bool inside = y >= 0 && y < H && x >= 0 && x < W;
      int64_t* dst = win + (ky * KW + kx) * C;
      for (int64_t c = 0; c < C; ++c)
        dst[c] = inside ? sample[(c * H + y) * W + x] : pad;
    }
}

void Window2d::requireStream(const RtlOperand& a, const LayerInfo& info) const {
  requireSigned(a.format, info.name, "input");
  if (!(a.geom == StreamGeom{H, W, C, false}))
    fail(ErrorKind::Unsupported, "layer '{}' ({}) needs a {}x{}x{} pixel stream", info.name,
         info.op, H, W, C);
}

void Window2d::addCosts(RtlLayer& r, int elemWidth) const {
  r.lookahead = lookahead();
  r.cyclesPerFrame = (H + padT + padB) * (W + padL + padR);
  r.trailing = padB * (W + padL + padR) + padR;
  r.memoryBits = ((KH - 1) * DH * (W + padL + padR) + KW) * C * elemWidth;
  // triad_window's shift register: taps at ky*DH*Wp + kx*DW; the runs between them.
  int64_t wp = W + padL + padR;
  r.delay = {C * elemWidth, KH * KW, {}};
  for (int64_t ky = 0; ky < KH; ++ky)
    for (int64_t kx = 0; kx < KW; ++kx) {
      if (ky == 0 && kx == 0) continue;
      int64_t gap = kx > 0 ? DW - 1 : DH * wp - (KW - 1) * DW - 1;
      if (gap > 0) r.delay.runs.push_back(gap);
    }
}

int64_t Window2d::lookahead() const {
  // The first window needs input rows up to (KH-1)*DH - padT and, in that row, columns up to
  // (KW-1)*DW - padL.
  int64_t y = std::max<int64_t>((KH - 1) * DH - padT, 0),
          x = std::max<int64_t>((KW - 1) * DW - padL, 0);
  return std::min(y * W + x + 1, H * W);
}

Window2d windowOf(const ir::Node& n, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                  const std::vector<int64_t>& dilations) {
  const ir::Shape& s = n.input(0)->type().shape;
  if (s.size() != 4 || kernel.size() != 2)
    unsupportedNode(n, fmt::format("only 2-D windows over [N, C, H, W] are supported (input {})",
                                   ir::shapeToString(s)));
  Window2d w;
  w.C = s[1];
  w.H = s[2];
  w.W = s[3];
  w.KH = kernel[0];
  w.KW = kernel[1];
  if (!strides.empty()) w.SH = strides[0], w.SW = strides[1];
  if (!dilations.empty()) w.DH = dilations[0], w.DW = dilations[1];
  if (!pads.empty()) w.padT = pads[0], w.padL = pads[1], w.padB = pads[2], w.padR = pads[3];
  const ir::Shape& o = n.output(0)->type().shape;
  w.OH = o[2];
  w.OW = o[3];
  int64_t oh = (w.H + w.padT + w.padB - ((w.KH - 1) * w.DH + 1)) / w.SH + 1;
  int64_t ow = (w.W + w.padL + w.padR - ((w.KW - 1) * w.DW + 1)) / w.SW + 1;
  if (oh != w.OH || ow != w.OW)
    unsupportedNode(n, fmt::format("the output {}x{} is not the floor-mode window count {}x{} "
                                   "(ceil_mode windows are not supported)",
                                   w.OH, w.OW, oh, ow));
  return w;
}

void addWindowInstance(hdl::Module& m, const Window2d& w, int elemWidth, int64_t pad,
                       const std::string& outPrefix) {
  m.add(hdl::Instance{"triad_window",
                      "u_window",
                      {{"C", std::to_string(w.C)},
                       {"W", std::to_string(elemWidth)},
                       {"IN_H", std::to_string(w.H)},
                       {"IN_W", std::to_string(w.W)},
                       {"KH", std::to_string(w.KH)},
                       {"KW", std::to_string(w.KW)},
                       {"SH", std::to_string(w.SH)},
                       {"SW", std::to_string(w.SW)},
                       {"DH", std::to_string(w.DH)},
                       {"DW", std::to_string(w.DW)},
                       {"PAD_T", std::to_string(w.padT)},
                       {"PAD_L", std::to_string(w.padL)},
                       {"PAD_B", std::to_string(w.padB)},
                       {"PAD_R", std::to_string(w.padR)},
                       {"PAD", hdl::hexLiteral(pad, elemWidth)}},
                      hdl::streamConnections("in", outPrefix),
                      {}});
}

namespace {

ir::Support supportsConv(const ir::Node& n) {
  if (n.input(0)->type().rank() != 4) return {false, "only 2-D convolutions are supported"};
  if (!isConstantOperand(n.input(1))) return {false, "the weights must be a constant"};
  if (n.input(2) && !isConstantOperand(n.input(2))) return {false, "the bias must be a constant"};
  return {};
}

class Conv final : public Layer {
public:
  DenseCore core;
  Window2d win;
  int64_t batch = 0;

  void exec(RawValues& val, LayerReport& rep) const override {
    int64_t N = core.N, plane = win.OH * win.OW;
    std::vector<int64_t> out(size_t(batch * N * plane)), y(static_cast<size_t>(N));
    win.forEach(val[size_t(info.input)], batch, 0,
                [&](int64_t b, int64_t oy, int64_t ox, const int64_t* w) {
                  core.row(w, y.data(), rep);
                  for (int64_t o = 0; o < N; ++o)
                    out[size_t((b * N + o) * plane + oy * win.OW + ox)] = y[size_t(o)];
                });
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    const FixedFormat& outF = info.outFormat;
    requireSigned(outF, info.name, "result");
    win.requireStream(a, info);
    const LayerQuant& q = info.quant;
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {win.C * a.format.width}, core.N * outF.width);
    r.module.comment = fmt::format(
        "Layer '{}' (Conv): {}x{}x{} {} -> {}x{}x{} {} (channels-last pixels)\n"
        "  kernel {}x{}, stride {}x{}, dilation {}x{}, pads t{} l{} b{} r{}: a window of {} "
        "elements per output pixel\n"
        "  weights {}, bias {}, accumulator {} ({}, {}), result {} ({}, {}),\n"
        "  reuse {}: {}, a new window every {} cycle(s)",
        escape::comment(info.name), win.H, win.W, win.C, formatToString(a.format), win.OH, win.OW,
        core.N, formatToString(outF), win.KH, win.KW, win.SH, win.SW, win.DH, win.DW, win.padT,
        win.padL, win.padB, win.padR, win.size(), formatToString(q.weight().format),
        formatToString(q.bias().format), formatToString(q.acc().format), toString(q.acc().rounding),
        toString(q.acc().overflow), formatToString(outF), toString(q.result().rounding),
        toString(q.result().overflow), s.reuse, productsText(core, s), s.reuse);
    r.module.addStreamWires("win", win.size() * a.format.width,
                            fmt::format("windows: {} x {}", win.size(), formatToString(a.format)));
    addWindowInstance(r.module, win, a.format.width, 0, "win");
    r.blocks = {"triad_window"};
    r.latency = 1;
    addDenseCore(r, core, info.name, {}, a.rawMin, s, "win", "out");
    win.addCosts(r, a.format.width);
    r.out = {win.OH, win.OW, core.N, false};
    r.outFormat = outF;
    return r;
  }
};

std::unique_ptr<Layer> planConv(const ir::Node& n, PlanContext& ctx) {
  auto L = planWindowLayer<Conv, ir::ConvAttrs>(n, ctx);
  int in = L->info.inputs[0];
  const auto& a = n.attrs<ir::ConvAttrs>();
  const ir::Tensor& Wt = ctx.constInput(n, 1, "the weights W");
  std::vector<double> wv = Wt.toDoubleVector();
  int64_t M = Wt.shape()[0], cg = Wt.shape()[1], G = a.group;
  const Window2d& w = L->win;
  int64_t K = w.size();
  // Weights in window order; zero outside the output channel's group.
  std::vector<double> weights(size_t(M * K), 0.0);
  for (int64_t o = 0; o < M; ++o) {
    int64_t g = o / (M / G);
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ky = 0; ky < w.KH; ++ky)
        for (int64_t kx = 0; kx < w.KW; ++kx)
          weights[size_t(o * K + (ky * w.KW + kx) * w.C + g * cg + ci)] =
              wv[size_t(((o * cg + ci) * w.KH + ky) * w.KW + kx)];
  }
  std::vector<double> bias;
  if (n.input(2)) bias = ctx.constInput(n, 2, "the bias B").toDoubleVector();
  L->info.name = n.name(); // the config is read by layer name
  L->core = planDenseCore(L->info, ctx, weights, bias, K, M, in, ctx.range(n.output(0)->id()),
                          n.input(1), n.input(2), &n, 0);
  L->core.q = &L->info.quant;
  return L;
}

} // namespace

extern const LayerKind kConvLayer{"Conv", {ir::OpKind::Conv}, supportsConv, planConv};

} // namespace triad::fpga
