// The CPU lowering table (see cpu/Lowering.h): one entry per natively compiled op kind that is
// not a plain elementwise op. Heavy ops call the run-time kernels of cpu/runtime/triad_kernels.h;
// data movement is emitted as loops and memcpy.
#include "cpu/LoweringUtil.h"
#include "ir/Escape.h"

#include "ir/MemoryPlan.h"
#include "ir/ScalarExpr.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Loss.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"
#include "ir/ops/Reduce.h"

#include <algorithm>
#include <cstring>
#include <fmt/ranges.h>
#include <numeric>
#include <unordered_map>

namespace triad::cpu {

using namespace ir;

namespace lower {

Support no(std::string why) {
  return {false, std::move(why)};
}

bool allF32(const Node& n) {
  for (Value* v : n.inputs())
    if (v && v->type().dtype != DType::F32) return false;
  for (Value* v : n.outputs())
    if (v->type().dtype != DType::F32) return false;
  return true;
}

Support requireF32(const Node& n) {
  return allF32(n) ? Support{} : no("only float32 inputs and outputs are compiled");
}

const Shape& shapeOf(const Value* v) {
  return v->type().shape;
}
int64_t elemBytes(const Value* v) {
  return int64_t(dtypeSize(v->type().dtype));
}

/// Emits `auto epi_chain = <group epilogue>;` when there is one and returns the epilogue to pass
/// to a kernel: `pre` (statements over c[j], j < n, with row/col0 in scope) followed by the
/// group's chain.
std::string epilogueWith(LowerContext& c, const std::string& pre, const std::string& index,
                         int64_t ld) {
  bool chain = c.hasEpilogue();
  if (chain) c.body.line("auto epi_chain = {};", c.epilogue(index, ld));
  if (pre.empty()) return chain ? "epi_chain" : "triad_rt::EpiNone{}";
  return fmt::format("[&](float* c, int row, int col0, int n) {{ (void)row; (void)col0; {} {} }}",
                     pre, chain ? "epi_chain(c, row, col0, n);" : "");
}

/// Dims of a shape as (extent, stride) with extent-1 dims dropped and contiguous neighbours
/// merged: the index space of `dims` in row-major order, for offsetOf.
using DimList = std::vector<std::pair<int64_t, int64_t>>;
DimList mergedDims(const Shape& s, const std::vector<bool>& take) {
  std::vector<int64_t> st = stridesOf(s);
  DimList out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!take[d] || s[d] == 1) continue;
    if (!out.empty() && out.back().second == s[d] * st[d])
      out.back() = {out.back().first * s[d], st[d]};
    else
      out.emplace_back(s[d], st[d]);
  }
  return out;
}
/// The element offset of linear index `i` over `dims` (an expression).
std::string offsetOf(const std::string& i, const DimList& dims) {
  std::string e;
  int64_t after = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    auto [extent, stride] = dims[k];
    std::string q = after == 1 ? i : fmt::format("{} / {}", i, after);
    std::string t = k == 0 ? q : fmt::format("({}) % {}", q, extent);
    if (stride != 1) t = fmt::format("({}) * {}", t, stride);
    e = e.empty() ? t : t + " + " + e;
    after *= extent;
  }
  return e.empty() ? "0" : e;
}

/// float32 or float64 input (reductions accumulate in double either way).
/// Input 0's dtype is one of `ok`.
Support requireInput0(const Node& n, std::initializer_list<DType> ok) {
  DType t = n.input(0)->type().dtype;
  if (std::find(ok.begin(), ok.end(), t) != ok.end()) return {};
  return no(fmt::format("{} on {} inputs is not compiled", opKindName(n.kind()), dtypeName(t)));
}
Support requireF32OrF64Input(const Node& n) {
  return requireInput0(n, {DType::F32, DType::F64});
}
Support requireF32Input0(const Node& n) {
  return requireInput0(n, {DType::F32});
}

/// `s` as the body of a C string literal (the escape module's literal without its quotes).
std::string cEscape(const std::string& s) {
  std::string lit = escape::stringLiteral(s, escape::Lang::Cpp);
  return lit.substr(1, lit.size() - 2);
}

ReductionDims reductionDims(const Shape& x, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(x.size(), false), kept(x.size());
  ReductionDims r;
  for (int64_t d : axes) {
    reduced[size_t(d)] = true;
    r.count *= x[size_t(d)];
  }
  for (size_t d = 0; d < x.size(); ++d)
    kept[d] = !reduced[d];
  r.reduced = mergedDims(x, reduced);
  r.kept = mergedDims(x, kept);
  return r;
}

std::string who(const Node& n) {
  return fmt::format("{} '{}'", opKindName(n.kind()), cEscape(n.name()));
}

Support requireIndices(const Node& n, size_t input) {
  DType t = n.input(input)->type().dtype;
  if (t == DType::I32 || t == DType::I64) return {};
  return no(fmt::format("indices must be int64 or int32, are {}", dtypeName(t)));
}

void emitIndexCheck(Code& body, const Node& n, const std::string& var, int64_t dim,
                    const std::string& what) {
  body.line("if ({0} < 0) {0} += {1};", var, dim);
  body.line("if ({0} < 0 || {0} >= {1}) return m.fail(\"{2}: {3} is out of range [-{1}, {1})\");",
            var, dim, who(n), what);
}

std::vector<uint8_t> int32Table(const std::vector<int64_t>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(int32_t));
  for (size_t i = 0; i < v.size(); ++i) {
    auto e = int32_t(v[i]);
    std::memcpy(bytes.data() + i * sizeof(int32_t), &e, sizeof e);
  }
  return bytes;
}

/// Over [N, C, D] scores: SCE takes log_softmax over C per (n, d) (written to output 1 when
/// present), then both take the negative log-likelihood of each target class, weighted,
/// skipping ignore_index, reduced as asked. Doubles throughout, as the interpreter.
Support anyType(const Node&) {
  return {};
}

/// Emits a copy of a strided sub-block: for every index of `extent` (row-major), copy one
/// element (or a contiguous run along the last dim when both strides there are 1; or, for a
/// transpose, a plane of the last dim and the one the source is contiguous in, in tiles).
void emitStridedCopy(Code& body, const std::string& dst, const std::string& src,
                     const Shape& extent, const std::vector<int64_t>& dstStride,
                     const std::vector<int64_t>& srcStride, int64_t srcBase, int64_t elem) {
  size_t r = extent.size();
  bool runs = r > 0 && dstStride.back() == 1 && srcStride.back() == 1;
  // A transpose: the destination runs along the last dim, the source along another one (`plane`).
  // Those two dims go to triad_rt::transpose_plane (tiles), the others to loops.
  size_t plane = r;
  if (!runs && r >= 2 && dstStride.back() == 1 &&
      (elem == 1 || elem == 2 || elem == 4 || elem == 8))
    for (size_t d = 0; d + 1 < r; ++d)
      if (srcStride[d] == 1 && extent[d] > 1 && extent.back() > 1) plane = d;
  body.line("const unsigned char* __restrict sb = (const unsigned char*){};", src);
  body.line("unsigned char* __restrict db = (unsigned char*){};", dst);
  std::string di = "0", si = std::to_string(srcBase);
  size_t loops = runs || plane < r ? r - 1 : r, opened = 0;
  for (size_t d = 0; d < loops; ++d) {
    if (d == plane) continue;
    body.open(fmt::format("for (int64_t i{0} = 0; i{0} < {1}; ++i{0})", d, extent[d]));
    di += fmt::format(" + i{} * {}", d, dstStride[d]);
    si += fmt::format(" + i{} * {}", d, srcStride[d]);
    ++opened;
  }
  if (plane < r) {
    body.line("triad_rt::transpose_plane<{}>({}, {}, sb + ({}) * {}, {}, db + ({}) * {}, {});",
              elem, extent[plane], extent.back(), si, elem, srcStride.back(), di, elem,
              dstStride[plane]);
  } else {
    int64_t run = runs ? extent.back() : 1;
    body.line("std::memcpy(db + ({}) * {}, sb + ({}) * {}, {});", di, elem, si, elem, run * elem);
  }
  for (size_t d = 0; d < opened; ++d)
    body.close();
}

std::vector<std::string> conv2dShapeLines(const Node& n) {
  const auto& a = n.attrs<ConvAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  bool oneD = x.size() == 3;
  auto k = [&](const std::vector<int64_t>& v, size_t i2d, int64_t dflt) {
    // 2-D index i2d (0 = H, 1 = W); 1-D convs are 2-D with H = 1.
    if (oneD) return i2d == 0 ? dflt : v[0];
    return v[i2d];
  };
  size_t sp = oneD ? 1 : 2;
  std::vector<int64_t> begin(a.pads.begin(), a.pads.begin() + std::ptrdiff_t(sp));
  std::vector<int64_t> end(a.pads.begin() + std::ptrdiff_t(sp), a.pads.end());
  return {
      "triad_rt::Conv2dShape s;",
      fmt::format("s.N = {}; s.C = {}; s.H = {}; s.W = {};", x[0], x[1], oneD ? 1 : x[2], x.back()),
      fmt::format("s.OC = {}; s.KH = {}; s.KW = {}; s.group = {};", y[1], k(a.kernel, 0, 1),
                  k(a.kernel, 1, 1), a.group),
      fmt::format("s.stride_h = {}; s.stride_w = {}; s.dil_h = {}; s.dil_w = {};",
                  k(a.strides, 0, 1), k(a.strides, 1, 1), k(a.dilations, 0, 1),
                  k(a.dilations, 1, 1)),
      fmt::format("s.pad_t = {}; s.pad_l = {}; s.pad_b = {}; s.pad_r = {};", k(begin, 0, 0),
                  k(begin, 1, 0), k(end, 0, 0), k(end, 1, 0))};
}

} // namespace lower

namespace {

using namespace lower;

// --- Gemm ---------------------------------------------------------------------------------------

Support supportsGemm(const Node& n) {
  return requireF32(n);
}

void emitGemm(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<GemmAttrs>();
  const Shape& sa = shapeOf(n.input(0));
  const Shape& sb = shapeOf(n.input(1));
  int64_t M = a.transA ? sa[1] : sa[0], K = a.transA ? sa[0] : sa[1];
  int64_t N = a.transB ? sb[0] : sb[1];
  int64_t lda = sa[1], ldb = sb[1];
  c.body.line("// Y[{}, {}] = {}A * {}B{}", M, N, a.transA ? "t" : "", a.transB ? "t" : "",
              n.input(2) ? " + C" : "");
  // alpha and C (beta) go into the epilogue, before the group's chain.
  std::string pre;
  if (a.alpha != 1.0f)
    pre += fmt::format("for (int j = 0; j < n; ++j) c[j] *= {};", floatLiteral(a.alpha));
  if (n.input(2) && a.beta != 0.0f) {
    Shape cs = shapeOf(n.input(2));
    while (cs.size() < 2)
      cs.insert(cs.begin(), 1);
    std::string idx = cs[0] == 1 && cs[1] == 1 ? "0"
                      : cs[0] == 1             ? "col0 + j"
                      : cs[1] == 1             ? "row"
                                               : fmt::format("row * {} + col0 + j", N);
    std::string beta = a.beta == 1.0f ? "" : floatLiteral(a.beta) + " * ";
    c.body.line("const float* __restrict bias = {};", c.inputs[2]);
    pre += fmt::format("for (int j = 0; j < n; ++j) c[j] += {}bias[{}];", beta, idx);
  }
  std::string epi = epilogueWith(c, pre, fmt::format("int64_t(row) * {} + col0", N), N);
  if (n.input(1)->isConstant()) {
    std::string packed = "pk_" + c.ident;
    c.fields.line("float* {} = nullptr; // {}: B packed for the GEMM kernel", packed,
                  escape::comment(n.name()));
    c.create.line("m.{} = (float*)m.alloc(triad_rt::packed_b_size({}, {}) * sizeof(float));",
                  packed, K, N);
    c.create.line("triad_rt::pack_b({}, {}, {}, {}, {}, m.{});", K, N, c.inputs[1], ldb,
                  a.transB ? "true" : "false", packed);
    c.body.line("triad_rt::gemm_packed_b({}, {}, {}, {}, {}, {}, m.{}, {}, {}, {});", M, N, K,
                c.inputs[0], lda, a.transA ? "true" : "false", packed, c.outputs[0], N, epi);
  } else {
    c.body.line("triad_rt::gemm({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});", M, N, K,
                c.inputs[0], lda, a.transA ? "true" : "false", c.inputs[1], ldb,
                a.transB ? "true" : "false", c.outputs[0], N, epi);
  }
}

// --- MatMul (numpy semantics, batch broadcasting) ---------------------------------------------

Support supportsMatMul(const Node& n) {
  return requireF32(n);
}

void emitMatMul(LowerContext& c) {
  const Node& n = c.node;
  Shape sa = shapeOf(n.input(0)), sb = shapeOf(n.input(1));
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), rank - ba.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i)
    batch[i] = std::max(ba[i], bb[i]);
  int64_t batches = numElements(batch), batchesA = numElements(ba), batchesB = numElements(bb);
  c.body.line("// {} x [{}, {}] * [{}, {}]", batches, M, K, K, N);
  bool packB = n.input(1)->isConstant() && batchesB == 1;
  std::string packed = "pk_" + c.ident;
  if (packB) {
    c.fields.line("float* {} = nullptr; // {}: B packed for the GEMM kernel", packed,
                  escape::comment(n.name()));
    c.create.line("m.{} = (float*)m.alloc(triad_rt::packed_b_size({}, {}) * sizeof(float));",
                  packed, K, N);
    c.create.line("triad_rt::pack_b({}, {}, {}, {}, false, m.{});", K, N, c.inputs[1], N, packed);
  }
  if (batchesB == 1) {
    // One GEMM: A's batches stack into rows.
    int64_t rows = batchesA * M;
    std::string epi = epilogueWith(c, "", fmt::format("int64_t(row) * {} + col0", N), N);
    if (batches != batchesA) {
      // B broadcast over more batches than A has (rare): fall through to the loop below.
    } else if (packB) {
      c.body.line("triad_rt::gemm_packed_b({}, {}, {}, {}, {}, false, m.{}, {}, {}, {});", rows, N,
                  K, c.inputs[0], K, packed, c.outputs[0], N, epi);
      return;
    } else {
      c.body.line("triad_rt::gemm({}, {}, {}, {}, {}, false, {}, {}, false, {}, {}, {});", rows, N,
                  K, c.inputs[0], K, c.inputs[1], N, c.outputs[0], N, epi);
      return;
    }
  }
  // Batched: batch index b decomposes over `batch`; A and B broadcast where their dim is 1.
  std::vector<int64_t> strideA(rank), strideB(rank), strideO(rank);
  int64_t sA = M * K, sB = K * N, sO = 1;
  for (size_t i = rank; i-- > 0;) {
    strideA[i] = ba[i] == 1 ? 0 : sA;
    strideB[i] = bb[i] == 1 ? 0 : sB;
    sA *= ba[i];
    sB *= bb[i];
    strideO[i] = sO;
    sO *= batch[i];
  }
  std::string offA = "0", offB = "0";
  for (size_t i = 0; i < rank; ++i) {
    std::string bi = fmt::format("(b / {} % {})", strideO[i], batch[i]);
    if (strideA[i]) offA += fmt::format(" + {} * {}", bi, strideA[i]);
    if (strideB[i]) offB += fmt::format(" + {} * {}", bi, strideB[i]);
  }
  // Batches go to the threads (each GEMM then runs on one): attention-sized products are
  // too small to split well, and one parallel region beats one per batch.
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t b)", batches, M * N * K));
  std::string epi =
      epilogueWith(c, "", fmt::format("b * {} + int64_t(row) * {} + col0", M * N, N), N);
  if (packB)
    c.body.line(
        "triad_rt::gemm_packed_b({}, {}, {}, {} + {}, {}, false, m.{}, {} + b * {}, {}, {});", M, N,
        K, c.inputs[0], offA, K, packed, c.outputs[0], M * N, N, epi);
  else
    c.body.line(
        "triad_rt::gemm({}, {}, {}, {} + {}, {}, false, {} + {}, {}, false, {} + b * {}, {}, "
        "{});",
        M, N, K, c.inputs[0], offA, K, c.inputs[1], offB, N, c.outputs[0], M * N, N, epi);
  c.body.close("});");
}

// --- Conv (1-D and 2-D, NCHW) -----------------------------------------------------------------

Support supportsConv(const Node& n) {
  if (auto s = requireF32(n); !s.ok) return s;
  size_t r = shapeOf(n.input(0)).size();
  if (r != 3 && r != 4) return no("only 1-D and 2-D convolutions are compiled");
  return {};
}

// The shapes triad_rt::conv2d_nchwc_supported accepts (the generator cannot call the run-time
// header). Channel counts that are no multiple of 16 are read planar (dense) or written NCHW
// (assignLayouts keeps such values unblocked).
bool blockableConv(const Node& n) {
  if (shapeOf(n.input(0)).size() != 4 || !n.input(1)->isConstant()) return false;
  const auto& a = n.attrs<ConvAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  int64_t C = x[1], OC = y[1], taps = a.kernel[0] * a.kernel[1];
  constexpr int64_t kPlanarTaps = 256; // triad_rt::kNchwcPlanarTaps
  if (a.group == 1)
    return a.strides[1] <= 2 && taps <= 64 && (C % 16 == 0 || C * taps <= kPlanarTaps);
  return a.group == C && OC == C && C % 16 == 0 && a.kernel[0] <= 64; // depthwise
}

void emitConv(LowerContext& c) {
  const Node& n = c.node;
  const Shape& y = shapeOf(n.output(0));
  bool oneD = shapeOf(n.input(0)).size() == 3;
  // The shape, at run time and again at creation (weight packing).
  std::vector<std::string> shapeLines = conv2dShapeLines(n);
  c.body.line("// {} -> {}", shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  for (const std::string& l : shapeLines)
    c.body.line("{}", l);
  // The same shape at creation, for packing the weights.
  std::string packed = "pk_" + c.ident;
  if (n.input(1)->isConstant())
    c.fields.line("float* {} = nullptr; // {}: weights packed for the convolution kernel", packed,
                  escape::comment(n.name()));
  c.create.open("");
  for (const std::string& l : shapeLines)
    c.create.line("{}", l);
  int64_t oh = oneD ? 1 : y[2], ow = y.back();
  int64_t P = oh * ow;
  if (c.outputBlocked || c.inputBlocked) {
    // Channel-blocked kernel (an NCHW output is reordered from a blocked one in scratch); the
    // bias initialises its accumulators.
    const char* in = c.inputBlocked ? "true" : "false";
    const char* fn = c.outputBlocked ? "conv2d_nchwc" : "conv2d_nchwc_nchw";
    c.create.line("m.{} = (float*)m.alloc(triad_rt::conv2d_nchwc_weights_size(s) * sizeof(float));",
                  packed);
    c.create.line("triad_rt::conv2d_nchwc_pack_weights(s, {}, m.{});", c.inputs[1], packed);
    std::string scratch = c.scratch(fmt::format("triad_rt::{}_scratch_bytes(s, {})", fn, in));
    c.create.close();
    c.body.line("// layout: {} in, {} out", c.inputBlocked ? "NCHW16c" : "NCHW",
                c.outputBlocked ? "NCHW16c" : "NCHW");
    c.body.line("float* y = {};", c.outputs[0]);
    std::string epi = epilogueWith(c, "", "c - y", c.outputBlocked ? P * 16 : P);
    c.body.line("triad_rt::{}(s, {}, {}, m.{}, {}, y, {}, {});", fn, c.inputs[0], in, packed,
                n.input(2) ? c.inputs[2] : std::string("nullptr"), scratch, epi);
    return;
  }
  bool constW = n.input(1)->isConstant();
  std::string scratch;
  if (constW) {
    c.create.line(
        "m.{} = (float*)m.alloc(triad_rt::conv2d_packed_weights_size(s) * sizeof(float));", packed);
    c.create.line("triad_rt::conv2d_pack_weights(s, {}, m.{});", c.inputs[1], packed);
    scratch = c.scratch("triad_rt::conv2d_scratch_bytes(s)");
  } else {
    // Weights computed by the graph: packed on every run, at the start of the scratch.
    scratch =
        c.scratch("(triad_rt::conv2d_packed_weights_size(s) * sizeof(float) + 63) / 64 * 64 + "
                  "triad_rt::conv2d_scratch_bytes(s)");
  }
  c.create.close();
  if (!constW) {
    c.body.line("// weights are an input of the graph: packed here on every run");
    c.body.line("float* packed_w = (float*){};", scratch);
    c.body.line("triad_rt::conv2d_pack_weights(s, {}, packed_w);", c.inputs[1]);
    c.body.line("void* conv_scratch = (char*)packed_w + (triad_rt::conv2d_packed_weights_size(s) "
                "* sizeof(float) + 63) / 64 * 64;");
  }
  c.body.line("float* y = {};", c.outputs[0]);
  std::string pre;
  if (n.input(2)) {
    c.body.line("const float* __restrict bias = {};", c.inputs[2]);
    pre = "const float bv = bias[row]; for (int j = 0; j < n; ++j) c[j] += bv;";
  }
  std::string epi = epilogueWith(c, pre, "c - y", P);
  c.body.line("triad_rt::conv2d(s, {}, {}, y, {}, {});", c.inputs[0],
              constW ? "m." + packed : std::string("packed_w"),
              constW ? scratch : std::string("conv_scratch"), epi);
}

// --- Reductions (Reduce*, ArgMax/ArgMin) -------------------------------------------------------

Support supportsReduce(const Node& n) {
  if (auto s = requireF32OrF64Input(n); !s.ok) return s;
  if (!reduceExpr(n.kind())) return no("no reduction expression");
  return {};
}

void emitReduce(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ReduceAttrs>();
  const Shape& x = shapeOf(n.input(0));
  c.body.line("// {} over axes [{}]: {} -> {}", opKindName(n.kind()), fmt::join(a.axes, ", "),
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  int64_t total = numElements(shapeOf(n.output(0)));
  if (a.axes.empty()) { // noop_with_empty_axes: a copy
    c.body.line("std::memcpy({}, {}, {});", c.outputs[0], c.inputs[0],
                total * elemBytes(n.input(0)));
    return;
  }
  auto [red, keep, count] = reductionDims(x, a.axes);
  ReduceExpr e = *reduceExpr(n.kind());
  // Doubles, as the reference interpreter accumulates.
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.line("const double count = {};", count);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", total));
  c.body.line("const {}* xo = x + {};", t, offsetOf("o", keep));
  std::string at = offsetOf("r", red);
  if (e.needsMax) {
    c.body.line("double mx = -INFINITY;");
    c.body.line("for (int64_t r = 0; r < {}; ++r) mx = xo[{}] > mx ? xo[{}] : mx;", count, at, at);
  }
  c.body.line("double acc = {};", e.init);
  c.body.open(fmt::format("for (int64_t r = 0; r < {}; ++r)", count));
  c.body.line("const double v = xo[{}];", at);
  c.body.line("{}", e.step);
  c.body.close();
  c.body.line("y[o] = ({})({});", t, e.finish);
  c.body.close();
  c.body.line("(void)count;");
}

void emitArgReduce(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ArgReduceAttrs>();
  const Shape& x = shapeOf(n.input(0));
  size_t axis = size_t(a.axis);
  int64_t outer = numElements(x, 0, axis), dim = x[axis], inner = numElements(x, axis + 1);
  bool isMax = n.kind() == OpKind::ArgMax;
  c.body.line("// {} over axis {}{}: {} -> {}", opKindName(n.kind()), a.axis,
              a.selectLastIndex ? " (last index on ties)" : "", shapeComment(n.input(0)->type()),
              shapeComment(n.output(0)->type()));
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("int64_t* __restrict y = {};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("const {}* b = x + o * {} + i;", t, dim * inner);
  c.body.line("{} best = b[0];", t);
  c.body.line("int64_t at = 0;");
  c.body.open(fmt::format("for (int64_t k = 1; k < {}; ++k)", dim));
  c.body.line("const {} v = b[k * {}];", t, inner);
  c.body.open(
      fmt::format("if (v {} best{})", isMax ? ">" : "<", a.selectLastIndex ? " || v == best" : ""));
  c.body.line("best = v;");
  c.body.line("at = k;");
  c.body.close();
  c.body.close();
  c.body.line("y[o * {} + i] = at;", inner);
  c.body.close();
  c.body.close();
}

Support supportsCumSum(const Node& n) {
  return requireInput0(n, {DType::F32, DType::F64, DType::I32, DType::I64, DType::U32, DType::U64});
}

void emitCumSum(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<CumSumAttrs>();
  const Shape& x = shapeOf(n.input(0));
  size_t axis = size_t(a.axis);
  int64_t outer = numElements(x, 0, axis), dim = x[axis], inner = numElements(x, axis + 1);
  DType dt = n.input(0)->type().dtype;
  std::string t = cppTypeName(dt);
  // Floats accumulate in double, integers in their own type (wrapping), as the interpreter.
  // Integers wrap in the unsigned type of their width, as the interpreter.
  bool real = dt == DType::F32 || dt == DType::F64;
  std::string acc = real ? "double" : fmt::format("std::make_unsigned_t<{}>", t);
  bool product = n.kind() == OpKind::CumProd;
  c.body.line("// {} along axis {}{}{}: {}", opKindName(n.kind()), a.axis,
              a.exclusive ? ", exclusive" : "", a.reverse ? ", reverse" : "",
              shapeComment(n.input(0)->type()));
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("{} acc = {};", acc, product ? 1 : 0);
  c.body.open(fmt::format("for (int64_t step = 0; step < {}; ++step)", dim));
  c.body.line("const int64_t at = (o * {} + {}) * {} + i;", dim,
              a.reverse ? fmt::format("{} - step", dim - 1) : std::string("step"), inner);
  std::string combine = fmt::format("acc = ({})(acc {} ({})x[at]);", acc, product ? "*" : "+", acc);
  if (a.exclusive)
    c.body.line("y[at] = ({})acc; {}", t, combine);
  else
    c.body.line("{} y[at] = ({})acc;", combine, t);
  c.body.close();
  c.body.close();
  c.body.close();
}

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ----------------------------------------

void emitLoss(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<LossAttrs>();
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], D = numElements(x, 2);
  bool sce = n.kind() == OpKind::SoftmaxCrossEntropyLoss;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  std::string tt = cppTypeName(n.input(1)->type().dtype);
  const char* red = a.reduction == LossReduction::None  ? "none"
                    : a.reduction == LossReduction::Sum ? "sum"
                                                        : "mean";
  c.body.line("// {} over scores {} ([N, C, D] = [{}, {}, {}]), reduction {}", opKindName(n.kind()),
              shapeComment(n.input(0)->type()), N, C, D, red);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("const {}* __restrict tgt = {};", tt, c.inputs[1]);
  if (n.input(2)) c.body.line("const {}* __restrict w = {};", t, c.inputs[2]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  bool logProb = sce && n.outputs().size() > 1;
  if (logProb) c.body.line("{}* __restrict lp = {};", t, c.outputs[1]);
  c.body.line("double sum = 0, wsum = 0;");
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", N * D));
  c.body.line("const int64_t base = i / {} * {} + i % {}; // element (n, class 0, d)", D, C * D, D);
  if (sce) {
    c.body.line("double mx = -INFINITY, s = 0;");
    c.body.line("for (int64_t k = 0; k < {0}; ++k) mx = (double)x[base + k * {1}] > mx ? "
                "(double)x[base + k * {1}] : mx;",
                C, D);
    c.body.line("for (int64_t k = 0; k < {}; ++k) s += std::exp((double)x[base + k * {}] - mx);", C,
                D);
    c.body.line("const double lse = mx + std::log(s);");
    if (logProb)
      c.body.line("for (int64_t k = 0; k < {0}; ++k) lp[base + k * {1}] = ({2})((double)x[base + "
                  "k * {1}] - lse);",
                  C, D, t);
  }
  c.body.line("const int64_t cls = (int64_t)tgt[i];");
  c.body.line("double loss = 0, wt = 0;");
  c.body.open(a.ignoreIndex ? fmt::format("if (cls != {})", *a.ignoreIndex) : std::string());
  c.body.line("if (cls < 0 || cls >= {}) return m.fail(\"layer '{}': a target class is out of "
              "range for {} classes\");",
              C, cEscape(n.name()), C);
  c.body.line("wt = {};", n.input(2) ? "(double)w[cls]" : "1.0");
  c.body.line("loss = -({}) * wt;", sce ? "(double)x[base + cls * " + std::to_string(D) + "] - lse"
                                        : "(double)x[base + cls * " + std::to_string(D) + "]");
  c.body.close();
  if (a.reduction == LossReduction::None) c.body.line("y[i] = ({})loss;", t);
  c.body.line("sum += loss;");
  c.body.line("wsum += wt;");
  c.body.close();
  if (a.reduction == LossReduction::Sum) c.body.line("y[0] = ({})sum;", t);
  // 0/0 (every element ignored) is NaN, as in the reference.
  if (a.reduction == LossReduction::Mean) c.body.line("y[0] = ({})(sum / wsum);", t);
  c.body.line("(void)sum; (void)wsum;");
}

// --- Resize (and Upsample) ----------------------------------------------------------------------

/// The reference's per-axis taps (ops::resizeAxisTaps: coordinate mapping, nearest rounding,
/// linear/cubic/antialias weights) become constant tables; the generated loop sums the tensor
/// product of each output element's taps in double. Axes that keep their size one to one need
/// no table.
void emitResize(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ResizeAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  size_t r = x.size();
  std::vector<int64_t> xs = stridesOf(x), ys = stridesOf(y);
  c.body.line("// Resize {} -> {}: per-axis taps from the reference's coordinate mapping, summed "
              "in double",
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  std::vector<ops::ResizeAxisTable> tabs = ops::resizeAxisTables(a, x, y);
  for (size_t d = 0; d < r; ++d) {
    const ops::ResizeAxisTable& t = tabs[d];
    if (t.identity) continue;
    size_t k = t.offsets.size();
    std::vector<std::string> weights;
    for (double wt : t.weights)
      weights.push_back(fmt::format("{:.17g}", wt));
    c.body.line("// axis {}: {} -> {}, {} taps", d, x[d], y[d], k);
    c.body.line("static const int64_t s{}[] = {{{}}};", d, fmt::join(t.starts, ", "));
    // No taps (every coordinate extrapolates): a one-element table, as C++ has no empty arrays.
    c.body.line("static const int64_t i{}[] = {{{}}};", d,
                k ? fmt::format("{}", fmt::join(t.offsets, ", ")) : "0");
    c.body.line("static const double w{}[] = {{{}}};", d,
                k ? fmt::format("{}", fmt::join(weights, ", ")) : "0");
    if (t.anyOutside)
      c.body.line("static const bool e{}[] = {{{}}};", d, fmt::join(t.outside, ", "));
  }
  c.body.line("const float* __restrict x = {};", c.inputs[0]);
  c.body.line("float* __restrict y = {};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", numElements(y)));
  std::string off = "0", weight = "1.0", extrap;
  for (size_t d = 0; d < r; ++d) {
    if (y[d] == 1 && tabs[d].identity) continue;
    c.body.line("const int64_t c{} = o / {} % {};", d, ys[d], y[d]);
    if (tabs[d].anyOutside) extrap += fmt::format("{}e{}[c{}]", extrap.empty() ? "" : " || ", d, d);
  }
  if (!extrap.empty())
    c.body.line("if ({}) {{ y[o] = {}; continue; }}", extrap, floatLiteral(a.extrapolationValue));
  c.body.line("double acc = 0;");
  int opened = 0;
  for (size_t d = 0; d < r; ++d) {
    if (y[d] == 1 && tabs[d].identity) continue;
    if (tabs[d].identity) {
      off += fmt::format(" + c{} * {}", d, xs[d]);
      continue;
    }
    c.body.open(fmt::format("for (int64_t k{0} = s{0}[c{0}]; k{0} < s{0}[c{0} + 1]; ++k{0})", d));
    ++opened;
    off += fmt::format(" + i{}[k{}]", d, d);
    weight += fmt::format(" * w{}[k{}]", d, d);
  }
  c.body.line("acc += {} * (double)x[{}];", weight, off);
  for (int i = 0; i < opened; ++i)
    c.body.close();
  c.body.line("y[o] = (float)acc;");
  c.body.close();
}

// --- Hardmax, Trilu, Dropout (inference) -------------------------------------------------------

Support supportsHardmax(const Node& n) {
  return requireF32(n);
}

void emitHardmax(LowerContext& c) {
  const Shape& s = shapeOf(c.node.input(0));
  const auto& axes = c.node.attrs<SoftmaxAttrs>().axes;
  size_t first = axes.empty() ? s.size() : size_t(axes.front());
  size_t last = axes.empty() ? s.size() : size_t(axes.back()) + 1;
  int64_t outer = numElements(s, 0, first), len = numElements(s, first, last);
  int64_t inner = numElements(s, last, s.size());
  c.body.line("// Hardmax: 1 at the first maximum of each of {} x {} runs of {}, else 0", outer,
              inner, len);
  c.body.line("const float* __restrict x = {};", c.inputs[0]);
  c.body.line("float* __restrict y = {};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("const int64_t base = o * {} + i;", len * inner);
  c.body.line("int64_t arg = 0;");
  c.body.line("for (int64_t j = 1; j < {0}; ++j) if (x[base + j * {1}] > x[base + arg * {1}]) "
              "arg = j;",
              len, inner);
  c.body.line("for (int64_t j = 0; j < {0}; ++j) y[base + j * {1}] = j == arg ? 1.0f : 0.0f;", len,
              inner);
  c.body.close();
  c.body.close();
}

void emitTrilu(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<TriluAttrs>();
  const Shape& s = shapeOf(n.input(0));
  int64_t rows = s[s.size() - 2], cols = s.back(), total = numElements(s);
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// Trilu: keep the {} triangle (k = {}) of {} matrices {}x{}",
              a.upper ? "upper" : "lower", a.k, total / std::max<int64_t>(1, rows * cols), rows,
              cols);
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", total));
  c.body.line("const int64_t d = i % {} - i / {} % {};", cols, cols, std::max<int64_t>(1, rows));
  c.body.line("y[i] = d {} {} ? x[i] : {}{{}};", a.upper ? ">=" : "<=", a.k, t);
  c.body.close();
}

void emitDropout(LowerContext& c) {
  const Node& n = c.node;
  int64_t bytes = numElements(shapeOf(n.input(0))) * elemBytes(n.input(0));
  c.body.line("// Dropout at inference: the input, and a mask of all true");
  c.body.line("if ((const void*){} != (const void*){}) std::memmove({}, {}, {});", c.outputs[0],
              c.inputs[0], c.outputs[0], c.inputs[0], bytes);
  if (n.outputs().size() > 1)
    c.body.line("std::memset({}, 1, {});", c.outputs[1], numElements(shapeOf(n.output(1))));
}

// --- ConvTranspose (any number of spatial dims) -------------------------------------------------

Support supportsConvTranspose(const Node& n) {
  if (auto s = requireF32(n); !s.ok) return s;
  return numElements(shapeOf(n.output(0)), 2) < (int64_t(1) << 31)
             ? Support{}
             : no("output planes of 2^31 elements or more");
}

/// Per image and group, col = W^T X (a GEMM: [Mg*taps, Cg] x [Cg, inSize]), then each column
/// entry is scatter-added into Y through the window table the reference kernel uses
/// (windowIndexTable, computed here and stored with the weights).
void emitConvTranspose(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<ConvTransposeAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  Shape inSp(x.begin() + 2, x.end()), outSp(y.begin() + 2, y.end());
  int64_t N = x[0], C = x[1], M = y[1], Cg = C / a.group, Mg = M / a.group;
  int64_t inSize = numElements(inSp), outSize = numElements(outSp), taps = numElements(a.kernel);
  int64_t rows = Mg * taps;
  std::vector<uint8_t> table =
      int32Table(ops::windowIndexTable(inSp, outSp, a.kernel, a.strides, a.dilations, a.pads));
  c.body.line("// {} -> {}: col = W^T x X per image and group ([{}, {}] x [{}, {}]), then "
              "scatter-add",
              shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()), rows, Cg, Cg,
              inSize);
  c.body.line("const int32_t* dst = (const int32_t*){}; // [tap][input position] -> output "
              "position, -1 outside",
              c.data(table));
  std::string col = c.scratch(fmt::format("{} * sizeof(float)", rows * inSize));
  c.body.line("float* col = {};", col);
  c.body.line("const float* x = {};", c.inputs[0]);
  c.body.line("const float* w = {};", c.inputs[1]);
  c.body.line("float* y = {};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t n = 0; n < {}; ++n)", N));
  c.body.open(fmt::format("for (int64_t g = 0; g < {}; ++g)", a.group));
  c.body.line("triad_rt::gemm({}, {}, {}, w + g * {}, {}, true, x + (n * {} + g * {}) * {}, {}, "
              "false, col, {});",
              rows, inSize, Cg, Cg * rows, rows, C, Cg, inSize, inSize, inSize);
  c.body.open(fmt::format("for (int64_t oc = 0; oc < {}; ++oc)", Mg));
  c.body.line("float* yr = y + (n * {} + g * {} + oc) * {};", M, Mg, outSize);
  c.body.line("const float b0 = {};",
              n.input(2) ? fmt::format("{}[g * {} + oc]", c.inputs[2], Mg) : std::string("0.0f"));
  c.body.line("for (int64_t o = 0; o < {}; ++o) yr[o] = b0;", outSize);
  c.body.open(fmt::format("for (int64_t t = 0; t < {}; ++t)", taps));
  c.body.line("const float* cr = col + (oc * {} + t) * {};", taps, inSize);
  c.body.line("const int32_t* d = dst + t * {};", inSize);
  c.body.line("for (int64_t i = 0; i < {}; ++i) if (d[i] >= 0) yr[d[i]] += cr[i];", inSize);
  c.body.close();
  c.body.close();
  c.body.close();
  c.body.close();
}

// --- Pooling ------------------------------------------------------------------------------------

/// The run-time 2-D float kernels (max_pool2d, avg_pool2d) cover this node.
bool fastPool2d(const Node& n) {
  if (!allF32(n) || shapeOf(n.input(0)).size() != 4 || n.outputs().size() > 1) return false;
  const auto& a = n.attrs<PoolAttrs>();
  return n.kind() == OpKind::MaxPool || (a.dilations[0] == 1 && a.dilations[1] == 1);
}

Support supportsPool(const Node& n) {
  if (fastPool2d(n)) return {};
  // Any other pool: a generated loop over the reference's window table.
  if (n.kind() == OpKind::MaxPool) {
    if (auto s = requireInput0(n, {DType::F32, DType::F64, DType::I8, DType::U8}); !s.ok) return s;
  } else if (auto s = requireF32OrF64Input(n); !s.ok) {
    return s;
  }
  const Shape& x = shapeOf(n.input(0));
  if (numElements(x, 2) >= (int64_t(1) << 31)) return no("input planes of 2^31 elements or more");
  int64_t table = numElements(n.attrs<PoolAttrs>().kernel) * numElements(shapeOf(n.output(0)), 2);
  if (table > (int64_t(1) << 26)) return no("window table of 2^26 entries or more");
  return {};
}

/// N-d pooling of any supported dtype (and MaxPool's Indices output): per [n, c] plane and
/// output position, a loop over the window's taps read from the reference's table
/// (ops::windowIndexTable: input offset per tap, -1 in padding). Max compares in double with a
/// strict '>' (the first maximum in window order wins); average sums in double and divides by
/// the valid count, or with count_include_pad by ops::paddedWindowCounts.
void emitPoolGeneric(LowerContext& c) {
  const Node& n = c.node;
  const auto& a = n.attrs<PoolAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  Shape inSp(x.begin() + 2, x.end()), outSp(y.begin() + 2, y.end());
  int64_t planes = x[0] * x[1], inSize = numElements(inSp), outSize = numElements(outSp);
  int64_t taps = numElements(a.kernel);
  bool isMax = n.kind() == OpKind::MaxPool;
  bool indices = isMax && n.outputs().size() > 1;
  DType dt = n.input(0)->type().dtype;
  std::string t = cppTypeName(dt);
  std::string extra;
  if (a.ceilMode) extra += ", ceil_mode";
  if (!isMax && a.countIncludePad) extra += ", count_include_pad";
  if (indices) extra += a.storageOrder == 1 ? ", Indices column-major" : ", Indices row-major";
  c.body.line("// {} {}-D: kernel [{}], strides [{}], dilations [{}], pads [{}]{}: {} -> {}",
              opKindName(n.kind()), inSp.size(), fmt::join(a.kernel, ", "),
              fmt::join(a.strides, ", "), fmt::join(a.dilations, ", "), fmt::join(a.pads, ", "),
              extra, shapeComment(n.input(0)->type()), shapeComment(n.output(0)->type()));
  if (outSize == 0 || planes == 0) return;
  // The reference's table is [tap][output position]; stored transposed, one window per row.
  std::vector<int64_t> src =
      ops::windowIndexTable(outSp, inSp, a.kernel, a.strides, a.dilations, a.pads);
  std::vector<int64_t> windows(src.size());
  for (int64_t tap = 0; tap < taps; ++tap)
    for (int64_t o = 0; o < outSize; ++o)
      windows[size_t(o * taps + tap)] = src[size_t(tap * outSize + o)];
  c.body.line("const int32_t* __restrict window = (const int32_t*){}; // [output position][tap] "
              "-> input offset in the plane, -1 in padding",
              c.data(int32Table(windows)));
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  if (indices) {
    c.body.line("int64_t* __restrict ind = {};", c.outputs[1]);
    if (a.storageOrder == 1) {
      std::vector<int64_t> cm(static_cast<size_t>(inSize));
      for (int64_t i = 0; i < inSize; ++i)
        cm[size_t(i)] = ops::columnMajor(i, inSp);
      c.body.line("const int32_t* __restrict column_major = (const int32_t*){}; // row-major "
                  "offset in the plane -> column-major",
                  c.data(int32Table(cm)));
    }
  }
  bool padded = !isMax && a.countIncludePad;
  if (padded)
    c.body.line("const int32_t* __restrict divisor = (const int32_t*){}; // per output position: "
                "taps inside the input and its pads",
                c.data(int32Table(ops::paddedWindowCounts(a, inSp, outSp))));
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t plane)", planes,
                          2 * outSize * taps));
  c.body.line("const {}* xp = x + plane * {};", t, inSize);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outSize));
  c.body.line("const int32_t* win = window + o * {};", taps);
  if (isMax) {
    c.body.line("double best = 0;");
    c.body.line("int64_t arg = -1;");
    c.body.open(fmt::format("for (int64_t tap = 0; tap < {}; ++tap)", taps));
    c.body.line("if (win[tap] >= 0 && (arg < 0 || (double)xp[win[tap]] > best)) {{ best = "
                "(double)xp[win[tap]]; arg = win[tap]; }}");
    c.body.close();
    std::string lowest = dt == DType::F32 || dt == DType::F64
                             ? std::string("-INFINITY")
                             : fmt::format("std::numeric_limits<{}>::lowest()", t);
    c.body.line("y[plane * {} + o] = arg < 0 ? ({}){} : xp[arg];", outSize, t, lowest);
    if (indices)
      c.body.line("ind[plane * {} + o] = arg < 0 ? -1 : plane * {} + {};", outSize, inSize,
                  a.storageOrder == 1 ? "column_major[arg]" : "arg");
  } else {
    c.body.line("double sum = 0;");
    c.body.line("int64_t count = 0;");
    c.body.line("for (int64_t tap = 0; tap < {}; ++tap) if (win[tap] >= 0) {{ sum += "
                "(double)xp[win[tap]]; ++count; }}",
                taps);
    c.body.line("y[plane * {} + o] = ({})(sum / (double){});", outSize, t,
                padded ? "divisor[o]" : "count");
    if (padded) c.body.line("(void)count;");
  }
  c.body.close();
  c.body.close("});");
}

void emitPool(LowerContext& c) {
  const Node& n = c.node;
  if (!fastPool2d(n)) return emitPoolGeneric(c);
  const auto& a = n.attrs<PoolAttrs>();
  const Shape& x = shapeOf(n.input(0));
  const Shape& y = shapeOf(n.output(0));
  c.body.line("triad_rt::Pool2dShape s;");
  c.body.line("s.N = {}; s.C = {}; s.H = {}; s.W = {}; s.KH = {}; s.KW = {};", x[0], x[1], x[2],
              x[3], a.kernel[0], a.kernel[1]);
  c.body.line("s.stride_h = {}; s.stride_w = {}; s.dil_h = {}; s.dil_w = {};", a.strides[0],
              a.strides[1], a.dilations[0], a.dilations[1]);
  c.body.line("s.pad_t = {}; s.pad_l = {}; s.pad_b = {}; s.pad_r = {}; s.OH = {}; s.OW = {};",
              a.pads[0], a.pads[1], a.pads[2], a.pads[3], y[2], y[3]);
  if (n.kind() == OpKind::MaxPool)
    c.body.line("triad_rt::max_pool2d(s, {}, {});", c.inputs[0], c.outputs[0]);
  else
    c.body.line("triad_rt::avg_pool2d(s, {}, {}, {});", c.inputs[0], c.outputs[0],
                a.countIncludePad ? "true" : "false");
}

Support supportsGlobalPool(const Node& n) {
  if (auto s = requireF32(n); !s.ok) return s;
  return shapeOf(n.input(0)).size() >= 3 ? Support{} : no("input must have spatial dims");
}

void emitGlobalPool(LowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  const char* fn =
      c.node.kind() == OpKind::GlobalAveragePool ? "global_avg_pool" : "global_max_pool";
  c.body.line("triad_rt::{}({}, {}, {}, {});", fn, x[0] * x[1], numElements(x, 2), c.inputs[0],
              c.outputs[0]);
}

// --- Softmax, LogSoftmax, LayerNormalization, BatchNormalization ---------------------------------

/// The run-time row kernels (softmax_rows, log_softmax_rows) cover this node: float32 over
/// trailing axes.
bool rowSoftmax(const Node& n) {
  if (!allF32(n)) return false;
  const auto& axes = n.attrs<SoftmaxAttrs>().axes;
  size_t r = shapeOf(n.input(0)).size();
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != int64_t(r - axes.size() + i)) return false;
  return !axes.empty();
}

Support supportsSoftmax(const Node& n) {
  if (rowSoftmax(n)) return {};
  return requireF32OrF64Input(n); // any axes: a generated loop in double
}

/// Softmax / LogSoftmax over any contiguous axes, as the reference computes it: X viewed as
/// [outer, len, inner], the op along len, in double (max, sum of exp(x - max), then
/// exp(x - max) / sum or x - max - log(sum)).
void emitSoftmaxGeneric(LowerContext& c) {
  const Node& n = c.node;
  const Shape& s = shapeOf(n.input(0));
  const auto& axes = n.attrs<SoftmaxAttrs>().axes;
  size_t first = axes.empty() ? s.size() : size_t(axes.front());
  size_t last = axes.empty() ? s.size() : size_t(axes.back()) + 1;
  int64_t outer = numElements(s, 0, first), len = numElements(s, first, last);
  int64_t inner = numElements(s, last, s.size());
  bool isLog = n.kind() == OpKind::LogSoftmax;
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// {} over axes [{}] of {}: [outer, len, inner] = [{}, {}, {}], in double",
              opKindName(n.kind()), fmt::join(axes, ", "), shapeComment(n.input(0)->type()), outer,
              len, inner);
  if (outer * len * inner == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(
      fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t o)", outer, 20 * len * inner));
  c.body.open(fmt::format("for (int64_t i = 0; i < {}; ++i)", inner));
  c.body.line("const int64_t base = o * {} + i;", len * inner);
  c.body.line("double mx = -INFINITY;");
  c.body.line("for (int64_t j = 0; j < {0}; ++j) if ((double)x[base + j * {1}] > mx || j == 0) "
              "mx = (double)x[base + j * {1}];",
              len, inner);
  c.body.line("double sum = 0;");
  c.body.line("for (int64_t j = 0; j < {}; ++j) sum += std::exp((double)x[base + j * {}] - mx);",
              len, inner);
  if (isLog) {
    c.body.line("const double log_sum = std::log(sum);");
    c.body.line("for (int64_t j = 0; j < {0}; ++j) y[base + j * {1}] = ({2})((double)x[base + j "
                "* {1}] - mx - log_sum);",
                len, inner, t);
  } else {
    c.body.line("for (int64_t j = 0; j < {0}; ++j) y[base + j * {1}] = ({2})(std::exp((double)x["
                "base + j * {1}] - mx) / sum);",
                len, inner, t);
  }
  c.body.close();
  c.body.close("});");
}

void emitSoftmax(LowerContext& c) {
  if (!rowSoftmax(c.node)) return emitSoftmaxGeneric(c);
  const Shape& x = shapeOf(c.node.input(0));
  size_t first = size_t(c.node.attrs<SoftmaxAttrs>().axes.front());
  const char* fn = c.node.kind() == OpKind::Softmax ? "softmax_rows" : "log_softmax_rows";
  c.body.line("triad_rt::{}({}, {}, {}, {});", fn, c.inputs[0], c.outputs[0],
              numElements(x, 0, first), numElements(x, first));
}

Support supportsLayerNorm(const Node& n) {
  if (auto s = requireF32(n); !s.ok) return s;
  const Shape& x = shapeOf(n.input(0));
  int64_t inner = numElements(x, size_t(n.attrs<LayerNormAttrs>().axis));
  for (size_t i = 1; i < 3; ++i)
    if (n.input(i) && numElements(shapeOf(n.input(i))) != inner)
      return no("scale and bias must cover the normalized dims exactly");
  return {};
}

void emitLayerNorm(LowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  const auto& a = c.node.attrs<LayerNormAttrs>();
  // Optional outputs 1 and 2: each row's mean and inverse standard deviation.
  auto stat = [&](size_t i) {
    return c.outputs.size() > i ? c.outputs[i] : std::string("nullptr");
  };
  c.body.line("triad_rt::layernorm_rows({}, {}, {}, {}, {}, {}, {}, {}, {});", c.inputs[0],
              c.outputs[0], numElements(x, 0, size_t(a.axis)), numElements(x, size_t(a.axis)),
              c.inputs[1], c.node.input(2) ? c.inputs[2] : "nullptr", floatLiteral(a.epsilon),
              stat(1), stat(2));
}

void emitRmsNorm(LowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  const auto& a = c.node.attrs<LayerNormAttrs>();
  c.body.line("triad_rt::rmsnorm_rows({}, {}, {}, {}, {}, {});", c.inputs[0], c.outputs[0],
              numElements(x, 0, size_t(a.axis)), numElements(x, size_t(a.axis)), c.inputs[1],
              floatLiteral(a.epsilon));
}

/// Constant float32 statistics: folded into a per-channel scale and shift at creation.
bool constBatchNorm(const Node& n) {
  if (!allF32(n)) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!n.input(i)->isConstant()) return false;
  return true;
}

Support supportsBatchNorm(const Node& n) {
  if (shapeOf(n.input(0)).size() < 2) return no("input needs a channel dim");
  if (constBatchNorm(n)) return {};
  // Statistics computed by the graph (or float64): per channel at run time, in double.
  if (auto s = requireF32OrF64Input(n); !s.ok) return s;
  for (size_t i = 1; i < 5; ++i) {
    DType t = n.input(i)->type().dtype;
    if (t != DType::F32 && t != DType::F64)
      return no(
          fmt::format("BatchNormalization input {} of type {} is not compiled", i, dtypeName(t)));
  }
  return {};
}

/// BatchNormalization with statistics that are graph inputs: the reference's formula per element,
/// (x - mean) * (1 / sqrt(var + epsilon)) * scale + B, in double.
void emitBatchNormRuntime(LowerContext& c) {
  const Node& n = c.node;
  const Shape& x = shapeOf(n.input(0));
  int64_t N = x[0], C = x[1], inner = numElements(x, 2);
  std::string t = cppTypeName(n.input(0)->type().dtype);
  c.body.line("// BatchNormalization (epsilon {}) of {}: scale, B, mean and var are inputs, "
              "applied per channel in double",
              floatLiteral(n.attrs<NormAttrs>().epsilon), shapeComment(n.input(0)->type()));
  if (N * C * inner == 0) return;
  c.body.line("const {}* __restrict x = {};", t, c.inputs[0]);
  c.body.line("{}* __restrict y = {};", t, c.outputs[0]);
  c.body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t ch)", C, 2 * N * inner));
  c.body.line("const double inv = 1.0 / std::sqrt((double){}[ch] + (double){});", c.inputs[4],
              floatLiteral(n.attrs<NormAttrs>().epsilon));
  c.body.line("const double scale = {}[ch], shift = {}[ch], mean = {}[ch];", c.inputs[1],
              c.inputs[2], c.inputs[3]);
  c.body.open(fmt::format("for (int64_t b = 0; b < {}; ++b)", N));
  c.body.line("const int64_t base = (b * {} + ch) * {};", C, inner);
  c.body.line("for (int64_t i = 0; i < {}; ++i) y[base + i] = ({})(((double)x[base + i] - mean) * "
              "inv * scale + shift);",
              inner, t);
  c.body.close();
  c.body.close("});");
}

void emitBatchNorm(LowerContext& c) {
  const Node& n = c.node;
  if (!constBatchNorm(n)) return emitBatchNormRuntime(c);
  const Shape& x = shapeOf(n.input(0));
  int64_t C = x[1], inner = numElements(x, 2), outer = x[0];
  std::string ab = "bn_" + c.ident;
  c.fields.line("float* {} = nullptr; // {}: per-channel scale and shift", ab,
                escape::comment(n.name()));
  c.create.line("m.{} = (float*)m.alloc({} * sizeof(float));", ab, 2 * C);
  c.create.open(fmt::format("for (int64_t ch = 0; ch < {}; ++ch)", C));
  c.create.line("const float s = {}[ch] / std::sqrt({}[ch] + {});", c.inputs[1], c.inputs[4],
                floatLiteral(n.attrs<NormAttrs>().epsilon));
  c.create.line("m.{0}[ch] = s; m.{0}[{1} + ch] = {2}[ch] - {3}[ch] * s;", ab, C, c.inputs[2],
                c.inputs[3]);
  c.create.close();
  c.body.line("const float* __restrict x = {};", c.inputs[0]);
  c.body.line("float* __restrict y = {};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t p = 0; p < {}; ++p)", outer * C));
  c.body.line("const float s = m.{0}[p % {1}], t = m.{0}[{1} + p % {1}];", ab, C);
  c.body.line("for (int64_t i = 0; i < {0}; ++i) y[p * {0} + i] = x[p * {0} + i] * s + t;", inner);
  c.body.close();
}

// --- Data movement (any element type: bytes) -----------------------------------------------------

void emitTranspose(LowerContext& c) {
  const Shape& x = shapeOf(c.node.input(0));
  const auto& perm = c.node.attrs<TransposeAttrs>().perm;
  std::vector<int64_t> xs = stridesOf(x);
  const Shape& y = shapeOf(c.node.output(0));
  std::vector<int64_t> ys = stridesOf(y), src(y.size());
  for (size_t d = 0; d < y.size(); ++d)
    src[d] = xs[size_t(perm[d])];
  emitStridedCopy(c.body, c.outputs[0], c.inputs[0], y, ys, src, 0, elemBytes(c.node.input(0)));
}

void emitSlice(LowerContext& c) {
  const auto& a = c.node.attrs<SliceAttrs>();
  std::vector<int64_t> xs = stridesOf(shapeOf(c.node.input(0)));
  const Shape& y = a.outShape;
  std::vector<int64_t> ys = stridesOf(y), src(y.size());
  int64_t base = 0;
  for (size_t d = 0; d < y.size(); ++d) {
    src[d] = xs[d] * a.steps[d];
    base += a.starts[d] * xs[d];
  }
  if (numElements(y) == 0) return;
  emitStridedCopy(c.body, c.outputs[0], c.inputs[0], y, ys, src, base, elemBytes(c.node.input(0)));
}

void emitConcat(LowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& y = shapeOf(n.output(0));
  int64_t outer = numElements(y, 0, axis), elem = elemBytes(n.output(0));
  int64_t yrow = numElements(y, axis) * elem;
  c.body.line("unsigned char* db = (unsigned char*){};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  int64_t off = 0;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    int64_t row = numElements(shapeOf(n.input(i)), axis) * elem;
    if (row == 0) continue;
    c.body.line("std::memcpy(db + o * {} + {}, (const unsigned char*){} + o * {}, {});", yrow, off,
                c.inputs[i], row, row);
    off += row;
  }
  c.body.close();
}

void emitSplit(LowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<SplitAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  int64_t outer = numElements(x, 0, axis), elem = elemBytes(n.input(0));
  int64_t xrow = numElements(x, axis) * elem;
  if (xrow == 0) return; // every output is empty
  c.body.line("const unsigned char* sb = (const unsigned char*){};", c.inputs[0]);
  c.body.open(fmt::format("for (int64_t o = 0; o < {}; ++o)", outer));
  int64_t off = 0;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    int64_t row = numElements(shapeOf(n.output(i)), axis) * elem;
    if (row == 0) continue;
    c.body.line("std::memcpy((unsigned char*){} + o * {}, sb + o * {} + {}, {});", c.outputs[i],
                row, xrow, off, row);
    off += row;
  }
  c.body.close();
}

Support supportsGather(const Node& n) {
  return requireIndices(n, 1);
}

void emitGather(LowerContext& c) {
  const Node& n = c.node;
  size_t axis = size_t(n.attrs<AxisAttrs>().axis);
  const Shape& x = shapeOf(n.input(0));
  int64_t outer = numElements(x, 0, axis), dim = x[axis], elem = elemBytes(n.input(0));
  int64_t inner = numElements(x, axis + 1) * elem;
  int64_t count = numElements(shapeOf(n.input(1)));
  c.body.line("const unsigned char* sb = (const unsigned char*){};", c.inputs[0]);
  c.body.line("unsigned char* db = (unsigned char*){};", c.outputs[0]);
  c.body.open(fmt::format("for (int64_t k = 0; k < {}; ++k)", count));
  c.body.line("int64_t ix = (int64_t){}[k];", c.inputs[1]);
  emitIndexCheck(c.body, n, "ix", dim, "an index");
  c.body.line("for (int64_t o = 0; o < {0}; ++o) std::memcpy(db + (o * {1} + k) * {2}, sb + "
              "(o * {3} + ix) * {2}, {2});",
              outer, count, inner, dim);
  c.body.close();
}

const LoweringTable& table() {
  static const LoweringTable t = [] {
    LoweringTable t = {
        {OpKind::Gemm, {supportsGemm, emitGemm, true}},
        {OpKind::MatMul, {supportsMatMul, emitMatMul, true}},
        {OpKind::Conv, {supportsConv, emitConv, true, blockableConv}},
        {OpKind::MaxPool, {supportsPool, emitPool, false}},
        {OpKind::ReduceSum, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceMean, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceMax, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceMin, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceProd, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceL1, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceL2, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceLogSum, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceLogSumExp, {supportsReduce, emitReduce, false}},
        {OpKind::ReduceSumSquare, {supportsReduce, emitReduce, false}},
        {OpKind::ArgMax, {requireF32OrF64Input, emitArgReduce, false}},
        {OpKind::ArgMin, {requireF32OrF64Input, emitArgReduce, false}},
        {OpKind::CumSum, {supportsCumSum, emitCumSum, false}},
        {OpKind::CumProd, {supportsCumSum, emitCumSum, false}},
        {OpKind::ConvTranspose, {supportsConvTranspose, emitConvTranspose, false}},
        {OpKind::Resize, {requireF32Input0, emitResize, false}},
        {OpKind::Upsample, {requireF32Input0, emitResize, false}},
        {OpKind::NegativeLogLikelihoodLoss, {requireF32OrF64Input, emitLoss, false}},
        {OpKind::SoftmaxCrossEntropyLoss, {requireF32OrF64Input, emitLoss, false}},
        {OpKind::Hardmax, {supportsHardmax, emitHardmax, false}},
        {OpKind::Trilu, {anyType, emitTrilu, false}},
        {OpKind::Dropout, {anyType, emitDropout, false}},
        {OpKind::AveragePool, {supportsPool, emitPool, false}},
        {OpKind::GlobalAveragePool, {supportsGlobalPool, emitGlobalPool, false}},
        {OpKind::GlobalMaxPool, {supportsGlobalPool, emitGlobalPool, false}},
        {OpKind::Softmax, {supportsSoftmax, emitSoftmax, false}},
        {OpKind::LogSoftmax, {supportsSoftmax, emitSoftmax, false}},
        {OpKind::LayerNormalization, {supportsLayerNorm, emitLayerNorm, false}},
        {OpKind::RMSNormalization, {supportsLayerNorm, emitRmsNorm, false}},
        {OpKind::BatchNormalization, {supportsBatchNorm, emitBatchNorm, false}},
        {OpKind::Transpose, {anyType, emitTranspose, false}},
        {OpKind::Slice, {anyType, emitSlice, false}},
        {OpKind::Concat, {anyType, emitConcat, false}},
        {OpKind::Split, {anyType, emitSplit, false}},
        {OpKind::Gather, {supportsGather, emitGather, false}},
    };
    addMovementLowerings(t);
    addNormalizationLowerings(t);
    addSignalLowerings(t);
    return t;
  }();
  return t;
}

} // namespace

const Lowering* findLowering(OpKind k) {
  auto it = table().find(k);
  return it == table().end() ? nullptr : &it->second;
}

const Lowering* kernelLowering(const Node& n) {
  const Lowering* l = findLowering(n.kind());
  if (l && l->elementwiseFirst && hasScalarExpr(n, ScalarTypes::all())) return nullptr;
  return l;
}

Support nativeSupport(const Node& n) {
  if (isViewOp(n.kind())) return {};
  if (n.kind() == OpKind::Expand) return {};
  if (const Lowering* l = kernelLowering(n)) return l->supports ? l->supports(n) : Support{};
  if (hasScalarExpr(n, ScalarTypes::all())) return {};
  for (Value* v : n.inputs())
    if (v && v->type().dtype != DType::F32)
      return no(fmt::format("no CPU lowering for {} with {} inputs", opKindName(n.kind()),
                            dtypeName(v->type().dtype)));
  return no(fmt::format("no CPU lowering for {}", opKindName(n.kind())));
}

FusionPolicy cpuFusionPolicy() {
  FusionPolicy p;
  p.isAnchor = [](const Node& n) {
    const Lowering* l = kernelLowering(n);
    return l && l->anchor && nativeSupport(n).ok;
  };
  p.isFusableElementwise = [](const Node& n) {
    return (hasScalarExpr(n, ScalarTypes::all()) && !kernelLowering(n)) ||
           n.kind() == OpKind::Expand;
  };
  p.isFusableView = [](const Node& n) { return isViewOp(n.kind()); };
  return p;
}

} // namespace triad::cpu
