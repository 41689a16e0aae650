// SHA-256 (FIPS 180-4) of a byte string: the model's hash in `triad bench` reports. Small and
// dependency-free; checked against the FIPS test vectors (tests/unit/BenchTests.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace triad::bench {

/// Lower-case hex digest of `bytes`.
std::string sha256Hex(std::string_view bytes);

/// Digest of a whole file; throws triad::Error(Io) naming it when it cannot be read.
std::string sha256File(const std::filesystem::path& path);

} // namespace triad::bench
