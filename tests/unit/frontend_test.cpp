// ONNX frontend: a set of broken models, each of which must give a clear error that names the
// element at fault, plus the features that make valid models import (batch, external data,
// folding). Models are built with the ONNX protobuf API so that the tests need no Python.
#include "OpTestUtil.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/OpDef.h"
#include "ir/Printer.h"
#include "tests/unit/Golden.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <random>
#include <sstream>

using namespace triad;
namespace fs = std::filesystem;

using triad::optest::expectError;

namespace {

onnx::ValueInfoProto tensorInfo(const std::string& name, int elemType,
                                std::vector<std::variant<int64_t, std::string>> dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
  return v;
}

onnx::TensorProto floatInit(const std::string& name, std::vector<int64_t> dims,
                            std::vector<float> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t.add_dims(d);
  for (float v : values)
    t.add_float_data(v);
  return t;
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, const std::string& name,
                         std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs)
    n->add_input(i);
  for (auto& o : outputs)
    n->add_output(o);
  return n;
}

// x[1,2] -> MatMul(W[2,3]) -> y[1,3]
onnx::ModelProto matmulModel(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("triad-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("mm");
  *g->add_input() = tensorInfo("x", onnx::TensorProto::FLOAT, {int64_t(1), int64_t(2)});
  *g->add_initializer() = floatInit("W", {2, 3}, {1, 2, 3, 4, 5, 6});
  addNode(g, "MatMul", "mm0", {"x", "W"}, {"y"});
  *g->add_output() = tensorInfo("y", onnx::TensorProto::FLOAT, {int64_t(1), int64_t(3)});
  return m;
}

frontend::ImportResult importModel(const onnx::ModelProto& m, const frontend::ImportOptions& o = {},
                                   const fs::path& dir = ".") {
  return frontend::importOnnxBytes(m.SerializeAsString(), dir, "test.onnx", o);
}

} // namespace

TEST(Frontend, ImportsAndRunsValidModel) {
  auto r = importModel(matmulModel());
  ASSERT_EQ(r.graph.nodes().size(), 1u);
  ir::Tensor x = ir::Tensor::fromVector<float>({1, 2}, {1, 1});
  auto out = ir::Interpreter(r.graph).run(std::vector<ir::Tensor>{x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (ir::Shape{1, 3}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 5);
  EXPECT_FLOAT_EQ(out[0].data<float>()[2], 9);
}

TEST(Frontend, MissingFileIsIoError) {
  expectError([] { frontend::importOnnxFile("/nonexistent/model.onnx"); }, ErrorKind::Io,
              {"/nonexistent/model.onnx", "does not exist"});
}

TEST(Frontend, EmptyFile) {
  expectError([] { frontend::importOnnxBytes("", ".", "empty.onnx"); }, ErrorKind::InvalidModel,
              {"empty.onnx", "empty"});
}

TEST(Frontend, TruncatedFile) {
  std::string bytes = matmulModel().SerializeAsString();
  // Every cut of the file must give an InvalidModel error, never a crash or a silent success.
  for (size_t cut = 1; cut < bytes.size(); cut += 7)
    expectError([&] { frontend::importOnnxBytes(bytes.substr(0, cut), ".", "cut.onnx"); },
                ErrorKind::InvalidModel, {"cut.onnx"});
}

TEST(Frontend, NotOnnx) {
  expectError([] { frontend::importOnnxBytes("hello, this is text\n", ".", "text.onnx"); },
              ErrorKind::InvalidModel, {"text.onnx"});
}

TEST(Frontend, UnknownOpsAreAllListed) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  addNode(g, "FrobnicateA", "fa1", {"y"}, {"z1"});
  addNode(g, "FrobnicateA", "fa2", {"y"}, {"z2"});
  addNode(g, "Wibble", "wb", {"y"}, {"z3"})->set_domain("com.example");
  expectError(
      [&] { importModel(m); }, ErrorKind::Unsupported,
      {"2 op types",
       "FrobnicateA (not an op of the ai.onnx domain of onnx 1.23.2): 2 nodes ('fa1', 'fa2')",
       "Wibble (domain 'com.example')", "'wb'"});
}

TEST(Frontend, Cycle) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  g->clear_node();
  addNode(g, "MatMul", "first", {"x", "b"}, {"a"});
  addNode(g, "MatMul", "second", {"a", "W"}, {"b"});
  addNode(g, "MatMul", "out", {"x", "W"}, {"y"});
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel, {"cycle", "'first'", "'second'"});
}

TEST(Frontend, DanglingInput) {
  auto m = matmulModel();
  m.mutable_graph()->mutable_node(0)->set_input(1, "ghost");
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'mm0' (MatMul)", "'ghost'", "not produced"});
}

TEST(Frontend, ValueProducedTwice) {
  auto m = matmulModel();
  addNode(m.mutable_graph(), "MatMul", "again", {"x", "W"}, {"y"});
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel, {"'y'", "twice", "'again'"});
}

TEST(Frontend, WrongTypes) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  g->clear_initializer();
  onnx::TensorProto w;
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::INT64);
  w.add_dims(2);
  w.add_dims(3);
  for (int i = 0; i < 6; ++i)
    w.add_int64_data(i);
  *g->add_initializer() = w;
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'mm0' (MatMul)", "element types differ", "f32", "i64"});
}

TEST(Frontend, IncompatibleShapes) {
  auto m = matmulModel();
  m.mutable_graph()->mutable_initializer(0)->CopyFrom(floatInit("W", {3, 2}, {1, 2, 3, 4, 5, 6}));
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'mm0' (MatMul)", "[1,2]", "[3,2]"});
}

TEST(Frontend, OutputNotProduced) {
  auto m = matmulModel();
  *m.mutable_graph()->add_output() = tensorInfo("nowhere", onnx::TensorProto::FLOAT, {});
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel, {"'nowhere'"});
}

TEST(Frontend, OpsetOutOfRange) {
  expectError([] { importModel(matmulModel(ir::kReviewedOnnxOpset + 1)); }, ErrorKind::Unsupported,
              {fmt::format("opset {}", ir::kReviewedOnnxOpset + 1),
               fmt::format("1 to {}", ir::kReviewedOnnxOpset), "onnx 1.23.2"});
  expectError([] { importModel(matmulModel(0)); }, ErrorKind::Unsupported, {"opset 0"});
  // MatMul is unchanged since opset 13: every newer opset selects that definition.
  for (int opset : {1, 13, 18, 19, 21, 23, 25, 28}) {
    SCOPED_TRACE(opset);
    auto r = importModel(matmulModel(opset));
    EXPECT_EQ(r.graph.opset, opset);
    auto out = ir::Interpreter(r.graph).run(
        std::vector<ir::Tensor>{ir::Tensor::fromVector<float>({1, 2}, {1, 1})});
    EXPECT_FLOAT_EQ(out[0].data<float>()[2], 9);
  }
}

TEST(Frontend, OnnxVersionHistory) {
  EXPECT_EQ(ir::onnxSchemaRelease(), "1.23.2");
  EXPECT_GE(ir::newestOnnxOpset(), ir::kReviewedOnnxOpset);
  EXPECT_EQ(ir::onnxOpVersionAt("Relu", 28), 14);
  EXPECT_EQ(ir::onnxOpVersionAt("Relu", 13), 13);
  EXPECT_EQ(ir::onnxOpVersionAt("Cast", 25), 25);
  EXPECT_EQ(ir::onnxOpVersionAt("Cast", 22), 21);
  EXPECT_EQ(ir::onnxOpVersionAt("Gelu", 19), 0);
  EXPECT_EQ(ir::onnxOpVersionAt("NoSuchOp", 19), 0);
  EXPECT_FALSE(ir::onnxOpHistory("LSTM").empty());
  // Every default-domain op Triad registers implements its newest definition up to the
  // reviewed opset, unless its entry says otherwise.
  for (const ir::OpDef* d : ir::allOps())
    if (d->domain.empty() && !ir::onnxOpHistory(d->onnxName).empty()) {
      SCOPED_TRACE(std::string(d->onnxName));
      EXPECT_EQ(ir::implementedOnnxVersion(*d),
                d->throughVersion ? d->throughVersion
                                  : ir::onnxOpVersionAt(d->onnxName, ir::kReviewedOnnxOpset));
      EXPECT_EQ(ir::onnxVersionProblem(*d, ir::kReviewedOnnxOpset), "");
    }
  // An entry that stops at an older definition refuses the opsets that select a newer one,
  // naming the op, the version selected and the newest one implemented.
  ir::OpDef relu = *ir::findOnnxOp("", "Relu");
  relu.throughVersion = 13;
  EXPECT_EQ(ir::onnxVersionProblem(relu, 13), "");
  std::string why = ir::onnxVersionProblem(relu, 14);
  for (const char* part : {"opset 14", "version 14 of Relu", "ai.onnx", "up to version 13"})
    EXPECT_NE(why.find(part), std::string::npos) << why;
  std::string early = ir::onnxVersionProblem(*ir::findOnnxOp("", "Gelu"), 18);
  EXPECT_NE(early.find("does not exist at opset 18: it was added in opset 20"), std::string::npos)
      << early;
}

TEST(Frontend, UnsupportedOpNamesItsOnnxVersion) {
  auto m = matmulModel(23);
  addNode(m.mutable_graph(), "Attention", "attn0", {"y", "y", "y"}, {"z"});
  expectError([&] { importModel(m); }, ErrorKind::Unsupported,
              {"Attention (domain ai.onnx, version 23 at opset 23)", "'attn0'"});
  auto fake = matmulModel(23);
  addNode(fake.mutable_graph(), "Frobnicate", "f0", {"y"}, {"z"});
  expectError([&] { importModel(fake); }, ErrorKind::Unsupported,
              {"Frobnicate (not an op of the ai.onnx domain of onnx 1.23.2)", "'f0'"});
}

TEST(Frontend, UnknownAttributeIsRefused) {
  auto m = matmulModel();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("mystery");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(3);
  expectError([&] { importModel(m); }, ErrorKind::Unsupported,
              {"node 'mm0' (MatMul)", "'mystery'"});
}

TEST(Frontend, AttributeOfWrongType) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  auto* n = g->mutable_node(0);
  n->set_op_type("Gemm");
  auto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("big");
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel, {"'alpha'", "FLOAT", "STRING"});
}

TEST(Frontend, SymbolicBatchAndOtherDims) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  *g->mutable_input(0) = tensorInfo("x", onnx::TensorProto::FLOAT, {std::string("N"), int64_t(2)});
  frontend::ImportOptions o;
  o.batch = 4;
  auto r = importModel(m, o);
  EXPECT_EQ(r.graph.inputs()[0]->type().shape, (ir::Shape{4, 2}));
  EXPECT_EQ(r.graph.outputs()[0]->type().shape, (ir::Shape{4, 3}));

  // A dynamic dimension that is not the first one is refused, naming it and the flag to use.
  *g->mutable_input(0) = tensorInfo("x", onnx::TensorProto::FLOAT, {int64_t(1), std::string("K")});
  expectError([&] { importModel(m); }, ErrorKind::Unsupported,
              {"graph input 'x' dimension 1 ('K')", "--dim K=N"});
  o.dims["K"] = 2;
  EXPECT_EQ(importModel(m, o).graph.inputs()[0]->type().shape, (ir::Shape{1, 2}));
}

TEST(Frontend, ConstantSubgraphsAreFolded) {
  auto m = matmulModel();
  auto* g = m.mutable_graph();
  *g->add_initializer() = floatInit("I", {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  // W2 = W x I is computable at import and becomes a constant; y = x x W2 remains.
  g->clear_node();
  addNode(g, "MatMul", "fold", {"W", "I"}, {"W2"});
  addNode(g, "MatMul", "mm0", {"x", "W2"}, {"y"});
  auto r = importModel(m);
  ASSERT_EQ(r.graph.nodes().size(), 1u);
  EXPECT_EQ(r.graph.nodes()[0]->name(), "mm0");
  ir::Value* w2 = r.graph.findValue("W2");
  ASSERT_TRUE(w2 && w2->isConstant());
  EXPECT_FLOAT_EQ(w2->constant().data<float>()[5], 6);
}

TEST(Frontend, ExternalData) {
  fs::path dir = fs::temp_directory_path() / "triad_external_data_test";
  fs::create_directories(dir);
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("PADDING!", 8); // data starts at offset 8
    f.write(reinterpret_cast<const char*>(w.data()), std::streamsize(w.size() * sizeof(float)));
  }
  auto m = matmulModel();
  auto* init = m.mutable_graph()->mutable_initializer(0);
  init->clear_float_data();
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "8");
  kv("length", "24");
  auto r = importModel(m, {}, dir);
  EXPECT_FLOAT_EQ(r.graph.findValue("W")->constant().data<float>()[4], 5);

  fs::remove(dir / "weights.bin");
  expectError([&] { importModel(m, {}, dir); }, ErrorKind::Io,
              {"initializer 'W'", "weights.bin", "missing"});
  init->mutable_external_data(0)->set_value("../../etc/passwd");
  expectError([&] { importModel(m, {}, dir); }, ErrorKind::InvalidModel,
              {"must be a file inside the model's folder"});
  fs::remove_all(dir);
}

TEST(Frontend, InitializerWithWrongElementCount) {
  auto m = matmulModel();
  m.mutable_graph()->mutable_initializer(0)->add_float_data(7);
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"initializer 'W'", "7 values", "6 expected"});
}

TEST(TensorIO, NpyRoundTripAllTypes) {
  fs::path dir = fs::temp_directory_path();
  for (ir::DType t : {ir::DType::F32, ir::DType::F16, ir::DType::F64, ir::DType::I64, ir::DType::I8,
                      ir::DType::U8, ir::DType::Bool}) {
    for (ir::Shape s : {ir::Shape{}, ir::Shape{5}, ir::Shape{2, 3}}) {
      ir::Tensor x(t, s);
      for (int64_t i = 0; i < x.numElements(); ++i)
        x.setDouble(i, double(i % 2 ? i : 1));
      fs::path p = dir / "triad_rt.npy";
      frontend::writeNpy(p, x);
      ir::Tensor y = frontend::readNpy(p);
      EXPECT_EQ(x, y) << ir::typeToString(x.type());
      fs::path pb = dir / "triad_rt.pb";
      frontend::writeTensorProtoFile(pb, x, "t");
      auto named = frontend::readTensorProtoFile(pb);
      EXPECT_EQ(named.name, "t");
      EXPECT_EQ(named.tensor, x);
    }
  }
}

TEST(TensorIO, BadNpyIsRefused) {
  fs::path p = fs::temp_directory_path() / "triad_bad.npy";
  frontend::writeFileAtomic(p, "\x93NUMPY\x01\x00garbage");
  expectError([&] { frontend::readNpy(p); }, ErrorKind::Io, {"triad_bad.npy"});
  ir::Tensor x(ir::DType::F32, {4});
  frontend::writeNpy(p, x);
  std::string bytes = frontend::readFile(p);
  frontend::writeFileAtomic(p, bytes.substr(0, bytes.size() - 3)); // truncated data
  expectError([&] { frontend::readNpy(p); }, ErrorKind::Io, {"data bytes"});
}

TEST(Frontend, PyTorchExportedCnnGolden) {
  // The shipped PyTorch export (symbolic batch) imports to this IR; the golden file pins the
  // typed attributes, resolved shapes and the folded constants' hashes.
  frontend::ImportOptions o;
  o.batch = 2;
  auto r = frontend::importOnnxFile(std::string(TRIAD_SOURCE_DIR) + "/models/digits_cnn.onnx", o);
  triad::testing::expectGolden(ir::printGraph(r.graph), "digits_cnn.ir");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST(Frontend, MutatedModelsNeverCrash) {
  // Seeded byte mutations of a real model: each import either succeeds (and then runs) or throws
  // a triad::Error; any other exception, a crash or a hang fails the test.
  std::string good = frontend::readFile(std::string(TRIAD_SOURCE_DIR) + "/models/digits_cnn.onnx");
  std::mt19937 rng(20261121);
  int errors = 0, imported = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string bytes = good;
    int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f)
      bytes[rng() % bytes.size()] = char(rng() & 0xff);
    if (iter % 10 == 0) bytes.resize(rng() % bytes.size()); // and some truncations
    try {
      auto r = frontend::importOnnxBytes(bytes, ".", "mutated.onnx");
      std::vector<ir::Tensor> in;
      for (ir::Value* v : r.graph.inputs())
        in.emplace_back(v->type());
      ir::Interpreter(r.graph).run(in);
      ++imported;
    } catch (const Error& e) {
      EXPECT_NE(e.kind(), ErrorKind::Internal) << "iteration " << iter << ": " << e.what();
      ++errors;
    }
  }
  EXPECT_EQ(errors + imported, 400);
  std::printf("mutated models: %d imported and ran, %d refused with an error\n", imported, errors);
  EXPECT_GT(errors, 0);
}
