// The delay model that sizes the pipeline stages of the RTL blocks for a clock (docs/fpga.md,
// "Pipelined arithmetic and the clock"): the cell delays of `triad synth`'s estimate
// (sim/Synth.h, Xc7DelayModel; prjxray's -1 Artix-7 figures as carried in Yosys' cells_sim.v),
// summed along a stage's worst path.
#pragma once

#include <algorithm>

namespace triad::fpga::delay {

constexpr double kLut = 0.57;        // a LUT level and the net into it
constexpr double kCarryEntry = 0.5;  // into a carry chain (its LUT in the same slice)
constexpr double kCarry = 0.11;      // every further CARRY4 (4 bits)
constexpr double kStage = 0.85;      // clock-to-out 0.30, setup 0.10, the last net 0.45
constexpr double kCast = 2.04;       // a saturating output cast as Yosys/ABC map it for a 37-bit
                                     // accumulator: LUT6, MUXF7, MUXF8, LUT6, MUXF7
constexpr double kBramOut = 2.454;   // a block RAM read's clock-to-out (no output register)
constexpr double kBramSetup = 0.566; // a block RAM's address setup
constexpr double kFfSetup = 0.10;
constexpr double kDspMregOut = 1.819; // a DSP48E1's M register through its ALU to PCOUT
constexpr double kFfOut = 0.30;

/// One adder (or comparator) level of `width` bits: a LUT into a carry chain of ceil(width/4)
/// CARRY4s.
inline double adderLevel(int width) {
  return kLut + kCarryEntry + kCarry * double(std::max(0, (width + 3) / 4 - 1));
}

/// The logic a stage may hold at `clockMhz`: the period less launch, setup and the last net.
inline double stageBudget(double clockMhz) {
  return 1000.0 / clockMhz - kStage;
}

/// LUT levels of a function of `inputs` inputs built from 6-input LUTs (at least 1).
inline int lutLevels(int inputs) {
  int levels = 1;
  for (int reach = 6; reach < inputs; reach *= 6)
    ++levels;
  return levels;
}

} // namespace triad::fpga::delay
