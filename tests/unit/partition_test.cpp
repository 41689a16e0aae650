// ir/partition: the min-cut and alpha-expansion solvers against brute force, plan() in each mode
// on digits_cnn over interp + cpu + fpga (costs set by hand, no calibration), the subgraphs and
// the compiled partitioned graph against the interpreter, per-layer profiles and link files.
#include "cpu/CpuTarget.h"
#include "fpga/FpgaTarget.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/Interpreter.h"
#include "ir/partition/Calibration.h"
#include "ir/partition/MinCut.h"
#include "ir/partition/Partition.h"
#include "ir/passes/Pass.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <unistd.h>

using namespace triad;
using namespace triad::ir::partition;

namespace {

// ---- solvers ---------------------------------------------------------------------------------

struct Arc {
  int from, to;
  double cap;
};

// The smallest cut over every split of the inner nodes (source side holds `source`).
double bruteMinCut(int n, const std::vector<Arc>& arcs) {
  double best = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << n); ++mask) {
    auto src = [&](int v) { return v == n ? true : v == n + 1 ? false : bool(mask >> v & 1); };
    double c = 0;
    for (const Arc& a : arcs)
      if (src(a.from) && !src(a.to)) c += a.cap;
    best = std::min(best, c);
  }
  return best;
}

double cutOfSides(const MinCut& mc, int n, const std::vector<Arc>& arcs) {
  auto src = [&](int v) { return v == n ? true : v == n + 1 ? false : mc.sourceSide(v); };
  double c = 0;
  for (const Arc& a : arcs)
    if (src(a.from) && !src(a.to)) c += a.cap;
  return c;
}

} // namespace

TEST(PartitionMinCut, ClrsNetworkHasMaxFlow23) {
  // CLRS figure 26.1: s, v1..v4, t. Inner nodes 0..3 are v1..v4.
  MinCut mc(4);
  int s = mc.source(), t = mc.sink();
  std::vector<Arc> arcs = {{s, 0, 16}, {s, 1, 13}, {1, 0, 4},  {0, 2, 12}, {2, 1, 9},
                           {1, 3, 14}, {3, 2, 7},  {2, t, 20}, {3, t, 4}};
  for (const Arc& a : arcs)
    mc.addEdge(a.from, a.to, a.cap);
  EXPECT_NEAR(mc.solve(), 23, 1e-9);
  EXPECT_TRUE(mc.sourceSide(0));
  EXPECT_TRUE(mc.sourceSide(1));
  EXPECT_FALSE(mc.sourceSide(2));
  EXPECT_TRUE(mc.sourceSide(3));
  EXPECT_NEAR(cutOfSides(mc, 4, arcs), 23, 1e-9);
}

TEST(PartitionMinCut, DisconnectedAndChainAndParallel) {
  {
    MinCut mc(2);
    mc.addEdge(mc.source(), 0, 5);
    mc.addEdge(1, mc.sink(), 5);
    EXPECT_EQ(mc.solve(), 0);
    EXPECT_TRUE(mc.sourceSide(0));
    EXPECT_FALSE(mc.sourceSide(1));
  }
  {
    // A chain s -> 0 -> 1 -> 2 -> t: the narrowest link.
    MinCut mc(3);
    mc.addEdge(mc.source(), 0, 3.5);
    mc.addEdge(0, 1, 0.125);
    mc.addEdge(1, 2, 2);
    mc.addEdge(2, mc.sink(), 1);
    EXPECT_NEAR(mc.solve(), 0.125, 1e-12);
    EXPECT_TRUE(mc.sourceSide(0));
    EXPECT_FALSE(mc.sourceSide(1));
  }
  {
    // Three parallel paths of tiny real capacities (a partitioner's microseconds).
    MinCut mc(3);
    for (int i = 0; i < 3; ++i) {
      mc.addEdge(mc.source(), i, 1e-6 * (i + 1));
      mc.addEdge(i, mc.sink(), 2e-6);
    }
    EXPECT_NEAR(mc.solve(), 1e-6 + 2e-6 + 2e-6, 1e-12);
  }
}

TEST(PartitionMinCut, RandomGraphsMatchBruteForce) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 2 + trial % 6;
    MinCut mc(n);
    std::vector<Arc> arcs;
    for (int a = 0; a < n + 2; ++a)
      for (int b = 0; b < n + 2; ++b)
        if (a != b && u(rng) < 0.4) arcs.push_back({a, b, u(rng)});
    for (const Arc& a : arcs)
      mc.addEdge(a.from, a.to, a.cap);
    double flow = mc.solve();
    double brute = bruteMinCut(n, arcs);
    ASSERT_NEAR(flow, brute, 1e-9) << "trial " << trial;
    ASSERT_NEAR(cutOfSides(mc, n, arcs), brute, 1e-9) << "trial " << trial;
  }
}

namespace {

Labelling randomLabelling(std::mt19937& rng, int nodes, int labels) {
  std::uniform_real_distribution<double> u(0, 1);
  Labelling p;
  p.labels = labels;
  p.unary.assign(size_t(nodes), std::vector<double>(size_t(labels)));
  for (auto& row : p.unary)
    for (double& c : row)
      c = u(rng);
  std::vector<double> L(static_cast<size_t>(labels), 0.0);
  for (size_t l = 1; l < L.size(); ++l)
    L[l] = u(rng);
  int pairs = nodes + int(rng() % 4);
  for (int k = 0; k < pairs; ++k) {
    int a = int(rng() % unsigned(nodes)), b = int(rng() % unsigned(nodes));
    if (a == b) continue;
    double w = u(rng);
    if (k % 2) {
      p.pairs.push_back({a, b, [w](int x, int y) { return x == y ? 0.0 : w; }});
    } else { // through the host: label 0 is the host, every other label has a link to it
      double s = 0.5 + u(rng);
      p.pairs.push_back({a, b, [L, s](int x, int y) {
                           return x == y ? 0.0 : s * (L[size_t(x)] + L[size_t(y)]);
                         }});
    }
  }
  return p;
}

double bruteForce(const Labelling& p) {
  size_t n = p.unary.size();
  std::vector<int> x(n, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    best = std::min(best, p.energy(x));
    size_t i = 0;
    while (i < n && ++x[i] == p.labels)
      x[i++] = 0;
    if (i == n) break;
  }
  return best;
}

} // namespace

TEST(PartitionAlphaExpansion, EnergySumsUnaryAndPairs) {
  Labelling p;
  p.labels = 2;
  p.unary = {{1, 2}, {3, 0.5}};
  p.pairs.push_back({0, 1, [](int a, int b) { return a == b ? 0.0 : 10.0; }});
  EXPECT_DOUBLE_EQ(p.energy({0, 0}), 4);
  EXPECT_DOUBLE_EQ(p.energy({0, 1}), 11.5);
  EXPECT_DOUBLE_EQ(p.energy({1, 1}), 2.5);
  std::vector<int> x = {0, 0};
  alphaExpansion(p, x);
  EXPECT_EQ(x, (std::vector<int>{1, 1}));
}

TEST(PartitionAlphaExpansion, TwoLabelsIsExact) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    Labelling p = randomLabelling(rng, 6 + trial % 3, 2);
    std::vector<int> x(p.unary.size(), 0);
    alphaExpansion(p, x);
    ASSERT_EQ(x.size(), p.unary.size());
    ASSERT_NEAR(p.energy(x), bruteForce(p), 1e-9) << "trial " << trial;
  }
}

TEST(PartitionAlphaExpansion, ThreeLabelsWithinTwiceTheOptimum) {
  std::mt19937 rng(5);
  int equal = 0, trials = 300;
  for (int trial = 0; trial < trials; ++trial) {
    Labelling p = randomLabelling(rng, 6 + trial % 3, 3);
    std::vector<int> x(p.unary.size(), 0);
    alphaExpansion(p, x);
    for (int l : x)
      ASSERT_TRUE(l >= 0 && l < 3);
    double e = p.energy(x), best = bruteForce(p);
    ASSERT_GE(e, best - 1e-9);
    ASSERT_LE(e, 2 * best + 1e-9) << "trial " << trial;
    if (e <= best + 1e-9) ++equal;
  }
  // A local optimum, but on problems this small almost always the global one.
  EXPECT_GE(equal, trials * 8 / 10) << equal << " of " << trials << " optimal";
}

// ---- plans on digits_cnn ---------------------------------------------------------------------

namespace {

std::string modelPath(const std::string& f) {
  return std::string(TRIAD_SOURCE_DIR) + "/models/" + f;
}

ir::Graph digits(int64_t batch = 1) {
  frontend::ImportOptions o;
  o.batch = batch;
  ir::Graph g = frontend::importOnnxFile(modelPath("digits_cnn.onnx"), o).graph;
  ir::defaultPipeline().run(g);
  return g;
}

ir::TargetRegistry registry() {
  ir::TargetRegistry r;
  r.add(ir::makeInterpreterTarget());
  r.add(cpu::makeCpuTarget());
  r.add(fpga::makeFpgaTarget());
  return r;
}

Options baseOptions(Mode m, std::vector<std::string> targets) {
  Options o;
  o.mode = m;
  o.targets = std::move(targets);
  o.costs.devices["interp"] = {1, 2, 2};
  o.costs.devices["cpu"] = {50, 10, 0.3};
  return o;
}

Links fastLinks() {
  Links l = Links::defaults();
  l.toHost["fpga"] = {"test-fast", 1e9, 0, "test"};
  l.conversionNsPerElement = 0;
  return l;
}

// The CPU (and the interpreter) measured as very slow: every node prefers the FPGA.
void slowHost(Options& o, const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    o.costs.measured["cpu"][n->name()] = 1.0;
    o.costs.measured["interp"][n->name()] = 1.0;
  }
}

double sumOfParts(const Plan& p) {
  double s = 0;
  for (const Partition& pp : p.partitions)
    s += pp.predictedSeconds;
  for (const Transfer& t : p.transfers)
    s += t.predictedSeconds;
  return s;
}

template <class F> ErrorKind errorKindOf(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no triad::Error thrown";
  return ErrorKind::Internal;
}

} // namespace

TEST(PartitionPlan, SingleModePutsEverythingOnTheFirstTarget) {
  ir::Graph g = digits();
  ir::TargetRegistry reg = registry();
  Plan p = plan(g, reg, baseOptions(Mode::Single, {"cpu", "fpga", "interp"}));
  ASSERT_EQ(p.nodes.size(), g.nodes().size());
  for (const NodePlacement& n : p.nodes)
    EXPECT_EQ(n.target, "cpu") << n.node->name();
  ASSERT_EQ(p.partitions.size(), 1u);
  EXPECT_EQ(p.partitions[0].target, "cpu");
  EXPECT_EQ(p.partitions[0].nodes.size(), g.nodes().size());
  EXPECT_TRUE(p.transfers.empty());
  EXPECT_GT(p.predictedSeconds, 0);
  EXPECT_NEAR(p.predictedSeconds, sumOfParts(p), 1e-15);
}

TEST(PartitionPlan, ManualModePlacesNamedNodesAndRejectsBadPlacements) {
  ir::Graph g = digits();
  ir::TargetRegistry reg = registry();
  Options o = baseOptions(Mode::Manual, {"cpu", "fpga", "interp"});
  o.place = {{"/fc/Gemm", "fpga"}, {"/Relu", "interp"}};
  Plan p = plan(g, reg, o);
  for (const NodePlacement& n : p.nodes) {
    std::string want = n.node->name() == "/fc/Gemm" ? "fpga"
                       : n.node->name() == "/Relu"  ? "interp"
                                                    : "cpu";
    EXPECT_EQ(n.target, want) << n.node->name();
    if (n.node->name() == "/fc/Gemm") {
      EXPECT_EQ(n.why, "placed by --place");
    }
  }
  // Every partition's nodes are on its target, and the nodes are covered once.
  std::set<const ir::Node*> seen;
  for (const Partition& pp : p.partitions)
    for (const ir::Node* n : pp.nodes) {
      EXPECT_TRUE(seen.insert(n).second);
      for (const NodePlacement& np : p.nodes)
        if (np.node == n) {
          EXPECT_EQ(np.target, pp.target);
        }
    }
  EXPECT_EQ(seen.size(), g.nodes().size());
  // Crossing to and from the FPGA costs something; interp<->cpu is host to host.
  bool toFpga = false, fromFpga = false;
  for (const Transfer& t : p.transfers) {
    std::string a = t.from < 0 ? "host" : p.partitions[size_t(t.from)].target;
    std::string b = t.to < 0 ? "host" : p.partitions[size_t(t.to)].target;
    if (b == "fpga") {
      toFpga = true;
      EXPECT_EQ(t.conversion, "float->fixed");
      EXPECT_EQ(t.link, "fpga");
      EXPECT_GT(t.predictedSeconds, 0);
      EXPECT_GT(t.bytes, 0);
    }
    if (a == "fpga") {
      fromFpga = true;
      EXPECT_EQ(t.conversion, "fixed->float");
    }
    if (a != "fpga" && b != "fpga") {
      EXPECT_EQ(t.predictedSeconds, 0);
      EXPECT_EQ(t.bytes, 0);
    }
  }
  EXPECT_TRUE(toFpga);
  EXPECT_TRUE(fromFpga);
  EXPECT_NEAR(p.predictedSeconds, sumOfParts(p), 1e-15);

  std::string what;
  Options bad = o;
  bad.place = {{"/nope", "cpu"}};
  EXPECT_EQ(errorKindOf([&] { plan(g, reg, bad); }, &what), ErrorKind::Usage);
  EXPECT_NE(what.find("/nope"), std::string::npos) << what;
  bad.place = {{"/fc/Gemm", "gpu"}}; // not among the targets
  EXPECT_EQ(errorKindOf([&] { plan(g, reg, bad); }), ErrorKind::Usage);
  // A part too small for any layer: the conv cannot run on the FPGA.
  bad.place = {{"/conv1/Conv", "fpga"}};
  bad.costs.fpgaBudget = {1, 1, 0, 0};
  bad.costs.fpgaPart = "tiny";
  EXPECT_EQ(errorKindOf([&] { plan(g, reg, bad); }, &what), ErrorKind::Unsupported);
  EXPECT_NE(what.find("/conv1/Conv"), std::string::npos) << what;
}

TEST(PartitionPlan, AutoModeFollowsTheCostsAndTheLinks) {
  ir::Graph g = digits();
  ir::TargetRegistry reg = registry();
  {
    // Default PCIe links at batch 1: every crossing costs ~10 us, more than any layer saves.
    Plan p = plan(g, reg, baseOptions(Mode::Auto, {"cpu", "fpga", "interp"}));
    for (const NodePlacement& n : p.nodes)
      EXPECT_EQ(n.target, "cpu") << n.node->name() << ": " << n.why;
    EXPECT_TRUE(p.transfers.empty());
    EXPECT_NEAR(p.predictedSeconds, sumOfParts(p), 1e-15);
  }
  {
    // Free links and a very slow host: everything the FPGA supports goes there.
    Options o = baseOptions(Mode::Auto, {"cpu", "fpga", "interp"});
    o.links = fastLinks();
    slowHost(o, g);
    Plan p = plan(g, reg, o);
    int onFpga = 0;
    for (const NodePlacement& n : p.nodes) {
      if (n.costs.at("fpga").supported) {
        EXPECT_EQ(n.target, "fpga") << n.node->name() << ": " << n.why;
        ++onFpga;
      }
    }
    EXPECT_GT(onFpga, 0);
    EXPECT_FALSE(p.fpgaResources.empty());
    EXPECT_NEAR(p.predictedSeconds, sumOfParts(p), 1e-12);
    // Cheaper than the all-cpu plan by the model.
    Options single = o;
    single.mode = Mode::Single;
    EXPECT_LT(p.predictedSeconds, plan(g, reg, single).predictedSeconds);
  }
  {
    // Two targets: the exact min-cut.
    Options o = baseOptions(Mode::Auto, {"cpu", "fpga"});
    o.links = fastLinks();
    slowHost(o, g);
    Plan p = plan(g, reg, o);
    EXPECT_NE(p.algorithm.find("exact"), std::string::npos) << p.algorithm;
    for (const NodePlacement& n : p.nodes)
      EXPECT_EQ(n.target, "fpga") << n.node->name();
  }
}

TEST(PartitionPlan, FpgaBudgetIsRespected) {
  ir::Graph g = digits();
  ir::TargetRegistry reg = registry();
  Options o = baseOptions(Mode::Auto, {"cpu", "fpga"});
  o.links = fastLinks();
  slowHost(o, g);
  Plan unlimited = plan(g, reg, o);
  ir::Resources total = unlimited.fpgaResources, largest;
  for (const NodePlacement& n : unlimited.nodes) {
    const ir::Resources& r = n.costs.at("fpga").resources;
    largest.lut = std::max(largest.lut, r.lut);
    largest.ff = std::max(largest.ff, r.ff);
    largest.dsp = std::max(largest.dsp, r.dsp);
    largest.bram18 = std::max(largest.bram18, r.bram18);
  }
  ASSERT_FALSE(total.empty());
  {
    // Tiny: no layer that needs resources lands on the FPGA.
    Options t = o;
    t.costs.fpgaPart = "tiny";
    t.costs.fpgaBudget = {1, 1, 1, 1};
    Plan p = plan(g, reg, t);
    for (const NodePlacement& n : p.nodes) {
      if (n.target == "fpga") {
        EXPECT_TRUE(n.costs.at("fpga").resources.empty()) << n.node->name();
      } else if (!n.costs.at("fpga").resources.empty()) {
        EXPECT_FALSE(n.costs.at("fpga").supported) << n.node->name();
      }
    }
    EXPECT_TRUE(p.fpgaResources.fitsIn(t.costs.fpgaBudget));
  }
  {
    // Room for the largest layer but not for all: the multiplier keeps the FPGA within budget.
    Options t = o;
    t.costs.fpgaPart = "some";
    t.costs.fpgaBudget = largest;
    ASSERT_FALSE(total.fitsIn(largest)); // else this case tests nothing
    {
      Plan p = plan(g, reg, t);
      EXPECT_TRUE(p.fpgaResources.fitsIn(t.costs.fpgaBudget))
          << p.fpgaResources.lut << " LUT " << p.fpgaResources.dsp << " DSP";
      int onFpga = 0;
      for (const NodePlacement& n : p.nodes)
        onFpga += n.target == "fpga" && !n.costs.at("fpga").resources.empty();
      EXPECT_GT(onFpga, 0) << p.algorithm;
      EXPECT_NE(p.algorithm.find("Lagrange"), std::string::npos) << p.algorithm;
    }
  }
}

TEST(PartitionPlan, PipelineModeGivesContiguousStages) {
  ir::Graph g = digits(16);
  ir::TargetRegistry reg = registry();
  for (bool fast : {false, true}) {
    Options o = baseOptions(Mode::Pipeline, {"cpu", "fpga", "interp"});
    if (fast) o.links = fastLinks();
    Plan p = plan(g, reg, o);
    ASSERT_EQ(p.nodes.size(), g.nodes().size());
    int changes = 0;
    std::set<std::string> closed;
    for (size_t i = 1; i < p.nodes.size(); ++i)
      if (p.nodes[i].target != p.nodes[i - 1].target) {
        ++changes;
        EXPECT_TRUE(closed.insert(p.nodes[i - 1].target).second)
            << p.nodes[i - 1].target << " hosts two stages";
        EXPECT_FALSE(closed.count(p.nodes[i].target)) << p.nodes[i].target << " reused";
      }
    EXPECT_LE(changes, 2);
    EXPECT_EQ(p.partitions.size(), size_t(changes + 1));
    EXPECT_GT(p.predictedThroughputPerS, 0);
    EXPECT_NEAR(p.predictedSeconds, sumOfParts(p), 1e-12);
    // The bottleneck stage is no slower than the whole run of one inference.
    EXPECT_GE(p.predictedThroughputPerS * p.predictedSeconds, 1 - 1e-9);
  }
}

TEST(PartitionPlan, JsonAndDot) {
  ir::Graph g = digits();
  ir::TargetRegistry reg = registry();
  Options o = baseOptions(Mode::Manual, {"cpu", "fpga", "interp"});
  o.place = {{"/fc/Gemm", "fpga"}, {"/Softmax", "fpga"}, {"/conv1/Conv", "interp"}};
  Plan p = plan(g, reg, o);
  nlohmann::json j = nlohmann::json::parse(planJson(p));
  ASSERT_TRUE(j["partitions"].is_array());
  ASSERT_TRUE(j["transfers"].is_array());
  ASSERT_TRUE(j["nodes"].is_array());
  EXPECT_EQ(j["partitions"].size(), p.partitions.size());
  EXPECT_EQ(j["transfers"].size(), p.transfers.size());
  EXPECT_EQ(j["nodes"].size(), g.nodes().size());
  EXPECT_EQ(j["mode"], "manual");
  EXPECT_NEAR(j["predicted_ms"].get<double>(), p.predictedSeconds * 1e3, 1e-9);
  std::set<std::string> targets;
  for (const auto& pp : j["partitions"])
    targets.insert(pp["target"].get<std::string>());
  EXPECT_EQ(targets, (std::set<std::string>{"cpu", "fpga", "interp"}));
  std::string dot = planDot(p, g);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  for (const Partition& pp : p.partitions)
    EXPECT_NE(dot.find("subgraph cluster_" + std::to_string(pp.id) + " "), std::string::npos)
        << pp.id;
  std::string text = planText(p, g);
  EXPECT_NE(text.find("/fc/Gemm"), std::string::npos);
}

// ---- subgraphs and execution -----------------------------------------------------------------

TEST(PartitionExecution, ExtractedHalvesChainToTheWholeGraph) {
  ir::Graph g = digits(4);
  std::vector<const ir::Node*> all;
  for (const auto& n : g.nodes())
    all.push_back(n.get());
  size_t half = all.size() / 2;
  std::vector<const ir::Node*> a(all.begin(), all.begin() + long(half)),
      b(all.begin() + long(half), all.end());
  std::vector<const ir::Value*> aIn, aOut, bIn, bOut;
  ir::Graph ga = extractSubgraph(g, a, &aIn, &aOut);
  ir::Graph gb = extractSubgraph(g, b, &bIn, &bOut);
  EXPECT_EQ(ga.nodes().size(), a.size());
  EXPECT_EQ(gb.nodes().size(), b.size());
  EXPECT_EQ(aIn, std::vector<const ir::Value*>(g.inputs().begin(), g.inputs().end()));
  EXPECT_EQ(std::set<const ir::Value*>(aOut.begin(), aOut.end()),
            std::set<const ir::Value*>(bIn.begin(), bIn.end()));
  EXPECT_EQ(bOut, std::vector<const ir::Value*>(g.outputs().begin(), g.outputs().end()));

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<ir::Tensor> in;
  for (const ir::Value* v : g.inputs()) {
    ir::Tensor t(v->type());
    for (float& x : t.values<float>())
      x = u(rng);
    in.push_back(std::move(t));
  }
  std::vector<ir::Tensor> ref = ir::Interpreter(g).run(in);
  std::vector<ir::Tensor> mid = ir::Interpreter(ga).run(in);
  ASSERT_EQ(mid.size(), aOut.size());
  std::vector<ir::Tensor> bArgs;
  for (const ir::Value* v : bIn) {
    size_t k = size_t(std::find(aOut.begin(), aOut.end(), v) - aOut.begin());
    ASSERT_LT(k, aOut.size());
    bArgs.push_back(mid[k]);
  }
  std::vector<ir::Tensor> out = ir::Interpreter(gb).run(bArgs);
  ASSERT_EQ(out.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(out[i].shape(), ref[i].shape());
    for (int64_t k = 0; k < ref[i].numElements(); ++k)
      ASSERT_EQ(out[i].getDouble(k), ref[i].getDouble(k)) << "output " << i << " element " << k;
  }
}

TEST(PartitionExecution, ThreeWayPlanRunsNearTheInterpreter) {
  ir::Tensor x = frontend::readNpy(modelPath("digits_test_x.npy"));
  ir::Graph g = digits(x.shape()[0]);
  ir::TargetRegistry reg = registry();
  Options o = baseOptions(Mode::Manual, {"interp", "cpu", "fpga"});
  o.place = {{"/conv1/Conv", "interp"}, {"/Relu", "interp"},      {"/conv2/Conv", "cpu"},
             {"/Relu_1", "cpu"},        {"/pool/MaxPool", "cpu"}, {"/Flatten", "cpu"},
             {"/fc/Gemm", "fpga"},      {"/Softmax", "fpga"}};
  Plan p = plan(g, reg, o);
  ASSERT_EQ(p.partitions.size(), 3u);
  EXPECT_EQ(p.partitions[0].target, "interp");
  EXPECT_EQ(p.partitions[1].target, "cpu");
  EXPECT_EQ(p.partitions[2].target, "fpga");
  auto exe = compilePlan(g, p, reg, {});
  exe->setProfiling(true);
  std::vector<ir::Tensor> out = exe->run(std::span<const ir::Tensor>(&x, 1));
  std::vector<ir::Tensor> ref = ir::Interpreter(g).run(std::span<const ir::Tensor>(&x, 1));
  ASSERT_EQ(out.size(), ref.size());
  double maxErr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(out[i].shape(), ref[i].shape());
    for (int64_t k = 0; k < ref[i].numElements(); ++k)
      maxErr = std::max(maxErr, std::abs(out[i].getDouble(k) - ref[i].getDouble(k)));
  }
  EXPECT_LT(maxErr, 0.05);
  const RunTimes& t = exe->lastTimes();
  ASSERT_EQ(t.partitionSeconds.size(), p.partitions.size());
  ASSERT_EQ(t.transferSeconds.size(), p.transfers.size());
  ASSERT_EQ(t.transferMeasured.size(), p.transfers.size());
  double total = 0;
  for (double s : t.partitionSeconds) {
    EXPECT_GE(s, 0);
    total += s;
  }
  for (size_t i = 0; i < p.transfers.size(); ++i) {
    EXPECT_GE(t.transferSeconds[i], 0);
    total += t.transferSeconds[i];
    const Transfer& tr = p.transfers[i];
    bool fpgaEnd = (tr.from >= 0 && p.partitions[size_t(tr.from)].target == "fpga") ||
                   (tr.to >= 0 && p.partitions[size_t(tr.to)].target == "fpga");
    if (fpgaEnd) {
      EXPECT_FALSE(t.transferMeasured[i]);
      EXPECT_DOUBLE_EQ(t.transferSeconds[i], tr.predictedSeconds);
    }
  }
  EXPECT_NEAR(t.totalSeconds, total, 1e-12);
  EXPECT_GT(t.partitionSeconds[2], 0); // the FPGA's cycles at its clock
  EXPECT_EQ(exe->profile().size(), p.partitions.size() + p.transfers.size());
}

// ---- measured profiles and link files ----------------------------------------------------------

TEST(PartitionCosts, MeasuredFromProfileMapsExactAndFusedNames) {
  ir::Graph g = digits();
  std::map<std::string, double> m = measuredFromProfile(
      g, {{"/conv1/Conv", 1e-3}, {"conv2_Conv_Relu_1", 4e-3}, {"no_such_layer", 7.0}});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m.at("/conv1/Conv"), 1e-3);
  ASSERT_TRUE(m.count("/conv2/Conv") && m.count("/Relu_1"));
  EXPECT_GT(m.at("/conv2/Conv"), 0);
  EXPECT_GT(m.at("/Relu_1"), 0);
  EXPECT_GT(m.at("/conv2/Conv"), m.at("/Relu_1")); // shared by work: the conv does more
  EXPECT_NEAR(m.at("/conv2/Conv") + m.at("/Relu_1"), 4e-3, 1e-15);
}

TEST(PartitionCosts, LinksLoadValidatesAndNamesTheFile) {
  auto dir = std::filesystem::temp_directory_path() /
             ("triad_partition_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  };
  std::string good = write("good.json", R"({"gpu": {"name": "slow", "gbytes_per_s": 3,
      "latency_us": 5}, "conversion_ns_per_element": 0.5})");
  Links l = Links::load(good);
  EXPECT_DOUBLE_EQ(l.toHost.at("gpu").gbytesPerS, 3);
  EXPECT_DOUBLE_EQ(l.toHost.at("gpu").latencyUs, 5);
  EXPECT_EQ(l.toHost.at("gpu").name, "slow");
  EXPECT_DOUBLE_EQ(l.toHost.at("fpga").gbytesPerS, Links::defaults().toHost.at("fpga").gbytesPerS);
  EXPECT_DOUBLE_EQ(l.conversionNsPerElement, 0.5);
  EXPECT_NEAR(l.toHost.at("gpu").seconds(3000), 5e-6 + 1e-6, 1e-15);

  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"notjson.json", "{\"gpu\": "},
           {"negative.json", R"({"gpu": {"latency_us": -1}})"},
           {"zero_bw.json", R"({"fpga": {"gbytes_per_s": 0}})"},
           {"string.json", R"({"gpu": {"gbytes_per_s": "fast"}})"},
           {"array.json", "[1, 2]"},
           {"conv.json", R"({"fpga_bytes_per_element": -2})"}}) {
    std::string path = write(name, text), what;
    EXPECT_EQ(errorKindOf([&] { Links::load(path); }, &what), ErrorKind::Usage) << name;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
  std::string what;
  EXPECT_EQ(errorKindOf([&] { Links::load((dir / "missing.json").string()); }, &what),
            ErrorKind::Io);
  EXPECT_NE(what.find("missing.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}
