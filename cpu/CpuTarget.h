// The CPU target: generated C++ (cpu/CodeGen) built by the system compiler into a shared
// object, cached by content, loaded with dlopen and run through its C API.
#pragma once

#include "cpu/CodeGen.h"
#include "ir/Target.h"

#include <filesystem>
#include <memory>
#include <string>

namespace triad::cpu {

struct CpuOptions {
  int threads = 0;                // 0: the machine's cores
  std::string compiler;           // empty: $TRIAD_CXX, else $CXX, else c++
  std::string flags;              // empty: $TRIAD_CXXFLAGS, else "-O3 -march=native"
  std::filesystem::path cacheDir; // empty: $TRIAD_CACHE_DIR/cpu, else ~/.cache/triad/cpu
  bool fuse = true;
  /// QDQ models: DequantizeLinear -> Conv/Gemm/MatMul -> QuantizeLinear computed with integer
  /// kernels (ir/passes/FuseQdq.cpp, as ONNX Runtime's QLinearConv/QGemm; cpu/runtime/
  /// triad_int8.h) instead of float kernels between the DequantizeLinear and QuantizeLinear
  /// nodes (docs/performance.md, "QDQ models on the CPU"). TRIAD_CPU_QDQ=int turns it on,
  /// TRIAD_CPU_QDQ=float off, whatever this says.
  bool qdqInteger = true;
  int maxUnits = 0;     // translation units compiled in parallel, at most (0: the physical cores)
  size_t unitChars = 0; // least layer code per unit (0: kUnitChars)
};

/// Where a compiled model lives and what it cost.
struct BuildInfo {
  std::filesystem::path dir; // the cache entry: model.cpp (and model_1.cpp, ...), model.h,
                             // triad_kernels.h, model.so
  bool cached = false;       // found in the cache (no compiler run)
  double compileSeconds = 0;
  GeneratedCode code; // sizes and counts (source text included)
};

/// Writes generated sources to `dir` (<stem>.cpp, <stem>.h, triad_kernels.h, the weights blob
/// <stem>.weights, and with `example` a main.cpp that runs the model and a Makefile).
void writeSources(const GeneratedCode& code, const std::filesystem::path& dir, bool example);

/// Builds (or finds in the cache) the shared object for `code`.
BuildInfo buildSharedObject(GeneratedCode code, const CpuOptions& opts);

/// The graph the CPU target compiles from `g`: a QDQ model rewritten by fuse-qdq onto the
/// integer kernels when `qdqInteger` says so (CpuOptions::qdqInteger, after TRIAD_CPU_QDQ); null
/// when `g` is compiled as it is. The target and the standalone export both use it.
std::shared_ptr<ir::Graph> cpuGraph(const ir::Graph& g, bool qdqInteger = true);

/// Threads used when CpuOptions::threads is 0: the physical cores this process may use.
int defaultThreads();

std::unique_ptr<ir::Target> makeCpuTarget(CpuOptions opts = {});

/// The CPU executable's extra interface (reached through dynamic_cast from ir::Executable).
class CpuExecutable : public ir::Executable {
public:
  virtual const BuildInfo& build() const = 0;
  /// Runs on caller-owned dense buffers (no allocation); throws triad::Error on failure.
  virtual void runRaw(const void* const* inputs, void* const* outputs) = 0;
};

} // namespace triad::cpu
