// Automatic precision (`triad quantize --auto --budget B`): the narrowest per-layer fixed-point
// widths whose emulated outputs stay within a budget of the float model's, searched with the
// bit-accurate emulator.
//
// The search (docs/fpga.md, "Automatic precision"):
//   - Every width is fixed<W,auto>: the integer bits come from the calibration ranges (the
//     largest magnitude observed, plus auto_margin), so only W is searched. Accumulators stay
//     exact; tables (Softmax, Sigmoid, ...) keep their defaults.
//   - Knobs, in stream order: the input, then per layer its weights and biases (Dense/Conv) and
//     its result. All start at 16 bits.
//   - Layer by layer, each knob takes the smallest width in [2, its current] for which the
//     metric stays within the budget with every other knob as it is (a binary search on the
//     emulator's outputs over the given samples).
//   - The metric: with labels, the top-1 accuracy's drop from the float model's, in points;
//     without, the largest |fixed - float| over the outputs' largest |float|.
#pragma once

#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace triad::fpga {

struct AutoPrecisionOptions {
  double budget = 0.5;                        // points of top-1, or a relative error
  std::optional<std::vector<int64_t>> labels; // one class per sample: the metric is top-1
  int maxWidth = 16, minWidth = 2;
};

struct PrecisionKnob {
  std::string layer; // "(input)" for the graph input
  std::string role;  // "input", "weight" (weights and biases), "result"
  int width = 16;
  int64_t elements = 0; // per sample (input, result) or in all (weight)
};

struct PrecisionScore {
  double metric = 0;   // the drop in points, or the relative error
  double accuracy = 0; // top-1 with labels, else 0
  double relError = 0; // max |fixed - float| / max |float|
};

struct AutoPrecisionResult {
  nlohmann::json config; // a precision config file (docs/fpga.md, "Config file")
  std::vector<PrecisionKnob> knobs;
  PrecisionScore result, baseline;                  // the config's, and fixed<16,6> everywhere
  double floatAccuracy = 0;                         // with labels
  int64_t weightBits16 = 0, weightBits = 0;         // weight and bias storage
  int64_t activationBits16 = 0, activationBits = 0; // input and results per sample
  int64_t evaluations = 0;
};

/// Searches the widths for `g` on the samples `x` (float, the graph's input), with the value
/// ranges observed on them (fpga::observeRanges). Runtime error when even 16 bits everywhere
/// misses the budget (naming the metric).
AutoPrecisionResult autoPrecision(const ir::Graph& g, const ir::Tensor& x,
                                  const std::vector<std::optional<double>>& ranges,
                                  const AutoPrecisionOptions& o);

/// The class of each row of a classifier's output (the index of the largest value along the
/// last axis; the first on a tie).
std::vector<int64_t> argmaxRows(const ir::Tensor& t);

} // namespace triad::fpga
