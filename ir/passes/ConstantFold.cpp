// constant-fold: replaces every node that can be evaluated ahead of run time (see Folding.h)
// by constants computed with its reference kernel. Nodes are visited in topological order and
// each folded output is a constant before its users are visited, so a whole chain (PyTorch's
// Shape -> Gather -> Unsqueeze -> Concat) folds in one sweep. A folded value keeps its name
// (the node's output is renamed "<name>:folded"), so printed IR and --print-after stay readable.
// Nodes that produce a graph output are kept: graph outputs stay computed values (the same
// policy as remove-identity). The inputs the folded nodes read are left to dce.
#include "ir/ops/Quantize.h"
#include "ir/passes/Folding.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_set>

namespace triad::ir {

FoldInputs::FoldInputs(const OpDef& def, std::span<Value* const> inputs) {
  placeholders_.reserve(inputs.size());
  for (Value* v : inputs) {
    if (!v) {
      tensors_.push_back(nullptr);
    } else if (v->isConstant()) {
      tensors_.push_back(&v->constant());
      constantElements_ += v->constant().numElements();
    } else if (def.valueIndependent) {
      placeholders_.emplace_back(v->type());
      tensors_.push_back(&placeholders_.back());
    } else {
      tensors_.push_back(nullptr);
      allKnown_ = false;
    }
  }
}

bool foldWithinSizeLimit(OpKind kind, const FoldInputs& in, std::span<const TensorType> outputs,
                         int64_t maxGrowth) {
  if (kind == OpKind::Constant) return true;
  int64_t produced = 0;
  for (const TensorType& t : outputs)
    produced += t.numElements();
  return produced <= maxGrowth || produced <= in.constantElements();
}

std::optional<std::vector<Tensor>> tryFoldNode(const OpDef& def, const Attrs& attrs,
                                               const FoldInputs& in,
                                               std::span<const TensorType> outputs,
                                               int64_t maxGrowth) {
  if (!def.foldable || !in.allKnown() || !foldWithinSizeLimit(def.kind, in, outputs, maxGrowth))
    return std::nullopt;
  std::vector<Tensor> outs;
  outs.reserve(outputs.size());
  for (const TensorType& t : outputs)
    outs.emplace_back(t);
  def.eval(EvalContext{attrs, in.tensors(), outs});
  return outs;
}

void recordFoldedDequantize(OpKind kind, const Attrs& attrs, const FoldInputs& in, Value* folded) {
  if (kind != OpKind::DequantizeLinear || !folded || !folded->isConstant()) return;
  const auto* a = dynamic_cast<const QuantAxisAttrs*>(&attrs);
  std::span<const Tensor* const> t = in.tensors();
  if (!a || a->blockSize != 0 || t.size() < 2 || !t[0] || !t[1]) return;
  auto q = std::make_shared<DequantizedFrom>();
  q->q = std::make_shared<const Tensor>(*t[0]);
  q->scale = std::make_shared<const Tensor>(*t[1]);
  if (t.size() > 2 && t[2]) q->zeroPoint = std::make_shared<const Tensor>(*t[2]);
  q->axis = q->scale->numElements() == 1 ? -1 : a->axis;
  folded->setDequantizedFrom(std::move(q));
}

namespace {

class ConstantFold final : public Pass {
public:
  explicit ConstantFold(int64_t maxGrowth) : maxGrowth_(maxGrowth) {}
  std::string_view name() const override { return "constant-fold"; }

  bool run(Graph& g) override {
    std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
    std::unordered_set<const Node*> folded;
    for (const auto& np : g.nodes()) {
      Node* n = np.get();
      if (std::any_of(n->outputs().begin(), n->outputs().end(),
                      [&](const Value* v) { return graphOutputs.count(v) > 0; }))
        continue;
      FoldInputs in(n->def(), n->inputs());
      if (!in.allKnown()) continue;
      std::vector<TensorType> types;
      for (Value* v : n->outputs())
        types.push_back(v->type());
      std::optional<std::vector<Tensor>> outs;
      try {
        outs = tryFoldNode(n->def(), n->attrs(), in, types, maxGrowth_);
      } catch (const Error& e) {
        throw Error(e.kind(), fmt::format("constant-fold: node '{}' ({}): {}", n->name(),
                                          opKindName(n->kind()), e.what()));
      }
      if (!outs) continue;
      for (size_t i = 0; i < outs->size(); ++i) {
        Value* old = n->output(i);
        std::string name = old->name();
        g.renameValue(old, freshValueName(g, name + ":folded"));
        Value* c = g.addConstant(name, std::move((*outs)[i]));
        g.replaceAllUses(old, c);
        recordFoldedDequantize(n->kind(), n->attrs(), in, c);
      }
      folded.insert(n);
    }
    g.removeNodes([&](const Node& n) { return folded.count(&n) > 0; });
    return !folded.empty();
  }

private:
  int64_t maxGrowth_;
};

} // namespace

std::unique_ptr<Pass> createConstantFoldPass(int64_t maxGrowthElements) {
  return std::make_unique<ConstantFold>(maxGrowthElements);
}

} // namespace triad::ir
