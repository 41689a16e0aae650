// triad quantize: run a model through the bit-accurate fixed-point emulator (the FPGA target's
// golden model) and report where precision is lost.
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/Emulator.h"
#include "fpga/Profile.h"
#include "frontend/TensorIO.h"
#include "ir/Files.h"
#include "ir/System.h"

#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace triad::cli {

namespace {

namespace fs = std::filesystem;

struct QuantizeOptions {
  ModelOptions model;
  std::string config, calibrate, input, output, json, labels, defaultPrecision, plot;
  std::vector<std::string> precision;
  bool report = false;
};

ir::Tensor readInput(const std::string& path) {
  return frontend::readTensorFile(path).tensor;
}

// Imports the model with its dynamic dimensions (the batch, dim_params) taken from the shape of
// `x`, read from `path`, where --batch and --dim do not fix them.
frontend::ImportResult loadFor(const QuantizeOptions& o, const ir::Tensor& x,
                               const std::string& path) {
  ModelOptions m = o.model;
  m.inputShapes = {{"", x.shape(), path}};
  frontend::ImportResult r = m.load(/*optimizeAnyway=*/true); // the FPGA path runs the passes
  const ir::Graph& g = r.graph;
  if (g.inputs().size() != 1)
    fail(ErrorKind::Unsupported, "{}: triad quantize takes models with one input (this has {})",
         o.model.model, g.inputs().size());
  const ir::TensorType& want = g.inputs()[0]->type();
  if (x.shape() != want.shape)
    fail(ErrorKind::Runtime, "input '{}' expects {}, the file holds {}", g.inputs()[0]->name(),
         typeToString(want), typeToString(x.type()));
  return r;
}

// --plot: the numerical profile (fpga/Profile.h) drawn by the Python package's plot script
// (python/triad/plot.py, run on its own) with matplotlib from the project's venv (TRIAD_PYTHON
// overrides it, as for triad bench's peers).
void drawPlot(const nlohmann::json& profile, const std::string& out) {
  std::string python = "python3";
  if (const char* p = std::getenv("TRIAD_PYTHON"); p && *p)
    python = p;
  else if (fs::path venv = fs::path(TRIAD_SOURCE_DIR) / ".venv" / "bin" / "python";
           fs::exists(venv))
    python = venv.string();
  fs::path script = fs::path(TRIAD_SOURCE_DIR) / "python" / "triad" / "plot.py";
  if (const char* p = std::getenv("TRIAD_PLOT_SCRIPT"); p && *p) script = p;
  if (!fs::exists(script))
    fail(ErrorKind::Unsupported,
         "--plot needs the triad Python package's plot script, not found at '{}' (set "
         "TRIAD_PLOT_SCRIPT)",
         script.string());
  fs::path data = writeTempFile(out, profile.dump());
  int rc = 0;
  std::string log =
      runCapture(fmt::format("{} {} {} {} 2>&1", shellQuote(python), shellQuote(script.string()),
                             shellQuote(data.string()), shellQuote(out)),
                 &rc);
  std::error_code ec;
  fs::remove(data, ec);
  if (rc == 0) return;
  int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  if (code == 3)
    fail(ErrorKind::Unsupported,
         "--plot needs matplotlib, which Python '{}' lacks (pip install matplotlib into it, or "
         "set TRIAD_PYTHON to a Python that has it)",
         python);
  if (code == 126 || code == 127)
    fail(ErrorKind::Unsupported, "--plot needs Python: cannot run '{}' (set TRIAD_PYTHON)", python);
  fail(ErrorKind::Io, "--plot '{}': the plot script failed (exit {}): {}", out, code, log);
}

std::vector<int64_t> argmaxRows(const ir::Tensor& t) {
  int64_t cols = t.shape().back(), rows = t.numElements() / cols;
  std::vector<int64_t> r(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (t.getDouble(i * cols + c) > t.getDouble(i * cols + best)) best = c;
    r[size_t(i)] = best;
  }
  return r;
}

int runQuantize(const QuantizeOptions& o) {
  fpga::QuantConfig cfg =
      fpga::QuantConfig::fromCommandLine(o.config, o.defaultPrecision, o.precision);
  ir::Tensor x = readInput(o.input);
  if (x.dtype() != ir::DType::F32) x = x.castTo(ir::DType::F32);

  // Calibration ranges: from --calibrate (imported with its own batch), else from --input.
  fpga::ValueRanges ranges;
  if (!o.calibrate.empty()) {
    ir::Tensor c = readInput(o.calibrate);
    if (c.dtype() != ir::DType::F32) c = c.castTo(ir::DType::F32);
    frontend::ImportResult rc = loadFor(o, c, o.calibrate);
    ranges = fpga::observeRanges(rc.graph, std::span<const ir::Tensor>(&c, 1));
  }
  frontend::ImportResult r = loadFor(o, x, o.input);
  const ir::Graph& g = r.graph;
  if (o.calibrate.empty()) ranges = fpga::observeRanges(g, std::span<const ir::Tensor>(&x, 1));

  fpga::Emulator emu(g, cfg, ranges);
  fpga::EmulatorResult res = emu.run(std::span<const ir::Tensor>(&x, 1), true);
  if (!o.plot.empty())
    drawPlot(fpga::precisionProfile(g, emu, std::span<const ir::Tensor>(&x, 1)), o.plot);

  nlohmann::json j;
  j["model"] = o.model.model;
  j["config"] = o.config;
  j["input_format"] = fpga::formatToString(emu.inputQuant().format);
  j["layers"] = nlohmann::json::array();
  for (const fpga::LayerReport& l : res.layers)
    j["layers"].push_back({{"name", l.name},
                           {"op", l.op},
                           {"formats", l.formats},
                           {"max_abs_error", l.maxAbsError},
                           {"saturated", l.saturated},
                           {"wrapped", l.wrapped},
                           {"elements", l.elements}});

  if (o.report) {
    fmt::print("{:<16} {:<26} {:<58} {:>10} {:>7} {:>7}\n", "layer", "op", "formats", "max error",
               "sat", "wrap");
    for (const fpga::LayerReport& l : res.layers)
      fmt::print("{:<16} {:<26} {:<58} {:>10.3g} {:>7} {:>7}\n", terminalText(l.name),
                 terminalText(l.op), terminalText(l.formats), l.maxAbsError, l.saturated,
                 l.wrapped);
  }

  std::optional<ir::Tensor> labels;
  if (!o.labels.empty()) labels = readInput(o.labels);
  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < res.values.size(); ++i) {
    const ir::Tensor& q = res.values[i];
    const ir::Value* v = g.outputs()[i];
    nlohmann::json oj = {
        {"name", v->name()}, {"format", typeToString(res.raw[i].type())}, {"max_abs_error", 0.0}};
    double err = 0;
    for (int64_t k = 0; k < q.numElements(); ++k)
      err = std::max(err, std::fabs(q.getDouble(k) - res.floatRef[i].getDouble(k)));
    oj["max_abs_error"] = err;
    fmt::print("{} {} max |fixed - float| = {:.4g}\n", terminalText(v->name()),
               terminalText(typeToString(res.raw[i].type())), err);
    if (q.rank() >= 1 && q.shape().back() > 1) { // a classifier: compare top-1
      auto a = argmaxRows(q), b = argmaxRows(res.floatRef[i]);
      int64_t agree = 0;
      for (size_t k = 0; k < a.size(); ++k)
        agree += a[k] == b[k];
      double agreement = double(agree) / double(a.size());
      oj["top1_agreement"] = agreement;
      fmt::print("  top-1 agreement with float: {}/{} ({:.2f}%)\n", agree, a.size(),
                 100 * agreement);
      if (labels && i == 0) {
        if (labels->numElements() != int64_t(a.size()))
          fail(ErrorKind::Runtime, "--labels '{}' holds {} labels for {} samples", o.labels,
               labels->numElements(), a.size());
        int64_t okF = 0, okQ = 0;
        for (size_t k = 0; k < a.size(); ++k) {
          okQ += a[k] == labels->getInt(int64_t(k));
          okF += b[k] == labels->getInt(int64_t(k));
        }
        double accQ = double(okQ) / double(a.size()), accF = double(okF) / double(a.size());
        oj["accuracy_fixed"] = accQ;
        oj["accuracy_float"] = accF;
        fmt::print("  accuracy: fixed {:.4f}, float {:.4f} ({:+.2f} points)\n", accQ, accF,
                   100 * (accQ - accF));
      }
    }
    j["outputs"].push_back(oj);
  }
  if (!o.output.empty()) frontend::writeTensorFile(o.output, res.values[0], g.outputs()[0]->name());
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  return 0;
}

} // namespace

Action addQuantize(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Run a model in fixed point (the FPGA emulator) and report precision loss");
  o->model.add(*cmd);
  cmd->add_option("--config", o->config, "Precision config (JSON, see docs/fpga.md)")
      ->check(CLI::ExistingFile);
  addPrecisionOptions(*cmd, o->defaultPrecision, o->precision);
  cmd->add_option("--calibrate", o->calibrate,
                  "Calibration inputs (.npy/.pb) for \"auto\" precisions (default: --input)");
  cmd->add_option("-i,--input", o->input,
                  "Input tensor file (.npy or .pb); the model's dynamic dimensions (the "
                  "batch, dim_params) take its sizes unless --batch or --dim fix them")
      ->required();
  cmd->add_option("--labels", o->labels, "Class labels (.npy) to report top-1 accuracy");
  cmd->add_flag("--report", o->report, "Print the per-layer table");
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-o,--output", o->output, "Write the (dequantized) first output (.npy or .pb)");
  cmd->add_option("--plot", o->plot,
                  "Draw the numerical profile (per-layer value ranges against the formats, "
                  "overflows, error vs float) to FILE.png/.svg/.pdf (Python with matplotlib)");
  return [o] { return runQuantize(*o); };
}

} // namespace triad::cli
