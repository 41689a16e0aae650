// Progress of long `triad bench` steps (compiles, Verilator builds, timed rounds) on stderr: a
// live line with the elapsed time on a terminal; in CI (the CI environment variable set) or
// when stderr is not a terminal, plain lines: one per finished step, and one when a step starts
// that is still running after 10 s.
#pragma once

#include <string>

namespace triad::bench {

class Progress {
public:
  Progress();
  /// Starts a step ("compiling cpu, batch 8").
  void start(std::string what);
  /// Refreshes the live line (terminal only); cheap to call often.
  void tick();
  /// Ends the step with its outcome ("ok, 2.3 s", "failed: ...").
  void finish(const std::string& outcome);
  /// A line of its own (a note, the final path).
  void note(const std::string& line);
  bool live() const { return live_; }

private:
  bool live_ = false, announced_ = false;
  std::string what_;
  double started_ = 0, lastDraw_ = 0;
};

} // namespace triad::bench
