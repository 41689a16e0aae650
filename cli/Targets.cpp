#include "cli/Targets.h"

#include "cli/Commands.h"
#include "cpu/CpuTarget.h"
#include "fpga/Devices.h"
#include "fpga/FpgaTarget.h"
#include "gpu/GpuTarget.h"
#include "ir/partition/Calibration.h"

#include <fmt/format.h>

namespace triad::cli {

void addPlanTargetOptions(CLI::App& cmd, PlanTargetOptions& o) {
  cmd.add_option("--threads", o.threads,
                 "Threads of the CPU target (default: TRIAD_THREADS, else the physical cores)")
      ->check(positiveInt());
  cmd.add_option("--device", o.device, "OpenCL device of the gpu target (see `triad devices`)");
  cmd.add_option("--reuse", o.reuse, "FPGA reuse factor of Dense and Conv layers, or 'auto'")
      ->capture_default_str();
  cmd.add_option("--clock-mhz", o.clockMhz, "FPGA clock the cycle counts are converted at")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--fpga-part", o.fpgaPart,
                 "FPGA part whose resources bound what is placed on it (e.g. xc7a100t, xcku115, "
                 "xcvu9p); default: no limit");
}

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

} // namespace triad::cli
