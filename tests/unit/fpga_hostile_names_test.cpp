// A model's strings never become Verilog or testbench C++ (issue 25): an MLP whose layer names are
// payloads (a Verilog directive and system task after a newline, a block-comment terminator, a
// line splice, a C++ string-literal breaker, a Verilator directive, names that legalize alike,
// a 4 KiB name) emits sources in which no line starts with a payload, every module, instance and
// wire name is a distinct plain identifier, and (with Verilator on PATH) the design lints clean
// and simulates bit-exactly; the Verilator build cache runs only builds of this user's own.
#include "fpga/Emulator.h"
#include "fpga/Hdl.h"
#include "fpga/VerilogEmitter.h"
#include "ir/Escape.h"
#include "ir/Graph.h"
#include "ir/ops/Linear.h"
#include "sim/Simulator.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace triad;
using namespace triad::ir;
namespace fs = std::filesystem;

namespace {

const std::string kLong = std::string(2000, 'L') + "\n#error long\n" + [] {
  std::string s;
  for (int i = 0; i < 1100; ++i)
    s += "\xc3\xa9"; // é
  return s;
}();

// The node names, in graph order.
const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {
      // a Verilog directive, a Verilator directive and a system task, each on a line of its own
      "a\n`include \"/etc/passwd\"\n// verilator lint_off WIDTH\ninitial $display(\"pwned\");",
      // out of a block comment (the Add: its FIFO's comment names it)
      "*/ initial $display(1); /*",
      // a line splice
      "x\\",
      // two names that legalize alike
      "a/b",
      // a C++ string literal breaker (a stream's producer in the testbench) and a directive
      "\"); system(\"touch pwned\"); (\"\n#error boom",
      "a.b",
      // a Verilator directive at the start of a comment
      "verilator tracing_off",
      kLong,
  };
  return n;
}

std::vector<float> pattern(size_t n, int a, int m, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(int(i * size_t(a) % size_t(m)) - m / 2) * scale;
  return v;
}

// x[B,6] -> Gemm(6->6) -> Add(x, .) (a fork on x, a FIFO) -> Gemm(6->4) -> Relu -> Gemm(4->4)
//        -> Relu -> Relu -> Gemm(4->3), the layers named by names().
Graph hostileMlp(int64_t batch) {
  Graph g;
  g.name = "hostile";
  g.opset = 17;
  auto t = [&](int64_t n) { return TensorType{DType::F32, {batch, n}, {}}; };
  const auto& nm = names();
  Value* x = g.addInput("x", t(6));
  auto gemm = std::make_shared<GemmAttrs>();
  gemm->transB = true;
  int k = 0;
  auto dense = [&](const std::string& name, Value* in, int64_t kIn, int64_t n) {
    ++k;
    Value* w = g.addConstant(
        "w" + std::to_string(k),
        Tensor::fromVector<float>({n, kIn}, pattern(size_t(n * kIn), 3 + 2 * k, 13, 0.23f)));
    Value* b = g.addConstant("b" + std::to_string(k),
                             Tensor::fromVector<float>({n}, pattern(size_t(n), 3, 7, 0.3f)));
    return g.addNode(OpKind::Gemm, name, {in, w, b}, gemm, {"h" + std::to_string(k)}, {t(n)})
        ->output(0);
  };
  auto relu = [&](const std::string& name, Value* in) {
    ++k;
    return g
        .addNode(OpKind::Relu, name, {in}, nullptr, {"r" + std::to_string(k)},
                 {t(in->type().shape.back())})
        ->output(0);
  };
  Value* h0 = dense(nm[0], x, 6, 6);
  Value* r0 = g.addNode(OpKind::Add, nm[1], {x, h0}, nullptr, {"sum"}, {t(6)})->output(0);
  Value* h1 = dense(nm[2], r0, 6, 4);
  Value* a1 = relu(nm[3], h1);
  Value* h2 = dense(nm[4], a1, 4, 4);
  Value* a2 = relu(nm[5], h2);
  Value* a3 = relu(nm[6], a2);
  g.addOutput(dense(nm[7], a3, 4, 3));
  return g;
}

fpga::VerilogOptions opts() {
  fpga::VerilogOptions o;
  o.name = "hostile";
  o.reuse = 2;
  return o;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    size_t b = l.find_first_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : l.substr(b));
  }
  return out;
}

bool startsWith(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// The lines a payload would start if it escaped its comment or literal.
const char* const kPayloadStarts[] = {"`",        "initial",   "$display", "#error", "system(",
                                      "\"); sys", "verilator", "x\\",      "a.b",    "LLLL"};

bool plainIdentifier(const std::string& s) {
  return std::regex_match(s, std::regex("[A-Za-z_][A-Za-z0-9_]*"));
}

// A folder of this process's own (the test changes its build cache), removed by the caller.
fs::path writeDesign(const fpga::VerilogDesign& d, const std::string& name) {
  fs::path dir = fs::path(TRIAD_BINARY_DIR) / "fpga_hostile_names_test" /
                 (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "rtl");
  fs::create_directories(dir / "tb");
  for (const auto& [file, text] : d.files())
    std::ofstream(dir / "rtl" / file) << text;
  std::ofstream(dir / "tb" / "tb.cpp") << d.testbench;
  return dir;
}

} // namespace

TEST(FpgaHostileNames, SourcesCarryNoPayloadLine) {
  Graph g = hostileMlp(2);
  fpga::Emulator emu(g, {});
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, opts());
  ASSERT_EQ(d.stages.size(), 8u);
  ASSERT_EQ(d.fifos.size(), 1u);
  // The layers are the hostile ones (the summary keeps the model's names as they are).
  for (size_t i = 0; i < d.stages.size(); ++i)
    EXPECT_EQ(d.stages[i].layer, names()[i]);
  EXPECT_EQ(d.fifos[0].layer, names()[1]);
  for (const auto& [what, text] : {std::pair<std::string, std::string>{"verilog", d.verilog},
                                   {"testbench", d.testbench},
                                   {"files.f", d.fileList()}}) {
    for (const std::string& l : lines(text)) {
      for (const char* p : kPayloadStarts)
        EXPECT_FALSE(startsWith(l, p)) << what << ": a line starts with '" << p << "': " << l;
      // A comment's text never starts with a model's: tools read "// verilator ..." as a
      // directive.
      if (startsWith(l, "//")) {
        std::string c = l.substr(2);
        c.erase(0, c.find_first_not_of(" \t"));
        EXPECT_FALSE(startsWith(c, "verilator") || startsWith(c, "synthesis") ||
                     startsWith(c, "synopsys") || startsWith(c, "pragma"))
            << what << ": " << l;
      }
    }
    // The payloads' text is only in comments (Verilog) or in the one string literal per stream
    // (the testbench).
    for (const std::string& l : lines(text)) {
      if (l.find("touch pwned") != std::string::npos || l.find("#error") != std::string::npos ||
          l.find("$display") != std::string::npos || l.find("`include") != std::string::npos) {
        EXPECT_TRUE(startsWith(l, "//") || startsWith(l, "s += std::string(s.empty()"))
            << what << ": " << l;
      }
    }
    EXPECT_LT(text.size(), 200000u) << what;
  }
  // Block comments in the Verilog: only the fixed pragmas, each closed on its line.
  for (const std::string& l : lines(d.verilog))
    for (size_t p = l.find("/*"); p != std::string::npos; p = l.find("/*", p + 2)) {
      std::string rest = l.substr(p);
      EXPECT_TRUE(
          std::regex_search(rest, std::regex(R"(^/\* verilator (lint_off|lint_on) [A-Z]+ \*/)")) ||
          std::regex_search(rest, std::regex(R"(^/\* verilator public_flat_rd \*/;$)")))
          << l;
    }
  for (const std::string& l : lines(d.verilog)) {
    if (l.find("*/") != std::string::npos) {
      EXPECT_NE(l.find("/* verilator "), std::string::npos) << l;
    }
  }
  // Preprocessor lines of the testbench: only its own.
  for (const std::string& l : lines(d.testbench))
    if (startsWith(l, "#")) {
      static const std::regex own(
          R"(#(include ("V\w+\.h"|"V\w+___024root\.h"|"verilated(_fst_c|_vcd_c)?\.h"|<\w+(\.h)?>)|if defined\(TRIAD_TRACE_(FST|VCD)\)|elif defined\(TRIAD_TRACE_(FST|VCD)\)|define TRIAD_TRACE 1|endif|ifdef TRIAD_TRACE|else))");
      EXPECT_TRUE(std::regex_match(l, own)) << l;
    }
  // The producer names reach the testbench only as escaped literals.
  EXPECT_NE(d.testbench.find(R"(\"\\\"); system(\\\"touch pwned\\\"); (\\\"\\n#error boom)"),
            std::string::npos);

  // Module, instance and wire names: plain identifiers, distinct, of bounded length.
  std::set<std::string> modules;
  for (const auto& s : d.stages) {
    EXPECT_TRUE(plainIdentifier(s.module)) << s.module;
    EXPECT_LE(s.module.size(), 80u) << s.module;
    EXPECT_TRUE(modules.insert(s.module).second) << s.module;
  }
  EXPECT_TRUE(modules.insert(d.top).second);
  std::set<std::string> declared; // module names as printed
  std::smatch m;
  for (const std::string& l : lines(d.verilog))
    if (std::regex_match(l, m, std::regex(R"(module (\S+) \()"))) {
      EXPECT_TRUE(plainIdentifier(m[1])) << l;
      EXPECT_TRUE(declared.insert(m[1]).second) << "module declared twice: " << l;
    }
  EXPECT_EQ(declared, modules);
  // The layers "a/b" and "a.b" legalize alike and still get their own module and instance.
  EXPECT_EQ(d.stages[3].module, "hostile_a_b");
  EXPECT_EQ(d.stages[5].module, "hostile_a_b_2");
  // The top module's instances and wires share one scope.
  size_t topAt = d.verilog.find("module " + d.top + " (");
  ASSERT_NE(topAt, std::string::npos);
  std::set<std::string> scope;
  for (const std::string& l : lines(d.verilog.substr(topAt))) {
    if (std::regex_match(l, m, std::regex(R"((?:\w+|\)) (\S+) \()")) && !startsWith(l, "module")) {
      EXPECT_TRUE(scope.insert(m[1]).second) << "instance name taken twice: " << l;
    } else if (std::regex_search(l, m, std::regex(R"(^wire (?:\[\d+:0\] )?(\S+?);?$)")) ||
               std::regex_search(l, m, std::regex(R"(^wire (?:\[\d+:0\] )?(\S+) /\*)"))) {
      EXPECT_TRUE(scope.insert(m[1]).second) << "wire name taken twice: " << l;
    }
  }
  EXPECT_GE(scope.size(), 8u + 3 * 6);
  for (const std::string& n : scope)
    EXPECT_TRUE(plainIdentifier(n)) << n;
  EXPECT_TRUE(plainIdentifier(d.fifos[0].name)) << d.fifos[0].name;
  // Deterministic.
  EXPECT_EQ(fpga::emitVerilog(g, emu, opts()).verilog, d.verilog);
}

// The printer takes no name that is not an identifier, and comment text stays comment text.
TEST(FpgaHostileNames, PrinterChecksNamesAndEscapesComments) {
  fpga::hdl::Module m;
  m.name = "ok";
  m.comment = "first\n*/ initial $display(1); /* \\\n`include \"x\"";
  m.addPort("clk", fpga::hdl::Dir::In, 1);
  std::string v = m.print();
  for (const std::string& l : lines(v)) {
    if (startsWith(l, "module") || startsWith(l, "input") || startsWith(l, ");") ||
        startsWith(l, "endmodule"))
      continue;
    EXPECT_TRUE(startsWith(l, "// ")) << l;
    EXPECT_EQ(l.find("*/"), std::string::npos) << l;
    EXPECT_NE(l.back(), '\\') << l; // no line splice
  }
  fpga::hdl::Module bad;
  bad.name = "x; initial $display(1); module y";
  EXPECT_THROW(bad.print(), Error);
  fpga::hdl::Module badWire;
  badWire.name = "ok";
  badWire.add(fpga::hdl::Wire{"a\nb", 1, {}});
  EXPECT_THROW(badWire.print(), Error);
  EXPECT_TRUE(escape::isIdentifier("top_1"));
  EXPECT_FALSE(escape::isIdentifier("top; rm -rf ~"));
  EXPECT_FALSE(escape::isIdentifier("1top"));
  EXPECT_FALSE(escape::isIdentifier(""));
}

// Verilator lints the hostile design clean and it simulates bit-exactly against the emulator
// (the deadlock report's stream names come back through the testbench's JSON).
TEST(FpgaHostileNames, LintsAndSimulatesBitExactly) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  const int64_t n = 64;
  Graph g = hostileMlp(n);
  fpga::Emulator emu(g, {});
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, opts());
  fs::path dir = writeDesign(d, "sim");
  std::string cmd = "cd '" + (dir / "rtl").string() +
                    "' && verilator --lint-only -Wall --top-module " + d.top + " *.v 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-6, 6);
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = u(rng);
  fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
  std::vector<int64_t> in;
  for (int64_t i = 0; i < n * 6; ++i)
    in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                emu.inputQuant().overflow));
  sim::SimReport rep = sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 9);
  EXPECT_EQ(rep.mismatches, 0);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_FALSE(rep.timeout);
  EXPECT_EQ(rep.fifoPeak.count(d.fifos[0].name), 1u);
  // The cache folder is private.
  struct stat st;
  ASSERT_EQ(::stat((dir / "obj").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);

  // A cached build that its group can write is never run: it is built again.
  fs::path exe = sim::buildModel(dir, d.top);
  ASSERT_TRUE(fs::exists(exe));
  bool cached = false;
  EXPECT_EQ(sim::buildModel(dir, d.top, &cached), exe);
  EXPECT_TRUE(cached);
  fs::permissions(exe, fs::perms::group_write, fs::perm_options::add);
  EXPECT_EQ(sim::buildModel(dir, d.top, &cached), exe);
  EXPECT_FALSE(cached);
  ASSERT_EQ(::stat(exe.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u);
  EXPECT_EQ(sim::buildModel(dir, d.top, &cached), exe);
  EXPECT_TRUE(cached);
  // A top that is not an identifier never reaches the command line.
  EXPECT_THROW(sim::buildModel(dir, d.top + "; touch pwned"), Error);
  if (!HasFailure()) fs::remove_all(dir);
}
