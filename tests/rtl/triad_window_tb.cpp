// Testbench of fpga/rtl/triad_window.v against a plain C++ reference model. The configuration
// comes as -D macros (the same values as the Verilator -G overrides).
#include <memory>

#include "Vtriad_window.h"
#include "tb_common.h"

#ifndef P_C
#define P_C 1
#endif
static constexpr int C = P_C;
#ifndef P_W
#define P_W 16
#endif
static constexpr int W = P_W;
#ifndef P_IN_H
#define P_IN_H 8
#endif
static constexpr int IN_H = P_IN_H;
#ifndef P_IN_W
#define P_IN_W 8
#endif
static constexpr int IN_W = P_IN_W;
#ifndef P_KH
#define P_KH 3
#endif
static constexpr int KH = P_KH;
#ifndef P_KW
#define P_KW 3
#endif
static constexpr int KW = P_KW;
#ifndef P_SH
#define P_SH 1
#endif
static constexpr int SH = P_SH;
#ifndef P_SW
#define P_SW 1
#endif
static constexpr int SW = P_SW;
#ifndef P_DH
#define P_DH 1
#endif
static constexpr int DH = P_DH;
#ifndef P_DW
#define P_DW 1
#endif
static constexpr int DW = P_DW;
#ifndef P_PAD_T
#define P_PAD_T 0
#endif
static constexpr int PAD_T = P_PAD_T;
#ifndef P_PAD_L
#define P_PAD_L 0
#endif
static constexpr int PAD_L = P_PAD_L;
#ifndef P_PAD_B
#define P_PAD_B 0
#endif
static constexpr int PAD_B = P_PAD_B;
#ifndef P_PAD_R
#define P_PAD_R 0
#endif
static constexpr int PAD_R = P_PAD_R;
#ifndef P_PAD  // the pad value's raw bits (as the Verilog parameter)
#define P_PAD 0
#endif
static constexpr i64 PAD = P_PAD;
#ifndef P_FRAMES
#define P_FRAMES 4
#endif
static constexpr int FRAMES = P_FRAMES;
#ifndef P_SEED
#define P_SEED 1
#endif
static constexpr int SEED = P_SEED;

static const i64 PADV = (i64)PAD >= ((i64)1 << (W - 1)) ? (i64)PAD - ((i64)1 << W) : (i64)PAD;
static const int HP = IN_H + PAD_T + PAD_B, WP = IN_W + PAD_L + PAD_R;
static const int SPAN_H = (KH - 1) * DH + 1, SPAN_W = (KW - 1) * DW + 1;
static const int OH = (HP - SPAN_H) / SH + 1, OW = (WP - SPAN_W) / SW + 1;

// Reference: one frame img[y][x][c] -> OH*OW windows, element (ky*KW + kx)*C + c.
static std::vector<std::vector<i64>> refWindow(const std::vector<i64>& img) {
  std::vector<std::vector<i64>> out;
  for (int oy = 0; oy < OH; ++oy)
    for (int ox = 0; ox < OW; ++ox) {
      std::vector<i64> win;
      for (int ky = 0; ky < KH; ++ky)
        for (int kx = 0; kx < KW; ++kx)
          for (int c = 0; c < C; ++c) {
            int iy = oy * SH + ky * DH - PAD_T, ix = ox * SW + kx * DW - PAD_L;
            bool inside = iy >= 0 && iy < IN_H && ix >= 0 && ix < IN_W;
            win.push_back(inside ? img[((size_t)iy * IN_W + ix) * C + c] : (i64)PADV);
          }
      out.push_back(win);
    }
  return out;
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Rng rng(SEED);
  std::vector<Bits> ins, exp;
  for (int f = 0; f < FRAMES; ++f) {
    std::vector<i64> img((size_t)IN_H * IN_W * C);
    for (auto& v : img) v = rng.raw(W);
    for (int p = 0; p < IN_H * IN_W; ++p)
      ins.push_back(pack(std::vector<i64>(img.begin() + (size_t)p * C, img.begin() + (size_t)(p + 1) * C), W));
    for (auto& win : refWindow(img)) exp.push_back(pack(win, W));
  }
  // A frame whose first window is all padding is emitted before any input of the next frame.
  bool tail = !(SPAN_H - 1 < PAD_T);

  auto m = std::make_unique<Vtriad_window>();
  bool ok = true;
  resetModel(*m);
  RunResult r1 = runStream(*m, ins, exp, 0.3, 0.3, rng, "random gaps/stalls", tail);
  ok &= r1.ok;

  resetModel(*m);
  RunResult r2 = runStream(*m, ins, exp, 0.0, 0.0, rng, "no gaps/stalls", tail);
  ok &= r2.ok;
  if (r2.ok) {
    std::vector<long> want;
    for (int f = 0; f < FRAMES; ++f)
      for (int oy = 0; oy < OH; ++oy)
        for (int ox = 0; ox < OW; ++ox)
          want.push_back((long)f * HP * WP + (long)(oy * SH + SPAN_H - 1) * WP + ox * SW + SPAN_W - 1 + 1);
    ok &= checkCycles(r2, want, "no gaps/stalls");
    long lastNeeded = -1;  // raster index of the first window's last in-image tap
    for (int ky = 0; ky < KH; ++ky)
      for (int kx = 0; kx < KW; ++kx) {
        int iy = ky * DH - PAD_T, ix = kx * DW - PAD_L;
        if (iy >= 0 && iy < IN_H && ix >= 0 && ix < IN_W && iy * IN_W + ix > lastNeeded)
          lastNeeded = iy * IN_W + ix;
      }
    long period = OH * OW > 0 && FRAMES > 1 ? r2.outCycles[OH * OW] - r2.outCycles[0] : 0;
    std::printf("  window %dx%dx%d k%dx%d s%dx%d d%dx%d pad t%d l%d b%d r%d -> %dx%d: first window "
                "valid in cycle %ld (last needed input accepted in cycle %ld), frame period %ld "
                "cycles (Hp*Wp = %d)\n",
                IN_H, IN_W, C, KH, KW, SH, SW, DH, DW, PAD_T, PAD_L, PAD_B, PAD_R, OH, OW,
                r2.outCycles[0], lastNeeded < 0 ? -1L : r2.inCycles[lastNeeded], period, HP * WP);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  m->final();
  return ok ? 0 : 1;
}
