// The GPU target: the model's OpenCL program (gpu/GpuCodeGen) built once through the binary
// cache, its buffers allocated once (arena, weights uploaded at compile time, one per graph
// input and output), and every run: inputs written, kernels enqueued in order (host steps read
// back, run the reference kernel and write back), outputs read. Per-layer device times come
// from the queue's profiling events; host-to-device and device-to-host transfers are reported
// separately.
#pragma once

#include "gpu/GpuCodeGen.h"
#include "gpu/OpenCL.h"
#include "ir/Target.h"

#include <filesystem>
#include <optional>
#include <string>

namespace triad::gpu {

struct GpuOptions {
  std::string device; // selector (see selectDevice); empty: $TRIAD_OPENCL_DEVICE, else default
  std::optional<std::filesystem::path> cacheDir;   // program binary cache (ContextOptions)
  std::optional<std::filesystem::path> tuningPath; // unset: TuningDb::defaultPath()
  bool useTuning = true;                           // read tuned GEMM/conv parameters
  bool fuse = true;
  std::string buildOptions; // extra OpenCL build options (e.g. "-Werror")
};

/// One row of a run's profile: a kernel (device time) or a host step (wall time, including the
/// transfers it needs).
struct GpuLayerTime {
  std::string layer;  // fusion group name
  std::string kernel; // kernel name; empty for host steps
  std::string kind;   // "gemm", "conv (implicit GEMM)", "host", ...
  double ms = 0;
};

struct GpuRunProfile {
  std::vector<GpuLayerTime> layers; // in execution order
  double kernelMs = 0;              // sum of the kernels' device times
  double hostMs = 0;                // host steps (reference kernels and their transfers)
  double hostToDeviceMs = 0;        // input uploads (device time of the transfers)
  double deviceToHostMs = 0;        // output downloads
  size_t hostToDeviceBytes = 0, deviceToHostBytes = 0;
  double wallMs = 0; // the whole run() as the caller sees it
  /// A per-layer table with the totals.
  std::string table() const;
};

/// The GPU executable's extra interface (reached through dynamic_cast from ir::Executable).
class GpuExecutable : public ir::Executable {
public:
  virtual const GpuProgram& program() const = 0;
  virtual const DeviceInfo& device() const = 0;
  virtual const BuildStats& buildStats() const = 0;
  /// Seconds spent in the OpenCL build (0 when the program came from the binary cache).
  virtual double compileSeconds() const = 0;
  /// The profile of the last run() (always recorded: every command has its profiling event).
  virtual const GpuRunProfile& lastProfile() const = 0;
  // ir::Executable's setProfiling()/profile(): the per-layer times of lastProfile() summed
  // over the runs since profiling was turned on, as kinds "layer" (kernels, device time),
  // "host", "h2d" and "d2h".
};

std::unique_ptr<ir::Target> makeGpuTarget(GpuOptions opts = {});

} // namespace triad::gpu

#include "ir/partition/Partition.h"

namespace triad::gpu {

/// The host<->device link of an OpenCL device, measured: blocking writes and reads of 16 MiB for
/// the bandwidth and of 4 bytes for the latency (medians of a few, host wall time).
ir::partition::Link measureHostLink(const std::string& device = {});

} // namespace triad::gpu
