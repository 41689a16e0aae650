// Device models for the cost model, measured on this machine through the targets themselves: a
// dense layer (MatMul 256x512x512) gives the sustained GFLOP/s, an element-wise Add over 16 MiB
// operands the bandwidth, a 16-element Relu the fixed cost per layer. Results are cached per
// host, target and device in a JSON file, so that planning is instant after the first time.
#pragma once

#include "ir/Cost.h"
#include "ir/Target.h"

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace triad::ir::partition {

/// Measures `t` (compiles and runs three small graphs).
DeviceModel measureDevice(const Target& t, const CompileSettings& s);

/// The default cache: $TRIAD_CACHE_DIR/calibration.json, else ~/.cache/triad/calibration.json.
std::filesystem::path defaultCalibrationPath();

/// Device models for `targets` (those without a device model, e.g. the FPGA, are skipped): from
/// the cache when it has this host's entry for the target and `key` (a device name; empty for
/// host targets), else measured and stored (atomically). `progress` gets a line per measurement.
DeviceModel calibratedDevice(const Target& t, const CompileSettings& s, const std::string& key,
                             const std::filesystem::path& cache, bool force,
                             const std::function<void(const std::string&)>& progress);

} // namespace triad::ir::partition

namespace triad::ir::partition {

/// Per-node measured seconds from a target's per-layer profile (layer name, seconds per run): a
/// layer named like a node gives that node its time; a fused layer whose name joins its nodes'
/// names (sanitized: '/' dropped, other punctuation '_', joined by '_', as the CPU target names
/// its groups) shares its time among them in proportion to their analytic work.
std::map<std::string, double>
measuredFromProfile(const Graph& g, const std::vector<std::pair<std::string, double>>& layers);

} // namespace triad::ir::partition
