#include "sim/Timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace triad::sim {

namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

struct Pin {
  std::string name; // "A[3]", "O"
  std::string port; // "A", "O"
  int net = -1;
};

struct Cell {
  std::string type;
  std::map<std::string, std::string> params;
  std::vector<Pin> pins;
  int64_t param(const std::string& k, int64_t dflt = 0) const {
    auto it = params.find(k);
    if (it == params.end()) return dflt;
    const std::string& v = it->second;
    if (v.empty() || v.find_first_not_of("01") != std::string::npos) return dflt;
    int64_t r = 0;
    for (char c : v.size() > 62 ? v.substr(v.size() - 62) : v)
      r = r * 2 + (c - '0');
    return r;
  }
  std::string str(const std::string& k) const {
    auto it = params.find(k);
    if (it == params.end()) return "";
    std::string v = it->second;
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
};

struct Netlist {
  std::vector<std::string> netNames;
  std::unordered_map<std::string, int> netId;
  std::vector<Cell> cells;
  std::vector<int> inputs, outputs;
  std::vector<std::pair<int, int>> buffers; // .names a b (1 1): b = a
  std::set<int> constants;
  int net(const std::string& n) {
    auto [it, fresh] = netId.try_emplace(n, int(netNames.size()));
    if (fresh) netNames.push_back(n);
    return it->second;
  }
};

// Joins BLIF's continuation lines ('\' at the end) and splits on whitespace.
std::vector<std::vector<std::string>> blifLines(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line, acc;
  while (std::getline(in, line)) {
    if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
    if (!line.empty() && line.back() == '\\') {
      acc += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    acc += line;
    std::istringstream ws(acc);
    std::vector<std::string> toks;
    for (std::string t; ws >> t;)
      toks.push_back(t);
    if (!toks.empty()) out.push_back(std::move(toks));
    acc.clear();
  }
  return out;
}

Netlist parseBlif(const std::string& text) {
  Netlist n;
  auto lines = blifLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& t = lines[i];
    if (t[0] == ".inputs" || t[0] == ".outputs") {
      for (size_t k = 1; k < t.size(); ++k)
        (t[0] == ".inputs" ? n.inputs : n.outputs).push_back(n.net(t[k]));
    } else if (t[0] == ".subckt") {
      Cell c;
      c.type = t[1];
      for (size_t k = 2; k < t.size(); ++k) {
        size_t eq = t[k].find('=');
        if (eq == std::string::npos) continue;
        Pin p;
        p.name = t[k].substr(0, eq);
        p.port = p.name.substr(0, p.name.find('['));
        p.net = n.net(t[k].substr(eq + 1));
        c.pins.push_back(std::move(p));
      }
      n.cells.push_back(std::move(c));
    } else if (t[0] == ".param" && !n.cells.empty() && t.size() >= 3) {
      n.cells.back().params[t[1]] = t[2];
    } else if (t[0] == ".names") {
      // A buffer (".names a b" + "1 1") or a constant (".names b", optionally "1").
      if (t.size() == 3) {
        n.buffers.push_back({n.net(t[1]), n.net(t[2])});
      } else if (t.size() == 2) {
        n.constants.insert(n.net(t[1]));
      }
    }
  }
  for (const char* k : {"$false", "$true", "$undef"})
    if (auto it = n.netId.find(k); it != n.netId.end()) n.constants.insert(it->second);
  return n;
}

bool isLut(const std::string& t) {
  return (t.size() == 4 && t.starts_with("LUT") && t[3] >= '1' && t[3] <= '6') || t == "INV";
}
bool isFf(const std::string& t) {
  return t == "FDRE" || t == "FDSE" || t == "FDCE" || t == "FDPE" || t == "FDRE_1" ||
         t == "FDSE_1" || t == "FDCE_1" || t == "FDPE_1" || t == "LDCE" || t == "LDPE";
}
bool isDsp(const std::string& t) {
  return t == "DSP48E1";
}
bool isBram(const std::string& t) {
  return t == "RAMB18E1" || t == "RAMB36E1";
}
bool isSrl(const std::string& t) {
  return t == "SRL16E" || t == "SRLC32E";
}
bool isLutRam(const std::string& t) {
  return t.starts_with("RAM") && !isBram(t);
}

bool isOutput(const Cell& c, const std::string& port) {
  const std::string& t = c.type;
  if (isLut(t) || t.starts_with("MUXF")) return port == "O";
  if (t == "CARRY4") return port == "O" || port == "CO";
  if (isFf(t) || isSrl(t)) return port == "Q" || port == "Q31";
  if (isDsp(t))
    return port == "P" || port == "PCOUT" || port == "ACOUT" || port == "BCOUT" ||
           port == "CARRYOUT" || port == "CARRYCASCOUT" || port == "MULTSIGNOUT" ||
           port == "OVERFLOW" || port == "UNDERFLOW" || port == "PATTERNDETECT" ||
           port == "PATTERNBDETECT";
  if (isBram(t)) return port.starts_with("DO") || port.starts_with("CASCADEOUT");
  if (isLutRam(t)) return port.starts_with("DO") || port == "SPO" || port == "DPO" || port == "O";
  return false;
}

// An input pin's role: "arc" (combinational into the outputs), "end" (a setup check) or "clock".
struct PinRole {
  bool clock = false;
  double setup = -1;                                // >= 0: an endpoint with this setup time
  std::vector<std::pair<std::string, double>> arcs; // output port, cell delay
  std::string kind;                                 // the PathMix field of the arcs
};

// The DSP48E1 figures of Yosys' cells_sim.v (prjxray, -1), in ns, by the cell's registers.
struct DspTiming {
  const Cell& c;
  int64_t areg, breg, creg, dreg, adreg, mreg, preg;
  bool mult, dport;
  explicit DspTiming(const Cell& cell)
      : c(cell), areg(c.param("AREG", 1)), breg(c.param("BREG", 1)), creg(c.param("CREG", 1)),
        dreg(c.param("DREG", 1)), adreg(c.param("ADREG", 1)), mreg(c.param("MREG", 1)),
        preg(c.param("PREG", 1)), mult(c.str("USE_MULT") != "NONE"),
        dport(c.str("USE_DPORT") == "TRUE") {}
  bool anyReg() const { return preg || areg || adreg || breg || creg || dreg || mreg; }
  double pArrival() const { // P's clock-to-out from the last register before it
    if (preg) return 0.329;
    if (creg) return 1.687;
    if (mreg) return 1.671;
    if (mult) return areg ? (dport ? 3.935 : 2.952) : 2.813;
    return areg ? 1.632 : 1.616;
  }
  double required(const std::string& port) const {
    if (port == "A" || port == "ACIN") {
      if (areg) return 0.254;
      if (mult && !dport) return mreg ? 1.416 : 2.739;
      if (mult) return mreg ? 2.400 : adreg ? 1.283 : 3.723;
      return 1.441;
    }
    if (port == "B" || port == "BCIN") {
      if (breg) return 0.324;
      if (mreg) return 1.285;
      return mult ? 2.608 : 1.428;
    }
    if (port == "C") return creg ? 0.168 : 1.244;
    if (port == "D") return dreg ? 0.248 : adreg ? 1.195 : mreg ? 2.310 : 3.635;
    if (port == "PCIN") return 1.025;
    return 0.30;
  }
  bool combToP(const std::string& port) const {
    if (port == "A" || port == "ACIN") return !preg && !mreg && !areg && !adreg;
    if (port == "B" || port == "BCIN") return !preg && !mreg && !breg;
    if (port == "C") return !preg && !creg;
    if (port == "D") return !preg && !mreg && !adreg && !dreg;
    if (port == "PCIN" || port == "CARRYCASCIN" || port == "MULTSIGNIN") return !preg;
    return false;
  }
  double comb(const std::string& port, bool pcout) const {
    double d = 1.325;
    if (port == "A" || port == "ACIN")
      d = mult ? (dport ? 3.806 : 2.823) : 1.523;
    else if (port == "B" || port == "BCIN")
      d = mult ? 2.690 : 1.509;
    else if (port == "D")
      d = 3.717;
    else if (port == "PCIN" || port == "CARRYCASCIN" || port == "MULTSIGNIN")
      d = 1.107;
    return d + (pcout ? 0.148 : 0);
  }
};

PinRole pinRole(const Cell& c, const Pin& p, const Xc7DelayModel& m) {
  PinRole r;
  const std::string& t = c.type;
  const std::string& port = p.port;
  if (port == "C" && (isFf(t) || isSrl(t))) return r.clock = true, r;
  if (port == "CLK" || port.starts_with("CLKARD") || port.starts_with("CLKBWR") || port == "WCLK")
    return r.clock = true, r;
  if (isLut(t)) {
    r.arcs = {{"O", m.lut}};
    r.kind = "lut";
  } else if (t.starts_with("MUXF")) {
    r.arcs = {{"O", m.muxf}};
    r.kind = "muxf";
  } else if (t == "CARRY4") {
    bool ci = port == "CI";
    r.arcs = {{"O", ci ? m.carry : m.carryEntry}, {"CO", ci ? m.carry : m.carryEntry}};
    r.kind = ci ? "carry" : "carry_entry";
  } else if (isFf(t)) {
    r.setup = (port == "D" || port == "CE" || port == "G" || port == "GE") ? m.setup : m.resetSetup;
  } else if (isSrl(t)) {
    if (port == "A")
      r.arcs = {{"Q", m.lut}}, r.kind = "lut";
    else
      r.setup = m.lutRamSetup;
  } else if (isLutRam(t)) {
    if (port.starts_with("ADDR") || port == "A" || port == "DPRA" || port.starts_with("RADR"))
      r.arcs = {{"DO", m.lut}, {"SPO", m.lut}, {"DPO", m.lut}, {"O", m.lut}}, r.kind = "lut";
    if (!port.starts_with("DPRA")) r.setup = m.lutRamSetup; // the write side
  } else if (isBram(t)) {
    if (port.starts_with("ADDR"))
      r.setup = 0.566;
    else if (port.starts_with("WE"))
      r.setup = 0.532;
    else if (port.starts_with("DI"))
      r.setup = 0.737;
    else if (port.starts_with("REGCE"))
      r.setup = 0.360;
    else if (port.starts_with("RST"))
      r.setup = 0.342;
    else
      r.setup = 0.566; // EN*, the rest
  } else if (isDsp(t)) {
    DspTiming d(c);
    static const std::set<std::string> data = {"A",    "B",    "C",           "D",         "PCIN",
                                               "ACIN", "BCIN", "CARRYCASCIN", "MULTSIGNIN"};
    if (data.count(port)) {
      if (d.combToP(port)) {
        r.arcs = {{"P", d.comb(port, false)}, {"PCOUT", d.comb(port, true)}};
        r.kind = (port == "PCIN" || port == "CARRYCASCIN" || port == "MULTSIGNIN") ? "dsp_cascade"
                                                                                   : "dsp";
      } else {
        r.setup = d.required(port);
      }
    } else if (port.starts_with("CE")) {
      r.setup = m.setup; // a clock enable: as a flip-flop's
    } else if (port.starts_with("RST")) {
      r.setup = m.resetSetup;
    } else if (!d.preg && (port == "OPMODE" || port == "ALUMODE" || port == "CARRYIN" ||
                           port == "CARRYINSEL" || port == "INMODE")) {
      r.arcs = {{"P", 1.325}, {"PCOUT", 1.473}}; // as C -> P
      r.kind = "dsp";
    } else {
      r.setup = 0.30;
    }
  }
  return r;
}

// Dedicated wiring inside a slice or between DSPs: no general-routing net.
bool dedicated(const Cell* driver, const std::string& driverPort, const Cell& sink,
               const std::string& sinkPort) {
  if (!driver) return false;
  const std::string &dt = driver->type, &st = sink.type;
  if (dt == "CARRY4" && st == "CARRY4") return driverPort == "CO" && sinkPort == "CI";
  // A LUT (an INV is a LUT1) drives its own slice's carry chain and wide multiplexers.
  if (isLut(dt) && st == "CARRY4") return sinkPort == "S" || sinkPort == "DI";
  if (isLut(dt) && st == "MUXF7") return sinkPort == "I0" || sinkPort == "I1";
  if (dt == "MUXF7" && st == "MUXF8") return sinkPort == "I0" || sinkPort == "I1";
  if (isDsp(dt) && isDsp(st))
    return (driverPort == "PCOUT" && sinkPort == "PCIN") ||
           (driverPort == "ACOUT" && sinkPort == "ACIN") ||
           (driverPort == "BCOUT" && sinkPort == "BCIN") ||
           (driverPort == "CARRYCASCOUT" && sinkPort == "CARRYCASCIN") ||
           (driverPort == "MULTSIGNOUT" && sinkPort == "MULTSIGNIN");
  return false;
}

bool knownType(const std::string& t) {
  return isLut(t) || t.starts_with("MUXF") || t == "CARRY4" || isFf(t) || isDsp(t) || isBram(t) ||
         isSrl(t) || isLutRam(t);
}

} // namespace

std::optional<TimingPath> criticalPath(const std::string& blif, const Xc7DelayModel& m,
                                       std::string* why) {
  Netlist n = parseBlif(blif);
  const size_t N = n.netNames.size();
  // Buffers merge nets: every net is represented by its root.
  std::vector<int> root(N);
  for (size_t i = 0; i < N; ++i)
    root[i] = int(i);
  auto find = [&](int x) {
    while (root[size_t(x)] != x)
      x = root[size_t(x)] = root[size_t(root[size_t(x)])];
    return x;
  };
  for (auto [a, b] : n.buffers)
    root[size_t(find(b))] = find(a);
  std::vector<bool> constant(N, false);
  for (int c : n.constants)
    constant[size_t(find(c))] = true;

  // Drivers and launch times.
  std::vector<std::pair<int, std::string>> driver(N, {-1, ""}); // cell, port
  std::vector<double> launch(N, kNone);
  std::vector<std::string> launchWhat(N);
  std::set<std::string> unknown;
  for (size_t ci = 0; ci < n.cells.size(); ++ci) {
    Cell& c = n.cells[ci];
    if (!knownType(c.type)) unknown.insert(c.type);
    for (Pin& p : c.pins) {
      p.net = find(p.net);
      if (!isOutput(c, p.port)) continue;
      driver[size_t(p.net)] = {int(ci), p.port};
      double t = kNone;
      std::string what;
      if (isFf(c.type)) {
        t = m.clockToQ, what = "flip-flop";
      } else if (isSrl(c.type)) {
        t = m.srlClockToOut, what = "shift register (SRL)";
      } else if (isBram(c.type) && p.port.starts_with("DO")) {
        bool reg = p.port.find('A') != std::string::npos ? c.param("DOA_REG") : c.param("DOB_REG");
        t = reg ? m.bramClockToOutReg : m.bramClockToOut;
        what = reg ? "block RAM (output register)" : "block RAM read";
      } else if (isDsp(c.type)) {
        DspTiming d(c);
        if (d.anyReg()) {
          t = d.pArrival() + (p.port == "PCOUT" ? 0.106 : 0);
          what = d.preg ? "DSP48E1 P register" : d.mreg ? "DSP48E1 M register" : "DSP48E1 register";
        }
      }
      launch[size_t(p.net)] = t;
      launchWhat[size_t(p.net)] = what;
    }
  }
  if (!unknown.empty()) {
    *why = fmt::format("cell types without a delay model: {}", fmt::join(unknown, ", "));
    return std::nullopt;
  }
  for (int i : n.inputs) {
    int r = find(i);
    if (n.netNames[size_t(i)] == "clk") continue;
    launch[size_t(r)] = m.clockToQ;
    launchWhat[size_t(r)] = "input port " + n.netNames[size_t(i)];
  }

  // Arcs (net -> net through a cell) and endpoints.
  struct Arc {
    int from, to, cell;
    std::string fromPin, toPort, kind;
    double net, delay;
  };
  struct End {
    int net, cell;
    std::string pin;
    double netNs, setup;
  };
  std::vector<Arc> arcs;
  std::vector<End> ends;
  auto netDelay = [&](int net, const Cell& sink, const std::string& port) {
    auto [dc, dp] = driver[size_t(net)];
    return dedicated(dc >= 0 ? &n.cells[size_t(dc)] : nullptr, dp, sink, port) ? 0.0 : m.net;
  };
  for (size_t ci = 0; ci < n.cells.size(); ++ci) {
    const Cell& c = n.cells[ci];
    for (const Pin& p : c.pins) {
      if (isOutput(c, p.port) || constant[size_t(p.net)]) continue;
      PinRole r = pinRole(c, p, m);
      if (r.clock) continue;
      double nd = netDelay(p.net, c, p.port);
      if (r.setup >= 0) ends.push_back({p.net, int(ci), p.name, nd, r.setup});
      for (const auto& [outPort, d] : r.arcs)
        for (const Pin& o : c.pins)
          if (o.port == outPort && isOutput(c, o.port))
            arcs.push_back({p.net, o.net, int(ci), p.name, o.name, r.kind, nd, d});
    }
  }
  for (int o : n.outputs)
    ends.push_back({find(o), -1, n.netNames[size_t(o)], m.net, m.setup});

  // Arrival times in topological order (Kahn), with the arc each net's arrival came through.
  std::vector<std::vector<int>> out(N);
  std::vector<int> indeg(N, 0);
  for (size_t a = 0; a < arcs.size(); ++a) {
    out[size_t(arcs[a].from)].push_back(int(a));
    ++indeg[size_t(arcs[a].to)];
  }
  std::vector<double> arr = launch;
  std::vector<int> via(N, -1);
  std::vector<int> queue;
  for (size_t i = 0; i < N; ++i)
    if (indeg[i] == 0) queue.push_back(int(i));
  size_t done = 0;
  while (done < queue.size()) {
    int x = queue[done++];
    for (int a : out[size_t(x)]) {
      const Arc& e = arcs[size_t(a)];
      if (arr[size_t(x)] != kNone && !constant[size_t(x)]) {
        double t = arr[size_t(x)] + e.net + e.delay;
        if (t > arr[size_t(e.to)]) arr[size_t(e.to)] = t, via[size_t(e.to)] = a;
      }
      if (--indeg[size_t(e.to)] == 0) queue.push_back(e.to);
    }
  }
  if (done < N) {
    *why = "a combinational loop";
    return std::nullopt;
  }
  const End* worst = nullptr;
  double worstT = kNone;
  for (const End& e : ends) {
    if (arr[size_t(e.net)] == kNone || constant[size_t(e.net)]) continue;
    double t = arr[size_t(e.net)] + e.netNs + e.setup;
    if (t > worstT) worstT = t, worst = &e;
  }
  if (!worst) {
    *why = "no register-to-register path";
    return std::nullopt;
  }
  TimingPath path;
  std::vector<TimingStep> rev;
  const Cell* ec = worst->cell >= 0 ? &n.cells[size_t(worst->cell)] : nullptr;
  rev.push_back({ec ? ec->type : "output port", worst->pin, "", "capture",
                 n.netNames[size_t(worst->net)], worst->netNs, worst->setup});
  int x = worst->net;
  while (via[size_t(x)] >= 0) {
    const Arc& e = arcs[size_t(via[size_t(x)])];
    const Cell& c = n.cells[size_t(e.cell)];
    rev.push_back({c.type, e.fromPin, e.toPort, e.kind, n.netNames[size_t(x)], e.net, e.delay});
    int64_t PathMix::*field = e.kind == "lut"           ? &PathMix::lut
                              : e.kind == "carry"       ? &PathMix::carry
                              : e.kind == "carry_entry" ? &PathMix::carryEntry
                              : e.kind == "muxf"        ? &PathMix::muxf
                              : e.kind == "dsp"         ? &PathMix::dsp
                                                        : &PathMix::dspCascade;
    ++(path.mix.*field);
    x = e.from;
  }
  auto [dc, dp] = driver[size_t(x)];
  rev.push_back({dc >= 0 ? n.cells[size_t(dc)].type : "input port", "", dp, "launch",
                 n.netNames[size_t(x)], 0, launch[size_t(x)]});
  path.steps.assign(rev.rbegin(), rev.rend());
  for (const TimingStep& s : path.steps)
    path.periodNs += s.netNs + s.cellNs;
  path.mix.capture = ec ? ec->type + " " + worst->pin : "output port " + worst->pin;
  path.mix.launch = launchWhat[size_t(x)];
  return path;
}

} // namespace triad::sim
