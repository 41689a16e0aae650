// The FPGA's costs: named parts and their budgets, FpgaTarget::estimate (every node's support,
// seconds from the cycle model, resources) on the shipped models, the design's modelled seconds,
// subgraphs that start mid-network, the energy estimate, and the resource estimate against
// Yosys on a small design.
#include "fpga/Cost.h"
#include "fpga/Devices.h"
#include "fpga/FpgaTarget.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Pool.h"
#include "ir/passes/Pass.h"
#include "sim/Synth.h"

#include "GraphBuild.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>

using namespace triad;
namespace fs = std::filesystem;

namespace {

ir::Graph loadModel(const std::string& file, int64_t batch) {
  frontend::ImportOptions o;
  o.batch = batch;
  ir::Graph g =
      frontend::importOnnxFile(std::string(TRIAD_SOURCE_DIR) + "/models/" + file, o).graph;
  ir::defaultPipeline().run(g);
  return g;
}

ir::Resources sum(const std::vector<ir::NodeCost>& costs) {
  ir::Resources r;
  for (const auto& c : costs)
    r += c.resources;
  return r;
}

double seconds(const std::vector<ir::NodeCost>& costs) {
  double s = 0;
  for (const auto& c : costs)
    s += c.seconds;
  return s;
}

// Nodes [first, last) of `g` as a graph of their own: values from earlier nodes (or the graph's
// inputs) become inputs, constants are copied, the last node's first output is the output.
ir::Graph subgraph(const ir::Graph& g, size_t first, size_t last) {
  ir::Graph s;
  s.name = "part";
  std::map<const ir::Value*, ir::Value*> map;
  for (size_t i = first; i < last; ++i) {
    const ir::Node& n = *g.nodes()[i];
    std::vector<ir::Value*> ins;
    for (ir::Value* v : n.inputs()) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      if (!map.count(v))
        map[v] = v->isConstant() ? s.addConstant(v->name(), v->constant())
                                 : s.addInput(v->name(), v->type());
      ins.push_back(map[v]);
    }
    std::vector<std::string> names;
    std::vector<ir::TensorType> types;
    for (ir::Value* v : n.outputs()) {
      names.push_back(v->name());
      types.push_back(v->type());
    }
    ir::Node* m = s.addNode(n.kind(), n.name(), ins, n.attrsPtr(), names, types);
    for (size_t k = 0; k < n.outputs().size(); ++k)
      map[n.output(k)] = m->output(k);
  }
  s.addOutput(map.at(g.nodes()[last - 1]->output(0)));
  return s;
}

size_t nodeIndex(const ir::Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i]->name() == name) return i;
  ADD_FAILURE() << "no node " << name;
  return 0;
}

double maxAbsDiff(const ir::Tensor& a, const ir::Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numElements() && i < b.numElements(); ++i)
    m = std::max(m, std::fabs(a.getDouble(i) - b.getDouble(i)));
  return m;
}

} // namespace

TEST(FpgaDevices, LookupIsCaseInsensitiveWithDatasheetResources) {
  const fpga::Device& a = fpga::findDevice("XC7A35T");
  EXPECT_EQ(a.name, "xc7a35t");
  EXPECT_EQ(a.resources.lut, 20800);
  EXPECT_EQ(a.resources.ff, 41600);
  EXPECT_EQ(a.resources.dsp, 90);
  EXPECT_EQ(a.resources.bram18, 100);
  EXPECT_EQ(fpga::findDevice("xcvu9p").resources.dsp, 6840);
  EXPECT_EQ(fpga::findDevice("xcu250").resources.dsp, 12288);
  EXPECT_EQ(fpga::findDevice("xc7z020").resources.lut, 53200);
  EXPECT_EQ(fpga::findDevice("ice40hx8k").resources.dsp, 0);
  for (const char* p : {"xc7a100t", "xcku115", "ice40up5k"})
    EXPECT_FALSE(fpga::findDevice(p).resources.empty()) << p;
}

TEST(FpgaDevices, UnknownPartIsAUsageErrorListingTheKnownOnes) {
  try {
    fpga::findDevice("xc7a36t");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    std::string m = e.what();
    EXPECT_NE(m.find("'xc7a36t'"), std::string::npos) << m;
    for (const char* p : {"xc7a35t", "xcvu9p", "xcu250", "ice40up5k"})
      EXPECT_NE(m.find(p), std::string::npos) << m;
  }
  fpga::FpgaTargetOptions o;
  o.part = "virtex9000";
  EXPECT_THROW(fpga::makeFpgaTarget(o), Error);
}

// Every node gets a cost whose support matches supports() (what `triad inspect` prints); the
// seconds sum to the design's latency at batch 1 and to latency + (B - 1) x sum of the layers'
// cycles per sample at batch B (an upper bound of latency + (B - 1) x II); the resources sum to
// the compiled design's.
static void checkEstimate(const std::string& model) {
  auto t = fpga::makeFpgaTarget();
  for (int64_t batch : {1, 8}) {
    SCOPED_TRACE(model + " batch " + std::to_string(batch));
    ir::Graph g = loadModel(model, batch);
    std::vector<ir::NodeCost> c = t->estimate(g, ir::CostContext{});
    ASSERT_EQ(c.size(), g.nodes().size());
    for (size_t i = 0; i < c.size(); ++i) {
      const ir::Node& n = *g.nodes()[i];
      EXPECT_EQ(c[i].supported, t->supports(n).ok) << n.name();
      EXPECT_TRUE(c[i].supported) << n.name() << ": " << c[i].reason;
      EXPECT_FALSE(c[i].basis.empty()) << n.name();
      EXPECT_GE(c[i].seconds, 0) << n.name();
      if (n.kind() == ir::OpKind::Gemm || n.kind() == ir::OpKind::Conv) {
        EXPECT_GT(c[i].seconds, 0) << n.name();
        EXPECT_GT(c[i].resources.dsp, 0) << n.name();
        EXPECT_NE(c[i].basis.find("cycle model"), std::string::npos) << c[i].basis;
      }
      if (n.kind() == ir::OpKind::Flatten) {
        EXPECT_EQ(c[i].seconds, 0);
        EXPECT_TRUE(c[i].resources.empty());
      }
    }
    auto exe = t->compile(g);
    auto& fe = dynamic_cast<fpga::FpgaExecutable&>(*exe);
    fpga::FpgaTiming tm = fe.timing();
    ASSERT_TRUE(tm.rtl) << tm.why;
    double clock = tm.clockMhz * 1e6;
    double sumCycles = 0;
    for (const auto& cost : c) {
      auto p = cost.basis.find("cycle model: ");
      if (p != std::string::npos) sumCycles += std::stod(cost.basis.substr(p + 13));
    }
    EXPECT_NEAR(seconds(c) * clock, double(tm.latencyCycles) + double(batch - 1) * sumCycles, 1e-6)
        << "latency " << tm.latencyCycles << ", II " << tm.ii;
    EXPECT_GE(seconds(c) + 1e-12, fpga::designSeconds(tm.latencyCycles, tm.ii, batch, tm.clockMhz));
    ir::Resources est = sum(c), design = fe.resources();
    EXPECT_NEAR(est.lut, design.lut, 1e-6);
    EXPECT_NEAR(est.ff, design.ff, 1e-6);
    EXPECT_NEAR(est.dsp, design.dsp, 1e-6);
    EXPECT_NEAR(est.bram18, design.bram18, 1e-6);
  }
}

TEST(FpgaEstimate, JetMlpEveryNodeHasACycleModelCost) {
  checkEstimate("jet_mlp.onnx");
  // At reuse 1 every product of a weight with more than two signed digits is a DSP48E1 (the
  // others are shifts and adds): the 4,256 dense multipliers less those, plus the Softmax's 5.
  // Yosys maps 3,457 DSP48E1s (docs/fpga.md).
  ir::Graph g = loadModel("jet_mlp.onnx", 1);
  ir::Resources r = sum(fpga::makeFpgaTarget()->estimate(g, ir::CostContext{}));
  EXPECT_GT(r.dsp, 0.95 * 3457);
  EXPECT_LT(r.dsp, 1.05 * 3457);
  EXPECT_EQ(r.bram18, 6); // the Softmax's 5 exp tables and its reciprocal table, 1K x 18 each
  // Registering the adder trees more often (a faster clock) costs flip-flops, not LUTs.
  fpga::FpgaTargetOptions slow;
  slow.clockMhz = 100;
  ir::Resources s = sum(fpga::makeFpgaTarget(slow)->estimate(g, ir::CostContext{}));
  EXPECT_LT(s.ff, r.ff);
  EXPECT_EQ(s.dsp, r.dsp);
  // Reuse 4: a quarter of the products, with input and weight multiplexers.
  fpga::FpgaTargetOptions r4;
  r4.reuse = 4;
  ir::Resources q = sum(fpga::makeFpgaTarget(r4)->estimate(g, ir::CostContext{}));
  EXPECT_EQ(q.dsp, 4256 / 4 + 5);
  EXPECT_LT(q.lut, 0.75 * r.lut);
}

TEST(FpgaEstimate, DigitsCnnEveryNodeHasACycleModelCost) {
  checkEstimate("digits_cnn.onnx");
  // Multipliers at reuse 1: 1,874 (docs/fpga.md), of which the DSPs (zeros and powers of two
  // need none) and the Softmax.
  ir::Graph g = loadModel("digits_cnn.onnx", 1);
  std::vector<ir::NodeCost> c = fpga::makeFpgaTarget()->estimate(g, ir::CostContext{});
  ir::Resources r = sum(c);
  EXPECT_GT(r.dsp, 0.6 * 1874); // constants of <= 2 signed digits need no DSP
  EXPECT_LT(r.dsp, 1874);
  // The convolutions walk the 8x8 frame: 64 cycles per sample (the design's II).
  const ir::NodeCost& conv = c[nodeIndex(g, "/conv1/Conv")];
  EXPECT_NE(conv.basis.find("64 cycles/sample"), std::string::npos) << conv.basis;
}

TEST(FpgaEstimate, UnsupportedNodeInTheMiddleEstimatesTheOthersAlone) {
  std::mt19937 rng(3);
  ir::Graph g;
  g.name = "split";
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {4, 8}, {}});
  auto gemm = testutil::attrs<ir::GemmAttrs>([](auto& a) { a.transB = true; });
  ir::Node* fc1 =
      testutil::add(g, ir::OpKind::Gemm, "/fc1/Gemm",
                    {x, g.addConstant("w1", testutil::randomTensor({6, 8}, rng))}, gemm);
  ir::Node* ex = testutil::add(g, ir::OpKind::Exp, "/Exp", {fc1->output(0)});
  ir::Node* fc2 = testutil::add(
      g, ir::OpKind::Gemm, "/fc2/Gemm",
      {ex->output(0), g.addConstant("w2", testutil::randomTensor({3, 6}, rng))}, gemm);
  ir::Node* relu = testutil::add(g, ir::OpKind::Relu, "/Relu", {fc2->output(0)});
  g.addOutput(relu->output(0));
  auto t = fpga::makeFpgaTarget();
  std::vector<ir::NodeCost> c = t->estimate(g, ir::CostContext{});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_FALSE(c[1].supported);
  EXPECT_EQ(c[1].reason, t->supports(*ex).reason);
  for (size_t i : {0u, 2u, 3u}) {
    EXPECT_TRUE(c[i].supported);
    EXPECT_GT(c[i].seconds, 0) << g.nodes()[i]->name();
    EXPECT_NE(c[i].basis.find("planned alone"), std::string::npos) << c[i].basis;
  }
  // 6 x 8 and 3 x 6 products at reuse 1 (random weights): DSPs but for the few constants of
  // at most two signed digits.
  EXPECT_LE(c[0].resources.dsp, 48);
  EXPECT_GT(c[0].resources.dsp, 24);
  EXPECT_LE(c[2].resources.dsp, 18);
  EXPECT_GT(c[2].resources.dsp, 9);
  // Measured seconds replace the model's.
  ir::CostContext ctx;
  ctx.measured["fpga"]["/Relu"] = 0.5;
  EXPECT_EQ(t->estimate(g, ctx)[3].seconds, 0.5);
  EXPECT_EQ(t->estimate(g, ctx)[3].basis, "measured");
}

TEST(FpgaEstimate, JetMlpAtReuse1DoesNotFitAnArtix35TButFitsAVirtexVu9p) {
  ir::Graph g = loadModel("jet_mlp.onnx", 1);
  ir::Resources r = sum(fpga::makeFpgaTarget()->estimate(g, ir::CostContext{}));
  EXPECT_FALSE(r.fitsIn(fpga::findDevice("xc7a35t").resources));
  EXPECT_TRUE(r.fitsIn(fpga::findDevice("xcvu9p").resources));
  fpga::FpgaTargetOptions o;
  o.part = "xc7a35t";
  try {
    fpga::makeFpgaTarget(o)->compile(g);
    FAIL() << "expected the design not to fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("xc7a35t"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("LUT"), std::string::npos) << e.what();
  }
  o.part = "XCVU9P";
  EXPECT_NO_THROW(fpga::makeFpgaTarget(o)->compile(g));
  // At reuse 8 jet_mlp's 537 multipliers still exceed the 35T's 90 DSPs.
  o.part = "xc7a35t";
  o.reuse = 8;
  EXPECT_THROW(fpga::makeFpgaTarget(o)->compile(g), Error);
}

TEST(FpgaEstimate, ModelledSecondsAreTheLastRunsCycles) {
  ir::Graph g = loadModel("jet_mlp.onnx", 8);
  fpga::FpgaTargetOptions o;
  o.clockMhz = 250;
  o.reuse = 4;
  auto exe = fpga::makeFpgaTarget(o)->compile(g);
  EXPECT_LT(exe->modelledSeconds(), 0); // no run yet
  ir::Tensor x = frontend::readNpy(std::string(TRIAD_SOURCE_DIR) + "/models/jet_test_x.npy");
  ir::Tensor x8(ir::DType::F32, {8, x.shape()[1]});
  for (int64_t i = 0; i < x8.numElements(); ++i)
    x8.data<float>()[i] = float(x.getDouble(i));
  exe->run(std::span<const ir::Tensor>(&x8, 1));
  fpga::FpgaTiming tm = dynamic_cast<fpga::FpgaExecutable&>(*exe).timing();
  EXPECT_EQ(tm.ii, 4);
  EXPECT_NEAR(exe->modelledSeconds(), (double(tm.latencyCycles) + 7 * tm.ii) / 250e6, 1e-15);
}

// A partition that starts mid-network: the FPGA takes an intermediate activation in float,
// quantizes it with the input precision, and returns float.
TEST(FpgaEstimate, SubgraphsOfDigitsCnnRunFromIntermediateTensors) {
  ir::Tensor x = frontend::readNpy(std::string(TRIAD_SOURCE_DIR) + "/models/digits_test_x.npy");
  int64_t n = 32, per = x.numElements() / x.shape()[0];
  ir::Tensor xs(ir::DType::F32, {n, 1, 8, 8});
  for (int64_t i = 0; i < n * per; ++i)
    xs.data<float>()[i] = float(x.getDouble(i));
  ir::Graph g = loadModel("digits_cnn.onnx", n);
  std::vector<ir::Tensor> all = ir::Interpreter(g).runAll(std::span<const ir::Tensor>(&xs, 1));
  auto t = fpga::makeFpgaTarget();
  // Cut after conv2 (a 4-D activation: the second half starts with ReLU, pooling, Flatten) and
  // after Flatten (a 2-D vector: the second half is Dense and Softmax).
  for (const char* cut : {"/conv2/Conv", "/Flatten"}) {
    SCOPED_TRACE(cut);
    size_t k = nodeIndex(g, cut) + 1;
    ir::Graph first = subgraph(g, 0, k), second = subgraph(g, k, g.nodes().size());
    ASSERT_EQ(second.inputs().size(), 1u);
    const ir::Tensor& mid = all[size_t(g.nodes()[k - 1]->output(0)->id())];
    std::vector<ir::Tensor> a = t->compile(first)->run(std::span<const ir::Tensor>(&xs, 1));
    std::vector<ir::Tensor> aRef = ir::Interpreter(first).run(std::span<const ir::Tensor>(&xs, 1));
    ASSERT_EQ(a.size(), 1u);
    EXPECT_LT(maxAbsDiff(a[0], aRef[0]), 0.05);
    auto secondExe = t->compile(second);
    std::vector<ir::Tensor> b = secondExe->run(std::span<const ir::Tensor>(&mid, 1));
    std::vector<ir::Tensor> bRef =
        ir::Interpreter(second).run(std::span<const ir::Tensor>(&mid, 1));
    EXPECT_LT(maxAbsDiff(b[0], bRef[0]), 0.02);
    // Both halves on the FPGA, the activation passing through float between them.
    std::vector<ir::Tensor> c = secondExe->run(std::span<const ir::Tensor>(&a[0], 1));
    const ir::Tensor& probs = all[size_t(g.outputs()[0]->id())];
    EXPECT_LT(maxAbsDiff(c[0], probs), 0.03);
    EXPECT_TRUE(dynamic_cast<fpga::FpgaExecutable&>(*secondExe).timing().rtl);
    // And the halves' estimates plan them as designs of their own.
    for (const auto& cost : t->estimate(second, ir::CostContext{}))
      EXPECT_EQ(cost.basis.find("alone"), std::string::npos) << cost.basis;
  }
}

TEST(FpgaEnergy, GrowsWithResourcesActivityAndTimeAndIsLabelledAnEstimate) {
  ir::Resources r{20000, 15000, 400, 6};
  fpga::EnergyEstimate base = fpga::estimateEnergy(r, 0.5, 200, 1e-6, "xc7a100t");
  EXPECT_GT(base.joules, 0);
  EXPECT_NEAR(base.joules, base.staticJoules + base.dynamicJoules, 1e-18);
  EXPECT_NEAR(base.staticJoules, fpga::findDevice("xc7a100t").staticWatts * 1e-6, 1e-15);
  EXPECT_NE(base.model.find("estimate"), std::string::npos);
  ir::Resources more = r;
  more.dsp *= 2;
  EXPECT_GT(fpga::estimateEnergy(more, 0.5, 200, 1e-6, "xc7a100t").joules, base.joules);
  EXPECT_GT(fpga::estimateEnergy(r, 0.9, 200, 1e-6, "xc7a100t").joules, base.joules);
  EXPECT_GT(fpga::estimateEnergy(r, 0.5, 200, 2e-6, "xc7a100t").joules, base.joules);
  // Dynamic power scales with the clock; at activity 0 only static power remains.
  EXPECT_NEAR(fpga::estimateEnergy(r, 0.5, 400, 1e-6, "xc7a100t").dynamicWatts,
              2 * base.dynamicWatts, 1e-12);
  EXPECT_EQ(fpga::estimateEnergy(r, 0, 200, 1e-6, "xc7a100t").dynamicJoules, 0);
  // A big part's static power dwarfs a small one's.
  EXPECT_GT(fpga::estimateEnergy(r, 0.5, 200, 1e-6, "xcvu9p").staticWatts,
            10 * fpga::estimateEnergy(r, 0.5, 200, 1e-6, "xc7a35t").staticWatts);
  EXPECT_EQ(fpga::estimateEnergy(r, 0.5, 200, 1e-6, "").staticWatts, 0);
  EXPECT_THROW(fpga::estimateEnergy(r, 1.5, 200, 1e-6, "xc7a100t"), Error);
  EXPECT_THROW(fpga::estimateEnergy(r, 0.5, 200, 1e-6, "nope"), Error);
}

TEST(FpgaEnergy, DesignActivityIsAFractionAndOneForABalancedMlp) {
  ir::Graph g = loadModel("jet_mlp.onnx", 1);
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions vo;
  vo.clockMhz = 200;
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, vo);
  EXPECT_DOUBLE_EQ(fpga::designActivity(d), 1.0); // every layer takes one cycle per sample
  ir::Graph c = loadModel("digits_cnn.onnx", 1);
  fpga::Emulator emu2(c, fpga::QuantConfig{});
  fpga::VerilogDesign d2 = fpga::emitVerilog(c, emu2, vo);
  double a = fpga::designActivity(d2);
  EXPECT_GT(a, 0.3);
  EXPECT_LT(a, 1.0); // the Dense layer after pooling is busy one cycle in 100
}

// The resource estimate against Yosys (synth_xilinx, per layer module as `triad synth`) on a
// small CNN: Conv 1->4 3x3 (36 products), ReLU, MaxPool 2x2, Flatten, Dense 16->4 at reuse 2
// (32 multipliers with weight multiplexers). Stated accuracy: LUT and FF within 0.67x-1.5x of
// Yosys', DSP48E1 within 2, block RAM exact. About 30 s of Yosys with 2 jobs.
TEST(FpgaResourceEstimate, SmallCnnAgainstYosys) {
  if (!sim::haveYosys()) GTEST_SKIP() << "yosys is not on PATH";
  std::mt19937 rng(11);
  ir::Graph g;
  g.name = "est_cnn";
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {1, 1, 4, 4}, {}});
  auto conv = testutil::attrs<ir::ConvAttrs>([](auto& a) {
    a.kernel = {3, 3};
    a.strides = {1, 1};
    a.pads = {1, 1, 1, 1};
    a.dilations = {1, 1};
  });
  ir::Node* c = testutil::add(g, ir::OpKind::Conv, "/conv/Conv",
                              {x, g.addConstant("cw", testutil::randomTensor({4, 1, 3, 3}, rng)),
                               g.addConstant("cb", testutil::randomTensor({4}, rng))},
                              conv);
  ir::Node* r = testutil::add(g, ir::OpKind::Relu, "/Relu", {c->output(0)});
  auto pool = testutil::attrs<ir::PoolAttrs>([](auto& a) {
    a.kernel = {2, 2};
    a.strides = {2, 2};
    a.pads = {0, 0, 0, 0};
    a.dilations = {1, 1};
  });
  ir::Node* p = testutil::add(g, ir::OpKind::MaxPool, "/pool/MaxPool", {r->output(0)}, pool);
  ir::Node* f = testutil::add(g, ir::OpKind::Flatten, "/Flatten", {p->output(0)},
                              testutil::attrs<ir::FlattenAttrs>([](auto& a) { a.axis = 1; }));
  ir::Node* fc =
      testutil::add(g, ir::OpKind::Gemm, "/fc/Gemm",
                    {f->output(0), g.addConstant("fw", testutil::randomTensor({4, 16}, rng))},
                    testutil::attrs<ir::GemmAttrs>([](auto& a) { a.transB = true; }));
  g.addOutput(fc->output(0));

  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions vo;
  vo.name = g.name;
  vo.clockMhz = 200;
  vo.layerReuse["/fc/Gemm"] = 2;
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, vo);
  fs::path dir = fs::path(TRIAD_BINARY_DIR) / "fpga_cost_test" / "est_cnn";
  fs::remove_all(dir);
  fs::create_directories(dir / "rtl");
  for (const auto& [name, text] : d.files())
    std::ofstream(dir / "rtl" / name) << text;
  nlohmann::json s;
  s["top"] = d.top;
  for (const fpga::RtlStage& st : d.stages)
    s["layers"].push_back({{"layer", st.layer}, {"module", st.module}, {"op", st.op}});
  std::ofstream(dir / "summary.json") << s.dump(2);
  sim::SynthOptions so;
  so.jobs = 2;
  sim::SynthReport rep = sim::synthesize(dir, so);

  ir::Resources est = d.resources();
  const sim::SynthCounts& t = rep.total;
  double lut = double(t.lut + t.lutram), bram = double(t.bram18 + 2 * t.bram36);
  std::printf("estimate vs Yosys: LUT %.0f / %.0f, FF %.0f / %lld, DSP %.0f / %lld, RAMB18 "
              "%.0f / %.0f\n",
              est.lut, lut, est.ff, (long long)t.ff, est.dsp, (long long)t.dsp, est.bram18, bram);
  for (const fpga::RtlStage& st : d.stages)
    for (const sim::SynthUnit& u : rep.units)
      if (u.module == st.module)
        std::printf("  %-14s LUT %6.0f / %6lld  FF %6.0f / %6lld  DSP %4.0f / %4lld\n",
                    st.layer.c_str(), st.resources.lut, (long long)(u.counts.lut + u.counts.lutram),
                    st.resources.ff, (long long)u.counts.ff, st.resources.dsp,
                    (long long)u.counts.dsp);
  EXPECT_GT(est.lut, lut / 1.5);
  EXPECT_LT(est.lut, lut * 1.5);
  EXPECT_GT(est.ff, double(t.ff) / 1.5);
  EXPECT_LT(est.ff, double(t.ff) * 1.5);
  EXPECT_NEAR(est.dsp, double(t.dsp), 2);
  EXPECT_EQ(est.bram18, bram);
}
