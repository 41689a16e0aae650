#include "ir/Interpreter.h"

#include <fmt/format.h>

namespace triad::ir {

std::vector<Tensor> evalNode(const Node& n, std::span<const Tensor* const> inputs) {
  std::vector<Tensor> outs;
  for (Value* v : n.outputs())
    outs.emplace_back(v->type());
  EvalContext ctx{n.attrs(), inputs, outs};
  n.def().eval(ctx);
  return outs;
}

std::vector<Tensor> Interpreter::run(std::span<const Tensor> inputs) const {
  return execute(inputs, false);
}

std::vector<Tensor> Interpreter::runAll(std::span<const Tensor> inputs) const {
  return execute(inputs, true);
}

std::vector<Tensor> Interpreter::execute(std::span<const Tensor> inputs, bool keepAll) const {
  if (inputs.size() != g_.inputs().size())
    fail(ErrorKind::Runtime, "graph '{}' takes {} inputs, {} given", g_.name, g_.inputs().size(),
         inputs.size());
  std::vector<Tensor> env(g_.values().size());
  std::vector<bool> ready(g_.values().size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = g_.inputs()[i];
    const TensorType& want = v->type();
    if (inputs[i].dtype() != want.dtype || inputs[i].shape() != want.shape)
      fail(ErrorKind::Runtime, "input '{}' expects {}, got {}", v->name(), typeToString(want),
           typeToString(inputs[i].type()));
    env[size_t(v->id())] = inputs[i];
    ready[size_t(v->id())] = true;
  }
  // Free intermediates after their last use unless all are kept.
  std::vector<int> remaining = g_.useCounts();
  int64_t done = 0, total = int64_t(g_.nodes().size());
  for (const auto& n : g_.nodes()) {
    std::vector<const Tensor*> in;
    for (Value* v : n->inputs()) {
      if (!v) {
        in.push_back(nullptr);
      } else if (v->isConstant()) {
        in.push_back(&v->constant());
      } else {
        TRIAD_ASSERT(ready[size_t(v->id())], "value {} not computed before node {}", v->name(),
                     n->name());
        in.push_back(&env[size_t(v->id())]);
      }
    }
    std::vector<Tensor> outs = evalNode(*n, in);
    for (size_t i = 0; i < outs.size(); ++i) {
      Value* o = n->outputs()[i];
      env[size_t(o->id())] = std::move(outs[i]);
      ready[size_t(o->id())] = true;
    }
    if (!keepAll)
      for (Value* v : n->inputs())
        if (v && !v->isConstant() && --remaining[size_t(v->id())] == 0)
          env[size_t(v->id())] = Tensor();
    if (progress_) progress_(n->name(), ++done, total);
  }
  if (keepAll) {
    for (Value* c : g_.constants())
      env[size_t(c->id())] = c->constant();
    return env;
  }
  std::vector<Tensor> result;
  for (Value* v : g_.outputs()) {
    if (v->isConstant())
      result.push_back(v->constant());
    else
      result.push_back(env[size_t(v->id())]);
  }
  return result;
}

WorkingSet interpreterWorkingSet(const Graph& g) {
  auto bytesOf = [](const Value* v) {
    return uint64_t(v->type().numElements()) * dtypeSize(v->type().dtype);
  };
  auto add = [](uint64_t a, uint64_t b) {
    uint64_t s = 0;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
  };
  uint64_t fixed = 0; // constants and inputs stay for the whole run
  for (const Value* c : g.constants())
    fixed = add(fixed, bytesOf(c));
  for (const Value* v : g.inputs())
    fixed = add(fixed, bytesOf(v));
  std::vector<int> remaining = g.useCounts();
  uint64_t live = 0;
  WorkingSet ws{fixed, nullptr};
  for (const auto& n : g.nodes()) {
    for (const Value* o : n->outputs())
      live = add(live, bytesOf(o));
    if (add(fixed, live) > ws.bytes) ws = {add(fixed, live), n.get()};
    for (const Value* v : n->inputs())
      if (v && !v->isConstant() && v->producer() && --remaining[size_t(v->id())] == 0)
        live -= std::min(live, bytesOf(v));
  }
  return ws;
}

void checkWorkingSet(const Graph& g) {
  WorkingSet ws = interpreterWorkingSet(g);
  if (ws.bytes <= memoryLimit()) return;
  if (!ws.peakNode)
    fail(ErrorKind::Resource,
         "the model's weights and inputs take {}, more than the run may use ({}; --max-memory)",
         formatBytes(ws.bytes), formatBytes(memoryLimit()));
  fail(ErrorKind::Resource,
       "a run needs {} (weights, inputs and live values) at node '{}' ({}), more than it may use "
       "({}; --max-memory)",
       formatBytes(ws.bytes), ws.peakNode->name(), opKindName(ws.peakNode->kind()),
       formatBytes(memoryLimit()));
}

} // namespace triad::ir
