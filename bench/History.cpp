#include "bench/History.h"
#include "bench/Report.h"
#include "bench/ReportUtil.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>

namespace triad::bench {

namespace fs = std::filesystem;
using namespace detail;

namespace {

constexpr int kDbVersion = 1; // PRAGMA user_version of the schema below

constexpr const char kSchemaSql[] = R"(
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  started TEXT,
  model TEXT,
  model_sha256 TEXT,
  triad_commit TEXT,
  host TEXT,
  report TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
  run_id TEXT NOT NULL REFERENCES runs(id),
  target TEXT,
  kind TEXT,
  batch INTEGER,
  status TEXT,
  why TEXT,
  p50_ms REAL,
  mean_ms REAL,
  throughput_per_s REAL,
  top1 REAL,
  max_abs_err REAL
);
CREATE INDEX IF NOT EXISTS results_by_run ON results(run_id);
PRAGMA user_version = 1;
)";

class Stmt;

/// An open database; every failure throws triad::Error naming the file.
class Db {
public:
  Db(const fs::path& path, bool write) : path_(path) {
    // Readers open read-write too (never creating; SQLite falls back to read-only where the file
    // is not writable): a writer killed mid-transaction leaves a hot journal, which only a
    // connection that may write can roll back; a read-only one fails with "attempt to write a
    // readonly database".
    int flags = SQLITE_OPEN_READWRITE | (write ? SQLITE_OPEN_CREATE : 0);
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    // Owned from here on: if this constructor throws below, ~Db does not run but db_'s deleter
    // does.
    db_.reset(db);
    if (rc != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      db_.reset();
      if (!write && !fs::exists(path))
        fail(ErrorKind::Io, "no benchmark history at '{}' (run triad bench first, or pass --db)",
             path.string());
      fail(ErrorKind::Io, "cannot open the benchmark history '{}': {}", path.string(), msg);
    }
    sqlite3_busy_timeout(db, 10000);
    // The default of a rollback journal, stated: a committed run is on disk before COMMIT returns.
    if (write) exec("PRAGMA synchronous = FULL");
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  /// Runs fixed SQL (a literal: every value goes through Stmt's bound parameters).
  template <size_t N> void exec(const char (&sql)[N]) {
    char* err = nullptr;
    if (sqlite3_exec(get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(get());
      sqlite3_free(err);
      failHere(msg);
    }
  }
  [[noreturn]] void failHere(const std::string& msg) const {
    fail(ErrorKind::Io, "benchmark history '{}': {}", path_.string(), msg);
  }
  [[noreturn]] void failHere() const { failHere(sqlite3_errmsg(get())); }
  sqlite3* get() const { return db_.get(); }
  const fs::path& path() const { return path_; }

private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close(db); }
  };
  fs::path path_;
  std::unique_ptr<sqlite3, Close> db_;
};

/// A prepared statement. Its SQL is a literal: a value (a run id, a model or layer name, an error
/// message: text from the report, untrusted) is never spliced into it but bound with bind().
class Stmt {
public:
  template <size_t N> Stmt(Db& db, const char (&sql)[N]) : db_(db) {
    if (sqlite3_prepare_v2(db.get(), sql, -1, &st_, nullptr) != SQLITE_OK) db.failHere();
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void bind(int i, const std::string& s) {
    check(sqlite3_bind_text(st_, i, s.data(), int(s.size()), SQLITE_TRANSIENT));
  }
  void bind(int i, std::optional<double> v) {
    check(v ? sqlite3_bind_double(st_, i, *v) : sqlite3_bind_null(st_, i));
  }
  void bindInt(int i, long long v) { check(sqlite3_bind_int64(st_, i, v)); }
  void bindNull(int i) { check(sqlite3_bind_null(st_, i)); }
  /// True while there is a row.
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.failHere();
  }
  std::string str(int col) const {
    const unsigned char* t = sqlite3_column_text(st_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(st_, col)))
             : std::string();
  }
  long long integer(int col) const { return sqlite3_column_int64(st_, col); }
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }

private:
  void check(int rc) {
    if (rc != SQLITE_OK) db_.failHere();
  }
  Db& db_;
  sqlite3_stmt* st_ = nullptr;
};

/// Rolls back unless committed.
class Transaction {
public:
  explicit Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

private:
  Db& db_;
  bool done_ = false;
};

int userVersion(Db& db) {
  Stmt st(db, "PRAGMA user_version");
  return st.step() ? int(st.integer(0)) : 0;
}

bool hasRunsTable(Db& db) {
  Stmt st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'");
  return st.step();
}

void checkVersion(Db& db) {
  int v = userVersion(db); // also the first read: fails on a file that is not a database
  if (v > kDbVersion)
    fail(ErrorKind::Unsupported,
         "benchmark history '{}' has schema version {}; this triad knows version {} (a newer "
         "triad wrote it?)",
         db.path().string(), v, kDbVersion);
}

std::string runId(const Json& report) {
  return text(*getObject(report, "run"), "id");
}

} // namespace

fs::path defaultDbPath() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return fs::path(x) / "triad" / "bench.db";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local" / "share" / "triad" / "bench.db";
  return fs::path("bench.db");
}

void appendRun(const fs::path& path, const nlohmann::json& report) {
  checkReport(report, "the report to store");
  std::string id = runId(report);
  std::string status = text(*getObject(report, "run"), "status", "complete");
  if (status != "complete")
    fail(ErrorKind::Usage, "run '{}' is {}: only complete runs are stored in the history", id,
         status);
  if (path.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      fail(ErrorKind::Io, "cannot create the folder of the benchmark history '{}': {}",
           path.string(), ec.message());
  }
  Db db(path, true);
  checkVersion(db);
  Transaction tx(db);
  db.exec(kSchemaSql);
  {
    Stmt exists(db, "SELECT 1 FROM runs WHERE id = ?");
    exists.bind(1, id);
    if (exists.step())
      fail(ErrorKind::Usage, "run '{}' is already in the benchmark history '{}'", id,
           path.string());
  }
  const Json empty = Json::object();
  const Json* model = getObject(report, "model");
  const Json* sys = getObject(report, "system");
  Stmt run(db, "INSERT INTO runs (id, started, model, model_sha256, triad_commit, host, report) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)");
  run.bind(1, id);
  run.bind(2, text(*getObject(report, "run"), "started"));
  run.bind(3, text(model ? *model : empty, "name", text(model ? *model : empty, "path")));
  run.bind(4, text(model ? *model : empty, "sha256"));
  run.bind(5, text(sys ? *sys : empty, "triad_commit"));
  run.bind(6, text(sys ? *sys : empty, "host"));
  run.bind(7, report.dump(-1, ' ', false, Json::error_handler_t::replace));
  run.step();
  Stmt res(db, "INSERT INTO results (run_id, target, kind, batch, status, why, p50_ms, mean_ms, "
               "throughput_per_s, top1, max_abs_err) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const Result& r : results(report)) {
    Stmt& one = res;
    one.reset();
    const Json* lat = getObject(*r.json, "latency_ms");
    const Json* acc = getObject(*r.json, "accuracy");
    one.bind(1, id);
    one.bind(2, r.target);
    one.bind(3, r.kind);
    one.bindInt(4, r.batch);
    one.bind(5, r.status);
    if (r.why.empty())
      one.bindNull(6);
    else
      one.bind(6, r.why);
    one.bind(7, lat ? num(*lat, "p50") : std::nullopt);
    one.bind(8, lat ? num(*lat, "mean") : std::nullopt);
    one.bind(9, num(*r.json, "throughput_per_s"));
    one.bind(10, acc ? num(*acc, "top1") : std::nullopt);
    one.bind(11, acc ? num(*acc, "max_abs_err") : std::nullopt);
    one.step();
  }
  tx.commit();
}

std::vector<nlohmann::json> listRuns(const fs::path& path) {
  Db db(path, false);
  checkVersion(db);
  std::vector<Json> out;
  if (!hasRunsTable(db)) return out;
  Stmt st(db, "SELECT r.id, r.started, r.model, r.triad_commit, r.host, "
              "(SELECT count(*) FROM results WHERE run_id = r.id) FROM runs r "
              "ORDER BY r.started, r.id");
  while (st.step())
    out.push_back({{"id", st.str(0)},
                   {"started", st.str(1)},
                   {"model", st.str(2)},
                   {"commit", st.str(3)},
                   {"host", st.str(4)},
                   {"results", st.integer(5)}});
  return out;
}

nlohmann::json loadRun(const fs::path& path, const std::string& id) {
  Db db(path, false);
  checkVersion(db);
  if (id.empty() || !hasRunsTable(db))
    fail(ErrorKind::Usage, "no run '{}' in the benchmark history '{}'", id, path.string());
  std::vector<std::pair<std::string, std::string>> found;
  {
    Stmt exact(db, "SELECT id, report FROM runs WHERE id = ?");
    exact.bind(1, id);
    if (exact.step()) found.emplace_back(exact.str(0), exact.str(1));
  }
  if (found.empty()) {
    Stmt prefix(db, "SELECT id, report FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id");
    prefix.bindInt(1, (long long)id.size());
    prefix.bind(2, id);
    while (prefix.step())
      found.emplace_back(prefix.str(0), prefix.str(1));
  }
  if (found.empty())
    fail(ErrorKind::Usage, "no run '{}' in the benchmark history '{}' (triad report --list)", id,
         path.string());
  if (found.size() > 1) {
    std::string ids;
    for (const auto& f : found)
      ids += (ids.empty() ? "" : ", ") + f.first;
    fail(ErrorKind::Usage, "run id '{}' is ambiguous in '{}': {}", id, path.string(), ids);
  }
  Json j;
  try {
    j = Json::parse(found[0].second);
  } catch (const Json::exception&) { // parse_error, or out_of_range for a number such as 1e400
    fail(ErrorKind::Io, "the stored report of run '{}' in '{}' is not JSON", found[0].first,
         path.string());
  }
  checkReport(j, fmt::format("run {} in {}", found[0].first, path.string()));
  return j;
}

namespace {

std::string change(std::optional<double> a, std::optional<double> b, bool asPercent = false) {
  auto f = [&](std::optional<double> v) {
    return !v ? std::string(kDash) : asPercent ? fmtPercent(*v, 2) : fmtNum(*v);
  };
  return f(a) + " → " + f(b);
}

std::string delta(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a == 0) return kDash;
  double d = (*b - *a) / *a;
  return fmt::format("{}{:.1f}%", d >= 0 ? "+" : "−", std::fabs(d) * 100);
}

/// Report text in a Markdown table cell (the one escaper: a model's names are untrusted).
std::string cellText(std::string_view s) {
  return escape::markdown(s);
}

struct Key {
  std::string target, kind;
  long long batch;
  bool operator<(const Key& o) const {
    return std::tie(target, kind, batch) < std::tie(o.target, o.kind, o.batch);
  }
};

} // namespace

Comparison compareRuns(const nlohmann::json& a, const nlohmann::json& b, double threshold) {
  if (!(threshold >= 0) || !std::isfinite(threshold))
    fail(ErrorKind::Usage, "--threshold must be a non-negative fraction (0.05 = 5%), not {}",
         threshold);
  std::vector<Result> ra = results(a), rb = results(b);
  std::vector<Key> order;
  std::map<Key, const Result*> ma, mb;
  for (const Result& r : ra) {
    Key k{r.target, r.kind, r.batch};
    if (ma.emplace(k, &r).second) order.push_back(k);
  }
  for (const Result& r : rb) {
    Key k{r.target, r.kind, r.batch};
    if (mb.emplace(k, &r).second && !ma.count(k)) order.push_back(k);
  }

  Comparison out;
  std::string& s = out.text;
  const Json empty = Json::object();
  auto sub = [&](const Json& r, const char* k) -> const Json& {
    const Json* o = getObject(r, k);
    return o ? *o : empty;
  };
  s += "# Benchmark comparison\n\n| | A (before) | B (after) |\n|---|---|---|\n";
  auto info = [&](const char* label, const char* obj, const char* key) {
    s += fmt::format("| {} | {} | {} |\n", label, cellText(text(sub(a, obj), key, kDash)),
                     cellText(text(sub(b, obj), key, kDash)));
  };
  info("Run", "run", "id");
  info("Started", "run", "started");
  info("Model", "model", "name");
  info("Model SHA-256", "model", "sha256");
  info("Commit", "system", "triad_commit");
  info("Host", "system", "host");
  s += '\n';
  std::string shaA = text(sub(a, "model"), "sha256"), shaB = text(sub(b, "model"), "sha256");
  if (!shaA.empty() && !shaB.empty() && shaA != shaB)
    s += "Note: the two runs measured different models (SHA-256 differ).\n\n";
  if (text(sub(a, "system"), "host") != text(sub(b, "system"), "host"))
    s += "Note: the two runs come from different hosts; times may not be comparable.\n\n";

  bool anyFpga = false;
  for (const Key& k : order) {
    auto ia = ma.find(k), ib = mb.find(k);
    if (ia != ma.end() && ib != mb.end() && getObject(*ia->second->json, "fpga") &&
        getObject(*ib->second->json, "fpga"))
      anyFpga = true;
  }
  s += "| Target | Batch | p50 (ms) | Δ p50 | Throughput (/s) | Δ throughput | Top-1 | "
       "Max abs error |";
  s += anyFpga ? " FPGA latency / II (cycles) |" : "";
  s += " Verdict |\n|---|---:|---:|---:|---:|---:|---:|---:|";
  s += anyFpga ? "---:|" : "";
  s += "---|\n";
  std::vector<std::string> flagged;
  for (const Key& k : order) {
    auto ia = ma.find(k), ib = mb.find(k);
    const Result* x = ia != ma.end() ? ia->second : nullptr;
    const Result* y = ib != mb.end() ? ib->second : nullptr;
    std::string name = k.kind == "peer" ? k.target + " (peer)" : k.target;
    std::string row = fmt::format("| {} | {} |", cellText(name), k.batch);
    std::vector<std::string> verdict;
    bool bad = false;
    if (!x || !y) {
      row += " | | | | | |";
      row += anyFpga ? " |" : "";
      verdict.push_back(!x ? "only in B" : "only in A");
    } else if (!x->ok() || !y->ok()) {
      row += fmt::format(" {} → {} | | | | | |", cellText(x->status), cellText(y->status));
      row += anyFpga ? " |" : "";
      if (x->ok()) {
        bad = true;
        verdict.push_back(fmt::format("now {}{}", y->status, y->why.empty() ? "" : ": " + y->why));
      } else {
        verdict.push_back(y->ok() ? "now ok" : "not measured in either");
      }
    } else {
      const Json &jx = *x->json, &jy = *y->json;
      auto p50a = num(sub(jx, "latency_ms"), "p50"), p50b = num(sub(jy, "latency_ms"), "p50");
      auto tpa = num(jx, "throughput_per_s"), tpb = num(jy, "throughput_per_s");
      auto t1a = num(sub(jx, "accuracy"), "top1"), t1b = num(sub(jy, "accuracy"), "top1");
      auto ea = num(sub(jx, "accuracy"), "max_abs_err"),
           eb = num(sub(jy, "accuracy"), "max_abs_err");
      row += fmt::format(" {} | {} | {} | {} | {} | {} |", change(p50a, p50b), delta(p50a, p50b),
                         change(tpa, tpb), delta(tpa, tpb), change(t1a, t1b, true), change(ea, eb));
      if (p50a && p50b && *p50b > *p50a * (1 + threshold)) {
        bad = true;
        verdict.push_back(fmt::format("slower: p50 {}", delta(p50a, p50b)));
      } else if (tpa && tpb && *tpb * (1 + threshold) < *tpa) {
        bad = true;
        verdict.push_back(fmt::format("slower: throughput {}", delta(tpa, tpb)));
      }
      if (t1a && t1b && *t1b < *t1a - 1e-12) {
        bad = true;
        verdict.push_back(fmt::format("top-1 dropped {:.2f} points", (*t1a - *t1b) * 100));
      }
      if (anyFpga) {
        const Json &fx = sub(jx, "fpga"), &fy = sub(jy, "fpga");
        auto la = num(fx, "latency_cycles"), lb = num(fy, "latency_cycles");
        auto iia = num(fx, "ii"), iib = num(fy, "ii");
        row += (la || lb) ? fmt::format(" {} / {} |", change(la, lb), change(iia, iib)) : " |";
        if (la && lb && *lb > *la * (1 + threshold)) {
          bad = true;
          verdict.push_back(fmt::format("FPGA latency {} cycles", delta(la, lb)));
        }
        if (iia && iib && *iib > *iia * (1 + threshold)) {
          bad = true;
          verdict.push_back(fmt::format("FPGA II {} cycles", delta(iia, iib)));
        }
      }
      if (verdict.empty()) {
        if (p50a && p50b && *p50b * (1 + threshold) < *p50a)
          verdict.push_back(fmt::format("faster: p50 {}", delta(p50a, p50b)));
        else
          verdict.push_back("ok");
      }
    }
    std::string v;
    for (const std::string& x2 : verdict)
      v += (v.empty() ? "" : "; ") + x2;
    if (bad) {
      out.regressed = true;
      flagged.push_back(fmt::format("{} batch {} ({})", name, k.batch, v));
      v = "**REGRESSION**: " + cellText(v);
    } else {
      v = cellText(v);
    }
    s += row + " " + v + " |\n";
  }
  s += '\n';
  if (flagged.empty()) {
    s += fmt::format("No regressions (threshold {:g}%).\n", threshold * 100);
  } else {
    s += fmt::format("**{} regression{}** (threshold {:g}%):\n\n", flagged.size(),
                     flagged.size() == 1 ? "" : "s", threshold * 100);
    for (const std::string& f : flagged)
      s += "- " + cellText(f) + "\n";
  }
  return out;
}

} // namespace triad::bench
