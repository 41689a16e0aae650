// Shapes from the data: frontend::bindDims and ImportOptions::inputShapes bind a model's dynamic
// dimensions (dim_params, unnamed ones, the batch) from the shapes of the tensors given, as ONNX
// Runtime does; contradictions are errors naming the input, the dimension and the file.
#include "OpTestUtil.h"
#include "frontend/OnnxImporter.h"
#include "ir/Interpreter.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>
#include <variant>

using namespace triad;
namespace fs = std::filesystem;

using triad::optest::expectError;

namespace {

using Dim = std::variant<int64_t, std::string, std::monostate>; // size, dim_param, unnamed

onnx::ValueInfoProto tensorInfo(const std::string& name, std::vector<Dim> dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (auto* v = std::get_if<int64_t>(&d)) dim->set_dim_value(*v);
    if (auto* p = std::get_if<std::string>(&d)) dim->set_dim_param(*p);
  }
  return v;
}

// x[N,seq,4] -> MatMul(W[4,3]) -> y[N,seq,3];  m[N,seq] + u[?,?] -> z[N,seq]. W is also listed
// as a graph input (a default value), between x and m: positional shapes skip it.
onnx::ModelProto dynamicModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("dyn");
  *g->add_input() = tensorInfo("x", {"N", "seq", int64_t(4)});
  *g->add_input() = tensorInfo("W", {int64_t(4), int64_t(3)});
  *g->add_input() = tensorInfo("m", {"N", "seq"});
  *g->add_input() = tensorInfo("u", {std::monostate{}, std::monostate{}});
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(3);
  for (int i = 0; i < 12; ++i)
    w->add_float_data(float(i % 5));
  auto node = [&](const char* type, const char* name, std::vector<std::string> in,
                  const char* out) {
    auto* n = g->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (auto& i : in)
      n->add_input(i);
    n->add_output(out);
  };
  node("MatMul", "mm", {"x", "W"}, "y");
  node("Add", "add", {"m", "u"}, "z");
  *g->add_output() = tensorInfo("y", {"N", "seq", int64_t(3)});
  *g->add_output() = tensorInfo("z", {"N", "seq"});
  return m;
}

class ShapeBinding : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("triad_shape_binding_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = dir_ / "dyn.onnx";
    std::ofstream(path_, std::ios::binary) << dynamicModel().SerializeAsString();
  }
  void TearDown() override { fs::remove_all(dir_); }

  frontend::DimBinding bind(std::vector<frontend::InputShape> shapes,
                            const frontend::ImportOptions& fixed = {}) {
    return frontend::bindDims(path_, shapes, fixed);
  }
  frontend::ImportResult import(std::vector<frontend::InputShape> shapes,
                                frontend::ImportOptions o = {}) {
    o.inputShapes = std::move(shapes);
    o.onnxShapeCheck = false;
    return frontend::importOnnxFile(path_, o);
  }

  fs::path dir_, path_;
};

std::vector<frontend::InputShape> shapesFor(int64_t n, int64_t seq) {
  return {{"", {n, seq, 4}, "x.npy"}, {"", {n, seq}, "m.npy"}, {"u", {n, seq}, "u.npy"}};
}

} // namespace

TEST_F(ShapeBinding, BindsNamedUnnamedAndBatchFromTheShapes) {
  frontend::DimBinding b = bind(shapesFor(4, 7));
  EXPECT_EQ(b.dims, (std::map<std::string, int64_t>{{"N", 4}, {"seq", 7}}));
  EXPECT_EQ(b.axes, (std::map<std::string, std::map<int64_t, int64_t>>{{"u", {{0, 4}, {1, 7}}}}));
  EXPECT_EQ(b.toString(), "N=4, seq=7, u[0]=4, u[1]=7");
  // A different binding is a different key (compiled once per distinct binding).
  EXPECT_NE(bind(shapesFor(1, 7)), b);
  EXPECT_EQ(bind(shapesFor(1, 7)).toString(), "N=1, seq=7, u[0]=1, u[1]=7");
}

TEST_F(ShapeBinding, ImportUsesTheBindingAndRuns) {
  frontend::ImportResult r = import(shapesFor(4, 7));
  EXPECT_EQ(r.binding, bind(shapesFor(4, 7)));
  const ir::Graph& g = r.graph;
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.inputs()[0]->type().shape, (ir::Shape{4, 7, 4}));
  EXPECT_EQ(g.inputs()[2]->type().shape, (ir::Shape{4, 7}));
  EXPECT_EQ(g.outputs()[0]->type().shape, (ir::Shape{4, 7, 3}));
  EXPECT_EQ(g.outputs()[1]->type().shape, (ir::Shape{4, 7}));
  std::vector<float> xs(4 * 7 * 4, 1.0f), ms(28, 2.0f), us(28, 0.5f);
  auto out = ir::Interpreter(g).run(std::vector<ir::Tensor>{
      ir::Tensor::fromVector<float>({4, 7, 4}, xs), ir::Tensor::fromVector<float>({4, 7}, ms),
      ir::Tensor::fromVector<float>({4, 7}, us)});
  // y = ones x W: column sums of W = (0+3+1+4, 1+4+2+0, 2+0+3+1) = (8, 7, 6).
  EXPECT_FLOAT_EQ(out[0].data<float>()[3 * 7 * 3 + 0], 8);
  EXPECT_FLOAT_EQ(out[0].data<float>()[3 * 7 * 3 + 2], 6);
  EXPECT_FLOAT_EQ(out[1].data<float>()[27], 2.5f);
}

TEST_F(ShapeBinding, OneDimParamTwoSizesNamesBothInputs) {
  expectError(
      [&] {
        bind({{"", {4, 7, 4}, "x.npy"}, {"", {4, 5}, "m.npy"}});
      },
      ErrorKind::Runtime,
      {"dimension 'seq'", "7 in input 'x'", "file 'x.npy'", "5 in input 'm'", "file 'm.npy'"});
  // The importer gives the same error, under the model's name.
  expectError(
      [&] {
        import({{"", {4, 7, 4}, "x.npy"}, { "", {3, 7}, "m.npy" }});
      },
      ErrorKind::Runtime, {"dyn.onnx", "dimension 'N'", "input 'm'"});
}

TEST_F(ShapeBinding, ExplicitBatchOrDimThatContradictsTheDataIsAnError) {
  frontend::ImportOptions fixed;
  fixed.batch = 1;
  expectError([&] { bind(shapesFor(4, 7), fixed); }, ErrorKind::Runtime,
              {"input 'x' dimension 0 ('N') is 4", "file 'x.npy'", "--batch 1"});
  fixed.batch.reset();
  fixed.dims["seq"] = 5;
  expectError([&] { bind(shapesFor(4, 7), fixed); }, ErrorKind::Runtime,
              {"input 'x' dimension 1 ('seq') is 7", "--dim seq=5"});
  // Agreeing explicit sizes are kept; only the open dimensions are bound.
  fixed.dims["seq"] = 7;
  fixed.batch = 4;
  frontend::DimBinding b = bind(shapesFor(4, 7), fixed);
  EXPECT_EQ(b.dims.size(), 0u) << b.toString();
  EXPECT_EQ(b.axes.at("u").size(), 1u) << b.toString(); // u's first axis is the batch: fixed
  EXPECT_EQ(import(shapesFor(4, 7), fixed).graph.inputs()[0]->type().shape, (ir::Shape{4, 7, 4}));
}

TEST_F(ShapeBinding, FixedSizeAndRankMismatchesNameTheInputAndFile) {
  expectError(
      [&] {
        bind({{"", {4, 7, 5}, "x.npy"}});
      },
      ErrorKind::Runtime,
      {"input 'x' expects f32[N,seq,4]", "file 'x.npy' holds [4,7,5]",
       "dimension 2 is fixed at 4"});
  expectError(
      [&] {
        bind({{"", {28, 4}, "x.npy"}});
      },
      ErrorKind::Runtime, {"input 'x' expects f32[N,seq,4] (rank 3)", "(rank 2)"});
  expectError(
      [&] {
        bind({{"u", {4, 7, 1}, ""}});
      },
      ErrorKind::Runtime, {"input 'u' expects f32[?,?]", "the tensor given"});
  // At import, the input that does not fit is the error, not the dimension it left unbound.
  expectError(
      [&] {
        import({{ "", {28, 4}, "x.npy" }});
      },
      ErrorKind::Runtime, {"input 'x' expects f32[N,seq,4] (rank 3)"});
}

TEST_F(ShapeBinding, ABrokenModelIsReportedBeforeInputsThatDoNotFitIt) {
  onnx::ModelProto m = dynamicModel();
  m.mutable_graph()->mutable_node(1)->set_input(1, "nowhere"); // add reads an undefined value
  std::ofstream(path_, std::ios::binary | std::ios::trunc) << m.SerializeAsString();
  expectError(
      [&] {
        import({{"", {4, 7, 5}, "x.npy"}, { "u", {4, 7}, "u.npy" }});
      },
      ErrorKind::InvalidModel, {"nowhere"});
  // bindDims reads only the inputs: it reports the input.
  expectError(
      [&] {
        bind({{"", {4, 7, 5}, "x.npy"}});
      },
      ErrorKind::Runtime, {"dimension 2 is fixed at 4"});
}

TEST_F(ShapeBinding, InputNamesAndPositionsAreChecked) {
  expectError(
      [&] {
        bind({{"q", {1}, "q.npy"}});
      },
      ErrorKind::Usage, {"no input named 'q'", "x, m, u"});
  expectError([&] { bind({{"W", {4, 3}, "w.npy"}}); }, ErrorKind::Usage, {"no input named 'W'"});
  expectError(
      [&] {
        bind({{"", {1, 1, 4}, "a"}, {"", {1, 1}, "b"}, {"", {1, 1}, "c"}, {"", {1}, "d"}});
      },
      ErrorKind::Usage, {"4 inputs given in order; the model has 3 inputs"});
  expectError(
      [&] {
        bind({{"", {1, 1, 4}, "a.npy"}, {"x", {1, 1, 4}, "b.npy"}});
      },
      ErrorKind::Usage, {"input 'x' is given twice", "a.npy", "b.npy"});
  expectError([&] { frontend::bindDims(dir_ / "none.onnx", {}); }, ErrorKind::Io, {"none.onnx"});
}

TEST_F(ShapeBinding, OpenAxesAreLeftToTheBatch) {
  // triad bench: rows of the first input, the batch swept.
  frontend::ImportOptions fixed;
  fixed.batch = 8;
  frontend::DimBinding b = bind({{"", {-1, 5, 4}, "rows.npy"}}, fixed);
  EXPECT_EQ(b.toString(), "seq=5");
  frontend::ImportResult r = import({{"", {-1, 5, 4}, "rows.npy"}, {"u", {-1, 5}, ""}}, fixed);
  EXPECT_EQ(r.graph.inputs()[0]->type().shape, (ir::Shape{8, 5, 4}));
  EXPECT_EQ(r.graph.inputs()[2]->type().shape, (ir::Shape{8, 5}));
}

TEST_F(ShapeBinding, UnboundDynamicDimensionsAreStillRefused) {
  // u's second axis is unnamed and nothing gives it: the message says how to give it.
  frontend::ImportOptions o;
  o.dims["seq"] = 3;
  o.onnxShapeCheck = false;
  expectError([&] { frontend::importOnnxFile(path_, o); }, ErrorKind::Unsupported,
              {"graph input 'u' dimension 1 (unnamed) is dynamic", "give a tensor"});
  o.axes["u"][1] = 3;
  EXPECT_EQ(frontend::importOnnxFile(path_, o).graph.inputs()[2]->type().shape, (ir::Shape{1, 3}));
}
