// How targets plug in. A Target says, per node, whether it can run it (derived from its own
// lowering table: no entry = unsupported, with the reason) and compiles a graph into an
// Executable. The interpreter is the reference target every other one is tested against; the
// cpu/, gpu/ and fpga/ libraries add theirs to the registry the CLI builds.
#pragma once

#include "ir/Cost.h"
#include "ir/Graph.h"
#include "ir/Progress.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace triad::ir {

struct Support {
  bool ok = true;
  std::string reason; // why not, when !ok
};

/// Time spent in one layer (or transfer) over the runs since profiling was turned on.
struct LayerTime {
  std::string layer;
  double milliseconds = 0;
  std::string kind = "layer"; // "layer", or a target's own (e.g. "h2d", "d2h", "host", "cycles")
  int64_t cycles = 0;         // FPGA: clock cycles per sample from the RTL's model (0: none)
  std::string op = {};        // the layer's ONNX ops where the target knows them ("Conv+Relu")
};

class Executable {
public:
  virtual ~Executable() = default;
  /// Inputs in graph-input order; outputs in graph-output order.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs) = 0;
  /// Turns per-layer timing on (clearing it) or off; targets without it ignore this.
  virtual void setProfiling(bool) {}
  /// Accumulated per-layer times since profiling was turned on (empty without profiling).
  virtual std::vector<LayerTime> profile() const { return {}; }
  /// Seconds the last run() took on the device by the target's own model, where the host's wall
  /// time is not the device's (the FPGA: cycles at its clock); negative: use the wall time.
  virtual double modelledSeconds() const { return -1; }
};

/// What a caller can ask of any target when compiling; each target uses what applies to it.
struct CompileSettings {
  int threads = 0; // worker threads of targets that run on the host's cores (0: their default)
  /// Called as the compile goes (the CPU target: per layer generated, then the C++ compile).
  ProgressFn progress;
};

class Target {
public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  virtual Support supports(const Node& n) const = 0;
  virtual std::unique_ptr<Executable> compile(const Graph& g, const CompileSettings& s) const = 0;
  std::unique_ptr<Executable> compile(const Graph& g) const {
    return compile(g, CompileSettings{});
  }
  /// Every node's cost on this target, in graph order. The default: supports() and the analytic
  /// model at ctx.device(name()), replaced by ctx.measured[name()] where a node was measured.
  virtual std::vector<NodeCost> estimate(const Graph& g, const CostContext& ctx) const;
};

class TargetRegistry {
public:
  void add(std::unique_ptr<Target> t) { targets_.push_back(std::move(t)); }
  const Target* find(std::string_view name) const;
  std::vector<const Target*> all() const;
  std::string names() const; // "interp, cpu"

private:
  std::vector<std::unique_ptr<Target>> targets_;
};

/// The reference interpreter as a target: supports every registered op.
std::unique_ptr<Target> makeInterpreterTarget();

} // namespace triad::ir
