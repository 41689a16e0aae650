// The FPGA design folder (docs/fpga.md, "Verilog and simulation"): written by `triad compile
// --target fpga` and Quantized.write_verilog in Python, simulated by `triad sim` and triad.sim.
#include "fpga/Design.h"
#include "fpga/layers/Layer.h"

#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Files.h"
#include "ir/passes/Pass.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace triad::fpga {

namespace fs = std::filesystem;

namespace {

ir::Tensor readF32(const std::string& path) {
  ir::Tensor x = frontend::readTensorFile(path).tensor;
  return x.dtype() == ir::DType::F32 ? x : x.castTo(ir::DType::F32);
}

ir::Tensor rawTensor(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  return ir::Tensor::fromVector<int64_t>({rows, cols}, v);
}

nlohmann::json formatJson(const FixedFormat& f) {
  return {{"format", formatToString(f)}, {"width", f.width}, {"frac", f.fracBits()}};
}

// The emulator's raw outputs (stream order) for inputs `x`, from the options `triad compile`
// stored in summary.json (the model, its config and precision flags, the calibration input).
std::vector<int64_t> recomputeExpected(const nlohmann::json& c, const ir::Tensor& x,
                                       const StreamGeom& outGeom) {
  frontend::ImportOptions io;
  io.streamBatch = true; // the samples stream through a design of a fixed batch
  for (const std::string& d : c["dims"].get<std::vector<std::string>>())
    frontend::addDim(io, d, "summary.json dims");
  fs::path model = c["model"].get<std::string>();
  // The dynamic dimensions (batch, dim_params) bind from each input's shape, as at compile time.
  auto load = [&](const ir::Tensor& t, const std::string& source) {
    io.inputShapes = {{"", t.shape(), source}};
    frontend::ImportResult r = frontend::importOnnxFile(model, io);
    ir::defaultPipeline().run(r.graph, {}); // as the compile did
    return r;
  };
  QuantConfig cfg = QuantConfig::fromCommandLine(c["config"].get<std::string>(),
                                                 c["default_precision"].get<std::string>(),
                                                 c["precision"].get<std::vector<std::string>>());
  ValueRanges ranges;
  if (std::string cal = c["calibration"].get<std::string>(); !cal.empty()) {
    ir::Tensor xc = readF32(cal);
    frontend::ImportResult rc = load(xc, cal);
    ranges = observeRanges(rc.graph, std::span<const ir::Tensor>(&xc, 1));
  }
  frontend::ImportResult r = load(x, "the simulated input");
  Emulator emu(r.graph, cfg, ranges);
  EmulatorResult res = emu.run(std::span<const ir::Tensor>(&x, 1), false);
  // The design's output is the last layer's (compile --until may have cut it).
  const auto& layers = emu.layers();
  return toStreamOrder(res.layerRaw[layers.size() - 1], outGeom);
}

} // namespace

nlohmann::json writeDesign(const ir::Graph& g, const Emulator& emu, const VerilogOptions& vo,
                           const fs::path& out, const std::string& modelName,
                           const DesignSource& src, const ir::Tensor* x,
                           const nlohmann::json& sections) {
  VerilogDesign d = emitVerilog(g, emu, vo);

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
  j["model"] = modelName;
  j["until"] = emu.layers()[d.lastLayer].name;
  j["last_layer"] = emu.layers().back().name;
  j["input"] = formatJson(d.inFormat);
  j["input"]["elements"] = d.inElems;
  j["input"]["transfers"] = d.inGeom.transfers();
  j["input"]["geometry"] = {d.inGeom.h, d.inGeom.w, d.inGeom.c};
  j["input"]["rounding"] = std::string(toString(emu.inputQuant().rounding));
  j["input"]["overflow"] = std::string(toString(emu.inputQuant().overflow));
  // A QDQ model: the host quantizes inputs onto the first QuantizeLinear's grid, and the outputs'
  // integers mean scale * k + offset (per channel along axis 1).
  if (const auto& grid = emu.inputGrid())
    j["input"]["grid"] = {{"scale", grid->scale}, {"lo", grid->lo}, {"hi", grid->hi}};
  const LayerInfo& last = emu.layers()[d.lastLayer];
  if (const RealAffine* a = emu.realAffine(last.output)) {
    const ir::Shape& sh = emu.planned()[d.lastLayer]->outShape;
    int64_t plane = 1;
    for (size_t k = 2; k < sh.size(); ++k)
      plane *= sh[k];
    j["output_real"] = {{"scale", a->scale}, {"offset", a->offset}, {"plane", plane}};
  }
  j["output"] = formatJson(d.outFormat);
  j["output"]["elements"] = d.outElems;
  j["output"]["transfers"] = d.outGeom.transfers();
  j["output"]["geometry"] = {d.outGeom.h, d.outGeom.w, d.outGeom.c};
  j["output"]["chw"] = d.outGeom.chw;
  j["fifos"] = nlohmann::json::array();
  for (const RtlFifo& f : d.fifos)
    j["fifos"].push_back({{"name", f.name},
                          {"layer", f.layer},
                          {"depth", f.depth},
                          {"width", f.width},
                          {"manual", f.manual},
                          {"why", f.why}});
  j["layers"] = nlohmann::json::array();
  int64_t mults = 0;
  for (const RtlStage& s : d.stages) {
    nlohmann::json l = {{"layer", s.layer},
                        {"module", s.module},
                        {"op", s.op},
                        {"inputs", s.nIn},
                        {"outputs", s.nOut},
                        {"in_geometry", {s.inGeom.h, s.inGeom.w, s.inGeom.c}},
                        {"out_geometry", {s.outGeom.h, s.outGeom.w, s.outGeom.c}},
                        {"memory_bits", s.memoryBits},
                        {"in", formatToString(s.in)},
                        {"out", formatToString(s.out)},
                        {"latency_cycles", s.latency},
                        {"multipliers", s.multipliers}};
    if (isDenseCore(s)) {
      l["reuse"] = s.reuse;
      l["stage_levels"] = s.stageLevels;
      // The registered adder-tree levels (0: the products), from the delay model or the levels.
      nlohmann::json regs = nlohmann::json::array();
      for (int b = 0; b < 64; ++b)
        if (s.stageMask >> b & 1) regs.push_back(b);
      l["stage_registers"] = regs;
      l["strategy"] = s.adderGraph ? "shift_add" : "dsp";
      l["weights"] = s.weightRom ? "rom" : "logic";
      if (const auto& ag = s.adderGraph)
        l["adder_graph"] = {{"adders", ag->adders},
                            {"shared", ag->shared},
                            {"digits", ag->digits},
                            {"carry_bits", ag->carryBits},
                            {"bias_add_bits", ag->finalBits},
                            {"register_bits", ag->regBits},
                            {"depth", ag->depth},
                            {"stages", ag->stages}};
    }
    l["estimate"] = resourcesJson(s.resources);
    mults += s.multipliers;
    j["layers"].push_back(l);
  }
  j["multipliers"] = mults;
  // The resource estimate (fpga/layers/Resources.cpp): xc7 LUT, FF, DSP48E1, RAMB18.
  j["estimate"] = resourcesJson(d.resources());
  j["clock_mhz"] = vo.clockMhz;
  j["shift_add_digits"] = vo.shiftAddDigits;
  j["strategy"] = toString(vo.strategy);
  j["register_streams"] = vo.registerStreams;
  // What triad sim needs to recompute expected outputs for other inputs.
  j["compile"] = {{"model", src.model},         {"dims", src.dims},
                  {"config", src.config},       {"default_precision", src.defaultPrecision},
                  {"precision", src.precision}, {"calibration", src.calibration}};
  j["latency_cycles"] = d.latency;
  if (vo.clockMhz > 0) j["latency_ns"] = double(d.latency) * 1000.0 / vo.clockMhz;
  j["blocks"] = d.blocks;
  if (x) {
    EmulatorResult res = emu.run(std::span<const ir::Tensor>(x, 1), false);
    int64_t n = x->rank() > 0 ? x->shape()[0] : 1;
    std::vector<int64_t> inRaw;
    for (double v : x->toDoubleVector())
      inRaw.push_back(emu.quantizeInput(v));
    // Both in stream order (channels-last pixels), one row per sample.
    frontend::writeNpy(out / "inputs_raw.npy",
                       rawTensor(toStreamOrder(inRaw, d.inGeom), n, d.inGeom.elements()));
    frontend::writeNpy(
        out / "expected_raw.npy",
        rawTensor(toStreamOrder(res.layerRaw[d.lastLayer], d.outGeom), n, d.outGeom.elements()));
    j["samples"] = n;
  }
  for (const auto& [key, value] : sections.items()) {
    frontend::writeFileAtomic(out / (key + ".json"), value.dump(2) + "\n");
    j[key] = value;
  }
  frontend::writeFileAtomic(out / "summary.json", j.dump(2) + "\n");
  return j;
}

DesignSim simulateDesign(const fs::path& dir, const ir::Tensor& x, const std::string& inputLabel,
                         uint64_t seed, const fs::path& trace, const ir::ProgressFn& progress) {
  // Steps: the inputs quantized, the expected outputs, the Verilator build and run.
  auto step = [&](const char* what, int64_t done) {
    if (progress) progress(what, done, 3);
  };
  if (!fs::exists(dir / "summary.json") || !fs::is_directory(dir / "rtl"))
    fail(ErrorKind::Usage,
         "{} has no summary.json and rtl/: write it with triad compile --target fpga (a compile "
         "that was interrupted leaves no summary.json; run it again)",
         dir.string());
  DesignSim out;
  nlohmann::json& s = out.summary;
  s = nlohmann::json::parse(frontend::readFile(dir / "summary.json"));
  FixedFormat inF = parseFormat(s["input"]["format"].get<std::string>());
  FixedFormat outF = parseFormat(s["output"]["format"].get<std::string>());
  auto geom = [](const nlohmann::json& j) {
    StreamGeom g{j["geometry"][0], j["geometry"][1], j["geometry"][2]};
    g.chw = j.value("chw", false);
    return g;
  };
  StreamGeom inGeom = geom(s["input"]), outGeom = geom(s["output"]);
  auto rnd = parseRounding(s["input"]["rounding"].get<std::string>());
  auto ovf = parseOverflow(s["input"]["overflow"].get<std::string>());
  std::optional<InputGrid> grid;
  if (s["input"].contains("grid"))
    grid =
        InputGrid{s["input"]["grid"]["scale"].get<double>(),
                  s["input"]["grid"]["lo"].get<int64_t>(), s["input"]["grid"]["hi"].get<int64_t>()};
  if (s.contains("output_real")) {
    out.outReal = RealAffine{s["output_real"]["scale"].get<std::vector<double>>(),
                             s["output_real"]["offset"].get<std::vector<double>>()};
    out.outPlane = s["output_real"]["plane"].get<int64_t>();
  }
  std::vector<int64_t> inRaw;
  for (double v : x.toDoubleVector())
    inRaw.push_back(grid ? grid->quantize(v) : quantize(v, inF, rnd, ovf));
  inRaw = toStreamOrder(inRaw, inGeom);
  step("inputs", 1);
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
           "{} ends at '{}' (--until): compile it with {} for the expected outputs", dir.string(),
           s["until"].get<std::string>(), inputLabel);
    expected = recomputeExpected(s["compile"], x, outGeom);
  }
  int64_t inPer = inGeom.elements(), outPer = outGeom.elements();
  if (inRaw.size() % size_t(inPer) != 0)
    fail(ErrorKind::Usage, "{} has {} values, not a whole number of samples of {}", inputLabel,
         inRaw.size(), inPer);
  int64_t n = int64_t(inRaw.size()) / inPer;
  out.samples = n;
  out.outGeom = outGeom;
  out.outFormat = outF;
  step("expected", 2);
  out.report = sim::simulate(dir, s["top"].get<std::string>(), inRaw, expected, n, outPer, seed,
                             trace, inGeom.transfers());
  double clockMhz = s.value("clock_mhz", sim::kClockHz / 1e6);
  out.clockMhz = clockMhz;
  out.report.inferencesPerSecond = out.report.ii > 0 ? clockMhz * 1e6 / out.report.ii : 0;
  step("verilator", 3);
  return out;
}

std::string deadlockMessage(const DesignSim& d) {
  const sim::SimReport& r = d.report;
  if (!r.timeout) return "";
  std::map<std::string, nlohmann::json> fifoInfo;
  for (const auto& f : d.summary.value("fifos", nlohmann::json::array()))
    fifoInfo[f["name"].get<std::string>()] = f;
  // Layer names (the model's) and what the testbench reported, printable on a terminal.
  std::string where;
  for (const auto& [name, held] : r.fifoAtStall)
    if (fifoInfo.count(name) && held >= fifoInfo[name]["depth"].get<int64_t>())
      where += fmt::format("; FIFO {} before '{}' is full ({} of {})", escape::printable(name),
                           escape::printable(fifoInfo[name]["layer"].get<std::string>()), held,
                           fifoInfo[name]["depth"].get<int64_t>());
  std::vector<std::string> stalled;
  for (const std::string& s : r.stalled)
    stalled.push_back(escape::printable(s));
  return fmt::format(
      "deadlock: the design stopped making progress ({} of {} outputs never came){}; blocked "
      "streams: {}",
      r.missing, 2 * d.samples, where,
      stalled.empty() ? std::string("none") : fmt::format("{}", fmt::join(stalled, ", ")));
}

nlohmann::json simReportJson(const DesignSim& d, uint64_t seed) {
  const sim::SimReport& r = d.report;
  return {{"samples", d.samples},
          {"latency_cycles", r.latencyCycles},
          {"ii", r.ii},
          {"mismatches", r.mismatches},
          {"missing", r.missing},
          {"deadlock", r.timeout},
          {"fifo_peak", r.fifoPeak},
          {"total_cycles", r.totalCycles},
          {"random_pass_cycles", r.randomCycles},
          {"clock_hz_assumed", d.clockMhz * 1e6},
          {"inferences_per_second", r.inferencesPerSecond},
          {"seed", seed},
          {"cached_build", r.cached},
          {"build_seconds", r.buildSeconds},
          {"run_seconds", r.runSeconds}};
}

ir::Tensor simOutputs(const DesignSim& d) {
  int64_t outPer = d.outGeom.elements();
  ir::Tensor y(ir::DType::F32, {d.samples, outPer});
  std::vector<int64_t> logical = fromStreamOrder(d.report.outputs, d.outGeom);
  for (size_t i = 0; i < logical.size(); ++i)
    y.data<float>()[i] =
        float(d.outReal ? d.outReal->real(logical[i], d.outFormat, int64_t(i) % outPer, d.outPlane)
                        : dequantize(logical[i], d.outFormat));
  return y;
}

nlohmann::json resourcesJson(const ir::Resources& r) {
  return {{"lut", std::lround(r.lut)},
          {"ff", std::lround(r.ff)},
          {"dsp", std::lround(r.dsp)},
          {"bram18", std::lround(r.bram18)}};
}

} // namespace triad::fpga
