// constant-fold, cse and matmul-add-to-gemm on hand-built graphs: the structure after each pass
// and the interpreter's results before and after it.
#include "GraphBuild.h"
#include "PatternGraphs.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Elementwise.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Reduce.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>

using namespace triad;
using namespace triad::ir;

namespace {

using testutil::add;
using testutil::attrs;
using testutil::randomTensor;

int countKind(const Graph& g, OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(),
                           [&](const auto& n) { return n->kind() == k; }));
}

void expectSameResults(const Graph& before, const Graph& after, const std::vector<Tensor>& in,
                       double rtol = 1e-5) {
  auto a = Interpreter(before).run(in);
  auto b = Interpreter(after).run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].type(), b[i].type());
    for (int64_t k = 0; k < a[i].numElements(); ++k)
      ASSERT_NEAR(a[i].getDouble(k), b[i].getDouble(k), rtol * (1 + std::fabs(a[i].getDouble(k))))
          << "output " << i << " element " << k;
  }
}

bool runPass(std::unique_ptr<Pass> p, Graph& g) {
  bool changed = p->run(g);
  auto problems = verify(g);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << printGraph(g);
  return changed;
}

// x[2,3,4] (run time), z[2] (run time):
//   s = Shape(x); d = Gather(s, 1); u = Unsqueeze(d); c = Concat(u, [7]); f = Cast(c, f32)
//   y = Add(f, z)
// The whole shape chain is known before run time although x is not.
Graph shapeChain() {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 3, 4}, {}});
  Value* z = g.addInput("z", TensorType{DType::F32, {2}, {}});
  Node* s = add(g, OpKind::Shape, "shape", {x}, attrs<ShapeAttrs>([](auto& a) { a.end = 3; }));
  Node* d = add(g, OpKind::Gather, "gather",
                {s->output(0), g.addConstant("idx", Tensor::scalar<int64_t>(1))},
                std::make_shared<AxisAttrs>());
  Node* u = add(g, OpKind::Unsqueeze, "unsqueeze", {d->output(0)},
                attrs<AxesAttrs>([](auto& a) { a.axes = {0}; }));
  Node* c = add(g, OpKind::Concat, "concat",
                {u->output(0), g.addConstant("seven", Tensor::fromVector<int64_t>({1}, {7}))},
                std::make_shared<AxisAttrs>());
  Node* f = add(g, OpKind::Cast, "cast", {c->output(0)},
                attrs<CastAttrs>([](auto& a) { a.to = DType::F32; }));
  g.addOutput(add(g, OpKind::Add, "add", {f->output(0), z})->output(0));
  return g;
}

} // namespace

TEST(ConstantFold, ShapeGatherUnsqueezeConcatChainFoldsWithRunTimeInput) {
  Graph before = shapeChain(), after = shapeChain();
  PassManager pm;
  pm.add(createConstantFoldPass()).add(createDeadCodeEliminationPass());
  auto rec = pm.run(after);
  EXPECT_TRUE(rec[0].changed);
  ASSERT_EQ(after.nodes().size(), 1u) << printGraph(after);
  const Node& n = *after.nodes()[0];
  EXPECT_EQ(n.kind(), OpKind::Add);
  ASSERT_TRUE(n.input(0)->isConstant());
  EXPECT_EQ(n.input(0)->name(), "cast"); // the folded value keeps its name
  EXPECT_EQ(n.input(0)->constant(), Tensor::fromVector<float>({2}, {3, 7}));
  std::mt19937 rng(1);
  expectSameResults(before, after, {randomTensor({2, 3, 4}, rng), randomTensor({2}, rng)});
}

TEST(ConstantFold, KeepsNodesThatProduceGraphOutputsAndRunTimeNodes) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {3}, {}});
  Value* c = g.addConstant("c", Tensor::fromVector<float>({3}, {1, -2, 3}));
  Node* neg = add(g, OpKind::Neg, "neg", {c});                 // constant: folds
  Node* mul = add(g, OpKind::Mul, "mul", {x, neg->output(0)}); // run time
  Node* abs = add(g, OpKind::Abs, "abs", {c});                 // constant, but a graph output
  g.addOutput(mul->output(0));
  g.addOutput(abs->output(0));
  EXPECT_TRUE(runPass(createConstantFoldPass(), g));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->kind(), OpKind::Mul);
  EXPECT_EQ(g.nodes()[0]->input(1)->constant(), Tensor::fromVector<float>({3}, {-1, 2, -3}));
  EXPECT_EQ(g.nodes()[1]->kind(), OpKind::Abs);
  EXPECT_EQ(g.outputs()[1]->name(), "abs");
  EXPECT_FALSE(runPass(createConstantFoldPass(), g)); // nothing left to fold
}

TEST(ConstantFold, SizeGuardKeepsGrowingOpsUnlessTheLimitAllows) {
  // Expand of a [1,1024] constant to [2048,1024] (2M elements from 1K) and Tile of a [4,4]
  // constant by 2 (64 elements from 16), each followed by a use at run time.
  auto build = [] {
    Graph g;
    Value* x = g.addInput("x", TensorType{DType::F32, {2048, 1024}, {}});
    Value* row = g.addConstant("row", Tensor(DType::F32, {1, 1024}));
    Node* e = add(g, OpKind::Expand, "expand", {row}, attrs<OutShapeAttrs>([](auto& a) {
                    a.outShape = {2048, 1024};
                  }));
    Value* small = g.addConstant("small", Tensor(DType::F32, {4, 4}));
    Node* t = add(g, OpKind::Tile, "tile", {small}, attrs<OutShapeAttrs>([](auto& a) {
                    a.outShape = {8, 8};
                  }));
    Value* y = g.addInput("y", TensorType{DType::F32, {8, 8}, {}});
    g.addOutput(add(g, OpKind::Add, "add", {x, e->output(0)})->output(0));
    g.addOutput(add(g, OpKind::Add, "add2", {y, t->output(0)})->output(0));
    return g;
  };
  Graph g = build();
  EXPECT_TRUE(runPass(createConstantFoldPass(), g));
  EXPECT_EQ(countKind(g, OpKind::Expand), 1); // 2M > 1M elements and more than its input
  EXPECT_EQ(countKind(g, OpKind::Tile), 0);   // small: folded
  Graph h = build();
  EXPECT_TRUE(runPass(createConstantFoldPass(int64_t(4) << 20), h));
  EXPECT_EQ(countKind(h, OpKind::Expand), 0);
  ASSERT_TRUE(h.findValue("expand")->isConstant());
  EXPECT_EQ(h.findValue("expand")->type().numElements(), 2048 * 1024);

  // The guard itself: a result no larger than the constants it comes from always folds.
  Graph big;
  Value* w = big.addConstant("w", Tensor(DType::F32, {2048, 1024}));
  Node* n = add(big, OpKind::Neg, "neg", {w});
  FoldInputs in(n->def(), n->inputs());
  std::vector<TensorType> types{n->output(0)->type()};
  EXPECT_EQ(in.constantElements(), 2048 * 1024);
  EXPECT_TRUE(foldWithinSizeLimit(OpKind::Neg, in, types, 100));
  // ... while a growing one is refused over the limit, and Constant is always folded.
  std::vector<TensorType> grown{TensorType{DType::F32, {4096, 1024}, {}}};
  EXPECT_FALSE(foldWithinSizeLimit(OpKind::Tile, in, grown));
  EXPECT_TRUE(foldWithinSizeLimit(OpKind::Constant, in, grown));
}

TEST(ConstantFold, ErrorsNameTheNode) {
  Graph g;
  Value* data = g.addConstant("data", Tensor::fromVector<float>({3}, {1, 2, 3}));
  Value* idx = g.addConstant("idx", Tensor::fromVector<int64_t>({1}, {0}));
  Node* gather = add(g, OpKind::Gather, "bad_gather", {data, idx}, std::make_shared<AxisAttrs>());
  Value* x = g.addInput("x", TensorType{DType::F32, {1}, {}});
  g.addOutput(add(g, OpKind::Add, "add", {x, gather->output(0)})->output(0));
  // Corrupt the index after shape inference: out of range for 3 elements.
  Value* bad = g.addConstant("idx_bad", Tensor::fromVector<int64_t>({1}, {5}));
  g.setNodeInput(gather, 1, bad);
  try {
    createConstantFoldPass()->run(g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("constant-fold: node 'bad_gather' (Gather)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Cse, MergesIdenticalConstantsAndThenTheNodesReadingThem) {
  auto build = [] {
    Graph g;
    Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
    Value* h1 = g.addConstant("half1", Tensor::fromVector<float>({4}, {0.5f, 1, 2, 3}));
    Value* h2 = g.addConstant("half2", Tensor::fromVector<float>({4}, {0.5f, 1, 2, 3}));
    Value* other = g.addConstant("other", Tensor::fromVector<float>({4}, {0.5f, 1, 2, 4}));
    Node* a = add(g, OpKind::Mul, "mul_a", {x, h1});
    Node* b = add(g, OpKind::Mul, "mul_b", {x, h2});    // same as mul_a once h2 == h1
    Node* c = add(g, OpKind::Mul, "mul_c", {x, other}); // different constant
    Node* ra = add(g, OpKind::Relu, "relu_a", {a->output(0)});
    Node* rb = add(g, OpKind::Relu, "relu_b", {b->output(0)}); // merges in the same sweep
    Node* s = add(g, OpKind::Add, "sum", {ra->output(0), rb->output(0)});
    g.addOutput(add(g, OpKind::Add, "y", {s->output(0), c->output(0)})->output(0));
    return g;
  };
  Graph before = build(), g = build();
  EXPECT_TRUE(runPass(createCsePass(), g));
  EXPECT_EQ(countKind(g, OpKind::Mul), 2);
  EXPECT_EQ(countKind(g, OpKind::Relu), 1);
  const Node* sum = g.findValue("sum")->producer();
  EXPECT_EQ(sum->input(0), sum->input(1));
  EXPECT_EQ(sum->input(0)->name(), "relu_a");
  std::mt19937 rng(4);
  expectSameResults(before, g, {randomTensor({4}, rng)});
  EXPECT_FALSE(runPass(createCsePass(), g)); // a fixed point
}

TEST(Cse, AttributesMustBeExactlyEqual) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  auto leaky = [&](const std::string& name, float alpha) {
    return add(g, OpKind::LeakyRelu, name, {x},
               attrs<AlphaAttrs>([&](auto& a) { a.alpha = alpha; }));
  };
  Node* a = leaky("a", 0.1f);
  Node* b = leaky("b", 0.1f); // duplicate of a
  Node* c = leaky("c", 0.2f); // other alpha
  Node* d = leaky("d", 0.0f);
  Node* e = leaky("e", -0.0f); // -0 is not 0 bit for bit: kept
  std::vector<Value*> outs{a->output(0), b->output(0), c->output(0), d->output(0), e->output(0)};
  Value* acc = outs[0];
  for (size_t i = 1; i < outs.size(); ++i)
    acc = add(g, OpKind::Add, fmt::format("acc{}", i), {acc, outs[i]})->output(0);
  g.addOutput(acc);
  EXPECT_TRUE(runPass(createCsePass(), g));
  EXPECT_EQ(countKind(g, OpKind::LeakyRelu), 4);
  EXPECT_EQ(g.findValue("acc1")->producer()->input(1)->name(), "a");
}

TEST(Cse, AttrsEqualityIsExactForLargeTensors) {
  // Constant attributes over the printer's inline limit print as a hash; equality must still
  // compare every byte.
  Tensor t(DType::F32, {1000});
  Tensor u = t;
  u.data<float>()[999] = 1.0f;
  ConstantAttrs a, b, c;
  a.value = t;
  b.value = t;
  c.value = u;
  EXPECT_TRUE(a.equals(b));
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_FALSE(a.equals(c));
  CastAttrs f16, f16b, f32;
  f16.to = f16b.to = DType::F16;
  EXPECT_TRUE(f16.equals(f16b));
  EXPECT_FALSE(f16.equals(f32));
  EXPECT_FALSE(f16.equals(NoAttrs()));
}

TEST(Cse, KeepsDuplicatesThatAreGraphOutputs) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  g.addOutput(add(g, OpKind::Relu, "r1", {x})->output(0));
  g.addOutput(add(g, OpKind::Relu, "r2", {x})->output(0));
  EXPECT_FALSE(runPass(createCsePass(), g));
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.outputs()[1]->name(), "r2");
}

namespace {

// x[rows..., K] -> MatMul(W[K,N]) -> Add(bias) -> Relu -> y
Graph matmulAdd(Shape xShape, Shape biasShape, bool biasFirst, std::mt19937& rng,
                DType dt = DType::F32) {
  Graph g;
  int64_t K = xShape.back(), N = 5;
  Value* x = g.addInput("x", TensorType{dt, xShape, {}});
  Value* w = g.addConstant("fc.weight", randomTensor({K, N}, rng, dt));
  Value* b = g.addConstant("fc.bias", randomTensor(biasShape, rng, dt));
  Node* mm = add(g, OpKind::MatMul, "/fc/MatMul", {x, w});
  std::vector<Value*> in{mm->output(0), b};
  if (biasFirst) std::swap(in[0], in[1]);
  Node* a = add(g, OpKind::Add, "/fc/Add", in);
  g.addOutput(add(g, OpKind::Relu, "y", {a->output(0)})->output(0));
  return g;
}

} // namespace

TEST(MatMulAddToGemm, TwoDimensionalBecomesOneGemm) {
  for (Shape bias : {Shape{5}, Shape{1, 5}, Shape{}}) {
    for (bool biasFirst : {false, true}) {
      std::mt19937 r1(9), r2(9);
      Graph before = matmulAdd({3, 4}, bias, biasFirst, r1);
      Graph g = matmulAdd({3, 4}, bias, biasFirst, r2);
      EXPECT_TRUE(runPass(createMatMulAddToGemmPass(), g));
      ASSERT_EQ(g.nodes().size(), 2u) << printGraph(g);
      const Node& gemm = *g.nodes()[0];
      EXPECT_EQ(gemm.kind(), OpKind::Gemm);
      EXPECT_EQ(gemm.name(), "/fc/MatMul");
      EXPECT_EQ(gemm.output(0)->name(), "/fc/Add"); // the Add's value keeps its name
      EXPECT_EQ(gemm.input(2)->type().rank(), 1);
      EXPECT_EQ(g.nodes()[1]->input(0), gemm.output(0));
      std::mt19937 r3(2);
      expectSameResults(before, g, {randomTensor({3, 4}, r3)});
    }
  }
}

TEST(MatMulAddToGemm, HigherRankIsFlattenedAroundTheGemm) {
  std::mt19937 r1(11), r2(11);
  // BERT's layout: [batch, sequence, hidden] x [hidden, N] + [N]
  Graph before = matmulAdd({2, 3, 4}, {5}, false, r1);
  Graph g = matmulAdd({2, 3, 4}, {5}, false, r2);
  EXPECT_TRUE(runPass(createMatMulAddToGemmPass(), g));
  ASSERT_EQ(g.nodes().size(), 4u) << printGraph(g);
  EXPECT_EQ(g.nodes()[0]->kind(), OpKind::Reshape);
  EXPECT_EQ(g.nodes()[0]->output(0)->type().shape, (Shape{6, 4}));
  EXPECT_EQ(g.nodes()[1]->kind(), OpKind::Gemm);
  EXPECT_EQ(g.nodes()[2]->kind(), OpKind::Reshape);
  EXPECT_EQ(g.nodes()[2]->output(0)->type().shape, (Shape{2, 3, 5}));
  EXPECT_EQ(g.nodes()[2]->output(0)->name(), "/fc/Add");
  EXPECT_EQ(g.nodes()[3]->kind(), OpKind::Relu);
  std::mt19937 r3(3);
  expectSameResults(before, g, {randomTensor({2, 3, 4}, r3)});
}

TEST(MatMulAddToGemm, AttentionProjectionsShareOneFlattenAndSkipReshapes) {
  // x[2,3,8] -> Reshape [2,3,2,4] -> Reshape [2,3,8] (a view of a view) -> q = MatMul+Add,
  // k = MatMul+Add (same input); q is split into heads by a Reshape, k goes to a Relu.
  auto build = [](std::mt19937& rng) {
    Graph g;
    Value* x = g.addInput("x", TensorType{DType::F32, {2, 3, 8}, {}});
    Node* v1 = add(g, OpKind::Reshape, "view1", {x}, attrs<ReshapeAttrs>([](auto& a) {
                     a.shape = {2, 3, 2, 4};
                   }));
    Node* v2 = add(g, OpKind::Reshape, "view2", {v1->output(0)}, attrs<ReshapeAttrs>([](auto& a) {
                     a.shape = {2, 3, 8};
                   }));
    std::vector<Value*> proj;
    for (const char* name : {"q", "k"}) {
      Value* w = g.addConstant(fmt::format("{}.weight", name), randomTensor({8, 8}, rng));
      Value* b = g.addConstant(fmt::format("{}.bias", name), randomTensor({8}, rng));
      Node* mm = add(g, OpKind::MatMul, fmt::format("{}/MatMul", name), {v2->output(0), w});
      proj.push_back(
          add(g, OpKind::Add, fmt::format("{}/Add", name), {mm->output(0), b})->output(0));
    }
    g.addOutput(add(g, OpKind::Reshape, "heads", {proj[0]}, attrs<ReshapeAttrs>([](auto& a) {
                      a.shape = {2, 3, 2, 4};
                    }))
                    ->output(0));
    g.addOutput(add(g, OpKind::Relu, "k_relu", {proj[1]})->output(0));
    // A residual Add reads q as its second input: q's unflatten must stay.
    g.addOutput(add(g, OpKind::Add, "residual", {x, proj[0]})->output(0));
    return g;
  };
  std::mt19937 r1(8), r2(8);
  Graph before = build(r1), g = build(r2);
  PassManager pm;
  pm.add(createMatMulAddToGemmPass()).add(createDeadCodeEliminationPass());
  pm.run(g);
  // flatten(x), two Gemms, the heads Reshape (reading q's 2-D product), q's and k's
  // unflatten (for the residual Add and the Relu), Relu, Add.
  ASSERT_EQ(countKind(g, OpKind::Gemm), 2) << printGraph(g);
  EXPECT_EQ(countKind(g, OpKind::Reshape), 4) << printGraph(g);
  EXPECT_EQ(g.findValue("residual")->producer()->input(1)->producer()->input(0)->name(),
            "q/Add:2d");
  const Node* q = g.findValue("q/Add:2d")->producer();
  const Node* k = g.findValue("k/Add")->producer()->input(0)->producer();
  ASSERT_EQ(k->kind(), OpKind::Gemm);
  EXPECT_EQ(q->input(0), k->input(0)); // one flattened activation
  EXPECT_EQ(q->input(0)->producer()->input(0)->name(), "x");
  EXPECT_EQ(g.findValue("heads")->producer()->input(0), q->output(0));
  std::mt19937 r3(4);
  expectSameResults(before, g, {randomTensor({2, 3, 8}, r3)});
}

TEST(MatMulAddToGemm, Float64AndFloat16) {
  for (DType dt : {DType::F64, DType::F16}) {
    std::mt19937 r1(5), r2(5);
    Graph before = matmulAdd({3, 4}, {5}, false, r1, dt);
    Graph g = matmulAdd({3, 4}, {5}, false, r2, dt);
    EXPECT_TRUE(runPass(createMatMulAddToGemmPass(), g));
    EXPECT_EQ(countKind(g, OpKind::Gemm), 1);
    std::mt19937 r3(6);
    expectSameResults(before, g, {randomTensor({3, 4}, r3, dt)}, dt == DType::F16 ? 2e-3 : 1e-12);
  }
}

TEST(MatMulAddToGemm, LeavesNonMatchingPatternsAlone) {
  std::mt19937 rng(1);
  {
    // Bias with more than N elements (a full [3,5] matrix): not a per-column bias.
    Graph g = matmulAdd({3, 4}, {3, 5}, false, rng);
    EXPECT_FALSE(runPass(createMatMulAddToGemmPass(), g));
  }
  {
    // The product is used twice.
    Graph g = matmulAdd({3, 4}, {5}, false, rng);
    g.addOutput(g.findValue("/fc/MatMul"));
    EXPECT_FALSE(runPass(createMatMulAddToGemmPass(), g));
  }
  {
    // Weight at run time.
    Graph g;
    Value* x = g.addInput("x", TensorType{DType::F32, {3, 4}, {}});
    Value* w = g.addInput("w", TensorType{DType::F32, {4, 5}, {}});
    Node* mm = add(g, OpKind::MatMul, "mm", {x, w});
    Value* b = g.addConstant("b", randomTensor({5}, rng));
    g.addOutput(add(g, OpKind::Add, "add", {mm->output(0), b})->output(0));
    EXPECT_FALSE(runPass(createMatMulAddToGemmPass(), g));
  }
  {
    // Integers: Gemm's float path only.
    Graph g;
    Value* x = g.addInput("x", TensorType{DType::I32, {3, 4}, {}});
    Value* w = g.addConstant("w", Tensor(DType::I32, {4, 5}));
    Node* mm = add(g, OpKind::MatMul, "mm", {x, w});
    Value* b = g.addConstant("b", Tensor(DType::I32, {5}));
    g.addOutput(add(g, OpKind::Add, "add", {mm->output(0), b})->output(0));
    EXPECT_FALSE(runPass(createMatMulAddToGemmPass(), g));
  }
}

TEST(Passes, PrintAfterWorksForTheNewPasses) {
  std::mt19937 rng(1);
  Graph g = matmulAdd({3, 4}, {5}, false, rng);
  PassOptions opts;
  std::string printed;
  opts.printAfter = {"matmul-add-to-gemm", "constant-fold", "cse"};
  opts.print = [&](std::string_view s) { printed += s; };
  defaultPipeline().run(g, opts);
  EXPECT_NE(printed.find("// IR after pass 'matmul-add-to-gemm' (changed)"), std::string::npos);
  EXPECT_NE(printed.find("// IR after pass 'constant-fold' (unchanged)"), std::string::npos);
  EXPECT_NE(printed.find("// IR after pass 'cse' (unchanged)"), std::string::npos);
  EXPECT_NE(printed.find("= Gemm(%x, %fc.weight, %fc.bias)"), std::string::npos) << printed;
}

namespace {

// A graph with input x [2, 5] and the builders of an elementwise pattern: scalar constants,
// unary nodes, and binary nodes whose operands are swapped when asked (patterns match either
// order).
struct PatternGraph {
  Graph g;
  bool swapOperands;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 5}, {}});
  explicit PatternGraph(bool swap) : swapOperands(swap) {}
  Value* c(const char* name, float v) {
    return g.addConstant(name, Tensor::fromVector<float>({}, {v}));
  }
  Value* un(OpKind k, const char* name, Value* a) { return add(g, k, name, {a})->output(0); }
  Value* bin(OpKind k, const char* name, Value* a, Value* b) {
    return swapOperands ? add(g, k, name, {b, a})->output(0) : add(g, k, name, {a, b})->output(0);
  }
  /// A binary node in the given operand order (an op whose operands do not commute).
  Value* ordered(OpKind k, const char* name, Value* a, Value* b) {
    return add(g, k, name, {a, b})->output(0);
  }
  /// Relu(y) as the output (the pattern's result has a reader), and the graph.
  Graph finish(Value* y) {
    g.addOutput(un(OpKind::Relu, "after", y));
    return std::move(g);
  }
};

// x -> Div(sqrt 2) | Mul(1/sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5), operands in either
// order: the spelled-out exact GELU of PyTorch exports.
Graph geluPattern(bool useMul, bool swapOperands) {
  PatternGraph pg(swapOperands);
  Value* x = pg.x;
  Value* s = useMul ? pg.bin(OpKind::Mul, "scale", x, pg.c("r", 0.70710678f))
                    : pg.ordered(OpKind::Div, "scale", x, pg.c("r", 1.41421356f));
  Value* p = pg.bin(OpKind::Add, "plus1", pg.un(OpKind::Erf, "erf", s), pg.c("one", 1.0f));
  Value* m = pg.bin(OpKind::Mul, "mulx", x, p);
  return pg.finish(pg.bin(OpKind::Mul, "half", m, pg.c("h", 0.5f)));
}

// GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 Pow(x, 3)))), the halving done
// first ((x * 0.5) * (1 + t), as GPT-2's export has it) or last.
Graph geluTanhPattern(bool halfFirst, bool swapOperands) {
  PatternGraph pg(swapOperands);
  Value* x = pg.x;
  Value* cube = pg.ordered(OpKind::Pow, "pow", x, pg.c("three", 3.0f));
  Value* inner =
      pg.bin(OpKind::Add, "sum", x, pg.bin(OpKind::Mul, "coef", cube, pg.c("k", 0.044715f)));
  Value* t =
      pg.un(OpKind::Tanh, "tanh", pg.bin(OpKind::Mul, "scale", inner, pg.c("s", 0.7978846f)));
  Value* p = pg.bin(OpKind::Add, "plus1", t, pg.c("one", 1.0f));
  Value* y = halfFirst
                 ? pg.bin(OpKind::Mul, "out", pg.bin(OpKind::Mul, "half", x, pg.c("h", 0.5f)), p)
                 : pg.bin(OpKind::Mul, "out", pg.bin(OpKind::Mul, "mulx", x, p), pg.c("h", 0.5f));
  return pg.finish(y);
}

} // namespace

TEST(FuseGelu, TanhPatternBecomesOneGeluNode) {
  for (bool halfFirst : {false, true})
    for (bool swap : {false, true}) {
      Graph before = geluTanhPattern(halfFirst, swap);
      Graph g = geluTanhPattern(halfFirst, swap);
      EXPECT_TRUE(runPass(createFuseGeluPass(), g));
      ASSERT_EQ(countKind(g, OpKind::Gelu), 1) << printGraph(g);
      EXPECT_EQ(g.nodes().size(), 2u) << printGraph(g);
      EXPECT_EQ(g.nodes()[0]->attrs<GeluAttrs>().approximate, GeluApproximation::Tanh);
      EXPECT_EQ(g.nodes()[0]->output(0)->name(), "out");
      EXPECT_TRUE(verify(g).empty());
      std::mt19937 r(5);
      expectSameResults(before, g, {randomTensor({2, 5}, r)}, 1e-6);
    }
  // Near misses: x^2 instead of x^3, and the cube read twice (it must vanish with the pattern).
  {
    Graph g = geluTanhPattern(true, false);
    g.findValue("pow")->producer()->setInput(
        1, g.addConstant("two", Tensor::fromVector<float>({}, {2.0f})));
    EXPECT_FALSE(runPass(createFuseGeluPass(), g));
  }
  {
    Graph g = geluTanhPattern(true, false);
    g.addOutput(g.findValue("pow"));
    EXPECT_FALSE(runPass(createFuseGeluPass(), g));
  }
}

TEST(FuseGelu, ErfPatternBecomesOneGeluNode) {
  for (bool useMul : {false, true})
    for (bool swap : {false, true}) {
      Graph before = geluPattern(useMul, swap);
      Graph g = geluPattern(useMul, swap);
      EXPECT_TRUE(runPass(createFuseGeluPass(), g));
      ASSERT_EQ(countKind(g, OpKind::Gelu), 1) << printGraph(g);
      EXPECT_EQ(countKind(g, OpKind::Erf), 0);
      EXPECT_EQ(g.nodes().size(), 2u);
      EXPECT_EQ(g.nodes()[0]->output(0)->name(), "half"); // the pattern's output keeps its name
      EXPECT_TRUE(verify(g).empty());
      std::mt19937 r(5);
      expectSameResults(before, g, {randomTensor({2, 5}, r)}, 1e-6);
    }
}

TEST(FuseGelu, LeavesNearMissesAlone) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  Value* s =
      add(g, OpKind::Div, "scale", {x, g.addConstant("r", Tensor::fromVector<float>({}, {2.0f}))})
          ->output(0);
  Value* e = add(g, OpKind::Erf, "erf", {s})->output(0);
  Value* p =
      add(g, OpKind::Add, "plus1", {e, g.addConstant("one", Tensor::fromVector<float>({}, {1.0f}))})
          ->output(0);
  Value* m = add(g, OpKind::Mul, "mulx", {x, p})->output(0);
  g.addOutput(
      add(g, OpKind::Mul, "half", {m, g.addConstant("h", Tensor::fromVector<float>({}, {0.5f}))})
          ->output(0));
  EXPECT_FALSE(runPass(createFuseGeluPass(), g)); // x / 2 is not x / sqrt(2)
  EXPECT_EQ(countKind(g, OpKind::Erf), 1);
}

using testutil::layerNormPattern;
using testutil::softmaxPattern;

TEST(FuseLayerNorm, SpelledOutLayerNormBecomesOneNode) {
  for (bool mulSquare : {false, true})
    for (bool affine : {false, true}) {
      Graph before = layerNormPattern(mulSquare, affine);
      Graph g = layerNormPattern(mulSquare, affine);
      EXPECT_TRUE(runPass(createFuseLayerNormPass(), g));
      ASSERT_EQ(countKind(g, OpKind::LayerNormalization), 1) << printGraph(g);
      EXPECT_EQ(g.nodes().size(), 2u) << printGraph(g); // LayerNormalization, Relu
      const Node& ln = *g.nodes()[0];
      EXPECT_EQ(ln.attrs<LayerNormAttrs>().axis, 2);
      EXPECT_FLOAT_EQ(ln.attrs<LayerNormAttrs>().epsilon, 1e-5f);
      EXPECT_EQ(ln.output(0)->name(), affine ? "beta" : "div"); // keeps the pattern's name
      std::mt19937 r(9);
      expectSameResults(before, g, {randomTensor({2, 3, 8}, r)}, 1e-5);
    }
}

TEST(FuseLayerNorm, OverSeveralTrailingAxesAndNotOverLeadingOnes) {
  Graph before = layerNormPattern(false, false, {1, 2});
  Graph g = layerNormPattern(false, false, {1, 2});
  EXPECT_TRUE(runPass(createFuseLayerNormPass(), g));
  ASSERT_EQ(countKind(g, OpKind::LayerNormalization), 1);
  EXPECT_EQ(g.nodes()[0]->attrs<LayerNormAttrs>().axis, 1);
  std::mt19937 r(4);
  expectSameResults(before, g, {randomTensor({2, 3, 8}, r)}, 1e-5);

  Graph lead = layerNormPattern(false, true, {1}); // axis 1 of 3 is not trailing
  EXPECT_FALSE(runPass(createFuseLayerNormPass(), lead));
  EXPECT_EQ(countKind(lead, OpKind::LayerNormalization), 0);
}

TEST(FuseSoftmax, SpelledOutSoftmaxBecomesOneNode) {
  for (bool shift : {true, false}) {
    Graph before = softmaxPattern(shift);
    Graph g = softmaxPattern(shift);
    EXPECT_TRUE(runPass(createFuseSoftmaxPass(), g));
    ASSERT_EQ(g.nodes().size(), 1u) << printGraph(g);
    EXPECT_EQ(g.nodes()[0]->kind(), OpKind::Softmax);
    EXPECT_EQ(g.nodes()[0]->attrs<SoftmaxAttrs>().axes, std::vector<int64_t>{1});
    EXPECT_EQ(g.outputs()[0]->name(), "div");
    std::mt19937 r(2);
    expectSameResults(before, g, {randomTensor({2, 5, 3}, r)}, 1e-6);
  }
  // Max over axis 1 but sum over axis 2: a softmax over axis 2 of x - max, the shift stays.
  Graph before = softmaxPattern(true, 2);
  Graph mixed = softmaxPattern(true, 2);
  EXPECT_TRUE(runPass(createFuseSoftmaxPass(), mixed));
  EXPECT_EQ(countKind(mixed, OpKind::ReduceMax), 1);
  ASSERT_EQ(countKind(mixed, OpKind::Softmax), 1);
  EXPECT_EQ(mixed.nodes().back()->attrs<SoftmaxAttrs>().axes, std::vector<int64_t>{2});
  std::mt19937 r(8);
  expectSameResults(before, mixed, {randomTensor({2, 5, 3}, r)}, 1e-6);
}
