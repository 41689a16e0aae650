// The GPU lowering table (see gpu/GpuLowering.h): GEMM, MatMul and convolution through the tiled
// GEMM / convolution generators with fused epilogues; pooling and row reductions through their
// generators; BatchNormalization and data movement (Transpose, Slice, Concat, Split, Gather) as
// kernels written here, one work-item per output element, moving elements of any type by size.
#include "gpu/CodeWriter.h"
#include "gpu/GpuLowering.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"

#include <algorithm>
#include <unordered_map>

namespace triad::gpu {

using namespace ir;

namespace lower {

Support no(std::string why) {
  return {false, std::move(why)};
}

const Shape& shapeOf(const Value* v) {
  return v->type().shape;
}

Support requireF32(const Node& n) {
  for (Value* v : n.inputs())
    if (v && v->type().dtype != DType::F32)
      return no("only float32 inputs and outputs are compiled");
  for (Value* v : n.outputs())
    if (v->type().dtype != DType::F32) return no("only float32 inputs and outputs are compiled");
  return {};
}

/// Kernels indexed with 32-bit ints: every tensor they touch must stay below 2^31 elements.
Support require32Bit(const Node& n) {
  for (Value* v : n.inputs())
    if (v && numElements(shapeOf(v)) >= (int64_t(1) << 31))
      return no("a tensor exceeds 32-bit indexing");
  for (Value* v : n.outputs())
    if (numElements(shapeOf(v)) >= (int64_t(1) << 31))
      return no("a tensor exceeds 32-bit indexing");
  return {};
}

Support both(Support a, const Support& b) {
  return a.ok ? b : a;
}

} // namespace lower

using namespace lower;

namespace {

/// The kernels run on a CPU device (PoCL's pthread device, a CPU OpenCL driver).
bool cpuDevice(const GpuLowerContext& c) {
  return c.options.device && c.options.device->type == "CPU";
}

/// A power of two in [1, 256] no larger than `n` (work-group size of a row reduction). On CPU
/// devices 1: a work-item per row loops over it, because the driver runs a work-group as loops
/// over its work-items cut at every barrier of the local-memory reduction (Softmax of BERT-base
/// on PoCL: 10.4 ms with 128 work-items per row, 1.4 ms with one).
int reduceWorkGroup(const GpuLowerContext& c, int64_t n) {
  if (cpuDevice(c)) return 1;
  const size_t limit = c.options.maxWorkGroupSize;
  int wg = 1;
  while (wg * 2 <= n && wg * 2 <= 256 && size_t(wg * 2) <= limit)
    wg *= 2;
  return wg;
}

} // namespace

std::string lower::moveType(DType t) {
  switch (dtypeSize(t)) {
  case 1:
    return "uchar";
  case 2:
    return "ushort";
  case 4:
    return "uint";
  default:
    return "ulong";
  }
}

namespace {

/// GemmParams{} (32x32 tiles), or on a GPU whose compute units those tiles would leave idle (a
/// product of few tiles: ResNet-50's 7x7 layers, M = 512 x N = 49, are 32 work-groups for an
/// H200's 132 units) smaller tiles: 16x32, then 16x16 with a longer K step, the first that gives
/// every unit two work-groups, else the smallest.
GemmParams smallProblemParams(const GpuLowerContext& c, const GemmShape& s) {
  const GemmParams menu[] = {GemmParams{}, GemmParams{8, 8, 2, 4, 8, 4},
                             GemmParams{8, 8, 2, 2, 16, 2}};
  if (!c.options.device || c.options.device->type != "GPU" || c.options.device->computeUnits == 0)
    return menu[0];
  const int64_t want = 2 * int64_t(c.options.device->computeUnits);
  for (const GemmParams& p : menu)
    if (ceilDiv(s.M, p.tileM()) * ceilDiv(s.N, p.tileN()) * s.batch >= want) return p;
  return menu[2];
}

/// Untuned parameters for a GEMM of `s` (`panelShape`: the product the panel kernel computes,
/// which for a convolution is the transposed one): on CPU devices the panel kernel
/// (cpuPanelParams, float vectors of the device's preferred width, at most maxVectorWidth) where
/// `panelOk`, else the tiled kernel with GemmParams{} (32x32 tiles), on CPU devices for large
/// enough products with wider register strips read as float8 (the tuner's 512^3 winner of the
/// tiled grid, see docs/gpu.md; float4 where the device's vectors are narrower).
GemmParams defaultParams(const GpuLowerContext& c, const GemmShape& s, const GemmShape& panelShape,
                         bool panelOk) {
  if (cpuDevice(c) && panelOk) return cpuPanelParams(panelShape.N, *c.options.device);
  if (cpuDevice(c) && s.M >= 32 && s.N >= 64 && s.K >= 32 && c.options.maxWorkGroupSize >= 128)
    return GemmParams{16, 8, 2, 8, 32, std::min(8, maxVectorWidth(*c.options.device))};
  return smallProblemParams(c, s);
}

} // namespace

/// The tuning database's parameters for `key` (TuningDb::gemmKey / convKey), else the defaults;
/// panel parameters only where `panelOk`, vectors only as wide as the device builds them.
GemmParams lower::tunedOrDefault(GpuLowerContext& c, const GemmShape& s,
                                 const GemmShape& panelShape, bool panelOk,
                                 const std::function<std::string()>& key) {
  if (c.options.device && c.options.tuning) {
    if (auto t = c.options.tuning->findGemm(key());
        t && (panelOk || !t->params.panel) && gemmParamsFit(t->params, *c.options.device)) {
      c.tuned = true;
      return t->params;
    }
  }
  return defaultParams(c, s, panelShape, panelOk);
}

namespace {

/// The parameters of a GEMM (Gemm, MatMul) whose B is `b`. The panel kernel reads B packed
/// when it is a constant (packed here, once per constant and panel width, into the weights)
/// and as stored otherwise, which it cannot do for a transposed B.
GemmParams gemmParams(GpuLowerContext& c, GemmShape& s, const Value* b) {
  GemmParams p = tunedOrDefault(c, s, s, b->isConstant() || !s.transB,
                                [&] { return TuningDb::gemmKey(s, *c.options.device); });
  if (p.panel && b->isConstant()) {
    s.packedB = true;
    const GemmShape shape = s;
    c.bindPacked(
        "B", fmt::format("gemm panels {} {} {}", b->id(), p.workN, s.transB ? "T" : "N"),
        [b, shape, width = p.workN] {
          return packGemmPanels(b->constant().data<float>(), shape, width);
        },
        fmt::format("{} {} in panels of {} columns", b->name(), typeToString(b->type()), p.workN));
  }
  return p;
}

// --- Gemm ---------------------------------------------------------------------------------------

Support supportsGemm(const Node& n) {
  return both(requireF32(n), require32Bit(n));
}

void emitGemm(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<GemmAttrs>();
  const Shape& sa = shapeOf(n.input(0));
  const Shape& sb = shapeOf(n.input(1));
  GemmShape s;
  s.M = a.transA ? sa[1] : sa[0];
  s.K = a.transA ? sa[0] : sa[1];
  s.N = a.transB ? sb[0] : sb[1];
  s.transA = a.transA;
  s.transB = a.transB;
  std::string pre;
  if (a.alpha != 1.0f) pre += fmt::format("acc *= {};\n", floatLiteral(a.alpha));
  if (n.input(2) && a.beta != 0.0f) {
    Shape cs = shapeOf(n.input(2));
    while (cs.size() < 2)
      cs.insert(cs.begin(), 1);
    std::string bias = c.pointer("gemm_c", n.input(2));
    std::string idx = cs[0] == 1 && cs[1] == 1 ? "0"
                      : cs[0] == 1             ? "col"
                      : cs[1] == 1             ? "row"
                                               : fmt::format("row * {} + col", s.N);
    std::string beta = a.beta == 1.0f ? "" : floatLiteral(a.beta) + " * ";
    pre += fmt::format("acc += {}{}[{}]; // C{}\n", beta, bias, idx,
                       shapeToString(shapeOf(n.input(2))));
  }
  Epilogue epi = c.epilogue({fmt::format("row * {} + col", s.N), {"row", "col"}}, pre);
  GemmParams p = gemmParams(c, s, n.input(1));
  c.kernel = generateGemm(c.layer, s, p, epi);
  c.bind = {{"A", n.input(0)}, {"B", n.input(1)}, {"C", c.output(0)}};
  c.kind = "gemm";
  c.gemm = s;
  c.params = p.toString();
}

// --- MatMul (numpy semantics) -----------------------------------------------------------------

} // namespace

std::optional<MatMulPlan> lower::planMatMul(const Node& n, size_t bInput) {
  Shape sa = shapeOf(n.input(0)), sb = shapeOf(n.input(bInput));
  if (sa.empty() || sb.empty()) return std::nullopt;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), rank - ba.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  int64_t batchesA = numElements(ba), batchesB = numElements(bb);
  MatMulPlan p;
  p.shape.M = sa[sa.size() - 2];
  p.shape.K = sa.back();
  p.shape.N = sb.back();
  if (batchesB == 1) { // one GEMM: A's batches stack into rows
    p.shape.M *= batchesA;
    return p;
  }
  if (batchesA != 1 && ba != bb) return std::nullopt; // partial broadcasting
  p.batched = true;
  p.shape.batch = batchesB;
  p.shape.broadcastA = batchesA == 1;
  return p;
}

namespace {

Support supportsMatMul(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  if (!planMatMul(n)) return no("batch dims that broadcast partially are not compiled");
  return {};
}

void emitMatMul(GpuLowerContext& c) {
  const Node& n = c.node;
  MatMulPlan p = *planMatMul(n);
  GemmShape& s = p.shape;
  Epilogue epi = c.epilogue(matMulEpilogueIndex(n, p, c.output(0)), "");
  GemmParams params = gemmParams(c, s, n.input(1));
  c.kernel = generateGemm(c.layer, s, params, epi);
  c.bind = {{"A", n.input(0)}, {"B", n.input(1)}, {"C", c.output(0)}};
  c.kind = p.batched ? "gemm (batched)" : "gemm";
  c.gemm = s;
  c.params = params.toString();
}

// --- Conv (1-D and 2-D, NCHW) -----------------------------------------------------------------

} // namespace

ConvParams lower::directConvParams(const ConvShape& s) {
  ConvParams p;
  p.workW = int(std::min<int64_t>(4, s.outW()));
  p.wgW = int(std::min<int64_t>(8, (s.outW() + p.workW - 1) / p.workW));
  p.wgH = int(std::min<int64_t>(8, s.outH()));
  return p;
}

EpilogueIndex lower::matMulEpilogueIndex(const Node& n, const MatMulPlan& p, const Value* out) {
  const GemmShape& s = p.shape;
  EpilogueIndex index;
  index.linear = p.batched ? fmt::format("batch * {} + row * {} + col", s.M * s.N, s.N)
                           : fmt::format("row * {} + col", s.N);
  // Plain 2-D products know both coordinates; others derive them from the linear index.
  if (!p.batched && shapeOf(out).size() == 2 && shapeOf(n.input(0)).size() == 2)
    index.coords = {"row", "col"};
  return index;
}

std::optional<ConvShape> lower::convShapeOf(const Node& n, size_t wInput) {
  const auto& a = n.attrs<ConvAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& w = shapeOf(n.input(wInput));
  const Shape& y = shapeOf(n.output(0));
  ConvShape s;
  if (x.size() == 4) {
    s = {x[0],      x[1],           x[2],           x[3],      w[0],      w[2],
         w[3],      a.strides[0],   a.strides[1],   a.pads[0], a.pads[1], a.pads[2],
         a.pads[3], a.dilations[0], a.dilations[1], a.group};
  } else if (x.size() == 3) {
    s = {x[0],         x[1], 1,         x[2], w[0],      1, w[2],           1,
         a.strides[0], 0,    a.pads[0], 0,    a.pads[1], 1, a.dilations[0], a.group};
  } else {
    return std::nullopt;
  }
  // The generators' output size must be the node's (it always is for valid attributes).
  if (s.outW() != y.back() || (x.size() == 4 && s.outH() != y[2])) return std::nullopt;
  return s;
}

namespace {

Support supportsConv(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  size_t r = shapeOf(n.input(0)).size();
  if (r != 3 && r != 4) return no("only 1-D and 2-D convolutions are compiled");
  if (!convShapeOf(n)) return no("pads or strides the generator does not cover");
  return {};
}

void emitConv(GpuLowerContext& c) {
  const Node& n = c.node;
  ConvShape s = *convShapeOf(n);
  bool oneD = shapeOf(n.input(0)).size() == 3;
  std::string pre;
  if (n.input(2)) pre = fmt::format("acc += {}[k];\n", c.pointer("conv_bias", n.input(2)));
  const int64_t K = s.K, OH = s.outH(), OW = s.outW();
  EpilogueIndex index;
  index.linear = fmt::format("((n * {} + k) * {} + oh) * {} + ow", K, OH, OW);
  index.coords = oneD ? std::vector<std::string>{"n", "k", "ow"}
                      : std::vector<std::string>{"n", "k", "oh", "ow"};
  Epilogue epi = c.epilogue(index, pre);
  c.conv = s;
  if (useImplicitGemm(s)) {
    GemmShape gs = implicitGemmShape(s);
    const Value* w = n.input(1);
    GemmParams p = tunedOrDefault(c, gs, panelConvShape(s), w->isConstant(),
                                  [&] { return TuningDb::convKey(s, *c.options.device); });
    if (p.panel)
      c.bindPacked(
          "W", fmt::format("conv panels {} {} g{}", w->id(), p.workN, s.group),
          [w, s, width = p.workN] {
            return packConvWeights(w->constant().data<float>(), s, width);
          },
          fmt::format("{} {} as W^T in panels of {} output channels", w->name(),
                      typeToString(w->type()), p.workN));
    c.kernel = generateConv2DImplicitGemm(c.layer, s, p, epi);
    c.kind = "conv (implicit GEMM)";
    c.gemm = gs;
    c.params = p.toString();
  } else {
    ConvParams p = directConvParams(s);
    c.kernel = generateConv2D(c.layer, s, p, epi);
    c.kind = s.depthwise() ? "conv (depthwise)" : "conv (direct)";
    c.params = p.toString();
  }
  c.bind = {{"X", n.input(0)}, {"W", n.input(1)}, {"Y", c.output(0)}};
}

// --- Pooling ------------------------------------------------------------------------------------

std::optional<PoolShape> poolShapeOf(const Node& n) {
  const auto& a = n.attrs<PoolAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  if (x.size() != 4 || a.kernel.size() != 2) return std::nullopt;
  PoolShape s;
  s.kind = n.kind() == OpKind::MaxPool ? PoolKind::Max : PoolKind::Avg;
  s.N = x[0];
  s.C = x[1];
  s.H = x[2];
  s.W = x[3];
  s.kernelH = a.kernel[0];
  s.kernelW = a.kernel[1];
  s.strideH = a.strides[0];
  s.strideW = a.strides[1];
  s.padTop = a.pads[0];
  s.padLeft = a.pads[1];
  s.padBottom = a.pads[2];
  s.padRight = a.pads[3];
  s.dilationH = a.dilations.empty() ? 1 : a.dilations[0];
  s.dilationW = a.dilations.empty() ? 1 : a.dilations[1];
  s.ceilMode = a.ceilMode;
  s.countIncludePad = a.countIncludePad;
  if (s.outH() != y[2] || s.outW() != y[3]) return std::nullopt;
  return s;
}

Support supportsPool(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  if (n.outputs().size() > 1) return no("the Indices output is not compiled");
  if (!poolShapeOf(n)) return no("only 2-D pooling is compiled");
  return {};
}

void emitPool(GpuLowerContext& c) {
  PoolShape s = *poolShapeOf(c.node);
  PoolParams p;
  p.wgSize = int(std::min<size_t>(64, c.options.maxWorkGroupSize));
  c.kernel = generatePool2D(c.layer, s, p);
  c.bind = {{"X", c.node.input(0)}, {"Y", c.output(0)}};
  c.kind = s.kind == PoolKind::Max ? "max pool" : "average pool";
  c.params = fmt::format("wg {}", p.wgSize);
}

Support supportsGlobalPool(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  return shapeOf(n.input(0)).size() >= 3 ? Support{} : no("input must have spatial dims");
}

void emitGlobalPool(GpuLowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  ReduceParams p;
  p.wgSize = reduceWorkGroup(c, numElements(x, 2));
  PoolKind kind = c.node.kind() == OpKind::GlobalMaxPool ? PoolKind::Max : PoolKind::Avg;
  c.kernel = generateGlobalPool(c.layer, kind, x[0], x[1], numElements(x, 2), p);
  c.bind = {{"X", c.node.input(0)}, {"Y", c.output(0)}};
  c.kind = kind == PoolKind::Max ? "global max pool" : "global average pool";
  c.params = p.toString();
}

// --- Softmax and LayerNormalization
// ---------------------------------------------------------------

} // namespace

void lower::emitTrailingSoftmax(GpuLowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  size_t first = size_t(c.node.attrs<SoftmaxAttrs>().axes.front());
  int64_t rows = numElements(x, 0, first), cols = numElements(x, first);
  ReduceParams p;
  p.wgSize = reduceWorkGroup(c, cols);
  c.kernel = generateSoftmax(c.layer, rows, cols, p);
  c.bind = {{"X", c.node.input(0)}, {"Y", c.output(0)}};
  c.kind = "softmax";
  c.params = p.toString();
}

namespace {

Support supportsLayerNorm(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  if (n.outputs().size() == 2) return no("Mean without InvStdDev is not compiled");
  const Shape& x = shapeOf(n.input(0));
  size_t axis = size_t(n.attrs<LayerNormAttrs>().axis);
  int64_t inner = numElements(x, axis);
  if (numElements(x, 0, axis) < 1 || inner < 1) return no("empty input");
  for (size_t i = 1; i < 3; ++i)
    if (n.input(i) && numElements(shapeOf(n.input(i))) != inner)
      return no("scale and bias must cover the normalized dims exactly");
  return {};
}

void emitLayerNorm(GpuLowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  const auto& a = c.node.attrs<LayerNormAttrs>();
  int64_t rows = numElements(x, 0, size_t(a.axis)), cols = numElements(x, size_t(a.axis));
  ReduceParams p;
  p.wgSize = reduceWorkGroup(c, cols);
  bool beta = c.node.input(2) != nullptr;
  bool stats = c.node.outputs().size() > 1; // Mean and InvStdDev (ONNX's optional outputs)
  c.kernel = generateLayerNorm(c.layer, rows, cols, a.epsilon, beta, p, stats);
  c.bind = {{"X", c.node.input(0)}, {"gamma", c.node.input(1)}, {"Y", c.output(0)}};
  if (beta) c.bind["beta"] = c.node.input(2);
  if (stats) {
    c.bind["Mean"] = c.output(1);
    c.bind["InvStdDev"] = c.output(2);
  }
  c.kind = "layer norm";
  c.params = p.toString();
}

// --- Kernels written here: one work-item per output element ------------------------------------

} // namespace

CodeWriter lower::openPerElementKernel(GpuLowerContext& c, const std::string& what,
                                       const std::vector<std::string>& comment,
                                       const std::vector<std::string>& params, int64_t total) {
  GeneratedKernel& k = c.kernel;
  k.name = kernelIdentifier(c.layer);
  k.range.dims = 1;
  k.range.global = {
      size_t(std::max<int64_t>(1, (total + kMoveWorkGroup - 1) / kMoveWorkGroup) * kMoveWorkGroup),
      1, 1};
  k.range.local = {size_t(kMoveWorkGroup), 1, 1};
  for (const std::string& p : params)
    k.params.push_back(paramName(p));
  CodeWriter w;
  w.line("// Layer: {} ({})", escape::comment(c.layer), escape::comment(what));
  for (const std::string& l : comment)
    w.line("//   {}", l);
  w.line("// One work-item per output element; launch: {}.", k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", kMoveWorkGroup);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(params, int(head.size())));
  w.line("const int idx = get_global_id(0);");
  w.line("if (idx >= {}) return;", total);
  return w;
}

namespace {

/// Source offset of output element `idx` for a strided read: output coordinate d (of `out`)
/// advances the source by srcStride[d]; `base` is the source offset of the first element.
void emitStridedIndex(CodeWriter& w, const Shape& out, const std::vector<int64_t>& srcStride,
                      int64_t base) {
  std::vector<int64_t> os = stridesOf(out);
  std::string src = base ? std::to_string(base) : "";
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1 || srcStride[d] == 0) continue;
    std::string coord = os[d] == 1 ? "idx" : fmt::format("idx / {}", os[d]);
    if (d > 0) coord = fmt::format("({}) % {}", coord, out[d]);
    std::string term = srcStride[d] == 1 ? coord : fmt::format("({}) * {}", coord, srcStride[d]);
    src += src.empty() ? term : " + " + term;
  }
  w.line("const int src = {};", src.empty() ? "0" : src);
}

Support supportsBatchNorm(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  if (n.outputs().size() > 1) return no("training-mode outputs are not compiled");
  return shapeOf(n.input(0)).size() >= 2 ? Support{} : no("input needs a channel dim");
}

void emitBatchNorm(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  int64_t C = x[1], inner = numElements(x, 2), total = numElements(x);
  float eps = n.attrs<NormAttrs>().epsilon;
  CodeWriter w = openPerElementKernel(
      c, "BatchNormalization, inference, f32",
      {fmt::format("Y{0} = (X{0} - mean[c]) / sqrt(var[c] + {1}) * scale[c] + bias[c], c = channel",
                   shapeToString(x), floatLiteral(eps))},
      {"__global const float* restrict X", "__global const float* restrict scale",
       "__global const float* restrict bias", "__global const float* restrict mean",
       "__global const float* restrict var", "__global float* restrict Y"},
      total);
  w.line("const int c = {};",
         inner == 1 ? fmt::format("idx % {}", C) : fmt::format("(idx / {}) % {}", inner, C));
  w.line("Y[idx] = (X[idx] - mean[c]) / sqrt(var[c] + {}) * scale[c] + bias[c];",
         floatLiteral(eps));
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)},    {"scale", n.input(1)}, {"bias", n.input(2)},
            {"mean", n.input(3)}, {"var", n.input(4)},   {"Y", c.output(0)}};
  c.kind = "batch norm";
}

Support anyType(const Node& n) {
  return require32Bit(n);
}

void emitTranspose(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  const auto& perm = n.attrs<TransposeAttrs>().perm;
  std::string t = moveType(n.input(0)->type().dtype);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Transpose, {}", dtypeName(n.input(0)->type().dtype)),
      {fmt::format("X{} -> Y{}, perm [{}]", shapeToString(x), shapeToString(y),
                   fmt::join(perm, ","))},
      {fmt::format("__global const {}* restrict X", t), fmt::format("__global {}* restrict Y", t)},
      numElements(y));
  std::vector<int64_t> xs = stridesOf(x), src(y.size());
  for (size_t d = 0; d < y.size(); ++d)
    src[d] = xs[size_t(perm[d])];
  emitStridedIndex(w, y, src, 0);
  w.line("Y[idx] = X[src];");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "transpose";
}

Support supportsSlice(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitSlice(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<SliceAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = a.outShape;
  std::string t = moveType(n.input(0)->type().dtype);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Slice, {}", dtypeName(n.input(0)->type().dtype)),
      {fmt::format("X{} -> Y{}, starts [{}], steps [{}]", shapeToString(x), shapeToString(y),
                   fmt::join(a.starts, ","), fmt::join(a.steps, ","))},
      {fmt::format("__global const {}* restrict X", t), fmt::format("__global {}* restrict Y", t)},
      numElements(y));
  std::vector<int64_t> xs = stridesOf(x), src(y.size());
  int64_t base = 0;
  for (size_t d = 0; d < y.size(); ++d) {
    src[d] = xs[d] * a.steps[d];
    base += a.starts[d] * xs[d];
  }
  emitStridedIndex(w, y, src, base);
  w.line("Y[idx] = X[src];");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "slice";
}

Support supportsConcat(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  if (numElements(shapeOf(n.output(0))) == 0) return no("empty output");
  return n.inputs().size() <= 32 ? Support{} : no("more than 32 inputs");
}

void emitConcat(GpuLowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& y = shapeOf(n.output(0));
  std::string t = moveType(n.output(0)->type().dtype);
  int64_t yrow = numElements(y, axis);
  std::vector<std::string> params;
  std::string inputs;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    params.push_back(fmt::format("__global const {}* restrict X{}", t, i));
    inputs += fmt::format("{}X{}{}", i ? ", " : "", i, shapeToString(shapeOf(n.input(i))));
  }
  params.push_back(fmt::format("__global {}* restrict Y", t));
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Concat, {}", dtypeName(n.output(0)->type().dtype)),
      {fmt::format("Y{} = concat({}) along axis {}", shapeToString(y), inputs, axis)}, params,
      numElements(y));
  w.line("const int o = idx / {}, p = idx % {}; // row of the dims before the axis, position", yrow,
         yrow);
  int64_t off = 0;
  bool first = true;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    int64_t row = numElements(shapeOf(n.input(i)), axis);
    c.bind[fmt::format("X{}", i)] = n.input(i);
    if (row == 0) continue;
    w.line("{}if (p < {}) Y[idx] = X{}[o * {} + p - {}];", first ? "" : "else ", off + row, i, row,
           off);
    first = false;
    off += row;
  }
  w.close();
  c.kernel.source = w.str();
  c.bind["Y"] = c.output(0);
  c.kind = "concat";
}

Support supportsSplit(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  if (numElements(shapeOf(n.input(0))) == 0) return no("empty input");
  return n.outputs().size() <= 32 ? Support{} : no("more than 32 outputs");
}

void emitSplit(GpuLowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<SplitAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  std::string t = moveType(n.input(0)->type().dtype);
  int64_t xrow = numElements(x, axis);
  std::vector<std::string> params = {fmt::format("__global const {}* restrict X", t)};
  std::string outs;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    params.push_back(fmt::format("__global {}* restrict Y{}", t, i));
    outs += fmt::format("{}Y{}{}", i ? ", " : "", i, shapeToString(shapeOf(n.output(i))));
  }
  // One work-item per input element: each goes to the output that owns its position.
  CodeWriter w =
      openPerElementKernel(c, fmt::format("Split, {}", dtypeName(n.input(0)->type().dtype)),
                           {fmt::format("X{} -> {} along axis {}", shapeToString(x), outs, axis)},
                           params, numElements(x));
  w.line("const int o = idx / {}, p = idx % {};", xrow, xrow);
  c.bind["X"] = n.input(0);
  int64_t off = 0;
  bool first = true;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    int64_t row = numElements(shapeOf(n.output(i)), axis);
    c.bind[fmt::format("Y{}", i)] = c.output(i);
    if (row == 0) continue;
    w.line("{}if (p < {}) Y{}[o * {} + p - {}] = X[idx];", first ? "" : "else ", off + row, i, row,
           off);
    first = false;
    off += row;
  }
  w.close();
  c.kernel.source = w.str();
  c.kind = "split";
}

Support supportsGather(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(1)->type().dtype;
  if (t != DType::I64 && t != DType::I32) return no("indices must be int64 or int32");
  if (numElements(shapeOf(n.output(0))) == 0) return no("empty output");
  // Constant indices are checked here; run-time ones by the kernel, whose failed check fails
  // the run naming the node (the status buffer), as the reference kernel rejects them.
  const Value* idx = n.input(1);
  if (!idx->isConstant()) return {};
  int64_t dim = shapeOf(n.input(0))[size_t(n.attrs<AxisAttrs>().axis)];
  for (int64_t k = 0; k < idx->constant().numElements(); ++k) {
    int64_t v = idx->constant().getInt(k);
    if (v < -dim || v >= dim) return no("an index is out of range (the host reports it)");
  }
  return {};
}

void emitGather(GpuLowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  int64_t dim = x[axis], inner = numElements(x, axis + 1);
  int64_t count = numElements(shapeOf(n.input(1)));
  std::string t = moveType(n.input(0)->type().dtype);
  std::string it = n.input(1)->type().dtype == DType::I64 ? "long" : "int";
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Gather, {}", dtypeName(n.input(0)->type().dtype)),
      {fmt::format("Y{} = X{}[indices{}] along axis {}", shapeToString(y), shapeToString(x),
                   shapeToString(shapeOf(n.input(1))), axis),
       n.input(1)->isConstant()
           ? "constant indices, checked in range at compile time; negative ones count from the end"
           : "run-time indices, checked in range (the run fails naming the node); negative ones "
             "count from the end"},
      {fmt::format("__global const {}* restrict X", t),
       fmt::format("__global const {}* restrict I", it), fmt::format("__global {}* restrict Y", t)},
      numElements(y));
  w.line("const int i = idx % {}, j = (idx / {}) % {}, o = idx / {};", inner, inner, count,
         inner * count);
  w.line("long ix = I[j];");
  if (!n.input(1)->isConstant()) {
    std::string flag = c.check("an index is out of range");
    w.open("if (ix < -{} || ix >= {})", dim, dim);
    w.line("*{} = 1;", flag);
    w.line("return;");
    w.close();
  }
  w.line("if (ix < 0) ix += {};", dim);
  w.line("Y[idx] = X[(o * {} + (int)ix) * {} + i];", dim, inner);
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"I", n.input(1)}, {"Y", c.output(0)}};
  c.kind = "gather";
}

std::unordered_map<OpKind, GpuLowering> table() {
  return {
      {OpKind::Gemm, {supportsGemm, emitGemm, true}},
      {OpKind::MatMul, {supportsMatMul, emitMatMul, true}},
      {OpKind::Conv, {supportsConv, emitConv, true}},
      {OpKind::MaxPool, {supportsPool, emitPool, false}},
      {OpKind::AveragePool, {supportsPool, emitPool, false}},
      {OpKind::GlobalAveragePool, {supportsGlobalPool, emitGlobalPool, false}},
      {OpKind::GlobalMaxPool, {supportsGlobalPool, emitGlobalPool, false}},
      {OpKind::LayerNormalization, {supportsLayerNorm, emitLayerNorm, false}},
      {OpKind::BatchNormalization, {supportsBatchNorm, emitBatchNorm, false}},
      {OpKind::Transpose, {anyType, emitTranspose, false}},
      {OpKind::Slice, {supportsSlice, emitSlice, false}},
      {OpKind::Concat, {supportsConcat, emitConcat, false}},
      {OpKind::Split, {supportsSplit, emitSplit, false}},
      {OpKind::Gather, {supportsGather, emitGather, false}},
  };
}

std::unordered_map<OpKind, GpuLowering> fullTable() {
  std::unordered_map<OpKind, GpuLowering> t = table();
  addReduceLowerings(t);
  addIndexLowerings(t);
  addQuantLowerings(t);
  return t;
}

} // namespace

const GpuLowering* findGpuLowering(OpKind k) {
  static const std::unordered_map<OpKind, GpuLowering> t = fullTable();
  auto it = t.find(k);
  return it == t.end() ? nullptr : &it->second;
}

bool useImplicitGemm(const ConvShape& s) {
  // Depthwise and thin convolutions (few output channels or few taps per output) have no GEMM
  // to speak of: the direct kernel's register blocking serves them better.
  return !s.depthwise() && s.K / s.group >= 16 && (s.C / s.group) * s.R * s.S >= 16;
}

GemmShape implicitGemmShape(const ConvShape& s) {
  GemmShape g;
  g.M = s.K / s.group;
  g.N = s.outH() * s.outW();
  g.K = (s.C / s.group) * s.R * s.S;
  g.batch = s.N * s.group;
  g.broadcastA = s.group == 1; // one weight matrix for every image
  return g;
}

} // namespace triad::gpu
