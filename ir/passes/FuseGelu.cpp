// Recognizes the exact GELU that exporters spell out for opsets without a Gelu op,
//   y = (x * (erf(x / sqrt(2)) + 1)) * 0.5      (PyTorch's nn.GELU, any operand order,
//                                                 x * 0.7071... for the division),
// and replaces the five nodes by one Gelu node. Targets then see one elementwise op that fuses
// into the MatMul/Gemm epilogue in front of it instead of a separate five-op chain.
#include "ir/ops/Activation.h"
#include "ir/passes/Pass.h"
#include "ir/passes/Patterns.h"

#include <algorithm>
#include <cmath>

namespace triad::ir {

namespace {

class FuseGelu final : public Pass {
public:
  std::string_view name() const override { return "fuse-gelu"; }

  bool run(Graph& g) override {
    Readers readers(g);
    std::vector<int> uses = g.useCounts();
    auto only = [&](const Value* v) { return readers.sole(v); };
    std::vector<const Node*> dead;
    bool changed = false;
    // By index over the nodes there now: replaceWith appends to g.nodes(), which would leave a
    // range-for's iterator dangling (a crash on BERT-base, depending on the allocator).
    for (size_t i = 0, count = g.nodes().size(); i < count; ++i) {
      Node* erf = g.nodes()[i].get();
      if (erf->kind() != OpKind::Erf) continue;
      Node* scale = erf->input(0)->producer(); // x / sqrt(2) or x * (1 / sqrt(2))
      if (!scale || uses[size_t(erf->input(0)->id())] != 1) continue;
      Value* x = nullptr;
      if (scale->kind() == OpKind::Div && isScalarConstant(scale->input(1), std::sqrt(2.0)))
        x = scale->input(0);
      else if (scale->kind() == OpKind::Mul) {
        if (isScalarConstant(scale->input(1), std::sqrt(0.5))) x = scale->input(0);
        if (isScalarConstant(scale->input(0), std::sqrt(0.5))) x = scale->input(1);
      }
      if (!x || x->isConstant()) continue;
      Node* plus1 = only(erf->output(0));
      if (!plus1 || plus1->kind() != OpKind::Add ||
          !isScalarConstant(otherOperand(plus1, erf->output(0)), 1))
        continue;
      Node* mulX = only(plus1->output(0));
      if (!mulX || mulX->kind() != OpKind::Mul || otherOperand(mulX, plus1->output(0)) != x)
        continue;
      Node* half = only(mulX->output(0));
      if (!half || half->kind() != OpKind::Mul ||
          !isScalarConstant(otherOperand(half, mulX->output(0)), 0.5))
        continue;
      Value* y = half->output(0);
      if (y->type() != x->type()) continue;
      replaceWith(g, y, OpKind::Gelu, half->name() + "/Gelu", {x}, std::make_shared<GeluAttrs>());
      dead.insert(dead.end(), {scale, erf, plus1, mulX, half});
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
