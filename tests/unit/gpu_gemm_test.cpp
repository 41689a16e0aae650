// The tiled GEMM generator on the OpenCL device against a naive reference: shapes that are and
// are not multiples of the tiles, transposes, batches with a broadcast operand, an epilogue, and
// three parameter sets (scalar and vector loads from local memory), two per shape. The panel
// kernel (CPU devices) the same way, with B packed and as stored.
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>

#include <array>

namespace triad::gpu {
namespace {

struct GemmCase {
  const char* name;
  GemmShape shape;
};

// clang-format off
const GemmCase kCases[] = {
    {"square64",   {64, 64, 64, false, false, 1, false, false}},
    {"odd",        {37, 53, 29, false, false, 1, false, false}},
    {"transA",     {19, 40, 33, true, false, 1, false, false}},
    {"transB",     {40, 19, 70, false, true, 1, false, false}},
    {"batched",    {17, 30, 21, false, false, 3, false, true}}, // B shared by the 3 batches
    {"batchedAT",  {9, 11, 13, true, true, 2, false, false}},
    {"vector",     {1, 100, 50, false, false, 1, false, false}},
};
// clang-format on

const GemmParams kParams[] = {
    GemmParams{.wgM = 8, .wgN = 8, .workM = 4, .workN = 4, .tileK = 8, .vectorWidth = 1},
    GemmParams{.wgM = 4, .wgN = 8, .workM = 2, .workN = 4, .tileK = 4, .vectorWidth = 4},
    GemmParams{.wgM = 16, .wgN = 2, .workM = 1, .workN = 8, .tileK = 16, .vectorWidth = 2},
};

// Each shape runs with two of the parameter sets (PoCL compile time grows with the kernel count).
std::array<size_t, 2> paramsFor(size_t c) {
  return {c % 3, (c + 1) % 3};
}

std::string variantName(size_t c, size_t p) {
  return fmt::format("gemm_{}_p{}", kCases[c].name, p);
}

// bias + ReLU: the epilogue hook as fused layers will use it.
Epilogue biasRelu() {
  return Epilogue{"acc = fmax(acc + bias[col], 0.0f);",
                  {"__global const float* restrict bias"},
                  "bias[N] + ReLU"};
}

// The panel kernel: every case has rows past a multiple of workM; most have columns past a
// multiple of workN (zero-padded panels, or the guarded loads of a B read as stored).
GemmParams panel(int wgM, int wgN, int workM, int workN, int vec) {
  return GemmParams{.wgM = wgM,
                    .wgN = wgN,
                    .workM = workM,
                    .workN = workN,
                    .tileK = 1,
                    .vectorWidth = vec,
                    .panel = true};
}

GemmShape packed(GemmShape s) {
  s.packedB = true;
  return s;
}

struct PanelCase {
  const char* name;
  GemmShape shape;
  GemmParams params;
};

// clang-format off
const PanelCase kPanelCases[] = {
    {"odd_packed",       packed({37, 53, 29}),                       panel(1, 1, 6, 32, 16)},
    {"odd_stored",       {37, 53, 29},                               panel(2, 1, 4, 16, 8)},
    {"transA",           packed({19, 40, 33, true}),                 panel(1, 2, 3, 16, 4)},
    {"transB",           packed({40, 19, 70, false, true}),          panel(1, 1, 5, 8, 8)},
    {"batched_bcastB",   packed({17, 30, 21, false, false, 3, false, true}), panel(1, 1, 6, 16, 16)},
    {"batchedAT_scalar", packed({9, 11, 13, true, true, 2}),         panel(2, 2, 2, 3, 1)},
    {"batched_stored",   {17, 30, 21, false, false, 3, true, false}, panel(1, 1, 4, 8, 4)},
    {"even_default",     packed({12, 64, 40}),                       cpuPanelParams(64, 16)},
};
// clang-format on

std::string panelName(size_t c) {
  return fmt::format("gemm_panel_{}", kPanelCases[c].name);
}

// The panel case's parameters on the test device (16-wide sets as float8 on AVX2 CPUs).
GemmParams panelParams(size_t c, const DeviceInfo& d) {
  return gputest::forDevice(kPanelCases[c].params, d);
}

std::vector<GeneratedKernel> allKernels(const DeviceInfo& d) {
  std::vector<GeneratedKernel> ks;
  for (size_t c = 0; c < std::size(kPanelCases); ++c)
    ks.push_back(generateGemm(panelName(c), kPanelCases[c].shape, panelParams(c, d)));
  ks.push_back(
      generateGemm("gemm_panel_relu", kPanelCases[0].shape, panelParams(0, d), biasRelu()));
  for (size_t c = 0; c < std::size(kCases); ++c)
    for (size_t p : paramsFor(c))
      ks.push_back(generateGemm(variantName(c, p), kCases[c].shape, kParams[p]));
  ks.push_back(generateGemm("fc1/Gemm+Relu", kCases[1].shape, kParams[1], biasRelu()));
  return ks;
}

const Program& gemmProgram(Context& ctx) {
  static const std::vector<GeneratedKernel> ks = allKernels(ctx.device());
  return gputest::programFor(ctx, "gpu_gemm_test", ks);
}

std::vector<double> referenceGemm(const GemmShape& s, const std::vector<float>& A,
                                  const std::vector<float>& B) {
  std::vector<double> C(size_t(s.batch * s.M * s.N));
  for (int64_t b = 0; b < s.batch; ++b) {
    const float* a = A.data() + (s.broadcastA ? 0 : b * s.M * s.K);
    const float* bb = B.data() + (s.broadcastB ? 0 : b * s.K * s.N);
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < s.K; ++k)
          acc += double(s.transA ? a[k * s.M + m] : a[m * s.K + k]) *
                 double(s.transB ? bb[n * s.K + k] : bb[k * s.N + n]);
        C[size_t((b * s.M + m) * s.N + n)] = acc;
      }
  }
  return C;
}

TEST(GpuGemm, GeneratedSourceIsReadableAndParameterised) {
  GeneratedKernel k = generateGemm("/layer1/fc/Gemm", kCases[1].shape, kParams[1], biasRelu());
  EXPECT_EQ(k.name, "layer1_fc_Gemm");
  EXPECT_NE(k.source.find("C[37,53] = A[37,29] . B[29,53]"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("#define TILE_M 8"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("#define TILE_N 32"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("vload4"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("reqd_work_group_size(WG_N, WG_M, 1)"), std::string::npos);
  EXPECT_NE(k.source.find("acc = fmax(acc + bias[col], 0.0f);"), std::string::npos);
  EXPECT_NE(k.source.find("Epilogue: bias[N] + ReLU"), std::string::npos);
  EXPECT_EQ(k.params, (std::vector<std::string>{"A", "B", "C", "bias"}));
  EXPECT_EQ(k.range.global[0], 16u); // ceil(53 / 32) * 8 work-items along N
  EXPECT_EQ(k.range.global[1], 20u); // ceil(37 / 8) * 4 along M
  EXPECT_EQ(k.range.local[0], 8u);
  // A multiple-of-tile shape gets no edge checks.
  GeneratedKernel even = generateGemm("even", kCases[0].shape, GemmParams{});
  EXPECT_NE(even.source.find("edge checks: none"), std::string::npos) << even.source;
  EXPECT_EQ(even.source.find("gm < M"), std::string::npos) << even.source;
  // Deterministic text.
  EXPECT_EQ(generateGemm("even", kCases[0].shape, GemmParams{}).source, even.source);
}

TEST(GpuGemm, RejectsInvalidParameters) {
  GemmParams p;
  p.vectorWidth = 3;
  EXPECT_THROW(generateGemm("g", kCases[0].shape, p), Error);
  p.vectorWidth = 8; // does not divide workN = 4
  EXPECT_THROW(generateGemm("g", kCases[0].shape, p), Error);
  p = GemmParams{};
  p.wgM = 0;
  EXPECT_THROW(generateGemm("g", kCases[0].shape, p), Error);
  EXPECT_THROW(generateGemm("g", GemmShape{0, 4, 4}, GemmParams{}), Error);
}

TEST(GpuGemm, MatchesReferenceForAllShapesAndParameters) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = gemmProgram(ctx);
  for (size_t c = 0; c < std::size(kCases); ++c) {
    const GemmShape& s = kCases[c].shape;
    std::vector<float> A =
        gputest::randomData(size_t((s.broadcastA ? 1 : s.batch) * s.M * s.K), unsigned(c * 2 + 1));
    std::vector<float> B =
        gputest::randomData(size_t((s.broadcastB ? 1 : s.batch) * s.K * s.N), unsigned(c * 2 + 2));
    std::vector<double> want = referenceGemm(s, A, B);
    for (size_t p : paramsFor(c)) {
      GeneratedKernel k = generateGemm(variantName(c, p), s, kParams[p]);
      std::vector<float> got = gputest::runKernel(ctx, prog, k, {&A, &B}, 2, want.size());
      EXPECT_LT(gputest::relError(got, want), 1e-5)
          << variantName(c, p) << " " << s.toString() << " " << kParams[p].toString();
    }
  }
}

TEST(GpuGemm, EpilogueAppliesBiasAndRelu) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = gemmProgram(ctx);
  const GemmShape& s = kCases[1].shape;
  std::vector<float> A = gputest::randomData(size_t(s.M * s.K), 11);
  std::vector<float> B = gputest::randomData(size_t(s.K * s.N), 12);
  std::vector<float> bias = gputest::randomData(size_t(s.N), 13);
  std::vector<double> want = referenceGemm(s, A, B);
  int negatives = 0;
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double& v = want[size_t(m * s.N + n)];
      v = std::max(0.0, v + bias[size_t(n)]);
      negatives += v == 0.0;
    }
  EXPECT_GT(negatives, 100); // the ReLU matters for this data
  GeneratedKernel k = generateGemm("fc1/Gemm+Relu", s, kParams[1], biasRelu());
  // Parameters: A, B, C (output), bias.
  std::vector<float> got = gputest::runKernel(ctx, prog, k, {&A, &B, &bias}, 2, want.size());
  EXPECT_LT(gputest::relError(got, want), 1e-5);
}

TEST(GpuGemm, PanelSourceAndParameters) {
  const PanelCase& c = kPanelCases[0];
  GeneratedKernel k = generateGemm("/fc/Gemm", c.shape, c.params, biasRelu());
  EXPECT_NE(k.source.find("(GEMM, CPU panel kernel)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("B packed: 2 panels of [29,32]"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("float16 c5_0 = 0.0f, c5_1 = 0.0f; // row m0 + 5"), std::string::npos)
      << k.source;
  EXPECT_EQ(k.source.find("__local"), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("barrier("), std::string::npos) << k.source;
  EXPECT_EQ(k.range.global[0], 7u); // ceil(37 / 6) blocks of rows
  EXPECT_EQ(k.range.global[1], 2u); // ceil(53 / 32) panels
  EXPECT_EQ(k.localMemBytes, 0u);
  EXPECT_EQ(c.params.toString(), "panel wg 1x1 work 6x32 vec 16");
  // B read as stored: the last panel's loads are guarded.
  GeneratedKernel stored = generateGemm("s", kPanelCases[1].shape, kPanelCases[1].params);
  EXPECT_NE(stored.source.find("if (n0 + TN <= N)"), std::string::npos) << stored.source;
  // The defaults: 4 vectors across where N allows, fewer rows of them for narrow N.
  EXPECT_EQ(cpuPanelParams(3072, 16).toString(), "panel wg 1x1 work 6x64 vec 16");
  EXPECT_EQ(cpuPanelParams(20, 16).toString(), "panel wg 1x1 work 12x32 vec 16");
  EXPECT_EQ(cpuPanelParams(8, 8).toString(), "panel wg 1x1 work 12x8 vec 8");
  // Refused: a transposed B as stored, a packed B for the tiled kernel, K tiles.
  EXPECT_THROW(generateGemm("g", GemmShape{8, 8, 8, false, true}, panel(1, 1, 2, 8, 8)), Error);
  EXPECT_THROW(generateGemm("g", packed({8, 8, 8}), GemmParams{}), Error);
  GemmParams p = panel(1, 1, 2, 8, 8);
  p.tileK = 4;
  EXPECT_THROW(generateGemm("g", GemmShape{8, 8, 8}, p), Error);
}

TEST(GpuGemm, PanelMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = gemmProgram(ctx);
  for (size_t c = 0; c < std::size(kPanelCases); ++c) {
    const GemmShape& s = kPanelCases[c].shape;
    const GemmParams p = panelParams(c, ctx.device());
    std::vector<float> A =
        gputest::randomData(size_t((s.broadcastA ? 1 : s.batch) * s.M * s.K), unsigned(c + 31));
    std::vector<float> B =
        gputest::randomData(size_t((s.broadcastB ? 1 : s.batch) * s.K * s.N), unsigned(c + 41));
    std::vector<double> want = referenceGemm(s, A, B);
    std::vector<float> Bk = s.packedB ? packGemmPanels(B.data(), s, p.workN) : B;
    GeneratedKernel k = generateGemm(panelName(c), s, p);
    std::vector<float> got = gputest::runKernel(ctx, prog, k, {&A, &Bk}, 2, want.size());
    EXPECT_LT(gputest::relError(got, want), 1e-5)
        << panelName(c) << " " << s.toString() << " " << p.toString();
  }
}

TEST(GpuGemm, PanelEpilogueAppliesBiasAndRelu) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = gemmProgram(ctx);
  const PanelCase& c = kPanelCases[0];
  const GemmShape& s = c.shape;
  std::vector<float> A = gputest::randomData(size_t(s.M * s.K), 21);
  std::vector<float> B = gputest::randomData(size_t(s.K * s.N), 22);
  std::vector<float> bias = gputest::randomData(size_t(s.N), 23);
  std::vector<double> want = referenceGemm(s, A, B);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double& v = want[size_t(m * s.N + n)];
      v = std::max(0.0, v + bias[size_t(n)]);
    }
  const GemmParams p = panelParams(0, ctx.device());
  std::vector<float> Bk = packGemmPanels(B.data(), s, p.workN);
  GeneratedKernel k = generateGemm("gemm_panel_relu", s, p, biasRelu());
  std::vector<float> got = gputest::runKernel(ctx, prog, k, {&A, &Bk, &bias}, 2, want.size());
  EXPECT_LT(gputest::relError(got, want), 1e-5);
}

} // namespace
} // namespace triad::gpu
