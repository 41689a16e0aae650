// `triad bench`: one model on several targets (and peers) at several batch sizes, in one run on
// this machine, into one report (docs/report-schema.md, `triad-bench/1`).
//
// Each (target, batch) runs in a worker forked from the clean parent (bench/Worker.h): a
// crash, an abort or a time-out there makes that result "failed" with the reason, its peak RSS
// is its own, and no OpenCL or thread state is ever forked. Peers (bench/peers/*_peer.py) speak
// the same JSON-line protocol. For each batch: every worker compiles and warms up, is profiled
// per layer, `auto` is planned from those profiles, the peers start, then the timed runs go in
// rounds that alternate between all of them (machine noise hits all alike), then every one
// runs the data set for accuracy against the interpreter, and reports its memory and energy.
#pragma once

#include "ir/Target.h"
#include "ir/partition/Partition.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace triad::bench {

struct BenchOptions {
  std::string model;
  std::vector<std::string> targets = {"interp", "cpu", "gpu", "fpga", "auto"};
  std::vector<int64_t> batches = {1};
  /// --dim: symbolic dimensions by dim_param name; the others take their sizes from `data`'s
  /// rows (the first dimension is the batch of `batches`).
  std::map<std::string, int64_t> dims;
  std::string data, labels;       // .npy: rows of the first input; class indices
  std::vector<std::string> peers; // onnxruntime, openvino, tvm (bench/peers/NAME_peer.py)
  int repeat = 50;                // timed runs per (target, batch)
  int warmup = 3;
  int rounds = 5; // the timed runs are split into this many interleaved rounds
  /// Before each turn in the rounds: a pause so that the side before it goes idle (ONNX
  /// Runtime's workers keep spinning after a run and would share the cores with the next
  /// side), then one untimed call so that the side's own threads are awake.
  int settleMs = 50;
  int threads = 0; // 0: the physical cores
  /// The GPU's asynchronous mode: this many runs in flight, measured after the timed rounds
  /// (result gpu_async, throughput); 0: not measured.
  int gpuInFlight = 2;
  std::string fpgaPart = "xcku115";
  double clockMhz = 200;
  std::string reuse = "auto";
  std::string precision; // FPGA default precision (empty: the target's built-in fixed<16,6>)
  /// --precision: the model as given ("fp32") and/or its int8 QDQ copy ("int8", made by ONNX
  /// Runtime's quantizer calibrated on the data rows: frontend/QdqQuantizer.h), each run on
  /// every target and peer; accuracy is always against the interpreter on the model as given.
  std::vector<std::string> precisions = {"fp32"};
  bool fpgaRtl = false;
  double timeoutS = 600;        // per worker or peer: time spent answering
  uint64_t seed = 1;            // random inputs without --data
  std::filesystem::path outDir; // empty: out/bench/<model stem>
  std::string db;               // empty: the default history database
  bool noDb = false;
  std::string command; // the command line, for the report
  /// `auto`'s cost context: fills po.costs.devices and po.links and may drop targets that
  /// cannot run here (the CLI: device models measured on this machine and cached, the GPU link
  /// measured; cli/Targets.h). Runs in the auto worker; lines for the user go to `notes`.
  /// Unset: the cost model's defaults.
  std::function<void(ir::partition::Options& po, std::vector<std::string>* notes)> planCosts;
};

/// Runs the benchmark and writes the reports; returns the process exit code (0 when the
/// report was written, whatever the targets' statuses; 128 + signal when interrupted, with
/// nothing written). Usage errors, an unreadable model or data throw triad::Error.
int runBench(const BenchOptions& o, const ir::TargetRegistry& targets);

/// The run's report files under `dir` (report.json, report.md, report.html: bench/Report.h);
/// returns the path to print (report.html).
std::filesystem::path writeReports(const std::filesystem::path& dir, const nlohmann::json& report);

/// Appends the run to the history database `db` (empty: bench/History.h's default) in one
/// transaction; returns the database's path.
std::filesystem::path appendHistory(const std::string& db, const nlohmann::json& report);

} // namespace triad::bench
