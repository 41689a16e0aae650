// Testbench of fpga/rtl/triad_pool.v against a plain C++ reference model (pool_ref.h;
// configuration as -D macros, the same values as the Verilator -G overrides).
#include <memory>

#include "Vtriad_pool.h"
#include "pool_ref.h"

#ifndef P_N
#define P_N 4
#endif
static constexpr int N = P_N;
#ifndef P_K
#define P_K 4
#endif
static constexpr int K = P_K;
#ifndef P_MODE
#define P_MODE 0
#endif
static constexpr int MODE = P_MODE;
#ifndef P_IN_W
#define P_IN_W 16
#endif
static constexpr int IN_W = P_IN_W;
#ifndef P_IN_FRAC
#define P_IN_FRAC 10
#endif
static constexpr int IN_FRAC = P_IN_FRAC;
#ifndef P_RECIP_W
#define P_RECIP_W 16
#endif
static constexpr int RECIP_W = P_RECIP_W;
#ifndef P_RECIP_FRAC
#define P_RECIP_FRAC 16
#endif
static constexpr int RECIP_FRAC = P_RECIP_FRAC;
#ifndef P_RECIP  // raw bits, as the Verilog parameter
#define P_RECIP 0
#endif
static constexpr i64 RECIP = P_RECIP;
#ifndef P_OUT_W
#define P_OUT_W 16
#endif
static constexpr int OUT_W = P_OUT_W;
#ifndef P_OUT_FRAC
#define P_OUT_FRAC 10
#endif
static constexpr int OUT_FRAC = P_OUT_FRAC;
#ifndef P_ROUNDING
#define P_ROUNDING 0
#endif
static constexpr int ROUNDING = P_ROUNDING;
#ifndef P_SATURATE
#define P_SATURATE 1
#endif
static constexpr int SATURATE = P_SATURATE;
#ifndef P_COUNT
#define P_COUNT 400
#endif
static constexpr int COUNT = P_COUNT;
#ifndef P_SEED
#define P_SEED 3
#endif
static constexpr int SEED = P_SEED;

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(SEED);
  const i64 recip = sext(RECIP, RECIP_W);
  std::vector<Bits> ins, exp;
  for (int t = 0; t < COUNT; ++t) {
    std::vector<i64> x((size_t)K * N);
    // Mostly full-range values; every fourth vector near the extremes (saturation, ties).
    for (auto& v : x) v = (t % 4 == 3) ? ((rng.g() & 1) ? (((i64)1 << (IN_W - 1)) - 1 - (i64)(rng.g() % 3)) : -((i64)1 << (IN_W - 1)) + (i64)(rng.g() % 3)) : rng.raw(IN_W);
    std::vector<i64> y(N);
    for (int c = 0; c < N; ++c) {
      std::vector<i64> xc;
      for (int k = 0; k < K; ++k) xc.push_back(x[(size_t)k * N + c]);
      y[c] = refPool(xc, MODE, IN_FRAC, recip, RECIP_FRAC, OUT_W, OUT_FRAC, ROUNDING, SATURATE);
    }
    ins.push_back(pack(x, IN_W));
    exp.push_back(pack(y, OUT_W));
  }
  auto m = std::make_unique<Vtriad_pool>();
  bool ok = true;
  resetModel(*m);
  ok &= runStream(*m, ins, exp, 0.3, 0.3, rng, "random gaps/stalls").ok;
  resetModel(*m);
  RunResult r = runStream(*m, ins, exp, 0.0, 0.0, rng, "no gaps/stalls");
  ok &= r.ok;
  if (r.ok) {
    std::vector<long> want;
    for (int t = 0; t < COUNT; ++t) want.push_back(t + 1);
    ok &= checkCycles(r, want, "no gaps/stalls");
    std::printf("  pool N=%d K=%d MODE=%d: latency %ld cycle(s), %d transfers in %ld cycles\n", N, K,
                MODE, r.outCycles[0] - r.inCycles[0], COUNT, r.outCycles.back() - r.inCycles[0]);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
