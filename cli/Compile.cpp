// triad compile --target fpga: the Verilog design, its Verilator testbench and the emulator's
// expected outputs; triad sim: runs that design in Verilator against them (docs/fpga.md).
#include "cli/Commands.h"
#include "cli/FpgaOptions.h"
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "frontend/TensorIO.h"
#include "sim/Simulator.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace triad::cli {

namespace fs = std::filesystem;

namespace {

struct CompileOptions {
  ModelOptions model;
  std::string target = "fpga", config, input, outdir, until, defaultPrecision;
  std::vector<std::string> precision;
  int64_t reuse = 1;
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

int runCompile(CompileOptions o, bool batchGiven) {
  if (o.target == "cpu") return compileCpu(o.model, o.outdir);
  if (o.target != "fpga")
    fail(ErrorKind::Usage, "--target '{}': triad compile supports 'fpga' and 'cpu'", o.target);
  fpga::QuantConfig cfg =
      fpga::QuantConfig::fromCommandLine(o.config, o.defaultPrecision, o.precision);
  std::optional<ir::Tensor> x;
  if (!o.input.empty()) {
    x = readF32(o.input);
    if (!batchGiven && x->rank() > 0) o.model.batch = x->shape()[0];
  }
  frontend::ImportResult r = o.model.load();
  const ir::Graph& g = r.graph;
  fpga::ValueRanges ranges;
  if (x) ranges = fpga::observeRanges(g, std::span<const ir::Tensor>(&*x, 1));
  fpga::Emulator emu(g, cfg, ranges);

  fpga::VerilogOptions vo;
  vo.name = fs::path(o.model.model).stem().string();
  vo.reuse = o.reuse;
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
  fs::create_directories(out / "rtl");
  fs::create_directories(out / "tb");
  frontend::writeFileAtomic(out / "rtl" / (d.top + ".v"), d.verilog);
  for (const auto& [name, text] : fpga::rtlLibrary())
    frontend::writeFileAtomic(out / "rtl" / name, text);
  frontend::writeFileAtomic(out / "tb" / "tb.cpp", d.testbench);

  nlohmann::json j;
  j["top"] = d.top;
  j["model"] = fs::path(o.model.model).filename().string();
  j["until"] = emu.layers()[d.lastLayer].name;
  j["input"] = formatJson(d.inFormat);
  j["input"]["elements"] = d.inElems;
  j["input"]["rounding"] = std::string(fpga::toString(emu.inputQuant().rounding));
  j["input"]["overflow"] = std::string(fpga::toString(emu.inputQuant().overflow));
  j["output"] = formatJson(d.outFormat);
  j["output"]["elements"] = d.outElems;
  j["layers"] = nlohmann::json::array();
  int64_t mults = 0;
  for (const fpga::RtlStage& s : d.stages) {
    nlohmann::json l = {{"layer", s.layer},
                        {"module", s.module},
                        {"op", s.op},
                        {"inputs", s.nIn},
                        {"outputs", s.nOut},
                        {"in", fpga::formatToString(s.in)},
                        {"out", fpga::formatToString(s.out)},
                        {"latency_cycles", s.latency},
                        {"multipliers", s.multipliers}};
    if (s.op.starts_with("Gemm") || s.op.starts_with("MatMul")) l["reuse"] = s.reuse;
    mults += s.multipliers;
    j["layers"].push_back(l);
  }
  j["multipliers"] = mults;
  j["latency_cycles"] = d.latency;
  j["blocks"] = d.blocks;
  if (x) {
    fpga::EmulatorResult res = emu.run(std::span<const ir::Tensor>(&*x, 1), false);
    int64_t n = x->rank() > 0 ? x->shape()[0] : 1;
    std::vector<int64_t> inRaw;
    for (double v : x->toDoubleVector())
      inRaw.push_back(
          fpga::quantize(v, d.inFormat, emu.inputQuant().rounding, emu.inputQuant().overflow));
    frontend::writeNpy(out / "inputs_raw.npy", rawTensor(inRaw, n, d.inElems));
    frontend::writeNpy(out / "expected_raw.npy",
                       rawTensor(res.layerRaw[d.lastLayer], n, d.outElems));
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

int runSim(const SimOptions& o) {
  fs::path dir(o.outdir);
  nlohmann::json s = nlohmann::json::parse(frontend::readFile(dir / "summary.json"));
  if (!s.contains("samples"))
    fail(ErrorKind::Usage, "{} was compiled without --input: no expected outputs", o.outdir);
  fpga::FixedFormat inF = fpga::parseFormat(s["input"]["format"].get<std::string>());
  fpga::FixedFormat outF = fpga::parseFormat(s["output"]["format"].get<std::string>());
  int64_t inElems = s["input"]["elements"], outElems = s["output"]["elements"];
  auto rnd = fpga::parseRounding(s["input"]["rounding"].get<std::string>());
  auto ovf = fpga::parseOverflow(s["input"]["overflow"].get<std::string>());
  ir::Tensor x = readF32(o.input);
  std::vector<int64_t> inRaw;
  for (double v : x.toDoubleVector())
    inRaw.push_back(fpga::quantize(v, inF, rnd, ovf));
  ir::Tensor stored = frontend::readNpy(dir / "inputs_raw.npy");
  std::vector<int64_t> storedRaw(stored.values<int64_t>().begin(), stored.values<int64_t>().end());
  if (storedRaw != inRaw)
    fail(ErrorKind::Usage,
         "--input '{}' is not the input {} was compiled with (the expected outputs come from "
         "`triad compile --input`): compile again with this input",
         o.input, o.outdir);
  ir::Tensor exp = frontend::readNpy(dir / "expected_raw.npy");
  std::vector<int64_t> expected(exp.values<int64_t>().begin(), exp.values<int64_t>().end());
  int64_t n = int64_t(inRaw.size()) / inElems;
  sim::SimReport r = sim::simulate(dir, s["top"].get<std::string>(), inRaw, expected, n, outElems,
                                   o.seed, o.trace);
  fmt::print("{}: {} samples, latency {} cycles, II {}, {} cycles ({} with random gaps and "
             "back-pressure), {} mismatches, {} missing, {:.4g} inferences/s at 200 MHz{}\n",
             s["top"].get<std::string>(), n, r.latencyCycles, r.ii, r.totalCycles, r.randomCycles,
             r.mismatches, r.missing, r.inferencesPerSecond, r.cached ? " (cached build)" : "");
  if (!o.json.empty()) {
    nlohmann::json j = {{"samples", n},
                        {"latency_cycles", r.latencyCycles},
                        {"ii", r.ii},
                        {"mismatches", r.mismatches},
                        {"missing", r.missing},
                        {"total_cycles", r.totalCycles},
                        {"random_pass_cycles", r.randomCycles},
                        {"clock_hz_assumed", sim::kClockHz},
                        {"inferences_per_second", r.inferencesPerSecond},
                        {"seed", o.seed},
                        {"cached_build", r.cached},
                        {"build_seconds", r.buildSeconds},
                        {"run_seconds", r.runSeconds}};
    frontend::writeFileAtomic(o.json, j.dump(2) + "\n");
  }
  if (!o.output.empty()) {
    ir::Tensor y(ir::DType::F32, {n, outElems});
    for (size_t i = 0; i < r.outputs.size(); ++i)
      y.data<float>()[i] = float(fpga::dequantize(r.outputs[i], outF));
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
  cmd->add_option("--reuse", o->reuse, "Reuse factor of Dense layers (divides the input count)");
  cmd->add_option("--until", o->until, "Last layer of the design (default: the whole model)");
  cmd->add_option("-i,--input", o->input,
                  "Inputs (.npy/.pb): calibration for \"auto\" and the expected outputs");
  cmd->add_option("-o,--output,--emit-source", o->outdir,
                  "Output directory (--emit-source DIR: the same, for the CPU target's sources)")
      ->required();
  return [o, cmd] { return runCompile(*o, cmd->count("--batch") > 0); };
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
