#include "bench/Bench.h"

#include "bench/Data.h"
#include "bench/Energy.h"
#include "bench/History.h"
#include "bench/Process.h"
#include "bench/Progress.h"
#include "bench/Report.h"
#include "bench/Sha256.h"
#include "bench/Stats.h"
#include "bench/SystemInfo.h"
#include "bench/Worker.h"
#include "frontend/OnnxImporter.h"
#include "frontend/QdqQuantizer.h"
#include "frontend/TensorIO.h"
#include "ir/Files.h"
#include "ir/System.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <unistd.h>

#ifndef TRIAD_SOURCE_DIR
#define TRIAD_SOURCE_DIR "."
#endif

namespace triad::bench {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string utcStamp(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// The command line as typed (from /proc), for the report.
std::string commandLine() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out;
  size_t start = 0;
  bool first = true;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    std::string arg = all.substr(start, end - start);
    if (first) arg = fs::path(arg).filename().string();
    bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\$`*?[]{}()<>|&;") == std::string::npos;
    if (!first) out += ' ';
    out += plain ? arg : shellQuote(arg);
    first = false;
    start = end + 1;
  }
  return out;
}

ErrorKind kindFromName(const std::string& name) {
  for (ErrorKind k : {ErrorKind::Usage, ErrorKind::Io, ErrorKind::InvalidModel,
                      ErrorKind::Unsupported, ErrorKind::Runtime, ErrorKind::Internal})
    if (errorKindName(k) == name) return k;
  return ErrorKind::Internal;
}

// A temporary folder for the run's data files, removed when the run ends however it ends.
class WorkDir {
public:
  // Named after this process, so that the next run removes the folder of a run killed by
  // SIGKILL (ir/Files.h).
  WorkDir() : path_(makeTempDir(fs::temp_directory_path(), "triad-bench")) {}
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

// One target or peer at one batch.
struct Participant {
  std::string target, kind; // kind: "triad" | "peer"
  int64_t batch = 1;
  std::unique_ptr<Process> proc;
  json result;
  std::vector<double> samples, host;
  std::vector<int> perRound;
  double joules = 0;
  bool energyValid = true;
  std::string energySource, energyWhy;

  bool ok() const { return result["status"] == "ok"; }
  void setFailed(const std::string& why, bool skipped = false) {
    result["status"] = skipped ? "skipped" : "failed";
    result["why"] = why;
    if (proc) proc->kill();
  }
};

json emptyResult(const std::string& target, const std::string& kind, int64_t batch) {
  json r;
  r["target"] = target;
  r["kind"] = kind;
  r["batch"] = batch;
  r["status"] = "ok";
  r["why"] = nullptr;
  for (const char* k : {"device", "threads", "compile_s", "warmup_runs", "latency_ms",
                        "throughput_per_s", "accuracy", "memory", "energy"})
    r[k] = nullptr;
  r["layers"] = json::array();
  r["partition"] = nullptr;
  return r;
}

class Bench {
public:
  Bench(const BenchOptions& o, const ir::TargetRegistry& targets)
      : o_(o), targets_(targets), threads_(o.threads > 0 ? o.threads : physicalCores()),
        modelPath_(o.model) {}

  int run();

private:
  void probe();
  void reference();
  void benchBatch(int64_t batch);
  bool makeInt8Model();
  void failPrecision(const std::string& why);
  WorkerSpec spec(const std::string& target, int64_t batch) const;
  std::unique_ptr<Participant> startWorker(const WorkerSpec& s, const std::string& label);
  std::unique_ptr<Participant> startPeer(const std::string& name, int64_t batch);
  void profile(Participant& p);
  void timedRounds(std::vector<Participant*>& parts, int64_t batch);
  void accuracy(Participant& p);
  void asyncGpu(Participant& p);
  void stats(Participant& p);
  void finishResult(Participant& p);
  json settingsJson() const;
  fs::path peersDir() const;
  std::string python() const;

  const BenchOptions& o_;
  const ir::TargetRegistry& targets_;
  int threads_;
  Progress progress_;
  WorkDir work_;
  Rapl rapl_;
  std::string cpuModel_;
  json system_, model_;
  std::string inputPath_;               // rows of the first input: --data, or seeded random rows
  std::map<std::string, int64_t> dims_; // named dimensions: --dim, and those bound by the data
  std::optional<ir::Tensor> labels_;
  std::optional<ir::Tensor> ref_;
  std::string refWhy_;
  std::optional<double> refTop1_;
  std::string refTop1Why_;
  std::vector<json> results_;
  // The model the workers and peers run now: the one given (fp32), or its QDQ copy (int8).
  std::string modelPath_, precision_ = "fp32";
  std::optional<fs::path> int8Model_;
  json schedule_ = json::array();
  json partition_ = nullptr;
};

fs::path Bench::peersDir() const {
  if (const char* d = std::getenv("TRIAD_PEERS_DIR"); d && *d) return d;
  return fs::path(TRIAD_SOURCE_DIR) / "bench" / "peers";
}

std::string Bench::python() const {
  // The peers' environment (the newest ONNX Runtime and OpenVINO), else the project's.
  return projectPython(TRIAD_SOURCE_DIR, {".venv-peers", ".venv"}, "/usr/bin/python3");
}

// The model's description, the data checked against it, and the OpenCL platforms, from a probe
// process: the parent stays free of OpenCL and importer state.
void Bench::probe() {
  std::string randomPath = (work_.path() / "random_input.npy").string();
  int64_t maxBatch = *std::max_element(o_.batches.begin(), o_.batches.end());
  auto body = [&](int, int out) {
    json r;
    try {
      // The data's rows give the model's dynamic dimensions other than the batch their sizes
      // (as ONNX Runtime binds them), except those fixed by --dim.
      frontend::ImportOptions io;
      io.dims = o_.dims;
      std::optional<ir::Tensor> data;
      if (!o_.data.empty()) {
        data = frontend::readNpy(o_.data);
        ir::Shape rowShape = data->shape();
        if (!rowShape.empty()) {
          rowShape[0] = -1; // the batch: swept by --batch
          io.inputShapes = {{"", rowShape, o_.data}};
        }
      }
      frontend::ImportResult m = [&] {
        try {
          return frontend::importOnnxFile(o_.model, io);
        } catch (const Error& e) { // the data does not fit the model: a usage error of bench's
          if (e.kind() != ErrorKind::Runtime) throw;
          throw Error(ErrorKind::Usage, fmt::format("--data {}: {}", o_.data, e.what()));
        }
      }();
      r["model"] = modelJson(o_.model, m);
      // Every named dimension's size, for the peers (--dim NAME=V).
      json dims = o_.dims;
      for (const auto& [name, v] : m.binding.dims)
        dims[name] = v;
      r["dims"] = dims;
      const ir::Graph& g = m.graph;
      if (g.inputs().empty() || g.inputs()[0]->type().shape.empty())
        fail(ErrorKind::Unsupported, "{}: triad bench needs a first input with a batch dimension",
             o_.model);
      const ir::TensorType& in = g.inputs()[0]->type();
      int64_t rows = 0;
      if (data) {
        const ir::Tensor& x = *data;
        ir::Shape want(in.shape.begin() + 1, in.shape.end()), got;
        if (x.rank() > 0) got.assign(x.shape().begin() + 1, x.shape().end());
        if (x.rank() == 0 || x.dtype() != in.dtype || got != want)
          fail(ErrorKind::Usage,
               "--data {}: holds {}, but rows of model input '{}' ({}) are {} without the "
               "first dimension",
               o_.data, typeToString(x.type()), g.inputs()[0]->name(), typeToString(in),
               dtypeName(in.dtype));
        rows = x.shape()[0];
        if (rows == 0) fail(ErrorKind::Usage, "--data {}: no rows", o_.data);
      } else {
        rows = std::max<int64_t>(32, maxBatch);
        frontend::writeNpy(randomPath, randomRows(in, 0, rows, o_.seed, 0));
      }
      if (!o_.labels.empty()) {
        ir::Tensor y = frontend::readNpy(o_.labels);
        bool integer = y.dtype() == ir::DType::I64 || y.dtype() == ir::DType::I32 ||
                       y.dtype() == ir::DType::U8 || y.dtype() == ir::DType::I16;
        if (!integer || y.numElements() != rows)
          fail(ErrorKind::Usage, "--labels {}: expected {} integer class indices, it holds {}",
               o_.labels, rows, typeToString(y.type()));
      }
      r["rows"] = rows;
    } catch (const Error& e) {
      r = {{"error", e.what()}, {"kind", errorKindName(e.kind())}};
    }
    try {
      r["opencl"] = openclJson();
      if (r["opencl"].empty()) r["opencl_why"] = "no OpenCL platform";
    } catch (const std::exception& e) {
      r["opencl"] = json::array();
      r["opencl_why"] = e.what();
    }
    std::string line = r.dump() + "\n";
    if (::write(out, line.data(), line.size()) < 0) _exit(1);
    _exit(0);
  };
  progress_.start("reading the model and the system");
  auto p = Process::fork("probe", o_.timeoutS, body);
  std::optional<json> r = p->receive([&] { progress_.tick(); });
  if (!r) {
    progress_.finish("failed");
    fail(ErrorKind::Internal, "the probe process failed: {}", p->failure());
  }
  p->quit(5);
  if (r->contains("error")) {
    progress_.finish("failed");
    throw Error(kindFromName((*r)["kind"]), (*r)["error"]);
  }
  model_ = (*r)["model"];
  model_["sha256"] = sha256File(o_.model);
  model_["data_rows"] = (*r)["rows"];
  dims_ = (*r)["dims"].get<std::map<std::string, int64_t>>();
  system_["opencl"] = (*r)["opencl"];
  if (r->contains("opencl_why")) system_["opencl_why"] = (*r)["opencl_why"];
  inputPath_ = o_.data.empty() ? randomPath : o_.data;
  if (!o_.labels.empty()) labels_ = frontend::readNpy(o_.labels);
  progress_.finish(fmt::format("{} nodes, {} data rows", model_["nodes"].get<int64_t>(),
                               (*r)["rows"].get<int64_t>()));
}

WorkerSpec Bench::spec(const std::string& target, int64_t batch) const {
  WorkerSpec s;
  s.target = target;
  s.batch = batch;
  s.model = modelPath_;
  s.dims = o_.dims;
  s.threads = target == "interp" || target == "reference" ? 1 : threads_;
  s.warmup = o_.warmup;
  s.inputPath = inputPath_;
  s.seed = o_.seed;
  s.cpuModel = cpuModel_;
  s.fpgaPart = o_.fpgaPart;
  s.clockMhz = o_.clockMhz;
  s.reuse = o_.reuse;
  s.precision = o_.precision;
  s.fpgaRtl = o_.fpgaRtl;
  return s;
}

std::unique_ptr<Participant> Bench::startWorker(const WorkerSpec& s, const std::string& label) {
  auto p = std::make_unique<Participant>();
  p->target = s.target;
  p->kind = "triad";
  p->batch = s.batch;
  p->result = emptyResult(s.target, "triad", s.batch);
  progress_.start(label);
  p->proc = Process::fork(fmt::format("{} (batch {})", s.target, s.batch), o_.timeoutS,
                          [&](int in, int out) { workerMain(s, targets_, in, out); });
  std::optional<json> ready = p->proc->receive([&] { progress_.tick(); });
  if (!ready) {
    p->setFailed(p->proc->failure());
  } else if (!ready->value("ready", false)) {
    std::string kind = ready->value("kind", "");
    p->setFailed(ready->value("why", "not ready"), kind == "unsupported");
  } else {
    for (const char* k : {"compile_s", "warmup_runs", "device", "threads"})
      if (ready->contains(k)) p->result[k] = (*ready)[k];
    if (ready->contains("notes")) {
      p->result["notes"] = (*ready)["notes"];
      for (const json& n : (*ready)["notes"])
        progress_.note(fmt::format("triad bench: {}: {}", s.target, n.get<std::string>()));
    }
  }
  progress_.finish(p->ok()
                       ? fmt::format("ok, compile {:.2f} s", p->result["compile_s"].get<double>())
                       : fmt::format("{}: {}", p->result["status"].get<std::string>(),
                                     p->result["why"].get<std::string>()));
  return p;
}

std::unique_ptr<Participant> Bench::startPeer(const std::string& name, int64_t batch) {
  auto p = std::make_unique<Participant>();
  p->target = name;
  p->kind = "peer";
  p->batch = batch;
  p->result = emptyResult(name, "peer", batch);
  p->result["threads"] = threads_;
  fs::path script = peersDir() / (name + "_peer.py");
  if (!fs::exists(script)) {
    p->setFailed(fmt::format("no peer harness {}", script.string()), true);
    return p;
  }
  progress_.start(fmt::format("starting peer {}, batch {}", name, batch));
  try {
    std::vector<std::string> argv = {python(),    script.string(),
                                     "--model",   modelPath_,
                                     "--batch",   std::to_string(batch),
                                     "--threads", std::to_string(threads_),
                                     "--input",   inputPath_};
    for (const auto& [dim, v] : dims_)
      argv.push_back(fmt::format("--dim={}={}", dim, v));
    p->proc = Process::spawn(fmt::format("peer {} (batch {})", name, batch), o_.timeoutS, argv);
  } catch (const Error& e) {
    p->setFailed(e.what());
    progress_.finish(fmt::format("failed: {}", e.what()));
    return p;
  }
  std::optional<json> ready = p->proc->receive([&] { progress_.tick(); });
  if (!ready) {
    p->setFailed(p->proc->failure());
  } else if (!ready->value("ready", false)) {
    std::string why = ready->contains("why") ? ready->value("why", "")
                                             : ready->value("reason", "the peer is not ready");
    p->setFailed(why, true);
  } else {
    for (const char* k : {"compile_s", "device", "threads", "version"})
      if (ready->contains(k)) p->result[k] = (*ready)[k];
  }
  progress_.finish(p->ok() ? "ready"
                           : fmt::format("{}: {}", p->result["status"].get<std::string>(),
                                         p->result["why"].get<std::string>()));
  return p;
}

void Bench::profile(Participant& p) {
  int n = std::clamp(o_.repeat / 5, 1, 10);
  std::optional<json> r = p.proc->request({{"cmd", "profile"}, {"n", n}});
  if (!r) return p.setFailed(p.proc->failure());
  if (r->contains("error")) {
    p.result["layers_why"] = (*r)["error"];
    return;
  }
  p.result["layers"] = (*r)["layers"];
  if (r->contains("why")) p.result["layers_why"] = (*r)["why"];
}

void Bench::timedRounds(std::vector<Participant*>& parts, int64_t batch) {
  int rounds = std::max(1, std::min(o_.rounds, o_.repeat));
  progress_.start(fmt::format("timing batch {}: {} runs each in {} interleaved rounds", batch,
                              o_.repeat, rounds));
  for (int r = 0; r < rounds; ++r) {
    int n = o_.repeat / rounds + (r < o_.repeat % rounds ? 1 : 0);
    std::vector<Participant*> live;
    for (Participant* p : parts)
      if (p->ok()) live.push_back(p);
    if (live.empty()) break;
    // The starting participant rotates, so that no one always runs right after another.
    std::rotate(live.begin(), live.begin() + long(size_t(r) % live.size()), live.end());
    for (Participant* p : live) {
      if (o_.settleMs > 0 && live.size() > 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(o_.settleMs));
      std::optional<RaplSample> before = rapl_.read();
      std::optional<json> rep =
          p->proc->request({{"cmd", "run"}, {"n", n}, {"warmup", 1}}, [&] { progress_.tick(); });
      std::optional<RaplSample> after = rapl_.read();
      if (!rep) {
        p->setFailed(p->proc->failure());
        progress_.note(fmt::format("triad bench: {} (batch {}) failed: {}", p->target, batch,
                                   p->proc->failure()));
        continue;
      }
      if (rep->contains("error") || !rep->contains("samples_ms") ||
          !(*rep)["samples_ms"].is_array() || (*rep)["samples_ms"].size() != size_t(n)) {
        p->setFailed(rep->contains("error")
                         ? (*rep)["error"].get<std::string>()
                         : fmt::format("answered run n={} without {} samples_ms", n, n));
        continue;
      }
      for (const json& v : (*rep)["samples_ms"])
        p->samples.push_back(v.get<double>());
      if (rep->contains("host_ms"))
        for (const json& v : (*rep)["host_ms"])
          p->host.push_back(v.get<double>());
      p->perRound.push_back(n);
      if (p->target == "gpu") {
        if (rep->contains("energy_j"))
          p->joules += (*rep)["energy_j"].get<double>();
        else
          p->energyValid = false;
      } else if (before && after) {
        p->joules += Rapl::joules(*before, *after);
      } else {
        p->energyValid = false;
      }
      schedule_.push_back(
          {{"batch", batch}, {"round", r}, {"target", p->target}, {"kind", p->kind}, {"runs", n}});
    }
  }
  progress_.finish("done");
}

void Bench::asyncGpu(Participant& p) {
  int n = std::max(o_.repeat, 4 * o_.gpuInFlight);
  progress_.start(
      fmt::format("gpu, batch {}: {} runs with {} in flight", p.batch, n, o_.gpuInFlight));
  std::optional<json> r = p.proc->request({{"cmd", "async"}, {"lanes", o_.gpuInFlight}, {"n", n}},
                                          [&] { progress_.tick(); });
  if (!r) {
    progress_.finish("failed");
    return p.setFailed(p.proc->failure());
  }
  if (r->contains("error")) {
    p.result["gpu_async"] = {{"why", (*r)["error"]}};
    progress_.finish("failed: " + (*r)["error"].get<std::string>());
    return;
  }
  p.result["gpu_async"] = *r;
  progress_.finish(fmt::format("{:.1f} /s", (*r)["throughput_per_s"].get<double>()));
}

void Bench::accuracy(Participant& p) {
  json a = {{"max_abs_err", nullptr},    {"max_rel_err", nullptr}, {"top1", nullptr},
            {"top1_reference", nullptr}, {"samples", nullptr},     {"why", nullptr}};
  if (refTop1_) a["top1_reference"] = *refTop1_;
  if (!ref_) {
    a["why"] = refWhy_;
    p.result["accuracy"] = a;
    return;
  }
  fs::path out = work_.path() / fmt::format("out_{}_{}_b{}.npy", p.kind, p.target, p.batch);
  std::optional<json> r =
      p.proc->request({{"cmd", "infer"}, {"input", inputPath_}, {"output", out.string()}},
                      [&] { progress_.tick(); });
  if (!r) return p.setFailed(p.proc->failure());
  try {
    if (r->contains("error")) fail(ErrorKind::Runtime, "{}", (*r)["error"].get<std::string>());
    ir::Tensor got = frontend::readNpy(out);
    Accuracy acc = compareOutputs(got, *ref_);
    a["max_abs_err"] = acc.maxAbsErr;
    a["max_rel_err"] = acc.maxRelErr;
    a["samples"] = rowCount(got);
    if (labels_) {
      std::string why;
      if (auto t = top1(got, *labels_, &why))
        a["top1"] = *t;
      else
        a["why"] = "top-1: " + why;
    } else {
      a["why"] = "no --labels: error against the interpreter only";
    }
  } catch (const std::exception& e) {
    a["why"] = e.what();
  }
  p.result["accuracy"] = a;
}

void Bench::stats(Participant& p) {
  std::optional<json> r = p.proc->request({{"cmd", "stats"}});
  if (!r) return p.setFailed(p.proc->failure());
  if (p.kind == "peer") {
    json mem = {{"peak_rss_mib", r->value("peak_rss_mib", json(nullptr))},
                {"arena_bytes", nullptr},
                {"why", "a peer's arena is its runtime's own"}};
    p.result["memory"] = mem;
    return;
  }
  if (r->contains("memory")) p.result["memory"] = (*r)["memory"];
  if (r->contains("gpu")) p.result["gpu"] = (*r)["gpu"];
  if (r->contains("fpga")) p.result["fpga"] = (*r)["fpga"];
  if (r->contains("partition")) p.result["partition"] = (*r)["partition"];
  if (r->contains("energy_why") && !(*r)["energy_why"].get<std::string>().empty()) {
    p.energyValid = false;
    p.energyWhy = (*r)["energy_why"];
  }
}

void Bench::finishResult(Participant& p) {
  json& r = p.result;
  if (!p.samples.empty()) {
    r["latency_ms"] = latencyJson(p.samples);
    double mean = r["latency_ms"]["mean"].get<double>();
    r["throughput_per_s"] = mean > 0 ? json(double(p.batch) / (mean * 1e-3)) : json(nullptr);
    r["runs_per_round"] = p.perRound;
  }
  if (r.contains("fpga") && r["fpga"].is_object() && !p.host.empty()) {
    json e = latencyJson(p.host);
    e.erase("samples");
    r["fpga"]["emulator_ms"] = e; // the host's wall time of the emulator (or Verilator)
  }
  // Energy: RAPL for the host's targets and the peers, NVML for the GPU, an estimate (in
  // fpga.energy_estimate) for the FPGA; null with the reason otherwise.
  json en = {{"joules_per_inference", nullptr}, {"source", nullptr}, {"why", nullptr}};
  if (p.target == "fpga" && p.kind == "triad") {
    en["why"] = "the FPGA's energy is modelled, not measured: see fpga.energy_estimate";
  } else if (p.samples.empty()) {
    en["why"] = "no timed runs";
  } else if (p.target == "gpu" && p.kind == "triad") {
    if (p.energyValid && p.joules > 0) {
      en["joules_per_inference"] = p.joules / double(p.samples.size() * size_t(p.batch));
      en["source"] = "nvml";
    } else {
      en["why"] = p.energyWhy.empty() ? "no NVML energy counter" : p.energyWhy;
    }
  } else if (!rapl_.available()) {
    en["why"] = rapl_.why();
  } else if (!p.energyValid) {
    en["why"] = "a RAPL reading failed during the timed runs";
  } else {
    en["joules_per_inference"] = p.joules / double(p.samples.size() * size_t(p.batch));
    en["source"] = "rapl";
    en["scope"] = "the CPU packages, whole machine, during this result's timed runs";
  }
  r["energy"] = en;
}

// The interpreter's outputs on every data row: the oracle for every target's accuracy.
void Bench::reference() {
  WorkerSpec s = spec("reference", o_.batches.front());
  s.warmup = 0;
  auto p = startWorker(s, fmt::format("reference outputs (interpreter, batch {})", s.batch));
  if (p->ok()) {
    fs::path out = work_.path() / "reference.npy";
    progress_.start("running the interpreter on the data");
    std::optional<json> r =
        p->proc->request({{"cmd", "infer"}, {"input", inputPath_}, {"output", out.string()}},
                         [&] { progress_.tick(); });
    if (!r)
      refWhy_ = "the interpreter failed: " + p->proc->failure();
    else if (r->contains("error"))
      refWhy_ = "the interpreter failed: " + (*r)["error"].get<std::string>();
    else
      ref_ = frontend::readNpy(out);
    progress_.finish(ref_ ? "ok" : refWhy_);
    p->proc->quit();
  } else {
    refWhy_ = "the interpreter failed: " + p->result["why"].get<std::string>();
  }
  if (ref_ && labels_) {
    std::string why;
    refTop1_ = top1(*ref_, *labels_, &why);
  }
}

// --precision int8: the model's QDQ copy, calibrated on the data rows (or the seeded random
// rows); on failure every int8 result is failed with the reason.
bool Bench::makeInt8Model() {
  fs::path out = work_.path() / "model_int8.onnx";
  progress_.start("quantizing the model to int8 QDQ (ONNX Runtime's quantize_static)");
  try {
    frontend::QdqOptions qo;
    qo.batchRows = static_cast<int>(std::min<int64_t>(32, model_["data_rows"].get<int64_t>()));
    json summary =
        frontend::quantizeToQdq(TRIAD_SOURCE_DIR, o_.model, inputPath_, out.string(), qo);
    model_["int8"] = {{"file", "model_int8.onnx"},
                      {"sha256", sha256File(out)},
                      {"calibration", o_.data.empty() ? json("seeded random rows") : json(o_.data)},
                      {"quantizer", summary}};
    int8Model_ = out;
    progress_.finish("ok");
    return true;
  } catch (const Error& e) {
    progress_.finish(fmt::format("failed: {}", e.what()));
    model_["int8"] = {{"error", e.what()}};
    failPrecision(fmt::format("int8: the QDQ copy could not be made: {}", e.what()));
    return false;
  }
}

void Bench::failPrecision(const std::string& why) {
  for (int64_t batch : o_.batches) {
    std::vector<std::pair<std::string, std::string>> sides;
    for (const std::string& t : o_.targets)
      sides.push_back({t, "triad"});
    for (const std::string& peer : o_.peers)
      sides.push_back({peer, "peer"});
    for (const auto& [name, kind] : sides) {
      json r = emptyResult(name, kind, batch);
      r["status"] = "failed";
      r["why"] = why;
      r["precision"] = precision_;
      results_.push_back(std::move(r));
    }
  }
}

void Bench::benchBatch(int64_t batch) {
  std::vector<std::unique_ptr<Participant>> parts;
  for (const std::string& t : o_.targets) {
    if (t == "auto") continue;
    parts.push_back(startWorker(spec(t, batch), fmt::format("compiling {}, batch {}", t, batch)));
  }
  // Per-layer profiles first: they are the measured costs `auto` plans with.
  std::map<std::string, std::vector<std::pair<std::string, double>>> profiles;
  std::vector<std::string> autoTargets;
  for (auto& p : parts) {
    if (!p->ok()) continue;
    progress_.start(fmt::format("per-layer profile of {}, batch {}", p->target, batch));
    profile(*p);
    progress_.finish(p->ok() ? fmt::format("{} layers", p->result["layers"].size()) : "failed");
    if (!p->ok() || (p->target != "cpu" && p->target != "gpu" && p->target != "fpga")) continue;
    autoTargets.push_back(p->target);
    for (const json& l : p->result["layers"])
      if (l["kind"] == "layer" || l["kind"] == "cycles")
        profiles[p->target].push_back(
            {l["layer"].get<std::string>(), l["ms"].get<double>() * 1e-3});
  }
  if (std::find(o_.targets.begin(), o_.targets.end(), "auto") != o_.targets.end()) {
    if (autoTargets.empty()) {
      auto p = std::make_unique<Participant>();
      p->target = "auto", p->kind = "triad", p->batch = batch;
      p->result = emptyResult("auto", "triad", batch);
      p->setFailed("auto needs at least one of cpu, gpu, fpga in --targets that ran here", true);
      parts.push_back(std::move(p));
    } else {
      WorkerSpec s = spec("auto", batch);
      s.autoTargets = autoTargets;
      s.profiles = profiles;
      s.planCosts = o_.planCosts;
      parts.push_back(
          startWorker(s, fmt::format("partitioning and compiling auto, batch {}", batch)));
      if (parts.back()->ok()) profile(*parts.back()); // one row per partition and transfer
    }
  }
  for (const std::string& peer : o_.peers)
    parts.push_back(startPeer(peer, batch));

  std::vector<Participant*> all;
  for (auto& p : parts)
    all.push_back(p.get());
  timedRounds(all, batch);
  for (Participant* p : all)
    if (p->ok() && p->kind == "triad" && p->target == "gpu" && o_.gpuInFlight > 0) asyncGpu(*p);
  progress_.start(
      fmt::format("accuracy on {} rows, batch {}", model_["data_rows"].get<int64_t>(), batch));
  for (Participant* p : all)
    if (p->ok()) accuracy(*p);
  progress_.finish("done");
  for (Participant* p : all) {
    if (p->ok()) stats(*p);
    if (p->proc) p->proc->quit();
    finishResult(*p);
    p->result["precision"] = precision_;
    if (p->target == "auto" && p->ok() && partition_.is_null()) partition_ = p->result["partition"];
    results_.push_back(std::move(p->result));
  }
}

json Bench::settingsJson() const {
  json s;
  s["targets"] = o_.targets;
  s["peers"] = o_.peers;
  s["batches"] = o_.batches;
  s["precisions"] = o_.precisions;
  s["repeat"] = o_.repeat;
  s["warmup"] = o_.warmup;
  s["settle_ms"] = o_.settleMs;
  s["rounds"] = std::max(1, std::min(o_.rounds, o_.repeat));
  s["threads"] = threads_;
  s["gpu_in_flight"] = o_.gpuInFlight;
  s["data"] = o_.data.empty() ? json(nullptr) : json(o_.data);
  s["labels"] = o_.labels.empty() ? json(nullptr) : json(o_.labels);
  s["seed"] = o_.seed;
  s["timeout_s"] = o_.timeoutS;
  s["fpga"] = {{"part", o_.fpgaPart},
               {"clock_mhz", o_.clockMhz},
               {"reuse", o_.reuse},
               {"precision", fpgaPrecisionName(o_.precision)},
               {"rtl", o_.fpgaRtl}};
  return s;
}

int Bench::run() {
  std::string started = utcStamp("%Y-%m-%dT%H:%M:%SZ");
  std::random_device rd;
  std::string id = fmt::format("{}-{:04x}", utcStamp("%Y%m%dT%H%M%SZ"), rd() & 0xffff);
  system_ = hostSystemJson();
  cpuModel_ = system_["cpu_model"];
  probe();
  reference();
  for (const std::string& precision : o_.precisions) {
    precision_ = precision;
    modelPath_ = o_.model;
    if (precision == "int8" && !makeInt8Model()) continue;
    if (precision == "int8") modelPath_ = int8Model_->string();
    for (int64_t b : o_.batches)
      benchBatch(b);
  }

  json report;
  report["schema"] = "triad-bench/1";
  report["run"] = {{"id", id},
                   {"started", started},
                   {"finished", utcStamp("%Y-%m-%dT%H:%M:%SZ")},
                   {"command", o_.command.empty() ? commandLine() : o_.command},
                   {"status", "complete"}};
  report["system"] = system_;
  report["model"] = model_;
  report["settings"] = settingsJson();
  report["results"] = results_;
  if (!partition_.is_null()) report["partition"] = partition_; // absent without auto
  report["schedule"] = schedule_;

  fs::path dir =
      o_.outDir.empty() ? fs::path("out") / "bench" / fs::path(o_.model).stem() : o_.outDir;
  if (int8Model_) { // beside the reports, for the user to take home
    std::ifstream in(*int8Model_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::create_directories(dir);
    frontend::writeFileAtomic(dir / "model_int8.onnx", bytes);
  }
  fs::path shown = writeReports(dir, report);
  if (!o_.noDb)
    progress_.note(fmt::format("triad bench: run {} added to the history {}", id,
                               appendHistory(o_.db, report).string()));
  int ok = 0;
  for (const json& r : results_)
    ok += r["status"] == "ok";
  progress_.note(fmt::format("triad bench: {} of {} results ok; report in {}", ok, results_.size(),
                             dir.string()));
  fmt::print("{}\n", shown.string());
  return 0;
}

} // namespace

fs::path writeReports(const fs::path& dir, const json& report) {
  writeReportFiles(dir, report); // report.json, report.md, report.html; atomic each
  return dir / "report.html";
}

fs::path appendHistory(const std::string& db, const json& report) {
  fs::path path = db.empty() ? defaultDbPath() : fs::path(db);
  appendRun(path, report); // one transaction
  return path;
}

int runBench(const BenchOptions& o, const ir::TargetRegistry& targets) {
  installInterruptHandlers();
  try {
    Bench b(o, targets);
    return b.run();
  } catch (const Interrupted& i) {
    fmt::print(stderr,
               "\ntriad bench: interrupted by {}; every worker stopped, nothing written (earlier "
               "reports and the history are unchanged)\n",
               i.signal == SIGINT    ? "SIGINT"
               : i.signal == SIGTERM ? "SIGTERM"
                                     : "a signal");
    return 128 + i.signal;
  }
}

} // namespace triad::bench
