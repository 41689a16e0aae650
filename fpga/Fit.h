// Fitting a design to a named part (`triad compile --target fpga --fpga-part P`): per Dense/Conv
// layer the reuse factor (output folding included), the strategy (multipliers or, at reuse 1, an
// adder graph) and the weight storage (constants selected by multiplexers, or a block-RAM ROM),
// chosen for the highest throughput whose resource estimate stays within a margin of the part.
//
// The search (docs/fpga.md, "Fitting a part"):
//   1. Probe: every layer's options are planned through the emitter (its resource estimate and
//      cycles per sample), several layers per probe.
//   2. For each candidate II T (every option's cycles per sample, smallest first), each layer
//      takes the option with cycles <= T that costs least, cost = sum over LUT, FF, DSP and
//      BRAM of weight x use / budget; while the total exceeds the budget, the weights of the
//      resources over it double (a few rounds), so layers trade a scarce resource for another.
//   3. The first T that fits is the design, after moving weights from multiplexers to ROMs where
//      block RAM is left and that saves LUTs; none: a Usage error stating the smallest design's
//      resources beside the part's.
// Layers whose reuse the config fixes ("reuse": {layer: R}) keep it; so do their strategy and
// storage when the config names them.
#pragma once

#include "fpga/Devices.h"
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"

#include <string>
#include <vector>

namespace triad::fpga {

struct FitOptions {
  double margin = 0.8; // use at most this fraction of each of the part's resources
  /// Whether layers may be built as adder graphs (at reuse 1) where that costs less; when false,
  /// every layer the config does not pin keeps the caller's VerilogOptions::strategy.
  bool chooseStrategy = true;
};

/// One layer's choice.
struct FitLayer {
  std::string layer;
  int64_t reuse = 1;
  Strategy strategy = Strategy::Dsp;
  bool weightRom = false;
  int64_t cyclesPerSample = 0;
  ir::Resources resources;
  bool fixed = false; // pinned by the caller's options
};

struct FitResult {
  VerilogOptions options; // what the design was built with
  VerilogDesign design;
  std::vector<FitLayer> layers; // the Dense/Conv layers, in stream order
  int64_t ii = 0;               // the predicted II: the slowest stage's cycles per sample
  ir::Resources budget;         // the part's resources times the margin
  int64_t probes = 0;           // designs planned during the search
  int64_t candidates = 0;       // options considered over all layers
};

/// Fits the design of `g` to `part`. `base`: every other setting (clock, shift-add digits,
/// pinned layers, ...). Usage error when even the smallest design exceeds the budget.
FitResult fitToPart(const ir::Graph& g, const Emulator& emu, const VerilogOptions& base,
                    const Device& part, const FitOptions& fo);

} // namespace triad::fpga
