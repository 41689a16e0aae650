// The benchmark history: every `triad bench` report appended to a SQLite database, listed,
// loaded back and compared (docs/report-schema.md, "The SQLite history").
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace triad::bench {

/// $XDG_DATA_HOME/triad/bench.db, else ~/.local/share/triad/bench.db (./bench.db without HOME).
std::filesystem::path defaultDbPath();

/// Appends a complete report in one transaction (creating the folder and the schema when new).
/// Throws triad::Error: Usage when the run id is already stored or the report is not complete,
/// Io when the database cannot be opened or written (it is left as it was).
void appendRun(const std::filesystem::path& db, const nlohmann::json& report);

/// One object per stored run, oldest first: id, started, model, commit, host, results (the
/// number of result rows). Io when the database does not exist or cannot be read.
std::vector<nlohmann::json> listRuns(const std::filesystem::path& db);

/// The whole stored report of run `id` (or of the only run whose id starts with `id`); throws
/// Usage when absent or ambiguous.
nlohmann::json loadRun(const std::filesystem::path& db, const std::string& id);

struct Comparison {
  std::string text; // Markdown: a header naming both runs, a table, a verdict line
  bool regressed = false;
};

/// Per (target, kind, batch) in both runs: p50, throughput, top-1 and max abs error changes from
/// `a` (before) to `b` (after); FPGA latency cycles and II where both have them. Flags a
/// regression where b's p50 is slower than a's by more than `threshold` (relative: 0.05 = 5%),
/// its throughput lower by more than `threshold`, its FPGA cycles more by more than `threshold`,
/// its top-1 lower, or a result ok in a and failed or skipped in b.
Comparison compareRuns(const nlohmann::json& a, const nlohmann::json& b, double threshold);

} // namespace triad::bench
