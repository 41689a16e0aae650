#include "ir/TrustedFile.h"

#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace triad {

namespace fs = std::filesystem;

namespace {

bool refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

/// The checks of a file or folder that exists: owned by the effective user, not writable by its
/// group or others.
bool ownedAndPrivate(const fs::path& p, const struct stat& st, std::string_view kind,
                     std::string* why) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    return refuse(why, fmt::format("{} '{}' is owned by uid {}, not by this user (uid {})", kind,
                                   p.string(), st.st_uid, me));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refuse(why,
                  fmt::format("{} '{}' is writable by {} (mode {:04o})", kind, p.string(),
                              (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777));
  return true;
}

fs::path folderOf(const fs::path& file) {
  fs::path dir = file.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

} // namespace

bool trustedDir(const fs::path& dir, std::string* why) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    int e = errno;
    return refuse(why, fmt::format("folder '{}': {}", dir.string(), std::strerror(e)));
  }
  if (!S_ISDIR(st.st_mode)) return refuse(why, fmt::format("'{}' is not a folder", dir.string()));
  return ownedAndPrivate(dir, st, "folder", why);
}

bool trustedAncestors(const fs::path& dir, std::string* why) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return refuse(why, fmt::format("folder '{}': {}", dir.string(), ec.message()));
  const uid_t me = ::geteuid();
  for (p = p.parent_path();; p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) {
      int e = errno;
      return refuse(why, fmt::format("folder '{}': {}", p.string(), std::strerror(e)));
    }
    if (st.st_uid != me && st.st_uid != 0)
      return refuse(why, fmt::format("folder '{}' above it is owned by uid {}, who could swap it",
                                     p.string(), st.st_uid));
    // Writable by others is fine only with the sticky bit (/tmp): nobody renames what is ours.
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
      return refuse(why, fmt::format("folder '{}' above it is writable by {} (mode {:04o})",
                                     p.string(), (st.st_mode & S_IWOTH) ? "others" : "its group",
                                     st.st_mode & 07777));
    if (p == p.root_path() || p.parent_path() == p) break;
  }
  return true;
}

bool trustedForLoading(const fs::path& file, std::string* why) {
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0) {
    int e = errno;
    return refuse(why, fmt::format("file '{}': {}", file.string(), std::strerror(e)));
  }
  if (S_ISLNK(st.st_mode))
    return refuse(why, fmt::format("file '{}' is a symbolic link", file.string()));
  if (!S_ISREG(st.st_mode))
    return refuse(why, fmt::format("'{}' is not a regular file", file.string()));
  return ownedAndPrivate(file, st, "file", why) && trustedDir(folderOf(file), why);
}

TrustedRead readTrustedFile(const fs::path& file, std::string* bytes, std::string* why) {
  // O_NOFOLLOW: a symbolic link fails (ELOOP); O_NONBLOCK: a FIFO does not block the open.
  int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return TrustedRead::Missing;
    if (e == ELOOP) {
      refuse(why, fmt::format("file '{}' is a symbolic link", file.string()));
      return TrustedRead::Untrusted;
    }
    refuse(why, fmt::format("cannot open '{}': {}", file.string(), std::strerror(e)));
    return TrustedRead::Unreadable;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    refuse(why, fmt::format("cannot stat '{}': {}", file.string(), std::strerror(e)));
    return TrustedRead::Unreadable;
  }
  if (!S_ISREG(st.st_mode)) {
    refuse(why, fmt::format("'{}' is not a regular file", file.string()));
    return TrustedRead::Untrusted;
  }
  if (!ownedAndPrivate(file, st, "file", why) || !trustedDir(folderOf(file), why))
    return TrustedRead::Untrusted;
  std::string data;
  data.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      int e = errno;
      refuse(why, fmt::format("cannot read '{}': {}", file.string(), std::strerror(e)));
      return TrustedRead::Unreadable;
    }
    if (k == 0) break;
    data.append(buf, size_t(k));
  }
  if (bytes) *bytes = std::move(data);
  return TrustedRead::Ok;
}

bool makePrivateDir(const fs::path& dir, std::string_view what, std::string* why) {
  const fs::path target = dir.empty() ? fs::path(".") : dir;
  // The folders that do not exist yet, innermost first.
  std::vector<fs::path> missing;
  for (fs::path p = target; !p.empty(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 || errno != ENOENT) break; // exists (or mkdir will say why)
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) == 0) {
      // 0700 whatever the umask; a folder another process created meanwhile is left alone
      // (EEXIST below) and judged by trustedDir like any existing one.
      if (::chmod(it->c_str(), 0700) != 0) {
        int e = errno;
        fail(ErrorKind::Io, "cannot make {} '{}' private: {}", what, it->string(),
             std::strerror(e));
      }
    } else if (errno != EEXIST) {
      int e = errno;
      fail(ErrorKind::Io, "cannot create {} '{}': {}{}", what, target.string(), std::strerror(e),
           *it == target ? "" : fmt::format(" (creating '{}')", it->string()));
    }
  }
  struct stat st;
  if (::stat(target.c_str(), &st) != 0) {
    int e = errno;
    fail(ErrorKind::Io, "cannot create {} '{}': {}", what, target.string(), std::strerror(e));
  }
  if (!S_ISDIR(st.st_mode))
    fail(ErrorKind::Io, "cannot create {} '{}': a file of that name is in the way", what,
         target.string());
  return trustedDir(target, why);
}

void makePrivateFile(const fs::path& file) {
  if (::chmod(file.c_str(), 0600) != 0) {
    int e = errno;
    fail(ErrorKind::Io, "cannot make '{}' private: {}", file.string(), std::strerror(e));
  }
}

} // namespace triad
