#include "ir/Verifier.h"

#include <fmt/format.h>
#include <unordered_set>

namespace triad::ir {

std::vector<TensorType> inferNodeTypes(const Node& n) {
  std::vector<std::optional<TensorType>> inTypes;
  std::vector<const Tensor*> inConsts;
  for (Value* v : n.inputs()) {
    inTypes.push_back(v ? std::optional<TensorType>(v->type()) : std::nullopt);
    inConsts.push_back(v && v->isConstant() ? &v->constant() : nullptr);
  }
  InferContext ctx{n.attrs(), inTypes, inConsts};
  return n.def().infer(ctx);
}

std::vector<std::string> verify(const Graph& g) {
  std::vector<std::string> problems;
  auto where = [](const Node& n) {
    return fmt::format("node '{}' ({})", n.name(), opKindName(n.kind()));
  };
  std::unordered_set<const Value*> defined;
  std::unordered_set<const Value*> graphValues;
  for (const auto& v : g.values())
    graphValues.insert(v.get());
  for (Value* v : g.inputs()) {
    if (v->isConstant() || v->producer())
      problems.push_back(
          fmt::format("graph input '{}' is also a constant or node output", v->name()));
    defined.insert(v);
  }
  for (Value* v : g.constants())
    defined.insert(v);
  std::unordered_set<std::string> names;
  for (const auto& n : g.nodes()) {
    if (!findOp(n->kind())) {
      problems.push_back(fmt::format("{}: op is not registered", where(*n)));
      continue;
    }
    const OpDef& d = n->def();
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      Value* v = n->inputs()[i];
      if (!v) continue;
      if (!graphValues.count(v))
        problems.push_back(fmt::format("{}: input {} is not a value of this graph", where(*n), i));
      else if (!defined.count(v))
        problems.push_back(fmt::format(
            "{}: input {} '{}' is used before it is defined{}", where(*n), i, v->name(),
            v->producer() ? " (nodes out of topological order)" : " (dangling: no producer)"));
    }
    int nonShapeMax = d.maxInputs < 0 ? -1 : d.maxInputs - int(d.shapeOperands.size());
    if (nonShapeMax >= 0 && int(n->inputs().size()) > std::max(nonShapeMax, 0))
      problems.push_back(fmt::format("{}: has {} inputs, the op takes at most {}", where(*n),
                                     n->inputs().size(), nonShapeMax));
    for (Value* out : n->outputs()) {
      if (defined.count(out))
        problems.push_back(
            fmt::format("{}: output '{}' is defined twice (not SSA)", where(*n), out->name()));
      if (out->producer() != n.get())
        problems.push_back(fmt::format("{}: output '{}' does not point back to its producer",
                                       where(*n), out->name()));
      defined.insert(out);
    }
    try {
      std::vector<TensorType> types = inferNodeTypes(*n);
      if (types.size() < n->outputs().size()) {
        problems.push_back(fmt::format("{}: shape rule gives {} outputs, node has {}", where(*n),
                                       types.size(), n->outputs().size()));
      } else {
        for (size_t i = 0; i < n->outputs().size(); ++i)
          if (!(types[i] == n->outputs()[i]->type()))
            problems.push_back(fmt::format("{}: output '{}' has type {}, the shape rule says {}",
                                           where(*n), n->outputs()[i]->name(),
                                           typeToString(n->outputs()[i]->type()),
                                           typeToString(types[i])));
      }
    } catch (const Error& e) {
      problems.push_back(fmt::format("{}: {}", where(*n), e.what()));
    }
  }
  for (Value* v : g.outputs())
    if (!defined.count(v))
      problems.push_back(fmt::format("graph output '{}' is never defined", v->name()));
  for (const auto& v : g.values())
    if (v->type().dtype == DType::Fixed && !v->type().fixed)
      problems.push_back(fmt::format("value '{}' is fixed point without a format", v->name()));
  return problems;
}

void verifyOrThrow(const Graph& g, ErrorKind kind) {
  auto problems = verify(g);
  if (problems.empty()) return;
  std::string msg = fmt::format("graph '{}' failed verification:", g.name);
  for (const auto& p : problems)
    msg += "\n  " + p;
  throw Error(kind, msg);
}

} // namespace triad::ir
