// Constant matrix-vector products as adder graphs: canonical signed digits, two-term common
// subexpression elimination across the outputs, depth-first adder trees (fpga/Cmvm.h).
#include "fpga/Cmvm.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace triad::fpga::cmvm {

int signedWidth(const Range& r) {
  int w = 1;
  while (w < 126 && (r.lo < -(i128(1) << (w - 1)) || r.hi > (i128(1) << (w - 1)) - 1))
    ++w;
  return w;
}

int Node::carryBits() const {
  if (a < 0) return 0;
  return std::max(1, width() - shift);
}

int64_t Graph::sharedAdders() const {
  return std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return n.shared; });
}

int Graph::depth() const {
  int d = 0;
  for (const Term& t : outputs)
    if (t.node >= 0) d = std::max(d, nodes[size_t(t.node)].depth);
  return d;
}

int64_t Graph::carryBits() const {
  int64_t bits = 0;
  for (const Node& n : nodes)
    bits += n.carryBits();
  return bits;
}

std::vector<std::pair<int, bool>> signedDigits(int64_t v) {
  std::vector<std::pair<int, bool>> digits;
  for (int k = 0; v != 0; ++k, v /= 2) {
    if (v % 2 == 0) continue;
    int64_t d = 2 - (((v % 4) + 4) % 4); // +1 or -1
    digits.push_back({k, d < 0});
    v -= d;
  }
  return digits;
}

namespace {

Range scaled(const Range& r, bool neg, int shift) {
  Range s{r.lo * (i128(1) << shift), r.hi * (i128(1) << shift)};
  return neg ? Range{-s.hi, -s.lo} : s;
}

// A two-term pattern a +- b * 2^d, packed: a and b (24 bits each), d (8 bits), same sign (1 bit).
using Key = uint64_t;
Key makeKey(int a, int b, int d, bool same) {
  return uint64_t(a) << 33 | uint64_t(b) << 9 | uint64_t(d) << 1 | uint64_t(same);
}
int keyA(Key k) {
  return int(k >> 33);
}
int keyB(Key k) {
  return int(k >> 9 & 0xffffff);
}
int keyD(Key k) {
  return int(k >> 1 & 0xff);
}
bool keySame(Key k) {
  return k & 1;
}

/// The pattern of two terms of one output (false when they cannot form one: the same node at
/// the same shift).
bool patternOf(const Term& x, const Term& y, Key* key) {
  const Term* lo = &x;
  const Term* hi = &y;
  if (y.shift < x.shift || (y.shift == x.shift && y.node < x.node)) std::swap(lo, hi);
  if (lo->node == hi->node && lo->shift == hi->shift) return false;
  int d = hi->shift - lo->shift;
  if (d > 255) return false;
  *key = makeKey(lo->node, hi->node, d, lo->neg == hi->neg);
  return true;
}

class Builder {
public:
  Builder(Graph& g) : g_(g) {}

  int add(int a, int b, int shift, bool negB, bool shared) {
    Node n;
    n.a = a;
    n.b = b;
    n.shift = shift;
    n.negB = negB;
    n.shared = shared;
    const Node &na = g_.nodes[size_t(a)], &nb = g_.nodes[size_t(b)];
    Range ra = na.range, rb = scaled(nb.range, negB, shift);
    n.range = {ra.lo + rb.lo, ra.hi + rb.hi};
    n.bits = signedWidth(n.range);
    n.depth = std::max(na.depth, nb.depth) + 1;
    g_.nodes.push_back(n);
    return int(g_.nodes.size()) - 1;
  }

  /// x + y as one adder: the term of its node (the lower-shifted term's sign goes on the term,
  /// so the adder is always a +- b * 2^d).
  Term combine(Term x, Term y) {
    if (y.shift < x.shift) std::swap(x, y);
    return {add(x.node, y.node, y.shift - x.shift, x.neg != y.neg, false), x.shift, x.neg};
  }

private:
  Graph& g_;
};

/// Step 2: two-term common subexpression elimination over the outputs' term lists.
class Sharing {
public:
  Sharing(Graph& g, Builder& b, std::vector<std::vector<Term>>& rows, std::vector<int>& group,
          const Options& o)
      : g_(g), b_(b), rows_(rows), group_(group), o_(o) {}

  void run() {
    for (const auto& row : rows_)
      for (size_t i = 0; i < row.size(); ++i)
        for (size_t j = i + 1; j < row.size(); ++j)
          bump(row[i], row[j], +1);
    for (const auto& [k, c] : count_)
      if (c >= 2) heap_.push({c, -keyD(k), k});
    while (!heap_.empty()) {
      auto [c, negD, k] = heap_.top();
      heap_.pop();
      auto it = count_.find(k);
      int now = it == count_.end() ? 0 : it->second;
      if (now != c || banned_.count(k)) {
        if (now >= 2 && now < c && !banned_.count(k)) heap_.push({now, negD, k});
        continue;
      }
      if (c < 2) break;
      apply(k);
    }
  }

private:
  void bump(const Term& x, const Term& y, int by) {
    if (group_[size_t(x.node)] != group_[size_t(y.node)]) return;
    Key k;
    if (!patternOf(x, y, &k)) return;
    int& c = count_[k];
    c += by;
    if (by > 0 && c >= 2) heap_.push({c, -keyD(k), k});
  }

  // The non-overlapping occurrences of k in one row: pairs of term indices.
  std::vector<std::pair<size_t, size_t>> matches(const std::vector<Term>& row, Key k) const {
    int a = keyA(k), b = keyB(k), d = keyD(k);
    bool same = keySame(k);
    std::vector<std::pair<size_t, size_t>> m;
    std::vector<char> used(row.size(), 0);
    std::vector<size_t> order;
    for (size_t i = 0; i < row.size(); ++i)
      if (row[i].node == a) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return row[x].shift < row[y].shift; });
    for (size_t i : order) {
      if (used[i]) continue;
      for (size_t j = 0; j < row.size(); ++j) {
        const Term& t = row[j];
        if (j == i || used[j] || t.node != b || t.shift != row[i].shift + d ||
            t.neg != (same ? row[i].neg : !row[i].neg))
          continue;
        used[i] = used[j] = 1;
        m.push_back({i, j});
        break;
      }
    }
    return m;
  }

  void apply(Key k) {
    int a = keyA(k), b = keyB(k), d = keyD(k);
    bool same = keySame(k);
    if (std::max(g_.nodes[size_t(a)].depth, g_.nodes[size_t(b)].depth) + 1 > o_.maxShareDepth) {
      banned_.insert(k);
      return;
    }
    std::vector<std::vector<std::pair<size_t, size_t>>> found(rows_.size());
    size_t total = 0;
    for (size_t r = 0; r < rows_.size(); ++r) {
      found[r] = matches(rows_[r], k);
      total += found[r].size();
    }
    if (total < 2) { // the count included overlapping occurrences
      banned_.insert(k);
      return;
    }
    int n = b_.add(a, b, d, !same, true);
    group_.push_back(group_[size_t(a)]);
    for (size_t r = 0; r < rows_.size(); ++r) {
      if (found[r].empty()) continue;
      std::vector<Term>& row = rows_[r];
      std::vector<char> gone(row.size(), 0);
      std::vector<Term> added;
      for (auto [i, j] : found[r]) {
        gone[i] = gone[j] = 1;
        added.push_back({n, row[i].shift, row[i].neg});
      }
      // Pairs that disappear: every pair with a removed term (once each).
      for (size_t i = 0; i < row.size(); ++i) {
        if (!gone[i]) continue;
        for (size_t j = 0; j < row.size(); ++j)
          if (j != i && (!gone[j] || j > i)) bump(row[i], row[j], -1);
      }
      std::vector<Term> kept;
      for (size_t i = 0; i < row.size(); ++i)
        if (!gone[i]) kept.push_back(row[i]);
      for (size_t i = 0; i < added.size(); ++i) {
        for (const Term& t : kept)
          bump(added[i], t, +1);
        for (size_t j = 0; j < i; ++j)
          bump(added[i], added[j], +1);
      }
      kept.insert(kept.end(), added.begin(), added.end());
      row = std::move(kept);
    }
  }

  Graph& g_;
  Builder& b_;
  std::vector<std::vector<Term>>& rows_;
  std::vector<int>& group_;
  const Options& o_;
  std::unordered_map<Key, int> count_;
  std::unordered_set<Key> banned_;
  std::priority_queue<std::tuple<int, int, Key>> heap_;
};

// Pairs of terms the sharing step may count before it restricts patterns to blocks of inputs.
constexpr double kPairBudget = 3e6;

} // namespace

Graph solve(const std::vector<int64_t>& w, int64_t N, int64_t K, const std::vector<Range>& in,
            const Options& o) {
  Graph g;
  g.inputs = int(K);
  for (int64_t k = 0; k < K; ++k) {
    Node n;
    n.range = in[size_t(k)];
    n.bits = signedWidth(n.range);
    g.nodes.push_back(n);
  }
  std::vector<std::vector<Term>> rows(static_cast<size_t>(N));
  double pairs = 0;
  for (int64_t r = 0; r < N; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      if (in[size_t(k)].lo == 0 && in[size_t(k)].hi == 0) continue;
      for (auto [s, neg] : signedDigits(w[size_t(r * K + k)]))
        rows[size_t(r)].push_back({int(k), s, neg});
    }
    g.digits += int64_t(rows[size_t(r)].size());
    pairs += 0.5 * double(rows[size_t(r)].size()) * double(rows[size_t(r)].size());
  }
  // Patterns pair terms of inputs in the same block: the whole row unless that is too many pairs.
  int64_t block = K;
  while (block > 8 && pairs * double(block) / double(K) > kPairBudget)
    block = (block + 1) / 2;
  std::vector<int> group;
  for (int64_t k = 0; k < K; ++k)
    group.push_back(int(k / std::max<int64_t>(block, 1)));
  Builder b(g);
  Sharing(g, b, rows, group, o).run();
  // Step 3: per output, add the two shallowest terms (the narrower on a tie) until one is left.
  for (auto& row : rows) {
    auto later = [&](const Term& x, const Term& y) {
      const Node &nx = g.nodes[size_t(x.node)], &ny = g.nodes[size_t(y.node)];
      return std::tuple(nx.depth, nx.width() + x.shift) >
             std::tuple(ny.depth, ny.width() + y.shift);
    };
    std::priority_queue<Term, std::vector<Term>, decltype(later)> q(later, row);
    while (q.size() > 1) {
      Term x = q.top();
      q.pop();
      Term y = q.top();
      q.pop();
      q.push(b.combine(x, y));
    }
    g.outputs.push_back(q.empty() ? Term{} : q.top());
  }
  return g;
}

std::vector<i128> evaluate(const Graph& g, const std::vector<int64_t>& x,
                           std::vector<i128>* nodesOut) {
  std::vector<i128> v(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.a < 0) {
      v[i] = x[i];
      continue;
    }
    i128 a = v[size_t(n.a)], b = v[size_t(n.b)] * (i128(1) << n.shift);
    v[i] = a + (n.negB ? -b : b);
  }
  std::vector<i128> y;
  for (const Term& t : g.outputs) {
    i128 s = t.node < 0 ? 0 : v[size_t(t.node)] * (i128(1) << t.shift);
    y.push_back(t.neg ? -s : s);
  }
  if (nodesOut) *nodesOut = std::move(v);
  return y;
}

} // namespace triad::fpga::cmvm
