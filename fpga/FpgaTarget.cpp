#include "fpga/FpgaTarget.h"

#include "fpga/Cost.h"
#include "fpga/Devices.h"
#include "fpga/Emulator.h"
#include "fpga/layers/Layer.h"
#include "frontend/TensorIO.h"
#include "ir/System.h"
#include "ir/TrustedFile.h"
#include "sim/Simulator.h"

#include <fmt/format.h>

#include <cstdlib>

namespace triad::fpga {

namespace fs = std::filesystem;

namespace {

fs::path defaultWorkDir() {
  if (const char* d = std::getenv("TRIAD_CACHE_DIR"); d && *d) return fs::path(d) / "fpga";
  if (const char* h = std::getenv("HOME"); h && *h)
    return fs::path(h) / ".cache" / "triad" / "fpga";
  return fs::temp_directory_path() / "triad-fpga";
}

int64_t stageCycles(const RtlStage& s) {
  return stageCyclesPerSample(s);
}

class Executable final : public FpgaExecutable {
public:
  Executable(const ir::Graph& g, const FpgaTargetOptions& o) : o_(o), emu_(g, o.config) {
    VerilogOptions vo;
    vo.name = g.name.empty() ? "model" : g.name;
    vo.reuse = o.reuse;
    vo.autoReuse = o.autoReuse;
    vo.clockMhz = o.clockMhz;
    try {
      design_ = emitVerilog(g, emu_, vo);
      timing_.rtl = design_.lastLayer + 1 == emu_.layers().size();
      if (!timing_.rtl) timing_.why = "the design does not reach the graph's output";
    } catch (const Error& e) {
      if (o.verilate) throw;
      timing_.why = e.what();
    }
    timing_.clockMhz = o.clockMhz;
    if (timing_.rtl) {
      timing_.latencyCycles = design_.latency;
      for (const RtlStage& s : design_.stages)
        timing_.ii = std::max(timing_.ii, double(stageCycles(s)));
      if (!o.part.empty()) requireFits(findDevice(o.part));
    }
    if (o.verilate) {
      if (g.outputs().size() != 1)
        fail(ErrorKind::Unsupported, "the Verilated design has one output; the graph has {}",
             g.outputs().size());
      uint64_t h = fnv1a(kFnvOffset, design_.verilog + design_.testbench);
      dir_ = (o.workDir.empty() ? defaultWorkDir() : o.workDir) / fmt::format("{:016x}", h);
      // The sources here are compiled and run: the folders are private (0700 when created here)
      // and one that another user can write is refused (ir/TrustedFile.h).
      for (const fs::path& d : {dir_, dir_ / "rtl", dir_ / "tb"})
        if (std::string why; !makePrivateDir(d, "the FPGA target's work folder", &why))
          fail(ErrorKind::Io, "the FPGA target's work folder is not private: {}", why);
      for (const auto& [name, text] : design_.files())
        frontend::writeFileAtomic(dir_ / "rtl" / name, text);
      frontend::writeFileAtomic(dir_ / "tb" / "tb.cpp", design_.testbench);
      int64_t batch = g.inputs()[0]->type().shape[0];
      sim::buildModel(dir_, design_.top, nullptr, sim::Trace::None,
                      sim::chooseOptLevel(batch * design_.inGeom.transfers() * 5 / 2));
    }
  }

  std::vector<ir::Tensor> run(std::span<const ir::Tensor> inputs) override {
    EmulatorResult r = emu_.run(inputs, false);
    lastSamples_ = inputs.empty() || inputs[0].shape().empty() ? 1 : inputs[0].shape()[0];
    samples_ += lastSamples_;
    if (!o_.verilate) return std::move(r.values);
    // The RTL on the same inputs, checked bit for bit against the emulator.
    std::vector<int64_t> in;
    for (double v : inputs[0].toDoubleVector())
      in.push_back(emu_.quantizeInput(v));
    in = toStreamOrder(in, design_.inGeom);
    std::vector<int64_t> expected = toStreamOrder(r.layerRaw[design_.lastLayer], design_.outGeom);
    int64_t n = int64_t(in.size()) / design_.inGeom.elements();
    sim::SimReport rep =
        sim::simulate(dir_, design_.top, in, expected, n, design_.outGeom.elements(), 1, {},
                      design_.inGeom.transfers());
    if (rep.timeout || rep.missing > 0)
      fail(ErrorKind::Runtime, "the RTL of '{}' stalled: {} of {} outputs never came (deadlock)",
           design_.top, rep.missing, 2 * n);
    if (rep.mismatches > 0)
      fail(ErrorKind::Internal, "the RTL of '{}' differs from the emulator in {} outputs",
           design_.top, rep.mismatches);
    timing_.latencyCycles = rep.latencyCycles;
    timing_.ii = rep.ii > 0 ? rep.ii : timing_.ii;
    timing_.measured = true;
    std::vector<int64_t> logical = fromStreamOrder(rep.outputs, design_.outGeom);
    ir::Tensor y = r.values[0];
    const RealAffine* a = emu_.realAffine(emu_.layers()[design_.lastLayer].output);
    int64_t plane = 1, per = design_.outGeom.elements();
    const ir::Shape& sh = emu_.planned()[design_.lastLayer]->outShape;
    for (size_t k = 2; k < sh.size(); ++k)
      plane *= sh[k];
    for (size_t i = 0; i < logical.size() && int64_t(i) < y.numElements(); ++i)
      y.data<float>()[i] = float(a ? a->real(logical[i], design_.outFormat, int64_t(i) % per, plane)
                                   : dequantize(logical[i], design_.outFormat));
    return {std::move(y)};
  }

  void setProfiling(bool on) override {
    profiling_ = on;
    samples_ = 0;
  }

  std::vector<ir::LayerTime> profile() const override {
    std::vector<ir::LayerTime> out;
    if (!profiling_ || !timing_.rtl) return out;
    // Each layer's busy time for the runs so far: its cycles per sample for every sample.
    double samples = double(samples_);
    for (const RtlStage& s : design_.stages)
      out.push_back({s.layer, samples * double(stageCycles(s)) / (o_.clockMhz * 1e3), "cycles",
                     stageCycles(s)});
    return out;
  }

  FpgaTiming timing() const override { return timing_; }

  ir::Resources resources() const override {
    return timing_.rtl ? design_.resources() : ir::Resources{};
  }

  double modelledSeconds() const override {
    if (!timing_.rtl || lastSamples_ == 0) return -1;
    return designSeconds(timing_.latencyCycles, timing_.ii, lastSamples_, o_.clockMhz);
  }

private:
  // Unsupported naming the first resource the design's estimate exceeds on the part.
  void requireFits(const Device& dev) const {
    ir::Resources need = design_.resources(), have = dev.resources;
    const std::pair<const char*, std::pair<double, double>> rows[] = {
        {"LUT", {need.lut, have.lut}},
        {"FF", {need.ff, have.ff}},
        {"DSP", {need.dsp, have.dsp}},
        {"RAMB18", {need.bram18, have.bram18}}};
    for (const auto& [what, nh] : rows)
      if (nh.first > nh.second)
        fail(ErrorKind::Unsupported,
             "design '{}' does not fit the {} ({}): it needs about {:.0f} {} (estimate), the part "
             "has {:.0f}",
             design_.top, dev.name, dev.description, nh.first, what, nh.second);
  }

  FpgaTargetOptions o_;
  Emulator emu_;
  VerilogDesign design_;
  FpgaTiming timing_;
  fs::path dir_;
  bool profiling_ = false;
  int64_t lastSamples_ = 0, samples_ = 0; // the last run's samples; all since profiling began
};

class Target final : public ir::Target {
public:
  explicit Target(FpgaTargetOptions o) : o_(std::move(o)) {
    if (!o_.part.empty()) findDevice(o_.part); // Usage listing the known parts
  }
  std::string_view name() const override { return "fpga"; }
  std::string_view description() const override {
    return "FPGA: fixed-point dataflow (bit-accurate emulator; Verilog, Verilator, Yosys)";
  }
  ir::Support supports(const ir::Node& n) const override { return fpgaSupport(n); }
  std::unique_ptr<ir::Executable> compile(const ir::Graph& g,
                                          const ir::CompileSettings&) const override {
    return std::make_unique<Executable>(g, o_);
  }
  std::vector<ir::NodeCost> estimate(const ir::Graph& g,
                                     const ir::CostContext& ctx) const override {
    return estimateGraph(g, ctx, o_);
  }

private:
  FpgaTargetOptions o_;
};

} // namespace

std::unique_ptr<ir::Target> makeFpgaTarget(FpgaTargetOptions o) {
  return std::make_unique<Target>(std::move(o));
}

} // namespace triad::fpga
