// The worker side of `triad bench`: one forked process per (target, batch). It imports the
// model at the batch, compiles it for the target, warms it up and then answers the parent's
// JSON-line commands, the same protocol as the peer harnesses (bench/peers/):
//   line 1                        {"ready": true, "compile_s", "device", "threads", ...}
//                                 or {"ready": false, "why", "kind"}
//   {"cmd":"run","n":N}           {"samples_ms": [...], "host_ms": [...], ...}
//   {"cmd":"profile","n":N}       {"layers": [{"layer","kind","ms","cycles"}], "runs": N}
//   {"cmd":"infer","input":X,"output":Y}   every row of X in batches (last one padded, trimmed);
//                                 output 0 written to Y -> {"ok": true, "rows": R}
//   {"cmd":"stats"}               {"peak_rss_mib", "memory", "energy", "gpu", "fpga", ...}
//   {"cmd":"quit"}                exits
// Errors of a command come back as {"error": "..."}; the parent then marks the target failed.
#pragma once

#include "ir/Target.h"
#include "ir/partition/Partition.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace triad::bench {

struct WorkerSpec {
  std::string target; // interp, cpu, gpu, fpga, auto; "reference": interp for accuracy only
  int64_t batch = 1;
  std::string model;
  std::map<std::string, int64_t> dims; // --dim: symbolic dimensions fixed ahead of the data
  int threads = 1;
  int warmup = 3;
  std::string inputPath; // rows of the model's first input (the --data file, or seeded random)
  uint64_t seed = 1;     // other inputs: seeded random rows
  std::string cpuModel;  // for the device description
  // FPGA
  std::string fpgaPart;
  double clockMhz = 200;
  std::string reuse = "auto";
  std::string precision; // empty: the built-in default
  bool fpgaRtl = false;
  // auto: candidate targets, their per-layer profiles from this run (target -> (layer, seconds
  // per run); layers named like nodes, or fused groups of them, become measured node costs),
  // and the hook that fills the device models and links (BenchOptions::planCosts)
  std::vector<std::string> autoTargets;
  std::map<std::string, std::vector<std::pair<std::string, double>>> profiles;
  std::function<void(ir::partition::Options&, std::vector<std::string>*)> planCosts;
};

/// The worker's body; reads commands from fd `in`, writes replies to fd `out`. Never returns.
/// Targets other than the FPGA (built here from the spec's options) and `auto` come from
/// `targets` (the CLI's registry, inherited through fork).
[[noreturn]] void workerMain(const WorkerSpec& spec, const ir::TargetRegistry& targets, int in,
                             int out);

/// The built-in fixed-point format of the FPGA target ("fixed<16,6>"), or `precision` if set.
std::string fpgaPrecisionName(const std::string& precision);

} // namespace triad::bench
