// ONNX model -> ir::Graph.
//
// The importer reads the model (with external-data tensors next to it), checks the opset,
// inlines model-local functions (frontend/OnnxFunctions.h), fixes the symbolic batch dimension,
// sorts nodes topologically, maps every node through the op registry (typed attributes, shape
// rules), checks every size against the memory limit before allocating, folds nodes whose inputs
// are all constant (which resolves PyTorch's Shape/Gather/Concat chains into static shapes; the
// code is shared with the constant-fold pass, ir/passes/Folding.h), verifies the result and only
// then runs ONNX shape inference as a contained cross-check. Every error names the file and the
// element at fault.
#pragma once

#include "ir/Graph.h"

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace triad::frontend {

/// Default-domain opsets the importer maps (ONNX 1.13's range). Opset differences are resolved
/// by each op's parser; an attribute of an old opset that a parser does not know is refused.
constexpr int kMinOpset = 1;
constexpr int kMaxOpset = 18;

struct ImportOptions {
  /// Value for a symbolic (dim_param or missing) first dimension of graph inputs.
  int64_t batch = 1;
  /// Values for other symbolic dimensions, by dim_param name (e.g. {"sequence", 128}).
  std::map<std::string, int64_t> dims;
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
};

struct ImportResult {
  ir::Graph graph;
  std::vector<std::string> boundInputs; // graph inputs turned into constants via bindInput
  std::vector<std::string> warnings;    // e.g. ONNX shape inference disagreements
  std::string producer;                 // producer_name + version from the model
  int64_t irVersion = 0;
};

/// Sets a symbolic dimension from "NAME=VALUE" (`--dim`): a Usage error naming `what` unless
/// VALUE is a positive integer.
void addDim(ImportOptions& options, const std::string& spec, std::string_view what = "--dim");

/// Imports a model file; throws triad::Error (Io, InvalidModel or Unsupported) naming the file
/// and the node, attribute or tensor at fault.
ImportResult importOnnxFile(const std::filesystem::path& path, const ImportOptions& options = {});

/// Imports serialized model bytes; `baseDir` resolves external data, `label` names the model
/// in errors.
ImportResult importOnnxBytes(const std::string& bytes, const std::filesystem::path& baseDir,
                             const std::string& label, const ImportOptions& options = {});

} // namespace triad::frontend
