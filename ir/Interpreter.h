// The reference interpreter: runs a graph node by node with each op's reference kernel. It is
// the oracle every backend is tested against, so it is written for clarity, not speed.
#pragma once

#include "ir/Graph.h"
#include "ir/Progress.h"

#include <span>
#include <vector>

namespace triad::ir {

class Interpreter {
public:
  explicit Interpreter(const Graph& g) : g_(g) {}

  /// Inputs in graph-input order; checks dtype and shape of each, naming the input at fault.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  /// Like run, but also returns every intermediate value, indexed by Value::id (empty tensors
  /// for values never computed). For debugging and per-layer comparisons.
  std::vector<Tensor> runAll(std::span<const Tensor> inputs) const;

  /// Called after each node with its name, the nodes done and their count.
  void setProgress(ProgressFn f) { progress_ = std::move(f); }

private:
  std::vector<Tensor> execute(std::span<const Tensor> inputs, bool keepAll) const;
  const Graph& g_;
  ProgressFn progress_;
};

/// Evaluates one node on given input tensors (nullptr for absent inputs) with its reference
/// kernel; output types from the node. Used by the interpreter and by import-time folding.
std::vector<Tensor> evalNode(const Node& n, std::span<const Tensor* const> inputs);

/// The interpreter's peak memory on `g`: constants, inputs, and the intermediates alive at once
/// (each freed after its last use), with the node whose outputs reach the peak.
struct WorkingSet {
  uint64_t bytes = 0;
  const Node* peakNode = nullptr;
};
WorkingSet interpreterWorkingSet(const Graph& g);
/// Throws Error(Resource), naming the node at the peak, when a run of `g` would hold more than
/// memoryLimit() (`--max-memory`).
void checkWorkingSet(const Graph& g);

} // namespace triad::ir
