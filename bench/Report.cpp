// The Markdown renderer, the report files and reading a report back.
#include "bench/Report.h"
#include "bench/ReportTables.h"
#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Files.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

namespace triad::bench {

namespace fs = std::filesystem;
using namespace detail;

namespace {

/// Text from the report made inert in Markdown (the one escaper: a model's names are untrusted).
std::string md(std::string_view s) {
  return escape::markdown(s);
}

void mdTable(std::string& out, const Table& t) {
  bool noHeader = true;
  for (const std::string& h : t.header)
    noHeader &= h.empty();
  out += '|';
  for (size_t i = 0; i < t.header.size(); ++i)
    out +=
        fmt::format(" {} |", noHeader ? std::string(i == 0 ? "Field" : "Value") : md(t.header[i]));
  out += "\n|";
  for (size_t i = 0; i < t.header.size(); ++i)
    out += i < t.numeric.size() && t.numeric[i] ? "---:|" : "---|";
  out += '\n';
  for (const auto& row : t.rows) {
    out += '|';
    for (size_t i = 0; i < t.header.size(); ++i) {
      std::string cell = i < row.size() ? md(row[i].text) : "";
      if (noHeader && i == 0) {
        cell.insert(0, "**");
        cell += "**";
      }
      out += fmt::format(" {} |", cell);
    }
    out += '\n';
  }
  out += '\n';
}

} // namespace

std::string renderMarkdown(const nlohmann::json& report) {
  std::string out = "# Triad benchmark: " + md(reportTitle(report)) + "\n\n";
  for (const Section& s : buildSections(report)) {
    out += std::string(size_t(s.level), '#') + " " + md(s.title) + "\n\n";
    for (const Block& b : s.blocks) {
      if (b.kind == Block::Paragraph)
        out += md(b.text) + "\n\n";
      else
        mdTable(out, b.table);
    }
  }
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

void checkReport(const nlohmann::json& report, const std::string& what) {
  if (!report.is_object())
    fail(ErrorKind::Io, "'{}' is not a Triad benchmark report (expected a JSON object)", what);
  auto it = report.find("schema");
  if (it == report.end() || !it->is_string())
    fail(ErrorKind::Io, "'{}' is not a Triad benchmark report (no \"schema\" string)", what);
  std::string schema = it->get<std::string>();
  if (schema.rfind("triad-bench/", 0) != 0)
    fail(ErrorKind::Io, "'{}' is not a Triad benchmark report (schema '{}', expected '{}')", what,
         schema, kReportSchema);
  if (schema != kReportSchema)
    fail(ErrorKind::Unsupported,
         "'{}' is a '{}' report; this triad reads '{}' (a newer triad wrote it?)", what, schema,
         kReportSchema);
  const Json* run = getObject(report, "run");
  const Json* id = run ? get(*run, "id") : nullptr;
  if (!id || !id->is_string() || id->get<std::string>().empty())
    fail(ErrorKind::Io, "'{}' is not a valid report: \"run.id\" is missing or not a string", what);
  if (const Json* r = get(report, "results"); r && !r->is_array())
    fail(ErrorKind::Io, "'{}' is not a valid report: \"results\" is not an array", what);
}

nlohmann::json readReportFile(const fs::path& path) {
  std::string bytes = frontend::readFile(path);
  Json j;
  try {
    j = Json::parse(bytes);
  } catch (const Json::parse_error& e) {
    fail(ErrorKind::Io, "'{}' is not JSON (parse error at byte {})", path.string(), e.byte);
  } catch (const Json::exception& e) { // out_of_range: a number such as 1e400
    fail(ErrorKind::Io, "'{}' is not JSON ({})", path.string(), e.what());
  }
  checkReport(j, path.string());
  return j;
}

void writeReportFiles(const fs::path& dir, const nlohmann::json& report) {
  checkReport(report, "the report to write");
  // Render everything first: nothing on disk changes if rendering fails.
  const std::pair<const char*, std::string> files[] = {
      {"report.md", renderMarkdown(report)},
      {"report.html", renderHtml(report)},
      // Renamed last: a new report.json means all are new. Bytes that are not UTF-8 (in a model's
      // names) become U+FFFD rather than failing the run.
      {"report.json", report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"},
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    fail(ErrorKind::Io, "cannot create the report folder '{}': {}", dir.string(),
         ec ? ec.message() : "a file of that name is in the way");
  // Something other than a file where a report goes would fail its rename half-way: refuse
  // before anything changes.
  for (const auto& [name, bytes] : files)
    if (fs::exists(dir / name, ec) && !fs::is_regular_file(dir / name, ec))
      fail(ErrorKind::Io, "cannot write '{}': something other than a file is in the way",
           (dir / name).string());
  std::vector<fs::path> temps;
  auto cleanup = [&] {
    std::error_code ignored;
    for (const fs::path& t : temps)
      fs::remove(t, ignored);
  };
  try {
    for (const auto& [name, bytes] : files)
      temps.push_back(writeTempFile(dir / name, bytes)); // on disk (fsync) before any rename
  } catch (...) {
    cleanup();
    throw;
  }
  for (size_t i = 0; i < temps.size(); ++i) {
    try {
      publishFile(temps[i], dir / files[i].first);
    } catch (...) {
      temps.erase(temps.begin(), temps.begin() + long(i));
      cleanup();
      throw;
    }
  }
}

} // namespace triad::bench
