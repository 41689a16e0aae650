#include "gpu/BinaryCache.h"

#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Files.h"
#include "ir/TrustedFile.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace triad::gpu {

namespace {

constexpr std::string_view kMagic = "TRIAD-CLBIN 1\n";

/// The program name (from the model's name: untrusted) as the readable part of a file name:
/// an identifier ([A-Za-z0-9_], no separator, no dot), at most 48 characters. Entries are told
/// apart by the hash of their key, never by this part.
std::string safeName(std::string_view name) {
  std::string s = escape::identifier(name, escape::Lang::OpenCL, "program");
  if (s.size() > 48) s.resize(48);
  return s;
}

} // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  return fmt::format("{:016x}", v);
}

fs::path defaultCacheRoot() {
  if (const char* d = std::getenv("TRIAD_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "triad";
  return fs::path(".triad-cache");
}

void writeFileAtomic(const fs::path& path, std::string_view bytes) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  makePrivateDir(dir, "the folder");   // the folders it creates are 0700 (ir/TrustedFile.h)
  triad::writeFileAtomic(path, bytes); // temporary, fsync, rename (ir/Files.h)
}

std::optional<std::string> readFileIfExists(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string BinaryCache::makeKey(std::string_view source, std::string_view options,
                                 std::string_view deviceName, std::string_view driverVersion,
                                 std::string_view platformName) {
  // The source is represented by its hash and length; the rest is kept verbatim so that an
  // entry can be checked field by field.
  return fmt::format("source {} {}\noptions {}\nplatform {}\ndevice {}\ndriver {}\n",
                     hex64(fnv1a64(source)), source.size(), options, platformName, deviceName,
                     driverVersion);
}

fs::path BinaryCache::pathFor(std::string_view name, std::string_view key) const {
  return dir_ / fmt::format("{}-{}.clbin", safeName(name), hex64(fnv1a64(key)));
}

BinaryCache::LoadResult BinaryCache::load(std::string_view name, std::string_view key) const {
  LoadResult r;
  // A binary is code the driver runs: only a file of our own, in a folder only we can write.
  std::string file, untrusted;
  switch (readTrustedFile(pathFor(name, key), &file, &untrusted)) {
  case TrustedRead::Ok:
    break;
  case TrustedRead::Missing:
  case TrustedRead::Unreadable:
    return r; // Miss
  case TrustedRead::Untrusted:
    r.status = LoadStatus::Untrusted;
    r.why = std::move(untrusted);
    return r;
  }
  auto corrupt = [&](std::string why) {
    r.status = LoadStatus::Corrupt;
    r.why = std::move(why);
    return r;
  };
  std::string_view f = file;
  if (f.substr(0, kMagic.size()) != kMagic) return corrupt("bad header");
  f.remove_prefix(kMagic.size());
  size_t eol = f.find('\n');
  if (eol == std::string_view::npos) return corrupt("truncated header");
  std::istringstream header{std::string(f.substr(0, eol))};
  size_t keyLen = 0, binLen = 0;
  std::string sum;
  if (!(header >> keyLen >> binLen >> sum)) return corrupt("unreadable header");
  f.remove_prefix(eol + 1);
  if (f.size() != keyLen + binLen)
    return corrupt(fmt::format("size {} instead of {}", f.size(), keyLen + binLen));
  if (f.substr(0, keyLen) != key) {
    r.status = LoadStatus::Miss; // a different build that hashed to the same name
    return r;
  }
  std::string_view bin = f.substr(keyLen);
  if (hex64(fnv1a64(bin)) != sum) return corrupt("checksum mismatch");
  r.status = LoadStatus::Hit;
  r.binary = std::string(bin);
  return r;
}

bool BinaryCache::store(std::string_view name, std::string_view key, std::string_view binary,
                        std::string* why) const {
  std::string entry(kMagic);
  entry += fmt::format("{} {} {}\n", key.size(), binary.size(), hex64(fnv1a64(binary)));
  entry += key;
  entry += binary;
  try {
    // The folders it creates are 0700 and the entry 0600 (whatever the umask), so that load()
    // trusts it; a folder someone else can write gets nothing (load() would refuse it anyway).
    std::string untrusted;
    if (!makePrivateDir(dir_, "the OpenCL binary cache", &untrusted)) {
      if (why) *why = fmt::format("not writing the cache entry: {}", untrusted);
      return false;
    }
    writePrivateFileAtomic(pathFor(name, key), entry);
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

} // namespace triad::gpu
