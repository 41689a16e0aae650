#include "bench/Stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace triad::bench {

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

nlohmann::json latencyJson(const std::vector<double>& samplesMs) {
  std::vector<double> s = samplesMs;
  std::sort(s.begin(), s.end());
  nlohmann::json j;
  j["count"] = s.size();
  if (s.empty()) {
    for (const char* k : {"mean", "p50", "p90", "p99", "min", "max"})
      j[k] = nullptr;
  } else {
    j["mean"] = std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
    j["p50"] = quantile(s, 0.5);
    j["p90"] = quantile(s, 0.9);
    j["p99"] = quantile(s, 0.99);
    j["min"] = s.front();
    j["max"] = s.back();
  }
  j["samples"] = samplesMs; // in the order they were taken
  return j;
}

Accuracy compareOutputs(const ir::Tensor& got, const ir::Tensor& ref) {
  if (got.numElements() != ref.numElements())
    fail(ErrorKind::Runtime, "output holds {} elements, the interpreter's {}", got.numElements(),
         ref.numElements());
  Accuracy a;
  a.elements = ref.numElements();
  double refMax = 0;
  for (int64_t i = 0; i < ref.numElements(); ++i)
    refMax = std::max(refMax, std::abs(ref.getDouble(i)));
  double floor = std::max(1e-3 * refMax, 1e-30);
  for (int64_t i = 0; i < ref.numElements(); ++i) {
    double r = ref.getDouble(i), g = got.getDouble(i);
    double d = std::abs(g - r);
    if (std::isnan(d)) d = std::isnan(r) && std::isnan(g) ? 0 : INFINITY;
    a.maxAbsErr = std::max(a.maxAbsErr, d);
    a.maxRelErr = std::max(a.maxRelErr, d / std::max(std::abs(r), floor));
  }
  return a;
}

std::optional<double> top1(const ir::Tensor& out, const ir::Tensor& labels, std::string* why) {
  if (out.rank() != 2) {
    *why = fmt::format("output 0 has rank {}; top-1 needs [rows, classes]", out.rank());
    return std::nullopt;
  }
  int64_t rows = out.shape()[0], classes = out.shape()[1];
  if (labels.numElements() != rows) {
    *why = fmt::format("{} labels for {} output rows", labels.numElements(), rows);
    return std::nullopt;
  }
  if (rows == 0) {
    *why = "no rows";
    return std::nullopt;
  }
  int64_t right = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (out.getDouble(r * classes + c) > out.getDouble(r * classes + best)) best = c;
    if (int64_t(labels.getDouble(r)) == best) ++right;
  }
  return double(right) / double(rows);
}

} // namespace triad::bench
