// Removes Identity, inference-mode Dropout and a Pad of zeros on every side (PyTorch exports
// one before an average pool): their users read the input directly. A node whose
// output is a graph output is kept when its input is a graph input or a constant, so that graph
// outputs keep their names and stay computed values; otherwise the input value takes the
// output's name.
#include "ir/ops/Movement.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <unordered_set>

namespace triad::ir {

namespace {

bool isOutput(const Graph& g, const Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

bool isUsed(const Graph& g, const Value* v) {
  return !v->users().empty() || isOutput(g, v);
}

class RemoveIdentity final : public Pass {
public:
  std::string_view name() const override { return "remove-identity"; }
  bool run(Graph& g) override {
    std::unordered_set<const Node*> dead;
    for (const auto& np : g.nodes()) {
      Node* n = np.get();
      bool zeroPad = n->kind() == OpKind::Pad &&
                     std::all_of(n->attrs<PadAttrs>().pads.begin(), n->attrs<PadAttrs>().pads.end(),
                                 [](int64_t p) { return p == 0; });
      if (n->kind() != OpKind::Identity && n->kind() != OpKind::Dropout && !zeroPad) continue;
      // Dropout's optional mask output must be unused (the verifier would catch a dangling use).
      if (n->outputs().size() > 1 && isUsed(g, n->output(1))) continue;
      Value* in = n->input(0);
      Value* out = n->output(0);
      bool isGraphOutput = isOutput(g, out);
      if (isGraphOutput) {
        if (!in->producer()) continue;
        if (isOutput(g, in)) continue; // both names are outputs: keep the copy
        std::string name = out->name();
        g.renameValue(out, name + ":removed");
        g.renameValue(in, name);
      }
      g.replaceAllUses(out, in);
      dead.insert(n);
    }
    g.removeNodes([&](const Node& n) { return dead.count(&n) > 0; });
    return !dead.empty();
  }
};

} // namespace

std::unique_ptr<Pass> createRemoveIdentityPass() {
  return std::make_unique<RemoveIdentity>();
}

} // namespace triad::ir
