// The IR verifier: SSA (every value defined once, before use), topological order, that each
// node's arity fits its op, that its attributes pass the op's shape rule, and that the output
// types recorded in the graph are the ones the rule computes. Run after import and after every
// pass; a failure after a pass is a bug in that pass.
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace triad::ir {

/// Returns every problem found (empty: the graph is well formed).
std::vector<std::string> verify(const Graph& g);
/// Throws triad::Error(kind) listing the problems, if any.
void verifyOrThrow(const Graph& g, ErrorKind kind = ErrorKind::Internal);

/// Runs a node's shape rule on the types of its inputs (the rule may throw triad::Error).
std::vector<TensorType> inferNodeTypes(const Node& n);

} // namespace triad::ir
