// Small operating-system helpers shared by the tool-driving code (the CPU target's compiler
// runs, Verilator and Yosys in sim/): running a shell command, quoting for the shell, and the
// content hash that keys build caches.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace triad {

/// Runs `cmd` with /bin/sh and returns its standard output; `*rc` gets pclose's status.
/// Throws triad::Error(Io) when the shell cannot be started.
std::string runCapture(const std::string& cmd, int* rc);

/// `s` in single quotes, safe as one shell word.
std::string shellQuote(std::string_view s);

/// The Python that runs the project's helper scripts: $TRIAD_PYTHON, else the first of the
/// virtual environments `venvs` (folders under the source tree `root`) that has bin/python,
/// else `fallback`.
std::string projectPython(std::string_view root, std::initializer_list<const char*> venvs,
                          std::string_view fallback);

/// Physical cores this process may run on: the distinct (package, core) pairs of the CPUs in
/// its affinity mask, from /sys (SMT siblings count once); the logical CPU count where that is
/// not readable. At least 1.
int physicalCores();

/// 64-bit FNV-1a over `s`, continuing from `h` (start with kFnvOffset): cache keys.
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
uint64_t fnv1a(uint64_t h, std::string_view s);

} // namespace triad
