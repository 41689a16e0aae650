// Reference arithmetic of triad_pool and triad_global_pool (the function the bit-accurate
// emulator computes): over a set of signed raw values x_k of one channel (IN_FRAC fraction bits)
//   max:     y = cast(max_k x_k, from IN_FRAC to OUT_W/OUT_FRAC, ROUNDING, SATURATE)
//   average: s = sum_k x_k (exact), p = s * RECIP (exact; RECIP signed raw, RECIP_FRAC
//            fraction bits), y = cast(p, from IN_FRAC + RECIP_FRAC to OUT_W/OUT_FRAC, ...).
#pragma once
#include "tb_common.h"

inline i64 refPool(const std::vector<i64>& x, int mode, int in_frac, i64 recip, int recip_frac,
                   int out_w, int out_frac, int rounding, int saturate) {
  if (mode == 0) {
    i64 m = x[0];
    for (i64 v : x) m = v > m ? v : m;
    return refCast(m, in_frac, out_w, out_frac, rounding, saturate);
  }
  i128 s = 0;
  for (i64 v : x) s += v;
  i128 p = s * recip;
  return refCast(p, in_frac + recip_frac, out_w, out_frac, rounding, saturate);
}

// The signed value of a raw bit pattern of `width` bits.
inline i64 sext(i64 raw, int width) {
  i64 m = raw & (width >= 64 ? -1 : (((i64)1 << width) - 1));
  return width < 64 && (m >> (width - 1)) & 1 ? m - ((i64)1 << width) : m;
}
