// The CPU code generator: an IR graph becomes C++ (one translation unit, or several for a
// large model: CodeGenOptions::maxUnits).
//
// The graph is cut into fusion groups (ir/Fusion), every materialized value gets a place from
// the memory plan (ir/MemoryPlan: caller buffers, the weights blob, one arena), and each group
// becomes one function named after its layers: anchors (Conv, Gemm, MatMul) call the run-time
// kernels of cpu/runtime/ with the group's elementwise epilogue fused in; elementwise chains
// become one loop; other ops use their entry in the lowering table (cpu/Lowering.h). The
// generated API (prefix P, "triad_model" by default):
//
//   void* P_create(const unsigned char* weights, int threads, triad_host_fn host, void* ctx);
//   int   P_run(void* model, const void* const* inputs, void* const* outputs); // 0: ok
//   const char* P_error(void* model);
//   void  P_destroy(void* model);
//
// Inputs and outputs are dense row-major buffers in graph order; `weights` is the blob of
// constants (GeneratedCode::weights), aligned to 64 bytes.
#pragma once

#include "ir/Graph.h"
#include "ir/Progress.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace triad::cpu {

/// The least code (characters of layer functions) worth a translation unit of its own: each
/// unit costs about a second of parsing the run-time headers.
constexpr size_t kUnitChars = 32768;

struct CodeGenOptions {
  std::string prefix = "triad_model"; // C symbol prefix of the generated API
  std::string stem = "model";         // file names: <stem>.cpp, <stem>.h, <stem>.weights
  bool standalone = false;            // refuse nodes that would need the host's kernels
  bool fuse = true;                   // form fusion groups (off: one group per node)
  bool blockedLayout = true;          // NCHW16c between blockable convolutions
  /// Called per fusion group (layer) generated, named by its first node, of the group count.
  ir::ProgressFn progress;
  /// At most this many translation units: a large model's layers are split into several (of at
  /// least kUnitChars of code each), which the CPU target compiles in parallel.
  int maxUnits = 1;
  size_t unitChars = 0; // 0: kUnitChars
};

struct GeneratedCode {
  std::string stem, prefix; // as in CodeGenOptions
  std::string source;       // the .cpp
  std::string header;       // the .h declaring the API
  /// With several translation units: <stem>_internal.h (the model's types, shared by them) and
  /// <stem>_1.cpp, ... (more layers), as (file name, text). Empty for one unit.
  std::vector<std::pair<std::string, std::string>> extraFiles;
  std::vector<std::string> units; // the files to compile: <stem>.cpp, then <stem>_1.cpp, ...
  std::vector<uint8_t> weights;   // constants, each at a 64-byte aligned offset
  std::vector<const ir::Node*> hostNodes; // nodes run by the host callback, by call index
  std::vector<std::string> layerOps;      // by layer (profiling index): its ops, "Conv+Relu"
  int64_t arenaBytes = 0;                 // intermediates, after buffer reuse
  int64_t unsharedBytes = 0;              // what one buffer per intermediate would take
  int inPlace = 0, views = 0;
  size_t groups = 0, nodes = 0;
  std::string fusionSummary;
  std::vector<std::pair<int64_t, bool>> ioBytes; // (bytes, is input): inputs, then outputs
};

/// Whether the CPU target keeps tensors between blockable convolutions channel-blocked
/// (NCHW16c): yes unless the environment sets TRIAD_BLOCKED=0 (for comparisons).
bool blockedLayoutDefault();

GeneratedCode generateCpp(const ir::Graph& g, const CodeGenOptions& opts = {});

/// A C identifier made from a layer or model name ("/fc1/Gemm" -> "fc1_Gemm").
std::string cIdentifier(std::string_view name);

} // namespace triad::cpu
