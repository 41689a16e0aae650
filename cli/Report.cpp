// triad report: re-render a benchmark report (docs/report-schema.md), list the runs in the
// SQLite history, and compare two runs (flagging regressions).
#include "bench/Report.h"
#include "bench/History.h"
#include "cli/Commands.h"
#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <filesystem>

namespace triad::cli {

namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string report;
  std::string html, md;
  std::string db;
  bool list = false;
  bool add = false;
  std::vector<std::string> compare;
  double threshold = 0.05;
  bool failOnRegression = false;
};

fs::path dbPath(const ReportOptions& o) {
  return o.db.empty() ? bench::defaultDbPath() : fs::path(o.db);
}

/// A report.json path, or a run id (or a unique prefix of one) in the history.
nlohmann::json loadReport(const std::string& spec, const ReportOptions& o) {
  std::error_code ec;
  if (fs::is_regular_file(spec, ec)) return bench::readReportFile(spec);
  bool looksLikePath = spec.find('/') != std::string::npos || fs::path(spec).extension() == ".json";
  if (looksLikePath || fs::exists(spec, ec)) return bench::readReportFile(spec); // names the file
  fs::path db = dbPath(o);
  if (!fs::exists(db, ec))
    fail(ErrorKind::Io, "'{}' is neither a report file nor a run id: there is no history at '{}'",
         spec, db.string());
  return bench::loadRun(db, spec);
}

int runReport(const ReportOptions& o) {
  int modes = int(!o.report.empty()) + int(o.list) + int(!o.compare.empty());
  if (modes != 1)
    fail(ErrorKind::Usage, "give one of: a REPORT (file or run id), --list, or --compare A B");
  if ((!o.html.empty() || !o.md.empty() || o.add) && o.report.empty())
    fail(ErrorKind::Usage, "--html, --md and --add take a REPORT: give one");

  if (o.list) {
    fs::path db = dbPath(o);
    std::vector<nlohmann::json> runs = bench::listRuns(db);
    if (runs.empty()) {
      fmt::print("no runs in {}\n", db.string());
      return 0;
    }
    fmt::print("{:<24} {:<21} {:<20} {:<10} {:<16} {:>7}\n", "ID", "STARTED", "MODEL", "COMMIT",
               "HOST", "RESULTS");
    // The history's text (model names above all) is untrusted: terminalText (escape::printable).
    auto t = [](const nlohmann::json& r, const char* key) {
      return terminalText(r.value(key, std::string()));
    };
    for (const nlohmann::json& r : runs)
      fmt::print("{:<24} {:<21} {:<20} {:<10} {:<16} {:>7}\n", t(r, "id"), t(r, "started"),
                 t(r, "model"), t(r, "commit"), t(r, "host"), r.value("results", 0));
    fmt::print("{} run{} in {}\n", runs.size(), runs.size() == 1 ? "" : "s", db.string());
    return 0;
  }

  if (!o.compare.empty()) {
    nlohmann::json a = loadReport(o.compare[0], o);
    nlohmann::json b = loadReport(o.compare[1], o);
    bench::Comparison c = bench::compareRuns(a, b, o.threshold);
    fmt::print("{}", terminalText(c.text));
    return c.regressed && o.failOnRegression ? 1 : 0;
  }

  nlohmann::json report = loadReport(o.report, o);
  if (o.add) {
    fs::path db = dbPath(o);
    bench::appendRun(db, report);
    fmt::print("added run {} to {}\n", terminalText(report["run"]["id"].get<std::string>()),
               db.string());
  }
  if (o.html.empty() && o.md.empty()) {
    if (o.add) return 0;
    fmt::print("{}", terminalText(bench::renderMarkdown(report)));
    return 0;
  }
  if (!o.md.empty()) {
    frontend::writeFileAtomic(o.md, bench::renderMarkdown(report));
    fmt::print("wrote {}\n", o.md);
  }
  if (!o.html.empty()) {
    frontend::writeFileAtomic(o.html, bench::renderHtml(report));
    fmt::print("wrote {}\n", o.html);
  }
  return 0;
}

} // namespace

Action addReport(CLI::App& app, const ir::TargetRegistry&) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Render a benchmark report, list the benchmark history, or compare two runs");
  cmd->add_option("report", o->report,
                  "A report.json written by triad bench, or a run id in the history (prints "
                  "Markdown unless --html/--md)");
  cmd->add_option("--html", o->html, "Write the report as one self-contained HTML page");
  cmd->add_option("--md", o->md, "Write the report as Markdown");
  cmd->add_option("--db", o->db,
                  "The SQLite history (default: $XDG_DATA_HOME/triad/bench.db, else "
                  "~/.local/share/triad/bench.db)");
  cmd->add_flag("--list", o->list, "List the runs in the history");
  cmd->add_flag("--add", o->add,
                "Append REPORT (a report.json) to the history, as triad bench does after a run");
  cmd->add_option("--compare", o->compare,
                  "Compare run A (before) with run B (after): run ids or report.json files")
      ->expected(2);
  cmd->add_option("--threshold", o->threshold,
                  "Relative slow-down flagged as a regression by --compare (default 0.05 = 5%)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_flag("--fail-on-regression", o->failOnRegression,
                "With --compare: exit with status 1 when a regression is flagged");
  return [o] { return runReport(*o); };
}

} // namespace triad::cli
