#include "bench/ReportCharts.h"
#include "bench/Svg.h"
#include "ir/Escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace triad::bench::detail {

namespace {

using svg::Bar;
using svg::BarRow;

std::string durationTick(double ms) {
  return fmtDurationMs(ms);
}
std::string numTick(double v) {
  return fmtNum(v);
}
/// Scientific ticks ("1e-7") for axes of small errors.
std::string sciTick(double v) {
  if (v == 0 || !std::isfinite(v)) return "0";
  int e = int(std::floor(std::log10(std::fabs(v)) + 1e-9));
  double m = v / std::pow(10.0, e);
  return std::fabs(m - 1) < 1e-6 ? fmt::format("1e{}", e) : fmt::format("{:.2g}e{}", m, e);
}

/// "fpga @ 200 MHz" for a result with an FPGA section, else the target.
std::string seriesName(const Result& r) {
  if (const Json* f = r.atClock())
    if (auto mhz = num(*f, "clock_mhz")) return fmt::format("{} @ {} MHz", r.target, fmtNum(*mhz));
  return r.target;
}

std::string latencyChart(const std::vector<Result>& rs, const Colours& col) {
  std::vector<const Result*> order;
  for (const Result& r : rs)
    order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const Result* a, const Result* b) { return a->batch < b->batch; });
  std::vector<BarRow> rows;
  bool any = false, fpga = false;
  for (const Result* r : order) {
    BarRow row{seriesName(*r), fmt::format("batch {}", r->batch), {}, ""};
    if (!r->ok()) {
      row.empty = svg::ellipsize(r->status + (r->why.empty() ? "" : ": " + r->why), 100);
      rows.push_back(std::move(row));
      continue;
    }
    auto v = r->chartLatencyMs();
    if (!v) {
      row.empty = "no latency in the report";
      rows.push_back(std::move(row));
      continue;
    }
    any = true;
    Bar b;
    b.value = *v;
    b.colour = col.of(r->target);
    const Json* l = getObject(*r->json, "latency_ms");
    if (const Json* f = r->atClock()) {
      fpga = true;
      b.label = fmtDurationMs(*v) + fmt::format(" ({} cycles)", text(*f, "latency_cycles", "?"));
      b.tip = fmt::format("{}, batch {}: {} cycles at {} MHz = {}", r->target, r->batch,
                          text(*f, "latency_cycles", "?"), text(*f, "clock_mhz", "?"),
                          fmtDurationMs(*v));
    } else {
      std::optional<double> p90, p99;
      if (l) p90 = num(*l, "p90"), p99 = num(*l, "p99");
      b.label = fmtDurationMs(*v);
      if (p99 && *p99 >= *v) {
        b.whiskerLo = *v;
        b.whiskerHi = *p99;
        if (p90) b.whiskerTick = *p90;
      }
      b.tip = fmt::format("{}, batch {}: p50 {}, p90 {}, p99 {}", r->target, r->batch,
                          fmtDurationMs(*v), p90 ? fmtDurationMs(*p90) : kDash,
                          p99 ? fmtDurationMs(*p99) : kDash);
    }
    row.bars.push_back(std::move(b));
    rows.push_back(std::move(row));
  }
  if (!any) return "";
  svg::BarChart spec;
  spec.id = "chart-latency";
  spec.title = "Latency per device and batch";
  spec.axisTitle = "latency per batch";
  spec.tick = durationTick;
  spec.note = std::string("Bars: p50; whiskers: p50 to p99, tick at p90.") +
              (fpga ? " FPGA: latency at its clock (cycles / clock, no whisker: one exact "
                      "number)."
                    : "");
  return svg::barChart(spec, rows);
}

std::string throughputChart(const std::vector<Result>& rs, const Colours& col) {
  std::set<long long> batches;
  for (const Result& r : rs)
    if (r.chartThroughput()) batches.insert(r.batch);
  if (batches.empty()) return "";
  std::vector<long long> bs(batches.begin(), batches.end());
  svg::LineChart spec;
  spec.id = "chart-throughput";
  spec.title = "Throughput against batch size";
  spec.xTitle = "batch size";
  spec.yTitle = "inferences per second";
  spec.tick = numTick;
  for (long long b : bs)
    spec.categories.push_back(fmtInt(double(b)));
  std::vector<svg::Series> series;
  bool fpga = false;
  for (const std::string& t : targetsOf(rs)) {
    svg::Series se{t, col.of(t), std::vector<std::optional<double>>(bs.size())};
    bool any = false;
    for (const Result& r : rs) {
      if (r.target != t) continue;
      auto v = r.chartThroughput();
      if (!v) continue;
      size_t i = size_t(std::find(bs.begin(), bs.end(), r.batch) - bs.begin());
      se.values[i] = *v;
      any = true;
      if (r.atClock()) {
        se.name = seriesName(r);
        fpga = true;
      }
    }
    if (any) series.push_back(std::move(se));
  }
  if (fpga) spec.note = "FPGA: throughput at its clock (clock / II).";
  return svg::lineChart(spec, series);
}

std::string accuracyChart(const std::vector<Result>& rs, const Colours& col) {
  std::vector<std::string> labels;
  std::vector<svg::Dot> top1, err;
  std::optional<double> ref;
  double minTop1 = 1;
  for (const std::string& t : targetsOf(rs)) {
    const Result* best = nullptr;
    for (const Result& r : rs)
      if (r.target == t && r.ok() && getObject(*r.json, "accuracy") &&
          (!best || r.batch < best->batch))
        best = &r;
    if (!best) continue;
    const Json& a = *getObject(*best->json, "accuracy");
    labels.push_back(fmt::format("{} (batch {})", t, best->batch));
    auto t1 = num(a, "top1"), e = num(a, "max_abs_err");
    if (!ref) ref = num(a, "top1_reference");
    if (t1) minTop1 = std::min(minTop1, *t1);
    top1.push_back({t1, col.of(t), t1 ? fmtPercent(*t1, 2) : "",
                    fmt::format("{}: top-1 {}", t, t1 ? fmtPercent(*t1, 2) : kDash)});
    err.push_back({e, col.of(t), e ? fmtNum(*e) : "",
                   fmt::format("{}: max abs error {}", t, e ? fmtNum(*e) : kDash)});
  }
  if (labels.empty()) return "";
  std::vector<svg::DotPanel> panels;
  std::vector<std::vector<svg::Dot>> dots;
  bool anyTop1 =
      std::any_of(top1.begin(), top1.end(), [](const svg::Dot& d) { return bool(d.value); });
  bool anyErr =
      std::any_of(err.begin(), err.end(), [](const svg::Dot& d) { return bool(d.value); });
  std::string note;
  if (anyTop1) {
    if (ref) minTop1 = std::min(minTop1, *ref);
    double lo = std::max(0.0, std::floor((minTop1 - 0.002) * 100) / 100);
    svg::DotPanel p;
    p.axisTitle = "top-1 accuracy (labels)";
    p.tick = [](double v) { return fmt::format("{:g}%", std::round(v * 1000) / 10); };
    p.allowLog = false;
    p.fromZero = false;
    p.lo = lo;
    p.hi = 1.0;
    p.refLine = ref;
    p.refLabel = ref ? "interp " + fmtPercent(*ref, 2) : "";
    p.empty = "no labels";
    panels.push_back(p);
    dots.push_back(top1);
    if (lo > 0) note = fmt::format("The top-1 axis starts at {}. ", fmtPercent(lo));
  }
  if (anyErr) {
    svg::DotPanel p;
    p.axisTitle = "max abs error against the interpreter";
    p.tick = sciTick;
    p.empty = "not compared";
    panels.push_back(p);
    dots.push_back(err);
  }
  if (panels.empty()) return "";
  return svg::dotPlot("chart-accuracy", "Accuracy per device", note + "Errors: lower is better.",
                      labels, panels, dots);
}

const char* const kResKeys[] = {"lut", "ff", "dsp", "bram18"};
const char* const kResNames[] = {"LUT", "FF", "DSP", "BRAM18"};

std::string fpgaResourceChart(const std::vector<Result>& rs, const Colours& col) {
  std::vector<BarRow> rows;
  std::set<std::string> seen;
  bool budgeted = true, any = false;
  std::string part;
  for (const Result& r : rs) {
    const Json* f = r.ok() ? getObject(*r.json, "fpga") : nullptr;
    const Json* res = f ? getObject(*f, "resources") : nullptr;
    if (!res || !seen.insert(r.target).second) continue;
    if (!getObject(*f, "budget")) budgeted = false;
    if (part.empty()) part = text(*f, "part");
  }
  seen.clear();
  for (const Result& r : rs) {
    const Json* f = r.ok() ? getObject(*r.json, "fpga") : nullptr;
    const Json* res = f ? getObject(*f, "resources") : nullptr;
    if (!res || !seen.insert(r.target).second) continue;
    const Json* budget = getObject(*f, "budget");
    std::string group =
        fmt::format("{} (batch {}, {})", r.target, r.batch, text(*res, "source", "resources"));
    for (size_t i = 0; i < std::size(kResKeys); ++i) {
      auto u = num(*res, kResKeys[i]);
      std::optional<double> b;
      if (budget) b = num(*budget, kResKeys[i]);
      BarRow row{kResNames[i], group, {}, "not reported"};
      if (u) {
        any = true;
        Bar bar;
        bar.colour = col.of(r.target);
        if (budgeted && b && *b > 0) {
          bar.value = *u / *b;
          bar.label = fmt::format("{} of {} ({})", fmtInt(*u), fmtInt(*b), fmtPercent(*u / *b));
          if (*u > *b) bar.colour = "#b00020";
        } else {
          bar.value = *u;
          bar.label = fmtInt(*u);
        }
        bar.tip = fmt::format("{} {}: {}", r.target, kResNames[i], bar.label);
        row.bars.push_back(std::move(bar));
      }
      rows.push_back(std::move(row));
    }
  }
  if (!any) return "";
  svg::BarChart spec;
  spec.id = "chart-fpga-resources";
  if (budgeted) {
    spec.title = fmt::format("FPGA resources against the {} budget", part.empty() ? "part" : part);
    spec.axisTitle = "share of the part's resources";
    spec.tick = [](double v) { return fmt::format("{:g}%", std::round(v * 1000) / 10); };
    spec.allowLog = false;
    spec.refLine = 1.0;
    spec.refLabel = "budget (100%)";
  } else {
    spec.title = "FPGA resources (no budget in the report)";
    spec.axisTitle = "count";
    spec.tick = numTick;
  }
  return svg::barChart(spec, rows);
}

std::string fpgaCyclesChart(const std::vector<Result>& rs, const Colours& col) {
  std::vector<BarRow> rows;
  for (const Result& r : rs) {
    const Json* f = r.ok() ? getObject(*r.json, "fpga") : nullptr;
    if (!f) continue;
    auto lat = num(*f, "latency_cycles"), ii = num(*f, "ii"), mhz = num(*f, "clock_mhz");
    BarRow row{fmt::format("{} · batch {}", r.target, r.batch), "", {}, "no cycles reported"};
    if (lat) {
      Bar b;
      b.value = *lat;
      b.colour = col.of(r.target);
      b.label = fmt::format(
          "latency {} cycles{}", fmtInt(*lat),
          mhz && *mhz > 0
              ? fmt::format(" = {} at {} MHz", fmtDurationMs(*lat / (*mhz * 1e3)), fmtNum(*mhz))
              : "");
      b.tip = b.label;
      row.bars.push_back(std::move(b));
    }
    if (ii) {
      Bar b;
      b.value = *ii;
      b.colour = col.of(r.target);
      b.opacity = 0.4;
      b.label = fmt::format(
          "II {} cycles{}", fmtInt(*ii),
          mhz && *ii > 0 ? fmt::format(" → {} inferences/s", fmtNum(*mhz * 1e6 / *ii)) : "");
      b.tip = b.label;
      row.bars.push_back(std::move(b));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return "";
  svg::BarChart spec;
  spec.id = "chart-fpga-cycles";
  spec.title = "FPGA cycles: latency and initiation interval";
  spec.axisTitle = "clock cycles";
  spec.tick = numTick;
  std::string c = col.of("fpga");
  spec.legend = {{c, "latency (input in to result out)", 1},
                 {c, "II (cycles between inputs)", 0.4}};
  return svg::barChart(spec, rows);
}

const Json* planOf(const Json& report) {
  if (const Json* p = getObject(report, "partition")) return p;
  if (const Json* rs = getArray(report, "results"))
    for (const Json& r : *rs)
      if (const Json* p = getObject(r, "partition")) return p;
  return nullptr;
}

std::string partitionTimesChart(const Json& plan, const Colours& col) {
  std::vector<BarRow> rows;
  std::map<long long, std::string> targetOf;
  bool any = false;
  auto addRow = [&](std::string label, std::string group, std::string colour,
                    std::optional<double> pred, std::optional<double> meas, std::string missing) {
    BarRow row{std::move(label), std::move(group), {}, "no times"};
    if (pred) {
      Bar b;
      b.value = *pred;
      b.colour = colour;
      b.opacity = 0.35;
      b.label = "predicted " + fmtDurationMs(*pred);
      b.tip = row.label + ": " + b.label;
      row.bars.push_back(std::move(b));
    }
    if (meas) {
      Bar b;
      b.value = *meas;
      b.colour = colour;
      b.label = "measured " + fmtDurationMs(*meas);
      if (pred && *pred > 0) b.label += fmt::format(" (×{:.2f})", *meas / *pred);
      b.tip = row.label + ": " + b.label;
      row.bars.push_back(std::move(b));
    } else if (pred) {
      row.bars.back().label += " · " + missing;
    }
    any |= pred || meas;
    rows.push_back(std::move(row));
  };
  if (const Json* parts = getArray(plan, "partitions"))
    for (const Json& p : *parts) {
      if (!p.is_object()) continue;
      std::string t = text(p, "target", "?");
      if (auto id = num(p, "id")) targetOf[(long long)*id] = t;
      addRow(fmt::format("P{} · {}", text(p, "id", "?"), t), "partitions", col.of(t),
             num(p, "predicted_ms"), num(p, "measured_ms"), "not measured");
    }
  auto end = [&](const Json& x, const char* k, bool from) {
    auto v = num(x, k);
    if (!v) return std::string("?");
    if (*v < 0) return std::string("host");
    (void)from;
    return fmt::format("P{}", (long long)*v);
  };
  if (const Json* trs = getArray(plan, "transfers"))
    for (const Json& x : *trs) {
      if (!x.is_object()) continue;
      addRow(
          fmt::format("{} → {} {}", end(x, "from", true), end(x, "to", false), text(x, "tensor")),
          "transfers", "#777777", num(x, "predicted_ms"), num(x, "measured_ms"), "modelled only");
    }
  addRow("one inference", "end to end", col.of("auto"), num(plan, "predicted_ms"),
         num(plan, "measured_ms"), "not measured");
  if (!any) return "";
  svg::BarChart spec;
  spec.id = "chart-partition-times";
  spec.title = "Partition plan: predicted against measured times";
  spec.axisTitle = "time per inference";
  spec.tick = durationTick;
  spec.legend = {{"#999999", "predicted (cost model)", 0.35}, {"#999999", "measured", 1}};
  return svg::barChart(spec, rows);
}

std::string layerChart(const Result& r, const Colours& col, int index) {
  std::vector<LayerRow> layers = topLayers(*r.json, kTopLayers);
  if (layers.empty()) return "";
  double total = 0;
  if (const Json* ls = getArray(*r.json, "layers"))
    for (const Json& l : *ls)
      total += num(l, "ms").value_or(0);
  std::vector<BarRow> rows;
  for (const LayerRow& l : layers) {
    std::string name = l.merged ? fmt::format("other ({} layers)", l.merged)
                                : (l.op.empty() ? l.name : fmt::format("{} ({})", l.name, l.op));
    Bar b;
    b.value = l.ms;
    b.colour = l.merged ? "#aaaaaa" : col.of(r.target);
    b.label = fmtDurationMs(l.ms);
    if (total > 0) b.label += " · " + fmtPercent(l.ms / total);
    if (l.cycles) b.label += fmt::format(" · {} cycles", fmtInt(*l.cycles));
    b.tip = name + ": " + b.label;
    rows.push_back({name, "", {std::move(b)}, ""});
  }
  svg::BarChart spec;
  spec.id = fmt::format("chart-layers-{}", index);
  spec.title = fmt::format("Per-layer time: {} (batch {})", r.target, r.batch);
  spec.axisTitle = "time per layer";
  spec.tick = durationTick;
  spec.allowLog = false; // bars add up to the total: keep lengths proportional
  spec.width = 760;      // beside its table
  spec.note = fmt::format("The {} slowest layers; total {}.", std::min(kTopLayers, layers.size()),
                          fmtDurationMs(total));
  return svg::barChart(spec, rows);
}

/// One 100% bar per device, split by layer: where each device spends its time. The layers shown
/// are the largest anywhere; the rest is "other".
std::string layerShareChart(const std::vector<Result>& shown) {
  constexpr size_t kNames = 8;
  static const char* const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};
  struct Device {
    std::string label;
    std::map<std::string, double> ms;
    double total = 0;
  };
  std::vector<Device> devices;
  std::map<std::string, double> maxShare;
  std::vector<std::string> firstSeen;
  for (const Result& r : shown) {
    Device d;
    d.label = fmt::format("{} (batch {})", r.target, r.batch);
    if (const Json* ls = getArray(*r.json, "layers"))
      for (const Json& l : *ls) {
        auto ms = num(l, "ms");
        if (!ms || *ms < 0) continue;
        std::string name = text(l, "layer", text(l, "name", "?"));
        if (!d.ms.count(name) && !maxShare.count(name)) firstSeen.push_back(name);
        d.ms[name] += *ms;
        d.total += *ms;
        maxShare[name];
      }
    if (d.total <= 0) continue;
    for (const auto& [name, ms] : d.ms)
      maxShare[name] = std::max(maxShare[name], ms / d.total);
    devices.push_back(std::move(d));
  }
  if (devices.size() < 2) return ""; // one device: its own chart says it all
  std::vector<std::string> names = firstSeen;
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return maxShare[a] > maxShare[b];
  });
  bool other = names.size() > kNames;
  if (other) names.resize(kNames);

  double width = 1100, labelW = 200, x0 = labelW + 10, x1 = width - 40, barH = 22, gap = 10;
  std::vector<svg::LegendItem> legend;
  for (size_t i = 0; i < names.size(); ++i)
    legend.push_back({palette[i % std::size(palette)], svg::ellipsize(names[i], 28), 1});
  if (other) legend.push_back({"#bab0ac", "other layers", 1});
  // Legend rows: estimate as the bar charts' header does.
  double lx = 10, rows = 1;
  for (const svg::LegendItem& l : legend) {
    double w = 26 + double(l.label.size()) * 6.6;
    if (lx + w > width - 10) lx = 10, ++rows;
    lx += w + 14;
  }
  double top = 30 + 20 + 8 + 18 * rows + 24;
  double bottom = top + double(devices.size()) * (barH + gap);
  svg::Svg s(width, bottom + 48, "Share of time per layer and device", "chart-layers-share");
  s.text(10, 22, "Share of time per layer and device", "start", 15, "font-weight=\"600\"");
  s.text(10, 44,
         "Each bar is one device's total time per inference batch; the segments are its "
         "layers.",
         "start", 12, "fill=\"#666666\"");
  lx = 10;
  double ly = 58;
  for (const svg::LegendItem& l : legend) {
    double w = 26 + double(l.label.size()) * 6.6;
    if (lx + w > width - 10) lx = 10, ly += 18;
    s.rect(lx, ly, 12, 12, l.colour);
    s.text(lx + 17, ly + 10.5, l.label);
    lx += w + 14;
  }
  svg::Axis a;
  a.lo = 0;
  a.hi = 1;
  a.p0 = x0;
  a.p1 = x1;
  for (double t : a.ticks()) {
    s.line(a.pos(t), top - 6, a.pos(t), bottom, "#e3e3e3");
    s.text(a.pos(t), bottom + 15, fmt::format("{:g}%", t * 100), "middle", 11, "fill=\"#666666\"");
  }
  s.line(x0, bottom, x1, bottom, "#222222");
  s.text((x0 + x1) / 2, bottom + 34, "share of the device's time", "middle", 12);
  double y = top;
  for (const Device& d : devices) {
    s.text(labelW, y + barH / 2 + 4, svg::ellipsize(d.label, 28), "end");
    double x = x0, shown = 0;
    auto segment = [&](const std::string& name, double ms, const std::string& colour) {
      double w = ms / d.total * (x1 - x0);
      s.rect(x, y, w, barH, colour,
             fmt::format("{}: {} ({}, {})", d.label, name, fmtDurationMs(ms),
                         fmtPercent(ms / d.total)),
             "stroke=\"#ffffff\" stroke-width=\"0.5\"");
      if (w > 34)
        s.text(x + w / 2, y + barH / 2 + 4, fmt::format("{:.0f}%", ms / d.total * 100), "middle",
               10.5, "fill=\"#ffffff\" font-weight=\"600\"");
      x += w;
    };
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = d.ms.find(names[i]);
      if (it == d.ms.end() || it->second <= 0) continue;
      segment(names[i], it->second, palette[i % std::size(palette)]);
      shown += it->second;
    }
    if (d.total - shown > d.total * 1e-9) segment("other layers", d.total - shown, "#bab0ac");
    y += barH + gap;
  }
  return s.str();
}

void push(std::vector<std::string>& out, std::string s) {
  if (!s.empty()) out.push_back(std::move(s));
}

} // namespace

std::string partitionChart(const Json& plan, const Colours& col) {
  const Json* parts = getArray(plan, "partitions");
  if (!parts) return "";
  struct Box {
    long long id;
    std::string target, title;
    std::vector<std::string> lines;
    std::string tip;
    bool host = false;
    double x = 0, w = 0;
  };
  std::vector<Box> boxes;
  const Json* trs = getArray(plan, "transfers");
  bool hostIn = false, hostOut = false;
  if (trs)
    for (const Json& x : *trs) {
      if (num(x, "from").value_or(0) < 0) hostIn = true;
      if (num(x, "to").value_or(0) < 0) hostOut = true;
    }
  if (hostIn)
    boxes.push_back({-1, "host", "host", {"graph inputs"}, "the host: graph inputs", true});
  std::set<std::string> targets;
  for (const Json& p : *parts) {
    if (!p.is_object()) continue;
    Box b;
    b.id = (long long)num(p, "id").value_or(double(boxes.size()));
    b.target = text(p, "target", "?");
    targets.insert(b.target);
    b.title = fmt::format("P{} · {}", b.id, b.target);
    std::vector<std::string> names;
    if (const Json* ns = getArray(p, "nodes"))
      for (const Json& n : *ns)
        names.push_back(valueText(n, "?"));
    b.lines.push_back(fmt::format("{} node{}", names.size(), names.size() == 1 ? "" : "s"));
    std::string list, all;
    for (size_t i = 0; i < names.size(); ++i) {
      all += (i ? ", " : "") + names[i];
      if (i < 3) list += (i ? ", " : "") + names[i];
    }
    if (names.size() > 3) list += fmt::format(" +{}", names.size() - 3);
    if (!list.empty()) b.lines.push_back(list);
    auto pr = num(p, "predicted_ms"), me = num(p, "measured_ms");
    b.lines.push_back("predicted " + (pr ? fmtDurationMs(*pr) : std::string(kDash)));
    b.lines.push_back("measured " + (me ? fmtDurationMs(*me) : std::string(kDash)));
    if (const Json* res = getObject(p, "resources")) {
      auto lut = num(*res, "lut"), dsp = num(*res, "dsp");
      if (lut || dsp)
        b.lines.push_back(
            fmt::format("{} LUT · {} DSP", lut ? fmtInt(*lut) : kDash, dsp ? fmtInt(*dsp) : kDash));
    }
    b.tip = fmt::format("P{} on {}: {}", b.id, b.target, all);
    boxes.push_back(std::move(b));
  }
  if (boxes.empty() || (boxes.size() == 1 && boxes[0].host)) return "";
  if (hostOut)
    boxes.push_back({-2, "host", "host", {"graph outputs"}, "the host: graph outputs", true});

  constexpr double boxW = 176, hostW = 108, gap = 130, boxH = 118, arcRoom = 64;
  double x = 20;
  for (Box& b : boxes) {
    b.w = b.host ? hostW : boxW;
    b.x = x;
    x += b.w + gap;
  }
  double width = std::max(960.0, x - gap + 20);
  std::vector<svg::LegendItem> legend;
  for (const Box& b : boxes)
    if (!b.host && std::none_of(legend.begin(), legend.end(),
                                [&](const svg::LegendItem& l) { return l.label == b.target; }))
      legend.push_back({col.of(b.target), b.target, 1});
  legend.push_back({"#bbbbbb", "host (graph inputs and outputs)", 1});

  // Columns of transfer ends: host inputs are box 0 when present, host outputs the last box.
  auto column = [&](double id, bool from) -> long {
    if (id < 0) {
      for (size_t i = 0; i < boxes.size(); ++i)
        if (boxes[i].id == (from ? -1 : -2)) return long(i);
      return -1;
    }
    for (size_t i = 0; i < boxes.size(); ++i)
      if (!boxes[i].host && boxes[i].id == (long long)id) return long(i);
    return -1;
  };
  struct Arrow {
    long from, to;
    std::string bytes, name, conv, tip;
  };
  std::vector<Arrow> arrows;
  double totalBytes = 0;
  if (trs)
    for (const Json& t : *trs) {
      auto f = num(t, "from"), to = num(t, "to");
      if (!f || !to) continue;
      long cf = column(*f, true), ct = column(*to, false);
      if (cf < 0 || ct < 0 || cf == ct) continue;
      auto bytes = num(t, "bytes");
      totalBytes += bytes.value_or(0);
      std::string conv = text(t, "conversion");
      Arrow a{cf, ct, bytes ? fmtBytes(*bytes) : "? B", text(t, "tensor"), conv, ""};
      a.tip =
          fmt::format("{}: {} from {} to {} over {}{}; predicted {}, measured {}", a.name, a.bytes,
                      boxes[size_t(cf)].title, boxes[size_t(ct)].title, text(t, "link", "?"),
                      conv.empty() ? "" : " (" + conv + ")", fmtNum(num(t, "predicted_ms")) + " ms",
                      num(t, "measured_ms") ? fmtNum(num(t, "measured_ms")) + " ms"
                                            : std::string("modelled only"));
      arrows.push_back(std::move(a));
    }
  size_t longUp = 0, longDown = 0;
  for (const Arrow& a : arrows) {
    if (a.to == a.from + 1) continue;
    (a.to > a.from ? longUp : longDown)++;
  }

  std::string title = "Partition plan";
  auto pr = num(plan, "predicted_ms"), me = num(plan, "measured_ms");
  std::string note = fmt::format(
      "{} partitions ({}); {} moved per inference; predicted {}, measured {}.",
      boxes.size() - (hostIn ? 1 : 0) - (hostOut ? 1 : 0), text(plan, "mode", "?"),
      fmtBytes(totalBytes), pr ? fmtDurationMs(*pr) : kDash, me ? fmtDurationMs(*me) : kDash);
  // Heading height: as the other charts (a probe renders the header).
  double headH = 30 + 20 + 8 + 16 + 10 + (legend.size() > 6 ? 18 : 0);
  double top = headH + (longUp ? arcRoom + 14.0 * double(longUp - 1) : 16);
  double height = top + boxH + (longDown ? arcRoom + 14.0 * double(longDown - 1) : 20) + 10;
  svg::Svg s(width, height, title, "chart-partition");
  s.raw("<defs><marker id=\"chart-partition-arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
        "markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\">"
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444444\"/></marker></defs>");
  // Header (as svg::header does for the other charts).
  s.text(10, 22, title, "start", 15, "font-weight=\"600\"");
  s.text(10, 44, note, "start", 12, "fill=\"#666666\"");
  {
    double lx = 10, ly = 58;
    for (const svg::LegendItem& l : legend) {
      double w = 26 + double(l.label.size()) * 6.6;
      if (lx + w > width - 10) lx = 10, ly += 18;
      s.rect(lx, ly, 12, 12, l.colour);
      s.text(lx + 17, ly + 10.5, l.label);
      lx += w + 14;
    }
  }
  for (const Box& b : boxes) {
    std::string c = col.of(b.target);
    s.raw(fmt::format("<g class=\"partition\"><title>{}</title>", escape::html(b.tip)));
    s.rect(b.x, top, b.w, boxH, c, "",
           fmt::format("fill-opacity=\"0.14\" stroke=\"{}\" stroke-width=\"1.5\" rx=\"6\"{}", c,
                       b.host ? " stroke-dasharray=\"4 3\"" : ""));
    s.rect(b.x, top, b.w, 24, c, "", "rx=\"6\"");
    s.rect(b.x, top + 12, b.w, 12, c);
    s.text(b.x + b.w / 2, top + 17, b.title, "middle", 12.5,
           b.host ? "font-weight=\"600\"" : "font-weight=\"600\" fill=\"#ffffff\"");
    size_t chars = size_t((b.w - 12) / 6.2);
    double ly = top + 42;
    for (const std::string& l : b.lines) {
      s.text(b.x + b.w / 2, ly, svg::ellipsize(l, chars), "middle", 11.5);
      ly += 17;
    }
    s.raw("</g>");
  }
  // Arrows: neighbours straight across the gap (several stack), others as arcs above (forward)
  // or below (backward), each labelled with its bytes.
  std::map<std::pair<long, long>, int> straightCount, straightSeen;
  for (const Arrow& a : arrows)
    if (a.to == a.from + 1) straightCount[{a.from, a.to}]++;
  size_t upSeen = 0, downSeen = 0;
  for (const Arrow& a : arrows) {
    const Box& f = boxes[size_t(a.from)];
    const Box& t = boxes[size_t(a.to)];
    s.raw(fmt::format("<g class=\"transfer\"><title>{}</title>", escape::html(a.tip)));
    if (a.to == a.from + 1) {
      int k = straightSeen[{a.from, a.to}]++, nk = straightCount[{a.from, a.to}];
      double y = top + boxH / 2 + (double(k) - double(nk - 1) / 2) * 50;
      double x0 = f.x + f.w, x1 = t.x;
      s.line(x0 + 2, y, x1 - 2, y, "#444444", 1.6, "marker-end=\"url(#chart-partition-arrow)\"");
      size_t chars = size_t((x1 - x0 - 8) / 6.2);
      s.text((x0 + x1) / 2, y - 6, a.bytes, "middle", 11.5, "font-weight=\"600\"");
      s.text((x0 + x1) / 2, y + 13, svg::ellipsize(a.name, chars), "middle", 10.5);
      if (!a.conv.empty())
        s.text((x0 + x1) / 2, y + 24, svg::ellipsize(a.conv, chars), "middle", 10,
               "fill=\"#666666\"");
    } else {
      bool up = a.to > a.from;
      double x0 = f.x + f.w / 2 + (up ? 14 : -14), x1 = t.x + t.w / 2 + (up ? -14 : 14);
      double lift =
          (up ? arcRoom - 16 + 14.0 * double(upSeen++) : arcRoom - 16 + 14.0 * double(downSeen++));
      double y0 = up ? top : top + boxH;
      double yc = up ? y0 - lift : y0 + lift;
      s.path(fmt::format("M{} {} C{} {} {} {} {} {}", svg::px(x0), svg::px(y0), svg::px(x0),
                         svg::px(yc), svg::px(x1), svg::px(yc), svg::px(x1), svg::px(y0)),
             "#444444", 1.4, "marker-end=\"url(#chart-partition-arrow)\"");
      double mx = (x0 + x1) / 2, my = up ? y0 - lift * 0.75 - 4 : y0 + lift * 0.75 + 12;
      std::string label = a.bytes + " · " + a.name + (a.conv.empty() ? "" : " (" + a.conv + ")");
      s.text(mx, my, svg::ellipsize(label, 48), "middle", 11, "font-weight=\"600\"");
    }
    s.raw("</g>");
  }
  return s.str();
}

std::vector<std::string> chartsFor(const Section& sec, const Json& report, const Colours& col) {
  std::vector<std::string> out;
  std::vector<Result> rs = results(report);
  if (sec.id == "results") {
    push(out, latencyChart(rs, col));
    push(out, throughputChart(rs, col));
  } else if (sec.id == "accuracy") {
    push(out, accuracyChart(rs, col));
  } else if (sec.id == "fpga") {
    push(out, fpgaResourceChart(rs, col));
    push(out, fpgaCyclesChart(rs, col));
  } else if (sec.id == "partition") {
    if (const Json* p = planOf(report)) {
      push(out, partitionChart(*p, col));
      push(out, partitionTimesChart(*p, col));
    }
  } else if (sec.id == "layers") {
    push(out, layerShareChart(layerResults(rs)));
  } else if (!sec.target.empty()) {
    std::vector<Result> shown = layerResults(rs);
    for (size_t i = 0; i < shown.size(); ++i)
      if (shown[i].target == sec.target) push(out, layerChart(shown[i], col, int(i)));
  }
  return out;
}

} // namespace triad::bench::detail
