// triad synth: sizes a design written by `triad compile --target fpga` with Yosys (docs/fpga.md,
// "Resources"). Every layer module is synthesized on its own (flattened, in parallel jobs) and
// the top's glue (forks, FIFOs) with the layer modules as black boxes; the total is their sum.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
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

struct SynthUnit {
  std::string module, layer, op; // layer/op empty for the top's glue
  SynthCounts counts;
  std::optional<int64_t> logicDepth; // ltp -noff, flip-flops and block RAMs excluded
  double seconds = 0;
  std::string log; // the Yosys log file
};

struct SynthReport {
  std::string family, top, yosysVersion;
  std::vector<SynthUnit> units; // layer modules in stream order, then the glue ("top")
  SynthCounts total;
  std::optional<int64_t> maxLogicDepth; // the deepest module
  double wallSeconds = 0;
  int jobs = 1;
};

struct SynthOptions {
  std::string family = "xc7"; // xc7 (synth_xilinx -family xc7) or ice40 (synth_ice40 -dsp)
  int jobs = 0;               // parallel Yosys runs; 0: the number of cores
};

/// Yosys on PATH?
bool haveYosys();
/// Synthesizes OUTDIR (rtl/, summary.json). Throws triad::Error: Io when yosys is missing (the
/// message says to run scripts/setup.sh), Usage for a folder not written by triad compile or an
/// unknown family, Runtime when Yosys fails (naming the module and its log).
SynthReport synthesize(const std::filesystem::path& outdir, const SynthOptions& o);

} // namespace triad::sim
