#include "fpga/AutoPrecision.h"

#include "fpga/Emulator.h"
#include "fpga/QuantConfig.h"
#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace triad::fpga {

namespace {

// Layers whose result is not a precision of its own: renames of their input, and tables.
const std::set<std::string> kNoResultKnob = {"Flatten", "Reshape",   "Identity", "Dropout",
                                             "Squeeze", "Unsqueeze", "Softmax"};

std::string format(int width) {
  return fmt::format("fixed<{},auto>", width);
}

nlohmann::json configOf(const std::vector<PrecisionKnob>& knobs) {
  nlohmann::json c;
  c["default"] = {{"precision", format(16)}, {"accumulator", "exact"}};
  c["layers"] = nlohmann::json::object();
  for (const PrecisionKnob& k : knobs) {
    if (k.role == "input") {
      c["input"] = format(k.width);
    } else if (k.role == "weight") {
      c["layers"][k.layer]["weight"] = format(k.width);
      c["layers"][k.layer]["bias"] = format(k.width);
    } else {
      c["layers"][k.layer]["result"] = format(k.width);
    }
  }
  return c;
}

double accuracy(const ir::Tensor& t, const std::vector<int64_t>& labels) {
  std::vector<int64_t> a = argmaxRows(t);
  if (a.size() != labels.size())
    fail(ErrorKind::Usage, "--labels holds {} labels for {} samples", labels.size(), a.size());
  int64_t right = 0;
  for (size_t i = 0; i < a.size(); ++i)
    right += a[i] == labels[i];
  return a.empty() ? 0 : double(right) / double(a.size());
}

struct Evaluator {
  const ir::Graph& g;
  const ir::Tensor& x;
  const ValueRanges& ranges;
  const ir::Tensor& floatOut;
  const AutoPrecisionOptions& o;
  double floatAccuracy = 0, floatMax = 0;
  int64_t evaluations = 0;

  PrecisionScore score(const ir::Tensor& q) const {
    PrecisionScore s;
    double err = 0;
    for (int64_t k = 0; k < q.numElements(); ++k)
      err = std::max(err, std::fabs(q.getDouble(k) - floatOut.getDouble(k)));
    s.relError = floatMax > 0 ? err / floatMax : err;
    if (o.labels) {
      s.accuracy = accuracy(q, *o.labels);
      s.metric = (floatAccuracy - s.accuracy) * 100;
    } else {
      s.metric = s.relError;
    }
    return s;
  }

  // The metric of a config; nullopt when the emulator refuses it (a format too narrow).
  std::optional<PrecisionScore> run(const nlohmann::json& config) {
    ++evaluations;
    try {
      Emulator emu(g, QuantConfig::fromJson(config.dump(), "auto precision"), ranges);
      EmulatorResult r = emu.run(std::span<const ir::Tensor>(&x, 1), false);
      return score(r.values.at(0));
    } catch (const Error&) {
      return std::nullopt;
    }
  }
};

} // namespace

std::vector<int64_t> argmaxRows(const ir::Tensor& t) {
  int64_t cols = t.rank() > 0 ? t.shape().back() : 1, rows = cols > 0 ? t.numElements() / cols : 0;
  std::vector<int64_t> r(size_t(rows), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 1; c < cols; ++c)
      if (t.getDouble(i * cols + c) > t.getDouble(i * cols + r[size_t(i)])) r[size_t(i)] = c;
  return r;
}

AutoPrecisionResult autoPrecision(const ir::Graph& g, const ir::Tensor& x,
                                  const ValueRanges& ranges, const AutoPrecisionOptions& o) {
  if (!(o.budget >= 0) || !std::isfinite(o.budget))
    fail(ErrorKind::Usage, "--budget {}: expected a non-negative number", o.budget);
  // The float outputs, and the layers to tune (from a plan at the built-in precision).
  Emulator base(g, QuantConfig{}, ranges);
  EmulatorResult br = base.run(std::span<const ir::Tensor>(&x, 1), true);
  const ir::Tensor& floatOut = br.floatRef.at(0);

  Evaluator ev{g, x, ranges, floatOut, o};
  for (int64_t k = 0; k < floatOut.numElements(); ++k)
    ev.floatMax = std::max(ev.floatMax, std::fabs(floatOut.getDouble(k)));
  AutoPrecisionResult res;
  if (o.labels) res.floatAccuracy = ev.floatAccuracy = accuracy(floatOut, *o.labels);
  res.baseline = ev.score(br.values.at(0));

  // Knobs in stream order.
  const ir::Value* in = g.inputs().at(0);
  const int64_t batch = in->type().rank() > 0 ? std::max<int64_t>(in->type().shape[0], 1) : 1;
  auto perSample = [&](const ir::Value* v) {
    int64_t n = 1;
    for (int64_t d : v->type().shape)
      n *= d;
    return n / batch;
  };
  std::vector<PrecisionKnob> knobs;
  knobs.push_back({"(input)", "input", o.maxWidth, perSample(in)});
  for (const LayerInfo& L : base.layers()) {
    if (!L.weights.empty())
      knobs.push_back({L.name, "weight", o.maxWidth, int64_t(L.weights.size() + L.biases.size())});
    if (!kNoResultKnob.count(L.op))
      knobs.push_back(
          {L.name, "result", o.maxWidth, perSample(g.values()[size_t(L.output)].get())});
  }
  std::optional<PrecisionScore> start = ev.run(configOf(knobs));
  if (!start || start->metric > o.budget)
    fail(ErrorKind::Runtime,
         "automatic precision: at {} bits everywhere the {} is {:.4g}, above the budget {:.4g}",
         o.maxWidth, o.labels ? "top-1 drop (points)" : "relative output error",
         start ? start->metric : NAN, o.budget);
  res.result = *start;

  for (PrecisionKnob& k : knobs) {
    int lo = o.minWidth, hi = k.width; // hi passes
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      int keep = k.width;
      k.width = mid;
      std::optional<PrecisionScore> s = ev.run(configOf(knobs));
      k.width = keep;
      if (s && s->metric <= o.budget) {
        hi = mid;
        res.result = *s;
      } else {
        lo = mid + 1;
      }
    }
    k.width = hi;
  }
  // The final config's own score (the last passing one may belong to another knob's trial).
  res.config = configOf(knobs);
  res.result = *ev.run(res.config);
  res.knobs = knobs;
  res.evaluations = ev.evaluations;
  for (const PrecisionKnob& k : knobs) {
    (k.role == "weight" ? res.weightBits : res.activationBits) += k.width * k.elements;
    (k.role == "weight" ? res.weightBits16 : res.activationBits16) += 16 * k.elements;
  }
  return res;
}

} // namespace triad::fpga
