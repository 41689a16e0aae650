// Recognizes the LayerNorm and Softmax that exporters spell out op by op and replaces each by
// its one ONNX op, which every target lowers as one row kernel instead of five to nine passes
// over the tensor:
//
// fuse-layernorm (PyTorch's nn.LayerNorm below opset 17, TF/Keras exports):
//   mean = ReduceMean(x, trailing axes); d = x - mean
//   var  = ReduceMean(Pow(d, 2) | d * d, same axes); std = Sqrt(var + eps)
//   y    = d / std  [* gamma] [+ beta]          gamma, beta: constants
// -> LayerNormalization(x, gamma, beta; axis = first reduced axis, epsilon = eps)
//
// fuse-softmax (torch.softmax traced through decompositions, hand-written exports):
//   [m = ReduceMax(x, axis); s = x - m;]  e = Exp(s | x); y = e / ReduceSum(e, axis)
// -> Softmax(x; axis). Without the max subtraction the pattern overflows for large inputs where
//    Softmax does not; elsewhere the two agree to rounding.
#include "ir/ops/Normalization.h"
#include "ir/ops/OpUtil.h"
#include "ir/ops/Reduce.h"
#include "ir/passes/Pass.h"
#include "ir/passes/Patterns.h"

#include <algorithm>

namespace triad::ir {

namespace {

/// The reduced axes of a keepdims Reduce node of kind `k` reading `x`, or nullopt.
std::optional<std::vector<int64_t>> keptReduction(const Node* n, OpKind k, const Value* x) {
  if (!n || n->kind() != k || n->input(0) != x) return std::nullopt;
  const auto& a = n->attrs<ReduceAttrs>();
  if (!a.keepdims || a.axes.empty()) return std::nullopt;
  return a.axes;
}

/// The dims of constant `v` without leading 1s beyond the rank of `shape` (a [1, C] bias of a
/// [N, T, C] activation is a [C] parameter of the normalized dims).
Shape trimmedShape(const Value* v, const Shape& shape) {
  Shape s = v->type().shape;
  while (s.size() > shape.size() && s.front() == 1)
    s.erase(s.begin());
  return s;
}

/// Whether constant `v` is float32 and broadcasts to `shape` (an affine parameter of the
/// normalized dims).
bool broadcastsTo(const Value* v, const Shape& shape) {
  Shape s = trimmedShape(v, shape);
  if (v->type().dtype != DType::F32 || s.size() > shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != shape[shape.size() - s.size() + i]) return false;
  return true;
}

/// `v` (a constant that broadcastsTo `shape`) broadcast to `shape`, as a new constant.
Value* broadcastConstant(Graph& g, const Value* v, const Shape& shape, const std::string& name) {
  const float* in = v->constant().data<float>();
  Tensor out(DType::F32, shape);
  std::vector<int64_t> map = ops::broadcastIndexMap(trimmedShape(v, shape), shape);
  for (size_t i = 0; i < map.size(); ++i)
    out.data<float>()[i] = in[map[i]];
  return g.addConstant(freshValueName(g, name), std::move(out));
}

class FuseLayerNorm final : public Pass {
public:
  std::string_view name() const override { return "fuse-layernorm"; }

  bool run(Graph& g) override {
    Readers readers(g);
    std::vector<const Node*> dead;
    struct Match {
      Value *x, *y, *gamma = nullptr, *beta = nullptr;
      int64_t axis;
      float eps;
      std::string name;
    };
    std::vector<Match> matches;
    for (const auto& np : g.nodes()) {
      Node* mean = np.get();
      if (mean->kind() != OpKind::ReduceMean) continue;
      Value* x = mean->input(0);
      if (x->type().dtype != DType::F32) continue;
      auto axes = keptReduction(mean, OpKind::ReduceMean, x);
      int64_t rank = int64_t(x->type().shape.size());
      if (!axes || axes->back() != rank - 1 || int64_t(axes->size()) != rank - axes->front())
        continue; // trailing, contiguous axes only
      Node* sub = readers.sole(mean->output(0));
      if (!sub || sub->kind() != OpKind::Sub || sub->input(0) != x ||
          sub->input(1) != mean->output(0))
        continue;
      Value* d = sub->output(0);
      if (readers.isGraphOutput(d) || readers.of(d).size() != 2) continue;
      Node* square = nullptr;
      Node* div = nullptr;
      for (Node* r : readers.of(d)) {
        if ((r->kind() == OpKind::Pow && r->input(0) == d && isScalarConstant(r->input(1), 2)) ||
            (r->kind() == OpKind::Mul && r->input(0) == d && r->input(1) == d))
          square = r;
        else if (r->kind() == OpKind::Div && r->input(0) == d)
          div = r;
      }
      if (!square || !div) continue;
      Node* var = readers.sole(square->output(0));
      if (keptReduction(var, OpKind::ReduceMean, square->output(0)) != axes) continue;
      Node* addEps = readers.sole(var->output(0));
      if (!addEps || addEps->kind() != OpKind::Add) continue;
      Value* eps = otherOperand(addEps, var->output(0));
      if (!eps || !eps->isConstant() || eps->constant().numElements() != 1 ||
          eps->type().dtype != DType::F32)
        continue;
      Node* sqrt = readers.sole(addEps->output(0));
      if (!sqrt || sqrt->kind() != OpKind::Sqrt || readers.sole(sqrt->output(0)) != div ||
          div->input(1) != sqrt->output(0))
        continue;
      Match m{x,           div->output(0), nullptr,
              nullptr,     axes->front(),  eps->constant().data<float>()[0],
              mean->name()};
      Shape norm(x->type().shape.begin() + m.axis, x->type().shape.end());
      std::vector<const Node*> nodes{mean, sub, square, var, addEps, sqrt, div};
      // Optional affine tail: * gamma, then + beta (constants).
      Node* next = readers.sole(m.y);
      if (next && next->kind() == OpKind::Mul) {
        Value* gamma = otherOperand(next, m.y);
        if (gamma && gamma->isConstant() && broadcastsTo(gamma, norm) &&
            next->output(0)->type() == x->type()) {
          m.gamma = gamma;
          m.y = next->output(0);
          nodes.push_back(next);
          next = readers.sole(m.y);
        }
      }
      if (next && next->kind() == OpKind::Add) {
        Value* beta = otherOperand(next, m.y);
        if (beta && beta->isConstant() && broadcastsTo(beta, norm) &&
            next->output(0)->type() == x->type()) {
          m.beta = beta;
          m.y = next->output(0);
          nodes.push_back(next);
        }
      }
      if (m.y->type() != x->type()) continue;
      matches.push_back(m);
      dead.insert(dead.end(), nodes.begin(), nodes.end());
    }
    for (const Match& m : matches) {
      const Shape& xs = m.x->type().shape;
      Shape norm(xs.begin() + m.axis, xs.end());
      Value* gamma = nullptr;
      if (m.gamma) {
        gamma = broadcastConstant(g, m.gamma, norm, m.name + ".scale");
      } else {
        Tensor ones(DType::F32, norm);
        std::fill(ones.data<float>(), ones.data<float>() + ones.numElements(), 1.0f);
        gamma = g.addConstant(freshValueName(g, m.name + ".scale"), std::move(ones));
      }
      Value* beta = m.beta ? broadcastConstant(g, m.beta, norm, m.name + ".bias") : nullptr;
      auto attrs = std::make_shared<LayerNormAttrs>();
      attrs->axis = m.axis;
      attrs->epsilon = m.eps;
      std::vector<Value*> in{m.x, gamma};
      if (beta) in.push_back(beta);
      replaceWith(g, m.y, OpKind::LayerNormalization, m.name + "/LayerNormalization", in, attrs);
    }
    if (matches.empty()) return false;
    removeMatched(g, dead);
    return true;
  }
};

class FuseSoftmax final : public Pass {
public:
  std::string_view name() const override { return "fuse-softmax"; }

  bool run(Graph& g) override {
    Readers readers(g);
    std::vector<const Node*> dead;
    struct Match {
      Value *x, *y;
      int64_t axis;
      std::string name;
    };
    std::vector<Match> matches;
    for (const auto& np : g.nodes()) {
      Node* exp = np.get();
      if (exp->kind() != OpKind::Exp || exp->output(0)->type().dtype != DType::F32) continue;
      Value* e = exp->output(0);
      if (readers.isGraphOutput(e) || readers.of(e).size() != 2) continue;
      Node* sum = nullptr;
      Node* div = nullptr;
      for (Node* r : readers.of(e)) {
        if (r->kind() == OpKind::ReduceSum)
          sum = r;
        else if (r->kind() == OpKind::Div && r->input(0) == e)
          div = r;
      }
      auto axes = keptReduction(sum, OpKind::ReduceSum, e);
      if (!axes || axes->size() != 1 || !div || div->input(1) != sum->output(0) ||
          readers.sole(sum->output(0)) != div)
        continue;
      std::vector<const Node*> nodes{exp, sum, div};
      // The max shift, when present: x - ReduceMax(x, same axis).
      Value* x = exp->input(0);
      Node* sub = x->producer();
      if (sub && sub->kind() == OpKind::Sub && readers.sole(x) == exp) {
        Node* mx = sub->input(1)->producer();
        if (keptReduction(mx, OpKind::ReduceMax, sub->input(0)) == axes &&
            readers.sole(mx->output(0)) == sub) {
          nodes.push_back(sub);
          nodes.push_back(mx);
          x = sub->input(0);
        }
      }
      if (div->output(0)->type() != x->type()) continue;
      matches.push_back({x, div->output(0), axes->front(), exp->name()});
      dead.insert(dead.end(), nodes.begin(), nodes.end());
    }
    for (const Match& m : matches) {
      auto attrs = std::make_shared<SoftmaxAttrs>();
      attrs->axes = {m.axis};
      replaceWith(g, m.y, OpKind::Softmax, m.name + "/Softmax", {m.x}, attrs);
    }
    if (matches.empty()) return false;
    removeMatched(g, dead);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseLayerNormPass() {
  return std::make_unique<FuseLayerNorm>();
}

std::unique_ptr<Pass> createFuseSoftmaxPass() {
  return std::make_unique<FuseSoftmax>();
}

} // namespace triad::ir
