// The benchmark report renderers (bench/Report.h) on tests/data/bench_report_sample.json: the
// tables and numbers in Markdown and HTML, the inline SVG charts (present, titled, well-formed),
// escaping, partial and malformed reports, and atomic report files.
#include "XmlCheck.h"
#include "bench/Report.h"
#include "bench/ReportCharts.h"
#include "bench/ReportUtil.h"
#include "bench/Svg.h"
#include "ir/Diagnostics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
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
  EXPECT_EQ(bench::svg::escape("a<&\"'>b"), "a&lt;&amp;&quot;&#39;&gt;b");
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
