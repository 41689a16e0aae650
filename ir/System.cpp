#include "ir/System.h"

#include "ir/Diagnostics.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sched.h>
#include <set>
#include <thread>
#include <utility>

namespace triad {

std::string runCapture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) fail(ErrorKind::Io, "cannot run '{}'", cmd);
  char buf[4096];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, k);
  *rc = pclose(p);
  return out;
}

int physicalCores() {
  unsigned logical = std::thread::hardware_concurrency();
  int fallback = logical == 0 ? 1 : int(logical);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return fallback;
  std::set<std::pair<long, long>> cores; // (package, core)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pk(dir + "physical_package_id"), co(dir + "core_id");
    long p = 0, c = 0;
    if (!(pk >> p) || !(co >> c)) return std::min(fallback, CPU_COUNT(&mask));
    cores.insert({p, c});
  }
  return cores.empty() ? fallback : int(cores.size());
}

std::string projectPython(std::string_view root, std::initializer_list<const char*> venvs,
                          std::string_view fallback) {
  if (const char* p = std::getenv("TRIAD_PYTHON"); p && *p) return p;
  for (const char* v : venvs)
    if (std::filesystem::path py = std::filesystem::path(root) / v / "bin" / "python";
        std::filesystem::exists(py))
      return py.string();
  return std::string(fallback);
}

std::string shellQuote(std::string_view s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace triad
