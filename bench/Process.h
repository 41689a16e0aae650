// The processes of a `triad bench` run. Every Triad target runs in a worker forked from the
// clean parent (no OpenCL, no thread pool yet), and every peer harness is spawned with
// posix_spawn; each speaks JSON lines over two pipes (docs/cli.md, "triad bench"). A process
// has a time limit on the time it spends answering (idle time waiting for others' rounds does
// not count); one that dies, times out or answers garbage is "failed" with the reason, and the
// bench goes on. SIGINT and SIGTERM are turned into Interrupted at the next wait, after which
// the caller's destructors kill every child.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace triad::bench {

/// SIGINT/SIGTERM: handled by a flag, blocked outside waits (ppoll unblocks them), SIGPIPE
/// ignored (a dead child's pipe is an error value, not a dead bench). Call once, early.
void installInterruptHandlers();
/// The signal that interrupted the run, or 0.
int interruptSignal();

struct Interrupted {
  int signal = 0;
};

/// "killed by signal 11 (SIGSEGV: Segmentation fault)", "exited with status 1".
std::string describeWaitStatus(int status);

class Process {
public:
  /// Forks a worker running `body(in, out)` (command pipe on fd `in`, replies on fd `out`); its
  /// stdout goes to stderr, its other descriptors are closed, signals are back to default, and
  /// it dies with the parent. `body` must not return normally without _exit: Process does it.
  static std::unique_ptr<Process> fork(std::string name, double timeLimitS,
                                       const std::function<void(int in, int out)>& body);
  /// Spawns `argv` with its stdin and stdout on pipes (stderr shared). Throws Error(Io) when it
  /// cannot be started.
  static std::unique_ptr<Process> spawn(std::string name, double timeLimitS,
                                        const std::vector<std::string>& argv);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0; }

  /// Sends one JSON line; false (failure() says why) when the process is gone.
  bool send(const nlohmann::json& j);
  /// The next JSON line. nullopt when the process died, timed out (it is then killed) or sent
  /// something that is not JSON: failure() says which. `tick` runs about 4 times a second while
  /// waiting (progress). Throws Interrupted on SIGINT/SIGTERM.
  std::optional<nlohmann::json> receive(const std::function<void()>& tick = {});
  /// send + receive.
  std::optional<nlohmann::json> request(const nlohmann::json& j,
                                        const std::function<void()>& tick = {});
  /// Why the process is no longer usable ("" while it is).
  const std::string& failure() const { return failure_; }
  /// Asks it to quit ({"cmd":"quit"}, stdin closed), waits up to `graceS`, then kills it.
  void quit(double graceS = 5);
  /// Kills it now (SIGKILL) and reaps it.
  void kill();
  /// Seconds it spent answering so far (counts against its time limit).
  double busySeconds() const { return busy_; }

private:
  Process() = default;
  void reap(bool block);
  void markFailed(std::string why);

  std::string name_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1; // our ends: we write in_, read out_
  std::string buf_;
  double limit_ = 600, busy_ = 0;
  std::string failure_;
};

} // namespace triad::bench
