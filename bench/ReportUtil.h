// What the Markdown and HTML renderers of a benchmark report (docs/report-schema.md) share:
// tolerant access to the report, number formatting, and the rows each section shows. A renderer
// never throws on a missing key or a value of the wrong type: it shows "—" there instead, so a
// partial or older report (a run without GPU, FPGA or partition sections) still renders.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triad::bench::detail {

using Json = nlohmann::json;

/// The member `key` of `j` when `j` is an object that has it and it is not null; else nullptr.
const Json* get(const Json& j, std::string_view key);
/// The member when it is an object / an array; else nullptr.
const Json* getObject(const Json& j, std::string_view key);
const Json* getArray(const Json& j, std::string_view key);
/// The member when it is a number (booleans are not numbers here) and finite.
std::optional<double> num(const Json& j, std::string_view key);
/// The member as text: a string as is, a number formatted, a boolean as yes/no; else `dflt`.
std::string text(const Json& j, std::string_view key, std::string_view dflt = "");
/// A JSON value as text (see text()); objects and arrays compact.
std::string valueText(const Json& v, std::string_view dflt = "");

/// About four significant digits; thousands separators from 1,000 up (no decimals there); tiny
/// values in scientific notation ("1.2e-07"); "—" for none.
std::string fmtNum(double v);
std::string fmtNum(std::optional<double> v);
/// A whole number with thousands separators ("55,447").
std::string fmtInt(double v);
/// Bytes in B / KiB / MiB / GiB.
std::string fmtBytes(double bytes);
/// A duration in ms shown in the unit that suits it: "0.435 µs", "2.31 ms", "1.2 s".
std::string fmtDurationMs(double ms);
/// A fraction as a percentage ("8.4%").
std::string fmtPercent(double fraction, int decimals = 1);

extern const char* const kDash; // "—"

/// One entry of `results` with the fields every table needs.
struct Result {
  const Json* json = nullptr;
  std::string target, kind, status, why, device;
  long long batch = 0;
  bool ok() const { return status == "ok"; }
  /// The FPGA section of an ok "fpga" result with a latency at its clock (an "auto" result
  /// with FPGA partitions is measured end to end: its own times are charted); else nullptr.
  const Json* atClock() const;
  /// Latency per inference batch as charted: the FPGA's at its clock (fpga.latency_us) for an
  /// FPGA result (atClock()), else the measured p50.
  std::optional<double> chartLatencyMs() const;
  /// Throughput as charted: the FPGA's at its clock (atClock()), else the measured one.
  std::optional<double> chartThroughput() const;
};
/// All results in report order (entries that are not objects are skipped).
std::vector<Result> results(const Json& report);
/// Distinct target names in order of first appearance.
std::vector<std::string> targetsOf(const std::vector<Result>& rs);

/// A colour per target: fixed ones for interp/cpu/gpu/fpga/auto and the usual peers, then a
/// palette by first appearance (the same in every chart of one page).
class Colours {
public:
  explicit Colours(const std::vector<std::string>& targets);
  std::string of(const std::string& target) const;

private:
  std::vector<std::pair<std::string, std::string>> map_;
};

/// One row of the per-layer table: the largest layers of a result first.
struct LayerRow {
  std::string name, op;
  double ms = 0;
  std::optional<double> cycles;
  int merged = 0; // > 0: an "other" row standing for this many smaller layers
};
/// The top `n` layers of a result by time, then one "other" row for the rest (if any).
std::vector<LayerRow> topLayers(const Json& result, size_t n);
/// Per target, the result whose layers are shown: the smallest batch that is ok and has layers.
std::vector<Result> layerResults(const std::vector<Result>& rs);

} // namespace triad::bench::detail
