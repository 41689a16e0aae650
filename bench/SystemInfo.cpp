#include "bench/SystemInfo.h"

#include "gpu/OpenCL.h"
#include "ir/Cost.h"
#include "ir/System.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef TRIAD_GIT_COMMIT
#define TRIAD_GIT_COMMIT "unknown"
#endif
#ifndef TRIAD_VERSION
#define TRIAD_VERSION "unknown"
#endif

namespace triad::bench {

namespace {

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The first line of `cmd`'s output, or "not found".
std::string toolVersion(const std::string& cmd) {
  int rc = 0;
  std::string out;
  try {
    out = runCapture(cmd + " 2>/dev/null", &rc);
  } catch (const Error&) {
    return "not found";
  }
  if (rc != 0 || trim(out).empty()) return "not found";
  return trim(out.substr(0, out.find('\n')));
}

// The compiler the CPU target runs: $TRIAD_CXX, else $CXX, else c++ (cpu/CpuTarget).
std::string cpuCompiler() {
  for (const char* v : {"TRIAD_CXX", "CXX"})
    if (const char* c = std::getenv(v); c && *c) return c;
  return "c++";
}

} // namespace

std::string cpuModelName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return trim(line.substr(line.find(':') + 1));
  utsname u{};
  uname(&u);
  return u.machine;
}

namespace {

// The commit of the source tree the binary was built from, asked at run time (a configure-time
// value goes stale with incremental builds), "+dirty" with uncommitted changes; the configure-time
// value outside a git checkout.
std::string sourceCommit() {
#ifdef TRIAD_SOURCE_DIR
  int rc = 0;
  std::string dir = shellQuote(TRIAD_SOURCE_DIR);
  std::string head = runCapture("git -C " + dir + " rev-parse --short HEAD 2>/dev/null", &rc);
  while (!head.empty() && std::isspace(static_cast<unsigned char>(head.back())))
    head.pop_back();
  if (rc == 0 && !head.empty()) {
    int drc = 0;
    std::string dirty =
        runCapture("git -C " + dir + " status --porcelain --untracked-files=no 2>/dev/null", &drc);
    return drc == 0 && !dirty.empty() ? head + "+dirty" : head;
  }
#endif
  return TRIAD_GIT_COMMIT;
}

} // namespace
nlohmann::json hostSystemJson() {
  nlohmann::json j;
  utsname u{};
  uname(&u);
  j["host"] = u.nodename;
  j["os"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  j["cpu_model"] = cpuModelName();
  j["cores_physical"] = physicalCores();
  j["threads_logical"] = sysconf(_SC_NPROCESSORS_ONLN);
  double memGib = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)) / (1 << 30);
  j["memory_gib"] = std::round(memGib * 10) / 10;
  j["compiler"] = toolVersion(shellQuote(cpuCompiler()) + " --version");
  j["verilator"] = toolVersion("verilator --version");
  j["yosys"] = toolVersion("yosys -V");
  j["triad_commit"] = sourceCommit();
  j["triad_version"] = TRIAD_VERSION;
  return j;
}

nlohmann::json openclJson() {
  nlohmann::json list = nlohmann::json::array();
  for (const gpu::PlatformInfo& p : gpu::listPlatforms())
    for (const gpu::DeviceInfo& d : p.devices)
      list.push_back({{"platform", p.name},
                      {"device", d.name},
                      {"type", d.type},
                      {"version", d.deviceVersion},
                      {"driver", d.driverVersion}});
  return list;
}

nlohmann::json modelJson(const std::string& path, const frontend::ImportResult& r) {
  const ir::Graph& g = r.graph;
  int64_t params = 0, macs = 0;
  for (const ir::Value* c : g.constants())
    params += c->type().numElements();
  for (const auto& n : g.nodes())
    macs += ir::nodeWork(*n).macs;
  nlohmann::json j;
  j["path"] = path;
  j["name"] = std::filesystem::path(path).stem().string();
  j["nodes"] = g.nodes().size();
  j["params"] = params;
  j["macs"] = macs;
  j["inputs"] = nlohmann::json::array();
  j["outputs"] = nlohmann::json::array();
  for (const ir::Value* v : g.inputs())
    j["inputs"].push_back({{"name", v->name()}, {"type", typeToString(v->type())}});
  for (const ir::Value* v : g.outputs())
    j["outputs"].push_back({{"name", v->name()}, {"type", typeToString(v->type())}});
  j["producer"] = r.producer;
  return j;
}

} // namespace triad::bench
