#include "bench/Svg.h"
#include "ir/Escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace triad::bench::svg {

namespace {

constexpr double kCharW = 6.6; // average glyph advance of the sans-serif at 12 px
constexpr const char* kGrid = "#e3e3e3";
constexpr const char* kInk = "#222222";
constexpr const char* kMuted = "#666666";

size_t utf8Length(std::string_view s) {
  size_t n = 0;
  for (char ch : s)
    n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

double niceStep(double raw) {
  if (!(raw > 0)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p * 1.0000001) return m * p;
  return 10 * p;
}

double textWidth(std::string_view s, double size = 12) {
  return double(utf8Length(s)) * kCharW * size / 12;
}

/// The chart's heading lines (title, optional note) and legend; returns the y below them.
double header(Svg& s, std::string_view title, std::string_view note,
              const std::vector<LegendItem>& legend, double width) {
  s.text(10, 22, title, "start", 15, "font-weight=\"600\"");
  double y = 30;
  if (!note.empty()) {
    s.text(10, y + 14, note, "start", 12, fmt::format("fill=\"{}\"", kMuted));
    y += 20;
  }
  if (!legend.empty()) {
    double x = 10;
    y += 8;
    for (const LegendItem& l : legend) {
      double w = 26 + textWidth(l.label);
      if (x + w > width - 10) {
        x = 10;
        y += 18;
      }
      s.rect(x, y, 12, 12, l.colour, "",
             l.opacity < 1 ? fmt::format("fill-opacity=\"{}\" stroke=\"{}\"", l.opacity, l.colour)
                           : "");
      s.text(x + 17, y + 10.5, l.label);
      x += w + 14;
    }
    y += 16;
  }
  return y + 10;
}

void verticalGrid(Svg& s, const Axis& a, double top, double bottom, const Format& f,
                  std::string_view title) {
  for (double t : a.ticks()) {
    double x = a.pos(t);
    s.line(x, top, x, bottom, kGrid);
    s.text(x, bottom + 15, f(t), "middle", 11, fmt::format("fill=\"{}\"", kMuted));
  }
  s.line(a.p0, bottom, a.p1, bottom, kInk);
  s.text((a.p0 + a.p1) / 2, bottom + 34, title, "middle", 12);
}

} // namespace

std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

std::string ellipsize(std::string_view s, size_t maxChars) {
  if (utf8Length(s) <= maxChars || maxChars < 2) return std::string(s);
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    bool start = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (start && ++n > maxChars - 1) break;
    out += s[i];
  }
  return out + "…";
}

Svg::Svg(double width, double height, std::string_view title, std::string_view id)
    : width_(width), height_(height), title_(title), id_(id) {}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view tip,
               std::string_view attrs) {
  body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}", px(x),
                       px(y), px(std::max(0.0, w)), px(std::max(0.0, h)), escape::html(fill),
                       attrs.empty() ? "" : " ", attrs);
  body_ += tip.empty() ? "/>" : fmt::format("><title>{}</title></rect>", escape::html(tip));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view attrs) {
  body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                       "stroke-width=\"{}\"{}{}/>",
                       px(x1), px(y1), px(x2), px(y2), escape::html(stroke), px(width),
                       attrs.empty() ? "" : " ", attrs);
}

void Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view tip) {
  body_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"#ffffff\"",
                       px(cx), px(cy), px(r), escape::html(fill));
  body_ += tip.empty() ? "/>" : fmt::format("><title>{}</title></circle>", escape::html(tip));
}

void Svg::text(double x, double y, std::string_view s, std::string_view anchor, double size,
               std::string_view attrs) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\"{}{}{}{}>{}</text>", px(x), px(y),
                       anchor == "start" ? "" : fmt::format(" text-anchor=\"{}\"", anchor),
                       size == 12 ? "" : fmt::format(" font-size=\"{}\"", px(size)),
                       attrs.empty() ? "" : " ", attrs, escape::html(s));
}

void Svg::path(std::string_view d, std::string_view stroke, double width, std::string_view attrs) {
  body_ += fmt::format("<path d=\"{}\" stroke=\"{}\" stroke-width=\"{}\" fill=\"none\"{}{}/>",
                       escape::html(d), escape::html(stroke), px(width), attrs.empty() ? "" : " ",
                       attrs);
}

std::string Svg::str() const {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{0}\" class=\"chart\" width=\"{1}\" "
      "height=\"{2}\" viewBox=\"0 0 {1} {2}\" role=\"img\" aria-labelledby=\"{0}-title\" "
      "font-family=\"system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif\" "
      "font-size=\"12\" fill=\"{3}\"><title id=\"{0}-title\">{4}</title>"
      "<rect x=\"0\" y=\"0\" width=\"{1}\" height=\"{2}\" fill=\"#ffffff\"/>{5}</svg>",
      escape::html(id_), px(width_), px(height_), kInk, escape::html(title_), body_);
}

Axis Axis::fit(double minV, double maxV, double p0, double p1, bool allowLog, bool fromZero,
               double logSpan) {
  Axis a;
  a.p0 = p0;
  a.p1 = p1;
  if (!std::isfinite(maxV) || maxV <= 0) maxV = 1;
  if (!std::isfinite(minV) || minV > maxV) minV = maxV;
  if (allowLog && minV > 0 && maxV / minV > logSpan) {
    a.log = true;
    a.lo = std::pow(10.0, std::floor(std::log10(minV) + 1e-9));
    a.hi = std::pow(10.0, std::ceil(std::log10(maxV) - 1e-9));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
    return a;
  }
  double lo = fromZero ? std::min(0.0, minV) : minV;
  double step = niceStep((maxV - lo) / 5);
  a.lo = fromZero ? lo : std::floor(lo / step) * step;
  a.hi = std::ceil(maxV / step - 1e-9) * step;
  if (a.hi <= a.lo) a.hi = a.lo + step;
  return a;
}

double Axis::pos(double v) const {
  if (!std::isfinite(v)) v = lo;
  v = std::clamp(v, lo, hi);
  double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                 : (v - lo) / (hi - lo);
  return p0 + f * (p1 - p0);
}

std::vector<double> Axis::ticks() const {
  std::vector<double> out;
  if (log) {
    int e0 = int(std::lround(std::log10(lo))), e1 = int(std::lround(std::log10(hi)));
    for (int e = e0; e <= e1; ++e) {
      double p = std::pow(10.0, e);
      out.push_back(p);
      if (e1 - e0 <= 2 && e < e1) {
        out.push_back(2 * p);
        out.push_back(5 * p);
      }
    }
    return out;
  }
  double step = niceStep((hi - lo) / 5);
  for (double t = lo; t <= hi + step * 1e-6; t += step)
    out.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::string barChart(const BarChart& spec, const std::vector<BarRow>& rows) {
  constexpr double barH = 14, rowPad = 8, groupH = 22, valueW = 180;
  size_t longest = 4;
  double minV = INFINITY, maxV = 0;
  for (const BarRow& r : rows) {
    longest = std::max(longest, utf8Length(r.label));
    for (const Bar& b : r.bars) {
      for (std::optional<double> v : {std::optional<double>(b.value), b.whiskerHi, b.whiskerLo})
        if (v && std::isfinite(*v)) {
          maxV = std::max(maxV, *v);
          if (*v > 0) minV = std::min(minV, *v);
        }
    }
  }
  if (spec.refLine) maxV = std::max(maxV, *spec.refLine);
  if (spec.axisMax) maxV = std::max(maxV, *spec.axisMax);
  double labelW = std::clamp(double(longest) * kCharW + 16, 90.0, 280.0);
  size_t labelChars = size_t((labelW - 16) / kCharW);

  // Height first: a throwaway header tells how tall the heading and legend are.
  Svg probe(spec.width, 0, "", "");
  double top = header(probe, spec.title, spec.note, spec.legend, spec.width) + 14;
  double h = top;
  std::string group = "";
  for (const BarRow& r : rows) {
    if (!r.group.empty() && r.group != group) h += groupH, group = r.group;
    h += double(std::max<size_t>(1, r.bars.size())) * (barH + 2) + rowPad;
  }
  double bottom = h + 4;
  Svg s(spec.width, bottom + 48, spec.title, spec.id);
  header(s, spec.title, spec.note, spec.legend, spec.width);
  Axis a = Axis::fit(minV, maxV, labelW + 10, spec.width - valueW, spec.allowLog);
  Format f = spec.tick ? spec.tick : [](double v) { return fmt::format("{:g}", v); };
  verticalGrid(s, a, top - 6, bottom, f, spec.axisTitle + a.scaleNote());
  if (spec.refLine) {
    double x = a.pos(*spec.refLine);
    s.line(x, top - 10, x, bottom, "#b00020", 1.5, "stroke-dasharray=\"5 4\"");
    s.text(x, top - 14, spec.refLabel, "middle", 11, "fill=\"#b00020\"");
  }
  double y = top;
  group = "";
  for (const BarRow& r : rows) {
    if (!r.group.empty() && r.group != group) {
      group = r.group;
      s.text(10, y + 15, r.group, "start", 12, "font-weight=\"600\"");
      s.line(10, y + 19, spec.width - 10, y + 19, kGrid);
      y += groupH;
    }
    double rowH = double(std::max<size_t>(1, r.bars.size())) * (barH + 2) + rowPad;
    std::string label = ellipsize(r.label, labelChars);
    if (label != r.label) {
      s.raw(fmt::format("<g><title>{}</title>", escape::html(r.label)));
      s.text(labelW, y + rowH / 2 + 4, label, "end");
      s.raw("</g>");
    } else {
      s.text(labelW, y + rowH / 2 + 4, label, "end");
    }
    if (r.bars.empty())
      s.text(a.p0 + 6, y + rowH / 2 + 4, r.empty.empty() ? "not measured" : r.empty, "start", 11,
             fmt::format("fill=\"{}\" font-style=\"italic\"", kMuted));
    double by = y + rowPad / 2;
    for (const Bar& b : r.bars) {
      double x1 = b.value > 0 || !a.log ? a.pos(b.value) : a.p0;
      std::string attrs =
          b.opacity < 1 ? fmt::format("fill-opacity=\"{}\" stroke=\"{}\"", b.opacity, b.colour)
                        : "";
      s.rect(a.p0, by, x1 - a.p0, barH, b.colour, b.tip, attrs);
      double end = x1;
      if (b.whiskerLo && b.whiskerHi) {
        double w0 = a.pos(*b.whiskerLo), w1 = a.pos(*b.whiskerHi), cy = by + barH / 2;
        s.line(w0, cy, w1, cy, kInk, 1.2);
        s.line(w1, cy - 4, w1, cy + 4, kInk, 1.2);
        if (b.whiskerTick) {
          double t = a.pos(*b.whiskerTick);
          s.line(t, cy - 3, t, cy + 3, kInk, 1.2);
        }
        end = std::max(end, w1);
      }
      if (!b.label.empty()) s.text(end + 5, by + barH - 3, b.label, "start", 11, kHalo);
      by += barH + 2;
    }
    y += rowH;
  }
  return s.str();
}

std::string lineChart(const LineChart& spec, const std::vector<Series>& series) {
  double legendW = 190;
  for (const Series& se : series)
    legendW = std::max(legendW, textWidth(se.name) + 60);
  legendW = std::min(legendW, 320.0);
  Svg probe(spec.width, 0, "", "");
  double top = header(probe, spec.title, spec.note, {}, spec.width) + 16;
  Svg s(spec.width, spec.height, spec.title, spec.id);
  header(s, spec.title, spec.note, {}, spec.width);
  double x0 = 90, x1 = spec.width - legendW - 20, bottom = spec.height - 56;
  double minV = INFINITY, maxV = 0;
  for (const Series& se : series)
    for (const auto& v : se.values)
      if (v && *v > 0) minV = std::min(minV, *v), maxV = std::max(maxV, *v);
  Axis a = Axis::fit(minV, maxV, bottom, top, true);
  Format f = spec.tick ? spec.tick : [](double v) { return fmt::format("{:g}", v); };
  for (double t : a.ticks()) {
    double y = a.pos(t);
    s.line(x0, y, x1, y, kGrid);
    s.text(x0 - 6, y + 4, f(t), "end", 11, fmt::format("fill=\"{}\"", kMuted));
  }
  s.line(x0, bottom, x1, bottom, kInk);
  s.line(x0, top, x0, bottom, kInk);
  double mid = (top + bottom) / 2;
  s.text(16, mid, spec.yTitle + a.scaleNote(), "middle", 12,
         fmt::format("transform=\"rotate(-90 16 {})\"", px(mid)));
  size_t n = std::max<size_t>(1, spec.categories.size());
  auto cx = [&](size_t i) { return x0 + (double(i) + 0.5) * (x1 - x0) / double(n); };
  for (size_t i = 0; i < spec.categories.size(); ++i) {
    s.line(cx(i), bottom, cx(i), bottom + 5, kInk);
    s.text(cx(i), bottom + 19, spec.categories[i], "middle", 11);
  }
  s.text((x0 + x1) / 2, bottom + 40, spec.xTitle, "middle", 12);
  double ly = top + 4;
  for (const Series& se : series) {
    std::string d;
    bool pen = false;
    for (size_t i = 0; i < se.values.size() && i < spec.categories.size(); ++i) {
      if (!se.values[i] || *se.values[i] <= 0) {
        pen = false;
        continue;
      }
      d += fmt::format("{}{} {}", pen ? " L" : (d.empty() ? "M" : " M"), px(cx(i)),
                       px(a.pos(*se.values[i])));
      pen = true;
    }
    if (!d.empty()) s.path(d, se.colour, 2.5, "stroke-linejoin=\"round\"");
    for (size_t i = 0; i < se.values.size() && i < spec.categories.size(); ++i)
      if (se.values[i] && *se.values[i] > 0)
        s.circle(cx(i), a.pos(*se.values[i]), 4.5, se.colour,
                 fmt::format("{}, {}: {}", se.name, spec.categories[i], f(*se.values[i])));
    s.line(x1 + 24, ly, x1 + 48, ly, se.colour, 2.5);
    s.circle(x1 + 36, ly, 4, se.colour);
    s.text(x1 + 54, ly + 4, ellipsize(se.name, size_t((legendW - 40) / kCharW)));
    ly += 20;
  }
  return s.str();
}

std::string dotPlot(std::string_view id, std::string_view title, std::string_view note,
                    const std::vector<std::string>& rowLabels, const std::vector<DotPanel>& panels,
                    const std::vector<std::vector<Dot>>& dots, double width) {
  constexpr double rowH = 26, gap = 70;
  size_t longest = 4;
  for (const std::string& l : rowLabels)
    longest = std::max(longest, utf8Length(l));
  double labelW = std::clamp(double(longest) * kCharW + 16, 90.0, 240.0);
  Svg probe(width, 0, "", "");
  double top = header(probe, title, note, {}, width) + 16;
  double bottom = top + double(rowLabels.size()) * rowH + 6;
  Svg s(width, bottom + 50, title, id);
  header(s, title, note, {}, width);
  size_t np = std::max<size_t>(1, panels.size());
  double panelW = (width - labelW - 20 - gap * double(np - 1) - 60) / double(np);
  for (size_t r = 0; r < rowLabels.size(); ++r)
    s.text(labelW, top + double(r) * rowH + rowH / 2 + 4,
           ellipsize(rowLabels[r], size_t((labelW - 16) / kCharW)), "end");
  for (size_t p = 0; p < panels.size(); ++p) {
    const DotPanel& pn = panels[p];
    const std::vector<Dot>& ds = p < dots.size() ? dots[p] : std::vector<Dot>{};
    double minV = INFINITY, maxV = 0;
    for (const Dot& d : ds)
      if (d.value) {
        maxV = std::max(maxV, *d.value);
        if (*d.value > 0) minV = std::min(minV, *d.value);
      }
    if (pn.refLine) {
      maxV = std::max(maxV, *pn.refLine);
      if (*pn.refLine > 0) minV = std::min(minV, *pn.refLine);
    }
    double px0 = labelW + 10 + double(p) * (panelW + gap), px1 = px0 + panelW;
    Axis a =
        Axis::fit(pn.lo.value_or(minV), pn.hi.value_or(maxV), px0, px1, pn.allowLog, pn.fromZero);
    if (pn.lo) a.lo = *pn.lo;
    if (pn.hi) a.hi = *pn.hi;
    Format f = pn.tick ? pn.tick : [](double v) { return fmt::format("{:g}", v); };
    verticalGrid(s, a, top, bottom, f, pn.axisTitle + a.scaleNote());
    if (pn.refLine) {
      double x = a.pos(*pn.refLine);
      s.line(x, top - 6, x, bottom, "#b00020", 1.5, "stroke-dasharray=\"5 4\"");
      s.text(x, top - 9, pn.refLabel, "middle", 11, "fill=\"#b00020\"");
    }
    for (size_t r = 0; r < rowLabels.size(); ++r) {
      double cy = top + double(r) * rowH + rowH / 2;
      s.line(px0, cy, px1, cy, "#f0f0f0");
      const Dot* d = r < ds.size() ? &ds[r] : nullptr;
      if (!d || !d->value) {
        s.text(px0 + 6, cy + 4, pn.empty.empty() ? "not measured" : pn.empty, "start", 11,
               fmt::format("fill=\"{}\" font-style=\"italic\"", kMuted));
        continue;
      }
      double x = *d->value > 0 || !a.log ? a.pos(*d->value) : a.p0;
      s.circle(x, cy, 6, d->colour, d->tip);
      std::string lab = d->label.empty() ? f(*d->value) : d->label;
      bool left = x + 10 + textWidth(lab, 11) > px1 + 55;
      s.text(left ? x - 10 : x + 10, cy + 4, lab, left ? "end" : "start", 11, kHalo);
    }
  }
  return s.str();
}

} // namespace triad::bench::svg
