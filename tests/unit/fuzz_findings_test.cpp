// Must-fail tests for the classes of bugs the fuzz targets found (tests/fuzz, docs/reliability.md):
// each builds the smallest model of the class and expects a user error (never Internal, exit 70)
// that names the node, the op and what is wrong. The inputs the fuzzers found are replayed from
// tests/fuzz/regressions/ as well.
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "tests/unit/OpTestUtil.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <onnx/onnx_pb.h>

using namespace triad;

using triad::optest::expectError;

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

// A model of one node `op` named "n" and graph output y. Graph inputs: x, x2 f32[2,3], an image
// img f32[1,1,4,4], w1 f32[3] (a weight of rank 1), u8img u8[1,1,4,4] and u8w u8[3].
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
  *g->add_input() = tensorInfo("img", onnx::TensorProto::FLOAT, {1, 1, 4, 4});
  *g->add_input() = tensorInfo("w1", onnx::TensorProto::FLOAT, {3});
  *g->add_input() = tensorInfo("u8img", onnx::TensorProto::UINT8, {1, 1, 4, 4});
  *g->add_input() = tensorInfo("u8w", onnx::TensorProto::UINT8, {3});
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

void setInt(onnx::ModelProto& m, const std::string& name, int64_t value) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
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

// A Conv, ConvTranspose or ConvInteger weight of rank below 3 had its spatial dims read past its
// end (a std::vector of ~2^61 elements: length_error, an internal error).
TEST(FuzzFindings, ConvWeightOfWrongRankIsRefused) {
  expectError(
      [&] {
        importModel(oneNodeModel("Conv", {"img", "w1"}));
      },
      ErrorKind::InvalidModel, {"node 'n' (Conv)", "input W must have rank 4, has shape [3]"});
  expectError(
      [&] {
        importModel(oneNodeModel("ConvInteger", {"u8img", "u8w"}));
      },
      ErrorKind::InvalidModel,
      {"node 'n' (ConvInteger)", "input w must have rank 4, has shape [3]"});
  // ConvTranspose through its parser alone: in a model, libonnx's shape inference crashes on it
  // first (issue 14's first root cause, fixed in the importer separately).
  using ir::DType;
  optest::Types types = {ir::TensorType{DType::F32, {1, 1, 4, 4}, {}},
                         ir::TensorType{DType::F32, {3}, {}}};
  expectError([&] { optest::parseAttrs(ir::OpKind::ConvTranspose, {}, types); },
              ErrorKind::InvalidModel, {"input W must have rank 4, has shape [3]"});
}

// Split's num_outputs (opset 18) sized a vector before it was compared with the node's outputs
// (2^31 made an out-of-memory), and split sizes were summed without an overflow check.
TEST(FuzzFindings, SplitCountsAndSizesAreChecked) {
  auto m = oneNodeModel("Split", {"x"}, {"y", "z"}, 18);
  setInt(m, "num_outputs", int64_t(1) << 31);
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'n' (Split)", "'num_outputs' is 2147483648, the node has 2 outputs"});
  auto sizes = oneNodeModel("Split", {"x", "s"}, {"y", "z"});
  *sizes.mutable_graph()->add_initializer() =
      int64Init("s", {1, std::numeric_limits<int64_t>::max()});
  expectError([&] { importModel(sizes); }, ErrorKind::InvalidModel,
              {"node 'n' (Split)", "sums to more than axis 0 of size 2"});
}

// Integer operands (Reshape's shape, Slice's starts, Tile's repeats, ...) given as float tensors
// were converted element by element; a value beyond int64 is undefined behaviour to convert.
TEST(FuzzFindings, IntegerOperandsMustBeIntegerTensors) {
  auto m = oneNodeModel("Reshape", {"x", "shape"});
  onnx::TensorProto shape;
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::FLOAT);
  shape.add_dims(2);
  shape.add_float_data(-3.6e28f);
  shape.add_float_data(2.0f);
  *m.mutable_graph()->add_initializer() = shape;
  expectError([&] { importModel(m); }, ErrorKind::InvalidModel,
              {"node 'n' (Reshape)", "input 1 must be an integer tensor", "f32[2]"});
}

// Split of a scalar indexed the (empty) shape at the axis.
TEST(FuzzFindings, SplitOfScalarIsRefused) {
  using ir::DType;
  optest::Types types = {ir::TensorType{DType::F32, {}, {}}};
  expectError([&] { optest::parseAttrs(ir::OpKind::Split, {}, types, 13, 2); },
              ErrorKind::InvalidModel, {"must have rank >= 1, is a scalar"});
}

// Counts computed from values were converted to int64 unchecked (OneHot's depth, Range's
// element count from float or overflowing integer bounds): NaN, infinity or beyond int64.
TEST(FuzzFindings, CountsFromValuesAreCheckedBeforeConversion) {
  using ir::DType;
  using ir::Tensor;
  Tensor idx = Tensor::fromVector<int64_t>({2}, {0, 1});
  Tensor values = Tensor::fromVector<float>({2}, {0, 1});
  for (float depth : {std::numeric_limits<float>::quiet_NaN(), 1e30f, 0.5f}) {
    Tensor d = Tensor::scalar(depth);
    expectError(
        [&] {
          optest::runNode(ir::OpKind::OneHot, {&idx, &d, &values});
        },
        ErrorKind::InvalidModel, {"input 'depth' is", "must be a positive count"});
  }
  Tensor f0 = Tensor::scalar(0.0f), fBig = Tensor::scalar(3e38f), fTiny = Tensor::scalar(1e-30f);
  expectError(
      [&] {
        optest::runNode(ir::OpKind::Range, {&f0, &fBig, &fTiny});
      },
      ErrorKind::InvalidModel, {"Range from 0 to", "too many to count"});
  Tensor lo = Tensor::scalar(std::numeric_limits<int64_t>::min()),
         hi = Tensor::scalar(std::numeric_limits<int64_t>::max()), one = Tensor::scalar(int64_t(1));
  expectError(
      [&] {
        optest::runNode(ir::OpKind::Range, {&lo, &hi, &one});
      },
      ErrorKind::InvalidModel, {"spans more than int64 can count"});
}

// Window attributes took any int64: (kernel - 1) * dilation, pads and strides overflowed in the
// output-size arithmetic (signed overflow). Each is at most 2^31 - 1 now.
TEST(FuzzFindings, WindowAttributesAreBounded) {
  using ir::DType;
  using optest::Ints;
  using optest::LiteralAttrs;
  optest::Types conv = {ir::TensorType{DType::F32, {1, 1, 8, 8}, {}},
                        ir::TensorType{DType::F32, {1, 1, 3, 3}, {}}};
  const int64_t huge = int64_t(1) << 62;
  expectError(
      [&] {
        optest::parseAttrs(ir::OpKind::Conv, LiteralAttrs({{"dilations", Ints{huge, 1}}}), conv);
      },
      ErrorKind::InvalidModel, {"attribute 'dilations'", "is out of range (at most 2147483647)"});
  expectError(
      [&] {
        optest::parseAttrs(ir::OpKind::Conv, LiteralAttrs({{"pads", Ints{0, 0, huge, 0}}}), conv);
      },
      ErrorKind::InvalidModel, {"attribute 'pads'", "out of range"});
  expectError(
      [&] {
        optest::parseAttrs(ir::OpKind::ConvTranspose,
                           LiteralAttrs({{"output_shape", Ints{-huge, 8}}}), conv);
      },
      ErrorKind::InvalidModel, {"attribute 'output_shape'", "must be positive"});
  optest::Types pool = {conv[0]};
  expectError(
      [&] {
        optest::parseAttrs(ir::OpKind::MaxPool,
                           LiteralAttrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{huge, 1}}}),
                           pool);
      },
      ErrorKind::InvalidModel, {"attribute 'strides'", "out of range"});
}

// Bool tensors were copied byte for byte from raw_data, external data and .npy files: a byte
// other than 0 or 1 is not a valid bool (undefined behaviour to read; UBSan in Cast's kernel at
// import-time folding). Nonzero bytes read as true.
TEST(FuzzFindings, BoolBytesBeyondOneReadAsTrue) {
  auto m = oneNodeModel("Not", {"b"});
  onnx::TensorProto b;
  b.set_name("b");
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  b.set_raw_data(std::string("\x00\xf5\x01", 3));
  *m.mutable_graph()->add_initializer() = b;
  frontend::ImportResult r = frontend::importOnnxBytes(m.SerializeAsString(), ".", "fuzz.onnx");
  const ir::Value* y = r.graph.findValue("y");
  ASSERT_TRUE(y && y->isConstant());
  const uint8_t* v = y->constant().raw();
  EXPECT_EQ(std::vector<int>(v, v + 3), (std::vector<int>{1, 0, 0}));

  std::string npy("\x93NUMPY\x01\x00", 8);
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }";
  header.append(128 - 10 - header.size() - 1, ' '); // the data starts at byte 128
  header += '\n';
  npy += char(header.size());
  npy += '\0';
  npy += header + std::string("\x02\x00", 2);
  auto path = std::filesystem::temp_directory_path() / "triad_fuzz_findings_bool.npy";
  std::ofstream(path, std::ios::binary) << npy;
  ir::Tensor t = frontend::readNpy(path);
  std::filesystem::remove(path);
  EXPECT_EQ(std::vector<int>(t.raw(), t.raw() + 2), (std::vector<int>{1, 0}));
}
