// An estimated register-to-register timing analysis of a synthesized xc7 netlist (docs/fpga.md,
// "Fmax estimate"): arrival times propagated over Yosys' cells (LUTs, CARRY4, MUXF7/8, DSP48E1,
// flip-flops, block and LUT RAMs) with Xc7DelayModel's per-cell and per-net delays. Registered
// DSP48E1 and block RAM pins are path ends and starts with their own setup and clock-to-out
// times (prjxray's figures in Yosys' cells_sim.v), not pass-through cells; a DSP's clock enable
// is an endpoint, not a path into its output. No placement, routing, fan-out or clock skew: an
// estimate, not a timing closure.
#pragma once

#include "sim/Synth.h"

#include <optional>
#include <string>
#include <vector>

namespace triad::sim {

struct TimingPath {
  std::vector<TimingStep> steps; // launch, the combinational cells, capture
  PathMix mix;                   // the combinational cells by kind
  double periodNs = 0;           // the sum of the steps' delays
};

/// The slowest register-to-register (or port) path of the netlist in `blif` (Yosys `write_blif
/// -param -impltf`, one flattened module). Module inputs launch like a flip-flop's output and
/// outputs capture like its input (the neighbouring layers' registers). nullopt with `why` set
/// when the netlist holds a cell type the model does not know or a combinational loop.
std::optional<TimingPath> criticalPath(const std::string& blif, const Xc7DelayModel& m,
                                       std::string* why);

} // namespace triad::sim
