#include "bench/Energy.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace triad::bench {

namespace fs = std::filesystem;

namespace {

std::optional<uint64_t> readNumber(const fs::path& p) {
  std::ifstream f(p);
  uint64_t v = 0;
  if (!(f >> v)) return std::nullopt;
  return v;
}

std::string readWord(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  f >> s;
  return s;
}

std::string lower(std::string s) {
  for (char& c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

Rapl::Rapl(fs::path root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    why_ = fmt::format("no RAPL counters: {} absent", root.string());
    return;
  }
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    // Top-level zones only ("intel-rapl:0", not the sub-zone "intel-rapl:0:0").
    if (name.rfind("intel-rapl:", 0) != 0 || name.find(':', 11) != std::string::npos) continue;
    if (readWord(e.path() / "name").rfind("package", 0) != 0) continue;
    found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    why_ = fmt::format("no RAPL counters: no intel-rapl package zone under {}", root.string());
    return;
  }
  for (const fs::path& z : found)
    if (!readNumber(z / "energy_uj")) {
      why_ = fmt::format("RAPL counters not readable: {} (root only on Linux >= 5.10)",
                         (z / "energy_uj").string());
      return;
    }
  zones_ = std::move(found);
}

std::optional<RaplSample> Rapl::read() const {
  if (zones_.empty()) return std::nullopt;
  RaplSample s;
  for (const fs::path& z : zones_) {
    auto uj = readNumber(z / "energy_uj");
    if (!uj) return std::nullopt;
    s.microjoules.push_back(*uj);
    s.rangeUj.push_back(readNumber(z / "max_energy_range_uj").value_or(0));
  }
  return s;
}

double Rapl::joules(const RaplSample& before, const RaplSample& after) {
  double uj = 0;
  for (size_t i = 0; i < before.microjoules.size() && i < after.microjoules.size(); ++i) {
    uint64_t a = before.microjoules[i], b = after.microjoules[i];
    uint64_t range = i < after.rangeUj.size() ? after.rangeUj[i] : 0;
    if (b >= a)
      uj += double(b - a);
    else if (range > a)
      uj += double(range - a + b); // wrapped once
  }
  return uj * 1e-6;
}

Nvml::Nvml(const std::string& deviceName) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_ = "no NVML: libnvidia-ml.so.1 not found";
    return;
  }
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned*);
  using HandleFn = int (*)(unsigned, void**);
  using NameFn = int (*)(void*, char*, unsigned);
  auto init = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib_, "nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib_, "nvmlDeviceGetName"));
  energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
      dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
  if (!init || !count || !handle || !name || !energy_) {
    why_ = "no NVML: libnvidia-ml.so.1 lacks the energy functions";
    return;
  }
  if (int rc = init(); rc != 0) {
    why_ = fmt::format("no NVML: nvmlInit failed ({})", rc);
    return;
  }
  unsigned n = 0;
  if (count(&n) != 0 || n == 0) {
    why_ = "no NVML device";
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    void* h = nullptr;
    char buf[96] = {};
    if (handle(i, &h) != 0 || name(h, buf, sizeof buf) != 0) continue;
    std::string nm = lower(buf), want = lower(deviceName);
    if (want.empty() || nm.find(want) != std::string::npos || want.find(nm) != std::string::npos) {
      unsigned long long mj = 0;
      if (energy_(h, &mj) != 0) {
        why_ = fmt::format("NVML has no energy counter for {} (needs Volta or newer)", buf);
        return;
      }
      device_ = h;
      return;
    }
  }
  why_ = fmt::format("no NVML device named like '{}'", deviceName);
}

Nvml::~Nvml() {
  // nvmlShutdown is left out on purpose: the worker process ends right after.
}

std::optional<uint64_t> Nvml::millijoules() const {
  if (!device_) return std::nullopt;
  unsigned long long mj = 0;
  if (energy_(device_, &mj) != 0) return std::nullopt;
  return uint64_t(mj);
}

} // namespace triad::bench
