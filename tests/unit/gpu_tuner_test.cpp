// The GEMM auto-tuner and its tuning database: candidate grid limits, a tiny tuning run on the
// device, reuse from the database, budget, and corrupt-database recovery.
#include "gpu/BinaryCache.h"
#include "gpu/Tuner.h"
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <span>

namespace triad::gpu {
namespace {

std::filesystem::path freshDir(const std::string& name) {
  std::filesystem::path d = std::filesystem::path(TRIAD_BINARY_DIR) / "gpu-test-tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

const GemmShape kShape{48, 40, 36, false, false, 1, false, false};

TEST(GpuTuner, CandidatesRespectDeviceLimits) {
  DeviceInfo small;
  small.name = "small device";
  small.maxWorkGroupSize = 64;
  small.maxWorkItemSizes = {64, 64, 64};
  small.localMemBytes = 4096;
  GemmShape big{512, 512, 512};
  std::vector<GemmParams> c = gemmCandidates(big, small, 40);
  ASSERT_FALSE(c.empty());
  EXPECT_LE(c.size(), 40u);
  EXPECT_EQ(c.front(), GemmParams{}); // the defaults first, so the speed-up is measured
  for (const GemmParams& p : c) {
    EXPECT_LE(p.workGroupSize(), 64) << p.toString();
    EXPECT_LE(size_t(p.tileK) * size_t(p.tileM() + p.tileN()) * 4, 4096u) << p.toString();
    EXPECT_NO_THROW(validateGemmParams(p));
  }
  // Distinct, and deterministic.
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      EXPECT_FALSE(c[i] == c[j]) << c[i].toString();
  EXPECT_EQ(gemmCandidates(big, small, 40), c);
  // A tiny problem gets no tiles far larger than itself (but the defaults are always measured).
  std::vector<GemmParams> tiny = gemmCandidates(GemmShape{6, 10, 12}, small, 100);
  ASSERT_GT(tiny.size(), 1u);
  EXPECT_EQ(tiny.front(), GemmParams{});
  for (const GemmParams& p : std::span(tiny).subspan(1)) {
    EXPECT_LE(p.tileM(), 12) << p.toString();
    EXPECT_LE(p.tileN(), 20) << p.toString();
    EXPECT_LE(p.tileK, 24) << p.toString();
  }
}

// On a CPU device the grid is the panel kernel's: its defaults first, then valid, distinct
// panel parameters; a convolution's grid is over the transposed product the kernel computes.
TEST(GpuTuner, CpuDeviceCandidatesArePanelKernels) {
  DeviceInfo cpu;
  cpu.name = "cpu device";
  cpu.type = "CPU";
  cpu.preferredVectorWidthFloat = 16;
  cpu.nativeVectorWidthFloat = 16; // AVX-512
  cpu.maxWorkGroupSize = 4096;
  GemmShape s{128, 768, 768};
  std::vector<GemmParams> c = gemmCandidates(s, cpu, 30);
  ASSERT_EQ(c.size(), 30u);
  EXPECT_EQ(c.front(), cpuPanelParams(768, 16));
  EXPECT_EQ(gemmParamsFor(s, cpu, nullptr), c.front());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_TRUE(c[i].panel) << c[i].toString();
    EXPECT_NO_THROW(validateGemmParams(c[i])) << c[i].toString();
    EXPECT_LE(c[i].workM * (c[i].workN / c[i].vectorWidth), 28) << c[i].toString();
    for (size_t j = i + 1; j < c.size(); ++j)
      EXPECT_FALSE(c[i] == c[j]) << c[i].toString();
  }
  // Convolution: 16 output channels wide, so no candidate has a vector of padding only.
  ConvShape conv{1, 64, 56, 56, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  GemmShape panelShape = panelConvShape(conv);
  EXPECT_EQ(panelShape.M, 56 * 56);
  EXPECT_EQ(panelShape.N, 16);
  std::vector<GemmParams> cc = gemmCandidates(GemmShape{16, 56 * 56, 576}, cpu, 100, &panelShape);
  EXPECT_EQ(cc.front(), cpuPanelParams(16, 16));
  for (const GemmParams& p : cc)
    EXPECT_LT((p.workN / p.vectorWidth - 1) * p.vectorWidth, 16) << p.toString();
}

// Vectors as wide as the device builds them: on a CPU without AVX-512 (PoCL: native and
// preferred width 8) no float16, neither by default, nor among the candidates, nor from a
// database entry tuned elsewhere; GPUs report a native width of 1 and keep their vector loads.
TEST(GpuTuner, VectorWidthBoundedByDevice) {
  DeviceInfo avx2;
  avx2.name = "pthread-haswell";
  avx2.type = "CPU";
  avx2.preferredVectorWidthFloat = 8;
  avx2.nativeVectorWidthFloat = 8;
  avx2.maxWorkGroupSize = 4096;
  EXPECT_EQ(maxVectorWidth(avx2), 8);
  GemmShape s{128, 768, 768};
  EXPECT_EQ(cpuPanelParams(768, avx2), cpuPanelParams(768, 8));
  EXPECT_EQ(gemmParamsFor(s, avx2, nullptr), cpuPanelParams(768, 8));
  for (const GemmParams& p : gemmCandidates(s, avx2, 100))
    EXPECT_LE(p.vectorWidth, 8) << p.toString();
  // A preferred width above the native one (or a made-up one) is bounded too.
  DeviceInfo odd = avx2;
  odd.preferredVectorWidthFloat = 16;
  EXPECT_EQ(cpuPanelParams(768, odd).vectorWidth, 8);
  odd.nativeVectorWidthFloat = 1; // says less than SSE's float4: 4
  EXPECT_EQ(maxVectorWidth(odd), 4);
  EXPECT_EQ(cpuPanelParams(768, odd).vectorWidth, 4);
  odd.nativeVectorWidthFloat = 64;
  EXPECT_EQ(maxVectorWidth(odd), 16);
  // A database entry with float16 (from an AVX-512 machine) is not used here.
  TuningDb db(freshDir("tuning-db-width") / "tuning.json");
  db.putGemm(TuningDb::gemmKey(s, avx2), TunedGemm{cpuPanelParams(768, 16), 1, 2, 3});
  EXPECT_EQ(gemmParamsFor(s, avx2, &db), cpuPanelParams(768, 8));
  db.putGemm(TuningDb::gemmKey(s, avx2), TunedGemm{cpuPanelParams(768, 4), 1, 2, 3});
  EXPECT_EQ(gemmParamsFor(s, avx2, &db), cpuPanelParams(768, 4));
  // A GPU: any width.
  DeviceInfo gpu;
  gpu.type = "GPU";
  gpu.preferredVectorWidthFloat = 1;
  gpu.nativeVectorWidthFloat = 1;
  EXPECT_EQ(maxVectorWidth(gpu), 16);
  EXPECT_EQ(gemmParamsFor(s, gpu, nullptr), GemmParams{});
  bool wide = false;
  for (const GemmParams& p : gemmCandidates(GemmShape{512, 512, 512}, gpu, 1000))
    wide = wide || p.vectorWidth == 8;
  EXPECT_TRUE(wide);
}

TEST(GpuTuner, DatabaseRoundTripAndCorruption) {
  std::filesystem::path dir = freshDir("tuning-db");
  std::filesystem::path file = dir / "tuning.json";
  DeviceInfo d;
  d.name = "dev";
  d.driverVersion = "1.2";
  std::string key = TuningDb::gemmKey(kShape, d);
  EXPECT_EQ(key, "gemm 1x48x40x36 NN | dev | 1.2");
  {
    TuningDb db(file);
    EXPECT_EQ(db.size(), 0u);
    EXPECT_TRUE(db.warning().empty());
    GemmParams p{4, 16, 2, 4, 16, 4};
    db.putGemm(key, TunedGemm{p, 1000, 2500, 7});
    db.save();
  }
  {
    TuningDb db(file);
    ASSERT_TRUE(db.findGemm(key).has_value());
    EXPECT_EQ(db.findGemm(key)->params, (GemmParams{4, 16, 2, 4, 16, 4}));
    EXPECT_EQ(db.findGemm(key)->defaultNs, 2500);
    EXPECT_EQ(gemmParamsFor(kShape, d, &db), (GemmParams{4, 16, 2, 4, 16, 4}));
    GemmShape other = kShape;
    other.transB = true;
    EXPECT_EQ(gemmParamsFor(other, d, &db), GemmParams{}); // not tuned: defaults
    // Another process saved another shape meanwhile: save() merges instead of dropping it.
    TuningDb other1(file);
    other1.putGemm(TuningDb::gemmKey(other, d), TunedGemm{GemmParams{}, 1, 1, 1});
    other1.save();
    db.save();
    EXPECT_EQ(TuningDb(file).size(), 2u);
    // Panel parameters keep their kind.
    GemmParams panel = cpuPanelParams(40, 16);
    TuningDb p1(file);
    p1.putGemm("panel key", TunedGemm{panel, 1, 2, 3});
    p1.save();
    EXPECT_EQ(TuningDb(file).findGemm("panel key")->params, panel);
  }
  nlohmann::json j = nlohmann::json::parse(*readFileIfExists(file));
  EXPECT_EQ(j["format"], "triad-tuning-db");
  EXPECT_EQ(j["entries"][key]["params"]["wgN"], 16);
  EXPECT_FALSE(j["entries"][key]["params"].contains("panel"));
  EXPECT_EQ(j["entries"]["panel key"]["params"]["panel"], true);
  // A corrupt file is an empty database with a warning, and is rewritten on save.
  writeFileAtomic(file, "{ not json");
  TuningDb bad(file);
  EXPECT_EQ(bad.size(), 0u);
  EXPECT_NE(bad.warning().find("unreadable"), std::string::npos) << bad.warning();
  bad.putGemm(key, TunedGemm{GemmParams{}, 5, 5, 1});
  bad.save();
  EXPECT_EQ(TuningDb(file).size(), 1u);
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(GpuTuner, TinyTuningRunIsStoredAndReused) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  std::filesystem::path file = freshDir("tuning-run") / "tuning.json";
  TuneOptions o;
  o.maxCandidates = 3;
  o.repeats = 2;
  o.budgetSeconds = 60;
  TuneResult r;
  {
    TuningDb db(file);
    r = tuneGemm(ctx, kShape, o, &db);
  }
  EXPECT_FALSE(r.fromDatabase);
  ASSERT_EQ(r.tried.size(), 3u);
  EXPECT_EQ(r.tried[0].params, gemmParamsFor(kShape, ctx.device(), nullptr)); // the defaults
  for (const TuneCandidate& c : r.tried) {
    EXPECT_TRUE(c.error.empty()) << c.params.toString() << ": " << c.error;
    EXPECT_GT(c.ns, 0) << c.params.toString();
  }
  EXPECT_GT(r.defaultNs, 0);
  EXPECT_GT(r.bestNs, 0);
  EXPECT_LE(r.bestNs, r.defaultNs);
  double minNs = std::min({r.tried[0].ns, r.tried[1].ns, r.tried[2].ns});
  EXPECT_EQ(r.bestNs, minNs);
  EXPECT_GT(r.gflops(kShape), 0);
  // A later build finds it in the database without measuring.
  TuningDb db(file);
  ASSERT_TRUE(db.findGemm(r.key).has_value());
  EXPECT_EQ(db.findGemm(r.key)->params, r.best);
  EXPECT_EQ(db.findGemm(r.key)->candidates, 3);
  TuneResult again = tuneGemm(ctx, kShape, o, &db);
  EXPECT_TRUE(again.fromDatabase);
  EXPECT_TRUE(again.tried.empty());
  EXPECT_EQ(again.best, r.best);
  EXPECT_EQ(gemmParamsFor(kShape, ctx.device(), &db), r.best);
}

TEST(GpuTuner, BudgetStopsAfterTheDefaults) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  TuneOptions o;
  o.maxCandidates = 3; // the same program as above: a binary cache hit
  o.repeats = 1;
  o.budgetSeconds = 0;
  TuneResult r = tuneGemm(ctx, kShape, o, nullptr);
  ASSERT_EQ(r.tried.size(), 3u);
  EXPECT_GT(r.tried[0].ns, 0);
  EXPECT_EQ(r.tried[1].error, "not measured: budget exhausted");
  EXPECT_EQ(r.best, gemmParamsFor(kShape, ctx.device(), nullptr));
  EXPECT_EQ(r.bestNs, r.defaultNs);
}

// The numbers in docs/gpu.md: TRIAD_GPU_BENCH=1 triad_unit_tests --gtest_filter=GpuTuner.Bench*
TEST(GpuTuner, BenchGemm512DefaultVsTuned) {
  const char* on = std::getenv("TRIAD_GPU_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set TRIAD_GPU_BENCH=1 to run";
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  GemmShape s{512, 512, 512};
  TuneOptions o;
  o.maxCandidates = 24;
  o.repeats = 3;
  o.budgetSeconds = 300;
  TuneResult r = tuneGemm(ctx, s, o, nullptr);
  for (const TuneCandidate& c : r.tried)
    std::printf("  %-36s %10.3f ms %8.2f GFLOP/s %s\n", c.params.toString().c_str(), c.ns * 1e-6,
                c.ns > 0 ? 2.0 * 512 * 512 * 512 / c.ns : 0.0, c.error.c_str());
  std::printf("GEMM 512^3 on %s: default %.2f GFLOP/s (%.3f ms), tuned %.2f GFLOP/s (%.3f ms, "
              "%s), speed-up %.2fx; compile %.1f s\n",
              ctx.device().name.c_str(), 2.0 * 512 * 512 * 512 / r.defaultNs, r.defaultNs * 1e-6,
              r.gflops(s), r.bestNs * 1e-6, r.best.toString().c_str(), r.speedup(),
              r.compileSeconds);
  EXPECT_LE(r.bestNs, r.defaultNs);
}

} // namespace
} // namespace triad::gpu
