// The CPU target's lowering table: for every op kind the target compiles natively, one entry
// that says whether a given node is supported (with the reason when not) and emits the C++ that
// computes it into the generated translation unit. Elementwise ops need no entry: their scalar
// math comes from the shared ir/ScalarExpr table and the code generator fuses them into loops
// and into anchors' epilogues. Nodes without a native lowering run on the host through the
// reference kernel (the generated code calls back into Triad); standalone sources refuse them.
#pragma once

#include "ir/Fusion.h"
#include "ir/Target.h"

#include <fmt/format.h>
#include <string>
#include <vector>

namespace triad::cpu {

/// Lines of generated C++ with indentation.
class Code {
public:
  explicit Code(int indent = 0) : indent_(indent) {}
  template <typename... Args> void line(fmt::format_string<Args...> f, Args&&... args) {
    text_.append(size_t(indent_) * 2, ' ');
    text_ += fmt::format(f, std::forward<Args>(args)...);
    text_ += '\n';
  }
  void raw(std::string_view s) { text_ += s; }
  void open(std::string_view header) { // "for (...) {" and indent
    line("{} {{", header);
    ++indent_;
  }
  void close(std::string_view tail = "}") {
    --indent_;
    line("{}", tail);
  }
  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

private:
  std::string text_;
  int indent_ = 0;
};

/// What a lowering sees while emitting one node (the anchor of its group, or a lone node).
struct LowerContext {
  const ir::Node& node;
  std::string ident; // C identifier for the layer ("conv1_Conv"), unique in the model

  /// Pointer expressions, typed for the value's element type: `(const float*)(W + 4096)`.
  std::vector<std::string> inputs;  // by IR input ("" for an absent optional input)
  std::vector<std::string> outputs; // by output

  /// For anchors: the group's elementwise epilogue as a C++ lambda
  /// `[&](float* c, int row, int col0, int n)` that finishes the row segment c[0..n) of the
  /// kernel's output in place. `index` is an expression (over c, row, col0 and the lowering's
  /// variables) for the linear output index of c[0]; `ld` is the kernel's row length (segments
  /// never cross a row). Null when the group has no epilogue.
  std::function<std::string(const std::string& index, int64_t ld)> epilogue;

  Code& body;   // statements of the layer's function (run time)
  Code& create; // statements run once when the model is created (weights pre-packing)
  Code& fields; // members of the model struct (packed weights, tables)

  /// Reserves scratch memory for this layer (shared by all layers; valid during the layer only)
  /// and returns a `float*` expression for it. `bytes` is a C++ expression for its size,
  /// evaluated in P_create where the call is made: call it while the layer's `create` block
  /// that defines what the expression uses is open.
  std::function<std::string(const std::string& bytes)> scratch;

  /// Channel-blocked layouts (NCHW16c, see cpu/runtime/triad_kernels.h), chosen by the code
  /// generator for lowerings with `blockable`: the anchor's input 0 is blocked, and the group's
  /// output must be written blocked (the epilogue's `index` is then the blocked linear index).
  bool inputBlocked = false;
  bool outputBlocked = false;

  /// Stores `bytes` (a table the lowering computes at compile time from an op's shared index
  /// math) with the model's weights; returns a `const unsigned char*` expression for it.
  std::function<std::string(const std::vector<uint8_t>& bytes)> data = nullptr;

  bool hasEpilogue() const { return static_cast<bool>(epilogue); }
  /// The epilogue lambda, or triad_rt::EpiNone{} when there is none.
  std::string epi(const std::string& index, int64_t ld) const {
    return epilogue ? epilogue(index, ld) : std::string("triad_rt::EpiNone{}");
  }
};

struct Lowering {
  /// Whether this node is compiled natively (dtypes, attributes); ok by default.
  std::function<ir::Support(const ir::Node&)> supports;
  void (*emit)(LowerContext&) = nullptr;
  /// The kernel accepts an elementwise epilogue (the node can anchor a fusion group).
  bool anchor = false;
  /// Whether the kernel can read input 0 and write its output channel-blocked (NCHW16c) for
  /// this node; null: never. Blocked tensors stay blocked between such nodes.
  bool (*blockable)(const ir::Node&) = nullptr;
  /// A node that also has a scalar expression (ir/ScalarExpr.h) is fused as an elementwise op;
  /// this entry computes only the forms without one (QuantizeLinear per axis, ...).
  bool elementwiseFirst = false;
};

/// The table entry for `n`'s kind, or nullptr.
const Lowering* findLowering(ir::OpKind k);
/// The entry that emits `n` as a kernel: findLowering's, unless `n` is fused as an elementwise
/// op instead (Lowering::elementwiseFirst); nullptr when there is none.
const Lowering* kernelLowering(const ir::Node& n);

/// Whether the CPU target compiles `n` natively: a lowering that supports it, an elementwise
/// op with a scalar expression, or a view op.
ir::Support nativeSupport(const ir::Node& n);

/// The fusion policy of the CPU target.
ir::FusionPolicy cpuFusionPolicy();

/// Shape helpers for lowerings.
std::string shapeComment(const ir::TensorType& t); // "f32[1, 64, 56, 56]"

} // namespace triad::cpu
