// The GPU lowering families beyond GEMM/convolution/pooling, each differentially against the
// reference interpreter on odd shapes and axes, and every node in a kernel (no host step):
// reductions over any axes (Reduce*, ArgMax/ArgMin), Softmax/LogSoftmax/Hardmax over any axis,
// elementwise math on integer and float16 elements (ir/ScalarExpr's OpenCL dialect), Pad in every
// mode, Resize, ConvTranspose, CumSum, Tile, DepthToSpace/SpaceToDepth, OneHot, Compress,
// GatherElements and the scatters with run-time indices (an out-of-range index fails the run
// naming the node), and the losses. Nodes are imported the way the frontend does (OpTestUtil's
// runNode: ONNX attributes, shape operands folded into attributes).
#include "GraphBuild.h"
#include "OpTestUtil.h"
#include "gpu/GpuCodeGen.h"
#include "gpu/GpuTarget.h"
#include "gpu_TestUtil.h"
#include "ir/Interpreter.h"
#include "ir/ops/Movement.h"

#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>

using namespace triad;
using namespace triad::ir;
using optest::LiteralAttrs;

namespace {

using gputest::targetOptions;

/// One ONNX input of a test node: a run-time graph input, a constant, or absent.
struct In {
  std::optional<Tensor> t;
  bool runtime = true;
};
In input(Tensor t) {
  return {std::move(t), true};
}
In constant(Tensor t) {
  return {std::move(t), false};
}
In absent() {
  return {std::nullopt, false};
}

/// A graph of the nodes `ops` (each imported like the frontend: runNode), all in one program.
struct Case {
  OpKind kind;
  std::vector<In> inputs;
  LiteralAttrs attrs;
  int outputs = 1;
  int opset = 18;
};

/// Compiles every case into one graph (one OpenCL program), runs it, compares every output with
/// the interpreter and checks that no node ran on the host.
std::unique_ptr<Executable> checkCases(const std::vector<Case>& cases, double rtol = 1e-4,
                                       double atol = 1e-5) {
  Graph g;
  std::vector<Tensor> feeds;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    std::vector<const Tensor*> onnx;
    for (const In& i : c.inputs)
      onnx.push_back(i.t ? &*i.t : nullptr);
    optest::NodeRun r = optest::runNode(c.kind, onnx, c.attrs, c.opset, c.outputs, false);
    const OpDef& def = opDef(c.kind);
    std::vector<Value*> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (def.isShapeOperand(int(i))) continue;
      const In& in = c.inputs[i];
      std::string name = fmt::format("c{}_in{}", ci, i);
      if (!in.t) {
        ins.push_back(nullptr);
      } else if (in.runtime) {
        ins.push_back(g.addInput(name, in.t->type()));
        feeds.push_back(*in.t);
      } else {
        ins.push_back(g.addConstant(name, *in.t));
      }
    }
    while (!ins.empty() && !ins.back())
      ins.pop_back();
    Node* n = testutil::add(g, c.kind, fmt::format("c{}_{}", ci, opKindName(c.kind)), ins, r.attrs,
                            size_t(c.outputs));
    for (Value* o : n->outputs())
      g.addOutput(o);
  }
  auto exe = gpu::makeGpuTarget(targetOptions())->compile(g);
  std::vector<Tensor> got = exe->run(feeds), want = Interpreter(g).run(feeds);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].type(), want[i].type()) << g.outputs()[i]->name();
    if (got[i].type() != want[i].type()) continue;
    for (int64_t k = 0; k < got[i].numElements(); ++k) {
      double a = got[i].getDouble(k), b = want[i].getDouble(k);
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << g.outputs()[i]->name() << " element " << k;
        continue;
      }
      if (a != b && !(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
        ADD_FAILURE() << g.outputs()[i]->name() << " element " << k << ": " << a << " vs " << b;
        break;
      }
    }
  }
  const auto& p = dynamic_cast<const gpu::GpuExecutable&>(*exe).program();
  EXPECT_EQ(p.hostSteps, 0u) << p.source;
  return exe;
}

Tensor rnd(Shape s, unsigned seed, DType t = DType::F32) {
  return optest::randomTensor(std::move(s), seed, t);
}

/// Integers in [lo, hi] of dtype `t`.
Tensor ints(Shape s, unsigned seed, int64_t lo, int64_t hi, DType t) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  Tensor x = Tensor(TensorType{DType::I64, s, {}});
  for (int64_t& v : x.values<int64_t>())
    v = d(rng);
  return x.castTo(t);
}

} // namespace

// Every Reduce* over non-contiguous, leading and all axes of an odd shape, keepdims on and off,
// integer sums and extremes, an empty reduction, and ArgMax/ArgMin with either tie rule.
TEST(GpuLowerings, ReductionsOverAnyAxes) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor x = rnd({3, 5, 7}, 1);
  Tensor pos = rnd({3, 5, 7}, 2);
  for (float& v : pos.values<float>())
    v = std::fabs(v) + 0.25f;
  std::vector<Case> cases;
  int k = 0;
  for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceProd, OpKind::ReduceL1,
                      OpKind::ReduceL2, OpKind::ReduceSumSquare, OpKind::ReduceLogSum,
                      OpKind::ReduceLogSumExp, OpKind::ReduceMax, OpKind::ReduceMin}) {
    bool positive = kind == OpKind::ReduceLogSum || kind == OpKind::ReduceProd;
    std::vector<int64_t> axes = k % 3 == 0   ? std::vector<int64_t>{0, 2}
                                : k % 3 == 1 ? std::vector<int64_t>{1}
                                             : std::vector<int64_t>{0, 1, 2};
    cases.push_back({kind,
                     {input(positive ? pos : x), constant(optest::i64(axes))},
                     {{"keepdims", int64_t(k % 2)}}});
    ++k;
  }
  Tensor xi = ints({4, 3, 5}, 3, -100, 100, DType::I32);
  cases.push_back({OpKind::ReduceSum, {input(xi), constant(optest::i64({2}))}, {}});
  cases.push_back({OpKind::ReduceMax,
                   {input(ints({4, 6}, 4, 0, 250, DType::U8)), constant(optest::i64({0}))},
                   {{"keepdims", int64_t(0)}}});
  // An empty reduction: sums to 0, LogSumExp to -inf.
  Tensor empty(TensorType{DType::F32, {2, 0, 3}, {}});
  cases.push_back({OpKind::ReduceSum, {input(empty), constant(optest::i64({1}))}, {}});
  cases.push_back({OpKind::ReduceLogSumExp, {input(empty), constant(optest::i64({1}))}, {}});
  Tensor ties = optest::f32({2, 4}, {1, 3, 3, 0, 2, 2, -1, 2});
  cases.push_back({OpKind::ArgMax, {input(ties)}, {{"axis", int64_t(1)}}});
  cases.push_back(
      {OpKind::ArgMax, {input(ties)}, {{"axis", int64_t(1)}, {"select_last_index", int64_t(1)}}});
  cases.push_back({OpKind::ArgMin, {input(x)}, {{"axis", int64_t(0)}, {"keepdims", int64_t(0)}}});
  cases.push_back({OpKind::ArgMax, {input(xi)}, {{"axis", int64_t(2)}}});
  checkCases(cases);
}

// Softmax, LogSoftmax and Hardmax over a leading and a middle axis (the per-row kernel) and over
// the last one, and the opset-11 form over trailing axes; float16 too; InstanceNormalization
// and LRN.
TEST(GpuLowerings, SoftmaxFamilyOverAnyAxis) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor x = rnd({3, 5, 7}, 5);
  std::vector<Case> cases;
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    for (int64_t axis : {0, 1, -1})
      cases.push_back({kind, {input(x)}, {{"axis", axis}}});
  cases.push_back({OpKind::LogSoftmax, {input(x)}, {{"axis", int64_t(1)}}, 1, 11});
  cases.push_back({OpKind::Softmax, {input(rnd({4, 6}, 6, DType::F16))}, {{"axis", int64_t(0)}}});
  Tensor img = rnd({2, 5, 3, 4}, 7);
  cases.push_back({OpKind::InstanceNormalization,
                   {input(img), constant(rnd({5}, 8)), constant(rnd({5}, 9))},
                   {{"epsilon", 1e-3f}}});
  cases.push_back({OpKind::LRN, {input(img)}, {{"size", int64_t(4)}, {"alpha", 0.01f}}});
  checkCases(cases, 2e-3, 1e-3);
}

// Integer arithmetic wraps, divides and takes remainders as the reference does (division by
// zero gives 0), shifts and bit operations, integer Pow, casts between float, float16 and
// integers (out-of-range floats wrap), float16 math computed in float and rounded back.
TEST(GpuLowerings, IntegerAndFloat16Elementwise) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor a8 = ints({5, 7}, 7, -128, 127, DType::I8), b8 = ints({7}, 8, -128, 127, DType::I8);
  Tensor a32 = ints({5, 7}, 9, -1000, 1000, DType::I32), b32 = ints({5, 7}, 10, -3, 3, DType::I32);
  Tensor u8 = ints({5, 7}, 11, 0, 255, DType::U8), sh = ints({5, 7}, 12, 0, 9, DType::U8);
  Tensor a64 = ints({5, 7}, 13, -9, 9, DType::I64), e64 = ints({5, 7}, 14, -2, 5, DType::I64);
  Tensor h1 = rnd({5, 7}, 15, DType::F16), h2 = rnd({7}, 16, DType::F16);
  Tensor big = optest::f32({6}, {1e10f, -3.7f, 2.5e9f, -1e19f, NAN, 65504.5f});
  std::vector<Case> cases = {
      {OpKind::Add, {input(a8), input(b8)}, {}},
      {OpKind::Mul, {input(a8), input(b8)}, {}},
      {OpKind::Div, {input(a32), input(b32)}, {}},
      {OpKind::Mod, {input(a32), input(b32)}, {}},
      {OpKind::Mod, {input(a32), input(b32)}, {{"fmod", int64_t(1)}}},
      {OpKind::BitShift, {input(u8), input(sh)}, {{"direction", "LEFT"}}},
      {OpKind::BitwiseXor, {input(a8), input(b8)}, {}},
      {OpKind::Pow, {input(a64), input(e64)}, {}},
      {OpKind::Neg, {input(a8)}, {}},
      {OpKind::Abs, {input(a8)}, {}},
      {OpKind::Max, {input(a32), input(b32)}, {}},
      {OpKind::Add, {input(h1), input(h2)}, {}},
      {OpKind::Sqrt, {input(h1)}, {}},
      {OpKind::Max, {input(h1), input(h2)}, {}},
      {OpKind::Cast, {input(h1)}, {{"to", int64_t(1)}}},   // f16 -> f32
      {OpKind::Cast, {input(big)}, {{"to", int64_t(10)}}}, // f32 -> f16 (inf)
      {OpKind::Cast, {input(big)}, {{"to", int64_t(6)}}},  // f32 -> int32 (wraps)
      {OpKind::Cast, {input(big)}, {{"to", int64_t(2)}}},  // f32 -> uint8
      {OpKind::Cast, {input(a32)}, {{"to", int64_t(10)}}}, // int32 -> f16
      {OpKind::Equal, {input(a8), input(b8)}, {}},
  };
  checkCases(cases, 1e-3, 1e-3);
}

// Pad in every mode on every axis (negative pads crop), Trilu, Tile, DepthToSpace in both modes,
// SpaceToDepth, CumSum (exclusive, reverse), OneHot, Compress, Dropout with its mask,
// CenterCropPad.
TEST(GpuLowerings, MovementAndIndexing) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor x = rnd({2, 3, 5}, 20);
  Tensor xi = ints({2, 3, 5}, 21, -50, 50, DType::I64);
  std::vector<Case> cases;
  for (const char* mode : {"constant", "reflect", "edge", "wrap"})
    cases.push_back(
        {OpKind::Pad,
         {input(x), constant(optest::i64({1, 0, 3, 0, 2, 4})), constant(optest::f32({}, {1.5f}))},
         {{"mode", mode}}});
  cases.push_back({OpKind::Pad,
                   {input(xi), constant(optest::i64({0, -1, 1, 1, 0, -2}))},
                   {{"mode", "constant"}}});
  cases.push_back({OpKind::Trilu, {input(x), constant(optest::i64({}, {-1}))}, {}});
  cases.push_back(
      {OpKind::Trilu, {input(xi), constant(optest::i64({}, {2}))}, {{"upper", int64_t(0)}}});
  cases.push_back({OpKind::Tile, {input(x), constant(optest::i64({2, 1, 3}))}, {}});
  Tensor d = rnd({2, 8, 3, 2}, 22);
  cases.push_back({OpKind::DepthToSpace, {input(d)}, {{"blocksize", int64_t(2)}}});
  cases.push_back({OpKind::DepthToSpace, {input(d)}, {{"blocksize", int64_t(2)}, {"mode", "CRD"}}});
  cases.push_back(
      {OpKind::SpaceToDepth, {input(rnd({2, 3, 4, 6}, 23))}, {{"blocksize", int64_t(2)}}});
  cases.push_back({OpKind::CumSum, {input(x), constant(optest::i64({}, {1}))}, {}});
  cases.push_back({OpKind::CumSum,
                   {input(xi), constant(optest::i64({}, {-1}))},
                   {{"exclusive", int64_t(1)}, {"reverse", int64_t(1)}}});
  cases.push_back({OpKind::OneHot,
                   {input(optest::i64({2, 3}, {0, -1, 4, 2, 7, -5})),
                    constant(optest::i64({}, {5})), constant(optest::f32({2}, {-1.0f, 3.0f}))},
                   {{"axis", int64_t(1)}}});
  cases.push_back({OpKind::Compress,
                   {input(x), constant(optest::boolT({3}, {true, false, true}))},
                   {{"axis", int64_t(1)}}});
  cases.push_back({OpKind::Compress,
                   {input(x), constant(optest::boolT({5}, {false, true, true, false, true}))},
                   {}});
  cases.push_back({OpKind::Dropout, {input(x)}, {}, 2});
  cases.push_back({OpKind::CenterCropPad,
                   {input(x), constant(optest::i64({3, 6}))},
                   {{"axes", std::vector<int64_t>{0, 2}}}});
  checkCases(cases);
}

// Resize: nearest (each rounding), linear, cubic with and without exclude_outside, antialiased
// downsampling and tf_crop_and_resize with its extrapolation value; ConvTranspose 1-D and 2-D
// with strides, pads, dilations, output padding, groups and bias.
TEST(GpuLowerings, ResizeAndConvTranspose) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor x = rnd({1, 2, 4, 5}, 30);
  Tensor up = optest::f32({4}, {1.0f, 1.0f, 1.75f, 2.5f});
  Tensor down = optest::f32({4}, {1.0f, 1.0f, 0.6f, 0.5f});
  std::vector<Case> cases;
  for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    cases.push_back({OpKind::Resize,
                     {input(x), absent(), constant(up)},
                     {{"mode", "nearest"}, {"nearest_mode", nm}}});
  cases.push_back({OpKind::Resize,
                   {input(x), absent(), constant(up)},
                   {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}});
  cases.push_back({OpKind::Resize,
                   {input(x), absent(), constant(up)},
                   {{"mode", "cubic"}, {"exclude_outside", int64_t(1)}}});
  cases.push_back({OpKind::Resize,
                   {input(x), absent(), constant(down)},
                   {{"mode", "linear"}, {"antialias", int64_t(1)}}});
  cases.push_back(
      {OpKind::Resize,
       {input(x), constant(optest::f32({8}, {0, 0, 0.2f, -0.3f, 1, 1, 1.2f, 0.9f})), constant(up)},
       {{"mode", "linear"},
        {"coordinate_transformation_mode", "tf_crop_and_resize"},
        {"extrapolation_value", 7.0f}}});
  cases.push_back(
      {OpKind::ConvTranspose,
       {input(rnd({2, 4, 3, 5}, 31)), constant(rnd({4, 3, 3, 2}, 32)), constant(rnd({6}, 33))},
       {{"strides", std::vector<int64_t>{2, 3}},
        {"pads", std::vector<int64_t>{1, 0, 0, 1}},
        {"dilations", std::vector<int64_t>{1, 2}},
        {"output_padding", std::vector<int64_t>{1, 0}},
        {"group", int64_t(2)}}});
  cases.push_back({OpKind::ConvTranspose,
                   {input(rnd({1, 3, 7}, 34)), constant(rnd({3, 2, 4}, 35))},
                   {{"strides", std::vector<int64_t>{2}}}});
  checkCases(cases);
}

// GatherElements, Gather, ScatterElements (with a reduction and duplicate targets), ScatterND,
// GatherND
// and the losses read indices at run time, checked in range by the kernels.
TEST(GpuLowerings, RunTimeIndicesAreCheckedInKernels) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Tensor data = rnd({3, 4}, 40);
  Tensor gi = optest::i64({3, 2}, {0, -1, 3, 1, 2, -4});
  Tensor si = optest::i64({2, 2}, {1, 1, -1, 0});
  Tensor nd = optest::i64({2, 1}, {2, 0});
  Tensor scores = rnd({3, 5, 2}, 41);
  Tensor target = optest::i64({3, 2}, {0, 4, 2, -7, 1, 3});
  Tensor w = rnd({5}, 42);
  std::vector<Case> cases = {
      {OpKind::GatherElements, {input(data), input(gi)}, {{"axis", int64_t(1)}}},
      {OpKind::Gather, {input(data), input(optest::i64({2}, {2, -3}))}, {}},
      {OpKind::ScatterElements,
       {input(data), input(si), input(rnd({2, 2}, 43))},
       {{"axis", int64_t(1)}, {"reduction", "add"}}},
      {OpKind::ScatterND, {input(data), input(nd), input(rnd({2, 4}, 44))}, {}},
      {OpKind::GatherND, {input(data), input(optest::i64({2, 2}, {2, -1, 0, 3}))}, {}},
      {OpKind::NegativeLogLikelihoodLoss,
       {input(scores), input(target), constant(w)},
       {{"ignore_index", int64_t(-7)}}},
      {OpKind::NegativeLogLikelihoodLoss,
       {input(scores), input(target)},
       {{"reduction", "none"}, {"ignore_index", int64_t(-7)}}},
      {OpKind::SoftmaxCrossEntropyLoss,
       {input(scores), input(target)},
       {{"reduction", "sum"}, {"ignore_index", int64_t(-7)}},
       2},
  };
  auto exe = checkCases(cases);
  const auto& p = dynamic_cast<const gpu::GpuExecutable&>(*exe).program();
  EXPECT_EQ(p.checkSlots, cases.size()) << "every node checks its indices";
}

// An index out of range at run time fails the run, naming the node, instead of a wrong answer.
TEST(GpuLowerings, OutOfRangeRunTimeIndexFailsNamingTheNode) {
  TRIAD_SKIP_WITHOUT_OPENCL();
  Graph g;
  Value* data = g.addConstant("table", rnd({3, 4}, 50));
  Value* idx = g.addInput("idx", {DType::I64, {3, 2}, {}});
  Node* ge = testutil::add(g, OpKind::GatherElements, "lookup", {data, idx},
                           testutil::attrs<AxisAttrs>([](AxisAttrs& a) { a.axis = 1; }));
  g.addOutput(ge->output(0));
  auto exe = gpu::makeGpuTarget(targetOptions())->compile(g);
  EXPECT_EQ(dynamic_cast<const gpu::GpuExecutable&>(*exe).program().hostSteps, 0u);
  Tensor ok = optest::i64({3, 2}, {0, -1, 3, 1, 2, -4});
  EXPECT_EQ(exe->run(std::vector<Tensor>{ok})[0].numElements(), 6);
  try {
    exe->run(std::vector<Tensor>{optest::i64({3, 2}, {0, 1, 4, 1, 2, 0})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("lookup"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  // The next run with good indices succeeds again (the status is reset per run).
  EXPECT_EQ(exe->run(std::vector<Tensor>{ok})[0].numElements(), 6);
}
