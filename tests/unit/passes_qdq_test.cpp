// fuse-qdq (ir/passes/FuseQdq.cpp): DequantizeLinear -> Conv/Gemm/MatMul -> QuantizeLinear into
// the integer ops, on QDQ models built with the ONNX protobuf API and imported (the importer
// keeps the integers of folded weights). Patterns that must fuse, with the interpreter's
// quantized outputs before and after compared level by level, and patterns that must not.
#include "frontend/OnnxImporter.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <random>

using namespace triad;
using namespace triad::ir;

namespace {

template <typename T>
void initializer(onnx::GraphProto* g, const std::string& name, int elemType,
                 std::vector<int64_t> dims, const std::vector<T>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(elemType);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                      std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0] + "/" + op);
  for (auto& i : in)
    n->add_input(i);
  for (auto& o : out)
    n->add_output(o);
  return n;
}

void intAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void floatAttr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void valueInfo(onnx::ValueInfoProto* v, const std::string& name, int elemType,
               std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  for (int64_t d : dims)
    tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// One QDQ layer: x -> Q -> DQ -> op(W, B) [-> Relu] -> Q -> DQ -> y, and the variations the pass
/// must refuse.
struct Layer {
  std::string op = "Conv"; // Conv, Gemm, MatMul
  bool perChannel = true;
  bool bias = true;
  bool transB = true;            // Gemm
  float alpha = 1.0f;            // Gemm
  float biasScaleFactor = 1.0f;  // != 1: a bias scale that is not s_x * s_w
  bool zeroBias = false;         // every bias integer 0
  bool weightsAtRunTime = false; // W dequantized from a graph input (not a constant)
  bool relu = false;
  bool int32Input = false; // x dequantized from int32 (not an 8-bit tensor)
  bool convOutputAlsoGraphOutput = false;
  bool dqInputAlsoGraphOutput = false;
  bool uint8Activations = false;
};

constexpr int64_t kN = 3, kC = 4, kM = 5, kH = 6, kK = 7;

onnx::ModelProto build(const Layer& l) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("qdq");
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> w8(-127, 127);
  bool conv = l.op == "Conv";
  std::vector<int64_t> xShape =
      conv ? std::vector<int64_t>{kN, kC, kH, kH} : std::vector<int64_t>{kN, kK};
  valueInfo(g->add_input(), "x", onnx::TensorProto::FLOAT, xShape);
  int act = l.uint8Activations ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  const float sx = 0.03125f, sy = 0.0625f;
  initializer<float>(g, "sx", onnx::TensorProto::FLOAT, {}, {sx});
  initializer<float>(g, "sy", onnx::TensorProto::FLOAT, {}, {sy});
  if (l.uint8Activations) {
    initializer<uint8_t>(g, "zx", act, {}, {128});
    initializer<uint8_t>(g, "zy", act, {}, {120});
  } else {
    initializer<int8_t>(g, "zx", act, {}, {3});
    initializer<int8_t>(g, "zy", act, {}, {-2});
  }
  if (l.int32Input) {
    initializer<int32_t>(g, "zx32", onnx::TensorProto::INT32, {}, {0});
    auto* c = node(g, "Cast", {"x"}, {"x32"});
    intAttr(c, "to", onnx::TensorProto::INT32);
    node(g, "DequantizeLinear", {"x32", "sx", "zx32"}, {"xd"});
  } else {
    node(g, "QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
    node(g, "DequantizeLinear", {"xq", "sx", "zx"}, {"xd"});
  }
  // Weights: Conv W[M, C, 3, 3]; Gemm W[N, K] (transB) or [K, N]; MatMul W[K, N].
  int64_t out = kM;
  std::vector<int64_t> wShape = conv                         ? std::vector<int64_t>{kM, kC, 3, 3}
                                : l.op == "Gemm" && l.transB ? std::vector<int64_t>{kM, kK}
                                                             : std::vector<int64_t>{kK, kM};
  int64_t axis = conv || (l.op == "Gemm" && l.transB) ? 0 : 1;
  int64_t wCount = 1;
  for (int64_t d : wShape)
    wCount *= d;
  std::vector<int8_t> wq(static_cast<size_t>(wCount));
  for (auto& v : wq)
    v = int8_t(w8(rng));
  std::vector<float> sw(static_cast<size_t>(l.perChannel ? out : 1));
  for (size_t i = 0; i < sw.size(); ++i)
    sw[i] = 0.0123f * float(i + 1);
  std::vector<int64_t> sShape = l.perChannel ? std::vector<int64_t>{out} : std::vector<int64_t>{};
  initializer<float>(g, "sw", onnx::TensorProto::FLOAT, sShape, sw);
  initializer<int8_t>(g, "zw", onnx::TensorProto::INT8, sShape, std::vector<int8_t>(sw.size()));
  if (l.weightsAtRunTime) {
    valueInfo(g->add_input(), "wq", onnx::TensorProto::INT8, wShape);
  } else {
    initializer<int8_t>(g, "wq", onnx::TensorProto::INT8, wShape, wq);
  }
  auto* dqw = node(g, "DequantizeLinear", {"wq", "sw", "zw"}, {"wd"});
  if (l.perChannel) intAttr(dqw, "axis", axis);
  std::vector<std::string> opIn = {"xd", "wd"};
  if (l.bias) {
    std::vector<int32_t> bq(static_cast<size_t>(out));
    for (size_t i = 0; i < bq.size(); ++i)
      bq[i] = l.zeroBias ? 0 : int32_t(i * 37) - 60;
    std::vector<float> sb(sw.size());
    for (size_t i = 0; i < sb.size(); ++i)
      sb[i] = sx * sw[i] * l.biasScaleFactor;
    initializer<int32_t>(g, "bq", onnx::TensorProto::INT32, {out}, bq);
    initializer<float>(g, "sb", onnx::TensorProto::FLOAT, sShape, sb);
    initializer<int32_t>(g, "zb", onnx::TensorProto::INT32, sShape,
                         std::vector<int32_t>(sb.size()));
    auto* dqb = node(g, "DequantizeLinear", {"bq", "sb", "zb"}, {"bd"});
    if (l.perChannel) intAttr(dqb, "axis", 0);
    opIn.push_back("bd");
  }
  auto* o = node(g, l.op, opIn, {"y"});
  if (conv) {
    auto* a = o->add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i)
      a->add_ints(1);
  }
  if (l.op == "Gemm") {
    intAttr(o, "transB", l.transB ? 1 : 0);
    floatAttr(o, "alpha", l.alpha);
  }
  std::string last = "y";
  if (l.relu) {
    node(g, "Relu", {"y"}, {"r"});
    last = "r";
  }
  node(g, "QuantizeLinear", {last, "sy", "zy"}, {"yq"});
  node(g, "DequantizeLinear", {"yq", "sy", "zy"}, {"out"});
  std::vector<int64_t> yShape =
      conv ? std::vector<int64_t>{kN, kM, kH, kH} : std::vector<int64_t>{kN, kM};
  valueInfo(g->add_output(), "out", onnx::TensorProto::FLOAT, yShape);
  if (l.convOutputAlsoGraphOutput)
    valueInfo(g->add_output(), "y", onnx::TensorProto::FLOAT, yShape);
  if (l.dqInputAlsoGraphOutput) valueInfo(g->add_output(), "xd", onnx::TensorProto::FLOAT, xShape);
  return m;
}

Graph import(const Layer& l) {
  frontend::ImportOptions o;
  o.onnxShapeCheck = false;
  Graph g = frontend::importOnnxBytes(build(l).SerializeAsString(), ".", "qdq.onnx", o).graph;
  defaultPipeline().run(g);
  return g;
}

int countKind(const Graph& g, OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(),
                           [&](const auto& n) { return n->kind() == k; }));
}

/// Runs the pass on a copy; the graph verifies after it. Returns the copy.
Graph fused(const Graph& g, bool expectChange) {
  Graph c = g.clone();
  EXPECT_EQ(createFuseQdqPass()->run(c), expectChange) << printGraph(c);
  auto problems = verify(c);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front()) << "\n"
                                << printGraph(c);
  return c;
}

/// The interpreter's outputs of both graphs on random inputs: every quantized level equal but
/// for float rounding ties (at most one level apart, and rare). Returns the levels that differ.
int64_t compare(const Graph& a, const Graph& b, const Layer& l) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<int64_t> xShape =
      l.op == "Conv" ? std::vector<int64_t>{kN, kC, kH, kH} : std::vector<int64_t>{kN, kK};
  int64_t differ = 0, total = 0;
  for (int trial = 0; trial < 20; ++trial) {
    Tensor x(TensorType{DType::F32, xShape, {}});
    for (int64_t i = 0; i < x.numElements(); ++i)
      reinterpret_cast<float*>(x.raw())[i] = d(rng);
    auto ya = Interpreter(a).run({&x, 1});
    auto yb = Interpreter(b).run({&x, 1});
    for (int64_t i = 0; i < ya[0].numElements(); ++i) {
      double levels = std::abs(ya[0].getDouble(i) - yb[0].getDouble(i)) / 0.0625;
      EXPECT_LE(levels, 1.0 + 1e-6) << "element " << i;
      differ += levels > 0.5;
      ++total;
    }
  }
  EXPECT_LE(differ * 100, total) << differ << " of " << total << " differ";
  return differ;
}

} // namespace

TEST(FuseQdq, ConvPerChannelWithBiasBecomesQLinearConv) {
  Layer l;
  Graph g = import(l);
  ASSERT_EQ(countKind(g, OpKind::Conv), 1) << printGraph(g);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::QLinearConv), 1) << printGraph(f);
  EXPECT_EQ(countKind(f, OpKind::Conv), 0);
  compare(g, f, l);
}

TEST(FuseQdq, ConvPerTensorUint8ActivationsWithoutBias) {
  Layer l;
  l.perChannel = false;
  l.bias = false;
  l.uint8Activations = true;
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::QLinearConv), 1) << printGraph(f);
  compare(g, f, l);
}

TEST(FuseQdq, GemmTransBPerChannelBecomesMatMulIntegerAndRequantize) {
  Layer l;
  l.op = "Gemm";
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::MatMulInteger), 1) << printGraph(f);
  EXPECT_EQ(countKind(f, OpKind::Gemm), 0);
  compare(g, f, l);
}

TEST(FuseQdq, GemmWithoutTransBPerTensor) {
  Layer l;
  l.op = "Gemm";
  l.transB = false;
  l.perChannel = false;
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::MatMulInteger), 1) << printGraph(f);
  compare(g, f, l);
}

TEST(FuseQdq, MatMulBecomesQLinearMatMul) {
  Layer l;
  l.op = "MatMul";
  l.bias = false;
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::QLinearMatMul), 1) << printGraph(f);
  compare(g, f, l);
}

TEST(FuseQdq, InputDequantizeWithOtherReadersStaysForThem) {
  Layer l;
  l.dqInputAlsoGraphOutput = true;
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::QLinearConv), 1);
  EXPECT_EQ(countKind(f, OpKind::DequantizeLinear), countKind(g, OpKind::DequantizeLinear));
  compare(g, f, l);
}

TEST(FuseQdq, LeavesMismatchedBiasScaleAlone) {
  Layer l;
  l.biasScaleFactor = 1.5f;
  fused(import(l), false);
  l.op = "Gemm";
  fused(import(l), false);
}

// A zero bias adds nothing whatever its scale (CSE merges the zero biases of different layers,
// keeping one layer's scale: MobileNetV2's expand convolutions).
TEST(FuseQdq, ZeroBiasFusesWhateverItsScale) {
  Layer l;
  l.biasScaleFactor = 1.5f;
  l.zeroBias = true;
  Graph g = import(l);
  Graph f = fused(g, true);
  EXPECT_EQ(countKind(f, OpKind::QLinearConv), 1) << printGraph(f);
  compare(g, f, l);
}

TEST(FuseQdq, LeavesRunTimeWeightsAlone) {
  Layer l;
  l.weightsAtRunTime = true;
  fused(import(l), false);
}

TEST(FuseQdq, LeavesInt32InputAlone) {
  Layer l;
  l.int32Input = true;
  fused(import(l), false);
}

TEST(FuseQdq, LeavesFloatResultWithOtherReadersAlone) {
  Layer l;
  l.convOutputAlsoGraphOutput = true;
  fused(import(l), false);
}

TEST(FuseQdq, ReluBetweenBecomesAClipOfTheQuantizedResult) {
  for (const char* op : {"Conv", "Gemm", "MatMul"}) {
    SCOPED_TRACE(op);
    Layer l;
    l.op = op;
    l.bias = l.op != "MatMul";
    l.relu = true;
    Graph g = import(l);
    Graph f = fused(g, true);
    EXPECT_EQ(countKind(f, OpKind::Relu), 0) << printGraph(f);
    ASSERT_EQ(countKind(f, OpKind::Clip), 1) << printGraph(f);
    // Q(0) = the zero point (-2) is the lower bound; the upper one is int8's 127.
    for (const auto& n : f.nodes())
      if (n->kind() == OpKind::Clip) {
        EXPECT_EQ(n->input(1)->constant().getInt(0), -2);
        EXPECT_EQ(n->input(2)->constant().getInt(0), 127);
      }
    compare(g, f, l);
  }
}

TEST(FuseQdq, LeavesScaledGemmAlone) {
  Layer l;
  l.op = "Gemm";
  l.alpha = 2.0f;
  fused(import(l), false);
}

TEST(FuseQdq, GraphCloneKeepsTheDequantizedIntegers) {
  Graph g = import(Layer{});
  Graph c = g.clone();
  size_t with = 0;
  for (Value* v : c.constants())
    with += v->dequantizedFrom() != nullptr;
  EXPECT_GE(with, 2u); // the weights and the bias
  EXPECT_EQ(printGraph(c), printGraph(g));
}
