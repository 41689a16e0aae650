// Recognizes the GELUs that exporters spell out for opsets without a Gelu op and replaces each
// by one Gelu node:
//   exact: y = 0.5 * x * (1 + erf(x / sqrt(2)))                     (PyTorch's nn.GELU;
//          x * 0.7071... for the division)
//   tanh:  y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   (GPT-2's gelu_new,
//          x^3 as Pow(x, 3))
// with any operand order, and the final products as (x * (1 + t)) * 0.5 or (x * 0.5) * (1 + t).
// Targets then see one elementwise op that fuses into the MatMul/Gemm epilogue in front of it
// instead of a separate chain of five to eight ops (on GPT-2 the chain read the GEMM's output
// three times, so it could not fuse at all).
#include "ir/ops/Activation.h"
#include "ir/passes/Pass.h"
#include "ir/passes/Patterns.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace triad::ir {

namespace {

/// `n` when it is a binary `kind` node with a scalar constant `c` as one operand; the other
/// operand goes to `other`.
Node* withConstant(Node* n, OpKind kind, double c, Value*& other) {
  if (!n || n->kind() != kind || n->inputs().size() != 2) return nullptr;
  if (isScalarConstant(n->input(1), c))
    other = n->input(0);
  else if (isScalarConstant(n->input(0), c))
    other = n->input(1);
  else
    return nullptr;
  return n;
}

class FuseGelu final : public Pass {
public:
  std::string_view name() const override { return "fuse-gelu"; }

  bool run(Graph& g) override {
    Readers readers(g);
    std::vector<int> uses = g.useCounts();
    auto only = [&](const Value* v) { return readers.sole(v); };
    auto single = [&](const Value* v) { return uses[size_t(v->id())] == 1; };
    std::vector<const Node*> dead;
    bool changed = false;
    // The part both forms share, from t = erf(...) or tanh(...) on: 1 + t, times x, times 0.5
    // (in either order). Returns the output y and appends the nodes to `nodes`, or nullptr.
    auto tail = [&](Value* t, Value* x, std::vector<const Node*>& nodes) -> Value* {
      Value* in = nullptr;
      Node* plus1 = withConstant(only(t), OpKind::Add, 1, in);
      if (!plus1) return nullptr;
      Node* mul = only(plus1->output(0));
      if (!mul || mul->kind() != OpKind::Mul) return nullptr;
      Value* factor = otherOperand(mul, plus1->output(0));
      if (!factor) return nullptr;
      if (factor == x) { // (x * (1 + t)) * 0.5
        Node* half = withConstant(only(mul->output(0)), OpKind::Mul, 0.5, in);
        if (!half || in != mul->output(0)) return nullptr;
        nodes.insert(nodes.end(), {plus1, mul, half});
        return half->output(0);
      }
      // (x * 0.5) * (1 + t)
      Node* half = withConstant(factor->producer(), OpKind::Mul, 0.5, in);
      if (!half || in != x || !single(factor)) return nullptr;
      nodes.insert(nodes.end(), {plus1, half, mul});
      return mul->output(0);
    };
    // By index over the nodes there now: replaceWith appends to g.nodes(), which would leave a
    // range-for's iterator dangling (a crash on BERT-base, depending on the allocator).
    for (size_t i = 0, count = g.nodes().size(); i < count; ++i) {
      Node* fn = g.nodes()[i].get();
      if (fn->kind() != OpKind::Erf && fn->kind() != OpKind::Tanh) continue;
      const bool exact = fn->kind() == OpKind::Erf;
      Node* scale = fn->input(0)->producer();
      if (!scale || !single(fn->input(0))) continue;
      std::vector<const Node*> nodes{scale, fn};
      Value* x = nullptr;
      if (exact) { // x / sqrt(2) or x * (1 / sqrt(2))
        if (scale->kind() == OpKind::Div && isScalarConstant(scale->input(1), std::sqrt(2.0)))
          x = scale->input(0);
        else
          withConstant(scale, OpKind::Mul, std::sqrt(0.5), x);
      } else { // sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))
        Value* inner = nullptr;
        if (!withConstant(scale, OpKind::Mul, std::sqrt(2.0 / std::numbers::pi), inner) ||
            !single(inner))
          continue;
        Node* sum = inner->producer();
        if (!sum || sum->kind() != OpKind::Add) continue;
        for (int k = 0; k < 2 && !x; ++k) {
          Value* cubed = nullptr;
          Node* coef = withConstant(sum->input(k)->producer(), OpKind::Mul, 0.044715, cubed);
          if (!coef || !single(sum->input(k)) || !single(cubed)) continue;
          Node* pow = cubed->producer();
          Value* cand = sum->input(1 - k);
          if (pow && pow->kind() == OpKind::Pow && pow->input(0) == cand &&
              isScalarConstant(pow->input(1), 3)) {
            x = cand;
            nodes.insert(nodes.end(), {sum, coef, pow});
          }
        }
      }
      if (!x || x->isConstant()) continue;
      Value* y = tail(fn->output(0), x, nodes);
      if (!y || y->type() != x->type()) continue;
      auto attrs = std::make_shared<GeluAttrs>();
      if (!exact) attrs->approximate = GeluApproximation::Tanh;
      replaceWith(g, y, OpKind::Gelu, y->producer()->name() + "/Gelu", {x}, attrs);
      dead.insert(dead.end(), nodes.begin(), nodes.end());
      changed = true;
    }
    if (!changed) return false;
    removeMatched(g, dead);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseGeluPass() {
  return std::make_unique<FuseGelu>();
}

} // namespace triad::ir
