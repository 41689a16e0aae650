// triad compile --target fpga: the Verilog design, its Verilator testbench and the emulator's
// expected outputs; triad sim: runs that design in Verilator against them (docs/fpga.md).
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/Design.h"
#include "fpga/Emulator.h"
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
  bool registerStreams = false;
  double clockMhz = 200;
  int shiftAddDigits = 2;
};

ir::Tensor readF32(const std::string& path) {
  ir::Tensor x = frontend::readTensorFile(path).tensor;
  return x.dtype() == ir::DType::F32 ? x : x.castTo(ir::DType::F32);
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
  nlohmann::json j = fpga::writeDesign(
      g, emu, vo, o.outdir, fs::path(o.model.model).filename().string(), src, x ? &*x : nullptr);
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
                  "Precision config (JSON, docs/fpga.md); may hold \"reuse\": {layer: R}")
      ->check(CLI::ExistingFile);
  addPrecisionOptions(*cmd, o->defaultPrecision, o->precision);
  cmd->add_option("--reuse", o->reuse,
                  "Reuse factor of Dense and Conv layers (divides the input count), or 'auto': per "
                  "layer, the largest that keeps the design's II");
  cmd->add_option("--clock-mhz", o->clockMhz,
                  "Target clock: adder trees and the Softmax are registered where the delay model "
                  "(docs/fpga.md) says a stage would not fit it")
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
  return [o] { return runCompile(*o); };
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
