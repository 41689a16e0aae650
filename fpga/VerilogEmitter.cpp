#include "fpga/VerilogEmitter.h"

#include "fpga/Hdl.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>

namespace triad::fpga {

namespace {

std::string testbench(const VerilogDesign& d);

// A stream of the top module: one per value computed by a layer (pass-through layers alias).
struct Stream {
  StreamGeom geom;
  FixedFormat format;
  int64_t arrival = 0; // cycles after the design input's first transfer (longest path)
  int64_t lead = 0;    // design-input transfers taken before its first transfer
  // The latency model: when sample 0's first and last transfers pass (cycle 0: the design
  // input's first transfer; inputs offered every cycle, outputs always taken).
  int64_t first = 0, last = 0;
  std::optional<int64_t> rawMin; // RtlOperand::rawMin
  int64_t bits() const { return geom.c * format.width; }
};

// The names of the top module's scope, where wires and instances live together: a stream is a
// prefix with the wires PREFIX_tdata/_tvalid/_tready (and PREFIX_f_* when forked); an instance
// gets a name that no wire of any stream has, and the other way round (a layer "x_q0_tdata" next
// to one "x" with a FIFO would otherwise give an instance and a wire one name).
class TopScope {
public:
  TopScope() {
    take("clk", false);
    take("rst_n", false);
    take("in", true);
    take("out", true);
  }
  std::string stream(const std::string& base) {
    for (;;)
      if (std::string p = u_.fresh(base); take(p, true)) return p;
  }
  std::string instance(const std::string& base) {
    for (;;)
      if (std::string n = u_.fresh(base); take(n, false)) return n;
  }

private:
  // Takes `name` (with a stream's wires) unless one of them is taken.
  bool take(const std::string& name, bool stream) {
    std::vector<std::string> all{name};
    if (stream)
      for (const char* sfx : {"_tdata", "_tvalid", "_tready", "_f_tdata", "_f_tvalid", "_f_tready"})
        all.push_back(name + sfx);
    if (std::any_of(all.begin(), all.end(), [&](const std::string& n) { return taken_.count(n); }))
      return false;
    u_.reserve(name);
    taken_.insert(all.begin(), all.end());
    return true;
  }
  escape::Uniquer u_{escape::Lang::Verilog};
  std::set<std::string> taken_;
};

// The library modules a block instantiates (triad_dense -> triad_cast, ...).
std::set<std::string> withDependencies(std::set<std::string> blocks) {
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& [file, text] : rtlLibrary()) {
      std::string mod = file.substr(0, file.size() - 2);
      if (blocks.count(mod)) continue;
      for (const std::string& b : std::set<std::string>(blocks)) {
        auto it = std::find_if(rtlLibrary().begin(), rtlLibrary().end(),
                               [&](const auto& f) { return f.first == b + ".v"; });
        if (it != rtlLibrary().end() && it->second.find(mod + " #(") != std::string::npos) {
          blocks.insert(mod);
          grew = true;
          break;
        }
      }
    }
  }
  return blocks;
}

} // namespace

std::vector<int64_t> validReuseFactors(int64_t nIn) {
  std::vector<int64_t> r;
  for (int64_t i = 1; i <= nIn; ++i)
    if (nIn % i == 0) r.push_back(i);
  return r;
}

std::string verilogName(const std::string& s) {
  return escape::identifier(s, escape::Lang::Verilog, "l_");
}

StreamGeom streamGeomOf(const ir::Shape& s) {
  if (s.size() == 4) return {s[2], s[3], s[1], false};
  if (s.size() == 3) return {1, s[1], s[2], false, true};
  if (s.size() == 2) return {1, 1, s[1], false};
  return {1, 1, s.empty() ? 1 : s[0], false};
}

namespace {

// Whether a stream's transfers reorder the value's logical layout: NCHW pixels (and their
// Flatten) travel channels-last; rows of [B, T, K] travel as they are.
bool channelsLast(const StreamGeom& g) {
  return g.transfers() > 1 && !g.seq;
}

} // namespace

std::vector<int64_t> toStreamOrder(const std::vector<int64_t>& logical, const StreamGeom& g) {
  if (!channelsLast(g)) return logical;
  int64_t per = g.elements(), hw = g.transfers();
  std::vector<int64_t> out(logical.size());
  for (size_t s = 0; s + size_t(per) <= logical.size(); s += size_t(per))
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < hw; ++t)
        out[s + size_t(t * g.c + c)] = logical[s + size_t(c * hw + t)];
  return out;
}

std::vector<int64_t> fromStreamOrder(const std::vector<int64_t>& stream, const StreamGeom& g) {
  if (!channelsLast(g)) return stream;
  int64_t per = g.elements(), hw = g.transfers();
  std::vector<int64_t> out(stream.size());
  for (size_t s = 0; s + size_t(per) <= stream.size(); s += size_t(per))
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < hw; ++t)
        out[s + size_t(c * hw + t)] = stream[s + size_t(t * g.c + c)];
  return out;
}

std::vector<std::pair<std::string, std::string>> VerilogDesign::files() const {
  std::vector<std::pair<std::string, std::string>> f;
  for (const auto& [file, text] : rtlLibrary())
    if (std::find(blocks.begin(), blocks.end(), file.substr(0, file.size() - 2)) != blocks.end())
      f.push_back({file, text});
  f.push_back({top + ".v", verilog});
  return f;
}

ir::Resources VerilogDesign::resources() const {
  ir::Resources r = glue;
  for (const RtlStage& s : stages)
    r += s.resources;
  return r;
}

std::string VerilogDesign::fileList() const {
  std::string s = fmt::format("// Sources of '{0}' (top module: {0}), in compile order.\n",
                              escape::comment(top));
  for (const auto& [file, text] : files())
    s += file + "\n";
  return s;
}

namespace {

VerilogDesign emitDesign(const ir::Graph& g, const Emulator& emu, const VerilogOptions& o);

// Cycles a stage spends on one sample at full speed with reuse r: windows (or vectors) out,
// r cycles each, plus the steps that emit nothing (a window walker's other padded positions).
int64_t stageCycles(const RtlStage& s, int64_t r) {
  int64_t outs = s.outGeom.transfers();
  int64_t walk = std::max(s.cyclesPerFrame, s.inGeom.transfers());
  return std::max(walk - outs + outs * r, s.inGeom.transfers());
}

} // namespace

int64_t stageCyclesPerSample(const RtlStage& s) {
  return stageCycles(s, s.reuse);
}

bool isDenseCore(const RtlStage& s) {
  return s.op == "Gemm" || s.op == "MatMul" || s.op == "Conv";
}

VerilogDesign emitVerilog(const ir::Graph& g, const Emulator& emu, const VerilogOptions& opts) {
  const VerilogOptions& o = opts;
  if (!o.autoReuse) return emitDesign(g, emu, o);
  VerilogOptions one = o;
  one.autoReuse = false;
  one.reuse = 1;
  VerilogDesign d = emitDesign(g, emu, one);
  int64_t ii = 0;
  for (const RtlStage& s : d.stages)
    ii = std::max(ii, stageCycles(s, s.reuse));
  // Half the II: a stage that takes its whole share stalls the stages before it while they
  // deliver a burst (the rows of a pooled frame come in bursts), which lengthens the II; with
  // half, the SVHN CNN keeps II 1024 (measured) where a full share gave 1251.
  ii = std::max<int64_t>(ii / 2, 1);
  VerilogOptions tuned = one;
  for (const RtlStage& s : d.stages) {
    if (s.reuse < 1 || o.layerReuse.count(s.layer) || s.multipliers == 0 || !isDenseCore(s))
      continue;
    int64_t nIn = s.multipliers / std::max<int64_t>(s.nOut, 1); // at reuse 1
    int64_t best = 1;
    for (int64_t r : validReuseFactors(nIn))
      if (stageCycles(s, r) <= ii) best = r;
    tuned.layerReuse[s.layer] = best;
  }
  for (const auto& [layer, r] : o.layerReuse)
    tuned.layerReuse[layer] = r;
  return emitDesign(g, emu, tuned);
}

namespace {

VerilogDesign emitDesign(const ir::Graph& g, const Emulator& emu, const VerilogOptions& o) {
  const auto& layers = emu.layers();
  const auto& planned = emu.planned();
  if (g.inputs().size() != 1)
    fail(ErrorKind::Unsupported, "the Verilog emitter takes models with one input (this has {})",
         g.inputs().size());
  auto layerNames = [&] {
    std::string names;
    for (const LayerInfo& l : layers)
      names += (names.empty() ? "" : ", ") + l.name;
    return names;
  };
  auto isLayer = [&](const std::string& n) {
    return std::any_of(layers.begin(), layers.end(),
                       [&](const LayerInfo& l) { return l.name == n; });
  };
  if (!o.until.empty() && !isLayer(o.until))
    fail(ErrorKind::Usage, "--until '{}' is not a layer of the model (layers: {})", o.until,
         layerNames());
  for (const auto& [name, r] : o.layerReuse)
    if (!isLayer(name))
      fail(ErrorKind::Usage, "a reuse factor is given for '{}', which is not a layer", name);
  for (const auto& [name, st] : o.layerStrategy)
    if (!isLayer(name))
      fail(ErrorKind::Usage, "a strategy is given for '{}', which is not a layer (layers: {})",
           name, layerNames());
  for (const std::string& name : o.romLayers)
    if (!isLayer(name))
      fail(ErrorKind::Usage,
           "a weight storage is given for '{}', which is not a layer (layers: {})", name,
           layerNames());
  VerilogDesign d;
  d.stageLevels = o.stageLevels;
  d.clockMhz = o.clockMhz;
  // Module names: the top, then one per layer; never one of the library's blocks (a model named
  // "triad_dense") or the place-and-route wrapper of sim/Synth.cpp.
  escape::Uniquer modules(escape::Lang::Verilog);
  for (const auto& [file, text] : rtlLibrary())
    modules.reserve(file.substr(0, file.size() - 2));
  modules.reserve("triad_pnr_top");
  d.top = modules.fresh(o.name);
  const ir::Value* in = g.inputs()[0];
  d.inGeom = streamGeomOf(in->type().shape);
  d.inElems = d.inGeom.c;
  d.inFormat = emu.inputQuant().format;
  requireSigned(d.inFormat, "(input)", "input");

  std::map<int, Stream> streams;
  std::map<int, int> alias;           // a pass-through layer's output -> its stream
  std::map<int, StreamGeom> viewGeom; // ... and how the stream is read from there on
  auto streamOf = [&](int v) {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  };
  auto geomOf = [&](int v) {
    auto it = viewGeom.find(v);
    return it == viewGeom.end() ? streams.at(streamOf(v)).geom : it->second;
  };
  streams[in->id()] = {d.inGeom, d.inFormat, 0, 0, 0, d.inGeom.transfers() - 1, std::nullopt};
  std::vector<std::vector<int>> stageIns; // stream ids of each stage's operands
  std::vector<int> stageOut;              // stream id of each stage's result
  std::vector<RtlLayer> rtls;
  bool reached = false;
  for (size_t li = 0; li < layers.size() && !reached; ++li) {
    const LayerInfo& L = layers[li];
    reached = L.name == o.until;
    d.lastLayer = li;
    std::vector<int> ins;
    std::vector<RtlOperand> ops;
    for (int v : L.inputs) {
      if (v < 0) continue; // a constant operand
      int sv = streamOf(v);
      if (!streams.count(sv))
        fail(ErrorKind::Unsupported,
             "layer '{}' ({}) takes '{}', which the design does not compute", L.name, L.op,
             g.values()[size_t(v)]->name());
      ins.push_back(sv);
      ops.push_back({geomOf(v), streams.at(sv).format, streams.at(sv).rawMin});
    }
    RtlSettings rs;
    auto it = o.layerReuse.find(L.name);
    rs.reuse = it != o.layerReuse.end() ? it->second : o.reuse;
    rs.stageLevels = o.stageLevels;
    rs.clockMhz = o.clockMhz;
    rs.shiftAddDigits = o.shiftAddDigits;
    auto st = o.layerStrategy.find(L.name);
    rs.strategy = st != o.layerStrategy.end() ? st->second : o.strategy;
    rs.weightRom = o.romLayers.count(L.name) > 0;
    rs.module = fmt::format("{}_{}", d.top, verilogName(L.name));
    RtlLayer r;
    try {
      r = planned[li]->rtl(ops, rs);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Unsupported || li == 0) throw;
      fail(ErrorKind::Unsupported, "{}; use --until '{}' to end the design before it", e.what(),
           layers[li - 1].name);
    }
    if (r.passThrough) {
      alias[L.output] = ins[0];
      viewGeom[L.output] = r.out;
      continue;
    }
    r.module.name = modules.fresh(rs.module);
    const Stream& a = streams.at(ins[0]);
    RtlStage s;
    s.layer = L.name;
    s.op = L.op;
    s.layerIndex = li;
    s.module = r.module.name;
    s.in = a.format;
    s.out = r.outFormat;
    s.in2 = ins.size() > 1 ? streams.at(ins[1]).format : L.quant.bias().format;
    s.inGeom = a.geom;
    s.outGeom = r.out;
    s.nIn = a.geom.c;
    s.nOut = r.out.c;
    s.reuse = r.reuse > 0 ? r.reuse : 1;
    s.stageLevels = r.stageLevels;
    s.stageMask = r.stageMask;
    s.multipliers = r.multipliers;
    s.adderGraph = r.adderGraph;
    s.weightRom = r.weightRom;
    s.latency = r.latency;
    s.lookahead = r.lookahead;
    s.memoryBits = r.memoryBits;
    s.cyclesPerFrame = r.cyclesPerFrame;
    int64_t arrival = 0, lead = 0;
    for (int sv : ins) {
      arrival = std::max(arrival, streams.at(sv).arrival);
      lead = std::max(lead, streams.at(sv).lead);
    }
    // A layer that buffers k transfers of a frame delays its first output by as many input
    // transfers (one per cycle at full speed).
    int64_t look = std::max<int64_t>(r.lookahead - 1, 0);
    // First and last transfer: the first output needs `lookahead` inputs (arriving at the
    // operand's pace), the last output comes `trailing` steps after the last input (a window's
    // bottom and right padding) or, when the layer is slower than its input, after every output
    // took its `reuse` cycles.
    int64_t first = 0, last = 0, nIn = ops[0].geom.transfers(), nOut = r.out.transfers();
    for (int sv : ins) {
      first = std::max(first, streams.at(sv).first);
      last = std::max(last, streams.at(sv).last);
    }
    double pace = nIn > 1 ? double(last - first) / double(nIn - 1) : 1.0;
    int64_t firstOut =
        r.lookahead > 0 ? first + int64_t(double(look) * pace) + r.latency : first + r.latency;
    int64_t lastOut = std::max(last + r.trailing + r.latency,
                               firstOut + (nOut - 1) * std::max<int64_t>(r.reuse, 1));
    if (nOut == 1) firstOut = lastOut;
    int64_t operandsDone = 0; // the design input counts from its first transfer
    for (int sv : ins)
      if (sv != in->id()) operandsDone = std::max(operandsDone, streams.at(sv).last);
    s.fillCycles = lastOut - operandsDone;
    s.resources = estimateResources(*planned[li], ops, r);
    streams[L.output] = {r.out,   r.outFormat, arrival + look + r.latency, lead + look, firstOut,
                         lastOut, r.outMin};
    stageIns.push_back(ins);
    stageOut.push_back(L.output);
    rtls.push_back(std::move(r));
    d.stages.push_back(std::move(s));
  }
  if (d.stages.empty()) fail(ErrorKind::Unsupported, "the design has no layer with RTL");
  const int outStream = streamOf(layers[d.lastLayer].output);
  const Stream& outS = streams.at(outStream);
  d.outGeom = geomOf(layers[d.lastLayer].output);
  d.outElems = outS.geom.c;
  d.outFormat = outS.format;
  d.latency = outS.last;

  // Who reads each stream (stage index and operand; -1: the design output).
  std::map<int, std::vector<std::pair<int, size_t>>> readers;
  readers[in->id()];
  for (size_t i = 0; i < d.stages.size(); ++i) {
    readers[stageOut[i]];
    for (size_t k = 0; k < stageIns[i].size(); ++k)
      readers[stageIns[i][k]].push_back({int(i), k});
  }
  readers[outStream].push_back({-1, 0});
  for (size_t i = 0; i < d.stages.size(); ++i)
    if (readers[stageOut[i]].empty())
      fail(ErrorKind::Unsupported,
           "the output of layer '{}' does not reach the design output ('{}'); the Verilog "
           "emitter builds designs with one output",
           d.stages[i].layer, layers[d.lastLayer].name);

  // Stream names in the top module; a fork copies a stream read more than once.
  TopScope names;
  std::map<int, std::string> name;
  name[in->id()] = "in";
  for (size_t i = 0; i < d.stages.size(); ++i) {
    int sv = stageOut[i];
    bool onlyOut = readers[sv].size() == 1 && readers[sv][0].first == -1;
    name[sv] = onlyOut ? "out"
                       : names.stream(fmt::format("s{}_{}", i + 1, verilogName(d.stages[i].layer)));
  }
  // Connection (tdata, tvalid, tready) of reader r of stream sv.
  auto conn = [&](int sv, size_t r) -> std::array<std::string, 3> {
    const std::string& n = name[sv];
    if (readers[sv].size() == 1) return {n + "_tdata", n + "_tvalid", n + "_tready"};
    return {n + "_f_tdata", fmt::format("{}_f_tvalid[{}]", n, r),
            fmt::format("{}_f_tready[{}]", n, r)};
  };
  auto readerIndex = [&](int sv, int stage, size_t operand) {
    const auto& rs = readers[sv];
    return size_t(std::find(rs.begin(), rs.end(), std::make_pair(stage, operand)) - rs.begin());
  };
  // A join whose operands arrive at different times buffers the earlier one: the late branch
  // takes `lead` more input transfers and `arrival` more cycles before its first result; every
  // such transfer and cycle may leave one vector waiting on the early side.
  std::vector<std::vector<int64_t>> fifoDepth(d.stages.size());
  for (size_t i = 0; i < d.stages.size(); ++i) {
    fifoDepth[i].assign(stageIns[i].size(), 0);
    if (stageIns[i].size() != 2) continue;
    const Stream &s0 = streams.at(stageIns[i][0]), &s1 = streams.at(stageIns[i][1]);
    int64_t gap = std::abs(s0.arrival - s1.arrival) + std::abs(s0.lead - s1.lead);
    if (gap == 0) continue;
    int64_t depth = 2;
    while (depth < gap + 2)
      depth *= 2;
    bool firstEarly = s0.arrival + s0.lead < s1.arrival + s1.lead;
    fifoDepth[i][firstEarly ? 0 : 1] = depth;
  }
  for (const auto& [layer, depth] : o.fifoDepth) {
    auto it = std::find_if(d.stages.begin(), d.stages.end(),
                           [&n = layer](const RtlStage& s) { return s.layer == n; });
    if (it == d.stages.end() || stageIns[size_t(it - d.stages.begin())].size() != 2)
      fail(ErrorKind::Usage, "--fifo-depth '{}': not a layer joining two streams of the design",
           layer);
    if (depth < 2 || (depth & (depth - 1)) != 0)
      fail(ErrorKind::Usage, "--fifo-depth '{}={}': the depth must be a power of two >= 2", layer,
           depth);
    auto& f = fifoDepth[size_t(it - d.stages.begin())];
    if (f[0] == 0 && f[1] == 0) f[0] = depth;
    for (int64_t& x : f)
      if (x > 0) x = depth;
  }

  std::set<std::string> blocks;
  for (const RtlLayer& r : rtls)
    blocks.insert(r.blocks.begin(), r.blocks.end());
  for (const auto& [sv, rs] : readers)
    if (rs.size() > 1) blocks.insert("triad_fork");
  for (const auto& f : fifoDepth)
    if (std::any_of(f.begin(), f.end(), [](int64_t x) { return x > 0; }))
      blocks.insert("triad_fifo");
  if (o.registerStreams) blocks.insert("triad_skid");
  blocks = withDependencies(blocks);

  auto geomText = [](const StreamGeom& g) {
    return g.transfers() > 1 ? fmt::format("{}x{} pixels of {}", g.h, g.w, g.c)
                             : fmt::format("{}", g.c);
  };
  std::string v;
  v += "// Generated by triad compile --target fpga: do not edit.\n";
  v += fmt::format("// Model '{}': input {} x {}, output {} x {}; latency {} cycles.\n", d.top,
                   geomText(d.inGeom), formatToString(d.inFormat), geomText(d.outGeom),
                   formatToString(d.outFormat), d.latency);
  v += fmt::format(
      "// Streams carry one vector (or one channels-last pixel) per transfer, element i in\n"
      "// tdata[i*W +: W] (signed raw fixed point, real value = raw * 2^-frac).\n"
      "// Blocks (fpga/rtl/): {}.\n",
      fmt::join(blocks, ", "));
  v += "// Layers:\n";
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const RtlStage& s = d.stages[i];
    // The name quoted: a comment starting with a model's text could be a tool directive
    // ("// verilator ...").
    v += fmt::format("//   {:<12} {:<24} {} -> {}  {} -> {}  {}\n",
                     "'" + escape::comment(s.layer) + "'", s.module, geomText(s.inGeom),
                     geomText(s.outGeom), formatToString(s.in), formatToString(s.out),
                     rtls[i].summary);
  }
  v += "\n// One file holds every layer module and the top.\n/* verilator lint_off DECLFILENAME "
       "*/\n\n";
  for (const RtlLayer& r : rtls)
    v += r.module.print() + "\n";

  // Top module.
  hdl::Module top;
  top.name = d.top;
  top.comment = fmt::format(
      "Top: '{}'.\n"
      "  clk, rst_n      clock; synchronous active-low reset\n"
      "  in_tdata [{}:0]  {} inputs x {}, element i at [i*{} +: {}]{}\n"
      "  in_tvalid/in_tready    input handshake (a transfer when both are 1)\n"
      "  out_tdata [{}:0] {} outputs x {}, element i at [i*{} +: {}]{}\n"
      "  out_tvalid/out_tready  output handshake (back-pressure via out_tready)",
      d.top, d.inElems * d.inFormat.width - 1, d.inElems, formatToString(d.inFormat),
      d.inFormat.width, d.inFormat.width,
      d.inGeom.transfers() > 1
          ? fmt::format("\n                   {} transfers per sample ({}x{} pixels, raster order)",
                        d.inGeom.transfers(), d.inGeom.h, d.inGeom.w)
          : "",
      d.outElems * d.outFormat.width - 1, d.outElems, formatToString(d.outFormat),
      d.outFormat.width, d.outFormat.width,
      d.outGeom.transfers() > 1
          ? fmt::format("\n                   {} transfers per sample", d.outGeom.transfers())
          : "");
  top.addPort("clk", hdl::Dir::In, 1);
  top.addPort("rst_n", hdl::Dir::In, 1);
  top.addStreamIn("in", d.inElems * d.inFormat.width);
  top.addStreamOut("out", d.outElems * d.outFormat.width);
  auto fork = [&](int sv, int64_t bits) {
    size_t k = readers[sv].size();
    if (k < 2) return;
    const std::string& n = name[sv];
    top.add(hdl::Wire{n + "_f_tdata", bits, fmt::format("'{}' is read {} times", n, k)});
    top.add(hdl::Wire{n + "_f_tvalid", int64_t(k), {}});
    top.add(hdl::Wire{n + "_f_tready", int64_t(k), {}});
    top.add(hdl::Instance{"triad_fork",
                          names.instance("u_fork_" + n),
                          {{"W", std::to_string(bits)}, {"N_OUT", std::to_string(k)}},
                          {{"clk", "clk"},
                           {"rst_n", "rst_n"},
                           {"in_tdata", n + "_tdata"},
                           {"in_tvalid", n + "_tvalid"},
                           {"in_tready", n + "_tready"},
                           {"out_tdata", n + "_f_tdata"},
                           {"out_tvalid", n + "_f_tvalid"},
                           {"out_tready", n + "_f_tready"}},
                          {}});
  };
  fork(in->id(), d.inElems * d.inFormat.width);
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const RtlStage& s = d.stages[i];
    std::vector<std::array<std::string, 3>> opConn;
    for (size_t k = 0; k < stageIns[i].size(); ++k) {
      int sv = stageIns[i][k];
      auto c = conn(sv, readerIndex(sv, int(i), k));
      if (fifoDepth[i][k] > 0) {
        int64_t bits = streams.at(sv).bits();
        std::string q = names.stream(fmt::format("{}_q{}", verilogName(s.layer), k));
        const Stream &s0 = streams.at(stageIns[i][0]), &s1 = streams.at(stageIns[i][1]);
        auto why = [&](const std::string& layer) {
          return fmt::format(
              "operand {} of '{}' arrives early ({} cycles, {} input transfers): a FIFO of {}", k,
              layer, std::abs(s0.arrival - s1.arrival), std::abs(s0.lead - s1.lead),
              fifoDepth[i][k]);
        };
        top.addStreamWires(q, bits, why(escape::comment(s.layer)), true);
        std::string inst = names.instance("u_fifo_" + q);
        top.add(hdl::Instance{"triad_fifo",
                              inst,
                              {{"W", std::to_string(bits)},
                               {"DEPTH", std::to_string(fifoDepth[i][k])},
                               {"A_W", std::to_string(log2Exact(fifoDepth[i][k]))}},
                              {{"clk", "clk"},
                               {"rst_n", "rst_n"},
                               {"in_tdata", c[0]},
                               {"in_tvalid", c[1]},
                               {"in_tready", c[2]},
                               {"out_tdata", q + "_tdata"},
                               {"out_tvalid", q + "_tvalid"},
                               {"out_tready", q + "_tready"}},
                              {}});
        d.fifos.push_back({inst, s.layer, fifoDepth[i][k], bits, log2Exact(fifoDepth[i][k]),
                           o.fifoDepth.count(s.layer) > 0, why(s.layer)});
        d.glue += estimateFifo(bits, fifoDepth[i][k]);
        c = {q + "_tdata", q + "_tvalid", q + "_tready"};
      }
      if (o.registerStreams) {
        int64_t bits = streams.at(sv).bits();
        std::string q = names.stream(fmt::format("{}_s{}", verilogName(s.layer), k));
        top.addStreamWires(q, bits,
                           fmt::format("operand {} of '{}' behind a skid buffer (registered ready)",
                                       k, escape::comment(s.layer)),
                           true);
        top.add(hdl::Instance{"triad_skid",
                              names.instance("u_skid_" + q),
                              {{"W", std::to_string(bits)}},
                              {{"clk", "clk"},
                               {"rst_n", "rst_n"},
                               {"in_tdata", c[0]},
                               {"in_tvalid", c[1]},
                               {"in_tready", c[2]},
                               {"out_tdata", q + "_tdata"},
                               {"out_tvalid", q + "_tvalid"},
                               {"out_tready", q + "_tready"}},
                              {}});
        // The spare register and its select: a flip-flop and a LUT per bit.
        d.glue.ff += double(bits + 1);
        d.glue.lut += double(bits + 2);
        c = {q + "_tdata", q + "_tvalid", q + "_tready"};
      }
      opConn.push_back(c);
    }
    int sv = stageOut[i];
    const std::string& next = name[sv];
    if (next != "out") top.addStreamWires(next, s.nOut * s.out.width, {}, true);
    if (next != "out") {
      const auto& rs = readers[sv];
      std::string reader =
          rs.size() == 1 && rs[0].first >= 0 ? d.stages[size_t(rs[0].first)].layer : "(several)";
      d.streams.push_back({next, s.layer, reader});
    }
    hdl::Instance inst{s.module,
                       names.instance("u_" + verilogName(s.layer)),
                       {},
                       {{"clk", "clk"}, {"rst_n", "rst_n"}},
                       {}};
    const std::vector<std::string>& prefixes = rtls[i].operandPrefixes;
    TRIAD_ASSERT(prefixes.size() == opConn.size(), "layer '{}': {} operands, {} ports", s.layer,
                 opConn.size(), prefixes.size());
    for (size_t k = 0; k < opConn.size(); ++k) {
      inst.ports.push_back({prefixes[k] + "_tdata", opConn[k][0]});
      inst.ports.push_back({prefixes[k] + "_tvalid", opConn[k][1]});
      inst.ports.push_back({prefixes[k] + "_tready", opConn[k][2]});
    }
    inst.ports.push_back({"out_tdata", next + "_tdata"});
    inst.ports.push_back({"out_tvalid", next + "_tvalid"});
    inst.ports.push_back({"out_tready", next + "_tready"});
    top.add(std::move(inst));
    fork(sv, s.nOut * s.out.width);
  }
  if (name[outStream] != "out") {
    auto c = conn(outStream, readers[outStream].size() - 1);
    top.add(hdl::Assign{"out_tdata", c[0]});
    top.add(hdl::Assign{"out_tvalid", c[1]});
    top.add(hdl::Assign{c[2], "out_tready"});
  }
  v += top.print();
  d.verilog = std::move(v);
  d.blocks.assign(blocks.begin(), blocks.end());
  d.testbench = testbench(d);
  return d;
}

std::string testbench(const VerilogDesign& d) {
  int64_t inBits = d.inElems * d.inFormat.width, outBits = d.outElems * d.outFormat.width;
  auto words = [](int64_t bits) { return (bits + 31) / 32; };
  auto assignIn = [&]() -> std::string {
    if (inBits > 64)
      return fmt::format("  for (int i = 0; i < {}; ++i) top.in_tdata[i] = w[i];\n", words(inBits));
    if (inBits > 32) return "  top.in_tdata = (uint64_t(w[1]) << 32) | w[0];\n";
    return "  top.in_tdata = w[0];\n";
  };
  auto readOut = [&]() -> std::string {
    if (outBits > 64)
      return fmt::format("  for (int i = 0; i < {}; ++i) w[i] = top.out_tdata[i];\n",
                         words(outBits));
    if (outBits > 32)
      return "  w[0] = uint32_t(top.out_tdata);\n  w[1] = uint32_t(uint64_t(top.out_tdata) >> "
             "32);\n";
    return "  w[0] = uint32_t(top.out_tdata);\n";
  };
  std::string t;
  t += "// Generated by triad compile --target fpga: do not edit.\n";
  t += fmt::format(
      "// Verilator testbench of '{}'. Usage: tb INPUTS.bin N OUTPUTS.bin SEED [TRACE]\n"
      "// (TRACE: a waveform file; needs a build with --trace/--trace-fst and\n"
      "// -DTRIAD_TRACE_VCD or -DTRIAD_TRACE_FST, as triad sim --trace does)\n",
      d.top);
  t += fmt::format(
      "// INPUTS.bin: N samples of {} transfers x {} raw int64 (little endian, in stream order).\n"
      "// Runs two passes over the N samples: 1. no input gaps, no back-pressure (latency, II);\n"
      "// 2. random gaps and back-pressure. Writes both passes' outputs (2N samples of {} x {}\n"
      "// raw int64) in arrival order; prints JSON. A pass that stops making progress for the\n"
      "// cycle budget ends as a timeout (a deadlock), never a hang.\n",
      d.inGeom.transfers(), d.inElems, d.outGeom.transfers(), d.outElems);
  t += fmt::format("#include \"V{}.h\"\n#include \"V{}___024root.h\"\n", d.top, d.top);
  t += R"(#include "verilated.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <random>
#include <string>
#include <vector>
#if defined(TRIAD_TRACE_FST)
#include "verilated_fst_c.h"
using TraceFile = VerilatedFstC;
#define TRIAD_TRACE 1
#elif defined(TRIAD_TRACE_VCD)
#include "verilated_vcd_c.h"
using TraceFile = VerilatedVcdC;
#define TRIAD_TRACE 1
#endif

namespace {
)";
  t += fmt::format("constexpr int kIn = {}, kInW = {}, kOut = {}, kOutW = {};\n", d.inElems,
                   d.inFormat.width, d.outElems, d.outFormat.width);
  t += fmt::format("constexpr long kInT = {}, kOutT = {}; // transfers per sample\n",
                   d.inGeom.transfers(), d.outGeom.transfers());
  t += fmt::format("constexpr int kInWords = {}, kOutWords = {};\n", words(inBits), words(outBits));
  t += fmt::format("using Top = V{};\n\n", d.top);
  // FIFO occupancy and stream handshakes, read through Verilator's public signals.
  t += fmt::format("constexpr int kFifos = {};\n", d.fifos.size());
  t += "// Vectors in FIFO i now (write minus read pointer, modulo twice the depth).\n"
       "uint64_t fifoCount([[maybe_unused]] Top& top, [[maybe_unused]] int i) {\n";
  for (size_t i = 0; i < d.fifos.size(); ++i)
    t += fmt::format("  if (i == {0}) return uint64_t(top.rootp->{1}__DOT__{2}__DOT__wr - "
                     "top.rootp->{1}__DOT__{2}__DOT__rd) & {3}u;\n",
                     i, d.top, d.fifos[i].name, (2 * d.fifos[i].depth) - 1);
  t += "  return 0;\n}\n";
  t += "const char* const kFifoNames[] = {";
  for (const RtlFifo& f : d.fifos)
    t += escape::stringLiteral(f.name, escape::Lang::Cpp) + ", ";
  t += "\"\"};\n";
  t += "// Streams whose producer offers data that the reader does not take (at a stall), as a\n"
       "// JSON list of \"producer -> reader\".\n"
       "std::string stalledStreams([[maybe_unused]] Top& top) {\n  std::string s;\n";
  for (const RtlStream& s : d.streams) {
    // "producer -> reader" as a JSON string (ASCII only: nlohmann escapes the rest), in a C++
    // literal.
    std::string json = nlohmann::json(s.producer + " -> " + s.reader)
                           .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    t += fmt::format("  if (top.rootp->{0}__DOT__{1}_tvalid && !top.rootp->{0}__DOT__{1}_tready)\n"
                     "    s += std::string(s.empty() ? \"\" : \", \") + {2};\n",
                     d.top, s.wire, escape::stringLiteral(json, escape::Lang::Cpp));
  }
  t += "  return s;\n}\n\n";
  t += "void setInput(Top& top, const int64_t* x) {\n"
       "  uint32_t w[kInWords] = {};\n"
       "  for (int e = 0; e < kIn; ++e)\n"
       "    for (int b = 0; b < kInW; ++b) {\n"
       "      int bit = e * kInW + b;\n"
       "      if ((uint64_t(x[e]) >> b) & 1) w[bit / 32] |= 1u << (bit % 32);\n"
       "    }\n";
  t += assignIn() + "}\n\n";
  t += "void getOutput(Top& top, int64_t* y) {\n  uint32_t w[kOutWords] = {};\n";
  t += readOut();
  t += R"(  for (int e = 0; e < kOut; ++e) {
    uint64_t v = 0;
    for (int b = 0; b < kOutW; ++b) {
      int bit = e * kOutW + b;
      v |= uint64_t((w[bit / 32] >> (bit % 32)) & 1) << b;
    }
    if (kOutW < 64 && ((v >> (kOutW - 1)) & 1)) v |= ~uint64_t(0) << kOutW;
    y[e] = int64_t(v);
  }
}

#ifdef TRIAD_TRACE
TraceFile* gTrace = nullptr;
#endif
uint64_t gTime = 0; // half clock periods, for the waveform

// One clock edge: evaluate, record the waveform.
void edge(Top& top, int clk) {
  top.clk = clk;
  top.eval();
#ifdef TRIAD_TRACE
  if (gTrace) gTrace->dump(gTime);
#endif
  ++gTime;
}

struct Pass {
  uint64_t cycles = 0, firstAccept = 0, lastAccept = 0, firstOut = 0, firstDone = 0, lastOut = 0;
  long received = 0; // output transfers
  bool timeout = false;
  std::vector<uint64_t> fifoPeak = std::vector<uint64_t>(kFifos, 0);
  std::vector<uint64_t> fifoAtStall = std::vector<uint64_t>(kFifos, 0);
  std::string stalled;
};

Pass run(Top& top, const std::vector<int64_t>& x, long n, double gap, double stall, uint64_t seed,
         std::vector<int64_t>& out) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Pass p;
  top.rst_n = 0;
  top.in_tvalid = 0;
  top.out_tready = 0;
  for (int i = 0; i < 4; ++i) {
    edge(top, 0);
    edge(top, 1);
  }
  top.rst_n = 1;
  long sent = 0;
  bool presenting = false;
  // The budget: no transfer in or out for this many cycles in a row is a deadlock (a design
  // waits at most a frame's worth of reuse cycles between transfers).
  const uint64_t budget = uint64_t(kInT + kOutT) * 64 + 20000;
  uint64_t lastProgress = 0;
  const long nIn = n * kInT, nOut = n * kOutT;
  std::vector<int64_t> y(kOut);
  for (uint64_t cycle = 0; p.received < nOut; ++cycle) {
    if (cycle - lastProgress > budget) {
      p.timeout = true;
      for (int i = 0; i < kFifos; ++i)
        p.fifoAtStall[size_t(i)] = fifoCount(top, i);
      p.stalled = stalledStreams(top);
      break;
    }
    if (!presenting && sent < nIn && !(gap > 0 && u(rng) < gap)) {
      setInput(top, &x[size_t(sent) * kIn]);
      presenting = true;
    }
    top.in_tvalid = presenting;
    top.out_tready = !(stall > 0 && u(rng) < stall);
    edge(top, 0);
    bool inFire = top.in_tvalid && top.in_tready;
    if (top.out_tvalid && top.out_tready) {
      getOutput(top, y.data());
      out.insert(out.end(), y.begin(), y.end());
      if (p.received == 0) p.firstOut = cycle;
      if (p.received == kOutT - 1) p.firstDone = cycle;
      p.lastOut = cycle;
      ++p.received;
      lastProgress = cycle;
    }
    edge(top, 1);
    if (inFire) {
      lastProgress = cycle;
      if (sent == 0) p.firstAccept = cycle;
      p.lastAccept = cycle;
      ++sent;
      presenting = false;
    }
    for (int i = 0; i < kFifos; ++i)
      p.fifoPeak[size_t(i)] = std::max(p.fifoPeak[size_t(i)], fifoCount(top, i));
    p.cycles = cycle + 1;
  }
  return p;
}

void print(const char* name, const Pass& p, bool comma) {
  std::printf("\"%s\": {\"cycles\": %llu, \"first_accept\": %llu, \"last_accept\": %llu, "
              "\"first_out\": %llu, \"first_done\": %llu, \"last_out\": %llu, "
              "\"received\": %ld, \"timeout\": %s, \"fifo_peak\": {",
              name, (unsigned long long)p.cycles, (unsigned long long)p.firstAccept,
              (unsigned long long)p.lastAccept, (unsigned long long)p.firstOut,
              (unsigned long long)p.firstDone, (unsigned long long)p.lastOut,
              p.received / kOutT, p.timeout ? "true" : "false");
  for (int i = 0; i < kFifos; ++i)
    std::printf("%s\"%s\": %llu", i ? ", " : "", kFifoNames[i],
                (unsigned long long)p.fifoPeak[size_t(i)]);
  std::printf("}, \"fifo_at_stall\": {");
  for (int i = 0; i < kFifos; ++i)
    std::printf("%s\"%s\": %llu", i ? ", " : "", kFifoNames[i],
                (unsigned long long)p.fifoAtStall[size_t(i)]);
  std::printf("}, \"stalled\": [%s]}%s\n", p.stalled.c_str(), comma ? "," : "");
}

} // namespace

int realMain(int argc, char** argv);

struct Args {
  int argc;
  char** argv;
  int rc;
};

void* runMain(void* p) {
  Args* a = static_cast<Args*>(p);
  a->rc = realMain(a->argc, a->argv);
  return nullptr;
}

// Large designs give the Verilated eval functions large stack frames (the model is compiled at
// -O0): run on a thread with a 1 GiB stack (reserved, touched only as needed).
int main(int argc, char** argv) {
  Args a{argc, argv, 1};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 30);
  pthread_t t;
  if (pthread_create(&t, &attr, runMain, &a) != 0) return realMain(argc, argv);
  pthread_join(t, nullptr);
  return a.rc;
}

int realMain(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s INPUTS.bin N OUTPUTS.bin SEED [TRACE]\n", argv[0]);
    return 2;
  }
  long n = std::atol(argv[2]);
  std::vector<int64_t> x(size_t(n) * kInT * kIn);
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(x.data(), sizeof(int64_t), x.size(), f) != x.size()) {
    std::fprintf(stderr, "cannot read %ld inputs from %s\n", n, argv[1]);
    return 3;
  }
  std::fclose(f);
  uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  Top top;
  if (argc == 6) {
#ifdef TRIAD_TRACE
    Verilated::traceEverOn(true);
    gTrace = new TraceFile;
    top.trace(gTrace, 99);
    gTrace->open(argv[5]);
#else
    std::fprintf(stderr, "this testbench was built without waveform tracing\n");
    return 2;
#endif
  }
  std::vector<int64_t> out;
  Pass a = run(top, x, n, 0, 0, seed, out);
  // After a deadlock the second pass would only repeat it.
  Pass b = a.timeout ? Pass{} : run(top, x, n, 0.3, 0.3, seed + 1, out);
  if (a.timeout) b.timeout = true;
  top.final();
#ifdef TRIAD_TRACE
  if (gTrace) {
    gTrace->close();
    delete gTrace;
  }
#endif
  FILE* o = std::fopen(argv[3], "wb");
  if (!o || std::fwrite(out.data(), sizeof(int64_t), out.size(), o) != out.size()) {
    std::fprintf(stderr, "cannot write %s\n", argv[3]);
    return 3;
  }
  std::fclose(o);
  std::printf("{\n");
  print("steady", a, true);
  print("random", b, false);
  std::printf("}\n");
  return 0;
}
)";
  return t;
}

} // namespace

} // namespace triad::fpga
