// Files that survive interruption (ir/Files.h): atomic writes, stale temporaries, cache entries
// with manifests (valid, damaged, interrupted, failed builds) and concurrent builds of one key.
#include "ir/Diagnostics.h"
#include "ir/Files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace triad {
namespace {

namespace fs = std::filesystem;

fs::path freshDir(const std::string& name) {
  fs::path d = fs::path(TRIAD_BINARY_DIR) / "files-test-tmp" / name;
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

std::vector<std::string> namesIn(const fs::path& d) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(d))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string errorOf(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "(no error)";
}

/// The pid of a process that has exited (and been reaped).
pid_t deadPid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, nullptr, 0);
  return p;
}

TEST(Files, WriteFileAtomicReplacesWholeAndLeavesNoTemporary) {
  fs::path d = freshDir("write");
  writeFileAtomic(d / "a.txt", "first");
  writeFileAtomic(d / "a.txt", "second, longer");
  EXPECT_EQ(slurp(d / "a.txt"), "second, longer");
  EXPECT_EQ(namesIn(d), std::vector<std::string>{"a.txt"});
  // A temporary is hidden, beside its target, and unique per call.
  fs::path t1 = tempPathFor(d / "a.txt"), t2 = tempPathFor(d / "a.txt");
  EXPECT_NE(t1, t2);
  EXPECT_EQ(t1.parent_path(), d);
  EXPECT_EQ(t1.filename().string().rfind(".a.txt.tmp.", 0), 0u) << t1;
}

TEST(Files, WriteFailuresNameThePathAndTheReason) {
  fs::path d = freshDir("write-fail");
  std::ofstream(d / "file") << "x";
  ErrorKind k{};
  std::string what = errorOf([&] { writeFileAtomic(d / "file" / "y.npy", "data"); }, &k);
  EXPECT_EQ(k, ErrorKind::Io);
  EXPECT_NE(what.find((d / "file" / "y.npy").string()), std::string::npos) << what;
  // A folder where the file goes: the old folder stays, no temporary is left.
  fs::create_directories(d / "dir.json");
  what = errorOf([&] { writeFileAtomic(d / "dir.json", "{}"); }, &k);
  EXPECT_EQ(k, ErrorKind::Io);
  EXPECT_NE(what.find("Is a directory"), std::string::npos) << what;
  EXPECT_EQ(namesIn(d), (std::vector<std::string>{"dir.json", "file"}));
  what = errorOf([&] { createDirectories(d / "file" / "cache", "the test cache"); }, &k);
  EXPECT_EQ(k, ErrorKind::Io);
  EXPECT_NE(what.find("cannot create the test cache"), std::string::npos) << what;
  EXPECT_NE(what.find("Not a directory"), std::string::npos) << what;
}

TEST(Files, StaleTemporariesOfDeadProcessesAreRemoved) {
  fs::path d = freshDir("stale");
  // Ours, with this host's tag: ".x.tmp.<host>.<pid>.<n>".
  std::string mine = tempPathFor(d / "x").filename().string();
  std::string prefix = mine.substr(0, mine.rfind('.', mine.rfind('.') - 1) + 1); // up to the pid
  std::string dead = prefix + std::to_string(deadPid()) + ".0";
  std::ofstream(d / dead) << "half";
  fs::create_directories(d / (prefix + std::to_string(deadPid()) + ".XyZ123")); // mkdtemp's
  std::ofstream(d / mine) << "a live writer's"; // this process: alive
  std::string otherHost = ".y.tmp.00000000." + std::to_string(deadPid()) + ".0";
  std::ofstream(d / otherHost) << "another host's: its pid means nothing here";
  std::ofstream(d / "keep.tmp") << "not a temporary";
  writeFileAtomic(d / "z", "z"); // the first write in a folder sweeps it
  std::vector<std::string> kept{otherHost, mine, "keep.tmp", "z"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(namesIn(d), kept);
}

TEST(Files, CacheEntryIsBuiltOnceAndChecked) {
  fs::path root = freshDir("entry");
  int builds = 0;
  auto build = [&](const fs::path& tmp) {
    ++builds;
    writeFileAtomic(tmp / "model.so", "the binary");
    writeFileAtomic(tmp / "model.cpp", "the source");
  };
  EXPECT_FALSE(getOrBuildCacheEntry(root, "k1", {"model.so"}, "the test cache", build));
  EXPECT_TRUE(cacheEntryValid(root / "k1"));
  EXPECT_TRUE(getOrBuildCacheEntry(root, "k1", {"model.so"}, "the test cache", build));
  EXPECT_EQ(builds, 1);
  // Damaged (truncated, altered, missing): detected, removed and built again.
  std::string why;
  fs::resize_file(root / "k1" / "model.so", 3);
  EXPECT_FALSE(cacheEntryValid(root / "k1", &why));
  EXPECT_NE(why.find("model.so has 3 bytes instead of 10"), std::string::npos) << why;
  EXPECT_FALSE(getOrBuildCacheEntry(root, "k1", {"model.so"}, "the test cache", build));
  EXPECT_EQ(slurp(root / "k1" / "model.so"), "the binary");
  std::ofstream(root / "k1" / "model.so") << "THE BINARY";
  EXPECT_FALSE(cacheEntryValid(root / "k1", &why));
  EXPECT_NE(why.find("does not match its hash"), std::string::npos) << why;
  fs::remove(root / "k1" / "model.so");
  EXPECT_FALSE(cacheEntryValid(root / "k1", &why));
  fs::remove(root / "k1" / ".triad-entry");
  EXPECT_FALSE(cacheEntryValid(root / "k1", &why));
  EXPECT_NE(why.find("no manifest"), std::string::npos) << why;
  EXPECT_FALSE(getOrBuildCacheEntry(root, "k1", {"model.so"}, "the test cache", build));
  EXPECT_EQ(builds, 3);
  EXPECT_TRUE(cacheEntryValid(root / "k1"));
  EXPECT_EQ(namesIn(root), (std::vector<std::string>{"k1", "k1.lock"}));
}

TEST(Files, InterruptedAndFailedBuildsLeaveNoEntry) {
  fs::path root = freshDir("interrupted");
  // What a build killed by SIGKILL leaves: its private folder, half full, under any host or pid.
  fs::create_directories(root / ".k2.tmp.0badcafe.1234.0");
  std::ofstream(root / ".k2.tmp.0badcafe.1234.0" / "model.cpp") << "half";
  ErrorKind k{};
  std::string what = errorOf(
      [&] {
        getOrBuildCacheEntry(root, "k2", {"model.so"}, "the test cache", [](const fs::path& tmp) {
          writeFileAtomic(tmp / "model.cpp", "source");
          fail(ErrorKind::Usage, "the compiler failed");
        });
      },
      &k);
  EXPECT_EQ(k, ErrorKind::Usage);
  EXPECT_EQ(what, "the compiler failed");
  EXPECT_EQ(namesIn(root), std::vector<std::string>{"k2.lock"}); // the old folder went too
  // A build that does not produce a listed file is not published.
  what = errorOf(
      [&] { getOrBuildCacheEntry(root, "k2", {"model.so"}, "the test cache", [](auto&) {}); }, &k);
  EXPECT_EQ(k, ErrorKind::Io);
  EXPECT_EQ(namesIn(root), std::vector<std::string>{"k2.lock"});
  // An unwritable root is named.
  std::ofstream(root / "file") << "x";
  what = errorOf(
      [&] {
        getOrBuildCacheEntry(root / "file" / "c", "k", {"a"}, "the test cache", [](auto&) {});
      },
      &k);
  EXPECT_EQ(k, ErrorKind::Io);
  EXPECT_NE(what.find("cannot create the test cache '" + (root / "file" / "c").string()),
            std::string::npos)
      << what;
}

TEST(Files, ConcurrentBuildsOfOneKeyBuildOnce) {
  fs::path root = freshDir("concurrent");
  std::atomic<int> builds{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      bool hit = getOrBuildCacheEntry(root, "k", {"out"}, "the test cache", [&](auto& tmp) {
        ++builds;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        writeFileAtomic(tmp / "out", "built");
      });
      hits += hit;
      EXPECT_EQ(slurp(root / "k" / "out"), "built");
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(hits, 3);
  // Across processes too: a child holding the lock makes the parent wait, then hit.
  fs::path root2 = freshDir("concurrent-fork");
  pid_t pid = fork();
  if (pid == 0) {
    getOrBuildCacheEntry(root2, "k", {"out"}, "the test cache", [&](auto& tmp) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      writeFileAtomic(tmp / "out", "child");
    });
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool hit = getOrBuildCacheEntry(root2, "k", {"out"}, "the test cache",
                                  [&](auto& tmp) { writeFileAtomic(tmp / "out", "parent"); });
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(hit);
  EXPECT_EQ(slurp(root2 / "k" / "out"), "child");
}

TEST(Files, LockHolderKilledReleasesTheLock) {
  fs::path root = freshDir("killed-holder");
  pid_t pid = fork();
  if (pid == 0) {
    getOrBuildCacheEntry(root, "k", {"out"}, "the test cache", [&](auto& tmp) {
      writeFileAtomic(tmp / "out", "half");
      pause(); // killed here, mid-build
    });
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_FALSE(getOrBuildCacheEntry(root, "k", {"out"}, "the test cache",
                                    [&](auto& tmp) { writeFileAtomic(tmp / "out", "whole"); }));
  EXPECT_EQ(slurp(root / "k" / "out"), "whole");
  EXPECT_EQ(namesIn(root), (std::vector<std::string>{"k", "k.lock"}));
}

} // namespace
} // namespace triad
