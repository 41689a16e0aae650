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

#include <cstring>

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
  const IntOperands* integer = nullptr; // int32 sums of shifted integers (aValue/bValue: int)
  // IntOperands::dot4: the tiles hold words of 4 bytes along K; aWord (at gm, gk4) and bWord (at
  // gk4, gn) are uint expressions, dot the function of (activation word, weight word).
  std::string aWord, bWord, dot;
};

/// One loop staging a tile in local memory: `loop` over its elements, `index` naming the
/// element, then `tile` = `value`, or `zero` where one of `conds` fails (past the edges).
void emitTileLoad(CodeWriter& w, const std::string& loop, const std::vector<std::string>& index,
                  const std::string& tile, const std::string& value,
                  const std::vector<std::string>& conds, const std::string& zero) {
  w.open("{}", loop);
  for (const std::string& l : index)
    w.line("{}", l);
  w.line("{} = {};", tile,
         conds.empty() ? value
                       : fmt::format("({}) ? {} : {}", fmt::join(conds, " && "), value, zero));
  w.close();
}

/// The dot4 form's K loop: words of four consecutive k staged in local memory, four products per
/// dot (IntOperands::dot4).
void emitDot4Loop(CodeWriter& w, const GemmPlan& plan, bool checkM, bool checkN, bool checkK4) {
  const bool packedA = plan.integer->packedA;
  w.line("__local uint As[TILE_K4][TILE_M]; // A block, 4 k per word, transposed: As[k/4][m]");
  w.line("__local uint Bs[TILE_K4][TILE_N]; // B block, 4 k per word: Bs[k/4][n]");
  w.open("for (int k04 = 0; k04 < K4; k04 += TILE_K4)");
  std::vector<std::string> ca, cb;
  if (checkM) ca.push_back("gm < M");
  if (checkK4) ca.push_back("gk4 < K4"), cb.push_back("gk4 < K4");
  if (checkN) cb.push_back("gn < N");
  emitTileLoad(w, "for (int t = lid; t < TILE_M * TILE_K4; t += WG_M * WG_N)",
               {"const int mm = t / TILE_K4, kk4 = t % TILE_K4, gm = m0 + mm, gk4 = k04 + kk4;"},
               "As[kk4][mm]", plan.aWord, ca, "0u");
  emitTileLoad(w, "for (int t = lid; t < TILE_K4 * TILE_N; t += WG_M * WG_N)",
               {"const int kk4 = t / TILE_N, nn = t % TILE_N, gk4 = k04 + kk4, gn = n0 + nn;"},
               "Bs[kk4][nn]", plan.bWord, cb, "0u");
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.open("for (int kk4 = 0; kk4 < TILE_K4; ++kk4)");
  w.line("uint a_reg[TM];");
  w.line("for (int i = 0; i < TM; ++i) a_reg[i] = As[kk4][ty + i * WG_M];");
  w.open("for (int j = 0; j < TN; ++j)");
  w.line("const uint b_reg = Bs[kk4][j * WG_N + tx];");
  w.line("for (int i = 0; i < TM; ++i) sums[i][j] = {}({}, sums[i][j]);", plan.dot,
         packedA ? "b_reg, a_reg[i]" : "a_reg[i], b_reg");
  w.close();
  w.close();
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.close();
}

/// The K loop of the float and plain integer forms: tileM x tileK blocks of A and tileK x tileN
/// blocks of B staged in local memory (zero past the edges), `sums` accumulated in registers.
void emitTiledLoop(CodeWriter& w, const GemmPlan& plan, int V, bool checkM, bool checkN,
                   bool checkK) {
  const bool integer = plan.integer != nullptr;
  const std::string scalar = integer ? "int" : "float", zero = integer ? "0" : "0.0f";
  const std::string vtype = V == 1 ? scalar : fmt::format("{}{}", scalar, V);
  w.line("__local {} As[TILE_K][TILE_M]; // A block, transposed: As[k][m]", scalar);
  w.line("__local {} Bs[TILE_K][TILE_N]; // B block: Bs[k][n]", scalar);
  w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)");
  std::vector<std::string> ca, cb;
  if (checkM) ca.push_back("gm < M");
  if (checkK) ca.push_back("gk < K"), cb.push_back("gk < K");
  if (checkN) cb.push_back("gn < N");
  emitTileLoad(w, "for (int t = lid; t < TILE_M * TILE_K; t += WG_M * WG_N)",
               {plan.aAlongK ? "const int mm = t / TILE_K, kk = t % TILE_K;"
                             : "const int kk = t / TILE_M, mm = t % TILE_M;",
                "const int gm = m0 + mm, gk = k0 + kk;"},
               "As[kk][mm]", plan.aValue, ca, zero);
  emitTileLoad(w, "for (int t = lid; t < TILE_K * TILE_N; t += WG_M * WG_N)",
               {plan.bAlongN ? "const int kk = t / TILE_N, nn = t % TILE_N;"
                             : "const int nn = t / TILE_K, kk = t % TILE_K;",
                "const int gk = k0 + kk, gn = n0 + nn;"},
               "Bs[kk][nn]", plan.bValue, cb, zero);
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.open("for (int kk = 0; kk < TILE_K; ++kk)");
  w.line("{} a_reg[TM];", scalar);
  w.line("for (int i = 0; i < TM; ++i) a_reg[i] = As[kk][ty + i * WG_M];");
  w.open("for (int j = 0; j < TN / VW; ++j)");
  // B read as floatV/intV from local memory where V > 1, A's element broadcast against it.
  const std::string a = V == 1 ? "a_reg[i]" : fmt::format("({})(a_reg[i])", vtype);
  if (V == 1)
    w.line("const {} b_reg = Bs[kk][j * WG_N + tx];", scalar);
  else
    w.line("const {} b_reg = vload{}(0, &Bs[kk][j * WG_N * VW + tx * VW]);", vtype, V);
  if (integer)
    w.line("for (int i = 0; i < TM; ++i) sums[i][j] += {} * b_reg;", a);
  else
    w.line("for (int i = 0; i < TM; ++i) sums[i][j] = mad({}, b_reg, sums[i][j]);", a);
  w.close();
  w.close();
  w.line("barrier(CLK_LOCAL_MEM_FENCE);");
  w.close();
}

/// The dot4 form's four products of byte pairs added to `acc` (wrapping): the activation word
/// (unsigned or signed bytes) by the weight word (signed bytes). One instruction where the
/// compiler has cl_khr_integer_dot_product's dot, or on NVIDIA through PTX's dp4a (`ptx`); four
/// multiplies elsewhere.
std::string dotHelper(bool unsignedX, bool ptx) {
  const char* name = unsignedX ? "triad_dot_us" : "triad_dot_ss";
  const char* xv = unsignedX ? "uchar4" : "char4";
  std::string body;
  if (ptx)
    body = fmt::format(R"(int {0}(uint x, uint w, int acc) {{
  int d;
  asm("dp4a.{1}32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(w), "r"(acc));
  return d;
}})",
                       name, unsignedX ? "u" : "s");
  else
    body = fmt::format(R"(#ifdef cl_khr_integer_dot_product
#pragma OPENCL EXTENSION cl_khr_integer_dot_product : enable
int {0}(uint x, uint w, int acc) {{ return acc + dot(as_{1}(x), as_char4(w)); }}
#else
int {0}(uint x, uint w, int acc) {{
  const {1} a = as_{1}(x);
  const char4 b = as_char4(w);
  return acc + a.s0 * b.s0 + a.s1 * b.s1 + a.s2 * b.s2 + a.s3 * b.s3;
}}
#endif)",
                       name, xv);
  return fmt::format("#ifndef TRIAD_HELPER_{0}\n#define TRIAD_HELPER_{0}\n// acc + four products "
                     "of bytes: x {1} bytes, w signed bytes.\n{2}\n#endif",
                     unsignedX ? "DOT_US" : "DOT_SS", unsignedX ? "unsigned" : "signed", body);
}

/// A stored byte of an integer operand as a uint (its bits, for packing into words).
std::string rawByte(const std::string& element, const std::string& type) {
  return type == "char" ? fmt::format("(uint)as_uchar({})", element)
                        : fmt::format("(uint){}", element);
}

GeneratedKernel emitGemm(const GemmPlan& plan, const GemmParams& p, const Epilogue& epi) {
  validateGemmParams(p);
  if (plan.M * plan.N >= (int64_t(1) << 31) ||
      plan.K * std::max(plan.M, plan.N) >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "GEMM '{}': operands exceed 32-bit indexing", plan.name);
  const int V = p.vectorWidth;
  const IntOperands* I = plan.integer;
  if (I && epi.code.empty())
    fail(ErrorKind::Usage, "GEMM '{}': an integer GEMM needs an epilogue declaring acc", plan.name);
  const std::string scalar = I ? "int" : "float", zero = I ? "0" : "0.0f";
  const bool dot4 = I && I->dot4;
  if (dot4 && V != 1)
    fail(ErrorKind::Usage, "GEMM '{}': the dot4 form reads words one by one (vector width 1)",
         plan.name);
  // dot4: K counted in words of four (the operands' last word zero-padded).
  const int64_t K4 = ceilDiv(plan.K, 4), tileK4 = ceilDiv(p.tileK, 4);
  const bool checkM = plan.M % p.tileM() != 0, checkN = plan.N % p.tileN() != 0,
             checkK = dot4 ? K4 % tileK4 != 0 : plan.K % p.tileK != 0;
  const std::string vtype = V == 1 ? scalar : fmt::format("{}{}", scalar, V);

  GeneratedKernel k;
  k.name = plan.name;
  k.range.dims = 3;
  k.range.global = {size_t(ceilDiv(plan.N, p.tileN()) * p.wgN),
                    size_t(ceilDiv(plan.M, p.tileM()) * p.wgM), size_t(plan.batch)};
  k.range.local = {size_t(p.wgN), size_t(p.wgM), 1};
  k.localMemBytes = size_t(dot4 ? tileK4 : p.tileK) * size_t(p.tileM() + p.tileN()) * 4;
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
  if (dot4)
    w.line("#define TILE_K4 {}", tileK4);
  else
    w.line("#define TILE_K {}", p.tileK);
  w.line("#define WG_M {}", p.wgM);
  w.line("#define WG_N {}", p.wgN);
  w.line("#define TM {}", p.workM);
  w.line("#define TN {}", p.workN);
  w.line("#define VW {}", V);
  w.line("__kernel __attribute__((reqd_work_group_size(WG_N, WG_M, 1)))");
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(decls, int(head.size())));
  if (dot4)
    w.line("const int M = {}, N = {}, K4 = {}; // K = {} in words of four", plan.M, plan.N, K4,
           plan.K);
  else
    w.line("const int M = {}, N = {}, K = {};", plan.M, plan.N, plan.K);
  w.line("const int tx = get_local_id(0), ty = get_local_id(1);");
  w.line("const int lid = ty * WG_N + tx;");
  w.line("const int m0 = get_group_id(1) * TILE_M, n0 = get_group_id(0) * TILE_N;");
  if (!plan.batchSetup.empty()) {
    w.line("const int batch = get_global_id(2);");
    w.lines(plan.batchSetup);
  }
  w.line("{} sums[TM][TN / VW];", vtype);
  w.line("for (int i = 0; i < TM; ++i)");
  w.line("  for (int j = 0; j < TN / VW; ++j) sums[i][j] = {};", zero);
  w.blank();
  if (dot4)
    emitDot4Loop(w, plan, checkM, checkN, checkK);
  else
    emitTiledLoop(w, plan, V, checkM, checkN, checkK);
  w.blank();
  w.line("// Epilogue and store.");
  w.open("for (int i = 0; i < TM; ++i)");
  w.line("const int row = m0 + ty + i * WG_M;");
  w.open("for (int j = 0; j < TN / VW; ++j)");
  if (V == 1) {
    w.line("const {} out[1] = {{sums[i][j]}};", scalar);
  } else {
    w.line("{} out[VW];", scalar);
    w.line("vstore{}(sums[i][j], 0, out);", V);
  }
  w.open("for (int e = 0; e < VW; ++e)");
  w.line("const int col = n0 + j * WG_N * VW + tx * VW + e;");
  std::vector<std::string> storeChecks;
  if (checkM) storeChecks.push_back("row < M");
  if (checkN) storeChecks.push_back("col < N");
  if (!storeChecks.empty()) w.line("if (!({})) continue;", fmt::join(storeChecks, " && "));
  if (!I)
    w.line("float acc = out[e];");
  else if (I->compensation.empty())
    w.line("const int iacc = out[e];");
  else // dot4: the products of the activations' zero point, taken at compile time
    w.line("const int iacc = as_int((uint)out[e] - ({}));", I->compensation);
  if (!epi.code.empty()) {
    w.lines(plan.epiloguePrelude);
    w.lines(epi.code);
  }
  w.line("{}", plan.store);
  w.close();
  w.close();
  w.close();
  w.close();
  for (const char* d :
       {"TILE_M", "TILE_N", dot4 ? "TILE_K4" : "TILE_K", "WG_M", "WG_N", "TM", "TN", "VW"})
    w.line("#undef {}", d);
  k.source = w.str();
  return k;
}

} // namespace

std::string IntOperands::describe() const {
  return fmt::format("{} x {} -> int32 sums -> {}", aType, bType, cType);
}

std::string IntOperands::shifted(const std::string& element, const std::string& shift) {
  return shift.empty() ? fmt::format("(int){}", element)
                       : fmt::format("((int){} - {})", element, shift);
}

std::vector<float> packInt8Words(const uint8_t* w, bool isSigned, int64_t rows, int64_t k,
                                 int64_t zeroPoint) {
  const int64_t k4 = ceilDiv(k, 4);
  std::vector<uint32_t> words(size_t(rows * k4), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) {
      int64_t v = (isSigned ? int64_t(int8_t(w[r * k + i])) : int64_t(w[r * k + i])) - zeroPoint;
      if (v < -128 || v > 127) return {};
      words[size_t(r * k4 + i / 4)] |= uint32_t(uint8_t(int8_t(v))) << (8 * (i % 4));
    }
  std::vector<float> out(words.size());
  std::memcpy(out.data(), words.data(), words.size() * 4);
  return out;
}

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
                             const Epilogue& epi, const IntOperands* integer) {
  if (s.M < 1 || s.N < 1 || s.K < 1 || s.batch < 1)
    fail(ErrorKind::Usage, "GEMM '{}': sizes must be positive ({})", layer, s.toString());
  if (p.panel && integer)
    fail(ErrorKind::Usage, "GEMM '{}': integer operands need the tiled kernel", layer);
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
  plan.integer = integer;
  const std::string ta = integer ? integer->aType : "float",
                    tb = integer ? integer->bType : "float",
                    tc = integer ? integer->cType : "float";
  if (integer) plan.comment[0].replace(plan.comment[0].rfind("f32"), 3, integer->describe());
  plan.bufferParams = {fmt::format("__global const {}* restrict A", ta),
                       fmt::format("__global const {}* restrict B", tb),
                       fmt::format("__global {}* restrict C", tc)};
  plan.bufferNames = {"A", "B", "C"};
  if (s.batch > 1) {
    auto offset = [&](const char* name, const std::string& t, bool broadcast, int64_t size) {
      return broadcast
                 ? fmt::format("__global const {1}* {0}b = {0}; // shared by all batches", name, t)
                 : fmt::format("__global const {2}* {0}b = {0} + batch * {1};", name, size, t);
    };
    plan.batchSetup = offset("A", ta, s.broadcastA, s.M * s.K) + "\n" +
                      offset("B", tb, s.broadcastB, s.K * s.N) + "\n" +
                      fmt::format("__global {}* Cb = C + batch * {};", tc, s.M * s.N);
  }
  const std::string a = s.batch > 1 ? "Ab" : "A", b = s.batch > 1 ? "Bb" : "B",
                    c = s.batch > 1 ? "Cb" : "C";
  plan.aValue = s.transA ? a + "[gk * M + gm]" : a + "[gm * K + gk]";
  plan.aAlongK = !s.transA;
  plan.bValue = s.transB ? b + "[gn * K + gk]" : b + "[gk * N + gn]";
  if (integer) {
    plan.aValue = IntOperands::shifted(plan.aValue, integer->aShift);
    plan.bValue = IntOperands::shifted(plan.bValue, integer->bShift);
  }
  if (integer && integer->dot4) {
    if (integer->packedA || s.transA || s.batch > 1)
      fail(ErrorKind::Usage, "GEMM '{}': the dot4 form packs B ({}) and reads A as stored", layer,
           s.toString());
    // B: words of four k per column ([N][K/4]); A: four bytes of a row gathered into a word.
    const int64_t K4 = ceilDiv(s.K, 4);
    plan.bufferParams[1] = "__global const uint* restrict B";
    std::string helper = plan.name + "_a4";
    plan.prelude =
        fmt::format("{}\n// Four bytes of A's row gm from k = 4*gk4, as stored (0 past K).\n"
                    "uint {}(__global const {}* a, int gm, int gk4) {{\n"
                    "  uint v = 0u;\n"
                    "  for (int q = 0; q < 4; ++q)\n"
                    "    if (gk4 * 4 + q < {}) v |= {} << (8 * q);\n"
                    "  return v;\n"
                    "}}",
                    dotHelper(integer->aType == "uchar", integer->ptxDp4a), helper, integer->aType,
                    s.K, rawByte(fmt::format("a[gm * {} + gk4 * 4 + q]", s.K), integer->aType));
    plan.aWord = fmt::format("{}(A, gm, gk4)", helper);
    plan.bWord = fmt::format("B[gn * {} + gk4]", K4);
    plan.dot = integer->aType == "uchar" ? "triad_dot_us" : "triad_dot_ss";
  }
  plan.bAlongN = !s.transB;
  plan.store = c + "[row * N + col] = acc;";
  return emitGemm(plan, p, epi);
}

GeneratedKernel generateConv2DImplicitGemm(std::string_view layer, const ConvShape& s,
                                           const GemmParams& p, const Epilogue& epi,
                                           const IntOperands* integer) {
  s.validate();
  if (p.panel && integer)
    fail(ErrorKind::Usage, "convolution '{}': integer operands need the tiled kernel", layer);
  if (p.panel) return generatePanelConv(layer, s, p, epi);
  const int64_t OH = s.outH(), OW = s.outW(), G = s.group;
  const int64_t Cg = s.C / G, Kg = s.K / G, RS = s.R * s.S;
  GemmPlan plan;
  plan.name = kernelIdentifier(layer);
  plan.M = Kg;
  plan.N = OH * OW;
  plan.K = Cg * RS;
  plan.batch = s.N * G;
  plan.integer = integer;
  // dot4: W packed as words of four k per output channel ([K][ceil(Cg*R*S/4)]).
  const bool dot4 = integer && integer->dot4;
  const int64_t K4 = ceilDiv(Cg * RS, 4);
  const std::string tw = dot4      ? "uint"
                         : integer ? integer->aType
                                   : "float",
                    tx = integer ? integer->bType : "float",
                    ty = integer ? integer->cType : "float";
  plan.comment = {
      fmt::format("Layer: {} (Conv, implicit GEMM), {}", escape::comment(layer),
                  integer ? integer->describe() : "f32"),
      fmt::format("  {}", s.toString()),
      fmt::format("  per image and group: Y[{}, {}x{}] = W[{}, {}x{}x{}] . im2col(X)[{}, {}], "
                  "im2col gathered on the fly",
                  Kg, OH, OW, Kg, Cg, s.R, s.S, Cg * RS, OH * OW)};
  plan.bufferParams = {fmt::format("__global const {}* restrict X", tx),
                       fmt::format("__global const {}* restrict W", tw),
                       fmt::format("__global {}* restrict Y", ty)};
  plan.bufferNames = {"X", "W", "Y"};
  std::string helper = plan.name + "_im2col";
  // Integer inputs: the element shifted by the zero point `zp` (an argument: it may be read at
  // run time), and 0 (the zero point, shifted) in the padding.
  const std::string elem = "x[(c * {H} + ih) * {W} + iw]";
  plan.prelude = fmt::format(
      "// im2col(X) of one image and group: row c*{R}*{S} + r*{S} + s, column oh*{OW} + ow.\n"
      "{T} {helper}(__global const {TX}* x, int row, int col{ZP}) {{\n"
      "  const int c = row / {RS}, r = (row / {S}) % {R}, s = row % {S};\n"
      "  const int oh = col / {OW}, ow = col % {OW};\n"
      "  const int ih = oh * {SH} - {PT} + r * {DH}, iw = ow * {SW} - {PL} + s * {DW};\n"
      "  return (ih >= 0 && ih < {H} && iw >= 0 && iw < {W}) ? {E} : {Z};\n"
      "}}",
      fmt::arg("helper", helper), fmt::arg("R", s.R), fmt::arg("S", s.S), fmt::arg("RS", RS),
      fmt::arg("OW", OW), fmt::arg("SH", s.strideH), fmt::arg("SW", s.strideW),
      fmt::arg("PT", s.padTop), fmt::arg("PL", s.padLeft), fmt::arg("DH", s.dilationH),
      fmt::arg("DW", s.dilationW), fmt::arg("H", s.H), fmt::arg("W", s.W),
      fmt::arg("T", integer ? "int" : "float"), fmt::arg("TX", tx),
      fmt::arg("E", fmt::format(fmt::runtime(integer ? "((int)" + elem + " - zp)" : elem),
                                fmt::arg("H", s.H), fmt::arg("W", s.W))),
      fmt::arg("Z", integer ? "0" : "0.0f"), fmt::arg("ZP", integer ? ", int zp" : ""));
  plan.batchSetup = fmt::format("const int n = batch / {G}, g = batch % {G}; // image, group\n"
                                "__global const {TW}* w = W + g * {wstride};\n"
                                "__global const {TX}* x = X + (n * {C} + g * {Cg}) * {HW};\n"
                                "__global {TY}* y = Y + (n * {K} + g * {Kg}) * {OHW};",
                                fmt::arg("G", G), fmt::arg("wstride", Kg * (dot4 ? K4 : Cg * RS)),
                                fmt::arg("C", s.C), fmt::arg("Cg", Cg), fmt::arg("HW", s.H * s.W),
                                fmt::arg("K", s.K), fmt::arg("Kg", Kg), fmt::arg("OHW", OH * OW),
                                fmt::arg("TW", tw), fmt::arg("TX", tx), fmt::arg("TY", ty));
  plan.aValue =
      integer ? IntOperands::shifted("w[gm * K + gk]", integer->aShift) : "w[gm * K + gk]";
  plan.aAlongK = true;
  plan.bValue = integer ? fmt::format("{}(x, gk, gn, {})", helper,
                                      integer->bShift.empty() ? "0" : integer->bShift)
                        : fmt::format("{}(x, gk, gn)", helper);
  if (dot4) {
    if (!integer->packedA)
      fail(ErrorKind::Usage, "convolution '{}': the dot4 form packs the weights (A)", layer);
    // X: four im2col bytes gathered into a word, as stored, the zero point's byte in the
    // padding (its products are compensated).
    plan.prelude = fmt::format(
        "{dot}\n"
        "// Four bytes of im2col(X) of one image and group from row 4*gk4 (rows c*{R}*{S} + r*{S} "
        "+ s), column oh*{OW} + ow,\n// as stored: the zero point's byte in the padding, 0 past "
        "the last row.\n"
        "uint {helper}4(__global const {TX}* x, int gk4, int col, uint pad) {{\n"
        "  const int oh = col / {OW}, ow = col % {OW};\n"
        "  uint v = 0u;\n"
        "  for (int q = 0; q < 4; ++q) {{\n"
        "    const int row = gk4 * 4 + q;\n"
        "    if (row >= {KR}) break;\n"
        "    const int c = row / {RS}, r = (row / {S}) % {R}, s = row % {S};\n"
        "    const int ih = oh * {SH} - {PT} + r * {DH}, iw = ow * {SW} - {PL} + s * {DW};\n"
        "    const uint b = (ih >= 0 && ih < {H} && iw >= 0 && iw < {W}) ? {E} : pad;\n"
        "    v |= b << (8 * q);\n"
        "  }}\n"
        "  return v;\n"
        "}}",
        fmt::arg("dot", dotHelper(integer->bType == "uchar", integer->ptxDp4a)),
        fmt::arg("helper", helper), fmt::arg("R", s.R), fmt::arg("S", s.S), fmt::arg("RS", RS),
        fmt::arg("KR", Cg * RS), fmt::arg("OW", OW), fmt::arg("SH", s.strideH),
        fmt::arg("SW", s.strideW), fmt::arg("PT", s.padTop), fmt::arg("PL", s.padLeft),
        fmt::arg("DH", s.dilationH), fmt::arg("DW", s.dilationW), fmt::arg("H", s.H),
        fmt::arg("W", s.W), fmt::arg("TX", tx),
        fmt::arg("E", rawByte(fmt::format("x[(c * {} + ih) * {} + iw]", s.H, s.W), tx)));
    plan.aWord = fmt::format("w[gm * {} + gk4]", K4);
    plan.bWord = fmt::format("{}4(x, gk4, gn, {})", helper, integer->bPad);
    plan.dot = integer->bType == "uchar" ? "triad_dot_us" : "triad_dot_ss";
  }
  plan.bAlongN = true;
  plan.epiloguePrelude =
      fmt::format("const int k = g * {} + row, oh = col / {}, ow = col % {};", Kg, OW, OW);
  plan.store = "y[row * N + col] = acc;";
  return emitGemm(plan, p, epi);
}

} // namespace triad::gpu
