// triad tune: auto-tune the GPU kernels of a model on the actual device. Every GEMM-shaped
// kernel (Gemm, MatMul, implicit-GEMM convolution) of the compiled model is searched over the
// GEMM blocking parameters (gpu/Tuner.h) within the time budget; the best parameters go into the
// tuning database that later compiles read. Finally the model is compiled and run with default
// and with tuned parameters and the speed-up is reported.
#include "cli/Commands.h"
#include "gpu/GpuCodeGen.h"
#include "gpu/GpuTarget.h"
#include "gpu/Tuner.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <random>

namespace triad::cli {

namespace {

struct TuneCliOptions {
  ModelOptions model;
  std::string target = "gpu";
  double budget = 120;
  std::string device;
  std::string db;
  int candidates = 24;
  int repeat = 5;
};

struct Shape {
  std::string key;
  std::optional<gpu::GemmShape> gemm;
  std::optional<gpu::ConvShape> conv;
  std::vector<std::string> layers;
};

/// Inputs for timing runs: uniform [-1, 1) floats, zeros for other element types.
std::vector<ir::Tensor> timingInputs(const ir::Graph& g) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<ir::Tensor> in;
  for (const ir::Value* v : g.inputs()) {
    in.emplace_back(v->type());
    if (v->type().dtype == ir::DType::F32)
      for (float& f : in.back().values<float>())
        f = d(rng);
  }
  return in;
}

/// Median kernel time and median wall time (ms) of `repeat` runs after a warm-up run.
std::pair<double, double> timeModel(const ir::Graph& g, const gpu::GpuOptions& o, int repeat) {
  auto exe = gpu::makeGpuTarget(o)->compile(g);
  auto& gexe = dynamic_cast<gpu::GpuExecutable&>(*exe);
  std::vector<ir::Tensor> in = timingInputs(g);
  exe->run(in); // PoCL generates each kernel's work-group function on its first launch
  std::vector<double> kernel, wall;
  for (int r = 0; r < repeat; ++r) {
    exe->run(in);
    kernel.push_back(gexe.lastProfile().kernelMs + gexe.lastProfile().hostMs);
    wall.push_back(gexe.lastProfile().wallMs);
  }
  std::sort(kernel.begin(), kernel.end());
  std::sort(wall.begin(), wall.end());
  return {kernel[kernel.size() / 2], wall[wall.size() / 2]};
}

int runTune(const TuneCliOptions& o) {
  if (o.target != "gpu")
    fail(ErrorKind::Usage, "--target '{}': only the gpu target has tunable kernels", o.target);
  frontend::ImportResult r = o.model.load(true);
  const ir::Graph& g = r.graph;
  gpu::DeviceInfo device = gpu::selectDevice(o.device);
  std::filesystem::path dbPath =
      o.db.empty() ? gpu::TuningDb::defaultPath() : std::filesystem::path(o.db);
  gpu::TuningDb db(dbPath);
  if (!db.warning().empty()) fmt::print(stderr, "warning: {}\n", db.warning());

  // The kernels the compile would generate, with their shapes.
  gpu::GpuCodeGenOptions co;
  co.device = &device;
  gpu::GpuProgram program = gpu::generateOpenCL(g, co);
  std::vector<Shape> shapes;
  for (const gpu::GpuStep& s : program.steps) {
    Shape sh;
    if (s.conv) {
      sh.key = gpu::TuningDb::convKey(*s.conv, device);
      sh.conv = s.conv;
    } else if (s.gemm) {
      sh.key = gpu::TuningDb::gemmKey(*s.gemm, device);
      sh.gemm = s.gemm;
    } else {
      continue;
    }
    auto it =
        std::find_if(shapes.begin(), shapes.end(), [&](const Shape& x) { return x.key == sh.key; });
    if (it == shapes.end()) it = shapes.insert(shapes.end(), sh);
    it->layers.push_back(s.layer);
  }
  fmt::print("tuning {} GEMM/convolution shape{} of '{}' on {} (budget {:.0f} s, up to {} "
             "candidates each), database {}\n",
             shapes.size(), shapes.size() == 1 ? "" : "s", o.model.model, device.label(), o.budget,
             o.candidates, dbPath.string());
  if (shapes.empty()) {
    fmt::print("nothing to tune: the model has no GEMM or implicit-GEMM convolution kernel\n");
    return 0;
  }

  gpu::Context ctx(device);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& sh = shapes[i];
    double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gpu::TuneOptions to;
    to.maxCandidates = o.candidates;
    // What is left of the budget, shared by the shapes still to tune.
    to.budgetSeconds = std::max(1.0, (o.budget - spent) / double(shapes.size() - i));
    gpu::TuneResult res =
        sh.conv ? gpu::tuneConv(ctx, *sh.conv, to, &db) : gpu::tuneGemm(ctx, *sh.gemm, to, &db);
    int measured = 0;
    for (const gpu::TuneCandidate& c : res.tried)
      measured += c.ns > 0;
    fmt::print("  {:<40} {}\n",
               sh.conv ? "conv " + sh.conv->toString() : "gemm " + sh.gemm->toString(),
               terminalText(fmt::format("{}", fmt::join(sh.layers, ", "))));
    if (res.fromDatabase)
      fmt::print("    in the database: {} ({:.3f} ms, default {:.3f} ms, {:.2f}x)\n",
                 res.best.toString(), res.bestNs * 1e-6, res.defaultNs * 1e-6, res.speedup());
    else
      fmt::print("    {} of {} candidates measured: best {} {:.3f} ms, default {:.3f} ms, "
                 "{:.2f}x (compile {:.1f} s)\n",
                 measured, res.tried.size(), res.best.toString(), res.bestNs * 1e-6,
                 res.defaultNs * 1e-6, res.speedup(), res.compileSeconds);
  }

  // The whole model, default against tuned parameters (device time of all kernels).
  gpu::GpuOptions base;
  base.device = o.device;
  base.useTuning = false;
  gpu::GpuOptions tuned = base;
  tuned.useTuning = true;
  tuned.tuningPath = dbPath;
  auto [defKernel, defWall] = timeModel(g, base, o.repeat);
  auto [tunKernel, tunWall] = timeModel(g, tuned, o.repeat);
  fmt::print("model '{}': kernels {:.3f} ms default, {:.3f} ms tuned: {:.2f}x (run wall clock "
             "{:.3f} -> {:.3f} ms, median of {} runs)\n",
             o.model.model, defKernel, tunKernel, tunKernel > 0 ? defKernel / tunKernel : 0.0,
             defWall, tunWall, o.repeat);
  return 0;
}

} // namespace

Action addTune(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Auto-tune a model's GPU kernels on the device and store the results in the tuning "
              "database");
  o->model.add(*cmd);
  cmd->add_option("--target", o->target, "Target whose kernels are tuned (gpu)")
      ->capture_default_str();
  cmd->add_option("--tune-budget", o->budget, "Seconds for the whole search (builds included)")
      ->capture_default_str()
      ->check(positiveInt());
  cmd->add_option("--device", o->device,
                  "OpenCL device: index, P:D or name substring (see `triad devices`)");
  cmd->add_option("--db", o->db,
                  "Tuning database file (default: $TRIAD_CACHE_DIR/tuning.json or "
                  "~/.cache/triad/tuning.json)");
  cmd->add_option("--candidates", o->candidates, "Parameter sets tried per shape at most")
      ->capture_default_str()
      ->check(positiveInt());
  cmd->add_option("--repeat", o->repeat, "Timed runs of the model, default and tuned")
      ->capture_default_str()
      ->check(positiveInt());
  return [o] { return runTune(*o); };
}

} // namespace triad::cli
