// Files Triad loads back as code or as something a driver runs (compiled-model libraries,
// OpenCL program binaries, Verilator builds) must be Triad's own: a cache folder that another
// user can write is a way to run their code in our process. Every cache that loads such files
// goes through here:
//
// - makePrivateDir creates a cache folder: each folder it creates is mode 0700. An existing
//   folder is left as it is, and trusted only if it passes trustedDir.
// - trustedDir: a folder is trusted when it is owned by the effective user (geteuid()) and
//   neither its group nor others may write it.
// - trustedForLoading / readTrustedFile: a file is trusted when it is a regular file (not a
//   symbolic link) owned by the effective user, writable by neither its group nor others, in a
//   trusted folder (its parent; folders above it are not checked).
//
// An untrusted entry is never loaded: the cache treats it as absent, builds again and, where its
// folder is trusted, replaces the entry atomically with a file of its own (writeTempFile,
// makePrivateFile, publishFile). A refusal comes with the reason, for a warning or the build
// statistics. POSIX only (stat, geteuid).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace triad {

/// Whether only the effective user can change `dir`: a folder (symbolic links followed) owned by
/// geteuid(), not writable by its group or others. Otherwise false and the reason in `*why`
/// (a missing folder is untrusted too).
bool trustedDir(const std::filesystem::path& dir, std::string* why = nullptr);

/// Whether nobody but this user (or root) can swap `dir` for another folder: every folder above
/// it is owned by geteuid() or root and not writable by its group or others, unless sticky (as
/// /tmp is: a shared TRIAD_CACHE_DIR under /tmp is safe, one under another user's folder is not).
/// Otherwise false and the reason in `*why`.
bool trustedAncestors(const std::filesystem::path& dir, std::string* why = nullptr);

/// Whether `file` may be loaded: a regular file, not a symbolic link, owned by geteuid(), not
/// writable by its group or others, whose folder passes trustedDir. Otherwise false and the
/// reason in `*why` (a missing file is untrusted: "does not exist"). Callers that read the file
/// themselves should prefer readTrustedFile, which checks the file it has opened.
bool trustedForLoading(const std::filesystem::path& file, std::string* why = nullptr);

enum class TrustedRead {
  Ok,        // `*bytes` holds the whole file
  Missing,   // no such file
  Untrusted, // the file or its folder fails the checks of trustedForLoading (`*why` says which)
  Unreadable // it exists but cannot be opened or read (`*why` says why)
};

/// Reads `file` whole into `*bytes` if it passes the checks of trustedForLoading. The checks of
/// the file are made on the descriptor that is then read (open with O_NOFOLLOW, fstat), so the
/// file cannot be swapped between the check and the read.
TrustedRead readTrustedFile(const std::filesystem::path& file, std::string* bytes,
                            std::string* why = nullptr);

/// Creates `dir` and its missing parents, each folder it creates with mode 0700 (whatever the
/// umask); existing folders are not changed. Throws Error(Io) naming `what` ("the OpenCL binary
/// cache"), the path and the system's reason when it cannot. Returns trustedDir(dir, why): an
/// existing folder that is not the user's own, or that its group or others can write, is not to
/// be trusted (nothing loaded from it, nothing written to it).
bool makePrivateDir(const std::filesystem::path& dir, std::string_view what = "the folder",
                    std::string* why = nullptr);

/// Makes `file` (a file Triad has just written, e.g. the temporary of writeTempFile before
/// publishFile) mode 0600, so that trustedForLoading accepts it whatever the umask. Throws
/// Error(Io) when it cannot.
void makePrivateFile(const std::filesystem::path& file);

} // namespace triad
