#include "ir/Files.h"

#include "ir/Diagnostics.h"
#include "ir/System.h"
#include "ir/TrustedFile.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace triad {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kManifest = ".triad-entry";
constexpr std::string_view kManifestHeader = "triad-cache-entry 1";

/// 8 hex digits of the host name: temporaries of other hosts (a cache on NFS) are never judged
/// by a pid of this one.
const std::string& hostTag() {
  static const std::string tag = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) buf[0] = '\0';
    return fmt::format("{:08x}", uint32_t(fnv1a(kFnvOffset, buf)));
  }();
  return tag;
}

std::string reason(int err) {
  return std::strerror(err);
}

/// The pid of a temporary of this host ("*.tmp.<host>.<pid>.<n>", maybe with an extension
/// after it; <n> is a counter or mkdtemp's letters), or 0.
pid_t tempOwner(const std::string& name) {
  size_t at = name.rfind(".tmp.");
  if (at == std::string::npos) return 0;
  std::vector<std::string> parts;
  std::istringstream rest(name.substr(at + 5));
  for (std::string part; std::getline(rest, part, '.');)
    parts.push_back(part);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (parts.size() < 3 || parts[0] != hostTag() || !digits(parts[1]) || parts[2].empty()) return 0;
  return pid_t(std::stol(parts[1]));
}

bool processGone(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

/// The whole file's size and FNV-1a hash, or false when it cannot be read.
bool sizeAndHash(const fs::path& p, uint64_t* size, uint64_t* hash) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  uint64_t h = kFnvOffset, n = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    std::streamsize k = in.gcount();
    if (k <= 0) break;
    h = fnv1a(h, std::string_view(buf, size_t(k)));
    n += uint64_t(k);
  }
  if (in.bad()) return false;
  *size = n;
  *hash = h;
  return true;
}

} // namespace

fs::path tempPathFor(const fs::path& target) {
  static std::atomic<uint64_t> counter{0};
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  return dir / fmt::format(".{}.tmp.{}.{}.{}", target.filename().string(), hostTag(), ::getpid(),
                           counter++);
}

void syncPath(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void removeStaleTemps(const fs::path& dir) {
  static std::mutex mu;
  static std::set<std::string> scanned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!scanned.insert(fs::absolute(dir).lexically_normal().string()).second) return;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (processGone(tempOwner(name))) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

fs::path makeTempDir(const fs::path& parent, std::string_view name) {
  removeStaleTemps(parent);
  std::string tmpl =
      (parent / fmt::format("{}.tmp.{}.{}.XXXXXX", name, hostTag(), ::getpid())).string();
  if (!::mkdtemp(tmpl.data()))
    fail(ErrorKind::Io, "cannot create a temporary folder in '{}': {}", parent.string(),
         reason(errno));
  return tmpl;
}

fs::path writeTempFile(const fs::path& target, std::string_view bytes) {
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  removeStaleTemps(dir);
  fs::path tmp = tempPathFor(target);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      fail(ErrorKind::Io, "cannot write '{}': folder '{}' does not exist", target.string(),
           dir.string());
    fail(ErrorKind::Io, "cannot write '{}': {}", target.string(), reason(e));
  }
  int err = 0;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0 && err == 0) {
    ssize_t k = ::write(fd, p, left);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      err = k < 0 ? errno : ENOSPC;
      break;
    }
    p += k;
    left -= size_t(k);
  }
  // Some file systems report a full disk or an I/O error only at fsync or close.
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(ErrorKind::Io, "writing '{}' failed: {}", target.string(), reason(err));
  }
  return tmp;
}

void publishFile(const fs::path& tmp, const fs::path& target) {
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(ErrorKind::Io, "cannot replace '{}': {}", target.string(), reason(e));
  }
  syncPath(target.parent_path().empty() ? fs::path(".") : target.parent_path());
}

void writeFileAtomic(const fs::path& path, std::string_view bytes) {
  publishFile(writeTempFile(path, bytes), path);
}

void writePrivateFileAtomic(const fs::path& path, std::string_view bytes) {
  fs::path tmp = writeTempFile(path, bytes);
  try {
    makePrivateFile(tmp);
  } catch (const Error&) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  publishFile(tmp, path);
}

void createDirectories(const fs::path& dir, std::string_view what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    fail(ErrorKind::Io, "cannot create {} '{}': {}", what, dir.string(),
         ec ? ec.message() : "a file of that name is in the way");
}

FileLock::FileLock(const fs::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0)
    fail(ErrorKind::Io, "cannot create the lock file '{}': {}", path.string(), reason(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd_);
    fail(ErrorKind::Io, "cannot lock '{}': {}", path.string(), reason(e));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool cacheEntryValid(const fs::path& dir, std::string* why) {
  auto bad = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  // An entry is loaded as code: only one that this user made, and nobody else can change, is
  // trusted (ir/TrustedFile.h); any other is rebuilt like a damaged one.
  std::string text, untrusted;
  switch (readTrustedFile(dir / kManifest, &text, &untrusted)) {
  case TrustedRead::Ok:
    break;
  case TrustedRead::Untrusted:
    return bad("not trusted: " + untrusted);
  case TrustedRead::Missing:
  case TrustedRead::Unreadable:
    return bad("no manifest (absent, or an interrupted build)");
  }
  std::istringstream m(text);
  std::string line;
  if (!std::getline(m, line) || line != kManifestHeader) return bad("unknown manifest format");
  int files = 0;
  while (std::getline(m, line)) {
    std::istringstream s(line);
    uint64_t size = 0, got = 0, hash = 0;
    std::string hex, name;
    if (!(s >> size >> hex) || !std::getline(s >> std::ws, name) || name.empty())
      return bad("unreadable manifest line '" + line + "'");
    if (!sizeAndHash(dir / name, &got, &hash)) return bad(name + " is missing");
    if (!trustedForLoading(dir / name, &untrusted)) return bad("not trusted: " + untrusted);
    if (got != size) return bad(fmt::format("{} has {} bytes instead of {}", name, got, size));
    if (fmt::format("{:016x}", hash) != hex) return bad(name + " does not match its hash");
    ++files;
  }
  if (files == 0) return bad("empty manifest");
  return true;
}

void sealCacheEntry(const fs::path& dir, const std::vector<std::string>& files) {
  std::string manifest = std::string(kManifestHeader) + "\n";
  for (const std::string& f : files) {
    uint64_t size = 0, hash = 0;
    if (!sizeAndHash(dir / f, &size, &hash))
      fail(ErrorKind::Io, "cannot read back '{}'", (dir / f).string());
    // Whatever the umask, nobody but this user may write what the cache will load: the file and
    // the folders between it and the entry.
    // (Executables keep their x bits.)
    for (fs::path p = dir / f; p.native().size() > dir.native().size(); p = p.parent_path()) {
      std::error_code ec;
      fs::permissions(p, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove,
                      ec);
      if (ec) fail(ErrorKind::Io, "cannot make '{}' private: {}", p.string(), ec.message());
    }
    syncPath(dir / f);
    manifest += fmt::format("{} {:016x} {}\n", size, hash, f);
  }
  writePrivateFileAtomic(dir / kManifest, manifest);
}

bool getOrBuildCacheEntry(const fs::path& root, const std::string& key,
                          const std::vector<std::string>& files, std::string_view what,
                          const std::function<void(const fs::path& tmp)>& build) {
  const fs::path dir = root / key;
  // The root is created private (0700); one that another user owns or can write is refused: they
  // could put code there for us to load, or swap an entry we build.
  std::string why;
  if (!makePrivateDir(root, what, &why) || !trustedAncestors(root, &why))
    fail(ErrorKind::Io,
         "{} '{}' is not trusted: {} (use a folder of your own: set TRIAD_CACHE_DIR)", what,
         root.string(), why);
  if (cacheEntryValid(dir)) return true;
  removeStaleTemps(root);
  FileLock lock(root / (key + ".lock"));
  if (cacheEntryValid(dir)) return true; // built by another process while we waited
  // Under the lock nobody else builds this key: a damaged entry and the folders of interrupted
  // builds (whatever their host or pid) can go.
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    fs::path aside = tempPathFor(dir);
    if (::rename(dir.c_str(), aside.c_str()) == 0) fs::remove_all(aside, ec);
  }
  const std::string prefix = "." + key + ".tmp.";
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  fs::path tmp = tempPathFor(dir);
  if (::mkdir(tmp.c_str(), 0700) != 0) // private from the start: the build happens in here
    fail(ErrorKind::Io, "cannot write {} '{}': {}", what, root.string(), reason(errno));
  try {
    build(tmp);
    sealCacheEntry(tmp, files);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  if (::rename(tmp.c_str(), dir.c_str()) != 0) {
    int e = errno;
    fs::remove_all(tmp, ec);
    fail(ErrorKind::Io, "cannot publish '{}' in {}: {}", dir.string(), what, reason(e));
  }
  syncPath(root);
  return false;
}

} // namespace triad
