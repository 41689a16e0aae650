#include "fpga/Devices.h"

#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace triad::fpga {

std::string_view toString(DeviceFamily f) {
  switch (f) {
  case DeviceFamily::Xc7:
    return "7-series";
  case DeviceFamily::UltraScale:
    return "UltraScale";
  case DeviceFamily::UltraScalePlus:
    return "UltraScale+";
  case DeviceFamily::Ice40:
    return "iCE40";
  }
  return "?";
}

const std::vector<Device>& knownDevices() {
  // Resources: LUT, FF, DSP, RAMB18 (= 2 x the 36 Kib blocks). Static power: typical at 25 C,
  // orders of magnitude of what XPE reports for an idle configured part (not measured here).
  static const std::vector<Device> devices = {
      {"xc7a35t",
       DeviceFamily::Xc7,
       "Artix-7 35T",
       {20800, 41600, 90, 100},
       0.08,
       "DS180 (7 Series FPGAs Data Sheet: Overview), Table 3"},
      {"xc7a100t",
       DeviceFamily::Xc7,
       "Artix-7 100T",
       {63400, 126800, 240, 270},
       0.11,
       "DS180, Table 3"},
      {"xc7a200t",
       DeviceFamily::Xc7,
       "Artix-7 200T",
       {134600, 269200, 740, 730},
       0.2,
       "DS180, Table 3"},
      {"xc7z020",
       DeviceFamily::Xc7,
       "Zynq-7000 Z-7020 (programmable logic)",
       {53200, 106400, 220, 280},
       0.12,
       "DS190 (Zynq-7000 SoC Data Sheet: Overview), Table 1"},
      {"xc7k325t",
       DeviceFamily::Xc7,
       "Kintex-7 325T",
       {203800, 407600, 840, 890},
       0.3,
       "DS180, Table 6"},
      {"xcku115",
       DeviceFamily::UltraScale,
       "Kintex UltraScale KU115",
       {663360, 1326720, 5520, 4320},
       1.5,
       "DS890 (UltraScale Architecture and Product Data Sheet: Overview), Table 3"},
      {"xcvu9p",
       DeviceFamily::UltraScalePlus,
       "Virtex UltraScale+ VU9P",
       {1182240, 2364480, 6840, 4320},
       3.0,
       "DS890, Table 12 (also 960 UltraRAMs, not counted)"},
      {"xcu250",
       DeviceFamily::UltraScalePlus,
       "Alveo U250 (its XCU250 device, whole)",
       {1728000, 3456000, 12288, 5376},
       4.5,
       "DS962 (Alveo U200 and U250 Data Center Accelerator Cards); UltraRAM not counted; the "
       "platform's shell takes part of it"},
      {"ice40up5k",
       DeviceFamily::Ice40,
       "iCE40 UltraPlus UP5K",
       {5280, 5280, 8, 30.0 * 4096 / 18432},
       100e-6,
       "FPGA-DS-02008 (iCE40 UltraPlus Family Data Sheet): 30 EBR of 4 Kib; the 1 Mib SPRAM "
       "not counted"},
      {"ice40hx8k",
       DeviceFamily::Ice40,
       "iCE40 HX8K",
       {7680, 7680, 0, 32.0 * 4096 / 18432},
       1.3e-3,
       "FPGA-DS-02029 (iCE40 LP/HX Family Data Sheet): 32 EBR of 4 Kib, no DSP"},
  };
  return devices;
}

std::string knownDeviceNames() {
  std::string s;
  for (const Device& d : knownDevices())
    s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

const Device& findDevice(std::string_view name) {
  std::string key(name);
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  for (const Device& d : knownDevices())
    if (d.name == key) return d;
  fail(ErrorKind::Usage, "unknown FPGA part '{}'; the known parts are {}", name,
       knownDeviceNames());
}

} // namespace triad::fpga
