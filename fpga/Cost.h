// The FPGA's costs: every node's seconds and resources for the partitioner (FpgaTarget::
// estimate), the design's device time, and an energy estimate per inference.
//
// Time (the cycle model of the emitter, at the target's clock). A dataflow design takes
// latency + (n - 1) x II cycles for n samples. A node's share, for a run of the graph's batch B:
//   seconds = (fill + (B - 1) x cycles per sample) / clock
// with `fill` its share of the design's latency (RtlStage::fillCycles: from its latest operand's
// last transfer to its own; along a chain they sum to the latency) and `cycles per sample` its
// stage's (stageCyclesPerSample: the frame it walks, or R cycles per vector at reuse R). The sum
// over a chain of nodes is exact at B = 1 (the design's latency) and at B > 1 an upper bound of
// the design's time: it counts every layer's cycles per sample where the design, whose layers
// overlap, pays only the slowest (the II). That keeps node costs additive over any subset of
// nodes the partitioner puts on the FPGA, at the price of pessimism for large batches.
#pragma once

#include "fpga/FpgaTarget.h"
#include "fpga/VerilogEmitter.h"
#include "ir/Cost.h"

#include <string>
#include <vector>

namespace triad::fpga {

/// Every node's cost on the FPGA, in graph order: support from the layer table (with the
/// reason), seconds from the cycle model, resources from the per-layer estimate. The graph is
/// planned as a whole with the options' config, reuse and clock; where that fails (an unsupported
/// node in the middle, several inputs), each supported node is planned on its own (its data
/// inputs then come from the host), and a node that has no RTL even alone gets a stream model
/// (one transfer per cycle) without resources. ctx.measured["fpga"] replaces a node's seconds.
std::vector<ir::NodeCost> estimateGraph(const ir::Graph& g, const ir::CostContext& ctx,
                                        const FpgaTargetOptions& o);

/// Device seconds of `samples` samples through a design: (latency + (samples - 1) x II) cycles
/// at clockMhz.
double designSeconds(int64_t latencyCycles, double ii, int64_t samples, double clockMhz);

/// An energy estimate per inference (docs/fpga.md, "Energy (estimate)"): not a measurement.
struct EnergyEstimate {
  double joules = 0; // per inference: static + dynamic
  double staticJoules = 0, dynamicJoules = 0;
  double staticWatts = 0, dynamicWatts = 0;
  std::string model; // the model and its inputs, in words
};

/// Energy of one inference: (static power of `part` + dynamic power) x secondsPerInference, the
/// dynamic power being sum(resource count x energy per active cycle) x activity x clock, with the
/// per-resource energies of the part's family (7-series typical values when `part` is empty,
/// which also leaves static power out). activity in [0, 1]: the fraction of cycles the logic is
/// busy. Usage error for an unknown part or a value out of range.
EnergyEstimate estimateEnergy(const ir::Resources& r, double activity, double clockMhz,
                              double secondsPerInference, const std::string& part);

/// The design's activity in steady state: every layer busy cycles-per-sample / II of the cycles,
/// weighted by its resources' dynamic energy (7-series coefficients).
double designActivity(const VerilogDesign& d);

} // namespace triad::fpga
