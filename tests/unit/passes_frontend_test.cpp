// The frontend side of the passes work: ONNX model-local functions inlined at import, and the
// import-time constant folding (shared with the constant-fold pass) and its size guard. Models
// are built with the ONNX protobuf API.
#include "OpTestUtil.h"
#include "frontend/OnnxImporter.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/ops/Activation.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace triad;

using triad::optest::expectError;

namespace {

onnx::ValueInfoProto floatInfo(const std::string& name, std::vector<int64_t> dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    tt->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

template <typename Container>
onnx::NodeProto* addNode(Container* c, const std::string& op, const std::string& name,
                         std::vector<std::string> inputs, std::vector<std::string> outputs,
                         const std::string& domain = "") {
  auto* n = c->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_domain(domain);
  for (auto& i : inputs)
    n->add_input(i);
  for (auto& o : outputs)
    n->add_output(o);
  return n;
}

onnx::AttributeProto* floatAttr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return a;
}

onnx::AttributeProto* refAttr(onnx::NodeProto* n, const std::string& name, const std::string& ref) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_ref_attr_name(ref);
  return a;
}

const std::string kDomain = "triad.test";

onnx::ModelProto emptyModel(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("triad-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* local = m.add_opset_import();
  local->set_domain(kDomain);
  local->set_version(1);
  m.mutable_graph()->set_name("functions");
  return m;
}

// function AddLeaky(a, b) -> y {alpha}:  s = Add(a, b); y = LeakyRelu<alpha = @alpha>(s)
onnx::FunctionProto* addLeakyFunction(onnx::ModelProto& m, int opset = 17) {
  auto* f = m.add_functions();
  f->set_name("AddLeaky");
  f->set_domain(kDomain);
  f->add_input("a");
  f->add_input("b");
  f->add_output("y");
  f->add_attribute("alpha");
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  addNode(f, "Add", "add", {"a", "b"}, {"s"});
  refAttr(addNode(f, "LeakyRelu", "", {"s"}, {"y"}), "alpha", "alpha");
  return f;
}

// x[2,3] -> AddLeaky(x, c){alpha=0.5} "block1" -> h -> AddLeaky(h, c) "block2" (alpha unset) -> y
onnx::ModelProto twoCallsModel() {
  onnx::ModelProto m = emptyModel();
  addLeakyFunction(m);
  auto* g = m.mutable_graph();
  *g->add_input() = floatInfo("x", {2, 3});
  auto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(3);
  for (float v : {-1.0f, 0.0f, 1.0f})
    c->add_float_data(v);
  floatAttr(addNode(g, "AddLeaky", "block1", {"x", "c"}, {"h"}, kDomain), "alpha", 0.5f);
  addNode(g, "AddLeaky", "block2", {"h", "c"}, {"y"}, kDomain);
  *g->add_output() = floatInfo("y", {2, 3});
  return m;
}

frontend::ImportResult importModel(const onnx::ModelProto& m) {
  return frontend::importOnnxBytes(m.SerializeAsString(), ".", "functions.onnx");
}

} // namespace

TEST(OnnxFunctions, CallsAreInlinedWithPrefixedNamesAndResolvedAttributes) {
  auto r = importModel(twoCallsModel());
  const ir::Graph& g = r.graph;
  ASSERT_EQ(g.nodes().size(), 4u) << ir::printGraph(g);
  std::vector<std::string> names;
  for (const auto& n : g.nodes())
    names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"block1/add", "block1/LeakyRelu_1", "block2/add",
                                             "block2/LeakyRelu_1"}));
  // Formal outputs are the call's values; internal values are prefixed by the call.
  EXPECT_NE(g.findValue("block1/s"), nullptr);
  EXPECT_NE(g.findValue("block2/s"), nullptr);
  EXPECT_EQ(g.findValue("h")->producer()->name(), "block1/LeakyRelu_1");
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  // alpha: from block1's attribute; block2 does not set it, so LeakyRelu's default (0.01).
  EXPECT_FLOAT_EQ(g.nodes()[1]->attrs<ir::AlphaAttrs>().alpha, 0.5f);
  EXPECT_FLOAT_EQ(g.nodes()[3]->attrs<ir::AlphaAttrs>().alpha, 0.01f);

  ir::Tensor x = ir::Tensor::fromVector<float>({2, 3}, {1, 2, 3, -4, -5, -6});
  auto out = ir::Interpreter(g).run(std::vector<ir::Tensor>{x});
  auto leaky = [](float v, float a) { return v < 0 ? a * v : v; };
  std::vector<float> c{-1, 0, 1};
  for (int i = 0; i < 6; ++i) {
    float h = leaky(x.data<float>()[i] + c[size_t(i % 3)], 0.5f);
    EXPECT_FLOAT_EQ(out[0].data<float>()[i], leaky(h + c[size_t(i % 3)], 0.01f)) << i;
  }
}

TEST(OnnxFunctions, NestedCallsAndUnusedOptionalOutputs) {
  // function Twice(p) -> q: t = AddLeaky<alpha=@k>(p, p); q = AddLeaky(t, t) (the inner calls
  // are inlined too, their names nest: "outer/first/add").
  onnx::ModelProto m = emptyModel();
  addLeakyFunction(m);
  auto* f = m.add_functions();
  f->set_name("Twice");
  f->set_domain(kDomain);
  f->add_input("p");
  f->add_output("q");
  f->add_attribute("k");
  refAttr(addNode(f, "AddLeaky", "first", {"p", "p"}, {"t"}, kDomain), "alpha", "k");
  addNode(f, "AddLeaky", "second", {"t", "t"}, {"q"}, kDomain);
  auto* g = m.mutable_graph();
  *g->add_input() = floatInfo("x", {4});
  floatAttr(addNode(g, "Twice", "outer", {"x"}, {"y"}, kDomain), "k", 0.25f);
  *g->add_output() = floatInfo("y", {4});
  auto r = importModel(m);
  ASSERT_EQ(r.graph.nodes().size(), 4u) << ir::printGraph(r.graph);
  EXPECT_EQ(r.graph.nodes()[0]->name(), "outer/first/add");
  EXPECT_NE(r.graph.findValue("outer/t"), nullptr);
  EXPECT_NE(r.graph.findValue("outer/first/s"), nullptr);
  EXPECT_FLOAT_EQ(r.graph.nodes()[1]->attrs<ir::AlphaAttrs>().alpha, 0.25f);
  auto out = ir::Interpreter(r.graph).run(
      std::vector<ir::Tensor>{ir::Tensor::fromVector<float>({4}, {-1, 1, -2, 2})});
  // x=-1: t = 0.25 * -2 = -0.5; q = 0.01 * -1 = -0.01. x=1: t = 2, q = 4.
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], -0.01f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 4.0f);
}

TEST(OnnxFunctions, FreshNamesAvoidExistingValues) {
  onnx::ModelProto m = twoCallsModel();
  // A graph value already called "block1/s": the inlined one becomes "block1/s.1".
  auto* g = m.mutable_graph();
  addNode(g, "Neg", "neg", {"x"}, {"block1/s"});
  *g->add_output() = floatInfo("block1/s", {2, 3});
  auto r = importModel(m);
  EXPECT_EQ(r.graph.findValue("block1/s")->producer()->name(), "neg");
  ASSERT_NE(r.graph.findValue("block1/s.1"), nullptr);
  EXPECT_EQ(r.graph.findValue("block1/s.1")->producer()->name(), "block1/add");
}

TEST(OnnxFunctions, MissingFunctionIsNamed) {
  onnx::ModelProto m = twoCallsModel();
  m.mutable_graph()->mutable_node(1)->set_op_type("AddLeakyV2");
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"functions.onnx", "node 'block2' calls function 'AddLeakyV2' of domain 'triad.test'",
               "does not define", "'AddLeaky'"});
}

TEST(OnnxFunctions, RecursionIsReportedWithTheCallChain) {
  onnx::ModelProto m = emptyModel();
  for (auto [name, callee] : {std::pair{"Ping", "Pong"}, std::pair{"Pong", "Ping"}}) {
    auto* f = m.add_functions();
    f->set_name(name);
    f->set_domain(kDomain);
    f->add_input("a");
    f->add_output("b");
    addNode(f, callee, "call", {"a"}, {"b"}, kDomain);
  }
  auto* g = m.mutable_graph();
  *g->add_input() = floatInfo("x", {2});
  addNode(g, "Ping", "start", {"x"}, {"y"}, kDomain);
  *g->add_output() = floatInfo("y", {2});
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'start/call/call' calls function 'Ping' (domain 'triad.test') recursively",
               "'Ping' (domain 'triad.test') -> 'Pong' (domain 'triad.test') -> 'Ping'"});
}

TEST(OnnxFunctions, BadCallsAndBodiesAreNamed) {
  {
    onnx::ModelProto m = twoCallsModel();
    floatAttr(m.mutable_graph()->mutable_node(1), "beta", 1.0f);
    expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
                {"node 'block2' (call of function 'AddLeaky'", "attribute 'beta'", "'alpha'"});
  }
  {
    onnx::ModelProto m = twoCallsModel();
    m.mutable_functions(0)->mutable_node(0)->set_input(1, "outer_value");
    expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
                {"node 'block1'", "body node 'block1/add' (Add) reads 'outer_value'"});
  }
  {
    onnx::ModelProto m = twoCallsModel();
    m.mutable_graph()->mutable_node(0)->add_input("c");
    expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
                {"node 'block1'", "has 3 inputs and 1 outputs, the function takes 2 and 1"});
  }
  {
    onnx::ModelProto m = emptyModel(17);
    addLeakyFunction(m, 15);
    expectError([&] { importModel(m); }, ErrorKind::Unsupported,
                {"function 'AddLeaky' (domain 'triad.test') imports ONNX opset 15",
                 "model imports opset 17"});
  }
  {
    onnx::ModelProto m = twoCallsModel();
    *m.add_functions() = m.functions(0);
    expectError([&] { importModel(m); }, ErrorKind::InvalidModel, {"defined twice"});
  }
}

TEST(ImportFolding, SizeGuardLeavesLargeGeneratedTensorsToRunTime) {
  // y = x + ConstantOfShape([2048, 1024]) and z = x2 + ConstantOfShape([2, 3]): the first would
  // add 8 MiB of zeros to the model and stays a node; the second folds.
  onnx::ModelProto m = emptyModel();
  auto* g = m.mutable_graph();
  *g->add_input() = floatInfo("x", {2048, 1024});
  *g->add_input() = floatInfo("x2", {2, 3});
  for (auto [shapeName, dims] : {std::pair{"big_shape", std::vector<int64_t>{2048, 1024}},
                                 std::pair{"small_shape", std::vector<int64_t>{2, 3}}}) {
    auto* t = g->add_initializer();
    t->set_name(shapeName);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(2);
    for (int64_t d : dims)
      t->add_int64_data(d);
  }
  addNode(g, "ConstantOfShape", "big", {"big_shape"}, {"zeros_big"});
  addNode(g, "ConstantOfShape", "small", {"small_shape"}, {"zeros_small"});
  addNode(g, "Add", "add_big", {"x", "zeros_big"}, {"y"});
  addNode(g, "Add", "add_small", {"x2", "zeros_small"}, {"z"});
  *g->add_output() = floatInfo("y", {2048, 1024});
  *g->add_output() = floatInfo("z", {2, 3});
  auto r = importModel(m);
  std::vector<std::string> names;
  for (const auto& n : r.graph.nodes())
    names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"big", "add_big", "add_small"}));
  EXPECT_TRUE(r.graph.findValue("zeros_small")->isConstant());
  EXPECT_FALSE(r.graph.findValue("zeros_big")->isConstant());
}
