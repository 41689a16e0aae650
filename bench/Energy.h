// Energy counters for `triad bench`: Linux powercap RAPL (the CPU packages, read by the parent
// around every timed round) and NVML (an NVIDIA GPU's total energy, read inside the GPU
// target's worker process). Where a counter is missing or unreadable the reading says why;
// the report then holds null and that reason, never an estimate.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace triad::bench {

/// One reading of every RAPL package zone (intel-rapl:N whose name starts with "package").
struct RaplSample {
  std::vector<uint64_t> microjoules; // energy_uj per zone
  std::vector<uint64_t> rangeUj;     // max_energy_range_uj per zone (the wraparound point)
};

class Rapl {
public:
  /// Looks for the zones under `root` (default /sys/class/powercap); available() says whether
  /// they are there and readable, why() why not.
  explicit Rapl(std::filesystem::path root = "/sys/class/powercap");
  bool available() const { return !zones_.empty(); }
  const std::string& why() const { return why_; }
  std::optional<RaplSample> read() const;
  /// Joules between two readings, each zone's counter wrapping around at its range.
  static double joules(const RaplSample& before, const RaplSample& after);

private:
  std::vector<std::filesystem::path> zones_;
  std::string why_;
};

/// The total energy of the NVIDIA GPU whose name matches, through libnvidia-ml.so.1 (dlopen:
/// no build dependency). Millijoules since the driver loaded.
class Nvml {
public:
  /// `deviceName`: the OpenCL device's name, matched against NVML's device names (empty: the
  /// first device).
  explicit Nvml(const std::string& deviceName);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  bool available() const { return device_ != nullptr; }
  const std::string& why() const { return why_; }
  std::optional<uint64_t> millijoules() const;

private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
  std::string why_;
};

} // namespace triad::bench
