// Testbench of fpga/rtl/triad_global_pool.v against a plain C++ reference model (pool_ref.h;
// configuration as -D macros, the same values as the Verilator -G overrides).
#include <memory>

#include "Vtriad_global_pool.h"
#include "pool_ref.h"

#ifndef P_N
#define P_N 4
#endif
#ifndef P_FRAME
#define P_FRAME 16
#endif
#ifndef P_MODE
#define P_MODE 0
#endif
#ifndef P_IN_W
#define P_IN_W 16
#endif
#ifndef P_IN_FRAC
#define P_IN_FRAC 10
#endif
#ifndef P_RECIP_W
#define P_RECIP_W 16
#endif
#ifndef P_RECIP_FRAC
#define P_RECIP_FRAC 16
#endif
#ifndef P_RECIP  // raw bits, as the Verilog parameter
#define P_RECIP 0
#endif
#ifndef P_OUT_W
#define P_OUT_W 16
#endif
#ifndef P_OUT_FRAC
#define P_OUT_FRAC 10
#endif
#ifndef P_ROUNDING
#define P_ROUNDING 0
#endif
#ifndef P_SATURATE
#define P_SATURATE 1
#endif
#ifndef P_FRAMES
#define P_FRAMES 40
#endif
#ifndef P_SEED
#define P_SEED 4
#endif
static constexpr int N = P_N, FRAME = P_FRAME, MODE = P_MODE, IN_W = P_IN_W, IN_FRAC = P_IN_FRAC;
static constexpr int RECIP_W = P_RECIP_W, RECIP_FRAC = P_RECIP_FRAC, OUT_W = P_OUT_W;
static constexpr int OUT_FRAC = P_OUT_FRAC, ROUNDING = P_ROUNDING, SATURATE = P_SATURATE;
static constexpr int FRAMES = P_FRAMES;
static constexpr i64 RECIP = P_RECIP;

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(P_SEED);
  const i64 recip = sext(RECIP, RECIP_W);
  std::vector<Bits> ins, exp;
  for (int f = 0; f < FRAMES; ++f) {
    std::vector<std::vector<i64>> xc(N);
    // Every third frame near the extremes (saturation of the average, ties of the max).
    bool extreme = f % 3 == 2;
    bool hi = rng.g() & 1;
    for (int t = 0; t < FRAME; ++t) {
      std::vector<i64> x(N);
      for (auto& v : x)
        v = extreme ? (hi ? ((i64)1 << (IN_W - 1)) - 1 - (i64)(rng.g() % 4)
                          : -((i64)1 << (IN_W - 1)) + (i64)(rng.g() % 4))
                    : rng.raw(IN_W);
      for (int c = 0; c < N; ++c) xc[c].push_back(x[c]);
      ins.push_back(pack(x, IN_W));
    }
    std::vector<i64> y(N);
    for (int c = 0; c < N; ++c)
      y[c] = refPool(xc[c], MODE, IN_FRAC, recip, RECIP_FRAC, OUT_W, OUT_FRAC, ROUNDING, SATURATE);
    exp.push_back(pack(y, OUT_W));
  }
  auto m = std::make_unique<Vtriad_global_pool>();
  bool ok = true;
  resetModel(*m);
  ok &= runStream(*m, ins, exp, 0.3, 0.3, rng, "random gaps/stalls").ok;
  resetModel(*m);
  RunResult r = runStream(*m, ins, exp, 0.0, 0.0, rng, "no gaps/stalls");
  ok &= r.ok;
  if (r.ok) {
    std::vector<long> want;
    for (int f = 0; f < FRAMES; ++f) want.push_back((long)(f + 1) * FRAME);
    ok &= checkCycles(r, want, "no gaps/stalls");
    std::printf("  global pool N=%d FRAME=%d MODE=%d: latency %ld cycle(s) from the frame's last "
                "input, frame period %ld cycles\n",
                N, FRAME, MODE, r.outCycles[0] - r.inCycles[FRAME - 1],
                FRAMES > 1 ? r.outCycles[1] - r.outCycles[0] : 0L);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
