// IR core: types, tensors, graph construction, verifier and printer.
#include "cpu/runtime/triad_scalar.h"
#include "ir/Graph.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Linear.h"
#include "tests/unit/Golden.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace triad;
using namespace triad::ir;

TEST(Types, NamesRoundTrip) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::I8, DType::U8, DType::Bool})
    EXPECT_EQ(dtypeFromName(dtypeName(t)), t);
  TensorType fx{DType::Fixed, {64}, FixedSpec{16, 6, true}};
  EXPECT_EQ(typeToString(fx), "fixed<16,6>[64]");
  EXPECT_EQ(fx.fixed->fracBits(), 10);
}

namespace {

// x[2,3] -> Gemm(W[4,3], b[4], transB) -> Relu -> y[2,4]
Graph tinyMlp() {
  Graph g;
  g.name = "tiny_mlp";
  g.opset = 17;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 3}, {}});
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i) * 0.5f - 2.0f;
  Value* W = g.addConstant("fc.weight", Tensor::fromVector<float>({4, 3}, w));
  Value* b = g.addConstant("fc.bias", Tensor::fromVector<float>({4}, {0.5f, -0.5f, 1, 0}));
  auto attrs = std::make_shared<GemmAttrs>();
  attrs->transB = true;
  Node* gemm = g.addNode(OpKind::Gemm, "/fc/Gemm", {x, W, b}, attrs, {"h"},
                         {TensorType{DType::F32, {2, 4}, {}}});
  Node* relu = g.addNode(OpKind::Relu, "/relu/Relu", {gemm->output(0)}, nullptr, {"y"},
                         {TensorType{DType::F32, {2, 4}, {}}});
  g.addOutput(relu->output(0));
  return g;
}

} // namespace

TEST(Verifier, AcceptsWellFormedGraph) {
  EXPECT_TRUE(verify(tinyMlp()).empty());
}

TEST(Verifier, ReportsWrongOutputType) {
  Graph g = tinyMlp();
  g.nodes()[1]->output(0)->setType(TensorType{DType::F32, {2, 5}, {}});
  auto problems = verify(g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("node '/relu/Relu' (Relu): output 'y' has type f32[2,5], the shape "
                             "rule says f32[2,4]"),
            std::string::npos)
      << problems[0];
}

TEST(Verifier, ReportsDanglingValueAfterRemovingItsProducer) {
  Graph g = tinyMlp();
  g.removeNodes([](const Node& n) { return n.kind() == OpKind::Gemm; });
  auto problems = verify(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("'h' is used before it is defined (dangling: no producer)"),
            std::string::npos)
      << problems[0];
  EXPECT_THROW(verifyOrThrow(g), Error);
}

TEST(Verifier, ReportsBadAttributes) {
  Graph g;
  g.name = "bad";
  Value* a = g.addInput("a", TensorType{DType::F32, {2, 3}, {}});
  Value* b = g.addInput("b", TensorType{DType::F32, {2, 3}, {}});
  // Gemm of [2,3] x [2,3] without transB: inner dimensions differ.
  Node* n = g.addNode(OpKind::Gemm, "g", {a, b}, std::make_shared<GemmAttrs>(), {"c"},
                      {TensorType{DType::F32, {2, 3}, {}}});
  g.addOutput(n->output(0));
  auto problems = verify(g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("inner dimensions differ"), std::string::npos) << problems[0];
}

TEST(Printer, GoldenTextForm) {
  triad::testing::expectGolden(printGraph(tinyMlp()), "tiny_mlp.ir");
}

TEST(Printer, DotNamesLayersAndShapes) {
  std::string dot = toDot(tinyMlp());
  EXPECT_NE(dot.find("digraph \"tiny_mlp\""), std::string::npos);
  EXPECT_NE(dot.find("Gemm\\n/fc/Gemm\\n16 params"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"f32[2,4]\"]"), std::string::npos) << dot;
}

TEST(Interpreter, RunsAndChecksInputs) {
  Graph g = tinyMlp();
  Interpreter interp(g);
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, 0, 0, 0, 1, 1});
  auto out = interp.run(std::vector<Tensor>{x});
  ASSERT_EQ(out.size(), 1u);
  // Row 0: W[:,0] + b = (-2+0.5, -0.5-0.5, 1+1, 2.5+0) -> relu -> (0, 0, 2, 2.5)
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[2], 2.0f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[3], 2.5f);
  auto all = interp.runAll(std::vector<Tensor>{x});
  EXPECT_FLOAT_EQ(all[size_t(g.findValue("h")->id())].data<float>()[0], -1.5f);

  Tensor wrong = Tensor::fromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  try {
    interp.run(std::vector<Tensor>{wrong});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("input 'x' expects f32[2,3], got f32[3,2]"),
              std::string::npos);
  }
}

TEST(Tensor, HalfConversions) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);           // rounds up to infinity
  EXPECT_EQ(Half(5.9604645e-08f).bits, 0x0001);     // smallest subnormal
  EXPECT_EQ(Half(1.0f + 1.0f / 2048).bits, 0x3c00); // tie rounds to even
  EXPECT_EQ(Half(1.0f + 3.0f / 2048).bits, 0x3c02);
  EXPECT_TRUE(std::isnan(float(Half(std::nanf("")))));
  for (uint32_t b = 0; b < 0x7c00; b += 7) { // every finite positive half round-trips
    Half h;
    h.bits = uint16_t(b);
    EXPECT_EQ(Half(float(h)).bits, b);
  }
}

TEST(Tensor, CastSemantics) {
  Tensor f = Tensor::fromVector<float>({4}, {-1.7f, 2.5f, 0.0f, 3.9f});
  Tensor i = f.castTo(DType::I32);
  EXPECT_EQ(std::vector<int32_t>(i.values<int32_t>().begin(), i.values<int32_t>().end()),
            (std::vector<int32_t>{-1, 2, 0, 3})); // truncation toward zero
  Tensor b = f.castTo(DType::Bool);
  EXPECT_EQ(b.getInt(0), 1);
  EXPECT_EQ(b.getInt(2), 0);
  EXPECT_EQ(f.reshaped({2, 2}).shape(), (Shape{2, 2}));
}

// Real -> integer casts out of range: truncate, wrap modulo 2^64, keep the low bits; NaN and
// infinities give 0. Generated code (cpu/runtime/triad_scalar.h) computes the same.
TEST(Tensor, CastRealToIntegerWrapsOutOfRange) {
  std::vector<double> vals = {0.0,     -0.9,    255.9, 256.0, 300.7, -1.0,     -129.5,
                              65536.0, 1e10,    -1e10, 3e9,   -3e9,  9.3e18,   -9.3e18,
                              1.9e19,  -1.9e19, 1e30,  -1e30, NAN,   INFINITY, -INFINITY};
  Tensor d = Tensor::fromVector<double>({int64_t(vals.size())}, vals);
  auto check = [&](DType to, auto tag) {
    using T = decltype(tag);
    Tensor got = d.castTo(to);
    for (size_t i = 0; i < vals.size(); ++i)
      EXPECT_EQ(got.data<T>()[i], triad_rt::cast_to_int<T>(vals[i]))
          << dtypeName(to) << " of " << vals[i];
  };
  check(DType::I8, int8_t{});
  check(DType::U8, uint8_t{});
  check(DType::I16, int16_t{});
  check(DType::U16, uint16_t{});
  check(DType::I32, int32_t{});
  check(DType::U32, uint32_t{});
  check(DType::I64, int64_t{});
  check(DType::U64, uint64_t{});
  Tensor u8 = d.castTo(DType::U8);
  EXPECT_EQ(u8.data<uint8_t>()[3], 0);   // 256 wraps to 0
  EXPECT_EQ(u8.data<uint8_t>()[4], 44);  // 300 -> 300 - 256
  EXPECT_EQ(u8.data<uint8_t>()[5], 255); // -1 -> 255
  EXPECT_EQ(u8.data<uint8_t>()[18], 0);  // NaN
  Tensor i32 = d.castTo(DType::I32);
  EXPECT_EQ(i32.data<int32_t>()[10], int32_t(uint32_t(3000000000u))); // 3e9 wraps negative
}

TEST(OpTable, EveryListedOpIsRegisteredWithItsOnnxName) {
  // Every op kind in ir/Ops.def has a definition, found under its ONNX name.
  for (size_t k = 0; k < kNumOpKinds; ++k) {
    const OpDef* d = findOp(OpKind(k));
    ASSERT_NE(d, nullptr) << opKindName(OpKind(k)) << " is listed in Ops.def but not registered";
    EXPECT_EQ(findOnnxOp(d->domain, d->onnxName), d);
    if (d->domain.empty()) {
      EXPECT_EQ(findOnnxOp("ai.onnx", d->onnxName), d);
    }
  }
  EXPECT_EQ(findOnnxOp("com.example", "Relu"), nullptr);
  // QONNX's ops live in their domain (and its FINN / Brevitas aliases), not in the default one.
  EXPECT_EQ(findOnnxOp("qonnx.custom_op.general", "Quant"), findOp(OpKind::Quant));
  EXPECT_EQ(findOnnxOp("finn.custom_op.general", "Quant"), findOp(OpKind::Quant));
  EXPECT_EQ(findOnnxOp("onnx.brevitas", "Trunc"), findOp(OpKind::Trunc));
  EXPECT_EQ(findOnnxOp("", "Quant"), nullptr);
  EXPECT_EQ(findOnnxOp("qonnx.custom_op.general", "Relu"), nullptr);
}

TEST(Graph, UseListsFollowEveryRewiring) {
  Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {4}, {}});
  Value* y = g.addInput("y", TensorType{DType::F32, {4}, {}});
  TensorType t{DType::F32, {4}, {}};
  Node* add = g.addNode(OpKind::Add, "add", {x, x}, nullptr, {"s"}, {t});
  Node* relu = g.addNode(OpKind::Relu, "relu", {add->output(0)}, nullptr, {"r"}, {t});
  g.addOutput(relu->output(0));
  EXPECT_EQ(x->users().size(), 2u); // once per input slot
  g.replaceAllUses(x, y);
  EXPECT_TRUE(x->users().empty());
  EXPECT_EQ(y->users().size(), 2u);
  EXPECT_EQ(add->input(0), y);
  EXPECT_EQ(add->input(1), y);
  relu->setInput(0, y);
  EXPECT_TRUE(add->output(0)->users().empty());
  EXPECT_EQ(y->users().size(), 3u);
  g.removeNodes([&](const Node& n) { return &n == add; });
  ASSERT_EQ(y->users().size(), 1u);
  EXPECT_EQ(y->users()[0], relu);
}

TEST(Graph, ReplacingUsesOfALongChainIsLinear) {
  // 200,000 Identity nodes rewired one by one: each replacement touches one user, not every node
  // (the quadratic version took minutes).
  Graph g;
  TensorType t{DType::F32, {1}, {}};
  Value* v = g.addInput("x", t);
  std::vector<Node*> chain;
  for (int i = 0; i < 200000; ++i) {
    chain.push_back(g.addNode(OpKind::Identity, fmt::format("id{}", i), {v}, nullptr,
                              {fmt::format("t{}", i)}, {t}));
    v = chain.back()->output(0);
  }
  g.addOutput(v);
  auto start = std::chrono::steady_clock::now();
  for (Node* n : chain)
    g.replaceAllUses(n->output(0), n->input(0));
  g.removeNodes([](const Node&) { return true; });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(g.outputs()[0], g.inputs()[0]);
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_LT(s, 5.0);
}

TEST(Diagnostics, AssertionsNameRepositoryPathsNotTheBuildMachines) {
  try {
    TRIAD_ASSERT(1 + 1 == 3, "arithmetic");
    FAIL() << "no assertion";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(msg.find("at tests/unit/ir_test.cpp:"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(TRIAD_SOURCE_DIR), std::string::npos) << msg;
  }
}

TEST(Tensor, SizesAreCheckedBeforeAllocating) {
  uint64_t saved = memoryLimit();
  auto kindOf = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  EXPECT_EQ(kindOf([] {
              Tensor(DType::F32, {int64_t(1) << 40, int64_t(1) << 40});
            }),
            ErrorKind::Resource); // the element count overflows
  EXPECT_EQ(kindOf([] { Tensor(DType::F32, {4, -1}); }), ErrorKind::InvalidModel);
  // A zero dimension after two whose product overflows int64 (but not uint64): no elements,
  // counted without overflowing on the way (a fuzz finding: UBSan in numElements).
  Tensor empty(DType::F32, {279162181266, 38275487, 0});
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_EQ(empty.byteSize(), 0u);
  EXPECT_EQ(kindOf([] { return numElements({279162181266, 38275487, 3}); }), ErrorKind::Resource);
  EXPECT_EQ(kindOf([] { Tensor(DType::U8, {279162181266, 38275487}); }), ErrorKind::Resource);
  setMemoryLimit(1 << 20);
  EXPECT_EQ(kindOf([] { Tensor(DType::F32, {512, 1024}); }), ErrorKind::Resource); // 2 MiB
  EXPECT_EQ(Tensor(DType::F32, {256, 1024}).byteSize(), size_t(1) << 20);
  // The interpreter's working set: x, two live intermediates of 256 KiB each, the output.
  Graph g;
  TensorType t{DType::F32, {256, 256}, {}};
  Value* x = g.addInput("x", t);
  Node* a = g.addNode(OpKind::Relu, "a", {x}, nullptr, {"a"}, {t});
  Node* b = g.addNode(OpKind::Relu, "b", {a->output(0)}, nullptr, {"b"}, {t});
  Node* c = g.addNode(OpKind::Add, "c", {a->output(0), b->output(0)}, nullptr, {"c"}, {t});
  g.addOutput(c->output(0));
  WorkingSet ws = interpreterWorkingSet(g);
  EXPECT_EQ(ws.bytes, uint64_t(4) << 18);
  EXPECT_EQ(ws.peakNode, c);
  setMemoryLimit((uint64_t(4) << 18) - 1);
  try {
    checkWorkingSet(g);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Resource);
    EXPECT_NE(std::string(e.what()).find("node 'c' (Add)"), std::string::npos) << e.what();
  }
  setMemoryLimit(saved);
}
