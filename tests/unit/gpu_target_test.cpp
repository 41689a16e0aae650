// The GPU target end to end: one OpenCL program per model built through the binary cache, run on
// the default OpenCL device (PoCL in CI) and checked against the reference interpreter on the
// shipped models and on hand-built graphs that reach every lowering (fused GEMM/conv epilogues,
// broadcast and typed elementwise chains, batched MatMul, pooling, reductions, data movement,
// views and output aliases, host fallback), plus profiling, the tuning database and errors.
// Without an OpenCL platform every test reports itself skipped with the reason.
#include "GraphBuild.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuCodeGen.h"
#include "gpu/GpuTarget.h"
#include "gpu/Tuner.h"
#include "gpu_TestUtil.h"
#include "ir/Interpreter.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Elementwise.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"
#include "ir/ops/Reduce.h"
#include "ir/passes/Pass.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <gtest/gtest.h>

using namespace triad;
using namespace triad::ir;
using testutil::add;
using testutil::attrs;
using testutil::randomTensor;
namespace fs = std::filesystem;

namespace {

using gputest::programOf;

gpu::GpuOptions testOptions() {
  return gputest::targetOptions(true);
}

void expectClose(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
    for (int64_t k = 0; k < got[i].numElements(); ++k) {
      double g = got[i].getDouble(k), w = want[i].getDouble(k);
      ASSERT_LE(std::fabs(g - w), atol + rtol * std::fabs(w))
          << "output " << i << " element " << k << ": " << g << " vs " << w;
    }
  }
}

/// Compiles `g` for the GPU and compares with the interpreter on `inputs`.
std::unique_ptr<Executable> checkAgainstInterpreter(const Graph& g, const std::vector<Tensor>& in,
                                                    double rtol = 1e-4, double atol = 1e-5,
                                                    gpu::GpuOptions o = testOptions()) {
  auto exe = gpu::makeGpuTarget(o)->compile(g);
  expectClose(exe->run(in), Interpreter(g).run(in), rtol, atol);
  return exe;
}

size_t stepsOfKind(const gpu::GpuProgram& p, const std::string& kind) {
  size_t n = 0;
  for (const gpu::GpuStep& s : p.steps)
    n += s.kind == kind;
  return n;
}

std::shared_ptr<const Attrs> conv2d(std::vector<int64_t> k, std::vector<int64_t> strides,
                                    std::vector<int64_t> pads, int64_t group = 1,
                                    std::vector<int64_t> dil = {1, 1}) {
  return attrs<ConvAttrs>([&](ConvAttrs& a) {
    a.kernel = k;
    a.strides = strides;
    a.pads = pads;
    a.dilations = dil;
    a.group = group;
  });
}

TEST(GpuTarget, ShippedModelsMatchTheInterpreter) {
  TRIAD_SKIP_WITHOUT_OPENCL();
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
    auto exe = checkAgainstInterpreter(r.graph, {x}, 1e-4, 1e-6);
    const gpu::GpuProgram& p = programOf(*exe);
    EXPECT_EQ(p.hostSteps, 0u) << "every layer of the shipped models has a GPU lowering";
    EXPECT_GT(p.kernels, 0u);
  }
}

// The asynchronous mode: many runs in flight through three lanes, each future with its own
// inputs' outputs (equal to the synchronous run's, bit for bit: the same program on the same
// device); a bad input's error comes out of its future; the lanes can be dropped and rebuilt.
TEST(GpuTarget, AsynchronousRunsInFlight) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  fs::path models = fs::path(TRIAD_SOURCE_DIR) / "models";
  frontend::ImportOptions io;
  io.batch = 4;
  frontend::ImportResult r = frontend::importOnnxFile(models / "digits_cnn.onnx", io);
  defaultPipeline().run(r.graph);
  auto exe = gpu::makeGpuTarget(testOptions())->compile(r.graph);
  auto* gpu = dynamic_cast<gpu::GpuExecutable*>(exe.get());
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->inFlight(), 0);
  const Value* in = r.graph.inputs()[0];
  std::vector<std::vector<Tensor>> inputs, want;
  for (int i = 0; i < 12; ++i) {
    std::mt19937 rng(uint32_t(100 + i));
    inputs.push_back({randomTensor(in->type().shape, rng)});
    want.push_back(exe->run(inputs.back()));
  }
  gpu->setInFlight(3);
  EXPECT_EQ(gpu->inFlight(), 3);
  std::vector<std::future<std::vector<Tensor>>> flight;
  for (const auto& x : inputs)
    flight.push_back(gpu->submit(x));
  Tensor wrong({DType::F32, {1, 3}, {}});
  auto bad = gpu->submit({wrong});
  for (size_t i = 0; i < flight.size(); ++i) {
    std::vector<Tensor> got = flight[i].get();
    ASSERT_EQ(got.size(), want[i].size());
    ASSERT_EQ(got[0].byteSize(), want[i][0].byteSize());
    EXPECT_EQ(std::memcmp(got[0].raw(), want[i][0].raw(), got[0].byteSize()), 0) << "run " << i;
  }
  try {
    bad.get();
    ADD_FAILURE() << "a wrongly shaped input ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("expects"), std::string::npos) << e.what();
  }
  gpu->setInFlight(0);
  EXPECT_EQ(gpu->inFlight(), 0);
  std::vector<Tensor> again = gpu->submit(inputs[5]).get(); // one lane, built on demand
  EXPECT_EQ(gpu->inFlight(), 1);
  EXPECT_EQ(std::memcmp(again[0].raw(), want[5][0].raw(), again[0].byteSize()), 0);
  try {
    gpu->setInFlight(-1);
    ADD_FAILURE() << "setInFlight(-1) was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

// Conv + bias + Relu + residual Add + per-channel Mul + Sigmoid + Sub fused into the implicit-GEMM
// convolution's epilogue; a depthwise convolution with a fused activation; pooling.
TEST(GpuTarget, FusedConvolutionEpiloguesAndPooling) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(1);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 8, 9, 9}, {}});
  Value* w = g.addConstant("w", randomTensor({16, 8, 3, 3}, rng));
  Value* b = g.addConstant("b", randomTensor({16}, rng));
  Node* conv = add(g, OpKind::Conv, "conv", {x, w, b}, conv2d({3, 3}, {1, 1}, {1, 1, 1, 1}));
  Value* skip = g.addConstant("skip", randomTensor({1, 16, 9, 9}, rng));
  Node* relu = add(g, OpKind::Relu, "relu", {conv->output(0)});
  Node* res = add(g, OpKind::Add, "residual", {relu->output(0), skip});
  Value* ch = g.addConstant("per_channel", randomTensor({16, 1, 1}, rng));
  Node* mul = add(g, OpKind::Mul, "scale", {res->output(0), ch});
  Node* sig = add(g, OpKind::Sigmoid, "sigmoid", {mul->output(0)});
  Value* half = g.addConstant("half", Tensor::fromVector<float>({}, {0.5f}));
  Node* sub = add(g, OpKind::Sub, "shift", {sig->output(0), half});
  // Depthwise 3x3, stride 2, then Clip (ReLU6).
  Value* dw = g.addConstant("dw", randomTensor({16, 1, 3, 3}, rng));
  Node* dconv = add(g, OpKind::Conv, "depthwise", {sub->output(0), dw},
                    conv2d({3, 3}, {2, 2}, {1, 1, 1, 1}, 16));
  Node* clip = add(g, OpKind::Clip, "relu6", {dconv->output(0)}, attrs<ClipAttrs>([](ClipAttrs& a) {
                     a.min = 0.0f;
                     a.max = 6.0f;
                   }));
  auto avg = attrs<PoolAttrs>([](PoolAttrs& a) {
    a.kernel = {3, 3};
    a.strides = {2, 2};
    a.pads = {1, 1, 1, 1};
    a.dilations = {1, 1};
    a.countIncludePad = true;
  });
  Node* ap = add(g, OpKind::AveragePool, "avgpool", {clip->output(0)}, avg);
  auto maxp = attrs<PoolAttrs>([](PoolAttrs& a) {
    a.kernel = {2, 2};
    a.strides = {2, 2};
    a.pads = {0, 0, 1, 1};
    a.dilations = {1, 1};
  });
  Node* mp = add(g, OpKind::MaxPool, "maxpool", {sub->output(0)}, maxp);
  Node* gap = add(g, OpKind::GlobalAveragePool, "gap", {mp->output(0)});
  Node* gmp = add(g, OpKind::GlobalMaxPool, "gmp", {ap->output(0)});
  g.addOutput(gap->output(0));
  g.addOutput(gmp->output(0));
  g.addOutput(sub->output(0));
  auto exe = checkAgainstInterpreter(g, {randomTensor({2, 8, 9, 9}, rng)});
  const gpu::GpuProgram& p = programOf(*exe);
  // conv..shift is one kernel (the chain ends at a graph output), depthwise..relu6 another.
  EXPECT_EQ(stepsOfKind(p, "conv (implicit GEMM)"), 1u) << p.source;
  EXPECT_EQ(stepsOfKind(p, "conv (depthwise)"), 1u) << p.source;
  EXPECT_EQ(p.steps.size(), 6u) << p.fusionSummary;
  EXPECT_NE(p.source.find("void conv_shift("), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("acc += conv_bias[k];"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("// residual (Add)"), std::string::npos) << p.source;
  EXPECT_EQ(p.hostSteps, 0u);
}

// Direct convolutions: 1-D, grouped, dilated, strided with asymmetric pads.
TEST(GpuTarget, DirectAndGroupedConvolutions) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(7);
  Graph g;
  Value* x1 = g.addInput("x1", {DType::F32, {2, 3, 17}, {}});
  Value* w1 = g.addConstant("w1", randomTensor({5, 3, 4}, rng));
  Node* c1 = add(g, OpKind::Conv, "conv1d", {x1, w1}, attrs<ConvAttrs>([](ConvAttrs& a) {
                   a.kernel = {4};
                   a.strides = {2};
                   a.pads = {1, 2};
                   a.dilations = {1};
                 }));
  Value* x2 = g.addInput("x2", {DType::F32, {1, 4, 10, 11}, {}});
  Value* w2 = g.addConstant("w2", randomTensor({6, 2, 3, 2}, rng));
  Value* b2 = g.addConstant("b2", randomTensor({6}, rng));
  Node* c2 = add(g, OpKind::Conv, "grouped", {x2, w2, b2},
                 conv2d({3, 2}, {2, 1}, {0, 1, 2, 0}, 2, {2, 1}));
  Node* t = add(g, OpKind::Tanh, "tanh", {c2->output(0)});
  g.addOutput(c1->output(0));
  g.addOutput(t->output(0));
  auto exe = checkAgainstInterpreter(
      g, {randomTensor({2, 3, 17}, rng), randomTensor({1, 4, 10, 11}, rng)});
  EXPECT_EQ(stepsOfKind(programOf(*exe), "conv (direct)"), 2u) << programOf(*exe).source;
}

TEST(GpuTarget, GemmAndBatchedMatMulWithBroadcasting) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(2);
  Graph g;
  Value* a = g.addInput("a", {DType::F32, {3, 5, 7}, {}});
  Value* bm = g.addInput("b", {DType::F32, {3, 7, 6}, {}});
  Node* mm = add(g, OpKind::MatMul, "batched", {a, bm}); // [3, 5, 6]
  Value* rowBias = g.addConstant("row_bias", randomTensor({5, 1}, rng));
  Node* addb = add(g, OpKind::Add, "add_row_bias", {mm->output(0), rowBias});
  Value* shared = g.addConstant("shared", randomTensor({7, 9}, rng));
  Node* stacked = add(g, OpKind::MatMul, "stacked", {a, shared}); // [3, 5, 9], one GEMM
  Value* bb = g.addInput("bb", {DType::F32, {2, 4, 7, 3}, {}});
  Value* left = g.addConstant("left", randomTensor({5, 7}, rng));
  Node* bcast = add(g, OpKind::MatMul, "broadcast_a", {left, bb}); // [2, 4, 5, 3]
  Value* a2 = g.addInput("a2", {DType::F32, {33, 4}, {}});
  Value* wt = g.addConstant("wt", randomTensor({17, 33}, rng));
  Value* bias = g.addConstant("bias", randomTensor({17}, rng));
  auto gemm = attrs<GemmAttrs>([](GemmAttrs& at) {
    at.transA = true;
    at.transB = true;
    at.alpha = 0.5f;
    at.beta = 2.0f;
  });
  Node* gm = add(g, OpKind::Gemm, "gemm", {a2, wt, bias}, gemm); // [4, 17]
  Node* act = add(g, OpKind::Tanh, "tanh", {gm->output(0)});
  Value* v = g.addConstant("vec", randomTensor({17}, rng));
  Node* dot = add(g, OpKind::MatMul, "matvec", {act->output(0), v}); // [4]
  g.addOutput(addb->output(0));
  g.addOutput(stacked->output(0));
  g.addOutput(bcast->output(0));
  g.addOutput(dot->output(0));
  auto exe =
      checkAgainstInterpreter(g, {randomTensor({3, 5, 7}, rng), randomTensor({3, 7, 6}, rng),
                                  randomTensor({2, 4, 7, 3}, rng), randomTensor({33, 4}, rng)});
  const gpu::GpuProgram& p = programOf(*exe);
  EXPECT_EQ(stepsOfKind(p, "gemm (batched)"), 2u) << p.source;
  EXPECT_EQ(stepsOfKind(p, "gemm"), 3u) << p.source;
  EXPECT_NE(p.source.find("acc *= 0.5f;"), std::string::npos) << p.source;
  EXPECT_EQ(p.steps.size(), 5u) << "bias add and tanh are fused into their GEMMs";
}

// Transpose, Slice with negative steps, Concat, Split, Softmax, LayerNorm, Gather with int64
// indices (negative ones count from the end), Expand and BatchNormalization.
TEST(GpuTarget, DataMovementAndRowReductions) {
  TRIAD_SKIP_WITHOUT_OPENCL();
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
  Value* idx = g.addConstant("idx", Tensor::fromVector<int64_t>({2, 2}, {0, 4, -1, 2}));
  Node* ga = add(g, OpKind::Gather, "gather", {table, idx},
                 attrs<AxisAttrs>([](AxisAttrs& a) { a.axis = 0; }));
  Node* ex =
      add(g, OpKind::Expand, "expand", {ga->output(0)}, attrs<OutShapeAttrs>([](OutShapeAttrs& a) {
            a.outShape = {2, 2, 2, 3};
          }));
  Value* bnIn = g.addInput("bn_in", {DType::F32, {2, 3, 4}, {}});
  Value* gamma = g.addConstant("gamma", randomTensor({3}, rng));
  Value* beta = g.addConstant("beta", randomTensor({3}, rng));
  Value* mean = g.addConstant("mean", randomTensor({3}, rng));
  Tensor varT = randomTensor({3}, rng);
  for (float& f : varT.values<float>())
    f = std::fabs(f) + 0.1f;
  Value* var = g.addConstant("var", varT);
  Node* bn = add(g, OpKind::BatchNormalization, "batchnorm", {bnIn, gamma, beta, mean, var},
                 attrs<NormAttrs>([](NormAttrs& a) { a.epsilon = 1e-3f; }));
  g.addOutput(ln->output(0));
  g.addOutput(sp->output(0));
  g.addOutput(ex->output(0));
  g.addOutput(bn->output(0));
  auto exe =
      checkAgainstInterpreter(g, {randomTensor({2, 3, 4, 5}, rng), randomTensor({2, 3, 4}, rng)});
  const gpu::GpuProgram& p = programOf(*exe);
  EXPECT_EQ(p.hostSteps, 0u);
  for (const char* kind : {"transpose", "slice", "concat", "split", "softmax", "layer norm",
                           "gather", "elementwise", "batch norm"})
    EXPECT_EQ(stepsOfKind(p, kind), 1u) << kind << "\n" << p.source;
}

// Elementwise chains over bool, int64 and float: comparisons, logic, Where, Cast.
TEST(GpuTarget, TypedElementwiseChains) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(8);
  Graph g;
  Value* a = g.addInput("a", {DType::F32, {3, 4}, {}});
  Value* b = g.addInput("b", {DType::F32, {4}, {}});
  Value* n = g.addInput("n", {DType::I64, {3, 1}, {}});
  Node* lt = add(g, OpKind::Less, "less", {a, b});
  Node* nt = add(g, OpKind::Not, "not", {lt->output(0)});
  Node* nf = add(g, OpKind::Cast, "n_to_float", {n},
                 attrs<CastAttrs>([](CastAttrs& c) { c.to = DType::F32; }));
  Node* wh = add(g, OpKind::Where, "where", {nt->output(0), a, nf->output(0)});
  Node* ex = add(g, OpKind::Exp, "exp", {wh->output(0)});
  Value* big = g.addConstant("limit", Tensor::fromVector<float>({}, {1.5f}));
  Node* gt = add(g, OpKind::Greater, "greater", {ex->output(0), big});
  g.addOutput(ex->output(0));
  g.addOutput(gt->output(0));
  g.addOutput(nt->output(0));
  Tensor ni = Tensor::fromVector<int64_t>({3, 1}, {-2, 0, 3});
  auto exe = checkAgainstInterpreter(g, {randomTensor({3, 4}, rng), randomTensor({4}, rng), ni});
  const gpu::GpuProgram& p = programOf(*exe);
  EXPECT_EQ(p.hostSteps, 0u);
  EXPECT_NE(p.source.find("__global const long* restrict v_n_data"), std::string::npos) << p.source;
}

// A node without a GPU lowering (ReduceMean on int32) runs on the host between kernels;
// views, a graph input returned as an output and a duplicated output come back right.
TEST(GpuTarget, HostFallbackViewsAndOutputAliases) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Graph g;
  Value* x = g.addInput("x", {DType::I32, {3, 4}, {}});
  // ReduceMean on integers computes in double in the reference: the host runs it (here without
  // axes, a copy).
  Node* neg = add(g, OpKind::ReduceMean, "mean_int", {x}, attrs<ReduceAttrs>([](ReduceAttrs&) {}));
  ASSERT_FALSE(gpu::gpuSupport(*neg).ok);
  Node* cast = add(g, OpKind::Cast, "to_float", {neg->output(0)},
                   attrs<CastAttrs>([](CastAttrs& a) { a.to = DType::F32; }));
  Node* rs = add(g, OpKind::Reshape, "reshape", {cast->output(0)},
                 attrs<ReshapeAttrs>([](ReshapeAttrs& a) {
                   a.shape = {2, 6};
                 }));
  Node* relu = add(g, OpKind::Relu, "relu", {rs->output(0)});
  Node* red =
      add(g, OpKind::ReduceSum, "reduce", {relu->output(0)}, attrs<ReduceAttrs>([](ReduceAttrs& a) {
            a.axes = {1};
            a.keepdims = true;
          }));
  Node* scaled = add(g, OpKind::Mul, "times_relu", {relu->output(0), red->output(0)});
  Node* fl = add(g, OpKind::Flatten, "flatten", {scaled->output(0)},
                 attrs<FlattenAttrs>([](FlattenAttrs& a) { a.axis = 0; }));
  g.addOutput(fl->output(0));
  g.addOutput(x);
  g.addOutput(fl->output(0));
  g.addOutput(rs->output(0));
  Tensor xi = Tensor::fromVector<int32_t>({3, 4}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12});
  auto exe = checkAgainstInterpreter(g, {xi});
  const gpu::GpuProgram& p = programOf(*exe);
  EXPECT_EQ(p.hostSteps, 1u);
  EXPECT_EQ(stepsOfKind(p, "host"), 1u);
  const gpu::GpuRunProfile& prof = dynamic_cast<gpu::GpuExecutable&>(*exe).lastProfile();
  EXPECT_GT(prof.hostMs, 0.0);
  // Host steps say why they are there.
  for (const gpu::GpuStep& s : p.steps)
    if (s.kind == "host") {
      EXPECT_FALSE(s.hostReason.empty()) << s.layer;
    }
}

TEST(GpuTarget, ProfileReportsLayersAndTransfersSeparately) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(5);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {16, 32}, {}});
  Value* w = g.addConstant("w", randomTensor({32, 24}, rng));
  Node* mm = add(g, OpKind::MatMul, "fc", {x, w});
  Node* r = add(g, OpKind::Relu, "fc_relu", {mm->output(0)});
  Node* sm = add(g, OpKind::Softmax, "probs", {r->output(0)},
                 attrs<SoftmaxAttrs>([](SoftmaxAttrs& a) { a.axes = {1}; }));
  g.addOutput(sm->output(0));
  auto exe = checkAgainstInterpreter(g, {randomTensor({16, 32}, rng)});
  exe->setProfiling(true);
  exe->run(std::vector<Tensor>{randomTensor({16, 32}, rng)});
  exe->run(std::vector<Tensor>{randomTensor({16, 32}, rng)});
  auto& gexe = dynamic_cast<gpu::GpuExecutable&>(*exe);
  const gpu::GpuRunProfile& p = gexe.lastProfile();
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[0].layer, "fc..fc_relu");
  EXPECT_EQ(p.layers[0].kind, "gemm");
  EXPECT_GT(p.kernelMs, 0.0);
  EXPECT_EQ(p.hostToDeviceBytes, 16u * 32u * 4u);
  EXPECT_EQ(p.deviceToHostBytes, 16u * 24u * 4u);
  EXPECT_GE(p.wallMs, p.kernelMs);
  EXPECT_NE(p.table().find("fc..fc_relu"), std::string::npos);
  // The generic interface: two runs accumulated, plus the two transfer directions.
  std::vector<LayerTime> acc = exe->profile();
  ASSERT_EQ(acc.size(), 4u);
  EXPECT_EQ(acc[0].layer, "fc..fc_relu");
  EXPECT_GE(acc[0].milliseconds, p.layers[0].ms);
  EXPECT_EQ(acc[2].kind, "h2d");
  EXPECT_EQ(acc[3].kind, "d2h");
  // The second compile of the same model comes from the binary cache: no OpenCL compile.
  auto again = gpu::makeGpuTarget(testOptions())->compile(g);
  EXPECT_EQ(dynamic_cast<gpu::GpuExecutable&>(*again).buildStats().loadedFromCache, 1);
  EXPECT_EQ(dynamic_cast<gpu::GpuExecutable&>(*again).buildStats().compiledFromSource, 0);
}

// A tuning database entry for a GEMM shape changes the parameters the compile uses.
TEST(GpuTarget, TuningDatabaseParametersAreUsed) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(6);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {24, 40}, {}});
  Value* w = g.addConstant("w", randomTensor({40, 48}, rng));
  g.addOutput(add(g, OpKind::MatMul, "tuned_fc", {x, w})->output(0));
  fs::path db = fs::path(TRIAD_BINARY_DIR) / "gpu-test-cache" / "tuning-test.json";
  fs::remove(db);
  gpu::GemmParams tuned{4, 8, 2, 4, 16, 2};
  {
    gpu::TuningDb t(db);
    gpu::GemmShape s;
    s.M = 24;
    s.N = 48;
    s.K = 40;
    t.putGemm(gpu::TuningDb::gemmKey(s, gpu::selectDevice()), {tuned, 1.0, 2.0, 2});
    t.save();
  }
  gpu::GpuOptions o = testOptions();
  o.tuningPath = db;
  auto exe = checkAgainstInterpreter(g, {randomTensor({24, 40}, rng)}, 1e-4, 1e-5, o);
  const gpu::GpuProgram& p = programOf(*exe);
  EXPECT_EQ(p.tunedKernels, 1u);
  EXPECT_EQ(p.steps.at(0).params, tuned.toString());
  EXPECT_NE(p.source.find(tuned.toString()), std::string::npos) << p.source;
}

// On a CPU device: GEMMs with a constant B and implicit-GEMM convolutions use the panel kernels
// with their weights packed into the weights buffer (once per constant, even when two layers
// share it), a MatMul with a B computed at run time reads it as stored, a Gemm with a transposed
// run-time B keeps the tiled kernel, and a tuning entry with panel parameters is used.
TEST(GpuTarget, CpuDevicePanelKernels) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  if (gpu::selectDevice().type != "CPU") GTEST_SKIP() << "not a CPU device";
  std::mt19937 rng(8);
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {2, 3, 9, 11}, {}});
  Value* w = g.addConstant("w", randomTensor({20, 3, 3, 3}, rng));
  Value* b = g.addConstant("b", randomTensor({20}, rng));
  Node* conv = add(g, OpKind::Conv, "conv", {x, w, b}, conv2d({3, 3}, {2, 1}, {1, 0, 2, 1}));
  Node* relu = add(g, OpKind::Relu, "relu", {conv->output(0)}); // [2, 20, 5, 10]
  Value* a = g.addInput("a", {DType::F32, {7, 20}, {}});
  Value* wm = g.addConstant("wm", randomTensor({20, 37}, rng));
  Node* mm1 = add(g, OpKind::MatMul, "shared_1", {a, wm});
  Node* mm2 = add(g, OpKind::MatMul, "shared_2", {a, wm}); // the same packed panels
  Value* left = g.addConstant("left", randomTensor({7, 5}, rng));
  Node* mm3 = add(g, OpKind::MatMul, "runtime_b", {left, relu->output(0)}); // [2, 20, 7, 10]
  Value* bt = g.addInput("bt", {DType::F32, {13, 37}, {}});
  auto transB = attrs<GemmAttrs>([](GemmAttrs& at) { at.transB = true; });
  Node* gm = add(g, OpKind::Gemm, "gemm_bt", {mm2->output(0), bt}, transB); // [7, 13]
  g.addOutput(mm3->output(0));
  g.addOutput(mm1->output(0));
  g.addOutput(gm->output(0));
  std::vector<Tensor> inputs = {randomTensor({2, 3, 9, 11}, rng), randomTensor({7, 20}, rng),
                                randomTensor({13, 37}, rng)};
  auto exe = checkAgainstInterpreter(g, inputs);
  const gpu::GpuProgram& p = programOf(*exe);
  std::map<std::string, std::string> params;
  for (const gpu::GpuStep& s : p.steps)
    params[s.layer] = s.params;
  EXPECT_EQ(params.at("conv..relu").rfind("panel", 0), 0u) << params.at("conv..relu");
  EXPECT_EQ(params.at("shared_1").rfind("panel", 0), 0u);
  EXPECT_EQ(params.at("runtime_b").rfind("panel", 0), 0u);
  EXPECT_EQ(params.at("gemm_bt").find("panel"), std::string::npos) << params.at("gemm_bt");
  EXPECT_NE(p.source.find("as W^T in panels of"), std::string::npos) << p.source;
  EXPECT_NE(p.source.find("if (n0 + TN <= N)"), std::string::npos) << "runtime_b reads B as stored";
  // Both MatMuls point at the same packed copy of wm.
  const std::string packed = "wm f32[20,37] in panels";
  size_t first = p.source.find(packed);
  ASSERT_NE(first, std::string::npos) << p.source;
  size_t second = p.source.find(packed, first + 1);
  ASSERT_NE(second, std::string::npos) << p.source;
  size_t at1 = p.source.rfind("triad_weights + ", first);
  size_t at2 = p.source.rfind("triad_weights + ", second);
  EXPECT_EQ(p.source.substr(at1, p.source.find(')', at1) - at1),
            p.source.substr(at2, p.source.find(')', at2) - at2));

  // A tuning entry with panel parameters for the convolution.
  fs::path db = fs::path(TRIAD_BINARY_DIR) / "gpu-test-cache" / "tuning-panel-test.json";
  fs::remove(db);
  gpu::GemmParams tuned{
      .wgM = 2, .wgN = 1, .workM = 4, .workN = 8, .tileK = 1, .vectorWidth = 8, .panel = true};
  {
    gpu::TuningDb t(db);
    gpu::ConvShape s{2, 3, 9, 11, 20, 3, 3, 2, 1, 1, 0, 2, 1, 1, 1, 1};
    t.putGemm(gpu::TuningDb::convKey(s, gpu::selectDevice()), {tuned, 1.0, 2.0, 2});
    t.save();
  }
  gpu::GpuOptions o = testOptions();
  o.tuningPath = db;
  auto tunedExe = checkAgainstInterpreter(g, inputs, 1e-4, 1e-5, o);
  const gpu::GpuProgram& tp = programOf(*tunedExe);
  EXPECT_EQ(tp.tunedKernels, 1u);
  EXPECT_EQ(tp.steps.at(0).params, tuned.toString());
}

TEST(GpuTarget, RunTimeErrorsNameTheInput) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Graph g;
  Value* x = g.addInput("x", {DType::F32, {4}, {}});
  g.addOutput(add(g, OpKind::Relu, "relu", {x})->output(0));
  auto exe = gpu::makeGpuTarget(testOptions())->compile(g);
  try {
    exe->run(std::vector<Tensor>{Tensor(DType::F32, {5})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  // A device selector that matches nothing is a usage error listing the devices.
  gpu::GpuOptions o = testOptions();
  o.device = "no-such-device-xyz";
  try {
    gpu::makeGpuTarget(o)->compile(g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

// Without any OpenCL platform `triad run --target gpu` says so and exits with "unsupported" (5).
TEST(GpuTarget, NoPlatformIsUnsupported) {
  fs::path triad = fs::path(TRIAD_BINARY_DIR) / "cli" / "triad";
  if (!fs::exists(triad)) GTEST_SKIP() << "the triad binary is not built";
  fs::path empty = fs::path(TRIAD_BINARY_DIR) / "gpu-test-cache" / "no-icd";
  fs::create_directories(empty);
  std::string cmd = "OCL_ICD_VENDORS=" + empty.string() + " OCL_ICD_FILENAMES= " + triad.string() +
                    " run " + TRIAD_SOURCE_DIR +
                    "/models/jet_mlp.onnx --target gpu --batch 2000 --input " + TRIAD_SOURCE_DIR +
                    "/models/jet_test_x.npy 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  int rc = pclose(p);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 5) << out;
  EXPECT_NE(out.find("no OpenCL"), std::string::npos) << out;
}

} // namespace

// Gather with indices known only at run time checks them in the kernel: an index out of range
// fails the run naming the node, as the reference kernel does.
TEST(GpuTarget, RunTimeGatherIndicesAreCheckedInTheKernel) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  std::mt19937 rng(11);
  Graph g;
  Value* table = g.addConstant("table", randomTensor({5, 3}, rng));
  Value* idx = g.addInput("idx", {DType::I64, {2, 2}, {}});
  Node* ga = add(g, OpKind::Gather, "embedding", {table, idx},
                 attrs<AxisAttrs>([](AxisAttrs& a) { a.axis = 0; }));
  g.addOutput(add(g, OpKind::Relu, "relu", {ga->output(0)})->output(0));
  auto exe = checkAgainstInterpreter(g, {Tensor::fromVector<int64_t>({2, 2}, {0, 4, -1, 2})});
  EXPECT_EQ(programOf(*exe).hostSteps, 0u);
  try {
    exe->run(std::vector<Tensor>{Tensor::fromVector<int64_t>({2, 2}, {0, 5, 1, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding"), std::string::npos) << e.what();
  }
}
