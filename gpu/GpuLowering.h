// The GPU target's lowering table (internal to gpu/): for every op kind compiled into a kernel
// that is not a plain elementwise op, one entry that says whether a node is supported (with the
// reason when not) and emits its kernel with a generator of gpu/KernelGen.h. Elementwise ops need
// no entry: their scalar math comes from the shared ir/ScalarExpr table, and the code generator
// (gpu/GpuCodeGen.cpp) fuses them into chains and into the anchors' epilogues.
#pragma once

#include "gpu/CodeWriter.h"
#include "gpu/GpuCodeGen.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
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
  /// For kernels that check run-time data: declares the step's status flag (an `__global int*`)
  /// and returns its name; the kernel sets `*flag = 1` where the check `what` fails, and the run
  /// then fails naming the node ("an index is out of range").
  std::function<std::string(const std::string& what)> check;
  /// Data derived from constants at compile time (weights repacked for a kernel, e.g. B's
  /// panels): `make()` is added to the weights buffer once per `key`; the kernel parameter
  /// `param` then points at it (instead of a value of `bind`), commented with `what`.
  std::function<void(const std::string& param, const std::string& key,
                     const std::function<std::vector<float>()>& make, const std::string& what)>
      bindPacked;
  /// Run-time scratch: `ints` int slots, zeroed before every run (in the status buffer, never
  /// read as a check flag); every kernel of this step that declares a parameter `param` points
  /// at them.
  std::function<void(const std::string& param, int ints, const std::string& what)> scratch;
  /// A kernel that runs before this step's own, as a step of its own (e.g. a reduction whose
  /// result the main kernel reads from scratch), named `freshName(suffix)`, its parameters bound
  /// by `bind` (and to scratch and packed constants by name).
  std::function<std::string(const std::string& suffix)> freshName;
  std::function<void(GeneratedKernel kernel, const std::map<std::string, const ir::Value*>& bind,
                     const std::string& kind)>
      preStep;

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
  /// The epilogue's `pre` declares the anchor's value as `q_val` (of the node's output type),
  /// and the tail may change the element type: the epilogue ends declaring `acc` of the group's
  /// output type (the integer products).
  bool typedTail = false;
};

const GpuLowering* findGpuLowering(ir::OpKind k);

/// The lowering families in their own files add their entries to the table.
void addReduceLowerings(std::unordered_map<ir::OpKind, GpuLowering>& table);
void addIndexLowerings(std::unordered_map<ir::OpKind, GpuLowering>& table);
/// QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger on integer kernels
/// (gpu/GpuLoweringsQuant.cpp).
void addQuantLowerings(std::unordered_map<ir::OpKind, GpuLowering>& table);

/// Helpers shared by the lowering files.
namespace lower {
ir::Support no(std::string why);
const ir::Shape& shapeOf(const ir::Value* v);
/// Every tensor the node touches stays below 2^31 elements (kernels index with int).
ir::Support require32Bit(const ir::Node& n);
ir::Support both(ir::Support a, const ir::Support& b);
/// Every input and output is float32.
ir::Support requireF32(const ir::Node& n);
/// The OpenCL C type that moves one element of `t` (movement kernels copy bits).
std::string moveType(ir::DType t);
constexpr int kMoveWorkGroup = 64;
/// The common frame of a kernel with one work-item per output element (`total` of them):
/// comment, signature (`params` are declarations), index `idx` and bounds check. The caller
/// writes the body and closes the function.
CodeWriter openPerElementKernel(GpuLowerContext& c, const std::string& what,
                                const std::vector<std::string>& comment,
                                const std::vector<std::string>& params, int64_t total);
/// The tuning database's parameters for `key` (TuningDb::gemmKey / convKey), else the defaults;
/// panel parameters only where `panelOk`, vectors only as wide as the device builds them.
GemmParams tunedOrDefault(GpuLowerContext& c, const GemmShape& s, const GemmShape& panelShape,
                          bool panelOk, const std::function<std::string()>& key);
/// A MatMul (numpy semantics) of inputs 0 and `bInput` as one GEMM, or batched GEMMs.
struct MatMulPlan {
  GemmShape shape;
  bool batched = false; // GEMM batches (else A's batches are stacked into rows)
};
std::optional<MatMulPlan> planMatMul(const ir::Node& n, size_t bInput = 1);
/// Where the epilogue of a MatMul planned as `p` (output `out`) finds its element.
EpilogueIndex matMulEpilogueIndex(const ir::Node& n, const MatMulPlan& p, const ir::Value* out);
/// The direct convolution's parameters for `s` (untuned): 4 output columns per work-item,
/// work-groups of up to 8 column blocks x 8 rows.
ConvParams directConvParams(const ConvShape& s);
/// The convolution of a Conv-like node (ConvAttrs; its weights are input `wInput`), 1-D as 2-D.
std::optional<ConvShape> convShapeOf(const ir::Node& n, size_t wInput = 1);
/// Softmax over the trailing axes of a float32 tensor: the work-group row kernel
/// (generateSoftmax).
void emitTrailingSoftmax(GpuLowerContext& c);
} // namespace lower

} // namespace triad::gpu
