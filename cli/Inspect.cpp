// triad inspect: what a model is made of (inputs, outputs, per-layer table with shapes,
// parameters and MACs, totals) and which layers each target supports.
#include "frontend/Inspect.h"
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

struct InspectOptions {
  ModelOptions model;
  std::string json, dot;
  bool printIr = false;
};

int runInspect(const InspectOptions& o, const ir::TargetRegistry& targets) {
  frontend::ImportResult r = o.model.load();
  const ir::Graph& g = r.graph;
  for (const auto& w : r.warnings)
    fmt::print(stderr, "triad: warning: {}\n", terminalText(w));

  // The report is the library's (the Python package's Model.inspect() returns the same); the
  // text form below is printed from it. Every name in it is the model's (untrusted): the table
  // shows each through escape::printable (terminalText), one line, no control sequences.
  nlohmann::json j = frontend::inspectModel(r, o.model.model, targets);
  const nlohmann::json& layers = j["layers"];
  auto str = [](const nlohmann::json& v) { return terminalText(v.get<std::string>()); };

  fmt::print("model    {}\n", terminalText(o.model.model));
  fmt::print("graph    {}: opset {}, IR version {}, producer '{}'\n", terminalText(g.name), g.opset,
             r.irVersion, terminalText(r.producer));
  fmt::print("inputs\n");
  for (ir::Value* v : g.inputs())
    fmt::print("  {:<32} {}\n", terminalText(v->name()), terminalText(typeToString(v->type())));
  fmt::print("outputs\n");
  for (ir::Value* v : g.outputs())
    fmt::print("  {:<32} {}\n", terminalText(v->name()), terminalText(typeToString(v->type())));

  std::vector<std::string> names;
  size_t nameW = 5;
  for (const auto& l : layers) {
    names.push_back(str(l["name"]));
    nameW = std::max(nameW, names.back().size());
  }
  nameW = std::min<size_t>(nameW, 48);
  fmt::print("\n{:>4}  {:<{}}  {:<20} {:<24} {:>12} {:>14}\n", "#", "layer", nameW, "op", "output",
             "params", "MACs");
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    fmt::print("{:>4}  {:<{}}  {:<20} {:<24} {:>12} {:>14}\n", i, names[i], nameW, str(l["op"]),
               str(l["outputs"][0]), withCommas(l["params"].get<int64_t>()),
               withCommas(l["macs"].get<int64_t>()));
  }
  const nlohmann::json& totals = j["totals"];
  fmt::print("\ntotals   {} layers, {} parameters ({:.1f} KiB), {} MACs per inference\n",
             layers.size(), withCommas(totals["params"].get<int64_t>()),
             double(totals["param_bytes"].get<int64_t>()) / 1024.0,
             withCommas(totals["macs"].get<int64_t>()));

  // Per-target support, from each target's own tables.
  fmt::print("\ntarget support\n");
  for (const ir::Target* t : targets.all()) {
    const nlohmann::json& s = j["targets"][std::string(t->name())];
    auto missing = s["unsupported"].get<std::map<std::string, std::string>>(); // op -> reason
    fmt::print("  {:<8} {}/{} layers{}\n", t->name(), s["supported"].get<int64_t>(), layers.size(),
               missing.empty()
                   ? ""
                   : terminalText(fmt::format("; not supported: {}", fmt::join(missing, ", "))));
  }

  if (o.printIr) fmt::print("\n{}", ir::printGraph(g));
  if (!o.dot.empty()) frontend::writeFileAtomic(o.dot, ir::toDot(g));
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
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
