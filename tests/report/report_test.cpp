// The benchmark report renderers (bench/Report.h) on tests/data/bench_report_sample.json: the
// tables and numbers in Markdown and HTML, the inline SVG charts (present, titled, well-formed),
// escaping, partial and malformed reports, and atomic report files.
#include "XmlCheck.h"
#include "bench/History.h"
#include "bench/Report.h"
#include "bench/ReportCharts.h"
#include "bench/ReportUtil.h"
#include "bench/Svg.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Printer.h"
#include "ir/Target.h"
#include "ir/ops/Linear.h"
#include "ir/partition/Partition.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace triad;

namespace {

json sample() {
  std::ifstream in(fs::path(TRIAD_SOURCE_DIR) / "tests/data/bench_report_sample.json");
  EXPECT_TRUE(in) << "fixture missing";
  return json::parse(in);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("triad-report-test-{}-{}", name, getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

bool contains(const std::string& hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

size_t count(const std::string& hay, std::string_view needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1))
    ++n;
  return n;
}

const char* const kCharts[] = {"chart-latency",         "chart-throughput",   "chart-accuracy",
                               "chart-fpga-resources",  "chart-fpga-cycles",  "chart-partition",
                               "chart-partition-times", "chart-layers-share", "chart-layers-0",
                               "chart-layers-3"};

} // namespace

TEST(ReportFormat, Numbers) {
  using namespace bench::detail;
  EXPECT_EQ(fmtNum(473171.2), "473,171");
  EXPECT_EQ(fmtNum(0.435), "0.435");
  EXPECT_EQ(fmtNum(1.2e-7), "1.2e-07");
  EXPECT_EQ(fmtNum(0.0), "0");
  EXPECT_EQ(fmtInt(663360), "663,360");
  EXPECT_EQ(fmtInt(-1234567), "-1,234,567");
  EXPECT_EQ(fmtDurationMs(0.000435), "435 ns");
  EXPECT_EQ(fmtDurationMs(0.0021), "2.1 µs");
  EXPECT_EQ(fmtDurationMs(6.83), "6.83 ms");
  EXPECT_EQ(fmtDurationMs(2500), "2.5 s");
  EXPECT_EQ(fmtBytes(288), "288 B");
  EXPECT_EQ(fmtBytes(4096), "4 KiB");
  EXPECT_EQ(fmtPercent(55447.0 / 663360), "8.4%");
}

TEST(ReportFormat, AxesAndEscaping) {
  using bench::svg::Axis;
  Axis lin = Axis::fit(3, 87, 0, 100, true);
  EXPECT_FALSE(lin.log);
  EXPECT_EQ(lin.lo, 0);
  EXPECT_GE(lin.hi, 87);
  Axis lg = Axis::fit(0.000435, 6.8, 0, 100, true);
  EXPECT_TRUE(lg.log);
  EXPECT_DOUBLE_EQ(lg.lo, 1e-4);
  EXPECT_DOUBLE_EQ(lg.hi, 10);
  EXPECT_EQ(lg.ticks().size(), 6u);
  EXPECT_NEAR(lg.pos(1e-2), 40, 1e-9);
  EXPECT_EQ(lg.scaleNote(), " (log scale)");
  EXPECT_EQ(escape::html("a<&\"'>b"), "a&lt;&amp;&quot;&#39;&gt;b"); // what bench/Svg.cpp uses
  EXPECT_EQ(bench::svg::ellipsize("conv_layer_number_seven", 8), "conv_la…");
}

TEST(ReportMarkdown, TablesAndNumbers) {
  std::string md = bench::renderMarkdown(sample());
  for (const char* s :
       {"# Triad benchmark: digits_cnn on ci-1", "## System", "## Model", "## Settings",
        "## Latency and throughput", "## Accuracy", "## Memory and energy",
        "## GPU: kernels and transfers", "## FPGA", "## Partition plan", "## Per-layer time",
        "### cpu (batch 1)", "### fpga (batch 1)"})
    EXPECT_TRUE(contains(md, s)) << s;
  // Real tables: header, alignment row, rows.
  EXPECT_TRUE(contains(md, "| Target | Batch | Compile (s) | Runs | p50 (ms) |")) << md;
  EXPECT_TRUE(contains(md, "|---|---:|---:|---:|---:|"));
  // Numbers from the fixture.
  EXPECT_TRUE(contains(md, "| cpu | 1 | 2.31 | 50 | 0.002119 |")) << md;
  EXPECT_TRUE(contains(md, "473,171")); // cpu batch 1 throughput
  EXPECT_TRUE(contains(
      md, "| fpga | 1 | 200 | 87 | 64 | 0.435 | 3,125,000 | fixed\\<16,6\\> | RTL simulation | "
          "yes (xcku115) | 1.1e-07 |"));
  EXPECT_TRUE(contains(md, "| LUT | 663,360 | 55,447 | 8.4% |")) << md;
  EXPECT_TRUE(contains(md, "| DSP | 5,520 | 1,851 | 33.5% |"));
  EXPECT_TRUE(contains(md, "| gpu | 1 | 0.061 | 0.012 | 0.008 | 0.004 |"));
  EXPECT_TRUE(contains(md, "| cpu | 1 | 1.2e-07 | 3e-06 | 99.17% | 99.17% | 360 |"));
  EXPECT_TRUE(contains(md, "| P0 | fpga | conv1, relu1, pool1 | 0.00044 | 0.000435 | 0.99 |"));
  EXPECT_TRUE(contains(md, "| P0 | P1 | pool1_out | 288 | gpu+fpga | fixed-\\>float |"));
  EXPECT_TRUE(contains(md, "host (inputs)"));
  EXPECT_TRUE(contains(md, "alpha-expansion min-cut"));
  EXPECT_TRUE(contains(md, "1.09 KiB moved per inference"));
  // Missing values say why.
  EXPECT_TRUE(contains(md, "— (no RAPL counters (/sys/class/powercap absent))"));
  EXPECT_TRUE(contains(md, "| tvm | peer | 1 | skipped | apache-tvm is not installed"));
  EXPECT_TRUE(contains(md, "| openvino | peer | 1 | failed |"));
  EXPECT_TRUE(contains(md, "— (modelled only)"));
}

TEST(ReportMarkdown, Escaping) {
  std::string md = bench::renderMarkdown(sample());
  EXPECT_FALSE(contains(md, "head<&\"1"));
  EXPECT_TRUE(contains(md, "head\\<\\&\"1"));
  // A pipe or a newline in a name cannot break a table row.
  json r = sample();
  r["model"]["name"] = "a|b\nc";
  std::string md2 = bench::renderMarkdown(r);
  EXPECT_TRUE(contains(md2, "| **Name** | a\\|b c |")) << md2;
}

TEST(ReportHtml, TablesChartsAndNumbers) {
  std::string html = bench::renderHtml(sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(contains(html, "<meta charset=\"utf-8\">"));
  EXPECT_GE(count(html, "<table"), 12u);
  for (const char* id : kCharts)
    EXPECT_TRUE(
        contains(html, fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\"", id)))
        << id;
  EXPECT_TRUE(contains(html, "<td class=\"num\">473,171</td>"));
  EXPECT_TRUE(contains(html, "<th scope=\"row\">CPU</th><td>Intel(R) Xeon(R) CPU @ 2.20GHz</td>"));
  EXPECT_TRUE(contains(html, "<td class=\"skipped\">skipped</td>"));
  EXPECT_TRUE(contains(html, "<td class=\"failed\">failed</td>"));
  // Chart contents: the FPGA at its clock in the latency chart, a log axis stated, labels.
  EXPECT_TRUE(contains(html, "435 ns (87 cycles)"));
  EXPECT_TRUE(contains(html, "latency per batch (log scale)"));
  EXPECT_TRUE(contains(html, "55,447 of 663,360 (8.4%)"));
  EXPECT_TRUE(contains(html, "budget (100%)"));
  EXPECT_TRUE(contains(html, "fpga @ 200 MHz"));
  EXPECT_TRUE(contains(html, ">288 B<"));
  EXPECT_TRUE(contains(html, "inferences per second (log scale)"));
  EXPECT_TRUE(contains(html, "measured 13.5 µs (×1.12)"));
  EXPECT_TRUE(contains(html, "P0 · fpga"));
}

TEST(ReportHtml, SelfContained) {
  std::string html = bench::renderHtml(sample());
  EXPECT_FALSE(contains(html, "<script"));
  EXPECT_FALSE(contains(html, "<link"));
  EXPECT_FALSE(contains(html, "@import"));
  EXPECT_FALSE(contains(html, "<img"));
  // The only URL is the SVG namespace; url(...) only points inside the page.
  std::string stripped = std::regex_replace(html, std::regex("http://www\\.w3\\.org/2000/svg"), "");
  EXPECT_FALSE(contains(stripped, "http://"));
  EXPECT_FALSE(contains(stripped, "https://"));
  std::smatch m;
  std::string rest = html;
  while (std::regex_search(rest, m, std::regex("url\\(([^)]*)\\)"))) {
    EXPECT_EQ(m[1].str().rfind("#", 0), 0u) << m[0];
    rest = m.suffix();
  }
}

TEST(ReportHtml, SvgsAreWellFormedAndTitled) {
  std::string html = bench::renderHtml(sample());
  std::vector<std::string> svgs = test::svgElements(html);
  ASSERT_EQ(svgs.size(), 12u); // 8 charts + 4 per-layer charts (cpu, gpu, fpga, auto)
  std::set<std::string> ids;
  for (const std::string& s : svgs) {
    EXPECT_EQ(test::xmlProblem(s), "") << s.substr(0, 200);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        s, m, std::regex("^<svg [^>]*id=\"([^\"]+)\"[^>]*><title id=\"[^\"]+\">([^<]+)</title>")))
        << s.substr(0, 300);
    EXPECT_TRUE(ids.insert(m[1]).second) << "duplicate id " << m[1];
    EXPECT_FALSE(m[2].str().empty());
    EXPECT_TRUE(contains(s, "<line")) << m[1]; // axes
  }
  // The checker itself catches what it should.
  EXPECT_NE(test::xmlProblem("<svg><g></svg>"), "");
  EXPECT_NE(test::xmlProblem("<svg a=\"1\" a=\"2\"/>"), "");
  EXPECT_NE(test::xmlProblem("<svg><text>a & b</text></svg>"), "");
  EXPECT_NE(test::xmlProblem("<svg><text>&nbsp;</text></svg>"), "");
}

TEST(ReportHtml, Escaping) {
  json r = sample();
  r["model"]["name"] = "cnn<script>alert('x')</script>&\"q\"";
  std::string html = bench::renderHtml(r);
  EXPECT_FALSE(contains(html, "head<&\"1"));
  EXPECT_TRUE(contains(html, "head&lt;&amp;&quot;1"));
  EXPECT_FALSE(contains(html, "<script>"));
  EXPECT_TRUE(
      contains(html, "cnn&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;q&quot;"));
  for (const std::string& s : test::svgElements(html))
    EXPECT_EQ(test::xmlProblem(s), "");
}

TEST(ReportRender, PartialReports) {
  // No GPU, FPGA, partition or peers.
  json r = sample();
  json kept = json::array();
  for (const json& x : r["results"])
    if (x["target"] == "cpu") kept.push_back(x);
  r["results"] = kept;
  r.erase("partition");
  std::string md = bench::renderMarkdown(r), html = bench::renderHtml(r);
  EXPECT_FALSE(contains(md, "## FPGA"));
  EXPECT_FALSE(contains(md, "## GPU"));
  EXPECT_FALSE(contains(md, "## Partition plan"));
  EXPECT_TRUE(contains(md, "## Latency and throughput"));
  EXPECT_FALSE(contains(html, "chart-fpga"));
  EXPECT_FALSE(contains(html, "chart-partition"));
  EXPECT_TRUE(contains(html, "chart-latency"));
  for (const std::string& s : test::svgElements(html))
    EXPECT_EQ(test::xmlProblem(s), "");

  // Everything skipped.
  json skipped = sample();
  for (json& x : skipped["results"]) {
    json keep = {{"target", x["target"]},
                 {"kind", x["kind"]},
                 {"batch", x["batch"]},
                 {"status", "skipped"},
                 {"why", "no device"}};
    x = keep;
  }
  skipped.erase("partition");
  std::string h2 = bench::renderHtml(skipped);
  EXPECT_FALSE(contains(h2, "chart-latency"));
  EXPECT_TRUE(contains(bench::renderMarkdown(skipped), "| skipped | no device |"));

  // The least a report can be.
  json minimal = {{"schema", "triad-bench/1"}, {"run", {{"id", "x"}}}};
  EXPECT_TRUE(contains(bench::renderMarkdown(minimal), "No results"));
  EXPECT_TRUE(contains(bench::renderHtml(minimal), "</html>"));
}

namespace {

/// Every JSON pointer in `j` (containers included; raw latency samples left out: hundreds of
/// them add nothing).
void pointers(const json& j, const std::string& at, std::vector<std::string>& out) {
  if (at.size() > 8 && at.compare(at.size() - 8, 8, "/samples") == 0) {
    out.push_back(at);
    return;
  }
  if (!at.empty()) out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      pointers(v, at + "/" + k, out);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i)
      pointers(j[i], at + "/" + std::to_string(i), out);
}

} // namespace

TEST(ReportRender, WrongTypesNeverThrow) {
  // Each value in turn replaced by a value of another type: the renderers show "—" or skip it,
  // never throw (a report from another writer must not crash `triad report`).
  json base = sample();
  std::vector<std::string> ptrs;
  pointers(base, "", ptrs);
  ASSERT_GT(ptrs.size(), 300u);
  const json replacements[] = {json("x"), json(nullptr), json::array({1, "a"}), json(-1e300)};
  size_t n = 0;
  for (const std::string& p : ptrs)
    for (const json& rep : replacements) {
      json r = base;
      r[json::json_pointer(p)] = rep;
      std::string md, html;
      ASSERT_NO_THROW(md = bench::renderMarkdown(r)) << p;
      ASSERT_NO_THROW(html = bench::renderHtml(r)) << p;
      if (++n % 7 == 0) { // spot-check well-formedness (all of them on every pointer is slow)
        for (const std::string& s : test::svgElements(html))
          ASSERT_EQ(test::xmlProblem(s), "") << p;
      }
    }
}

TEST(ReportFiles, WritesAllThreeAtomically) {
  fs::path d = freshDir("write") / "new" / "sub";
  json r = sample();
  bench::writeReportFiles(d, r);
  EXPECT_EQ(json::parse(slurp(d / "report.json")), r);
  EXPECT_EQ(slurp(d / "report.md"), bench::renderMarkdown(r));
  EXPECT_EQ(slurp(d / "report.html"), bench::renderHtml(r));
  // Replacing leaves no temporary files.
  r["run"]["id"] = "second";
  bench::writeReportFiles(d, r);
  EXPECT_TRUE(contains(slurp(d / "report.md"), "second"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 3u);
  fs::remove_all(d.parent_path().parent_path());
}

TEST(ReportFiles, FailureLeavesEarlierFilesIntact) {
  fs::path d = freshDir("intact");
  json r = sample();
  bench::writeReportFiles(d, r);
  std::string md = slurp(d / "report.md"), html = slurp(d / "report.html"),
              js = slurp(d / "report.json");
  json r2 = r;
  r2["run"]["id"] = "later-run";

  // report.html is a folder: refused before any file changes.
  fs::rename(d / "report.html", d / "saved.html");
  fs::create_directories(d / "report.html" / "x");
  try {
    bench::writeReportFiles(d, r2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_TRUE(contains(e.what(), "report.html")) << e.what();
  }
  EXPECT_EQ(slurp(d / "report.md"), md);
  EXPECT_EQ(slurp(d / "report.json"), js);
  fs::remove_all(d / "report.html");
  fs::rename(d / "saved.html", d / "report.html");

  // The folder is a file.
  std::ofstream(d / "plain") << "x";
  EXPECT_THROW(bench::writeReportFiles(d / "plain", r2), Error);
  EXPECT_EQ(slurp(d / "plain"), "x");

  // A read-only folder: nothing written, nothing left behind. Root ignores permissions: there
  // the same path is checked under /proc, where nobody can create files.
  fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
  bool root = ::access(d.c_str(), W_OK) == 0;
  fs::path target = root ? fs::path("/proc/self") : d;
  try {
    bench::writeReportFiles(target, r2);
    ADD_FAILURE() << "expected an error writing to " << target;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_TRUE(contains(e.what(), target.string())) << e.what();
  }
  fs::permissions(d, fs::perms::owner_all);
  EXPECT_EQ(slurp(d / "report.md"), md);
  EXPECT_EQ(slurp(d / "report.html"), html);
  EXPECT_EQ(slurp(d / "report.json"), js);
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  fs::remove_all(d);
}

TEST(ReportFiles, ReadingChecksTheSchema) {
  fs::path d = freshDir("read");
  auto kindOf = [&](const std::string& content) {
    std::ofstream(d / "r.json") << content;
    try {
      bench::readReportFile(d / "r.json");
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), (d / "r.json").string())) << e.what();
      return e.kind();
    }
    return ErrorKind::Internal; // "no error"
  };
  EXPECT_EQ(kindOf("{\"schema\": \"triad-bench/1\", \"run\": {\"id\": \"a\"}}"),
            ErrorKind::Internal);
  EXPECT_EQ(kindOf("not json {"), ErrorKind::Io);
  EXPECT_EQ(kindOf("[1, 2]"), ErrorKind::Io);
  EXPECT_EQ(kindOf("{\"schema\": \"something-else/1\", \"run\": {\"id\": \"a\"}}"), ErrorKind::Io);
  EXPECT_EQ(kindOf("{\"schema\": \"triad-bench/2\", \"run\": {\"id\": \"a\"}}"),
            ErrorKind::Unsupported);
  EXPECT_EQ(kindOf("{\"schema\": \"triad-bench/1\"}"), ErrorKind::Io);
  EXPECT_EQ(kindOf("{\"schema\": \"triad-bench/1\", \"run\": {\"id\": \"a\"}, \"results\": 3}"),
            ErrorKind::Io);
  try {
    bench::readReportFile(d / "missing.json");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
  }
  fs::remove_all(d);
}

TEST(ReportHtml, PartitionDrawingWithLongAndBackwardTransfers) {
  json r = sample();
  json& trs = r["partition"]["transfers"];
  trs.push_back({{"from", 0}, {"to", 2}, {"tensor", "skip<&>"}, {"bytes", 1024}, {"link", "fpga"}});
  trs.push_back({{"from", 2}, {"to", 1}, {"tensor", "back"}, {"bytes", 64}, {"link", "gpu"}});
  trs.push_back({{"from", 0}, {"to", 1}, {"tensor", "second"}, {"bytes", 16}, {"link", "gpu"}});
  trs.push_back({{"from", 2}, {"to", -1}, {"tensor", "probs"}, {"bytes", 40}, {"link", "host"}});
  bench::detail::Colours colours({"cpu", "gpu", "fpga"});
  std::string s = bench::detail::partitionChart(r["partition"], colours);
  EXPECT_EQ(test::xmlProblem(s), "");
  EXPECT_EQ(count(s, "<g class=\"transfer\">"), 7u);
  EXPECT_EQ(count(s, "<g class=\"partition\">"), 5u); // host in, P0, P1, P2, host out
  EXPECT_TRUE(contains(s, "graph outputs"));
  EXPECT_TRUE(contains(s, "1 KiB · skip&lt;&amp;&gt;"));
  EXPECT_TRUE(contains(s, ">64 B · back<"));
  EXPECT_TRUE(contains(s, "marker-end=\"url(#chart-partition-arrow)\""));
  // A plan without transfers or partitions draws what it has, or nothing.
  json bare = {{"partitions", json::array({{{"id", 0}, {"target", "cpu"}}})}};
  EXPECT_EQ(test::xmlProblem(bench::detail::partitionChart(bare, colours)), "");
  EXPECT_EQ(bench::detail::partitionChart(json::object(), colours), "");
  for (const std::string& svg : test::svgElements(bench::renderHtml(r)))
    EXPECT_EQ(test::xmlProblem(svg), "");
}

TEST(ReportHtml, OnlyTheFpgaTargetIsChartedAtItsClock) {
  // An "auto" result with FPGA partitions may carry an fpga section: its end-to-end measured
  // time is what the latency chart shows, not the FPGA part's latency.
  json r = sample();
  ASSERT_EQ(r["results"][3]["target"], "auto");
  r["results"][3]["fpga"] = r["results"][2]["fpga"];
  std::string html = bench::renderHtml(r);
  EXPECT_TRUE(contains(html, "13.45 µs")) << "auto's measured p50";
  EXPECT_FALSE(contains(html, "auto @ 200 MHz"));
  EXPECT_TRUE(contains(html, "fpga @ 200 MHz"));
  EXPECT_TRUE(contains(bench::renderMarkdown(r), "| auto | 1 | 200 | 87 | 64 |")); // FPGA table
}

// ---- hostile names -----------------------------------------------------------------------------
// A model's strings are untrusted (docs/reliability.md, "A model's strings are data"): names that
// try to break out of HTML, SVG, Markdown, DOT and the terminal render as inert text.

namespace {

const std::vector<std::string> kHostile = {
    "<script>document.title=\"PWNED\"</script>",
    "<img src=x onerror=\"document.title='PWNED'\">",
    "</title></svg><script>document.title=\"PWNED\"</script>",
    "| a | b |",
    "two\nlines\r\n|---|---|",
    "\x1b[2J\x1b]0;title\x07 \r\x08 \x7f esc",
    "\"]; x [label=\"",
    "\"]; evil [label=\"x\", shape=box]; x -> y [label=\"",
    "\\N \\G \\L \\n ends in a backslash \\",
    "`code` *em* _u_ [link](javascript:alert(1)) ![i](x) # h",
    "&amp; ' \" < > | $ # ` ~ ! @ % ^ & * ( ) = + ; : , . ? / \\",
    // U+202E (right-to-left override), U+009B (CSI, a C1 control), then plain UTF-8 text.
    "\u202e"
    "evil\u202c \u009b"
    "31m n\u00efc\u00f8"
    "d\u00e9 \u540d",
};

/// `sample()` with every model string (the model's name, its inputs and outputs, layer, node and
/// tensor names, a failure's why) replaced by a hostile one (distinct: the payload and a number).
json hostileSample() {
  json r = sample();
  std::map<std::string, std::string> rename;
  auto hostile = [&](const std::string& old) {
    auto it = rename.find(old);
    if (it != rename.end()) return it->second;
    std::string name =
        kHostile[rename.size() % kHostile.size()] + " #" + std::to_string(rename.size());
    rename.emplace(old, name);
    return name;
  };
  for (json& v : r["model"]["inputs"])
    hostile(v["name"]);
  for (json& v : r["model"]["outputs"])
    hostile(v["name"]);
  for (json& x : r["results"])
    for (json& l : x["layers"])
      hostile(l["layer"]);
  for (json& p : r["partition"]["partitions"])
    for (json& n : p["nodes"])
      hostile(n);
  for (json& t : r["partition"]["transfers"])
    hostile(t["tensor"]);
  for (json& n : r["partition"]["nodes"])
    hostile(n["node"]);
  // Every string equal to one of those names, wherever it is, becomes its hostile name.
  std::function<void(json&)> walk = [&](json& j) {
    if (j.is_string()) {
      auto it = rename.find(j.get<std::string>());
      if (it != rename.end()) j = it->second;
    }
    if (j.is_structured())
      for (json& x : j)
        walk(x);
  };
  walk(r);
  r["model"]["name"] = kHostile[2] + kHostile[0];
  r["system"]["host"] = kHostile[5];
  for (json& x : r["results"])
    if (x["status"] != "ok") x["why"] = kHostile[4] + kHostile[1];
  return r;
}

/// Whether `s` holds a control character other than a newline (and tab): ESC, BEL, CR, DEL, and
/// with `c1` the C1 controls (U+0080..U+009F: terminals act on them; markup and DOT show them).
bool hasControl(std::string_view s, bool c1 = false) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;
    if (c1 && c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0)
      return true;
  }
  return false;
}

/// The `|` that separate a Markdown table row's cells: those not escaped by a backslash.
size_t cellSeparators(std::string_view row) {
  size_t n = 0, backslashes = 0;
  for (char c : row) {
    if (c == '|' && backslashes % 2 == 0) ++n;
    backslashes = c == '\\' ? backslashes + 1 : 0;
  }
  return n;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);)
    out.push_back(l);
  return out;
}

/// Checks that every row of every Markdown table has its header's number of cells; returns the
/// number of tables and rows seen.
std::pair<size_t, size_t> checkTables(const std::string& md) {
  std::vector<std::string> ls = lines(md);
  size_t tables = 0, rows = 0;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].empty() || ls[i][0] != '|') continue;
    size_t head = cellSeparators(ls[i]);
    ++tables;
    for (; i < ls.size() && !ls[i].empty() && ls[i][0] == '|'; ++i, ++rows)
      EXPECT_EQ(cellSeparators(ls[i]), head) << "line " << i + 1 << ": " << ls[i];
  }
  return {tables, rows};
}

} // namespace

TEST(ReportHostileNames, HtmlShowsThemAsText) {
  json r = hostileSample();
  std::string html = bench::renderHtml(r);
  std::string lower = html;
  for (char& c : lower)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_FALSE(contains(lower, "<script"));
  EXPECT_FALSE(contains(lower, "<img"));
  EXPECT_FALSE(contains(lower, "<iframe"));
  EXPECT_FALSE(hasControl(html));
  // Every tag is one the renderer writes: a name added no element.
  static const std::set<std::string> tags = {
      "!DOCTYPE", "html",   "head", "meta", "title", "style",  "body",    "header", "h1",
      "h2",       "h3",     "p",    "nav",  "a",     "main",   "section", "div",    "table",
      "thead",    "tbody",  "tr",   "th",   "td",    "figure", "svg",     "g",      "rect",
      "line",     "circle", "text", "path", "defs",  "marker", "footer"};
  std::regex tag("<\\s*/?\\s*([!A-Za-z][A-Za-z0-9-]*)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator();
       ++it)
    EXPECT_TRUE(tags.count((*it)[1].str())) << "unexpected <" << (*it)[1] << ">";
  // The page's title is the one the renderer wrote, the payload inside it as text.
  std::string title = "Triad benchmark: " + r["model"]["name"].get<std::string>() + " on " +
                      r["system"]["host"].get<std::string>();
  EXPECT_TRUE(contains(html, "<title>" + escape::html(title) + "</title>")) << html.substr(0, 600);
  std::string outsideCharts = html;
  for (const std::string& svg : test::svgElements(html))
    outsideCharts.erase(outsideCharts.find(svg), svg.size());
  EXPECT_EQ(count(outsideCharts, "<title"), 1u); // the page's only
  EXPECT_TRUE(contains(html, "&lt;script&gt;document.title=&quot;PWNED&quot;&lt;/script&gt;"));
  EXPECT_TRUE(
      contains(html, "&lt;img src=x onerror=&quot;document.title=&#39;PWNED&#39;&quot;&gt;"));
  EXPECT_TRUE(contains(html, "\\x1b[2J\\x1b]0;title\\x07")); // ESC, BEL: visible, inert
  // The charts stay well-formed XML and show the names.
  std::vector<std::string> svgs = test::svgElements(html);
  EXPECT_EQ(svgs.size(), test::svgElements(bench::renderHtml(sample())).size());
  for (const std::string& s : svgs)
    EXPECT_EQ(test::xmlProblem(s), "") << s.substr(0, 300);
  EXPECT_TRUE(contains(html, "&lt;/title&gt;&lt;/svg&gt;&lt;script&gt;"));
}

TEST(ReportHostileNames, MarkdownTablesKeepTheirShape) {
  json r = hostileSample();
  std::string md = bench::renderMarkdown(r);
  std::string plain = bench::renderMarkdown(sample());
  EXPECT_FALSE(hasControl(md));
  // A name is one line: the document has as many lines as with plain names.
  std::vector<std::string> ls = lines(md), plainLines = lines(plain);
  EXPECT_EQ(ls.size(), plainLines.size());
  // Every row of a table has its header's number of cells.
  auto [tables, rows] = checkTables(md);
  EXPECT_GE(tables, 12u);
  EXPECT_GE(rows, 80u);
  // No raw HTML: every '<' is escaped.
  for (size_t p = md.find('<'); p != std::string::npos; p = md.find('<', p + 1)) {
    size_t backslashes = 0;
    while (backslashes < p && md[p - 1 - backslashes] == '\\')
      ++backslashes;
    EXPECT_EQ(backslashes % 2, 1u) << md.substr(p > 20 ? p - 20 : 0, 60);
  }
  EXPECT_TRUE(contains(md, escape::markdown(kHostile[0])));
  EXPECT_TRUE(contains(md, "\\| a \\| b \\|"));
}

TEST(ReportHostileNames, HistoryComparisonTableKeepsItsShape) {
  // B: every result that was ok failed, with a hostile why; the same with plain text.
  auto failAll = [](json r, const std::string& why) {
    r["run"]["id"] = "second";
    for (json& x : r["results"])
      if (x["status"] == "ok") {
        x["status"] = "failed";
        x["why"] = why;
      }
    return r;
  };
  json a = hostileSample(), b = failAll(a, kHostile[3] + kHostile[4] + kHostile[0]);
  bench::Comparison c = bench::compareRuns(a, b, 0.05);
  bench::Comparison plain = bench::compareRuns(sample(), failAll(sample(), "x"), 0.05);
  EXPECT_TRUE(c.regressed);
  EXPECT_FALSE(hasControl(c.text));
  EXPECT_EQ(lines(c.text).size(), lines(plain.text).size()) << c.text;
  auto [tables, rows] = checkTables(c.text);
  EXPECT_EQ(tables, 2u);
  EXPECT_GE(rows, 14u);
  EXPECT_TRUE(contains(c.text, escape::markdown(kHostile[0]))) << c.text;
}

namespace {

/// x -> Gemm -> Relu -> Relu -> y, every name (graph, values, constants, nodes) taken from `names`.
ir::Graph namedGraph(const std::vector<std::string>& names) {
  using namespace ir;
  auto name = [&](size_t i) { return names[i % names.size()] + " #" + std::to_string(i); };
  Graph g;
  g.name = name(7);
  g.opset = 17;
  TensorType t23{DType::F32, {2, 3}, {}}, t24{DType::F32, {2, 4}, {}};
  Value* x = g.addInput(name(6), t23);
  Value* w =
      g.addConstant(name(8), Tensor::fromVector<float>({4, 3}, std::vector<float>(12, 0.5f)));
  Value* b = g.addConstant(name(1), Tensor::fromVector<float>({4}, {0, 1, 0, 1}));
  auto attrs = std::make_shared<GemmAttrs>();
  attrs->transB = true;
  Node* gemm = g.addNode(OpKind::Gemm, name(0) + name(4), {x, w, b}, attrs, {name(5)}, {t24});
  Node* r1 = g.addNode(OpKind::Relu, name(2), {gemm->output(0)}, nullptr, {name(3)}, {t24});
  Node* r2 = g.addNode(OpKind::Relu, name(11), {r1->output(0)}, nullptr, {name(9)}, {t24});
  g.addOutput(r2->output(0));
  return g;
}

/// DOT text with every quoted string emptied (escapes inside honoured): what is left is the
/// statements' structure. Fails the test where a string is unterminated or spans lines.
std::string dotSkeleton(const std::string& dot) {
  std::string out;
  for (size_t i = 0; i < dot.size(); ++i) {
    if (dot[i] != '"') {
      out += dot[i];
      continue;
    }
    size_t k = i + 1;
    for (; k < dot.size() && dot[k] != '"'; ++k) {
      EXPECT_NE(dot[k], '\n') << "a DOT string spans lines at byte " << k;
      if (dot[k] == '\\') ++k; // an escaped character
    }
    EXPECT_LT(k, dot.size()) << "unterminated DOT string";
    out += "\"\"";
    i = k;
  }
  return out;
}

/// The statements of a DOT skeleton: nodes ("ID [...]" with an ID from `ids`) and edges ("->").
std::pair<size_t, size_t> dotStatements(const std::string& skeleton) {
  size_t nodes = 0, edges = 0;
  std::regex node("^\\s*(v|n|in|out|legend)[0-9]+ \\[[^\\[\\]]*\\];$");
  std::regex edge("^\\s*(v|n|in)[0-9]+ -> (n|out)[0-9]+( \\[[^\\[\\]]*\\])?;$");
  for (const std::string& l : lines(skeleton)) {
    if (std::regex_match(l, node))
      ++nodes;
    else if (std::regex_match(l, edge))
      ++edges;
    else
      EXPECT_TRUE(std::regex_match(l, std::regex("^\\s*(digraph \"\" \\{|\\}|subgraph "
                                                 "cluster_[a-z0-9]+ \\{|[a-z]+ \\[[^\\[\\]]*"
                                                 "\\];|([a-z]+=[^;]*; ?)+)$")))
          << "unexpected DOT line: " << l;
  }
  return {nodes, edges};
}

/// Where Graphviz is installed: the nodes and edges `dot` reads from `dot` (-1, -1 without it).
std::pair<int, int> graphvizCounts(const std::string& dot, const std::string& tag) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) return {-1, -1};
  fs::path d = freshDir("dot-" + tag);
  std::ofstream(d / "g.dot", std::ios::binary) << dot;
  std::string cmd =
      fmt::format("dot -Tplain '{}' > '{}' 2>&1", (d / "g.dot").string(), (d / "g.plain").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(d / "g.plain");
  int nodes = 0, edges = 0;
  for (const std::string& l : lines(slurp(d / "g.plain"))) {
    nodes += l.rfind("node ", 0) == 0;
    edges += l.rfind("edge ", 0) == 0;
  }
  fs::remove_all(d);
  return {nodes, edges};
}

} // namespace

TEST(ReportHostileNames, DotExportIsOneStatementPerNode) {
  ir::Graph g = namedGraph(kHostile);
  std::string dot = ir::toDot(g);
  std::string skeleton = dotSkeleton(dot);
  for (const char* bad : {"evil", "PWNED", "script", "label=\"\"]; x"})
    EXPECT_FALSE(contains(skeleton, bad)) << skeleton;
  // x, Gemm, Relu, Relu, y; x->Gemm, Gemm->Relu, Relu->Relu, Relu->y.
  EXPECT_EQ(dotStatements(skeleton), (std::pair<size_t, size_t>{5, 4})) << dot;
  EXPECT_FALSE(hasControl(dot));
  // Each name is in its label, escaped.
  auto inLabel = [](const std::string& n) {
    std::string q = escape::dotString(n);
    return q.substr(1, q.size() - 2);
  };
  for (const ir::Value* v : g.inputs())
    EXPECT_TRUE(contains(dot, inLabel(v->name()))) << dot;
  for (const auto& n : g.nodes())
    EXPECT_TRUE(contains(dot, inLabel(n->name()))) << dot;
  EXPECT_TRUE(contains(dot, "digraph " + escape::dotString(g.name) + " {"));
  auto [nodes, edges] = graphvizCounts(dot, "ir");
  if (nodes >= 0) {
    EXPECT_EQ(nodes, 5) << dot;
    EXPECT_EQ(edges, 4) << dot;
  }
}

TEST(ReportHostileNames, PartitionDotAndTextKeepTheirShape) {
  ir::TargetRegistry reg;
  reg.add(ir::makeInterpreterTarget());
  ir::partition::Options o;
  o.mode = ir::partition::Mode::Single;
  o.targets = {"interp"};
  o.costs.devices["interp"] = {1, 2, 2};
  ir::Graph g = namedGraph(kHostile), plainG = namedGraph({"a", "b", "c"});
  ir::partition::Plan p = ir::partition::plan(g, reg, o);
  ir::partition::Plan plainP = ir::partition::plan(plainG, reg, o);

  std::string dot = ir::partition::planDot(p, g);
  std::string skeleton = dotSkeleton(dot);
  for (const char* bad : {"evil", "PWNED", "script"})
    EXPECT_FALSE(contains(skeleton, bad)) << skeleton;
  EXPECT_EQ(skeleton, dotSkeleton(ir::partition::planDot(plainP, plainG)));
  // x, y, 3 nodes, 1 legend entry; x->Gemm (cut: off the CPU), Gemm->Relu, Relu->Relu, Relu->y.
  EXPECT_EQ(dotStatements(skeleton), (std::pair<size_t, size_t>{6, 4})) << dot;
  EXPECT_FALSE(hasControl(dot));
  auto [nodes, edges] = graphvizCounts(dot, "plan");
  if (nodes >= 0) {
    EXPECT_EQ(nodes, 6) << dot;
    EXPECT_EQ(edges, 4) << dot;
  }

  // The terminal text: no control characters, one line per thing as with plain names.
  std::string text = ir::partition::planText(p, g);
  EXPECT_FALSE(hasControl(text, true));
  EXPECT_EQ(lines(text).size(), lines(ir::partition::planText(plainP, plainG)).size()) << text;
  EXPECT_TRUE(contains(text, "two\\x0alines\\x0d\\x0a|---|---|")) << text;
}

TEST(ReportHostileNames, IrTextFormIsOneLinePerValueAndNode) {
  ir::Graph g = namedGraph(kHostile);
  std::string text = ir::printGraph(g);
  EXPECT_FALSE(hasControl(text, true));
  std::vector<std::string> ls = lines(text);
  ASSERT_EQ(ls.size(), 9u) << text; // graph, input, 2 constants, 3 nodes, output, }
  EXPECT_EQ(ls[0].rfind("graph \"", 0), 0u);
  EXPECT_EQ(ls[1].rfind("  input %\"", 0), 0u);
  EXPECT_EQ(ls[2].rfind("  const %\"", 0), 0u);
  EXPECT_EQ(ls[3].rfind("  const %\"", 0), 0u);
  for (size_t i = 4; i < 7; ++i)
    EXPECT_EQ(ls[i].rfind("  %\"", 0), 0u) << ls[i];
  EXPECT_EQ(ls[7].rfind("  output %\"", 0), 0u);
  EXPECT_EQ(ls[8], "}");
  // A quoted name ends at its closing quote: the rest of the line is the printer's.
  EXPECT_TRUE(
      std::regex_search(ls[4], std::regex("^  %\"([^\"\\\\]|\\\\.)*\": f32\\[2,4\\] = Gemm\\(")))
      << ls[4];
}
