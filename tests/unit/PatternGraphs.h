// Graphs that spell out an op the way exporters do (LayerNorm, Softmax), for the fusion passes
// tests and the targets' end-to-end tests.
#pragma once

#include "GraphBuild.h"
#include "ir/ops/Reduce.h"

namespace triad::testutil {

using namespace triad::ir;

// PyTorch's LayerNorm below opset 17: mean, x - mean, Pow 2 (or d * d), mean, + eps, Sqrt, Div,
// then the affine * gamma + beta (either may be missing). `axes` are the reduced dims.
inline ir::Graph layerNormPattern(bool mulSquare, bool affine, std::vector<int64_t> axes = {2}) {
  ir::Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 3, 8}, {}});
  auto mean = [&](const char* name, Value* v) {
    return add(g, OpKind::ReduceMean, name, {v}, attrs<ReduceAttrs>([&](auto& a) {
                 a.axes = axes;
                 a.keepdims = true;
               }))
        ->output(0);
  };
  auto scalar = [&](const char* name, float v) {
    return g.addConstant(name, Tensor::fromVector<float>({}, {v}));
  };
  Value* m = mean("mean", x);
  Value* d = add(g, OpKind::Sub, "sub", {x, m})->output(0);
  Value* sq = mulSquare ? add(g, OpKind::Mul, "sq", {d, d})->output(0)
                        : add(g, OpKind::Pow, "sq", {d, scalar("two", 2.0f)})->output(0);
  Value* var = mean("var", sq);
  Value* ve = add(g, OpKind::Add, "addeps", {var, scalar("eps", 1e-5f)})->output(0);
  Value* sd = add(g, OpKind::Sqrt, "sqrt", {ve})->output(0);
  Value* y = add(g, OpKind::Div, "div", {d, sd})->output(0);
  if (affine) {
    std::mt19937 r(3);
    y = add(g, OpKind::Mul, "gamma", {y, g.addConstant("g", randomTensor({8}, r))})->output(0);
    y = add(g, OpKind::Add, "beta", {g.addConstant("b", randomTensor({1, 8}, r)), y})->output(0);
  }
  g.addOutput(add(g, OpKind::Relu, "after", {y})->output(0));
  return g;
}

// Softmax spelled out over axis 1 of [2, 5, 3], with or without the max shift.
inline ir::Graph softmaxPattern(bool shift, int64_t sumAxis = 1) {
  ir::Graph g;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 5, 3}, {}});
  auto reduce = [&](OpKind k, const char* name, Value* v, int64_t axis) {
    return add(g, k, name, {v}, attrs<ReduceAttrs>([&](auto& a) {
                 a.axes = {axis};
                 a.keepdims = true;
               }))
        ->output(0);
  };
  Value* s = x;
  if (shift) s = add(g, OpKind::Sub, "sub", {x, reduce(OpKind::ReduceMax, "max", x, 1)})->output(0);
  Value* e = add(g, OpKind::Exp, "exp", {s})->output(0);
  Value* y =
      add(g, OpKind::Div, "div", {e, reduce(OpKind::ReduceSum, "sum", e, sumAxis)})->output(0);
  g.addOutput(y);
  return g;
}

} // namespace triad::testutil
