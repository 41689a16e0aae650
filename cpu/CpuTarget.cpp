#include "cpu/CpuTarget.h"

#include "cpu/Lowering.h"
#include "cpu/RuntimeFiles.h"
#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/Files.h"
#include "ir/Interpreter.h"
#include "ir/System.h"
#include "ir/passes/Pass.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <exception>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace triad::cpu {

namespace fs = std::filesystem;
using namespace ir;

namespace {

std::string envOr(const char* name, std::string dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

std::string compilerOf(const CpuOptions& o) {
  if (!o.compiler.empty()) return o.compiler;
  return envOr("TRIAD_CXX", envOr("CXX", "c++"));
}
std::string flagsOf(const CpuOptions& o) {
  std::string flags = !o.flags.empty() ? o.flags : envOr("TRIAD_CXXFLAGS", "-O3 -march=native");
#ifdef TRIAD_GENERATED_SANITIZE_FLAGS
  flags += " " TRIAD_GENERATED_SANITIZE_FLAGS; // a sanitizer build (TRIAD_SANITIZE)
#endif
  return flags;
}
fs::path cacheDirOf(const CpuOptions& o) {
  if (!o.cacheDir.empty()) return o.cacheDir;
  if (const char* d = std::getenv("TRIAD_CACHE_DIR"); d && *d) return fs::path(d) / "cpu";
  return fs::path(envOr("HOME", "/tmp")) / ".cache" / "triad" / "cpu";
}

/// `c++ --version`, first line: part of the cache key.
std::string compilerVersion(const std::string& cxx) {
  int rc = 0;
  std::string v = runCapture(shellQuote(cxx) + " --version 2>&1", &rc);
  if (rc != 0)
    fail(ErrorKind::Io, "the C++ compiler '{}' does not run (set TRIAD_CXX or CXX): {}", cxx, v);
  return v.substr(0, v.find('\n'));
}

/// Why a failed compile in `dir` is the disk's fault ("No space left on device", ...), from the
/// compiler's output or the space left; empty when it is not.
std::string diskTrouble(const fs::path& dir, const std::string& log) {
  for (int e : {ENOSPC, EDQUOT, EROFS, EFBIG, EACCES})
    if (log.find(std::strerror(e)) != std::string::npos) return std::strerror(e);
  std::error_code ec;
  fs::space_info s = fs::space(dir, ec);
  if (!ec && s.available < (uintmax_t(4) << 20))
    return fmt::format("{} bytes left on its file system", s.available);
  return {};
}

} // namespace

int defaultThreads() {
  return physicalCores();
}

void writeSources(const GeneratedCode& code, const fs::path& dir, bool example) {
  fs::create_directories(dir);
  const std::string& stem = code.stem;
  const std::string& prefix = code.prefix;
  frontend::writeFileAtomic(dir / (stem + ".cpp"), code.source);
  frontend::writeFileAtomic(dir / (stem + ".h"), code.header);
  for (const auto& [name, text] : code.extraFiles)
    frontend::writeFileAtomic(dir / name, text);
  for (const auto& [name, text] : runtimeFiles())
    frontend::writeFileAtomic(dir / name, text);
  frontend::writeFileAtomic(
      dir / (stem + ".weights"),
      std::string_view(reinterpret_cast<const char*>(code.weights.data()), code.weights.size()));
  if (!example) return;
  std::string main = fmt::format(
      R"(// Example: runs {0} and prints the first output values; optionally times it on this machine.
// Build: make   (or: c++ -std=c++17 -O3 -march=native -pthread main.cpp {2} -o {0})
// Usage: ./{0} [WEIGHTS] [--threads N] [--repeat N] [--input FILE]... [--output FILE]
//   --input FILE   one per model input, in order: its dense bytes (zeros when not given)
//   --output FILE  writes the first output's dense bytes
//   --repeat N     runs N more times after the first and prints the median and fastest time
#include "{0}.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static bool read_file(const char* path, unsigned char* dst, size_t n) {{
  FILE* f = std::fopen(path, "rb");
  if (!f) {{ std::fprintf(stderr, "cannot open %s\n", path); return false; }}
  bool ok = std::fread(dst, 1, n, f) == n && std::fgetc(f) == EOF;
  std::fclose(f);
  if (!ok) std::fprintf(stderr, "%s does not hold exactly %zu bytes\n", path, n);
  return ok;
}}

int main(int argc, char** argv) {{
  const char* path = "{0}.weights";
  const char* output = nullptr;
  int threads = 1, repeat = 0;
  std::vector<const char*> inputs;
  for (int i = 1; i < argc; ++i) {{
    std::string a = argv[i];
    bool more = i + 1 < argc;
    if (a == "--threads" && more) threads = std::atoi(argv[++i]);
    else if (a == "--repeat" && more) repeat = std::atoi(argv[++i]);
    else if (a == "--input" && more) inputs.push_back(argv[++i]);
    else if (a == "--output" && more) output = argv[++i];
    else if (a.rfind("--", 0) != 0) path = argv[i];
    else {{ std::fprintf(stderr, "unknown or incomplete option %s\n", argv[i]); return 2; }}
  }}
  size_t n = {1}_weights_bytes();
  unsigned char* w = static_cast<unsigned char*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
  if (!read_file(path, w, n)) return 1;
  void* model = {1}_create(w, threads, nullptr, nullptr);
)",
      stem, prefix, fmt::join(code.units, " "));
  main += "  // One dense buffer per input and output, in graph order.\n";
  main += "  std::vector<std::vector<unsigned char>> in_buf, out_buf;\n";
  for (const auto& [bytes, isIn] : code.ioBytes)
    main += fmt::format("  {}.emplace_back({});\n", isIn ? "in_buf" : "out_buf", bytes);
  main += fmt::format(R"(  if (inputs.size() > in_buf.size()) {{
    std::fprintf(stderr, "the model has %zu inputs\n", in_buf.size());
    return 2;
  }}
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!read_file(inputs[i], in_buf[i].data(), in_buf[i].size())) return 1;
  std::vector<const void*> in;
  std::vector<void*> out;
  for (auto& b : in_buf) in.push_back(b.data());
  for (auto& b : out_buf) out.push_back(b.data());
  std::vector<double> ms;
  for (int r = 0; r <= repeat; ++r) {{
    auto t0 = std::chrono::steady_clock::now();
    if ({0}_run(model, in.data(), out.data()) != 0) {{
      std::fprintf(stderr, "%s\n", {0}_error(model));
      return 1;
    }}
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }}
  const float* y = reinterpret_cast<const float*>(out_buf[0].data());
  for (size_t i = 0; i < out_buf[0].size() / sizeof(float) && i < 8; ++i) std::printf("%g ", y[i]);
  std::printf("\n");
  if (repeat > 0) {{
    std::vector<double> t(ms.begin() + 1, ms.end()); // the first run warms up
    std::sort(t.begin(), t.end());
    std::printf("%d threads, %d runs: median %.3f ms, fastest %.3f ms\n", threads, repeat,
                t[t.size() / 2], t[0]);
  }}
  if (output) {{
    FILE* f = std::fopen(output, "wb");
    if (!f || std::fwrite(out_buf[0].data(), 1, out_buf[0].size(), f) != out_buf[0].size() ||
        std::fclose(f) != 0) {{
      std::fprintf(stderr, "cannot write %s\n", output);
      return 1;
    }}
  }}
  {0}_destroy(model);
  std::free(w);
  return 0;
}}
)",
                      prefix);
  frontend::writeFileAtomic(dir / "main.cpp", main);
  std::string units, headers = stem + ".h";
  for (const auto& [name, text] : runtimeFiles())
    headers += " " + name;
  for (const std::string& u : code.units)
    units += " " + u;
  for (const auto& [name, text] : code.extraFiles)
    if (name.size() > 2 && name.compare(name.size() - 2, 2, ".h") == 0) headers += " " + name;
  frontend::writeFileAtomic(dir / "Makefile",
                            fmt::format("CXX ?= c++\nCXXFLAGS ?= -std=c++17 -O3 -march=native "
                                        "-pthread\n\n{0}: main.cpp{1} {2}\n\t$(CXX) $(CXXFLAGS) "
                                        "main.cpp{1} -o {0}\n",
                                        stem, units, headers));
}

namespace {

/// A compiler run: its command, exit status (0: ok) and output (at most 4000 characters).
struct CompileRun {
  std::string cmd;
  int rc = 0;
  std::string log;
};

CompileRun runCompiler(const std::string& cmd) {
  CompileRun r{cmd, 0, {}};
  try {
    r.log = runCapture(cmd, &r.rc);
  } catch (const Error& e) {
    r.rc = -1;
    r.log = e.what();
  }
  if (r.log.size() > 4000) r.log = r.log.substr(0, 4000) + "\n...";
  return r;
}

/// Runs `cmds` with at most `jobs` at a time; the first failure (by index), or rc 0.
CompileRun runCompilers(const std::vector<std::string>& cmds, int jobs) {
  std::vector<CompileRun> runs(cmds.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < cmds.size();)
      runs[i] = runCompiler(cmds[i]);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(jobs, int(cmds.size())); ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads)
    t.join();
  for (CompileRun& r : runs)
    if (r.rc != 0) return r;
  return {};
}

/// Throws the error for a failed compile in the private build folder `tmp` of cache entry
/// root/key: the disk's fault (Io), compiler or flags that build nothing (Usage), or generated
/// code that does not compile (Internal; the sources are kept in root/key.failed).
[[noreturn]] void compileFailed(const fs::path& tmp, const fs::path& root, const std::string& key,
                                const CompileRun& run, const std::string& cxx,
                                const std::string& flags) {
  // A full or read-only disk is the environment's fault, not the compiler's nor Triad's.
  if (std::string why = diskTrouble(tmp, run.log); !why.empty())
    fail(ErrorKind::Io, "the C++ compiler cannot write the compiled model in '{}': {}",
         tmp.parent_path().string(), why);
  // Tell a compiler or flags that build nothing (the user's TRIAD_CXX / TRIAD_CXXFLAGS, or a
  // missing compiler) from generated code that does not compile (a bug in Triad).
  frontend::writeFileAtomic(tmp / "probe.cpp", "int triad_probe() { return 0; }\n");
  CompileRun probe = runCompiler(fmt::format("cd {} && {} {} -pthread -fPIC -shared probe.cpp -o "
                                             "probe.so 2>&1",
                                             shellQuote(tmp.string()), shellQuote(cxx), flags));
  if (probe.rc == 0 && !fs::exists(tmp / "probe.so")) probe.rc = -1;
  if (probe.rc != 0)
    fail(ErrorKind::Usage,
         "the C++ compiler '{}' with flags '{}' cannot build even an empty library (set them "
         "with TRIAD_CXX / TRIAD_CXXFLAGS or the target options):\n{}",
         cxx, flags, probe.log.substr(0, 2000));
  // The sources and the log, for the bug report, out of the way of later builds.
  fs::path kept = root / (key + ".failed");
  std::error_code ec;
  fs::remove_all(kept, ec);
  fs::rename(tmp, kept, ec);
  if (!ec) std::ofstream(kept / "model.log") << run.log;
  fail(ErrorKind::Internal, "the generated C++ does not compile ({}); sources kept in {}:\n{}",
       run.cmd, ec ? tmp.string() : kept.string(), run.log);
}

/// Wraps a cache error: the CPU target needs a writable cache.
template <class F> auto withCache(F f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    fail(ErrorKind::Io, "{} (the CPU target needs a writable cache: set TRIAD_CACHE_DIR)",
         e.what());
  }
}

} // namespace

BuildInfo buildSharedObject(GeneratedCode code, const CpuOptions& opts) {
  BuildInfo info;
  std::string cxx = compilerOf(opts), flags = flagsOf(opts);
  static std::mutex versionsMutex;
  static std::map<std::string, std::string> versions;
  std::string version;
  {
    std::lock_guard<std::mutex> l(versionsMutex);
    if (!versions.count(cxx)) versions[cxx] = compilerVersion(cxx);
    version = versions[cxx];
  }
  uint64_t rt = fnv1a(kFnvOffset, version + "\n" + flags + "\n");
  for (const auto& [name, text] : runtimeFiles())
    rt = fnv1a(fnv1a(rt, name), text);
  // The run-time kernels are compiled once per compiler, flags and kernel sources, into their
  // own cache entry (root/kernels/KEY/triad_kernels.o), and linked into every model: generated
  // code includes their header with TRIAD_RT_PRECOMPILED, which leaves their instantiations to
  // that object.
  fs::path root = cacheDirOf(opts);
  const fs::path kernelsRoot = root / "kernels";
  const std::string kernelsKey = fmt::format("{:016x}", rt);
  const fs::path kernelsObject = kernelsRoot / kernelsKey / "triad_kernels.o";
  uint64_t h = fnv1a(rt, "units 1\n"); // the build below: units compiled apart, then linked
  h = fnv1a(h, code.source);
  h = fnv1a(h, code.header);
  for (const auto& [name, text] : code.extraFiles)
    h = fnv1a(fnv1a(h, name), text);
  std::string key = fmt::format("{:016x}", h);
  info.dir = root / key;
  info.code = std::move(code);
  auto compileCmd = [&](const fs::path& dir, const std::string& src, const std::string& define) {
    return fmt::format("cd {} && {} -std=c++17 {} -pthread -fPIC -D{} -I. -c {} -o {}.o 2>&1",
                       shellQuote(dir.string()), shellQuote(cxx), flags, define, src,
                       fs::path(src).stem().string());
  };
  auto buildKernels = [&] {
    getOrBuildCacheEntry(
        kernelsRoot, kernelsKey, {"triad_kernels.o"}, "the CPU target's kernel cache",
        [&](const fs::path& tmp) {
          for (const auto& [name, text] : runtimeFiles())
            frontend::writeFileAtomic(tmp / name, text);
          frontend::writeFileAtomic(tmp / "triad_kernels.cpp",
                                    "// The run-time kernels' instantiations, compiled once and "
                                    "linked into every model.\n#include \"triad_kernels.h\"\n");
          CompileRun run =
              runCompiler(compileCmd(tmp, "triad_kernels.cpp", "TRIAD_RT_INSTANTIATE"));
          if (run.rc == 0 && !fs::exists(tmp / "triad_kernels.o")) run.rc = -1;
          if (run.rc != 0) compileFailed(tmp, kernelsRoot, kernelsKey, run, cxx, flags);
        });
  };
  // The entry is built in a private folder under a per-key lock and published whole with its
  // model.so's size and hash, which every later run checks (ir/Files.h): a kill at any point
  // leaves no entry or a valid one, and concurrent runs of one model compile it once.
  auto buildEntry = [&](const fs::path& tmp) {
    auto t0 = std::chrono::steady_clock::now();
    writeSources(info.code, tmp, false);
    // The kernels (when not cached yet) compile beside the model's translation units, which
    // compile in parallel; the compilers' output is captured, not written beside them: on a
    // full disk the log would be lost too.
    std::exception_ptr kernelsError;
    std::thread kernels;
    if (!cacheEntryValid(kernelsRoot / kernelsKey))
      kernels = std::thread([&] {
        try {
          buildKernels();
        } catch (...) {
          kernelsError = std::current_exception();
        }
      });
    std::vector<std::string> cmds;
    for (const std::string& u : info.code.units)
      cmds.push_back(compileCmd(tmp, u, "TRIAD_RT_PRECOMPILED"));
    CompileRun run = runCompilers(cmds, std::max(1, physicalCores()));
    if (kernels.joinable()) kernels.join();
    if (run.rc != 0) compileFailed(tmp, root, key, run, cxx, flags);
    if (kernelsError) std::rethrow_exception(kernelsError);
    buildKernels(); // a hit (checks the entry again)
    std::string objects;
    for (const std::string& u : info.code.units)
      objects += fs::path(u).stem().string() + ".o ";
    run = runCompiler(fmt::format("cd {} && {} {} -pthread -fPIC -shared {}{} -o model.so 2>&1",
                                  shellQuote(tmp.string()), shellQuote(cxx), flags, objects,
                                  shellQuote(kernelsObject.string())));
    if (run.rc == 0 && !fs::exists(tmp / "model.so")) run.rc = -1;
    if (run.rc != 0) compileFailed(tmp, root, key, run, cxx, flags);
    for (const std::string& u : info.code.units)
      fs::remove(tmp / (fs::path(u).stem().string() + ".o"));
    info.compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  info.cached = withCache([&] {
    return getOrBuildCacheEntry(root, key, {"model.so"}, "the CPU target's compiled-model cache",
                                buildEntry);
  });
  return info;
}

namespace {

using CreateFn = void* (*)(const unsigned char*, int,
                           int (*)(void*, int, const void* const*, void* const*), void*);
using RunFn = int (*)(void*, const void* const*, void* const*);
using ErrorFn = const char* (*)(void*);
using DestroyFn = void (*)(void*);
using SetProfilingFn = void (*)(void*, int);
using ProfileFn = int (*)(void*, const char* const**, const double**);

class CompiledModel final : public CpuExecutable {
public:
  /// `owned`: the target's rewritten copy of the graph (else `g` must outlive the model).
  CompiledModel(const Graph& g, BuildInfo info, int threads, std::shared_ptr<const Graph> owned)
      : owned_(std::move(owned)), g_(g), info_(std::move(info)) {
    fs::path so = info_.dir / "model.so";
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) fail(ErrorKind::Io, "cannot load {}: {}", so.string(), dlerror());
    auto sym = [&](const char* name) {
      void* p = dlsym(handle_, name);
      if (!p) fail(ErrorKind::Internal, "{} lacks symbol {}", so.string(), name);
      return p;
    };
    auto create = reinterpret_cast<CreateFn>(sym("triad_model_create"));
    run_ = reinterpret_cast<RunFn>(sym("triad_model_run"));
    error_ = reinterpret_cast<ErrorFn>(sym("triad_model_error"));
    destroy_ = reinterpret_cast<DestroyFn>(sym("triad_model_destroy"));
    setProfiling_ = reinterpret_cast<SetProfilingFn>(sym("triad_model_set_profiling"));
    profile_ = reinterpret_cast<ProfileFn>(sym("triad_model_profile"));
    // The weights must stay put and aligned for the model's lifetime.
    const auto& w = info_.code.weights;
    weights_ = static_cast<unsigned char*>(std::aligned_alloc(64, (w.size() + 64) / 64 * 64));
    if (!w.empty()) std::memcpy(weights_, w.data(), w.size());
    state_ = create(weights_, threads, &CompiledModel::hostCall, this);
  }
  ~CompiledModel() override {
    if (state_) destroy_(state_);
    std::free(weights_);
    // The shared object stays loaded: OpenMP worker threads may still run its code.
  }

  const BuildInfo& build() const override { return info_; }

  void setProfiling(bool on) override { setProfiling_(state_, on ? 1 : 0); }
  std::vector<LayerTime> profile() const override {
    const char* const* names = nullptr;
    const double* ms = nullptr;
    int n = profile_(state_, &names, &ms);
    std::vector<LayerTime> out;
    const std::vector<std::string>& ops = info_.code.layerOps;
    for (int i = 0; i < n; ++i)
      if (ms[i] > 0)
        out.push_back({names[i], ms[i], "layer", 0, size_t(i) < ops.size() ? ops[size_t(i)] : ""});
    return out;
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    if (inputs.size() != g_.inputs().size())
      fail(ErrorKind::Runtime, "graph '{}' takes {} inputs, {} given", g_.name, g_.inputs().size(),
           inputs.size());
    std::vector<const void*> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = g_.inputs()[i];
      if (inputs[i].dtype() != v->type().dtype || inputs[i].shape() != v->type().shape)
        fail(ErrorKind::Runtime, "input '{}' expects {}, got {}", v->name(),
             typeToString(v->type()), typeToString(inputs[i].type()));
      in.push_back(inputs[i].raw());
    }
    std::vector<Tensor> outs;
    std::vector<void*> out;
    for (const Value* v : g_.outputs())
      outs.emplace_back(v->type());
    for (Tensor& t : outs)
      out.push_back(t.raw());
    runRaw(in.data(), out.data());
    return outs;
  }

  void runRaw(const void* const* inputs, void* const* outputs) override {
    hostError_.clear();
    if (run_(state_, inputs, outputs) != 0) {
      if (!hostError_.empty()) fail(hostErrorKind_, "{}", hostError_);
      fail(ErrorKind::Runtime, "{}", error_(state_));
    }
  }

private:
  // Runs a node without a native lowering with its reference kernel, on copies of its operands.
  static int hostCall(void* ctx, int call, const void* const* ins, void* const* outs) {
    auto* self = static_cast<CompiledModel*>(ctx);
    const Node& n = *self->info_.code.hostNodes[size_t(call)];
    try {
      std::vector<Tensor> inputs;
      inputs.reserve(n.inputs().size());
      std::vector<const Tensor*> ptrs;
      for (size_t i = 0; i < n.inputs().size(); ++i) {
        const Value* v = n.input(i);
        if (!v) {
          ptrs.push_back(nullptr);
          continue;
        }
        inputs.emplace_back(v->type());
        if (inputs.back().byteSize())
          std::memcpy(inputs.back().raw(), ins[i], inputs.back().byteSize());
        ptrs.push_back(&inputs.back());
      }
      std::vector<Tensor> results = evalNode(n, ptrs);
      for (size_t i = 0; i < results.size(); ++i)
        if (results[i].byteSize()) std::memcpy(outs[i], results[i].raw(), results[i].byteSize());
      return 0;
    } catch (const Error& e) {
      self->hostError_ =
          fmt::format("node '{}' ({}): {}", n.name(), opKindName(n.kind()), e.what());
      self->hostErrorKind_ = e.kind();
    } catch (const std::exception& e) {
      self->hostError_ =
          fmt::format("node '{}' ({}): {}", n.name(), opKindName(n.kind()), e.what());
      self->hostErrorKind_ = ErrorKind::Internal;
    }
    return 1;
  }

  std::shared_ptr<const Graph> owned_;
  const Graph& g_;
  BuildInfo info_;
  void* handle_ = nullptr;
  void* state_ = nullptr;
  unsigned char* weights_ = nullptr;
  RunFn run_ = nullptr;
  ErrorFn error_ = nullptr;
  DestroyFn destroy_ = nullptr;
  SetProfilingFn setProfiling_ = nullptr;
  ProfileFn profile_ = nullptr;
  std::string hostError_;
  ErrorKind hostErrorKind_ = ErrorKind::Runtime;
};

} // namespace

std::shared_ptr<Graph> cpuGraph(const Graph& g, bool qdqIntegerOption) {
  return qdqIntegerCopy(g, qdqIntegerOption, "TRIAD_CPU_QDQ");
}

namespace {

class CpuTarget final : public Target {
public:
  explicit CpuTarget(CpuOptions o) : opts_(std::move(o)) {}
  std::string_view name() const override { return "cpu"; }
  std::string_view description() const override {
    return "generated C++ with fused kernels, built by the system compiler (AVX2/AVX-512 FMA "
           "GEMM, OpenMP threads)";
  }
  Support supports(const Node& n) const override { return nativeSupport(n); }
  std::unique_ptr<Executable> compile(const Graph& input,
                                      const CompileSettings& cs) const override {
    // QDQ models: the integer kernels, on a rewritten copy (the caller's graph stays as is).
    std::shared_ptr<Graph> owned = cpuGraph(input, opts_.qdqInteger);
    const Graph& g = owned ? *owned : input;
    CodeGenOptions co;
    co.fuse = opts_.fuse;
    co.blockedLayout = blockedLayoutDefault();
    // Progress: the layers generated are the first half, the C++ compile the second.
    if (cs.progress)
      co.progress = [&](const std::string& layer, int64_t done, int64_t total) {
        cs.progress("codegen " + layer, done, 2 * total);
      };
    co.maxUnits = opts_.maxUnits > 0 ? opts_.maxUnits : physicalCores(); // compiled in parallel
    co.unitChars = opts_.unitChars;
    GeneratedCode code = generateCpp(g, co);
    if (cs.progress) cs.progress("c++", 1, 2);
    BuildInfo info = buildSharedObject(std::move(code), opts_);
    if (cs.progress) cs.progress("c++", 2, 2);
    int threads = cs.threads > 0 ? cs.threads : opts_.threads;
    if (threads <= 0)
      if (const char* t = std::getenv("TRIAD_THREADS"); t && std::atoi(t) > 0)
        threads = std::atoi(t);
    if (threads <= 0) threads = defaultThreads();
    return std::make_unique<CompiledModel>(g, std::move(info), threads, std::move(owned));
  }

private:
  CpuOptions opts_;
};

} // namespace

std::unique_ptr<Target> makeCpuTarget(CpuOptions opts) {
  return std::make_unique<CpuTarget>(std::move(opts));
}

} // namespace triad::cpu
