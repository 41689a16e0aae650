// Shared helpers of the Verilator testbenches of the streaming RTL blocks (tests/rtl/*_tb.cpp):
// bit vectors of any width to and from Verilator ports, the fixed-point cast of the contract
// (the same function as fpga/rtl/triad_cast.v), a seeded random source, and a cycle loop that
// drives a valid/ready stream with random input gaps and output back-pressure and checks the
// outputs bit-exactly against a reference model's list.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "verilated.h"

using i64 = long long;
using i128 = __int128;

// A little-endian bit vector (bit i in w[i / 32] bit i % 32).
struct Bits {
  std::vector<uint32_t> w;
  int n;
  explicit Bits(int nbits = 0) : w((nbits + 31) / 32, 0u), n(nbits) {}
  void setBit(int i, bool b) {
    if (b) w[i / 32] |= 1u << (i % 32);
    else w[i / 32] &= ~(1u << (i % 32));
  }
  bool bit(int i) const { return (w[i / 32] >> (i % 32)) & 1u; }
  // Stores the low `width` bits of v at bit offset off.
  void set(int off, int width, i64 v) {
    for (int i = 0; i < width; ++i) setBit(off + i, (v >> (i < 63 ? i : 63)) & 1);
  }
  // The signed value of `width` bits at bit offset off.
  i64 getS(int off, int width) const {
    i64 v = 0;
    for (int i = 0; i < width; ++i)
      if (bit(off + i)) v |= (i64)1 << i;
    if (width < 64 && bit(off + width - 1)) v -= (i64)1 << width;
    return v;
  }
  bool operator==(const Bits& o) const { return n == o.n && w == o.w; }
  std::string hex() const {
    std::string s;
    char buf[16];
    for (int i = (int)w.size() - 1; i >= 0; --i) {
      std::snprintf(buf, sizeof buf, "%08x", w[i]);
      s += buf;
    }
    return s;
  }
};

// Packs elements (each `width` bits, element i at bit i*width).
inline Bits pack(const std::vector<i64>& el, int width) {
  Bits b((int)el.size() * width);
  for (size_t i = 0; i < el.size(); ++i) b.set((int)i * width, width, el[i]);
  return b;
}

template <class T>
inline void toPort(T& p, const Bits& b) {
  uint64_t v = b.w.empty() ? 0 : b.w[0];
  if (b.w.size() > 1) v |= (uint64_t)b.w[1] << 32;
  p = (T)v;
}
template <std::size_t N>
inline void toPort(VlWide<N>& p, const Bits& b) {
  for (std::size_t i = 0; i < N; ++i) p[i] = i < b.w.size() ? b.w[i] : 0u;
}
template <class T>
inline Bits fromPort(const T& p, int nbits) {
  Bits b(nbits);
  uint64_t v = (uint64_t)p;
  for (int i = 0; i < nbits && i < 64; ++i) b.setBit(i, (v >> i) & 1);
  return b;
}
template <std::size_t N>
inline Bits fromPort(const VlWide<N>& p, int nbits) {
  Bits b(nbits);
  for (std::size_t i = 0; i < b.w.size() && i < N; ++i) b.w[i] = p[i];
  if (nbits % 32) b.w.back() &= (1u << (nbits % 32)) - 1u;
  return b;
}

// The contract's cast (triad_cast): v is an exact raw value with in_frac fraction bits; align to
// out_frac (left: exact; right by S bits: ROUNDING 0 floor, 1 round half up, 2 ties to even),
// then fit into out_w bits (SATURATE 1 clamp, 0 wrap to the low out_w bits, sign-extended).
inline i64 refCast(i128 v, int in_frac, int out_w, int out_frac, int rounding, int saturate) {
  int d = out_frac - in_frac;
  i128 q;
  if (d >= 0) {
    q = v * ((i128)1 << d);
  } else {
    int s = -d;
    i128 fl = v >> s;  // arithmetic: floor
    bool half = (v >> (s - 1)) & 1;
    bool rest = s > 1 && (v & (((i128)1 << (s - 1)) - 1)) != 0;
    bool inc = rounding == 1 ? half : rounding == 2 ? (half && (rest || (fl & 1))) : false;
    q = fl + (inc ? 1 : 0);
  }
  i128 lo = -((i128)1 << (out_w - 1)), hi = ((i128)1 << (out_w - 1)) - 1;
  if (saturate) return (i64)(q < lo ? lo : q > hi ? hi : q);
  i128 m = q & (((i128)1 << out_w) - 1);
  if (m > hi) m -= (i128)1 << out_w;
  return (i64)m;
}

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  i64 raw(int width) {  // uniform signed raw value of `width` bits
    uint64_t u = g();
    if (width < 64) u &= ((uint64_t)1 << width) - 1;
    i64 v = (i64)u;
    if (width < 64 && (u >> (width - 1)) & 1) v -= (i64)1 << width;
    return v;
  }
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(g) < p; }
  Bits bits(int nbits) {
    Bits b(nbits);
    for (int i = 0; i < nbits; ++i) b.setBit(i, g() & 1);
    return b;
  }
};

template <class M>
inline void resetModel(M& m) {
  m.rst_n = 0;
  m.in_tvalid = 0;
  m.out_tready = 0;
  for (int i = 0; i < 4; ++i) {
    m.clk = 0;
    m.eval();
    m.clk = 1;
    m.eval();
  }
  m.clk = 0;
  m.rst_n = 1;
  m.eval();
}

struct RunResult {
  bool ok = true;
  std::vector<long> inCycles, outCycles;  // cycle of each accepted input / output transfer
};

// Drives `ins` into in_tdata/in_tvalid (once valid, held until accepted; between transfers a
// gap with probability pgap per cycle, random data while invalid) and out_tready (low with
// probability pstall per cycle); checks every output transfer against `exp` in order. After the
// last expected output, `tail` more cycles with out_tready high must bring no further output
// (when checkTail) and all inputs must have been accepted.
template <class M>
inline RunResult runStream(M& m, const std::vector<Bits>& ins, const std::vector<Bits>& exp,
                           double pgap, double pstall, Rng& r, const char* what,
                           bool checkTail = true, long limit = 2000000) {
  RunResult res;
  size_t ii = 0, oi = 0;
  bool vld = false;
  long cyc = 0;
  int errors = 0;
  const int inBits = ins.empty() ? 1 : ins[0].n;
  const int outBits = exp.empty() ? 1 : exp[0].n;
  long tailLeft = checkTail ? 64 : 0;
  while (oi < exp.size() || ii < ins.size() || tailLeft > 0) {
    bool inTail = oi >= exp.size();
    if (!vld && ii < ins.size() && !r.chance(pgap)) vld = true;
    m.in_tvalid = vld;
    toPort(m.in_tdata, vld ? ins[ii] : r.bits(inBits));
    bool rdy = inTail ? true : !r.chance(pstall);
    m.out_tready = rdy;
    m.clk = 0;
    m.eval();
    bool inFire = vld && m.in_tready;
    bool outFire = m.out_tvalid && rdy;
    if (outFire && inTail && !checkTail) {
      outFire = false;  // outputs of a frame not in the list (e.g. all-padding windows)
    } else if (outFire) {
      if (inTail) {
        std::printf("  %s: extra output transfer at cycle %ld\n", what, cyc);
        res.ok = false;
        break;
      }
      Bits got = fromPort(m.out_tdata, outBits);
      if (!(got == exp[oi])) {
        if (errors++ < 5)
          std::printf("  %s: output %zu at cycle %ld mismatch\n    got %s\n    exp %s\n", what, oi,
                      cyc, got.hex().c_str(), exp[oi].hex().c_str());
        res.ok = false;
      }
      res.outCycles.push_back(cyc);
      ++oi;
    }
    if (inFire) {
      res.inCycles.push_back(cyc);
      ++ii;
      vld = false;
    }
    m.clk = 1;
    m.eval();
    ++cyc;
    if (inTail && tailLeft > 0) --tailLeft;
    if (cyc > limit) {
      std::printf("  %s: timeout after %ld cycles (%zu of %zu outputs, %zu of %zu inputs)\n", what,
                  cyc, oi, exp.size(), ii, ins.size());
      res.ok = false;
      break;
    }
  }
  m.clk = 0;
  m.eval();
  if (res.ok && ii != ins.size()) {
    std::printf("  %s: only %zu of %zu inputs accepted\n", what, ii, ins.size());
    res.ok = false;
  }
  return res;
}

// Checks that output k was seen in cycle want[k] (the no-gap, no-stall pass's timing rule).
inline bool checkCycles(const RunResult& r, const std::vector<long>& want, const char* what) {
  if (r.outCycles.size() != want.size()) return false;
  for (size_t k = 0; k < want.size(); ++k)
    if (r.outCycles[k] != want[k]) {
      std::printf("  %s: output %zu in cycle %ld, timing rule says %ld\n", what, k, r.outCycles[k],
                  want[k]);
      return false;
    }
  return true;
}
