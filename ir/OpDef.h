// The op registry: for every op kind, the one place that defines its semantics.
//
// An OpDef carries
//   - the ONNX mapping (op type, input/output arity, which inputs are shape operands),
//   - `parse`: ONNX attributes (through the frontend's AttrReader) -> typed Attrs,
//   - `infer`: the shape and type rule,
//   - `eval`:  the reference kernel that the interpreter runs (the oracle of every backend).
// Family files in ir/ops/ fill the registry; targets keep their own lowering tables keyed by
// OpKind, so "unsupported on target X" is derived, never listed twice.
#pragma once

#include "ir/Attrs.h"
#include "ir/Tensor.h"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace triad::ir {

enum class OpKind : uint16_t {
#define TRIAD_OP(Kind, OnnxName, Family) Kind,
#include "ir/Ops.def"
#undef TRIAD_OP
};
constexpr size_t kNumOpKinds = 0
#define TRIAD_OP(Kind, OnnxName, Family) +1
#include "ir/Ops.def"
#undef TRIAD_OP
    ;

std::string_view opKindName(OpKind k);

/// Read access to one ONNX node's attributes, implemented by the frontend (the only code that
/// sees ONNX protobufs). Getters return nullopt when the attribute is absent and throw a
/// triad::Error naming the attribute when it is present with the wrong type.
class AttrReader {
public:
  virtual ~AttrReader() = default;
  virtual bool has(std::string_view name) const = 0;
  virtual std::optional<int64_t> getInt(std::string_view name) const = 0;
  virtual std::optional<float> getFloat(std::string_view name) const = 0;
  virtual std::optional<std::string> getString(std::string_view name) const = 0;
  virtual std::optional<std::vector<int64_t>> getInts(std::string_view name) const = 0;
  virtual std::optional<std::vector<float>> getFloats(std::string_view name) const = 0;
  virtual std::optional<std::vector<std::string>> getStrings(std::string_view name) const = 0;
  virtual std::optional<Tensor> getTensor(std::string_view name) const = 0;
  virtual std::vector<std::string> names() const = 0;

  int64_t getInt(std::string_view name, int64_t dflt) const { return getInt(name).value_or(dflt); }
  float getFloat(std::string_view name, float dflt) const { return getFloat(name).value_or(dflt); }
  std::string getString(std::string_view name, std::string dflt) const {
    return getString(name).value_or(std::move(dflt));
  }
};

/// What an op's attribute parser sees.
struct ParseContext {
  const AttrReader& attrs;
  int opset; // version of the default ONNX domain imported by the model
  /// Per ONNX input: the constant value if known at import time, else nullptr (also for absent
  /// optional inputs). Shape operands are always constant here.
  std::span<const Tensor* const> constInputs;
  /// Per ONNX input: its type, or nullopt for an absent optional input.
  std::span<const std::optional<TensorType>> inputTypes;
  /// Number of outputs the ONNX node declares (Split without sizes divides by it).
  int numOutputs = 1;

  const Tensor* constInput(size_t i) const {
    return i < constInputs.size() ? constInputs[i] : nullptr;
  }
  bool hasInput(size_t i) const { return i < inputTypes.size() && inputTypes[i].has_value(); }
};

/// What a shape rule sees: the node's attributes and its (IR) input types.
struct InferContext {
  const Attrs& attrs;
  std::span<const std::optional<TensorType>> inputs; // nullopt: absent optional input
  /// Constant input values where known (nullptr otherwise). Rules must not depend on them for
  /// inputs that are not constant at run time; they exist for ops like Shape/Range folding.
  std::span<const Tensor* const> constInputs;

  const TensorType& in(size_t i) const { return *inputs[i]; }
  bool has(size_t i) const { return i < inputs.size() && inputs[i].has_value(); }
  template <typename A> const A& as() const { return static_cast<const A&>(attrs); }
};

/// What a reference kernel sees: input tensors (nullptr for absent optional inputs) and output
/// tensors already allocated with the inferred types.
struct EvalContext {
  const Attrs& attrs;
  std::span<const Tensor* const> inputs;
  std::span<Tensor> outputs;

  const Tensor& in(size_t i) const { return *inputs[i]; }
  bool has(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  Tensor& out(size_t i) const { return outputs[i]; }
  template <typename A> const A& as() const { return static_cast<const A&>(attrs); }
};

/// Shape rules return the types of all outputs the op defines for the given attributes; a node
/// keeps the first N (the outputs its ONNX node declared).
using ParseFn = std::function<std::shared_ptr<const Attrs>(const ParseContext&)>;
using InferFn = std::function<std::vector<TensorType>(const InferContext&)>;
using EvalFn = std::function<void(const EvalContext&)>;
/// Multiply-accumulates of one node given its input and output types (0 when not defined).
using MacsFn = std::function<int64_t(const InferContext&, std::span<const TensorType> outputs)>;

struct OpDef {
  OpKind kind{};
  std::string_view onnxName{}; // defaults to the OpKind's name
  /// ONNX domain; empty: the default domain (also spelled "ai.onnx"). QONNX's ops name
  /// "qonnx.custom_op.general", which findOnnxOp also reaches as "finn.custom_op.general" and
  /// "onnx.brevitas" (the domains FINN and older Brevitas exports use).
  std::string_view domain{};
  int minInputs = 1, maxInputs = 1; // ONNX arity (maxInputs -1: variadic)
  int minOutputs = 1, maxOutputs = 1;
  /// ONNX inputs that determine output shapes (Reshape's shape, Slice's starts, ...): they must
  /// be constant at import, are read by `parse` into attributes, and are dropped from the IR
  /// node, so every IR node has static shapes and backends never see shape operands.
  std::vector<int> shapeOperands{};
  /// The outputs depend only on the input types, never on their values (Shape, Size,
  /// EyeLike): the importer folds such nodes to constants whenever shapes are static.
  bool valueIndependent = false;
  /// False: never folded ahead of run time, even on constant inputs. QONNX's quantizers on
  /// weights stay in the graph because their scale and bit width are the weight's precision,
  /// which the FPGA target reads (fpga/Imported.h); other targets compute them at run time.
  bool foldable = true;
  /// Lowest default-domain opset whose semantics `parse` maps (older models are refused).
  int sinceOpset = 1;
  /// Default-domain ops: the newest ONNX definition of the op (its since_version, see
  /// onnxOpVersionAt) that `parse`, `infer` and `eval` implement. 0: every definition up to
  /// kReviewedOnnxOpset. A model whose opset selects a newer definition is refused, naming the
  /// op, the version it uses and this one.
  int throughVersion = 0;
  /// Null: the op takes no attributes (NoAttrs). The frontend refuses any ONNX attribute that
  /// `parse` did not read, so an attribute Triad ignores can never silently change results.
  ParseFn parse{};
  InferFn infer{};
  EvalFn eval{};
  MacsFn macs{}; // for cost models and `triad inspect`; null: the op does no MACs

  bool isShapeOperand(int i) const;
};

/// The newest default-domain opset whose op definitions every OpDef was reviewed against: an
/// OpDef with throughVersion 0 implements all of its op's definitions up to this opset.
/// Regenerating ir/OnnxOpVersions.def from a newer onnx leaves newer definitions refused until
/// this moves (the registry asserts the table reaches it).
constexpr int kReviewedOnnxOpset = 28;

/// The onnx release whose schemas ir/OnnxOpVersions.def lists, and the newest opset it defines.
std::string_view onnxSchemaRelease();
int newestOnnxOpset();
/// The opset versions at which the definition of default-domain op `opType` changed (ONNX's
/// since_version history), ascending; empty when the default domain has no such op.
std::span<const int> onnxOpHistory(std::string_view opType);
/// The version (since_version) of `opType`'s definition in effect at `opset`; 0 when the op
/// does not exist at that opset or at all.
int onnxOpVersionAt(std::string_view opType, int opset);
/// The newest definition of a default-domain op that `def` implements (its throughVersion, or
/// the version in effect at kReviewedOnnxOpset).
int implementedOnnxVersion(const OpDef& def);
/// Empty when `def` implements the definition of its op that a model at default-domain opset
/// `opset` uses; otherwise why not (the op, its domain, the version selected and the newest
/// one Triad implements, or the opset that introduced it).
std::string onnxVersionProblem(const OpDef& def, int opset);

/// Registry lookups. Unknown kinds / names give nullptr. `domain` is the node's ONNX domain
/// (aliases resolved as described at OpDef::domain).
const OpDef* findOp(OpKind kind);
const OpDef* findOnnxOp(std::string_view domain, std::string_view opType);
const OpDef& opDef(OpKind kind); // asserts registered
std::vector<const OpDef*> allOps();

/// Family registration (one per ir/ops/<Family>.cpp), called once by the registry.
class OpTable {
public:
  void add(OpDef def);
  std::vector<OpDef> defs;
};
#define TRIAD_FAMILY(Family) void register##Family##Ops(OpTable& table);
#include "ir/OpFamilies.def"
#undef TRIAD_FAMILY

} // namespace triad::ir
