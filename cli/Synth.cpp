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

std::string fmaxText(const std::optional<double>& f) {
  return f ? fmt::format("{:.0f}", *f) : "-";
}

nlohmann::json optionalJson(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json pathJson(const sim::PathMix& p) {
  return {{"lut", p.lut}, {"carry_entry", p.carryEntry}, {"carry", p.carry}, {"muxf", p.muxf},
          {"dsp", p.dsp}, {"dsp_cascade", p.dspCascade}};
}

nlohmann::json stepsJson(const std::vector<sim::TimingStep>& steps) {
  nlohmann::json a = nlohmann::json::array();
  for (const sim::TimingStep& s : steps)
    a.push_back({{"kind", s.kind},
                 {"cell", s.type},
                 {"from", s.from},
                 {"to", s.to},
                 {"net", s.net},
                 {"net_ns", s.netNs},
                 {"cell_ns", s.cellNs}});
  return a;
}

nlohmann::json delayModelJson(const sim::Xc7DelayModel& m) {
  return {{"what", "estimate for a -1 Artix-7: the slowest register-to-register path of the "
                   "netlist by these cell and net delays (docs/fpga.md)"},
          {"clock_to_q_ns", m.clockToQ},
          {"setup_ns", m.setup},
          {"net_ns", m.net},
          {"lut_ns", m.lut},
          {"carry_entry_ns", m.carryEntry},
          {"carry_ns", m.carry},
          {"muxf_ns", m.muxf},
          {"dsp_ns", m.dsp},
          {"dsp_cascade_ns", m.dspCascade},
          {"reset_setup_ns", m.resetSetup},
          {"bram_clock_to_out_ns", m.bramClockToOut},
          {"bram_clock_to_out_reg_ns", m.bramClockToOutReg},
          {"srl_clock_to_out_ns", m.srlClockToOut},
          {"lutram_setup_ns", m.lutRamSetup},
          {"clock_cap_mhz", m.clockCapMhz}};
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
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8} {:>8}\n", "layer", "op", "LUT",
             "FF", "DSP", bramHead, "depth", xc7 ? "Fmax~MHz" : "", "seconds");
  for (const sim::SynthUnit& u : r.units)
    fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8} {:>8.1f}\n",
               u.layer.empty() ? "(top glue)" : u.layer, u.op.substr(0, 10), u.counts.lut,
               u.counts.ff, u.counts.dsp, bram(u.counts), depthText(u.logicDepth),
               xc7 ? fmaxText(u.fmaxMhz) : "", u.seconds);
  fmt::print("{:<14} {:<10} {:>8} {:>8} {:>6} {:>10} {:>6} {:>8}\n", "total", "", r.total.lut,
             r.total.ff, r.total.dsp, bram(r.total), depthText(r.maxLogicDepth),
             xc7 ? fmaxText(r.fmaxMhz) : "");
  if (xc7 && r.fmaxMhz)
    fmt::print("Fmax~: each layer's slowest register-to-register path by a -1 Artix-7 delay model "
               "(no placement or routing: an estimate); the design's is its slowest layer's ({})\n",
               r.slowestModule);
  if (r.pnr) {
    const sim::PnrResult& p = *r.pnr;
    fmt::print("place and route ({}, {} {}): Fmax {:.2f} MHz (target {:g}), logic cells {}/{}, "
               "RAM {}/{}, DSP {}/{}{}; yosys {:.1f} s + nextpnr {:.1f} s\n",
               p.nextpnrVersion, p.device, p.package, p.fmaxMhz, p.targetMhz, p.logicCells,
               p.logicCellsAvailable, p.ram, p.ramAvailable, p.dsp, p.dspAvailable,
               p.dspMapped ? "" : " (multipliers in logic)", p.synthSeconds, p.seconds);
  }
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
      if (xc7) {
        m["path"] = u.path ? pathJson(*u.path) : nlohmann::json();
        if (u.path) {
          m["path_launch"] = u.path->launch;
          m["path_capture"] = u.path->capture;
        }
        m["critical_path"] = stepsJson(u.critical);
        if (!u.timingNote.empty()) m["timing_note"] = u.timingNote;
        m["period_ns"] = optionalJson(u.periodNs);
        m["fmax_mhz"] = optionalJson(u.fmaxMhz);
      }
      m["seconds"] = u.seconds;
      j["modules"].push_back(m);
    }
    j["total"] = countsJson(r.total, r.family);
    j["total"]["logic_depth"] =
        r.maxLogicDepth ? nlohmann::json(*r.maxLogicDepth) : nlohmann::json();
    j["logic_depth"] = j["total"]["logic_depth"];
    if (xc7) {
      j["fmax_mhz"] = optionalJson(r.fmaxMhz);
      j["total"]["fmax_mhz"] = j["fmax_mhz"];
      j["slowest_module"] = r.slowestModule;
      j["delay_model"] = delayModelJson(r.delayModel);
    }
    if (r.pnr) {
      const sim::PnrResult& p = *r.pnr;
      j["pnr"] = {{"tool", p.nextpnrVersion},
                  {"device", p.device},
                  {"package", p.package},
                  {"target_mhz", p.targetMhz},
                  {"fmax_mhz", p.fmaxMhz},
                  {"logic_cells", p.logicCells},
                  {"logic_cells_available", p.logicCellsAvailable},
                  {"ram", p.ram},
                  {"ram_available", p.ramAvailable},
                  {"dsp", p.dsp},
                  {"dsp_available", p.dspAvailable},
                  {"dsp_mapped", p.dspMapped},
                  {"wrapper_flip_flops", p.wrapperFlipFlops},
                  {"synth_seconds", p.synthSeconds},
                  {"seconds", p.seconds},
                  {"log", p.log}};
    }
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
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
