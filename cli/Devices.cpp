// triad devices: list the OpenCL platforms and devices the GPU target can use, and which one
// `--device` / TRIAD_OPENCL_DEVICE (or the default: first GPU, else first device) selects.
#include "cli/Commands.h"
#include "gpu/OpenCL.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

namespace triad::cli {

namespace {

struct DevicesOptions {
  bool json = false;
  std::string device;
};

std::string bytesText(uint64_t b) {
  if (b >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(b) / double(1 << 30));
  if (b >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(b) / double(1 << 20));
  return fmt::format("{} KiB", b >> 10);
}

int runDevices(const DevicesOptions& o) {
  std::vector<gpu::PlatformInfo> platforms = gpu::listPlatforms();
  std::string spec = o.device;
  if (spec.empty())
    if (const char* env = std::getenv("TRIAD_OPENCL_DEVICE"); env && *env) spec = env;
  // Throws Unsupported (no platform or device) or Usage (the spec matches nothing).
  gpu::DeviceInfo selected = gpu::selectDevice(platforms, spec);

  if (o.json) {
    nlohmann::json j;
    j["selected"] = selected.globalIndex;
    j["platforms"] = nlohmann::json::array();
    for (const gpu::PlatformInfo& p : platforms) {
      nlohmann::json pj = {{"index", p.index},
                           {"name", p.name},
                           {"vendor", p.vendor},
                           {"version", p.version},
                           {"devices", nlohmann::json::array()}};
      for (const gpu::DeviceInfo& d : p.devices)
        pj["devices"].push_back(
            {{"index", d.globalIndex},
             {"platform_device", fmt::format("{}:{}", d.platformIndex, d.deviceIndex)},
             {"name", d.name},
             {"vendor", d.vendor},
             {"type", d.type},
             {"compute_units", d.computeUnits},
             {"max_clock_mhz", d.maxClockMHz},
             {"global_mem_bytes", d.globalMemBytes},
             {"max_alloc_bytes", d.maxAllocBytes},
             {"local_mem_bytes", d.localMemBytes},
             {"local_mem_dedicated", d.localMemIsDedicated},
             {"max_work_group_size", d.maxWorkGroupSize},
             {"max_work_item_sizes", d.maxWorkItemSizes},
             {"driver_version", d.driverVersion},
             {"device_version", d.deviceVersion},
             {"opencl_c_version", d.openclCVersion},
             {"extensions", d.extensions},
             {"nv_compute_capability", d.nvComputeCapability},
             {"selected", d.globalIndex == selected.globalIndex}});
      j["platforms"].push_back(std::move(pj));
    }
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

  for (const gpu::PlatformInfo& p : platforms) {
    fmt::print("platform {}: {} ({}), {}\n", p.index, p.name, p.vendor, p.version);
    if (p.devices.empty()) fmt::print("  (no devices)\n");
    for (const gpu::DeviceInfo& d : p.devices) {
      bool sel = d.globalIndex == selected.globalIndex;
      fmt::print("  [{}] {}:{} {}{}\n", d.globalIndex, d.platformIndex, d.deviceIndex, d.name,
                 sel ? "  (selected)" : "");
      fmt::print("      type {}, {} compute units, {} MHz\n", d.type, d.computeUnits,
                 d.maxClockMHz);
      fmt::print("      global memory {} (max allocation {}), local memory {} ({})\n",
                 bytesText(d.globalMemBytes), bytesText(d.maxAllocBytes),
                 bytesText(d.localMemBytes), d.localMemIsDedicated ? "dedicated" : "in global");
      std::string sizes;
      for (size_t s : d.maxWorkItemSizes) {
        if (!sizes.empty()) sizes += 'x';
        sizes += std::to_string(s);
      }
      fmt::print("      max work-group size {}, work-item sizes {}\n", d.maxWorkGroupSize, sizes);
      fmt::print("      driver {}, {}, {}\n", d.driverVersion, d.deviceVersion, d.openclCVersion);
    }
  }
  fmt::print("selected: [{}] {}{}\n", selected.globalIndex, selected.label(),
             spec.empty() ? " (default: first GPU, else first device)"
                          : fmt::format(" (by '{}')", spec));
  return 0;
}

} // namespace

Action addDevices(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<DevicesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "devices", "List the OpenCL platforms and devices for the GPU target, and the one selected");
  cmd->add_flag("--json", o->json, "Print the list as JSON");
  cmd->add_option("--device", o->device,
                  "Device to select: index ('1'), platform:device ('0:1') or a name substring "
                  "(default: $TRIAD_OPENCL_DEVICE, else the first GPU, else the first device)");
  return [o] { return runDevices(*o); };
}

} // namespace triad::cli
