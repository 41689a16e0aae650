// Fusion groups: the units every code-generating target (CPU C++, GPU OpenCL C) compiles into
// one function or kernel.
//
// A group is either
//   - anchored: a compute op whose kernel accepts an elementwise epilogue (Conv, Gemm, MatMul)
//     followed by a chain of elementwise nodes applied to its output while it is in cache or in
//     registers (bias, activation, residual add, ...), or
//   - an elementwise chain: elementwise nodes computed in one pass over the output (a chain
//     node's other operands come along when each is the single use of an elementwise node of its
//     shape), or
//   - a single node of any other kind.
// Every value produced inside a group except its output has exactly one use, inside the group,
// and is not a graph output; every elementwise node keeps the shape of the group's output (its
// other operands broadcast to it). Which ops are anchors and which are fusable elementwise ops is
// the target's policy; the structure is shared.
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace triad::ir {

struct FusionGroup {
  std::vector<const Node*> nodes; // topological order
  bool anchored = false;          // nodes.front() is the anchor, the rest its epilogue
  bool elementwise = false;       // every node is a fusable elementwise op (output i reads
                                  // element i of its same-shaped operands only)

  const Node* anchor() const { return anchored ? nodes.front() : nullptr; }
  const Node* last() const { return nodes.back(); }
  /// Values the group reads that are produced outside it (graph inputs, constants, other
  /// groups' outputs), in first-use order, without duplicates.
  std::vector<Value*> externalInputs() const;
  /// A readable name: the last node's name, or "first..last" for several nodes.
  std::string name() const;
};

struct FusionPolicy {
  /// Ops whose kernel takes an epilogue.
  std::function<bool(const Node&)> isAnchor;
  /// Elementwise ops the target can fuse (into an anchor's epilogue or a chain).
  std::function<bool(const Node&)> isFusableElementwise;
  /// Views (Reshape, Flatten, ...) the target can carry inside a chain (null: none). A view
  /// keeps the linear order, so later nodes of the chain read the same elements under its
  /// shape; operands of each node broadcast against that node's own output shape.
  std::function<bool(const Node&)> isFusableView;
  /// Anchors whose epilogue may change the element type along its tail (an integer product's
  /// int32 sums requantized, dequantized and added to a residual); null: none, the tail keeps
  /// the anchor's output type.
  std::function<bool(const Node&)> anchorTailChangesType;
};

/// Partitions the nodes of `g` into groups, ordered so that each group's external inputs are
/// produced by earlier groups (a group sits at the position of its last node).
std::vector<FusionGroup> formFusionGroups(const Graph& g, const FusionPolicy& policy);

/// Counts for reports: groups, anchored groups, nodes fused away.
std::string describeFusion(std::span<const FusionGroup> groups);

} // namespace triad::ir
