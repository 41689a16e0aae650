// triad inspect: what a model is made of (inputs, outputs, per-layer table with shapes,
// parameters and MACs, totals) and which layers each target supports.
#include "cli/Commands.h"
#include "frontend/TensorIO.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace triad::cli {

namespace {

std::string withCommas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  if (v < 0) out.push_back('-');
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

struct Layer {
  const ir::Node* node;
  int64_t params = 0;
  int64_t macs = 0;
};

int64_t nodeMacs(const ir::Node& n) {
  return ir::nodeWork(n).macs;
}

struct InspectOptions {
  ModelOptions model;
  std::string json, dot;
  bool printIr = false;
};

int runInspect(const InspectOptions& o, const ir::TargetRegistry& targets) {
  frontend::ImportResult r = o.model.load();
  const ir::Graph& g = r.graph;
  for (const auto& w : r.warnings)
    fmt::print(stderr, "triad: warning: {}\n", w);

  std::vector<Layer> layers;
  int64_t totalParams = 0, totalMacs = 0, paramBytes = 0;
  for (const auto& n : g.nodes()) {
    Layer l{n.get()};
    for (ir::Value* v : n->inputs())
      if (v && v->isConstant()) l.params += v->type().numElements();
    l.macs = nodeMacs(*n);
    totalMacs += l.macs;
    layers.push_back(l);
  }
  auto uses = g.useCounts();
  for (ir::Value* c : g.constants())
    if (uses[size_t(c->id())] > 0) {
      totalParams += c->type().numElements();
      paramBytes += int64_t(c->constant().byteSize());
    }

  fmt::print("model    {}\n", o.model.model);
  fmt::print("graph    {}: opset {}, IR version {}, producer '{}'\n", g.name, g.opset, r.irVersion,
             r.producer);
  fmt::print("inputs\n");
  for (ir::Value* v : g.inputs())
    fmt::print("  {:<32} {}\n", v->name(), typeToString(v->type()));
  fmt::print("outputs\n");
  for (ir::Value* v : g.outputs())
    fmt::print("  {:<32} {}\n", v->name(), typeToString(v->type()));

  size_t nameW = 5;
  for (const auto& l : layers)
    nameW = std::max(nameW, l.node->name().size());
  nameW = std::min<size_t>(nameW, 48);
  fmt::print("\n{:>4}  {:<{}}  {:<20} {:<24} {:>12} {:>14}\n", "#", "layer", nameW, "op", "output",
             "params", "MACs");
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    fmt::print("{:>4}  {:<{}}  {:<20} {:<24} {:>12} {:>14}\n", i, l.node->name(), nameW,
               ir::opKindName(l.node->kind()), typeToString(l.node->output(0)->type()),
               withCommas(l.params), withCommas(l.macs));
  }
  fmt::print("\ntotals   {} layers, {} parameters ({:.1f} KiB), {} MACs per inference\n",
             layers.size(), withCommas(totalParams), double(paramBytes) / 1024.0,
             withCommas(totalMacs));

  // Per-target support, from each target's own tables.
  nlohmann::json support = nlohmann::json::object();
  fmt::print("\ntarget support\n");
  std::map<std::string, std::vector<std::string>> unsupportedByOp; // op -> targets lacking it
  for (const ir::Target* t : targets.all()) {
    int ok = 0;
    std::map<std::string, std::string> missing; // op -> reason
    for (const auto& l : layers) {
      ir::Support s = t->supports(*l.node);
      if (s.ok)
        ++ok;
      else
        missing.emplace(std::string(ir::opKindName(l.node->kind())), s.reason);
    }
    fmt::print("  {:<8} {}/{} layers{}\n", t->name(), ok, layers.size(),
               missing.empty() ? "" : fmt::format("; not supported: {}", fmt::join(missing, ", ")));
    support[std::string(t->name())] = {{"supported", ok}, {"layers", layers.size()}};
  }

  if (o.printIr) fmt::print("\n{}", ir::printGraph(g));
  if (!o.dot.empty()) frontend::writeFileAtomic(o.dot, ir::toDot(g));
  if (!o.json.empty()) {
    nlohmann::json j;
    j["model"] = o.model.model;
    j["graph"] = g.name;
    j["opset"] = g.opset;
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
    nlohmann::json ls = nlohmann::json::array();
    for (const auto& l : layers) {
      nlohmann::json outs = nlohmann::json::array();
      for (ir::Value* v : l.node->outputs())
        outs.push_back(typeToString(v->type()));
      ls.push_back({{"name", l.node->name()},
                    {"op", ir::opKindName(l.node->kind())},
                    {"outputs", outs},
                    {"params", l.params},
                    {"macs", l.macs}});
    }
    j["layers"] = ls;
    j["totals"] = {{"layers", layers.size()},
                   {"params", totalParams},
                   {"param_bytes", paramBytes},
                   {"macs", totalMacs}};
    j["targets"] = support;
    j["warnings"] = r.warnings;
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
  return 0;
}

} // namespace

Action addInspect(CLI::App& app, const ir::TargetRegistry& targets) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Show a model's inputs, outputs, layers (shapes, parameters, MACs) and target support");
  o->model.add(*cmd);
  cmd->add_option("--json", o->json, "Also write the report as JSON to this file");
  cmd->add_option("--dot", o->dot, "Write the graph in Graphviz DOT form to this file");
  cmd->add_flag("--ir", o->printIr, "Print the imported IR in its text form");
  return [o, &targets] { return runInspect(*o, targets); };
}

} // namespace triad::cli
