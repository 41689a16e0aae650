// Small inline-SVG charts for the HTML report: an element builder that escapes every text (with
// escape::html of ir/Escape.h: a model's names are untrusted), axes (linear, or log10 where the
// values span decades: the axis title then says so), and three chart shapes: horizontal bars
// (grouped, with optional whiskers and a reference line), lines over categories, and a dot plot.
// Every chart is a complete <svg> element with a <title>, axes with units and labels, and a legend
// where colours carry meaning; the output is well-formed XML.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triad::bench::svg {

class Svg {
public:
  /// `title` becomes the <title> child (the chart's accessible name), `id` prefixes the ids of
  /// the chart's definitions (markers) so that several charts can share one page.
  Svg(double width, double height, std::string_view title, std::string_view id);
  // Text arguments are raw: they are escaped here. `tip` adds a <title> tooltip.
  void rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view tip = "", std::string_view attrs = "");
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view attrs = "");
  void circle(double cx, double cy, double r, std::string_view fill, std::string_view tip = "");
  void text(double x, double y, std::string_view s, std::string_view anchor = "start",
            double size = 12, std::string_view attrs = "");
  void path(std::string_view d, std::string_view stroke, double width, std::string_view attrs = "");
  /// Markup the caller built from escaped parts (e.g. <defs>).
  void raw(std::string_view xml) { body_ += xml; }
  const std::string& id() const { return id_; }
  std::string str() const;

private:
  double width_, height_;
  std::string title_, id_, body_;
};

/// Shortens `s` to at most `maxChars` characters (UTF-8 aware), ending in "…".
std::string ellipsize(std::string_view s, size_t maxChars);
/// Number formatting for attributes: one decimal.
std::string px(double v);
/// Attributes that give a text a white halo, so that it stays readable over grid lines.
inline constexpr const char* kHalo =
    "stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1; // pixel positions of lo and hi
  /// Fits [minV, maxV] (maxV > 0). Log when `allowLog`, minV > 0 and the values span more than
  /// `logSpan` (ratio max / min); linear axes start at zero unless `fromZero` is false.
  static Axis fit(double minV, double maxV, double p0, double p1, bool allowLog,
                  bool fromZero = true, double logSpan = 50);
  double pos(double v) const; // clamped to the axis
  std::vector<double> ticks() const;
  std::string scaleNote() const { return log ? " (log scale)" : ""; }
};

using Format = std::function<std::string(double)>;

struct Bar {
  double value = 0;
  std::string colour;
  std::string label; // printed after the bar ("" = none)
  std::string tip;   // tooltip
  double opacity = 1;
  std::optional<double> whiskerLo, whiskerHi, whiskerTick; // p90..p99 style range, tick inside
};

struct BarRow {
  std::string label;
  std::string group; // rows are grouped under a heading when this changes ("" = none)
  std::vector<Bar> bars;
  std::string empty; // shown instead of bars when there are none ("not measured")
};

struct LegendItem {
  std::string colour, label;
  double opacity = 1;
};

struct BarChart {
  std::string id, title, axisTitle;
  Format tick; // tick and value formatting
  bool allowLog = true;
  std::optional<double> refLine; // a dashed vertical line (e.g. 100% of a budget)
  std::string refLabel;
  std::optional<double> axisMax; // at least this on the axis
  std::vector<LegendItem> legend;
  std::string note; // one line under the title
  double width = 1100;
};
std::string barChart(const BarChart& spec, const std::vector<BarRow>& rows);

struct Series {
  std::string name, colour;
  std::vector<std::optional<double>> values; // one per category
};
struct LineChart {
  std::string id, title, xTitle, yTitle;
  std::vector<std::string> categories;
  Format tick;
  std::string note;
  double width = 1100, height = 420;
};
std::string lineChart(const LineChart& spec, const std::vector<Series>& series);

struct Dot {
  std::optional<double> value;
  std::string colour, label, tip;
};
struct DotPanel {
  std::string axisTitle;
  Format tick;
  bool allowLog = true, fromZero = true;
  std::optional<double> lo, hi; // fixed axis ends
  std::optional<double> refLine;
  std::string refLabel;
  std::string empty; // shown for rows without a value
};
/// One row per label, one or more panels side by side (e.g. top-1 and error).
std::string dotPlot(std::string_view id, std::string_view title, std::string_view note,
                    const std::vector<std::string>& rowLabels, const std::vector<DotPanel>& panels,
                    const std::vector<std::vector<Dot>>& dotsPerPanel, double width = 1100);

} // namespace triad::bench::svg
