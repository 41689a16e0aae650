// Testbench of fpga/rtl/triad_upsample.v against a plain C++ reference model (configuration as
// -D macros, the same values as the Verilator -G overrides).
#include <memory>

#include "Vtriad_upsample.h"
#include "tb_common.h"

#ifndef P_C
#define P_C 1
#endif
#ifndef P_W
#define P_W 16
#endif
#ifndef P_IN_H
#define P_IN_H 8
#endif
#ifndef P_IN_W
#define P_IN_W 8
#endif
#ifndef P_SH
#define P_SH 2
#endif
#ifndef P_SW
#define P_SW 2
#endif
#ifndef P_FRAMES
#define P_FRAMES 4
#endif
#ifndef P_SEED
#define P_SEED 5
#endif
static constexpr int C = P_C, W = P_W, IN_H = P_IN_H, IN_W = P_IN_W, SH = P_SH, SW = P_SW;
static constexpr int FRAMES = P_FRAMES;

// Reference: output pixel (y, x) of (IN_H*SH) x (IN_W*SW) = input pixel (y / SH, x / SW).
static std::vector<std::vector<i64>> refUpsample(const std::vector<std::vector<i64>>& px) {
  std::vector<std::vector<i64>> out;
  for (int y = 0; y < IN_H * SH; ++y)
    for (int x = 0; x < IN_W * SW; ++x) out.push_back(px[(size_t)(y / SH) * IN_W + x / SW]);
  return out;
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(P_SEED);
  std::vector<Bits> ins, exp;
  for (int f = 0; f < FRAMES; ++f) {
    std::vector<std::vector<i64>> px((size_t)IN_H * IN_W, std::vector<i64>(C));
    for (auto& p : px) {
      for (auto& v : p) v = rng.raw(W);
      ins.push_back(pack(p, W));
    }
    for (auto& o : refUpsample(px)) exp.push_back(pack(o, W));
  }
  auto m = std::make_unique<Vtriad_upsample>();
  bool ok = true;
  resetModel(*m);
  ok &= runStream(*m, ins, exp, 0.3, 0.3, rng, "random gaps/stalls").ok;
  resetModel(*m);
  RunResult r = runStream(*m, ins, exp, 0.0, 0.0, rng, "no gaps/stalls");
  ok &= r.ok;
  if (r.ok) {
    std::vector<long> want;
    for (size_t k = 0; k < exp.size(); ++k) want.push_back((long)k + 1);
    ok &= checkCycles(r, want, "no gaps/stalls");
    long per = (long)IN_H * SH * IN_W * SW;
    std::printf("  upsample %dx%dx%d by %dx%d: latency %ld cycle(s), frame period %ld cycles "
                "(%ld output pixels)\n",
                IN_H, IN_W, C, SH, SW, r.outCycles[0] - r.inCycles[0],
                FRAMES > 1 ? r.outCycles[per] - r.outCycles[0] : 0L, per);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
