// Constant matrix-vector products as adder graphs (CMVM): y = W x for a constant integer matrix
// W (N x K) built from additions and shifts only, no multiplier.
//
// Algorithm (docs/fpga.md, "Multiplier-free layers"):
//  1. Every weight is written in canonical signed digits (non-adjacent form), so each output is a
//     list of terms +-x_k * 2^s, one per nonzero digit.
//  2. Common subexpressions are shared across all outputs of the layer (Hartley's two-term
//     elimination, the greedy step of distributed-arithmetic compilers such as da4ml): the pair
//     pattern "a +- b * 2^d" (a and b inputs or earlier shared sums, d >= 0) that occurs most often
//     in the outputs' term lists becomes one new adder, and every non-overlapping occurrence is
//     replaced by a single term of it. Ties go to the smaller shift (the narrower adder). Repeated
//     while a pattern occurs twice or more, and while the new adder's depth stays within
//     `maxShareDepth` adder levels (so sharing cannot make the layer's pipeline deeper than its
//     adder trees would be anyway).
//  3. Each output sums its remaining terms by a tree that always adds the two shallowest terms
//     (the narrower on a tie), so the depth is the least possible for the terms' depths.
//
// Cost model: one adder per node, its carry chain as wide as the bits it really adds: for
// a + (b << d) the low d bits are a's, so the chain is width - d bits; every node is as wide as
// the interval of its values needs (interval arithmetic from the inputs' ranges). The arithmetic
// is exact: every node holds its exact integer value.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace triad::fpga::cmvm {

using i128 = __int128;

struct Range {
  i128 lo = 0, hi = 0;
};
/// Bits of the two's complement integers holding [lo, hi] (at least 1).
int signedWidth(const Range& r);

/// The canonical signed digits of v (non-adjacent form): (shift, negative), least significant
/// first; the fewest nonzero digits of any signed-digit form.
std::vector<std::pair<int, bool>> signedDigits(int64_t v);

/// A signed, shifted reference to a node: (neg ? -1 : 1) * value(node) * 2^shift. node < 0: 0.
struct Term {
  int node = -1;
  int shift = 0;
  bool neg = false;
};

/// Nodes [0, inputs) are the inputs x_k; every later node is an adder
///   value = a + (negB ? -b : b) * 2^shift   (shift >= 0)
/// over earlier nodes a and b: its low `shift` bits are a's, so its carry chain spans only the
/// bits above them. A difference the other way round (b * 2^shift - a) is never built: the term
/// that reads the node carries the sign instead.
struct Node {
  int a = -1, b = -1;
  int shift = 0;
  bool negB = false;
  bool shared = false; // made by step 2 (a common subexpression), not by an output's tree
  Range range;
  int bits = 1;  // signedWidth(range)
  int depth = 0; // adder levels from the inputs
  int width() const { return bits; }
  /// Bits of its carry chain: width - shift (at least 1); 0 for an input.
  int carryBits() const;
};

struct Graph {
  int inputs = 0;
  std::vector<Node> nodes;
  std::vector<Term> outputs; // y_o, one per row of W
  int64_t adders() const { return int64_t(nodes.size()) - inputs; }
  int64_t sharedAdders() const;
  int depth() const;
  /// Sum of the adders' carry-chain bits (the LUT count of the adders on 7-series parts).
  int64_t carryBits() const;
  /// The nonzero signed digits of W: the adders of a graph without sharing are this less the
  /// outputs that are not zero.
  int64_t digits = 0;
};

struct Options {
  int maxShareDepth = 3; // adder levels a shared subexpression may have
};

/// The adder graph of y = W x, W row-major (w[o * K + k]), input k in `in[k]`.
Graph solve(const std::vector<int64_t>& w, int64_t N, int64_t K, const std::vector<Range>& in,
            const Options& o = {});

/// The graph's outputs for one input vector (exact), and every node's value (`nodes`, optional).
std::vector<i128> evaluate(const Graph& g, const std::vector<int64_t>& x,
                           std::vector<i128>* nodes = nullptr);

} // namespace triad::fpga::cmvm
