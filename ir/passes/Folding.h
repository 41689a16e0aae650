// Constant folding of one node: the code shared by the importer (which folds while it builds
// the graph, so that shape subgraphs resolve to static shapes) and the constant-fold pass.
//
// A node folds when every present input is a constant, or, for ops whose outputs depend only
// on input types (OpDef::valueIndependent: Shape, Size, EyeLike), whatever its inputs are. The
// outputs are computed with the op's reference kernel (OpDef::eval), exactly as the
// interpreter would compute them at run time.
//
// Size guard: folding must not blow up the model. A node whose outputs together hold more than
// kMaxFoldGrowthElements elements and more elements than its constant inputs (Expand, Tile,
// ConstantOfShape, Range, Resize, an outer product...) is left in the graph to run at run
// time. Constant nodes are exempt (their value is already stored in the model). Ops marked
// OpDef::foldable = false (QONNX's quantizers, whose operands carry a weight's precision) never
// fold.
#pragma once

#include "ir/Graph.h"

#include <optional>
#include <span>
#include <vector>

namespace triad::ir {

/// 1M elements (4 MiB of f32): a folded result larger than this must not be larger than the
/// constants it is computed from.
constexpr int64_t kMaxFoldGrowthElements = int64_t(1) << 20;

/// The input tensors a shape rule and a reference kernel see for a node, as far as they are
/// known before run time.
class FoldInputs {
public:
  /// `inputs`: the node's IR inputs (nullptr for absent optional inputs).
  FoldInputs(const OpDef& def, std::span<Value* const> inputs);
  FoldInputs(const FoldInputs&) = delete;
  FoldInputs& operator=(const FoldInputs&) = delete;

  /// Per input: its constant value; a zero tensor of its type standing in for a run-time value
  /// that a value-independent op ignores; nullptr for absent inputs and run-time values.
  std::span<const Tensor* const> tensors() const { return tensors_; }
  /// Every present input has a tensor: the node can be evaluated now.
  bool allKnown() const { return allKnown_; }
  /// Elements of the inputs that are real constants (placeholders not counted).
  int64_t constantElements() const { return constantElements_; }

private:
  std::vector<const Tensor*> tensors_;
  std::vector<Tensor> placeholders_; // reserved up front: tensors_ points into it
  bool allKnown_ = true;
  int64_t constantElements_ = 0;
};

/// Whether folding a node with these inputs and output types would respect the size guard.
bool foldWithinSizeLimit(OpKind kind, const FoldInputs& in, std::span<const TensorType> outputs,
                         int64_t maxGrowth = kMaxFoldGrowthElements);

/// Evaluates a node ahead of run time: its output tensors when it folds (all inputs known and
/// within the size guard), nullopt otherwise. `outputs` are the node's output types.
std::optional<std::vector<Tensor>> tryFoldNode(const OpDef& def, const Attrs& attrs,
                                               const FoldInputs& in,
                                               std::span<const TensorType> outputs,
                                               int64_t maxGrowth = kMaxFoldGrowthElements);

/// After a DequantizeLinear (kind) with inputs `in` folded into the constant `folded`: records
/// its integers, scale and zero point as folded->dequantizedFrom() (axis -1 per tensor; blocked
/// quantization is not recorded). Other kinds: nothing.
void recordFoldedDequantize(OpKind kind, const Attrs& attrs, const FoldInputs& in, Value* folded);

} // namespace triad::ir
