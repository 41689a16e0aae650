// The FPGA as an ir::Target: per-node support from the layer table (fpga/layers/), and compile()
// to an Executable that runs the bit-accurate emulator (default) or the Verilated design, float
// in and float out. The conversions are explicit and at the boundary: the graph's input is
// quantized with the config's input precision (float -> fixed; also when the graph is a part of
// a network whose input is an intermediate activation, e.g. a partition after a CPU-run Conv),
// and its outputs are dequantized (fixed -> float). Its profile gives every layer's cycles from
// the RTL's latency model at the clock; timing() the design's latency and II; estimate() every
// node's seconds from the cycle model and its resources (for ir/partition).
#pragma once

#include "fpga/QuantConfig.h"
#include "fpga/VerilogEmitter.h"
#include "ir/Target.h"

#include <filesystem>

namespace triad::fpga {

struct FpgaTargetOptions {
  QuantConfig config;            // precisions (the built-in defaults: fixed<16,6>)
  int64_t reuse = 1;             // reuse factor of Dense and Conv layers
  bool autoReuse = false;        // per layer, the largest reuse that keeps the II (--reuse auto)
  double clockMhz = 200;         // the clock the cycle counts are converted at
  bool verilate = false;         // run the Verilated RTL (checked against the emulator) instead
  std::filesystem::path workDir; // designs for verilate (default: $TRIAD_CACHE_DIR or ~/.cache)
  /// A named part (fpga/Devices.h, e.g. "xc7a35t"): compile() refuses a design whose estimated
  /// resources exceed it. Empty: no budget.
  std::string part;
};

/// The design's timing at the clock (from the RTL's model; measured when verilated).
struct FpgaTiming {
  int64_t latencyCycles = 0;
  double ii = 0; // cycles between samples in steady state
  double clockMhz = 0;
  bool measured = false; // from Verilator rather than the model
  bool rtl = false;      // the graph has RTL (false: emulator only; no cycle counts)
  std::string why;       // why not, when !rtl
};

class FpgaExecutable : public ir::Executable {
public:
  virtual FpgaTiming timing() const = 0;
  /// The design's estimated resources (every layer's and the glue's; empty without RTL).
  virtual ir::Resources resources() const = 0;
  /// The last run's device time from timing(): (latency + (samples - 1) x II) cycles at the
  /// clock; negative without RTL (or before the first run).
  double modelledSeconds() const override = 0;
};

std::unique_ptr<ir::Target> makeFpgaTarget(FpgaTargetOptions o = {});

} // namespace triad::fpga
