// Testbench of fpga/rtl/triad_concat.v against a plain C++ reference model (configuration as -D
// macros, the same values as the Verilator -G overrides). Both inputs get independent random
// gaps; the output random back-pressure.
#include <memory>

#include "Vtriad_concat.h"
#include "tb_common.h"

#ifndef P_NA
#define P_NA 4
#endif
#ifndef P_A_W
#define P_A_W 16
#endif
#ifndef P_A_FRAC
#define P_A_FRAC 10
#endif
#ifndef P_NB
#define P_NB 4
#endif
#ifndef P_B_W
#define P_B_W 16
#endif
#ifndef P_B_FRAC
#define P_B_FRAC 10
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
#ifndef P_COUNT
#define P_COUNT 400
#endif
#ifndef P_SEED
#define P_SEED 6
#endif
static constexpr int NA = P_NA, A_W = P_A_W, A_FRAC = P_A_FRAC, NB = P_NB, B_W = P_B_W;
static constexpr int B_FRAC = P_B_FRAC, OUT_W = P_OUT_W, OUT_FRAC = P_OUT_FRAC;
static constexpr int ROUNDING = P_ROUNDING, SATURATE = P_SATURATE, COUNT = P_COUNT;

// Reference: y_i = cast(a_i) for i < NA, y_{NA+j} = cast(b_j).
static std::vector<i64> refConcat(const std::vector<i64>& a, const std::vector<i64>& b) {
  std::vector<i64> y;
  for (i64 v : a) y.push_back(refCast(v, A_FRAC, OUT_W, OUT_FRAC, ROUNDING, SATURATE));
  for (i64 v : b) y.push_back(refCast(v, B_FRAC, OUT_W, OUT_FRAC, ROUNDING, SATURATE));
  return y;
}

static RunResult run(Vtriad_concat& m, const std::vector<Bits>& as, const std::vector<Bits>& bs,
                     const std::vector<Bits>& exp, double pgap, double pstall, Rng& r,
                     const char* what) {
  RunResult res;
  size_t ai = 0, bi = 0, oi = 0;
  bool av = false, bv = false;
  long cyc = 0, tail = 64;
  int errors = 0;
  while (oi < exp.size() || tail > 0) {
    bool inTail = oi >= exp.size();
    if (!av && ai < as.size() && !r.chance(pgap)) av = true;
    if (!bv && bi < bs.size() && !r.chance(pgap)) bv = true;
    m.a_tvalid = av;
    m.b_tvalid = bv;
    toPort(m.a_tdata, av ? as[ai] : r.bits(NA * A_W));
    toPort(m.b_tdata, bv ? bs[bi] : r.bits(NB * B_W));
    bool rdy = inTail || !r.chance(pstall);
    m.out_tready = rdy;
    m.clk = 0;
    m.eval();
    bool aFire = av && m.a_tready, bFire = bv && m.b_tready;
    if (aFire != bFire) {
      std::printf("  %s: a and b not taken together in cycle %ld\n", what, cyc);
      res.ok = false;
      break;
    }
    if (m.out_tvalid && rdy) {
      if (inTail) {
        std::printf("  %s: extra output in cycle %ld\n", what, cyc);
        res.ok = false;
        break;
      }
      Bits got = fromPort(m.out_tdata, (NA + NB) * OUT_W);
      if (!(got == exp[oi]) && errors++ < 5) {
        std::printf("  %s: output %zu mismatch\n    got %s\n    exp %s\n", what, oi, got.hex().c_str(),
                    exp[oi].hex().c_str());
      }
      if (!(got == exp[oi])) res.ok = false;
      res.outCycles.push_back(cyc);
      ++oi;
    }
    if (aFire) {
      res.inCycles.push_back(cyc);
      ++ai;
      ++bi;
      av = bv = false;
    }
    m.clk = 1;
    m.eval();
    ++cyc;
    if (inTail) --tail;
    if (cyc > 1000000) {
      std::printf("  %s: timeout\n", what);
      res.ok = false;
      break;
    }
  }
  if (res.ok && (ai != as.size())) res.ok = false;
  return res;
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(P_SEED);
  std::vector<Bits> as, bs, exp;
  for (int t = 0; t < COUNT; ++t) {
    std::vector<i64> a(NA), b(NB);
    for (auto& v : a) v = rng.raw(A_W);
    for (auto& v : b) v = rng.raw(B_W);
    as.push_back(pack(a, A_W));
    bs.push_back(pack(b, B_W));
    exp.push_back(pack(refConcat(a, b), OUT_W));
  }
  auto m = std::make_unique<Vtriad_concat>();
  bool ok = true;
  m->rst_n = 0;
  m->a_tvalid = m->b_tvalid = 0;
  for (int i = 0; i < 4; ++i) {
    m->clk = 0;
    m->eval();
    m->clk = 1;
    m->eval();
  }
  m->rst_n = 1;
  ok &= run(*m, as, bs, exp, 0.3, 0.3, rng, "random gaps/stalls").ok;
  RunResult r = run(*m, as, bs, exp, 0.0, 0.0, rng, "no gaps/stalls");  // continues, no reset
  ok &= r.ok;
  if (r.ok) {
    std::vector<long> want;
    for (int t = 0; t < COUNT; ++t) want.push_back(r.inCycles[0] + t + 1);
    ok &= checkCycles(r, want, "no gaps/stalls");
    std::printf("  concat NA=%d NB=%d: latency %ld cycle(s), %d transfers in %ld cycles\n", NA, NB,
                r.outCycles[0] - r.inCycles[0], COUNT, r.outCycles.back() - r.inCycles[0]);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
