// Partitioning one graph across targets, and running the partitioned graph.
//
// Every candidate target estimates every node (ir::Target::estimate: analytic, measured, or the
// FPGA's cycle model with its resources). Edges whose ends land on different targets become
// explicit transfers priced by a link model (bandwidth + latency per host<->device link; the
// GPU's calibrated by measuring OpenCL transfers). The modes:
//   single    every node on one target;
//   manual    --place NODE=TARGET (and a file of such lines), the rest on a default target;
//   auto      minimise the modelled end-to-end latency of one inference, including transfers
//             (min-cut over the graph: exact for two targets, alpha-expansion for more; the FPGA's
//             resource budget enforced with a Lagrange multiplier on its resources);
//   pipeline  consecutive partitions overlap across a stream of inputs: maximise throughput
//             (contiguous stages in topological order, each device at most one stage; a dynamic
//             program over cut points, exact for that family).
#pragma once

#include "ir/Cost.h"
#include "ir/Target.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace triad::ir::partition {

/// A host<->device link. The CPU (and the interpreter) are the host: no link.
struct Link {
  std::string name;       // "pcie-gen3-x16"
  double gbytesPerS = 12; // sustained, GB/s
  double latencyUs = 10;  // per transfer
  std::string basis;      // "default", "config FILE", "measured (OpenCL, 16 MiB)"
  double seconds(int64_t bytes) const;
};

struct Links {
  std::map<std::string, Link> toHost; // target name -> its link to the host
  /// An FPGA boundary moves fixed-point words (fixed<16,6>: 2 bytes) and converts on the host.
  double fpgaBytesPerElement = 2;
  double conversionNsPerElement = 1; // float<->fixed on the host, per element
  /// PCIe Gen3 x16 for "gpu" and "fpga" (12 GB/s, 10 us).
  static Links defaults();
  /// Reads a JSON file {"gpu": {"name":..,"gbytes_per_s":..,"latency_us":..}, "fpga": {...}}.
  static Links load(const std::string& path);
  /// Time to move `v` from `from` to a consumer on `to` (through the host), with the
  /// float<->fixed conversion when one side is the FPGA. 0 on one device or between host targets.
  double seconds(const std::string& from, const std::string& to, const TensorType& v) const;
  /// Bytes `v` occupies on the links between `from` and `to` (0 when none is crossed).
  int64_t bytes(const std::string& from, const std::string& to, const TensorType& v) const;
  /// "gpu", "fpga", "gpu+fpga" or "" (host only).
  std::string route(const std::string& from, const std::string& to) const;
};

enum class Mode { Single, Manual, Auto, Pipeline };
Mode parseMode(const std::string& s); // throws Usage

struct Options {
  Mode mode = Mode::Auto;
  std::vector<std::string> targets;         // candidates (auto/pipeline); first = default
  std::map<std::string, std::string> place; // manual: node name -> target
  Links links = Links::defaults();
  CostContext costs;
};

struct Partition {
  int id = 0;
  std::string target;
  std::vector<const Node*> nodes; // in graph order
  double predictedSeconds = 0;
  Resources resources; // FPGA partitions
};

struct Transfer {
  int from = -1, to = -1; // partition ids; -1: the graph's inputs / outputs (host)
  const Value* value = nullptr;
  int64_t bytes = 0;
  std::string link;       // the link crossed ("gpu", "fpga", "gpu+fpga")
  std::string conversion; // "float->fixed" / "fixed->float" at an FPGA boundary, or ""
  double predictedSeconds = 0;
};

struct NodePlacement {
  const Node* node = nullptr;
  std::string target;
  std::map<std::string, NodeCost> costs; // per candidate target
  std::string why;
};

struct Plan {
  Mode mode = Mode::Auto;
  std::string algorithm;
  std::vector<NodePlacement> nodes;  // graph order
  std::vector<Partition> partitions; // execution order
  std::vector<Transfer> transfers;
  double predictedSeconds = 0;        // one inference, end to end
  double predictedThroughputPerS = 0; // pipeline mode: inferences per second in steady state
  Resources fpgaResources;            // all FPGA partitions together
  std::string fpgaPart;
};

/// Plans `g` over the registry's targets named in o.targets.
Plan plan(const Graph& g, const TargetRegistry& targets, const Options& o);

/// What one run of a partitioned graph measured.
struct RunTimes {
  std::vector<double> partitionSeconds; // per partition (the FPGA's: cycles / clock)
  std::vector<double> transferSeconds;  // per transfer
  std::vector<bool> transferMeasured;   // false: the link's model (no such hardware here)
  double totalSeconds = 0;
};

/// Inferences per second of a pipeline plan from measured stage times: its stages overlap in a
/// stream, so the slowest measured partition or transfer sets the rate (0 when none was timed).
double measuredThroughput(const RunTimes& t);

/// The plan as text (the `triad partition` table), as JSON (docs/report-schema.md's
/// "partition"), and as Graphviz DOT coloured by target.
std::string planText(const Plan& p, const Graph& g);
std::string planJson(const Plan& p, const RunTimes* measured = nullptr); // a JSON object
std::string planDot(const Plan& p, const Graph& g);

/// A partitioned graph compiled: one executable per partition, run in order, tensors passed at
/// the cuts. Its profile() has one row per partition and transfer.
class PartitionedExecutable : public Executable {
public:
  virtual const Plan& plan() const = 0;
  virtual const RunTimes& lastTimes() const = 0;
};

std::unique_ptr<PartitionedExecutable>
compilePlan(const Graph& g, const Plan& p, const TargetRegistry& targets, const CompileSettings& s);

/// The partition's nodes as a graph of their own: its inputs are the values it reads from
/// other partitions or the graph's inputs (constants are copied), its outputs the values read
/// by other partitions or the graph's outputs.
Graph extractSubgraph(const Graph& g, const std::vector<const Node*>& nodes,
                      std::vector<const Value*>* inputs, std::vector<const Value*>* outputs);

} // namespace triad::ir::partition
