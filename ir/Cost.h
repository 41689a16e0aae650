// Cost estimates for placing nodes on targets (ir/partition). Every target answers, beside
// supports(), how long each node of a graph would take on it: analytically from the node's work
// (MACs, bytes moved) and the device's calibrated peak and bandwidth, or from a measured
// per-layer profile when the user has run the model there; the FPGA from its cycle model at its
// clock, with the resources each layer needs so that a part that does not fit a named device is
// never placed there.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace triad::ir {

class Graph;
class Node;

/// FPGA resources (a whole design, one layer or a device's budget).
struct Resources {
  double lut = 0, ff = 0, dsp = 0, bram18 = 0; // BRAM in 18 Kib halves (RAMB18)
  Resources& operator+=(const Resources& o) {
    lut += o.lut, ff += o.ff, dsp += o.dsp, bram18 += o.bram18;
    return *this;
  }
  bool fitsIn(const Resources& budget) const {
    return lut <= budget.lut && ff <= budget.ff && dsp <= budget.dsp && bram18 <= budget.bram18;
  }
  bool empty() const { return lut == 0 && ff == 0 && dsp == 0 && bram18 == 0; }
};

/// What a device does, measured on this machine (ir/partition/Calibration) or given.
struct DeviceModel {
  double gflops = 10;         // sustained multiply-adds x2 per second on dense layers, 1e9/s
  double gbytesPerS = 10;     // memory bandwidth seen by element-wise layers, GB/s
  double layerOverheadUs = 1; // fixed cost per layer (a call, a kernel launch), microseconds
};

/// The analytic work of a node: multiply-accumulates and bytes read plus written.
struct NodeWork {
  int64_t macs = 0;
  int64_t bytes = 0;
};
NodeWork nodeWork(const Node& n);

/// Seconds for `w` on a device: max(compute, memory) plus the per-layer overhead.
double analyticSeconds(const NodeWork& w, const DeviceModel& d);

/// One node's cost on one target.
struct NodeCost {
  bool supported = true;
  std::string reason; // why not, when !supported
  double seconds = 0; // per run of the graph (its batch), on the device
  /// Dataflow targets (the FPGA): the time between successive runs when its layers overlap (a
  /// stage of a pipeline is as slow as its slowest layer). Negative: layers run one after
  /// another, and a stage takes the sum of its nodes' seconds.
  double interval = -1;
  Resources resources; // FPGA: what this node's layer needs
  std::string basis;   // how it was derived ("analytic: 1.2 MMAC at 40 GFLOP/s", "measured", ...)
};

/// What the cost model knows beyond the graph: device models per target name, measured
/// per-layer seconds per target (node name -> seconds per run), the FPGA part's budget.
struct CostContext {
  std::map<std::string, DeviceModel> devices;
  std::map<std::string, std::map<std::string, double>> measured;
  std::string fpgaPart; // e.g. "xcku115" (empty: no resource limit)
  Resources fpgaBudget; // the part's resources (all zero: no limit)
  const DeviceModel& device(const std::string& target) const;
};

} // namespace triad::ir
