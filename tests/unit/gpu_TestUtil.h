// Shared scaffolding of the GPU tests (gpu_*_test.cpp): one OpenCL context per test process on
// the default device (TRIAD_OPENCL_DEVICE picks another), skipping with the reason when there is
// no OpenCL platform; random data; running a generated kernel; comparing with a tolerance.
//
// The tests' program binaries are cached in <build>/gpu-test-cache, so that only the first run
// after a change pays PoCL's compile (LLVM, about 2-3 s per program): each test file puts all
// its kernel variants into one program.
#pragma once

#include "gpu/GpuTarget.h"
#include "gpu/KernelGen.h"
#include "gpu/OpenCL.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace triad::gputest {

/// Why there is no OpenCL device, or empty when there is one (selected once per process).
inline const std::string& noDeviceReason() {
  static const std::string reason = [] {
    try {
      gpu::selectDevice();
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

/// Skips a test of the GPU target with the reason there is no OpenCL device.
#define TRIAD_SKIP_WITHOUT_OPENCL()                                                                \
  if (!::triad::gputest::noDeviceReason().empty())                                                 \
  GTEST_SKIP() << "no OpenCL device: " << ::triad::gputest::noDeviceReason()

/// The GPU target's options in the tests: program binaries cached in <build>/gpu-test-cache, a
/// tuning database that does not exist (the user's must not change what the tests compile), and
/// -Werror (generated OpenCL compiles without warnings). With `honourNoFuse`,
/// TRIAD_TEST_NOFUSE=1 compiles without fusion (the results must still match).
inline gpu::GpuOptions targetOptions(bool honourNoFuse = false) {
  gpu::GpuOptions o;
  o.cacheDir = std::filesystem::path(TRIAD_BINARY_DIR) / "gpu-test-cache";
  o.tuningPath = std::filesystem::path(TRIAD_BINARY_DIR) / "gpu-test-cache" / "no-tuning.json";
  o.buildOptions = "-Werror";
  if (honourNoFuse) o.fuse = std::getenv("TRIAD_TEST_NOFUSE") == nullptr;
  return o;
}

/// The OpenCL program an executable of the GPU target runs.
inline const gpu::GpuProgram& programOf(const ir::Executable& e) {
  return dynamic_cast<const gpu::GpuExecutable&>(e).program();
}

struct ContextOrReason {
  std::unique_ptr<gpu::Context> context;
  std::string reason; // why there is none
};

/// The process-wide test context on the selected device, or why there is none.
inline ContextOrReason& testContext() {
  static ContextOrReason c = [] {
    ContextOrReason r;
    try {
      gpu::DeviceInfo d = gpu::selectDevice();
      gpu::ContextOptions o;
      o.cacheDir = std::filesystem::path(TRIAD_BINARY_DIR) / "gpu-test-cache";
      r.context = std::make_unique<gpu::Context>(d, o);
    } catch (const Error& e) {
      r.reason = e.what();
    }
    return r;
  }();
  return c;
}

/// Declares `ctx` (gpu::Context&) or skips the test with the reason there is no device.
#define TRIAD_GPU_CONTEXT_OR_SKIP(ctx)                                                             \
  if (!::triad::gputest::testContext().context)                                                    \
    GTEST_SKIP() << "no OpenCL device: " << ::triad::gputest::testContext().reason;                \
  ::triad::gpu::Context& ctx = *::triad::gputest::testContext().context

inline std::vector<float> randomData(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(rng);
  return v;
}

/// Builds `kernels` as one program once per process (keyed by `name`).
inline const gpu::Program& programFor(gpu::Context& ctx, const std::string& name,
                                      const std::vector<gpu::GeneratedKernel>& kernels) {
  static std::map<std::string, gpu::Program> programs;
  auto it = programs.find(name);
  if (it == programs.end())
    // -Werror: generated OpenCL must compile without warnings.
    it = programs.emplace(name, ctx.build(gpu::programSource(kernels), "-Werror", name)).first;
  return it->second;
}

/// `p` as the device builds it: vectors no wider than gpu::maxVectorWidth (a 16-wide set runs
/// as float8 on a CPU device without AVX-512, as the product would choose there; under
/// -Werror PoCL refuses float16 passed to builtins on such a CPU: "changes the ABI").
inline gpu::GemmParams forDevice(gpu::GemmParams p, const gpu::DeviceInfo& d) {
  p.vectorWidth = std::min(p.vectorWidth, gpu::maxVectorWidth(d));
  return p;
}

/// Runs one generated kernel: `inputs` fill its parameters in order except `outputIndex`, which
/// gets a fresh buffer of `outElems` floats that is read back and returned.
inline std::vector<float> runKernel(gpu::Context& ctx, const gpu::Program& program,
                                    const gpu::GeneratedKernel& gk,
                                    const std::vector<const std::vector<float>*>& inputs,
                                    size_t outputIndex, size_t outElems) {
  EXPECT_EQ(inputs.size() + 1, gk.params.size()) << gk.name;
  gpu::Kernel kernel = program.kernel(gk.name);
  std::vector<gpu::Buffer> buffers;
  size_t next = 0;
  for (size_t i = 0; i < gk.params.size(); ++i) {
    if (i == outputIndex) {
      // Pre-filled with NaN so that an output the kernel never writes cannot pass.
      std::vector<float> nan(outElems, std::nanf(""));
      buffers.push_back(ctx.upload(nan, gk.params[i]));
    } else {
      buffers.push_back(ctx.upload(*inputs.at(next++), gk.params[i]));
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    kernel.arg(cl_uint(i), buffers[i]);
  ctx.launch(kernel, gk.range);
  std::vector<float> out = ctx.download<float>(buffers[outputIndex]);
  ctx.finish();
  return out;
}

/// Largest |got - want| relative to max(1, max |want|); NaN when sizes differ or got has a NaN.
inline double relError(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::nan("");
  double scale = 1.0, err = 0.0;
  for (double w : want)
    scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return std::nan("");
    if (!std::isnan(want[i])) err = std::max(err, std::abs(double(got[i]) - want[i]));
  }
  return err / scale;
}

} // namespace triad::gputest
