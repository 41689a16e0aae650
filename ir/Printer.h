// Stable text form of a graph (golden tests, --print-after-all) and Graphviz DOT export.
#pragma once

#include "ir/Graph.h"

#include <string>

namespace triad::ir {

/// Text form. Deterministic: depends only on the graph. Constants with at most
/// `kInlineConstantLimit` elements print their values; larger ones print a content hash.
std::string printGraph(const Graph& g);
constexpr int64_t kInlineConstantLimit = 8;

/// Graphviz DOT: one box per node (op, name, output shapes), edges labelled with shapes.
std::string toDot(const Graph& g);

/// 64-bit FNV-1a of a tensor's type and bytes, printed as 16 hex digits.
std::string tensorHash(const Tensor& t);

} // namespace triad::ir
