// CPU lowerings: index and data-movement ops (Pad, Tile, Gather/Scatter variants, TopK, ...).
// See cpu/Lowering.h for the table these entries join.
//
// Everything the model fixes (pads, repeats, crop sizes, Compress's selection, block sizes) is
// an attribute resolved at import, so offsets become compile-time tables and constant loop
// bounds. Indices read at run time (GatherElements, GatherND, the scatters, ReverseSequence's
// lengths) are normalised and range-checked before any access; a bad one fails the run with an
// error naming the node, as the reference kernels (ir/ops/MovementIndex.cpp, Scatter.cpp) do.
// Pure movement copies bytes (any element type); ops that compare or combine values (scatter
// reductions, TopK, OneHot's index conversion) use typed loops.
#include "cpu/LoweringUtil.h"

#include "ir/ScalarExpr.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Scatter.h"
#include "ir/ops/Vision.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/ranges.h>

namespace triad::cpu {

using namespace ir;
using namespace lower;

namespace {

// --- Shared pieces ------------------------------------------------------------------------------

/// The bytes of one element of `t` as the initializer of a C array: "0x00, 0x00, 0x80, 0x3f".
std::string byteList(const uint8_t* p, size_t size) {
  std::string s;
  for (size_t i = 0; i < size; ++i)
    s += fmt::format("{}0x{:02x}", i ? ", " : "", p[i]);
  return s;
}

/// Copies through per-axis tables: output coordinate o on axis d reads the input at element
/// offset sum_d tab[d][o_d], or, when any tab[d][o_d] is -1, gets the fill element (`fill`, one
/// element of the output type; unused when no table holds -1). Pad, CenterCropPad and Tile are
/// such separable maps. Outer axes are loops over their table; a -1 there fills the whole
/// (contiguous) sub-block. The innermost axis becomes runs: contiguous input spans copied with
/// one memcpy, and fill spans.
void emitAxisTableCopy(LowerContext& c, const Shape& out,
                       const std::vector<std::vector<int64_t>>& tab, int64_t elem,
                       const std::vector<uint8_t>& fill) {
  Code& b = c.body;
  size_t r = out.size();
  int64_t total = numElements(out);
  if (total == 0) {
    b.line("// empty output: nothing to do");
    return;
  }
  if (r == 0) {
    b.line("std::memcpy({}, {}, {});", c.outputs[0], c.inputs[0], elem);
    return;
  }
  bool anyFill = false;
  for (const auto& t : tab)
    anyFill = anyFill || std::find(t.begin(), t.end(), -1) != t.end();
  std::vector<int64_t> outStride = stridesOf(out);
  // Outer axes: one table each (element offset into the input, -1: fill); an axis of one
  // output coordinate that reads the input needs neither table nor loop.
  std::vector<bool> folded(r, false);
  for (size_t d = 0; d + 1 < r; ++d)
    folded[d] = out[d] == 1 && tab[d][0] >= 0;
  for (size_t d = 0; d + 1 < r; ++d)
    if (!folded[d])
      b.line("static const int64_t src{}[] = {{{}}}; // axis {}: input offset per output "
             "coordinate{}",
             d, fmt::join(tab[d], ", "), d, anyFill ? " (-1: fill)" : "");
  // Innermost axis: runs {output start, input start (-1: fill), length}.
  std::vector<std::array<int64_t, 3>> runs;
  const std::vector<int64_t>& last = tab[r - 1];
  for (int64_t o = 0; o < out[r - 1]; ++o) {
    int64_t s = last[size_t(o)];
    if (!runs.empty()) {
      auto& run = runs.back();
      bool extends = s < 0 ? run[1] < 0 : run[1] >= 0 && run[1] + run[2] == s;
      if (extends) {
        ++run[2];
        continue;
      }
    }
    runs.push_back({o, s < 0 ? -1 : s, 1});
  }
  std::string runList;
  for (const auto& run : runs)
    runList += fmt::format("{}{{{}, {}, {}}}", runList.empty() ? "" : ", ", run[0], run[1], run[2]);
  b.line("static const int64_t runs[][3] = {{{}}}; // axis {}: {{output start, input start{}, "
         "length}}",
         runList, r - 1, anyFill ? " (-1: fill)" : "");
  b.line("const unsigned char* __restrict sb = (const unsigned char*){};", c.inputs[0]);
  b.line("unsigned char* __restrict db = (unsigned char*){};", c.outputs[0]);
  if (anyFill) {
    bool zero = std::all_of(fill.begin(), fill.end(), [](uint8_t v) { return v == 0; });
    if (zero) {
      b.line("auto fill = [](unsigned char* p, int64_t count) {{ std::memset(p, 0, size_t(count) "
             "* {}); }};",
             elem);
    } else {
      b.line("static const unsigned char value[{}] = {{{}}}; // the fill element", elem,
             byteList(fill.data(), fill.size()));
      b.line("auto fill = [](unsigned char* p, int64_t count) {{ for (int64_t k = 0; k < count; "
             "++k) std::memcpy(p + k * {0}, value, {0}); }};",
             elem);
    }
  }
  std::string srcOff;
  std::string dst = "db";
  int64_t constOff = 0;
  int opened = 0;
  for (size_t d = 0; d + 1 < r; ++d) {
    if (folded[d]) {
      constOff += tab[d][0];
      continue;
    }
    b.open(fmt::format("for (int64_t o{0} = 0; o{0} < {1}; ++o{0})", d, out[d]));
    ++opened;
    b.line("unsigned char* d{} = {} + o{} * {};", d, dst, d, outStride[d] * elem);
    bool hasFill = std::find(tab[d].begin(), tab[d].end(), -1) != tab[d].end();
    if (hasFill) b.line("if (src{0}[o{0}] < 0) {{ fill(d{0}, {1}); continue; }}", d, outStride[d]);
    srcOff += fmt::format("{}src{}[o{}]", srcOff.empty() ? "" : " + ", d, d);
    dst = fmt::format("d{}", d);
  }
  if (constOff || srcOff.empty())
    srcOff += fmt::format("{}{}", srcOff.empty() ? "" : " + ", constOff);
  b.line("const unsigned char* s = sb + ({}) * {};", srcOff, elem);
  b.open("for (const auto& run : runs)");
  if (anyFill)
    b.line("if (run[1] < 0) fill({} + run[0] * {}, run[2]); else std::memcpy({} + run[0] * {}, s "
           "+ run[1] * {}, size_t(run[2]) * {});",
           dst, elem, dst, elem, elem, elem);
  else
    b.line("std::memcpy({} + run[0] * {}, s + run[1] * {}, size_t(run[2]) * {});", dst, elem, elem,
           elem);
  b.close();
  for (int i = 0; i < opened; ++i)
    b.close();
}

// --- Pad ----------------------------------------------------------------------------------------

/// The input coordinate output coordinate `o` of an axis reads (-1: the constant), as evalPad
/// (ir/ops/MovementIndex.cpp) maps it for each mode.
int64_t padSource(PadMode mode, int64_t o, int64_t begin, int64_t dim) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
  case PadMode::Constant:
    return -1;
  case PadMode::Edge:
    return std::clamp<int64_t>(i, 0, dim - 1);
  case PadMode::Wrap:
    return ((i % dim) + dim) % dim;
  case PadMode::Reflect: {
    if (dim == 1) return 0;
    int64_t period = 2 * (dim - 1);
    i = ((i % period) + period) % period;
    return i >= dim ? period - i : i;
  }
  }
  return -1;
}

void emitPad(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<PadAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  size_t r = x.size();
  c.body.line("// Pad ({}), pads [{}]: {} -> {}", toString(a.mode), fmt::join(a.pads, ", "),
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  std::vector<int64_t> xs = stridesOf(x);
  std::vector<std::vector<int64_t>> tab(r);
  for (size_t d = 0; d < r; ++d)
    for (int64_t o = 0; o < y[d]; ++o) {
      int64_t i = padSource(a.mode, o, a.pads[d], x[d]);
      tab[d].push_back(i < 0 ? -1 : i * xs[d]);
    }
  int64_t elem = elemBytes(n.input(0));
  std::vector<uint8_t> fill(size_t(elem), 0);
  if (a.value.numElements() == 1 && int64_t(a.value.byteSize()) == elem)
    std::memcpy(fill.data(), a.value.raw(), size_t(elem));
  emitAxisTableCopy(c, y, tab, elem, fill);
}

Support supportsPad(const Node& n) {
  const auto& a = n.attrs<PadAttrs>();
  if (a.mode == PadMode::Constant &&
      (a.value.numElements() != 1 || a.value.byteSize() != dtypeSize(n.input(0)->type().dtype)))
    return no("the pad value is not one element of the input type");
  return {};
}

// --- CenterCropPad ------------------------------------------------------------------------------

void emitCenterCropPad(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<CenterCropPadAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  size_t r = x.size();
  c.body.line("// CenterCropPad axes [{}] to sizes [{}]: {} -> {}", fmt::join(a.axes, ", "),
              fmt::join(a.sizes, ", "), shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()));
  std::vector<int64_t> xs = stridesOf(x);
  std::vector<std::vector<int64_t>> tab(r);
  for (size_t d = 0; d < r; ++d) {
    // As evalCenterCropPad: input = output + shift; the odd element goes to the end.
    int64_t shift = x[d] >= y[d] ? (x[d] - y[d]) / 2 : -((y[d] - x[d]) / 2);
    for (int64_t o = 0; o < y[d]; ++o) {
      int64_t i = o + shift;
      tab[d].push_back(i < 0 || i >= x[d] ? -1 : i * xs[d]);
    }
  }
  int64_t elem = elemBytes(n.input(0));
  emitAxisTableCopy(c, y, tab, elem, std::vector<uint8_t>(size_t(elem), 0));
}

// --- Tile ---------------------------------------------------------------------------------------

void emitTile(LowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  size_t r = x.size();
  std::vector<int64_t> reps;
  for (size_t d = 0; d < r; ++d)
    reps.push_back(x[d] ? y[d] / x[d] : 0);
  c.body.line("// Tile, repeats [{}]: {} -> {}", fmt::join(reps, ", "),
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  std::vector<int64_t> xs = stridesOf(x);
  std::vector<std::vector<int64_t>> tab(r);
  for (size_t d = 0; d < r; ++d)
    for (int64_t o = 0; o < y[d]; ++o)
      tab[d].push_back(o % x[d] * xs[d]);
  emitAxisTableCopy(c, y, tab, elemBytes(n.input(0)), {});
}

// --- Compress -----------------------------------------------------------------------------------

void emitCompress(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<CompressAttrs>();
  const Shape& x = shapeOf(n.input(0));
  // axis -1: the flattened input, one axis of all elements.
  Shape s = a.axis < 0 ? Shape{numElements(x)} : x;
  size_t axis = a.axis < 0 ? 0 : size_t(a.axis);
  int64_t outer = numElements(s, 0, axis), dim = s[axis], elem = elemBytes(n.input(0));
  int64_t inner = numElements(s, axis + 1);
  int64_t count = int64_t(a.selected.size());
  c.body.line("// Compress {} of {} positions along {}: {} -> {}", count, dim,
              a.axis < 0 ? std::string("the flattened input") : fmt::format("axis {}", a.axis),
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  if (count == 0 || outer == 0 || inner == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  // Consecutive selected positions merge into runs {first position, length}.
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t p : a.selected) {
    if (!runs.empty() && runs.back().first + runs.back().second == p)
      ++runs.back().second;
    else
      runs.emplace_back(p, 1);
  }
  std::string list;
  for (auto [p, len] : runs)
    list += fmt::format("{}{{{}, {}}}", list.empty() ? "" : ", ", p, len);
  c.body.line("static const int64_t runs[][2] = {{{}}}; // selected {{first position, count}}",
              list);
  c.body.line("const unsigned char* __restrict sb = (const unsigned char*){};", c.inputs[0]);
  c.body.line("unsigned char* __restrict db = (unsigned char*){};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.line("int64_t at = o * {}; // output position", count);
  c.body.open("for (const auto& run : runs)");
  c.body.line("std::memcpy(db + at * {0}, sb + (o * {1} + run[0]) * {0}, size_t(run[1]) * {0});",
              inner * elem, dim);
  c.body.line("at += run[1];");
  c.body.close();
  c.body.close();
}

// --- DepthToSpace, SpaceToDepth -----------------------------------------------------------------

/// Both are a transpose of a 6-D view: the output, viewed as 6-D in row-major order, reads the
/// input through permuted strides (the reference's index formulas in MovementIndex.cpp).
void emitDepthSpace(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<BlockAttrs>();
  int64_t b = a.blocksize;
  bool d2s = n.kind() == OpKind::DepthToSpace;
  const Shape& x = shapeOf(n.input(0));
  c.body.line("// {} blocksize {}{}: {} -> {}", opKindName(n.kind()), b,
              fmt::format(", mode {}", toString(a.mode)), shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()));
  Shape extent;
  std::vector<int64_t> src;
  if (d2s) {
    // Output [n, c, y * b + i, x * b + j] = input [n, ic, y, x] with ic = (i * b + j) * C + c
    // (DCR) or c * b * b + i * b + j (CRD); the output as [N, C, H, b, W, b].
    int64_t N = x[0], C = x[1] / (b * b), H = x[2], W = x[3], plane = H * W;
    extent = {N, C, H, b, W, b};
    bool dcr = a.mode == DepthToSpaceMode::DCR;
    src = {
        x[1] * plane,           dcr ? plane : b * b * plane, W, dcr ? b * C * plane : b * plane, 1,
        dcr ? C * plane : plane};
  } else if (a.mode == DepthToSpaceMode::DCR) {
    // Output [n, (i * b + j) * C + c, y, x] = input [n, c, y * b + i, x * b + j]; the output as
    // [N, b, b, C, H / b, W / b].
    int64_t N = x[0], C = x[1], H = x[2], W = x[3];
    extent = {N, b, b, C, H / b, W / b};
    src = {C * H * W, W, 1, H * W, b * W, b};
  } else {
    // CRD: output [n, (c * b + i) * b + j, y, x] = input [n, c, y * b + i, x * b + j]; the
    // output as [N, C, b, b, H / b, W / b].
    int64_t N = x[0], C = x[1], H = x[2], W = x[3];
    extent = {N, C, b, b, H / b, W / b};
    src = {C * H * W, H * W, W, 1, b * W, b};
  }
  if (numElements(extent) == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  emitStridedCopy(c.body, c.outputs[0], c.inputs[0], extent, stridesOf(extent), src, 0,
                  elemBytes(n.input(0)));
}

// --- GatherElements -----------------------------------------------------------------------------

Support supportsGatherElements(const Node& n) {
  return requireIndices(n, 1);
}

void emitGatherElements(LowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  std::vector<int64_t> xs = stridesOf(x);
  int64_t elem = elemBytes(n.input(0));
  c.body.line("// GatherElements along axis {}: data {}, indices {}", axis,
              shapeComment(n.input(0)->type()), shapeComment(n.input(1)->type()));
  if (numElements(is) == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  c.body.line("const unsigned char* __restrict sb = (const unsigned char*){};", c.inputs[0]);
  c.body.line("const {}* __restrict idx = {};", cppTypeName(n.input(1)->type().dtype), c.inputs[1]);
  c.body.line("unsigned char* __restrict db = (unsigned char*){};", c.outputs[0]);
  c.body.line("int64_t k = 0; // element of indices and output");
  std::string off = "0";
  for (size_t d = 0; d < is.size(); ++d) {
    c.body.open(fmt::format("for (int64_t i{0} = 0; i{0} < {1}; ++i{0})", d, is[d]));
    if (d != axis) off += fmt::format(" + i{} * {}", d, xs[d]);
  }
  c.body.line("int64_t at = (int64_t)idx[k];");
  emitIndexCheck(c.body, n, "at", x[axis], "an index");
  c.body.line("std::memcpy(db + k * {0}, sb + ({1} + at * {2}) * {0}, {0});", elem, off, xs[axis]);
  c.body.line("++k;");
  for (size_t d = 0; d < is.size(); ++d)
    c.body.close();
}

// --- GatherND -----------------------------------------------------------------------------------

Support supportsGatherND(const Node& n) {
  return requireIndices(n, 1);
}

void emitGatherND(LowerContext& c) {
  const Node& n = c.node;
  size_t b = size_t(n.attrs<GatherNDAttrs>().batchDims);
  const Shape& ds = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  size_t k = size_t(is.back());
  std::vector<int64_t> st = stridesOf(ds);
  int64_t slice = numElements(ds, b + k), batchSize = numElements(ds, b);
  int64_t tuplesPerBatch = numElements(Shape(is.begin() + std::ptrdiff_t(b), is.end() - 1));
  int64_t tuples = numElements(Shape(is.begin(), is.end() - 1));
  int64_t elem = elemBytes(n.input(0));
  c.body.line("// GatherND, batch_dims {}: data {}, indices {} ({} tuples of {}, slices of {})", b,
              shapeComment(n.input(0)->type()), shapeComment(n.input(1)->type()), tuples, k, slice);
  if (tuples == 0 || slice == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  c.body.line("const unsigned char* __restrict sb = (const unsigned char*){};", c.inputs[0]);
  c.body.line("const {}* __restrict idx = {};", cppTypeName(n.input(1)->type().dtype), c.inputs[1]);
  c.body.line("unsigned char* __restrict db = (unsigned char*){};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", tuples));
  c.body.line("int64_t off = t / {} * {}; // the tuple's batch entry", tuplesPerBatch, batchSize);
  for (size_t j = 0; j < k; ++j) {
    c.body.line("int64_t i{} = (int64_t)idx[t * {} + {}];", j, k, j);
    emitIndexCheck(c.body, n, fmt::format("i{}", j), ds[b + j],
                   fmt::format("an index for axis {}", b + j));
    c.body.line("off += i{} * {};", j, st[b + j]);
  }
  c.body.line("std::memcpy(db + t * {0}, sb + off * {1}, {0});", slice * elem, elem);
  c.body.close();
}

// --- ScatterElements, Scatter, ScatterND --------------------------------------------------------

/// `e` combined with update `u` as the reference's combine<T> (ir/ops/Scatter.cpp): std::max and
/// std::min spelled out (same NaN behaviour), bool with logical or/and.
std::string combineExpr(ScatterReduction r, DType t, const std::string& e, const std::string& u) {
  bool isBool = t == DType::Bool;
  std::string ct = cppTypeName(t);
  switch (r) {
  case ScatterReduction::None:
    return u;
  case ScatterReduction::Add:
    return isBool ? fmt::format("({} || {})", e, u) : fmt::format("({})({} + {})", ct, e, u);
  case ScatterReduction::Mul:
    return isBool ? fmt::format("({} && {})", e, u) : fmt::format("({})({} * {})", ct, e, u);
  case ScatterReduction::Max:
    return isBool ? fmt::format("({} || {})", e, u) : fmt::format("({0} < {1} ? {1} : {0})", e, u);
  case ScatterReduction::Min:
    return isBool ? fmt::format("({} && {})", e, u) : fmt::format("({1} < {0} ? {1} : {0})", e, u);
  }
  return u;
}

Support supportsScatter(const Node& n) {
  if (auto s = requireIndices(n, 1); !s.ok) return s;
  ScatterReduction r = n.kind() == OpKind::ScatterND ? n.attrs<ScatterNDAttrs>().reduction
                                                     : n.attrs<ScatterElementsAttrs>().reduction;
  if (r != ScatterReduction::None && n.input(0)->type().dtype == DType::F16)
    return no("scatter reductions on float16 are not compiled");
  return {};
}

/// y = data (the output starts as a copy of input 0).
void emitCopyData(LowerContext& c) {
  int64_t bytes = numElements(shapeOf(c.node.input(0))) * elemBytes(c.node.input(0));
  c.body.line("if ((const void*){} != (const void*){}) std::memcpy({}, {}, {});", c.outputs[0],
              c.inputs[0], c.outputs[0], c.inputs[0], bytes);
}

void emitScatterElements(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ScatterElementsAttrs>();
  size_t axis = size_t(a.axis);
  const Shape& ds = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  std::vector<int64_t> st = stridesOf(ds);
  DType dt = n.input(0)->type().dtype;
  std::string t = cppTypeName(dt);
  c.body.line("// {} along axis {}, reduction {}: data {}, indices {}", opKindName(n.kind()),
              a.axis, toString(a.reduction), shapeComment(n.input(0)->type()),
              shapeComment(n.input(1)->type()));
  emitCopyData(c);
  if (numElements(is) == 0) return;
  c.body.line("const {}* __restrict idx = {};", cppTypeName(n.input(1)->type().dtype), c.inputs[1]);
  c.body.line("const {}* __restrict upd = {};", t, c.inputs[2]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("int64_t k = 0; // element of indices and updates, in row-major order");
  std::string off = "0";
  for (size_t d = 0; d < is.size(); ++d) {
    c.body.open(fmt::format("for (int64_t i{0} = 0; i{0} < {1}; ++i{0})", d, is[d]));
    if (d != axis) off += fmt::format(" + i{} * {}", d, st[d]);
  }
  c.body.line("int64_t at = (int64_t)idx[k];");
  emitIndexCheck(c.body, n, "at", ds[axis], "an index");
  c.body.line("{}& e = y[{} + at * {}];", t, off, st[axis]);
  c.body.line("e = {};", combineExpr(a.reduction, dt, "e", "upd[k]"));
  c.body.line("++k;");
  for (size_t d = 0; d < is.size(); ++d)
    c.body.close();
}

void emitScatterND(LowerContext& c) {
  const Node& n = c.node;
  ScatterReduction red = n.attrs<ScatterNDAttrs>().reduction;
  const Shape& ds = shapeOf(n.input(0));
  const Shape& is = shapeOf(n.input(1));
  size_t k = size_t(is.back());
  std::vector<int64_t> st = stridesOf(ds);
  int64_t slice = numElements(ds, k), tuples = numElements(Shape(is.begin(), is.end() - 1));
  DType dt = n.input(0)->type().dtype;
  std::string t = cppTypeName(dt);
  c.body.line("// ScatterND, reduction {}: data {}, indices {} ({} tuples of {}, slices of {})",
              toString(red), shapeComment(n.input(0)->type()), shapeComment(n.input(1)->type()),
              tuples, k, slice);
  emitCopyData(c);
  if (tuples == 0 || slice == 0) return;
  c.body.line("const {}* __restrict idx = {};", cppTypeName(n.input(1)->type().dtype), c.inputs[1]);
  c.body.line("const {}* __restrict upd = {};", t, c.inputs[2]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", tuples));
  c.body.line("int64_t off = 0;");
  for (size_t j = 0; j < k; ++j) {
    c.body.line("int64_t i{} = (int64_t)idx[t * {} + {}];", j, k, j);
    emitIndexCheck(c.body, n, fmt::format("i{}", j), ds[j], fmt::format("an index for axis {}", j));
    c.body.line("off += i{} * {};", j, st[j]);
  }
  if (red == ScatterReduction::None) {
    c.body.line("std::memcpy(y + off, upd + t * {0}, {0} * sizeof({1}));", slice, t);
  } else {
    c.body.open(fmt::format("for (int64_t e = 0; e < {}; ++e)", slice));
    c.body.line("{}& v = y[off + e];", t);
    c.body.line("v = {};", combineExpr(red, dt, "v", fmt::format("upd[t * {} + e]", slice)));
    c.body.close();
  }
  c.body.close();
}

// --- OneHot -------------------------------------------------------------------------------------

Support supportsOneHot(const Node& n) {
  DType t = n.input(0)->type().dtype;
  if (t == DType::F16 || t == DType::Bool || t == DType::Fixed)
    return no(fmt::format("OneHot indices of type {} are not compiled", dtypeName(t)));
  return {};
}

void emitOneHot(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<OneHotAttrs>();
  const Shape& is = shapeOf(n.input(0));
  int64_t outer = numElements(is, 0, size_t(a.axis)), inner = numElements(is, size_t(a.axis));
  std::string t = cppTypeName(n.input(1)->type().dtype);
  c.body.line("// OneHot, depth {} on axis {}: indices {} -> {}", a.depth, a.axis,
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  int64_t total = outer * a.depth * inner;
  if (total == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  c.body.line("const {}* __restrict idx = {};", cppTypeName(n.input(0)->type().dtype), c.inputs[0]);
  c.body.line("const {}* __restrict values = {}; // [off, on]", t, c.inputs[1]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("for (int64_t e = 0; e < {}; ++e) y[e] = values[0];", total);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  // The reference truncates the index value (read as double) to an integer, counts negative
  // ones from the end and ignores what stays outside [0, depth); the test below is that range
  // before truncation, so NaN and huge values are never converted.
  c.body.line("const double v = (double)idx[o * {} + i];", inner);
  c.body.line("if (!(v > {} && v < {})) continue; // no class: all off", -(a.depth + 1), a.depth);
  c.body.line("int64_t cls = (int64_t)v;");
  c.body.line("if (cls < 0) cls += {};", a.depth);
  c.body.line("y[(o * {} + cls) * {} + i] = values[1];", a.depth, inner);
  c.body.close();
  c.body.close();
}

// --- ReverseSequence ----------------------------------------------------------------------------

Support supportsReverseSequence(const Node& n) {
  return n.input(1)->type().dtype == DType::I64 ? Support{} : no("sequence_lens must be int64");
}

void emitReverseSequence(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ReverseSequenceAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t d0 = x[0], d1 = x[1], inner = numElements(x, 2), elem = elemBytes(n.input(0));
  int64_t batch = x[size_t(a.batchAxis)], timeLen = x[size_t(a.timeAxis)];
  c.body.line("// ReverseSequence, batch axis {}, time axis {}: {}", a.batchAxis, a.timeAxis,
              shapeComment(n.input(0)->type()));
  c.body.line("const int64_t* __restrict lens = {};", c.inputs[1]);
  c.body.line("for (int64_t b = 0; b < {0}; ++b) if (lens[b] < 0 || lens[b] > {1}) return "
              "m.fail(\"{2}: a sequence length is out of range 0..{1}\");",
              batch, timeLen, who(n));
  if (numElements(x) == 0) return;
  c.body.line("const unsigned char* __restrict sb = (const unsigned char*){};", c.inputs[0]);
  c.body.line("unsigned char* __restrict db = (unsigned char*){};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t i0 = 0; i0 < {}; ++i0)", d0));
  c.body.open(fmt::format("for (int64_t i1 = 0; i1 < {}; ++i1)", d1));
  std::string bv = a.batchAxis == 0 ? "i0" : "i1", tv = a.timeAxis == 0 ? "i0" : "i1";
  c.body.line("const int64_t len = lens[{}];", bv);
  c.body.line("const int64_t from = {0} < len ? len - 1 - {0} : {0}; // source time step", tv);
  std::string src =
      a.timeAxis == 0 ? fmt::format("from * {} + i1", d1) : fmt::format("i0 * {} + from", d1);
  c.body.line("std::memcpy(db + (i0 * {0} + i1) * {1}, sb + ({2}) * {1}, {1});", d1, inner * elem,
              src);
  c.body.close();
  c.body.close();
}

// --- TopK ---------------------------------------------------------------------------------------

Support supportsTopK(const Node& n) {
  DType t = n.input(0)->type().dtype;
  if (t == DType::F16 || t == DType::Bool)
    return no(fmt::format("TopK on {} is not compiled", dtypeName(t)));
  return {};
}

/// Per line along the axis, a partial sort of the positions by the reference's order (evalTopK
/// in ir/ops/Scatter.cpp): best first, NaN above every number, ties to the lower index. That
/// order is total, so the result does not depend on the sort algorithm.
void emitTopK(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<TopKAttrs>();
  const Shape& x = shapeOf(n.input(0));
  size_t axis = size_t(a.axis);
  int64_t outer = numElements(x, 0, axis), dim = x[axis], inner = numElements(x, axis + 1);
  int64_t k = a.k;
  DType dt = n.input(0)->type().dtype;
  std::string t = cppTypeName(dt);
  bool isFloat = dt == DType::F32 || dt == DType::F64;
  c.body.line("// TopK, k {} along axis {}, {}: {} -> {}", k, a.axis,
              a.largest ? "largest" : "smallest", shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()));
  if (k == 0 || outer == 0 || inner == 0) {
    c.body.line("// empty output: nothing to do");
    return;
  }
  std::string order = c.scratch(fmt::format("{} * sizeof(int64_t)", dim));
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict values = {};", t, c.outputs[0]);
  c.body.line("int64_t* __restrict indices = {};", c.outputs[1]);
  c.body.line("int64_t* order = (int64_t*){}; // positions along the axis, best first", order);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("const {}* line = x + o * {} + i; // element j at line[j * {}]", t, dim * inner,
              inner);
  c.body.line("for (int64_t j = 0; j < {}; ++j) order[j] = j;", dim);
  c.body.open(fmt::format(
      "std::partial_sort(order, order + {}, order + {}, [&](int64_t p, int64_t q)", k, dim));
  c.body.line("const {} vp = line[p * {}], vq = line[q * {}];", t, inner, inner);
  if (isFloat) {
    c.body.line("const bool np = std::isnan(vp), nq = std::isnan(vq); // NaN ranks above numbers");
    c.body.line("if (np != nq) return {};", a.largest ? "np" : "nq");
    c.body.line("if (!np && vp != vq) return vp {} vq;", a.largest ? ">" : "<");
  } else {
    c.body.line("if (vp != vq) return vp {} vq;", a.largest ? ">" : "<");
  }
  c.body.line("return p < q;");
  c.body.close("});");
  c.body.open(fmt::format("for (int64_t r = 0; r < {}; ++r)", k));
  c.body.line("values[(o * {0} + r) * {1} + i] = line[order[r] * {1}];", k, inner);
  c.body.line("indices[(o * {0} + r) * {1} + i] = order[r];", k, inner);
  c.body.close();
  c.body.close();
  c.body.close();
}

} // namespace

void addMovementLowerings(LoweringTable& t) {
  t[OpKind::Pad] = {supportsPad, emitPad, false};
  t[OpKind::CenterCropPad] = {anyType, emitCenterCropPad, false};
  t[OpKind::Tile] = {anyType, emitTile, false};
  t[OpKind::Compress] = {anyType, emitCompress, false};
  t[OpKind::DepthToSpace] = {anyType, emitDepthSpace, false};
  t[OpKind::SpaceToDepth] = {anyType, emitDepthSpace, false};
  t[OpKind::GatherElements] = {supportsGatherElements, emitGatherElements, false};
  t[OpKind::GatherND] = {supportsGatherND, emitGatherND, false};
  t[OpKind::ScatterElements] = {supportsScatter, emitScatterElements, false};
  t[OpKind::Scatter] = {supportsScatter, emitScatterElements, false};
  t[OpKind::ScatterND] = {supportsScatter, emitScatterND, false};
  t[OpKind::OneHot] = {supportsOneHot, emitOneHot, false};
  t[OpKind::ReverseSequence] = {supportsReverseSequence, emitReverseSequence, false};
  t[OpKind::TopK] = {supportsTopK, emitTopK, false};
}

} // namespace triad::cpu
