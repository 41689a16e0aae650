// The CPU target end to end: generated C++ built by the system compiler and loaded, checked
// against the reference interpreter on the shipped models and on hand-built graphs that reach
// every code path of the generator (fused epilogues, broadcast chains, batched MatMul, data
// movement, host fallback, views and duplicated outputs), plus the build cache and run-time
// errors. Compiles use -O1 to keep the suite fast; the kernels are the same.
#include "GraphBuild.h"
#include "PatternGraphs.h"
#include "cpu/CodeGen.h"
#include "cpu/CpuTarget.h"
#include "cpu/Lowering.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/MemoryPlan.h"
#include "ir/Printer.h"
#include "ir/System.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Elementwise.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Loss.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"
#include "ir/ops/Quantize.h"
#include "ir/ops/Reduce.h"
#include "ir/passes/Pass.h"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <thread>

using namespace triad;
using namespace triad::ir;
using testutil::add;
using testutil::attrs;
using testutil::randomTensor;
namespace fs = std::filesystem;

namespace {

/// How many times `what` occurs in `src` (overlapping occurrences count).
size_t occurrences(const std::string& src, const std::string& what) {
  size_t n = 0;
  for (size_t p = src.find(what); p != std::string::npos; p = src.find(what, p + 1))
    ++n;
  return n;
}

cpu::CpuOptions testOptions() {
  cpu::CpuOptions o;
  o.flags = "-O1 -march=native";
  o.cacheDir = fs::path(TRIAD_BINARY_DIR) / "test-cache" / "cpu";
  o.threads = std::getenv("TRIAD_TEST_THREADS") ? std::atoi(std::getenv("TRIAD_TEST_THREADS")) : 2;
  o.fuse = std::getenv("TRIAD_TEST_NOFUSE") == nullptr;
  return o;
}

void expectClose(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
    for (int64_t k = 0; k < got[i].numElements(); ++k) {
      double g = got[i].getDouble(k), w = want[i].getDouble(k);
      if (std::isnan(g) && std::isnan(w)) continue; // NaN where the interpreter has NaN
      ASSERT_LE(std::fabs(g - w), atol + rtol * std::fabs(w))
          << "output " << i << " element " << k << ": " << g << " vs " << w;
    }
  }
}

/// A k x k Conv of `in` to `oc` channels with random weights and bias (NAME.w, NAME.b, drawn in
/// that order), pads k / 2 on every side.
Value* addConv(Graph& g, std::mt19937& rng, const std::string& name, Value* in, int64_t oc,
               int64_t k, int64_t stride, int64_t group) {
  int64_t c = in->type().shape[1];
  Value* w = g.addConstant(name + ".w", randomTensor({oc, c / group, k, k}, rng));
  Value* b = g.addConstant(name + ".b", randomTensor({oc}, rng));
  auto a = attrs<ConvAttrs>([&](ConvAttrs& at) {
    at.kernel = {k, k};
    at.strides = {stride, stride};
    int64_t p = k / 2;
    at.pads = {p, p, p, p};
    at.dilations = {1, 1};
    at.group = group;
  });
  return add(g, OpKind::Conv, name, {in, w, b}, a)->output(0);
}

/// Compiles `g` for the CPU and compares with the interpreter on `inputs`.
std::unique_ptr<Executable> checkAgainstInterpreter(const Graph& g, const std::vector<Tensor>& in,
                                                    double rtol = 1e-5, double atol = 1e-6) {
  auto exe = cpu::makeCpuTarget(testOptions())->compile(g);
  expectClose(exe->run(in), Interpreter(g).run(in), rtol, atol);
  return exe;
}

TEST(CpuTarget, ShippedModelsMatchTheInterpreter) {
  fs::path models = fs::path(TRIAD_SOURCE_DIR) / "models";
  for (std::string name : {"digits_mlp", "jet_mlp", "digits_cnn", "resblock_cnn"}) {
    SCOPED_TRACE(name);
    std::string xfile = name == "digits_mlp" ? "digits_test_x_flat.npy"
                        : name == "jet_mlp"  ? "jet_test_x.npy"
                                             : "digits_test_x.npy";
    Tensor x = frontend::readTensorFile(models / xfile).tensor;
    frontend::ImportOptions io;
    io.batch = x.shape()[0];
    frontend::ImportResult r = frontend::importOnnxFile(models / (name + ".onnx"), io);
    defaultPipeline().run(r.graph);
    checkAgainstInterpreter(r.graph, {x}, 1e-4, 1e-6);
  }
}

// Conv + bias + Relu + residual Add fused into the convolution's epilogue; BatchNorm that
// cannot fold; a per-channel broadcast chain; pooling.
TEST(CpuTarget, FusedConvolutionEpilogueAndBroadcastChains) {
  std::mt19937 rng(1);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 3, 9, 9}, {}});
  Value* w = g.addConstant("w", randomTensor({4, 3, 3, 3}, rng));
  Value* b = g.addConstant("b", randomTensor({4}, rng));
  auto convAttrs = attrs<ConvAttrs>([](ConvAttrs& a) {
    a.kernel = {3, 3};
    a.strides = {1, 1};
    a.pads = {1, 1, 1, 1};
    a.dilations = {1, 1};
  });
  Node* conv = add(g, OpKind::Conv, "conv", {x, w, b}, convAttrs);
  Value* skip = g.addConstant("skip", randomTensor({1, 4, 9, 9}, rng));
  Node* relu = add(g, OpKind::Relu, "relu", {conv->output(0)});
  Node* res = add(g, OpKind::Add, "residual", {relu->output(0), skip});
  Value* ch = g.addConstant("per_channel", randomTensor({4, 1, 1}, rng));
  Node* mul = add(g, OpKind::Mul, "scale", {res->output(0), ch});
  Node* sig = add(g, OpKind::Sigmoid, "sigmoid", {mul->output(0)});
  Value* half = g.addConstant("half", Tensor::fromVector<float>({}, {0.5f}));
  Node* sub = add(g, OpKind::Sub, "shift", {sig->output(0), half});
  auto pool = attrs<PoolAttrs>([](PoolAttrs& a) {
    a.kernel = {2, 2};
    a.strides = {2, 2};
    a.pads = {0, 0, 1, 1};
    a.dilations = {1, 1};
  });
  Node* mp = add(g, OpKind::MaxPool, "pool", {sub->output(0)}, pool);
  Node* gap = add(g, OpKind::GlobalAveragePool, "gap", {mp->output(0)});
  g.addOutput(gap->output(0));
  g.addOutput(sub->output(0));
  cpu::GeneratedCode code = cpu::generateCpp(g);
  // conv+relu+add+mul+sigmoid+sub is one group: the chain ends at a graph output.
  EXPECT_EQ(code.groups, 3u) << code.fusionSummary;
  EXPECT_NE(code.source.find("epi_chain"), std::string::npos);
  checkAgainstInterpreter(g, {randomTensor({2, 3, 9, 9}, rng)});
}

/// A tensor of `dt` (8-bit or int32) with values drawn uniformly from [lo, hi].
Tensor intTensor(Shape s, DType dt, int lo, int hi, std::mt19937& rng) {
  Tensor t(DType::F32, std::move(s));
  std::uniform_int_distribution<int> d(lo, hi);
  for (float& v : t.values<float>())
    v = float(d(rng));
  return t.castTo(dt);
}

// The packed int8 kernels (cpu/runtime/triad_int8.h) behind QLinearConv, ConvInteger,
// QLinearMatMul and MatMulInteger with constant weights: grouped and strided convolutions,
// per-channel and per-tensor zero points of both signs, bias, batched MatMul rows; and
// QuantizeLinear / DequantizeLinear per tensor as fused elementwise code (NaN, infinities,
// ties). Integer results are exact: equal to the interpreter in every element.
TEST(CpuTarget, PackedIntegerKernelsAndElementwiseQdqMatchTheInterpreter) {
  std::mt19937 rng(29);
  Graph g;
  Value* x = g.addInput("x", {DType::U8, {2, 6, 11, 9}, {}});
  auto scalar = [&](const std::string& name, float v) {
    return g.addConstant(name, Tensor::fromVector<float>({}, {v}));
  };
  auto conv3 = attrs<ConvAttrs>([](ConvAttrs& a) {
    a.kernel = {3, 3};
    a.strides = {1, 2};
    a.pads = {1, 0, 2, 1};
    a.dilations = {1, 1};
    a.group = 2;
  });
  Tensor wscale(DType::F32, {8});
  for (int i = 0; i < 8; ++i)
    wscale.values<float>()[size_t(i)] = 0.002f * float(i + 1);
  Node* qconv =
      add(g, OpKind::QLinearConv, "qconv",
          {x, scalar("xs", 0.05f), g.addConstant("xz", intTensor({}, DType::U8, 7, 7, rng)),
           g.addConstant("w", intTensor({8, 3, 3, 3}, DType::I8, -128, 127, rng)),
           g.addConstant("ws", wscale), g.addConstant("wz", intTensor({8}, DType::I8, -5, 5, rng)),
           scalar("ys", 0.11f), g.addConstant("yz", intTensor({}, DType::U8, 120, 120, rng)),
           g.addConstant("bias", intTensor({8}, DType::I32, -3000, 3000, rng))},
          conv3);
  auto conv1 = attrs<ConvAttrs>([](ConvAttrs& a) {
    a.kernel = {1, 1};
    a.strides = {2, 2};
    a.pads = {0, 0, 0, 0};
    a.dilations = {1, 1};
  });
  Node* iconv = add(g, OpKind::ConvInteger, "iconv",
                    {x, g.addConstant("w1", intTensor({5, 6, 1, 1}, DType::U8, 0, 255, rng)),
                     g.addConstant("xz1", intTensor({}, DType::U8, 200, 200, rng)),
                     g.addConstant("wz1", intTensor({}, DType::U8, 131, 131, rng))},
                    conv1);
  Value* a = g.addInput("a", {DType::U8, {2, 3, 37}, {}});
  Tensor bscale(DType::F32, {10});
  for (int i = 0; i < 10; ++i)
    bscale.values<float>()[size_t(i)] = 0.01f / float(i + 1);
  Node* qmm =
      add(g, OpKind::QLinearMatMul, "qmm",
          {a, scalar("as", 0.02f), g.addConstant("az", intTensor({}, DType::U8, 128, 128, rng)),
           g.addConstant("b", intTensor({37, 10}, DType::I8, -128, 127, rng)),
           g.addConstant("bs", bscale), g.addConstant("bz", intTensor({10}, DType::I8, -3, 3, rng)),
           scalar("mys", 0.07f), g.addConstant("myz", intTensor({}, DType::I8, -4, -4, rng))});
  Value* a2 = g.addInput("a2", {DType::I8, {4, 37}, {}});
  Node* imm = add(g, OpKind::MatMulInteger, "imm",
                  {a2, g.addConstant("b2", intTensor({37, 21}, DType::U8, 0, 255, rng)),
                   g.addConstant("a2z", intTensor({}, DType::I8, -9, -9, rng)),
                   g.addConstant("b2z", intTensor({21}, DType::U8, 100, 140, rng))});
  // Per-tensor QuantizeLinear -> DequantizeLinear -> Add -> QuantizeLinear, fused into one loop.
  Value* f = g.addInput("f", {DType::F32, {3, 17}, {}});
  auto q8 = [](DType t) {
    return attrs<QuantizeLinearAttrs>([t](QuantizeLinearAttrs& qa) { qa.outputType = t; });
  };
  Node* q1 = add(g, OpKind::QuantizeLinear, "q1",
                 {f, scalar("qs", 0.5f), g.addConstant("qz", intTensor({}, DType::U8, 3, 3, rng))},
                 q8(DType::U8));
  Node* dq = add(g, OpKind::DequantizeLinear, "dq",
                 {q1->output(0), scalar("qs2", 0.5f),
                  g.addConstant("qz2", intTensor({}, DType::U8, 3, 3, rng))},
                 std::make_shared<QuantAxisAttrs>());
  Node* sum = add(g, OpKind::Add, "sum", {dq->output(0), f});
  Node* q2 = add(g, OpKind::QuantizeLinear, "q2",
                 {sum->output(0), scalar("qs3", 0.25f),
                  g.addConstant("qz3", intTensor({}, DType::I8, -2, -2, rng))},
                 q8(DType::I8));
  for (Node* n : {qconv, iconv, qmm, imm, q2})
    g.addOutput(n->output(0));
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(occurrences(code.source, "triad_rt::qconv2d("), 2u);
  EXPECT_EQ(occurrences(code.source, "triad_rt::qmatmul("), 2u);
  EXPECT_EQ(occurrences(code.source, "triad_rt::quantize_linear<"), 2u) << code.fusionSummary;
  // the chain reads q1's value on: its loop is compiled without GCC's PRE (vectorizes)
  EXPECT_EQ(occurrences(code.source, "TRIAD_QDQ_LOOP"), 1u);
  Tensor fv = randomTensor({3, 17}, rng);
  float special[] = {NAN, INFINITY, -INFINITY, 1.25f, 1.75f, -1.25f, 300.0f, -300.0f, 0.0f, -0.0f};
  for (size_t i = 0; i < std::size(special); ++i)
    fv.values<float>()[i] = special[i];
  std::vector<Tensor> in = {intTensor({2, 6, 11, 9}, DType::U8, 0, 255, rng),
                            intTensor({2, 3, 37}, DType::U8, 0, 255, rng),
                            intTensor({4, 37}, DType::I8, -128, 127, rng), fv};
  checkAgainstInterpreter(g, in, 0, 0);
}

// The byte (u8 x s8) layout of the packed int8 convolution, which symmetric weights take on VNNI
// builds (int8 weights with zero point 0, uint8 ones with 128), and its epilogue requantizing in
// registers on AVX-512, packing blocks of pixels on the thread that multiplies them: output
// channels and pixels that fill no whole tile (13 channels of 91 pixels, a 1x1 of 5 pixels),
// strided rows (their 4-byte words gathered 16 at a time), groups, uint8 and int8 activations,
// per-channel and per-tensor scales, biases large enough for the int32 sums to wrap, a zero
// y_scale; and the depthwise kernel (strided and padded planes). Exact: equal to the interpreter.
TEST(CpuTarget, PackedInt8ByteLayoutConvolutionsMatchTheInterpreter) {
  std::mt19937 rng(31);
  Graph g;
  Value* x = g.addInput("x", {DType::U8, {2, 20, 13, 7}, {}});
  Value* xs8 = g.addInput("xs8", {DType::I8, {1, 12, 9, 9}, {}});
  Value* wide = g.addInput("wide", {DType::U8, {1, 4, 5, 75}, {}});
  Value* big = g.addInput("big", {DType::U8, {1, 8, 12, 12}, {}});
  auto scalar = [&](const std::string& name, float v) {
    return g.addConstant(name, Tensor::fromVector<float>({}, {v}));
  };
  auto convAttrs = [](int64_t k, int64_t stride, int64_t pad, int64_t group) {
    return attrs<ConvAttrs>([=](ConvAttrs& a) {
      a.kernel = {k, k};
      a.strides = {stride, stride};
      a.pads = {pad, pad, pad, pad};
      a.dilations = {1, 1};
      a.group = group;
    });
  };
  int id = 0;
  auto qconv = [&](Value* in, DType xt, int xzp, int64_t oc, int64_t cin, int64_t k, int64_t stride,
                   int64_t pad, int64_t group, DType wt, bool perChannel, DType yt,
                   int biasRange = 20000, float yScale = 0.09f) {
    std::string p = "c" + std::to_string(id++);
    Tensor ws(DType::F32, {perChannel ? oc : 1});
    for (int64_t i = 0; i < ws.numElements(); ++i)
      ws.values<float>()[size_t(i)] = 0.0007f * float(i % 5 + 1);
    int wzp = wt == DType::I8 ? 0 : 128;
    Node* n = add(
        g, OpKind::QLinearConv, p,
        {in, scalar(p + "xs", 0.04f), g.addConstant(p + "xz", intTensor({}, xt, xzp, xzp, rng)),
         g.addConstant(p + "w", intTensor({oc, cin / group, k, k}, wt, wt == DType::I8 ? -128 : 0,
                                          wt == DType::I8 ? 127 : 255, rng)),
         g.addConstant(p + "ws", ws),
         g.addConstant(p + "wz", intTensor({perChannel ? oc : 1}, wt, wzp, wzp, rng)),
         scalar(p + "ys", yScale),
         g.addConstant(p + "yz", intTensor({}, yt, yt == DType::U8 ? 100 : -7,
                                           yt == DType::U8 ? 100 : -7, rng)),
         g.addConstant(p + "b", intTensor({oc}, DType::I32, -biasRange, biasRange, rng))},
        convAttrs(k, stride, pad, group));
    g.addOutput(n->output(0));
    return n;
  };
  qconv(x, DType::U8, 9, 13, 20, 3, 1, 1, 1, DType::I8, true, DType::U8);  // 91 pixels
  qconv(x, DType::U8, 9, 20, 20, 1, 1, 0, 1, DType::I8, false, DType::I8); // pointwise
  qconv(x, DType::U8, 9, 10, 20, 3, 2, 1, 2, DType::I8, true, DType::U8);  // strided, groups
  qconv(x, DType::U8, 9, 9, 20, 1, 3, 0, 1, DType::I8, true, DType::U8);   // 5x3 pixels
  qconv(x, DType::U8, 250, 8, 20, 3, 1, 1, 1, DType::I8, true, DType::U8, 2000000000); // wraps
  qconv(xs8, DType::I8, -3, 17, 12, 3, 1, 0, 1, DType::U8, true, DType::I8); // int8 activations
  qconv(wide, DType::U8, 40, 8, 4, 3, 2, 1, 1, DType::I8, true, DType::U8);  // 38 columns of 75
  qconv(big, DType::U8, 3, 11, 8, 1, 1, 0, 1, DType::I8, true, DType::U8);   // 144 pixels
  // depthwise: stride 2 on rows of 75 (phases split 16 columns at a time), stride 1 padded
  qconv(wide, DType::U8, 40, 4, 4, 3, 2, 1, 4, DType::I8, true, DType::U8);
  qconv(big, DType::U8, 3, 8, 8, 3, 1, 1, 8, DType::I8, false, DType::U8);
  // y_scale 0: infinite multipliers, NaN where a sum is 0 (the zero point)
  qconv(x, DType::U8, 9, 8, 20, 1, 2, 0, 1, DType::I8, false, DType::U8, 0, 0.0f);
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(occurrences(code.source, "triad_rt::qconv2d("), 11u);
  std::vector<Tensor> in = {intTensor({2, 20, 13, 7}, DType::U8, 0, 255, rng),
                            intTensor({1, 12, 9, 9}, DType::I8, -128, 127, rng),
                            intTensor({1, 4, 5, 75}, DType::U8, 0, 255, rng),
                            intTensor({1, 8, 12, 12}, DType::U8, 0, 255, rng)};
  checkAgainstInterpreter(g, in, 0, 0);
  // One thread: every group in blocks of pixels (two threads: those with 4 or more panels of 32).
  cpu::CpuOptions one = testOptions();
  one.threads = 1;
  expectClose(cpu::makeCpuTarget(one)->compile(g)->run(in), Interpreter(g).run(in), 0, 0);
}

// TRIAD_CPU_QDQ (int or float: which kernels a QDQ model runs on, for comparisons) refuses any
// other value with a usage error naming the variable, instead of ignoring it.
TEST(CpuTarget, QdqOverrideRejectsUnknownValues) {
  Graph g;
  Value* f = g.addInput("f", {DType::F32, {4}, {}});
  Node* q =
      add(g, OpKind::QuantizeLinear, "q",
          {f, g.addConstant("s", Tensor::fromVector<float>({}, {0.5f}))},
          attrs<QuantizeLinearAttrs>([](QuantizeLinearAttrs& a) { a.outputType = DType::U8; }));
  g.addOutput(q->output(0));
  struct Unset {
    ~Unset() { unsetenv("TRIAD_CPU_QDQ"); }
  } unset;
  setenv("TRIAD_CPU_QDQ", "integer", 1);
  try {
    cpu::makeCpuTarget(testOptions())->compile(g);
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("TRIAD_CPU_QDQ='integer'"), std::string::npos) << e.what();
  }
  for (const char* v : {"int", "float", ""}) {
    setenv("TRIAD_CPU_QDQ", v, 1);
    checkAgainstInterpreter(g, {Tensor::fromVector<float>({4}, {1.0f, -3.0f, 2.25f, 400.0f})}, 0,
                            0);
  }
}

// Channel-blocked (NCHW16c) convolutions: the layouts chosen between them and at the edges
// (NCHW graph input in, a pooled NCHW consumer out, a graph output that stays NCHW), depthwise
// and dense kernels, a residual Add read blocked, a channel-broadcast operand and Clip in the
// epilogue; the same graph compiled without blocking agrees.
TEST(CpuTarget, ChannelBlockedConvolutionChains) {
  std::mt19937 rng(11);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 16, 10, 10}, {}});
  auto conv = [&](const std::string& name, Value* in, int64_t oc, int64_t k, int64_t stride,
                  int64_t group) { return addConv(g, rng, name, in, oc, k, stride, group); };
  Value* dw0 = conv("dw0", x, 16, 3, 2, 16); // [2, 16, 5, 5], NCHW in
  auto clipAttrs = std::make_shared<ClipAttrs>();
  Value* lo = g.addConstant("clip.min", Tensor::fromVector<float>({}, {0.0f}));
  Value* hi = g.addConstant("clip.max", Tensor::fromVector<float>({}, {6.0f}));
  Node* clip = add(g, OpKind::Clip, "clip", {dw0, lo, hi}, clipAttrs);
  Value* a = conv("expand", clip->output(0), 32, 1, 1, 1); // [2, 32, 5, 5]
  Node* relu = add(g, OpKind::Relu, "expand_relu", {a});
  Value* dw1 = conv("dw1", relu->output(0), 32, 3, 1, 32);
  Value* skip = conv("skip", relu->output(0), 32, 1, 1, 1); // fan-out of a blocked value
  Value* body = conv("body", dw1, 32, 3, 1, 1);
  Node* sum = add(g, OpKind::Add, "residual", {body, skip});
  Value* spatial = g.addConstant("spatial", randomTensor({1, 1, 5, 5}, rng));
  Node* scale = add(g, OpKind::Mul, "spatial_scale", {sum->output(0), spatial});
  Node* relu2 = add(g, OpKind::Relu, "relu2", {scale->output(0)});
  Value* head = conv("head", relu2->output(0), 48, 1, 1, 1); // blocked in, NCHW out
  Node* gap = add(g, OpKind::GlobalAveragePool, "gap", {head});
  Value* side = conv("side", relu2->output(0), 16, 3, 2, 1); // a graph output: NCHW
  g.addOutput(gap->output(0));
  g.addOutput(side);
  cpu::GeneratedCode code = cpu::generateCpp(g);
  const std::string& src = code.source;
  auto count = [&](const std::string& what) { return occurrences(src, what); };
  EXPECT_EQ(count("// layout: NCHW in, NCHW16c out"), 1u) << src;    // dw0
  EXPECT_EQ(count("// layout: NCHW16c in, NCHW16c out"), 4u) << src; // expand dw1 skip body
  EXPECT_EQ(count("// layout: NCHW16c in, NCHW out"), 2u) << src;    // head, side
  EXPECT_EQ(count("triad_rt::conv2d_nchwc_nchw("), 2u);
  std::vector<Tensor> in = {randomTensor({2, 16, 10, 10}, rng)};
  checkAgainstInterpreter(g, in, 1e-4, 1e-4); // sums of up to 288 products of O(1) terms
  cpu::CodeGenOptions plain;
  plain.blockedLayout = false;
  EXPECT_EQ(cpu::generateCpp(g, plain).source.find("conv2d_nchwc"), std::string::npos);
}

// Blocked 3x3 stride-1 convolutions that the run-time computes by Winograd (automatic choice:
// F(2x2) on a 7x7 plane of one image, F(4x4) on two 13x10 planes), inside a chain: bias, ReLU
// and a residual Add (a 1x1 projection) in their epilogues, an NCHW graph input and outputs.
TEST(CpuTarget, WinogradConvolutionsInBlockedChains) {
  std::mt19937 rng(23);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {1, 32, 7, 7}, {}});
  Value* x2 = g.addInput("x2", {DType::F32, {2, 32, 13, 10}, {}});
  auto conv = [&](const std::string& name, Value* in, int64_t oc, int64_t k) {
    return addConv(g, rng, name, in, oc, k, 1, 1);
  };
  Node* r1 = add(g, OpKind::Relu, "relu1", {conv("conv1", x, 32, 3)});
  Value* body = conv("conv2", r1->output(0), 48, 3);
  Value* proj = conv("proj", x, 48, 1);
  Node* sum = add(g, OpKind::Add, "residual", {body, proj});
  Node* r2 = add(g, OpKind::Relu, "relu2", {sum->output(0)});
  Node* r3 = add(g, OpKind::Relu, "relu3", {conv("conv3", x2, 32, 3)});
  g.addOutput(r2->output(0));
  g.addOutput(conv("conv4", r3->output(0), 32, 3));
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_NE(code.source.find("// layout: NCHW16c in, NCHW out"), std::string::npos);
  // The interpreter's tolerances (as the conformance suite's): F(4x4)'s rounding scales with a
  // layer's largest outputs, so conv4's outputs near 0 need rtol 1e-3 (at rtol 1e-4 one failed:
  // error 2.7e-4 on -0.86), where the direct kernel met 1e-4.
  checkAgainstInterpreter(g, {randomTensor({1, 32, 7, 7}, rng), randomTensor({2, 32, 13, 10}, rng)},
                          1e-3, 1e-4);
}

// Channel counts that are no multiple of 16 at the edges of a blocked chain (MobileNetV2's stem
// and its 24-channel bottleneck): a 3-channel stem reads its NCHW input planar and writes
// blocked; a 24-channel output is written NCHW from padded blocks, and a convolution from 24
// channels reads it planar (1x1 in place, 3x3 through padded tap rows); a 24-channel depthwise
// stays NCHW.
TEST(CpuTarget, ChannelBlockedPlanarInputsAndPartialBlocks) {
  std::mt19937 rng(12);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {1, 3, 18, 17}, {}});
  auto conv = [&](const std::string& name, Value* in, int64_t oc, int64_t k, int64_t stride,
                  int64_t group) { return addConv(g, rng, name, in, oc, k, stride, group); };
  Value* stem = conv("stem", x, 32, 3, 2, 1);              // [1, 32, 9, 9]: planar in, blocked out
  Value* dw = conv("dw", stem, 32, 3, 1, 32);              // blocked in and out
  Value* proj = conv("proj", dw, 24, 1, 1, 1);             // blocked in, 24 channels NCHW out
  Value* expand = conv("expand", proj, 48, 1, 1, 1);       // planar 1x1 in, blocked out
  Value* dw24 = conv("dw24", proj, 24, 3, 1, 24);          // a 24-channel depthwise: NCHW
  Value* back = conv("back", dw24, 32, 3, 1, 1);           // planar 3x3 in, blocked out
  Value* head = conv("head", expand, 32, 1, 1, 1);         // blocked in and out
  Node* sum = add(g, OpKind::Add, "sum", {head, back});    // in back's epilogue, head read blocked
  Value* last = conv("last", sum->output(0), 16, 1, 1, 1); // blocked in, NCHW out
  Node* gap = add(g, OpKind::GlobalAveragePool, "gap", {last});
  g.addOutput(gap->output(0));
  cpu::GeneratedCode code = cpu::generateCpp(g);
  const std::string& src = code.source;
  auto count = [&](const std::string& what) { return occurrences(src, what); };
  EXPECT_EQ(count("// layout: NCHW in, NCHW16c out"), 3u) << src;    // stem expand back
  EXPECT_EQ(count("// layout: NCHW16c in, NCHW16c out"), 2u) << src; // dw head
  EXPECT_EQ(count("// layout: NCHW16c in, NCHW out"), 2u) << src;    // proj last
  EXPECT_EQ(count("triad_rt::conv2d("), 1u) << src;                  // dw24
  std::vector<Tensor> in = {randomTensor({1, 3, 18, 17}, rng)};
  checkAgainstInterpreter(g, in, 1e-4, 1e-4);
}

// Reductions compiled natively (double accumulators, as the interpreter): non-contiguous axes,
// keepdims off, LogSumExp's shift, NaN in Max, ArgMax/ArgMin with ties.
TEST(CpuTarget, ReductionsAndArgReductions) {
  std::mt19937 rng(5);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 3, 4, 5}, {}});
  auto reduce = [&](OpKind k, const std::string& name, std::vector<int64_t> axes, bool keep) {
    auto a = attrs<ReduceAttrs>([&](ReduceAttrs& r) {
      r.axes = axes;
      r.keepdims = keep;
    });
    g.addOutput(add(g, k, name, {x}, a)->output(0));
  };
  reduce(OpKind::ReduceMean, "mean_1_3", {1, 3}, true);
  reduce(OpKind::ReduceSum, "sum_all", {0, 1, 2, 3}, false);
  reduce(OpKind::ReduceMax, "max_0_2", {0, 2}, false);
  reduce(OpKind::ReduceMin, "min_3", {3}, true);
  reduce(OpKind::ReduceProd, "prod_2", {2}, true);
  reduce(OpKind::ReduceL1, "l1_1", {1}, false);
  reduce(OpKind::ReduceL2, "l2_2_3", {2, 3}, true);
  reduce(OpKind::ReduceLogSum, "logsum_2", {2}, true); // NaN where a sum is negative
  reduce(OpKind::ReduceLogSumExp, "lse_3", {3}, false);
  reduce(OpKind::ReduceSumSquare, "sumsq_1_2", {1, 2}, true);
  reduce(OpKind::ReduceMean, "noop", {}, true);
  for (auto [k, last] : {std::pair{OpKind::ArgMax, false}, std::pair{OpKind::ArgMin, true}}) {
    auto a = attrs<ArgReduceAttrs>([&, last = last](ArgReduceAttrs& r) {
      r.axis = 2;
      r.keepdims = last;
      r.selectLastIndex = last;
    });
    g.addOutput(add(g, k, last ? "argmin_2" : "argmax_2", {x}, a)->output(0));
  }
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(code.source.find("no native lowering"), std::string::npos);
  Tensor in = randomTensor({2, 3, 4, 5}, rng);
  // Ties for the arg-reductions; positive sums for LogSum in image 0, mixed signs in image 1.
  for (int64_t i = 0; i < in.numElements(); ++i) {
    float& v = in.data<float>()[i];
    v = i % 7 == 0 ? 0.5f : i < 60 ? std::fabs(v) + 0.1f : v;
  }
  checkAgainstInterpreter(g, {in}, 1e-5, 1e-6);
  in.data<float>()[3] = std::nanf(""); // the NaN sticks in Max/Min, as in the interpreter
  auto exe = cpu::makeCpuTarget(testOptions())->compile(g);
  std::vector<Tensor> ins = {in};
  std::vector<Tensor> got = exe->run(ins), want = Interpreter(g).run(ins);
  EXPECT_TRUE(std::isnan(got[2].getDouble(3)) && std::isnan(want[2].getDouble(3)));
  EXPECT_TRUE(std::isnan(got[3].getDouble(0)) && std::isnan(want[3].getDouble(0)));
}

// Losses, CumSum, Hardmax, Trilu, Dropout with its mask and LayerNormalization's statistics,
// all native; a target class out of range fails the run with the layer's name.
TEST(CpuTarget, LossesScansAndMasks) {
  std::mt19937 rng(9);
  Graph g;
  Value* scores = g.addInput("scores", {DType::F32, {3, 4, 2}, {}});
  Value* target = g.addInput("target", {DType::I64, {3, 2}, {}});
  Value* weight = g.addConstant("weight", randomTensor({4}, rng));
  auto loss = [&](OpKind k, const std::string& name, LossReduction r, std::optional<int64_t> ig,
                  bool withWeight) {
    auto a = attrs<LossAttrs>([&](LossAttrs& l) {
      l.reduction = r;
      l.ignoreIndex = ig;
    });
    std::vector<Value*> in = {scores, target};
    if (withWeight) in.push_back(weight);
    Node* nd = add(g, k, name, in, a, k == OpKind::SoftmaxCrossEntropyLoss ? 2 : 1);
    for (Value* v : nd->outputs())
      g.addOutput(v);
  };
  loss(OpKind::NegativeLogLikelihoodLoss, "nll_mean", LossReduction::Mean, std::nullopt, true);
  loss(OpKind::NegativeLogLikelihoodLoss, "nll_none", LossReduction::None, 1, false);
  loss(OpKind::SoftmaxCrossEntropyLoss, "sce_sum", LossReduction::Sum, 2, true);
  auto cs = attrs<CumSumAttrs>([](CumSumAttrs& a) {
    a.axis = 1;
    a.exclusive = true;
    a.reverse = true;
  });
  Value* axis = g.addConstant("axis", Tensor::fromVector<int64_t>({}, {1}));
  g.addOutput(add(g, OpKind::CumSum, "cumsum", {scores, axis}, cs)->output(0));
  auto hm = attrs<SoftmaxAttrs>([](SoftmaxAttrs& a) { a.axes = {1}; });
  g.addOutput(add(g, OpKind::Hardmax, "hardmax", {scores}, hm)->output(0));
  auto tri = attrs<TriluAttrs>([](TriluAttrs& a) {
    a.upper = false;
    a.k = -1;
  });
  g.addOutput(add(g, OpKind::Trilu, "tril", {target}, tri)->output(0));
  Node* drop = add(g, OpKind::Dropout, "dropout", {scores}, nullptr, 2);
  g.addOutput(drop->output(1));
  auto ln = attrs<LayerNormAttrs>([](LayerNormAttrs& a) { a.axis = 1; });
  Value* gamma = g.addConstant("gamma", randomTensor({4, 2}, rng));
  Node* norm = add(g, OpKind::LayerNormalization, "ln", {drop->output(0), gamma}, ln, 3);
  for (Value* v : norm->outputs())
    g.addOutput(v);
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(code.source.find("no native lowering"), std::string::npos);
  Tensor t = Tensor::fromVector<int64_t>({3, 2}, {0, 3, 1, 2, 2, 1});
  auto exe = checkAgainstInterpreter(g, {randomTensor({3, 4, 2}, rng), t}, 1e-5, 1e-6);
  Tensor bad = Tensor::fromVector<int64_t>({3, 2}, {0, 3, 7, 2, 2, 1});
  std::vector<Tensor> in = {randomTensor({3, 4, 2}, rng), bad};
  try {
    exe->run(in);
    ADD_FAILURE() << "a target class of 7 for 4 classes ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'nll_mean': a target class is out of range"),
              std::string::npos)
        << e.what();
  }
}

// The default thread count is the physical cores the process may use (SMT siblings once).
TEST(CpuTarget, DefaultThreadsArePhysicalCores) {
  int cores = physicalCores();
  unsigned logical = std::thread::hardware_concurrency();
  EXPECT_GE(cores, 1);
  if (logical > 0) {
    EXPECT_LE(cores, int(logical));
  }
  EXPECT_EQ(cpu::defaultThreads(), cores);
}

// Resize from the reference's per-axis taps: linear (half pixel) and cubic with antialias
// downscaling, nearest (asymmetric, floor) upscaling, an axis that keeps its size.
TEST(CpuTarget, ResizeFromReferenceTaps) {
  std::mt19937 rng(13);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {1, 2, 5, 6}, {}});
  auto resize = [&](const std::string& name, ResizeMode mode, ResizeCoord coord, bool aa,
                    Shape out) {
    auto a = attrs<ResizeAttrs>([&](ResizeAttrs& r) {
      r.mode = mode;
      r.coord = coord;
      r.nearest = NearestMode::Floor;
      r.antialias = aa;
      r.outShape = out;
      for (size_t d = 0; d < out.size(); ++d)
        r.scales.push_back(double(out[d]) / double(x->type().shape[d]));
    });
    g.addOutput(add(g, OpKind::Resize, name, {x}, a)->output(0));
  };
  resize("linear_up", ResizeMode::Linear, ResizeCoord::HalfPixel, false, {1, 2, 10, 9});
  resize("cubic_aa_down", ResizeMode::Cubic, ResizeCoord::HalfPixel, true, {1, 2, 3, 4});
  resize("nearest_up", ResizeMode::Nearest, ResizeCoord::Asymmetric, false, {1, 2, 15, 12});
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(code.source.find("no native lowering"), std::string::npos);
  checkAgainstInterpreter(g, {randomTensor({1, 2, 5, 6}, rng)}, 1e-5, 1e-6);
}

// ConvTranspose through a GEMM and the reference's window table (stored with the weights):
// groups, stride 2, dilation, asymmetric pads, output padding, bias; and a 1-D one.
TEST(CpuTarget, ConvTransposeGroupsStridesPadding) {
  std::mt19937 rng(17);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 4, 5, 6}, {}});
  Value* w = g.addConstant("w", randomTensor({4, 3, 3, 2}, rng)); // [C, M/group, kh, kw]
  Value* b = g.addConstant("b", randomTensor({6}, rng));
  auto a = attrs<ConvTransposeAttrs>([](ConvTransposeAttrs& t) {
    t.kernel = {3, 2};
    t.strides = {2, 3};
    t.pads = {1, 0, 0, 1};
    t.dilations = {2, 1};
    t.outputPadding = {1, 0};
    t.group = 2;
  });
  g.addOutput(add(g, OpKind::ConvTranspose, "up", {x, w, b}, a)->output(0));
  Value* x1 = g.addInput("x1", {DType::F32, {1, 3, 7}, {}});
  Value* w1 = g.addConstant("w1", randomTensor({3, 2, 4}, rng));
  auto a1 = attrs<ConvTransposeAttrs>([](ConvTransposeAttrs& t) {
    t.kernel = {4};
    t.strides = {2};
    t.pads = {1, 1};
    t.dilations = {1};
    t.outputPadding = {0};
  });
  g.addOutput(add(g, OpKind::ConvTranspose, "up1d", {x1, w1}, a1)->output(0));
  cpu::GeneratedCode code = cpu::generateCpp(g);
  EXPECT_EQ(code.source.find("no native lowering"), std::string::npos);
  checkAgainstInterpreter(g, {randomTensor({2, 4, 5, 6}, rng), randomTensor({1, 3, 7}, rng)}, 1e-5,
                          1e-5);
}

TEST(CpuTarget, GemmAndBatchedMatMulWithBroadcasting) {
  std::mt19937 rng(2);
  Graph g;
  Value* a = g.addInput("a", {DType::F32, {2, 1, 5, 7}, {}});
  Value* bm = g.addInput("b", {DType::F32, {3, 7, 6}, {}});
  Node* mm = add(g, OpKind::MatMul, "batched", {a, bm}); // [2, 3, 5, 6]
  Value* a2 = g.addInput("a2", {DType::F32, {4, 33}, {}});
  Value* wt = g.addConstant("wt", randomTensor({17, 33}, rng));
  Value* bias = g.addConstant("bias", randomTensor({4, 1}, rng));
  auto gemm = attrs<GemmAttrs>([](GemmAttrs& at) {
    at.transB = true;
    at.alpha = 0.5f;
    at.beta = 2.0f;
  });
  Node* gm = add(g, OpKind::Gemm, "gemm", {a2, wt, bias}, gemm); // [4, 17]
  Node* act = add(g, OpKind::Tanh, "tanh", {gm->output(0)});
  Value* v = g.addConstant("vec", randomTensor({17}, rng));
  Node* dot = add(g, OpKind::MatMul, "matvec", {act->output(0), v}); // [4]
  g.addOutput(mm->output(0));
  g.addOutput(dot->output(0));
  checkAgainstInterpreter(g, {randomTensor({2, 1, 5, 7}, rng), randomTensor({3, 7, 6}, rng),
                              randomTensor({4, 33}, rng)});
}

TEST(CpuTarget, DataMovementSoftmaxAndLayerNorm) {
  std::mt19937 rng(3);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 3, 4, 5}, {}});
  Node* tr =
      add(g, OpKind::Transpose, "transpose", {x}, attrs<TransposeAttrs>([](TransposeAttrs& a) {
            a.perm = {0, 2, 1, 3};
          }));
  Node* sl = add(g, OpKind::Slice, "slice", {tr->output(0)}, attrs<SliceAttrs>([](SliceAttrs& a) {
                   a.starts = {0, 3, 0, 4};
                   a.steps = {1, -1, 2, -2};
                   a.outShape = {2, 4, 2, 3};
                 }));
  Node* cc = add(g, OpKind::Concat, "concat", {sl->output(0), sl->output(0)},
                 attrs<AxisAttrs>([](AxisAttrs& a) { a.axis = 3; })); // [2, 4, 2, 6]
  Node* sp = add(g, OpKind::Split, "split", {cc->output(0)}, attrs<SplitAttrs>([](SplitAttrs& a) {
                   a.axis = 3;
                   a.split = {2, 4};
                 }),
                 2);
  Node* sm = add(g, OpKind::Softmax, "softmax", {sp->output(1)},
                 attrs<SoftmaxAttrs>([](SoftmaxAttrs& a) { a.axes = {3}; }));
  Value* scale = g.addConstant("scale", randomTensor({4}, rng));
  Value* shift = g.addConstant("shift", randomTensor({4}, rng));
  Node* ln = add(g, OpKind::LayerNormalization, "layernorm", {sm->output(0), scale, shift},
                 attrs<LayerNormAttrs>([](LayerNormAttrs& a) {
                   a.axis = 3;
                   a.epsilon = 1e-5f;
                 }));
  Value* table = g.addConstant("table", randomTensor({5, 3}, rng));
  Value* idx = g.addInput("idx", {DType::I64, {2, 2}, {}});
  Node* ga = add(g, OpKind::Gather, "gather", {table, idx},
                 attrs<AxisAttrs>([](AxisAttrs& a) { a.axis = 0; }));
  g.addOutput(ln->output(0));
  g.addOutput(sp->output(0));
  g.addOutput(ga->output(0));
  Tensor ids = Tensor::fromVector<int64_t>({2, 2}, {0, 4, -1, 2});
  auto exe = checkAgainstInterpreter(g, {randomTensor({2, 3, 4, 5}, rng), ids});
  // An index out of range is a run-time error naming the node, not a wild read.
  Tensor bad = Tensor::fromVector<int64_t>({2, 2}, {0, 5, 1, 2});
  try {
    exe->run(std::vector<Tensor>{randomTensor({2, 3, 4, 5}, rng), bad});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
  }
}

// A node without a native lowering (Neg on int32) runs on the host between compiled layers;
// views, a graph input returned as an output and a duplicated output are copied correctly.
TEST(CpuTarget, HostFallbackViewsAndOutputAliases) {
  std::mt19937 rng(4);
  Graph g;
  Value* x = g.addInput("x", {DType::I32, {3, 4}, {}});
  Node* half = add(g, OpKind::Cast, "to_half", {x},
                   attrs<CastAttrs>([](CastAttrs& a) { a.to = DType::F16; }));
  // float16 Erf runs on the host (the CPU's float erf is an approximation; the reference's
  // float16 math is std::erf in float).
  Node* erf = add(g, OpKind::Erf, "erf_half", {half->output(0)});
  ASSERT_FALSE(cpu::nativeSupport(*erf).ok);
  Node* cast = add(g, OpKind::Cast, "to_float", {erf->output(0)},
                   attrs<CastAttrs>([](CastAttrs& a) { a.to = DType::F32; }));
  Node* rs = add(g, OpKind::Reshape, "reshape", {cast->output(0)},
                 attrs<ReshapeAttrs>([](ReshapeAttrs& a) {
                   a.shape = {2, 6};
                 }));
  Node* relu = add(g, OpKind::Relu, "relu", {rs->output(0)});
  Node* fl = add(g, OpKind::Flatten, "flatten", {relu->output(0)},
                 attrs<FlattenAttrs>([](FlattenAttrs& a) { a.axis = 0; }));
  g.addOutput(fl->output(0));
  g.addOutput(x);
  g.addOutput(fl->output(0));
  g.addOutput(rs->output(0));
  Tensor xi = Tensor::fromVector<int32_t>({3, 4}, {1, -2, 3, -4, 0, -1, 2, -3, 4, -5, 1, 0});
  auto exe = checkAgainstInterpreter(g, {xi});
  auto* cpuExe = dynamic_cast<cpu::CpuExecutable*>(exe.get());
  ASSERT_NE(cpuExe, nullptr);
  EXPECT_EQ(cpuExe->build().code.hostNodes.size(), 1u);
  // Standalone sources cannot call the host: refused, naming the node.
  cpu::CodeGenOptions standalone;
  standalone.standalone = true;
  try {
    cpu::generateCpp(g, standalone);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("erf_half"), std::string::npos) << e.what();
  }
}

TEST(CpuTarget, SecondCompileComesFromTheCache) {
  std::mt19937 rng(5);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {8}, {}});
  Value* c = g.addConstant("c", randomTensor({8}, rng));
  g.addOutput(add(g, OpKind::Add, "add_cache_probe", {x, c})->output(0));
  auto t = cpu::makeCpuTarget(testOptions());
  auto first = t->compile(g);
  auto second = t->compile(g);
  EXPECT_TRUE(dynamic_cast<cpu::CpuExecutable&>(*second).build().cached);
  EXPECT_TRUE(fs::exists(dynamic_cast<cpu::CpuExecutable&>(*second).build().dir / "model.so"));
}

// A model whose layers are split over several translation units (compiled in parallel, linked
// with the run-time kernels compiled once into their own cache entry) computes what the one-unit
// build computes, bit for bit, and the kernels' entry is shared by both.
TEST(CpuTarget, LayersSplitOverTranslationUnits) {
  std::mt19937 rng(11);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {1, 16, 10, 10}, {}});
  auto convAttrs = attrs<ConvAttrs>([](ConvAttrs& a) {
    a.kernel = {3, 3};
    a.strides = {1, 1};
    a.pads = {1, 1, 1, 1};
    a.dilations = {1, 1};
  });
  Value* v = x;
  for (int i = 0; i < 5; ++i) {
    Value* w = g.addConstant(fmt::format("w{}", i), randomTensor({16, 16, 3, 3}, rng));
    Value* b = g.addConstant(fmt::format("b{}", i), randomTensor({16}, rng));
    Node* conv = add(g, OpKind::Conv, fmt::format("conv{}", i), {v, w, b}, convAttrs);
    v = add(g, OpKind::Relu, fmt::format("relu{}", i), {conv->output(0)})->output(0);
  }
  Node* gap = add(g, OpKind::GlobalAveragePool, "gap", {v});
  g.addOutput(gap->output(0));
  g.addOutput(v);

  cpu::CodeGenOptions co;
  co.maxUnits = 3;
  co.unitChars = 1;
  cpu::GeneratedCode code = cpu::generateCpp(g, co);
  ASSERT_EQ(code.units, (std::vector<std::string>{"model.cpp", "model_1.cpp", "model_2.cpp"}));
  ASSERT_EQ(code.extraFiles.size(), 3u);
  EXPECT_EQ(code.extraFiles[0].first, "model_internal.h");
  EXPECT_NE(code.extraFiles[0].second.find("int layer_conv0_relu0(State& m"), std::string::npos)
      << code.extraFiles[0].second;
  EXPECT_EQ(cpu::generateCpp(g).units, std::vector<std::string>{"model.cpp"});
  EXPECT_TRUE(cpu::generateCpp(g).extraFiles.empty());

  std::vector<Tensor> in{randomTensor({1, 16, 10, 10}, rng)};
  cpu::CpuOptions split = testOptions(), one = testOptions();
  split.maxUnits = 3;
  split.unitChars = 1;
  one.maxUnits = 1;
  auto a = cpu::makeCpuTarget(split)->compile(g);
  auto b = cpu::makeCpuTarget(one)->compile(g);
  const cpu::BuildInfo& ba = dynamic_cast<cpu::CpuExecutable&>(*a).build();
  EXPECT_EQ(ba.code.units.size(), 3u);
  EXPECT_TRUE(fs::exists(ba.dir / "model_2.cpp"));
  EXPECT_FALSE(fs::exists(ba.dir / "model.o")); // objects are not kept in the entry
  std::vector<Tensor> ya = a->run(in), yb = b->run(in);
  {
    SCOPED_TRACE("three units against one");
    expectClose(ya, yb, 0, 0);
  }
  {
    SCOPED_TRACE("against the interpreter");
    expectClose(ya, Interpreter(g).run(in), 1e-4, 2e-3); // values up to ~20 after five layers
  }
  // One kernels entry (this compiler and these flags) serves both builds.
  size_t kernels = 0;
  for (const auto& e : fs::directory_iterator(testOptions().cacheDir / "kernels"))
    kernels += e.is_directory() && fs::exists(e.path() / "triad_kernels.o");
  EXPECT_GE(kernels, 1u);
}

// An elementwise chain takes a node's other operand along when it is the single use of an
// elementwise node (a residual Add's two DequantizeLinear in one loop, no float tensor between);
// one used twice stays a group of its own.
TEST(CpuTarget, ElementwiseChainTakesSingleUseOperandProducers) {
  std::mt19937 rng(8);
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "second operand used twice" : "second operand used once");
    Graph g;
    Value* a = g.addInput("a", {DType::U8, {3, 40}, {}});
    Value* b = g.addInput("b", {DType::U8, {3, 40}, {}});
    auto dq = [&](const std::string& name, Value* v, float scale) {
      return add(g, OpKind::DequantizeLinear, name,
                 {v, g.addConstant(name + ".s", Tensor::fromVector<float>({}, {scale})),
                  g.addConstant(name + ".z", intTensor({}, DType::U8, 7, 7, rng))},
                 std::make_shared<QuantAxisAttrs>())
          ->output(0);
    };
    Value* da = dq("dqa", a, 0.05f);
    Value* db = dq("dqb", b, 0.03f);
    Node* sum = add(g, OpKind::Add, "sum", {da, db});
    Node* q =
        add(g, OpKind::QuantizeLinear, "q",
            {sum->output(0), g.addConstant("qs", Tensor::fromVector<float>({}, {0.07f}))},
            attrs<QuantizeLinearAttrs>([](QuantizeLinearAttrs& qa) { qa.outputType = DType::U8; }));
    g.addOutput(q->output(0));
    if (shared) g.addOutput(add(g, OpKind::Relu, "relu", {db})->output(0));
    auto groups = formFusionGroups(g, cpu::cpuFusionPolicy());
    size_t withSum = 0;
    for (const FusionGroup& grp : groups)
      if (std::find(grp.nodes.begin(), grp.nodes.end(), sum) != grp.nodes.end())
        withSum = grp.nodes.size();
    EXPECT_EQ(withSum, shared ? 3u : 4u) << describeFusion(groups);
    checkAgainstInterpreter(
        g, {intTensor({3, 40}, DType::U8, 0, 255, rng), intTensor({3, 40}, DType::U8, 0, 255, rng)},
        0, 0);
  }
}

// Elementwise chains write over an operand that dies there; lifetimes that do not overlap
// share arena bytes.
TEST(CpuTarget, MemoryPlanReusesBuffersAndWritesInPlace) {
  std::mt19937 rng(6);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {64, 64}, {}});
  Value* w = g.addConstant("w", randomTensor({64, 64}, rng));
  Value* cur = x;
  for (int i = 0; i < 4; ++i) {
    Node* mm = add(g, OpKind::MatMul, fmt::format("mm{}", i), {cur, w});
    Node* sm = add(g, OpKind::Softmax, fmt::format("sm{}", i), {mm->output(0)},
                   attrs<SoftmaxAttrs>([](SoftmaxAttrs& a) { a.axes = {1}; }));
    // Exp reads the softmax output twice (not fusable into it) and may overwrite it.
    Node* e = add(g, OpKind::Exp, fmt::format("exp{}", i), {sm->output(0)});
    cur = e->output(0);
  }
  g.addOutput(cur);
  FusionPolicy policy = cpu::cpuFusionPolicy();
  auto groups = formFusionGroups(g, policy);
  MemoryPlan plan = planMemory(g, groups);
  EXPECT_GT(plan.inPlaceCount, 0);
  EXPECT_LT(plan.arenaBytes, plan.unsharedBytes);
  EXPECT_LE(plan.arenaBytes, 2 * 64 * 64 * 4 + 128); // two live 16 KiB buffers at most
  checkAgainstInterpreter(g, {randomTensor({64, 64}, rng)});
}

} // namespace

// LayerNorm and Softmax spelled out op by op, as exporters below opset 17 write them: the
// default pipeline fuses each into one node, and the compiled model matches the interpreter on
// the graph as written.
TEST(CpuTarget, SpelledOutLayerNormAndSoftmaxAfterFusion) {
  std::mt19937 rng(6);
  for (bool affine : {false, true}) {
    Graph written = testutil::layerNormPattern(false, affine);
    Graph fused = testutil::layerNormPattern(false, affine);
    defaultPipeline().run(fused);
    ASSERT_EQ(fused.nodes().size(), 2u) << printGraph(fused); // LayerNormalization, Relu
    std::vector<Tensor> x{randomTensor({2, 3, 8}, rng)};
    auto exe = cpu::makeCpuTarget(testOptions())->compile(fused);
    expectClose(exe->run(x), Interpreter(written).run(x), 1e-5, 1e-5);
  }
  Graph written = testutil::softmaxPattern(true);
  Graph fused = testutil::softmaxPattern(true);
  defaultPipeline().run(fused);
  ASSERT_EQ(fused.nodes().size(), 1u) << printGraph(fused);
  EXPECT_EQ(fused.nodes()[0]->kind(), OpKind::Softmax);
  std::vector<Tensor> x{randomTensor({2, 5, 3}, rng)};
  auto exe = cpu::makeCpuTarget(testOptions())->compile(fused);
  expectClose(exe->run(x), Interpreter(written).run(x), 1e-5, 1e-6);
}
