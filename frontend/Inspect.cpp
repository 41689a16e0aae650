#include "frontend/Inspect.h"

#include "ir/Cost.h"
#include "ir/OpDef.h"

#include <map>

namespace triad::frontend {

nlohmann::json inspectModel(const ImportResult& r, const std::string& model,
                            const ir::TargetRegistry& targets) {
  const ir::Graph& g = r.graph;
  nlohmann::json j;
  j["model"] = model;
  j["graph"] = g.name;
  j["opset"] = g.opset;
  j["ir_version"] = r.irVersion;
  j["producer"] = r.producer;
  auto io = [](const std::vector<ir::Value*>& vs) {
    nlohmann::json a = nlohmann::json::array();
    for (ir::Value* v : vs)
      a.push_back({{"name", v->name()},
                   {"dtype", ir::dtypeName(v->type().dtype)},
                   {"shape", v->type().shape}});
    return a;
  };
  j["inputs"] = io(g.inputs());
  j["outputs"] = io(g.outputs());

  nlohmann::json layers = nlohmann::json::array();
  int64_t totalMacs = 0;
  for (const auto& n : g.nodes()) {
    int64_t params = 0;
    for (ir::Value* v : n->inputs())
      if (v && v->isConstant()) params += v->type().numElements();
    int64_t macs = ir::nodeWork(*n).macs;
    totalMacs += macs;
    nlohmann::json outs = nlohmann::json::array();
    for (ir::Value* v : n->outputs())
      outs.push_back(typeToString(v->type()));
    layers.push_back({{"name", n->name()},
                      {"op", ir::opKindName(n->kind())},
                      {"outputs", outs},
                      {"params", params},
                      {"macs", macs}});
  }
  int64_t totalParams = 0, paramBytes = 0;
  auto uses = g.useCounts();
  for (ir::Value* c : g.constants())
    if (uses[size_t(c->id())] > 0) {
      totalParams += c->type().numElements();
      paramBytes += int64_t(c->constant().byteSize());
    }
  j["layers"] = layers;
  j["totals"] = {{"layers", layers.size()},
                 {"params", totalParams},
                 {"param_bytes", paramBytes},
                 {"macs", totalMacs}};

  // Per-target support, from each target's own tables: the first reason given per op type.
  nlohmann::json support = nlohmann::json::object();
  for (const ir::Target* t : targets.all()) {
    int64_t ok = 0;
    std::map<std::string, std::string> missing; // op -> reason
    for (const auto& n : g.nodes()) {
      ir::Support s = t->supports(*n);
      if (s.ok)
        ++ok;
      else
        missing.emplace(std::string(ir::opKindName(n->kind())), s.reason);
    }
    support[std::string(t->name())] = {
        {"supported", ok}, {"layers", g.nodes().size()}, {"unsupported", missing}};
  }
  j["targets"] = support;
  j["warnings"] = r.warnings;
  return j;
}

} // namespace triad::frontend
