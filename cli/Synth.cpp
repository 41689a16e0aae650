// triad synth: Yosys resources of a design written by triad compile --target fpga (docs/fpga.md).
#include "sim/Synth.h"
#include "cli/Commands.h"
#include "frontend/TensorIO.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace triad::cli {

namespace {

struct SynthCliOptions {
  std::string outdir, json;
  sim::SynthOptions synth;
};

nlohmann::json countsJson(const sim::SynthCounts& c, const std::string& family) {
  nlohmann::json j = {{"lut", c.lut}, {"ff", c.ff}, {"dsp", c.dsp}, {"carry", c.carry}};
  if (family == "xc7") {
    j["bram18"] = c.bram18;
    j["bram36"] = c.bram36;
    j["bram36_equivalent"] = double(c.bram36) + double(c.bram18) / 2;
    j["lutram"] = c.lutram;
    j["muxf"] = c.muxf;
  } else {
    j["bram"] = c.bram;
  }
  j["cells"] = c.cells;
  return j;
}

std::string depthText(const std::optional<int64_t>& d) {
  return d ? std::to_string(*d) : "-";
}

int runSynth(const SynthCliOptions& o) {
  sim::SynthReport r = sim::synthesize(o.outdir, o.synth);
  bool xc7 = r.family == "xc7";
  std::string bramHead = xc7 ? "BRAM18/36" : "BRAM";
  auto bram = [&](const sim::SynthCounts& c) {
    return xc7 ? fmt::format("{}/{}", c.bram18, c.bram36) : std::to_string(c.bram);
  };
  fmt::print("{} on {} ({}; {} parallel jobs, {:.1f} s)\n", r.top, r.family, r.yosysVersion, r.jobs,
             r.wallSeconds);
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8}\n", "layer", "op", "LUT", "FF",
             "DSP", bramHead, "depth", "seconds");
  for (const sim::SynthUnit& u : r.units)
    fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8.1f}\n",
               u.layer.empty() ? "(top glue)" : u.layer, u.op.substr(0, 10), u.counts.lut,
               u.counts.ff, u.counts.dsp, bram(u.counts), depthText(u.logicDepth), u.seconds);
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6}\n", "total", "", r.total.lut, r.total.ff,
             r.total.dsp, bram(r.total), depthText(r.maxLogicDepth));
  if (!o.json.empty()) {
    nlohmann::json j;
    j["top"] = r.top;
    j["family"] = r.family;
    j["yosys"] = r.yosysVersion;
    j["jobs"] = r.jobs;
    j["wall_seconds"] = r.wallSeconds;
    j["method"] = xc7 ? "synth_xilinx -family xc7 -flatten -noiopad -noclkbuf per module"
                      : "synth_ice40 -dsp -flatten per module";
    j["modules"] = nlohmann::json::array();
    for (const sim::SynthUnit& u : r.units) {
      nlohmann::json m = countsJson(u.counts, r.family);
      m["module"] = u.module;
      if (!u.layer.empty()) {
        m["layer"] = u.layer;
        m["op"] = u.op;
      } else {
        m["glue"] = true;
      }
      m["logic_depth"] = u.logicDepth ? nlohmann::json(*u.logicDepth) : nlohmann::json();
      m["seconds"] = u.seconds;
      j["modules"].push_back(m);
    }
    j["total"] = countsJson(r.total, r.family);
    j["total"]["logic_depth"] =
        r.maxLogicDepth ? nlohmann::json(*r.maxLogicDepth) : nlohmann::json();
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
  return 0;
}

} // namespace

Action addSynth(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Synthesize a compiled FPGA design with Yosys: LUT, FF, DSP, BRAM and logic depth "
               "per layer");
  cmd->add_option("outdir", o->outdir, "Directory written by triad compile --target fpga")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--family", o->synth.family, "xc7 (synth_xilinx) or ice40 (synth_ice40)")
      ->check(CLI::IsMember({"xc7", "ice40"}));
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-j,--jobs", o->synth.jobs, "Parallel Yosys runs (default: the number of cores)");
  return [o] { return runSynth(*o); };
}

} // namespace triad::cli
