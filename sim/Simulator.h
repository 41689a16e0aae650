// triad_sim: runs a design written by `triad compile --target fpga` in Verilator and checks it
// against the emulator's expected outputs (docs/fpga.md, "Verilog and simulation").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace triad::sim {

/// The assumed clock for inferences_per_second.
constexpr double kClockHz = 200e6;

struct SimReport {
  int64_t samples = 0;
  int64_t latencyCycles = 0; // first input accepted -> its output valid (no gaps, no stalls)
  double ii = 0;             // cycles between outputs in steady state
  int64_t totalCycles = 0;   // the steady pass
  int64_t randomCycles = 0;  // the pass with random input gaps and output back-pressure
  int64_t mismatches = 0;    // outputs (vectors) differing from the emulator, both passes
  int64_t missing = 0;       // outputs that never arrived (deadlock or timeout)
  bool timeout = false;      // a pass made no progress for the testbench's cycle budget
  std::map<std::string, int64_t> fifoPeak;    // FIFO instance -> most vectors held (both passes)
  std::map<std::string, int64_t> fifoAtStall; // ... and held when a pass stalled
  std::vector<std::string> stalled;           // "producer -> reader" streams blocked at the stall
  double inferencesPerSecond = 0;
  bool cached = false; // the Verilated model came from the cache
  double buildSeconds = 0, runSeconds = 0;
  std::vector<int64_t> outputs; // raw outputs of the steady pass
};

/// Waveform tracing of a simulation.
enum class Trace { None, Vcd, Fst };
/// From a file name: .vcd or .fst (Usage error otherwise); empty: None.
Trace traceKind(const std::filesystem::path& file);

/// Verilator on PATH?
bool haveVerilator();
/// Usage error naming `where` unless `name` is a plain identifier (escape::isIdentifier): module
/// names read back from a design folder (summary.json) go into command lines and scripts only
/// as such.
void requireModuleName(std::string_view name, std::string_view where);
/// Verilates OUTDIR/rtl/*.v with OUTDIR/tb/tb.cpp (top `top`) unless a build with the same
/// content hash (sources, Verilator version, trace mode) exists under OUTDIR/obj/<hash>; returns
/// the testbench executable.
/// `optLevel`: the C++ optimization of the Verilated model (0 builds fastest; 1 or 2 run long
/// simulations of large designs several times faster).
std::filesystem::path buildModel(const std::filesystem::path& outdir, const std::string& top,
                                 bool* cached = nullptr, Trace trace = Trace::None,
                                 int optLevel = 0);
/// The optimization level worth its build time for `cycles` simulated clock cycles: 0 below a
/// few hundred thousand, else 1. TRIAD_VERILATOR_OPT (0..3) overrides it.
int chooseOptLevel(int64_t cycles);
/// Streams `n` samples of raw inputs (in stream order) through the design and compares with
/// `expected` (n x outElems per sample, in stream order). With `traceFile` (.vcd or .fst), writes
/// the waveform of both passes there.
SimReport simulate(const std::filesystem::path& outdir, const std::string& top,
                   const std::vector<int64_t>& inputs, const std::vector<int64_t>& expected,
                   int64_t n, int64_t outElems, uint64_t seed,
                   const std::filesystem::path& traceFile = {}, int64_t transfersPerSample = 1);

} // namespace triad::sim
