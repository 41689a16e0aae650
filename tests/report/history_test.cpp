// The SQLite benchmark history (bench/History.h): append, list, load, compare, and failures
// that must leave the database as it was.
#include "bench/History.h"
#include "ir/Diagnostics.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace triad;

namespace {

json sample() {
  std::ifstream in(fs::path(TRIAD_SOURCE_DIR) / "tests/data/bench_report_sample.json");
  return json::parse(in);
}

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("triad-history-test-{}-{}", name, getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

void sql(const fs::path& db, const char* statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, statement, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

long long scalar(const fs::path& db, const char* query) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, query, -1, &st, nullptr);
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

/// The sample as a later run: cpu 50% slower at batch 1, fpga top-1 lower.
json slowerRun() {
  json r = sample();
  r["run"]["id"] = "20261125T090000Z-77aa";
  r["run"]["started"] = "2026-11-25T09:00:00Z";
  r["system"]["triad_commit"] = "abc1234";
  for (json& x : r["results"]) {
    if (x["target"] == "cpu" && x["batch"] == 1) {
      x["latency_ms"]["p50"] = x["latency_ms"]["p50"].get<double>() * 1.5;
      x["latency_ms"]["mean"] = x["latency_ms"]["mean"].get<double>() * 1.5;
      x["throughput_per_s"] = x["throughput_per_s"].get<double>() / 1.5;
    }
    if (x["target"] == "fpga") x["accuracy"]["top1"] = 0.9806;
  }
  return r;
}

template <typename F> ErrorKind errorOf(F f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  return ErrorKind::Internal; // no error
}

} // namespace

TEST(History, AppendListLoad) {
  fs::path d = freshDir("basic");
  fs::path db = d / "deep" / "bench.db"; // the folder is created
  json a = sample(), b = slowerRun();
  bench::appendRun(db, a);
  bench::appendRun(db, b);
  std::vector<json> runs = bench::listRuns(db);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["id"], "20261124T184617Z-3f2a");
  EXPECT_EQ(runs[0]["started"], "2026-11-24T18:46:17Z");
  EXPECT_EQ(runs[0]["model"], "digits_cnn");
  EXPECT_EQ(runs[0]["commit"], "39d707f");
  EXPECT_EQ(runs[0]["host"], "ci-1");
  EXPECT_EQ(runs[0]["results"], 12);
  EXPECT_FALSE(runs[0].contains("report"));
  EXPECT_EQ(runs[1]["commit"], "abc1234");
  EXPECT_EQ(bench::loadRun(db, "20261124T184617Z-3f2a"), a);
  EXPECT_EQ(bench::loadRun(db, "20261125"), b); // a unique prefix
  // The per-result table answers queries without parsing reports.
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM results WHERE target = 'fpga'"), 4);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM results WHERE status = 'skipped'"), 2);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), 1);
  std::string what;
  EXPECT_EQ(errorOf([&] { bench::loadRun(db, "2026"); }, &what), ErrorKind::Usage);
  EXPECT_TRUE(contains(what, "ambiguous")) << what;
  EXPECT_EQ(errorOf([&] { bench::loadRun(db, "nope"); }, &what), ErrorKind::Usage);
  EXPECT_TRUE(contains(what, "no run 'nope'")) << what;
  fs::remove_all(d);
}

TEST(History, MissingDatabase) {
  fs::path d = freshDir("missing");
  std::string what;
  EXPECT_EQ(errorOf([&] { bench::listRuns(d / "none.db"); }, &what), ErrorKind::Io);
  EXPECT_TRUE(contains(what, "none.db")) << what;
  EXPECT_FALSE(fs::exists(d / "none.db")); // reading never creates it
  EXPECT_EQ(errorOf([&] { bench::loadRun(d / "none.db", "x"); }), ErrorKind::Io);
  fs::remove_all(d);
}

TEST(History, DuplicateAndIncompleteRunsAreRefused) {
  fs::path d = freshDir("dup");
  fs::path db = d / "bench.db";
  bench::appendRun(db, sample());
  std::string what;
  EXPECT_EQ(errorOf([&] { bench::appendRun(db, sample()); }, &what), ErrorKind::Usage);
  EXPECT_TRUE(contains(what, "already")) << what;
  json interrupted = slowerRun();
  interrupted["run"]["status"] = "interrupted";
  EXPECT_EQ(errorOf([&] { bench::appendRun(db, interrupted); }), ErrorKind::Usage);
  json other = sample();
  other["schema"] = "triad-bench/9";
  other["run"]["id"] = "other";
  EXPECT_EQ(errorOf([&] { bench::appendRun(db, other); }), ErrorKind::Unsupported);
  EXPECT_EQ(bench::listRuns(db).size(), 1u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM results"), 12);
  fs::remove_all(d);
}

TEST(History, FailureMidTransactionLeavesTheDatabaseIntact) {
  fs::path d = freshDir("rollback");
  fs::path db = d / "bench.db";
  bench::appendRun(db, sample());
  // Make the insert of the second run's gpu results fail, after its run row and its cpu
  // results went in: the whole run must disappear with the transaction.
  sql(db, "CREATE TRIGGER injected BEFORE INSERT ON results WHEN NEW.target = 'gpu' "
          "AND NEW.run_id <> '20261124T184617Z-3f2a' BEGIN SELECT RAISE(ABORT, 'injected'); END");
  std::string what;
  EXPECT_EQ(errorOf([&] { bench::appendRun(db, slowerRun()); }, &what), ErrorKind::Io);
  EXPECT_TRUE(contains(what, "injected")) << what;
  EXPECT_TRUE(contains(what, db.string())) << what;
  EXPECT_EQ(bench::listRuns(db).size(), 1u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM results"), 12);
  fs::remove_all(d);
}

TEST(History, UnwritableDatabaseFailsAndStaysIntact) {
  fs::path d = freshDir("unwritable");
  // Not a database: the error names the file; the file is untouched.
  fs::path junk = d / "junk.db";
  std::ofstream(junk) << "this is not an SQLite database, just some text\n";
  std::string before = slurp(junk), what;
  EXPECT_EQ(errorOf([&] { bench::appendRun(junk, sample()); }, &what), ErrorKind::Io);
  EXPECT_TRUE(contains(what, junk.string())) << what;
  EXPECT_EQ(slurp(junk), before);
  // Its folder cannot be created (a file is in the way).
  std::ofstream(d / "file") << "x";
  EXPECT_EQ(errorOf([&] { bench::appendRun(d / "file" / "bench.db", sample()); }), ErrorKind::Io);
  // A read-only database (skipped as root, which ignores permissions).
  fs::path ro = d / "ro.db";
  bench::appendRun(ro, sample());
  fs::permissions(ro, fs::perms::owner_read);
  if (::access(ro.c_str(), W_OK) != 0) {
    EXPECT_EQ(errorOf([&] { bench::appendRun(ro, slowerRun()); }), ErrorKind::Io);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(bench::listRuns(ro).size(), 1u);
  }
  // A database from a newer triad.
  fs::path newer = d / "newer.db";
  sql(newer, "PRAGMA user_version = 7");
  EXPECT_EQ(errorOf([&] { bench::appendRun(newer, sample()); }), ErrorKind::Unsupported);
  fs::remove_all(d);
}

// A history that fails to open must close its connection: appendRun on a file that is not a
// database left an SQLite connection and its file descriptor open (`triad report --add` and
// `triad bench` on a bad --db; LeakSanitizer's finding in the sanitized suite).
TEST(History, FailedOpenClosesTheFile) {
  fs::path d = freshDir("failed-open");
  fs::path junk = d / "junk.db";
  std::ofstream(junk) << "this is not an SQLite database, just some text\n";
  auto openFiles = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator());
  };
  auto before = openFiles();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(errorOf([&] { bench::appendRun(junk, sample()); }), ErrorKind::Io);
    EXPECT_EQ(errorOf([&] { bench::listRuns(junk); }), ErrorKind::Io);
  }
  EXPECT_EQ(openFiles(), before);
  fs::remove_all(d);
}

TEST(History, WriterKilledMidTransactionLeavesAReadableDatabase) {
  fs::path d = freshDir("killed");
  fs::path db = d / "bench.db";
  bench::appendRun(db, sample());
  // A child writes a large transaction that spills into the database file (a tiny page cache),
  // then dies by SIGKILL before committing: a hot journal is left beside the database.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sqlite3* h = nullptr;
    if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) _exit(1);
    sqlite3_exec(h, "PRAGMA cache_size = 2; BEGIN", nullptr, nullptr, nullptr);
    std::string big(4000, 'x');
    for (int i = 0; i < 300; ++i) {
      std::string q = fmt::format("INSERT INTO runs (id, report) VALUES ('junk{}', '{}')", i, big);
      sqlite3_exec(h, q.c_str(), nullptr, nullptr, nullptr);
    }
    kill(getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(fs::exists(d / "bench.db-journal"));
  ASSERT_GT(fs::file_size(d / "bench.db-journal"), 0u);
  // Readers roll the journal back (a read-only connection could not: "attempt to write a
  // readonly database"); the killed run left nothing.
  std::vector<json> runs = bench::listRuns(db);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(bench::loadRun(db, "20261124T184617Z-3f2a"), sample());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE id LIKE 'junk%'"), 0);
  bench::appendRun(db, slowerRun());
  EXPECT_EQ(bench::listRuns(db).size(), 2u);
  fs::remove_all(d);
}

TEST(History, DefaultPath) {
  const char* oldXdg = std::getenv("XDG_DATA_HOME");
  std::string saved = oldXdg ? oldXdg : "";
  setenv("XDG_DATA_HOME", "/data/x", 1);
  EXPECT_EQ(bench::defaultDbPath(), fs::path("/data/x/triad/bench.db"));
  unsetenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  if (home) {
    EXPECT_EQ(bench::defaultDbPath(), fs::path(home) / ".local/share/triad/bench.db");
  }
  if (oldXdg) setenv("XDG_DATA_HOME", saved.c_str(), 1);
}

TEST(Compare, IdenticalRunsHaveNoRegression) {
  bench::Comparison c = bench::compareRuns(sample(), sample(), 0.05);
  EXPECT_FALSE(c.regressed) << c.text;
  EXPECT_TRUE(contains(c.text, "No regressions (threshold 5%)")) << c.text;
  EXPECT_TRUE(contains(c.text, "| cpu | 1 |"));
  EXPECT_TRUE(contains(c.text, "+0.0%"));
  EXPECT_TRUE(contains(c.text, "| tvm (peer) | 1 | skipped → skipped |")) << c.text;
}

TEST(Compare, SlowerAndLessAccurateAreFlagged) {
  bench::Comparison c = bench::compareRuns(sample(), slowerRun(), 0.05);
  EXPECT_TRUE(c.regressed);
  EXPECT_TRUE(contains(c.text, "**REGRESSION**: slower: p50 +50.0%")) << c.text;
  EXPECT_TRUE(contains(c.text, "top-1 dropped 0.83 points")) << c.text;
  EXPECT_TRUE(contains(c.text, "**3 regressions**")) << c.text; // cpu b1, fpga b1, fpga b8
  EXPECT_TRUE(contains(c.text, "| Commit | 39d707f | abc1234 |"));
  // The other way round: cpu faster, fpga top-1 higher: nothing to flag.
  EXPECT_FALSE(bench::compareRuns(slowerRun(), sample(), 0.05).regressed);
}

TEST(Compare, ThresholdAndStatus) {
  json a = sample(), b = slowerRun();
  for (json& x : b["results"])
    if (x["target"] == "fpga") x["accuracy"]["top1"] = 0.9889;
  EXPECT_TRUE(bench::compareRuns(a, b, 0.4).regressed);
  EXPECT_FALSE(bench::compareRuns(a, b, 0.6).regressed);
  bench::Comparison back = bench::compareRuns(b, a, 0.05);
  EXPECT_FALSE(back.regressed) << back.text;
  EXPECT_TRUE(contains(back.text, "faster: p50 −33.3%")) << back.text;
  // ok -> failed is a regression; a result only in one run is listed, not flagged.
  json failed = sample();
  failed["results"][1]["status"] = "failed";
  failed["results"][1]["why"] = "CL_OUT_OF_RESOURCES";
  failed["results"].push_back(
      {{"target", "cpu"}, {"kind", "triad"}, {"batch", 64}, {"status", "ok"}});
  bench::Comparison f = bench::compareRuns(a, failed, 0.05);
  EXPECT_TRUE(f.regressed);
  EXPECT_TRUE(contains(f.text, "now failed: CL_OUT_OF_RESOURCES")) << f.text;
  EXPECT_TRUE(contains(f.text, "only in B"));
  EXPECT_EQ(errorOf([&] { bench::compareRuns(a, a, -1); }), ErrorKind::Usage);
  // More FPGA cycles (deterministic: any growth past the threshold).
  json cycles = sample();
  for (json& x : cycles["results"])
    if (x["target"] == "fpga" && x["batch"] == 8) x["fpga"]["latency_cycles"] = 600;
  bench::Comparison cy = bench::compareRuns(a, cycles, 0.05);
  EXPECT_TRUE(cy.regressed);
  EXPECT_TRUE(
      contains(cy.text, "| 535 → 600 / 64 → 64 | **REGRESSION**: FPGA latency +12.1% cycles |"))
      << cy.text;
}
