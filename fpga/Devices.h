// Named FPGA parts and their resources (the vendors' datasheets), for resource budgets
// (`FpgaTargetOptions::part`, the partitioner's CostContext::fpgaBudget) and the energy
// estimate's static power (fpga/Cost.h).
#pragma once

#include "ir/Cost.h"

#include <string>
#include <string_view>
#include <vector>

namespace triad::fpga {

/// The architecture a part belongs to: it selects the energy model's per-resource coefficients.
enum class DeviceFamily { Xc7, UltraScale, UltraScalePlus, Ice40 };
std::string_view toString(DeviceFamily f);

struct Device {
  std::string name; // lower case, e.g. "xc7a35t"
  DeviceFamily family = DeviceFamily::Xc7;
  std::string description; // "Artix-7 35T (Arty A7-35)"
  /// LUT: LUT6 (iCE40: LUT4); FF: CLB flip-flops; DSP: DSP48E1/E2 slices (iCE40: SB_MAC16);
  /// BRAM18: 18 Kib block RAMs (two per 36 Kib block; iCE40: its 4 Kib EBRs in 18 Kib units).
  ir::Resources resources;
  /// Typical static power of the device at 25 C junction, watts (an order of magnitude for the
  /// energy estimate, XPE-style; see docs/fpga.md, "Energy (estimate)").
  double staticWatts = 0;
  std::string source; // the datasheet the numbers come from
};

/// Every known part, in a stable order.
const std::vector<Device>& knownDevices();
/// The part named `name` (case-insensitive; a "xc"-less or package-suffixed name is not
/// guessed). Usage error listing the known parts when there is none.
const Device& findDevice(std::string_view name);
/// "xc7a35t, xc7a100t, ..." for messages.
std::string knownDeviceNames();

} // namespace triad::fpga
