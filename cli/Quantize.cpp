// triad quantize: run a model through the bit-accurate fixed-point emulator (the FPGA target's
// golden model) and report where precision is lost; with --format qdq, write an int8 QDQ copy of
// the model made by ONNX Runtime's post-training quantizer (python/triad/qdq.py) and report its
// accuracy against the float model on the CPU target.
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/AutoPrecision.h"
#include "fpga/Design.h"
#include "fpga/Emulator.h"
#include "fpga/Profile.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/QdqQuantizer.h"
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
  // --auto: the narrowest widths within --budget, written to --write-config
  bool autoPrecision = false;
  double budget = 0.5;
  std::string writeConfig;
  // --format qdq
  std::string format = "fixed", method = "minmax", activations = "uint8", target = "cpu";
  bool perTensor = false;
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
  m.streamBatch = true; // the samples stream through a design of a fixed batch
  frontend::ImportResult r = m.load(/*optimizeAnyway=*/true); // the FPGA path runs the passes
  const ir::Graph& g = r.graph;
  if (g.inputs().size() != 1)
    fail(ErrorKind::Unsupported, "{}: triad quantize takes models with one input (this has {})",
         o.model.model, g.inputs().size());
  const ir::TensorType& want = g.inputs()[0]->type();
  if (x.shape() != want.shape && !fpga::streamChunks(g, std::span<const ir::Tensor>(&x, 1)))
    fail(ErrorKind::Runtime, "input '{}' expects {}, the file holds {}", g.inputs()[0]->name(),
         typeToString(want), typeToString(x.type()));
  return r;
}

// --plot: the numerical profile (fpga/Profile.h) drawn by the Python package's plot script
// (python/triad/plot.py, run on its own) with matplotlib from the project's venv (TRIAD_PYTHON
// overrides it, as for triad bench's peers).
void drawPlot(const nlohmann::json& profile, const std::string& out) {
  std::string python = projectPython(TRIAD_SOURCE_DIR, {".venv"}, "python3");
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

/// Compares an output `q` (of the `kind` model: "fixed", "int8") with the float one `f` into
/// `oj`, printing as it goes: max |q - f|, and for classifiers the top-1 agreement and, with
/// `labels` (read from `labelsPath`), both accuracies.
void compareWithFloat(const ir::Tensor& q, const ir::Tensor& f, const std::string& kind,
                      const std::optional<ir::Tensor>& labels, const std::string& labelsPath,
                      nlohmann::json& oj) {
  double err = 0;
  for (int64_t k = 0; k < q.numElements(); ++k)
    err = std::max(err, std::fabs(q.getDouble(k) - f.getDouble(k)));
  oj["max_abs_error"] = err;
  fmt::print("  max |{} - float| = {:.4g}\n", kind, err);
  if (q.rank() < 1 || q.shape().back() <= 1) return; // not a classifier
  auto a = fpga::argmaxRows(q), b = fpga::argmaxRows(f);
  int64_t agree = 0;
  for (size_t k = 0; k < a.size(); ++k)
    agree += a[k] == b[k];
  double agreement = double(agree) / double(a.size());
  oj["top1_agreement"] = agreement;
  fmt::print("  top-1 agreement with float: {}/{} ({:.2f}%)\n", agree, a.size(), 100 * agreement);
  if (!labels) return;
  if (labels->numElements() != int64_t(a.size()))
    fail(ErrorKind::Runtime, "--labels '{}' holds {} labels for {} samples", labelsPath,
         labels->numElements(), a.size());
  int64_t okF = 0, okQ = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    okQ += a[k] == labels->getInt(int64_t(k));
    okF += b[k] == labels->getInt(int64_t(k));
  }
  double accQ = double(okQ) / double(a.size()), accF = double(okF) / double(a.size());
  oj["accuracy_" + kind] = accQ;
  oj["accuracy_float"] = accF;
  fmt::print("  accuracy: {} {:.4f}, float {:.4f} ({:+.2f} points)\n", kind, accQ, accF,
             100 * (accQ - accF));
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
    nlohmann::json oj = {{"name", v->name()}, {"format", typeToString(res.raw[i].type())}};
    fmt::print("{} {}\n", terminalText(v->name()), terminalText(typeToString(res.raw[i].type())));
    compareWithFloat(q, res.floatRef[i], "fixed", i == 0 ? labels : std::nullopt, o.labels, oj);
    j["outputs"].push_back(oj);
  }
  if (!o.output.empty()) frontend::writeTensorFile(o.output, res.values[0], g.outputs()[0]->name());
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  return 0;
}

// The design's resource estimate (reuse 1, multipliers, 200 MHz) with a config; nullopt when
// the model has no RTL.
std::optional<ir::Resources> designEstimate(const ir::Graph& g, const nlohmann::json& config,
                                            const fpga::ValueRanges& ranges) {
  try {
    fpga::Emulator emu(g, fpga::QuantConfig::fromJson(config.dump(), "config"), ranges);
    fpga::VerilogOptions vo;
    vo.clockMhz = 200;
    return fpga::emitVerilog(g, emu, vo).resources();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// --auto: the search of fpga/AutoPrecision.h, its config written to --write-config, and the
// bits, accuracy and resources beside fixed<16,6> everywhere.
int runAutoPrecision(const QuantizeOptions& o) {
  if (!o.config.empty() || !o.precision.empty() || !o.defaultPrecision.empty())
    fail(ErrorKind::Usage, "--auto chooses the precisions: drop --config, --precision and "
                           "--default-precision");
  if (o.writeConfig.empty()) fail(ErrorKind::Usage, "--auto needs --write-config FILE");
  ir::Tensor x = readInput(o.input);
  if (x.dtype() != ir::DType::F32) x = x.castTo(ir::DType::F32);
  frontend::ImportResult r = loadFor(o, x, o.input);
  const ir::Graph& g = r.graph;
  fpga::AutoPrecisionOptions ao;
  ao.budget = o.budget;
  if (!o.labels.empty()) {
    ir::Tensor l = readInput(o.labels);
    std::vector<int64_t> v;
    for (int64_t i = 0; i < l.numElements(); ++i)
      v.push_back(l.getInt(i));
    ao.labels = std::move(v);
  }
  const fpga::ValueRanges ranges = fpga::observeRanges(g, std::span<const ir::Tensor>(&x, 1));
  fpga::AutoPrecisionResult a = fpga::autoPrecision(g, x, ranges, ao);
  frontend::writeFileAtomic(o.writeConfig, a.config.dump(2) + "\n");
  const bool top1 = ao.labels.has_value();
  fmt::print("automatic precision within {} {}: {} knobs, {} emulator runs -> {}\n", o.budget,
             top1 ? "points of top-1" : "relative output error", a.knobs.size(), a.evaluations,
             o.writeConfig);
  for (const fpga::PrecisionKnob& k : a.knobs)
    fmt::print("  {:<28} {:<7} fixed<{},auto>\n", terminalText(k.layer), k.role, k.width);
  auto show = [&](const char* what, const fpga::PrecisionScore& s) {
    if (top1)
      fmt::print("  {}: top-1 {:.4f} ({:+.2f} points from float {:.4f}), relative error {:.4g}\n",
                 what, s.accuracy, -s.metric, a.floatAccuracy, s.relError);
    else
      fmt::print("  {}: relative error {:.4g}\n", what, s.relError);
  };
  show("fixed<16,6> everywhere", a.baseline);
  show("automatic", a.result);
  fmt::print("  weight bits {} -> {} ({:.0f}% saved), activation bits per sample {} -> {}\n",
             a.weightBits16, a.weightBits,
             a.weightBits16 > 0
                 ? 100.0 * double(a.weightBits16 - a.weightBits) / double(a.weightBits16)
                 : 0.0,
             a.activationBits16, a.activationBits);
  nlohmann::json j = {
      {"model", o.model.model},
      {"budget", o.budget},
      {"metric", top1 ? "top1_points" : "relative_error"},
      {"config", a.config},
      {"evaluations", a.evaluations},
      {"weight_bits", {{"fixed16", a.weightBits16}, {"auto", a.weightBits}}},
      {"activation_bits", {{"fixed16", a.activationBits16}, {"auto", a.activationBits}}}};
  auto scoreJson = [&](const fpga::PrecisionScore& s) {
    nlohmann::json sj = {{"relative_error", s.relError}};
    if (top1) sj["accuracy"] = s.accuracy;
    return sj;
  };
  j["baseline"] = scoreJson(a.baseline);
  j["auto"] = scoreJson(a.result);
  if (top1) j["float_accuracy"] = a.floatAccuracy;
  j["knobs"] = nlohmann::json::array();
  for (const fpga::PrecisionKnob& k : a.knobs)
    j["knobs"].push_back({{"layer", k.layer}, {"role", k.role}, {"width", k.width}});
  auto base = designEstimate(g, nlohmann::json::object(), ranges),
       tuned = designEstimate(g, a.config, ranges);
  if (base && tuned) {
    fmt::print("  design at reuse 1 (estimate): LUT {:.0f} -> {:.0f}, FF {:.0f} -> {:.0f}, DSP "
               "{:.0f} -> {:.0f}, RAMB18 {:.0f} -> {:.0f}\n",
               base->lut, tuned->lut, base->ff, tuned->ff, base->dsp, tuned->dsp, base->bram18,
               tuned->bram18);
    j["resources"] = {{"fixed16", fpga::resourcesJson(*base)},
                      {"auto", fpga::resourcesJson(*tuned)}};
  }
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  return 0;
}

/// The model's outputs on `target` for input `x` (read from `path`), the model at `model`.
std::vector<ir::Tensor> runModel(const QuantizeOptions& o, const ir::Target& target,
                                 const std::string& model, const ir::Tensor& x,
                                 const std::string& path) {
  QuantizeOptions m = o;
  m.model.model = model;
  frontend::ImportResult r = loadFor(m, x, path);
  return target.compile(r.graph)->run(std::span<const ir::Tensor>(&x, 1));
}

// --format qdq: ONNX Runtime's quantize_static (run by python/triad/qdq.py in the peers' Python,
// which has the newest onnxruntime and onnx) writes the QDQ model; then both models run on the
// target (the CPU by default: the QDQ one on its integer kernels) on --input, else the
// calibration data, and the outputs are compared.
int runQuantizeQdq(const QuantizeOptions& o, const ir::TargetRegistry& targets) {
  if (o.calibrate.empty())
    fail(ErrorKind::Usage, "--format qdq needs --calibrate (inputs to calibrate the ranges on)");
  if (o.output.empty() || fs::path(o.output).extension() != ".onnx")
    fail(ErrorKind::Usage, "--format qdq writes a model: -o FILE.onnx");
  if (!o.config.empty() || !o.precision.empty() || !o.defaultPrecision.empty() || !o.plot.empty())
    fail(ErrorKind::Usage, "--config, --precision and --plot are for --format fixed");
  const ir::Target* target = targets.find(o.target);
  if (!target)
    fail(ErrorKind::Usage, "--target '{}' is not available (available: {})", o.target,
         targets.names());
  // The model and the calibration data are checked here first, so that their errors name them
  // as every other command does (the quantizer's own would be Python tracebacks).
  {
    frontend::ImportResult r = o.model.load();
    ir::Tensor c = readInput(o.calibrate);
    if (r.graph.inputs().size() != 1)
      fail(ErrorKind::Unsupported, "{}: --format qdq takes models with one input (this has {})",
           o.model.model, r.graph.inputs().size());
    const ir::TensorType& want = r.graph.inputs()[0]->type();
    if (c.rank() != want.rank())
      fail(ErrorKind::Runtime, "--calibrate '{}' holds {}; input '{}' is {}", o.calibrate,
           typeToString(c.type()), r.graph.inputs()[0]->name(), typeToString(want));
  }
  frontend::QdqOptions qo;
  qo.method = o.method;
  qo.activations = o.activations;
  qo.perTensor = o.perTensor;
  nlohmann::json summary =
      frontend::quantizeToQdq(TRIAD_SOURCE_DIR, o.model.model, o.calibrate, o.output, qo);
  std::string ops;
  for (const auto& [k, v] : summary["ops"].items())
    ops += fmt::format("{}{} {}", ops.empty() ? "" : ", ", k, v.get<int>());
  fmt::print("wrote {} ({} calibration batches of {}, {}; {} int8 weights, {} activations): {}\n",
             o.output, summary["calibration_batches"].get<int>(),
             summary["rows_per_batch"].get<int>(), o.method,
             o.perTensor ? "per-tensor" : "per-channel", o.activations, terminalText(ops));

  // Accuracy of the QDQ model against the float model.
  const std::string& path = o.input.empty() ? o.calibrate : o.input;
  ir::Tensor x = readInput(path);
  if (x.dtype() != ir::DType::F32) x = x.castTo(ir::DType::F32);
  std::vector<ir::Tensor> f = runModel(o, *target, o.model.model, x, path);
  std::vector<ir::Tensor> q = runModel(o, *target, o.output, x, path);
  nlohmann::json j = {{"model", o.model.model}, {"qdq_model", o.output},
                      {"quantizer", summary},   {"target", o.target},
                      {"data", path},           {"outputs", nlohmann::json::array()}};
  std::optional<ir::Tensor> labels;
  if (!o.labels.empty()) labels = readInput(o.labels);
  for (size_t i = 0; i < f.size() && i < q.size(); ++i) {
    nlohmann::json oj;
    fmt::print("output {} on {} ({}):\n", i, o.target, path);
    compareWithFloat(q[i], f[i], "int8", i == 0 ? labels : std::nullopt, o.labels, oj);
    j["outputs"].push_back(oj);
  }
  if (!o.json.empty()) frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  return 0;
}

} // namespace

Action addQuantize(CLI::App& app, const ir::TargetRegistry& targets) {
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
                  "batch, dim_params) take its sizes unless --batch or --dim fix them (required "
                  "for --format fixed; --format qdq evaluates on it, default --calibrate)");
  cmd->add_option("--format", o->format,
                  "fixed: the FPGA's fixed-point emulation (default); qdq: write an int8 QDQ "
                  "ONNX model (-o FILE.onnx) calibrated on --calibrate, with ONNX Runtime's "
                  "quantizer, and report its accuracy against float")
      ->check(CLI::IsMember({"fixed", "qdq"}));
  cmd->add_option("--calibration-method", o->method, "qdq: minmax (default), percentile, entropy")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd->add_option("--activations", o->activations, "qdq: uint8 (default) or int8 activations")
      ->check(CLI::IsMember({"uint8", "int8"}));
  cmd->add_flag("--per-tensor", o->perTensor, "qdq: per-tensor weights (default: per channel)");
  cmd->add_option("--target", o->target,
                  "qdq: where both models run for the accuracy report (default cpu)");
  cmd->add_option("--labels", o->labels, "Class labels (.npy) to report top-1 accuracy");
  cmd->add_flag("--report", o->report, "Print the per-layer table");
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-o,--output", o->output,
                  "Write the (dequantized) first output (.npy or .pb); with --format qdq, the "
                  "QDQ model (.onnx)");
  cmd->add_flag("--auto", o->autoPrecision,
                "Search the narrowest fixed<W,auto> per layer (input, weights, results) whose "
                "outputs stay within --budget of float on --input, with the emulator; writes the "
                "config to --write-config");
  cmd->add_option("--budget", o->budget,
                  "--auto: the allowed loss, in points of top-1 with --labels, else a relative "
                  "output error (max |fixed - float| / max |float|)")
      ->capture_default_str();
  cmd->add_option("--write-config", o->writeConfig, "--auto: the precision config to write");
  cmd->add_option("--plot", o->plot,
                  "Draw the numerical profile (per-layer value ranges against the formats, "
                  "overflows, error vs float) to FILE.png/.svg/.pdf (Python with matplotlib)");
  return [o, &targets] {
    if (o->format == "qdq") return runQuantizeQdq(*o, targets);
    if (o->input.empty()) fail(ErrorKind::Usage, "--input is required (--format fixed)");
    if (o->autoPrecision) return runAutoPrecision(*o);
    return runQuantize(*o);
  };
}

} // namespace triad::cli
