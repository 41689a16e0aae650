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
#include <future>
#include <optional>
#include <string>

namespace triad::gpu {

struct GpuOptions {
  std::string device; // selector (see selectDevice); empty: $TRIAD_OPENCL_DEVICE, else default
  std::optional<std::filesystem::path> cacheDir;   // program binary cache (ContextOptions)
  std::optional<std::filesystem::path> tuningPath; // unset: TuningDb::defaultPath()
  bool useTuning = true;                           // read tuned GEMM/conv parameters
  bool fuse = true;
  /// QDQ models run on the integer kernels (fuse-qdq: QLinearConv, QLinearMatMul,
  /// MatMulInteger) where exact; TRIAD_GPU_QDQ=int|float overrides.
  bool qdqInteger = true;
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

  /// The asynchronous mode: up to `lanes` runs in flight. Each lane is a copy of the program's
  /// buffers (arena, inputs, outputs and weights: `lanes` times the device memory) with its own
  /// context, in-order command queue and host thread, so that one run's transfers, host steps
  /// and kernel launches overlap another's kernels where the device can (copy engines, several
  /// compute queues; on PoCL's CPU device the lanes share its cores). The lanes are built on the
  /// first call (the OpenCL program comes from the binary cache); 0 drops them.
  virtual void setInFlight(int lanes) = 0;
  virtual int inFlight() const = 0;
  /// Hands `inputs` to the next free lane and returns at once (setInFlight(1) first if no lanes
  /// were set); the future yields the outputs, or rethrows the run's error. Runs complete in
  /// any order; each future belongs to its own inputs. run() stays synchronous and independent
  /// of the lanes.
  virtual std::future<std::vector<ir::Tensor>> submit(std::vector<ir::Tensor> inputs) = 0;
};

std::unique_ptr<ir::Target> makeGpuTarget(GpuOptions opts = {});

} // namespace triad::gpu

#include "ir/partition/Partition.h"

namespace triad::gpu {

/// The host<->device link of an OpenCL device, measured: blocking writes and reads of 16 MiB for
/// the bandwidth and of 4 bytes for the latency (medians of a few, host wall time).
ir::partition::Link measureHostLink(const std::string& device = {});

} // namespace triad::gpu
