// Must-fail tests for the classes of bugs the fuzz targets found (tests/fuzz, docs/reliability.md):
// each builds the smallest model of the class and expects a user error (never Internal, exit 70)
// that names the node, the op and what is wrong. The inputs the fuzzers found are replayed from
// tests/fuzz/regressions/ as well.
#include "frontend/OnnxImporter.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace triad;

namespace {

onnx::ValueInfoProto tensorInfo(const std::string& name, int elemType, std::vector<int64_t> dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims)
    shape->add_dim()->set_dim_value(d);
  return v;
}

onnx::TensorProto int64Init(const std::string& name, std::vector<int64_t> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

// A model of one node `op` named "n" with float inputs x, x2 [2,3] and graph output y.
onnx::ModelProto oneNodeModel(const std::string& op, const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs = {"y"}, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  *g->add_input() = tensorInfo("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_input() = tensorInfo("x2", onnx::TensorProto::FLOAT, {2, 3});
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n");
  for (const auto& i : inputs)
    n->add_input(i);
  for (const auto& o : outputs)
    n->add_output(o);
  *g->add_output() = tensorInfo("y", 0, {});
  return m;
}

template <typename F> void expectError(F&& f, ErrorKind kind, std::vector<std::string> needles) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message lacks '" << n << "': " << e.what();
  }
}

void importModel(const onnx::ModelProto& m) {
  frontend::importOnnxBytes(m.SerializeAsString(), ".", "fuzz.onnx");
}

} // namespace

// A required input given as "" (the ONNX spelling of an absent optional input) reached the op's
// shape rule as a missing operand: failed assertions (internal errors) in Pow, Less, Mul,
// GatherElements, GridSample, RoiAlign, QLinearMatMul, ... Refused for every op at import.
TEST(FuzzFindings, AbsentRequiredInputIsRefused) {
  for (const char* op : {"Pow", "Less", "Mul", "GatherElements", "MatMul"})
    expectError(
        [&] {
          importModel(oneNodeModel(op, {"", "x"}));
        },
        ErrorKind::InvalidModel, {"node 'n'", op, "input 0 is empty (absent)"});
  // A trailing one is dropped: the node has too few inputs.
  expectError(
      [&] {
        importModel(oneNodeModel("Pow", {"x", ""}));
      },
      ErrorKind::InvalidModel, {"node 'n' (Pow)", "has 1 inputs; Pow takes 2"});
  // Variadic ops take no absent inputs.
  expectError(
      [&] {
        importModel(oneNodeModel("Sum", {"x", "", "x2"}));
      },
      ErrorKind::InvalidModel, {"node 'n' (Sum)", "input 1 is empty"});
  // Absent optional inputs are still fine (Clip's min, with max given).
  auto clip = oneNodeModel("Clip", {"x", "", "mx"});
  onnx::TensorProto mx;
  mx.set_name("mx");
  mx.set_data_type(onnx::TensorProto::FLOAT);
  mx.add_float_data(1.0f);
  *clip.mutable_graph()->add_initializer() = mx;
  EXPECT_NO_THROW(importModel(clip));
}

// Reshape's target shape multiplied its dimensions without an overflow check (signed overflow,
// undefined behaviour) before comparing the element count.
TEST(FuzzFindings, ReshapeToShapeBeyondInt64IsRefused) {
  auto m = oneNodeModel("Reshape", {"x", "shape"});
  *m.mutable_graph()->add_initializer() =
      int64Init("shape", {3615022833237690369, 7666072512169984057});
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'n' (Reshape)", "more elements than an int64 can count"});
}
