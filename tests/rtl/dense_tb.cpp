// Verilator testbench of fpga/rtl/triad_dense.v against a plain C++ model of its arithmetic
// (driven by tests/rtl/dense_tests.sh).
//
// One configuration is given as KEY=VALUE arguments (N_IN, N_OUT, REUSE, IN_W, IN_FRAC, W_W,
// W_FRAC, B_W, B_FRAC, ACC_W, ACC_FRAC, OUT_W, OUT_FRAC, ACC_ROUNDING, ACC_SATURATE,
// RES_ROUNDING, RES_SATURATE, STAGE_LEVELS, STAGE_MASK, TERMS, SEED, SAMPLES). The weights and
// biases are drawn from SEED, so the two builds of this file agree on them. TERMS=1 draws a
// quarter of the weights as 0, +-2^k or +-2^a +-2^b and passes W_TERMS (the emitter's codes:
// shifts and adds instead of multipliers at REUSE 1) and W_MAG (the largest |w|'s bits):
//   -DDENSE_TB_GEN: `dense_tb_gen KEY=VALUE...` prints the wrapper module tb_top (triad_dense
//                   with the configuration and the random WEIGHTS/BIASES; its LATENCY
//                   localparam on the port `latency`).
//   otherwise:      built with the Verilated tb_top, `dense_tb KEY=VALUE...` runs
//     1. a steady pass (no input gaps, no back-pressure): every output, latency == LATENCY (the
//        C++ formula and the Verilog localparam) for every vector, II == REUSE for every input
//        accept and every output;
//     2. a pass with ~30% input gaps and ~30% output back-pressure;
//     3. a pass with ~10% input gaps and ~70% output back-pressure;
//   in passes 2 and 3 every output vector must arrive once, in order, bit-identical, and no
//   output may follow the last one. Prints one line; exit 0 on success.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using i128 = __int128;

struct Cfg {
  std::map<std::string, long> v{
      {"N_IN", 16},        {"N_OUT", 5},        {"REUSE", 1},        {"IN_W", 16},
      {"IN_FRAC", 10},     {"W_W", 16},         {"W_FRAC", 10},      {"B_W", 16},
      {"B_FRAC", 10},      {"ACC_W", 37},       {"ACC_FRAC", 20},    {"OUT_W", 16},
      {"OUT_FRAC", 10},    {"ACC_ROUNDING", 0}, {"ACC_SATURATE", 0}, {"RES_ROUNDING", 0},
      {"RES_SATURATE", 1}, {"STAGE_LEVELS", 0}, {"SEED", 1},         {"SAMPLES", 300},
      {"STAGE_MASK", 0},   {"TERMS", 0},        {"WEIGHT_ROM", 0}};
  int operator[](const char* k) const { return int(v.at(k)); }
};

bool parse(int argc, char** argv, Cfg& c) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (eq == std::string::npos || !c.v.count(a.substr(0, eq))) {
      std::fprintf(stderr, "bad argument '%s'\n", argv[i]);
      return false;
    }
    c.v[a.substr(0, eq)] = std::strtol(a.c_str() + eq + 1, nullptr, 0);
  }
  return true;
}

i128 pow2(int n) {
  return i128(1) << n;
}

// The low w bits of v as a signed value.
i128 wrap(i128 v, int w) {
  i128 m = pow2(w) - 1;
  i128 u = v & m;
  return (u >> (w - 1)) & 1 ? u - pow2(w) : u;
}

// triad_cast: align the binary point (rounding the dropped bits), then fit into outW bits.
i128 cast(i128 v, int inFrac, int outW, int outFrac, int rounding, int saturate) {
  int d = outFrac - inFrac;
  i128 q;
  if (d >= 0) {
    q = v * pow2(d);
  } else {
    int s = -d;
    i128 fl = v >> s; // arithmetic: floor
    bool half = (v >> (s - 1)) & 1;
    bool rest = s > 1 && (v & (pow2(s - 1) - 1)) != 0;
    bool inc = rounding == 1 ? half : rounding == 2 ? half && (rest || (fl & 1)) : false;
    q = fl + (inc ? 1 : 0);
  }
  i128 lo = -pow2(outW - 1), hi = pow2(outW - 1) - 1;
  if (q < lo || q > hi) q = saturate ? (q < lo ? lo : hi) : wrap(q, outW);
  return q;
}

// A random signed w-bit raw value: 1/8 the minimum -2^(w-1) and 1/16 the maximum (the extreme
// products need every bit of a leaf), otherwise uniform, half of these scaled down by a random
// shift, so that both small and full-range magnitudes occur.
long randRaw(std::mt19937_64& rng, int w) {
  uint64_t pick = rng() % 16;
  if (pick < 2) return long(-pow2(w - 1));
  if (pick == 2) return long(pow2(w - 1) - 1);
  long v = long(wrap(i128(rng()), w));
  if (rng() & 1) v >>= int(rng() % uint64_t(w));
  return v;
}

struct Params {
  std::vector<long> w, b; // w[o*N_IN + i], b[o]
};

// A weight of at most two signed digits (within w bits), or 0.
long fewDigits(std::mt19937_64& rng, int w) {
  uint64_t pick = rng() % 4;
  if (pick == 0) return 0;
  long a = long(rng() % uint64_t(w - 1)), b = long(rng() % uint64_t(w - 1));
  long v = (rng() & 1 ? -1 : 1) * (long(1) << a);
  if (pick >= 2) v += (rng() & 1 ? -1 : 1) * (long(1) << b);
  return long(wrap(v, w));
}

// triad_dense's W_TERMS code of w (the emitter's fpga::constTerms, at most two digits).
unsigned constTerms(long w) {
  if (w == 0) return 1u << 14;
  std::vector<std::pair<int, bool>> digits;
  long v = w;
  for (int k = 0; v != 0; ++k, v /= 2) {
    if (v % 2 == 0) continue;
    long d = 2 - (((v % 4) + 4) % 4);
    digits.push_back({k, d < 0});
    v -= d;
  }
  if (digits.size() > 2) return 0;
  auto [a, na] = digits.back();
  if (digits.size() == 1) return (2u << 14) | (na ? 1u << 13 : 0) | unsigned(a) << 8;
  auto [b, nb] = digits.front();
  if (na && nb) return 0;
  return (3u << 14) | (na ? 1u << 13 : 0) | unsigned(a) << 8 | (nb ? 1u << 7 : 0) | unsigned(b);
}

Params draw(const Cfg& c) {
  std::mt19937_64 rng{uint64_t(c["SEED"]) * 7919u + 17u};
  Params p;
  for (int i = 0; i < c["N_OUT"] * c["N_IN"]; ++i)
    p.w.push_back(c["TERMS"] && rng() % 4 == 0 ? fewDigits(rng, c["W_W"]) : randRaw(rng, c["W_W"]));
  for (int o = 0; o < c["N_OUT"]; ++o)
    p.b.push_back(randRaw(rng, c["B_W"]));
  return p;
}

int expectedLatency(const Cfg& c) {
  // Output folding: REUSE = N_IN * RO takes one input per cycle (a one-leaf tree).
  int ro = c["REUSE"] > c["N_IN"] ? c["REUSE"] / c["N_IN"] : 1;
  int kpr = c["N_IN"] / (c["REUSE"] / ro), d = 0, k = c["STAGE_LEVELS"];
  int pre = c["WEIGHT_ROM"] && c["REUSE"] > 1 ? 1 : 0;
  while ((1 << d) < kpr)
    ++d;
  if (c["STAGE_MASK"] != 0) {
    int p = 0;
    for (int l = 0; l <= d; ++l)
      p += l == 0 || (c["STAGE_MASK"] >> l & 1);
    return c["REUSE"] + 1 + p + pre;
  }
  return c["REUSE"] + 1 + (k == 0 ? 0 : 1 + d / k) + pre;
}

std::vector<long> reference(const Cfg& c, const Params& p, const std::vector<long>& x) {
  int pFrac = c["IN_FRAC"] + c["W_FRAC"];
  std::vector<long> y;
  for (int o = 0; o < c["N_OUT"]; ++o) {
    i128 s = cast(p.b[size_t(o)], c["B_FRAC"], c["ACC_W"], c["ACC_FRAC"], c["ACC_ROUNDING"],
                  c["ACC_SATURATE"]);
    for (int i = 0; i < c["N_IN"]; ++i) {
      i128 prod = i128(x[size_t(i)]) * p.w[size_t(o * c["N_IN"] + i)];
      s = wrap(
          s + cast(prod, pFrac, c["ACC_W"], c["ACC_FRAC"], c["ACC_ROUNDING"], c["ACC_SATURATE"]),
          c["ACC_W"]);
    }
    y.push_back(long(
        cast(s, c["ACC_FRAC"], c["OUT_W"], c["OUT_FRAC"], c["RES_ROUNDING"], c["RES_SATURATE"])));
  }
  return y;
}

} // namespace

#ifdef DENSE_TB_GEN

namespace {
std::string literal(long v, int w) {
  uint64_t u = uint64_t(v) & (w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1);
  return std::to_string(w) + "'h" + [&] {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", (unsigned long long)u);
    return std::string(buf);
  }();
}
} // namespace

int main(int argc, char** argv) {
  Cfg c;
  if (!parse(argc, argv, c)) return 2;
  Params p = draw(c);
  const char* names[] = {
      "N_IN",     "N_OUT",        "REUSE",        "IN_W",         "IN_FRAC",      "W_W",
      "W_FRAC",   "B_W",          "B_FRAC",       "ACC_W",        "ACC_FRAC",     "OUT_W",
      "OUT_FRAC", "ACC_ROUNDING", "ACC_SATURATE", "RES_ROUNDING", "RES_SATURATE", "STAGE_LEVELS",
      "WEIGHT_ROM"};
  std::string s = "// Generated by dense_tb_gen.\nmodule tb_top (\n"
                  "    input wire clk,\n    input wire rst_n,\n";
  s += "    input wire [" + std::to_string(c["N_IN"] * c["IN_W"] - 1) + ":0] in_tdata,\n";
  s += "    input wire in_tvalid,\n    output wire in_tready,\n";
  s += "    output wire [" + std::to_string(c["N_OUT"] * c["OUT_W"] - 1) + ":0] out_tdata,\n";
  s += "    output wire out_tvalid,\n    input wire out_tready,\n"
       "    output wire [31:0] latency\n);\n  triad_dense #(\n";
  for (const char* n : names)
    s += std::string("      .") + n + "(" + std::to_string(c[n]) + "),\n";
  // Concatenations: the last element first.
  s += "      .STAGE_MASK(64'h" + literal(c["STAGE_MASK"], 64).substr(4) + "),\n";
  if (c["TERMS"]) {
    long maxAbs = 0;
    for (long w : p.w)
      maxAbs = std::max(maxAbs, w < 0 ? -w : w);
    int mag = 0;
    while ((1L << mag) <= maxAbs)
      ++mag;
    s += "      .W_MAG(" + std::to_string(mag < c["W_W"] ? mag : c["W_W"]) + "),\n";
    s += "      .W_TERMS({";
    for (size_t i = p.w.size(); i-- > 0;)
      s += literal(long(constTerms(p.w[i])), 16) + (i ? ", " : "");
    s += "}),\n";
  }
  // With WEIGHT_ROM, word c of the ROM holds weight m*REUSE + c of every multiplier m.
  std::vector<long> order = p.w;
  if (c["WEIGHT_ROM"] && c["REUSE"] > 1) {
    size_t r = size_t(c["REUSE"]), nm = p.w.size() / r;
    for (size_t cy = 0; cy < r; ++cy)
      for (size_t m = 0; m < nm; ++m)
        order[cy * nm + m] = p.w[m * r + cy];
  }
  s += "      .WEIGHTS({";
  for (size_t i = order.size(); i-- > 0;)
    s += literal(order[i], c["W_W"]) + (i ? ", " : "");
  s += "}),\n      .BIASES({";
  for (size_t i = p.b.size(); i-- > 0;)
    s += literal(p.b[i], c["B_W"]) + (i ? ", " : "");
  s += "})\n  ) u_dut (\n      .clk(clk), .rst_n(rst_n), .in_tdata(in_tdata), "
       ".in_tvalid(in_tvalid),\n"
       "      .in_tready(in_tready), .out_tdata(out_tdata), .out_tvalid(out_tvalid),\n"
       "      .out_tready(out_tready)\n  );\n  assign latency = u_dut.LATENCY;\nendmodule\n";
  std::fputs(s.c_str(), stdout);
  return 0;
}

#else

#include "Vtb_top.h"
#include "verilated.h"

#include <type_traits>

namespace {

// Ports of up to 64 bits are integers, wider ones VlWide (32-bit words).
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
void put(T& port, const std::vector<uint32_t>& w) {
  port = T(uint64_t(w[0]) | (sizeof(T) > 4 ? uint64_t(w[1]) << 32 : 0));
}
template <std::size_t N> void put(VlWide<N>& port, const std::vector<uint32_t>& w) {
  for (std::size_t i = 0; i < N; ++i)
    port[i] = w[i];
}
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
void get(const T& port, std::vector<uint32_t>& w) {
  w[0] = uint32_t(uint64_t(port));
  w[1] = uint32_t(uint64_t(port) >> 32);
}
template <std::size_t N> void get(const VlWide<N>& port, std::vector<uint32_t>& w) {
  for (std::size_t i = 0; i < N; ++i)
    w[i] = port[i];
}

std::vector<uint32_t> pack(const std::vector<long>& v, int w) {
  std::vector<uint32_t> words(v.size() * size_t(w) / 32 + 2, 0);
  for (size_t e = 0; e < v.size(); ++e)
    for (int b = 0; b < w; ++b)
      if ((uint64_t(v[e]) >> b) & 1) {
        size_t bit = e * size_t(w) + size_t(b);
        words[bit / 32] |= 1u << (bit % 32);
      }
  return words;
}

std::vector<long> unpack(const std::vector<uint32_t>& words, int n, int w) {
  std::vector<long> v;
  for (int e = 0; e < n; ++e) {
    uint64_t u = 0;
    for (int b = 0; b < w; ++b) {
      size_t bit = size_t(e) * size_t(w) + size_t(b);
      u |= uint64_t((words[bit / 32] >> (bit % 32)) & 1) << b;
    }
    v.push_back(long(wrap(i128(u), w)));
  }
  return v;
}

struct Pass {
  std::vector<uint64_t> accept, out;
  std::vector<std::vector<long>> y;
  bool timeout = false, extra = false;
};

Pass run(Vtb_top& top, const Cfg& c, const std::vector<std::vector<long>>& xs, double gap,
         double stall, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Pass p;
  auto edge = [&](int clk) {
    top.clk = uint8_t(clk);
    top.eval();
  };
  top.rst_n = 0;
  top.in_tvalid = 0;
  top.out_tready = 0;
  for (int i = 0; i < 3; ++i) {
    edge(0);
    edge(1);
  }
  top.rst_n = 1;
  size_t sent = 0;
  bool presenting = false;
  std::vector<uint32_t> w(size_t(c["N_OUT"] * c["OUT_W"]) / 32 + 2);
  const uint64_t limit = (xs.size() + 10) * uint64_t(c["REUSE"] + 20) * 20;
  uint64_t after = 0; // cycles run after the last expected output
  for (uint64_t cycle = 0; after < 3 * uint64_t(expectedLatency(c)) + 10; ++cycle) {
    if (cycle > limit) {
      p.timeout = true;
      break;
    }
    bool done = p.y.size() >= xs.size();
    if (!presenting && sent < xs.size() && !(gap > 0 && u(rng) < gap)) {
      put(top.in_tdata, pack(xs[sent], c["IN_W"]));
      presenting = true;
    }
    top.in_tvalid = presenting;
    // While a valid-but-not-ready output is offered, the data must be held: checked by
    // comparing what is finally accepted.
    top.out_tready = done || !(stall > 0 && u(rng) < stall);
    edge(0);
    bool inFire = top.in_tvalid && top.in_tready;
    if (top.out_tvalid && top.out_tready) {
      if (done) {
        p.extra = true;
      } else {
        get(top.out_tdata, w);
        p.y.push_back(unpack(w, c["N_OUT"], c["OUT_W"]));
        p.out.push_back(cycle);
      }
    }
    edge(1);
    if (inFire) {
      p.accept.push_back(cycle);
      ++sent;
      presenting = false;
    }
    if (done) ++after;
  }
  return p;
}

} // namespace

int main(int argc, char** argv) {
  Verilated::commandArgs(1, argv);
  Cfg c;
  if (!parse(argc, argv, c)) return 2;
  Params prm = draw(c);
  std::mt19937_64 rng{uint64_t(c["SEED"]) * 104729u + 3u};
  std::vector<std::vector<long>> xs;
  std::vector<std::vector<long>> want;
  for (int s = 0; s < c["SAMPLES"]; ++s) {
    std::vector<long> x;
    for (int i = 0; i < c["N_IN"]; ++i)
      x.push_back(randRaw(rng, c["IN_W"]));
    want.push_back(reference(c, prm, x));
    xs.push_back(std::move(x));
  }
  Vtb_top top;
  std::string err;
  const int lat = expectedLatency(c);
  top.eval();
  if (int(top.latency) != lat)
    err += " LATENCY localparam " + std::to_string(top.latency) + " != formula " +
           std::to_string(lat) + ";";
  struct Mode {
    const char* name;
    double gap, stall;
  } modes[] = {{"steady", 0, 0}, {"gaps30/stall30", 0.3, 0.3}, {"gaps10/stall70", 0.1, 0.7}};
  int mismatches = 0;
  for (int m = 0; m < 3; ++m) {
    Pass p = run(top, c, xs, modes[m].gap, modes[m].stall, uint64_t(c["SEED"]) + uint64_t(m));
    std::string e;
    if (p.timeout) e += " timeout;";
    if (p.extra) e += " output after the last one;";
    if (p.y.size() != xs.size())
      e += " " + std::to_string(p.y.size()) + " of " + std::to_string(xs.size()) + " outputs;";
    for (size_t s = 0; s < p.y.size() && s < want.size(); ++s)
      if (p.y[s] != want[s]) {
        if (mismatches < 3) {
          e += " vector " + std::to_string(s) + " got";
          for (long v : p.y[s])
            e += " " + std::to_string(v);
          e += " want";
          for (long v : want[s])
            e += " " + std::to_string(v);
          e += ";";
        }
        ++mismatches;
      }
    if (m == 0) {
      for (size_t s = 0; s < p.out.size() && s < p.accept.size(); ++s)
        if (p.out[s] - p.accept[s] != uint64_t(lat)) {
          e += " latency " + std::to_string(p.out[s] - p.accept[s]) + " at vector " +
               std::to_string(s) + ", want " + std::to_string(lat) + ";";
          break;
        }
      for (size_t s = 1; s < p.out.size(); ++s)
        if (p.out[s] - p.out[s - 1] != uint64_t(c["REUSE"]) ||
            p.accept[s] - p.accept[s - 1] != uint64_t(c["REUSE"])) {
          e += " II " + std::to_string(p.out[s] - p.out[s - 1]) + "/" +
               std::to_string(p.accept[s] - p.accept[s - 1]) + " at vector " + std::to_string(s) +
               ", want " + std::to_string(c["REUSE"]) + ";";
          break;
        }
    }
    if (!e.empty()) err += std::string(" [") + modes[m].name + "]" + e;
  }
  if (mismatches) err += " " + std::to_string(mismatches) + " mismatching vectors;";
  std::printf("%s latency %d, II %d, %d vectors x 3 passes%s%s\n", err.empty() ? "pass" : "fail",
              lat, c["REUSE"], c["SAMPLES"], err.empty() ? "" : ":", err.c_str());
  top.final();
  return err.empty() ? 0 : 1;
}

#endif
