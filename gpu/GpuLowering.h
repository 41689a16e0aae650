// The GPU target's lowering table (internal to gpu/): for every op kind compiled into a kernel
// that is not a plain elementwise op, one entry that says whether a node is supported (with the
// reason when not) and emits its kernel with a generator of gpu/KernelGen.h. Elementwise ops need
// no entry: their scalar math comes from the shared ir/ScalarExpr table, and the code generator
// (gpu/GpuCodeGen.cpp) fuses them into chains and into the anchors' epilogues.
#pragma once

#include "gpu/GpuCodeGen.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace triad::gpu {

/// How the epilogue of an anchor finds the output element it works on: an expression for its
/// linear index in the group's output, and optionally direct expressions for some coordinates
/// (e.g. the convolution's n, k, oh, ow); missing coordinates are derived from the linear index.
struct EpilogueIndex {
  std::string linear;
  std::vector<std::string> coords; // by output dim; "" where it must be derived
};

/// What a lowering sees while emitting one node (the anchor of its group, or a lone node) and
/// what it hands back.
struct GpuLowerContext {
  const ir::Node& node;
  std::string layer; // the group's name, for the kernel name and comment
  const GpuCodeGenOptions& options;

  /// The value the kernel's output `i` is (the group's last node's output for anchors).
  std::function<const ir::Value*(size_t i)> output;
  /// For anchors: the group's elementwise tail as epilogue statements over `acc`, preceded by
  /// `pre` (the anchor's own bias/scale statements); `pre` alone when the group has no tail.
  std::function<Epilogue(const EpilogueIndex& index, const std::string& pre)> epilogue;
  /// Declares a pointer named `name` to value `v` inside the kernel (for epilogue operands such
  /// as a bias) and returns the name.
  std::function<std::string(const std::string& name, const ir::Value* v)> pointer;

  // Filled by the lowering.
  GeneratedKernel kernel;
  std::map<std::string, const ir::Value*> bind; // kernel parameter -> the value it points at
  std::string kind;                             // "gemm", "conv (direct)", ...
  std::optional<GemmShape> gemm;
  std::optional<ConvShape> conv;
  std::string params;
  bool tuned = false; // parameters came from the tuning database
};

struct GpuLowering {
  std::function<ir::Support(const ir::Node&)> supports;
  void (*emit)(GpuLowerContext&) = nullptr;
  bool anchor = false; // the kernel takes an elementwise epilogue
};

const GpuLowering* findGpuLowering(ir::OpKind k);

} // namespace triad::gpu
