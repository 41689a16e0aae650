#include "ir/passes/Patterns.h"

#include "ir/passes/Pass.h"

#include <algorithm>
#include <cmath>

namespace triad::ir {

bool isScalarConstant(const Value* v, double want, double tol) {
  if (!v || !v->isConstant() || v->constant().numElements() != 1 || !isFloat(v->type().dtype))
    return false;
  return std::fabs(v->constant().getDouble(0) - want) <= tol * std::max(1.0, std::fabs(want));
}

Value* otherOperand(const Node* n, const Value* v) {
  if (n->inputs().size() != 2) return nullptr;
  if (n->input(0) == v) return n->input(1);
  if (n->input(1) == v) return n->input(0);
  return nullptr;
}

Node* replaceWith(Graph& g, Value* y, OpKind kind, const std::string& nodeName,
                  std::vector<Value*> inputs, std::shared_ptr<const Attrs> attrs) {
  std::string name = y->name();
  g.renameValue(y, freshValueName(g, name + ":fused"));
  Node* n = g.addNode(kind, nodeName, std::move(inputs), std::move(attrs), {name}, {y->type()});
  g.replaceAllUses(y, n->output(0));
  return n;
}

void removeMatched(Graph& g, const std::vector<const Node*>& dead) {
  g.removeNodes([&](const Node& n) { return std::count(dead.begin(), dead.end(), &n) > 0; });
  g.sortNodes();
}

Readers::Readers(const Graph& g)
    : readers_(g.values().size()), uses_(g.useCounts()), outputs_(g.outputs()) {
  for (const auto& np : g.nodes())
    for (Value* v : np->inputs()) {
      if (!v) continue;
      auto& r = readers_[size_t(v->id())];
      if (std::find(r.begin(), r.end(), np.get()) == r.end()) r.push_back(np.get());
    }
}

bool Readers::isGraphOutput(const Value* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

Node* Readers::sole(const Value* v) const {
  if (uses_[size_t(v->id())] != 1 || isGraphOutput(v)) return nullptr;
  const auto& r = readers_[size_t(v->id())];
  return r.size() == 1 ? r.front() : nullptr;
}

} // namespace triad::ir
