// triad compile --target fpga: the Verilog design, its Verilator testbench and the emulator's
// expected outputs; triad sim: runs that design in Verilator against them (docs/fpga.md).
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/Cost.h"
#include "fpga/Design.h"
#include "fpga/Emulator.h"
#include "fpga/Fit.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/TensorIO.h"
#include "ir/Files.h"
#include "sim/Simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace triad::cli {

namespace fs = std::filesystem;

namespace {

struct CompileOptions {
  ModelOptions model;
  std::string target = "fpga", config, input, outdir, until, defaultPrecision;
  std::vector<std::string> precision, fifoDepth;
  std::string reuse = "1";
  std::string strategy = "dsp";
  std::string part;       // --fpga-part: fit the design to this part
  double fitMargin = 0.8; // ... using at most this fraction of each resource
  bool reuseGiven = false, strategyGiven = false, partGiven = false;
  bool registerStreams = false;
  double clockMhz = 200;
  int shiftAddDigits = 2;
};

ir::Tensor readF32(const std::string& path) {
  ir::Tensor x = frontend::readTensorFile(path).tensor;
  return x.dtype() == ir::DType::F32 ? x : x.castTo(ir::DType::F32);
}

// fit.json: the part, the budget, the predicted II and throughput, every layer's choice, and the
// choices as config keys ("reuse", "strategy", "weights") to pin them in a precision config.
nlohmann::json fitJson(const fpga::FitResult& f, const fpga::Device& part, double margin,
                       double clockMhz) {
  nlohmann::json j;
  j["part"] = part.name;
  j["description"] = part.description;
  j["margin"] = margin;
  j["budget"] = fpga::resourcesJson(f.budget);
  j["part_resources"] = fpga::resourcesJson(part.resources);
  j["estimate"] = fpga::resourcesJson(f.design.resources());
  j["ii_cycles"] = f.ii;
  j["latency_cycles"] = f.design.latency;
  j["clock_mhz"] = clockMhz;
  j["inferences_per_s"] = f.ii > 0 ? clockMhz * 1e6 / double(f.ii) : 0.0;
  // Energy per inference at the II (an estimate: fpga/Cost.h, docs/fpga.md "Energy").
  if (f.ii > 0 && clockMhz > 0) {
    double perInference = double(f.ii) / (clockMhz * 1e6);
    fpga::EnergyEstimate e = fpga::estimateEnergy(
        f.design.resources(), fpga::designActivity(f.design), clockMhz, perInference, part.name);
    j["energy_per_inference_j"] = e.joules;
    j["energy_model"] = e.model;
  }
  j["probes"] = f.probes;
  j["candidates"] = f.candidates;
  j["layers"] = nlohmann::json::array();
  nlohmann::json reuse = nlohmann::json::object(), strategy = nlohmann::json::object(),
                 weights = nlohmann::json::object();
  for (const fpga::FitLayer& l : f.layers) {
    j["layers"].push_back({{"layer", l.layer},
                           {"reuse", l.reuse},
                           {"strategy", toString(l.strategy)},
                           {"weights", l.weightRom ? "rom" : "logic"},
                           {"cycles_per_sample", l.cyclesPerSample},
                           {"estimate", fpga::resourcesJson(l.resources)},
                           {"pinned", l.fixed}});
    if (l.fixed) continue;
    reuse[l.layer] = l.reuse;
    strategy[l.layer] = toString(l.strategy);
    weights[l.layer] = l.weightRom ? "rom" : "logic";
  }
  j["config"] = {{"reuse", reuse}, {"strategy", strategy}, {"weights", weights}};
  return j;
}

void printFit(const fpga::FitResult& f, const nlohmann::json& j, const fpga::Device& part,
              double margin, double clockMhz) {
  ir::Resources r = f.design.resources();
  fmt::print("fitted to {} ({}) within {:.0f}%: II {} cycles ({:.4g} inferences/s at {:g} MHz{}); "
             "estimate LUT {:.0f}/{:.0f}, FF {:.0f}/{:.0f}, DSP {:.0f}/{:.0f}, RAMB18 "
             "{:.0f}/{:.0f}\n",
             part.name, terminalText(part.description), margin * 100, f.ii,
             f.ii > 0 ? clockMhz * 1e6 / double(f.ii) : 0.0, clockMhz,
             j.contains("energy_per_inference_j")
                 ? fmt::format(", ~{:.3g} uJ per inference (estimate)",
                               j["energy_per_inference_j"].get<double>() * 1e6)
                 : "",
             r.lut, f.budget.lut, r.ff, f.budget.ff, r.dsp, f.budget.dsp, r.bram18,
             f.budget.bram18);
  for (const fpga::FitLayer& l : f.layers)
    if (l.reuse > 1 || l.strategy != fpga::Strategy::Dsp || !l.fixed)
      fmt::print("  {}: reuse {}, {}{}, {} cycles/sample, LUT {:.0f} FF {:.0f} DSP {:.0f} "
                 "RAMB18 {:.0f}{}\n",
                 terminalText(l.layer), l.reuse, toString(l.strategy),
                 l.weightRom ? ", weights in a ROM" : "", l.cyclesPerSample, l.resources.lut,
                 l.resources.ff, l.resources.dsp, l.resources.bram18, l.fixed ? " (pinned)" : "");
}

int runCompile(CompileOptions o) {
  if (o.target == "cpu") return compileCpu(o.model, o.outdir);
  if (o.target != "fpga")
    fail(ErrorKind::Usage, "--target '{}': triad compile supports 'fpga' and 'cpu'", o.target);
  fpga::QuantConfig cfg =
      fpga::QuantConfig::fromCommandLine(o.config, o.defaultPrecision, o.precision);
  std::optional<ir::Tensor> x;
  if (!o.input.empty()) {
    x = readF32(o.input);
    o.model.inputShapes = {{"", x->shape(), o.input}};
    o.model.streamBatch = true; // the samples stream through a design of a fixed batch
  }
  frontend::ImportResult r = o.model.load(/*optimizeAnyway=*/true);
  const ir::Graph& g = r.graph;
  fpga::ValueRanges ranges;
  if (x) ranges = fpga::observeRanges(g, std::span<const ir::Tensor>(&*x, 1));
  fpga::Emulator emu(g, cfg, ranges);

  fpga::VerilogOptions vo;
  vo.name = fs::path(o.model.model).stem().string();
  if (!(o.clockMhz > 0 && o.clockMhz <= 1000))
    fail(ErrorKind::Usage, "--clock-mhz {}: expected a clock in (0, 1000] MHz", o.clockMhz);
  vo.clockMhz = o.clockMhz;
  if (o.shiftAddDigits < 0 || o.shiftAddDigits > 2)
    fail(ErrorKind::Usage, "--shift-add-digits {}: expected 0, 1 or 2", o.shiftAddDigits);
  vo.shiftAddDigits = o.shiftAddDigits;
  for (const std::string& f : o.fifoDepth) {
    auto eq = f.rfind('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(f);
      size_t used = 0;
      vo.fifoDepth[f.substr(0, eq)] = std::stoll(f.substr(eq + 1), &used);
      if (used != f.size() - eq - 1) throw std::invalid_argument(f);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--fifo-depth '{}': expected LAYER=DEPTH", f);
    }
  }
  if (o.reuse == "auto") {
    vo.autoReuse = true;
  } else {
    try {
      size_t used = 0;
      vo.reuse = std::stoll(o.reuse, &used);
      if (used != o.reuse.size() || vo.reuse < 1) throw std::invalid_argument(o.reuse);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--reuse '{}': expected a positive whole number or 'auto'", o.reuse);
    }
  }
  vo.until = o.until;
  vo.registerStreams = o.registerStreams;
  if (auto st = fpga::parseStrategy(o.strategy))
    vo.strategy = *st;
  else
    fail(ErrorKind::Usage, "--strategy '{}': expected dsp, shift_add or auto", o.strategy);
  if (!o.config.empty()) { // optional per-layer "reuse" and "strategy" in top-level keys
    nlohmann::json cj = nlohmann::json::parse(frontend::readFile(o.config), nullptr, false);
    if (cj.is_object() && cj.contains("strategy") && cj["strategy"].is_object())
      for (auto& [k, v] : cj["strategy"].items()) // checked by the config's parser
        vo.layerStrategy[k] = *fpga::parseStrategy(v.get<std::string>());
    if (cj.is_object() && cj.contains("weights") && cj["weights"].is_object())
      for (auto& [k, v] : cj["weights"].items()) // checked by the config's parser
        if (v.get<std::string>() == "rom") vo.romLayers.insert(k);
    if (cj.is_object() && cj.contains("reuse")) {
      if (!cj["reuse"].is_object())
        fail(ErrorKind::Usage, "{}: 'reuse' must map layer names to integers", o.config);
      for (auto& [k, v] : cj["reuse"].items()) {
        if (!v.is_number_integer())
          fail(ErrorKind::Usage, "{}: reuse['{}'] must be an integer", o.config, k);
        vo.layerReuse[k] = v.get<int64_t>();
      }
    }
  }
  fpga::DesignSource src;
  src.model = fs::absolute(o.model.model).string();
  src.dims = o.model.dims;
  src.config = o.config.empty() ? "" : fs::absolute(o.config).string();
  src.defaultPrecision = o.defaultPrecision;
  src.precision = o.precision;
  src.calibration = o.input.empty() ? "" : fs::absolute(o.input).string();
  nlohmann::json sections = nlohmann::json::object();
  if (o.partGiven) {
    if (o.reuseGiven)
      fail(ErrorKind::Usage,
           "--fpga-part chooses every layer's reuse factor: drop --reuse '{}' "
           "(pin a layer with the config's \"reuse\": {{layer: R}})",
           o.reuse);
    const fpga::Device& part = fpga::findDevice(o.part);
    fpga::FitOptions fo;
    fo.margin = o.fitMargin;
    fo.chooseStrategy = !o.strategyGiven;
    fpga::FitResult fit = fpga::fitToPart(g, emu, vo, part, fo);
    vo = fit.options;
    sections["fit"] = fitJson(fit, part, o.fitMargin, vo.clockMhz);
    printFit(fit, sections["fit"], part, o.fitMargin, vo.clockMhz);
  }
  nlohmann::json j =
      fpga::writeDesign(g, emu, vo, o.outdir, fs::path(o.model.model).filename().string(), src,
                        x ? &*x : nullptr, sections);
  fmt::print("{}: {} layers, {} multipliers, latency {} cycles ({:.0f} ns at {:g} MHz) -> {}\n",
             terminalText(j["top"].get<std::string>()), j["layers"].size(),
             j["multipliers"].get<int64_t>(), j["latency_cycles"].get<int64_t>(),
             j["latency_ns"].get<double>(), vo.clockMhz, o.outdir);
  return 0;
}

struct SimOptions {
  std::string outdir, input, json, output, trace;
  uint64_t seed = 1;
};

int runSim(const SimOptions& o) {
  fpga::DesignSim d = fpga::simulateDesign(o.outdir, readF32(o.input),
                                           fmt::format("--input '{}'", o.input), o.seed, o.trace);
  const sim::SimReport& r = d.report;
  const nlohmann::json& s = d.summary;
  int64_t n = d.samples;
  double clockMhz = d.clockMhz;
  if (!r.timeout)
    fmt::print("{}: {} samples, latency {} cycles, II {}, {} cycles ({} with random gaps and "
               "back-pressure), {} mismatches, {} missing, {:.4g} inferences/s at {} MHz{}\n",
               terminalText(s["top"].get<std::string>()), n, r.latencyCycles, r.ii, r.totalCycles,
               r.randomCycles, r.mismatches, r.missing, r.inferencesPerSecond, clockMhz,
               r.cached ? " (cached build)" : "");
  // FIFOs: the static depth beside the occupancy the simulation reached.
  std::map<std::string, nlohmann::json> fifoInfo;
  for (const auto& f : s.value("fifos", nlohmann::json::array()))
    fifoInfo[f["name"].get<std::string>()] = f;
  for (const auto& [name, f] : fifoInfo) {
    int64_t depth = f["depth"], peak = r.fifoPeak.count(name) ? r.fifoPeak.at(name) : 0;
    int64_t need = 2;
    while (need < peak + 1)
      need *= 2;
    std::string layer = terminalText(f["layer"].get<std::string>()); // the model's name
    fmt::print("  FIFO {} before '{}': depth {}, peak occupancy {}{}\n", terminalText(name), layer,
               depth, peak,
               r.timeout || need >= depth
                   ? ""
                   : fmt::format(" (--fifo-depth '{}={}' would do)", layer, need));
  }
  if (r.timeout) fail(ErrorKind::Runtime, "{}", fpga::deadlockMessage(d));
  if (!o.json.empty())
    frontend::writeFileAtomic(o.json, fpga::simReportJson(d, o.seed).dump(2) + "\n");
  if (!o.output.empty()) frontend::writeTensorFile(o.output, fpga::simOutputs(d), "output");
  return r.mismatches == 0 && r.missing == 0 ? 0 : exitCodeFor(ErrorKind::Runtime);
}

} // namespace

Action addCompile(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Compile a model for a target (fpga: Verilog, a Verilator testbench, expected "
                 "outputs; cpu: standalone C++ source with an example main)");
  o->model.add(*cmd);
  cmd->add_option("--target", o->target, "Target (fpga, cpu)")->required();
  cmd->add_option("--config", o->config,
                  "Precision config (JSON, docs/fpga.md); may hold \"reuse\": {layer: R}, "
                  "\"strategy\": {layer: S} and \"weights\": {layer: \"rom\"|\"logic\"}")
      ->check(CLI::ExistingFile);
  addPrecisionOptions(*cmd, o->defaultPrecision, o->precision);
  cmd->add_option("--reuse", o->reuse,
                  "Reuse factor of Dense and Conv layers (divides the input count, or is the input "
                  "count times a divisor of the output count), or 'auto': per layer, the largest "
                  "divisor of the input count that keeps the design's II");
  cmd->add_option("--clock-mhz", o->clockMhz,
                  "Target clock: adder trees and the Softmax are registered where the delay model "
                  "(docs/fpga.md) says a stage would not fit it")
      ->capture_default_str();
  cmd->add_option("--fpga-part", o->part,
                  "Fit the design to this part (xc7z020, xc7a35t, ...; an unknown name lists "
                  "the known ones): per Dense/Conv layer the reuse factor, strategy and "
                  "weight storage (logic or a block-RAM ROM) for the highest throughput within "
                  "--fit-margin of its LUT, FF, DSP and BRAM; writes fit.json");
  cmd->add_option("--fit-margin", o->fitMargin,
                  "With --fpga-part: the fraction of each of the part's resources the design may "
                  "use")
      ->capture_default_str();
  cmd->add_option("--strategy", o->strategy,
                  "How Dense/Conv layers multiply by constant weights: dsp (multipliers), "
                  "shift_add (reuse 1: an adder graph of shifts and adds with common "
                  "subexpressions shared, no DSP), auto (shift_add wherever it applies); per "
                  "layer in the config's \"strategy\": {layer: S}")
      ->capture_default_str();
  cmd->add_flag(
      "--register-streams", o->registerStreams,
      "A skid buffer (registered ready, no added latency) in front of every layer, so the "
      "valid/ready chain does not run through the whole design in one cycle");
  cmd->add_option("--shift-add-digits", o->shiftAddDigits,
                  "At reuse 1, products by constant weights of at most this many nonzero signed "
                  "digits (0, +-2^k, +-2^a +-2^b) are shifts and adds instead of multipliers "
                  "(0: all multipliers; 1; 2)")
      ->capture_default_str();
  cmd->add_option("--fifo-depth", o->fifoDepth,
                  "LAYER=DEPTH: the FIFO in front of a joining layer by hand (a power of two), "
                  "instead of the static analysis (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--until", o->until, "Last layer of the design (default: the whole model)");
  cmd->add_option("-i,--input", o->input,
                  "Inputs (.npy/.pb): calibration for \"auto\" and the expected outputs");
  cmd->add_option("-o,--output,--emit-source", o->outdir,
                  "Output directory (--emit-source DIR: the same, for the CPU target's sources)")
      ->required();
  return [o, cmd] {
    o->reuseGiven = cmd->get_option("--reuse")->count() > 0;
    o->strategyGiven = cmd->get_option("--strategy")->count() > 0;
    o->partGiven = cmd->get_option("--fpga-part")->count() > 0;
    return runCompile(*o);
  };
}

Action addSim(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<SimOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Simulate a compiled FPGA design in Verilator against the emulator");
  cmd->add_option("outdir", o->outdir, "Directory written by triad compile --target fpga")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-i,--input", o->input, "The inputs given to triad compile")->required();
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-o,--output", o->output, "Write the RTL's outputs (dequantized, .npy/.pb)");
  cmd->add_option("--seed", o->seed, "Seed of the random gaps and back-pressure");
  cmd->add_option("--trace", o->trace,
                  "Write the waveform of both passes (FILE.vcd or FILE.fst; a separate build)");
  return [o] { return runSim(*o); };
}

} // namespace triad::cli
