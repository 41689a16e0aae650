#include "bench/Progress.h"
#include "ir/Escape.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

namespace triad::bench {

namespace {

double nowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Text for the terminal: a step or an outcome can name the model's layers or quote an error
/// about them (untrusted), so every line is escape::printable (no escape sequences, no carriage
/// returns); the text's own line breaks stay.
std::string terminal(std::string_view s) {
  std::string out;
  for (size_t start = 0;;) {
    size_t nl = s.find('\n', start);
    out += escape::printable(s.substr(start, nl == std::string_view::npos ? nl : nl - start));
    if (nl == std::string_view::npos) return out;
    out += '\n';
    start = nl + 1;
  }
}

} // namespace

Progress::Progress() {
  const char* ci = std::getenv("CI");
  live_ = isatty(STDERR_FILENO) && !(ci && *ci);
}

void Progress::start(std::string what) {
  what_ = escape::printable(what); // one line: the live line is redrawn in place
  started_ = nowS();
  lastDraw_ = 0;
  announced_ = false;
  tick();
}

void Progress::tick() {
  if (what_.empty()) return;
  double t = nowS();
  if (!live_) {
    // Plain lines: the outcome of every step, and its start only when it takes a while.
    if (!announced_ && t - started_ > 10) {
      fmt::print(stderr, "triad bench: {} ...\n", what_);
      announced_ = true;
    }
    return;
  }
  if (t - lastDraw_ < 0.2) return;
  lastDraw_ = t;
  fmt::print(stderr, "\r\033[Ktriad bench: {} ... {:.0f} s", what_, t - started_);
  std::fflush(stderr);
}

void Progress::finish(const std::string& outcome) {
  double secs = nowS() - started_;
  if (live_) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "triad bench: {}: {} ({:.1f} s)\n", what_, terminal(outcome), secs);
  what_.clear();
}

void Progress::note(const std::string& line) {
  if (live_ && !what_.empty()) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "{}\n", terminal(line));
  if (live_ && !what_.empty()) {
    lastDraw_ = 0;
    tick();
  }
}

} // namespace triad::bench
