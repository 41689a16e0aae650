// Resize (and Upsample) in nearest mode by integer factors, on [N, C, H, W]: every output pixel
// copies one input pixel (raw values and format unchanged). The source of each output pixel is
// taken from the reference kernel itself (the interpreter runs the node on a tensor of pixel
// indices), so every coordinate transformation and rounding mode ONNX allows is honoured; the
// RTL (triad_upsample) covers the maps that repeat each pixel SH x SW times, y -> floor(y/SH).
#include "fpga/layers/Layer.h"
#include "ir/Interpreter.h"
#include "ir/ops/Movement.h"

#include <fmt/format.h>

namespace triad::fpga {

namespace {

class Resize final : public Layer {
public:
  int64_t batch = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  std::vector<int64_t> source; // input pixel (y*W + x) of each output pixel
  int64_t sh = 0, sw = 0;      // integer factors when the map is a plain repetition (else 0)

  void exec(RawValues& val, LayerReport&) const override {
    const std::vector<int64_t>& x = val[size_t(info.input)];
    std::vector<int64_t> out(size_t(batch * C * OH * OW));
    for (int64_t p = 0; p < batch * C; ++p)
      for (int64_t o = 0; o < OH * OW; ++o)
        out[size_t(p * OH * OW + o)] = x[size_t(p * H * W + source[size_t(o)])];
    val[size_t(info.output)] = std::move(out);
  }

  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const override {
    const RtlOperand& a = ops[0];
    if (sh == 0)
      fail(ErrorKind::Unsupported,
           "layer '{}' (Resize): the nearest map from {}x{} to {}x{} is not a repetition of each "
           "pixel by integer factors, which is what the RTL streams",
           info.name, H, W, OH, OW);
    if (!(a.geom == StreamGeom{H, W, C, false}))
      fail(ErrorKind::Unsupported, "layer '{}' (Resize) needs a {}x{}x{} pixel stream", info.name,
           H, W, C);
    RtlLayer r;
    r.module = layerModule(s.module, {"in"}, {C * a.format.width}, C * a.format.width);
    r.module.comment = fmt::format("Layer '{}' (Resize, nearest): {}x{}x{} -> {}x{}x{} {}, each "
                                   "pixel repeated {}x{}",
                                   escape::comment(info.name), H, W, C, OH, OW, C,
                                   formatToString(a.format), sh, sw);
    r.module.add(hdl::Instance{"triad_upsample",
                               "u_upsample",
                               {{"C", std::to_string(C)},
                                {"W", std::to_string(a.format.width)},
                                {"IN_H", std::to_string(H)},
                                {"IN_W", std::to_string(W)},
                                {"SH", std::to_string(sh)},
                                {"SW", std::to_string(sw)}},
                               hdl::streamConnections("in", "out"),
                               {}});
    r.blocks = {"triad_upsample"};
    r.latency = 1;
    r.cyclesPerFrame = OH * OW;
    r.memoryBits = sh > 1 ? W * C * a.format.width : 0;
    r.out = {OH, OW, C, false};
    r.outFormat = a.format;
    r.summary = "Resize";
    return r;
  }
};

ir::Support supportsResize(const ir::Node& n) {
  if (n.input(0)->type().rank() != 4) return {false, "only [N, C, H, W] resizes are supported"};
  const ir::Shape& in = n.input(0)->type().shape;
  const ir::Shape& out = n.output(0)->type().shape;
  if (in[0] != out[0] || in[1] != out[1]) return {false, "only the spatial axes may be resized"};
  const auto* a = dynamic_cast<const ir::ResizeAttrs*>(n.attrsPtr().get());
  if (!a || a->mode != ir::ResizeMode::Nearest) return {false, "only nearest mode is supported"};
  return {};
}

std::unique_ptr<Layer> planResize(const ir::Node& n, PlanContext& ctx) {
  auto L = std::make_unique<Resize>();
  int in = ctx.dataInput(n, 0);
  L->info.inputs = {in};
  L->info.passThrough = true; // the format is the input's
  const ir::Shape& is = n.input(0)->type().shape;
  const ir::Shape& os = n.output(0)->type().shape;
  L->batch = is[0];
  L->C = is[1];
  L->H = is[2];
  L->W = is[3];
  L->OH = os[2];
  L->OW = os[3];
  // The reference kernel on one plane of pixel indices gives the source of every output pixel.
  ir::Graph g;
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {1, 1, L->H, L->W}, {}});
  std::vector<ir::Value*> ins = {x};
  for (size_t i = 1; i < n.inputs().size(); ++i)
    ins.push_back(n.input(i) && n.input(i)->isConstant()
                      ? g.addConstant(fmt::format("c{}", i), n.input(i)->constant())
                      : nullptr);
  g.addOutput(g.addNode(n.kind(), "resize", ins, n.attrsPtr(), {"y"},
                        {ir::TensorType{ir::DType::F32, {1, 1, L->OH, L->OW}, {}}})
                  ->output(0));
  std::vector<float> idx(size_t(L->H * L->W));
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = float(i);
  ir::Tensor t = ir::Tensor::fromVector<float>({1, 1, L->H, L->W}, idx);
  ir::Tensor y = ir::Interpreter(g).run(std::span<const ir::Tensor>(&t, 1))[0];
  for (int64_t o = 0; o < L->OH * L->OW; ++o)
    L->source.push_back(int64_t(y.getDouble(o)));
  if (L->OH % L->H == 0 && L->OW % L->W == 0) {
    int64_t sh = L->OH / L->H, sw = L->OW / L->W;
    bool repeat = true;
    for (int64_t oy = 0; oy < L->OH && repeat; ++oy)
      for (int64_t ox = 0; ox < L->OW && repeat; ++ox)
        repeat = L->source[size_t(oy * L->OW + ox)] == (oy / sh) * L->W + ox / sw;
    if (repeat) L->sh = sh, L->sw = sw;
  }
  L->info.quant = resolveLayer(ctx.config, n.name(), RoleRanges{});
  return L;
}

} // namespace

extern const LayerKind kResizeLayer{
    "Resize (nearest)", {ir::OpKind::Resize, ir::OpKind::Upsample}, supportsResize, planResize};

} // namespace triad::fpga
