// ONNX model -> ir::Graph.
//
// The importer reads the model (with external-data tensors next to it), checks the opset,
// inlines model-local functions (frontend/OnnxFunctions.h), fixes the dynamic input dimensions
// (from the options, or from the shapes of the tensors the caller will give: ShapeBinding.cpp),
// sorts nodes topologically, maps every node through the op registry (typed attributes, shape
// rules), checks every size against the memory limit before allocating, folds nodes whose inputs
// are all constant (which resolves PyTorch's Shape/Gather/Concat chains into static shapes; the
// code is shared with the constant-fold pass, ir/passes/Folding.h), verifies the result and only
// then runs ONNX shape inference as a contained cross-check. Every error names the file and the
// element at fault.
#pragma once

#include "ir/Graph.h"

#include "ir/OpDef.h"
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include <string>
#include <variant>
#include <vector>

namespace triad::frontend {

/// Default-domain opsets the importer maps. Which definition of each op an opset selects comes
/// from ONNX's schema history (ir/OnnxOpVersions.def); each OpDef says up to which definition it
/// implements its op (ir::implementedOnnxVersion), and its parser resolves the differences
/// between the older ones. An attribute that a parser does not know is refused.
constexpr int kMinOpset = 1;
constexpr int kMaxOpset = ir::kReviewedOnnxOpset;

/// The shape of a tensor that the caller will give for a graph input (a file of `triad run`, an
/// array of the Python API), from which the model's dynamic dimensions take their sizes.
struct InputShape {
  /// The graph input's name; empty: the next graph input in order that no earlier entry named
  /// by position (as `triad run --input FILE`). Initializers listed as inputs do not count.
  std::string input;
  /// -1 for an axis the data leaves open (`triad bench` gives rows; the batch is swept).
  ir::Shape shape;
  /// Where the tensor comes from (a file path), for errors; may be empty.
  std::string source;
};

/// Sizes of a model's dynamic dimensions, as bindDims derives them from input shapes.
struct DimBinding {
  /// Symbolic dimensions by dim_param name (a named first dimension included).
  std::map<std::string, int64_t> dims;
  /// Unnamed dynamic dimensions (no dim_value, no dim_param): graph input -> axis -> size.
  std::map<std::string, std::map<int64_t, int64_t>> axes;
  bool empty() const { return dims.empty() && axes.empty(); }
  /// "N=4, seq=7, x[2]=3": canonical (sorted), usable as a cache key.
  std::string toString() const;
  bool operator==(const DimBinding&) const = default;
};

struct ImportOptions {
  /// Value for a symbolic (dim_param or missing) first dimension of graph inputs that `dims`
  /// does not name. Unset: taken from `inputShapes` where they give it, else 1.
  std::optional<int64_t> batch;
  /// Values for other symbolic dimensions, by dim_param name (e.g. {"sequence", 128}).
  std::map<std::string, int64_t> dims;
  /// Sizes of unnamed dynamic dimensions: graph input -> axis -> size (DimBinding::axes).
  std::map<std::string, std::map<int64_t, int64_t>> axes;
  /// Shapes of the tensors the caller will give (ONNX Runtime's way): the dynamic dimensions
  /// that `batch`, `dims` and `axes` leave open take their sizes from them (bindDims); a size
  /// that contradicts a fixed dimension, an explicit `batch` or `dims` entry, or another input's
  /// size for the same dim_param is a triad::Error (Runtime) naming the input, the dimension and
  /// the source. The binding is returned in ImportResult::binding.
  std::vector<InputShape> inputShapes;
  /// Graph inputs that feed shape operands (Reshape's shape, Slice's starts, ...) can be bound
  /// to values here; they then become constants and leave the graph's inputs. Test harnesses
  /// use it for ONNX node tests that pass such operands as inputs. Return nullptr to decline.
  std::function<const ir::Tensor*(const std::string& inputName)> bindInput;
  /// Fold nodes whose inputs are all constant at import (on by default; needed for static shapes).
  /// Results over 1M elements that are larger than their constant inputs (a large Expand or
  /// ConstantOfShape) stay nodes, see ir/passes/Folding.h.
  bool foldConstants = true;
  /// Cross-check Triad's shapes with libonnx's shape inference (warnings only). It runs after
  /// validation, in a child process (a crash in libonnx cannot take the caller down); fuzzers
  /// turn it off for speed.
  bool onnxShapeCheck = true;
  /// The leading dimension of the graph input is a stream of samples (the FPGA target): a fixed
  /// size there is kept even when `inputShapes` give more samples (the caller runs them through
  /// the graph in chunks, fpga::streamChunks) instead of being an error.
  bool streamBatch = false;
};

struct ImportResult {
  ir::Graph graph;
  std::vector<std::string> boundInputs; // graph inputs turned into constants via bindInput
  std::vector<std::string> warnings;    // e.g. ONNX shape inference disagreements
  std::string producer;                 // producer_name + version from the model
  int64_t irVersion = 0;
  DimBinding binding; // the sizes bound from ImportOptions::inputShapes
};

/// Sets a symbolic dimension from "NAME=VALUE" (`--dim`): a Usage error naming `what` unless
/// VALUE is a positive integer.
void addDim(ImportOptions& options, const std::string& spec, std::string_view what = "--dim");

/// Imports a model file; throws triad::Error (Io, InvalidModel or Unsupported) naming the file
/// and the node, attribute or tensor at fault; with `inputShapes`, also bindDims' Usage and
/// Runtime errors, after the model itself is validated.
ImportResult importOnnxFile(const std::filesystem::path& path, const ImportOptions& options = {});

/// Imports serialized model bytes; `baseDir` resolves external data, `label` names the model
/// in errors.
ImportResult importOnnxBytes(const std::string& bytes, const std::filesystem::path& baseDir,
                             const std::string& label, const ImportOptions& options = {});

/// The sizes that inputs of the given shapes give to the model's dynamic dimensions (every
/// dim_param and unnamed dynamic dimension they reach) that `fixed.batch`, `fixed.dims` and
/// `fixed.axes` do not already fix; `fixed.inputShapes` is ignored. Reads only the graph's
/// declared inputs, so callers can key compiled models on the result before importing
/// (`fixed` + binding -> importOnnxFile). Throws triad::Error: Usage for an input name the graph
/// does not have or more positional shapes than inputs; Runtime for a rank or fixed size that
/// does not match, a size that contradicts `fixed`, or one dim_param given two sizes (both
/// inputs named); Io/InvalidModel when the file cannot be read or parsed.
DimBinding bindDims(const std::filesystem::path& model, const std::vector<InputShape>& shapes,
                    const ImportOptions& fixed = {});

/// A graph input or output as the model declares it, with the sizes `fixed` gives applied: each
/// dimension a number, or the dim_param's name ("?" for an unnamed dynamic dimension) where
/// `fixed` leaves it open (a first dimension is fixed by `fixed.batch` when set).
struct DeclaredTensor {
  std::string name;
  std::string dtype; // ir::dtypeName, or the ONNX element type's name when the IR has none
  std::vector<std::variant<int64_t, std::string>> shape;
  bool hasShape = false; // outputs may declare no shape
  /// Whether a dimension is still open (a dim_param or unnamed dynamic dimension).
  bool open() const;
};
struct DeclaredIo {
  std::vector<DeclaredTensor> inputs, outputs; // initializers listed as inputs left out
  /// Whether any input dimension is open: shapes must be bound from the data (bindDims).
  bool open() const;
};
/// The model's declared inputs and outputs (reads only the graph's value infos).
DeclaredIo declaredIo(const std::filesystem::path& model, const ImportOptions& fixed = {});

/// `options` with `binding` added to its dims and axes (the binding wins where both name one).
ImportOptions withBinding(ImportOptions options, const DimBinding& binding);

} // namespace triad::frontend
