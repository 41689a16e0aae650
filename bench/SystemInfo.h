// The system under test in a `triad bench` report (docs/report-schema.md, "system"), and the
// model's description ("model"). The OpenCL part and the model import run in a probe process
// (bench/Bench.cpp) so that the parent never holds OpenCL or importer state when it forks the
// targets' workers.
#pragma once

#include "frontend/OnnxImporter.h"

#include <nlohmann/json.hpp>
#include <string>

namespace triad::bench {

/// Host, OS, CPU model, cores, threads, memory, the CPU target's compiler, Verilator and Yosys
/// versions, Triad's commit and version. Tools that are missing read "not found".
nlohmann::json hostSystemJson();

/// "model name" of /proc/cpuinfo (or the architecture when absent).
std::string cpuModelName();

/// Every OpenCL platform and device: [{"platform","device","version","driver"}]. Call in a
/// child process only (it loads the OpenCL driver). Empty when there is no platform.
nlohmann::json openclJson();

/// path, name, nodes, params, macs (at the batch it was imported with), inputs and outputs with
/// their types, of the imported model `r`.
nlohmann::json modelJson(const std::string& path, const frontend::ImportResult& r);

} // namespace triad::bench
