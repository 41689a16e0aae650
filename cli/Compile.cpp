// triad compile --target fpga: the Verilog design, its Verilator testbench and the emulator's
// expected outputs; triad sim: runs that design in Verilator against them (docs/fpga.md).
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/TensorIO.h"
#include "ir/Files.h"
#include "sim/Simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace triad::cli {

namespace fs = std::filesystem;

namespace {

struct CompileOptions {
  ModelOptions model;
  std::string target = "fpga", config, input, outdir, until, defaultPrecision;
  std::vector<std::string> precision, fifoDepth;
  std::string reuse = "1";
  double clockMhz = 200;
  int shiftAddDigits = 2;
};

ir::Tensor readF32(const std::string& path) {
  ir::Tensor x = frontend::readTensorFile(path).tensor;
  return x.dtype() == ir::DType::F32 ? x : x.castTo(ir::DType::F32);
}

ir::Tensor rawTensor(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  return ir::Tensor::fromVector<int64_t>({rows, cols}, v);
}

nlohmann::json formatJson(const fpga::FixedFormat& f) {
  return {{"format", fpga::formatToString(f)}, {"width", f.width}, {"frac", f.fracBits()}};
}

nlohmann::json resourcesJson(const ir::Resources& r) {
  return {{"lut", std::lround(r.lut)},
          {"ff", std::lround(r.ff)},
          {"dsp", std::lround(r.dsp)},
          {"bram18", std::lround(r.bram18)}};
}

int runCompile(CompileOptions o) {
  if (o.target == "cpu") return compileCpu(o.model, o.outdir);
  if (o.target != "fpga")
    fail(ErrorKind::Usage, "--target '{}': triad compile supports 'fpga' and 'cpu'", o.target);
  fpga::QuantConfig cfg =
      fpga::QuantConfig::fromCommandLine(o.config, o.defaultPrecision, o.precision);
  std::optional<ir::Tensor> x;
  if (!o.input.empty()) {
    x = readF32(o.input);
    o.model.inputShapes = {{"", x->shape(), o.input}};
  }
  frontend::ImportResult r = o.model.load(/*optimizeAnyway=*/true);
  const ir::Graph& g = r.graph;
  fpga::ValueRanges ranges;
  if (x) ranges = fpga::observeRanges(g, std::span<const ir::Tensor>(&*x, 1));
  fpga::Emulator emu(g, cfg, ranges);

  fpga::VerilogOptions vo;
  vo.name = fs::path(o.model.model).stem().string();
  if (!(o.clockMhz > 0 && o.clockMhz <= 1000))
    fail(ErrorKind::Usage, "--clock-mhz {}: expected a clock in (0, 1000] MHz", o.clockMhz);
  vo.clockMhz = o.clockMhz;
  if (o.shiftAddDigits < 0 || o.shiftAddDigits > 2)
    fail(ErrorKind::Usage, "--shift-add-digits {}: expected 0, 1 or 2", o.shiftAddDigits);
  vo.shiftAddDigits = o.shiftAddDigits;
  for (const std::string& f : o.fifoDepth) {
    auto eq = f.rfind('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(f);
      size_t used = 0;
      vo.fifoDepth[f.substr(0, eq)] = std::stoll(f.substr(eq + 1), &used);
      if (used != f.size() - eq - 1) throw std::invalid_argument(f);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--fifo-depth '{}': expected LAYER=DEPTH", f);
    }
  }
  if (o.reuse == "auto") {
    vo.autoReuse = true;
  } else {
    try {
      size_t used = 0;
      vo.reuse = std::stoll(o.reuse, &used);
      if (used != o.reuse.size() || vo.reuse < 1) throw std::invalid_argument(o.reuse);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--reuse '{}': expected a positive whole number or 'auto'", o.reuse);
    }
  }
  vo.until = o.until;
  if (!o.config.empty()) { // optional per-layer "reuse" in a separate top-level key
    nlohmann::json cj = nlohmann::json::parse(frontend::readFile(o.config), nullptr, false);
    if (cj.is_object() && cj.contains("reuse")) {
      if (!cj["reuse"].is_object())
        fail(ErrorKind::Usage, "{}: 'reuse' must map layer names to integers", o.config);
      for (auto& [k, v] : cj["reuse"].items()) {
        if (!v.is_number_integer())
          fail(ErrorKind::Usage, "{}: reuse['{}'] must be an integer", o.config, k);
        vo.layerReuse[k] = v.get<int64_t>();
      }
    }
  }
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, vo);

  fs::path out(o.outdir);
  createDirectories(out / "rtl", "the output folder");
  createDirectories(out / "tb", "the output folder");
  // summary.json is written last and marks the folder complete; it goes first, so that a compile
  // interrupted while the files change leaves a folder that triad sim and triad synth refuse
  // instead of a mix of two designs. Every file is written atomically.
  std::error_code ec;
  fs::remove(out / "summary.json", ec);
  if (ec)
    fail(ErrorKind::Io, "cannot replace '{}': {}", (out / "summary.json").string(), ec.message());
  syncPath(out);
  // Only the blocks the design uses (a lint or synthesis of rtl/*.v sees one top), and files.f.
  for (const auto& e : fs::directory_iterator(out / "rtl"))
    if (e.path().extension() == ".v") fs::remove(e.path());
  for (const auto& [name, text] : d.files())
    frontend::writeFileAtomic(out / "rtl" / name, text);
  frontend::writeFileAtomic(out / "rtl" / "files.f", d.fileList());
  frontend::writeFileAtomic(out / "tb" / "tb.cpp", d.testbench);

  nlohmann::json j;
  j["top"] = d.top;
  j["model"] = fs::path(o.model.model).filename().string();
  j["until"] = emu.layers()[d.lastLayer].name;
  j["last_layer"] = emu.layers().back().name;
  j["input"] = formatJson(d.inFormat);
  j["input"]["elements"] = d.inElems;
  j["input"]["transfers"] = d.inGeom.transfers();
  j["input"]["geometry"] = {d.inGeom.h, d.inGeom.w, d.inGeom.c};
  j["input"]["rounding"] = std::string(fpga::toString(emu.inputQuant().rounding));
  j["input"]["overflow"] = std::string(fpga::toString(emu.inputQuant().overflow));
  j["output"] = formatJson(d.outFormat);
  j["output"]["elements"] = d.outElems;
  j["output"]["transfers"] = d.outGeom.transfers();
  j["output"]["geometry"] = {d.outGeom.h, d.outGeom.w, d.outGeom.c};
  j["output"]["chw"] = d.outGeom.chw;
  j["fifos"] = nlohmann::json::array();
  for (const fpga::RtlFifo& f : d.fifos)
    j["fifos"].push_back({{"name", f.name},
                          {"layer", f.layer},
                          {"depth", f.depth},
                          {"width", f.width},
                          {"manual", f.manual},
                          {"why", f.why}});
  j["layers"] = nlohmann::json::array();
  int64_t mults = 0;
  for (const fpga::RtlStage& s : d.stages) {
    nlohmann::json l = {{"layer", s.layer},
                        {"module", s.module},
                        {"op", s.op},
                        {"inputs", s.nIn},
                        {"outputs", s.nOut},
                        {"in_geometry", {s.inGeom.h, s.inGeom.w, s.inGeom.c}},
                        {"out_geometry", {s.outGeom.h, s.outGeom.w, s.outGeom.c}},
                        {"memory_bits", s.memoryBits},
                        {"in", fpga::formatToString(s.in)},
                        {"out", fpga::formatToString(s.out)},
                        {"latency_cycles", s.latency},
                        {"multipliers", s.multipliers}};
    if (s.op == "Gemm" || s.op == "MatMul" || s.op == "Conv") {
      l["reuse"] = s.reuse;
      l["stage_levels"] = s.stageLevels;
      // The registered adder-tree levels (0: the products), from the delay model or the levels.
      nlohmann::json regs = nlohmann::json::array();
      for (int b = 0; b < 64; ++b)
        if (s.stageMask >> b & 1) regs.push_back(b);
      l["stage_registers"] = regs;
    }
    l["estimate"] = resourcesJson(s.resources);
    mults += s.multipliers;
    j["layers"].push_back(l);
  }
  j["multipliers"] = mults;
  // The resource estimate (fpga/layers/Resources.cpp): xc7 LUT, FF, DSP48E1, RAMB18.
  j["estimate"] = resourcesJson(d.resources());
  j["clock_mhz"] = o.clockMhz;
  j["shift_add_digits"] = o.shiftAddDigits;
  // What triad sim needs to recompute expected outputs for other inputs.
  j["compile"] = {{"model", fs::absolute(o.model.model).string()},
                  {"dims", o.model.dims},
                  {"config", o.config.empty() ? "" : fs::absolute(o.config).string()},
                  {"default_precision", o.defaultPrecision},
                  {"precision", o.precision},
                  {"calibration", o.input.empty() ? "" : fs::absolute(o.input).string()}};
  j["latency_cycles"] = d.latency;
  j["blocks"] = d.blocks;
  if (x) {
    fpga::EmulatorResult res = emu.run(std::span<const ir::Tensor>(&*x, 1), false);
    int64_t n = x->rank() > 0 ? x->shape()[0] : 1;
    std::vector<int64_t> inRaw;
    for (double v : x->toDoubleVector())
      inRaw.push_back(
          fpga::quantize(v, d.inFormat, emu.inputQuant().rounding, emu.inputQuant().overflow));
    // Both in stream order (channels-last pixels), one row per sample.
    frontend::writeNpy(out / "inputs_raw.npy",
                       rawTensor(fpga::toStreamOrder(inRaw, d.inGeom), n, d.inGeom.elements()));
    frontend::writeNpy(out / "expected_raw.npy",
                       rawTensor(fpga::toStreamOrder(res.layerRaw[d.lastLayer], d.outGeom), n,
                                 d.outGeom.elements()));
    j["samples"] = n;
  }
  frontend::writeFileAtomic(out / "summary.json", j.dump(2) + "\n");
  fmt::print("{}: {} layers, {} multipliers, latency {} cycles -> {}\n", d.top, d.stages.size(),
             mults, d.latency, o.outdir);
  return 0;
}

struct SimOptions {
  std::string outdir, input, json, output, trace;
  uint64_t seed = 1;
};

// The emulator's raw outputs (stream order) for inputs `x`, from the options `triad compile`
// stored in summary.json (the model, its config and precision flags, the calibration input).
std::vector<int64_t> recomputeExpected(const nlohmann::json& c, const ir::Tensor& x,
                                       const fpga::StreamGeom& outGeom) {
  ModelOptions m;
  m.model = c["model"].get<std::string>();
  m.dims = c["dims"].get<std::vector<std::string>>();
  fpga::QuantConfig cfg = fpga::QuantConfig::fromCommandLine(
      c["config"].get<std::string>(), c["default_precision"].get<std::string>(),
      c["precision"].get<std::vector<std::string>>());
  fpga::ValueRanges ranges;
  if (std::string cal = c["calibration"].get<std::string>(); !cal.empty()) {
    ir::Tensor xc = readF32(cal);
    m.inputShapes = {{"", xc.shape(), cal}};
    frontend::ImportResult rc = m.load(true);
    ranges = fpga::observeRanges(rc.graph, std::span<const ir::Tensor>(&xc, 1));
  }
  m.inputShapes = {{"", x.shape(), ""}};
  frontend::ImportResult r = m.load(true);
  fpga::Emulator emu(r.graph, cfg, ranges);
  fpga::EmulatorResult res = emu.run(std::span<const ir::Tensor>(&x, 1), false);
  // The design's output is the last layer's (compile --until may have cut it).
  const auto& layers = emu.layers();
  return fpga::toStreamOrder(res.layerRaw[layers.size() - 1], outGeom);
}

int runSim(const SimOptions& o) {
  fs::path dir(o.outdir);
  if (!fs::exists(dir / "summary.json") || !fs::is_directory(dir / "rtl"))
    fail(ErrorKind::Usage,
         "{} has no summary.json and rtl/: write it with triad compile --target fpga (a compile "
         "that was interrupted leaves no summary.json; run it again)",
         o.outdir);
  nlohmann::json s = nlohmann::json::parse(frontend::readFile(dir / "summary.json"));
  fpga::FixedFormat inF = fpga::parseFormat(s["input"]["format"].get<std::string>());
  fpga::FixedFormat outF = fpga::parseFormat(s["output"]["format"].get<std::string>());
  auto geom = [](const nlohmann::json& j) {
    fpga::StreamGeom g{j["geometry"][0], j["geometry"][1], j["geometry"][2]};
    g.chw = j.value("chw", false);
    return g;
  };
  fpga::StreamGeom inGeom = geom(s["input"]), outGeom = geom(s["output"]);
  auto rnd = fpga::parseRounding(s["input"]["rounding"].get<std::string>());
  auto ovf = fpga::parseOverflow(s["input"]["overflow"].get<std::string>());
  ir::Tensor x = readF32(o.input);
  std::vector<int64_t> inRaw;
  for (double v : x.toDoubleVector())
    inRaw.push_back(fpga::quantize(v, inF, rnd, ovf));
  inRaw = fpga::toStreamOrder(inRaw, inGeom);
  std::vector<int64_t> expected;
  bool same = false;
  if (s.contains("samples")) {
    ir::Tensor stored = frontend::readNpy(dir / "inputs_raw.npy");
    same = std::equal(inRaw.begin(), inRaw.end(), stored.values<int64_t>().begin(),
                      stored.values<int64_t>().end());
  }
  if (same) {
    ir::Tensor exp = frontend::readNpy(dir / "expected_raw.npy");
    expected.assign(exp.values<int64_t>().begin(), exp.values<int64_t>().end());
  } else {
    if (s["until"].get<std::string>() != s["last_layer"].get<std::string>())
      fail(ErrorKind::Usage,
           "{} ends at '{}' (--until): compile it with --input '{}' for the expected outputs",
           o.outdir, s["until"].get<std::string>(), o.input);
    expected = recomputeExpected(s["compile"], x, outGeom);
  }
  int64_t inPer = inGeom.elements(), outPer = outGeom.elements();
  if (inRaw.size() % size_t(inPer) != 0)
    fail(ErrorKind::Usage, "--input '{}' has {} values, not a whole number of samples of {}",
         o.input, inRaw.size(), inPer);
  int64_t n = int64_t(inRaw.size()) / inPer;
  sim::SimReport r = sim::simulate(dir, s["top"].get<std::string>(), inRaw, expected, n, outPer,
                                   o.seed, o.trace, inGeom.transfers());
  double clockMhz = s.value("clock_mhz", sim::kClockHz / 1e6);
  r.inferencesPerSecond = r.ii > 0 ? clockMhz * 1e6 / r.ii : 0;
  if (!r.timeout)
    fmt::print("{}: {} samples, latency {} cycles, II {}, {} cycles ({} with random gaps and "
               "back-pressure), {} mismatches, {} missing, {:.4g} inferences/s at {} MHz{}\n",
               s["top"].get<std::string>(), n, r.latencyCycles, r.ii, r.totalCycles, r.randomCycles,
               r.mismatches, r.missing, r.inferencesPerSecond, clockMhz,
               r.cached ? " (cached build)" : "");
  // FIFOs: the static depth beside the occupancy the simulation reached.
  std::map<std::string, nlohmann::json> fifoInfo;
  for (const auto& f : s.value("fifos", nlohmann::json::array()))
    fifoInfo[f["name"].get<std::string>()] = f;
  for (const auto& [name, f] : fifoInfo) {
    int64_t depth = f["depth"], peak = r.fifoPeak.count(name) ? r.fifoPeak.at(name) : 0;
    int64_t need = 2;
    while (need < peak + 1)
      need *= 2;
    fmt::print("  FIFO {} before '{}': depth {}, peak occupancy {}{}\n", name,
               f["layer"].get<std::string>(), depth, peak,
               r.timeout || need >= depth ? ""
                                          : fmt::format(" (--fifo-depth '{}={}' would do)",
                                                        f["layer"].get<std::string>(), need));
  }
  if (r.timeout) {
    std::string where;
    for (const auto& [name, held] : r.fifoAtStall)
      if (fifoInfo.count(name) && held >= fifoInfo[name]["depth"].get<int64_t>())
        where += fmt::format("; FIFO {} before '{}' is full ({} of {})", name,
                             fifoInfo[name]["layer"].get<std::string>(), held,
                             fifoInfo[name]["depth"].get<int64_t>());
    fail(ErrorKind::Runtime,
         "deadlock: the design stopped making progress ({} of {} outputs never came){}; blocked "
         "streams: {}",
         r.missing, 2 * n, where,
         r.stalled.empty() ? std::string("none") : fmt::format("{}", fmt::join(r.stalled, ", ")));
  }
  if (!o.json.empty()) {
    nlohmann::json j = {{"samples", n},
                        {"latency_cycles", r.latencyCycles},
                        {"ii", r.ii},
                        {"mismatches", r.mismatches},
                        {"missing", r.missing},
                        {"deadlock", r.timeout},
                        {"fifo_peak", r.fifoPeak},
                        {"total_cycles", r.totalCycles},
                        {"random_pass_cycles", r.randomCycles},
                        {"clock_hz_assumed", clockMhz * 1e6},
                        {"inferences_per_second", r.inferencesPerSecond},
                        {"seed", o.seed},
                        {"cached_build", r.cached},
                        {"build_seconds", r.buildSeconds},
                        {"run_seconds", r.runSeconds}};
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
  if (!o.output.empty()) {
    ir::Tensor y(ir::DType::F32, {n, outPer});
    std::vector<int64_t> logical = fpga::fromStreamOrder(r.outputs, outGeom);
    for (size_t i = 0; i < logical.size(); ++i)
      y.data<float>()[i] = float(fpga::dequantize(logical[i], outF));
    frontend::writeTensorFile(o.output, y, "output");
  }
  return r.mismatches == 0 && r.missing == 0 ? 0 : exitCodeFor(ErrorKind::Runtime);
}

} // namespace

Action addCompile(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Compile a model for a target (fpga: Verilog, a Verilator testbench, expected "
                 "outputs; cpu: standalone C++ source with an example main)");
  o->model.add(*cmd);
  cmd->add_option("--target", o->target, "Target (fpga, cpu)")->required();
  cmd->add_option("--config", o->config,
                  "Precision config (JSON, docs/fpga.md); may hold \"reuse\": {layer: R}")
      ->check(CLI::ExistingFile);
  addPrecisionOptions(*cmd, o->defaultPrecision, o->precision);
  cmd->add_option("--reuse", o->reuse,
                  "Reuse factor of Dense and Conv layers (divides the input count), or 'auto': per "
                  "layer, the largest that keeps the design's II");
  cmd->add_option("--clock-mhz", o->clockMhz,
                  "Target clock: adder trees and the Softmax are registered where the delay model "
                  "(docs/fpga.md) says a stage would not fit it")
      ->capture_default_str();
  cmd->add_option("--shift-add-digits", o->shiftAddDigits,
                  "At reuse 1, products by constant weights of at most this many nonzero signed "
                  "digits (0, +-2^k, +-2^a +-2^b) are shifts and adds instead of multipliers "
                  "(0: all multipliers; 1; 2)")
      ->capture_default_str();
  cmd->add_option("--fifo-depth", o->fifoDepth,
                  "LAYER=DEPTH: the FIFO in front of a joining layer by hand (a power of two), "
                  "instead of the static analysis (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--until", o->until, "Last layer of the design (default: the whole model)");
  cmd->add_option("-i,--input", o->input,
                  "Inputs (.npy/.pb): calibration for \"auto\" and the expected outputs");
  cmd->add_option("-o,--output,--emit-source", o->outdir,
                  "Output directory (--emit-source DIR: the same, for the CPU target's sources)")
      ->required();
  return [o] { return runCompile(*o); };
}

Action addSim(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<SimOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Simulate a compiled FPGA design in Verilator against the emulator");
  cmd->add_option("outdir", o->outdir, "Directory written by triad compile --target fpga")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-i,--input", o->input, "The inputs given to triad compile")->required();
  cmd->add_option("--json", o->json, "Write the report as JSON");
  cmd->add_option("-o,--output", o->output, "Write the RTL's outputs (dequantized, .npy/.pb)");
  cmd->add_option("--seed", o->seed, "Seed of the random gaps and back-pressure");
  cmd->add_option("--trace", o->trace,
                  "Write the waveform of both passes (FILE.vcd or FILE.fst; a separate build)");
  return [o] { return runSim(*o); };
}

} // namespace triad::cli
