// The program binary cache and the small file helpers the GPU target shares with its tuning
// database. An entry is one file per (source hash, build options, device, driver version):
//
//   TRIAD-CLBIN 1\n
//   <key length> <binary length> <binary FNV-1a hex>\n
//   <key text><binary bytes>
//
// The key text is stored whole, so a hash collision in the file name is a miss, not a wrong
// binary; a truncated or altered entry fails the length or checksum test and is rebuilt.
// Entries are written atomically (temporary file in the same folder, then rename), so a crash
// or a concurrent build never leaves half an entry under the final name.
//
// A binary is code the driver runs, so the cache trusts only itself (ir/TrustedFile.h): the
// folders it creates are 0700 and its entries 0600; an entry that is not the user's own, or
// that its group or others can write, or whose folder is not the user's own or is writable by
// others, is never loaded (LoadStatus::Untrusted: rebuilt, and replaced where the folder is
// trusted).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace triad::gpu {

/// 64-bit FNV-1a.
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);
std::string hex64(uint64_t v);

/// $TRIAD_CACHE_DIR when set and non-empty, else $HOME/.cache/triad (else ./.triad-cache).
std::filesystem::path defaultCacheRoot();

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, creating
/// the folder if needed (the folders it creates are private: 0700). Throws triad::Error
/// (ErrorKind::Io) on failure.
void writeFileAtomic(const std::filesystem::path& path, std::string_view bytes);

/// The whole file, or nullopt when it does not exist or cannot be read.
std::optional<std::string> readFileIfExists(const std::filesystem::path& path);

class BinaryCache {
public:
  explicit BinaryCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The key text of a program build; everything that can change the binary is in it.
  static std::string makeKey(std::string_view source, std::string_view options,
                             std::string_view deviceName, std::string_view driverVersion,
                             std::string_view platformName);

  /// The entry's file: "<name>-<hash of key>.clbin". `name` (from the model's name: untrusted)
  /// becomes an identifier of at most 48 characters (escape::identifier): no separator, no dot.
  std::filesystem::path pathFor(std::string_view name, std::string_view key) const;

  /// Untrusted: the entry or its folder fails the checks of ir/TrustedFile.h; it is not read.
  enum class LoadStatus { Hit, Miss, Corrupt, Untrusted };
  struct LoadResult {
    LoadStatus status = LoadStatus::Miss;
    std::string binary; // when Hit
    std::string why;    // when Corrupt or Untrusted
  };
  LoadResult load(std::string_view name, std::string_view key) const;

  /// Writes the entry atomically, mode 0600, creating the folder (0700) if needed; writes nothing
  /// into a folder that is not trusted (ir/TrustedFile.h). Returns false (and the reason)
  /// instead of throwing: a cache that cannot be written only costs the next run a compile.
  bool store(std::string_view name, std::string_view key, std::string_view binary,
             std::string* why = nullptr) const;

  const std::filesystem::path& dir() const { return dir_; }

private:
  std::filesystem::path dir_;
};

} // namespace triad::gpu
