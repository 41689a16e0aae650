// triad_sim: runs a design written by `triad compile --target fpga` in Verilator and checks it
// against the emulator's expected outputs (docs/fpga.md, "Verilog and simulation").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
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
/// Verilates OUTDIR/rtl/*.v with OUTDIR/tb/tb.cpp (top `top`) unless a build with the same
/// content hash (sources, Verilator version, trace mode) exists under OUTDIR/obj/<hash>; returns
/// the testbench executable.
std::filesystem::path buildModel(const std::filesystem::path& outdir, const std::string& top,
                                 bool* cached = nullptr, Trace trace = Trace::None);
/// Streams `n` samples of raw inputs (in stream order) through the design and compares with
/// `expected` (n x outElems per sample, in stream order). With `traceFile` (.vcd or .fst), writes
/// the waveform of both passes there.
SimReport simulate(const std::filesystem::path& outdir, const std::string& top,
                   const std::vector<int64_t>& inputs, const std::vector<int64_t>& expected,
                   int64_t n, int64_t outElems, uint64_t seed,
                   const std::filesystem::path& traceFile = {});

} // namespace triad::sim
