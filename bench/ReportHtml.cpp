// The HTML renderer: one self-contained page (inline CSS, inline SVG charts, no scripts, no
// external resources), the same tables as the Markdown plus the charts.
#include "bench/Report.h"
#include "bench/ReportCharts.h"
#include "bench/Svg.h"
#include "ir/Escape.h"

#include <fmt/format.h>

namespace triad::bench {

using namespace detail;

namespace {

/// Every text of the page, model names included, is escaped by the one HTML escaper.
std::string h(std::string_view s) {
  return escape::html(s);
}

constexpr const char* kCss = R"(
:root{--ink:#1f2328;--muted:#656d76;--line:#d8dee4;--bg:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
 font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
header,nav,main,footer{max-width:1240px;margin:0 auto;padding:0 24px}
header{padding-top:20px}
h1{font-size:24px;margin:0 0 4px}
.sub{color:var(--muted);margin:0 0 12px}
nav{font-size:13px;margin-bottom:8px}
nav a{color:#0969da;text-decoration:none;margin-right:14px;white-space:nowrap}
nav a:hover{text-decoration:underline}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:4px 20px 14px;
 margin:14px 0}
section section{border:none;padding:0;margin:18px 0 0}
h2{font-size:19px;margin:14px 0 8px}
h3{font-size:16px;margin:12px 0 6px}
p{margin:8px 0}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
th,td{padding:4px 8px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
thead th{background:#f0f3f6;border-bottom:1px solid var(--line);vertical-align:bottom}
tbody tr:nth-child(even){background:#fafbfc}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv{width:100%;table-layout:fixed}
table.kv th{background:none;width:160px;color:var(--muted);font-weight:600}
table.kv td{overflow-wrap:anywhere}
td.skipped{color:#9a6700;font-weight:600}
td.failed{color:#cf222e;font-weight:600}
td.why{color:var(--muted);text-align:left;white-space:normal}
.overview{display:grid;grid-template-columns:repeat(auto-fit,minmax(540px,1fr));gap:0 14px}
.overview section{margin:14px 0 0}
.pair{display:grid;grid-template-columns:minmax(0,760px) minmax(0,1fr);gap:16px;align-items:start}
@media (max-width:1100px){.pair{grid-template-columns:minmax(0,1fr)}}
figure{margin:10px 0 14px;overflow-x:auto}
svg.chart{display:block;max-width:100%;height:auto;border:1px solid #eaeef2;border-radius:6px}
footer{color:var(--muted);font-size:12px;padding-bottom:24px}
)";

void htmlTable(std::string& out, const Table& t) {
  bool kv = true;
  for (const std::string& hd : t.header)
    kv &= hd.empty();
  out +=
      kv ? "<div class=\"table-wrap\"><table class=\"kv\">" : "<div class=\"table-wrap\"><table>";
  auto numeric = [&](size_t i) { return i < t.numeric.size() && t.numeric[i]; };
  if (!kv) {
    out += "<thead><tr>";
    for (size_t i = 0; i < t.header.size(); ++i)
      out += fmt::format("<th{}>{}</th>", numeric(i) ? " class=\"num\"" : "", h(t.header[i]));
    out += "</tr></thead>";
  }
  out += "<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < t.header.size(); ++i) {
      const Cell empty;
      const Cell& c = i < row.size() ? row[i] : empty;
      std::string cls = c.cls;
      if (numeric(i)) cls = cls.empty() ? "num" : "num " + cls;
      std::string attr = cls.empty() ? "" : " class=\"" + h(cls) + "\"";
      if (kv && i == 0)
        out += fmt::format("<th scope=\"row\">{}</th>", h(c.text));
      else
        out += fmt::format("<td{}>{}</td>", attr, h(c.text));
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

} // namespace

std::string renderHtml(const nlohmann::json& report) {
  std::vector<Section> sections = buildSections(report);
  Colours colours(targetsOf(results(report)));
  std::string title = "Triad benchmark: " + reportTitle(report);
  const Json* run = getObject(report, "run");
  std::string sub;
  if (run) {
    sub = fmt::format("Run {} · started {} · {}", text(*run, "id", "?"), text(*run, "started", "?"),
                      text(*run, "status", "?"));
  }

  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + h(title) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n";
  out += "<header><h1>" + h(title) + "</h1>";
  if (!sub.empty()) out += "<p class=\"sub\">" + h(sub) + "</p>";
  out += "</header>\n<nav aria-label=\"Sections\">";
  for (const Section& s : sections)
    if (s.level == 2) out += fmt::format("<a href=\"#{}\">{}</a>", h(s.id), h(s.title));
  out += "</nav>\n<main>\n";
  // Run, system, model and settings are short key/value tables: side by side.
  auto isOverview = [](const Section& s) {
    return s.id == "run" || s.id == "system" || s.id == "model" || s.id == "settings";
  };
  bool open = false, inOverview = false;
  for (const Section& s : sections) {
    if (s.level == 2) {
      if (open) out += "</section>\n";
      if (isOverview(s) != inOverview) {
        out += inOverview ? "</div>\n" : "<div class=\"overview\">\n";
        inOverview = !inOverview;
      }
      out += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", h(s.id), h(s.title));
      open = true;
    } else {
      out += fmt::format("<section id=\"{}\">\n<h3>{}</h3>\n", h(s.id), h(s.title));
    }
    // A per-device subsection: its chart beside its table.
    bool pair = s.level != 2 && !s.target.empty();
    if (pair) out += "<div class=\"pair\">";
    // Charts after the first paragraph (the section's summary line), before the tables.
    std::vector<std::string> charts = chartsFor(s, report, colours);
    bool chartsDone = charts.empty();
    auto emitCharts = [&] {
      for (const std::string& c : charts)
        out += "<figure>" + c + "</figure>\n";
      chartsDone = true;
    };
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const Block& b = s.blocks[i];
      if (!chartsDone && (b.kind == Block::TableBlock || i > 0)) emitCharts();
      if (b.kind == Block::Paragraph)
        out += "<p>" + h(b.text) + "</p>\n";
      else
        htmlTable(out, b.table);
    }
    if (!chartsDone) emitCharts();
    if (pair) out += "</div>";
    if (s.level != 2) out += "</section>\n";
  }
  if (open) out += "</section>\n";
  if (inOverview) out += "</div>\n";
  out += fmt::format("</main>\n<footer>Written by triad from a {} report. One self-contained "
                     "page: no scripts, no external styles or fonts.</footer>\n</body>\n</html>\n",
                     h(text(report, "schema", kReportSchema)));
  return out;
}

} // namespace triad::bench
