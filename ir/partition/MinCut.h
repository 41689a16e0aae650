// Minimum s-t cut on a small directed graph with real capacities (Dinic's algorithm), and the
// alpha-expansion move-making solver built on it for labelling problems with per-node costs and
// metric pairwise costs (Boykov, Veksler and Zabih 2001): the partitioner's optimiser.
#pragma once

#include <functional>
#include <vector>

namespace triad::ir::partition {

class MinCut {
public:
  explicit MinCut(int nodes); // plus the source (nodes) and the sink (nodes + 1)
  int source() const { return n_; }
  int sink() const { return n_ + 1; }
  void addEdge(int from, int to, double capacity);
  /// Runs the max-flow; returns the cut's capacity. Afterwards sourceSide(v) tells the side.
  double solve();
  bool sourceSide(int v) const { return reach_[v]; }

private:
  struct Edge {
    int to;
    double cap;
  };
  bool bfs();
  double dfs(int v, double f);
  int n_;
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_, it_;
  std::vector<bool> reach_;
};

/// A labelling problem: labels 0..L-1 per node, unary[node][label] (may be huge: forbidden),
/// pairwise terms on edges with a cost function of the two labels that is a (semi-)metric.
struct Labelling {
  int labels = 0;
  std::vector<std::vector<double>> unary;
  struct Pair {
    int a, b;
    std::function<double(int, int)> cost;
  };
  std::vector<Pair> pairs;
  double energy(const std::vector<int>& x) const;
};

/// Alpha-expansion from `x` (updated in place) until no expansion lowers the energy. With two
/// labels and `x` all 0, the first expansion (to 1) spans every labelling and is one exact
/// min-cut: the result is the global optimum. With more, a local optimum within a factor of 2
/// of the optimum for metric pairwise costs.
/// Returns the number of sweeps.
int alphaExpansion(const Labelling& p, std::vector<int>& x);

} // namespace triad::ir::partition
