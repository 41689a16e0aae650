// Testbench of fpga/rtl/triad_collect.v against a plain C++ reference model (configuration as
// -D macros, the same values as the Verilator -G overrides).
#include <memory>

#include "Vtriad_collect.h"
#include "tb_common.h"

#ifndef P_N
#define P_N 4
#endif
static constexpr int N = P_N;
#ifndef P_W
#define P_W 16
#endif
static constexpr int W = P_W;
#ifndef P_FRAME
#define P_FRAME 4
#endif
static constexpr int FRAME = P_FRAME;
#ifndef P_FRAMES
#define P_FRAMES 6
#endif
static constexpr int FRAMES = P_FRAMES;
#ifndef P_SEED
#define P_SEED 2
#endif
static constexpr int SEED = P_SEED;

// Reference: the frame's transfers x[t][e] -> one vector, element t*N + e.
static std::vector<i64> refCollect(const std::vector<std::vector<i64>>& x) {
  std::vector<i64> y;
  for (int t = 0; t < FRAME; ++t)
    for (int e = 0; e < N; ++e) y.push_back(x[t][e]);
  return y;
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(SEED);
  std::vector<Bits> ins, exp;
  for (int f = 0; f < FRAMES; ++f) {
    std::vector<std::vector<i64>> x(FRAME, std::vector<i64>(N));
    for (auto& t : x) {
      for (auto& v : t) v = rng.raw(W);
      ins.push_back(pack(t, W));
    }
    exp.push_back(pack(refCollect(x), W));
  }
  auto m = std::make_unique<Vtriad_collect>();
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
    std::printf("  collect N=%d FRAME=%d: last input of frame 0 accepted in cycle %ld, output valid "
                "in cycle %ld (latency %ld), frame period %ld cycles\n",
                N, FRAME, r.inCycles[FRAME - 1], r.outCycles[0], r.outCycles[0] - r.inCycles[FRAME - 1],
                FRAMES > 1 ? r.outCycles[1] - r.outCycles[0] : 0L);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
