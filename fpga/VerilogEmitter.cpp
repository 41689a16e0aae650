#include "fpga/VerilogEmitter.h"

#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>

namespace triad::fpga {

namespace {

const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "always",     "and",       "assign",      "begin",       "buf",         "case",
      "casex",      "casez",     "cell",        "config",      "deassign",    "default",
      "defparam",   "design",    "disable",     "edge",        "else",        "end",
      "endcase",    "endconfig", "endfunction", "endgenerate", "endmodule",   "endprimitive",
      "endspecify", "endtable",  "endtask",     "event",       "for",         "force",
      "forever",    "fork",      "function",    "generate",    "genvar",      "if",
      "ifnone",     "initial",   "inout",       "input",       "instance",    "integer",
      "join",       "large",     "library",     "localparam",  "macromodule", "medium",
      "module",     "nand",      "negedge",     "nor",         "not",         "or",
      "output",     "parameter", "posedge",     "primitive",   "real",        "reg",
      "release",    "repeat",    "signed",      "small",       "specify",     "specparam",
      "strong0",    "strong1",   "supply0",     "supply1",     "table",       "task",
      "time",       "tran",      "tri",         "triand",      "trior",       "use",
      "wait",       "wand",      "weak0",       "weak1",       "while",       "wire",
      "wor",        "xnor",      "xor",         "logic",       "bit",         "byte",
      "int",        "interface", "class",       "do",          "final",       "unique",
      "priority"};
  return k;
}

// Rounding / overflow codes of triad_cast.
int roundingCode(Rounding r) {
  return r == Rounding::Truncate ? 0 : r == Rounding::RoundHalfUp ? 1 : 2;
}
int saturateCode(Overflow o) {
  return o == Overflow::Saturate ? 1 : 0;
}

std::string hexLiteral(int64_t v, int width) {
  uint64_t u = static_cast<uint64_t>(v);
  if (width < 64) u &= (uint64_t(1) << width) - 1;
  return fmt::format("{}'h{:0{}x}", width, u, (width + 3) / 4);
}

void requireSigned(const FixedFormat& f, const std::string& layer, const char* what) {
  if (!f.isSigned)
    fail(ErrorKind::Unsupported,
         "layer '{}': the {} format {} is unsigned; the RTL blocks take signed formats", layer,
         what, formatToString(f));
}

// A module instance: the one construct the layer and top modules are made of.
struct Instance {
  std::string module, name;
  std::vector<std::pair<std::string, std::string>> params, ports;
  std::string print() const {
    std::string s = "  " + module;
    if (!params.empty()) {
      s += " #(\n";
      for (size_t i = 0; i < params.size(); ++i)
        s += fmt::format("      .{}({}){}\n", params[i].first, params[i].second,
                         i + 1 < params.size() ? "," : "");
      s += "  )";
    }
    s += " " + name + " (\n";
    for (size_t i = 0; i < ports.size(); ++i)
      s += fmt::format("      .{}({}){}\n", ports[i].first, ports[i].second,
                       i + 1 < ports.size() ? "," : "");
    return s + "  );\n";
  }
};

std::string streamPorts(int64_t inBits, int64_t outBits) {
  return fmt::format("    input  wire clk,\n"
                     "    input  wire rst_n,\n"
                     "    input  wire [{}:0] in_tdata,\n"
                     "    input  wire in_tvalid,\n"
                     "    output wire in_tready,\n"
                     "    output wire [{}:0] out_tdata,\n"
                     "    output wire out_tvalid,\n"
                     "    input  wire out_tready\n",
                     inBits - 1, outBits - 1);
}

std::vector<std::pair<std::string, std::string>> streamConnections(const std::string& in,
                                                                   const std::string& out) {
  return {{"clk", "clk"},
          {"rst_n", "rst_n"},
          {"in_tdata", in + "_tdata"},
          {"in_tvalid", in + "_tvalid"},
          {"in_tready", in + "_tready"},
          {"out_tdata", out + "_tdata"},
          {"out_tvalid", out + "_tvalid"},
          {"out_tready", out + "_tready"}};
}

std::string layerPorts(const std::vector<std::pair<std::string, int64_t>>& ins, int64_t outBits) {
  std::string s = "    input  wire clk,\n    input  wire rst_n,\n";
  for (const auto& [p, bits] : ins)
    s += fmt::format("    input  wire [{}:0] {}_tdata,\n"
                     "    input  wire {}_tvalid,\n"
                     "    output wire {}_tready,\n",
                     bits - 1, p, p, p);
  return s + fmt::format("    output wire [{}:0] out_tdata,\n"
                         "    output wire out_tvalid,\n"
                         "    input  wire out_tready\n",
                         outBits - 1);
}

// A lookup table as one constant: entry i at [i*width +: width], the last entry first.
std::string tableLiteral(const std::vector<int64_t>& t, int width) {
  std::string s = "{\n";
  for (size_t k = 0; k < t.size(); ++k) {
    size_t i = t.size() - 1 - k;
    if (k % 8 == 0) s += "      ";
    s += hexLiteral(t[i], width);
    s += i == 0 ? "\n" : k % 8 == 7 ? ",\n" : ", ";
  }
  return s + "  }";
}

int log2Exact(int64_t v) {
  int k = 0;
  while ((int64_t(1) << k) < v)
    ++k;
  TRIAD_ASSERT((int64_t(1) << k) == v, "{} is not a power of two", v);
  return k;
}

bool isDense(const std::string& op) {
  return op.starts_with("Gemm") || op.starts_with("MatMul");
}

// Cycles from a vector entering a block to its result leaving it (steady state, no stalls).
int64_t stageLatency(const RtlStage& s) {
  if (isDense(s.op)) return s.reuse + 1;
  if (s.op == "Softmax") return 5;
  return 1;
}

std::string testbench(const VerilogDesign& d);

} // namespace

std::vector<int64_t> validReuseFactors(int64_t nIn) {
  std::vector<int64_t> r;
  for (int64_t i = 1; i <= nIn; ++i)
    if (nIn % i == 0) r.push_back(i);
  return r;
}

std::string verilogName(const std::string& s) {
  std::string r;
  for (char c : s) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok)
      r += c;
    else if (!r.empty() && r.back() != '_')
      r += '_';
  }
  while (!r.empty() && r.back() == '_')
    r.pop_back();
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "l_" + r;
  if (keywords().count(r)) r += "_";
  return r;
}

VerilogDesign emitVerilog(const ir::Graph& g, const Emulator& emu, const VerilogOptions& o) {
  const auto& layers = emu.layers();
  if (g.inputs().size() != 1)
    fail(ErrorKind::Unsupported, "the Verilog emitter takes models with one input (this has {})",
         g.inputs().size());
  if (!o.until.empty() && std::none_of(layers.begin(), layers.end(),
                                       [&](const LayerInfo& l) { return l.name == o.until; })) {
    std::string names;
    for (const LayerInfo& l : layers)
      names += (names.empty() ? "" : ", ") + l.name;
    fail(ErrorKind::Usage, "--until '{}' is not a layer of the model (layers: {})", o.until, names);
  }
  for (const auto& [name, r] : o.layerReuse) {
    (void)r;
    if (std::none_of(layers.begin(), layers.end(),
                     [&](const LayerInfo& l) { return l.name == name; }))
      fail(ErrorKind::Usage, "a reuse factor is given for '{}', which is not a layer", name);
  }
  VerilogDesign d;
  d.top = verilogName(o.name);
  const ir::Value* in = g.inputs()[0];
  const ir::Shape& inShape = in->type().shape;
  d.inElems = inShape.empty() ? 1 : inShape.back();
  d.inFormat = emu.inputQuant().format;
  requireSigned(d.inFormat, "(input)", "input");

  // Streams: one per value computed by a block (pass-through layers alias their input).
  struct Stream {
    int64_t width = 0;
    FixedFormat format;
    int64_t arrival = 0; // cycles after the design input (longest path)
  };
  std::map<int, Stream> streams;
  std::map<int, int> alias;
  auto streamOf = [&](int v) {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  };
  streams[in->id()] = {d.inElems, d.inFormat, 0};
  std::vector<std::vector<int>> stageIns; // stream ids of each stage's operands
  std::vector<int> stageOut;              // stream id of each stage's result
  std::set<std::string> used = {d.top};
  bool reached = false;
  for (size_t li = 0; li < layers.size() && !reached; ++li) {
    const LayerInfo& L = layers[li];
    reached = L.name == o.until;
    d.lastLayer = li;
    std::vector<int> ins;
    for (int v : L.inputs) {
      if (v < 0) continue; // Add's constant operand
      int sv = streamOf(v);
      if (!streams.count(sv))
        fail(ErrorKind::Unsupported,
             "layer '{}' ({}) takes '{}', which the design does not compute", L.name, L.op,
             g.values()[size_t(v)]->name());
      ins.push_back(sv);
    }
    TRIAD_ASSERT(!ins.empty(), "layer '{}' has no data operand", L.name);
    const Stream& a = streams.at(ins[0]);
    const ir::Shape& outShape = g.values()[size_t(L.output)]->type().shape;
    int64_t outWidth = outShape.empty() ? 1 : outShape.back();
    if (L.passThrough) {
      if (outWidth != a.width)
        fail(ErrorKind::Unsupported, "layer '{}' ({}) changes the row width from {} to {}", L.name,
             L.op, a.width, outWidth);
      alias[L.output] = ins[0];
      continue;
    }
    RtlStage s;
    s.layer = L.name;
    s.op = L.op;
    s.layerIndex = li;
    s.in = a.format;
    s.out = L.outFormat;
    std::string base = verilogName(L.name);
    std::string mod = d.top + "_" + base;
    for (int k = 2; used.count(mod); ++k)
      mod = fmt::format("{}_{}_{}", d.top, base, k);
    used.insert(mod);
    s.module = mod;
    const LayerQuant& q = L.quant;
    if (isDense(L.op)) {
      s.nIn = L.fanIn;
      s.nOut = L.fanOut;
      auto it = o.layerReuse.find(L.name);
      s.reuse = it != o.layerReuse.end() ? it->second : o.reuse;
      auto valid = validReuseFactors(s.nIn);
      if (std::find(valid.begin(), valid.end(), s.reuse) == valid.end())
        fail(ErrorKind::Usage,
             "reuse factor {} is not valid for layer '{}' ({} inputs): it must "
             "divide the input count; valid: {}",
             s.reuse, L.name, s.nIn, fmt::join(valid, ", "));
      s.multipliers = s.nIn * s.nOut / s.reuse;
      requireSigned(q.weight().format, L.name, "weight");
      requireSigned(q.bias().format, L.name, "bias");
      requireSigned(q.acc().format, L.name, "accumulator");
    } else if (L.op == "Relu" || L.op == "LeakyRelu" || L.op == "Clip" || L.op == "Sigmoid" ||
               L.op == "Tanh" || L.op == "Softmax") {
      s.nIn = s.nOut = a.width;
      if (L.op == "LeakyRelu") {
        requireSigned(q.weight().format, L.name, "slope (weight)");
        s.multipliers = s.nIn;
      }
      if (L.op == "Softmax") {
        requireSigned(q.exp.format, L.name, "exp table");
        requireSigned(q.inv.format, L.name, "reciprocal table");
        s.multipliers = s.nIn;
      }
    } else if (L.op == "Add") {
      s.nIn = s.nOut = outWidth;
      for (int sv : ins)
        if (streams.at(sv).width != outWidth)
          fail(ErrorKind::Unsupported,
               "layer '{}' (Add): an operand of {} elements per row is broadcast to {}; the "
               "Verilog emitter adds rows of equal width",
               L.name, streams.at(sv).width, outWidth);
      if (ins.size() == 2) {
        s.in2 = streams.at(ins[1]).format;
      } else {
        requireSigned(q.bias().format, L.name, "constant (bias)");
        int64_t ce = ir::numElements(L.constShape);
        if (ce != 1 && !(ce == outWidth && L.constShape.back() == outWidth))
          fail(ErrorKind::Unsupported,
               "layer '{}' (Add): the constant of shape {} must be a scalar or one row of {} "
               "elements",
               L.name, ir::shapeToString(L.constShape), outWidth);
        s.in2 = q.bias().format;
      }
    } else {
      std::string prev = li > 0 ? layers[li - 1].name : "";
      fail(ErrorKind::Unsupported,
           "layer '{}' ({}) is not supported by the Verilog emitter (Dense, Relu, LeakyRelu, Clip, "
           "Sigmoid, Tanh, Softmax and Add are){}",
           L.name, L.op,
           prev.empty() ? "" : fmt::format("; use --until '{}' to end the design before it", prev));
    }
    requireSigned(s.out, L.name, "result");
    if (s.nIn != a.width)
      fail(ErrorKind::Unsupported, "layer '{}' takes {} inputs per row, the stream has {}", L.name,
           s.nIn, a.width);
    s.latency = stageLatency(s);
    int64_t arrival = 0;
    for (int sv : ins)
      arrival = std::max(arrival, streams.at(sv).arrival);
    streams[L.output] = {s.nOut, s.out, arrival + s.latency};
    stageIns.push_back(ins);
    stageOut.push_back(L.output);
    d.stages.push_back(std::move(s));
  }
  if (d.stages.empty()) fail(ErrorKind::Unsupported, "the design has no layer with RTL");
  const int outStream = streamOf(layers[d.lastLayer].output);
  d.outElems = streams.at(outStream).width;
  d.outFormat = streams.at(outStream).format;
  d.latency = streams.at(outStream).arrival;

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
  std::map<int, std::string> name;
  name[in->id()] = "in";
  for (size_t i = 0; i < d.stages.size(); ++i) {
    int sv = stageOut[i];
    bool onlyOut = readers[sv].size() == 1 && readers[sv][0].first == -1;
    name[sv] = onlyOut ? "out" : fmt::format("s{}_{}", i + 1, verilogName(d.stages[i].layer));
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
  // A join whose operands arrive at different times buffers the earlier one.
  std::vector<std::vector<int64_t>> fifoDepth(d.stages.size());
  for (size_t i = 0; i < d.stages.size(); ++i) {
    fifoDepth[i].assign(stageIns[i].size(), 0);
    if (stageIns[i].size() != 2) continue;
    int64_t t0 = streams.at(stageIns[i][0]).arrival, t1 = streams.at(stageIns[i][1]).arrival;
    if (t0 == t1) continue;
    int64_t depth = 2;
    while (depth < std::abs(t0 - t1) + 2)
      depth *= 2;
    fifoDepth[i][t0 < t1 ? 0 : 1] = depth;
  }

  // The Verilog file.
  std::set<std::string> blocks = {"triad_cast"};
  for (const auto& [sv, rs] : readers)
    if (rs.size() > 1) blocks.insert("triad_fork");
  for (const auto& f : fifoDepth)
    if (std::any_of(f.begin(), f.end(), [](int64_t x) { return x > 0; }))
      blocks.insert("triad_fifo");
  for (const RtlStage& s : d.stages)
    blocks.insert(isDense(s.op)         ? "triad_dense"
                  : s.op == "Relu"      ? "triad_relu"
                  : s.op == "LeakyRelu" ? "triad_leaky_relu"
                  : s.op == "Clip"      ? "triad_clip"
                  : s.op == "Softmax"   ? "triad_softmax"
                  : s.op == "Add"       ? "triad_add"
                                        : "triad_lut");
  std::string v;
  v += "// Generated by triad compile --target fpga: do not edit.\n";
  v += fmt::format("// Model '{}': input {} x {}, output {} x {}; latency {} cycles.\n", d.top,
                   d.inElems, formatToString(d.inFormat), d.outElems, formatToString(d.outFormat),
                   d.latency);
  v += fmt::format(
      "// Streams carry one vector per transfer, element i in tdata[i*W +: W] (signed raw\n"
      "// fixed point, real value = raw * 2^-frac).\n// Blocks (fpga/rtl/): {}.\n",
      fmt::join(blocks, ", "));
  v += "// Layers:\n";
  for (const RtlStage& s : d.stages)
    v += fmt::format("//   {:<12} {:<24} {} -> {}  {} -> {}{}\n", s.layer, s.module, s.nIn, s.nOut,
                     formatToString(s.in), formatToString(s.out),
                     isDense(s.op) ? fmt::format("  reuse {}", s.reuse) : "  " + s.op);
  v += "\n// One file holds every layer module and the top.\n/* verilator lint_off DECLFILENAME "
       "*/\n\n";
  for (size_t si = 0; si < d.stages.size(); ++si) {
    const RtlStage& s = d.stages[si];
    const LayerInfo& L = layers[s.layerIndex];
    const LayerQuant& q = L.quant;
    int inW = s.in.width, outW = s.out.width;
    v += fmt::format("// Layer '{}' ({}): {} x {} -> {} x {}\n", s.layer, s.op, s.nIn,
                     formatToString(s.in), s.nOut, formatToString(s.out));
    Instance inst;
    inst.name = "u_" + verilogName(s.layer);
    inst.ports = streamConnections("in", "out");
    std::vector<std::pair<std::string, int64_t>> ports = {{"in", s.nIn * inW}};
    std::string body;
    auto resultModes = [&]() -> std::vector<std::pair<std::string, std::string>> {
      return {{"OUT_W", std::to_string(outW)},
              {"OUT_FRAC", std::to_string(s.out.fracBits())},
              {"ROUNDING", std::to_string(roundingCode(q.result().rounding))},
              {"SATURATE", std::to_string(saturateCode(q.result().overflow))}};
    };
    auto append = [](auto& dst, const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    if (s.op == "Relu") {
      inst.module = "triad_relu";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"IN_FRAC", std::to_string(s.in.fracBits())}};
      append(inst.params, resultModes());
    } else if (s.op == "LeakyRelu") {
      const FixedFormat& wf = q.weight().format;
      v += fmt::format("//   slope {} ({}), result {} ({}, {})\n", dequantize(L.alpha, wf),
                       formatToString(wf), formatToString(s.out), toString(q.result().rounding),
                       toString(q.result().overflow));
      inst.module = "triad_leaky_relu";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"IN_FRAC", std::to_string(s.in.fracBits())},
                     {"A_W", std::to_string(wf.width)},
                     {"A_FRAC", std::to_string(wf.fracBits())},
                     {"ALPHA", hexLiteral(L.alpha, wf.width)}};
      append(inst.params, resultModes());
    } else if (s.op == "Clip") {
      v += fmt::format("//   bounds [{}, {}] ({}), result {} ({}, {})\n", dequantize(L.lo, s.in),
                       dequantize(L.hi, s.in), formatToString(s.in), formatToString(s.out),
                       toString(q.result().rounding), toString(q.result().overflow));
      inst.module = "triad_clip";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"IN_FRAC", std::to_string(s.in.fracBits())},
                     {"LO", hexLiteral(L.lo, inW)},
                     {"HI", hexLiteral(L.hi, inW)}};
      append(inst.params, resultModes());
    } else if (s.op == "Sigmoid" || s.op == "Tanh") {
      int64_t size = int64_t(L.table.size());
      v += fmt::format(
          "//   table of {} entries over [-{}, {}) in {}: entry j = {}(-R + (j + 1/2) * step),\n"
          "//   index = clamp(floor(x / 2^{}) + {}, 0, {}) on the raw input\n",
          size, q.tableRange, q.tableRange, formatToString(s.out),
          s.op == "Sigmoid" ? "sigmoid" : "tanh", L.tableShift, size / 2, size - 1);
      body += "  // entry j at [j*" + std::to_string(outW) + " +: " + std::to_string(outW) +
              "], the last entry first\n";
      body += fmt::format("  localparam [{}:0] TABLE = {};\n\n", size * outW - 1,
                          tableLiteral(L.table, outW));
      inst.module = "triad_lut";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"SHIFT", std::to_string(L.tableShift)},
                     {"SIZE", std::to_string(size)},
                     {"IDX_W", std::to_string(log2Exact(size))},
                     {"OUT_W", std::to_string(outW)},
                     {"TABLE", "TABLE"}};
    } else if (s.op == "Softmax") {
      int64_t size = int64_t(L.table.size());
      const FixedFormat& ef = q.exp.format;
      const FixedFormat& rf = q.inv.format;
      v += fmt::format(
          "//   exp table: {} entries over [-{}, 0) in {}, index = clamp(floor((x - max) / 2^{}) "
          "+ {}, 0, {});\n"
          "//   reciprocal table: {} entries over [0, {}) in {}, index = clamp(floor(sum / 2^{}), "
          "0, {});\n"
          "//   y = cast(exp * reciprocal) to {} ({}, {}); latency 5 cycles\n",
          size, q.tableRange, formatToString(ef), L.tableShift, size, size - 1, size, q.invRange,
          formatToString(rf), L.invShift, size - 1, formatToString(s.out),
          toString(q.result().rounding), toString(q.result().overflow));
      body += "  // entry j at [j*W +: W], the last entry first\n";
      body += fmt::format("  localparam [{}:0] EXP_TABLE = {};\n", size * ef.width - 1,
                          tableLiteral(L.table, ef.width));
      body += fmt::format("  localparam [{}:0] INV_TABLE = {};\n\n", size * rf.width - 1,
                          tableLiteral(L.invTable, rf.width));
      inst.module = "triad_softmax";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"SIZE", std::to_string(size)},
                     {"IDX_W", std::to_string(log2Exact(size))},
                     {"EXP_SHIFT", std::to_string(L.tableShift)},
                     {"EXP_W", std::to_string(ef.width)},
                     {"EXP_FRAC", std::to_string(ef.fracBits())},
                     {"INV_SHIFT", std::to_string(L.invShift)},
                     {"INV_W", std::to_string(rf.width)},
                     {"INV_FRAC", std::to_string(rf.fracBits())}};
      append(inst.params, resultModes());
      inst.params.push_back({"EXP_TABLE", "EXP_TABLE"});
      inst.params.push_back({"INV_TABLE", "INV_TABLE"});
    } else if (s.op == "Add") {
      bool join = stageIns[si].size() == 2;
      v += fmt::format("//   {} + {}{} exact, result {} ({}, {})\n", formatToString(s.in),
                       formatToString(s.in2), join ? "" : " (constant)", formatToString(s.out),
                       toString(q.result().rounding), toString(q.result().overflow));
      inst.module = "triad_add";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"A_W", std::to_string(inW)},
                     {"A_FRAC", std::to_string(s.in.fracBits())},
                     {"B_W", std::to_string(s.in2.width)},
                     {"B_FRAC", std::to_string(s.in2.fracBits())}};
      append(inst.params, resultModes());
      if (join) {
        ports = {{"a", s.nIn * inW}, {"b", s.nIn * s.in2.width}};
        inst.ports = {{"clk", "clk"},
                      {"rst_n", "rst_n"},
                      {"a_tdata", "a_tdata"},
                      {"a_tvalid", "a_tvalid"},
                      {"a_tready", "a_tready"},
                      {"b_tdata", "b_tdata"},
                      {"b_tvalid", "b_tvalid"},
                      {"b_tready", "b_tready"},
                      {"out_tdata", "out_tdata"},
                      {"out_tvalid", "out_tvalid"},
                      {"out_tready", "out_tready"}};
      } else {
        int bw = s.in2.width;
        body += fmt::format("  // the constant operand, element i at [i*{} +: {}]\n", bw, bw);
        body += fmt::format("  localparam [{}:0] B = {{", s.nIn * bw - 1);
        for (int64_t i = s.nIn; i-- > 0;)
          body += hexLiteral(L.constRaw[L.constRaw.size() == 1 ? 0 : size_t(i)], bw) +
                  (i > 0 ? ", " : "");
        body += "};\n  /* verilator lint_off UNUSEDSIGNAL */\n  wire b_tready;  // always "
                "valid: not needed\n  /* verilator lint_on UNUSEDSIGNAL */\n\n";
        inst.ports = {{"clk", "clk"},
                      {"rst_n", "rst_n"},
                      {"a_tdata", "in_tdata"},
                      {"a_tvalid", "in_tvalid"},
                      {"a_tready", "in_tready"},
                      {"b_tdata", "B"},
                      {"b_tvalid", "1'b1"},
                      {"b_tready", "b_tready"},
                      {"out_tdata", "out_tdata"},
                      {"out_tvalid", "out_tvalid"},
                      {"out_tready", "out_tready"}};
      }
    } else {
      const FixedFormat& wf = q.weight().format;
      const FixedFormat& bf = q.bias().format;
      const FixedFormat& af = q.acc().format;
      v += fmt::format("//   weights {}, bias {}, accumulator {} ({}, {}), result {} ({}, {}),\n"
                       "//   reuse {}: {} multipliers, a new input every {} cycle(s)\n",
                       formatToString(wf), formatToString(bf), formatToString(af),
                       toString(q.acc().rounding), toString(q.acc().overflow),
                       formatToString(s.out), toString(q.result().rounding),
                       toString(q.result().overflow), s.reuse, s.nIn * s.nOut / s.reuse, s.reuse);
      body += fmt::format("  // w[o][i] at bit (o*{} + i)*{}; one row o per line, o = {} first\n",
                          s.nIn, wf.width, s.nOut - 1);
      body += fmt::format("  localparam [{}:0] WEIGHTS = {{\n", s.nOut * s.nIn * wf.width - 1);
      for (int64_t oo = s.nOut; oo-- > 0;) {
        body += "      ";
        for (int64_t i = s.nIn; i-- > 0;)
          body += hexLiteral(L.weights[size_t(oo * s.nIn + i)], wf.width) +
                  (i > 0 || oo > 0 ? (i > 0 ? ", " : ",") : "");
        body += "\n";
      }
      body += "  };\n";
      body += fmt::format("  localparam [{}:0] BIASES = {{", s.nOut * bf.width - 1);
      for (int64_t oo = s.nOut; oo-- > 0;)
        body += hexLiteral(L.biases.empty() ? 0 : L.biases[size_t(oo)], bf.width) +
                (oo > 0 ? ", " : "");
      body += "};\n\n";
      inst.module = "triad_dense";
      inst.params = {{"N_IN", std::to_string(s.nIn)},
                     {"N_OUT", std::to_string(s.nOut)},
                     {"REUSE", std::to_string(s.reuse)},
                     {"IN_W", std::to_string(inW)},
                     {"IN_FRAC", std::to_string(s.in.fracBits())},
                     {"W_W", std::to_string(wf.width)},
                     {"W_FRAC", std::to_string(wf.fracBits())},
                     {"B_W", std::to_string(bf.width)},
                     {"B_FRAC", std::to_string(bf.fracBits())},
                     {"ACC_W", std::to_string(af.width)},
                     {"ACC_FRAC", std::to_string(af.fracBits())},
                     {"OUT_W", std::to_string(outW)},
                     {"OUT_FRAC", std::to_string(s.out.fracBits())},
                     {"ACC_ROUNDING", std::to_string(roundingCode(q.acc().rounding))},
                     {"ACC_SATURATE", std::to_string(saturateCode(q.acc().overflow))},
                     {"RES_ROUNDING", std::to_string(roundingCode(q.result().rounding))},
                     {"RES_SATURATE", std::to_string(saturateCode(q.result().overflow))},
                     {"WEIGHTS", "WEIGHTS"},
                     {"BIASES", "BIASES"}};
    }
    v += fmt::format("module {} (\n{});\n", s.module, layerPorts(ports, s.nOut * outW));
    v += body + inst.print() + "endmodule\n\n";
  }

  // Top module.
  v += fmt::format("// Top: '{}'.\n"
                   "//   clk, rst_n      clock; synchronous active-low reset\n"
                   "//   in_tdata [{}:0]  {} inputs x {}, element i at [i*{} +: {}]\n"
                   "//   in_tvalid/in_tready    input handshake (a transfer when both are 1)\n"
                   "//   out_tdata [{}:0] {} outputs x {}, element i at [i*{} +: {}]\n"
                   "//   out_tvalid/out_tready  output handshake (back-pressure via out_tready)\n",
                   d.top, d.inElems * d.inFormat.width - 1, d.inElems, formatToString(d.inFormat),
                   d.inFormat.width, d.inFormat.width, d.outElems * d.outFormat.width - 1,
                   d.outElems, formatToString(d.outFormat), d.outFormat.width, d.outFormat.width);
  v += fmt::format("module {} (\n{});\n", d.top,
                   streamPorts(d.inElems * d.inFormat.width, d.outElems * d.outFormat.width));
  auto fork = [&](int sv, int64_t bits) {
    size_t k = readers[sv].size();
    if (k < 2) return;
    const std::string& n = name[sv];
    v += fmt::format("  // '{}' is read {} times\n", n, k);
    v += fmt::format("  wire [{}:0] {}_f_tdata;\n  wire [{}:0] {}_f_tvalid;\n  wire [{}:0] "
                     "{}_f_tready;\n",
                     bits - 1, n, k - 1, n, k - 1, n);
    Instance f{"triad_fork",
               "u_fork_" + n,
               {{"W", std::to_string(bits)}, {"N_OUT", std::to_string(k)}},
               {{"clk", "clk"},
                {"rst_n", "rst_n"},
                {"in_tdata", n + "_tdata"},
                {"in_tvalid", n + "_tvalid"},
                {"in_tready", n + "_tready"},
                {"out_tdata", n + "_f_tdata"},
                {"out_tvalid", n + "_f_tvalid"},
                {"out_tready", n + "_f_tready"}}};
    v += f.print();
  };
  fork(in->id(), d.inElems * d.inFormat.width);
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const RtlStage& s = d.stages[i];
    std::vector<std::array<std::string, 3>> opConn;
    for (size_t k = 0; k < stageIns[i].size(); ++k) {
      int sv = stageIns[i][k];
      auto c = conn(sv, readerIndex(sv, int(i), k));
      if (fifoDepth[i][k] > 0) {
        int64_t bits = streams.at(sv).width * streams.at(sv).format.width;
        std::string q = fmt::format("{}_q{}", verilogName(s.layer), k);
        v += fmt::format(
            "  // operand {} of '{}' arrives {} cycles early: a FIFO of {}\n", k, s.layer,
            std::abs(streams.at(stageIns[i][0]).arrival - streams.at(stageIns[i][1]).arrival),
            fifoDepth[i][k]);
        v += fmt::format("  wire [{}:0] {}_tdata;\n  wire {}_tvalid;\n  wire {}_tready;\n",
                         bits - 1, q, q, q);
        Instance f{"triad_fifo",
                   "u_fifo_" + q,
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
                    {"out_tready", q + "_tready"}}};
        v += f.print();
        c = {q + "_tdata", q + "_tvalid", q + "_tready"};
      }
      opConn.push_back(c);
    }
    int sv = stageOut[i];
    const std::string& next = name[sv];
    if (next != "out")
      v += fmt::format("  wire [{}:0] {}_tdata;\n  wire {}_tvalid;\n  wire {}_tready;\n",
                       s.nOut * s.out.width - 1, next, next, next);
    Instance inst{s.module, "u_" + verilogName(s.layer), {}, {{"clk", "clk"}, {"rst_n", "rst_n"}}};
    std::vector<std::string> prefixes =
        opConn.size() == 2 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"in"};
    for (size_t k = 0; k < opConn.size(); ++k) {
      inst.ports.push_back({prefixes[k] + "_tdata", opConn[k][0]});
      inst.ports.push_back({prefixes[k] + "_tvalid", opConn[k][1]});
      inst.ports.push_back({prefixes[k] + "_tready", opConn[k][2]});
    }
    inst.ports.push_back({"out_tdata", next + "_tdata"});
    inst.ports.push_back({"out_tvalid", next + "_tvalid"});
    inst.ports.push_back({"out_tready", next + "_tready"});
    v += inst.print();
    fork(sv, s.nOut * s.out.width);
  }
  if (name[outStream] != "out") {
    auto c = conn(outStream, readers[outStream].size() - 1);
    v += fmt::format("  assign out_tdata = {};\n  assign out_tvalid = {};\n  assign {} = "
                     "out_tready;\n",
                     c[0], c[1], c[2]);
  }
  v += "endmodule\n";
  d.verilog = std::move(v);
  d.blocks.assign(blocks.begin(), blocks.end());
  d.testbench = testbench(d);
  return d;
}

namespace {

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
  t += "// INPUTS.bin: N x " + std::to_string(d.inElems) +
       " raw int64 (little endian). Runs two passes over the N inputs:\n"
       "// 1. no input gaps, no back-pressure (latency, II); 2. random gaps and back-pressure.\n"
       "// Writes both passes' outputs (2N x " +
       std::to_string(d.outElems) + " raw int64) in arrival order; prints JSON.\n";
  t += fmt::format("#include \"V{}.h\"\n", d.top);
  t += R"(#include "verilated.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <random>
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
  t += fmt::format("constexpr int kInWords = {}, kOutWords = {};\n", words(inBits), words(outBits));
  t += fmt::format("using Top = V{};\n\n", d.top);
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
  uint64_t cycles = 0, firstAccept = 0, lastAccept = 0, firstOut = 0, lastOut = 0;
  long received = 0;
  bool timeout = false;
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
  const uint64_t limit = uint64_t(n + 10) * 1000;
  std::vector<int64_t> y(kOut);
  for (uint64_t cycle = 0; p.received < n; ++cycle) {
    if (cycle > limit) {
      p.timeout = true;
      break;
    }
    if (!presenting && sent < n && !(gap > 0 && u(rng) < gap)) {
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
      p.lastOut = cycle;
      ++p.received;
    }
    edge(top, 1);
    if (inFire) {
      if (sent == 0) p.firstAccept = cycle;
      p.lastAccept = cycle;
      ++sent;
      presenting = false;
    }
    p.cycles = cycle + 1;
  }
  return p;
}

void print(const char* name, const Pass& p, bool comma) {
  std::printf("\"%s\": {\"cycles\": %llu, \"first_accept\": %llu, \"last_accept\": %llu, "
              "\"first_out\": %llu, \"last_out\": %llu, \"received\": %ld, \"timeout\": %s}%s\n",
              name, (unsigned long long)p.cycles, (unsigned long long)p.firstAccept,
              (unsigned long long)p.lastAccept, (unsigned long long)p.firstOut,
              (unsigned long long)p.lastOut, p.received, p.timeout ? "true" : "false",
              comma ? "," : "");
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
  std::vector<int64_t> x(size_t(n) * kIn);
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
  Pass b = run(top, x, n, 0.3, 0.3, seed + 1, out);
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
