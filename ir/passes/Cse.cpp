// cse: common-subexpression elimination.
//
//  1. Identical constants (same type, shape and bytes) are merged: every use reads the first
//     one (in creation order). Exporters duplicate small constants (axes, shapes, 1.0, 0.5)
//     and deduplicating them lets step 2 merge the nodes that read them.
//  2. Nodes in topological order: two nodes of the same kind with exactly equal attributes
//     (Attrs::equals, field by field, floats by bit pattern), the same inputs (the same values,
//     after earlier merges) and the same output types compute the same outputs (every op is a
//     pure function of its inputs); the later one is removed and its users read the first
//     one's outputs. Because earlier merges are applied before a node is looked at, whole
//     duplicated chains collapse in one sweep.
// Values that are graph outputs are never replaced (they keep their names): a duplicate that
// produces a graph output stays, as does a duplicate constant that is one.
#include "ir/passes/Pass.h"

#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace triad::ir {

namespace {

size_t mix(size_t h, size_t v) {
  return (h ^ v) * 1099511628211ull;
}

size_t tensorContentHash(const Tensor& t) {
  size_t h = std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(t.raw()), t.byteSize()));
  h = mix(h, size_t(t.dtype()));
  for (int64_t d : t.shape())
    h = mix(h, size_t(d));
  return h;
}

bool sameComputation(const Node& a, const Node& b) {
  if (a.kind() != b.kind() || a.inputs() != b.inputs() || a.outputs().size() != b.outputs().size())
    return false;
  for (size_t i = 0; i < a.outputs().size(); ++i)
    if (!(a.output(i)->type() == b.output(i)->type())) return false;
  return a.attrs().equals(b.attrs());
}

class Cse final : public Pass {
public:
  std::string_view name() const override { return "cse"; }

  bool run(Graph& g) override {
    std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
    // Value -> the equivalent value its users read instead.
    std::unordered_map<const Value*, Value*> replacement;
    std::vector<int> uses = g.useCounts();

    // 1. Constants (only those in use: unused ones are not part of the program).
    std::unordered_map<size_t, std::vector<Value*>> constants;
    for (Value* c : g.constants()) {
      if (uses[size_t(c->id())] == 0) continue;
      auto& bucket = constants[tensorContentHash(c->constant())];
      Value* same = nullptr;
      for (Value* other : bucket)
        if (other->constant() == c->constant()) same = other;
      if (same && !graphOutputs.count(c))
        replacement[c] = same;
      else if (!same)
        bucket.push_back(c);
    }

    // 2. Nodes.
    std::unordered_map<size_t, std::vector<Node*>> seen;
    std::unordered_set<const Node*> dead;
    for (const auto& np : g.nodes()) {
      Node* n = np.get();
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        auto it = n->input(i) ? replacement.find(n->input(i)) : replacement.end();
        if (it != replacement.end()) g.setNodeInput(n, i, it->second);
      }
      size_t h = mix(size_t(n->kind()), n->attrs().hash());
      for (Value* v : n->inputs())
        h = mix(h, v ? size_t(v->id()) + 1 : 0);
      auto& bucket = seen[h];
      Node* same = nullptr;
      for (Node* other : bucket)
        if (sameComputation(*other, *n)) same = other;
      bool producesGraphOutput = false;
      for (Value* v : n->outputs())
        producesGraphOutput = producesGraphOutput || graphOutputs.count(v) > 0;
      if (same && !producesGraphOutput) {
        for (size_t i = 0; i < n->outputs().size(); ++i)
          replacement[n->output(i)] = same->output(i);
        dead.insert(n);
      } else if (!same) {
        bucket.push_back(n);
      }
    }
    g.removeNodes([&](const Node& n) { return dead.count(&n) > 0; });

    bool changed = !dead.empty();
    for (const auto& [from, to] : replacement)
      changed = changed || from->isConstant();
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createCsePass() {
  return std::make_unique<Cse>();
}

} // namespace triad::ir
