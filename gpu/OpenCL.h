// The GPU target's host runtime: a thin RAII layer over the OpenCL 1.2 C API as exposed by the
// ICD loader (ocl-icd), so it runs on any vendor's platform (NVIDIA, AMD, Intel) and on PoCL's
// CPU device, which CI uses.
//
//  - Platforms and devices are enumerated once (listPlatforms) and selected by index ("2" is the
//    third device in `triad devices` order, "1:0" is platform 1, device 0) or by a
//    case-insensitive substring of the device or platform name (selectDevice; the CLI's
//    `--device` and the environment variable TRIAD_OPENCL_DEVICE).
//  - Every OpenCL failure is a triad::Error naming the call, the kernel or program, and the
//    error code's name (CL_OUT_OF_RESOURCES, ...); a failed build carries the build log.
//  - A Context owns one cl_context and one in-order command queue with profiling enabled. Every
//    kernel launch and every transfer is recorded with its event; finish() resolves the events
//    into a Profile: per-kernel device time, host-to-device and device-to-host times separately.
//  - Programs are built through a binary cache (gpu/BinaryCache.h) keyed by source hash, build
//    options, device name and driver version; an entry that is not the user's own, or that
//    others can write, is never loaded (ir/TrustedFile.h).
#pragma once

#include "ir/Diagnostics.h"

#include <CL/cl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triad::gpu {

/// "CL_OUT_OF_RESOURCES" for -5, ...; "CL_UNKNOWN_ERROR(<code>)" for codes OpenCL 1.2 does not
/// name.
std::string clErrorName(cl_int code);

/// Throws triad::Error (ErrorKind::Runtime) "<call> failed[ for kernel '<k>']: <CL_NAME> (<code>)".
[[noreturn]] void throwClError(cl_int code, std::string_view call, std::string_view kernel = {},
                               std::string_view detail = {});

/// Checks an OpenCL return code; `kernel` names the kernel or program involved, if any.
inline void checkCl(cl_int code, std::string_view call, std::string_view kernel = {}) {
  if (code != CL_SUCCESS) throwClError(code, call, kernel);
}

// ---------------------------------------------------------------------------------------------
// Platforms and devices

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  int platformIndex = 0; // position of the platform in clGetPlatformIDs order
  int deviceIndex = 0;   // position of the device within its platform
  int globalIndex = 0;   // position in the flat list over all platforms ("triad devices")
  std::string platformName, platformVendor, platformVersion;
  std::string name, vendor, type; // type: "GPU", "CPU", "ACCELERATOR", "DEFAULT" or "CUSTOM"
  std::string driverVersion;      // CL_DRIVER_VERSION
  std::string deviceVersion;      // CL_DEVICE_VERSION ("OpenCL 3.0 PoCL ...")
  std::string openclCVersion;     // CL_DEVICE_OPENCL_C_VERSION ("OpenCL C 1.2 ...")
  std::string extensions;         // CL_DEVICE_EXTENSIONS, space-separated
  uint32_t computeUnits = 0;
  uint32_t maxClockMHz = 0;
  uint64_t globalMemBytes = 0;
  uint64_t localMemBytes = 0;
  uint64_t maxAllocBytes = 0;
  size_t maxWorkGroupSize = 0;
  std::vector<size_t> maxWorkItemSizes;
  bool localMemIsDedicated = false; // CL_LOCAL vs CL_GLOBAL local-memory type
  bool fp64 = false;                // cl_khr_fp64: double in kernels
  int nvComputeCapability = 0;      // NVIDIA devices (cl_nv_device_attribute_query): 90 = sm_90
  uint32_t preferredVectorWidthFloat = 1; // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
  uint32_t nativeVectorWidthFloat = 1;    // CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (SIMD lanes)

  /// "0:0 pthread-skylake-avx512-AMD EPYC (Portable Computing Language)"
  std::string label() const;
};

struct PlatformInfo {
  int index = 0;
  std::string name, vendor, version;
  std::vector<DeviceInfo> devices;
};

/// Every platform the ICD loader knows and its devices. Empty when there is no platform (no ICD
/// installed, or the loader reports CL_PLATFORM_NOT_FOUND_KHR); other failures throw.
std::vector<PlatformInfo> listPlatforms();

/// Picks a device. `spec` is, in order of precedence: the argument, else $TRIAD_OPENCL_DEVICE,
/// else empty (the first GPU, or the first device of any type when there is no GPU).
///   "N"      the N-th device over all platforms, in listPlatforms order
///   "P:D"    device D of platform P
///   other    the first device whose name, or else whose platform's name or vendor, contains
///            `spec` (case-insensitive)
/// Throws ErrorKind::Unsupported when there is no OpenCL platform or device at all, and
/// ErrorKind::Usage when `spec` matches nothing (the message lists the devices there are).
DeviceInfo selectDevice(std::string_view spec = {});

/// The same, over a given list (for tests and for callers that enumerated already).
DeviceInfo selectDevice(const std::vector<PlatformInfo>& platforms, std::string_view spec);

// ---------------------------------------------------------------------------------------------
// Profiling

struct ProfileEvent {
  enum class Kind { Kernel, HostToDevice, DeviceToHost };
  Kind kind = Kind::Kernel;
  std::string name; // kernel name, or the buffer's name for transfers
  uint64_t ns = 0;  // CL_PROFILING_COMMAND_END - CL_PROFILING_COMMAND_START
  size_t bytes = 0; // transfers only
};

struct Profile {
  std::vector<ProfileEvent> events; // in submission order

  uint64_t totalNs(ProfileEvent::Kind k) const;
  uint64_t kernelNs() const { return totalNs(ProfileEvent::Kind::Kernel); }
  uint64_t hostToDeviceNs() const { return totalNs(ProfileEvent::Kind::HostToDevice); }
  uint64_t deviceToHostNs() const { return totalNs(ProfileEvent::Kind::DeviceToHost); }
  /// Device time per kernel name, summed over its launches.
  std::map<std::string, uint64_t> perKernelNs() const;
  void clear() { events.clear(); }
  /// A small table: one line per kernel, then the transfer totals.
  std::string summary() const;
};

// ---------------------------------------------------------------------------------------------
// RAII handles

/// A device buffer (cl_mem), named for error messages and transfer profiles.
class Buffer {
public:
  Buffer() = default;
  Buffer(cl_mem mem, size_t bytes, std::string name)
      : mem_(mem), bytes_(bytes), name_(std::move(name)) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  cl_mem get() const { return mem_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

private:
  cl_mem mem_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
};

/// A kernel object from a built Program; arguments are set by index.
class Kernel {
public:
  Kernel() = default;
  Kernel(cl_kernel k, std::string name) : kernel_(k), name_(std::move(name)) {}
  Kernel(Kernel&& o) noexcept { *this = std::move(o); }
  Kernel& operator=(Kernel&& o) noexcept;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel();

  cl_kernel get() const { return kernel_; }
  const std::string& name() const { return name_; }

  Kernel& arg(cl_uint index, const Buffer& b);
  Kernel& arg(cl_uint index, int32_t v) { return rawArg(index, sizeof v, &v); }
  Kernel& arg(cl_uint index, uint32_t v) { return rawArg(index, sizeof v, &v); }
  Kernel& arg(cl_uint index, float v) { return rawArg(index, sizeof v, &v); }
  /// A __local buffer argument of `bytes` bytes.
  Kernel& localArg(cl_uint index, size_t bytes) { return rawArg(index, bytes, nullptr); }
  /// Sets all arguments in order: buffers and scalars.
  template <typename... Args> Kernel& args(const Args&... a) {
    cl_uint i = 0;
    (arg(i++, a), ...);
    return *this;
  }
  /// Work-group size limit of this kernel on `device` (CL_KERNEL_WORK_GROUP_SIZE).
  size_t maxWorkGroupSize(cl_device_id device) const;

private:
  Kernel& rawArg(cl_uint index, size_t size, const void* value);
  cl_kernel kernel_ = nullptr;
  std::string name_;
};

/// A built program. `fromCache` says whether it came from the binary cache.
class Program {
public:
  Program() = default;
  Program(cl_program p, std::string name, bool fromCache)
      : program_(p), name_(std::move(name)), fromCache_(fromCache) {}
  Program(Program&& o) noexcept { *this = std::move(o); }
  Program& operator=(Program&& o) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  cl_program get() const { return program_; }
  const std::string& name() const { return name_; }
  bool fromCache() const { return fromCache_; }
  /// A kernel of this program; an unknown name throws naming the program and the kernels it has.
  Kernel kernel(std::string_view kernelName) const;
  std::vector<std::string> kernelNames() const;

private:
  cl_program program_ = nullptr;
  std::string name_;
  bool fromCache_ = false;
};

/// One- to three-dimensional launch geometry. `local` all zero lets the runtime choose.
struct NDRange {
  cl_uint dims = 1;
  std::array<size_t, 3> global{1, 1, 1};
  std::array<size_t, 3> local{0, 0, 0};
  std::string toString() const; // "global 64x32, local 8x8"
};

struct ContextOptions {
  /// Binary cache folder; unset: $TRIAD_CACHE_DIR/opencl, else ~/.cache/triad/opencl.
  std::optional<std::filesystem::path> cacheDir;
  bool useCache = true;
  /// Extra options prepended to every build (e.g. "-cl-fast-relaxed-math").
  std::string baseBuildOptions = "-cl-std=CL1.2";
};

/// Counts of what Context::build did, for tests and reports.
struct BuildStats {
  int compiledFromSource = 0;
  int loadedFromCache = 0;
  int rejectedCacheEntries = 0;     // corrupt, untrusted or unloadable entries that were rebuilt
  int untrustedCacheEntries = 0;    // of those, entries not loaded for trust (ir/TrustedFile.h)
  std::string untrustedCacheReason; // why the last one was not trusted
  int cacheWriteFailures = 0;       // entries that could not be written (not fatal)
  std::string cacheWriteError;      // why the last one failed (the path and the system's reason)
  double compileSeconds = 0;
};

/// A device, its context and its in-order profiling queue.
class Context {
public:
  explicit Context(const DeviceInfo& device, ContextOptions options = {});
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const DeviceInfo& device() const { return device_; }
  cl_context get() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  const ContextOptions& options() const { return options_; }
  std::filesystem::path cacheDir() const;

  Buffer buffer(size_t bytes, std::string name, cl_mem_flags flags = CL_MEM_READ_WRITE);
  /// Blocking copies, recorded in the profile as transfers.
  void write(const Buffer& b, const void* host, size_t bytes, size_t offset = 0);
  void read(const Buffer& b, void* host, size_t bytes, size_t offset = 0);
  template <typename T> Buffer upload(const std::vector<T>& v, std::string name) {
    Buffer b = buffer(v.size() * sizeof(T), std::move(name));
    write(b, v.data(), v.size() * sizeof(T));
    return b;
  }
  template <typename T> std::vector<T> download(const Buffer& b) {
    std::vector<T> v(b.bytes() / sizeof(T));
    read(b, v.data(), v.size() * sizeof(T));
    return v;
  }

  /// Builds `source` with `options` (after ContextOptions::baseBuildOptions), through the binary
  /// cache. `name` names the program in errors (usually the layer or model). A compile failure
  /// throws with the build log.
  Program build(const std::string& source, const std::string& options, std::string_view name);
  const BuildStats& buildStats() const { return stats_; }

  /// Enqueues a kernel (asynchronous); its device time is recorded at finish().
  void launch(const Kernel& k, const NDRange& range);
  /// Waits for all enqueued work and moves the finished events into the profile.
  void finish();
  Profile& profile() { return profile_; }

private:
  struct Pending {
    cl_event event;
    ProfileEvent record;
  };
  void track(cl_event e, ProfileEvent::Kind kind, std::string name, size_t bytes);
  Program buildFromSource(const std::string& source, const std::string& options,
                          std::string_view name);

  DeviceInfo device_;
  ContextOptions options_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::vector<Pending> pending_;
  Profile profile_;
  BuildStats stats_;
};

} // namespace triad::gpu
