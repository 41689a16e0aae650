// GPU lowerings of indexing ops and losses, one work-item per output element: Pad (constant,
// edge, reflect, wrap), Resize/Upsample (the reference's taps as tables), Trilu, Dropout
// (inference: a copy and an all-true mask), GatherElements with run-time indices, and the losses
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Indices read from tensors at run time are
// checked in range; a failed check sets the step's status flag and the run fails naming the node
// (GpuLowerContext::check), as the reference kernels reject them. Elements move by size
// (lower::moveType), whatever their type.
#include "gpu/CodeWriter.h"
#include "gpu/GpuLowering.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Loss.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Reduce.h"
#include "ir/ops/Scatter.h"

#include <cstring>

namespace triad::gpu {

using namespace ir;
using namespace lower;

namespace {

/// Statements declaring `name` = coordinate d of linear index `idx` in `shape`.
std::string coordOf(const Shape& shape, size_t d, const std::string& idx = "idx") {
  int64_t inner = numElements(shape, d + 1);
  std::string c = inner == 1 ? idx : fmt::format("{} / {}", idx, inner);
  return d == 0 ? c : fmt::format("({}) % {}", c, shape[d]);
}

/// The bits of element 0 of `t` as a literal of its move type (a padding value of any type).
std::string bitsLiteral(const Tensor& t) {
  uint64_t bits = 0;
  std::memcpy(&bits, t.raw(), std::min<size_t>(sizeof bits, dtypeSize(t.dtype())));
  return fmt::format("(({})0x{:x}UL)", moveType(t.dtype()), bits);
}

// --- Pad ----------------------------------------------------------------------------------------

Support supportsPad(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitPad(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<PadAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  bool empty = numElements(x) == 0; // constant mode only (the shape rule): all padding
  std::vector<std::string> params;
  if (!empty) params.push_back(fmt::format("__global const {}* restrict X", T));
  params.push_back(fmt::format("__global {}* restrict Y", T));
  std::string value = bitsLiteral(a.value);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Pad, {}, {} mode", dtypeName(t), toString(a.mode)),
      {fmt::format("X{} -> Y{}, pads [{}]{}", shapeToString(x), shapeToString(y),
                   fmt::join(a.pads, ","),
                   a.mode == PadMode::Constant ? ", value bits " + value : "")},
      params, numElements(y));
  c.bind = {{"Y", c.output(0)}};
  c.kind = "pad";
  if (empty) {
    w.line("Y[idx] = {};", value);
    w.close();
    c.kernel.source = w.str();
    return;
  }
  c.bind["X"] = n.input(0);
  std::vector<int64_t> st = stridesOf(x);
  size_t r = x.size();
  w.line("int src = 0;");
  for (size_t d = 0; d < r; ++d) {
    if (y[d] == 1 && x[d] == 1 && a.pads[d] == 0) continue;
    int64_t dim = x[d], before = a.pads[d];
    w.open("");
    w.line("int i = {}{};", coordOf(y, d),
           before == 0  ? ""
           : before > 0 ? fmt::format(" - {}", before)
                        : fmt::format(" + {}", -before));
    bool grows = a.pads[d] > 0 || a.pads[d + r] > 0;
    if (grows) {
      switch (a.mode) {
      case PadMode::Constant:
        w.line("if (i < 0 || i >= {}) {{ Y[idx] = {}; return; }}", dim, value);
        break;
      case PadMode::Edge:
        w.line("i = clamp(i, 0, {});", dim - 1);
        break;
      case PadMode::Wrap:
        w.line("i = ((i % {0}) + {0}) % {0};", dim);
        break;
      case PadMode::Reflect:
        if (dim == 1) {
          w.line("i = 0;");
        } else {
          int64_t period = 2 * (dim - 1);
          w.line("i = ((i % {0}) + {0}) % {0};", period);
          w.line("if (i >= {}) i = {} - i;", dim, period);
        }
        break;
      }
    }
    w.line("src += i{};", st[d] == 1 ? "" : fmt::format(" * {}", st[d]));
    w.close();
  }
  w.line("Y[idx] = X[src];");
  w.close();
  c.kernel.source = w.str();
}

// --- Trilu, Dropout -----------------------------------------------------------------------------

Support supportsTrilu(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitTrilu(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<TriluAttrs>();
  const Shape& x = shapeOf(n.input(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  int64_t rows = x[x.size() - 2], cols = x.back();
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Trilu, {}", dtypeName(t)),
      {fmt::format("Y{0} = X{0} where col - row {1} {2} in the last two dims, else 0",
                   shapeToString(x), a.upper ? ">=" : "<=", a.k)},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(x));
  w.line("const long col = idx % {}, row = (idx / {}) % {};", cols, cols, rows);
  w.line("Y[idx] = col - row {} {} ? X[idx] : ({})0;", a.upper ? ">=" : "<=", a.k, T);
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "trilu";
}

Support supportsDropout(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitDropout(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  bool mask = n.outputs().size() > 1;
  std::vector<std::string> params = {fmt::format("__global const {}* restrict X", T),
                                     fmt::format("__global {}* restrict Y", T)};
  if (mask) params.push_back("__global uchar* restrict mask");
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Dropout (inference), {}", dtypeName(t)),
      {fmt::format("Y{0} = X{0}{1}", shapeToString(x), mask ? ", mask all true" : "")}, params,
      numElements(x));
  w.line("Y[idx] = X[idx];");
  if (mask) w.line("mask[idx] = 1;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  if (mask) c.bind["mask"] = c.output(1);
  c.kind = "dropout";
}

// --- GatherElements -----------------------------------------------------------------------------

Support supportsGatherElements(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(1)->type().dtype;
  if (t != DType::I64 && t != DType::I32) return no("indices must be int64 or int32");
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitGatherElements(GpuLowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  std::string it = clTypeName(n.input(1)->type().dtype);
  int64_t dim = x[axis];
  CodeWriter w = openPerElementKernel(
      c, fmt::format("GatherElements, {}", dtypeName(t)),
      {fmt::format("Y{0}[i] = X{1}[i with coordinate {2} = indices{0}[i]]; run-time indices, "
                   "checked in range",
                   shapeToString(y), shapeToString(x), axis)},
      {fmt::format("__global const {}* restrict X", T),
       fmt::format("__global const {}* restrict I", it), fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  std::string flag = c.check("an index is out of range");
  w.line("long ix = I[idx];");
  w.line("if (ix < -{0} || ix >= {0}) {{ *{1} = 1; return; }}", dim, flag);
  w.line("if (ix < 0) ix += {};", dim);
  std::vector<int64_t> st = stridesOf(x);
  std::string src;
  for (size_t d = 0; d < y.size(); ++d) {
    std::string coord = d == axis ? std::string("(int)ix") : fmt::format("({})", coordOf(y, d));
    if (d != axis && y[d] == 1) continue;
    std::string term = st[d] == 1 ? coord : fmt::format("{} * {}", coord, st[d]);
    src += src.empty() ? term : " + " + term;
  }
  w.line("Y[idx] = X[{}];", src);
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"I", n.input(1)}, {"Y", c.output(0)}};
  c.kind = "gather elements";
}

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss -----------------------------------------

Support supportsLoss(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::F16)
    return no(fmt::format("{} elements", dtypeName(t)));
  if (numElements(shapeOf(n.input(0))) == 0) return no("empty input");
  return {};
}

void emitLoss(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<LossAttrs>();
  bool sce = n.kind() == OpKind::SoftmaxCrossEntropyLoss;
  DType t = n.input(0)->type().dtype;
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], D = numElements(x, 2), E = N * D;
  std::string T = clTypeName(t), R = t == DType::F64 ? "double" : "float";
  auto load = [&](const std::string& v) {
    return t == DType::F16 ? fmt::format("triad_half_to_float({})", v) : v;
  };
  auto store = [&](const std::string& v) {
    return t == DType::F16 ? fmt::format("triad_half_from_float({})", v) : v;
  };
  bool weights = n.input(2) != nullptr, logProb = sce && n.outputs().size() > 1;
  bool perElement = a.reduction == LossReduction::None;
  std::vector<std::string> params = {
      fmt::format("__global const {}* restrict X", T),
      fmt::format("__global const {}* restrict target", clTypeName(n.input(1)->type().dtype))};
  if (weights) params.push_back(fmt::format("__global const {}* restrict weight", T));
  params.push_back(fmt::format("__global {}* restrict Y", T));
  if (logProb) params.push_back(fmt::format("__global {}* restrict logp", T));
  std::string ignore =
      a.ignoreIndex ? fmt::format(", ignore_index {}", *a.ignoreIndex) : std::string();
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", opKindName(n.kind()), dtypeName(t)),
      {fmt::format("{}[N={}, C={}, D={}], target[{}, {}]{}, reduction {}{}: loss = -{}[n, t, d] "
                   "* w[t], in {}",
                   sce ? "scores" : "log-probabilities", N, C, D, N, D,
                   weights ? ", weight[C]" : "", toString(a.reduction), ignore,
                   sce ? "log_softmax(scores)" : "X", R),
       perElement ? "one work-item per (n, d)"
                  : "one work-item sums every (n, d) in order (the reduction is a scalar)"},
      params, perElement ? E : 1);
  std::string flag = c.check("a target value is out of range of the classes");
  w.line("{} sum = 0, wsum = 0;", R);
  if (perElement)
    w.open("for (int e = idx; e <= idx; ++e)");
  else
    w.open("for (int e = 0; e < {}; ++e)", E);
  w.line("const int n = e / {}, d = e % {}, base = n * {} + d;", D, D, C * D);
  w.line("const long cls = target[e];");
  std::string at = "X[base + cls * " + std::to_string(D) + "]";
  if (sce) { // log_softmax over the classes of (n, d)
    w.line("{} mx = {};", R, load("X[base]"));
    w.line("for (int k = 1; k < {}; ++k) mx = fmax(mx, ({}){});", C, R,
           load(fmt::format("X[base + k * {}]", D)));
    w.line("{} s = 0;", R);
    w.line("for (int k = 0; k < {}; ++k) s += exp({} - mx);", C,
           load(fmt::format("X[base + k * {}]", D)));
    w.line("const {} lse = mx + log(s);", R);
    if (logProb)
      w.line("for (int k = 0; k < {0}; ++k) logp[base + k * {1}] = {2};", C, D,
             store(load(fmt::format("X[base + k * {}]", D)) + " - lse"));
  }
  w.line("{} loss = 0, wt = 0;", R);
  w.open("{}", a.ignoreIndex ? fmt::format("if (cls != {})", *a.ignoreIndex) : std::string());
  w.line("if (cls < 0 || cls >= {}) {{ *{} = 1; return; }}", C, flag);
  w.line("wt = {};", weights ? load("weight[cls]") : "1");
  w.line("loss = -({}{}) * wt;", load(at), sce ? " - lse" : "");
  w.close();
  if (perElement) w.line("Y[e] = {};", store("loss"));
  w.line("sum += loss;");
  w.line("wsum += wt;");
  w.close();
  if (a.reduction == LossReduction::Sum) w.line("Y[0] = {};", store("sum"));
  if (a.reduction == LossReduction::Mean) // 0/0 (every element ignored) gives NaN
    w.line("Y[0] = {};", store("sum / wsum"));
  if (perElement) w.line("(void)sum; (void)wsum;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"target", n.input(1)}, {"Y", c.output(0)}};
  if (weights) c.bind["weight"] = n.input(2);
  if (logProb) c.bind["logp"] = c.output(1);
  c.kind = "loss";
}

// --- Resize, Upsample ----------------------------------------------------------------------------

Support supportsResize(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

/// The reference's per-axis taps (ops::resizeAxisTaps: coordinate mapping, nearest rounding,
/// linear/cubic/antialias weights) become `__constant` tables in CSR form (per output coordinate
/// the range of its taps, each an input offset and a weight); the kernel sums the tensor product
/// of each output element's taps. Axes that keep their size one to one need no table.
void emitResize(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ResizeAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  size_t r = x.size();
  std::vector<int64_t> xs = stridesOf(x);
  std::string name = kernelIdentifier(c.layer);
  CodeWriter tables;
  tables.line("// Resize taps of layer {} (from the reference's per-axis coordinate mapping).",
              escape::comment(c.layer));
  std::vector<ops::ResizeAxisTable> tabs = ops::resizeAxisTables(a, x, y);
  for (size_t d = 0; d < r; ++d) {
    const ops::ResizeAxisTable& t = tabs[d];
    if (t.identity) continue;
    size_t k = t.offsets.size();
    std::vector<std::string> weights;
    for (double wt : t.weights)
      weights.push_back(floatLiteral(float(wt)));
    tables.line("// axis {}: {} -> {}, {} taps", d, x[d], y[d], k);
    tables.line("__constant int {}_s{}[] = {{{}}};", name, d, fmt::join(t.starts, ", "));
    // No taps (every coordinate extrapolates): one-element tables (C has no empty arrays).
    tables.line("__constant int {}_i{}[] = {{{}}};", name, d,
                k ? fmt::format("{}", fmt::join(t.offsets, ", ")) : "0");
    tables.line("__constant float {}_w{}[] = {{{}}};", name, d,
                k ? fmt::format("{}", fmt::join(weights, ", ")) : "0");
    if (t.anyOutside)
      tables.line("__constant uchar {}_e{}[] = {{{}}};", name, d, fmt::join(t.outside, ", "));
  }
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, f32, {} mode", opKindName(n.kind()), toString(a.mode)),
      {fmt::format("X{} -> Y{}: weighted sums of taps, in float", shapeToString(x),
                   shapeToString(y))},
      {"__global const float* restrict X", "__global float* restrict Y"}, numElements(y));
  std::string off = "0", weight, extrap;
  for (size_t d = 0; d < r; ++d) {
    if (y[d] == 1 && tabs[d].identity) continue;
    w.line("const int c{} = {};", d, coordOf(y, d));
    if (tabs[d].anyOutside)
      extrap += fmt::format("{}{}_e{}[c{}]", extrap.empty() ? "" : " || ", name, d, d);
  }
  if (!extrap.empty())
    w.line("if ({}) {{ Y[idx] = {}; return; }} // outside the crop: extrapolation value", extrap,
           floatLiteral(a.extrapolationValue));
  w.line("float acc = 0.0f;");
  int opened = 0;
  for (size_t d = 0; d < r; ++d) {
    if (y[d] == 1 && tabs[d].identity) continue;
    if (tabs[d].identity) {
      off += fmt::format(" + c{} * {}", d, xs[d]);
      continue;
    }
    w.open("for (int k{0} = {1}_s{0}[c{0}]; k{0} < {1}_s{0}[c{0} + 1]; ++k{0})", d, name);
    ++opened;
    off += fmt::format(" + {}_i{}[k{}]", name, d, d);
    weight += fmt::format("{}_w{}[k{}] * ", name, d, d);
  }
  w.line("acc += {}X[{}];", weight, off);
  for (int i = 0; i < opened; ++i)
    w.close();
  w.line("Y[idx] = acc;");
  w.close();
  c.kernel.source = tables.str() + w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "resize";
}

// --- Tile, DepthToSpace, SpaceToDepth, OneHot
// ------------------------------------------------------

Support supportsNonEmpty(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  for (Value* v : n.inputs())
    if (v && numElements(shapeOf(v)) == 0) return no("empty input");
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitTile(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Tile, {}", dtypeName(t)),
      {fmt::format("Y{}[o] = X{}[o mod X's shape]", shapeToString(y), shapeToString(x))},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  std::vector<int64_t> st = stridesOf(x);
  std::string src;
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 1) continue;
    std::string term = fmt::format("(({}) % {})", coordOf(y, d), x[d]);
    if (st[d] != 1) term += fmt::format(" * {}", st[d]);
    src += src.empty() ? term : " + " + term;
  }
  w.line("Y[idx] = X[{}];", src.empty() ? "0" : src);
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "tile";
}

Support supportsBlock(const Node& n) {
  if (auto s = supportsNonEmpty(n); !s.ok) return s;
  return shapeOf(n.input(0)).size() == 4 ? Support{} : no("input must be 4-D");
}

/// DepthToSpace (DCR, CRD) and SpaceToDepth: Y[n, c, h, w] reads X at the rearranged position.
void emitBlock(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<BlockAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  int64_t b = a.blocksize;
  bool d2s = n.kind() == OpKind::DepthToSpace;
  std::string how(toString(a.mode));
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", opKindName(n.kind()), dtypeName(t)),
      {fmt::format("X{} -> Y{}, block {}, {}", shapeToString(x), shapeToString(y), b, how)},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  w.line("const int n = {}, c = {}, h = {}, w = {};", coordOf(y, 0), coordOf(y, 1), coordOf(y, 2),
         coordOf(y, 3));
  if (d2s) { // Y[n, c, h*b+i, w*b+j] = X[n, channel(c, i, j), h, w]
    int64_t Cy = y[1];
    w.line("const int i = h % {0}, j = w % {0};", b);
    std::string ch = a.mode == DepthToSpaceMode::DCR ? fmt::format("(i * {} + j) * {} + c", b, Cy)
                                                     : fmt::format("(c * {} + i) * {} + j", b, b);
    w.line("Y[idx] = X[((n * {} + {}) * {} + h / {}) * {} + w / {}];", x[1], ch, x[2], b, x[3], b);
  } else { // Y[n, channel(cx, i, j), h, w] = X[n, cx, h*b+i, w*b+j]
    int64_t Cx = x[1];
    if (a.mode == DepthToSpaceMode::DCR) // channel (i*b + j)*C + cx
      w.line("const int cx = c % {}, ij = c / {}, i = ij / {}, j = ij % {};", Cx, Cx, b, b);
    else // channel (cx*b + i)*b + j
      w.line("const int cx = c / {}, ij = c % {}, i = ij / {}, j = ij % {};", b * b, b * b, b, b);
    w.line("Y[idx] = X[((n * {} + cx) * {} + h * {} + i) * {} + w * {} + j];", Cx, x[2], b, x[3],
           b);
  }
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = d2s ? "depth to space" : "space to depth";
}

Support supportsOneHot(const Node& n) {
  if (auto s = supportsNonEmpty(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (!isInteger(t) && t != DType::F32) return no(fmt::format("{} indices", dtypeName(t)));
  return numElements(shapeOf(n.input(1))) == 2 ? Support{} : no("values must have 2 elements");
}

void emitOneHot(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<OneHotAttrs>();
  const Shape& is = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType it = n.input(0)->type().dtype;
  std::string T = moveType(n.input(1)->type().dtype);
  int64_t inner = numElements(is, size_t(a.axis)), depth = a.depth;
  CodeWriter w = openPerElementKernel(
      c, fmt::format("OneHot, {} indices", dtypeName(it)),
      {fmt::format("Y{} = values[1] where the class (axis {}) is indices{}, else values[0]; "
                   "indices outside [-{}, {}) give values[0]",
                   shapeToString(y), a.axis, shapeToString(is), depth, depth)},
      {fmt::format("__global const {}* restrict I", clTypeName(it)),
       fmt::format("__global const {}* restrict values", T),
       fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  w.line("const int i = idx % {}, k = (idx / {}) % {}, o = idx / {};", inner, inner, depth,
         inner * depth);
  if (it == DType::F32) {
    w.line("const float v = I[o * {} + i];", inner);
    w.line("const bool valid = v > {}.0f && v < {}.0f; // else off (NaN too)", -depth - 1, depth);
    w.line("long cls = valid ? (long)v : 0;");
  } else if (isSignedInteger(it)) {
    w.line("long cls = (long)I[o * {} + i];", inner);
    w.line("const bool valid = cls >= -{} && cls < {};", depth, depth);
  } else {
    w.line("const bool valid = I[o * {} + i] < {};", inner, depth);
    w.line("long cls = valid ? (long)I[o * {} + i] : 0;", inner);
  }
  w.line("if (cls < 0) cls += {};", depth);
  w.line("Y[idx] = values[valid && cls == k ? 1 : 0];");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"I", n.input(0)}, {"values", n.input(1)}, {"Y", c.output(0)}};
  c.kind = "one hot";
}

// --- CumSum -------------------------------------------------------------------------------------

Support supportsCumSum(const Node& n) {
  if (auto s = supportsNonEmpty(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (t == DType::F16 || t == DType::Bool) return no(fmt::format("{} elements", dtypeName(t)));
  return {};
}

void emitCumSum(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<CumSumAttrs>();
  const Shape& x = shapeOf(n.input(0));
  DType t = n.input(0)->type().dtype;
  std::string T = clTypeName(t);
  size_t axis = size_t(a.axis);
  int64_t dim = x[axis], inner = numElements(x, axis + 1);
  bool product = n.kind() == OpKind::CumProd;
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", opKindName(n.kind()), dtypeName(t)),
      {fmt::format("X{} along axis {}{}{}; one work-item per line, accumulated in {}",
                   shapeToString(x), axis, a.exclusive ? ", exclusive" : "",
                   a.reverse ? ", reverse" : "", T)},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(x) / dim);
  w.line("const int base = (idx / {}) * {} + idx % {};", inner, dim * inner, inner);
  // Integers wrap in the unsigned type of their width, as the interpreter.
  // (the reference's CumSum/CumProd take 32- and 64-bit integers only).
  std::string A = isInteger(t) ? clTypeName(dtypeSize(t) == 8 ? DType::U64 : DType::U32) : T;
  w.line("{} acc = {};", A, product ? 1 : 0);
  w.open("for (int step = 0; step < {}; ++step)", dim);
  w.line("const int at = base + {} * {};", a.reverse ? fmt::format("({} - step)", dim - 1) : "step",
         inner);
  w.line("const {} v = X[at];", T);
  std::string combine = fmt::format("acc = ({})(acc {} ({})v);", A, product ? "*" : "+", A);
  if (a.exclusive) {
    w.line("Y[at] = ({})acc;", T);
    w.line("{}", combine);
  } else {
    w.line("{}", combine);
    w.line("Y[at] = ({})acc;", T);
  }
  w.close();
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "cumsum";
}

// --- ConvTranspose
// ----------------------------------------------------------------------------------

Support supportsConvTranspose(const Node& n) {
  if (auto s = both(requireF32(n), supportsNonEmpty(n)); !s.ok) return s;
  return {};
}

/// One work-item per output element gathers the input positions that feed it: along each
/// spatial dim, o = i * stride - pad + k * dilation.
void emitConvTranspose(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ConvTransposeAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  size_t k = a.kernel.size();
  int64_t C = x[1], M = y[1], Cg = C / a.group, Mg = M / a.group;
  bool bias = n.input(2) != nullptr;
  std::vector<std::string> params = {"__global const float* restrict X",
                                     "__global const float* restrict W"};
  if (bias) params.push_back("__global const float* restrict B");
  params.push_back("__global float* restrict Y");
  CodeWriter w = openPerElementKernel(
      c, "ConvTranspose, f32",
      {fmt::format("X{} * W{} -> Y{}, strides [{}], pads [{}], dilations [{}], group {}",
                   shapeToString(x), shapeToString(shapeOf(n.input(1))), shapeToString(y),
                   fmt::join(a.strides, ","), fmt::join(a.pads, ","), fmt::join(a.dilations, ","),
                   a.group)},
      params, numElements(y));
  w.line("const int n = {}, m = {};", coordOf(y, 0), coordOf(y, 1));
  for (size_t d = 0; d < k; ++d)
    w.line("const int o{} = {};", d, coordOf(y, d + 2));
  w.line("const int g = m / {}, mg = m % {};", Mg, Mg);
  w.line("float acc = {};", bias ? "B[m]" : "0.0f");
  int64_t inSize = numElements(x, 2), taps = numElements(a.kernel);
  w.open("for (int c = g * {0}; c < (g + 1) * {0}; ++c)", Cg);
  w.line("__global const float* restrict xc = X + (n * {} + c) * {};", C, inSize);
  w.line("__global const float* restrict wc = W + (c * {} + mg) * {};", Mg, taps);
  std::vector<int64_t> ist(k), kst(k);
  for (size_t d = 0; d < k; ++d) {
    ist[d] = numElements(x, d + 3);
    kst[d] = numElements(a.kernel, d + 1);
  }
  std::string xoff, woff;
  for (size_t d = 0; d < k; ++d) {
    w.open("for (int k{0} = 0; k{0} < {1}; ++k{0})", d, a.kernel[d]);
    w.line("const int t{0} = o{0} + {1} - k{0} * {2};", d, a.pads[d], a.dilations[d]);
    if (a.strides[d] != 1)
      w.line("if (t{0} < 0 || t{0} % {1} != 0 || t{0} / {1} >= {2}) continue;", d, a.strides[d],
             x[d + 2]);
    else
      w.line("if (t{0} < 0 || t{0} >= {1}) continue;", d, x[d + 2]);
    std::string i =
        a.strides[d] == 1 ? fmt::format("t{}", d) : fmt::format("t{} / {}", d, a.strides[d]);
    xoff += fmt::format("{}{} * {}", xoff.empty() ? "" : " + ", i, ist[d]);
    woff += fmt::format("{}k{} * {}", woff.empty() ? "" : " + ", d, kst[d]);
  }
  w.line("acc += xc[{}] * wc[{}];", xoff, woff);
  for (size_t d = 0; d < k; ++d)
    w.close();
  w.close();
  w.line("Y[idx] = acc;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"W", n.input(1)}, {"Y", c.output(0)}};
  if (bias) c.bind["B"] = n.input(2);
  c.kind = "conv transpose";
}

// --- ScatterElements, Scatter, ScatterND, Compress
// --------------------------------------------------

Support supportsScatter(const Node& n) {
  if (auto s = supportsNonEmpty(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  ScatterReduction r = n.kind() == OpKind::ScatterND ? n.attrs<ScatterNDAttrs>().reduction
                                                     : n.attrs<ScatterElementsAttrs>().reduction;
  if (r != ScatterReduction::None && t != DType::F32 && t != DType::F64 &&
      !(isInteger(t) && t != DType::Bool))
    return no(fmt::format("reduction {} on {} elements", toString(r), dtypeName(t)));
  return {};
}

/// One work-item per output element starts from data and applies, in order, every update that
/// targets it (the reference's sequential semantics, duplicates included): each work-item scans
/// all updates, so the cost is output size x updates (fine for the index-sized scatters models
/// use; a sort-based kernel would be needed for large ones).
void emitScatter(GpuLowerContext& c) {
  const Node& n = c.node;
  bool nd = n.kind() == OpKind::ScatterND;
  ScatterReduction r =
      nd ? n.attrs<ScatterNDAttrs>().reduction : n.attrs<ScatterElementsAttrs>().reduction;
  const Shape& x = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  DType t = n.input(0)->type().dtype;
  std::string T = r == ScatterReduction::None ? moveType(t) : clTypeName(t);
  std::string it = clTypeName(n.input(1)->type().dtype);
  std::vector<int64_t> st = stridesOf(x);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}, reduction {}", opKindName(n.kind()), dtypeName(t), toString(r)),
      {fmt::format("Y{0} = data{0} with updates{1} at indices{2}, applied in order; run-time "
                   "indices, checked in range",
                   shapeToString(x), shapeToString(shapeOf(n.input(2))), shapeToString(is)),
       "each work-item scans every update for those that target its element"},
      {fmt::format("__global const {}* restrict X", T),
       fmt::format("__global const {}* restrict I", it),
       fmt::format("__global const {}* restrict U", T), fmt::format("__global {}* restrict Y", T)},
      numElements(x));
  std::string flag = c.check("an index is out of range");
  auto combine = [&](const std::string& u) -> std::string {
    switch (r) {
    case ScatterReduction::None:
      return u;
    case ScatterReduction::Add:
      return fmt::format("({})(acc + {})", T, u);
    case ScatterReduction::Mul:
      return fmt::format("({})(acc * {})", T, u);
    case ScatterReduction::Max:
      return fmt::format("acc < {0} ? {0} : acc", u);
    case ScatterReduction::Min:
      return fmt::format("{0} < acc ? {0} : acc", u);
    }
    return u;
  };
  w.line("{} acc = X[idx];", T);
  if (nd) {
    int64_t k = is.back(), tuples = numElements(is) / k, slice = numElements(x, size_t(k));
    w.open("for (int u = 0; u < {}; ++u)", tuples);
    w.line("int off = 0;");
    for (int64_t j = 0; j < k; ++j) {
      w.line("long i{} = I[u * {} + {}];", j, k, j);
      w.line("if (i{0} < -{1} || i{0} >= {1}) {{ *{2} = 1; return; }}", j, x[size_t(j)], flag);
      w.line("off += (int)(i{0} < 0 ? i{0} + {1} : i{0}) * {2};", j, x[size_t(j)], st[size_t(j)]);
    }
    w.line("if (idx >= off && idx < off + {0}) acc = {1};", slice,
           combine(fmt::format("U[u * {} + idx - off]", slice)));
  } else {
    size_t axis = size_t(n.attrs<ScatterElementsAttrs>().axis);
    w.open("for (int u = 0; u < {}; ++u)", numElements(is));
    w.line("long ix = I[u];");
    w.line("if (ix < -{0} || ix >= {0}) {{ *{1} = 1; return; }}", x[axis], flag);
    w.line("if (ix < 0) ix += {};", x[axis]);
    std::string off;
    for (size_t d = 0; d < is.size(); ++d) {
      std::string coord =
          d == axis ? std::string("(int)ix") : fmt::format("({})", coordOf(is, d, "u"));
      if (d != axis && is[d] == 1) continue;
      std::string term = st[d] == 1 ? coord : fmt::format("{} * {}", coord, st[d]);
      off += off.empty() ? term : " + " + term;
    }
    w.line("if ({} == idx) acc = {};", off, combine("U[u]"));
  }
  w.close();
  w.line("Y[idx] = acc;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"I", n.input(1)}, {"U", n.input(2)}, {"Y", c.output(0)}};
  c.kind = "scatter";
}

void emitCompress(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<CompressAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  std::string name = kernelIdentifier(c.layer);
  CodeWriter tables;
  tables.line("// Compress of layer {}: the selected positions (from the constant condition).",
              escape::comment(c.layer));
  tables.line("__constant int {}_sel[] = {{{}}};", name, fmt::join(a.selected, ", "));
  CodeWriter w = openPerElementKernel(
      c, fmt::format("Compress, {}", dtypeName(t)),
      {fmt::format("X{} -> Y{}: {} positions kept along {}", shapeToString(x), shapeToString(y),
                   a.selected.size(),
                   a.axis < 0 ? std::string("the flattened input")
                              : fmt::format("axis {}", a.axis))},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  if (a.axis < 0) {
    w.line("Y[idx] = X[{}_sel[idx]];", name);
  } else {
    size_t axis = size_t(a.axis);
    int64_t inner = numElements(x, axis + 1), kept = y[axis];
    w.line("const int i = idx % {}, s = (idx / {}) % {}, o = idx / {};", inner, inner, kept,
           inner * kept);
    w.line("Y[idx] = X[(o * {} + {}_sel[s]) * {} + i];", x[axis], name, inner);
  }
  w.close();
  c.kernel.source = tables.str() + w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "compress";
}

// --- CenterCropPad, GatherND ---------------------------------------------------------------------

/// Y[o] = X[o + shift] per dim (shift > 0 crops, < 0 pads with zeros; the odd element goes to
/// the end), as the reference.
void emitCenterCropPad(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("CenterCropPad, {}", dtypeName(t)),
      {fmt::format("X{} -> Y{}: centered crop or zero pad per dim", shapeToString(x),
                   shapeToString(y))},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  std::vector<int64_t> st = stridesOf(x);
  w.line("int src = 0;");
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t shift = x[d] >= y[d] ? (x[d] - y[d]) / 2 : -((y[d] - x[d]) / 2);
    if (x[d] == 1 && y[d] == 1) continue;
    w.open("");
    w.line("const int i = {}{};", coordOf(y, d),
           shift == 0  ? ""
           : shift > 0 ? fmt::format(" + {}", shift)
                       : fmt::format(" - {}", -shift));
    if (y[d] > x[d]) w.line("if (i < 0 || i >= {}) {{ Y[idx] = 0; return; }}", x[d]);
    w.line("src += i{};", st[d] == 1 ? "" : fmt::format(" * {}", st[d]));
    w.close();
  }
  w.line("Y[idx] = X[src];");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "center crop pad";
}

void emitGatherND(GpuLowerContext& c) {
  const Node& n = c.node;
  size_t b = size_t(n.attrs<GatherNDAttrs>().batchDims);
  const Shape& ds = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  const Shape& y = shapeOf(c.output(0));
  DType t = n.input(0)->type().dtype;
  std::string T = moveType(t);
  size_t k = size_t(is.back());
  std::vector<int64_t> st = stridesOf(ds);
  int64_t slice = numElements(ds, b + k), batchSize = numElements(ds, b);
  int64_t tuplesPerBatch = 1;
  for (size_t d = b; d + 1 < is.size(); ++d)
    tuplesPerBatch *= is[d];
  CodeWriter w = openPerElementKernel(
      c, fmt::format("GatherND, {}", dtypeName(t)),
      {fmt::format("Y{} = slices of X{} at the index tuples of indices{} (batch dims {}); "
                   "run-time indices, checked in range",
                   shapeToString(y), shapeToString(ds), shapeToString(is), b)},
      {fmt::format("__global const {}* restrict X", T), "__global const long* restrict I",
       fmt::format("__global {}* restrict Y", T)},
      numElements(y));
  std::string flag = c.check("an index is out of range");
  w.line("const int t = idx / {}, e = idx % {};", slice, slice);
  w.line("int off = (t / {}) * {};", tuplesPerBatch, batchSize);
  for (size_t j = 0; j < k; ++j) {
    int64_t dim = ds[b + j];
    w.line("const long i{} = I[t * {} + {}];", j, k, j);
    w.line("if (i{0} < -{1} || i{0} >= {1}) {{ *{2} = 1; return; }}", j, dim, flag);
    w.line("off += (int)(i{0} < 0 ? i{0} + {1} : i{0}) * {2};", j, dim, st[b + j]);
  }
  w.line("Y[idx] = X[off + e];");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"I", n.input(1)}, {"Y", c.output(0)}};
  c.kind = "gather nd";
}

} // namespace

void addIndexLowerings(std::unordered_map<OpKind, GpuLowering>& t) {
  t[OpKind::Pad] = {supportsPad, emitPad, false};
  t[OpKind::CenterCropPad] = {supportsNonEmpty, emitCenterCropPad, false};
  t[OpKind::GatherND] = {supportsNonEmpty, emitGatherND, false};
  t[OpKind::ScatterElements] = {supportsScatter, emitScatter, false};
  t[OpKind::Scatter] = {supportsScatter, emitScatter, false};
  t[OpKind::ScatterND] = {supportsScatter, emitScatter, false};
  t[OpKind::Compress] = {supportsNonEmpty, emitCompress, false};
  t[OpKind::Tile] = {supportsNonEmpty, emitTile, false};
  t[OpKind::DepthToSpace] = {supportsBlock, emitBlock, false};
  t[OpKind::SpaceToDepth] = {supportsBlock, emitBlock, false};
  t[OpKind::OneHot] = {supportsOneHot, emitOneHot, false};
  t[OpKind::CumSum] = {supportsCumSum, emitCumSum, false};
  t[OpKind::CumProd] = {supportsCumSum, emitCumSum, false};
  t[OpKind::ConvTranspose] = {supportsConvTranspose, emitConvTranspose, false};
  t[OpKind::Resize] = {supportsResize, emitResize, false};
  t[OpKind::Upsample] = {supportsResize, emitResize, false};
  t[OpKind::Trilu] = {supportsTrilu, emitTrilu, false};
  t[OpKind::Dropout] = {supportsDropout, emitDropout, false};
  t[OpKind::GatherElements] = {supportsGatherElements, emitGatherElements, false};
  t[OpKind::NegativeLogLikelihoodLoss] = {supportsLoss, emitLoss, false};
  t[OpKind::SoftmaxCrossEntropyLoss] = {supportsLoss, emitLoss, false};
}

} // namespace triad::gpu
