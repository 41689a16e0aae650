// The FPGA as an ir::Target: per-node support from the layer table (with reasons), and the
// emulator-backed Executable against the interpreter (float within the quantization error) on a
// CNN, with the RTL's cycle model in the profile.
#include "fpga/FpgaTarget.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/ops/Linear.h"
#include "ir/passes/Pass.h"

#include <cmath>
#include <cstdlib>
#include <gtest/gtest.h>

using namespace triad;

TEST(FpgaTarget, SupportComesFromTheLayerTableWithReasons) {
  auto t = fpga::makeFpgaTarget();
  ir::Graph g;
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {2, 4}, {}});
  ir::Value* w = g.addInput("w", ir::TensorType{ir::DType::F32, {4, 3}, {}});
  ir::Node* mm = g.addNode(ir::OpKind::MatMul, "/mm", {x, w}, nullptr, {"h"},
                           {ir::TensorType{ir::DType::F32, {2, 3}, {}}});
  ir::Node* ex = g.addNode(ir::OpKind::Exp, "/exp", {mm->output(0)}, nullptr, {"y"},
                           {ir::TensorType{ir::DType::F32, {2, 3}, {}}});
  ir::Node* relu = g.addNode(ir::OpKind::Relu, "/relu", {ex->output(0)}, nullptr, {"z"},
                             {ir::TensorType{ir::DType::F32, {2, 3}, {}}});
  EXPECT_FALSE(t->supports(*mm).ok);
  EXPECT_NE(t->supports(*mm).reason.find("weight matrix B must be a constant"), std::string::npos)
      << t->supports(*mm).reason;
  EXPECT_FALSE(t->supports(*ex).ok);
  EXPECT_NE(t->supports(*ex).reason.find("no FPGA layer"), std::string::npos);
  EXPECT_TRUE(t->supports(*relu).ok);
}

TEST(FpgaTarget, RunsResblockCnnNearTheInterpreterWithCycles) {
  std::string dir = std::string(TRIAD_SOURCE_DIR) + "/models/";
  ir::Tensor x = frontend::readNpy(dir + "digits_test_x.npy");
  frontend::ImportOptions o;
  o.batch = x.shape()[0];
  ir::Graph g = frontend::importOnnxFile(dir + "resblock_cnn.onnx", o).graph;
  ir::defaultPipeline().run(g);
  auto t = fpga::makeFpgaTarget();
  for (const auto& n : g.nodes())
    EXPECT_TRUE(t->supports(*n).ok) << n->name() << ": " << t->supports(*n).reason;
  auto exe = t->compile(g);
  exe->setProfiling(true);
  std::vector<ir::Tensor> y = exe->run(std::span<const ir::Tensor>(&x, 1));
  std::vector<ir::Tensor> ref = ir::Interpreter(g).run(std::span<const ir::Tensor>(&x, 1));
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), ref[0].shape());
  int64_t agree = 0, rows = y[0].shape()[0], cols = y[0].shape()[1];
  double maxErr = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t a = 0, b = 0;
    for (int64_t c = 0; c < cols; ++c) {
      maxErr = std::max(maxErr,
                        std::fabs(y[0].getDouble(r * cols + c) - ref[0].getDouble(r * cols + c)));
      if (y[0].getDouble(r * cols + c) > y[0].getDouble(r * cols + a)) a = c;
      if (ref[0].getDouble(r * cols + c) > ref[0].getDouble(r * cols + b)) b = c;
    }
    agree += a == b;
  }
  EXPECT_LT(maxErr, 0.05);
  EXPECT_GE(double(agree) / double(rows), 0.99);
  auto* fe = dynamic_cast<fpga::FpgaExecutable*>(exe.get());
  ASSERT_NE(fe, nullptr);
  fpga::FpgaTiming tm = fe->timing();
  EXPECT_TRUE(tm.rtl) << tm.why;
  EXPECT_EQ(tm.ii, 100); // the padded 10x10 frame of the 3x3 convolutions
  EXPECT_GT(tm.latencyCycles, 0);
  std::vector<ir::LayerTime> prof = exe->profile();
  ASSERT_FALSE(prof.empty());
  EXPECT_EQ(prof.front().kind, "cycles");
  EXPECT_EQ(prof.front().cycles, 100);
  // Busy time for one run of the batch: 360 samples x 100 cycles at 200 MHz.
  EXPECT_NEAR(prof.front().milliseconds, 360 * 100 / 200e3, 1e-9);
}

// verilate = true: the Executable runs the Verilated RTL (checked bit for bit against the
// emulator inside run) and returns what the emulator returns; timing() is measured.
TEST(FpgaTarget, VerilatedExecutableEqualsTheEmulator) {
  if (std::system("verilator --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "verilator is not on PATH";
  ir::Graph g;
  g.name = "tiny";
  ir::Value* x = g.addInput("x", ir::TensorType{ir::DType::F32, {8, 6}, {}});
  std::vector<float> w(18);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(int(i * 7 % 11) - 5) * 0.3f;
  auto ga = std::make_shared<ir::GemmAttrs>();
  ga->transB = true;
  ir::Node* fc = g.addNode(ir::OpKind::Gemm, "/fc/Gemm",
                           {x, g.addConstant("w", ir::Tensor::fromVector<float>({3, 6}, w))}, ga,
                           {"h"}, {ir::TensorType{ir::DType::F32, {8, 3}, {}}});
  g.addOutput(g.addNode(ir::OpKind::Relu, "/relu", {fc->output(0)}, nullptr, {"y"},
                        {ir::TensorType{ir::DType::F32, {8, 3}, {}}})
                  ->output(0));
  std::vector<float> xs(48);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = float(int(i * 5 % 13) - 6) * 0.4f;
  ir::Tensor in = ir::Tensor::fromVector<float>({8, 6}, xs);
  fpga::FpgaTargetOptions o;
  o.verilate = true;
  o.workDir = std::string(TRIAD_BINARY_DIR) + "/fpga_target_test";
  auto rtl = fpga::makeFpgaTarget(o)->compile(g);
  auto emu = fpga::makeFpgaTarget()->compile(g);
  std::vector<ir::Tensor> a = rtl->run(std::span<const ir::Tensor>(&in, 1));
  std::vector<ir::Tensor> b = emu->run(std::span<const ir::Tensor>(&in, 1));
  ASSERT_EQ(a.size(), 1u);
  for (int64_t i = 0; i < a[0].numElements(); ++i)
    EXPECT_EQ(a[0].getDouble(i), b[0].getDouble(i)) << i;
  fpga::FpgaTiming t = dynamic_cast<fpga::FpgaExecutable&>(*rtl).timing();
  EXPECT_TRUE(t.measured);
  EXPECT_EQ(t.ii, 1);
  EXPECT_EQ(t.latencyCycles, dynamic_cast<fpga::FpgaExecutable&>(*emu).timing().latencyCycles);
}
