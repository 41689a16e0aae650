// GPU lowerings of the reductions over any axes: Reduce* (the accumulation of ir/ScalarExpr's
// reduceExpr, the one place that says what each Reduce kind computes in generated code),
// ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax over any contiguous axes, InstanceNormalization and
// LRN. One work-item per
// output element (or per softmax row) loops over the values it reduces: simple, correct for any
// shape, and fast enough where the reduced extent is small; Softmax over trailing axes keeps
// the work-group row kernel of gpu/ReduceGen.cpp.
//
// Float32 accumulates in float (the reference uses double: results agree to rounding), float64 in
// double, float16 is
// converted to float and rounded back once; integer Sum/Prod/SumSquare accumulate in 64 bits and
// wrap into the element type as the reference does.
#include "gpu/CodeWriter.h"
#include "gpu/GpuLowering.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Reduce.h"

namespace triad::gpu {

using namespace ir;
using namespace lower;

namespace {

/// (size, stride) pairs of an index space in row-major order.
using Dims = std::vector<std::pair<int64_t, int64_t>>;

/// Merges dims that are contiguous in memory and drops size-1 dims.
Dims merged(const Dims& in) {
  Dims out;
  for (auto [size, stride] : in) {
    if (size == 1) continue;
    if (!out.empty() && out.back().second == size * stride) {
      out.back() = {out.back().first * size, stride};
      continue;
    }
    out.push_back({size, stride});
  }
  return out;
}

/// The element offset of linear index `i` (an int expression) over `dims`.
std::string offsetExpr(const std::string& i, const Dims& dims) {
  Dims d = merged(dims);
  std::string off;
  int64_t inner = 1;
  for (size_t k = d.size(); k-- > 0;) {
    auto [size, stride] = d[k];
    std::string c = inner == 1 ? i : fmt::format("{} / {}", i, inner);
    if (k > 0) c = fmt::format("({}) % {}", c, size);
    std::string term = stride == 1 ? c : fmt::format("({}) * {}", c, stride);
    off = off.empty() ? term : term + " + " + off;
    inner *= size;
  }
  return off.empty() ? "0" : off;
}

bool isIntType(DType t) {
  return isInteger(t) && t != DType::Bool;
}

/// How a kernel reads an element of `t` as its compute type (float for float16) and writes one.
std::string load(DType t, const std::string& x) {
  return t == DType::F16 ? fmt::format("triad_half_to_float({})", x) : x;
}
std::string store(DType t, const std::string& x) {
  return t == DType::F16 ? fmt::format("triad_half_from_float({})", x) : x;
}
std::string computeType(DType t) {
  return t == DType::F16 ? "float" : clTypeName(t);
}

/// The smallest and largest values of an integer type, as OpenCL C literals.
std::string intLimit(DType t, bool max) {
  switch (t) {
  case DType::I8:
    return max ? "CHAR_MAX" : "CHAR_MIN";
  case DType::U8:
    return max ? "UCHAR_MAX" : "0";
  case DType::I16:
    return max ? "SHRT_MAX" : "SHRT_MIN";
  case DType::U16:
    return max ? "USHRT_MAX" : "0";
  case DType::I32:
    return max ? "INT_MAX" : "INT_MIN";
  case DType::U32:
    return max ? "UINT_MAX" : "0";
  case DType::I64:
    return max ? "LONG_MAX" : "LONG_MIN";
  default:
    return max ? "ULONG_MAX" : "0";
  }
}

// --- Reduce* ------------------------------------------------------------------------------------

Support supportsReduce(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (!reduceExpr(n.kind())) return no("no reduction expression");
  if (numElements(shapeOf(n.output(0))) == 0) return no("empty output");
  if (isFloat(t)) return {};
  if (isIntType(t)) {
    // Integer kinds that stay in integers (the others compute in double in the reference).
    switch (n.kind()) {
    case OpKind::ReduceSum:
    case OpKind::ReduceProd:
    case OpKind::ReduceSumSquare:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
      return {};
    default:
      return no(fmt::format("{} on integers computes in double", opKindName(n.kind())));
    }
  }
  return no(fmt::format("{} on {} elements is not compiled", opKindName(n.kind()), dtypeName(t)));
}

void emitReduce(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ReduceAttrs>();
  DType t = n.input(0)->type().dtype;
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(c.output(0));
  std::string T = clTypeName(t);
  int64_t total = numElements(y), count = total ? numElements(x) / total : 0;
  std::vector<int64_t> stride = stridesOf(x);
  Dims kept, reduced;
  for (size_t d = 0; d < x.size(); ++d) {
    bool r = std::find(a.axes.begin(), a.axes.end(), int64_t(d)) != a.axes.end();
    (r ? reduced : kept).push_back({x[d], stride[d]});
  }
  bool integer = isIntType(t);
  std::string real = computeType(t);
  std::string acc = integer ? (isSignedInteger(t) ? "long" : "ulong") : real;
  std::vector<std::string> params;
  if (count > 0) params.push_back(fmt::format("__global const {}* restrict X", T));
  params.push_back(fmt::format("__global {}* restrict Y", T));
  if (a.axes.empty()) acc = T; // noop_with_empty_axes: a copy
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", opKindName(n.kind()), dtypeName(t)),
      {fmt::format("X{} -> Y{} over axes [{}]: {} values per output, accumulated in {}",
                   shapeToString(x), shapeToString(y), fmt::join(a.axes, ","), count, acc)},
      params, total);
  c.bind = {{"Y", c.output(0)}};
  if (count > 0) c.bind["X"] = n.input(0);
  c.kind = "reduce";
  if (a.axes.empty()) {
    w.line("Y[idx] = X[idx];");
    w.close();
    c.kernel.source = w.str();
    return;
  }
  ReduceExpr e = *reduceExpr(n.kind());
  if (integer && (n.kind() == OpKind::ReduceMax || n.kind() == OpKind::ReduceMin)) {
    // Integers have no NaN and no infinity: start from the type's limit (the reference's
    // result for an empty reduction too).
    bool isMin = n.kind() == OpKind::ReduceMin;
    acc = T;
    e.init = intLimit(t, isMin);
    e.step = isMin ? "if (v < acc) acc = v;" : "if (v > acc) acc = v;"; // no NaN to propagate
  }
  if (count > 0) w.line("__global const {}* restrict x = X + {};", T, offsetExpr("idx", kept));
  std::string at = offsetExpr("r", reduced);
  if (integer)
    w.line("const {} count = {};", acc, count);
  else
    w.line("const {} count = {};", real, count);
  if (e.needsMax) {
    w.line("{} mx = -INFINITY;", real);
    if (count > 0) {
      w.open("for (int r = 0; r < {}; ++r)", count);
      w.line("const {} v = {};", real, load(t, fmt::format("x[{}]", at)));
      w.line("mx = mx < v ? v : mx;");
      w.close();
    }
  }
  w.line("{} acc = {};", acc, e.init);
  if (count > 0) { // else an empty reduction: the initial value's finish
    w.open("for (int r = 0; r < {}; ++r)", count);
    w.line("const {} v = {};", acc, load(t, fmt::format("x[{}]", at)));
    w.line("{}", e.step);
    w.close();
  }
  w.line("Y[idx] = {};", integer ? fmt::format("({})({})", T, e.finish) : store(t, e.finish));
  w.line("(void)count;");
  w.close();
  c.kernel.source = w.str();
}

// --- ArgMax, ArgMin -----------------------------------------------------------------------------

Support supportsArgReduce(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (!isFloat(t) && !isIntType(t))
    return no(fmt::format("{} on {} elements is not compiled", opKindName(n.kind()), dtypeName(t)));
  return numElements(shapeOf(n.output(0))) > 0 ? Support{} : no("empty output");
}

void emitArgReduce(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ArgReduceAttrs>();
  DType t = n.input(0)->type().dtype;
  const Shape& x = shapeOf(n.input(0));
  size_t axis = size_t(a.axis);
  int64_t dim = x[axis], inner = numElements(x, axis + 1);
  bool isMax = n.kind() == OpKind::ArgMax;
  std::string T = clTypeName(t), C = computeType(t);
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", opKindName(n.kind()), dtypeName(t)),
      {fmt::format("X{} -> Y{} int64: index of the {} along axis {}{}", shapeToString(x),
                   shapeToString(shapeOf(c.output(0))), isMax ? "maximum" : "minimum", axis,
                   a.selectLastIndex ? ", the last one on ties" : ", the first one on ties")},
      {fmt::format("__global const {}* restrict X", T), "__global long* restrict Y"},
      numElements(shapeOf(c.output(0))));
  w.line("__global const {}* restrict x = X + (idx / {}) * {} + idx % {};", T, inner, dim * inner,
         inner);
  w.line("{} best = {};", C, load(t, "x[0]"));
  w.line("long at = 0;");
  w.open("for (int k = 1; k < {}; ++k)", dim);
  w.line("const {} v = {};", C, load(t, fmt::format("x[k * {}]", inner)));
  w.open("if (v {} best{})", isMax ? ">" : "<", a.selectLastIndex ? " || v == best" : "");
  w.line("best = v;");
  w.line("at = k;");
  w.close();
  w.close();
  w.line("Y[idx] = at;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "arg reduce";
}

// --- Softmax, LogSoftmax, Hardmax over any contiguous axes ---------------------------------------

Support supportsSoftmaxLike(const Node& n) {
  if (auto s = require32Bit(n); !s.ok) return s;
  DType t = n.input(0)->type().dtype;
  if (!isFloat(t))
    return no(fmt::format("{} on {} elements is not compiled", opKindName(n.kind()), dtypeName(t)));
  if (n.attrs<SoftmaxAttrs>().axes.empty()) return no("scalar softmax");
  if (numElements(shapeOf(n.input(0))) == 0) return no("empty input");
  return {};
}

/// Softmax over trailing axes of a float32 tensor: the work-group row kernel.
bool trailingF32Softmax(const Node& n) {
  const auto& axes = n.attrs<SoftmaxAttrs>().axes;
  size_t r = shapeOf(n.input(0)).size();
  return n.kind() == OpKind::Softmax && n.input(0)->type().dtype == DType::F32 &&
         size_t(axes.back()) == r - 1;
}

void emitSoftmaxLike(GpuLowerContext& c) {
  const Node& n = c.node;
  if (trailingF32Softmax(n)) {
    emitTrailingSoftmax(c);
    return;
  }
  const auto& axes = n.attrs<SoftmaxAttrs>().axes;
  DType t = n.input(0)->type().dtype;
  const Shape& x = shapeOf(n.input(0));
  size_t first = size_t(axes.front()), last = size_t(axes.back()) + 1;
  int64_t outer = numElements(x, 0, first), len = numElements(x, first, last);
  int64_t inner = numElements(x, last);
  std::string T = clTypeName(t);
  std::string what(opKindName(n.kind()));
  CodeWriter w = openPerElementKernel(
      c, fmt::format("{}, {}", what, dtypeName(t)),
      {fmt::format("X{} viewed as [{}, {}, {}]: {} along the middle dim (axes [{}]), in {}",
                   shapeToString(x), outer, len, inner, what, fmt::join(axes, ","),
                   computeType(t))},
      {fmt::format("__global const {}* restrict X", T), fmt::format("__global {}* restrict Y", T)},
      outer * inner);
  w.line("const int base = (idx / {}) * {} + idx % {};", inner, len * inner, inner);
  w.line("__global const {}* restrict x = X + base;", T);
  w.line("__global {}* restrict y = Y + base;", T);
  std::string v = load(t, fmt::format("x[j * {}]", inner));
  std::string real = computeType(t);
  w.line("{} mx = {};", real, load(t, "x[0]"));
  w.line("int arg = 0;");
  w.open("for (int j = 1; j < {}; ++j)", len);
  w.line("const {} v = {};", real, v);
  w.open("if (v > mx)");
  w.line("mx = v;");
  w.line("arg = j;");
  w.close();
  w.close();
  if (n.kind() == OpKind::Hardmax) {
    w.line("for (int j = 0; j < {}; ++j) y[j * {}] = {};", len, inner,
           store(t, "j == arg ? 1.0f : 0.0f"));
  } else {
    w.line("(void)arg;");
    w.line("{} sum = 0;", real);
    w.line("for (int j = 0; j < {}; ++j) sum += exp({} - mx);", len, v);
    if (n.kind() == OpKind::Softmax) {
      w.line("for (int j = 0; j < {}; ++j) y[j * {}] = {};", len, inner,
             store(t, fmt::format("exp({} - mx) / sum", v)));
    } else {
      w.line("const {} logSum = log(sum);", real);
      w.line("for (int j = 0; j < {}; ++j) y[j * {}] = {};", len, inner,
             store(t, fmt::format("{} - mx - logSum", v)));
    }
  }
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = fmt::format("{} (per row)", what);
}

// --- InstanceNormalization, LRN (float32)
// ----------------------------------------------------------

Support supportsChannelNorm(const Node& n) {
  if (auto s = both(requireF32(n), require32Bit(n)); !s.ok) return s;
  const Shape& x = shapeOf(n.input(0));
  if (x.size() < 3) return no("input needs spatial dims");
  return numElements(x) > 0 ? Support{} : no("empty input");
}

/// InstanceNormalization: one work-item per (n, c) computes the mean and variance of its
/// spatial values (two passes, as the reference) and writes them normalized, scaled, shifted.
void emitInstanceNorm(GpuLowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  float eps = n.attrs<NormAttrs>().epsilon;
  int64_t C = x[1], inner = numElements(x, 2);
  CodeWriter w = openPerElementKernel(
      c, "InstanceNormalization, f32",
      {fmt::format("Y{0} = (X{0} - mean) / sqrt(var + {1}) * scale[c] + B[c] over the {2} "
                   "spatial values of each (n, c)",
                   shapeToString(x), floatLiteral(eps), inner)},
      {"__global const float* restrict X", "__global const float* restrict scale",
       "__global const float* restrict B", "__global float* restrict Y"},
      x[0] * C);
  w.line("const int ch = idx % {};", C);
  w.line("__global const float* restrict x = X + idx * {};", inner);
  w.line("__global float* restrict y = Y + idx * {};", inner);
  w.line("float sum = 0.0f, sq = 0.0f;");
  w.line("for (int i = 0; i < {}; ++i) sum += x[i];", inner);
  w.line("const float mean = sum / {}.0f;", inner);
  w.line("for (int i = 0; i < {}; ++i) sq += (x[i] - mean) * (x[i] - mean);", inner);
  w.line("const float inv = 1.0f / sqrt(sq / {}.0f + {});", inner, floatLiteral(eps));
  w.line("for (int i = 0; i < {}; ++i) y[i] = (x[i] - mean) * inv * scale[ch] + B[ch];", inner);
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"scale", n.input(1)}, {"B", n.input(2)}, {"Y", c.output(0)}};
  c.kind = "instance norm";
}

/// LRN across channels: one work-item per element sums the squares of its channel window.
void emitLrn(GpuLowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<LRNAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t C = x[1], inner = numElements(x, 2);
  int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
  CodeWriter w = openPerElementKernel(
      c, "LRN, f32",
      {fmt::format("Y{0} = X / pow({1} + {2} / {3} * sum of X^2 over channels [c - {4}, c + {5}], "
                   "{6})",
                   shapeToString(x), floatLiteral(a.bias), floatLiteral(a.alpha), a.size, before,
                   after, floatLiteral(a.beta))},
      {"__global const float* restrict X", "__global float* restrict Y"}, numElements(x));
  w.line("const int i = idx % {}, ch = (idx / {}) % {}, base = idx - ch * {};", inner, inner, C,
         inner);
  w.line("const int lo = max(0, ch - {}), hi = min({}, ch + {});", before, C - 1, after);
  w.line("float sq = 0.0f;");
  w.line("for (int cc = lo; cc <= hi; ++cc) sq += X[base + cc * {0}] * X[base + cc * {0}];", inner);
  w.line("Y[idx] = X[idx] / pow({} + {} * sq, {});", floatLiteral(a.bias),
         floatLiteral(float(double(a.alpha) / double(a.size))), floatLiteral(a.beta));
  w.line("(void)i;");
  w.close();
  c.kernel.source = w.str();
  c.bind = {{"X", n.input(0)}, {"Y", c.output(0)}};
  c.kind = "lrn";
}

} // namespace

void addReduceLowerings(std::unordered_map<OpKind, GpuLowering>& t) {
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceProd, OpKind::ReduceL1,
                   OpKind::ReduceL2, OpKind::ReduceSumSquare, OpKind::ReduceLogSum,
                   OpKind::ReduceLogSumExp, OpKind::ReduceMax, OpKind::ReduceMin})
    t[k] = {supportsReduce, emitReduce, false};
  t[OpKind::ArgMax] = {supportsArgReduce, emitArgReduce, false};
  t[OpKind::InstanceNormalization] = {supportsChannelNorm, emitInstanceNorm, false};
  t[OpKind::LRN] = {supportsChannelNorm, emitLrn, false};
  t[OpKind::ArgMin] = {supportsArgReduce, emitArgReduce, false};
  for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    t[k] = {supportsSoftmaxLike, emitSoftmaxLike, false};
}

} // namespace triad::gpu
