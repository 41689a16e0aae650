#include "bench/Process.h"

#include "ir/Diagnostics.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace triad::bench {

namespace {

volatile sig_atomic_t gSignal = 0;
sigset_t gWaitMask; // the mask during ppoll: the parent's, with SIGINT and SIGTERM open

void onSignal(int s) {
  gSignal = s;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::strerror(errno));
    off += size_t(n);
  }
}

// In a forked child: back to default signal handling and an open mask.
void resetSignals() {
  for (int s : {SIGINT, SIGTERM, SIGPIPE})
    std::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

} // namespace

void installInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: ppoll returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &old);
  gWaitMask = old;
  sigdelset(&gWaitMask, SIGINT);
  sigdelset(&gWaitMask, SIGTERM);
}

int interruptSignal() {
  if (gSignal) return gSignal;
  // A signal that came while blocked is pending: take it now.
  sigset_t pending;
  sigpending(&pending);
  for (int s : {SIGINT, SIGTERM})
    if (sigismember(&pending, s)) return s;
  return 0;
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(s);
    return fmt::format("killed by signal {} (SIG{}: {})", s, abbrev ? abbrev : "?", strsignal(s));
  }
  return fmt::format("stopped (wait status {:#x})", status);
}

std::unique_ptr<Process> Process::fork(std::string name, double timeLimitS,
                                       const std::function<void(int, int)>& body) {
  int toChild[2], fromChild[2];
  if (pipe2(toChild, O_CLOEXEC) != 0) fail(ErrorKind::Io, "pipe: {}", std::strerror(errno));
  if (pipe2(fromChild, O_CLOEXEC) != 0) {
    close(toChild[0]), close(toChild[1]);
    fail(ErrorKind::Io, "pipe: {}", std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = ::fork();
  if (pid < 0) fail(ErrorKind::Io, "fork for '{}': {}", name, std::strerror(errno));
  if (pid == 0) {
    resetSignals();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    // Our pipe ends on fds 3 and 4; every other inherited descriptor (siblings' pipes) closed,
    // so that a sibling's death reads as end-of-file in the parent.
    int cmd = fcntl(toChild[0], F_DUPFD, 10), rep = fcntl(fromChild[1], F_DUPFD, 10);
    dup2(cmd, 3);
    dup2(rep, 4);
    close_range(5, ~0U, 0);
    dup2(2, 1); // stray prints of libraries go to stderr, not the report's stdout
    try {
      body(3, 4);
    } catch (...) {
      _exit(70);
    }
    _exit(0);
  }
  close(toChild[0]);
  close(fromChild[1]);
  std::unique_ptr<Process> p(new Process);
  p->name_ = std::move(name);
  p->pid_ = pid;
  p->in_ = toChild[1];
  p->out_ = fromChild[0];
  p->limit_ = timeLimitS;
  return p;
}

std::unique_ptr<Process> Process::spawn(std::string name, double timeLimitS,
                                        const std::vector<std::string>& argv) {
  int toChild[2], fromChild[2];
  if (pipe2(toChild, O_CLOEXEC) != 0) fail(ErrorKind::Io, "pipe: {}", std::strerror(errno));
  if (pipe2(fromChild, O_CLOEXEC) != 0) {
    close(toChild[0]), close(toChild[1]);
    fail(ErrorKind::Io, "pipe: {}", std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, toChild[0], 0);
  posix_spawn_file_actions_adddup2(&fa, fromChild[1], 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, def;
  sigemptyset(&none);
  sigemptyset(&def);
  for (int s : {SIGINT, SIGTERM, SIGPIPE})
    sigaddset(&def, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(toChild[0]);
  close(fromChild[1]);
  if (rc != 0) {
    close(toChild[1]);
    close(fromChild[0]);
    fail(ErrorKind::Io, "cannot start '{}' for {}: {}", argv[0], name, std::strerror(rc));
  }
  std::unique_ptr<Process> p(new Process);
  p->name_ = std::move(name);
  p->pid_ = pid;
  p->in_ = toChild[1];
  p->out_ = fromChild[0];
  p->limit_ = timeLimitS;
  return p;
}

Process::~Process() {
  kill();
}

void Process::markFailed(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
}

void Process::reap(bool block) {
  if (pid_ <= 0) return;
  int status = 0;
  pid_t r;
  do
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_ || r < 0) {
    if (r == pid_) markFailed(describeWaitStatus(status));
    pid_ = -1;
    if (in_ >= 0) close(in_), in_ = -1;
    if (out_ >= 0) close(out_), out_ = -1;
  }
}

void Process::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap(true);
  }
}

bool Process::send(const nlohmann::json& j) {
  if (pid_ <= 0 || in_ < 0) {
    markFailed("not running");
    return false;
  }
  try {
    writeAll(in_, j.dump() + "\n");
  } catch (const std::exception&) {
    // Its end is closed: it died. The reason comes from its exit status.
    reap(true);
    markFailed("closed its input");
    return false;
  }
  return true;
}

std::optional<nlohmann::json> Process::receive(const std::function<void()>& tick) {
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        markFailed(fmt::format("sent a line that is not a JSON object: '{}'", line.substr(0, 120)));
        kill();
        return std::nullopt;
      }
      return j;
    }
    if (int s = interruptSignal()) throw Interrupted{s};
    if (pid_ <= 0 || out_ < 0) {
      markFailed("not running");
      return std::nullopt;
    }
    double left = limit_ - busy_;
    if (left <= 0) {
      failure_ = fmt::format("timed out after {:g} s", limit_);
      kill();
      return std::nullopt;
    }
    double slice = std::min(left, 0.25);
    timespec ts{time_t(slice), long((slice - double(time_t(slice))) * 1e9)};
    pollfd p{out_, POLLIN, 0};
    double t0 = now();
    int rc = ppoll(&p, 1, &ts, &gWaitMask);
    busy_ += now() - t0;
    if (tick) tick();
    if (rc < 0) {
      if (errno == EINTR) continue;
      fail(ErrorKind::Io, "waiting for {}: {}", name_, std::strerror(errno));
    }
    if (rc == 0) continue;
    char chunk[65536];
    ssize_t n = ::read(out_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n > 0) {
      buf_.append(chunk, size_t(n));
      continue;
    }
    // End of file: it exited or died; the status says how.
    reap(true);
    markFailed("closed its output");
    return std::nullopt;
  }
}

std::optional<nlohmann::json> Process::request(const nlohmann::json& j,
                                               const std::function<void()>& tick) {
  if (!send(j)) return std::nullopt;
  return receive(tick);
}

void Process::quit(double graceS) {
  if (pid_ <= 0) return;
  try {
    writeAll(in_, nlohmann::json{{"cmd", "quit"}}.dump() + "\n");
  } catch (const std::exception&) {
  }
  close(in_), in_ = -1;
  double until = now() + graceS;
  std::string keep = failure_;
  while (pid_ > 0 && now() < until) {
    reap(false);
    if (pid_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill();
  failure_ = keep; // a clean quit is not a failure
}

} // namespace triad::bench
