#include "fpga/VerilogEmitter.h"

#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
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
  int stream = in->id();
  int64_t width = d.inElems;
  FixedFormat streamFmt = d.inFormat;
  std::set<std::string> used = {d.top};
  bool reached = false;
  for (size_t li = 0; li < layers.size() && !reached; ++li) {
    const LayerInfo& L = layers[li];
    reached = L.name == o.until;
    d.lastLayer = li;
    if (L.input != stream)
      fail(ErrorKind::Unsupported,
           "layer '{}' ({}) does not take the previous layer's output; the Verilog emitter "
           "handles chains of layers",
           L.name, L.op);
    stream = L.output;
    const ir::Shape& outShape = g.values()[size_t(L.output)]->type().shape;
    int64_t outWidth = outShape.empty() ? 1 : outShape.back();
    if (L.passThrough) {
      if (outWidth != width)
        fail(ErrorKind::Unsupported, "layer '{}' ({}) changes the row width from {} to {}", L.name,
             L.op, width, outWidth);
      continue;
    }
    RtlStage s;
    s.layer = L.name;
    s.op = L.op;
    s.layerIndex = li;
    s.in = streamFmt;
    s.out = L.outFormat;
    std::string base = verilogName(L.name);
    std::string mod = d.top + "_" + base;
    for (int k = 2; used.count(mod); ++k)
      mod = fmt::format("{}_{}_{}", d.top, base, k);
    used.insert(mod);
    s.module = mod;
    if (L.op.starts_with("Gemm") || L.op.starts_with("MatMul")) {
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
    } else if (L.op == "Relu") {
      s.nIn = s.nOut = width;
    } else {
      std::string prev = li > 0 ? layers[li - 1].name : "";
      fail(ErrorKind::Unsupported,
           "layer '{}' ({}) is not supported by the Verilog emitter (Dense and Relu are){}", L.name,
           L.op,
           prev.empty() ? "" : fmt::format("; use --until '{}' to end the design before it", prev));
    }
    requireSigned(s.out, L.name, "result");
    if (s.nIn != width)
      fail(ErrorKind::Unsupported, "layer '{}' takes {} inputs per row, the stream has {}", L.name,
           s.nIn, width);
    width = s.nOut;
    streamFmt = s.out;
    d.stages.push_back(std::move(s));
  }
  if (d.stages.empty()) fail(ErrorKind::Unsupported, "the design has no Dense or Relu layer");
  d.outElems = width;
  d.outFormat = streamFmt;

  // The Verilog file.
  std::string v;
  v += "// Generated by triad compile --target fpga: do not edit.\n";
  v += fmt::format("// Model '{}': input {} x {}, output {} x {}.\n", d.top, d.inElems,
                   formatToString(d.inFormat), d.outElems, formatToString(d.outFormat));
  v += "// Streams carry one vector per transfer, element i in tdata[i*W +: W] (signed raw\n"
       "// fixed point, real value = raw * 2^-frac). Blocks: fpga/rtl/triad_{dense,relu,cast}.v.\n";
  v += "// Layers:\n";
  for (const RtlStage& s : d.stages)
    v += fmt::format("//   {:<12} {:<24} {} -> {}  {} -> {}{}\n", s.layer, s.module, s.nIn, s.nOut,
                     formatToString(s.in), formatToString(s.out),
                     s.op == "Relu" ? "" : fmt::format("  reuse {}", s.reuse));
  v += "\n// One file holds every layer module and the top.\n/* verilator lint_off DECLFILENAME "
       "*/\n\n";
  for (const RtlStage& s : d.stages) {
    const LayerInfo& L = layers[s.layerIndex];
    const LayerQuant& q = L.quant;
    int inW = s.in.width, outW = s.out.width;
    v += fmt::format("// Layer '{}' ({}): {} x {} -> {} x {}\n", s.layer, s.op, s.nIn,
                     formatToString(s.in), s.nOut, formatToString(s.out));
    Instance inst;
    inst.name = "u_" + verilogName(s.layer);
    inst.ports = streamConnections("in", "out");
    std::string body;
    if (s.op == "Relu") {
      inst.module = "triad_relu";
      inst.params = {{"N", std::to_string(s.nIn)},
                     {"IN_W", std::to_string(inW)},
                     {"IN_FRAC", std::to_string(s.in.fracBits())},
                     {"OUT_W", std::to_string(outW)},
                     {"OUT_FRAC", std::to_string(s.out.fracBits())},
                     {"ROUNDING", std::to_string(roundingCode(q.result().rounding))},
                     {"SATURATE", std::to_string(saturateCode(q.result().overflow))}};
    } else {
      const FixedFormat& wf = q.weight().format;
      const FixedFormat& bf = q.bias().format;
      const FixedFormat& af = q.acc().format;
      requireSigned(wf, s.layer, "weight");
      requireSigned(bf, s.layer, "bias");
      requireSigned(af, s.layer, "accumulator");
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
    v += fmt::format("module {} (\n{});\n", s.module, streamPorts(s.nIn * inW, s.nOut * outW));
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
  std::string prev = "in";
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const RtlStage& s = d.stages[i];
    std::string next =
        i + 1 == d.stages.size() ? "out" : fmt::format("s{}_{}", i + 1, verilogName(s.layer));
    if (next != "out")
      v += fmt::format("  wire [{}:0] {}_tdata;\n  wire {}_tvalid;\n  wire {}_tready;\n",
                       s.nOut * s.out.width - 1, next, next, next);
    Instance inst{s.module, "u_" + verilogName(s.layer), {}, streamConnections(prev, next)};
    v += inst.print();
    prev = next;
  }
  v += "endmodule\n";
  d.verilog = std::move(v);
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
  t += fmt::format("// Verilator testbench of '{}'. Usage: tb INPUTS.bin N OUTPUTS.bin SEED\n",
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
    top.clk = 0;
    top.eval();
    top.clk = 1;
    top.eval();
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
    top.clk = 0;
    top.eval();
    bool inFire = top.in_tvalid && top.in_tready;
    if (top.out_tvalid && top.out_tready) {
      getOutput(top, y.data());
      out.insert(out.end(), y.begin(), y.end());
      if (p.received == 0) p.firstOut = cycle;
      p.lastOut = cycle;
      ++p.received;
    }
    top.clk = 1;
    top.eval();
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
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s INPUTS.bin N OUTPUTS.bin SEED\n", argv[0]);
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
  std::vector<int64_t> out;
  Pass a = run(top, x, n, 0, 0, seed, out);
  Pass b = run(top, x, n, 0.3, 0.3, seed + 1, out);
  top.final();
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
