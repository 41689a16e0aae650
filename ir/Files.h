// Files that survive interruption (docs/reliability.md, "Faults and interruptions"). Everything
// Triad leaves on disk goes through here:
//
// - A file (an output, a report, a cache file) is written to a temporary beside its target,
//   flushed to disk (fsync) and renamed over the target, and the folder is flushed: a kill at any
//   point leaves the old file or the new one, whole, never a part.
// - A cache entry (a folder: a compiled model, a Verilator build) is built in a private folder
//   under a per-key lock and published by one rename, with a manifest written last (each file's
//   size and hash) that readers check: an entry is absent, or whole and valid; a damaged one is
//   removed and built again. The lock makes concurrent processes that need the same entry build
//   it once; the kernel releases it when its holder dies, however it dies.
// - Temporaries are named ".<target>.tmp.<host>.<pid>.<n>"; those of processes that no longer
//   run (same host, pid gone) are removed by the next writer in the same folder.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace triad {

/// A fresh temporary path beside `target`, unique among the threads, processes and hosts that
/// may write it: ".<name>.tmp.<host hash>.<pid>.<n>".
std::filesystem::path tempPathFor(const std::filesystem::path& target);

/// Writes `bytes` to `path` atomically and durably (temporary file, fsync, rename, fsync of the
/// folder). The folder must exist. Throws Error(Io) naming the path and the system's reason
/// ("No space left on device", "Read-only file system", ...); nothing is left behind then.
void writeFileAtomic(const std::filesystem::path& path, std::string_view bytes);

/// writeFileAtomic for a file that will be trusted (ir/TrustedFile.h): mode 0600 whatever the
/// umask, before it is published. The temporary is removed on failure.
void writePrivateFileAtomic(const std::filesystem::path& path, std::string_view bytes);

/// The first half of writeFileAtomic: `bytes` in a new temporary beside `target`, on disk;
/// returns its path. Publish it with publishFile, or remove it.
std::filesystem::path writeTempFile(const std::filesystem::path& target, std::string_view bytes);

/// Renames the temporary `tmp` over `target` and flushes the folder; on failure removes `tmp`
/// and throws Error(Io).
void publishFile(const std::filesystem::path& tmp, const std::filesystem::path& target);

/// fsync of a file or a folder: best effort (errors are ignored).
void syncPath(const std::filesystem::path& path);

/// create_directories that throws Error(Io) naming `what` ("the compiled-model cache"), the path
/// and the system's reason.
void createDirectories(const std::filesystem::path& dir, std::string_view what);

/// Removes the temporaries in `dir` (files or folders named "*.tmp.<host>.<pid>.<n>") of this
/// host's processes that no longer run. Errors are ignored. Scans a folder once per process.
void removeStaleTemps(const std::filesystem::path& dir);

/// A new private (0700) folder "<parent>/<name>.tmp.<host>.<pid>.XXXXXX" (mkdtemp), after
/// removing the stale temporaries in `parent`. The caller removes it when done.
std::filesystem::path makeTempDir(const std::filesystem::path& parent, std::string_view name);

/// An exclusive advisory lock (flock) on `path`, created if needed; the constructor waits for
/// it. Released by the destructor, or by the kernel when the process dies.
class FileLock {
public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

private:
  int fd_ = -1;
};

/// True when the cache entry `dir` has its manifest and every file listed there has the size
/// and hash recorded; otherwise false and the reason in `*why`.
bool cacheEntryValid(const std::filesystem::path& dir, std::string* why = nullptr);

/// Writes the manifest of `files` (relative to `dir`) into `dir` and flushes the files, the
/// manifest and the folder to disk. The last step of building an entry.
void sealCacheEntry(const std::filesystem::path& dir, const std::vector<std::string>& files);

/// The cache entry root/key: when it is there and valid, returns true (a hit). Otherwise, under
/// the lock root/key.lock, removes a damaged entry and the folders of builds that were
/// interrupted, calls `build(tmp)` to fill a fresh private folder, seals `files` in it and
/// renames it to root/key; returns false. If `build` throws, the folder is removed (`build` may
/// move it elsewhere first, to keep it for debugging). `what` names the cache in errors ("the CPU
/// target's compiled-model cache"); an uncreatable or unwritable root is Error(Io) naming it.
bool getOrBuildCacheEntry(const std::filesystem::path& root, const std::string& key,
                          const std::vector<std::string>& files, std::string_view what,
                          const std::function<void(const std::filesystem::path& tmp)>& build);

} // namespace triad
