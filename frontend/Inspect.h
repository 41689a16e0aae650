// What a model is made of, as `triad inspect --json` reports it and the Python package's
// Model.inspect() returns it: inputs, outputs, a per-layer table (outputs, parameters, MACs),
// totals and per-target support (from each target's own lowering tables, with reasons).
#pragma once

#include "frontend/OnnxImporter.h"
#include "ir/Target.h"

#include <nlohmann/json.hpp>
#include <string>

namespace triad::frontend {

/// The report of an imported model. `model` is the path as the user gave it. Keys: model, graph,
/// opset, ir_version, producer, inputs and outputs ([{name, dtype, shape}]), layers ([{name, op,
/// outputs, params, macs}]), totals {layers, params, param_bytes, macs}, targets ({name:
/// {supported, layers, unsupported: {op: reason}}}), warnings.
nlohmann::json inspectModel(const ImportResult& r, const std::string& model,
                            const ir::TargetRegistry& targets);

} // namespace triad::frontend
