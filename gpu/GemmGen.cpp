// The tiled GEMM generator and the implicit-GEMM convolution built on it.
//
// Blocking: a work-group of wgN x wgM work-items computes a tileM x tileN block of C; each
// work-item holds a workM x workN register tile. Work-item (tx, ty) owns rows ty + i*wgM and,
// with vector width V, the V-wide column groups tx*V + j*wgN*V: with V = 1 neighbouring
// work-items write neighbouring columns (coalesced on GPUs), with V = workN a work-item owns a
// contiguous strip it reads from local memory as floatV. The K loop stages a tileM x tileK
// block of A and a tileK x tileN block of B in local memory (zero-filled past the edges).
#include "gpu/CodeWriter.h"
#include "gpu/KernelGen.h"
#include "gpu/PanelGen.h"

namespace triad::gpu {

std::string GemmShape::toString() const {
  std::string t;
  if (transA) t += "AT";
  if (transB) t += t.empty() ? "BT" : ",BT";
  return fmt::format("{}x{}x{}x{}{}", batch, M, N, K, t.empty() ? "" : " (" + t + ")");
}

std::string GemmParams::toString() const {
  if (panel)
    return fmt::format("panel wg {}x{} work {}x{} vec {}", wgM, wgN, workM, workN, vectorWidth);
  return fmt::format("wg {}x{} work {}x{} k {} vec {}", wgM, wgN, workM, workN, tileK, vectorWidth);
}

void validateGemmParams(const GemmParams& p) {
  auto positive = [](int v, const char* what) {
    if (v < 1 || v > 1024)
      fail(ErrorKind::Usage, "GEMM parameter {} = {} is out of range", what, v);
  };
  positive(p.wgM, "wgM");
  positive(p.wgN, "wgN");
  positive(p.workM, "workM");
  positive(p.workN, "workN");
  positive(p.tileK, "tileK");
  int v = p.vectorWidth;
  if (v != 1 && v != 2 && v != 4 && v != 8 && v != 16)
    fail(ErrorKind::Usage, "GEMM parameter vectorWidth = {} is not 1, 2, 4, 8 or 16", v);
  if (p.workN % v != 0)
    fail(ErrorKind::Usage, "GEMM parameter vectorWidth = {} does not divide workN = {}", v,
         p.workN);
  // The panel kernel holds its whole block in registers as floatN vectors (32 of AVX-512's
  // registers are 512 floats); the tiled kernel's block is strided over the work-group.
  const int maxTile = p.panel ? 512 : 256;
  if (p.workM * p.workN > maxTile)
    fail(ErrorKind::Usage, "GEMM register tile {}x{} is larger than {} floats", p.workM, p.workN,
         maxTile);
  if (p.panel && p.tileK != 1)
    fail(ErrorKind::Usage, "GEMM parameter tileK = {}: the panel kernel has no K tiles (1)",
         p.tileK);
}

namespace {

// What differs between a plain GEMM and a GEMM whose operands are gathered (implicit-GEMM conv).
struct GemmPlan {
  std::string name;
  std::vector<std::string> comment;      // header comment lines, without "// "
  std::vector<std::string> bufferParams; // declarations
  std::vector<std::string> bufferNames;
  std::string prelude;         // helper functions before the kernel
  std::string batchSetup;      // statements using `batch` (operand offsets)
  std::string aValue, bValue;  // element of A at (gm, gk) / of B at (gk, gn), in range
  bool aAlongK = true;         // the A tile is loaded with consecutive work-items along K
  bool bAlongN = true;         // the B tile is loaded with consecutive work-items along N
  std::string epiloguePrelude; // statements defining the epilogue's index variables
  std::string store;           // statement storing `acc` at (row, col)
  int64_t M = 1, N = 1, K = 1, batch = 1;
};

GeneratedKernel emitGemm(const GemmPlan& plan, const GemmParams& p, const Epilogue& epi) {
  validateGemmParams(p);
  if (plan.M * plan.N >= (int64_t(1) << 31) ||
      plan.K * std::max(plan.M, plan.N) >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "GEMM '{}': operands exceed 32-bit indexing", plan.name);
  const int V = p.vectorWidth;
  const bool checkM = plan.M % p.tileM() != 0, checkN = plan.N % p.tileN() != 0,
             checkK = plan.K % p.tileK != 0;
  const std::string vtype = V == 1 ? "float" : fmt::format("float{}", V);

  GeneratedKernel k;
  k.name = plan.name;
  k.range.dims = 3;
  k.range.global = {size_t(ceilDiv(plan.N, p.tileN()) * p.wgN),
                    size_t(ceilDiv(plan.M, p.tileM()) * p.wgM), size_t(plan.batch)};
  k.range.local = {size_t(p.wgN), size_t(p.wgM), 1};
  k.localMemBytes = size_t(p.tileK) * size_t(p.tileM() + p.tileN()) * sizeof(float);
  k.params = plan.bufferNames;
  std::vector<std::string> decls = plan.bufferParams;
  appendParams(epi.params, decls, k.params);

  CodeWriter w;
  for (const std::string& c : plan.comment)
    w.line("// {}", c);
  std::vector<std::string> edges;
  if (checkM) edges.push_back("M");
  if (checkN) edges.push_back("N");
  if (checkK) edges.push_back("K");
  w.line("// Blocking: {}: work-group tile {}x{}, K step {}; edge checks: {}", p.toString(),
         p.tileM(), p.tileN(), p.tileK,
         edges.empty() ? "none" : fmt::format("{}", fmt::join(edges, ", ")));
  w.line("// Epilogue: {}", describeEpilogue(epi.code, epi.description));
  w.line("// Launch: {}; local memory {} bytes.", k.range.toString(), k.localMemBytes);
  if (!plan.prelude.empty()) w.lines(plan.prelude);
  w.line("#define TILE_M {}", p.tileM());
  w.line("#define TILE_N {}", p.tileN());
  w.line("#define TILE_K {}", p.tileK);
  w.line("#define WG_M {}", p.wgM);
  w.line("#define WG_N {}", p.wgN);
  w.line("#define TM {}", p.workM);
  w.line("#define TN {}", p.workN);
  w.line("#define VW {}", V);
  w.line("__kernel __attribute__((reqd_work_group_size(WG_N, WG_M, 1)))");
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(decls, int(head.size())));
  w.line("const int M = {}, N = {}, K = {};", plan.M, plan.N, plan.K);
  w.line("const int tx = get_local_id(0), ty = get_local_id(1);");
  w.line("const int lid = ty * WG_N + tx;");
  w.line("const int m0 = get_group_id(1) * TILE_M, n0 = get_group_id(0) * TILE_N;");
  if (!plan.batchSetup.empty()) {
    w.line("const int batch = get_global_id(2);");
    w.lines(plan.batchSetup);
  }
  w.line("__local float As[TILE_K][TILE_M]; // A block, transposed: As[k][m]");
  w.line("__local float Bs[TILE_K][TILE_N]; // B block: Bs[k][n]");
  w.line("{} sums[TM][TN / VW];", vtype);
  w.line("for (int i = 0; i < TM; ++i)");
  w.line("  for (int j = 0; j < TN / VW; ++j) sums[i][j] = 0.0f;");
  w.blank();
  w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)");
  auto guard = [](std::vector<std::string> conds, const std::string& value) {
    if (conds.empty()) return value;
    return fmt::format("({}) ? {} : 0.0f", fmt::join(conds, " && "), value);
  };
  w.open("for (int t = lid; t < TILE_M * TILE_K; t += WG_M * WG_N)");
  if (plan.aAlongK)
    w.line("const int mm = t / TILE_K, kk = t % TILE_K;");
  else
    w.line("const int kk = t / TILE_M, mm = t % TILE_M;");
  w.line("const int gm = m0 + mm, gk = k0 + kk;");
  {
    std::vector<std::string> c;
    if (checkM) c.push_back("gm < M");
    if (checkK) c.push_back("gk < K");
    w.line("As[kk][mm] = {};", guard(c, plan.aValue));
  }
  w.close();
  w.open("for (int t = lid; t < TILE_K * TILE_N; t += WG_M * WG_N)");
  if (plan.bAlongN)
    w.line("const int kk = t / TILE_N, nn = t % TILE_N;");
  else
    w.line("const int nn = t / TILE_K, kk = t % TILE_K;");
  w.line("const int gk = k0 + kk, gn = n0 + nn;");
  {
    std::vector<std::string> c;
    if (checkK) c.push_back("gk < K");
    if (checkN) c.push_back("gn < N");
    w.line("Bs[kk][nn] = {};", guard(c, plan.bValue));
  }
  w.close();
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.open("for (int kk = 0; kk < TILE_K; ++kk)");
  w.line("float a_reg[TM];");
  w.line("for (int i = 0; i < TM; ++i) a_reg[i] = As[kk][ty + i * WG_M];");
  w.open("for (int j = 0; j < TN / VW; ++j)");
  if (V == 1) {
    w.line("const float b_reg = Bs[kk][j * WG_N + tx];");
    w.line("for (int i = 0; i < TM; ++i) sums[i][j] = mad(a_reg[i], b_reg, sums[i][j]);");
  } else {
    w.line("const {} b_reg = vload{}(0, &Bs[kk][j * WG_N * VW + tx * VW]);", vtype, V);
    w.line("for (int i = 0; i < TM; ++i) sums[i][j] = mad(({})(a_reg[i]), b_reg, sums[i][j]);",
           vtype);
  }
  w.close();
  w.close();
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.close();
  w.blank();
  w.line("// Epilogue and store.");
  w.open("for (int i = 0; i < TM; ++i)");
  w.line("const int row = m0 + ty + i * WG_M;");
  w.open("for (int j = 0; j < TN / VW; ++j)");
  if (V == 1) {
    w.line("const float out[1] = {{sums[i][j]}};");
  } else {
    w.line("float out[VW];");
    w.line("vstore{}(sums[i][j], 0, out);", V);
  }
  w.open("for (int e = 0; e < VW; ++e)");
  w.line("const int col = n0 + j * WG_N * VW + tx * VW + e;");
  std::vector<std::string> storeChecks;
  if (checkM) storeChecks.push_back("row < M");
  if (checkN) storeChecks.push_back("col < N");
  if (!storeChecks.empty()) w.line("if (!({})) continue;", fmt::join(storeChecks, " && "));
  w.line("float acc = out[e];");
  if (!epi.code.empty()) {
    w.lines(plan.epiloguePrelude);
    w.lines(epi.code);
  }
  w.line("{}", plan.store);
  w.close();
  w.close();
  w.close();
  w.close();
  for (const char* d : {"TILE_M", "TILE_N", "TILE_K", "WG_M", "WG_N", "TM", "TN", "VW"})
    w.line("#undef {}", d);
  k.source = w.str();
  return k;
}

} // namespace

std::vector<std::string> gemmComment(std::string_view layer, const GemmShape& s,
                                     std::string_view kind) {
  return {fmt::format("Layer: {} ({}), f32", escape::comment(layer), kind),
          fmt::format("  C[{}{},{}] = {}[{},{}] . {}[{},{}]",
                      s.batch > 1 ? fmt::format("{},", s.batch) : "", s.M, s.N,
                      s.transA ? "A^T" : "A", s.M, s.K, s.transB ? "B^T" : "B", s.K, s.N),
          fmt::format(
              "  A stored [{}{},{}]{}, B stored [{}{},{}]{}, C stored [{}{},{}]",
              s.batch > 1 && !s.broadcastA ? fmt::format("{},", s.batch) : "", s.transA ? s.K : s.M,
              s.transA ? s.M : s.K, s.broadcastA && s.batch > 1 ? " (shared by all batches)" : "",
              s.batch > 1 && !s.broadcastB ? fmt::format("{},", s.batch) : "", s.transB ? s.N : s.K,
              s.transB ? s.K : s.N, s.broadcastB && s.batch > 1 ? " (shared by all batches)" : "",
              s.batch > 1 ? fmt::format("{},", s.batch) : "", s.M, s.N)};
}

GeneratedKernel generateGemm(std::string_view layer, const GemmShape& s, const GemmParams& p,
                             const Epilogue& epi) {
  if (s.M < 1 || s.N < 1 || s.K < 1 || s.batch < 1)
    fail(ErrorKind::Usage, "GEMM '{}': sizes must be positive ({})", layer, s.toString());
  if (p.panel) return generatePanelGemm(layer, s, p, epi);
  if (s.packedB)
    fail(ErrorKind::Usage, "GEMM '{}': a packed B needs the panel kernel ({})", layer,
         p.toString());
  GemmPlan plan;
  plan.name = kernelIdentifier(layer);
  plan.M = s.M;
  plan.N = s.N;
  plan.K = s.K;
  plan.batch = s.batch;
  plan.comment = gemmComment(layer, s, "GEMM");
  plan.bufferParams = {"__global const float* restrict A", "__global const float* restrict B",
                       "__global float* restrict C"};
  plan.bufferNames = {"A", "B", "C"};
  if (s.batch > 1) {
    auto offset = [&](const char* name, bool broadcast, int64_t size) {
      return broadcast
                 ? fmt::format("__global const float* {0}b = {0}; // shared by all batches", name)
                 : fmt::format("__global const float* {0}b = {0} + batch * {1};", name, size);
    };
    plan.batchSetup = offset("A", s.broadcastA, s.M * s.K) + "\n" +
                      offset("B", s.broadcastB, s.K * s.N) + "\n" +
                      fmt::format("__global float* Cb = C + batch * {};", s.M * s.N);
  }
  const std::string a = s.batch > 1 ? "Ab" : "A", b = s.batch > 1 ? "Bb" : "B",
                    c = s.batch > 1 ? "Cb" : "C";
  plan.aValue = s.transA ? a + "[gk * M + gm]" : a + "[gm * K + gk]";
  plan.aAlongK = !s.transA;
  plan.bValue = s.transB ? b + "[gn * K + gk]" : b + "[gk * N + gn]";
  plan.bAlongN = !s.transB;
  plan.store = c + "[row * N + col] = acc;";
  return emitGemm(plan, p, epi);
}

GeneratedKernel generateConv2DImplicitGemm(std::string_view layer, const ConvShape& s,
                                           const GemmParams& p, const Epilogue& epi) {
  s.validate();
  if (p.panel) return generatePanelConv(layer, s, p, epi);
  const int64_t OH = s.outH(), OW = s.outW(), G = s.group;
  const int64_t Cg = s.C / G, Kg = s.K / G, RS = s.R * s.S;
  GemmPlan plan;
  plan.name = kernelIdentifier(layer);
  plan.M = Kg;
  plan.N = OH * OW;
  plan.K = Cg * RS;
  plan.batch = s.N * G;
  plan.comment = {
      fmt::format("Layer: {} (Conv, implicit GEMM), f32", escape::comment(layer)),
      fmt::format("  {}", s.toString()),
      fmt::format("  per image and group: Y[{}, {}x{}] = W[{}, {}x{}x{}] . im2col(X)[{}, {}], "
                  "im2col gathered on the fly",
                  Kg, OH, OW, Kg, Cg, s.R, s.S, Cg * RS, OH * OW)};
  plan.bufferParams = {"__global const float* restrict X", "__global const float* restrict W",
                       "__global float* restrict Y"};
  plan.bufferNames = {"X", "W", "Y"};
  std::string helper = plan.name + "_im2col";
  plan.prelude = fmt::format(
      "// im2col(X) of one image and group: row c*{R}*{S} + r*{S} + s, column oh*{OW} + ow.\n"
      "float {helper}(__global const float* x, int row, int col) {{\n"
      "  const int c = row / {RS}, r = (row / {S}) % {R}, s = row % {S};\n"
      "  const int oh = col / {OW}, ow = col % {OW};\n"
      "  const int ih = oh * {SH} - {PT} + r * {DH}, iw = ow * {SW} - {PL} + s * {DW};\n"
      "  return (ih >= 0 && ih < {H} && iw >= 0 && iw < {W}) ? x[(c * {H} + ih) * {W} + iw] : "
      "0.0f;\n"
      "}}",
      fmt::arg("helper", helper), fmt::arg("R", s.R), fmt::arg("S", s.S), fmt::arg("RS", RS),
      fmt::arg("OW", OW), fmt::arg("SH", s.strideH), fmt::arg("SW", s.strideW),
      fmt::arg("PT", s.padTop), fmt::arg("PL", s.padLeft), fmt::arg("DH", s.dilationH),
      fmt::arg("DW", s.dilationW), fmt::arg("H", s.H), fmt::arg("W", s.W));
  plan.batchSetup = fmt::format("const int n = batch / {G}, g = batch % {G}; // image, group\n"
                                "__global const float* w = W + g * {wstride};\n"
                                "__global const float* x = X + (n * {C} + g * {Cg}) * {HW};\n"
                                "__global float* y = Y + (n * {K} + g * {Kg}) * {OHW};",
                                fmt::arg("G", G), fmt::arg("wstride", Kg * Cg * RS),
                                fmt::arg("C", s.C), fmt::arg("Cg", Cg), fmt::arg("HW", s.H * s.W),
                                fmt::arg("K", s.K), fmt::arg("Kg", Kg), fmt::arg("OHW", OH * OW));
  plan.aValue = "w[gm * K + gk]";
  plan.aAlongK = true;
  plan.bValue = fmt::format("{}(x, gk, gn)", helper);
  plan.bAlongN = true;
  plan.epiloguePrelude =
      fmt::format("const int k = g * {} + row, oh = col / {}, ow = col % {};", Kg, OW, OW);
  plan.store = "y[row * N + col] = acc;";
  return emitGemm(plan, p, epi);
}

} // namespace triad::gpu
