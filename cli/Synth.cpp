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

std::string depthText(const std::optional<int64_t>& d) {
  return d ? std::to_string(*d) : "-";
}

std::string fmaxText(const std::optional<double>& f) {
  return f ? fmt::format("{:.0f}", *f) : "-";
}

int runSynth(const SynthCliOptions& o) {
  sim::SynthReport r = sim::synthesize(o.outdir, o.synth);
  bool xc7 = r.family == "xc7";
  std::string bramHead = xc7 ? "BRAM18/36" : "BRAM";
  auto bram = [&](const sim::SynthCounts& c) {
    return xc7 ? fmt::format("{}/{}", c.bram18, c.bram36) : std::to_string(c.bram);
  };
  fmt::print("{} on {} ({}; {} parallel jobs, {:.1f} s)\n", terminalText(r.top), r.family,
             r.yosysVersion, r.jobs, r.wallSeconds);
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8} {:>8}\n", "layer", "op", "LUT",
             "FF", "DSP", bramHead, "depth", xc7 ? "Fmax~MHz" : "", "seconds");
  for (const sim::SynthUnit& u : r.units)
    fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8} {:>8.1f}\n",
               u.layer.empty() ? "(top glue)" : terminalText(u.layer),
               terminalText(u.op.substr(0, 10)), u.counts.lut, u.counts.ff, u.counts.dsp,
               bram(u.counts), depthText(u.logicDepth), xc7 ? fmaxText(u.fmaxMhz) : "", u.seconds);
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8}\n", "total", "", r.total.lut,
             r.total.ff, r.total.dsp, bram(r.total), depthText(r.maxLogicDepth),
             xc7 ? fmaxText(r.fmaxMhz) : "");
  if (xc7 && r.fmaxMhz)
    fmt::print("Fmax~: each layer's slowest register-to-register path by a -1 Artix-7 delay model "
               "(no placement or routing: an estimate); the design's is its slowest layer's ({})\n",
               terminalText(r.slowestModule));
  if (r.pnr) {
    const sim::PnrResult& p = *r.pnr;
    fmt::print("place and route ({}, {} {}): Fmax {:.2f} MHz (target {:g}), logic cells {}/{}, "
               "RAM {}/{}, DSP {}/{}{}; yosys {:.1f} s + nextpnr {:.1f} s\n",
               p.nextpnrVersion, p.device, p.package, p.fmaxMhz, p.targetMhz, p.logicCells,
               p.logicCellsAvailable, p.ram, p.ramAvailable, p.dsp, p.dspAvailable,
               p.dspMapped ? "" : " (multipliers in logic)", p.synthSeconds, p.seconds);
  }
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, sim::synthReportJson(r).dump(2) + "\n");
  return 0;
}

} // namespace

Action addSynth(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Synthesize a compiled FPGA design with Yosys: LUT, FF, DSP, BRAM, logic depth and "
               "estimated Fmax per layer; with --pnr, place and route on an iCE40");
  cmd->add_option("outdir", o->outdir, "Directory written by triad compile --target fpga")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--family", o->synth.family, "xc7 (synth_xilinx) or ice40 (synth_ice40)")
      ->check(CLI::IsMember({"xc7", "ice40"}));
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-j,--jobs", o->synth.jobs, "Parallel Yosys runs (default: the number of cores)");
  cmd->add_flag("--pnr", o->synth.pnr,
                "ice40: also place and route the whole design with nextpnr-ice40 (real Fmax and "
                "utilisation)");
  cmd->add_option("--device", o->synth.device, "iCE40 device for --pnr: up5k (default) or hx8k")
      ->check(CLI::IsMember({"up5k", "hx8k"}));
  cmd->add_option("--pnr-freq", o->synth.pnrTargetMhz,
                  "nextpnr's target clock in MHz (default 25; the achieved Fmax is reported)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pnr-timeout", o->synth.pnrTimeoutSeconds,
                  "Seconds allowed to the flattened Yosys run and to nextpnr, each (default 900)")
      ->check(CLI::PositiveNumber);
  return [o] { return runSynth(*o); };
}

} // namespace triad::cli
