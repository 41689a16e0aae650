// triad synth: sizes a design written by `triad compile --target fpga` with Yosys (docs/fpga.md,
// "Resources"). Every layer module is synthesized on its own (flattened, in parallel jobs) and
// the top's glue (forks, FIFOs) with the layer modules as black boxes; the total is their sum.
// On xc7 each layer's longest path (ltp) is turned into an estimated Fmax by a per-cell delay
// model (Xc7DelayModel); on ice40, --pnr places and routes the whole design with nextpnr-ice40.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace triad::sim {

/// Resources of one synthesized module (primitive counts).
struct SynthCounts {
  int64_t lut = 0;    // xc7: LUT1..LUT6; ice40: SB_LUT4
  int64_t ff = 0;     // xc7: FD*; ice40: SB_DFF*
  int64_t dsp = 0;    // xc7: DSP48E1; ice40: SB_MAC16
  int64_t bram18 = 0; // xc7: RAMB18E1
  int64_t bram36 = 0; // xc7: RAMB36E1
  int64_t bram = 0;   // ice40: SB_RAM40_4K
  int64_t lutram = 0; // xc7: distributed RAM (RAM32M, RAM64M, RAM*X1*) and SRL16E/SRLC32E
  int64_t carry = 0;  // xc7: CARRY4; ice40: SB_CARRY
  int64_t muxf = 0;   // xc7: MUXF7/MUXF8
  std::map<std::string, int64_t> cells; // every primitive by type
  void add(const SynthCounts& o);
};

/// The combinational cells on a module's critical path by kind (sim/Timing.h), and what
/// launches and captures it.
struct PathMix {
  int64_t lut = 0;        // LUT1..LUT6 and other logic (LUT RAM reads)
  int64_t carryEntry = 0; // a CARRY4 whose predecessor on the path is not a CARRY4
  int64_t carry = 0;      // a CARRY4 fed by the previous CARRY4 (CO[3] -> CI)
  int64_t muxf = 0;       // MUXF7/MUXF8
  int64_t dsp = 0;        // a DSP48E1 entered from general routing (A/B -> P, multiply)
  int64_t dspCascade = 0; // a DSP48E1 fed by the previous DSP48E1 (PCOUT -> PCIN)
  std::string launch;     // "flip-flop", "DSP48E1 P register", "block RAM read", "input port X"
  std::string capture;    // the endpoint's cell type and pin, or "output port X"
  int64_t levels() const { return lut + carryEntry + carry + muxf + dsp + dspCascade; }
};

/// A register-to-register delay model for a -1 Artix-7 (docs/fpga.md, "Fmax estimate"): a
/// path's period is its launch (clock-to-out), per cell on it the net into it and the cell's
/// delay (no net for cells fed on dedicated wires: a carry chain, MUXF, a DSP cascade, a LUT into
/// its slice's carry or MUXF), and the last net and the endpoint's setup. Cell delays are the
/// prjxray-db Artix-7 numbers that Yosys' own techlibs/xilinx/cells_sim.v carries, except the LUT
/// (about the datasheet's T_ILO); the net delay is a typical single hop of general routing.
/// DSP48E1 pins take cells_sim.v's figures for the cell's registers (sim/Timing.cpp).
struct Xc7DelayModel {
  double clockToQ = 0.30;   // FDRE C -> Q (cells_sim.v: 303 ps)
  double setup = 0.10;      // FDRE D/CE setup (cells_sim.v: 0 and 109 ps)
  double net = 0.45;        // one general-routing net; also the last one into the register
  double lut = 0.12;        // LUT6 I -> O, the datasheet's T_ILO (~0.1 ns at -1)
  double carryEntry = 0.50; // CARRY4 S -> CO[3] (cells_sim.v: 378..528 ps), its LUT in the slice
  double carry = 0.11;      // CARRY4 CI -> CO[3] (cells_sim.v: 114 ps)
  double muxf = 0.30;       // MUXF7 S -> O (cells_sim.v: 296 ps)
  double dsp = 2.82;        // DSP48E1 A -> P through the multiplier, no registers (2823 ps)
  double dspCascade = 1.11; // DSP48E1 PCIN -> P (1107 ps)
  double resetSetup = 0.40; // FDRE R / FDSE S setup (cells_sim.v: 404 ps), also a DSP's RST*
  double bramClockToOut = 2.454;    // RAMB18E1 CLK -> DO without the output register (cells_sim.v)
  double bramClockToOutReg = 0.882; // ... with DOA_REG/DOB_REG
  double srlClockToOut = 1.30; // SRL16E/SRLC32E CLK -> Q (not in cells_sim.v; ~T_REG of a LUT RAM)
  double lutRamSetup = 0.50;   // LUT RAM / SRL write-side setup (~T_WS, DS181)
  double clockCapMhz = 464; // a BUFG's F_MAX at -1 (DS181): no path is faster than the clock tree
  double fmaxMhz(double periodNs) const;
};

/// One step of a critical path: a cell entered at pin `from` after a net of `netNs`, left at pin
/// `to` after `cellNs` more; the first step launches (`cellNs` = clock-to-out), the last captures
/// (`cellNs` = setup). `net`: the net the step drives (the launch and the cells) or captures.
struct TimingStep {
  std::string type, from, to, kind, net; // kind: a PathMix field, "launch" or "capture"
  double netNs = 0, cellNs = 0;
};

struct SynthUnit {
  std::string module, layer, op; // layer/op empty for the top's glue
  SynthCounts counts;
  std::optional<int64_t> logicDepth; // ltp -noff: cells between registers (registered DSPs cut)
  std::optional<PathMix> path;       // xc7: the cells on the critical path by kind
  std::vector<TimingStep> critical;  // xc7: that path step by step
  std::optional<double> periodNs;    // xc7: its delay (sim/Timing.h)
  std::optional<double> fmaxMhz;     // xc7: 1000 / periodNs, an estimate (not a timing analysis)
  std::string timingNote;            // xc7: why there is no estimate
  double seconds = 0;
  std::string log; // the Yosys log file
};

/// nextpnr-ice40's result for the whole design (--pnr).
struct PnrResult {
  std::string device, package, nextpnrVersion;
  double targetMhz = 0;
  double fmaxMhz = 0;                              // achieved, after routing, on the design's clock
  int64_t logicCells = 0, logicCellsAvailable = 0; // ICESTORM_LC
  int64_t ram = 0, ramAvailable = 0;               // ICESTORM_RAM (SB_RAM40_4K)
  int64_t dsp = 0, dspAvailable = 0;               // ICESTORM_DSP (SB_MAC16)
  bool dspMapped = false;       // multipliers in SB_MAC16 (false: in logic, the device had too few)
  int64_t wrapperFlipFlops = 0; // the serial wrapper's registers (ports to 7 pins), in the LCs
  double synthSeconds = 0, seconds = 0; // flattened Yosys run; nextpnr run
  std::string log;                      // nextpnr's log
};

struct SynthReport {
  std::string family, top, yosysVersion;
  std::vector<SynthUnit> units; // layer modules in stream order, then the glue ("top")
  SynthCounts total;
  std::optional<int64_t> maxLogicDepth; // the deepest module
  std::optional<double> fmaxMhz;        // xc7: the slowest layer's estimate
  std::string slowestModule;            // xc7: that layer's module
  Xc7DelayModel delayModel;
  std::optional<PnrResult> pnr;
  double wallSeconds = 0;
  int jobs = 1;
};

struct SynthOptions {
  std::string family = "xc7";  // xc7 (synth_xilinx -family xc7) or ice40 (synth_ice40 -dsp)
  int jobs = 0;                // parallel Yosys runs; 0: the number of cores
  bool pnr = false;            // ice40 only: place and route the whole design with nextpnr-ice40
  std::string device = "up5k"; // up5k (sg48) or hx8k (ct256)
  double pnrTargetMhz = 25;    // nextpnr --freq (timing-driven placement's goal; may fail)
  int pnrTimeoutSeconds = 900; // bounds the flattened Yosys run and nextpnr, each
};

/// Yosys on PATH?
bool haveYosys();
/// nextpnr-ice40 on PATH?
bool haveNextpnrIce40();
/// Synthesizes OUTDIR (rtl/, summary.json). Throws triad::Error: Io when yosys (or, with --pnr,
/// nextpnr-ice40) is missing (the message says to run scripts/setup.sh), Usage for a folder not
/// written by triad compile, an unknown family or device, or --pnr without ice40, Runtime when
/// Yosys or nextpnr fails or runs past pnrTimeoutSeconds (naming the module and its log),
/// Unsupported when the design does not fit the device (naming the resource).
SynthReport synthesize(const std::filesystem::path& outdir, const SynthOptions& o);

/// The report as `triad synth --json` writes it (docs/fpga.md): top, family, yosys, modules
/// (counts, logic depth, xc7 paths and Fmax estimates), total, pnr.
nlohmann::json synthReportJson(const SynthReport& r);

} // namespace triad::sim
