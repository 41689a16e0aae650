#include "ir/partition/MinCut.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace triad::ir::partition {

namespace {
constexpr double kEps = 1e-15;
}

MinCut::MinCut(int nodes) : n_(nodes), adj_(size_t(nodes) + 2) {}

void MinCut::addEdge(int from, int to, double capacity) {
  if (capacity <= 0 || from == to) return;
  adj_[size_t(from)].push_back(int(edges_.size()));
  edges_.push_back({to, capacity});
  adj_[size_t(to)].push_back(int(edges_.size()));
  edges_.push_back({from, 0});
}

bool MinCut::bfs() {
  level_.assign(adj_.size(), -1);
  std::queue<int> q;
  level_[size_t(source())] = 0;
  q.push(source());
  while (!q.empty()) {
    int v = q.front();
    q.pop();
    for (int e : adj_[size_t(v)])
      if (edges_[size_t(e)].cap > kEps && level_[size_t(edges_[size_t(e)].to)] < 0) {
        level_[size_t(edges_[size_t(e)].to)] = level_[size_t(v)] + 1;
        q.push(edges_[size_t(e)].to);
      }
  }
  return level_[size_t(sink())] >= 0;
}

double MinCut::dfs(int v, double f) {
  if (v == sink()) return f;
  for (int& i = it_[size_t(v)]; i < int(adj_[size_t(v)].size()); ++i) {
    int e = adj_[size_t(v)][size_t(i)];
    Edge& ed = edges_[size_t(e)];
    if (ed.cap <= kEps || level_[size_t(ed.to)] != level_[size_t(v)] + 1) continue;
    double d = dfs(ed.to, std::min(f, ed.cap));
    if (d > kEps) {
      ed.cap -= d;
      edges_[size_t(e ^ 1)].cap += d;
      return d;
    }
  }
  return 0;
}

double MinCut::solve() {
  double flow = 0;
  while (bfs()) {
    it_.assign(adj_.size(), 0);
    while (double f = dfs(source(), std::numeric_limits<double>::infinity()))
      flow += f;
  }
  // The source side: what the source still reaches in the residual graph.
  reach_.assign(adj_.size(), false);
  std::queue<int> q;
  reach_[size_t(source())] = true;
  q.push(source());
  while (!q.empty()) {
    int v = q.front();
    q.pop();
    for (int e : adj_[size_t(v)])
      if (edges_[size_t(e)].cap > kEps && !reach_[size_t(edges_[size_t(e)].to)]) {
        reach_[size_t(edges_[size_t(e)].to)] = true;
        q.push(edges_[size_t(e)].to);
      }
  }
  return flow;
}

double Labelling::energy(const std::vector<int>& x) const {
  double e = 0;
  for (size_t i = 0; i < unary.size(); ++i)
    e += unary[i][size_t(x[i])];
  for (const Pair& p : pairs)
    e += p.cost(x[size_t(p.a)], x[size_t(p.b)]);
  return e;
}

namespace {

// One expansion move towards label `alpha`: every node keeps its label (x = 0, source side) or
// takes alpha (x = 1, sink side). Kolmogorov and Zabih's construction of the binary energy.
bool expand(const Labelling& p, std::vector<int>& x, int alpha) {
  int n = int(x.size());
  MinCut g(n);
  std::vector<double> keep(static_cast<size_t>(n)), take(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    keep[size_t(i)] = p.unary[size_t(i)][size_t(x[size_t(i)])];
    take[size_t(i)] = p.unary[size_t(i)][size_t(alpha)];
  }
  for (const Labelling::Pair& pr : p.pairs) {
    int a = pr.a, b = pr.b;
    double e00 = pr.cost(x[size_t(a)], x[size_t(b)]);
    double e01 = pr.cost(x[size_t(a)], alpha);
    double e10 = pr.cost(alpha, x[size_t(b)]);
    double e11 = pr.cost(alpha, alpha);
    // E = e00 + (e10 - e00) xa + (e11 - e10) xb + (e01 + e10 - e00 - e11) (1 - xa) xb
    take[size_t(a)] += e10 - e00;
    take[size_t(b)] += e11 - e10;
    g.addEdge(a, b, std::max(0.0, e01 + e10 - e00 - e11));
  }
  for (int i = 0; i < n; ++i) {
    double lo = std::min(keep[size_t(i)], take[size_t(i)]);
    g.addEdge(g.source(), i, take[size_t(i)] - lo); // cut when i takes alpha
    g.addEdge(i, g.sink(), keep[size_t(i)] - lo);   // cut when i keeps its label
  }
  g.solve();
  std::vector<int> y = x;
  for (int i = 0; i < n; ++i)
    if (!g.sourceSide(i)) y[size_t(i)] = alpha;
  if (p.energy(y) < p.energy(x) - 1e-15) {
    x = std::move(y);
    return true;
  }
  return false;
}

} // namespace

int alphaExpansion(const Labelling& p, std::vector<int>& x) {
  int sweeps = 0;
  for (bool changed = true; changed && sweeps < 100;) {
    changed = false;
    ++sweeps;
    for (int alpha = 0; alpha < p.labels; ++alpha)
      changed |= expand(p, x, alpha);
  }
  return sweeps;
}

} // namespace triad::ir::partition
