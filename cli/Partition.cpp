// triad partition: plan one graph across targets (ir/partition), print why each node went where,
// draw it, and optionally run the partitioned graph and compare predicted with measured times.
#include "ir/partition/Partition.h"
#include "cli/Commands.h"
#include "cli/Targets.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuTarget.h"
#include "ir/Interpreter.h"
#include "ir/System.h"
#include "ir/partition/Calibration.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace triad::cli {

namespace {

struct PartitionOptions {
  ModelOptions model;
  std::string mode = "auto";
  std::string targets = "cpu,gpu,fpga";
  std::vector<std::string> place;
  std::string placeFile, links, json, dot, svg;
  std::vector<std::string> measured; // TARGET=run.json
  PlanTargetOptions target;
  bool calibrate = false, noCalibrate = false, run = false;
  std::vector<std::string> inputs;
  int repeat = 5;
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::pair<std::string, std::string> splitAssign(const std::string& s, const char* option) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    fail(ErrorKind::Usage, "{} '{}': expected NAME=VALUE", option, s);
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::map<std::string, std::string> readPlaceFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(ErrorKind::Io, "cannot read the placement file '{}'", path);
  std::map<std::string, std::string> out;
  int lineNo = 0;
  for (std::string line; std::getline(f, line);) {
    ++lineNo;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
      line.pop_back();
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    auto eq = line.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == line.size())
      fail(ErrorKind::Usage, "{}:{}: expected NODE=TARGET, got '{}'", path, lineNo, line);
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::vector<std::pair<std::string, double>> readRunProfile(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(ErrorKind::Io, "cannot read the profile '{}'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Usage, "profile '{}' is not JSON: {}", path, e.what());
  }
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array())
    fail(ErrorKind::Usage,
         "profile '{}' has no \"layers\" list (write it with `triad run "
         "--profile --json FILE`)",
         path);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& l : j["layers"])
    if (l.is_object() && l.value("kind", "layer") == "layer" && l.contains("layer") &&
        l["layer"].is_string() && l.contains("ms") && l["ms"].is_number())
      out.emplace_back(l["layer"].get<std::string>(), l["ms"].get<double>() * 1e-3);
  return out;
}

std::vector<ir::Tensor> randomInputs(const ir::Graph& g) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<ir::Tensor> in;
  for (const ir::Value* v : g.inputs()) {
    ir::Tensor t(v->type());
    if (v->type().dtype != ir::DType::F32)
      fail(ErrorKind::Usage, "input '{}' is {}: give it with --input", v->name(),
           typeToString(v->type()));
    for (float& x : t.values<float>())
      x = u(rng);
    in.push_back(std::move(t));
  }
  return in;
}

int runPartition(const PartitionOptions& o) {
  // --run's input files give the model's dynamic dimensions their sizes (unless --batch/--dim).
  ModelOptions model = o.model;
  std::vector<ir::Tensor> files;
  if (o.run)
    for (const std::string& path : o.inputs) {
      files.push_back(frontend::readTensorFile(path).tensor);
      model.inputShapes.push_back({"", files.back().shape(), path});
    }
  frontend::ImportResult r = model.load(true);
  const ir::Graph& g = r.graph;
  Targets targets = makeTargets(o.target);

  ir::partition::Options po;
  po.mode = ir::partition::parseMode(o.mode);
  po.targets = splitList(o.targets);
  if (po.targets.empty()) fail(ErrorKind::Usage, "--targets is empty");
  for (const std::string& t : po.targets)
    if (!targets.registry.find(t))
      fail(ErrorKind::Usage, "--targets: '{}' is not a target (available: {})", t,
           targets.registry.names());
  if (!o.placeFile.empty()) po.place = readPlaceFile(o.placeFile);
  for (const std::string& p : o.place) {
    auto [node, target] = splitAssign(p, "--place");
    po.place[node] = target;
  }
  if (po.mode == ir::partition::Mode::Manual && po.place.empty())
    fail(ErrorKind::Usage, "--mode manual needs --place NODE=TARGET or --place-file");
  if (!o.links.empty()) po.links = ir::partition::Links::load(o.links);
  fillCosts(targets, o.target, po, !o.noCalibrate, o.calibrate,
            [](const std::string& line) { fmt::print(stderr, "{}\n", terminalText(line)); });
  for (const std::string& m : o.measured) {
    auto [target, path] = splitAssign(m, "--measured");
    po.costs.measured[target] = ir::partition::measuredFromProfile(g, readRunProfile(path));
  }

  ir::partition::Plan plan = ir::partition::plan(g, targets.registry, po);
  fmt::print("{}", ir::partition::planText(plan, g)); // names escaped there (escape::printable)
  if (!o.dot.empty() || !o.svg.empty()) {
    std::string dot = ir::partition::planDot(plan, g);
    if (!o.dot.empty()) frontend::writeFileAtomic(o.dot, dot);
    if (!o.svg.empty()) {
      std::string tmp = o.svg + ".dot.tmp";
      frontend::writeFileAtomic(tmp, dot);
      int rc = 0;
      std::string svg = runCapture(fmt::format("dot -Tsvg {} 2>&1", shellQuote(tmp)), &rc);
      std::filesystem::remove(tmp);
      if (rc != 0)
        fail(ErrorKind::Io, "--svg: Graphviz `dot` failed (is graphviz installed?): {}", svg);
      frontend::writeFileAtomic(o.svg, svg);
    }
  }

  std::unique_ptr<ir::partition::PartitionedExecutable> exe;
  if (o.run) {
    std::vector<ir::Tensor> in;
    if (o.inputs.empty()) {
      in = randomInputs(g);
    } else {
      if (o.inputs.size() != g.inputs().size())
        fail(ErrorKind::Usage, "{} --input files given; the model has {} inputs", o.inputs.size(),
             g.inputs().size());
      for (size_t i = 0; i < o.inputs.size(); ++i) {
        ir::Tensor& t = files[i];
        if (t.type() != g.inputs()[i]->type())
          fail(ErrorKind::Runtime, "input '{}' expects {}, file '{}' holds {}",
               g.inputs()[i]->name(), typeToString(g.inputs()[i]->type()), o.inputs[i],
               typeToString(t.type()));
        in.push_back(std::move(t));
      }
    }
    ir::CompileSettings s;
    s.threads = o.target.threads;
    exe = ir::partition::compilePlan(g, plan, targets.registry, s);
    std::vector<ir::Tensor> out;
    ir::partition::RunTimes sum;
    for (int k = 0; k < o.repeat; ++k) {
      out = exe->run(in);
      const ir::partition::RunTimes& t = exe->lastTimes();
      if (k == 0) { // the first run warms up
        sum = t;
        std::fill(sum.partitionSeconds.begin(), sum.partitionSeconds.end(), 0);
        std::fill(sum.transferSeconds.begin(), sum.transferSeconds.end(), 0);
        sum.totalSeconds = 0;
        if (o.repeat > 1) continue;
      }
      for (size_t i = 0; i < t.partitionSeconds.size(); ++i)
        sum.partitionSeconds[i] += t.partitionSeconds[i];
      for (size_t i = 0; i < t.transferSeconds.size(); ++i)
        sum.transferSeconds[i] += t.transferSeconds[i];
      sum.totalSeconds += t.totalSeconds;
    }
    double runs = std::max(1, o.repeat - 1);
    for (double& x : sum.partitionSeconds)
      x /= runs;
    for (double& x : sum.transferSeconds)
      x /= runs;
    sum.totalSeconds /= runs;
    std::vector<ir::Tensor> ref = ir::Interpreter(g).run(in);
    double maxErr = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      for (int64_t k = 0; k < ref[i].numElements(); ++k)
        maxErr = std::max(maxErr, std::abs(ref[i].getDouble(k) - out[i].getDouble(k)));
    fmt::print("\nmeasured (mean of {} runs after the first) vs predicted:\n", int(runs));
    for (const auto& p : plan.partitions)
      fmt::print("  P{:<3} {:<7} measured {:>10.4f} ms  predicted {:>10.4f} ms  ({:.2f}x)\n", p.id,
                 p.target, sum.partitionSeconds[size_t(p.id)] * 1e3, p.predictedSeconds * 1e3,
                 p.predictedSeconds > 0 ? sum.partitionSeconds[size_t(p.id)] / p.predictedSeconds
                                        : 0.0);
    for (size_t i = 0; i < plan.transfers.size(); ++i)
      fmt::print("  transfer {:<24} {:>10.4f} ms ({})  predicted {:>10.4f} ms\n",
                 terminalText(plan.transfers[i].value->name()), sum.transferSeconds[i] * 1e3,
                 sum.transferMeasured[i] ? "measured" : "link model",
                 plan.transfers[i].predictedSeconds * 1e3);
    fmt::print("  end to end: measured {:.4f} ms, predicted {:.4f} ms; max |output - "
               "interpreter| = {:.3g}\n",
               sum.totalSeconds * 1e3, plan.predictedSeconds * 1e3, maxErr);
    if (plan.mode == ir::partition::Mode::Pipeline) {
      fmt::print("  pipelined throughput (stages overlapped, from the measured stage times): "
                 "{:.4g} inferences/s, predicted {:.4g}\n",
                 ir::partition::measuredThroughput(sum), plan.predictedThroughputPerS);
    }
    if (!o.json.empty())
      frontend::writeFileAtomic(o.json, ir::partition::planJson(plan, &sum) + "\n");
  } else if (!o.json.empty()) {
    frontend::writeFileAtomic(o.json, ir::partition::planJson(plan) + "\n");
  }
  return 0;
}

} // namespace

Action addPartition(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<PartitionOptions>();
  CLI::App* cmd = app.add_subcommand(
      "partition", "Plan a model across targets (cost model + min-cut) and explain the plan");
  o->model.add(*cmd);
  cmd->add_option("--mode", o->mode,
                  "single (all on the first target), manual (--place), auto (least modelled "
                  "latency), pipeline (most throughput over a stream)")
      ->capture_default_str();
  cmd->add_option("--targets", o->targets,
                  "Candidate targets, comma-separated; the first is the "
                  "default for single/manual")
      ->capture_default_str();
  cmd->add_option("--place", o->place,
                  "NODE=TARGET: pin a node (repeatable; in auto, a constraint)");
  cmd->add_option("--place-file", o->placeFile, "File of NODE=TARGET lines (# comments)");
  cmd->add_option("--links", o->links,
                  "JSON link model: {\"gpu\": {\"gbytes_per_s\": 12, \"latency_us\": 10}, ...} "
                  "(default: PCIe Gen3 x16; the GPU's measured with --calibrate)");
  cmd->add_option("--measured", o->measured,
                  "TARGET=FILE: per-layer times from `triad run --target T --profile --json "
                  "FILE` replace that target's estimates (repeatable)");
  cmd->add_flag("--calibrate", o->calibrate,
                "Measure the devices and the GPU link again (otherwise cached measurements)");
  cmd->add_flag("--no-calibrate", o->noCalibrate,
                "Use nominal device models instead of measuring (fast; less accurate)");
  addPlanTargetOptions(*cmd, o->target);
  cmd->add_option("--json", o->json, "Write the plan (and with --run the measured times) as JSON");
  cmd->add_option("--dot", o->dot, "Write the graph coloured by target as Graphviz DOT");
  cmd->add_option("--svg", o->svg, "Draw the graph coloured by target as SVG (needs Graphviz)");
  cmd->add_flag("--run", o->run,
                "Run the partitioned graph and compare measured with predicted times (and the "
                "outputs with the interpreter)");
  cmd->add_option("-i,--input", o->inputs, "Inputs for --run (default: seeded random)");
  cmd->add_option("--repeat", o->repeat, "Runs for --run (the first warms up)")
      ->capture_default_str()
      ->check(positiveInt());
  return [o] { return runPartition(*o); };
}

} // namespace triad::cli
