// The benchmark report (docs/report-schema.md, `triad-bench/1`) rendered for people: Markdown
// with real tables, and one self-contained HTML page (no external CSS, JS or fonts; inline SVG
// charts) that opens offline. Renderers accept partial reports (a run without GPU, FPGA or
// partition sections, results skipped or failed with their `why`) and escape every text taken
// from the JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace triad::bench {

/// The schema version this code writes and reads.
inline constexpr const char* kReportSchema = "triad-bench/1";

std::string renderMarkdown(const nlohmann::json& report);
/// One self-contained page: no external CSS/JS/fonts, inline SVG charts.
std::string renderHtml(const nlohmann::json& report);

/// Writes DIR/report.json, DIR/report.md, DIR/report.html atomically (each temp file + rename);
/// creates DIR. All three are rendered and written to temporary files before the first rename,
/// so a failure (an unwritable folder, a full disk) leaves the earlier files as they were.
/// Throws triad::Error (Io) naming the file at fault.
void writeReportFiles(const std::filesystem::path& dir, const nlohmann::json& report);

/// Checks that `report` is a `triad-bench/1` report: an object with that schema and a run id.
/// Throws triad::Error: Io when it is not a benchmark report at all, Unsupported when it is one
/// of another schema version. `what` names it in the message (a path or a run id).
void checkReport(const nlohmann::json& report, const std::string& what);

/// Reads and checks a report.json (Io: missing, unreadable or not JSON; see checkReport).
nlohmann::json readReportFile(const std::filesystem::path& path);

} // namespace triad::bench
