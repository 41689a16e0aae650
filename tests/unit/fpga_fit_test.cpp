// Fitting a design to a named part (fpga/Fit.h): the fitted design's estimate stays within the
// margin of the part, its II is its slowest stage's, a larger part never gives a slower design,
// layers pinned by the caller keep their reuse, and a budget nothing fits is refused with the
// numbers.
#include "fpga/Fit.h"
#include "fpga/Hdl.h"
#include "fpga/layers/DenseCore.h"
#include "frontend/OnnxImporter.h"
#include "ir/Diagnostics.h"
#include "ir/passes/Pass.h"

#include <gtest/gtest.h>

#include <map>

using namespace triad;

namespace {

ir::Graph jetMlp() {
  frontend::ImportOptions o;
  o.batch = 1;
  ir::Graph g =
      frontend::importOnnxFile(std::string(TRIAD_SOURCE_DIR) + "/models/jet_mlp.onnx", o).graph;
  ir::defaultPipeline().run(g);
  return g;
}

int64_t slowestStage(const fpga::VerilogDesign& d) {
  int64_t ii = 0;
  for (const fpga::RtlStage& s : d.stages)
    ii = std::max(ii, fpga::stageCyclesPerSample(s));
  return ii;
}

} // namespace

TEST(FpgaFit, ReuseFactorsIncludeOutputFolding) {
  EXPECT_EQ(fpga::denseReuseFactors(6, 4), (std::vector<int64_t>{1, 2, 3, 6, 12, 24}));
  EXPECT_TRUE(fpga::validDenseReuse(16, 64, 16 * 32));
  EXPECT_FALSE(fpga::validDenseReuse(16, 64, 16 * 3));
  EXPECT_FALSE(fpga::validDenseReuse(16, 64, 5));
  EXPECT_EQ(fpga::denseLeaves(16, 4), 4);
  EXPECT_EQ(fpga::denseLeaves(16, 64), 1);
}

TEST(FpgaFit, JetMlpFitsEachPartWithinTheMargin) {
  ir::Graph g = jetMlp();
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions base;
  base.clockMhz = 200;
  int64_t previous = 0;
  std::map<std::string, int64_t> ii;
  for (const char* name : {"xc7a35t", "xc7z020", "xc7a200t", "xcvu9p"}) {
    SCOPED_TRACE(name);
    const fpga::Device& part = fpga::findDevice(name);
    fpga::FitResult f = fpga::fitToPart(g, emu, base, part, {});
    ir::Resources r = f.design.resources();
    EXPECT_TRUE(r.fitsIn(f.budget));
    EXPECT_NEAR(f.budget.dsp, part.resources.dsp * 0.8, 1e-9);
    EXPECT_EQ(f.ii, slowestStage(f.design));
    EXPECT_GT(f.probes, 1);
    // The layers' choices are what the design was built with.
    for (const fpga::FitLayer& l : f.layers) {
      auto it = std::find_if(f.design.stages.begin(), f.design.stages.end(),
                             [&](const fpga::RtlStage& s) { return s.layer == l.layer; });
      ASSERT_NE(it, f.design.stages.end());
      EXPECT_EQ(it->reuse, l.reuse);
      EXPECT_EQ(it->weightRom, l.weightRom);
      EXPECT_EQ(it->adderGraph.has_value(), l.strategy == fpga::Strategy::ShiftAdd);
    }
    // A larger part is never slower.
    if (previous > 0) {
      EXPECT_LE(f.ii, previous);
    }
    previous = f.ii;
    ii[name] = f.ii;
  }
  // The 35T's 90 DSPs cannot hold the 4,256 products at reuse 1: the layers share multipliers.
  EXPECT_GT(ii["xc7a35t"], 1);
  // The largest part takes the whole network at one sample per cycle.
  EXPECT_EQ(ii["xcvu9p"], 1);
}

TEST(FpgaFit, PinnedLayersKeepTheirSettings) {
  ir::Graph g = jetMlp();
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::VerilogOptions base;
  base.clockMhz = 200;
  base.layerReuse["/fc2/Gemm"] = 32;
  base.romLayers.insert("/fc2/Gemm");
  fpga::FitResult f = fpga::fitToPart(g, emu, base, fpga::findDevice("xc7a100t"), {});
  for (const fpga::RtlStage& s : f.design.stages)
    if (s.layer == "/fc2/Gemm") {
      EXPECT_EQ(s.reuse, 32);
      EXPECT_TRUE(s.weightRom);
    }
  EXPECT_GE(f.ii, 32);
  // A layer pinned to shift_add stays an adder graph at reuse 1 while the others are fitted.
  fpga::VerilogOptions sa;
  sa.clockMhz = 200;
  sa.layerStrategy["/fc4/Gemm"] = fpga::Strategy::ShiftAdd;
  fpga::FitResult g4 = fpga::fitToPart(g, emu, sa, fpga::findDevice("xc7a35t"), {});
  for (const fpga::RtlStage& s : g4.design.stages)
    if (s.layer == "/fc4/Gemm") {
      EXPECT_EQ(s.reuse, 1);
      EXPECT_TRUE(s.adderGraph.has_value());
    }
  EXPECT_TRUE(g4.design.resources().fitsIn(g4.budget));
  // A strategy the caller chose for every layer (--strategy) is kept: shift_add needs reuse 1,
  // so on the 35T nothing fits; dsp offers no adder graph.
  fpga::VerilogOptions all = sa;
  all.layerStrategy.clear();
  all.strategy = fpga::Strategy::ShiftAdd;
  fpga::FitOptions keep;
  keep.chooseStrategy = false;
  EXPECT_THROW(fpga::fitToPart(g, emu, all, fpga::findDevice("xc7a35t"), keep), Error);
  fpga::FitResult big = fpga::fitToPart(g, emu, all, fpga::findDevice("xcvu9p"), keep);
  for (const fpga::RtlStage& s : big.design.stages)
    if (fpga::isDenseCore(s)) {
      EXPECT_TRUE(s.adderGraph.has_value()) << s.layer;
    }
  all.strategy = fpga::Strategy::Dsp;
  fpga::FitResult dsp = fpga::fitToPart(g, emu, all, fpga::findDevice("xc7a35t"), keep);
  for (const fpga::RtlStage& s : dsp.design.stages)
    EXPECT_FALSE(s.adderGraph.has_value()) << s.layer;
}

TEST(FpgaFit, NothingFitsIsAUsageErrorWithTheNumbers) {
  ir::Graph g = jetMlp();
  fpga::Emulator emu(g, fpga::QuantConfig{});
  fpga::FitOptions fo;
  fo.margin = 0.01;
  try {
    fpga::fitToPart(g, emu, {}, fpga::findDevice("xc7a35t"), fo);
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    std::string m = e.what();
    EXPECT_NE(m.find("does not fit xc7a35t"), std::string::npos) << m;
    EXPECT_NE(m.find("DSP"), std::string::npos) << m;
    EXPECT_NE(m.find("within 1%"), std::string::npos) << m;
  }
  fo.margin = 1.5;
  EXPECT_THROW(fpga::fitToPart(g, emu, {}, fpga::findDevice("xc7a35t"), fo), Error);
}

// Large weight tables are written one literal per row or ROM word (Verilator folds a
// concatenation in time quadratic in its items): the first value takes the top bits, values are
// separated by underscores when their width is a multiple of 4, and negative values wrap.
TEST(FpgaFit, PackedLiteralsHoldTheValuesMostSignificantFirst) {
  EXPECT_EQ(fpga::hdl::packedHexLiteral({1, -1, 0x1f}, 8), "24'h01_ff_1f");
  EXPECT_EQ(fpga::hdl::packedHexLiteral({-1, 2}, 6), "12'hfc2");   // 111111 000010
  EXPECT_EQ(fpga::hdl::packedHexLiteral({1, 0, -2}, 3), "9'h046"); // 001 000 110
  EXPECT_EQ(fpga::hdl::packedHexLiteral({0x1234}, 16), "16'h1234");
}
