// triad bench: one model on several targets, batch sizes and peers, into one report
// (bench/Bench.h; docs/cli.md; docs/report-schema.md).
#include "bench/Bench.h"
#include "bench/PlanTargets.h"
#include "cli/Commands.h"
#include "fpga/QuantConfig.h"

#include <fmt/format.h>
#include <regex>
#include <set>

namespace triad::cli {

namespace {

struct BenchCliOptions {
  bench::BenchOptions b;
  std::string targets = "interp,cpu,gpu,fpga,auto";
  std::string batches = "1";
  std::string peers;
  std::string precisions = "fp32";
  std::vector<std::string> dims; // --dim NAME=V
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

int runBenchCommand(BenchCliOptions& o, const ir::TargetRegistry& targets) {
  bench::BenchOptions& b = o.b;
  std::set<std::string> seen;
  b.targets.clear();
  for (const std::string& t : splitList(o.targets)) {
    if (!seen.insert(t).second) fail(ErrorKind::Usage, "--targets: '{}' given twice", t);
    b.targets.push_back(t);
  }
  b.batches.clear();
  for (const std::string& s : splitList(o.batches)) {
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(s, &used);
      if (used != s.size() || v < 1) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--batch '{}': expected positive whole numbers, e.g. 1,8,32", s);
    }
    if (std::find(b.batches.begin(), b.batches.end(), v) == b.batches.end()) b.batches.push_back(v);
  }
  b.precisions.clear();
  for (const std::string& p : splitList(o.precisions))
    if (std::find(b.precisions.begin(), b.precisions.end(), p) == b.precisions.end())
      b.precisions.push_back(p);
  b.dims = parseDims(o.dims);
  b.peers.clear();
  for (const std::string& p : splitList(o.peers)) {
    if (!std::regex_match(p, std::regex("[a-z0-9_]+")))
      fail(ErrorKind::Usage, "--peers '{}': a peer is a name like onnxruntime, openvino, tvm", p);
    if (std::find(b.peers.begin(), b.peers.end(), p) == b.peers.end()) b.peers.push_back(p);
  }
  bench::checkOptions(b, targets);
  bench::setMeasuredPlanCosts(b);
  return bench::runBench(b, targets);
}

} // namespace

Action addBench(CLI::App& app, const ir::TargetRegistry& targets) {
  auto o = std::make_shared<BenchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Benchmark a model on several targets, batch sizes and peers into one report");
  cmd->add_option("model", o->b.model, "ONNX model file (.onnx)")->required();
  cmd->add_option("--targets", o->targets,
                  fmt::format("Comma-separated targets ({}, auto: partitioned over the others)",
                              targets.names()))
      ->capture_default_str();
  cmd->add_option("--batch", o->batches, "Comma-separated batch sizes, e.g. 1,8,32")
      ->capture_default_str();
  cmd->add_option("--data", o->b.data,
                  "Rows of the first input (.npy, [N, ...]): accuracy over all of them "
                  "(default: seeded random rows, error against the interpreter only)");
  cmd->add_option("--dim", o->dims,
                  "Value of a symbolic dimension, NAME=VALUE (repeatable; default: the size in "
                  "--data's rows)");
  cmd->add_option("--labels", o->b.labels, "Class index of each --data row (.npy, [N])");
  cmd->add_option("--peers", o->peers,
                  "Comma-separated peers run in the same rounds: onnxruntime, openvino, tvm "
                  "(bench/peers/NAME_peer.py)");
  cmd->add_option("--precision", o->precisions,
                  "Comma-separated precisions: fp32 (the model as given), int8 (its QDQ copy made "
                  "by ONNX Runtime's quantizer, calibrated on the --data rows, run by every target "
                  "and peer; written to the report folder as model_int8.onnx)")
      ->capture_default_str();
  cmd->add_option("--repeat", o->b.repeat, "Timed runs per target and batch")
      ->capture_default_str()
      ->check(positiveInt());
  cmd->add_option("--warmup", o->b.warmup, "Untimed runs after compiling")
      ->capture_default_str()
      ->check(nonNegativeInt());
  cmd->add_option("--rounds", o->b.rounds,
                  "Interleaved rounds the timed runs are split into (all targets and peers "
                  "take turns in each)")
      ->capture_default_str()
      ->check(positiveInt());
  cmd->add_option("--settle-ms", o->b.settleMs,
                  "Pause before each turn in the rounds, so that the side before goes idle (its "
                  "spinning worker threads would share the cores); each turn then starts with "
                  "one untimed call")
      ->capture_default_str()
      ->check(nonNegativeInt());
  cmd->add_option("--threads", o->b.threads,
                  "Threads of the CPU target and the peers (default: the physical cores)")
      ->check(positiveInt());
  cmd->add_option("--gpu-in-flight", o->b.gpuInFlight,
                  "GPU asynchronous mode: runs kept in flight for the throughput measured after "
                  "the timed rounds (0: not measured)")
      ->capture_default_str()
      ->check(nonNegativeInt());
  cmd->add_option("--fpga-part", o->b.fpgaPart,
                  "FPGA part whose resource budget the design is held against")
      ->capture_default_str();
  cmd->add_option("--clock-mhz", o->b.clockMhz, "FPGA clock: cycles become time at it")
      ->capture_default_str();
  cmd->add_option("--reuse", o->b.reuse, "FPGA reuse factor of Dense/Conv layers, or auto")
      ->capture_default_str();
  cmd->add_option("--fpga-precision", o->b.precision,
                  "FPGA default precision, e.g. fixed<18,8> (default: fixed<16,6>)");
  cmd->add_flag("--fpga-rtl", o->b.fpgaRtl,
                "Run the FPGA target's Verilated RTL (cycles measured) instead of the emulator");
  cmd->add_option("--timeout", o->b.timeoutS,
                  "Seconds each target's worker (or peer) may spend answering; past it the "
                  "result is 'failed: timed out'")
      ->capture_default_str();
  cmd->add_option("--seed", o->b.seed, "Seed of the random inputs without --data")
      ->capture_default_str();
  cmd->add_option("-o,--out", o->b.outDir,
                  "Report folder (default: out/bench/<model stem>): report.json, report.md, "
                  "report.html");
  auto* db = cmd->add_option("--db", o->b.db,
                             "SQLite history to append the run to (default: "
                             "$XDG_DATA_HOME/triad/bench.db)");
  cmd->add_flag("--no-db", o->b.noDb, "Do not append the run to the history")->excludes(db);
  return [o, &targets] { return runBenchCommand(*o, targets); };
}

} // namespace triad::cli
