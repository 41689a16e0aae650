#include "fpga/Cost.h"

#include "fpga/Devices.h"
#include "fpga/Emulator.h"
#include "fpga/layers/Layer.h"
#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace triad::fpga {

double designSeconds(int64_t latencyCycles, double ii, int64_t samples, double clockMhz) {
  return (double(latencyCycles) + double(std::max<int64_t>(samples - 1, 0)) * ii) /
         (clockMhz * 1e6);
}

namespace {

int64_t batchOf(const ir::Graph& g) {
  if (g.inputs().empty() || g.inputs()[0]->type().shape.empty()) return 1;
  return std::max<int64_t>(g.inputs()[0]->type().shape[0], 1);
}

VerilogOptions designOptions(const ir::Graph& g, const FpgaTargetOptions& o) {
  VerilogOptions vo;
  vo.name = g.name.empty() ? "model" : g.name;
  vo.reuse = o.reuse;
  vo.clockMhz = o.clockMhz;
  return vo;
}

// The node alone as a graph: its data inputs become graph inputs (from the host), its constants
// are copied, its first output is the graph's.
ir::Graph nodeGraph(const ir::Node& n) {
  ir::Graph s;
  s.name = n.name();
  std::vector<ir::Value*> ins;
  for (ir::Value* v : n.inputs()) {
    if (!v) {
      ins.push_back(nullptr);
    } else if (ir::Value* seen = s.findValue(v->name())) {
      ins.push_back(seen);
    } else {
      ins.push_back(v->isConstant() ? s.addConstant(v->name(), v->constant())
                                    : s.addInput(v->name(), v->type()));
    }
  }
  std::vector<std::string> names;
  std::vector<ir::TensorType> types;
  for (ir::Value* v : n.outputs()) {
    names.push_back(v->name());
    types.push_back(v->type());
  }
  ir::Node* m = s.addNode(n.kind(), n.name(), ins, n.attrsPtr(), names, types);
  s.addOutput(m->output(0));
  return s;
}

// Costs of the planned layers of `emu` from the design `d`, into the nodes of the same names.
void fromDesign(const Emulator& emu, const VerilogDesign& d, int64_t batch, double clockMhz,
                std::map<std::string, ir::NodeCost*>& byName) {
  auto costOf = [&](const std::string& name) -> ir::NodeCost* {
    auto it = byName.find(name);
    return it == byName.end() ? nullptr : it->second;
  };
  const auto& layers = emu.layers();
  for (size_t li = 0; li < layers.size(); ++li) {
    const LayerInfo& L = layers[li];
    ir::NodeCost* c = costOf(L.name);
    if (!c) continue;
    auto st = std::find_if(d.stages.begin(), d.stages.end(),
                           [&](const RtlStage& s) { return s.layerIndex == li; });
    if (st == d.stages.end()) {
      c->seconds = 0;
      c->basis = "pass-through: no logic (the stream is renamed)";
    } else {
      int64_t cycles = stageCyclesPerSample(*st);
      c->seconds = double(st->fillCycles + (batch - 1) * cycles) / (clockMhz * 1e6);
      c->resources = st->resources;
      c->basis = fmt::format("cycle model: {} cycles/sample, fill {} cycles, batch {} at {:g} MHz",
                             cycles, st->fillCycles, batch, clockMhz);
    }
    for (const std::string& f : L.folded)
      if (ir::NodeCost* fc = costOf(f)) {
        fc->seconds = 0;
        fc->basis = fmt::format("in layer {}", L.name);
      }
  }
  for (const RtlFifo& f : d.fifos)
    if (ir::NodeCost* c = costOf(f.layer)) c->resources += estimateFifo(f.width, f.depth);
}

// Plans `g` as one design and fills the costs of its nodes; false (and why) when it has none.
bool planDesign(const ir::Graph& g, const FpgaTargetOptions& o,
                std::map<std::string, ir::NodeCost*>& byName, std::string* why) {
  try {
    Emulator emu(g, o.config);
    VerilogDesign d = emitVerilog(g, emu, designOptions(g, o));
    if (d.lastLayer + 1 != emu.layers().size()) {
      *why = "the design does not reach the graph's output";
      return false;
    }
    fromDesign(emu, d, batchOf(g), o.clockMhz, byName);
    return true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
    *why = e.what();
    return false;
  }
}

} // namespace

std::vector<ir::NodeCost> estimateGraph(const ir::Graph& g, const ir::CostContext& ctx,
                                        const FpgaTargetOptions& o) {
  std::vector<ir::NodeCost> out(g.nodes().size());
  std::map<std::string, ir::NodeCost*> byName;
  bool allSupported = true;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const ir::Node& n = *g.nodes()[i];
    ir::Support s = fpgaSupport(n);
    out[i].supported = s.ok;
    out[i].reason = s.reason;
    allSupported = allSupported && s.ok;
    byName.emplace(n.name(), &out[i]);
  }
  std::string why;
  bool whole = allSupported && planDesign(g, o, byName, &why);
  if (!whole) {
    // Node by node: a partition may hold any subset of the supported nodes.
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (!out[i].supported) continue;
      const ir::Node& n = *g.nodes()[i];
      ir::Graph one = nodeGraph(n);
      std::map<std::string, ir::NodeCost*> mine = {{n.name(), &out[i]}};
      std::string alone;
      if (planDesign(one, o, mine, &alone)) {
        out[i].basis += " (planned alone)";
        continue;
      }
      // No RTL even alone: one transfer per cycle through the stream.
      int64_t transfers = 1;
      for (ir::Value* v : n.outputs())
        if (v && !v->type().shape.empty())
          transfers = std::max(transfers, streamGeomOf(v->type().shape).transfers());
      int64_t batch = n.output(0)->type().shape.empty() ? 1 : n.output(0)->type().shape[0];
      out[i].seconds = double(transfers * std::max<int64_t>(batch, 1)) / (o.clockMhz * 1e6);
      out[i].basis = fmt::format("stream model: {} transfers/sample at {:g} MHz (no RTL alone: {})",
                                 transfers, o.clockMhz, alone);
    }
  }
  if (auto mit = ctx.measured.find("fpga"); mit != ctx.measured.end())
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (auto it = mit->second.find(g.nodes()[i]->name()); it != mit->second.end()) {
        out[i].seconds = it->second;
        out[i].basis = "measured";
      }
  return out;
}

// Energy ---------------------------------------------------------------------------------------

namespace {

// Energy per resource per active cycle, picojoules: orders of magnitude of what Xilinx's Power
// Estimator (XPE, UG440) gives for 7-series logic at its default 12.5 % toggle rate (a LUT and
// its share of routing; a flip-flop and its share of the clock tree; a DSP48E1 multiplying; a
// RAMB18 read), scaled for the newer processes by their lower core voltage and capacitance.
struct EnergyCoefficients {
  double lut, ff, dsp, bram18; // pJ per active cycle
};

EnergyCoefficients coefficientsFor(DeviceFamily f) {
  switch (f) {
  case DeviceFamily::Xc7:
    return {0.08, 0.03, 3.0, 6.0};
  case DeviceFamily::UltraScale:
    return {0.06, 0.022, 2.2, 4.5};
  case DeviceFamily::UltraScalePlus:
    return {0.04, 0.015, 1.5, 3.0};
  case DeviceFamily::Ice40:
    return {0.15, 0.05, 5.0, 4.0};
  }
  return {0.08, 0.03, 3.0, 6.0};
}

double dynamicPicojoulesPerCycle(const ir::Resources& r, const EnergyCoefficients& k) {
  return r.lut * k.lut + r.ff * k.ff + r.dsp * k.dsp + r.bram18 * k.bram18;
}

} // namespace

EnergyEstimate estimateEnergy(const ir::Resources& r, double activity, double clockMhz,
                              double secondsPerInference, const std::string& part) {
  if (!(activity >= 0 && activity <= 1))
    fail(ErrorKind::Usage, "energy estimate: activity {} is outside [0, 1]", activity);
  if (!(clockMhz > 0))
    fail(ErrorKind::Usage, "energy estimate: clock {} MHz is not positive", clockMhz);
  if (!(secondsPerInference >= 0))
    fail(ErrorKind::Usage, "energy estimate: {} s per inference is negative", secondsPerInference);
  EnergyEstimate e;
  DeviceFamily family = DeviceFamily::Xc7;
  std::string where = "no part named: static power left out, 7-series coefficients";
  if (!part.empty()) {
    const Device& d = findDevice(part);
    family = d.family;
    e.staticWatts = d.staticWatts;
    where =
        fmt::format("{} ({}): static {:.3g} W typical", d.name, toString(d.family), d.staticWatts);
  }
  EnergyCoefficients k = coefficientsFor(family);
  e.dynamicWatts = dynamicPicojoulesPerCycle(r, k) * 1e-12 * activity * clockMhz * 1e6;
  e.staticJoules = e.staticWatts * secondsPerInference;
  e.dynamicJoules = e.dynamicWatts * secondsPerInference;
  e.joules = e.staticJoules + e.dynamicJoules;
  e.model = fmt::format(
      "estimate, not a measurement: {}; dynamic = ({:.0f} LUT x {} + {:.0f} FF x {} + {:.0f} DSP "
      "x {} + {:.1f} RAMB18 x {}) pJ/cycle x activity {:.3g} x {:g} MHz = {:.3g} W; x {:.3g} s "
      "per inference = {:.3g} J",
      where, r.lut, k.lut, r.ff, k.ff, r.dsp, k.dsp, r.bram18, k.bram18, activity, clockMhz,
      e.dynamicWatts, secondsPerInference, e.joules);
  return e;
}

double designActivity(const VerilogDesign& d) {
  double ii = 1;
  for (const RtlStage& s : d.stages)
    ii = std::max(ii, double(stageCyclesPerSample(s)));
  EnergyCoefficients k = coefficientsFor(DeviceFamily::Xc7);
  double busy = 0, all = 0;
  for (const RtlStage& s : d.stages) {
    double w = dynamicPicojoulesPerCycle(s.resources, k);
    busy += w * std::min(1.0, double(stageCyclesPerSample(s)) / ii);
    all += w;
  }
  return all > 0 ? busy / all : 0;
}

} // namespace triad::fpga
