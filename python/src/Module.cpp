// triad._triad: the extension module under the `triad` Python package (python/triad/,
// docs/python.md). It only calls the C++ libraries: import (frontend), the pass pipeline, the
// targets' compile and run, the FPGA emulator; the Python side shapes the results into the
// package's API. triad::Error becomes the triad.Error subclass of its kind
// (python/triad/errors.py). The GIL is released while the libraries work.
#include "python/src/Convert.h"

#include "bench/Bench.h"
#include "bench/PlanTargets.h"
#include "cpu/CpuTarget.h"
#include "fpga/Design.h"
#include "fpga/Emulator.h"
#include "fpga/FpgaTarget.h"
#include "fpga/Profile.h"
#include "frontend/Inspect.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuTarget.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Interpreter.h"
#include "ir/passes/Pass.h"
#include "sim/Synth.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <optional>
#include <variant>

namespace nb = nanobind;

namespace triad::python {

namespace {

using Imported = std::shared_ptr<const frontend::ImportResult>;

/// A progress callback from Python (None: no calls): progress(stage, fraction), called with the
/// GIL held (the libraries call it from the thread that released it).
class Progress {
public:
  Progress() = default;
  explicit Progress(nb::object f) : f_(std::move(f)) {}
  explicit operator bool() const { return f_.is_valid() && !f_.is_none(); }
  void operator()(const std::string& stage, double fraction) const {
    if (!*this) return;
    nb::gil_scoped_acquire locked;
    f_(stage, fraction);
  }
  /// Calls for steps [lo, hi] of a longer job: step `done` of `total` maps to lo + (hi - lo) *
  /// done / total.
  std::function<void(const std::string&, int64_t, int64_t)> span(const std::string& stage,
                                                                 double lo, double hi) const {
    if (!*this) return {};
    return [this, stage, lo, hi](const std::string& step, int64_t done, int64_t total) {
      (*this)(step.empty() ? stage : fmt::format("{}:{}", stage, step),
              lo + (hi - lo) * double(done) / double(std::max<int64_t>(total, 1)));
    };
  }

private:
  nb::object f_;
};

/// The shapes of arrays given for a model's inputs, in graph-input order.
std::vector<ir::Shape> shapesOf(const std::vector<InArray>& arrays) {
  std::vector<ir::Shape> out;
  for (const InArray& a : arrays) {
    ir::Shape s;
    for (size_t i = 0; i < a.ndim(); ++i)
      s.push_back(int64_t(a.shape(i)));
    out.push_back(std::move(s));
  }
  return out;
}

/// One model file with the options it is imported with (`batch` and `dims` fixed ahead of time;
/// the other dynamic dimensions are bound from the arrays each call brings).
struct Source {
  std::string path;
  frontend::ImportOptions options;
  frontend::DeclaredIo declared; // the inputs and outputs with `options` applied

  /// The sizes inputs of these shapes give to the dimensions `options` leaves open
  /// (frontend::bindDims: the CLI's errors for shapes that do not fit); empty `shapes`: none.
  frontend::DimBinding bind(const std::vector<ir::Shape>& shapes) const {
    if (shapes.empty()) return {};
    std::vector<frontend::InputShape> in;
    for (const ir::Shape& s : shapes)
      in.push_back({"", s, ""});
    nb::gil_scoped_release unlocked;
    return frontend::bindDims(path, in, options);
  }

  /// Imports (with the GIL released) with `binding` added to the options; `optimize` runs the
  /// default pass pipeline, as every compiled target and the FPGA flow do.
  Imported import(bool optimize, const frontend::DimBinding& binding = {}) const {
    nb::gil_scoped_release unlocked;
    frontend::ImportOptions o = frontend::withBinding(options, binding);
    auto r = std::make_shared<frontend::ImportResult>(frontend::importOnnxFile(path, o));
    r->binding = binding;
    if (optimize) ir::defaultPipeline().run(r->graph, {});
    return r;
  }
};

/// Per distinct set of input shapes, the binding they give and what was made for it (compiled
/// once per binding: shapes that bind the same sizes share it).
template <typename T> class BindingCache {
public:
  /// The entry for `shapes`, made by `make(binding)` the first time its binding is seen.
  T& get(const Source& src, const std::vector<ir::Shape>& shapes,
         const std::function<std::shared_ptr<T>(const frontend::DimBinding&)>& make) {
    if (auto it = byShapes_.find(shapes); it != byShapes_.end()) return *it->second;
    frontend::DimBinding b = src.bind(shapes);
    std::string key = b.toString();
    auto it = byBinding_.find(key);
    if (it == byBinding_.end()) it = byBinding_.emplace(key, make(b)).first;
    byShapes_.emplace(shapes, it->second);
    return *it->second;
  }
  /// The bindings made so far ("N=4, seq=7"; "" for none), in canonical order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [key, v] : byBinding_)
      k.push_back(key);
    return k;
  }
  const std::map<std::string, std::shared_ptr<T>>& entries() const { return byBinding_; }

private:
  std::map<std::vector<ir::Shape>, std::shared_ptr<T>> byShapes_;
  std::map<std::string, std::shared_ptr<T>> byBinding_;
};

/// [{name, dtype, shape}] of declared tensors: numbers, or names for open dimensions.
std::string declaredJson(const std::vector<frontend::DeclaredTensor>& ts) {
  nlohmann::json a = nlohmann::json::array();
  for (const frontend::DeclaredTensor& t : ts) {
    nlohmann::json shape = nlohmann::json::array();
    for (const auto& d : t.shape)
      std::visit([&](const auto& v) { shape.push_back(v); }, d);
    a.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", shape}});
  }
  return a.dump();
}

std::vector<ir::Tensor> toTensors(const std::vector<InArray>& arrays, const ir::Graph& g) {
  if (arrays.size() != g.inputs().size())
    fail(ErrorKind::Usage, "{} input array{} given; the model has {} input{}", arrays.size(),
         arrays.size() == 1 ? "" : "s", g.inputs().size(), g.inputs().size() == 1 ? "" : "s");
  std::vector<ir::Tensor> ts;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const ir::Value* v = g.inputs()[i];
    ts.push_back(toTensor(arrays[i], fmt::format("input '{}'", v->name())));
    if (ts.back().dtype() != v->type().dtype || ts.back().shape() != v->type().shape)
      fail(ErrorKind::Runtime, "input '{}' expects {}, got {}", v->name(), typeToString(v->type()),
           typeToString(ts.back().type()));
  }
  return ts;
}

nb::list toArrays(std::vector<ir::Tensor>&& ts) {
  nb::list out;
  for (ir::Tensor& t : ts)
    out.append(toArray(std::move(t)));
  return out;
}

std::string ioJson(const std::vector<ir::Value*>& vs) {
  nlohmann::json a = nlohmann::json::array();
  for (ir::Value* v : vs)
    a.push_back({{"name", v->name()},
                 {"dtype", ir::dtypeName(v->type().dtype)},
                 {"shape", v->type().shape}});
  return a.dump();
}

ir::TargetRegistry allTargets() {
  ir::TargetRegistry t;
  t.add(ir::makeInterpreterTarget());
  t.add(cpu::makeCpuTarget());
  t.add(gpu::makeGpuTarget());
  t.add(fpga::makeFpgaTarget());
  return t;
}

/// A model compiled for one target, once per binding of its open dimensions: the first run
/// with inputs of new shapes binds the dimensions from them (as ONNX Runtime does) and compiles
/// for that binding; later runs that bind the same sizes reuse it.
class Executable {
public:
  /// `optimize`: run the pass pipeline before compiling (every target but the interpreter).
  Executable(Source src, std::shared_ptr<ir::Target> t, ir::CompileSettings settings, bool optimize,
             nb::object progress)
      : src_(std::move(src)), target_(std::move(t)), settings_(settings), optimize_(optimize),
        progress_(std::move(progress)) {}

  struct Compiled {
    Imported r; // the graph it was compiled from (the executable may refer to it)
    std::unique_ptr<ir::Executable> exe;
  };

  /// Compiles for the sizes fixed ahead of time (when no input dimension is left open).
  void compileFixed() {
    current_ = &cache_.get(src_, {}, [&](const frontend::DimBinding& b) { return make(b); });
  }

  nb::list run(const std::vector<InArray>& arrays) {
    if (arrays.size() != src_.declared.inputs.size())
      fail(ErrorKind::Usage, "{} input array{} given; the model has {} input{}", arrays.size(),
           arrays.size() == 1 ? "" : "s", src_.declared.inputs.size(),
           src_.declared.inputs.size() == 1 ? "" : "s");
    Compiled& c =
        cache_.get(src_, shapesOf(arrays), [&](const frontend::DimBinding& b) { return make(b); });
    current_ = &c;
    std::vector<ir::Tensor> in = toTensors(arrays, c.r->graph);
    std::vector<ir::Tensor> out;
    {
      nb::gil_scoped_release unlocked;
      out = c.exe->run(in);
    }
    return toArrays(std::move(out));
  }
  void setProfiling(bool on) {
    profiling_ = on;
    for (const auto& [key, c] : cache_.entries())
      c->exe->setProfiling(on);
  }
  /// [(layer, kind, milliseconds, cycles)] accumulated since profiling was turned on, of the
  /// binding run last.
  std::vector<std::tuple<std::string, std::string, double, int64_t>> profile() const {
    std::vector<std::tuple<std::string, std::string, double, int64_t>> out;
    if (current_)
      for (const ir::LayerTime& l : current_->exe->profile())
        out.emplace_back(l.layer, l.kind, l.milliseconds, l.cycles);
    return out;
  }
  double modelledSeconds() const { return current_ ? current_->exe->modelledSeconds() : 0.0; }
  std::string target() const { return std::string(target_->name()); }
  /// The declared inputs (open dimensions by name).
  std::string inputs() const { return declaredJson(src_.declared.inputs); }
  /// The outputs of the binding run last, else as declared.
  std::string outputs() const {
    return current_ ? ioJson(current_->r->graph.outputs()) : declaredJson(src_.declared.outputs);
  }
  /// The bindings compiled so far ("N=4"; "" for the sizes fixed ahead of time).
  std::vector<std::string> bindings() const { return cache_.keys(); }
  int64_t compiles() const { return compiles_; }

private:
  std::shared_ptr<Compiled> make(const frontend::DimBinding& b) {
    Progress progress(progress_);
    std::string stage =
        b.empty() ? std::string("compile") : fmt::format("compile {}", b.toString());
    progress(stage, 0.0);
    auto c = std::make_shared<Compiled>();
    c->r = src_.import(optimize_, b);
    ir::CompileSettings s = settings_;
    s.progress = progress.span(stage, 0.05, 0.95);
    {
      nb::gil_scoped_release unlocked;
      c->exe = target_->compile(c->r->graph, s);
    }
    if (profiling_) c->exe->setProfiling(true);
    ++compiles_;
    progress(stage, 1.0);
    return c;
  }

  Source src_;
  std::shared_ptr<ir::Target> target_;
  ir::CompileSettings settings_;
  bool optimize_;
  nb::object progress_;
  BindingCache<Compiled> cache_;
  Compiled* current_ = nullptr;
  bool profiling_ = false;
  int64_t compiles_ = 0;
};

/// A model quantized with a precision config: the bit-accurate emulator, planned once per
/// binding of the open dimensions the inputs bring (value ranges for "auto" precisions come from
/// the calibration inputs).
class Quantized {
public:
  Quantized(Source src, fpga::QuantConfig cfg, fpga::ValueRanges ranges)
      : src_(std::move(src)), cfg_(std::move(cfg)), ranges_(std::move(ranges)) {}

  /// Dequantized outputs (float32) of the emulator.
  nb::list predict(const std::vector<InArray>& arrays) {
    Plan& p = planFor(arrays);
    std::vector<ir::Tensor> in = toTensors(arrays, p.r->graph);
    fpga::EmulatorResult res;
    {
      nb::gil_scoped_release unlocked;
      res = p.emu->run(in, false);
    }
    return toArrays(std::move(res.values));
  }

  /// Every layer's output, fixed (dequantized) and float (the interpreter on the same graph),
  /// with its report row: [(name, op, formats, out_format, fixed, float, saturated, wrapped,
  /// max_abs_error, elements)]; the first row is the graph input's quantization. Then the raw
  /// fixed outputs of the model.
  nb::tuple trace(const std::vector<InArray>& arrays) {
    Plan& p = planFor(arrays);
    const ir::Graph& g = p.r->graph;
    std::vector<ir::Tensor> in = toTensors(arrays, g);
    fpga::EmulatorResult res;
    std::vector<ir::Tensor> ref;
    {
      nb::gil_scoped_release unlocked;
      res = p.emu->run(in, true);
      ref = ir::Interpreter(g).runAll(in);
    }
    nb::list rows;
    const auto& infos = p.emu->layers();
    // Raw values as reals: the format's, or a QDQ grid's scale and offset (fpga::RealAffine).
    auto realValues = [&](const std::vector<double>& raw, const ir::Value* v,
                          const fpga::FixedFormat& f) {
      const fpga::RealAffine* a = p.emu->realAffine(v->id());
      int64_t plane = 1;
      for (size_t d = 2; d < v->type().shape.size(); ++d)
        plane *= v->type().shape[d];
      std::vector<double> q;
      for (size_t k = 0; k < raw.size(); ++k)
        q.push_back(a ? a->real(int64_t(raw[k]), f, int64_t(k), plane)
                      : fpga::dequantize(int64_t(raw[k]), f));
      return q;
    };
    for (size_t i = 0; i < res.layers.size(); ++i) {
      const fpga::LayerReport& l = res.layers[i];
      nb::object fixed = nb::none(), flt = nb::none();
      std::string outFormat;
      if (i == 0) { // the graph input, quantized
        outFormat = fpga::formatToString(p.emu->inputQuant().format);
        const ir::Value* v = g.inputs()[0];
        ir::Tensor x = in[0].castTo(ir::DType::F32);
        std::vector<double> raw;
        for (double d : x.toDoubleVector())
          raw.push_back(double(p.emu->quantizeInput(d)));
        std::vector<double> q = realValues(raw, v, p.emu->inputQuant().format);
        fixed = toArray(q, v->type().shape);
        flt = toArray(std::move(x));
      } else {
        const fpga::LayerInfo& info = infos[i - 1];
        outFormat = fpga::formatToString(info.outFormat);
        const ir::Value* v = g.values()[size_t(info.output)].get();
        std::vector<double> raw(res.layerRaw[i - 1].begin(), res.layerRaw[i - 1].end());
        std::vector<double> q = realValues(raw, v, info.outFormat);
        fixed = toArray(q, v->type().shape);
        if (size_t(info.output) < ref.size() && ref[size_t(info.output)].numElements() > 0)
          flt = toArray(ref[size_t(info.output)].castTo(ir::DType::F32));
      }
      rows.append(nb::make_tuple(l.name, l.op, l.formats, outFormat, fixed, flt, l.saturated,
                                 l.wrapped, l.maxAbsError, l.elements));
    }
    return nb::make_tuple(rows, toArrays(std::move(res.raw)));
  }

  /// The planned layers as JSON: name, op, folded nodes, formats per role, input and output
  /// formats with their value ranges, and the node's float constants (weights, bias) as lists.
  std::string layers() {
    Plan& p = planFor(std::vector<ir::Shape>{});
    const ir::Graph& g = p.r->graph;
    auto fmtJson = [](const fpga::FixedFormat& f) {
      return nlohmann::json{{"format", fpga::formatToString(f)},
                            {"width", f.width},
                            {"int_bits", f.intBits},
                            {"signed", f.isSigned},
                            {"min", fpga::minValue(f)},
                            {"max", fpga::maxValue(f)}};
    };
    std::map<std::string, const ir::Node*> byName;
    for (const auto& n : g.nodes())
      byName.emplace(n->name(), n.get());
    nlohmann::json a = nlohmann::json::array();
    for (const fpga::LayerInfo& l : p.emu->layers()) {
      nlohmann::json roles = nlohmann::json::object();
      for (int r = 0; r < fpga::kNumRoles; ++r)
        roles[std::string(fpga::toString(fpga::Role(r)))] =
            fmtJson(l.quant.roles[size_t(r)].format);
      nlohmann::json consts = nlohmann::json::array();
      if (auto it = byName.find(l.name); it != byName.end())
        for (const ir::Value* v : it->second->inputs())
          if (v && v->isConstant() && v->type().dtype == ir::DType::F32)
            consts.push_back({{"name", v->name()},
                              {"shape", v->type().shape},
                              {"values", v->constant().toDoubleVector()}});
      a.push_back({{"name", l.name},
                   {"op", l.op},
                   {"folded", l.folded},
                   {"formats", l.formats()},
                   {"uses_weights", l.usesWeights},
                   {"uses_accumulator", l.usesAcc},
                   {"pass_through", l.passThrough},
                   {"const_saturated", l.constSaturated},
                   {"roles", roles},
                   {"in", fmtJson(l.inFormat)},
                   {"out", fmtJson(l.outFormat)},
                   {"constants", consts}});
    }
    return a.dump();
  }

  std::string inputs() { return declaredJson(src_.declared.inputs); }
  /// The bindings planned so far ("N=4"; "" for the sizes fixed ahead of time).
  std::vector<std::string> bindings() const { return plans_.keys(); }

  /// Writes the Verilog design to `dir` (fpga/Design.h) and returns summary.json's text. With
  /// `arrays`: the design's batch is theirs and the expected outputs are written too. The
  /// config and calibration files are the ones the Python side saved in `dir`, for triad.sim.
  std::string writeVerilog(const std::string& dir, const std::vector<InArray>& arrays,
                           int64_t reuse, bool autoReuse,
                           const std::map<std::string, int64_t>& layerReuse, double clockMhz,
                           const std::string& configPath, const std::string& calibrationPath) {
    Plan& p = planFor(arrays);
    std::vector<ir::Tensor> in;
    if (!arrays.empty()) in = toTensors(arrays, p.r->graph);
    if (in.size() > 1)
      fail(ErrorKind::Unsupported, "the FPGA design streams one input (this model has {})",
           in.size());
    if (!(clockMhz > 0 && clockMhz <= 1000))
      fail(ErrorKind::Usage, "clock_mhz {}: expected a clock in (0, 1000] MHz", clockMhz);
    if (reuse < 1) fail(ErrorKind::Usage, "reuse {}: expected a positive whole number", reuse);
    fpga::VerilogOptions vo;
    vo.name = std::filesystem::path(src_.path).stem().string();
    vo.reuse = reuse;
    vo.autoReuse = autoReuse;
    vo.layerReuse = layerReuse;
    vo.clockMhz = clockMhz;
    fpga::DesignSource ds;
    ds.model = std::filesystem::absolute(src_.path).string();
    for (const auto& [name, v] : src_.options.dims) // as the CLI: the sizes fixed by name
      ds.dims.push_back(fmt::format("{}={}", name, v));
    ds.config = configPath;
    ds.calibration = calibrationPath;
    ir::Tensor x = in.empty() ? ir::Tensor() : in[0].castTo(ir::DType::F32);
    nb::gil_scoped_release unlocked;
    return fpga::writeDesign(p.r->graph, *p.emu, vo, dir,
                             std::filesystem::path(src_.path).filename().string(), ds,
                             in.empty() ? nullptr : &x)
        .dump();
  }

  /// The numerical profile on `arrays` (fpga/Profile.h) as JSON.
  std::string profile(const std::vector<InArray>& arrays, nb::object progressFn) {
    Progress progress(std::move(progressFn));
    progress("profile", 0.0);
    Plan& p = planFor(arrays);
    std::vector<ir::Tensor> in = toTensors(arrays, p.r->graph);
    auto step = progress.span("profile", 0.05, 0.95);
    std::string out;
    {
      nb::gil_scoped_release unlocked;
      out = fpga::precisionProfile(p.r->graph, *p.emu, in, step).dump();
    }
    progress("profile", 1.0);
    return out;
  }

private:
  struct Plan {
    Imported r;
    std::unique_ptr<fpga::Emulator> emu;
  };
  Plan& planFor(const std::vector<InArray>& arrays) {
    if (!arrays.empty() && arrays.size() != src_.declared.inputs.size())
      fail(ErrorKind::Usage, "{} input array{} given; the model has {} input{}", arrays.size(),
           arrays.size() == 1 ? "" : "s", src_.declared.inputs.size(),
           src_.declared.inputs.size() == 1 ? "" : "s");
    return planFor(shapesOf(arrays));
  }
  /// The graph imported with the binding of these input shapes (none: the sizes fixed ahead of
  /// time, open first dimensions 1) and its emulator, made once per binding.
  Plan& planFor(const std::vector<ir::Shape>& shapes) {
    return plans_.get(src_, shapes, [&](const frontend::DimBinding& b) {
      auto p = std::make_shared<Plan>();
      p->r = src_.import(true, b);
      nb::gil_scoped_release unlocked;
      p->emu = std::make_unique<fpga::Emulator>(p->r->graph, cfg_, ranges_);
      return p;
    });
  }

  Source src_;
  fpga::QuantConfig cfg_;
  fpga::ValueRanges ranges_;
  BindingCache<Plan> plans_;
};

class Model {
public:
  explicit Model(Source src) : src_(std::move(src)) {
    // The graph as imported, every open first dimension 1 (as `triad inspect` without --batch).
    // A model with other open dimensions imports only once they are bound from the data.
    try {
      r_ = src_.import(false);
    } catch (const Error& e) {
      bool openInside = false; // an open dimension past the first
      for (const frontend::DeclaredTensor& t : src_.declared.inputs)
        for (size_t i = 1; i < t.shape.size(); ++i)
          openInside = openInside || std::holds_alternative<std::string>(t.shape[i]);
      if (e.kind() != ErrorKind::Unsupported || !openInside ||
          std::string_view(e.what()).find("is dynamic") == std::string_view::npos)
        throw;
      unbound_ = e.what();
    }
  }

  /// `triad inspect --json`'s report; dimensions left open are shown by name in the inputs and
  /// outputs (the layers are those of the import with open first dimensions 1).
  std::string inspect() const {
    nlohmann::json j = frontend::inspectModel(graph(), src_.path, allTargets());
    if (src_.declared.open()) {
      j["inputs"] = nlohmann::json::parse(inputs());
      j["outputs"] = nlohmann::json::parse(outputs());
    }
    return j.dump();
  }
  std::string inputs() const {
    return src_.declared.open() ? declaredJson(src_.declared.inputs)
                                : ioJson(graph().graph.inputs());
  }
  std::string outputs() const {
    if (!src_.declared.open()) return ioJson(graph().graph.outputs());
    bool shaped = true;
    for (const frontend::DeclaredTensor& t : src_.declared.outputs)
      shaped = shaped && t.hasShape;
    return shaped || !r_ ? declaredJson(src_.declared.outputs) : ioJson(r_->graph.outputs());
  }
  std::vector<std::string> warnings() const {
    return r_ ? r_->warnings : std::vector<std::string>{};
  }
  std::optional<int64_t> batch() const { return src_.options.batch; }
  /// Whether some input dimension is left open (bound from the arrays of each run).
  bool dynamic() const { return src_.declared.open(); }

  Executable compile(const std::string& target, int threads, const std::string& device,
                     bool fpgaRtl, nb::object progress) const {
    std::shared_ptr<ir::Target> t;
    if (target == "interp") {
      t = ir::makeInterpreterTarget();
    } else if (target == "cpu") {
      t = cpu::makeCpuTarget();
    } else if (target == "gpu") {
      gpu::GpuOptions go;
      go.device = device;
      t = gpu::makeGpuTarget(go);
    } else if (target == "fpga") {
      fpga::FpgaTargetOptions fo;
      fo.verilate = fpgaRtl;
      t = fpga::makeFpgaTarget(fo);
    } else {
      fail(ErrorKind::Usage, "target '{}' is not available (available: {})", target,
           allTargets().names());
    }
    if (!device.empty() && target != "gpu")
      fail(ErrorKind::Usage, "device applies to the gpu target, not '{}'", target);
    if (fpgaRtl && target != "fpga")
      fail(ErrorKind::Usage, "fpga_rtl applies to the fpga target, not '{}'", target);
    // The interpreter runs the graph as imported; compiled targets after the pass pipeline (as
    // `triad run` does).
    ir::CompileSettings s;
    s.threads = threads;
    Executable e(src_, std::move(t), s, target != "interp", std::move(progress));
    // With every dimension fixed ahead of time, compiled now; else on the first run, per binding.
    if (!src_.declared.open()) e.compileFixed();
    return e;
  }

  /// The emulator with a precision config (JSON text, docs/fpga.md's schema); value ranges for
  /// "auto" precisions from `calibration` (graph inputs; none: "auto" keeps default integer bits).
  Quantized quantize(const std::string& configJson, const std::vector<InArray>& calibration,
                     nb::object progressFn) const {
    Progress progress(std::move(progressFn));
    progress("quantize", 0.0);
    fpga::QuantConfig cfg = fpga::QuantConfig::fromJson(configJson, "config");
    fpga::ValueRanges ranges;
    if (!calibration.empty()) {
      Imported rc = src_.import(true, src_.bind(shapesOf(calibration)));
      std::vector<ir::Tensor> in = toTensors(calibration, rc->graph);
      auto step = progress.span("quantize", 0.05, 0.95);
      nb::gil_scoped_release unlocked;
      ranges = fpga::observeRanges(rc->graph, in, step);
    }
    progress("quantize", 1.0);
    return Quantized(src_, std::move(cfg), std::move(ranges));
  }

  /// The emulator's layers under the built-in defaults: [(name, op, uses_weights, pass_through)],
  /// for a config template (triad.fpga.config).
  std::vector<std::tuple<std::string, std::string, bool, bool>> fpgaLayers() const {
    Imported r = src_.import(true);
    nb::gil_scoped_release unlocked;
    fpga::Emulator emu(r->graph, fpga::QuantConfig{}, fpga::ValueRanges{});
    std::vector<std::tuple<std::string, std::string, bool, bool>> out;
    for (const fpga::LayerInfo& l : emu.layers())
      out.emplace_back(l.name, l.op, l.usesWeights, l.passThrough);
    return out;
  }

private:
  const frontend::ImportResult& graph() const {
    if (!r_) throw Error(ErrorKind::Unsupported, unbound_);
    return *r_;
  }

  Source src_;
  Imported r_;
  std::string unbound_; // why the model does not import before its dimensions are bound
};

Model load(const std::string& path, std::optional<int64_t> batch,
           const std::map<std::string, int64_t>& dims) {
  if (batch && *batch < 1)
    fail(ErrorKind::Usage, "batch {}: expected a positive whole number", *batch);
  Source s;
  s.path = path;
  s.options.batch = batch;
  for (const auto& [name, v] : dims) {
    if (v < 1) fail(ErrorKind::Usage, "dims['{}'] = {}: expected a positive whole number", name, v);
    s.options.dims[name] = v;
  }
  {
    nb::gil_scoped_release unlocked;
    s.declared = frontend::declaredIo(path, s.options);
  }
  return Model(std::move(s));
}

/// Simulates a design folder on `x` (fpga/Design.h): (report JSON text, the RTL's outputs);
/// a deadlock raises the run-time error `triad sim` exits with.
nb::tuple simulate(const std::string& dir, const InArray& x, uint64_t seed,
                   const std::string& trace, nb::object progressFn) {
  Progress progress(std::move(progressFn));
  progress("sim", 0.0);
  ir::Tensor t = toTensor(x, "the inputs").castTo(ir::DType::F32);
  fpga::DesignSim d;
  {
    auto step = progress.span("sim", 0.0, 1.0);
    nb::gil_scoped_release unlocked;
    d = fpga::simulateDesign(dir, t, "the inputs", seed, trace, step);
  }
  progress("sim", 1.0);
  if (d.report.timeout) fail(ErrorKind::Runtime, "{}", fpga::deadlockMessage(d));
  return nb::make_tuple(fpga::simReportJson(d, seed).dump(), toArray(fpga::simOutputs(d)));
}

/// Yosys on a design folder: `triad synth --json`'s report as JSON text.
std::string synthesize(const std::string& dir, const std::string& family, int jobs, bool pnr,
                       const std::string& device) {
  sim::SynthOptions o;
  o.family = family;
  o.jobs = jobs;
  o.pnr = pnr;
  o.device = device;
  nb::gil_scoped_release unlocked;
  return sim::synthReportJson(sim::synthesize(dir, o)).dump();
}

/// `triad bench` (bench/Bench.h) with `o`; returns the report.json written to o.outDir.
std::string benchmark(bench::BenchOptions o) {
  ir::TargetRegistry targets = allTargets();
  bench::checkOptions(o, targets);
  bench::setMeasuredPlanCosts(o);
  int rc = 0;
  {
    nb::gil_scoped_release unlocked;
    rc = bench::runBench(o, targets);
  }
  if (rc != 0)
    fail(ErrorKind::Runtime, "the benchmark of '{}' was interrupted (exit {})", o.model, rc);
  return frontend::readFile(o.outDir / "report.json");
}

/// Raises the triad.errors class of `kind` (Python side) with the message.
void raise(ErrorKind kind, const char* message) {
  nb::object errors = nb::module_::import_("triad.errors");
  // Messages name model elements: no terminal control sequence of a model reaches a traceback.
  nb::object exc =
      errors.attr("_make")(std::string(errorKindName(kind)), escape::printableLines(message));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

} // namespace

} // namespace triad::python

NB_MODULE(_triad, m) {
  using namespace triad;
  using namespace triad::python;
  m.doc() = "The C++ side of the triad package (use `import triad`).";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e.kind(), e.what());
    } catch (const std::bad_alloc&) {
      raise(ErrorKind::Resource,
            "out of memory (the machine or its cgroup has less than the run needs)");
    } catch (const std::filesystem::filesystem_error& e) {
      raise(ErrorKind::Io, e.what());
    }
  });

  nb::class_<Executable>(m, "Executable")
      .def("run", &Executable::run, nb::arg("inputs"))
      .def("set_profiling", &Executable::setProfiling, nb::arg("on"))
      .def("profile", &Executable::profile)
      .def("modelled_seconds", &Executable::modelledSeconds)
      .def_prop_ro("target", &Executable::target)
      .def("inputs", &Executable::inputs)
      .def("outputs", &Executable::outputs)
      .def("bindings", &Executable::bindings)
      .def("compiles", &Executable::compiles);

  nb::class_<Quantized>(m, "Quantized")
      .def("predict", &Quantized::predict, nb::arg("inputs"))
      .def("trace", &Quantized::trace, nb::arg("inputs"))
      .def("layers", &Quantized::layers)
      .def("profile", &Quantized::profile, nb::arg("inputs"), nb::arg("progress").none())
      .def("bindings", &Quantized::bindings)
      .def("write_verilog", &Quantized::writeVerilog, nb::arg("dir"), nb::arg("inputs"),
           nb::arg("reuse"), nb::arg("auto_reuse"), nb::arg("layer_reuse"), nb::arg("clock_mhz"),
           nb::arg("config_path"), nb::arg("calibration_path"))
      .def("inputs", &Quantized::inputs);

  nb::class_<Model>(m, "Model")
      .def("inspect", &Model::inspect)
      .def("inputs", &Model::inputs)
      .def("outputs", &Model::outputs)
      .def("warnings", &Model::warnings)
      .def_prop_ro("batch", &Model::batch)
      .def_prop_ro("dynamic", &Model::dynamic)
      .def("compile", &Model::compile, nb::arg("target"), nb::arg("threads"), nb::arg("device"),
           nb::arg("fpga_rtl"), nb::arg("progress").none())
      .def("quantize", &Model::quantize, nb::arg("config"), nb::arg("calibration"),
           nb::arg("progress").none())
      .def("fpga_layers", &Model::fpgaLayers);

  m.def("load", &load, nb::arg("path"), nb::arg("batch").none(), nb::arg("dims"));
  nb::class_<bench::BenchOptions>(m, "BenchOptions")
      .def(nb::init<>())
      .def_rw("model", &bench::BenchOptions::model)
      .def_rw("targets", &bench::BenchOptions::targets)
      .def_rw("batches", &bench::BenchOptions::batches)
      .def_rw("data", &bench::BenchOptions::data)
      .def_rw("labels", &bench::BenchOptions::labels)
      .def_rw("peers", &bench::BenchOptions::peers)
      .def_rw("repeat", &bench::BenchOptions::repeat)
      .def_rw("warmup", &bench::BenchOptions::warmup)
      .def_rw("rounds", &bench::BenchOptions::rounds)
      .def_rw("threads", &bench::BenchOptions::threads)
      .def_rw("fpga_part", &bench::BenchOptions::fpgaPart)
      .def_rw("clock_mhz", &bench::BenchOptions::clockMhz)
      .def_rw("reuse", &bench::BenchOptions::reuse)
      .def_rw("precision", &bench::BenchOptions::precision)
      .def_rw("fpga_rtl", &bench::BenchOptions::fpgaRtl)
      .def_rw("timeout_s", &bench::BenchOptions::timeoutS)
      .def_rw("seed", &bench::BenchOptions::seed)
      .def_rw("out_dir", &bench::BenchOptions::outDir)
      .def_rw("db", &bench::BenchOptions::db)
      .def_rw("no_db", &bench::BenchOptions::noDb)
      .def_rw("command", &bench::BenchOptions::command);
  m.def("bench", &benchmark, nb::arg("options"));
  m.def("simulate", &simulate, nb::arg("dir"), nb::arg("x"), nb::arg("seed"), nb::arg("trace"),
        nb::arg("progress").none());
  m.def("synthesize", &synthesize, nb::arg("dir"), nb::arg("family"), nb::arg("jobs"),
        nb::arg("pnr"), nb::arg("device"));
  m.def("memory_limit", &ir::memoryLimit);
  m.def("set_memory_limit", &ir::setMemoryLimit, nb::arg("bytes"));
  m.def("error_kinds", [] {
    std::vector<std::string> k;
    for (ErrorKind e :
         {ErrorKind::Usage, ErrorKind::Io, ErrorKind::InvalidModel, ErrorKind::Unsupported,
          ErrorKind::Runtime, ErrorKind::Resource, ErrorKind::Internal})
      k.emplace_back(errorKindName(e));
    return k;
  });
}
