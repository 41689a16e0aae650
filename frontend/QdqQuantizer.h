// An int8 QDQ copy of a float ONNX model, made by ONNX Runtime's post-training quantizer
// (python/triad/qdq.py: quant_pre_process + quantize_static, QDQ format, int8 weights per output
// channel unless per-tensor, 8-bit activations calibrated on the given rows). Used by
// `triad quantize --format qdq` and by `triad bench --precision int8`.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace triad::frontend {

struct QdqOptions {
  std::string method = "minmax";     // minmax, percentile, entropy
  std::string activations = "uint8"; // uint8, int8
  bool perTensor = false;
  int batchRows = 32; // calibration rows per batch when the model's batch is not fixed
};

/// Writes the QDQ copy of `model` to `out` (atomically), calibrated on the rows of the .npy file
/// `calibration`, with the project's Python that has onnxruntime (under `sourceRoot`: .venv-peers,
/// else .venv; TRIAD_PYTHON overrides). Returns the quantizer's summary: op counts of the written
/// model ("ops"), "calibration_batches", "rows_per_batch", "method", "per_channel",
/// "activations". Throws Error: Unsupported without such a Python, Runtime for data the
/// quantizer refuses, Io when it fails otherwise (its output in the message).
nlohmann::json quantizeToQdq(const std::string& sourceRoot, const std::string& model,
                             const std::string& calibration, const std::string& out,
                             const QdqOptions& o);

} // namespace triad::frontend
