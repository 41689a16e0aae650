// CPU lowerings: normalization, pooling and linear-algebra ops (InstanceNorm, GroupNorm, LRN, MVN,
// MaxUnpool, Einsum, Det). See cpu/Lowering.h for the table these entries join. These ops are
// rarely hot: each is a plain generated loop that computes exactly what the reference kernel in
// ir/ops/ computes (statistics and sums in double, rounded once to the output type).
#include "cpu/LoweringUtil.h"

#include "ir/ScalarExpr.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Scatter.h"
#include "ir/ops/Vision.h"

#include <algorithm>
#include <fmt/ranges.h>

namespace triad::cpu {

using namespace ir;
using namespace lower;

namespace {

/// Every input and output is float32 or every one is float64 (the reference's visitFloat types
/// that the generated code has a C++ type for).
Support requireFloatTypes(const Node& n) {
  DType t = n.input(0)->type().dtype;
  if (t != DType::F32 && t != DType::F64)
    return no(fmt::format("{} on {} inputs is not compiled", opKindName(n.kind()), dtypeName(t)));
  for (Value* v : n.inputs())
    if (v && v->type().dtype != t)
      return no(fmt::format("{} with mixed input types is not compiled", opKindName(n.kind())));
  return {};
}

/// `(double)<epsilon as a float literal>`: the float attribute widened, as the reference does.
std::string epsilonLiteral(float eps) {
  return "(double)" + floatLiteral(eps);
}

/// Emits the statistics of the `count` contiguous values at `xp` in double: `mean` and
/// `inv` = 1 / sqrt(biased variance + epsilon), two passes as the reference.
void emitMeanInvStd(Code& body, int64_t count, float eps) {
  body.line("double sum = 0, sq = 0;");
  body.line("for (int64_t i = 0; i < {}; ++i) sum += (double)xp[i];", count);
  body.line("const double mean = sum / {}.0;", count);
  body.line("for (int64_t i = 0; i < {}; ++i) sq += ((double)xp[i] - mean) * ((double)xp[i] - "
            "mean);",
            count);
  body.line("const double inv = 1.0 / std::sqrt(sq / {}.0 + {});", count, epsilonLiteral(eps));
}

// --- InstanceNormalization ----------------------------------------------------------------------

/// Per [n, c] plane: mean, biased variance (two passes, double), then
/// (x - mean) * (1 / sqrt(var + epsilon)) * scale[c] + B[c].
void emitInstanceNorm(LowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], inner = numElements(x, 2);
  float eps = n.attrs<NormAttrs>().epsilon;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// InstanceNormalization (epsilon {}) of {}: statistics per [n, c] plane of {}, in "
              "double",
              floatLiteral(eps), shapeComment(n.input(0)->type()), inner);
  if (N * C * inner == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("const {}* __restrict scale = {};", t, c.inputs[1]);
  c.body.line("const {}* __restrict bias = {};", t, c.inputs[2]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t plane)", N * C, 4 * inner));
  c.body.line("const int64_t ch = plane % {};", C);
  c.body.line("const {}* xp = x + plane * {};", t, inner);
  c.body.line("{}* yp = y + plane * {};", t, inner);
  emitMeanInvStd(c.body, inner, eps);
  c.body.line("for (int64_t i = 0; i < {}; ++i) yp[i] = ({})(((double)xp[i] - mean) * inv * "
              "(double)scale[ch] + (double)bias[ch]);",
              inner, t);
  c.body.close("});");
}

// --- GroupNormalization -------------------------------------------------------------------------

/// Per (n, group) (contiguous in [N, C, inner]): mean, biased variance in double, then
/// (x - mean) * (1 / sqrt(var + epsilon)) * scale + bias, scale and bias per group (opset 18) or
/// per channel (opset 21).
void emitGroupNorm(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<GroupNormAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], G = a.numGroups, CG = C / G, inner = numElements(x, 2);
  int64_t groupSize = CG * inner;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// GroupNormalization ({} groups of {} channels, epsilon {}, scale and bias per {}) "
              "of {}, statistics in double",
              G, CG, floatLiteral(a.epsilon), a.perChannelAffine ? "channel" : "group",
              shapeComment(n.input(0)->type()));
  if (N * G * groupSize == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("const {}* __restrict scale = {};", t, c.inputs[1]);
  c.body.line("const {}* __restrict bias = {};", t, c.inputs[2]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(
      fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t ng)", N * G, 4 * groupSize));
  c.body.line("const int64_t g = ng % {};", G);
  c.body.line("const {}* xp = x + ng * {};", t, groupSize);
  c.body.line("{}* yp = y + ng * {};", t, groupSize);
  emitMeanInvStd(c.body, groupSize, a.epsilon);
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", groupSize));
  c.body.line("const int64_t p = {};",
              a.perChannelAffine ? fmt::format("g * {} + i / {}", CG, inner) : std::string("g"));
  c.body.line("yp[i] = ({})(((double)xp[i] - mean) * inv * (double)scale[p] + (double)bias[p]);",
              t);
  c.body.close();
  c.body.close("});");
}

// --- LRN ----------------------------------------------------------------------------------------

/// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, in double.
void emitLRN(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<LRNAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], inner = numElements(x, 2);
  int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// LRN (size {}, alpha {}, beta {}, bias {}) of {}: channels [c - {}, c + {}]",
              a.size, floatLiteral(a.alpha), floatLiteral(a.beta), floatLiteral(a.bias),
              shapeComment(n.input(0)->type()), before, after);
  if (N * C * inner == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("const double scale = (double){} / {}.0;", floatLiteral(a.alpha), a.size);
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t plane)", N * C,
                          inner * (a.size + 20)));
  c.body.line("const int64_t b = plane / {}, ch = plane % {};", C, C);
  c.body.line("const int64_t lo = ch - {0} < 0 ? 0 : ch - {0};", before);
  c.body.line("const int64_t hi = ch + {0} > {1} ? {1} : ch + {0};", after, C - 1);
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("double sq = 0;");
  c.body.line("for (int64_t cc = lo; cc <= hi; ++cc) {{ const double v = (double)x[(b * {} + cc) "
              "* {} + i]; sq += v * v; }}",
              C, inner);
  c.body.line("const int64_t at = (b * {} + ch) * {} + i;", C, inner);
  c.body.line("y[at] = ({})((double)x[at] / std::pow((double){} + scale * sq, (double){}));", t,
              floatLiteral(a.bias), floatLiteral(a.beta));
  c.body.close();
  c.body.close("});");
}

// --- MeanVarianceNormalization ------------------------------------------------------------------

/// Per index of the kept dims: mean and biased variance over `axes` (double, in row-major order
/// of the reduced dims, as the reference's flat pass), then (x - mean) / (sqrt(var) + 1e-9).
void emitMVN(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<MVNAttrs>();
  const Shape& x = shapeOf(n.input(0));
  auto [red, keep, count] = reductionDims(x, a.axes);
  int64_t total = numElements(x);
  int64_t groups = count ? total / count : 0;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// MeanVarianceNormalization over axes [{}] of {}: {} groups of {}, in double",
              fmt::join(a.axes, ", "), shapeComment(n.input(0)->type()), groups, count);
  if (total == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t o)", groups, 4 * count));
  if (keep.empty())
    c.body.line("const int64_t base = 0; (void)o; // one group: every dim is normalized");
  else
    c.body.line("const int64_t base = {};", offsetOf("o", keep));
  std::string at = "base + " + offsetOf("r", red);
  c.body.line("double sum = 0, sq = 0;");
  c.body.line("for (int64_t r = 0; r < {}; ++r) sum += (double)x[{}];", count, at);
  c.body.line("const double mean = sum / {}.0;", count);
  c.body.line("for (int64_t r = 0; r < {0}; ++r) {{ const double d = (double)x[{1}] - mean; sq "
              "+= d * d; }}",
              count, at);
  c.body.line("const double den = std::sqrt(sq / {}.0) + 1e-9;", count);
  c.body.line("for (int64_t r = 0; r < {0}; ++r) y[{1}] = ({2})(((double)x[{1}] - mean) / den);",
              count, at, t);
  c.body.close("});");
}

// --- MaxUnpool ----------------------------------------------------------------------------------

Support supportsMaxUnpool(const Node& n) {
  if (auto s = requireF32OrF64Input(n); !s.ok) return s;
  return n.input(1)->type().dtype == DType::I64 ? Support{} : no("indices must be int64");
}

/// Y = zeros; Y.flat[I[i]] = X[i], every index range-checked.
void emitMaxUnpool(LowerContext& c) {
  const Node& n = c.node;
  int64_t count = numElements(shapeOf(n.input(0))), total = numElements(shapeOf(n.output(0)));
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// MaxUnpool {} -> {}: scatter X to the flat output positions I, zeros elsewhere",
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("const int64_t* __restrict ind = {};", c.inputs[1]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("std::memset(y, 0, {});", total * elemBytes(n.output(0)));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", count));
  c.body.line("if (ind[i] < 0 || ind[i] >= {}) return m.fail(\"MaxUnpool '{}': an index in I is "
              "out of range for an output of {} elements\");",
              total, cEscape(n.name()), total);
  c.body.line("y[ind[i]] = x[i];");
  c.body.close();
}

// --- Einsum -------------------------------------------------------------------------------------

Support supportsEinsum(const Node& n) {
  return requireFloatTypes(n);
}

/// The name of an Einsum label in generated code: "i_b" for letter b, "e0" for ellipsis dim 0.
std::string labelVar(int64_t l) {
  if (l >= 52) return fmt::format("e{}", l - 52);
  char ch = l < 26 ? char('A' + l) : char('a' + (l - 26));
  return fmt::format("i_{}", ch);
}

/// The reference's loop: output labels outermost (in output order), then the summed labels; per
/// output element the sum over the summed labels of the product of the inputs, in double. Each
/// input's offset is a sum of loop variables times strides (a label repeated in one input adds
/// its strides: a diagonal; a broadcast dim of size 1 contributes nothing).
void emitEinsum(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<EinsumAttrs>();
  size_t nIn = n.inputs().size();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < nIn; ++i)
    shapes.push_back(shapeOf(n.input(i)));
  ops::EinsumLoops plan = ops::einsumLoops(a, shapes);
  const std::vector<int64_t>& loop = plan.labels;
  const auto& stride = plan.stride;
  std::string t = cppTypeName(n.output(0)->type().dtype);
  std::string ins;
  for (size_t i = 0; i < nIn; ++i)
    ins += (i ? ", " : "") + shapeComment(n.input(i)->type());
  std::string outLabels, sumLabels;
  for (size_t d = 0; d < loop.size(); ++d) {
    std::string& s = d < a.outputLabels.size() ? outLabels : sumLabels;
    s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", labelVar(loop[d]), plan.extent[d]);
  }
  c.body.line("// Einsum \"{}\": {} -> {}; output labels [{}], summed [{}]; in double", a.equation,
              ins, shapeComment(n.output(0)->type()), outLabels, sumLabels);
  int64_t outCount = numElements(shapeOf(n.output(0)));
  if (outCount == 0) return;
  for (size_t i = 0; i < nIn; ++i)
    c.body.line("const {}* __restrict in{} = {};", t, i, c.inputs[i]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("int64_t at = 0; // linear output index");
  size_t nOut = a.outputLabels.size();
  for (size_t d = 0; d < loop.size(); ++d) {
    if (d == nOut) c.body.line("double acc = 0;");
    std::string v = labelVar(loop[d]);
    c.body.open(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0})", v, plan.extent[d]));
  }
  if (loop.size() == nOut) c.body.line("double acc = 0;");
  std::string prod;
  for (size_t i = 0; i < nIn; ++i) {
    std::string off;
    for (size_t d = 0; d < loop.size(); ++d)
      if (stride[i][d])
        off += fmt::format("{}{}{}", off.empty() ? "" : " + ", labelVar(loop[d]),
                           stride[i][d] == 1 ? std::string() : fmt::format(" * {}", stride[i][d]));
    prod += fmt::format("{}(double)in{}[{}]", i ? " * " : "", i, off.empty() ? "0" : off);
  }
  c.body.line("acc += {};", prod);
  for (size_t d = loop.size(); d-- > nOut;)
    c.body.close();
  c.body.line("y[at++] = ({})acc;", t);
  for (size_t d = nOut; d-- > 0;)
    c.body.close();
}

// --- Det ----------------------------------------------------------------------------------------

/// Per matrix: LU decomposition with partial pivoting in double, as the reference (the first
/// largest |pivot| in the column; an exactly zero pivot gives 0).
void emitDet(LowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  int64_t M = x.back(), batch = numElements(shapeOf(n.output(0)));
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// Det of {} matrices {}x{} ({}): LU with partial pivoting in double", batch, M, M,
              shapeComment(n.input(0)->type()));
  if (batch == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  std::string scratch = c.scratch(fmt::format("{} * sizeof(double)", std::max<int64_t>(1, M * M)));
  c.body.line("double* __restrict lu = (double*){};", scratch);
  c.body.open(fmt::format("for (int64_t b = 0; b < {}; ++b)", batch));
  c.body.line("for (int64_t i = 0; i < {0}; ++i) lu[i] = (double)x[b * {0} + i];", M * M);
  c.body.line("double det = 1;");
  c.body.open(fmt::format("for (int64_t col = 0; col < {}; ++col)", M));
  c.body.line("int64_t piv = col;");
  c.body.line("for (int64_t r = col + 1; r < {0}; ++r) if (std::abs(lu[r * {0} + col]) > "
              "std::abs(lu[piv * {0} + col])) piv = r;",
              M);
  c.body.line("if (lu[piv * {} + col] == 0) {{ det = 0; break; }}", M);
  c.body.open("if (piv != col)");
  c.body.line("for (int64_t j = 0; j < {0}; ++j) std::swap(lu[col * {0} + j], lu[piv * {0} + j]);",
              M);
  c.body.line("det = -det;");
  c.body.close();
  c.body.line("const double p = lu[col * {} + col];", M);
  c.body.line("det *= p;");
  c.body.open(fmt::format("for (int64_t r = col + 1; r < {}; ++r)", M));
  c.body.line("const double f = lu[r * {} + col] / p;", M);
  c.body.line("for (int64_t j = col + 1; j < {0}; ++j) lu[r * {0} + j] -= f * lu[col * {0} + j];",
              M);
  c.body.close();
  c.body.close();
  c.body.line("y[b] = ({})det;", t);
  c.body.close();
}

} // namespace

void addNormalizationLowerings(LoweringTable& t) {
  t.emplace(OpKind::InstanceNormalization, Lowering{requireFloatTypes, emitInstanceNorm, false});
  t.emplace(OpKind::GroupNormalization, Lowering{requireFloatTypes, emitGroupNorm, false});
  t.emplace(OpKind::LRN, Lowering{requireFloatTypes, emitLRN, false});
  t.emplace(OpKind::MeanVarianceNormalization, Lowering{requireFloatTypes, emitMVN, false});
  t.emplace(OpKind::MaxUnpool, Lowering{supportsMaxUnpool, emitMaxUnpool, false});
  t.emplace(OpKind::Einsum, Lowering{supportsEinsum, emitEinsum, false});
  t.emplace(OpKind::Det, Lowering{requireFloatTypes, emitDet, false});
}

} // namespace triad::cpu
