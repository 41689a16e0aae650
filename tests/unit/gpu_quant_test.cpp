// Quantized models on the GPU target: QuantizeLinear/DequantizeLinear as elementwise kernels
// (fused into chains and epilogues, x / scale rounded correctly whatever the device's division),
// and fuse-qdq's integer nodes (QLinearConv, QLinearMatMul, MatMulInteger) on integer kernels.
// The contract is bit-exactness with the reference interpreter: on the integer graph the target
// compiles (fuseQdqCopy) every output byte is equal, and against the QDQ model as written
// (float arithmetic between Q and DQ) outputs differ by at most one quantization step where a
// float rounding tie decides. Skipped without an OpenCL platform.
#include "GraphBuild.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuCodeGen.h"
#include "gpu/GpuTarget.h"
#include "gpu_TestUtil.h"
#include "ir/Interpreter.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Quantize.h"
#include "ir/passes/Pass.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>

using namespace triad;
using namespace triad::ir;
using testutil::add;
using testutil::attrs;
namespace fs = std::filesystem;

namespace {

using gputest::programOf;

gpu::GpuOptions testOptions() {
  return gputest::targetOptions(true);
}

size_t stepsStartingWith(const gpu::GpuProgram& p, const std::string& kind) {
  size_t n = 0;
  for (const gpu::GpuStep& s : p.steps)
    n += s.kind.rfind(kind, 0) == 0;
  return n;
}

/// `g` compiled with the dot4 form on ("1") or off ("0"): TRIAD_GPU_INT8_DOT.
std::unique_ptr<Executable> compileWithDot(const Graph& g, const char* dot) {
  setenv("TRIAD_GPU_INT8_DOT", dot, 1);
  auto exe = gpu::makeGpuTarget(testOptions())->compile(g);
  unsetenv("TRIAD_GPU_INT8_DOT");
  return exe;
}

/// Every element of every output equal, bit for bit (NaN equal to NaN).
void expectIdentical(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
    ASSERT_EQ(got[i].byteSize(), want[i].byteSize());
    int64_t differ = 0, first = -1;
    for (int64_t k = 0; k < got[i].numElements(); ++k) {
      double g = got[i].getDouble(k), w = want[i].getDouble(k);
      if (!(g == w || (std::isnan(g) && std::isnan(w)))) {
        if (first < 0) first = k;
        ++differ;
      }
    }
    EXPECT_EQ(differ, 0) << "output " << i << ": " << differ << " of " << got[i].numElements()
                         << " differ; first at " << first << ": " << got[i].getDouble(first)
                         << " vs " << want[i].getDouble(first);
  }
}

template <typename T> Tensor randomInts(Shape s, std::mt19937& rng, int lo, int hi) {
  std::vector<T> v(size_t(numElements(s)));
  std::uniform_int_distribution<int> d(lo, hi);
  for (T& x : v)
    x = T(d(rng));
  return Tensor::fromVector<T>(std::move(s), v);
}

std::shared_ptr<const Attrs> quantAxis(int64_t axis = -1) {
  return attrs<QuantAxisAttrs>([&](QuantAxisAttrs& a) { a.axis = axis; });
}

std::shared_ptr<const Attrs> quantizeTo(DType t) {
  return attrs<QuantizeLinearAttrs>([&](QuantizeLinearAttrs& a) { a.outputType = t; });
}

// QuantizeLinear to every 8/16-bit type and DequantizeLinear back, on values that reach every
// rounding case: exact ties (k + 0.5 steps), values next to ties, saturation at both ends, NaN,
// infinities and a scale whose quotients OpenCL's division need not round correctly.
TEST(GpuQuant, QuantizeAndDequantizeLinearAreBitExact) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(5);
  const int64_t n = 4096;
  std::vector<float> xs;
  const float scale = 0.0123f; // not a power of two: x / scale is inexact
  for (int64_t i = 0; xs.size() < size_t(n); ++i) {
    float tie = (float(i % 600) - 300.0f + 0.5f) * scale; // near a tie after rounding the product
    xs.push_back(tie);
    xs.push_back(std::nextafter(tie, 1e9f));
    xs.push_back(std::uniform_real_distribution<float>(-5.0f, 5.0f)(rng));
    xs.push_back(float(i % 7 - 3) * 0.5f); // exact ties with scale 0.5 below
  }
  xs.resize(size_t(n));
  xs[0] = std::numeric_limits<float>::quiet_NaN();
  xs[1] = std::numeric_limits<float>::infinity();
  xs[2] = -std::numeric_limits<float>::infinity();
  xs[3] = 1e30f;
  for (DType q : {DType::U8, DType::I8, DType::U16, DType::I16}) {
    SCOPED_TRACE(dtypeName(q));
    for (float s : {scale, 0.5f}) {
      Graph g;
      Value* x = g.addInput("x", {DType::F32, {n}, {}});
      Value* sc = g.addConstant("scale", Tensor::scalar<float>(s));
      Value* zp = g.addConstant("zp", Tensor::scalar<int64_t>(q == DType::U8 ? 100 : 3).castTo(q));
      Node* quant = add(g, OpKind::QuantizeLinear, "quant", {x, sc, zp}, quantizeTo(q));
      Node* deq =
          add(g, OpKind::DequantizeLinear, "dequant", {quant->output(0), sc, zp}, quantAxis());
      Node* relu = add(g, OpKind::Relu, "relu", {deq->output(0)});
      g.addOutput(quant->output(0));
      g.addOutput(relu->output(0));
      Tensor in = Tensor::fromVector<float>({n}, xs);
      auto exe = gpu::makeGpuTarget(testOptions())->compile(g);
      expectIdentical(exe->run({&in, 1}), Interpreter(g).run({&in, 1}));
      EXPECT_EQ(programOf(*exe).hostSteps, 0u) << "QuantizeLinear and DequantizeLinear on the GPU";
    }
  }
}

// DynamicQuantizeLinear (one work-group: the range, then every element) on inputs that reach
// its cases: mixed signs, all positive (the range still holds 0), all zero (scale 1), NaNs
// (skipped by the range, the zero point in the output), and a tensor much larger than the
// work-group; then through MatMulInteger with the run-time zero point it produces (the form
// ONNX Runtime's quantize_dynamic gives transformers).
TEST(GpuQuant, DynamicQuantizeLinearIsBitExact) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(23);
  const int64_t M = 33, K = 50, N = 19;
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {M, K}, {}});
  Node* dq = add(g, OpKind::DynamicQuantizeLinear, "dyn_quant", {x}, nullptr, 3);
  Value* w = g.addConstant("w", randomInts<int8_t>({K, N}, rng, -127, 127));
  Value* wz = g.addConstant("w_zp", Tensor::scalar<int8_t>(0));
  Node* mm = add(g, OpKind::MatMulInteger, "matmul_integer", {dq->output(0), w, dq->output(2), wz});
  g.addOutput(dq->output(0));
  g.addOutput(dq->output(1));
  g.addOutput(dq->output(2));
  g.addOutput(mm->output(0));
  auto exe = gpu::makeGpuTarget(testOptions())->compile(g);
  EXPECT_EQ(programOf(*exe).hostSteps, 0u);
  std::uniform_real_distribution<float> d(-3.0f, 2.0f);
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<float> v(size_t(M * K));
    for (float& f : v)
      f = trial == 1 ? std::fabs(d(rng)) : trial == 2 ? 0.0f : d(rng);
    if (trial == 3)
      for (size_t i = 0; i < v.size(); i += 97)
        v[i] = std::numeric_limits<float>::quiet_NaN();
    Tensor in = Tensor::fromVector<float>({M, K}, v);
    expectIdentical(exe->run({&in, 1}), Interpreter(g).run({&in, 1}));
  }
}

/// x (uint8 or int8 at run time) -> QLinearConv(W int8 per channel, bias) [-> Clip], compared
/// bit for bit with the interpreter.
struct QConvCase {
  std::string name;
  int64_t N, C, H, W, K, R, S, stride, pad, group;
  DType xType;
  bool perChannel, bias, clip;
  int64_t dilation = 1;
};

Graph qconvGraph(const QConvCase& c, std::mt19937& rng) {
  Graph g;
  const bool u8 = c.xType == DType::U8;
  Value* x = g.addInput("x", {c.xType, {c.N, c.C, c.H, c.W}, {}});
  auto scalarOf = [&](const std::string& name, int64_t v, DType t) {
    return g.addConstant(name, Tensor::scalar<int64_t>(v).castTo(t));
  };
  Value* xs = g.addConstant("x_scale", Tensor::scalar<float>(0.0213f));
  Value* xz = scalarOf("x_zp", u8 ? 131 : -3, c.xType);
  const int64_t Cg = c.C / c.group;
  Value* w = g.addConstant("w", randomInts<int8_t>({c.K, Cg, c.R, c.S}, rng, -127, 127));
  std::vector<float> ws(size_t(c.perChannel ? c.K : 1));
  for (size_t i = 0; i < ws.size(); ++i)
    ws[i] = 0.0031f * float(i % 5 + 1);
  Value* wsv = g.addConstant("w_scale", c.perChannel ? Tensor::fromVector<float>({c.K}, ws)
                                                     : Tensor::scalar<float>(ws[0]));
  Value* wz = c.perChannel ? g.addConstant("w_zp", Tensor::fromVector<int8_t>(
                                                       {c.K}, std::vector<int8_t>(size_t(c.K))))
                           : scalarOf("w_zp", 0, DType::I8);
  Value* ys = g.addConstant("y_scale", Tensor::scalar<float>(0.0517f));
  Value* yz = scalarOf("y_zp", u8 ? 7 : -5, c.xType);
  std::vector<Value*> in = {x, xs, xz, w, wsv, wz, ys, yz};
  if (c.bias) in.push_back(g.addConstant("bias", randomInts<int32_t>({c.K}, rng, -3000, 3000)));
  Node* conv = add(g, OpKind::QLinearConv, "qconv", in, attrs<ConvAttrs>([&](ConvAttrs& a) {
                     a.kernel = {c.R, c.S};
                     a.strides = {c.stride, c.stride};
                     a.pads = {c.pad, c.pad, c.pad, c.pad};
                     a.dilations = {c.dilation, c.dilation};
                     a.group = c.group;
                   }));
  Value* y = conv->output(0);
  if (c.clip) {
    Node* clip =
        add(g, OpKind::Clip, "relu6_q",
            {y, scalarOf("lo", u8 ? 7 : -5, c.xType), scalarOf("hi", u8 ? 120 : 100, c.xType)},
            attrs<ClipAttrs>([](ClipAttrs&) {}));
    y = clip->output(0);
  }
  g.addOutput(y);
  return g;
}

TEST(GpuQuant, QLinearConvOnIntegerKernelsIsBitExact) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(21);
  const std::vector<QConvCase> cases = {
      // implicit GEMM: 3x3 padded, uint8 activations, per-channel, bias, clipped
      {"igemm_3x3", 2, 8, 9, 9, 24, 3, 3, 1, 1, 1, DType::U8, true, true, true},
      // implicit GEMM, stride 2, int8 activations, per tensor, no bias, tails past the tiles
      {"igemm_s2_int8", 1, 16, 11, 13, 33, 3, 3, 2, 1, 1, DType::I8, false, false, false},
      // 1x1 (a GEMM per image)
      {"pointwise", 2, 32, 7, 7, 40, 1, 1, 1, 0, 1, DType::U8, true, true, false},
      // depthwise (direct kernel), stride 2, dilation 2
      {"depthwise", 1, 12, 10, 10, 12, 3, 3, 2, 2, 12, DType::U8, true, true, true, 2},
      // thin output (direct kernel), grouped
      {"grouped_thin", 1, 8, 6, 6, 4, 3, 3, 1, 1, 2, DType::I8, true, true, false},
  };
  for (const QConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = qconvGraph(c, rng);
    Tensor x = c.xType == DType::U8 ? randomInts<uint8_t>({c.N, c.C, c.H, c.W}, rng, 0, 255)
                                    : randomInts<int8_t>({c.N, c.C, c.H, c.W}, rng, -128, 127);
    // The dot4 form (four byte products per step, packed weights, compensated zero point) and
    // the plain one (shifted operands, one product per step).
    for (const char* dot : {"1", "0"}) {
      SCOPED_TRACE(std::string("TRIAD_GPU_INT8_DOT=") + dot);
      auto exe = compileWithDot(g, dot);
      expectIdentical(exe->run({&x, 1}), Interpreter(g).run({&x, 1}));
      const gpu::GpuProgram& p = programOf(*exe);
      EXPECT_EQ(p.hostSteps, 0u);
      EXPECT_EQ(stepsStartingWith(p, "qconv"), 1u) << p.source;
      EXPECT_NE(p.source.find("int32 sums"), std::string::npos);
      const bool igemm = stepsStartingWith(p, "qconv (implicit GEMM") == 1;
      EXPECT_EQ(igemm && *dot == '1',
                stepsStartingWith(p, "qconv (implicit GEMM, int8 dot4)") == 1);
    }
  }
}

TEST(GpuQuant, QLinearMatMulAndMatMulIntegerAreBitExact) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(22);
  for (bool perColumn : {false, true}) {
    SCOPED_TRACE(perColumn ? "per column" : "per tensor");
    const int64_t M = 37, K = 70, N = 45;
    Graph g;
    Value* a = g.addInput("a", {DType::U8, {M, K}, {}});
    Value* b = g.addConstant("b", randomInts<int8_t>({K, N}, rng, -127, 127));
    Value* as = g.addConstant("a_scale", Tensor::scalar<float>(0.017f));
    Value* az = g.addConstant("a_zp", Tensor::scalar<uint8_t>(128));
    std::vector<float> bsv(size_t(perColumn ? N : 1));
    for (size_t i = 0; i < bsv.size(); ++i)
      bsv[i] = 0.002f + 0.0001f * float(i);
    Value* bs = g.addConstant("b_scale", perColumn ? Tensor::fromVector<float>({N}, bsv)
                                                   : Tensor::scalar<float>(bsv[0]));
    Value* bz = g.addConstant("b_zp", Tensor::scalar<int8_t>(0));
    Value* ys = g.addConstant("y_scale", Tensor::scalar<float>(0.041f));
    Value* yz = g.addConstant("y_zp", Tensor::scalar<uint8_t>(121));
    Node* qmm = add(g, OpKind::QLinearMatMul, "qmatmul", {a, as, az, b, bs, bz, ys, yz});
    Node* mmi = add(g, OpKind::MatMulInteger, "matmul_integer", {a, b, az, bz});
    g.addOutput(qmm->output(0));
    g.addOutput(mmi->output(0));
    Tensor x = randomInts<uint8_t>({M, K}, rng, 0, 255);
    for (const char* dot : {"1", "0"}) {
      SCOPED_TRACE(std::string("TRIAD_GPU_INT8_DOT=") + dot);
      auto exe = compileWithDot(g, dot);
      expectIdentical(exe->run({&x, 1}), Interpreter(g).run({&x, 1}));
      const gpu::GpuProgram& p = programOf(*exe);
      EXPECT_EQ(p.hostSteps, 0u);
      EXPECT_EQ(stepsStartingWith(p, "qgemm"), 1u);
      EXPECT_EQ(stepsStartingWith(p, "gemm (int8 -> int32"), 1u);
      EXPECT_EQ(p.source.find("triad_dot_us(") != std::string::npos, *dot == '1');
    }
  }
}

// The shipped QDQ models (a residual CNN with uint8 activations; MLPs per tensor and per
// channel): fuse-qdq's integer graph on the GPU equals the interpreter's run of that graph byte
// for byte, and the QDQ model as written within one quantization step, every layer on the
// device. With TRIAD_GPU_QDQ=float the same model runs on float kernels with fused Q/DQ.
TEST(GpuQuant, ShippedQdqModelsRunOnIntegerKernels) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  fs::path models = fs::path(TRIAD_SOURCE_DIR) / "models";
  for (std::string name : {"resblock_cnn_qdq", "jet_mlp_qdq", "jet_mlp_qdq_pc"}) {
    SCOPED_TRACE(name);
    Tensor x = frontend::readTensorFile(
                   models / (name.rfind("jet", 0) == 0 ? "jet_test_x.npy" : "digits_test_x.npy"))
                   .tensor;
    frontend::ImportOptions io;
    io.batch = x.shape()[0];
    frontend::ImportResult r = frontend::importOnnxFile(models / (name + ".onnx"), io);
    defaultPipeline().run(r.graph);
    std::shared_ptr<Graph> integer = fuseQdqCopy(r.graph);
    ASSERT_TRUE(integer);
    auto exe = gpu::makeGpuTarget(testOptions())->compile(r.graph);
    std::vector<Tensor> got = exe->run({&x, 1});
    expectIdentical(got, Interpreter(*integer).run({&x, 1}));
    const gpu::GpuProgram& p = programOf(*exe);
    EXPECT_EQ(p.hostSteps, 0u) << p.source;
    EXPECT_GT(stepsStartingWith(p, "qconv") + stepsStartingWith(p, "qgemm") +
                  stepsStartingWith(p, "gemm (int8"),
              0u);
    // Against the model as written: the float path rounds differently only at ties.
    std::vector<Tensor> want = Interpreter(r.graph).run({&x, 1});
    ASSERT_EQ(got.size(), want.size());
    int64_t differ = 0;
    for (int64_t k = 0; k < got[0].numElements(); ++k)
      differ += got[0].getDouble(k) != want[0].getDouble(k);
    EXPECT_LE(differ * 50, got[0].numElements()) << differ << " outputs differ from the QDQ model";

    // The float kernels with Q/DQ fused into them (no integer nodes): the QDQ model as written.
    setenv("TRIAD_GPU_QDQ", "float", 1);
    auto fexe = gpu::makeGpuTarget(testOptions())->compile(r.graph);
    unsetenv("TRIAD_GPU_QDQ");
    std::vector<Tensor> fgot = fexe->run({&x, 1});
    EXPECT_EQ(programOf(*fexe).hostSteps, 0u);
    EXPECT_EQ(stepsStartingWith(programOf(*fexe), "qconv"), 0u);
    // Float sums in another order move a value across a rounding boundary now and then.
    int64_t moved = 0;
    for (int64_t k = 0; k < fgot[0].numElements(); ++k)
      moved += std::fabs(fgot[0].getDouble(k) - want[0].getDouble(k)) >
               1e-5 * (1 + std::fabs(want[0].getDouble(k)));
    EXPECT_LE(moved * 50, fgot[0].numElements()) << moved << " outputs differ (float kernels)";
  }
}

} // namespace
