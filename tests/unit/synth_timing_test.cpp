// sim::criticalPath, the timing estimate of `triad synth` on xc7 (docs/fpga.md, "Fmax
// estimate"), on small hand-written netlists in Yosys' `write_blif -param -impltf` form.
#include "sim/Timing.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace triad::sim;

namespace {

double sum(const TimingPath& p) {
  return std::accumulate(p.steps.begin(), p.steps.end(), 0.0,
                         [](double a, const TimingStep& s) { return a + s.netNs + s.cellNs; });
}

const char* kDspParams = R"(.param AREG 00000000000000000000000000000000
.param BREG 00000000000000000000000000000000
.param CREG 00000000000000000000000000000000
.param DREG 00000000000000000000000000000000
.param ADREG 00000000000000000000000000000000
.param USE_MULT "MULTIPLY"
.param USE_DPORT "FALSE"
)";

} // namespace

// FF -> LUT -> two chained CARRY4 -> FF: launch, net + LUT, carry entry (no net: same slice),
// CI -> CO (no net), the last net and the setup.
TEST(SynthTiming, LutIntoCarryChain) {
  const char* blif = R"(.model m
.inputs clk d
.outputs y
.subckt FDRE C=clk CE=$true D=d Q=q R=$false
.subckt LUT2 I0=q I1=q O=s
.subckt CARRY4 CI=$false CYINIT=$false DI[0]=$false DI[1]=$false DI[2]=$false DI[3]=$false \
 S[0]=s S[1]=$false S[2]=$false S[3]=$false CO[0]=c0 CO[1]=c1 CO[2]=c2 CO[3]=c3 O[0]=o0 O[1]=o1 O[2]=o2 O[3]=o3
.subckt CARRY4 CI=c3 CYINIT=$false DI[0]=$false DI[1]=$false DI[2]=$false DI[3]=$false \
 S[0]=$false S[1]=$false S[2]=$false S[3]=$false CO[0]=e0 CO[1]=e1 CO[2]=e2 CO[3]=e3 O[0]=p0 O[1]=p1 O[2]=p2 O[3]=p3
.subckt FDRE C=clk CE=$true D=e3 Q=y R=$false
.end
)";
  Xc7DelayModel m;
  std::string why;
  auto p = criticalPath(blif, m, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->mix.lut, 1);
  EXPECT_EQ(p->mix.carryEntry, 1);
  EXPECT_EQ(p->mix.carry, 1);
  EXPECT_EQ(p->mix.launch, "flip-flop");
  EXPECT_EQ(p->mix.capture, "FDRE D");
  double want = m.clockToQ + (m.net + m.lut) + m.carryEntry + m.carry + m.net + m.setup;
  EXPECT_NEAR(p->periodNs, want, 1e-9);
  EXPECT_NEAR(sum(*p), p->periodNs, 1e-9);
}

// A DSP48E1 with product and output registers: its clock enable and its inputs are endpoints
// (setup into the M register), its P output a start (clock-to-out of the P register); no path
// runs through it. Without registers, A -> P is a combinational arc through the multiplier.
TEST(SynthTiming, RegisteredDspCutsPaths) {
  auto dsp = [](const char* mreg, const char* preg) {
    return std::string(".model m\n.inputs clk a en\n.outputs y\n") +
           ".subckt FDRE C=clk CE=$true D=en Q=enq R=$false\n"
           ".subckt LUT1 I0=enq O=ce\n"
           ".subckt FDRE C=clk CE=$true D=a Q=aq R=$false\n"
           ".subckt DSP48E1 CLK=clk A[0]=aq B[0]=aq CEM=ce CEP=ce P[0]=p0\n" +
           kDspParams + ".param MREG " + mreg + "\n.param PREG " + preg + "\n" +
           ".subckt LUT1 I0=p0 O=l\n"
           ".subckt FDRE C=clk CE=$true D=l Q=y R=$false\n.end\n";
  };
  Xc7DelayModel m;
  std::string why;
  auto reg = criticalPath(dsp("1", "1"), m, &why);
  ASSERT_TRUE(reg) << why;
  // Slowest: aq -> A, setup into the M register 1.416 ns (> P clock-to-out 0.329 + LUT + net).
  EXPECT_EQ(reg->mix.dsp, 0);
  EXPECT_EQ(reg->mix.capture, "DSP48E1 A[0]");
  EXPECT_NEAR(reg->periodNs, m.clockToQ + m.net + 1.416, 1e-9);
  // Only the M register: P is the ALU's output after it (1.671 ns), then the LUT and the FF.
  auto mOnly = criticalPath(dsp("1", "0"), m, &why);
  ASSERT_TRUE(mOnly) << why;
  EXPECT_EQ(mOnly->mix.launch, "DSP48E1 M register");
  EXPECT_NEAR(mOnly->periodNs, 1.671 + m.net + m.lut + m.net + m.setup, 1e-9);
  // No registers: the multiplier is on the path (A -> P 2.823 ns).
  auto comb = criticalPath(dsp("0", "0"), m, &why);
  ASSERT_TRUE(comb) << why;
  EXPECT_EQ(comb->mix.dsp, 1);
  EXPECT_NEAR(comb->periodNs, m.clockToQ + m.net + 2.823 + m.net + m.lut + m.net + m.setup, 1e-9);
  EXPECT_NEAR(sum(*comb), comb->periodNs, 1e-9);
}

// A block RAM read launches at its clock-to-out (2.454 ns without the output register).
TEST(SynthTiming, BlockRamRead) {
  const char* blif = R"(.model m
.inputs clk a
.outputs y
.subckt RAMB18E1 CLKARDCLK=clk ADDRARDADDR[0]=a DOADO[0]=d
.param DOA_REG 00000000000000000000000000000000
.subckt FDRE C=clk CE=$true D=d Q=y R=$false
.end
)";
  Xc7DelayModel m;
  std::string why;
  auto p = criticalPath(blif, m, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->mix.launch, "block RAM read");
  EXPECT_NEAR(p->periodNs, m.bramClockToOut + m.net + m.setup, 1e-9);
}

// Unknown cells and combinational loops give no estimate, with the reason.
TEST(SynthTiming, NoEstimate) {
  Xc7DelayModel m;
  std::string why;
  EXPECT_FALSE(
      criticalPath(".model m\n.inputs a\n.outputs y\n.subckt FOO A=a Y=y\n.end\n", m, &why));
  EXPECT_NE(why.find("FOO"), std::string::npos) << why;
  EXPECT_FALSE(criticalPath(
      ".model m\n.inputs a\n.outputs y\n.subckt LUT2 I0=a I1=z O=w\n.subckt LUT1 I0=w O=z\n"
      ".subckt LUT1 I0=z O=y\n.end\n",
      m, &why));
  EXPECT_NE(why.find("loop"), std::string::npos) << why;
}
