#include "ir/Fusion.h"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>
#include <unordered_set>

namespace triad::ir {

std::vector<Value*> FusionGroup::externalInputs() const {
  std::unordered_set<const Value*> inside;
  for (const Node* n : nodes)
    for (Value* o : n->outputs())
      inside.insert(o);
  std::vector<Value*> out;
  for (const Node* n : nodes)
    for (Value* v : n->inputs())
      if (v && !inside.count(v) && std::find(out.begin(), out.end(), v) == out.end())
        out.push_back(v);
  return out;
}

std::string FusionGroup::name() const {
  if (nodes.size() == 1) return nodes.front()->name();
  return nodes.front()->name() + ".." + nodes.back()->name();
}

std::vector<FusionGroup> formFusionGroups(const Graph& g, const FusionPolicy& policy) {
  std::vector<int> uses = g.useCounts();
  std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
  std::unordered_map<const Value*, const Node*> consumer; // the last consumer seen per value
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node* n = g.nodes()[i].get();
    position[n] = i;
    for (Value* v : n->inputs())
      if (v) consumer[v] = n;
  }
  std::unordered_set<const Node*> assigned;
  std::vector<FusionGroup> groups;
  for (const auto& np : g.nodes()) {
    const Node* n = np.get();
    if (assigned.count(n)) continue;
    FusionGroup grp;
    grp.nodes.push_back(n);
    assigned.insert(n);
    bool anchor = policy.isAnchor && policy.isAnchor(*n);
    bool elementwise = policy.isFusableElementwise && policy.isFusableElementwise(*n);
    grp.anchored = anchor;
    grp.elementwise = elementwise && !anchor;
    const Node* cur = n;
    while ((anchor || elementwise) && cur->outputs().size() == 1) {
      const Value* out = cur->output(0);
      if (uses[size_t(out->id())] != 1 || graphOutputs.count(out)) break;
      auto it = consumer.find(out);
      if (it == consumer.end()) break;
      const Node* u = it->second;
      bool view = policy.isFusableView && policy.isFusableView(*u);
      if (assigned.count(u) || u->outputs().size() != 1) break;
      if (!view && !policy.isFusableElementwise(*u)) break;
      if (view ? numElements(u->output(0)->type().shape) != numElements(out->type().shape)
               : u->output(0)->type().shape != out->type().shape)
        break;
      // An anchor's epilogue works on the kernel's output elements in place.
      if (anchor && u->output(0)->type().dtype != out->type().dtype &&
          !(policy.anchorTailChangesType && policy.anchorTailChangesType(*n)))
        break;
      // An elementwise chain also takes u's other operands when each is the one use of an
      // elementwise node of u's shape: a residual Add's second DequantizeLinear is computed in
      // the same pass instead of stored in float and read back. Such a node reads only values
      // from outside the group (each value made inside has its one use inside, on the chain).
      if (grp.elementwise && !view)
        for (Value* v : u->inputs()) {
          const Node* p = v && v != out ? v->producer() : nullptr;
          if (!p || assigned.count(p) || p->outputs().size() != 1 || uses[size_t(v->id())] != 1 ||
              graphOutputs.count(v) || !policy.isFusableElementwise(*p) ||
              (policy.isFusableView && policy.isFusableView(*p)) ||
              v->type().shape != u->output(0)->type().shape)
            continue;
          grp.nodes.push_back(p);
          assigned.insert(p);
        }
      grp.nodes.push_back(u);
      assigned.insert(u);
      cur = u;
    }
    groups.push_back(std::move(grp));
  }
  std::stable_sort(groups.begin(), groups.end(), [&](const FusionGroup& a, const FusionGroup& b) {
    return position[a.last()] < position[b.last()];
  });
  return groups;
}

std::string describeFusion(std::span<const FusionGroup> groups) {
  size_t nodes = 0, anchored = 0, fused = 0;
  for (const auto& grp : groups) {
    nodes += grp.nodes.size();
    anchored += grp.anchored;
    fused += grp.nodes.size() - 1;
  }
  return fmt::format("{} nodes in {} groups ({} with a fused epilogue, {} nodes fused away)", nodes,
                     groups.size(), anchored, fused);
}

} // namespace triad::ir
