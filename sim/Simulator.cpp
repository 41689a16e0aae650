#include "sim/Simulator.h"

#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Files.h"
#include "ir/System.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace triad::sim {

namespace fs = std::filesystem;

namespace {

std::string pathQuote(const fs::path& p) {
  return shellQuote(p.string());
}

} // namespace

void requireModuleName(std::string_view name, std::string_view where) {
  if (!escape::isIdentifier(name))
    fail(ErrorKind::Usage,
         "{}: the module name '{}' is not a Verilog identifier (write the folder "
         "with triad compile --target fpga)",
         where, escape::printable(name));
}

Trace traceKind(const fs::path& file) {
  if (file.empty()) return Trace::None;
  std::string ext = file.extension().string();
  if (ext == ".vcd") return Trace::Vcd;
  if (ext == ".fst") return Trace::Fst;
  fail(ErrorKind::Usage, "--trace '{}': the waveform file must end in .vcd or .fst", file.string());
}

bool haveVerilator() {
  int rc = 0;
  runCapture("verilator --version >/dev/null 2>&1", &rc);
  return rc == 0;
}

int chooseOptLevel(int64_t cycles) {
  if (const char* e = std::getenv("TRIAD_VERILATOR_OPT"); e && *e >= '0' && *e <= '3' && !e[1])
    return *e - '0';
  return cycles > 300000 ? 1 : 0;
}

fs::path buildModel(const fs::path& outdirArg, const std::string& top, bool* cached, Trace trace,
                    int optLevel) {
  // Absolute: Verilator's make runs inside the object folder, so relative paths would break.
  const fs::path outdir = fs::absolute(outdirArg);
  // The top goes into a command line and the testbench's class names: an identifier only.
  requireModuleName(top, "the top module");
  std::vector<fs::path> sources;
  for (const auto& e : fs::directory_iterator(outdir / "rtl"))
    if (e.path().extension() == ".v") sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());
  fs::path tb = outdir / "tb" / "tb.cpp";
  int rc = 0;
  std::string version = runCapture("verilator --version 2>&1", &rc);
  if (rc != 0)
    fail(ErrorKind::Io,
         "verilator is not on PATH (needed to simulate the RTL: triad sim, --fpga-rtl; run "
         "scripts/setup.sh to install it)");
  const char* traceFlags = trace == Trace::Vcd   ? " --trace -CFLAGS -DTRIAD_TRACE_VCD"
                           : trace == Trace::Fst ? " --trace-fst -CFLAGS -DTRIAD_TRACE_FST"
                                                 : "";
  std::string opt = fmt::format("-O{}", optLevel);
  uint64_t h = fnv1a(kFnvOffset, version + top + traceFlags + opt);
  for (const fs::path& p : sources)
    h = fnv1a(fnv1a(h, p.filename().string()), frontend::readFile(p));
  h = fnv1a(h, frontend::readFile(tb));
  // Built in a private folder under a per-key lock and published whole with the testbench
  // binary's size and hash, which every later run checks (ir/Files.h): a kill at any point leaves
  // no build or a valid one, and concurrent runs on one design verilate it once.
  std::string key = fmt::format("{:016x}", h);
  // The build is a program this process runs: getOrBuildCacheEntry keeps the cache private and
  // loads only an entry this user made and nobody else can change (ir/TrustedFile.h); any other
  // is built again.
  fs::path exe = outdir / "obj" / key / "tb";
  bool hit = getOrBuildCacheEntry(
      outdir / "obj", key, {"tb"}, "the Verilator build cache", [&](const fs::path& dir) {
        std::string cmd =
            fmt::format("verilator --cc --exe --build -j 2 -Wno-fatal --top-module {} "
                        "-Mdir {} -o tb --output-split 20000 -LDFLAGS -pthread "
                        "-MAKEFLAGS 'OPT_FAST={} OPT_SLOW=-O0 OPT_GLOBAL={}'",
                        shellQuote(top), pathQuote(dir), opt, opt);
        cmd += traceFlags;
        for (const fs::path& p : sources) {
          cmd.push_back(' ');
          cmd.append(pathQuote(p));
        }
        cmd.push_back(' ');
        cmd.append(pathQuote(tb));
        cmd.append(" 2>&1");
        int brc = 0;
        std::string log = runCapture(cmd, &brc);
        if (brc != 0 || !fs::exists(dir / "tb"))
          fail(ErrorKind::Runtime, "verilator failed ({}):\n{}", cmd,
               log.size() > 4000 ? log.substr(log.size() - 4000) : log);
      });
  if (cached) *cached = hit;
  return exe;
}

SimReport simulate(const fs::path& outdir, const std::string& top,
                   const std::vector<int64_t>& inputs, const std::vector<int64_t>& expected,
                   int64_t n, int64_t outElems, uint64_t seed, const fs::path& traceFile,
                   int64_t transfersPerSample) {
  SimReport r;
  Trace trace = traceKind(traceFile);
  r.samples = n;
  auto t0 = std::chrono::steady_clock::now();
  // Both passes: about 2.5 cycles per input transfer.
  fs::path exe =
      buildModel(outdir, top, &r.cached, trace, chooseOptLevel(n * transfersPerSample * 5 / 2));
  auto t1 = std::chrono::steady_clock::now();
  // The testbench's input and output files in a folder of this run's own: concurrent runs on one
  // design do not mix them, and a killed run's folder is removed by a later one.
  createDirectories(fs::absolute(outdir) / "obj", "the simulation's folder");
  fs::path work = makeTempDir(fs::absolute(outdir) / "obj", "run");
  // The waveform goes to a temporary beside the file asked for, renamed when complete.
  fs::path traceTmp;
  if (trace != Trace::None)
    (traceTmp = tempPathFor(fs::absolute(traceFile))) += traceFile.extension();
  struct Cleanup {
    fs::path dir, trace;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!trace.empty()) fs::remove(trace, ec);
    }
  } cleanup{work, traceTmp};
  fs::path in = work / "inputs.bin", out = work / "outputs.bin";
  writeFileAtomic(in, std::string_view(reinterpret_cast<const char*>(inputs.data()),
                                       inputs.size() * sizeof(int64_t)));
  int rc = 0;
  std::string js = runCapture(
      fmt::format("{} {} {} {} {}{}", pathQuote(exe), pathQuote(in), n, pathQuote(out), seed,
                  trace == Trace::None ? std::string() : std::string(" ") + pathQuote(traceTmp)),
      &rc);
  if (rc != 0) fail(ErrorKind::Runtime, "the testbench failed: {}", js);
  if (trace != Trace::None) {
    syncPath(traceTmp);
    publishFile(traceTmp, fs::absolute(traceFile));
  }
  r.runSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  r.buildSeconds = std::chrono::duration<double>(t1 - t0).count();
  nlohmann::json j = nlohmann::json::parse(js);
  std::string raw = frontend::readFile(out);
  std::vector<int64_t> got(raw.size() / sizeof(int64_t));
  std::copy_n(raw.data(), got.size() * sizeof(int64_t), reinterpret_cast<char*>(got.data()));
  size_t vec = size_t(outElems);
  int64_t passReceived[2] = {j["steady"]["received"].get<int64_t>(),
                             j["random"]["received"].get<int64_t>()};
  size_t off = 0;
  for (int pass = 0; pass < 2; ++pass) {
    r.missing += n - passReceived[pass];
    for (int64_t s = 0; s < passReceived[pass]; ++s, off += vec)
      if (!std::equal(got.begin() + long(off), got.begin() + long(off + vec),
                      expected.begin() + long(size_t(s) * vec)))
        ++r.mismatches;
  }
  r.outputs.assign(got.begin(), got.begin() + long(std::min(got.size(), size_t(n) * vec)));
  const auto& a = j["steady"];
  // Latency: the first sample's first input transfer to its last output transfer; II: cycles
  // between completed samples in steady state.
  r.latencyCycles = a["first_done"].get<int64_t>() - a["first_accept"].get<int64_t>();
  r.ii = n > 1
             ? double(a["last_out"].get<int64_t>() - a["first_done"].get<int64_t>()) / double(n - 1)
             : 0;
  r.timeout = a["timeout"].get<bool>() || j["random"]["timeout"].get<bool>();
  for (const char* pass : {"steady", "random"}) {
    const auto& p = j[pass];
    for (auto& [name, v] : p["fifo_peak"].items())
      r.fifoPeak[name] = std::max(r.fifoPeak[name], v.get<int64_t>());
    if (p["timeout"].get<bool>() && r.stalled.empty()) {
      for (auto& [name, v] : p["fifo_at_stall"].items())
        r.fifoAtStall[name] = v.get<int64_t>();
      for (const auto& s : p["stalled"])
        r.stalled.push_back(s.get<std::string>());
    }
  }
  r.totalCycles = a["cycles"].get<int64_t>();
  r.randomCycles = j["random"]["cycles"].get<int64_t>();
  r.inferencesPerSecond = r.ii > 0 ? kClockHz / r.ii : 0;
  return r;
}

} // namespace triad::sim
