// triad-onnx-conformance: runs ONNX's backend node tests (onnx/backend/test/data/node/test_*:
// model.onnx + test_data_set_*/input_*.pb, output_*.pb) on a Triad backend and classifies each
// case as
//   pass         every output matches (floats: |got - want| <= atol + rtol * |want|),
//   fail         wrong numbers, a crash, a time-out, or an error on a model Triad claims,
//   unsupported  Triad declares an op, attribute, dtype or opset unsupported (with the reason).
// Each case runs in a forked child so that a crash is a "fail", not the end of the run.
// With --expected FILE, every case listed there must pass (the list only grows: new passes are
// reported so they can be added with --update-expected).
#include "cpu/CpuTarget.h"
#include "cpu/Lowering.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "gpu/GpuTarget.h"
#include "ir/Interpreter.h"
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__) // GCC's -fsanitize=address; Clang's below
#define TRIAD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRIAD_ASAN 1
#endif
#endif
#ifdef TRIAD_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace fs = std::filesystem;
using triad::Error;
using triad::ErrorKind;
using triad::ir::Tensor;

namespace {

enum class Status { Pass, Fail, Unsupported };
const char* statusName(Status s) {
  return s == Status::Pass ? "pass" : s == Status::Fail ? "fail" : "unsupported";
}

struct CaseResult {
  Status status = Status::Fail;
  std::string reason;
};

/// A backend runs an imported graph on inputs (graph-input order) and returns its outputs.
using Backend =
    std::function<std::vector<Tensor>(const triad::ir::Graph&, const std::vector<Tensor>&)>;

/// What the backend says about a passing case (the CPU target: "native" or "mixed: ...").
thread_local std::string g_passNote;
/// --host-only: compiled targets also run cases where no node has a native lowering (the
/// whole model then calls the host's reference kernels from the compiled code).
bool g_runHostOnly = false;

/// The pass note of a compiled target: every node native, some on the host, or all on it.
std::string passNote(const std::vector<std::string>& host, size_t nodes) {
  if (host.empty()) return "native";
  if (host.size() == nodes) return fmt::format("host only: {}", host.front());
  return fmt::format("mixed: host runs {}", host.front());
}

std::map<std::string, Backend> backends() {
  return {
      {"interp", [](const triad::ir::Graph& g,
                    const std::vector<Tensor>& in) { return triad::ir::Interpreter(g).run(in); }},
      // The CPU target compiles every node it lowers natively and runs the rest on the host's
      // reference kernels; a case where no node is native says nothing about it.
      {"cpu",
       [](const triad::ir::Graph& g, const std::vector<Tensor>& in) {
         std::vector<std::string> host;
         for (const auto& n : g.nodes())
           if (auto s = triad::cpu::nativeSupport(*n); !s.ok)
             host.push_back(fmt::format("{} ({})", triad::ir::opKindName(n->kind()), s.reason));
         if (!g_runHostOnly && !g.nodes().empty() && host.size() == g.nodes().size())
           triad::fail(ErrorKind::Unsupported, "no node has a native CPU lowering: {}",
                       host.front());
         auto exe = triad::cpu::makeCpuTarget()->compile(g);
         g_passNote = passNote(host, g.nodes().size());
         return exe->run(in);
       }},
      // The GPU target (OpenCL, the default device): likewise, nodes without a GPU lowering run
      // on the host between kernels; a case where no node has one is unsupported.
      {"gpu", [](const triad::ir::Graph& g, const std::vector<Tensor>& in) {
         std::vector<std::string> host;
         for (const auto& n : g.nodes())
           if (auto s = triad::gpu::gpuSupport(*n); !s.ok)
             host.push_back(fmt::format("{} ({})", triad::ir::opKindName(n->kind()), s.reason));
         if (!g_runHostOnly && !g.nodes().empty() && host.size() == g.nodes().size())
           triad::fail(ErrorKind::Unsupported, "no node has a GPU lowering: {}", host.front());
         auto exe = triad::gpu::makeGpuTarget()->compile(g);
         g_passNote = passNote(host, g.nodes().size());
         return exe->run(in);
       }}};
}

struct DataSet {
  std::vector<triad::frontend::NamedTensor> inputs, outputs;
};

std::vector<fs::path> sortedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // input_10.pb sorts after input_9.pb
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      return std::stoi(p.stem().string().substr(prefix.size()));
    };
    return num(a) < num(b);
  });
  return out;
}

std::optional<std::string> compare(const Tensor& got, const Tensor& want, double rtol, double atol,
                                   const std::string& name) {
  if (got.dtype() != want.dtype())
    return fmt::format("output '{}': dtype {} but expected {}", name,
                       triad::ir::dtypeName(got.dtype()), triad::ir::dtypeName(want.dtype()));
  if (got.shape() != want.shape())
    return fmt::format("output '{}': shape {} but expected {}", name,
                       triad::ir::shapeToString(got.shape()),
                       triad::ir::shapeToString(want.shape()));
  bool isFloat = triad::ir::isFloat(got.dtype());
  int64_t bad = 0, firstBad = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    bool ok;
    if (isFloat) {
      double g = got.getDouble(i), w = want.getDouble(i);
      if (std::isnan(w))
        ok = std::isnan(g);
      else if (std::isinf(w))
        ok = g == w;
      else {
        double err = std::fabs(g - w);
        ok = err <= atol + rtol * std::fabs(w);
        if (!ok) worst = std::max(worst, err);
      }
    } else {
      ok = got.getInt(i) == want.getInt(i);
    }
    if (!ok && bad++ == 0) firstBad = i;
  }
  if (bad == 0) return std::nullopt;
  return fmt::format("output '{}': {} of {} elements differ (first at {}: got {}, expected {}; "
                     "max abs error {:.3g})",
                     name, bad, got.numElements(), firstBad, got.getDouble(firstBad),
                     want.getDouble(firstBad), worst);
}

CaseResult classifyError(const Error& e) {
  if (e.kind() == ErrorKind::Unsupported) return {Status::Unsupported, e.what()};
  return {Status::Fail, fmt::format("{}: {}", triad::errorKindName(e.kind()), e.what())};
}

CaseResult runCase(const fs::path& dir, const Backend& backend, double rtol, double atol) {
  try {
    fs::path model = dir / "model.onnx";
    // Import once without test data first, so that an unsupported op or type is reported as
    // such even when the test data (sequences, optionals) is not a tensor Triad can read.
    try {
      triad::frontend::importOnnxFile(model);
    } catch (const Error& e) {
      // Shape operands fed by graph inputs need the data; anything else is final.
      if (e.kind() != ErrorKind::Unsupported ||
          std::string(e.what()).find("must be a constant") == std::string::npos)
        throw;
    }
    std::vector<DataSet> sets;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_directory() || e.path().filename().string().rfind("test_data_set_", 0) != 0)
        continue;
      DataSet ds;
      for (const auto& p : sortedFiles(e.path(), "input_"))
        ds.inputs.push_back(triad::frontend::readTensorProtoFile(p));
      for (const auto& p : sortedFiles(e.path(), "output_"))
        ds.outputs.push_back(triad::frontend::readTensorProtoFile(p));
      sets.push_back(std::move(ds));
    }
    if (sets.empty()) return {Status::Fail, "no test_data_set_* folder"};
    for (size_t s = 0; s < sets.size(); ++s) {
      const DataSet& ds = sets[s];
      triad::frontend::ImportOptions opts;
      opts.bindInput = [&](const std::string& name) -> const Tensor* {
        for (const auto& nt : ds.inputs)
          if (nt.name == name) return &nt.tensor;
        return nullptr;
      };
      triad::frontend::ImportResult imported = triad::frontend::importOnnxFile(model, opts);
      const auto& g = imported.graph;
      // Inputs by name; files whose names do not match the model's bind by position.
      std::vector<Tensor> inputs;
      bool byName = std::all_of(g.inputs().begin(), g.inputs().end(), [&](const auto* in) {
        return std::any_of(ds.inputs.begin(), ds.inputs.end(),
                           [&](const auto& nt) { return nt.name == in->name(); });
      });
      if (!byName && imported.boundInputs.empty() && ds.inputs.size() == g.inputs().size()) {
        for (const auto& nt : ds.inputs)
          inputs.push_back(nt.tensor);
      } else {
        for (const auto* in : g.inputs()) {
          auto it = std::find_if(ds.inputs.begin(), ds.inputs.end(),
                                 [&](const auto& nt) { return nt.name == in->name(); });
          if (it == ds.inputs.end())
            return {Status::Fail, fmt::format("no test data for graph input '{}'", in->name())};
          inputs.push_back(it->tensor);
        }
      }
      std::vector<Tensor> outs = backend(g, inputs);
      if (outs.size() != ds.outputs.size())
        return {Status::Fail,
                fmt::format("{} outputs, {} expected", outs.size(), ds.outputs.size())};
      for (size_t i = 0; i < outs.size(); ++i)
        if (auto why = compare(outs[i], ds.outputs[i].tensor, rtol, atol, g.outputs()[i]->name()))
          return {Status::Fail, fmt::format("data set {}: {}", s, *why)};
    }
    return {Status::Pass, g_passNote};
  } catch (const Error& e) {
    return classifyError(e);
  } catch (const std::exception& e) {
    return {Status::Fail, fmt::format("exception: {}", e.what())};
  }
}

// Runs runCase in a child process; a crash or time-out becomes a fail with that reason.
CaseResult runIsolated(const fs::path& dir, const Backend& backend, double rtol, double atol,
                       int timeoutSec) {
  int fds[2];
  if (pipe(fds) != 0) return runCase(dir, backend, rtol, atol);
  // LeakSanitizer can scan a forked child only if the fork came from the main thread (the other
  // threads' stacks are gone in the child, so what they point to would read as leaked).
  [[maybe_unused]] bool fromMainThread = gettid() == getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(unsigned(timeoutSec));
    CaseResult r = runCase(dir, backend, rtol, atol);
    std::string msg = fmt::format("{}\n{}", int(r.status), r.reason);
    ssize_t off = 0;
    while (off < ssize_t(msg.size())) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - size_t(off));
      if (w <= 0) break;
      off += w;
    }
    close(fds[1]);
#ifdef TRIAD_ASAN
    // _exit skips LeakSanitizer's exit-time check: run it here, so that a case that leaks fails
    // under the sanitizers (scripts/test_sanitize.sh) like one that reads out of bounds.
    if (fromMainThread && __lsan_do_recoverable_leak_check() != 0) _exit(1);
#endif
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  char chunk[4096];
  ssize_t got;
  while ((got = read(fds[0], chunk, sizeof chunk)) > 0)
    buf.append(chunk, size_t(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return {Status::Fail, sig == SIGALRM
                              ? fmt::format("timed out after {} s", timeoutSec)
                              : fmt::format("crashed with signal {} ({})", sig, strsignal(sig))};
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return {Status::Fail, fmt::format("the case exited with status {} (a sanitizer report?)",
                                      WEXITSTATUS(status))};
  size_t nl = buf.find('\n');
  if (nl == std::string::npos) return {Status::Fail, "child produced no result"};
  return {Status(std::stoi(buf.substr(0, nl))), buf.substr(nl + 1)};
}

// "test_name  reason..." per line; '#' starts a comment line.
std::map<std::string, std::string> readKnownBad(const fs::path& p) {
  std::map<std::string, std::string> out;
  std::ifstream in(p);
  if (!in) {
    fmt::print(stderr, "error: cannot read --known-bad file '{}'\n", p.string());
    std::exit(3);
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.find_first_of(" \t");
    std::string name = line.substr(0, sp);
    std::string reason =
        sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
    out[name] = reason;
  }
  return out;
}

std::set<std::string> readList(const fs::path& p) {
  std::set<std::string> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') out.insert(line);
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run ONNX's backend node tests on a Triad backend."};
  std::string backendName = "interp", dataDir, filter = ".*", jsonPath, expectedPath, knownBadPath;
  double rtol = 1e-3, atol = 1e-7;
  int timeout = 120;
  bool noFork = false, updateExpected = false, verbose = false;
  int jobs = 1;
  app.add_option("--backend", backendName, "Backend to test: interp, cpu, gpu")
      ->capture_default_str();
  app.add_option("-j,--jobs", jobs, "Cases run at once (each in its own child process)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--data", dataDir, "ONNX node test folder (onnx/backend/test/data/node)")
      ->required();
  app.add_option("--filter", filter, "Regex on test names (e.g. 'test_conv.*')")
      ->capture_default_str();
  app.add_option("--json", jsonPath, "Write every case's result and reason to this JSON file");
  app.add_option(
      "--expected", expectedPath,
      "File listing cases that must pass; a listed case that does not pass fails the run");
  app.add_option(
      "--known-bad", knownBadPath,
      "File of 'test_name reason' lines: cases whose expected outputs in ONNX's data are "
      "wrong; reported as unsupported with that reason, not run");
  app.add_flag("--update-expected", updateExpected,
               "Rewrite --expected with the cases that pass now");
  app.add_option("--rtol", rtol, "Relative tolerance for float outputs")->capture_default_str();
  app.add_option("--atol", atol, "Absolute tolerance for float outputs")->capture_default_str();
  app.add_option("--timeout", timeout, "Seconds per case")->capture_default_str();
  app.add_flag("--no-fork", noFork, "Run cases in this process (for debugging)");
  app.add_flag("--host-only", g_runHostOnly,
               "cpu, gpu: also run cases where no node has a native lowering (every node then "
               "runs on the host's reference kernels from the compiled model)");
  app.add_flag("-v,--verbose", verbose, "Print every case, not only failures");
  CLI11_PARSE(app, argc, argv);

  auto all = backends();
  if (!all.count(backendName)) {
    fmt::print(stderr, "error: unknown backend '{}' (available: interp, cpu, gpu)\n", backendName);
    return 2;
  }
  if (!fs::is_directory(dataDir)) {
    fmt::print(stderr, "error: node test folder '{}' does not exist (run scripts/setup.sh)\n",
               dataDir);
    return 3;
  }
  std::regex re(filter);
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(dataDir))
    if (e.is_directory() && std::regex_search(e.path().filename().string(), re))
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  std::map<std::string, std::string> knownBad;
  if (!knownBadPath.empty()) knownBad = readKnownBad(knownBadPath);
  std::map<std::string, CaseResult> results;
  int counts[3] = {0, 0, 0};
  auto t0 = std::chrono::steady_clock::now();
  // Cases run in child processes, `jobs` at a time; results print in case order.
  std::vector<CaseResult> caseResults(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < cases.size();) {
      std::string name = cases[i].filename().string();
      if (auto kb = knownBad.find(name); kb != knownBad.end())
        caseResults[i] = {Status::Unsupported,
                          fmt::format("known-bad ONNX test data: {}", kb->second)};
      else
        caseResults[i] = noFork ? runCase(cases[i], all[backendName], rtol, atol)
                                : runIsolated(cases[i], all[backendName], rtol, atol, timeout);
    }
  };
  if (noFork || jobs == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int j = 0; j < jobs; ++j)
      pool.emplace_back(worker);
    for (auto& t : pool)
      t.join();
  }
  int nativePasses = 0, hostOnlyPasses = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string name = cases[i].filename().string();
    const CaseResult& r = caseResults[i];
    ++counts[int(r.status)];
    if (r.status == Status::Pass && r.reason == "native") ++nativePasses;
    if (r.status == Status::Pass && r.reason.rfind("host only", 0) == 0) ++hostOnlyPasses;
    if (verbose || r.status == Status::Fail)
      fmt::print("{:<12} {}  {}\n", statusName(r.status), name, r.reason.substr(0, 400));
    results[name] = r;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int regressions = 0, unsupportedRegressions = 0;
  std::vector<std::string> newPasses;
  if (!expectedPath.empty()) {
    std::set<std::string> expected = readList(expectedPath);
    for (const auto& name : expected) {
      auto it = results.find(name);
      if (it == results.end()) continue; // filtered out
      if (it->second.status != Status::Pass) {
        ++regressions;
        if (it->second.status == Status::Unsupported) ++unsupportedRegressions;
        fmt::print("REGRESSION   {}  listed in {} but {}: {}\n", name, expectedPath,
                   statusName(it->second.status), it->second.reason.substr(0, 300));
      }
    }
    for (const auto& [name, r] : results)
      if (r.status == Status::Pass && !expected.count(name)) newPasses.push_back(name);
    if (!newPasses.empty() && !updateExpected)
      fmt::print("{} cases pass that {} does not list yet (rerun with --update-expected to add "
                 "them), e.g. {}\n",
                 newPasses.size(), expectedPath, newPasses.front());
    if (updateExpected) {
      std::string text = "# ONNX node tests that must pass on this backend (kept by\n"
                         "# triad-onnx-conformance --update-expected; the list only grows).\n";
      std::set<std::string> keep = expected;
      for (const auto& n : newPasses)
        keep.insert(n);
      for (const auto& n : keep)
        text += n + "\n";
      triad::frontend::writeFileAtomic(expectedPath, text);
      fmt::print("{} now lists {} cases\n", expectedPath, keep.size());
    }
  }

  if (!jsonPath.empty()) {
    nlohmann::json j;
    j["backend"] = backendName;
    j["data"] = dataDir;
    j["seconds"] = secs;
    j["counts"] = {{"pass", counts[0]},           {"fail", counts[1]},
                   {"unsupported", counts[2]},    {"total", cases.size()},
                   {"native_pass", nativePasses}, {"host_only_pass", hostOnlyPasses}};
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, r] : results)
      list.push_back({{"name", name}, {"status", statusName(r.status)}, {"reason", r.reason}});
    j["cases"] = list;
    triad::frontend::writeFileAtomic(jsonPath, j.dump(1));
  }
  double pct = cases.empty() ? 0.0 : 100.0 * counts[0] / double(cases.size());
  fmt::print("backend {}: {} cases in {:.1f} s: {} pass ({:.1f}%), {} fail, {} unsupported\n",
             backendName, cases.size(), secs, counts[0], pct, counts[1], counts[2]);
  if (backendName == "cpu")
    fmt::print("cpu: {} passing cases compiled every node natively, {} ran some nodes on the "
               "host, {} every node\n",
               nativePasses, counts[0] - nativePasses - hostOnlyPasses, hostOnlyPasses);
  if (backendName == "gpu")
    fmt::print("gpu: {} passing cases ran every node in OpenCL kernels, {} ran some nodes on the "
               "host, {} every node\n",
               nativePasses, counts[0] - nativePasses - hostOnlyPasses, hostOnlyPasses);
  fmt::print("{} passed, {} failed, {} skipped\n", counts[0], counts[1] + unsupportedRegressions,
             counts[2] - unsupportedRegressions);
  return counts[1] > 0 || regressions > 0 ? 1 : 0;
}
