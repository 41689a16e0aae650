// Removes nodes none of whose outputs reach a graph output.
#include "ir/passes/Pass.h"

#include <unordered_set>

namespace triad::ir {

namespace {

class DeadCodeElimination final : public Pass {
public:
  std::string_view name() const override { return "dce"; }
  bool run(Graph& g) override {
    // Walk backwards from the outputs; nodes are in topological order, so one reverse sweep
    // sees every user before its producers.
    std::unordered_set<const Value*> live(g.outputs().begin(), g.outputs().end());
    std::unordered_set<const Node*> keep;
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      const Node& n = **it;
      bool used = false;
      for (Value* o : n.outputs())
        used = used || live.count(o);
      if (!used) continue;
      keep.insert(&n);
      for (Value* in : n.inputs())
        if (in) live.insert(in);
    }
    size_t before = g.nodes().size();
    g.removeNodes([&](const Node& n) { return !keep.count(&n); });
    return g.nodes().size() != before;
  }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

} // namespace triad::ir
