// The FPGA design folder (docs/fpga.md, "Verilog and simulation"): rtl/ (the generated Verilog
// and the RTL blocks it uses, files.f), tb/tb.cpp (the Verilator testbench), summary.json (the
// design's layers, FIFOs, formats and estimates; written last: it marks the folder complete) and,
// when compiled with inputs, inputs_raw.npy and expected_raw.npy (the emulator's outputs).
// `triad compile --target fpga` and `triad sim` (cli/Compile.cpp), and the Python package's
// Quantized.write_verilog and triad.sim, are thin callers of these.
#pragma once

#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "sim/Simulator.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace triad::fpga {

/// How the design was made, stored in summary.json's "compile" so that a simulation on other
/// inputs can recompute the emulator's outputs: the model (absolute path), its symbolic dims
/// ("NAME=VALUE"), the precision config file (absolute path, or empty), the default precision
/// and "LAYER:KEY=VALUE" overrides, and the calibration inputs' file (absolute, or empty).
struct DesignSource {
  std::string model;
  std::vector<std::string> dims;
  std::string config;
  std::string defaultPrecision;
  std::vector<std::string> precision;
  std::string calibration;
};

/// Writes the design of `emu` (planned on `g`) with `vo` to `out` (`modelName`: the model's file
/// name for the summary); with `x` (float inputs of the graph's batch) also the raw inputs and
/// the expected outputs. `sections`: more top-level keys of summary.json, each also written as
/// KEY.json (before summary.json, which marks the folder complete). Returns summary.json's
/// contents.
nlohmann::json writeDesign(const ir::Graph& g, const Emulator& emu, const VerilogOptions& vo,
                           const std::filesystem::path& out, const std::string& modelName,
                           const DesignSource& src, const ir::Tensor* x,
                           const nlohmann::json& sections = nlohmann::json::object());

/// A simulation of a design folder.
struct DesignSim {
  sim::SimReport report; // inferencesPerSecond at the design's clock
  nlohmann::json summary;
  int64_t samples = 0;
  double clockMhz = 0;
  StreamGeom outGeom;
  FixedFormat outFormat;
  /// The outputs' real meaning on a QDQ grid (summary.json's output "real"; per output channel
  /// c = (i / outPlane) % channels), if any.
  std::optional<RealAffine> outReal;
  int64_t outPlane = 1;
};

/// Simulates the design in `dir` on float inputs `x` (`inputLabel` names them in errors, e.g.
/// "--input 'x.npy'") against the
/// emulator: the expected outputs the compile stored when `x` is what it was given, else
/// recomputed from summary.json's "compile". Usage errors for a folder that is not a complete
/// design or inputs that do not fit it. A deadlock is reported, not thrown: see deadlockMessage.
DesignSim simulateDesign(const std::filesystem::path& dir, const ir::Tensor& x,
                         const std::string& inputLabel, uint64_t seed,
                         const std::filesystem::path& trace = {},
                         const ir::ProgressFn& progress = {});
/// The run-time error text of a deadlocked simulation (the full FIFOs and blocked streams);
/// empty when it finished.
std::string deadlockMessage(const DesignSim& d);
/// The report as `triad sim --json` writes it.
nlohmann::json simReportJson(const DesignSim& d, uint64_t seed);

/// {"lut", "ff", "dsp", "bram18"}, each rounded: a resource estimate in summary.json, fit.json
/// and the reports of triad quantize.
nlohmann::json resourcesJson(const ir::Resources& r);
/// The RTL's outputs dequantized: f32 [samples, output elements] (logical order).
ir::Tensor simOutputs(const DesignSim& d);

} // namespace triad::fpga
