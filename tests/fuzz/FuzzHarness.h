// What every fuzz target (tests/fuzz/*_fuzzer.cpp) shares: the rule that decides what is a
// finding, and a private scratch folder for inputs that Triad reads from files.
//
// Issue 14's contract: any input may be refused, but only with a triad::Error naming what is
// wrong (usage, i/o, invalid model, unsupported, run-time). A crash, a sanitizer report, an
// internal error (a failed TRIAD_ASSERT: exit 70 in the CLI), or any other exception escaping
// (std::bad_alloc, std::out_of_range from stoll, ...) is a bug. guarded() turns the last two into
// an abort with the message on stderr, which libFuzzer records as a crash (and the replay driver
// as a failed test).
#pragma once

#include "ir/Diagnostics.h"
#include "tests/fuzz/Payloads.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace triad::fuzz {

/// Prints "fuzz: <what>: <message>" and aborts.
[[noreturn]] void finding(std::string_view what, std::string_view message);

/// Runs `f`; a triad::Error of a user kind is the expected outcome for bad input, anything
/// else escaping is a finding.
/// After every input, the marker of tests/fuzz/Payloads.h must not exist: a model string that
/// ran as code is the finding "code execution".
template <typename F> void guarded(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Internal) finding("internal error", e.what());
  } catch (const std::exception& e) {
    finding("exception that is not a triad::Error", e.what());
  } catch (...) {
    finding("exception that is not a std::exception", "");
  }
  checkMarker("after this input");
}

/// A folder of this process, made on first use and removed at exit. It holds `weights.bin`
/// (4 KiB of a byte pattern) so that external-data entries the mutator writes can resolve, and
/// an empty folder `subdir` (a location that is a directory).
const std::filesystem::path& scratchDir();

/// Writes `bytes` to scratchDir()/name and returns the path.
std::filesystem::path writeScratchFile(const std::string& name, std::string_view bytes);

inline std::string_view asText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace triad::fuzz
