#include "bench/Progress.h"

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

} // namespace

Progress::Progress() {
  const char* ci = std::getenv("CI");
  live_ = isatty(STDERR_FILENO) && !(ci && *ci);
}

void Progress::start(std::string what) {
  what_ = std::move(what);
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
  fmt::print(stderr, "triad bench: {}: {} ({:.1f} s)\n", what_, outcome, secs);
  what_.clear();
}

void Progress::note(const std::string& line) {
  if (live_ && !what_.empty()) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "{}\n", line);
  if (live_ && !what_.empty()) {
    lastDraw_ = 0;
    tick();
  }
}

} // namespace triad::bench
