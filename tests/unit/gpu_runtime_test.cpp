// The OpenCL host runtime (gpu/OpenCL.h, gpu/BinaryCache.h): error names, device selection,
// build errors with logs, invalid launches, the program binary cache and profiling.
#include "gpu/BinaryCache.h"
#include "gpu/OpenCL.h"
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace triad::gpu {
namespace {

using gputest::testContext;

std::string errorOf(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "(no error)";
}

std::filesystem::path freshDir(const std::string& name) {
  std::filesystem::path d = std::filesystem::path(TRIAD_BINARY_DIR) / "gpu-test-tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A tiny kernel: y[i] = x[i] * s + 1.
const std::string kScaleSource = R"(__kernel void scale_plus_one(__global const float* x,
                             __global float* y, float s) {
  const int i = get_global_id(0);
  y[i] = x[i] * s + 1.0f;
}
)";

// --- no device needed ------------------------------------------------------------------------

TEST(GpuRuntime, ErrorNames) {
  EXPECT_EQ(clErrorName(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_EQ(clErrorName(-54), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_EQ(clErrorName(-11), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_EQ(clErrorName(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_EQ(clErrorName(-4242), "CL_UNKNOWN_ERROR(-4242)");
  std::string msg =
      errorOf([] { checkCl(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel", "conv1"); });
  EXPECT_EQ(msg, "clEnqueueNDRangeKernel failed for kernel 'conv1': CL_OUT_OF_RESOURCES (-5)");
}

TEST(GpuRuntime, NoPlatformIsUnsupported) {
  ErrorKind kind = ErrorKind::Internal;
  std::string msg = errorOf([] { selectDevice(std::vector<PlatformInfo>{}, ""); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Unsupported);
  EXPECT_NE(msg.find("no OpenCL device found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pocl-opencl-icd"), std::string::npos) << msg;
}

// Device selection over a made-up list (no device needed): two platforms, three devices.
std::vector<PlatformInfo> fakePlatforms() {
  std::vector<PlatformInfo> ps(2);
  ps[0].index = 0;
  ps[0].name = "Portable Computing Language";
  ps[1].index = 1;
  ps[1].name = "NVIDIA CUDA";
  auto dev = [](int p, int d, int g, std::string name, std::string plat, std::string type) {
    DeviceInfo i;
    i.platformIndex = p;
    i.deviceIndex = d;
    i.globalIndex = g;
    i.name = std::move(name);
    i.platformName = std::move(plat);
    i.type = std::move(type);
    return i;
  };
  ps[0].devices.push_back(dev(0, 0, 0, "pthread-skylake", ps[0].name, "CPU"));
  ps[1].devices.push_back(dev(1, 0, 1, "NVIDIA GeForce RTX 3090", ps[1].name, "GPU"));
  ps[1].devices.push_back(dev(1, 1, 2, "NVIDIA A100-SXM4", ps[1].name, "GPU"));
  return ps;
}

TEST(GpuRuntime, SelectionByIndexAndName) {
  auto ps = fakePlatforms();
  EXPECT_EQ(selectDevice(ps, "").name, "NVIDIA GeForce RTX 3090"); // first GPU by default
  EXPECT_EQ(selectDevice(ps, "0").name, "pthread-skylake");
  EXPECT_EQ(selectDevice(ps, "2").name, "NVIDIA A100-SXM4");
  EXPECT_EQ(selectDevice(ps, "1:1").name, "NVIDIA A100-SXM4");
  EXPECT_EQ(selectDevice(ps, "0:0").name, "pthread-skylake");
  EXPECT_EQ(selectDevice(ps, "a100").name, "NVIDIA A100-SXM4");    // case-insensitive substring
  EXPECT_EQ(selectDevice(ps, "PORTABLE").name, "pthread-skylake"); // platform name
  ErrorKind kind = ErrorKind::Internal;
  std::string msg = errorOf([&] { selectDevice(ps, "3"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Usage);
  EXPECT_NE(msg.find("only 3 devices"), std::string::npos) << msg;
  msg = errorOf([&] { selectDevice(ps, "1:2"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Usage);
  msg = errorOf([&] { selectDevice(ps, "radeon"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Usage);
  EXPECT_NE(msg.find("'radeon' matches no device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2] 1:1 NVIDIA A100-SXM4 (NVIDIA CUDA)"), std::string::npos) << msg;
}

TEST(GpuRuntime, BinaryCacheEntries) {
  BinaryCache cache(freshDir("cache-entries"));
  std::string key = BinaryCache::makeKey("src", "-O2", "dev", "1.0", "plat");
  EXPECT_EQ(cache.load("prog", key).status, BinaryCache::LoadStatus::Miss);
  ASSERT_TRUE(cache.store("prog", key, std::string("\0binary\xff", 8)));
  BinaryCache::LoadResult r = cache.load("prog", key);
  ASSERT_EQ(r.status, BinaryCache::LoadStatus::Hit);
  EXPECT_EQ(r.binary, std::string("\0binary\xff", 8));
  // Another key is another file; the entry stores its key, so a same-name clash is a miss.
  std::string key2 = BinaryCache::makeKey("src", "-O3", "dev", "1.0", "plat");
  EXPECT_NE(cache.pathFor("prog", key), cache.pathFor("prog", key2));
  std::filesystem::copy_file(cache.pathFor("prog", key), cache.pathFor("prog", key2));
  EXPECT_EQ(cache.load("prog", key2).status, BinaryCache::LoadStatus::Miss);
  // Flip one byte of the binary: checksum mismatch.
  std::string bytes = *readFileIfExists(cache.pathFor("prog", key));
  bytes.back() ^= 1;
  writeFileAtomic(cache.pathFor("prog", key), bytes);
  r = cache.load("prog", key);
  EXPECT_EQ(r.status, BinaryCache::LoadStatus::Corrupt);
  EXPECT_EQ(r.why, "checksum mismatch");
  // Truncated.
  writeFileAtomic(cache.pathFor("prog", key), bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(cache.load("prog", key).status, BinaryCache::LoadStatus::Corrupt);
  // No temporary files are left behind by the atomic writes.
  for (const auto& e : std::filesystem::directory_iterator(cache.dir()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(GpuRuntime, CacheDirFromEnvironment) {
  const char* old = std::getenv("TRIAD_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("TRIAD_CACHE_DIR", "/tmp/triad-cache-test", 1);
  EXPECT_EQ(defaultCacheRoot(), std::filesystem::path("/tmp/triad-cache-test"));
  if (old)
    setenv("TRIAD_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("TRIAD_CACHE_DIR");
}

// --- on the device ---------------------------------------------------------------------------

TEST(GpuRuntime, ListsTheSelectedDevice) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const DeviceInfo& d = ctx.device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.computeUnits, 0u);
  EXPECT_GT(d.globalMemBytes, 0u);
  EXPECT_GT(d.localMemBytes, 0u);
  EXPECT_GT(d.maxWorkGroupSize, 0u);
  EXPECT_NE(d.openclCVersion.find("OpenCL C"), std::string::npos) << d.openclCVersion;
  // The same device by global index, by platform:device and by a name substring.
  std::vector<PlatformInfo> ps = listPlatforms();
  EXPECT_EQ(selectDevice(ps, std::to_string(d.globalIndex)).id, d.id);
  EXPECT_EQ(selectDevice(ps, fmt::format("{}:{}", d.platformIndex, d.deviceIndex)).id, d.id);
  std::string upper = d.name;
  for (char& c : upper)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(selectDevice(ps, upper.substr(0, std::min<size_t>(upper.size(), 7))).name.substr(0, 7),
            d.name.substr(0, 7));
  // TRIAD_OPENCL_DEVICE drives the default selection.
  const char* old = std::getenv("TRIAD_OPENCL_DEVICE");
  std::string saved = old ? old : "";
  setenv("TRIAD_OPENCL_DEVICE", std::to_string(d.globalIndex).c_str(), 1);
  EXPECT_EQ(selectDevice().id, d.id);
  setenv("TRIAD_OPENCL_DEVICE", "no-such-device-xyz", 1);
  ErrorKind kind = ErrorKind::Internal;
  std::string msg = errorOf([] { selectDevice(); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Usage);
  EXPECT_NE(msg.find("no-such-device-xyz"), std::string::npos) << msg;
  if (old)
    setenv("TRIAD_OPENCL_DEVICE", saved.c_str(), 1);
  else
    unsetenv("TRIAD_OPENCL_DEVICE");
}

TEST(GpuRuntime, BuildErrorShowsLogAndKernel) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  std::string bad = "__kernel void broken_relu(__global float* y) {\n"
                    "  y[get_global_id(0)] = fmax(undeclared_value, 0.0f)\n"
                    "}\n";
  ErrorKind kind = ErrorKind::Internal;
  std::string msg = errorOf([&] { ctx.build(bad, "", "relu_layer"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::Runtime);
  EXPECT_NE(msg.find("clBuildProgram failed for program 'relu_layer'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernels: broken_relu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("build log:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("undeclared_value"), std::string::npos) << msg; // from the compiler's log
}

TEST(GpuRuntime, InvalidLaunchesNameTheCode) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const std::string src = "__kernel __attribute__((reqd_work_group_size(8, 1, 1)))\n"
                          "void fixed_group(__global float* y) { y[get_global_id(0)] = 1.0f; }\n";
  Program p = ctx.build(src, "", "fixed_group");
  Kernel k = p.kernel("fixed_group");
  Buffer y = ctx.buffer(64 * sizeof(float), "y");
  k.arg(0, y);
  NDRange r;
  r.global = {64, 1, 1};
  r.local = {16, 1, 1}; // not the required 8
  std::string msg = errorOf([&] { ctx.launch(k, r); });
  EXPECT_NE(msg.find("clEnqueueNDRangeKernel failed for kernel 'fixed_group'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("CL_INVALID_WORK_GROUP_SIZE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("global 64, local 16"), std::string::npos) << msg;
  // Wrong argument index and size.
  msg = errorOf([&] { k.arg(3, y); });
  EXPECT_NE(msg.find("CL_INVALID_ARG_INDEX"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'fixed_group'"), std::string::npos) << msg;
  msg = errorOf([&] { k.arg(0, 1.0f); });
  EXPECT_NE(msg.find("CL_INVALID_ARG_"), std::string::npos) << msg;
  // A kernel the program does not have.
  msg = errorOf([&] { p.kernel("fixed_gruop"); });
  EXPECT_NE(msg.find("CL_INVALID_KERNEL_NAME"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the program has: fixed_group"), std::string::npos) << msg;
  ctx.finish();
}

TEST(GpuRuntime, BinaryCacheHitOnSecondBuild) {
  TRIAD_GPU_CONTEXT_OR_SKIP(shared);
  ContextOptions o;
  o.cacheDir = freshDir("program-cache");
  // A source unique to this test run, so that the first build really compiles.
  std::string src = kScaleSource + "// cache test\n";
  std::vector<float> x = gputest::randomData(32, 7);
  auto runScale = [&](Context& c, const Program& p) {
    Kernel k = p.kernel("scale_plus_one");
    Buffer bx = c.upload(x, "x"), by = c.buffer(x.size() * sizeof(float), "y");
    k.args(bx, by, 3.0f);
    NDRange r;
    r.global = {x.size(), 1, 1};
    c.launch(k, r);
    std::vector<float> y = c.download<float>(by);
    c.finish();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], x[i] * 3.0f + 1.0f, 1e-6) << i;
  };
  std::filesystem::path entry;
  {
    Context c(shared.device(), o);
    Program p = c.build(src, "", "scale");
    EXPECT_FALSE(p.fromCache());
    EXPECT_EQ(c.buildStats().compiledFromSource, 1);
    EXPECT_EQ(c.buildStats().loadedFromCache, 0);
    runScale(c, p);
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(*o.cacheDir)) {
      ++files;
      entry = e.path();
      EXPECT_EQ(e.path().extension(), ".clbin");
      EXPECT_EQ(e.path().filename().string().rfind("scale-", 0), 0u) << e.path();
    }
    EXPECT_EQ(files, 1);
  }
  {
    Context c(shared.device(), o); // a later run
    Program p = c.build(src, "", "scale");
    EXPECT_TRUE(p.fromCache());
    EXPECT_EQ(c.buildStats().compiledFromSource, 0);
    EXPECT_EQ(c.buildStats().loadedFromCache, 1);
    runScale(c, p);
    // Other build options are another entry.
    Program q = c.build(src, "-cl-mad-enable", "scale");
    EXPECT_FALSE(q.fromCache());
    EXPECT_EQ(c.buildStats().compiledFromSource, 1);
  }
  {
    // A corrupt entry is rebuilt (and rewritten), not fatal.
    std::string bytes = *readFileIfExists(entry);
    writeFileAtomic(entry, bytes.substr(0, bytes.size() / 2));
    Context c(shared.device(), o);
    Program p = c.build(src, "", "scale");
    EXPECT_FALSE(p.fromCache());
    EXPECT_EQ(c.buildStats().rejectedCacheEntries, 1);
    EXPECT_EQ(c.buildStats().compiledFromSource, 1);
    runScale(c, p);
    EXPECT_GT(readFileIfExists(entry)->size(), bytes.size() / 2); // rewritten whole
    Context c2(shared.device(), o);
    EXPECT_TRUE(c2.build(src, "", "scale").fromCache());
  }
  {
    // With the cache off nothing is read or written.
    ContextOptions off = o;
    off.useCache = false;
    Context c(shared.device(), off);
    EXPECT_FALSE(c.build(src, "", "scale").fromCache());
    EXPECT_EQ(c.buildStats().compiledFromSource, 1);
  }
}

TEST(GpuRuntime, ProfilesKernelsAndTransfersSeparately) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& p = gputest::programFor(
      ctx, "runtime_scale", {GeneratedKernel{"scale_plus_one", kScaleSource, {}, {}, 0}});
  ctx.profile().clear();
  std::vector<float> x = gputest::randomData(4096, 3);
  Buffer bx = ctx.upload(x, "input_x"), by = ctx.buffer(x.size() * sizeof(float), "output_y");
  Kernel k = p.kernel("scale_plus_one");
  k.args(bx, by, 0.5f);
  NDRange r;
  r.global = {x.size(), 1, 1};
  r.local = {64, 1, 1};
  ctx.launch(k, r);
  ctx.launch(k, r);
  std::vector<float> y = ctx.download<float>(by);
  ctx.finish();
  EXPECT_NEAR(y[100], x[100] * 0.5f + 1.0f, 1e-6);
  const Profile& prof = ctx.profile();
  ASSERT_EQ(prof.events.size(), 4u);
  EXPECT_EQ(prof.events[0].kind, ProfileEvent::Kind::HostToDevice);
  EXPECT_EQ(prof.events[0].name, "input_x");
  EXPECT_EQ(prof.events[0].bytes, x.size() * sizeof(float));
  EXPECT_EQ(prof.events[1].kind, ProfileEvent::Kind::Kernel);
  EXPECT_EQ(prof.events[3].kind, ProfileEvent::Kind::DeviceToHost);
  EXPECT_EQ(prof.events[3].name, "output_y");
  EXPECT_GT(prof.kernelNs(), 0u);
  EXPECT_EQ(prof.perKernelNs().at("scale_plus_one"), prof.kernelNs());
  EXPECT_EQ(prof.kernelNs() + prof.hostToDeviceNs() + prof.deviceToHostNs(),
            prof.events[0].ns + prof.events[1].ns + prof.events[2].ns + prof.events[3].ns);
  std::string s = prof.summary();
  EXPECT_NE(s.find("scale_plus_one"), std::string::npos) << s;
  EXPECT_NE(s.find("host-to-device"), std::string::npos) << s;
  EXPECT_NE(s.find("(16384 bytes)"), std::string::npos) << s;
}

} // namespace
} // namespace triad::gpu
