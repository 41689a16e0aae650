// RTL of the layers beyond Dense and ReLU (LeakyRelu, Clip, Sigmoid, Tanh, Softmax, Add with a
// constant and residual Adds joining two streams): the emitter's structure and diagnostics and,
// with Verilator on PATH, lint and bit-exact simulation against the emulator (the golden model)
// with random inputs, input gaps and output back-pressure.
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "ir/Graph.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Normalization.h"
#include "sim/Simulator.h"
#include "tests/unit/Golden.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <set>

using namespace triad;
using namespace triad::ir;
namespace fs = std::filesystem;

namespace {

std::vector<float> pattern(size_t n, int a, int m, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(int(i * size_t(a) % size_t(m)) - m / 2) * scale;
  return v;
}

// Every op the emitter handles, in one small graph:
//   x[B,6] -> /fc0/Gemm(6->6) -> /res0/Add(x, .)            (fork on the input, FIFO on x)
//          -> /fc1/Gemm(6->4) -> /LeakyRelu -> /fc2/Gemm(4->4) -> /res1/Add(., LeakyRelu)
//          -> /Tanh -> /Clip[-0.5, 0.75] -> /bias/Add(const row) -> /Sigmoid -> /Relu
//          -> /fc3/Gemm(4->3) -> /Softmax
Graph allOps(int64_t batch) {
  Graph g;
  g.name = "all_ops";
  g.opset = 17;
  auto t = [&](int64_t n) { return TensorType{DType::F32, {batch, n}, {}}; };
  Value* x = g.addInput("x", t(6));
  auto gemm = std::make_shared<GemmAttrs>();
  gemm->transB = true;
  auto dense = [&](const std::string& name, Value* in, int64_t k, int64_t n, int a, float sc) {
    Value* w = g.addConstant(name + ".weight",
                             Tensor::fromVector<float>({n, k}, pattern(size_t(n * k), a, 13, sc)));
    Value* b = g.addConstant(name + ".bias",
                             Tensor::fromVector<float>({n}, pattern(size_t(n), 3, 7, 0.3f)));
    return g.addNode(OpKind::Gemm, "/" + name + "/Gemm", {in, w, b}, gemm, {name}, {t(n)})
        ->output(0);
  };
  auto unary = [&](OpKind k, const std::string& name, Value* in, std::shared_ptr<Attrs> a,
                   std::vector<Value*> extra = {}) {
    std::vector<Value*> ins = {in};
    ins.insert(ins.end(), extra.begin(), extra.end());
    int64_t n = in->type().shape.back();
    return g.addNode(k, name, ins, std::move(a), {name.substr(1)}, {t(n)})->output(0);
  };
  Value* h0 = dense("fc0", x, 6, 6, 7, 0.21f);
  Value* r0 = g.addNode(OpKind::Add, "/res0/Add", {x, h0}, nullptr, {"r0"}, {t(6)})->output(0);
  Value* h1 = dense("fc1", r0, 6, 4, 5, 0.37f);
  auto leaky = std::make_shared<AlphaAttrs>();
  leaky->alpha = 0.1f;
  Value* a1 = unary(OpKind::LeakyRelu, "/LeakyRelu", h1, leaky);
  Value* h2 = dense("fc2", a1, 4, 4, 3, 0.45f);
  Value* r1 = g.addNode(OpKind::Add, "/res1/Add", {h2, a1}, nullptr, {"r1"}, {t(4)})->output(0);
  Value* th = unary(OpKind::Tanh, "/Tanh", r1, nullptr);
  auto clip = std::make_shared<ClipAttrs>();
  Value* lo = g.addConstant("clip.min", Tensor::fromVector<float>({}, {-0.5f}));
  Value* hi = g.addConstant("clip.max", Tensor::fromVector<float>({}, {0.75f}));
  Value* c = unary(OpKind::Clip, "/Clip", th, clip, {lo, hi});
  Value* bias =
      g.addConstant("bias.row", Tensor::fromVector<float>({4}, {0.25f, -1.5f, 3, -0.125f}));
  Value* b = g.addNode(OpKind::Add, "/bias/Add", {c, bias}, nullptr, {"b"}, {t(4)})->output(0);
  Value* s = unary(OpKind::Sigmoid, "/Sigmoid", b, nullptr);
  Value* rl = unary(OpKind::Relu, "/Relu", s, nullptr);
  Value* h3 = dense("fc3", rl, 4, 3, 5, 1.9f);
  auto sa = std::make_shared<SoftmaxAttrs>();
  sa->axes = {1};
  g.addOutput(unary(OpKind::Softmax, "/Softmax", h3, sa));
  return g;
}

fs::path writeDesign(const fpga::VerilogDesign& d, const std::string& name) {
  fs::path dir = fs::path(TRIAD_BINARY_DIR) / "fpga_rtl_ops_test" / name;
  fs::create_directories(dir / "rtl");
  fs::create_directories(dir / "tb");
  for (const auto& [file, text] : d.files())
    std::ofstream(dir / "rtl" / file) << text;
  std::ofstream(dir / "tb" / "tb.cpp") << d.testbench;
  return dir;
}

fpga::VerilogOptions opts(int64_t reuse) {
  fpga::VerilogOptions o;
  o.name = "all_ops";
  o.reuse = reuse;
  return o;
}

// Small tables keep the golden file short.
const char* kSmallTables = R"({"default": {"table_size": 32}})";

} // namespace

TEST(FpgaRtlOps, EmitsEveryBlockWithForksAndAFifo) {
  Graph g = allOps(2);
  fpga::Emulator emu(g, fpga::QuantConfig::fromJson(kSmallTables, "t.json"));
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, opts(2));
  triad::testing::expectGolden(d.verilog, "all_ops_fpga.v");
  EXPECT_EQ(d.stages.size(), 13u);
  EXPECT_EQ(d.outElems, 3);
  std::vector<std::string> blocks = {"triad_add",        "triad_cast",       "triad_clip",
                                     "triad_dense",      "triad_fifo",       "triad_fork",
                                     "triad_leaky_relu", "triad_lut",        "triad_relu",
                                     "triad_softmax",    "triad_table_index"};
  EXPECT_EQ(d.blocks, blocks);
  // Longest path at reuse 2 (Dense R + 1 = 3 cycles): fc0 3 + res0 1 + fc1 3 + LeakyRelu 1 +
  // fc2 3 + res1 1 + Tanh, Clip, bias Add, Sigmoid, Relu 5 + fc3 3 + Softmax 6 = 26.
  EXPECT_EQ(d.latency, 3 + 1 + 3 + 1 + 3 + 1 + 5 + 3 + 6);
  // The input is read by /fc0/Gemm and /res0/Add; the LeakyRelu by /fc2/Gemm and /res1/Add.
  EXPECT_NE(d.verilog.find("triad_fork"), std::string::npos);
  EXPECT_NE(d.verilog.find("u_fork_in"), std::string::npos);
  EXPECT_NE(d.verilog.find("u_fork_s4_LeakyRelu"), std::string::npos);
  // res0's x operand arrives 3 cycles before fc0's result: a FIFO of 8 (>= 3 + 2, power of 2).
  EXPECT_NE(
      d.verilog.find(
          "operand 0 of '/res0/Add' arrives early (3 cycles, 0 input transfers): a FIFO of 8"),
      std::string::npos);
  // Multipliers: dense 36/2 + 24/2 + 16/2 + 12/2, LeakyRelu 4, Softmax 3.
  int64_t mults = 0;
  for (const auto& s : d.stages)
    mults += s.multipliers;
  EXPECT_EQ(mults, 18 + 12 + 8 + 6 + 4 + 3);
}

TEST(FpgaRtlOps, UnsignedTableFormatIsRejectedNamingTheLayer) {
  Graph g = allOps(2);
  fpga::Emulator emu(
      g, fpga::QuantConfig::fromJson(
             R"({"layers": {"/Softmax": {"exp_precision": "ufixed<18,8>"}}})", "t.json"));
  try {
    fpga::emitVerilog(g, emu, opts(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("'/Softmax'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exp table"), std::string::npos) << e.what();
  }
}

TEST(FpgaRtlOps, LintsCleanWithVerilator) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  Graph g = allOps(2);
  fpga::Emulator emu(g, fpga::QuantConfig::fromJson(kSmallTables, "t.json"));
  fs::path dir = writeDesign(fpga::emitVerilog(g, emu, opts(1)), "lint");
  std::string cmd = "cd '" + (dir / "rtl").string() +
                    "' && verilator --lint-only -Wall --top-module all_ops *.v 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

// Bit-exact against the emulator: every block, random inputs beyond the tables' ranges, random
// input gaps and output back-pressure, for the default formats and for narrow ones with other
// modes, small tables and table indices that need a left shift.
TEST(FpgaRtlOps, SimulationMatchesEmulator) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  // fixed<10,6> results (4 fraction bits): the 1024-entry Tanh table over [-4, 4) steps by
  // 2^-7, so its index is the raw input shifted left by 3; convergent + wrap results, a
  // rounding and saturating accumulator, narrow exp/reciprocal tables.
  const char* kNarrow =
      R"({"default": {"result": {"precision": "fixed<10,6>", "rounding": "convergent",
             "overflow": "wrap"}, "accumulator": {"precision": "fixed<16,7>",
             "rounding": "round_half_up", "overflow": "saturate"}, "weight": "fixed<8,3>"},
            "layers": {"/Softmax": {"table_size": 64, "table_range": 4,
                                    "exp_precision": "fixed<12,4>", "inv_precision": "fixed<12,6>",
                                    "result": {"precision": "fixed<12,2>",
                                               "rounding": "round_half_up"}},
                       "/Sigmoid": {"table_size": 16, "result": "fixed<8,1>"},
                       "/Clip": {"result": "fixed<9,3>"}}})";
  struct Case {
    const char* config;
    int64_t reuse;
    int stageLevels = 0;
    double clockMhz = 0;
  } cases[] = {
      {R"({})", 1},
      // Pipelined adder trees (a register every level, and every 2 levels at reuse 2).
      {R"({})", 1, 1},
      {R"({})", 2, 2},
      {kNarrow, 2, 0},
      // Stages from the delay model: at 500 MHz the Softmax registers its comparisons apart
      // from the select (MAX_SPLIT) and every level of its sum (SUM_REGS 7), the Dense cores
      // every adder level; the narrow formats at 200 MHz.
      {R"({})", 1, 0, 500},
      {kNarrow, 2, 0, 200},
  };
  const int64_t n = 400;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-9, 9);
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = u(rng);
  Graph g = allOps(n);
  for (size_t c = 0; c < std::size(cases); ++c) {
    fpga::Emulator emu(g, fpga::QuantConfig::fromJson(cases[c].config, "t.json"));
    fpga::VerilogOptions o = opts(cases[c].reuse);
    o.stageLevels = cases[c].stageLevels;
    o.clockMhz = cases[c].clockMhz;
    fpga::VerilogDesign d = fpga::emitVerilog(g, emu, o);
    if (cases[c].clockMhz == 500) {
      EXPECT_NE(d.verilog.find(".MAX_SPLIT(1),\n      .SUM_REGS(32'h7)"), std::string::npos);
    }
    fs::path dir = writeDesign(d, "sim_c" + std::to_string(c));
    fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
    std::vector<int64_t> in;
    for (int64_t i = 0; i < n * 6; ++i)
      in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                  emu.inputQuant().overflow));
    sim::SimReport rep = sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 5);
    EXPECT_EQ(rep.mismatches, 0) << "case " << c;
    EXPECT_EQ(rep.missing, 0) << "case " << c;
    EXPECT_EQ(rep.ii, double(cases[c].reuse)) << "case " << c;
    EXPECT_EQ(rep.latencyCycles, d.latency) << "case " << c;
    // The outputs are not trivial: several classes win.
    std::set<int64_t> winners;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t* y = &res.layerRaw[d.lastLayer][size_t(r * 3)];
      winners.insert(std::max_element(y, y + 3) - y);
    }
    EXPECT_GE(winners.size(), 2u) << "case " << c;
  }
}

// The emulator broadcasts any constant; a stream design adds one row per transfer, so a constant
// that differs between batch rows has no RTL: an Unsupported error naming the layer.
TEST(FpgaRtlOps, AddOfAPerSampleConstantIsRejectedNamingTheLayer) {
  Graph g;
  g.name = "bad_add";
  g.opset = 17;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 3}, {}});
  Value* c = g.addConstant("c", Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  g.addOutput(g.addNode(OpKind::Add, "/add/Add", {x, c}, nullptr, {"y"},
                        {TensorType{DType::F32, {2, 3}, {}}})
                  ->output(0));
  fpga::Emulator emu(g, fpga::QuantConfig{});
  try {
    fpga::emitVerilog(g, emu, opts(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("'/add/Add' (Add): the constant of shape [2,3]"),
              std::string::npos)
        << e.what();
  }
}
