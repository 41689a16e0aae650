#include "bench/ReportUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace triad::bench::detail {

const char* const kDash = "—";

const Json* get(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(std::string(key));
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* getObject(const Json& j, std::string_view key) {
  const Json* v = get(j, key);
  return v && v->is_object() ? v : nullptr;
}

const Json* getArray(const Json& j, std::string_view key) {
  const Json* v = get(j, key);
  return v && v->is_array() ? v : nullptr;
}

std::optional<double> num(const Json& j, std::string_view key) {
  const Json* v = get(j, key);
  if (!v || !v->is_number()) return std::nullopt;
  double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::string valueText(const Json& v, std::string_view dflt) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return fmtInt(v.get<double>());
  if (v.is_number()) return fmtNum(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_null()) return std::string(dflt);
  return v.dump(-1, ' ', false, Json::error_handler_t::replace); // never throws on bad UTF-8
}

std::string text(const Json& j, std::string_view key, std::string_view dflt) {
  const Json* v = get(j, key);
  return v ? valueText(*v, dflt) : std::string(dflt);
}

std::string fmtInt(double v) {
  if (!std::isfinite(v)) return kDash;
  double r = std::round(std::fabs(v));
  if (r >= 1e18) return fmt::format("{:.3g}", v);
  std::string digits = fmt::format("{}", static_cast<long long>(r));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 && r > 0 ? "-" : "") + out;
}

std::string fmtNum(double v) {
  if (!std::isfinite(v)) return kDash;
  double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e3) return fmtInt(v);
  if (a >= 1e-3) return fmt::format("{:.4g}", v);
  return fmt::format("{:.3g}", v);
}

std::string fmtNum(std::optional<double> v) {
  return v ? fmtNum(*v) : kDash;
}

std::string fmtBytes(double b) {
  if (!std::isfinite(b)) return kDash;
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.3g} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.3g} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.3g} KiB", b / 1024.0);
  return fmt::format("{} B", fmtInt(b));
}

std::string fmtDurationMs(double ms) {
  if (!std::isfinite(ms)) return kDash;
  double a = std::fabs(ms);
  if (a == 0) return "0 ms";
  if (a >= 1000) return fmtNum(ms / 1000) + " s";
  if (a >= 1) return fmtNum(ms) + " ms";
  if (a >= 1e-3) return fmtNum(ms * 1000) + " µs";
  return fmtNum(ms * 1e6) + " ns";
}

std::string fmtPercent(double f, int decimals) {
  if (!std::isfinite(f)) return kDash;
  return fmt::format("{:.{}f}%", f * 100, decimals);
}

const Json* Result::atClock() const {
  if (!json || !ok() || text(*json, "target") != "fpga") return nullptr;
  const Json* f = getObject(*json, "fpga");
  return f && num(*f, "latency_us") ? f : nullptr;
}

std::optional<double> Result::chartLatencyMs() const {
  if (!json || !ok()) return std::nullopt;
  // The FPGA's latency stats are already its device time at the clock for the whole batch
  // (triad bench: latency + (batch - 1) x II cycles); fpga.latency_us is one sample's.
  if (const Json* l = getObject(*json, "latency_ms"))
    if (auto p50 = num(*l, "p50")) return p50;
  if (const Json* f = atClock())
    if (auto us = num(*f, "latency_us")) return *us / 1000;
  return std::nullopt;
}

std::optional<double> Result::chartThroughput() const {
  if (!json || !ok()) return std::nullopt;
  if (const Json* f = atClock())
    if (auto t = num(*f, "throughput_per_s")) return t;
  return num(*json, "throughput_per_s");
}

std::vector<Result> results(const Json& report) {
  std::vector<Result> out;
  const Json* rs = getArray(report, "results");
  if (!rs) return out;
  for (const Json& r : *rs) {
    if (!r.is_object()) continue;
    Result x;
    x.json = &r;
    x.target = text(r, "target", "?");
    // --precision: the QDQ copy's results are their own series ("cpu int8", "onnxruntime int8")
    if (std::string p = text(r, "precision", "fp32"); p != "fp32") x.target += " " + p;
    x.kind = text(r, "kind");
    x.status = text(r, "status", "?");
    x.why = text(r, "why");
    x.device = text(r, "device");
    if (auto b = num(r, "batch")) x.batch = static_cast<long long>(*b);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<std::string> targetsOf(const std::vector<Result>& rs) {
  std::vector<std::string> out;
  for (const Result& r : rs)
    if (std::find(out.begin(), out.end(), r.target) == out.end()) out.push_back(r.target);
  return out;
}

Colours::Colours(const std::vector<std::string>& targets) {
  // Fixed colours for the targets every report has (colour-blind-safe-ish, Tableau 10).
  static const std::map<std::string, std::string> fixed = {
      {"interp", "#7f7f7f"}, {"cpu", "#1f77b4"},      {"gpu", "#2ca02c"},
      {"fpga", "#ff7f0e"},   {"auto", "#9467bd"},     {"onnxruntime", "#8c564b"},
      {"tvm", "#17becf"},    {"openvino", "#e377c2"}, {"host", "#bbbbbb"}};
  static const char* const palette[] = {"#bcbd22", "#d62728", "#393b79", "#637939",
                                        "#8c6d31", "#843c39", "#7b4173", "#3182bd"};
  size_t next = 0;
  for (const std::string& t : targets) {
    auto it = fixed.find(t);
    map_.emplace_back(t, it != fixed.end() ? it->second : palette[next++ % std::size(palette)]);
  }
}

std::string Colours::of(const std::string& target) const {
  for (const auto& [t, c] : map_)
    if (t == target) return c;
  if (target == "host") return "#bbbbbb";
  return "#999999";
}

std::vector<LayerRow> topLayers(const Json& result, size_t n) {
  std::vector<LayerRow> all;
  if (const Json* ls = getArray(result, "layers"))
    for (const Json& l : *ls) {
      auto ms = num(l, "ms");
      if (!l.is_object() || !ms) continue;
      LayerRow row;
      row.name = text(l, "layer", text(l, "name", "?"));
      row.op = text(l, "op");
      row.ms = *ms;
      row.cycles = num(l, "cycles");
      all.push_back(std::move(row));
    }
  std::stable_sort(all.begin(), all.end(),
                   [](const LayerRow& a, const LayerRow& b) { return a.ms > b.ms; });
  if (all.size() <= n + 1) return all; // an "other" row for one layer says nothing
  LayerRow other;
  other.name = "other";
  other.merged = static_cast<int>(all.size() - n);
  double cycles = 0;
  bool haveCycles = true;
  for (size_t i = n; i < all.size(); ++i) {
    other.ms += all[i].ms;
    if (all[i].cycles)
      cycles += *all[i].cycles;
    else
      haveCycles = false;
  }
  if (haveCycles) other.cycles = cycles;
  all.resize(n);
  all.push_back(std::move(other));
  return all;
}

std::vector<Result> layerResults(const std::vector<Result>& rs) {
  std::vector<Result> out;
  for (const std::string& t : targetsOf(rs)) {
    const Result* best = nullptr;
    for (const Result& r : rs)
      if (r.target == t && r.ok() && !topLayers(*r.json, 1).empty() &&
          (!best || r.batch < best->batch))
        best = &r;
    if (best) out.push_back(*best);
  }
  return out;
}

} // namespace triad::bench::detail
