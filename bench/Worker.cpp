#include "bench/Worker.h"

#include "bench/Data.h"
#include "bench/Energy.h"
#include "cpu/CpuTarget.h"
#include "fpga/Cost.h"
#include "fpga/Devices.h"
#include "fpga/Emulator.h"
#include "fpga/FpgaTarget.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuTarget.h"
#include "ir/partition/Calibration.h"
#include "ir/partition/Partition.h"
#include "ir/passes/Pass.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <future>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

namespace triad::bench {

namespace {

using nlohmann::json;

double nowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void reply(int fd, const json& j) {
  std::string s = j.dump() + "\n";
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0); // the parent is gone
    off += size_t(n);
  }
}

// Blocks for the next command line; nullopt at end of file (the parent closed our input).
std::optional<json> readCommand(int fd, std::string& buf) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded()) return j;
      continue;
    }
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buf.append(chunk, size_t(n));
  }
}

double peakRssMib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0; // Linux: KiB
}

#ifdef TRIAD_BENCH_TEST_HOOKS
// Test builds only: TRIAD_BENCH_TEST_CRASH=TARGET:PHASE aborts the worker of TARGET at PHASE
// (compile, run, infer), TARGET:hang makes its runs hang (the time limit's test).
void testHook(const std::string& target, const char* phase) {
  const char* h = std::getenv("TRIAD_BENCH_TEST_CRASH");
  if (!h) return;
  if (target + ":" + phase == h) std::abort();
  if (target + ":hang" == h && std::string(phase) == "run")
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
}
#else
void testHook(const std::string&, const char*) {}
#endif

fpga::FpgaTargetOptions fpgaOptions(const WorkerSpec& s) {
  fpga::FpgaTargetOptions fo;
  if (!s.precision.empty()) fo.config = fpga::QuantConfig::fromCommandLine("", s.precision, {});
  fo.clockMhz = s.clockMhz;
  fo.verilate = s.fpgaRtl;
  fo.part = s.fpgaPart; // the target refuses a design larger than the part
  if (s.reuse == "auto")
    fo.autoReuse = true;
  else
    fo.reuse = std::stoll(s.reuse);
  return fo;
}

class Worker {
public:
  Worker(const WorkerSpec& s, const ir::TargetRegistry& targets) : s_(s), targets_(targets) {}

  json start() {
    startRss_ = peakRssMib();
    std::string name = s_.target == "reference" ? "interp" : s_.target;
    // Rows of the first input (the --data file, or the probe's random rows): the model's other
    // dynamic dimensions take their sizes from them; the batch is the spec's.
    data_ = frontend::readNpy(s_.inputPath);
    frontend::ImportOptions io;
    io.batch = s_.batch;
    io.dims = s_.dims;
    ir::Shape rows = data_.shape();
    if (!rows.empty()) rows[0] = -1;
    io.inputShapes = {{"", rows, s_.inputPath}};
    graph_ = std::make_unique<frontend::ImportResult>(frontend::importOnnxFile(s_.model, io));
    ir::Graph& g = graph_->graph;
    for (const ir::Value* v : g.inputs())
      if (!v->type().shape.empty() && v->type().shape[0] != s_.batch)
        fail(ErrorKind::Unsupported,
             "model input '{}' has a fixed first dimension {}; batch {} does not apply", v->name(),
             v->type().shape[0], s_.batch);
    if (name != "interp") ir::defaultPipeline().run(g, ir::PassOptions{});

    // Timing inputs: the first rows of the data (cyclically), seeded random for other inputs.
    for (size_t i = 0; i < g.inputs().size(); ++i)
      inputs_.push_back(i == 0 ? takeRows(data_, 0, s_.batch, false)
                               : randomRows(g.inputs()[i]->type(), 0, s_.batch, s_.seed, int(i)));

    ir::CompileSettings cs;
    cs.threads = s_.threads;
    double t0 = nowS();
    if (name == "auto") {
      compileAuto(g, cs);
    } else {
      if (name == "fpga") {
        ownTarget_ = fpga::makeFpgaTarget(fpgaOptions(s_));
        target_ = ownTarget_.get();
      } else {
        target_ = targets_.find(name);
        if (!target_) fail(ErrorKind::Usage, "no target '{}'", name);
      }
      exe_ = target_->compile(g, cs);
    }
    compileS_ = nowS() - t0;
    testHook(s_.target, "compile");
    gpu_ = dynamic_cast<gpu::GpuExecutable*>(exe_.get());
    fpga_ = dynamic_cast<fpga::FpgaExecutable*>(exe_.get());
    if (gpu_) nvml_ = std::make_unique<Nvml>(gpu_->device().name);
    for (int i = 0; i < s_.warmup; ++i)
      exe_->run(inputs_);

    json r = {{"ready", true}, {"compile_s", compileS_}, {"warmup_runs", s_.warmup}};
    r["device"] = device();
    r["threads"] = name == "cpu" || name == "auto" ? json(s_.threads) : json(nullptr);
    if (name == "interp") r["threads"] = 1;
    if (!notes_.empty()) r["notes"] = notes_;
    return r;
  }

  json run(int n, int warmup) {
    testHook(s_.target, "run");
    for (int i = 0; i < warmup; ++i)
      exe_->run(inputs_);
    json samples = json::array(), host = json::array();
    std::optional<uint64_t> mj0 = nvml_ ? nvml_->millijoules() : std::nullopt;
    for (int i = 0; i < n; ++i) {
      double t0 = nowS();
      exe_->run(inputs_);
      double wallMs = (nowS() - t0) * 1e3;
      host.push_back(wallMs);
      samples.push_back(deviceMs(wallMs));
      if (gpu_) {
        const gpu::GpuRunProfile& p = gpu_->lastProfile();
        gpuSum_[0] += p.kernelMs, gpuSum_[1] += p.hostToDeviceMs, gpuSum_[2] += p.deviceToHostMs,
            gpuSum_[3] += p.hostMs;
      }
      accumulatePartition();
      ++timedRuns_;
    }
    json r = {{"samples_ms", samples}, {"host_ms", host}};
    if (mj0)
      if (auto mj1 = nvml_->millijoules()) r["energy_j"] = double(*mj1 - *mj0) * 1e-3;
    return r;
  }

  /// The GPU's asynchronous mode: `n` runs through `lanes` lanes (GpuExecutable::submit), all
  /// submitted at once; the throughput is the batch rows per second of wall time from the first
  /// submission to the last result. The first lane's outputs are checked against run()'s.
  json async(int lanes, int n) {
    if (!gpu_) fail(ErrorKind::Usage, "the asynchronous mode is the GPU target's");
    lanes = std::max(lanes, 1);
    n = std::max(n, lanes);
    gpu_->setInFlight(lanes);
    // The lanes hold a copy of the model's device memory each: dropped however this ends.
    struct DropLanes {
      gpu::GpuExecutable* g;
      ~DropLanes() { g->setInFlight(0); }
    } drop{gpu_};
    std::vector<ir::Tensor> sync = exe_->run(inputs_);
    std::vector<std::future<std::vector<ir::Tensor>>> warm;
    for (int i = 0; i < lanes; ++i) // every lane once, untimed
      warm.push_back(gpu_->submit(inputs_));
    bool same = true;
    for (auto& f : warm) {
      std::vector<ir::Tensor> got = f.get();
      for (size_t i = 0; i < got.size() && i < sync.size(); ++i)
        same = same && got[i].byteSize() == sync[i].byteSize() &&
               std::memcmp(got[i].raw(), sync[i].raw(), got[i].byteSize()) == 0;
    }
    double t0 = nowS();
    std::vector<std::future<std::vector<ir::Tensor>>> flight;
    for (int i = 0; i < n; ++i)
      flight.push_back(gpu_->submit(inputs_));
    for (auto& f : flight)
      f.get();
    double wallS = nowS() - t0;
    return {{"in_flight", lanes},
            {"runs", n},
            {"wall_ms", wallS * 1e3},
            {"throughput_per_s", wallS > 0 ? double(n * s_.batch) / wallS : 0.0},
            {"outputs_match_sync", same}};
  }

  json profile(int n) {
    exe_->setProfiling(true);
    for (int i = 0; i < n; ++i)
      exe_->run(inputs_);
    std::vector<ir::LayerTime> prof = exe_->profile();
    exe_->setProfiling(false);
    std::map<std::string, std::string> ops; // layers named like a node: its ONNX op
    for (const auto& node : graph_->graph.nodes())
      ops[node->name()] = std::string(node->def().onnxName);
    json layers = json::array();
    for (const ir::LayerTime& l : prof) {
      json row = {{"layer", l.layer}, {"kind", l.kind}, {"ms", l.milliseconds / std::max(n, 1)}};
      if (l.cycles > 0) row["cycles"] = l.cycles; // the FPGA's: other targets count no cycles
      if (!l.op.empty())
        row["op"] = l.op;
      else if (auto it = ops.find(l.layer); it != ops.end())
        row["op"] = it->second;
      layers.push_back(std::move(row));
    }
    json r = {{"layers", layers}, {"runs", n}};
    if (prof.empty())
      r["why"] = s_.target == "interp" || s_.target == "reference"
                     ? "the interpreter records no per-layer times"
                     : fmt::format("target {} recorded no per-layer times", s_.target);
    return r;
  }

  json infer(const std::string& inPath, const std::string& outPath) {
    testHook(s_.target, "infer");
    ir::Tensor x = frontend::readNpy(inPath);
    const ir::Graph& g = graph_->graph;
    int64_t rows = rowCount(x), b = s_.batch;
    ir::Tensor acc;
    for (int64_t start = 0; start < rows; start += b) {
      std::vector<ir::Tensor> in;
      for (size_t i = 0; i < g.inputs().size(); ++i)
        in.push_back(i == 0 ? takeRows(x, start, b, true)
                            : randomRows(g.inputs()[i]->type(), start, b, s_.seed, int(i)));
      std::vector<ir::Tensor> outs = exe_->run(in);
      if (outs.empty() || outs[0].rank() == 0 || outs[0].shape()[0] != b)
        fail(ErrorKind::Unsupported,
             "output 0 is {}: its first dimension is not the batch ({}), so rows cannot be "
             "compared",
             outs.empty() ? "missing" : typeToString(outs[0].type()), b);
      putRows(acc, rows, start, outs[0], std::min(b, rows - start));
    }
    frontend::writeNpy(outPath, acc);
    return {{"ok", true}, {"rows", rows}};
  }

  json stats() {
    json r;
    r["peak_rss_mib"] = peakRssMib();
    json mem = {{"peak_rss_mib", peakRssMib()}, {"rss_at_start_mib", startRss_}};
    if (auto* c = dynamic_cast<cpu::CpuExecutable*>(exe_.get())) {
      mem["arena_bytes"] = c->build().code.arenaBytes;
      mem["why"] = nullptr;
    } else if (gpu_) {
      mem["arena_bytes"] = gpu_->program().arenaBytes;
      mem["why"] = nullptr;
    } else {
      mem["arena_bytes"] = nullptr;
      mem["why"] = s_.target == "fpga"   ? "the FPGA design streams: on-chip FIFOs and weights, "
                                           "no arena (see fpga.resources)"
                   : s_.target == "auto" ? "one arena per partition: not summed"
                                         : "the interpreter allocates every value separately";
    }
    r["memory"] = mem;
    if (gpu_) {
      double n = double(std::max<int64_t>(timedRuns_, 1));
      r["gpu"] = {{"kernel_ms", gpuSum_[0] / n},
                  {"h2d_ms", gpuSum_[1] / n},
                  {"d2h_ms", gpuSum_[2] / n},
                  {"host_ms", gpuSum_[3] / n}};
      r["energy_why"] = nvml_ && nvml_->available() ? "" : nvml_ ? nvml_->why() : "no NVML";
      r["energy_source"] = "nvml";
    }
    if (fpga_) r["fpga"] = fpgaJson();
    if (pexe_) r["partition"] = partitionJson();
    return r;
  }

private:
  std::string device() const {
    if (gpu_) return gpu_->device().label();
    if (s_.target == "fpga")
      return fmt::format("{} at {:g} MHz ({})", s_.fpgaPart.empty() ? "FPGA" : s_.fpgaPart,
                         s_.clockMhz,
                         s_.fpgaRtl ? "Verilated RTL" : "bit-accurate emulator; cycles modelled");
    if (s_.target == "cpu") return fmt::format("{}, {} threads", s_.cpuModel, s_.threads);
    if (s_.target == "auto") {
      std::string t;
      for (const std::string& a : s_.autoTargets)
        t += (t.empty() ? "" : "+") + a;
      return "partitioned over " + t;
    }
    return fmt::format("{}, 1 thread (reference interpreter)", s_.cpuModel);
  }

  // The device's time for one run: the target's model where the host's wall time is not the
  // device's (the FPGA: cycles at its clock), else the wall time.
  double deviceMs(double wallMs) {
    double m = exe_->modelledSeconds();
    if (m >= 0) {
      basis_ = "modelled";
      return m * 1e3;
    }
    if (fpga_) {
      fpga::FpgaTiming t = fpga_->timing();
      if (t.rtl && t.clockMhz > 0) {
        basis_ = "cycles at the clock (FpgaExecutable::timing)";
        return (double(t.latencyCycles) + double(s_.batch - 1) * t.ii) / (t.clockMhz * 1e3);
      }
      basis_ = "emulator wall time (no RTL: " + t.why + ")";
    } else {
      basis_ = "wall";
    }
    return wallMs;
  }

  json fpgaJson() {
    fpga::FpgaTiming t = fpga_->timing();
    json f;
    f["clock_mhz"] = t.clockMhz;
    f["latency_basis"] = basis_;
    if (t.rtl) {
      f["latency_cycles"] = t.latencyCycles;
      f["ii"] = t.ii;
      f["latency_us"] = double(t.latencyCycles) / t.clockMhz;
      f["throughput_per_s"] = t.ii > 0 ? t.clockMhz * 1e6 / t.ii : 0.0;
      f["why"] = nullptr;
    } else {
      for (const char* k : {"latency_cycles", "ii", "latency_us", "throughput_per_s"})
        f[k] = nullptr;
      f["why"] = t.why;
    }
    f["measured"] = t.measured;
    f["precision"] = fpgaPrecisionName(s_.precision);
    f["reuse"] = s_.reuse;
    f["part"] = s_.fpgaPart.empty() ? json(nullptr) : json(s_.fpgaPart);
    auto resJson = [](const ir::Resources& r) {
      return json{{"lut", r.lut}, {"ff", r.ff}, {"dsp", r.dsp}, {"bram18", r.bram18}};
    };
    // The design's resource estimate, the part's budget and the energy estimate (fpga/Cost.h).
    ir::Resources res = fpga_->resources();
    f["budget"] = nullptr;
    f["fits"] = nullptr;
    f["fits_why"] = s_.fpgaPart.empty() ? "no --fpga-part" : "";
    if (!s_.fpgaPart.empty()) {
      const fpga::Device& dev = fpga::findDevice(s_.fpgaPart);
      f["budget"] = resJson(dev.resources);
      if (!res.empty()) {
        f["fits"] = res.fitsIn(dev.resources);
        f["fits_why"] = nullptr;
      } else {
        f["fits_why"] = "no resource estimate";
      }
    }
    f["energy_estimate"] = nullptr;
    f["energy_why"] = nullptr;
    try {
      if (!t.rtl) fail(ErrorKind::Unsupported, "no RTL: {}", t.why);
      double perSample =
          fpga::designSeconds(t.latencyCycles, t.ii, s_.batch, t.clockMhz) / double(s_.batch);
      fpga::EnergyEstimate e =
          fpga::estimateEnergy(res, activity(), t.clockMhz, perSample, s_.fpgaPart);
      f["energy_estimate"] = {{"joules_per_inference", e.joules},
                              {"static_joules", e.staticJoules},
                              {"dynamic_joules", e.dynamicJoules},
                              {"model", "docs/fpga.md#energy-estimate"},
                              {"inputs", e.model}};
    } catch (const std::exception& e) {
      f["energy_why"] = e.what();
    }
    if (res.empty()) {
      f["resources"] = nullptr;
      f["resources_why"] = "the FPGA target gives no resource estimate for this design";
    } else {
      f["resources"] = resJson(res);
      f["resources"]["source"] = "estimate";
      f["resources_why"] = nullptr;
    }
    return f;
  }

  // The design's activity for the energy estimate: the same design emitted again with the
  // target's options (fpga/FpgaTarget.cpp; the executable does not expose its design).
  double activity() {
    fpga::FpgaTargetOptions fo = fpgaOptions(s_);
    fpga::Emulator emu(graph_->graph, fo.config);
    fpga::VerilogOptions vo;
    vo.name = graph_->graph.name.empty() ? "model" : graph_->graph.name;
    vo.reuse = fo.reuse;
    vo.autoReuse = fo.autoReuse;
    vo.clockMhz = fo.clockMhz;
    return fpga::designActivity(fpga::emitVerilog(graph_->graph, emu, vo));
  }

  void compileAuto([[maybe_unused]] ir::Graph& g, [[maybe_unused]] const ir::CompileSettings& cs) {
    std::vector<std::unique_ptr<ir::Target>> own;
    for (const std::string& t : s_.autoTargets) {
      if (t == "fpga")
        autoTargets_.add(fpga::makeFpgaTarget(fpgaOptions(s_)));
      else if (t == "cpu")
        autoTargets_.add(cpu::makeCpuTarget());
      else if (t == "gpu")
        autoTargets_.add(gpu::makeGpuTarget());
    }
    ir::partition::Options po;
    po.mode = ir::partition::Mode::Auto;
    po.targets = s_.autoTargets;
    if (s_.planCosts) s_.planCosts(po, &notes_);
    for (const auto& [target, layers] : s_.profiles)
      po.costs.measured[target] = ir::partition::measuredFromProfile(g, layers);
    po.costs.fpgaPart = s_.fpgaPart;
    if (!s_.fpgaPart.empty()) po.costs.fpgaBudget = fpga::findDevice(s_.fpgaPart).resources;
    plan_ = std::make_unique<ir::partition::Plan>(ir::partition::plan(g, autoTargets_, po));
    auto pe = ir::partition::compilePlan(g, *plan_, autoTargets_, cs);
    pexe_ = pe.get();
    exe_ = std::move(pe);
    partSums_.assign(plan_->partitions.size(), 0.0);
    transferSums_.assign(plan_->transfers.size(), 0.0);
  }

  void accumulatePartition() {
    if (!pexe_) return;
    const ir::partition::RunTimes& t = pexe_->lastTimes();
    for (size_t i = 0; i < t.partitionSeconds.size() && i < partSums_.size(); ++i)
      partSums_[i] += t.partitionSeconds[i];
    for (size_t i = 0; i < t.transferSeconds.size() && i < transferSums_.size(); ++i)
      transferSums_[i] += t.transferSeconds[i];
    totalSum_ += t.totalSeconds;
  }

  // The plan with the mean measured times of the timed runs (ir::partition::planJson).
  json partitionJson() const {
    ir::partition::RunTimes mean = pexe_->lastTimes();
    double n = double(std::max<int64_t>(timedRuns_, 1));
    mean.partitionSeconds = partSums_;
    mean.transferSeconds = transferSums_;
    for (double& s : mean.partitionSeconds)
      s /= n;
    for (double& s : mean.transferSeconds)
      s /= n;
    mean.totalSeconds = totalSum_ / n;
    return json::parse(ir::partition::planJson(*plan_, timedRuns_ ? &mean : nullptr));
  }

  const WorkerSpec& s_;
  const ir::TargetRegistry& targets_;
  std::unique_ptr<frontend::ImportResult> graph_;
  std::unique_ptr<ir::Target> ownTarget_;
  const ir::Target* target_ = nullptr;
  std::unique_ptr<ir::Executable> exe_;
  gpu::GpuExecutable* gpu_ = nullptr;
  fpga::FpgaExecutable* fpga_ = nullptr;
  std::unique_ptr<Nvml> nvml_;
  ir::Tensor data_;
  std::vector<ir::Tensor> inputs_;
  double compileS_ = 0, startRss_ = 0;
  double gpuSum_[4] = {0, 0, 0, 0};
  int64_t timedRuns_ = 0;
  std::string basis_ = "wall";
  std::vector<std::string> notes_;
  ir::TargetRegistry autoTargets_;
  std::unique_ptr<ir::partition::Plan> plan_;
  ir::partition::PartitionedExecutable* pexe_ = nullptr;
  std::vector<double> partSums_, transferSums_;
  double totalSum_ = 0;
};

} // namespace

std::string fpgaPrecisionName(const std::string& precision) {
  return precision.empty() ? "fixed<16,6>" : precision;
}

void workerMain(const WorkerSpec& spec, const ir::TargetRegistry& targets, int in, int out) {
  Worker w(spec, targets);
  try {
    reply(out, w.start());
  } catch (const Error& e) {
    reply(out, {{"ready", false}, {"why", e.what()}, {"kind", errorKindName(e.kind())}});
    _exit(1);
  } catch (const std::exception& e) {
    reply(out, {{"ready", false}, {"why", e.what()}, {"kind", "internal"}});
    _exit(1);
  }
  std::string buf;
  while (auto cmd = readCommand(in, buf)) {
    std::string c = cmd->value("cmd", "");
    try {
      if (c == "run")
        reply(out, w.run(cmd->value("n", 1), cmd->value("warmup", 0)));
      else if (c == "profile")
        reply(out, w.profile(cmd->value("n", 1)));
      else if (c == "async")
        reply(out, w.async(cmd->value("lanes", 2), cmd->value("n", 1)));
      else if (c == "infer")
        reply(out, w.infer(cmd->value("input", ""), cmd->value("output", "")));
      else if (c == "stats")
        reply(out, w.stats());
      else if (c == "quit")
        break;
      else
        reply(out, {{"error", fmt::format("unknown command '{}'", c)}});
    } catch (const std::exception& e) {
      reply(out, {{"error", e.what()}});
    }
  }
  _exit(0);
}

} // namespace triad::bench
