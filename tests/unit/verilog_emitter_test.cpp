// The FPGA Verilog emitter: golden output for a tiny model, diagnostics, and (with Verilator on
// PATH) lint and bit-exact simulation against the emulator for several rounding/overflow modes.
#include "fpga/Emulator.h"
#include "fpga/VerilogEmitter.h"
#include "fpga/layers/DenseCore.h"
#include "frontend/TensorIO.h"
#include "ir/Graph.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Normalization.h"
#include "ir/ops/Pool.h"
#include "sim/Simulator.h"
#include "tests/unit/Golden.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>

using namespace triad;
using namespace triad::ir;
namespace fs = std::filesystem;

namespace {

// x[B,6] -> Gemm(6->4, bias) -> Relu -> Gemm(4->3, no bias) -> Softmax
Graph tinyMlp(int64_t batch, bool softmax) {
  Graph g;
  g.name = "tiny_mlp";
  g.opset = 17;
  Value* x = g.addInput("x", TensorType{DType::F32, {batch, 6}, {}});
  std::vector<float> w1(24), w2(12);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = float(int(i * 7 % 13) - 6) * 0.37f;
  for (size_t i = 0; i < w2.size(); ++i)
    w2[i] = float(int(i * 5 % 11) - 5) * 0.61f;
  Value* W1 = g.addConstant("fc1.weight", Tensor::fromVector<float>({4, 6}, w1));
  Value* b1 = g.addConstant("fc1.bias", Tensor::fromVector<float>({4}, {0.5f, -0.75f, 1.25f, 0}));
  Value* W2 = g.addConstant("fc2.weight", Tensor::fromVector<float>({3, 4}, w2));
  auto attrs = std::make_shared<GemmAttrs>();
  attrs->transB = true;
  Node* fc1 = g.addNode(OpKind::Gemm, "/fc1/Gemm", {x, W1, b1}, attrs, {"h"},
                        {TensorType{DType::F32, {batch, 4}, {}}});
  Node* relu = g.addNode(OpKind::Relu, "/Relu", {fc1->output(0)}, nullptr, {"r"},
                         {TensorType{DType::F32, {batch, 4}, {}}});
  Node* fc2 = g.addNode(OpKind::Gemm, "/fc2/Gemm", {relu->output(0), W2}, attrs, {"logits"},
                        {TensorType{DType::F32, {batch, 3}, {}}});
  Value* out = fc2->output(0);
  if (softmax) {
    auto sa = std::make_shared<SoftmaxAttrs>();
    sa->axes = {1};
    out = g.addNode(OpKind::Softmax, "/Softmax", {out}, sa, {"y"},
                    {TensorType{DType::F32, {batch, 3}, {}}})
              ->output(0);
  }
  g.addOutput(out);
  return g;
}

fpga::VerilogDesign emitTiny(const fpga::QuantConfig& cfg, const fpga::VerilogOptions& o,
                             bool softmax = false) {
  Graph g = tinyMlp(2, softmax);
  fpga::Emulator emu(g, cfg);
  return fpga::emitVerilog(g, emu, o);
}

// reuse 3: /fc1/Gemm at 3, /fc2/Gemm (4 inputs) at 2.
fpga::VerilogOptions opts(int64_t reuse = 1) {
  fpga::VerilogOptions o;
  o.name = "tiny_mlp";
  o.reuse = reuse;
  if (reuse == 3) o.layerReuse = {{"/fc1/Gemm", 3}, {"/fc2/Gemm", 2}};
  return o;
}

// Writes the design like `triad compile` (rtl/, tb/).
fs::path writeDesign(const fpga::VerilogDesign& d, const std::string& name) {
  fs::path dir = fs::path(TRIAD_BINARY_DIR) / "verilog_emitter_test" / name;
  fs::create_directories(dir / "rtl");
  fs::create_directories(dir / "tb");
  for (const auto& [file, text] : d.files())
    std::ofstream(dir / "rtl" / file) << text;
  std::ofstream(dir / "tb" / "tb.cpp") << d.testbench;
  return dir;
}

} // namespace

TEST(VerilogEmitter, TinyMlpGolden) {
  fpga::VerilogDesign d = emitTiny({}, opts(2));
  triad::testing::expectGolden(d.verilog, "tiny_mlp_fpga.v");
  EXPECT_EQ(d.stages.size(), 3u);
  EXPECT_EQ(d.inElems, 6);
  EXPECT_EQ(d.outElems, 3);
  // Deterministic: compiling twice gives identical output.
  EXPECT_EQ(emitTiny({}, opts(2)).verilog, d.verilog);
  EXPECT_EQ(emitTiny({}, opts(2)).testbench, d.testbench);
}

TEST(VerilogEmitter, RejectsInvalidReuseListingValidOnes) {
  try {
    emitTiny({}, opts(4));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("'/fc1/Gemm' (6 inputs, 4 outputs)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("valid: 1, 2, 3, 6, 12, 24"), std::string::npos)
        << e.what();
  }
}

TEST(VerilogEmitter, SoftmaxEndsTheDesignUnlessCutWithUntil) {
  fpga::VerilogDesign d = emitTiny({}, opts(), true);
  ASSERT_EQ(d.stages.size(), 4u);
  EXPECT_EQ(d.stages.back().op, "Softmax");
  EXPECT_EQ(d.stages.back().multipliers, 3);
  // Dense R + 1 = 2, Relu 1, Dense 2, Softmax 6 (no clock given: its fewest registers).
  EXPECT_EQ(d.latency, 11);
  // At 200 MHz, a Softmax of 3 over fixed<18,8> exp entries: the sum's first level (19 bits)
  // fits beside the exp tables' clock-to-out, the second (20 bits) takes a stage of its own with
  // the reciprocal's index: a register after level 1, one cycle more.
  fpga::VerilogOptions c = opts();
  c.clockMhz = 200;
  fpga::VerilogDesign dc = emitTiny({}, c, true);
  EXPECT_NE(dc.verilog.find(".MAX_SPLIT(0),\n      .SUM_REGS(32'h2)"), std::string::npos);
  EXPECT_EQ(dc.stages.back().latency, 7);
  fpga::VerilogOptions o = opts();
  o.until = "/fc2/Gemm";
  EXPECT_EQ(emitTiny({}, o, true).verilog, emitTiny({}, opts()).verilog);
  o.until = "/nope";
  try {
    emitTiny({}, o, true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("layers: /fc1/Gemm, /Relu, /fc2/Gemm, /Softmax"),
              std::string::npos)
        << e.what();
  }
}

TEST(VerilogEmitter, NamesAreLegalAndKeywordSafe) {
  EXPECT_EQ(fpga::verilogName("/fc1/Gemm"), "fc1_Gemm");
  EXPECT_EQ(fpga::verilogName("module"), "module_");
  EXPECT_EQ(fpga::verilogName("1x"), "l_1x");
  EXPECT_EQ(fpga::verilogName("a..b//c"), "a_b_c");
  EXPECT_EQ(fpga::verilogName("///"), "l_");
}

TEST(VerilogEmitter, LintsCleanWithVerilator) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  for (int64_t r : {1, 2, 3}) {
    fs::path dir = writeDesign(emitTiny({}, opts(r)), "lint_r" + std::to_string(r));
    std::string cmd = "cd '" + (dir / "rtl").string() +
                      "' && verilator --lint-only -Wall --top-module tiny_mlp *.v 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "reuse " << r;
  }
}

// Bit-exact against the emulator with random inputs, gaps and back-pressure, per mode.
TEST(VerilogEmitter, SimulationMatchesEmulatorForEveryMode) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  const char* configs[] = {
      // defaults: exact accumulator, truncate + saturate results
      R"({})",
      // narrow accumulator that rounds and wraps, convergent + wrapping results
      R"({"default": {"accumulator": {"precision": "fixed<12,4>", "rounding": "convergent",
          "overflow": "wrap"}, "result": {"precision": "fixed<8,3>", "rounding": "convergent",
          "overflow": "wrap"}}})",
      // round half up + saturate everywhere, a coarse accumulator
      R"({"default": {"accumulator": {"precision": "fixed<10,5>", "rounding": "round_half_up",
          "overflow": "saturate"}, "result": {"precision": "fixed<9,2>", "rounding":
          "round_half_up", "overflow": "saturate"}}})",
      // truncating accumulator with saturation, wrapping results
      R"({"default": {"weight": "fixed<10,3>", "accumulator": {"precision": "fixed<14,4>",
          "rounding": "truncate", "overflow": "saturate"}, "result": {"precision": "fixed<12,3>",
          "overflow": "wrap"}}})",
  };
  const int64_t n = 300;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-6, 6);
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = u(rng);
  for (size_t c = 0; c < std::size(configs); ++c) {
    fpga::QuantConfig cfg = fpga::QuantConfig::fromJson(configs[c], "test.json");
    Graph g = tinyMlp(n, false);
    fpga::Emulator emu(g, cfg);
    for (int64_t r : {1, 3}) {
      fpga::VerilogDesign d = fpga::emitVerilog(g, emu, opts(r));
      fs::path dir = writeDesign(d, "sim_c" + std::to_string(c) + "_r" + std::to_string(r));
      fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
      std::vector<int64_t> in;
      for (int64_t i = 0; i < n * 6; ++i)
        in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                    emu.inputQuant().overflow));
      sim::SimReport rep =
          sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 11);
      EXPECT_EQ(rep.mismatches, 0) << "config " << c << " reuse " << r;
      EXPECT_EQ(rep.missing, 0) << "config " << c << " reuse " << r;
      EXPECT_EQ(rep.ii, double(r)) << "config " << c << " reuse " << r;
    }
  }
}

// `triad sim --trace`: a separate Verilator build with tracing writes the waveform of both passes
// (VCD as text, FST binary); the results stay bit-exact; other extensions are a usage error.
TEST(VerilogEmitter, SimulationWritesVcdAndFstTraces) {
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  const int64_t n = 12;
  Graph g = tinyMlp(n, true);
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, opts(2));
  fs::path dir = writeDesign(d, "trace");
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = float(i % 11) * 0.7f - 3.5f;
  fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
  std::vector<int64_t> in;
  for (int64_t i = 0; i < n * 6; ++i)
    in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                emu.inputQuant().overflow));
  for (const char* name : {"wave.vcd", "wave.fst"}) {
    fs::path trace = dir / name;
    fs::remove(trace);
    sim::SimReport rep =
        sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 3, trace);
    EXPECT_EQ(rep.mismatches, 0) << name;
    EXPECT_EQ(rep.missing, 0) << name;
    ASSERT_TRUE(fs::exists(trace)) << name;
    EXPECT_GT(fs::file_size(trace), 1000u) << name;
    if (trace.extension() == ".vcd") {
      std::string text = frontend::readFile(trace);
      EXPECT_NE(text.find("$enddefinitions"), std::string::npos);
      EXPECT_NE(text.find("out_tvalid"), std::string::npos);
    }
  }
  EXPECT_THROW(
      sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 3, dir / "wave.txt"),
      Error);
}

// Layer names that legalize to the same identifier, or to a keyword, still give unique legal
// module, instance and wire names (the HDL name uniquer), and the design lints clean.
TEST(VerilogEmitter, CollidingLayerNamesAreMadeUnique) {
  Graph g;
  g.name = "clash";
  g.opset = 17;
  Value* x = g.addInput("x", TensorType{DType::F32, {2, 4}, {}});
  auto t = TensorType{DType::F32, {2, 4}, {}};
  Value* a = g.addNode(OpKind::Relu, "/x/Relu", {x}, nullptr, {"a"}, {t})->output(0);
  Value* b = g.addNode(OpKind::Relu, "/x.Relu", {a}, nullptr, {"b"}, {t})->output(0);
  Value* c = g.addNode(OpKind::Relu, "module", {b}, nullptr, {"c"}, {t})->output(0);
  g.addOutput(c);
  fpga::Emulator emu(g, {});
  fpga::VerilogOptions o;
  o.name = "wire";
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, o);
  EXPECT_EQ(d.top, "wire_");
  ASSERT_EQ(d.stages.size(), 3u);
  EXPECT_EQ(d.stages[0].module, "wire_x_Relu");
  EXPECT_EQ(d.stages[1].module, "wire_x_Relu_2");
  EXPECT_EQ(d.stages[2].module, "wire_module");
  EXPECT_NE(d.verilog.find("u_x_Relu_2 ("), std::string::npos);
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  fs::path dir = writeDesign(d, "clash");
  std::string cmd = "cd '" + (dir / "rtl").string() +
                    "' && verilator --lint-only -Wall --top-module wire_ *.v 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

// triad_dense's W_TERMS codes: a zero weight, +-2^a, and two digits with at most one negative
// (canonical signed digits) are shifts and adds; the rest, and everything at maxTerms 0, stay
// multipliers (0).
TEST(VerilogEmitter, ConstantProductsAsShiftsAndAdds) {
  EXPECT_EQ(fpga::constTerms(0, 2), 0x4000);
  EXPECT_EQ(fpga::constTerms(8, 2), 0x8000 | 3 << 8);
  EXPECT_EQ(fpga::constTerms(-8, 2), 0x8000 | 1 << 13 | 3 << 8);
  EXPECT_EQ(fpga::constTerms(1, 2), 0x8000);
  EXPECT_EQ(fpga::constTerms(3, 2), 0xc000 | 2 << 8 | 1 << 7);   // 4 - 1
  EXPECT_EQ(fpga::constTerms(-3, 2), 0xc000 | 1 << 13 | 2 << 8); // -4 + 1
  EXPECT_EQ(fpga::constTerms(10, 2), 0xc000 | 3 << 8 | 1);       // 8 + 2
  EXPECT_EQ(fpga::constTerms(-5, 2), 0);                         // -4 - 1
  EXPECT_EQ(fpga::constTerms(11, 2), 0);                         // 16 - 4 - 1
  EXPECT_EQ(fpga::constTerms(3, 1), 0);
  EXPECT_EQ(fpga::constTerms(-32768, 1), 0x8000 | 1 << 13 | 15 << 8);
  EXPECT_EQ(fpga::constTerms(8, 0), 0);
  EXPECT_EQ(fpga::constTerms(0, 0), 0);
}

// --strategy shift_add: the Dense cores become adder graphs (no multiplier, no triad_dense), the
// text is golden, lint is clean, and the RTL equals the emulator bit for bit with gaps and
// back-pressure at II 1, with the latency the design predicts, unpipelined, at 200 MHz (the
// delay model's stages) and at one adder level per stage.
TEST(VerilogEmitter, ShiftAddStrategyIsMultiplierFreeAndBitExact) {
  fpga::VerilogOptions o = opts();
  o.strategy = fpga::Strategy::ShiftAdd;
  o.clockMhz = 200;
  fpga::VerilogDesign golden = emitTiny({}, o);
  triad::testing::expectGolden(golden.verilog, "tiny_mlp_shift_add_fpga.v");
  EXPECT_EQ(golden.verilog.find("triad_dense"), std::string::npos);
  for (const fpga::RtlStage& s : golden.stages) {
    EXPECT_EQ(s.multipliers, 0) << s.layer;
    EXPECT_EQ(s.resources.dsp, 0) << s.layer;
    if (s.op == "Gemm") {
      ASSERT_TRUE(s.adderGraph.has_value()) << s.layer;
    }
  }
  const int64_t n = 200;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-6, 6);
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = u(rng);
  Graph g = tinyMlp(n, true);
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
  struct Setting {
    double clock;
    int levels;
  };
  for (Setting st : {Setting{0, 0}, Setting{200, 0}, Setting{0, 1}}) {
    fpga::VerilogOptions so = opts();
    so.strategy = fpga::Strategy::ShiftAdd;
    so.clockMhz = st.clock;
    so.stageLevels = st.levels;
    fpga::VerilogDesign d = fpga::emitVerilog(g, emu, so);
    std::string tag = "clock " + std::to_string(st.clock) + " levels " + std::to_string(st.levels);
    ASSERT_TRUE(d.stages[0].adderGraph.has_value());
    EXPECT_EQ(d.stages[0].latency, d.stages[0].adderGraph->stages + 2) << tag;
    if (st.levels == 1) {
      EXPECT_EQ(d.stages[0].adderGraph->stages, d.stages[0].adderGraph->depth);
    }
    if (st.clock == 0 && st.levels == 0) {
      EXPECT_EQ(d.stages[0].adderGraph->stages, 0);
    }
    if (!sim::haveVerilator()) continue;
    fs::path dir = writeDesign(d, "shift_add_c" + std::to_string(int(st.clock)) + "_l" +
                                      std::to_string(st.levels));
    std::string cmd = "cd '" + (dir / "rtl").string() +
                      "' && verilator --lint-only -Wall --top-module tiny_mlp *.v 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << tag;
    std::vector<int64_t> in;
    for (int64_t i = 0; i < n * 6; ++i)
      in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                  emu.inputQuant().overflow));
    sim::SimReport rep = sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, 5);
    EXPECT_EQ(rep.mismatches, 0) << tag;
    EXPECT_EQ(rep.missing, 0) << tag;
    EXPECT_EQ(rep.ii, 1.0) << tag;
    EXPECT_EQ(rep.latencyCycles, d.latency) << tag;
  }
}

// auto takes the adder graph where the products are exact in the accumulator and DSPs
// elsewhere; shift_add refuses a rounding accumulator and a reuse above 1, naming the layer.
TEST(VerilogEmitter, ShiftAddStrategyAppliesOnlyWhereExact) {
  fpga::QuantConfig rounding = fpga::QuantConfig::fromJson(
      R"({"layers": {"/fc2/Gemm": {"accumulator": {"precision": "fixed<12,4>",
          "rounding": "convergent", "overflow": "wrap"}}}})",
      "test.json");
  fpga::VerilogOptions o = opts();
  o.strategy = fpga::Strategy::Auto;
  fpga::VerilogDesign d = emitTiny(rounding, o);
  ASSERT_EQ(d.stages.size(), 3u);
  EXPECT_TRUE(d.stages[0].adderGraph.has_value());
  EXPECT_FALSE(d.stages[2].adderGraph.has_value());
  EXPECT_GT(d.stages[2].multipliers, 0);
  o.strategy = fpga::Strategy::ShiftAdd;
  try {
    emitTiny(rounding, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("layer '/fc2/Gemm': strategy shift_add needs products"),
              std::string::npos)
        << e.what();
  }
  o = opts(3);
  o.strategy = fpga::Strategy::ShiftAdd;
  try {
    emitTiny({}, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("'/fc1/Gemm': strategy shift_add"), std::string::npos)
        << e.what();
  }
  // Per layer: fc1 on DSPs, fc2 as an adder graph.
  o = opts();
  o.layerStrategy = {{"/fc1/Gemm", fpga::Strategy::Dsp}, {"/fc2/Gemm", fpga::Strategy::ShiftAdd}};
  d = emitTiny({}, o);
  EXPECT_FALSE(d.stages[0].adderGraph.has_value());
  EXPECT_TRUE(d.stages[2].adderGraph.has_value());
  o.layerStrategy = {{"/nope", fpga::Strategy::Dsp}};
  EXPECT_THROW(emitTiny({}, o), Error);
}

namespace {

// n samples of tiny_mlp's 6 inputs, uniform in [-6, 6).
Tensor tinyInputs(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-6, 6);
  Tensor x(DType::F32, {n, 6});
  for (int64_t i = 0; i < n * 6; ++i)
    x.data<float>()[i] = u(rng);
  return x;
}

// Lints `d` (written under `name`) and runs `x` through it in Verilator against the emulator's
// outputs (steady, then with gaps and back-pressure from `seed`).
sim::SimReport lintAndSimulate(const fpga::VerilogDesign& d, const fpga::Emulator& emu,
                               const Tensor& x, const std::string& name, uint64_t seed) {
  fs::path dir = writeDesign(d, name);
  std::string cmd = "cd '" + (dir / "rtl").string() + "' && verilator --lint-only -Wall " +
                    "--top-module " + d.top + " *.v 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  fpga::EmulatorResult res = emu.run(std::span<const Tensor>(&x, 1), false);
  std::vector<int64_t> in;
  for (int64_t i = 0; i < x.numElements(); ++i)
    in.push_back(fpga::quantize(x.data<float>()[i], d.inFormat, emu.inputQuant().rounding,
                                emu.inputQuant().overflow));
  int64_t n = x.shape()[0];
  return sim::simulate(dir, d.top, in, res.layerRaw[d.lastLayer], n, d.outElems, seed);
}

} // namespace

// registerStreams: a skid buffer in front of every layer operand (triad_skid): lint clean,
// bit-exact with gaps and back-pressure, the same latency and II as without, and its registers in
// the glue's estimate.
TEST(VerilogEmitter, RegisteredStreamsKeepLatencyAndResults) {
  const int64_t n = 150;
  Tensor x = tinyInputs(n, 5);
  Graph g = tinyMlp(n, true);
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions o = opts();
  o.clockMhz = 200;
  o.strategy = fpga::Strategy::ShiftAdd;
  fpga::VerilogDesign plain = fpga::emitVerilog(g, emu, o);
  o.registerStreams = true;
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, o);
  EXPECT_EQ(std::count(d.blocks.begin(), d.blocks.end(), "triad_skid"), 1);
  EXPECT_EQ(plain.verilog.find("triad_skid"), std::string::npos);
  size_t skids = 0;
  for (size_t at = d.verilog.find("  triad_skid #("); at != std::string::npos;
       at = d.verilog.find("  triad_skid #(", at + 1))
    ++skids;
  EXPECT_EQ(skids, d.stages.size()); // one operand per layer here
  EXPECT_EQ(d.latency, plain.latency);
  EXPECT_GT(d.glue.ff, plain.glue.ff);
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  sim::SimReport rep = lintAndSimulate(d, emu, x, "skid", 9);
  EXPECT_EQ(rep.mismatches, 0);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_EQ(rep.ii, 1.0);
  EXPECT_EQ(rep.latencyCycles, d.latency);
}

// Output folding (reuse above the input count: lanes computing several outputs one after
// another) and weights read from a ROM (one more pipeline stage) are bit-exact with the emulator
// at the II and latency the design predicts, with gaps and back-pressure; lint is clean.
TEST(VerilogEmitter, FoldedOutputsAndWeightRomsAreBitExact) {
  const int64_t n = 40;
  Tensor x = tinyInputs(n, 11);
  Graph g = tinyMlp(n, false);
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions o = opts();
  o.clockMhz = 200;
  o.layerReuse = {{"/fc1/Gemm", 12}, {"/fc2/Gemm", 12}}; // 6 x 2 lanes; 4 x 3, one lane
  o.romLayers = {"/fc1/Gemm"};
  fpga::VerilogDesign d = fpga::emitVerilog(g, emu, o);
  ASSERT_EQ(d.stages.size(), 3u); // fc1, relu, fc2
  EXPECT_EQ(d.stages[0].multipliers, 2);
  EXPECT_TRUE(d.stages[0].weightRom);
  EXPECT_EQ(d.stages[2].multipliers, 1);
  EXPECT_FALSE(d.stages[2].weightRom);
  EXPECT_NE(d.verilog.find(".WEIGHT_ROM(1)"), std::string::npos);
  o.romLayers.clear();
  fpga::VerilogDesign logic = fpga::emitVerilog(g, emu, o);
  EXPECT_EQ(d.latency, logic.latency + 1); // the ROM's read stage
  o.layerReuse["/fc2/Gemm"] = 8;           // neither a divisor of 4 nor 4 x a divisor of 3
  EXPECT_THROW(fpga::emitVerilog(g, emu, o), Error);
  if (!sim::haveVerilator()) GTEST_SKIP() << "verilator is not on PATH";
  sim::SimReport rep = lintAndSimulate(d, emu, x, "fold", 3);
  EXPECT_EQ(rep.mismatches, 0);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_EQ(rep.ii, 12.0);
  EXPECT_EQ(rep.latencyCycles, d.latency);
}

// An average pool whose window is the whole frame (PyTorch's avg_pool2d(x, 8) on 8x8) is built
// as a global pool (no line buffer), with the same result as the window's arithmetic; a smaller
// window keeps the window generator.
TEST(VerilogEmitter, AWindowOverTheWholeFrameIsAGlobalPool) {
  for (int64_t k : {4, 2}) {
    SCOPED_TRACE(k);
    Graph g;
    g.name = "pool";
    g.opset = 17;
    Value* x = g.addInput("x", TensorType{DType::F32, {3, 2, 4, 4}, {}});
    auto a = std::make_shared<PoolAttrs>();
    a->kernel = {k, k};
    a->strides = {k, k};
    a->pads = {0, 0, 0, 0};
    a->dilations = {1, 1};
    int64_t o = 4 / k;
    Node* p = g.addNode(OpKind::AveragePool, "/AveragePool", {x}, a, {"y"},
                        {TensorType{DType::F32, {3, 2, o, o}, {}}});
    g.addOutput(p->output(0));
    fpga::Emulator emu(g, fpga::QuantConfig{});
    fpga::VerilogDesign d = fpga::emitVerilog(g, emu, fpga::VerilogOptions{});
    bool global = std::count(d.blocks.begin(), d.blocks.end(), "triad_global_pool") > 0;
    EXPECT_EQ(global, k == 4);
    EXPECT_EQ(std::count(d.blocks.begin(), d.blocks.end(), "triad_window") > 0, k != 4);
    // The emulator's result is the average of each plane either way.
    Tensor in(DType::F32, {3, 2, 4, 4});
    for (int64_t i = 0; i < in.numElements(); ++i)
      in.data<float>()[i] = float(i % 7) * 0.25f - 0.5f;
    fpga::EmulatorResult r = emu.run(std::span<const Tensor>(&in, 1), false);
    const std::vector<int64_t>& y = r.layerRaw[d.lastLayer];
    ASSERT_EQ(int64_t(y.size()), 3 * 2 * o * o);
    if (k == 4)
      for (int64_t plane = 0; plane < 6; ++plane) {
        double sum = 0;
        for (int64_t i = 0; i < 16; ++i)
          sum += in.data<float>()[plane * 16 + i];
        EXPECT_NEAR(fpga::dequantize(y[size_t(plane)], d.outFormat), sum / 16, 1.0 / 64);
      }
  }
}
