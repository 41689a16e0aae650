// The panel GEMM and implicit-GEMM convolution kernels for CPU devices (PoCL's pthread device,
// other CPU OpenCL drivers).
//
// A CPU driver runs a work-group as a loop over its work-items: local memory is ordinary memory
// and every barrier cuts that loop in pieces, so the tiled GPU kernel's staging only adds copies
// and loop overhead. Here each work-item is a CPU GEMM micro-kernel: it keeps a workM x workN
// block of C in floatN registers and, per step k of the reduction, loads one workN-wide row of
// its B panel as workN/V vectors (contiguous: the weights are packed once at compile time,
// packGemmPanels), broadcasts workM scalars of A and does workM x workN/V vector multiply-adds.
// Rows past M are clamped (computed again from the last row, never stored) and packed panels
// are zero past N, so the K loop has no edge checks; stores go through the epilogue one element
// at a time. Work-items tile M along dim 0 and N along dim 1, so neighbouring work-groups share
// a B panel in the cache.
#include "gpu/PanelGen.h"
#include "gpu/CodeWriter.h"

#include <algorithm>
#include <functional>

namespace triad::gpu {

GemmParams cpuPanelParams(int64_t N, int vectorWidth) {
  GemmParams p;
  p.panel = true;
  p.tileK = 1;
  p.vectorWidth = vectorWidth == 16 || vectorWidth == 8 || vectorWidth == 4 ? vectorWidth : 4;
  const int V = p.vectorWidth;
  // Accumulators: 24 of AVX-512's 32 vector registers (12 of AVX's 16), the rest for the B
  // row and the broadcast A; at most 4 vectors across, fewer when N is narrower.
  const int budget = V >= 16 ? 24 : 12;
  int vectors = 4;
  while (vectors > 1 && int64_t(vectors - 1) * V >= N)
    --vectors;
  p.workN = vectors * V;
  p.workM = std::min(16, budget / vectors);
  p.wgM = 1;
  p.wgN = 1;
  return p;
}

int maxVectorWidth(const DeviceInfo& device) {
  if (device.type != "CPU") return 16;
  int v = 4;
  while (v < 16 && uint32_t(v * 2) <= device.nativeVectorWidthFloat)
    v *= 2;
  return v;
}

bool gemmParamsFit(const GemmParams& params, const DeviceInfo& device) {
  return params.vectorWidth <= maxVectorWidth(device);
}

GemmParams cpuPanelParams(int64_t N, const DeviceInfo& device) {
  const int preferred = int(std::min<uint32_t>(device.preferredVectorWidthFloat, 16));
  return cpuPanelParams(N, std::min(preferred, maxVectorWidth(device)));
}

std::vector<float> packGemmPanels(const float* b, const GemmShape& s, int panelWidth) {
  TRIAD_ASSERT(panelWidth > 0, "panel width {}", panelWidth);
  const int64_t NR = panelWidth, panels = ceilDiv(s.N, NR);
  const int64_t batches = s.broadcastB ? 1 : s.batch;
  std::vector<float> out(size_t(batches * panels * s.K * NR), 0.0f);
  for (int64_t bt = 0; bt < batches; ++bt) {
    const float* src = b + bt * s.K * s.N;
    float* dst = out.data() + bt * panels * s.K * NR;
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t n = 0; n < s.N; ++n)
        dst[((n / NR) * s.K + k) * NR + n % NR] = s.transB ? src[n * s.K + k] : src[k * s.N + n];
  }
  return out;
}

GemmShape panelConvShape(const ConvShape& s) {
  GemmShape g;
  g.M = s.outH() * s.outW();
  g.N = s.K / s.group;
  g.K = s.C / s.group * s.R * s.S;
  g.transB = true;
  g.batch = s.group;
  return g;
}

std::vector<float> packConvWeights(const float* w, const ConvShape& s, int panelWidth) {
  s.validate();
  return packGemmPanels(w, panelConvShape(s), panelWidth);
}

namespace {

/// What differs between the panel GEMM and the panel convolution.
struct PanelPlan {
  std::string name;
  std::vector<std::string> comment;      // header comment lines, without "// "
  std::vector<std::string> bufferParams; // declarations
  std::vector<std::string> bufferNames;
  std::string setup; // statements after m0/n0 (batch offsets, the B panel pointer)
  /// Emits the reduction: declares what the rows need, opens the loop(s), defines the floats
  /// a0 .. a<TM-1> (A at rows m0 + i and the current reduction index), calls `body` with the
  /// expression of that index, and closes the loops.
  std::function<void(CodeWriter&, int TM, const std::function<void(const std::string&)>& body)>
      reduction;
  /// Pointer to the first of the TN floats of B's row `k` for this work-item ("{k}" replaced).
  std::string bRow;
  /// B read as stored (not packed) and N not a multiple of TN: the last panel's loads are
  /// guarded by `col < N` (the kernel branches once per work-item between the two loops).
  bool guardB = false;
  std::string epiloguePrelude; // statements defining the epilogue's index variables
  std::string store;           // statement storing `acc` at (row, col)
  int64_t M = 1, N = 1, K = 1, batch = 1;
};

std::string replaceAll(std::string s, std::string_view from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

GeneratedKernel emitPanel(const PanelPlan& plan, const GemmParams& p, const Epilogue& epi) {
  validateGemmParams(p);
  TRIAD_ASSERT(p.panel, "kernel '{}': not panel parameters", plan.name);
  if (plan.M * plan.N >= (int64_t(1) << 31) ||
      plan.K * std::max(plan.M, plan.N) >= (int64_t(1) << 31) ||
      plan.K * roundUp(plan.N, p.workN) >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "GEMM '{}': operands exceed 32-bit indexing", plan.name);
  const int V = p.vectorWidth, TM = p.workM, TN = p.workN, NV = TN / V;
  const bool checkM = plan.M % TM != 0, checkN = plan.N % TN != 0;
  const std::string vtype = V == 1 ? "float" : fmt::format("float{}", V);

  GeneratedKernel k;
  k.name = plan.name;
  k.range.dims = 3;
  k.range.global = {size_t(roundUp(ceilDiv(plan.M, TM), p.wgM)),
                    size_t(roundUp(ceilDiv(plan.N, TN), p.wgN)), size_t(plan.batch)};
  k.range.local = {size_t(p.wgM), size_t(p.wgN), 1};
  k.params = plan.bufferNames;
  std::vector<std::string> decls = plan.bufferParams;
  appendParams(epi.params, decls, k.params);

  CodeWriter w;
  for (const std::string& c : plan.comment)
    w.line("// {}", c);
  std::vector<std::string> edges;
  if (checkM) edges.push_back("M (rows clamped, not stored)");
  if (checkN) edges.push_back(plan.guardB ? "N (guarded loads, not stored)" : "N (not stored)");
  w.line("// Blocking: {}: each work-item computes {}x{} outputs in {} {} registers; no local",
         p.toString(), TM, TN, TM * NV, vtype);
  w.line("//   memory, no barriers; edge checks: {}",
         edges.empty() ? "none" : fmt::format("{}", fmt::join(edges, ", ")));
  w.line("// Epilogue: {}", describeEpilogue(epi.code, epi.description));
  w.line("// Launch: {}.", k.range.toString());
  w.line("#define TM {}", TM);
  w.line("#define TN {}", TN);
  w.line("__kernel __attribute__((reqd_work_group_size({}, {}, 1)))", p.wgM, p.wgN);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(decls, int(head.size())));
  w.line("const int M = {}, N = {}, K = {};", plan.M, plan.N, plan.K);
  w.line("const int m0 = get_global_id(0) * TM, n0 = get_global_id(1) * TN;");
  if (k.range.global[0] * size_t(TM) >= size_t(plan.M) + size_t(TM) ||
      k.range.global[1] * size_t(TN) >= size_t(plan.N) + size_t(TN))
    w.line("if (m0 >= M || n0 >= N) return; // work-items rounding up to whole work-groups");
  if (!plan.setup.empty()) w.lines(plan.setup);
  for (int i = 0; i < TM; ++i) {
    std::string decl;
    for (int j = 0; j < NV; ++j)
      decl += fmt::format("{}c{}_{} = 0.0f", j ? ", " : "", i, j);
    w.line("{} {}; // row m0 + {}", vtype, decl, i);
  }

  // One step of the reduction: B's row, then the rows' multiply-adds.
  auto step = [&](bool guarded, const std::string& kIndex) {
    std::string row = replaceAll(plan.bRow, "{k}", kIndex);
    if (guarded) {
      w.line("float bt[TN]; // the last panel: columns past N read as 0");
      w.line("for (int e = 0; e < TN; ++e) bt[e] = n0 + e < N ? ({})[e] : 0.0f;", row);
      row = "bt";
    }
    for (int j = 0; j < NV; ++j) {
      if (V == 1)
        w.line("const float b{} = ({})[{}];", j, row, j);
      else
        w.line("const {} b{} = vload{}({}, {});", vtype, j, V, j, row);
    }
    for (int i = 0; i < TM; ++i) {
      std::string fmas;
      for (int j = 0; j < NV; ++j)
        fmas += fmt::format("{}c{}_{} = mad(({})a{}, b{}, c{}_{});", j ? " " : "", i, j, vtype, i,
                            j, i, j);
      w.line("{}", fmas);
    }
  };
  if (plan.guardB && checkN) {
    w.open("if (n0 + TN <= N)");
    plan.reduction(w, TM, [&](const std::string& kIndex) { step(false, kIndex); });
    w.close();
    w.open("else");
    plan.reduction(w, TM, [&](const std::string& kIndex) { step(true, kIndex); });
    w.close();
  } else {
    plan.reduction(w, TM, [&](const std::string& kIndex) { step(false, kIndex); });
  }
  w.blank();

  w.line("// Epilogue and store, one element at a time.");
  w.line("float out[TM * TN];");
  for (int i = 0; i < TM; ++i) {
    std::string stores;
    for (int j = 0; j < NV; ++j)
      stores +=
          V == 1 ? fmt::format("{}out[{}] = c{}_{};", j ? " " : "", i * NV + j, i, j)
                 : fmt::format("{}vstore{}(c{}_{}, {}, out);", j ? " " : "", V, i, j, i * NV + j);
    w.line("{}", stores);
  }
  w.open("for (int i = 0; i < TM; ++i)");
  w.line("const int row = m0 + i;");
  if (checkM) w.line("if (row >= M) break;");
  w.open("for (int e = 0; e < TN; ++e)");
  w.line("const int col = n0 + e;");
  if (checkN) w.line("if (col >= N) break;");
  w.line("float acc = out[i * TN + e];");
  if (!epi.code.empty()) {
    w.lines(plan.epiloguePrelude);
    w.lines(epi.code);
  }
  w.line("{}", plan.store);
  w.close();
  w.close();
  w.close();
  w.line("#undef TM");
  w.line("#undef TN");
  k.source = w.str();
  return k;
}

} // namespace

GeneratedKernel generatePanelGemm(std::string_view layer, const GemmShape& s, const GemmParams& p,
                                  const Epilogue& epi) {
  if (s.transB && !s.packedB)
    fail(ErrorKind::Usage, "GEMM '{}': the panel kernel reads a transposed B only packed", layer);
  PanelPlan plan;
  plan.name = kernelIdentifier(layer);
  plan.M = s.M;
  plan.N = s.N;
  plan.K = s.K;
  plan.batch = s.batch;
  plan.comment = gemmComment(layer, s, "GEMM, CPU panel kernel");
  if (s.packedB)
    plan.comment.push_back(fmt::format("  B packed: {} panels of [{},{}] (zero past N)",
                                       ceilDiv(s.N, p.workN), s.K, p.workN));
  plan.bufferParams = {"__global const float* restrict A", "__global const float* restrict B",
                       "__global float* restrict C"};
  plan.bufferNames = {"A", "B", "C"};
  const int64_t bBatch = s.packedB ? ceilDiv(s.N, p.workN) * s.K * p.workN : s.K * s.N;
  std::string a = "A", b = "B", c = "C";
  if (s.batch > 1) {
    plan.setup += "const int batch = get_global_id(2);\n";
    auto offset = [&](const char* name, bool broadcast, int64_t size) {
      return broadcast
                 ? fmt::format("__global const float* {0}b = {0}; // shared by all batches\n", name)
                 : fmt::format("__global const float* {0}b = {0} + batch * {1};\n", name, size);
    };
    plan.setup += offset("A", s.broadcastA, s.M * s.K) + offset("B", s.broadcastB, bBatch) +
                  fmt::format("__global float* Cb = C + batch * {};\n", s.M * s.N);
    a = "Ab";
    b = "Bb";
    c = "Cb";
  }
  if (s.packedB) {
    plan.setup += fmt::format("__global const float* bp = {} + (n0 / TN) * {}; // B's panel\n", b,
                              s.K * p.workN);
    plan.bRow = "bp + {k} * TN";
  } else {
    plan.bRow = b + " + {k} * N + n0";
    plan.guardB = true;
  }
  const bool checkM = s.M % p.workM != 0;
  plan.reduction = [&s, a, checkM](CodeWriter& w, int TM, const auto& body) {
    w.line("// A's rows{}.", checkM ? " (clamped at M: the extra rows are never stored)" : "");
    for (int i = 0; i < TM; ++i) {
      std::string r = checkM ? fmt::format("min(m0 + {}, M - 1)", i) : fmt::format("(m0 + {})", i);
      w.line("__global const float* ar{} = {} + {};", i, a, s.transA ? r : r + " * K");
    }
    w.open("for (int k = 0; k < K; ++k)");
    std::string loads;
    for (int i = 0; i < TM; ++i)
      loads += fmt::format("{}a{} = ar{}[{}]", i ? ", " : "", i, i, s.transA ? "k * M" : "k");
    w.line("const float {};", loads);
    body("k");
    w.close();
  };
  plan.store = c + "[row * N + col] = acc;";
  return emitPanel(plan, p, epi);
}

GeneratedKernel generatePanelConv(std::string_view layer, const ConvShape& s, const GemmParams& p,
                                  const Epilogue& epi) {
  const int64_t OH = s.outH(), OW = s.outW(), G = s.group;
  const int64_t Cg = s.C / G, Kg = s.K / G, Q = Cg * s.R * s.S;
  PanelPlan plan;
  plan.name = kernelIdentifier(layer);
  plan.M = OH * OW;
  plan.N = Kg;
  plan.K = Q;
  plan.batch = s.N * G;
  plan.comment = {
      fmt::format("Layer: {} (Conv, implicit GEMM, CPU panel kernel), f32", escape::comment(layer)),
      fmt::format("  {}", s.toString()),
      fmt::format("  per image and group: Y^T[{}x{}, {}] = im2col(X)^T[{}, {}x{}x{}] . W^T, "
                  "im2col gathered on the fly",
                  OH, OW, Kg, OH * OW, Cg, s.R, s.S),
      fmt::format("  W packed: {} group(s) x {} panels of [{},{}] (zero past {} channels)", G,
                  ceilDiv(Kg, p.workN), Q, p.workN, Kg)};
  plan.bufferParams = {"__global const float* restrict X", "__global const float* restrict W",
                       "__global float* restrict Y"};
  plan.bufferNames = {"X", "W", "Y"};
  plan.setup = fmt::format(
      "const int batch = get_global_id(2), n = batch / {G}, g = batch % {G}; // image, group\n"
      "__global const float* x = X + (n * {C} + g * {Cg}) * {HW};\n"
      "__global float* y = Y + (n * {K} + g * {Kg}) * {OHW};\n"
      "__global const float* bp = W + g * {wGroup} + (n0 / TN) * {wPanel}; // W's panel\n",
      fmt::arg("G", G), fmt::arg("C", s.C), fmt::arg("Cg", Cg), fmt::arg("HW", s.H * s.W),
      fmt::arg("K", s.K), fmt::arg("Kg", Kg), fmt::arg("OHW", OH * OW),
      fmt::arg("wGroup", ceilDiv(Kg, p.workN) * Q * p.workN), fmt::arg("wPanel", Q * p.workN));
  plan.bRow = "bp + {k} * TN";
  const bool checkM = plan.M % p.workM != 0;
  // Input rows and columns can fall outside X only on a padded side.
  const bool checkH = s.padTop > 0 || s.padBottom > 0, checkW = s.padLeft > 0 || s.padRight > 0;
  plan.reduction = [&s, checkM, checkH, checkW, OW](CodeWriter& w, int TM, const auto& body) {
    // "v * f" and "v - f", without the no-ops of unit strides and dilations or zero pads.
    auto times = [](const std::string& v, int64_t f) {
      return f == 1 ? v : fmt::format("{} * {}", v, f);
    };
    auto minus = [](const std::string& v, int64_t f) {
      return f == 0 ? v : fmt::format("{} - {}", v, f);
    };
    w.line("// The rows' output pixels{}: top-left input of their windows.",
           checkM ? " (clamped at M: the extra rows are never stored)" : "");
    for (int i = 0; i < TM; ++i) {
      std::string r = checkM ? fmt::format("min(m0 + {}, M - 1)", i) : fmt::format("(m0 + {})", i);
      w.line("const int ih{} = {}, iw{} = {};", i,
             minus(times(fmt::format("{} / {}", r, OW), s.strideH), s.padTop), i,
             minus(times(fmt::format("{} % {}", r, OW), s.strideW), s.padLeft));
    }
    w.open("for (int c = 0; c < {}; ++c)", s.C / s.group);
    w.open("for (int r = 0; r < {}; ++r)", s.R);
    for (int i = 0; i < TM; ++i) {
      const std::string ih = s.R == 1 ? fmt::format("ih{}", i) : fmt::format("ihr{}", i);
      if (s.R > 1) w.line("const int ihr{} = ih{} + {};", i, i, times("r", s.dilationH));
      if (checkH) w.line("const bool inr{0} = {1} >= 0 && {1} < {2};", i, ih, s.H);
      w.line("__global const float* xr{} = x + (c * {} + {}) * {};", i, s.H, ih, s.W);
    }
    w.open("for (int s = 0; s < {}; ++s)", s.S);
    for (int i = 0; i < TM; ++i) {
      const std::string iw =
          s.S == 1 ? fmt::format("iw{}", i) : fmt::format("iw{} + {}", i, times("s", s.dilationW));
      std::string cond;
      if (checkH) cond = fmt::format("inr{}", i);
      if (checkW)
        cond += fmt::format("{}{} >= 0 && {} < {}", cond.empty() ? "" : " && ", iw, iw, s.W);
      std::string load = fmt::format("xr{}[{}]", i, iw);
      w.line("const float a{} = {};", i,
             cond.empty() ? load : fmt::format("({}) ? {} : 0.0f", cond, load));
    }
    body(s.R == 1 && s.S == 1 ? "c" : fmt::format("((c * {} + r) * {} + s)", s.R, s.S));
    w.close();
    w.close();
    w.close();
  };
  plan.epiloguePrelude =
      fmt::format("const int k = g * {} + col, oh = row / {}, ow = row % {};", Kg, OW, OW);
  plan.store = fmt::format("y[col * {} + row] = acc;", OH * OW);
  return emitPanel(plan, p, epi);
}

} // namespace triad::gpu
