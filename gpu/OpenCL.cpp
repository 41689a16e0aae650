#include "gpu/OpenCL.h"

#include "gpu/BinaryCache.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <utility>

namespace triad::gpu {

// ---------------------------------------------------------------------------------------------
// Errors

std::string clErrorName(cl_int code) {
  switch (code) {
#define TRIAD_CL_ERROR(e)                                                                          \
  case e:                                                                                          \
    return #e;
    TRIAD_CL_ERROR(CL_SUCCESS)
    TRIAD_CL_ERROR(CL_DEVICE_NOT_FOUND)
    TRIAD_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    TRIAD_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    TRIAD_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TRIAD_CL_ERROR(CL_OUT_OF_RESOURCES)
    TRIAD_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    TRIAD_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    TRIAD_CL_ERROR(CL_MEM_COPY_OVERLAP)
    TRIAD_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    TRIAD_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    TRIAD_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    TRIAD_CL_ERROR(CL_MAP_FAILURE)
    TRIAD_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    TRIAD_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TRIAD_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    TRIAD_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    TRIAD_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    TRIAD_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    TRIAD_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    TRIAD_CL_ERROR(CL_INVALID_VALUE)
    TRIAD_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    TRIAD_CL_ERROR(CL_INVALID_PLATFORM)
    TRIAD_CL_ERROR(CL_INVALID_DEVICE)
    TRIAD_CL_ERROR(CL_INVALID_CONTEXT)
    TRIAD_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    TRIAD_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    TRIAD_CL_ERROR(CL_INVALID_HOST_PTR)
    TRIAD_CL_ERROR(CL_INVALID_MEM_OBJECT)
    TRIAD_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    TRIAD_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_SAMPLER)
    TRIAD_CL_ERROR(CL_INVALID_BINARY)
    TRIAD_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    TRIAD_CL_ERROR(CL_INVALID_PROGRAM)
    TRIAD_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    TRIAD_CL_ERROR(CL_INVALID_KERNEL_NAME)
    TRIAD_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    TRIAD_CL_ERROR(CL_INVALID_KERNEL)
    TRIAD_CL_ERROR(CL_INVALID_ARG_INDEX)
    TRIAD_CL_ERROR(CL_INVALID_ARG_VALUE)
    TRIAD_CL_ERROR(CL_INVALID_ARG_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    TRIAD_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    TRIAD_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    TRIAD_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    TRIAD_CL_ERROR(CL_INVALID_EVENT)
    TRIAD_CL_ERROR(CL_INVALID_OPERATION)
    TRIAD_CL_ERROR(CL_INVALID_GL_OBJECT)
    TRIAD_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_MIP_LEVEL)
    TRIAD_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    TRIAD_CL_ERROR(CL_INVALID_PROPERTY)
    TRIAD_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    TRIAD_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    TRIAD_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    TRIAD_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef TRIAD_CL_ERROR
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return fmt::format("CL_UNKNOWN_ERROR({})", code);
  }
}

void throwClError(cl_int code, std::string_view call, std::string_view kernel,
                  std::string_view detail) {
  std::string msg = fmt::format("{} failed", call);
  if (!kernel.empty()) msg += fmt::format(" for kernel '{}'", kernel);
  msg += fmt::format(": {} ({})", clErrorName(code), code);
  if (!detail.empty()) msg += fmt::format(" [{}]", detail);
  throw Error(ErrorKind::Runtime, std::move(msg));
}

// ---------------------------------------------------------------------------------------------
// Platforms and devices

namespace {

std::string platformString(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  checkCl(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  checkCl(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' '))
    s.pop_back();
  return s;
}

std::string deviceString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  checkCl(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  checkCl(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' '))
    s.pop_back();
  return s;
}

template <typename T> T deviceValue(cl_device_id d, cl_device_info what) {
  T v{};
  checkCl(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

std::string typeName(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "GPU";
  if (t & CL_DEVICE_TYPE_CPU) return "CPU";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
  if (t & CL_DEVICE_TYPE_CUSTOM) return "CUSTOM";
  return "DEFAULT";
}

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string deviceList(const std::vector<PlatformInfo>& platforms) {
  std::string s;
  for (const PlatformInfo& p : platforms)
    for (const DeviceInfo& d : p.devices)
      s += fmt::format("\n  [{}] {}", d.globalIndex, d.label());
  return s;
}

} // namespace

std::string DeviceInfo::label() const {
  return fmt::format("{}:{} {} ({})", platformIndex, deviceIndex, name, platformName);
}

std::vector<PlatformInfo> listPlatforms() {
  cl_uint n = 0;
  cl_int rc = clGetPlatformIDs(0, nullptr, &n);
  if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (rc == CL_SUCCESS && n == 0)) return {};
  checkCl(rc, "clGetPlatformIDs");
  std::vector<cl_platform_id> ids(n);
  checkCl(clGetPlatformIDs(n, ids.data(), nullptr), "clGetPlatformIDs");

  std::vector<PlatformInfo> result;
  int global = 0;
  for (cl_uint pi = 0; pi < n; ++pi) {
    PlatformInfo p;
    p.index = int(pi);
    p.name = platformString(ids[pi], CL_PLATFORM_NAME);
    p.vendor = platformString(ids[pi], CL_PLATFORM_VENDOR);
    p.version = platformString(ids[pi], CL_PLATFORM_VERSION);
    cl_uint nd = 0;
    rc = clGetDeviceIDs(ids[pi], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (rc != CL_DEVICE_NOT_FOUND) checkCl(rc, "clGetDeviceIDs", {});
    std::vector<cl_device_id> devs(nd);
    if (nd > 0)
      checkCl(clGetDeviceIDs(ids[pi], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr),
              "clGetDeviceIDs");
    for (cl_uint di = 0; di < nd; ++di) {
      DeviceInfo d;
      d.platform = ids[pi];
      d.id = devs[di];
      d.platformIndex = int(pi);
      d.deviceIndex = int(di);
      d.globalIndex = global++;
      d.platformName = p.name;
      d.platformVendor = p.vendor;
      d.platformVersion = p.version;
      d.name = deviceString(d.id, CL_DEVICE_NAME);
      d.vendor = deviceString(d.id, CL_DEVICE_VENDOR);
      d.type = typeName(deviceValue<cl_device_type>(d.id, CL_DEVICE_TYPE));
      d.driverVersion = deviceString(d.id, CL_DRIVER_VERSION);
      d.deviceVersion = deviceString(d.id, CL_DEVICE_VERSION);
      d.openclCVersion = deviceString(d.id, CL_DEVICE_OPENCL_C_VERSION);
      d.computeUnits = deviceValue<cl_uint>(d.id, CL_DEVICE_MAX_COMPUTE_UNITS);
      d.maxClockMHz = deviceValue<cl_uint>(d.id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
      d.globalMemBytes = deviceValue<cl_ulong>(d.id, CL_DEVICE_GLOBAL_MEM_SIZE);
      d.localMemBytes = deviceValue<cl_ulong>(d.id, CL_DEVICE_LOCAL_MEM_SIZE);
      d.maxAllocBytes = deviceValue<cl_ulong>(d.id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      d.maxWorkGroupSize = deviceValue<size_t>(d.id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      cl_uint dims = deviceValue<cl_uint>(d.id, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
      d.maxWorkItemSizes.resize(dims);
      checkCl(clGetDeviceInfo(d.id, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
                              d.maxWorkItemSizes.data(), nullptr),
              "clGetDeviceInfo");
      d.localMemIsDedicated =
          deviceValue<cl_device_local_mem_type>(d.id, CL_DEVICE_LOCAL_MEM_TYPE) == CL_LOCAL;
      d.preferredVectorWidthFloat =
          deviceValue<cl_uint>(d.id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
      d.nativeVectorWidthFloat = deviceValue<cl_uint>(d.id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
      d.extensions = deviceString(d.id, CL_DEVICE_EXTENSIONS);
      d.fp64 = d.extensions.find("cl_khr_fp64") != std::string::npos;
      if (d.extensions.find("cl_nv_device_attribute_query") != std::string::npos) {
        // CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV / _MINOR_NV (cl_ext.h's values).
        cl_uint major = 0, minor = 0;
        if (clGetDeviceInfo(d.id, 0x4000, sizeof major, &major, nullptr) == CL_SUCCESS &&
            clGetDeviceInfo(d.id, 0x4001, sizeof minor, &minor, nullptr) == CL_SUCCESS)
          d.nvComputeCapability = int(major * 10 + minor);
      }
      p.devices.push_back(std::move(d));
    }
    result.push_back(std::move(p));
  }
  return result;
}

DeviceInfo selectDevice(const std::vector<PlatformInfo>& platforms, std::string_view spec) {
  std::vector<const DeviceInfo*> all;
  for (const PlatformInfo& p : platforms)
    for (const DeviceInfo& d : p.devices)
      all.push_back(&d);
  if (all.empty())
    fail(ErrorKind::Unsupported,
         "no OpenCL device found: {} (install a vendor's OpenCL driver, or PoCL's CPU device: "
         "apt-get install pocl-opencl-icd)",
         platforms.empty() ? "the ICD loader reports no platform"
                           : "the OpenCL platforms have no devices");

  if (spec.empty()) { // the first GPU, else the first device
    for (const DeviceInfo* d : all)
      if (d->type == "GPU") return *d;
    return *all.front();
  }
  if (allDigits(spec)) {
    size_t i = std::stoul(std::string(spec));
    if (i >= all.size())
      fail(ErrorKind::Usage, "OpenCL device '{}': there are only {} devices:{}", spec, all.size(),
           deviceList(platforms));
    return *all[i];
  }
  if (size_t colon = spec.find(':'); colon != std::string_view::npos &&
                                     allDigits(spec.substr(0, colon)) &&
                                     allDigits(spec.substr(colon + 1))) {
    size_t pi = std::stoul(std::string(spec.substr(0, colon)));
    size_t di = std::stoul(std::string(spec.substr(colon + 1)));
    if (pi >= platforms.size() || di >= platforms[pi].devices.size())
      fail(ErrorKind::Usage, "OpenCL device '{}': no such platform:device; the devices are:{}",
           spec, deviceList(platforms));
    return platforms[pi].devices[di];
  }
  std::string want = lower(spec);
  for (const DeviceInfo* d : all)
    if (lower(d->name).find(want) != std::string::npos) return *d;
  for (const DeviceInfo* d : all)
    if (lower(d->platformName).find(want) != std::string::npos ||
        lower(d->platformVendor).find(want) != std::string::npos)
      return *d;
  fail(ErrorKind::Usage, "OpenCL device '{}' matches no device name or platform name:{}", spec,
       deviceList(platforms));
}

DeviceInfo selectDevice(std::string_view spec) {
  std::string s(spec);
  if (s.empty())
    if (const char* env = std::getenv("TRIAD_OPENCL_DEVICE"); env && *env) s = env;
  return selectDevice(listPlatforms(), s);
}

// ---------------------------------------------------------------------------------------------
// Profile

uint64_t Profile::totalNs(ProfileEvent::Kind k) const {
  uint64_t t = 0;
  for (const ProfileEvent& e : events)
    if (e.kind == k) t += e.ns;
  return t;
}

std::map<std::string, uint64_t> Profile::perKernelNs() const {
  std::map<std::string, uint64_t> m;
  for (const ProfileEvent& e : events)
    if (e.kind == ProfileEvent::Kind::Kernel) m[e.name] += e.ns;
  return m;
}

std::string Profile::summary() const {
  std::map<std::string, std::pair<uint64_t, int>> perKernel;
  size_t h2dBytes = 0, d2hBytes = 0;
  for (const ProfileEvent& e : events) {
    if (e.kind == ProfileEvent::Kind::Kernel) {
      perKernel[e.name].first += e.ns;
      perKernel[e.name].second++;
    } else if (e.kind == ProfileEvent::Kind::HostToDevice) {
      h2dBytes += e.bytes;
    } else {
      d2hBytes += e.bytes;
    }
  }
  std::string s = fmt::format("{:<40} {:>8} {:>12}\n", "kernel", "launches", "device ms");
  for (const auto& [name, v] : perKernel)
    s += fmt::format("{:<40} {:>8} {:>12.3f}\n", name, v.second, double(v.first) * 1e-6);
  s += fmt::format("{:<40} {:>8} {:>12.3f}\n", "total kernels", "", double(kernelNs()) * 1e-6);
  s += fmt::format("{:<40} {:>8} {:>12.3f}  ({} bytes)\n", "host-to-device", "",
                   double(hostToDeviceNs()) * 1e-6, h2dBytes);
  s += fmt::format("{:<40} {:>8} {:>12.3f}  ({} bytes)\n", "device-to-host", "",
                   double(deviceToHostNs()) * 1e-6, d2hBytes);
  return s;
}

// ---------------------------------------------------------------------------------------------
// RAII handles

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (mem_) clReleaseMemObject(mem_);
    mem_ = std::exchange(o.mem_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    name_ = std::move(o.name_);
  }
  return *this;
}

Buffer::~Buffer() {
  if (mem_) clReleaseMemObject(mem_);
}

Kernel& Kernel::operator=(Kernel&& o) noexcept {
  if (this != &o) {
    if (kernel_) clReleaseKernel(kernel_);
    kernel_ = std::exchange(o.kernel_, nullptr);
    name_ = std::move(o.name_);
  }
  return *this;
}

Kernel::~Kernel() {
  if (kernel_) clReleaseKernel(kernel_);
}

Kernel& Kernel::arg(cl_uint index, const Buffer& b) {
  cl_mem m = b.get();
  cl_int rc = clSetKernelArg(kernel_, index, sizeof m, &m);
  if (rc != CL_SUCCESS)
    throwClError(rc, fmt::format("clSetKernelArg(argument {}, buffer '{}')", index, b.name()),
                 name_);
  return *this;
}

Kernel& Kernel::rawArg(cl_uint index, size_t size, const void* value) {
  cl_int rc = clSetKernelArg(kernel_, index, size, value);
  if (rc != CL_SUCCESS)
    throwClError(rc, fmt::format("clSetKernelArg(argument {}, {} bytes)", index, size), name_);
  return *this;
}

size_t Kernel::maxWorkGroupSize(cl_device_id device) const {
  size_t v = 0;
  checkCl(
      clGetKernelWorkGroupInfo(kernel_, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof v, &v, nullptr),
      "clGetKernelWorkGroupInfo", name_);
  return v;
}

Program& Program::operator=(Program&& o) noexcept {
  if (this != &o) {
    if (program_) clReleaseProgram(program_);
    program_ = std::exchange(o.program_, nullptr);
    name_ = std::move(o.name_);
    fromCache_ = o.fromCache_;
  }
  return *this;
}

Program::~Program() {
  if (program_) clReleaseProgram(program_);
}

std::vector<std::string> Program::kernelNames() const {
  size_t n = 0;
  checkCl(clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n), "clGetProgramInfo",
          name_);
  std::string s(n, '\0');
  checkCl(clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, n, s.data(), nullptr),
          "clGetProgramInfo", name_);
  std::vector<std::string> names;
  std::string cur;
  for (char c : s) {
    if (c == ';' || c == '\0') {
      if (!cur.empty()) names.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) names.push_back(cur);
  return names;
}

Kernel Program::kernel(std::string_view kernelName) const {
  cl_int rc = CL_SUCCESS;
  std::string name(kernelName);
  cl_kernel k = clCreateKernel(program_, name.c_str(), &rc);
  if (rc != CL_SUCCESS) {
    std::string have;
    try {
      for (const std::string& n : kernelNames()) {
        if (!have.empty()) have += ", ";
        have += n;
      }
    } catch (const Error&) {
    }
    throwClError(rc, fmt::format("clCreateKernel (program '{}')", name_), name,
                 have.empty() ? std::string() : "the program has: " + have);
  }
  return Kernel(k, name);
}

std::string NDRange::toString() const {
  auto dimsOf = [&](const std::array<size_t, 3>& a) {
    std::string s;
    for (cl_uint i = 0; i < dims; ++i) {
      if (i) s += 'x';
      s += std::to_string(a[i]);
    }
    return s;
  };
  bool anyLocal = local[0] || local[1] || local[2];
  return fmt::format("global {}, local {}", dimsOf(global), anyLocal ? dimsOf(local) : "auto");
}

// ---------------------------------------------------------------------------------------------
// Context

Context::Context(const DeviceInfo& device, ContextOptions options)
    : device_(device), options_(std::move(options)) {
  cl_int rc = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(device_.platform), 0};
  context_ = clCreateContext(props, 1, &device_.id, nullptr, nullptr, &rc);
  checkCl(rc, fmt::format("clCreateContext (device '{}')", device_.name));
  queue_ = clCreateCommandQueue(context_, device_.id, CL_QUEUE_PROFILING_ENABLE, &rc);
  if (rc != CL_SUCCESS) {
    clReleaseContext(context_);
    throwClError(rc, fmt::format("clCreateCommandQueue (device '{}')", device_.name));
  }
}

Context::~Context() {
  if (queue_) clFinish(queue_);
  for (Pending& p : pending_)
    clReleaseEvent(p.event);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

std::filesystem::path Context::cacheDir() const {
  return options_.cacheDir ? *options_.cacheDir : defaultCacheRoot() / "opencl";
}

Buffer Context::buffer(size_t bytes, std::string name, cl_mem_flags flags) {
  cl_int rc = CL_SUCCESS;
  // OpenCL rejects zero-sized buffers; an empty tensor still gets a valid handle.
  cl_mem m = clCreateBuffer(context_, flags, std::max<size_t>(bytes, 4), nullptr, &rc);
  if (rc != CL_SUCCESS)
    throwClError(rc, fmt::format("clCreateBuffer ('{}', {} bytes)", name, bytes));
  return Buffer(m, bytes, std::move(name));
}

void Context::track(cl_event e, ProfileEvent::Kind kind, std::string name, size_t bytes) {
  ProfileEvent r;
  r.kind = kind;
  r.name = std::move(name);
  r.bytes = bytes;
  pending_.push_back({e, std::move(r)});
}

void Context::write(const Buffer& b, const void* host, size_t bytes, size_t offset) {
  if (bytes == 0) return;
  if (offset + bytes > b.bytes())
    fail(ErrorKind::Internal, "write of {} bytes at {} overflows buffer '{}' ({} bytes)", bytes,
         offset, b.name(), b.bytes());
  cl_event e = nullptr;
  cl_int rc = clEnqueueWriteBuffer(queue_, b.get(), CL_TRUE, offset, bytes, host, 0, nullptr, &e);
  if (rc != CL_SUCCESS)
    throwClError(rc, fmt::format("clEnqueueWriteBuffer ('{}', {} bytes)", b.name(), bytes));
  track(e, ProfileEvent::Kind::HostToDevice, b.name(), bytes);
}

void Context::read(const Buffer& b, void* host, size_t bytes, size_t offset) {
  if (bytes == 0) return;
  if (offset + bytes > b.bytes())
    fail(ErrorKind::Internal, "read of {} bytes at {} overflows buffer '{}' ({} bytes)", bytes,
         offset, b.name(), b.bytes());
  cl_event e = nullptr;
  cl_int rc = clEnqueueReadBuffer(queue_, b.get(), CL_TRUE, offset, bytes, host, 0, nullptr, &e);
  if (rc != CL_SUCCESS)
    throwClError(rc, fmt::format("clEnqueueReadBuffer ('{}', {} bytes)", b.name(), bytes));
  track(e, ProfileEvent::Kind::DeviceToHost, b.name(), bytes);
}

void Context::launch(const Kernel& k, const NDRange& range) {
  bool anyLocal = range.local[0] || range.local[1] || range.local[2];
  cl_event e = nullptr;
  cl_int rc = clEnqueueNDRangeKernel(queue_, k.get(), range.dims, nullptr, range.global.data(),
                                     anyLocal ? range.local.data() : nullptr, 0, nullptr, &e);
  if (rc != CL_SUCCESS) throwClError(rc, "clEnqueueNDRangeKernel", k.name(), range.toString());
  track(e, ProfileEvent::Kind::Kernel, k.name(), 0);
}

void Context::finish() {
  cl_int rc = clFinish(queue_);
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  std::string failure;
  for (Pending& p : pending) {
    cl_int status = CL_COMPLETE;
    cl_int q =
        clGetEventInfo(p.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (failure.empty() && (q != CL_SUCCESS || status < 0)) {
      cl_int code = q != CL_SUCCESS ? q : status;
      failure = p.record.kind == ProfileEvent::Kind::Kernel
                    ? fmt::format("kernel '{}' failed on the device: {} ({})", p.record.name,
                                  clErrorName(code), code)
                    : fmt::format("transfer of '{}' failed: {} ({})", p.record.name,
                                  clErrorName(code), code);
    }
    cl_ulong start = 0, end = 0;
    if (status == CL_COMPLETE &&
        clGetEventProfilingInfo(p.event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                nullptr) == CL_SUCCESS &&
        clGetEventProfilingInfo(p.event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) ==
            CL_SUCCESS &&
        end >= start)
      p.record.ns = end - start;
    clReleaseEvent(p.event);
    profile_.events.push_back(std::move(p.record));
  }
  if (!failure.empty()) throw Error(ErrorKind::Runtime, failure);
  if (rc != CL_SUCCESS) throwClError(rc, "clFinish");
}

// ---------------------------------------------------------------------------------------------
// Program builds

namespace {

std::string kernelsIn(const std::string& source) {
  static const std::regex re(R"((?:__kernel|kernel)\s+void\s+([A-Za-z_][A-Za-z0-9_]*))");
  std::string names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), re);
       it != std::sregex_iterator(); ++it) {
    if (!names.empty()) names += ", ";
    names += (*it)[1].str();
  }
  return names;
}

std::string buildLog(cl_program p, cl_device_id d) {
  size_t n = 0;
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS)
    return "(no build log)";
  std::string s(n, '\0');
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr) != CL_SUCCESS)
    return "(no build log)";
  while (!s.empty() && (s.back() == '\0' || s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s.empty() ? "(empty build log)" : s;
}

std::string joinOptions(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

} // namespace

Program Context::buildFromSource(const std::string& source, const std::string& options,
                                 std::string_view name) {
  auto t0 = std::chrono::steady_clock::now();
  cl_int rc = CL_SUCCESS;
  const char* src = source.c_str();
  size_t len = source.size();
  cl_program p = clCreateProgramWithSource(context_, 1, &src, &len, &rc);
  checkCl(rc, fmt::format("clCreateProgramWithSource (program '{}')", name));
  Program program(p, std::string(name), false);
  rc = clBuildProgram(p, 1, &device_.id, options.c_str(), nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    std::string kernels = kernelsIn(source);
    throw Error(ErrorKind::Runtime,
                fmt::format("clBuildProgram failed for program '{}' (kernels: {}) on '{}': {} "
                            "({})\nbuild options: {}\nbuild log:\n{}",
                            name, kernels.empty() ? "none" : kernels, device_.name, clErrorName(rc),
                            rc, options, buildLog(p, device_.id)));
  }
  stats_.compiledFromSource++;
  stats_.compileSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return program;
}

Program Context::build(const std::string& source, const std::string& options,
                       std::string_view name) {
  std::string full = joinOptions(options_.baseBuildOptions, options);
  if (!options_.useCache) return buildFromSource(source, full, name);

  BinaryCache cache(cacheDir());
  std::string key =
      BinaryCache::makeKey(source, full, device_.name, device_.driverVersion, device_.platformName);
  BinaryCache::LoadResult hit = cache.load(name, key);
  if (hit.status == BinaryCache::LoadStatus::Hit) {
    const unsigned char* bin = reinterpret_cast<const unsigned char*>(hit.binary.data());
    size_t len = hit.binary.size();
    cl_int status = CL_SUCCESS, rc = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(context_, 1, &device_.id, &len, &bin, &status, &rc);
    if (rc == CL_SUCCESS && status == CL_SUCCESS) {
      Program program(p, std::string(name), true);
      if (clBuildProgram(p, 1, &device_.id, full.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        stats_.loadedFromCache++;
        return program;
      }
    } else if (p) {
      clReleaseProgram(p);
    }
    stats_.rejectedCacheEntries++; // the driver refused the binary: rebuild and overwrite
  } else if (hit.status == BinaryCache::LoadStatus::Corrupt) {
    stats_.rejectedCacheEntries++;
  } else if (hit.status == BinaryCache::LoadStatus::Untrusted) {
    stats_.rejectedCacheEntries++; // never loaded: not ours, or others can write it
    stats_.untrustedCacheEntries++;
    stats_.untrustedCacheReason = hit.why;
  }

  Program program = buildFromSource(source, full, name);
  size_t binSize = 0;
  if (clGetProgramInfo(program.get(), CL_PROGRAM_BINARY_SIZES, sizeof binSize, &binSize, nullptr) ==
          CL_SUCCESS &&
      binSize > 0) {
    std::string bin(binSize, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    if (clGetProgramInfo(program.get(), CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) ==
        CL_SUCCESS)
      if (std::string why; !cache.store(name, key, bin, &why)) {
        stats_.cacheWriteFailures++;
        stats_.cacheWriteError = why;
      }
  }
  return program;
}

} // namespace triad::gpu
