#include "bench/PlanTargets.h"

#include "bench/Bench.h"
#include "cpu/CpuTarget.h"
#include "fpga/Devices.h"
#include "fpga/FpgaTarget.h"
#include "gpu/GpuTarget.h"
#include "ir/partition/Calibration.h"

#include "fpga/QuantConfig.h"
#include "ir/Diagnostics.h"

#include <fmt/format.h>

namespace triad::bench {

Targets makeTargets(const PlanTargetOptions& o) {
  Targets t;
  t.registry.add(ir::makeInterpreterTarget());
  cpu::CpuOptions co;
  co.threads = o.threads;
  t.registry.add(cpu::makeCpuTarget(co));
  gpu::GpuOptions go;
  go.device = o.device;
  t.registry.add(gpu::makeGpuTarget(go));
  fpga::FpgaTargetOptions fo;
  fo.clockMhz = o.clockMhz;
  fo.part = o.fpgaPart;
  if (o.reuse == "auto") {
    fo.autoReuse = true;
  } else {
    try {
      size_t used = 0;
      fo.reuse = std::stoll(o.reuse, &used);
      if (used != o.reuse.size() || fo.reuse < 1) throw std::invalid_argument(o.reuse);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--reuse '{}': expected a positive whole number or 'auto'", o.reuse);
    }
  }
  t.registry.add(fpga::makeFpgaTarget(fo));
  return t;
}

namespace {

// Nominal models where nothing is measured: orders of magnitude, not this machine.
ir::DeviceModel nominal(const std::string& target) {
  if (target == "interp") return {1, 2, 2};
  if (target == "gpu") return {500, 100, 10};
  return {50, 10, 0.3};
}

} // namespace

void fillCosts(const Targets& t, const PlanTargetOptions& o, ir::partition::Options& po,
               bool calibrate, bool force, const std::function<void(const std::string&)>& note) {
  ir::CompileSettings s;
  s.threads = o.threads;
  if (!o.fpgaPart.empty()) {
    const fpga::Device& d = fpga::findDevice(o.fpgaPart);
    po.costs.fpgaPart = d.name;
    po.costs.fpgaBudget = d.resources;
  }
  std::vector<std::string> kept;
  bool gpuLinkFromFile =
      po.links.toHost.count("gpu") && po.links.toHost.at("gpu").basis.rfind("links file", 0) == 0;
  for (const std::string& name : po.targets) {
    if (name == "fpga") { // the cycle model needs no device model
      kept.push_back(name);
      continue;
    }
    if (!calibrate) {
      po.costs.devices[name] = nominal(name);
      kept.push_back(name);
      continue;
    }
    std::string key;
    try {
      if (name == "gpu") key = gpu::selectDevice(o.device).name;
      po.costs.devices[name] = ir::partition::calibratedDevice(
          *t.registry.find(name), s, key, ir::partition::defaultCalibrationPath(), force, note);
      if (name == "gpu" && !gpuLinkFromFile)
        po.links.toHost["gpu"] = gpu::measureHostLink(o.device);
      kept.push_back(name);
    } catch (const Error& e) {
      if (note) note(fmt::format("{}: left out of the plan: {}", name, e.what()));
    }
  }
  if (kept.empty()) fail(ErrorKind::Unsupported, "none of the targets can run on this machine");
  po.targets = kept;
}

void checkOptions(const BenchOptions& b, const ir::TargetRegistry& targets) {
  for (const std::string& t : b.targets)
    if (t != "auto" && !targets.find(t))
      fail(ErrorKind::Usage, "--targets: no target '{}' (available: {}, auto)", t, targets.names());
  if (b.targets.empty() && b.peers.empty())
    fail(ErrorKind::Usage, "--targets and --peers are both empty: nothing to run");
  if (b.batches.empty()) fail(ErrorKind::Usage, "--batch: no batch size given");
  for (int64_t v : b.batches)
    if (v < 1)
      fail(ErrorKind::Usage, "--batch '{}': expected positive whole numbers, e.g. 1,8,32", v);
  if (!b.labels.empty() && b.data.empty())
    fail(ErrorKind::Usage, "--labels needs --data (the labels of its rows)");
  if (!(b.clockMhz > 0 && b.clockMhz <= 1000))
    fail(ErrorKind::Usage, "--clock-mhz {}: expected a clock in (0, 1000] MHz", b.clockMhz);
  if (b.reuse != "auto") {
    try {
      size_t used = 0;
      if (std::stoll(b.reuse, &used) < 1 || used != b.reuse.size())
        throw std::invalid_argument(b.reuse);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--reuse '{}': expected a positive whole number or 'auto'", b.reuse);
    }
  }
  if (!b.precision.empty()) fpga::QuantConfig::fromCommandLine("", b.precision, {});
  if (b.precisions.empty()) fail(ErrorKind::Usage, "--precision: no precision given");
  for (const std::string& p : b.precisions)
    if (p != "fp32" && p != "int8")
      fail(ErrorKind::Usage, "--precision '{}': expected fp32 and/or int8, e.g. fp32,int8", p);
  if (!(b.timeoutS > 0)) fail(ErrorKind::Usage, "--timeout {}: expected seconds > 0", b.timeoutS);
}

void setMeasuredPlanCosts(BenchOptions& b) {
  PlanTargetOptions pto;
  pto.threads = b.threads;
  pto.reuse = b.reuse;
  pto.clockMhz = b.clockMhz;
  pto.fpgaPart = b.fpgaPart;
  b.planCosts = [pto](ir::partition::Options& po, std::vector<std::string>* notes) {
    Targets t = makeTargets(pto);
    fillCosts(t, pto, po, true, false,
              [notes](const std::string& line) { notes->push_back(line); });
  };
}

} // namespace triad::bench
