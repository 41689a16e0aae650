#include "tests/fuzz/FuzzHarness.h"
#include "ir/Tensor.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace triad::fuzz {

namespace fs = std::filesystem;

void finding(std::string_view what, std::string_view message) {
  std::fprintf(stderr, "fuzz: %.*s: %.*s\n", int(what.size()), what.data(), int(message.size()),
               message.data());
  std::fflush(stderr);
  std::abort();
}

namespace {

// The run's memory limit (--max-memory) well below libFuzzer's 2 GB malloc limit, so that a model
// asking for more is the named Resource error the CLI gives, not an out-of-memory "finding".
[[maybe_unused]] const bool kMemoryLimitSet = [] {
  ir::setMemoryLimit(uint64_t(256) << 20);
  return true;
}();

fs::path makeScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = (fs::path(tmp && *tmp ? tmp : "/tmp") / "triad-fuzz-XXXXXX").string();
  if (!::mkdtemp(templ.data())) finding("setup", "cannot create a scratch folder under TMPDIR");
  fs::path dir = templ;
  std::ofstream weights(dir / "weights.bin", std::ios::binary);
  for (int i = 0; i < 4096; ++i)
    weights.put(char(i * 7 + 1));
  fs::create_directory(dir / "subdir");
  return dir;
}

struct ScratchDir {
  fs::path path = makeScratchDir();
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

} // namespace

const fs::path& scratchDir() {
  static ScratchDir dir;
  return dir.path;
}

fs::path writeScratchFile(const std::string& name, std::string_view bytes) {
  fs::path p = scratchDir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) finding("setup", "cannot write a scratch file");
  return p;
}

} // namespace triad::fuzz
