// Graph passes: each rewrite keeps the interpreter's results (differential) and the graph valid.
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/passes/Pass.h"

#include <gtest/gtest.h>
#include <random>

using namespace triad;
using namespace triad::ir;

namespace {

Tensor randomTensor(Shape s, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::F32, std::move(s));
  std::uniform_real_distribution<float> d(lo, hi);
  for (float& v : t.values<float>())
    v = d(rng);
  return t;
}

// Adds BatchNormalization(x) over `channels` with random positive variances.
Node* addBatchNorm(Graph& g, Value* x, int64_t channels, std::mt19937& rng, std::string out) {
  auto attrs = std::make_shared<NormAttrs>();
  attrs->epsilon = 1e-3f;
  Value* scale = g.addConstant("bn.scale", randomTensor({channels}, rng, 0.5f, 2));
  Value* shift = g.addConstant("bn.B", randomTensor({channels}, rng));
  Value* mean = g.addConstant("bn.mean", randomTensor({channels}, rng));
  Value* var = g.addConstant("bn.var", randomTensor({channels}, rng, 0.1f, 3));
  return g.addNode(OpKind::BatchNormalization, "bn", {x, scale, shift, mean, var}, attrs, {out},
                   {x->type()});
}

void expectSameResults(const Graph& before, const Graph& after, const std::vector<Tensor>& in) {
  auto a = Interpreter(before).run(in);
  auto b = Interpreter(after).run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    for (int64_t k = 0; k < a[i].numElements(); ++k)
      EXPECT_NEAR(a[i].getDouble(k), b[i].getDouble(k), 1e-5 * (1 + std::fabs(a[i].getDouble(k))));
  }
}

// x[2,3,6,6] -> Conv(4 filters 3x3, pad 1) -> BatchNormalization -> y
Graph convBn(std::mt19937& rng, bool withBias) {
  Graph g;
  g.name = "conv_bn";
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 3, 6, 6}, {}});
  auto ca = std::make_shared<ConvAttrs>();
  ca->kernel = {3, 3};
  ca->strides = {1, 1};
  ca->pads = {1, 1, 1, 1};
  ca->dilations = {1, 1};
  std::vector<Value*> in{x, g.addConstant("conv.W", randomTensor({4, 3, 3, 3}, rng))};
  if (withBias) in.push_back(g.addConstant("conv.b", randomTensor({4}, rng)));
  Node* conv =
      g.addNode(OpKind::Conv, "conv", in, ca, {"h"}, {TensorType{DType::F32, {2, 4, 6, 6}, {}}});
  g.addOutput(addBatchNorm(g, conv->output(0), 4, rng, "y")->output(0));
  return g;
}

} // namespace

TEST(Passes, FoldBatchNormIntoConvKeepsResultsAndOutputName) {
  for (bool withBias : {true, false}) {
    std::mt19937 rng(7);
    Graph before = convBn(rng, withBias);
    std::mt19937 rng2(7);
    Graph after = convBn(rng2, withBias);
    PassManager pm;
    pm.add(createFoldBatchNormPass()).add(createDeadCodeEliminationPass());
    auto rec = pm.run(after);
    EXPECT_TRUE(rec[0].changed);
    ASSERT_EQ(after.nodes().size(), 1u);
    EXPECT_EQ(after.nodes()[0]->kind(), OpKind::Conv);
    EXPECT_EQ(after.outputs()[0]->name(), "y");
    std::mt19937 r3(1);
    expectSameResults(before, after, {randomTensor({2, 3, 6, 6}, r3)});
  }
}

TEST(Passes, FoldBatchNormIntoGemmBothLayouts) {
  for (bool transB : {false, true}) {
    std::mt19937 rng(3);
    auto build = [&](std::mt19937& r) {
      Graph g;
      Value* x = g.addInput("x", TensorType{DType::F32, {5, 8}, {}});
      auto ga = std::make_shared<GemmAttrs>();
      ga->transB = transB;
      ga->alpha = 0.5f;
      Value* B = g.addConstant("B", randomTensor(transB ? Shape{6, 8} : Shape{8, 6}, r));
      Value* C = g.addConstant("C", randomTensor({6}, r));
      Node* n =
          g.addNode(OpKind::Gemm, "fc", {x, B, C}, ga, {"h"}, {TensorType{DType::F32, {5, 6}, {}}});
      g.addOutput(addBatchNorm(g, n->output(0), 6, r, "y")->output(0));
      return g;
    };
    std::mt19937 r1(3), r2(3);
    Graph before = build(r1), after = build(r2);
    EXPECT_TRUE(createFoldBatchNormPass()->run(after));
    EXPECT_TRUE(verify(after).empty());
    std::mt19937 r3(2);
    expectSameResults(before, after, {randomTensor({5, 8}, r3)});
  }
}

// Gemm with beta != 1 (and without a bias) and MatMul by a constant matrix: folded into one Gemm
// (beta 1) that keeps the BatchNormalization's output name; the results do not change.
TEST(Passes, FoldBatchNormIntoGemmWithAnyBetaAndMatMul) {
  for (int form = 0; form < 3; ++form) {
    auto build = [&](std::mt19937& r) {
      Graph g;
      Value* x = g.addInput("x", TensorType{DType::F32, {5, 8}, {}});
      Value* B = g.addConstant("B", randomTensor({8, 6}, r));
      Node* n;
      if (form == 2) {
        n = g.addNode(OpKind::MatMul, "mm", {x, B}, nullptr, {"h"},
                      {TensorType{DType::F32, {5, 6}, {}}});
      } else {
        auto ga = std::make_shared<GemmAttrs>();
        ga->beta = 0.25f;
        std::vector<Value*> ins = {x, B};
        if (form == 0) ins.push_back(g.addConstant("C", randomTensor({6}, r)));
        n = g.addNode(OpKind::Gemm, "fc", ins, ga, {"h"}, {TensorType{DType::F32, {5, 6}, {}}});
      }
      g.addOutput(addBatchNorm(g, n->output(0), 6, r, "y")->output(0));
      return g;
    };
    std::mt19937 r1(5), r2(5);
    Graph before = build(r1), after = build(r2);
    EXPECT_TRUE(createFoldBatchNormPass()->run(after)) << "form " << form;
    EXPECT_TRUE(verify(after).empty()) << "form " << form;
    ASSERT_EQ(after.nodes().size(), 1u) << "form " << form;
    EXPECT_EQ(after.nodes()[0]->kind(), OpKind::Gemm);
    EXPECT_EQ(after.nodes()[0]->attrs<GemmAttrs>().beta, 1.0f);
    EXPECT_EQ(after.outputs()[0]->name(), "y");
    std::mt19937 r3(2);
    expectSameResults(before, after, {randomTensor({5, 8}, r3)});
  }
}

TEST(Passes, FoldBatchNormLeavesSharedProducersAlone) {
  std::mt19937 rng(5);
  Graph g = convBn(rng, true);
  g.addOutput(g.findValue("h")); // the conv output is also a graph output: cannot fold
  EXPECT_FALSE(createFoldBatchNormPass()->run(g));
  EXPECT_EQ(g.nodes().size(), 2u);
}

TEST(Passes, RemoveIdentityAndDce) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  Node* r = g.addNode(OpKind::Relu, "relu", {x}, nullptr, {"r"}, {x->type()});
  Node* id = g.addNode(OpKind::Identity, "id", {r->output(0)}, nullptr, {"y"}, {x->type()});
  g.addNode(OpKind::Neg, "unused", {x}, nullptr, {"dead"}, {x->type()});
  g.addOutput(id->output(0));
  PassOptions opts;
  std::string printed;
  opts.printAfter = {"dce"};
  opts.print = [&](std::string_view s) { printed += s; };
  auto records = defaultPipeline().run(g, opts);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->name(), "relu");
  EXPECT_EQ(g.outputs()[0]->name(), "y"); // the output keeps its name
  EXPECT_NE(printed.find("// IR after pass 'dce' (changed)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%y: f32[4] = Relu(%x)"), std::string::npos) << printed;
  std::vector<std::string> names;
  for (const auto& r : records)
    names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"remove-identity", "constant-fold", "cse",
                                             "fold-batchnorm", "matmul-add-to-gemm", "fuse-gelu",
                                             "fuse-layernorm", "fuse-softmax", "dce"}));
  EXPECT_EQ(allPassNames(), names);
  ASSERT_EQ(records.size(), 9u);
  EXPECT_TRUE(records[0].changed);  // remove-identity
  EXPECT_FALSE(records[1].changed); // constant-fold
  EXPECT_FALSE(records[2].changed); // cse
  EXPECT_FALSE(records[3].changed); // fold-batchnorm
  EXPECT_FALSE(records[4].changed); // matmul-add-to-gemm
  EXPECT_FALSE(records[5].changed); // fuse-gelu
  EXPECT_FALSE(records[6].changed); // fuse-layernorm
  EXPECT_FALSE(records[7].changed); // fuse-softmax
  EXPECT_TRUE(records[8].changed);  // dce
}

// A Pad of zeros on every side (PyTorch exports one before avg_pool2d) is an identity; one that
// pads is kept.
TEST(Passes, RemoveIdentityDropsAZeroPad) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {1, 2, 3, 3}, {}});
  auto zero = std::make_shared<PadAttrs>();
  zero->pads.assign(8, 0);
  zero->value = Tensor::scalar<float>(0);
  Node* p0 = g.addNode(OpKind::Pad, "/Pad", {x}, zero, {"p0"}, {x->type()});
  Node* r = g.addNode(OpKind::Relu, "relu", {p0->output(0)}, nullptr, {"r"}, {x->type()});
  auto one = std::make_shared<PadAttrs>(*zero);
  one->pads = {0, 0, 1, 1, 0, 0, 1, 1};
  Node* p1 = g.addNode(OpKind::Pad, "/Pad_1", {r->output(0)}, one, {"y"},
                       {TensorType{DType::F32, {1, 2, 5, 5}, {}}});
  g.addOutput(p1->output(0));
  EXPECT_TRUE(createRemoveIdentityPass()->run(g));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->name(), "relu");
  EXPECT_EQ(g.nodes()[0]->input(0), x);
  EXPECT_EQ(g.nodes()[1]->name(), "/Pad_1");
  EXPECT_FALSE(createRemoveIdentityPass()->run(g));
}

TEST(Passes, ManagerNamesABrokenPass) {
  class Breaker final : public Pass {
  public:
    std::string_view name() const override { return "breaker"; }
    bool run(Graph& g) override {
      g.outputs()[0]->setType(TensorType{DType::F32, {9}, {}});
      return true;
    }
  };
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  g.addOutput(g.addNode(OpKind::Relu, "relu", {x}, nullptr, {"y"}, {x->type()})->output(0));
  PassManager pm;
  pm.add(std::make_unique<Breaker>());
  try {
    pm.run(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(std::string(e.what()).find("after pass 'breaker'"), std::string::npos) << e.what();
  }
}
