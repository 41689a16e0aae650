// The per-layer resource estimate (LUT, FF, DSP48E1, RAMB18 on a 7-series part) next to the
// layer table's cost model (RtlLayer: latency, cycles, multipliers, memory bits). It reads the
// layer's data, never its op: a multiply-accumulate array (LayerInfo's weights, fan-in and
// fan-out, with the reuse factor and pipeline levels of its RtlLayer: Dense and Conv), a window's
// delay line (RtlLayer::delay: Conv and pooling), lookup tables (LayerInfo's table and invTable:
// Sigmoid, Tanh, Softmax), a frame collected into a vector (Flatten before Dense), stream
// registers and the casts on every output element.
//
// The model follows what Yosys' synth_xilinx makes of the fpga/rtl/ blocks (with the adder trees
// pipelined, as `--clock-mhz` makes them):
//   DSP   one DSP48E1 per product of at most 25 x 18 signed bits (wider: one per 24 x 17 piece),
//         when the product has 9 bits or more (narrower ones are LUTs, as Yosys maps them);
//         at reuse 1 a weight that quantizes to 0 needs no product; a power of two needs none
//         only in an unpipelined tree (registered, Yosys keeps it in a DSP48E1). At reuse > 1
//         every multiplier reads R weights through a multiplexer and is a DSP.
//   LUT   the adder tree's levels 2 and up (level 1 sits in the DSP48E1s' post-adders):
//         kLutPerAdderBit per bit of the node's range-sized width; the accumulate; the output
//         cast (saturation); at reuse > 1 the R:1 input multiplexers (one per tree leaf, shared
//         by the outputs; a LUT6 is a 4:1 multiplexer) and, at R > 2, the weight selection (a
//         function of the column counter: one LUT per significant bit; none when the weights
//         are a ROM); with output folding the group select of each output bit; shift-register LUTs
//         (SRL16E/SRLC32E) for delay-line runs of 3 or more stages and for a tree node passed
//         through three or more registered levels; ROMs under 2 Kib in LUTs (64 x 1 bits per LUT6);
//         element-wise layers one LUT per output bit (the cast), reductions one per bit summed or
//         two per bit compared and selected.
//   FF    the stream registers (a Dense core's input vector, every block's output register),
//         the accumulator at reuse > 1, the registered adder-tree levels from 2 (levels 0 and 1
//         are the DSP48E1's M and P registers), delay-line taps and a collected frame.
//   BRAM  a ROM of 2 Kib or more in RAMB18s (1K x 18, 2K x 9, 512 x 36, ...), one per copy:
//         tables, and a Dense/Conv core's weights at R > 1 with WEIGHT_ROM (R words).
// Calibrated on jet_mlp at reuse 1 (docs/fpga.md) and checked against Yosys on small designs by
// tests/unit/fpga_cost_test.cpp; accuracy on the measured designs in docs/fpga.md, "Resources
// (estimate)".
#include "fpga/layers/DenseCore.h"
#include "fpga/layers/Layer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace triad::fpga {

namespace {

// Calibration (see the header comment).
constexpr double kLutPerAdderBit = 0.92;        // a carry-chain adder bit (jet_mlp at R = 1: 0.9-1)
constexpr double kLutPerCastBit = 1.0;          // a saturating or rounding cast, per output bit
constexpr int64_t kSrlStages = 32;              // SRLC32E
constexpr int64_t kRomLutBits = 64;             // a LUT6 as a 64 x 1 ROM
constexpr int64_t kBramMinBits = 2048;          // smaller ROMs stay in LUTs
constexpr double kLutPerFoldedOutputBit = 0.75; // output folding's group select (AD08, Yosys)
constexpr int kDspMinProductBits = 9;           // narrower products are logic (Yosys 0.23)

// Significant bits of a signed raw value (two's complement, with the sign).
int signedBits(int64_t v) {
  int b = 1;
  while (v < -(int64_t(1) << (b - 1)) || v >= (int64_t(1) << (b - 1)))
    ++b;
  return b;
}

bool powerOfTwo(int64_t v) {
  uint64_t a = uint64_t(v < 0 ? -v : v);
  return a != 0 && (a & (a - 1)) == 0;
}

// DSP48E1s for an a x b bit signed product.
int64_t dspsFor(int a, int b) {
  if (a < b) std::swap(a, b);
  if (a <= 25 && b <= 18) return 1;
  if (b <= 18) return (a - 2) / 24 + 1;
  return ((a - 2) / 24 + 1) * ((b - 2) / 17 + 1);
}

// An a x b bit signed product: DSP48E1s, or LUTs when its result is under 9 bits (Yosys 0.23's
// synth_xilinx maps narrower products to logic: DSP_Y_MINWIDTH), about one per two partial
// product bits.
struct MultiplierCost {
  int64_t dsp = 0;
  double lut = 0;
};
MultiplierCost multiplierCost(int a, int b) {
  if (a + b < kDspMinProductBits) return {0, double(a * b) / 2 + 1};
  return {dspsFor(a, b), 0};
}

int ceilLog2(int64_t v) {
  int d = 0;
  while ((int64_t(1) << d) < v)
    ++d;
  return d;
}

// RAMB18s for `copies` ROMs of depth x width (the best of the RAMB18 aspect ratios).
double bramFor(int64_t depth, int64_t width, int64_t copies) {
  static const int64_t shapes[][2] = {{16384, 1}, {8192, 2},  {4096, 4},
                                      {2048, 9},  {1024, 18}, {512, 36}};
  int64_t best = INT64_MAX;
  for (const auto& s : shapes)
    best = std::min(best, ((depth + s[0] - 1) / s[0]) * ((width + s[1] - 1) / s[1]));
  return double(best * copies);
}

// A constant table: BRAM when large, else LUTs.
void addRom(ir::Resources& res, int64_t depth, int64_t width, int64_t copies) {
  if (depth * width >= kBramMinBits)
    res.bram18 += bramFor(depth, width, copies);
  else
    res.lut += double(copies * width * ((depth + kRomLutBits - 1) / kRomLutBits));
}

// The multiply-accumulate array of triad_dense (fpga/rtl/triad_dense.v).
ir::Resources macArray(const LayerInfo& info, const FixedFormat& in, const RtlLayer& r) {
  ir::Resources res;
  const int64_t K = info.fanIn, N = info.fanOut, R = std::max<int64_t>(r.reuse, 1);
  // Output folding (R = K x RO): N / RO lanes of one product each; else N lanes of K / R.
  const int64_t RO = R > K && K > 0 ? R / K : 1, RI = R / RO;
  const int64_t kpr = std::max<int64_t>(K / RI, 1), lanes = std::max<int64_t>(N / RO, 1);
  const int D = ceilLog2(kpr);
  const LayerQuant& q = info.quant;
  const FixedFormat &wf = q.weight().format, &af = q.acc().format, &of = info.outFormat;
  // Range-sized node widths, as triad_dense: the leaf is the product aligned to the accumulator.
  int pw = in.width + wf.width, pfrac = in.fracBits() + wf.fracBits();
  int shl = std::max(0, af.fracBits() - pfrac), shr = std::max(0, pfrac - af.fracBits());
  int range = shr == 0 ? pw + shl : std::max(2, pw - shr);
  int leafW = std::min(range, af.width);
  auto levelW = [&](int l) { return std::min(leafW + l, af.width); };
  auto levelCount = [&](int l) { return (kpr + (int64_t(1) << l) - 1) >> l; };
  auto registered = [&](int l) { return l < 64 && l <= D && (r.stageMask >> l & 1); };

  // Products: per multiplier m (lane o, tree leaf j) the R weights it reads, m*R .. m*R + R - 1.
  int64_t dsp = 0, weightSelectBits = 0;
  for (int64_t o = 0; o < lanes; ++o)
    for (int64_t j = 0; j < kpr; ++j) {
      int wbits = 1;
      bool allZero = true, shift = true;
      for (int64_t c = 0; c < R; ++c) {
        size_t idx = size_t((o * kpr + j) * R + c);
        int64_t w = idx < info.weights.size() ? info.weights[idx] : 1;
        wbits = std::max(wbits, signedBits(w));
        allZero = allZero && w == 0;
        shift = shift && (w == 0 || powerOfTwo(w));
      }
      weightSelectBits += R > 1 ? wbits : 0;
      // At reuse 1 the products by constants of few signed digits are shifts (and one add).
      if (R == 1 && (allZero || (shift && r.shiftAddDigits > 0))) continue;
      if (R == 1 && r.shiftAddDigits > 1) {
        size_t idx = size_t(o * K + j);
        if (idx < info.weights.size() && constTerms(info.weights[idx], r.shiftAddDigits) != 0) {
          res.lut += double(in.width + wbits); // the add of the two shifted copies
          continue;
        }
      }
      MultiplierCost mc = multiplierCost(in.width, R == 1 ? wbits : wf.width);
      dsp += mc.dsp;
      res.lut += mc.lut;
    }
  res.dsp = double(dsp);

  // Adder tree, per output. Level 1 (pairs of products) goes to the DSP48E1s' post-adders, with
  // its register in their P registers; levels 2..D are carry-chain adders in LUTs. A node
  // without a partner (the last of an odd level) passes through: registered on three or more
  // consecutive levels it becomes a shift register (SRL16E), not flip-flops.
  double addBits = 0, regBits = 0, srlBits = 0;
  int passRun = 0, passW = 0;
  for (int l = 1; l <= D; ++l) {
    int64_t adds = levelCount(l - 1) / 2;
    bool pass = levelCount(l - 1) % 2 == 1;
    if (l >= 2) addBits += double(adds * levelW(l));
    if (registered(l) && l >= 2) regBits += double(adds * levelW(l));
    if (pass && registered(l)) {
      ++passRun;
      passW = levelW(l);
      regBits += double(levelW(l));
    }
    bool chainEnds = !(pass && registered(l)) || l == D;
    if (chainEnds && passRun > 0) {
      if (passRun >= 3) {
        srlBits += double(passW);
        regBits -= double(passRun) * double(passW);
      }
      passRun = 0;
    }
  }
  const double accBits = double(af.width),
               castLuts = of.width + std::max(0, af.width - of.width) / 3.0;
  res.lut +=
      double(lanes) * (kLutPerAdderBit * (addBits + accBits) + kLutPerCastBit * castLuts + srlBits);
  res.ff += double(lanes) * std::max(regBits, 0.0);
  res.ff += double(K * in.width + N * of.width); // x_reg, out_tdata
  if (RO > 1) {
    // y_buf, and the selection of each group's results into it and into the output register
    // (Yosys 0.23 on AD08's folded layers: 0.7-0.9 LUT per output bit); the bias of the group.
    res.ff += double(N * of.width);
    res.lut += kLutPerFoldedOutputBit * double(N * of.width);
    res.lut += double(lanes * q.bias().format.width) * std::ceil(double(RO - 1) / 3);
  }
  if (R > 1) {
    res.ff += double(lanes * af.width);  // acc
    res.lut += double(lanes * af.width); // the accumulate's base: bias or acc
    // Each tree leaf selects one of its RI inputs (shared by every lane; a LUT6 is a 4:1
    // multiplexer).
    res.lut += double(kpr * in.width) * std::ceil(double(RI - 1) / 3);
    if (r.weightRom) {
      // A ROM of R words of every multiplier's weight (and the column's inputs registered).
      addRom(res, R, lanes * kpr * wf.width, 1);
      res.ff += double(kpr * in.width);
    } else if (R > 2) {
      // Each multiplier selects one of its R weights (one LUT per bit up to R = 64). At R = 2 a
      // weight bit is the column bit, its inverse or a constant: no LUT of its own.
      res.lut += double(weightSelectBits) * std::ceil(double(R) / 64);
    }
  }
  return res;
}

} // namespace

ir::Resources estimateFifo(int64_t width, int64_t depth) {
  ir::Resources res;
  res.ff = 2.0 * (ceilLog2(depth) + 1); // write and read pointers
  res.lut = res.ff;                     // their increments and the full/empty compare
  if (depth <= 64)
    res.lut += 4.0 * double((width + (depth <= 32 ? 5 : 2)) / (depth <= 32 ? 6 : 3));
  else if (depth * width >= kBramMinBits)
    res.bram18 += bramFor(depth, width, 1);
  else
    res.lut += double(width * ((depth + 63) / 64)) * 4.0 / 3.0;
  return res;
}

ir::Resources estimateResources(const Layer& layer, std::span<const RtlOperand> ops,
                                const RtlLayer& r) {
  ir::Resources res;
  if (r.passThrough || ops.empty()) return res;
  const LayerInfo& info = layer.info;
  const RtlOperand& a = ops[0];
  const int64_t outBits = r.out.c * r.outFormat.width;
  const bool mac = info.fanIn > 0 && info.fanOut > 0 && !info.weights.empty();

  // A frame collected into one vector (triad_collect): all transfers but the last held.
  if (a.geom.transfers() > 1 && r.out.transfers() == 1 && mac)
    res.ff += double((a.geom.transfers() - 1) * a.geom.c * a.format.width);

  // A window's delay line: taps in flip-flops, runs of 2+ stages in SRLC32Es, and the window
  // output register.
  if (r.delay.lanes > 0) {
    double lanes = double(r.delay.lanes);
    res.ff += lanes * double(std::max<int64_t>(r.delay.taps - 1, 0)); // the newest is the input
    res.ff += lanes * double(r.delay.taps);                           // the window register
    for (int64_t run : r.delay.runs)
      if (run >= 3)
        res.lut += lanes * double((run + kSrlStages - 1) / kSrlStages);
      else
        res.ff += lanes * double(run);
  }

  if (mac && r.adderGraph) {
    // An adder graph: its carry chains and bias adds (a LUT per bit), the result casts, the
    // input, pipeline and output registers; no DSP.
    const AdderGraphStats& g = *r.adderGraph;
    const FixedFormat &af = info.quant.acc().format, &of = r.outFormat;
    double castLuts = of.width + std::max(0, af.width - of.width) / 3.0;
    res.lut += kLutPerAdderBit * double(g.carryBits + g.finalBits) +
               kLutPerCastBit * castLuts * double(r.out.c);
    res.ff += double(g.regBits + info.fanIn * a.format.width + r.out.c * of.width);
    return res;
  }
  if (mac) {
    res += macArray(info, a.format, r);
    return res;
  }

  // Element-wise and reducing layers: the output register and a cast per output bit; a
  // reduction (a window's elements, or the operands of a join) one adder or comparator per
  // element it removes; multipliers by their operand widths; tables as ROMs, one copy per lane.
  int64_t inElems = 0, inBits = 0;
  for (const RtlOperand& op : ops) {
    int64_t elems = op.geom.c * (r.delay.lanes > 0 ? r.delay.taps : 1);
    inElems += elems;
    inBits += elems * op.format.width;
  }
  res.ff += double(outBits);
  int64_t reduced = std::max<int64_t>(inElems - r.out.c, 0);
  double avgInW = inElems > 0 ? double(inBits) / double(inElems) : 0;
  // A maximum compares and selects (two LUTs per bit); a sum (average pooling, Add) adds.
  res.lut += double(reduced) * avgInW * (r.multipliers == 0 && ops.size() == 1 ? 2.0 : 1.0);
  // A whole-frame reduction (global pooling) accumulates in a register per lane.
  if (a.geom.transfers() > 1 && r.out.transfers() == 1 && r.delay.lanes == 0) {
    double accW = a.format.width + ceilLog2(a.geom.transfers());
    res.ff += double(r.out.c) * accW;
    res.lut += double(r.out.c) * accW;
  }
  if (!info.table.empty()) {
    int64_t depth = int64_t(info.table.size());
    // Entries in the result format; with a reciprocal table (Softmax) in the exp format.
    int width = info.invTable.empty() ? r.outFormat.width : info.quant.exp.format.width;
    addRom(res, depth, width, r.out.c);
    if (!info.invTable.empty())
      addRom(res, int64_t(info.invTable.size()), info.quant.inv.format.width, 1);
  }
  if (r.multipliers > 0) {
    int bw = info.invTable.empty() ? info.quant.weight().format.width : info.quant.inv.format.width;
    int aw = info.invTable.empty() ? a.format.width : info.quant.exp.format.width;
    MultiplierCost mc = multiplierCost(aw, bw);
    res.dsp += double(r.multipliers * mc.dsp);
    res.lut += double(r.multipliers) * mc.lut;
  }
  // A normalisation by a reciprocal table (Softmax): per element the maximum's compare and
  // select, the subtraction and the table index, the sum of the exponentials, the product's
  // cast; plus the control of its five stages.
  if (!info.invTable.empty())
    res.lut += double(r.out.c) * (3.0 * a.format.width + 2.0 * info.quant.exp.format.width) + 150;
  res.lut += kLutPerCastBit * double(outBits);
  return res;
}

} // namespace triad::fpga
