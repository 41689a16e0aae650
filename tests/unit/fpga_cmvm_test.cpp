// The adder-graph solver of constant matrix-vector products (fpga/Cmvm.h): exact on random
// matrices and inputs at the ends of their ranges, intervals that hold every node's value,
// sharing that removes adders, and the depth bound on shared subexpressions.
#include "fpga/Cmvm.h"

#include <gtest/gtest.h>

#include <random>

namespace triad::fpga::cmvm {
namespace {

struct Case {
  int64_t N, K;
  int wBits;
  double zeros;
};

std::vector<int64_t> randomMatrix(const Case& c, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> wd(-(int64_t(1) << (c.wBits - 1)),
                                            (int64_t(1) << (c.wBits - 1)) - 1);
  std::bernoulli_distribution zero(c.zeros);
  std::vector<int64_t> w(size_t(c.N * c.K));
  for (auto& v : w)
    v = zero(rng) ? 0 : wd(rng);
  return w;
}

TEST(Cmvm, ExactOnRandomMatricesAndRangeEnds) {
  std::mt19937_64 rng(7);
  for (Case c : {Case{1, 1, 8, 0}, Case{5, 3, 4, 0.2}, Case{16, 16, 11, 0.1}, Case{32, 64, 11, 0},
                 Case{8, 40, 16, 0.5}, Case{3, 7, 2, 0}}) {
    std::vector<int64_t> w = randomMatrix(c, rng);
    std::vector<Range> in;
    for (int64_t k = 0; k < c.K; ++k) // signed 16-bit inputs, some unsigned 8-bit ones
      in.push_back(k % 3 == 2 ? Range{0, 255} : Range{-32768, 32767});
    Graph g = solve(w, c.N, c.K, in);
    ASSERT_EQ(int64_t(g.outputs.size()), c.N);
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<int64_t> x(size_t(c.K));
      for (int64_t k = 0; k < c.K; ++k) {
        const Range& r = in[size_t(k)];
        int pick = int(rng() % 3);
        x[size_t(k)] = pick == 0   ? int64_t(r.lo)
                       : pick == 1 ? int64_t(r.hi)
                                   : int64_t(r.lo) + int64_t(rng() % uint64_t(r.hi - r.lo + 1));
      }
      std::vector<i128> nodes;
      std::vector<i128> y = evaluate(g, x, &nodes);
      for (int64_t o = 0; o < c.N; ++o) {
        i128 want = 0;
        for (int64_t k = 0; k < c.K; ++k)
          want += i128(w[size_t(o * c.K + k)]) * x[size_t(k)];
        ASSERT_TRUE(y[size_t(o)] == want) << "N " << c.N << " K " << c.K << " output " << o;
      }
      for (size_t i = 0; i < nodes.size(); ++i) {
        ASSERT_GE(nodes[i], g.nodes[i].range.lo) << "node " << i;
        ASSERT_LE(nodes[i], g.nodes[i].range.hi) << "node " << i;
      }
    }
  }
}

TEST(Cmvm, SharingRemovesAdders) {
  std::mt19937_64 rng(11);
  Case c{32, 64, 11, 0};
  std::vector<int64_t> w = randomMatrix(c, rng);
  std::vector<Range> in(size_t(c.K), Range{-32768, 32767});
  Graph shared = solve(w, c.N, c.K, in);
  Graph plain = solve(w, c.N, c.K, in, Options{0});
  // Without sharing: one adder per digit less one per output.
  EXPECT_EQ(plain.adders(), plain.digits - c.N);
  EXPECT_EQ(plain.sharedAdders(), 0);
  EXPECT_GT(shared.sharedAdders(), 0);
  EXPECT_LT(double(shared.adders()), 0.75 * double(plain.adders()));
  EXPECT_LT(shared.carryBits(), plain.carryBits());
  for (const Node& n : shared.nodes) {
    if (n.shared) {
      EXPECT_LE(n.depth, Options{}.maxShareDepth);
    }
  }
}

TEST(Cmvm, ZeroRowsPowersOfTwoAndSignedWidth) {
  // Row 0 is zero, row 1 a single shifted input (no adder), row 2 = 3*x0 - 5*x1.
  std::vector<int64_t> w = {0, 0, 0, -8, 3, -5};
  Graph g = solve(w, 3, 2, {Range{-128, 127}, Range{-128, 127}});
  EXPECT_EQ(g.outputs[0].node, -1);
  EXPECT_EQ(g.outputs[1].node, 1);
  EXPECT_EQ(g.outputs[1].shift, 3);
  EXPECT_TRUE(g.outputs[1].neg);
  std::vector<i128> y = evaluate(g, {-128, 127});
  EXPECT_TRUE(y[0] == 0 && y[1] == -1016 && y[2] == 3 * -128 - 5 * 127);
  EXPECT_EQ(signedWidth({-128, 127}), 8);
  EXPECT_EQ(signedWidth({0, 128}), 9);
  EXPECT_EQ(signedWidth({-129, 0}), 9);
  EXPECT_EQ(signedWidth({0, 0}), 1);
}

} // namespace
} // namespace triad::fpga::cmvm
