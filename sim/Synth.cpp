#include "sim/Synth.h"

#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"
#include "ir/System.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <sys/wait.h>

namespace triad::sim {

namespace fs = std::filesystem;

namespace {

std::string pathQuote(const fs::path& p) {
  return shellQuote(p.string());
}

SynthCounts classify(const nlohmann::json& byType, const std::string& family) {
  SynthCounts c;
  for (const auto& [type, n] : byType.items()) {
    int64_t k = n.get<int64_t>();
    c.cells[type] = k;
    if (family == "xc7") {
      if (type.size() == 4 && type.starts_with("LUT"))
        c.lut += k;
      else if (type.starts_with("FD"))
        c.ff += k;
      else if (type == "DSP48E1")
        c.dsp += k;
      else if (type == "RAMB18E1")
        c.bram18 += k;
      else if (type == "RAMB36E1")
        c.bram36 += k;
      else if (type.starts_with("RAM") || type.starts_with("SRL"))
        c.lutram += k;
      else if (type == "CARRY4")
        c.carry += k;
      else if (type.starts_with("MUXF"))
        c.muxf += k;
    } else {
      if (type == "SB_LUT4")
        c.lut += k;
      else if (type.starts_with("SB_DFF"))
        c.ff += k;
      else if (type == "SB_MAC16")
        c.dsp += k;
      else if (type.starts_with("SB_RAM40"))
        c.bram += k;
      else if (type == "SB_CARRY")
        c.carry += k;
    }
  }
  return c;
}

// Cell names per kind on the longest path, from the `select -list` sections that the Yosys
// script appends to <module>.kinds ("KIND CARRY4", "KIND MUXF", "KIND DSP48E1" headers, then
// "<module>/<cell>" lines).
std::map<std::string, std::string> readKinds(const std::string& file, const std::string& module) {
  std::map<std::string, std::string> kind;
  std::istringstream in(frontend::readFile(file));
  std::string line, section;
  const std::string prefix = module + "/";
  while (std::getline(in, line)) {
    if (line.starts_with("KIND ")) {
      section = line.substr(5);
      continue;
    }
    if (line.starts_with(prefix)) kind[line.substr(prefix.size())] = section;
  }
  return kind;
}

// The "(via CELL)" of every level of `ltp`'s path, classified.
std::optional<PathMix> pathMix(const std::string& ltp,
                               const std::map<std::string, std::string>& kind) {
  std::istringstream in(ltp);
  std::string line, prev;
  PathMix p;
  bool any = false;
  while (std::getline(in, line)) {
    size_t v = line.rfind(" (via ");
    if (v == std::string::npos || !line.ends_with(")")) continue;
    std::string cell = line.substr(v + 6, line.size() - v - 7);
    auto it = kind.find(cell);
    std::string k = it == kind.end() ? "" : it->second;
    if (k == "CARRY4")
      ++(prev == "CARRY4" ? p.carry : p.carryEntry);
    else if (k == "DSP48E1")
      ++(prev == "DSP48E1" ? p.dspCascade : p.dsp);
    else if (k == "MUXF")
      ++p.muxf;
    else
      ++p.lut;
    prev = k;
    any = true;
  }
  if (!any) return std::nullopt;
  return p;
}

int exitStatus(int rc) {
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
}

struct Ice40Device {
  std::string name, flag, package, label;
  int64_t logicCells, ram, dsp;
};

Ice40Device ice40Device(const std::string& name) {
  // Capacities from the iCE40 UltraPlus and LP/HX family data sheets (nextpnr reports the same).
  if (name == "up5k") return {"up5k", "--up5k", "sg48", "iCE40 UP5K", 5280, 30, 8};
  if (name == "hx8k") return {"hx8k", "--hx8k", "ct256", "iCE40 HX8K", 7680, 32, 0};
  fail(ErrorKind::Usage, "--device '{}': the iCE40 devices are up5k and hx8k", name);
}

// Widths of in_tdata and out_tdata of the top module in rtl/<top>.v (the emitter's port list).
std::pair<int64_t, int64_t> topPortWidths(const fs::path& file, const std::string& top) {
  std::string v = frontend::readFile(file);
  size_t b = v.find("module " + top + " (");
  size_t e = b == std::string::npos ? b : v.find(");", b);
  if (e == std::string::npos)
    fail(ErrorKind::Usage, "{}: no module {} (write the folder with triad compile --target fpga)",
         file.string(), top);
  std::string ports = v.substr(b, e - b);
  auto width = [&](const std::string& name) -> int64_t {
    std::smatch m;
    if (std::regex_search(ports, m, std::regex("wire\\s*\\[(\\d+):0\\]\\s*" + name + "\\b")))
      return std::stoll(m[1]) + 1;
    if (std::regex_search(ports, m, std::regex("wire\\s+" + name + "\\b"))) return 1;
    fail(ErrorKind::Usage, "{}: module {} has no port {}", file.string(), top, name);
  };
  return {width("in_tdata"), width("out_tdata")};
}

// The design's ports (hundreds of bits) do not fit a small package's pins, and unconstrained
// ports left floating would let Yosys delete logic. The wrapper feeds in_tdata from a shift
// register on one pin and loads out_tdata into a shift register read out on another, so every
// output bit stays observable and the layer's paths start and end at registers, as they would
// behind a registered upstream and downstream block.
std::string pnrWrapper(const std::string& top, int64_t inW, int64_t outW) {
  return fmt::format(R"(// Generated by triad synth --pnr: {0} with its stream ports on 7 pins.
module triad_pnr_top (
    input  wire clk,
    input  wire rst_n,
    input  wire sin,
    input  wire in_valid,
    input  wire out_ready,
    output wire sout,
    output wire in_ready,
    output wire out_valid
);
  reg [{1}:0] in_sr;
  reg [{2}:0] out_sr;
  reg v_r, r_r, in_ready_r, out_valid_r;
  wire [{2}:0] y;
  wire y_valid, x_ready;
  {0} dut (
      .clk(clk),
      .rst_n(rst_n),
      .in_tdata(in_sr),
      .in_tvalid(v_r),
      .in_tready(x_ready),
      .out_tdata(y),
      .out_tvalid(y_valid),
      .out_tready(r_r)
  );
  always @(posedge clk) begin
    in_sr <= {{in_sr, sin}};
    v_r <= in_valid;
    r_r <= out_ready;
    in_ready_r <= x_ready;
    out_valid_r <= y_valid;
    out_sr <= y_valid ? y : {{out_sr, 1'b0}};
  end
  assign sout = out_sr[{2}];
  assign in_ready = in_ready_r;
  assign out_valid = out_valid_r;
endmodule
)",
                     top, inW - 1, outW - 1);
}

std::string firstLineWith(const std::string& text, const std::string& what) {
  size_t p = text.find(what);
  if (p == std::string::npos) return "";
  size_t b = text.rfind('\n', p);
  b = b == std::string::npos ? 0 : b + 1;
  return text.substr(b, text.find('\n', p) - b);
}

PnrResult placeAndRoute(const fs::path& outdir, const SynthOptions& o, const SynthReport& r,
                        const std::string& read) {
  Ice40Device dev = ice40Device(o.device);
  PnrResult p;
  p.device = dev.name;
  p.package = dev.package;
  p.targetMhz = o.pnrTargetMhz;
  int rc = 0;
  std::string v = runCapture("nextpnr-ice40 --version 2>&1", &rc);
  p.nextpnrVersion = v.substr(0, v.find('\n'));
  fs::path dir = outdir / "synth" / "ice40" / ("pnr-" + dev.name);
  fs::create_directories(dir);
  auto [inW, outW] = topPortWidths(outdir / "rtl" / (r.top + ".v"), r.top);
  p.wrapperFlipFlops = inW + outW + 4;
  frontend::writeFileAtomic(dir / "triad_pnr_top.v", pnrWrapper(r.top, inW, outW));
  // SB_MAC16s only when all the multipliers fit in them: Yosys maps every wide product or none.
  p.dspMapped = dev.dsp > 0 && r.total.dsp <= dev.dsp;
  std::string ys = fmt::format(
      "# Generated by triad synth --pnr: the whole design, flattened, for nextpnr-ice40\n"
      "{}\nread_verilog triad_pnr_top.v\n"
      "synth_ice40 {}-flatten -top triad_pnr_top -json top.json\n"
      "tee -q -o top.stat.json stat -json\n",
      std::regex_replace(read, std::regex("\\.\\./\\.\\./rtl/"), "../../../rtl/"),
      p.dspMapped ? "-dsp " : "");
  frontend::writeFileAtomic(dir / "top.ys", ys);
  const std::string timeout = fmt::format("timeout -k 10 {} ", o.pnrTimeoutSeconds);
  fs::remove(dir / "top.json");
  auto t0 = std::chrono::steady_clock::now();
  runCapture(fmt::format("cd {} && {}yosys -q -l top.yosys.log -s top.ys >/dev/null 2>&1",
                         pathQuote(dir), timeout),
             &rc);
  p.synthSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (exitStatus(rc) == 124 || exitStatus(rc) == 137)
    fail(ErrorKind::Runtime,
         "yosys did not synthesize the flattened design within {} s (log: {}); raise "
         "--pnr-timeout",
         o.pnrTimeoutSeconds, (dir / "top.yosys.log").string());
  if (rc != 0 || !fs::exists(dir / "top.json"))
    fail(ErrorKind::Runtime, "yosys failed on the flattened design (log: {})",
         (dir / "top.yosys.log").string());
  // Cells that cannot share a tile: more than the device has is a clear "does not fit" before
  // nextpnr's less direct placement error.
  nlohmann::json st = nlohmann::json::parse(frontend::readFile(dir / "top.stat.json"));
  SynthCounts c = classify(st["design"]["num_cells_by_type"], "ice40");
  auto overflow = [&](const std::string& what, int64_t used, int64_t avail) {
    if (used > avail)
      fail(ErrorKind::Unsupported, "{} does not fit the {}: {} needs {} {}, the device has {}",
           r.top, dev.label, r.top, used, what, avail);
  };
  overflow("SB_RAM40_4K block RAMs", c.bram, dev.ram);
  overflow("SB_MAC16 DSPs", c.dsp, dev.dsp);
  overflow("SB_LUT4 (logic cells)", c.lut, dev.logicCells);
  overflow("flip-flops (logic cells)", c.ff, dev.logicCells);

  p.log = (dir / "nextpnr.log").string();
  fs::remove(dir / "report.json");
  fs::remove(p.log);
  auto t1 = std::chrono::steady_clock::now();
  // Unconstrained pins: nextpnr places the 7 wrapper ports. --timing-allow-fail: report the
  // achieved Fmax instead of failing when the target is missed. A fixed seed: reproducible.
  runCapture(fmt::format("cd {} && {}nextpnr-ice40 {} --package {} --json top.json --freq {} "
                         "--pcf-allow-unconstrained --timing-allow-fail --seed 1 "
                         "--report report.json -q -l nextpnr.log >/dev/null 2>&1",
                         pathQuote(dir), timeout, dev.flag, dev.package, o.pnrTargetMhz),
             &rc);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (exitStatus(rc) == 124 || exitStatus(rc) == 137)
    fail(ErrorKind::Runtime,
         "nextpnr-ice40 did not finish within {} s (log: {}); raise --pnr-timeout",
         o.pnrTimeoutSeconds, p.log);
  std::string log = fs::exists(p.log) ? frontend::readFile(p.log) : "";
  if (rc != 0 || !fs::exists(dir / "report.json")) {
    // nextpnr prints "Info:     ICESTORM_LC:  5383/ 5280   101%" before it gives up.
    std::regex util("(ICESTORM_\\w+|SB_\\w+):\\s*(\\d+)/\\s*(\\d+)");
    for (std::sregex_iterator it(log.begin(), log.end(), util), end; it != end; ++it)
      if (std::stoll((*it)[2]) > std::stoll((*it)[3]))
        fail(ErrorKind::Unsupported,
             "{} does not fit the {}: nextpnr-ice40 needs {} {}, the device "
             "has {} (log: {})",
             r.top, dev.label, (*it)[2].str(), (*it)[1].str(), (*it)[3].str(), p.log);
    std::string err = firstLineWith(log, "ERROR:");
    fail(ErrorKind::Runtime, "nextpnr-ice40 failed on {} for the {}{} (log: {})", r.top, dev.label,
         err.empty() ? "" : ": " + err, p.log);
  }
  nlohmann::json rep = nlohmann::json::parse(frontend::readFile(dir / "report.json"));
  // One clock (clk); nextpnr names its global net, e.g. clk$SB_IO_IN_$glb_clk.
  for (const auto& [clock, f] : rep["fmax"].items())
    p.fmaxMhz = f["achieved"].get<double>();
  if (p.fmaxMhz <= 0) { // fall back on the log's last "Max frequency for clock 'clk...': X MHz"
    std::regex mf("Max frequency for clock '[^']*': ([0-9.]+) MHz");
    for (std::sregex_iterator it(log.begin(), log.end(), mf), end; it != end; ++it)
      p.fmaxMhz = std::stod((*it)[1]);
  }
  const auto& u = rep["utilization"];
  auto used = [&](const char* k, int64_t* n, int64_t* avail) {
    if (u.contains(k)) {
      *n = u[k]["used"].get<int64_t>();
      *avail = u[k]["available"].get<int64_t>();
    }
  };
  used("ICESTORM_LC", &p.logicCells, &p.logicCellsAvailable);
  used("ICESTORM_RAM", &p.ram, &p.ramAvailable);
  used("ICESTORM_DSP", &p.dsp, &p.dspAvailable);
  if (p.fmaxMhz <= 0)
    fail(ErrorKind::Runtime, "nextpnr-ice40 reported no Fmax for clk (log: {})", p.log);
  return p;
}

} // namespace

double Xc7DelayModel::periodNs(const PathMix& p) const {
  return clockToQ + setup + net + double(p.lut) * (net + lut) + double(p.carryEntry) * carryEntry +
         double(p.carry) * carry + double(p.muxf) * muxf + double(p.dsp) * (net + dsp) +
         double(p.dspCascade) * dspCascade;
}

double Xc7DelayModel::fmaxMhz(const PathMix& p) const {
  return std::min(1000 / periodNs(p), clockCapMhz);
}

void SynthCounts::add(const SynthCounts& o) {
  lut += o.lut;
  ff += o.ff;
  dsp += o.dsp;
  bram18 += o.bram18;
  bram36 += o.bram36;
  bram += o.bram;
  lutram += o.lutram;
  carry += o.carry;
  muxf += o.muxf;
  for (const auto& [t, n] : o.cells)
    cells[t] += n;
}

bool haveYosys() {
  int rc = 0;
  runCapture("yosys -V >/dev/null 2>&1", &rc);
  return rc == 0;
}

bool haveNextpnrIce40() {
  int rc = 0;
  runCapture("nextpnr-ice40 --version >/dev/null 2>&1", &rc);
  return rc == 0;
}

SynthReport synthesize(const fs::path& outdirArg, const SynthOptions& o) {
  const fs::path outdir = fs::absolute(outdirArg);
  if (o.family != "xc7" && o.family != "ice40")
    fail(ErrorKind::Usage, "--family '{}': the families are xc7 and ice40", o.family);
  if (!fs::exists(outdir / "summary.json") || !fs::is_directory(outdir / "rtl"))
    fail(ErrorKind::Usage,
         "{} has no summary.json and rtl/: write it with triad compile --target fpga",
         outdirArg.string());
  if (o.pnr && o.family != "ice40")
    fail(ErrorKind::Usage, "--pnr places and routes on iCE40 only: add --family ice40");
  if (o.pnr) ice40Device(o.device); // a bad --device fails before any synthesis
  int rc = 0;
  std::string version = runCapture("yosys -V 2>&1", &rc);
  if (rc != 0)
    fail(ErrorKind::Io,
         "yosys is not on PATH: triad synth needs Yosys (run scripts/setup.sh to install it)");
  if (o.pnr && !haveNextpnrIce40())
    fail(ErrorKind::Io, "nextpnr-ice40 is not on PATH: triad synth --pnr needs it (run "
                        "scripts/setup.sh to install it)");
  nlohmann::json s = nlohmann::json::parse(frontend::readFile(outdir / "summary.json"));
  SynthReport r;
  r.family = o.family;
  r.top = s["top"].get<std::string>();
  r.yosysVersion = version.substr(0, version.find('\n'));
  std::vector<std::string> sources;
  for (const auto& e : fs::directory_iterator(outdir / "rtl"))
    if (e.path().extension() == ".v")
      sources.push_back("../../rtl/" + e.path().filename().string());
  std::sort(sources.begin(), sources.end());
  std::string read = fmt::format("read_verilog {}", fmt::join(sources, " "));
  std::vector<std::string> layerModules;
  for (const auto& l : s["layers"]) {
    SynthUnit u;
    u.module = l["module"].get<std::string>();
    u.layer = l["layer"].get<std::string>();
    u.op = l["op"].get<std::string>();
    layerModules.push_back(u.module);
    r.units.push_back(std::move(u));
  }
  SynthUnit glue;
  glue.module = r.top;
  r.units.push_back(glue);

  fs::path dir = outdir / "synth" / o.family;
  fs::create_directories(dir);
  const std::string synthCmd = o.family == "xc7"
                                   ? "synth_xilinx -family xc7 -flatten -noiopad -noclkbuf -top"
                                   : "synth_ice40 -dsp -flatten -top";
  // Sequential cells cut the paths ltp measures.
  const std::string comb =
      o.family == "xc7" ? "t:FD* t:LD* %u t:SRL* %u t:RAMB* %u %n" : "t:SB_DFF* t:SB_RAM* %u %n";
  std::vector<std::string> scripts;
  for (const SynthUnit& u : r.units) {
    bool isGlue = u.layer.empty();
    fs::path base = dir / (isGlue ? "glue" : u.module);
    std::string ys = "# Generated by triad synth: Yosys script for " + u.module +
                     (isGlue ? " (the top's glue; layer modules are black boxes)" : "") + "\n" +
                     read + "\n";
    if (isGlue && !layerModules.empty())
      ys += fmt::format("blackbox {}\n", fmt::join(layerModules, " "));
    ys += fmt::format("{} {}\n", synthCmd, u.module);
    ys += fmt::format("tee -q -o {} stat -json\n", base.filename().string() + ".stat.json");
    if (!isGlue)
      ys += fmt::format("tee -q -o {} ltp -noff {}\n", base.filename().string() + ".ltp", comb);
    if (!isGlue && o.family == "xc7") {
      // Which path cells are carries, wide muxes or DSPs, for the delay model.
      std::string kinds = base.filename().string() + ".kinds";
      ys += fmt::format("tee -q -o {0} log KIND CARRY4\ntee -q -a {0} select -list t:CARRY4\n"
                        "tee -q -a {0} log KIND MUXF\ntee -q -a {0} select -list t:MUXF*\n"
                        "tee -q -a {0} log KIND DSP48E1\ntee -q -a {0} select -list t:DSP48E1\n",
                        kinds);
    }
    frontend::writeFileAtomic(base.string() + ".ys", ys);
    scripts.push_back(base.string());
  }

  // Largest first, so that parallel jobs finish together.
  std::vector<size_t> order(r.units.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  auto weight = [&](size_t i) -> int64_t {
    if (i >= s["layers"].size()) return 0;
    const auto& l = s["layers"][i];
    return l.value("multipliers", int64_t(0)) * 64 + l.value("inputs", int64_t(0));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weight(a) > weight(b); });
  int jobs = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, int(order.size()));
  r.jobs = jobs;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> errors;
  auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      SynthUnit& u = r.units[order[k]];
      const std::string& base = scripts[order[k]];
      u.log = base + ".log";
      fs::remove(base + ".stat.json");
      fs::remove(base + ".ltp");
      fs::remove(base + ".kinds");
      auto ts = std::chrono::steady_clock::now();
      int code = 0;
      runCapture(fmt::format("cd {} && yosys -q -l {} -s {} >/dev/null 2>&1", pathQuote(dir),
                             pathQuote(u.log), pathQuote(base + ".ys")),
                 &code);
      u.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
      std::lock_guard<std::mutex> lock(mu);
      if (code != 0 || !fs::exists(base + ".stat.json")) {
        errors.push_back(fmt::format("yosys failed on module {} (log: {})", u.module, u.log));
        continue;
      }
      nlohmann::json st = nlohmann::json::parse(frontend::readFile(base + ".stat.json"));
      u.counts = classify(st["design"]["num_cells_by_type"], o.family);
      for (const std::string& m : layerModules) { // the glue's black boxes
        u.counts.cells.erase(m);
        u.counts.cells.erase("\\" + m);
      }
      if (fs::exists(base + ".ltp")) {
        std::string ltp = frontend::readFile(base + ".ltp");
        size_t p = ltp.find("(length=");
        if (p != std::string::npos && ltp.find("Detected loop") == std::string::npos)
          u.logicDepth = std::stoll(ltp.substr(p + 8));
        if (u.logicDepth && fs::exists(base + ".kinds")) {
          u.path = pathMix(ltp.substr(p), readKinds(base + ".kinds", u.module));
          if (u.path && u.path->levels() == *u.logicDepth) {
            u.periodNs = r.delayModel.periodNs(*u.path);
            u.fmaxMhz = r.delayModel.fmaxMhz(*u.path);
          }
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < jobs; ++i)
    pool.emplace_back(worker);
  for (auto& t : pool)
    t.join();
  r.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!errors.empty()) fail(ErrorKind::Runtime, "{}", fmt::join(errors, "; "));
  for (const SynthUnit& u : r.units) {
    r.total.add(u.counts);
    if (u.logicDepth) r.maxLogicDepth = std::max(r.maxLogicDepth.value_or(0), *u.logicDepth);
    if (u.fmaxMhz && (!r.fmaxMhz || *u.fmaxMhz < *r.fmaxMhz)) {
      r.fmaxMhz = u.fmaxMhz;
      r.slowestModule = u.module;
    }
  }
  if (o.pnr) r.pnr = placeAndRoute(outdir, o, r, read);
  return r;
}

} // namespace triad::sim
