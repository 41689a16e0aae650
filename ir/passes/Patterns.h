// Small helpers for the pattern-rewriting passes (fuse-gelu, fuse-layernorm, fuse-softmax):
// constant-scalar tests and who reads a value.
#pragma once

#include "ir/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace triad::ir {

/// Whether `v` is a constant float scalar (any rank, one element) equal to `want` within `tol`
/// (relative, at least absolute for |want| < 1).
bool isScalarConstant(const Value* v, double want, double tol = 1e-5);

/// The other operand of a binary node when one operand is `v`, else nullptr.
Value* otherOperand(const Node* n, const Value* v);

/// Replaces value `y` by the single output of a new node computing it; the new output takes y's
/// name (graph outputs and dumps keep it) and every use of y moves to it.
Node* replaceWith(Graph& g, Value* y, OpKind kind, const std::string& nodeName,
                  std::vector<Value*> inputs, std::shared_ptr<const Attrs> attrs);

/// Removes the matched nodes `dead` (now unused) and restores topological order.
void removeMatched(Graph& g, const std::vector<const Node*>& dead);

/// The readers of every value, taken when constructed (rewrites that remove nodes must not
/// rely on it afterwards).
class Readers {
public:
  explicit Readers(const Graph& g);
  /// The nodes reading `v` (a node reading it twice appears once).
  const std::vector<Node*>& of(const Value* v) const { return readers_[size_t(v->id())]; }
  /// The one node reading `v`, when `v` has exactly one use and is not a graph output.
  Node* sole(const Value* v) const;
  bool isGraphOutput(const Value* v) const;

private:
  std::vector<std::vector<Node*>> readers_;
  std::vector<int> uses_;
  std::vector<Value*> outputs_;
};

} // namespace triad::ir
