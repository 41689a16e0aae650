// The numbers of a `triad bench` result: latency statistics over raw samples, and the accuracy
// of one target's outputs against the interpreter's and against labels.
#pragma once

#include "ir/Tensor.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace triad::bench {

/// The q-quantile (0..1) of sorted samples, linearly interpolated between ranks (NumPy's
/// default), so that min <= p50 <= max always holds.
double quantile(const std::vector<double>& sorted, double q);

/// {"count","mean","p50","p90","p99","min","max","samples"} (docs/report-schema.md).
nlohmann::json latencyJson(const std::vector<double>& samplesMs);

struct Accuracy {
  double maxAbsErr = 0;
  double maxRelErr = 0; // |a-b| / max(|b|, 1e-3 * max|b|): near-zero references do not dominate
  int64_t elements = 0;
};

/// Element-wise error of `got` against `ref` (same element count; throws Runtime otherwise).
Accuracy compareOutputs(const ir::Tensor& got, const ir::Tensor& ref);

/// Fraction of rows of a [N, C] output whose arg-max equals the label; nullopt (with `why`)
/// when the output is not [N, C] or the counts differ.
std::optional<double> top1(const ir::Tensor& out, const ir::Tensor& labels, std::string* why);

} // namespace triad::bench
