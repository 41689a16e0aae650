// Binding a model's dynamic input dimensions from the shapes of the tensors given for its inputs
// (the public entry points are bindDims and ImportOptions::inputShapes in OnnxImporter.h).
#pragma once

#include "frontend/OnnxImporter.h"
#include "ir/Diagnostics.h"

#include <optional>

namespace onnx {
class GraphProto;
}

namespace triad::frontend {

/// bindDims on a parsed graph: the graph's declared inputs (initializers listed as inputs left
/// out) matched to `shapes`; see bindDims for the rules and the errors. With `deferred`, the
/// first error is kept there instead of thrown, and the shape or size at fault is left out: the
/// importer reports a broken model before inputs that do not fit it.
DimBinding bindGraphDims(const onnx::GraphProto& graph, const std::vector<InputShape>& shapes,
                         const ImportOptions& fixed, std::optional<Error>* deferred = nullptr);

/// declaredIo on a parsed graph.
DeclaredIo declaredGraphIo(const onnx::GraphProto& graph, const ImportOptions& fixed);

} // namespace triad::frontend
