// triad run: run a model on inputs from .npy/.pb files and write its outputs.
#include "cli/Commands.h"
#include "fpga/Emulator.h"
#include "fpga/FpgaTarget.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuTarget.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace triad::cli {

namespace {

struct RunOptions {
  ModelOptions model;
  std::string target = "interp";
  std::vector<std::string> inputs, outputs;
  int repeat = 1;
  int threads = 0;
  bool profile = false;
  std::string device;   // --target gpu: OpenCL device selector
  bool fpgaRtl = false; // --target fpga: run the Verilated RTL instead of the emulator
  std::string json;     // timing report
};

// "name=path" or "path"; names are graph input/output names.
std::pair<std::string, std::string> splitBinding(const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos) return {"", s};
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int runRun(const RunOptions& o, const ir::TargetRegistry& targets) {
  const ir::Target* target = targets.find(o.target);
  if (!target)
    fail(ErrorKind::Usage, "--target '{}' is not available (available: {})", o.target,
         targets.names());
  std::unique_ptr<ir::Target> onDevice; // --device: a GPU target bound to that device
  if (!o.device.empty()) {
    if (target->name() != "gpu")
      fail(ErrorKind::Usage, "--device applies to --target gpu, not '{}'", target->name());
    gpu::GpuOptions go;
    go.device = o.device;
    onDevice = gpu::makeGpuTarget(go);
    target = onDevice.get();
  }
  if (o.fpgaRtl) {
    if (target->name() != "fpga")
      fail(ErrorKind::Usage, "--fpga-rtl applies to --target fpga, not '{}'", target->name());
    fpga::FpgaTargetOptions fo;
    fo.verilate = true;
    onDevice = fpga::makeFpgaTarget(fo);
    target = onDevice.get();
  }
  // The files are read first: the model's dynamic dimensions take their sizes from them (as
  // ONNX Runtime binds them), except those fixed by --batch and --dim.
  ModelOptions model = o.model;
  model.streamBatch = target->name() == "fpga"; // samples stream through a fixed-batch design
  std::vector<frontend::NamedTensor> files;
  for (const std::string& spec : o.inputs) {
    auto [name, path] = splitBinding(spec);
    files.push_back(frontend::readTensorFile(path));
    model.inputShapes.push_back({name, files.back().tensor.shape(), path});
  }
  frontend::ImportResult r = model.load(target->name() != "interp");
  const ir::Graph& g = r.graph;

  // Bind inputs: by name (name=file) or by position.
  std::vector<std::optional<ir::Tensor>> bound(g.inputs().size());
  size_t positional = 0;
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const std::string& spec = o.inputs[k];
    auto [name, path] = splitBinding(spec);
    size_t idx;
    if (name.empty()) {
      idx = positional++;
      if (idx >= g.inputs().size())
        fail(ErrorKind::Usage, "{} --input files given; the model has {} input{}", o.inputs.size(),
             g.inputs().size(), g.inputs().size() == 1 ? "" : "s");
    } else {
      auto it = std::find_if(g.inputs().begin(), g.inputs().end(),
                             [&](ir::Value* v) { return v->name() == name; });
      if (it == g.inputs().end())
        fail(ErrorKind::Usage, "--input '{}': the model has no input named '{}'", spec, name);
      idx = size_t(it - g.inputs().begin());
    }
    frontend::NamedTensor& t = files[k];
    const ir::TensorType& want = g.inputs()[idx]->type();
    bool streams =
        model.streamBatch && fpga::streamChunks(g, std::span<const ir::Tensor>(&t.tensor, 1)) > 0;
    if (t.tensor.dtype() != want.dtype || (t.tensor.shape() != want.shape && !streams))
      fail(ErrorKind::Runtime, "input '{}' expects {}, file '{}' holds {}", g.inputs()[idx]->name(),
           typeToString(want), path, typeToString(t.tensor.type()));
    bound[idx] = std::move(t.tensor);
  }
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i])
      fail(ErrorKind::Usage, "no --input for model input '{}' ({})", g.inputs()[i]->name(),
           typeToString(g.inputs()[i]->type()));
    inputs.push_back(std::move(*bound[i]));
  }

  ir::CompileSettings settings;
  settings.threads = o.threads;
  auto tc = std::chrono::steady_clock::now();
  auto exe = target->compile(g, settings);
  double compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tc).count();
  if (auto* ge = dynamic_cast<const gpu::GpuExecutable*>(exe.get());
      ge && ge->buildStats().cacheWriteFailures > 0) // not fatal: programs are compiled again
    fmt::print(stderr, "triad: warning: the OpenCL binary cache is not written: {}\n",
               terminalText(ge->buildStats().cacheWriteError));
  // The first run pays for first touches of memory; with --repeat the later runs are timed.
  std::vector<ir::Tensor> outs;
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    if (o.profile && r == std::min(1, o.repeat - 1)) exe->setProfiling(true);
    auto t0 = std::chrono::steady_clock::now();
    outs = exe->run(inputs);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> timed(times.begin() + (times.size() > 1 ? 1 : 0), times.end());
  std::sort(timed.begin(), timed.end());
  double ms = timed[timed.size() / 2];

  for (size_t i = 0; i < outs.size(); ++i) {
    const ir::Tensor& t = outs[i];
    std::string preview;
    for (int64_t k = 0; k < std::min<int64_t>(t.numElements(), 8); ++k)
      preview += fmt::format("{}{:.6g}", k ? ", " : "", t.getDouble(k));
    fmt::print("{} {} = [{}{}]\n", terminalText(g.outputs()[i]->name()),
               terminalText(typeToString(t.type())), preview, t.numElements() > 8 ? ", ..." : "");
  }
  size_t positionalOut = 0;
  for (const std::string& spec : o.outputs) {
    auto [name, path] = splitBinding(spec);
    size_t idx;
    if (name.empty()) {
      idx = positionalOut++;
      if (idx >= outs.size())
        fail(ErrorKind::Usage, "{} --output files given; the model has {} output{}",
             o.outputs.size(), outs.size(), outs.size() == 1 ? "" : "s");
    } else {
      auto it = std::find_if(g.outputs().begin(), g.outputs().end(),
                             [&](ir::Value* v) { return v->name() == name; });
      if (it == g.outputs().end())
        fail(ErrorKind::Usage, "--output '{}': the model has no output named '{}'", spec, name);
      idx = size_t(it - g.outputs().begin());
    }
    frontend::writeTensorFile(path, outs[idx], g.outputs()[idx]->name());
  }
  std::fflush(stdout); // keep the timing line after the outputs when both go to one terminal
  std::vector<ir::LayerTime> prof = o.profile ? exe->profile() : std::vector<ir::LayerTime>{};
  if (!o.json.empty()) {
    // Times in milliseconds; runs after the first when there are several (see --repeat).
    auto pct = [&](double q) {
      return timed[std::min(timed.size() - 1, size_t(q * double(timed.size())))];
    };
    nlohmann::json j = {{"model", o.model.model},  {"target", target->name()},
                        {"compile_ms", compileMs}, {"first_run_ms", times.front()},
                        {"runs", timed.size()},    {"p50_ms", ms},
                        {"p90_ms", pct(0.9)},      {"p99_ms", pct(0.99)},
                        {"min_ms", timed.front()}};
    nlohmann::json layers = nlohmann::json::array();
    int runs = std::max(1, o.repeat - 1);
    for (const auto& l : prof) {
      layers.push_back({{"layer", l.layer},
                        {"kind", l.kind},
                        {"ms", l.milliseconds / runs},
                        {"cycles_per_sample", l.cycles}});
      if (!l.op.empty()) layers.back()["op"] = l.op;
    }
    j["layers"] = layers;
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
  if (o.profile) {
    int runs = std::max(1, o.repeat - 1);
    double total = 0;
    for (const auto& l : prof)
      total += l.milliseconds;
    std::sort(prof.begin(), prof.end(),
              [](const auto& a, const auto& b) { return a.milliseconds > b.milliseconds; });
    fmt::print(stderr, "per-layer time on {} (mean of {} run{}):\n", target->name(), runs,
               runs == 1 ? "" : "s");
    for (const auto& l : prof) // layer names are the model's: terminalText (escape::printable)
      fmt::print(stderr, "  {:>10.3f} ms {:>5.1f}%  {}{}{}\n", l.milliseconds / runs,
                 total > 0 ? 100 * l.milliseconds / total : 0.0, terminalText(l.layer),
                 l.op.empty() ? "" : " (" + terminalText(l.op) + ")",
                 l.kind == "layer" ? "" : " [" + terminalText(l.kind) + "]");
    if (prof.empty()) fmt::print(stderr, "  (target {} has no per-layer timing)\n", target->name());
  }
  if (o.repeat > 1)
    fmt::print(stderr,
               "ran on {} in {:.2f} ms (median of {} runs after the first; first {:.2f} ms; "
               "compile {:.0f} ms)\n",
               target->name(), ms, timed.size(), times.front(), compileMs);
  else
    fmt::print(stderr, "ran on {} in {:.2f} ms (compile {:.0f} ms)\n", target->name(), ms,
               compileMs);
  return 0;
}

} // namespace

Action addRun(CLI::App& app, const ir::TargetRegistry& targets) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on input tensors and write its outputs");
  o->model.add(*cmd);
  cmd->add_option("--target", o->target,
                  fmt::format("Where to run ({}): interp is the reference interpreter, cpu the "
                              "compiled C++ (threads: --threads)",
                              targets.names()))
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Run N times; report the median of runs 2..N")
      ->capture_default_str()
      ->check(positiveInt());
  cmd->add_option("--device", o->device,
                  "OpenCL device for --target gpu: index, P:D or name substring (see `triad "
                  "devices`; default: $TRIAD_OPENCL_DEVICE, else the first GPU, else the first "
                  "device)");
  cmd->add_option("--threads", o->threads,
                  "Threads of compiled targets (default: TRIAD_THREADS, else the physical cores)")
      ->check(positiveInt());
  cmd->add_option("--json", o->json,
                  "Write timings (compile, first run, p50/p90/p99, layers) as JSON");
  cmd->add_flag("--profile", o->profile, "Print per-layer times (targets that record them)");
  cmd->add_flag("--fpga-rtl", o->fpgaRtl,
                "With --target fpga: run the Verilated RTL (checked bit for bit against the "
                "emulator; the first run builds it) instead of the emulator");
  cmd->add_option(
      "-i,--input", o->inputs,
      "Input tensor file (.npy or ONNX TensorProto .pb), in input order or as NAME=FILE");
  cmd->add_option("-o,--output", o->outputs,
                  "Where to write an output (.npy or .pb), in output order or as NAME=FILE");
  return [o, &targets] { return runRun(*o, targets); };
}

} // namespace triad::cli
