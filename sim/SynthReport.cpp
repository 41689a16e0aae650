// The JSON form of a synthesis report (`triad synth --json`, the Python package's triad.synth).
#include "sim/Synth.h"

namespace triad::sim {

namespace {

nlohmann::json countsJson(const SynthCounts& c, const std::string& family) {
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

nlohmann::json optionalJson(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json pathJson(const PathMix& p) {
  return {{"lut", p.lut}, {"carry_entry", p.carryEntry}, {"carry", p.carry}, {"muxf", p.muxf},
          {"dsp", p.dsp}, {"dsp_cascade", p.dspCascade}};
}

nlohmann::json stepsJson(const std::vector<sim::TimingStep>& steps) {
  nlohmann::json a = nlohmann::json::array();
  for (const TimingStep& s : steps)
    a.push_back({{"kind", s.kind},
                 {"cell", s.type},
                 {"from", s.from},
                 {"to", s.to},
                 {"net", s.net},
                 {"net_ns", s.netNs},
                 {"cell_ns", s.cellNs}});
  return a;
}

nlohmann::json delayModelJson(const Xc7DelayModel& m) {
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

} // namespace

nlohmann::json synthReportJson(const SynthReport& r) {
  bool xc7 = r.family == "xc7";
  nlohmann::json j;
  j["top"] = r.top;
  j["family"] = r.family;
  j["yosys"] = r.yosysVersion;
  j["jobs"] = r.jobs;
  j["wall_seconds"] = r.wallSeconds;
  j["method"] = xc7 ? "synth_xilinx -family xc7 -flatten -noiopad -noclkbuf per module"
                    : "synth_ice40 -dsp -flatten per module";
  j["modules"] = nlohmann::json::array();
  for (const SynthUnit& u : r.units) {
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
  j["total"]["logic_depth"] = r.maxLogicDepth ? nlohmann::json(*r.maxLogicDepth) : nlohmann::json();
  j["logic_depth"] = j["total"]["logic_depth"];
  if (xc7) {
    j["fmax_mhz"] = optionalJson(r.fmaxMhz);
    j["total"]["fmax_mhz"] = j["fmax_mhz"];
    j["slowest_module"] = r.slowestModule;
    j["delay_model"] = delayModelJson(r.delayModel);
  }
  if (r.pnr) {
    const PnrResult& p = *r.pnr;
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
  return j;
}

} // namespace triad::sim
