// Multiplier-free Dense/Conv cores: the constant matrix-vector product as an adder graph
// (fpga/Cmvm.h), pipelined for the clock by the delay model and written out as named wires and
// registers of the layer's module; control by triad_pipe (fpga/rtl/triad_pipe.v).
//
// Arithmetic: every node holds its exact integer (products in P_FRAC = IN_FRAC + W_FRAC
// fraction bits, range-sized); an output's exact sum is aligned to the accumulator, the
// accumulator-cast bias added modulo 2^ACC_W, and the result cast by triad_cast. This is the
// contract of docs/fpga.md exactly when every product casts to the accumulator without rounding
// or overflow (cmvmApplies), as with the built-in "exact" accumulator.
#include "fpga/Cmvm.h"
#include "fpga/layers/DelayModel.h"
#include "fpga/layers/DenseCore.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace triad::fpga {

bool cmvmApplies(const DenseCore& c) {
  FixedFormat pf = productFormat(c.in, c.q->weight().format);
  const FixedFormat& af = c.q->acc().format;
  return af.fracBits() >= pf.fracBits() && af.width - af.fracBits() >= pf.width - pf.fracBits();
}

namespace {

using cmvm::i128;

/// `name` (w bits, signed) sign-extended or cut to `to` bits.
std::string ext(const std::string& name, int w, int to) {
  if (to == w) return name;
  if (to < w) return fmt::format("{}[{}:0]", name, to - 1);
  return fmt::format("{{{{{}{{{}[{}]}}}}, {}}}", to - w, name, w - 1, name);
}

/// Bits [w-1:lo] of `name` (w bits, signed), i.e. name >>> lo, sign-extended or cut to `to` bits.
std::string extHigh(const std::string& name, int w, int lo, int to) {
  if (lo == 0) return ext(name, w, to);
  if (lo >= w) return fmt::format("{{{}{{{}[{}]}}}}", to, name, w - 1);
  int hw = w - lo;
  std::string slice = fmt::format("{}[{}:{}]", name, w - 1, lo);
  if (to == hw) return slice;
  if (to < hw) return fmt::format("{}[{}:{}]", name, lo + to - 1, lo);
  return fmt::format("{{{{{}{{{}[{}]}}}}, {}}}", to - hw, name, w - 1, slice);
}

/// Bits [n-1:0] of `name` (w bits, signed) sign-extended to n bits when n > w.
std::string extLow(const std::string& name, int w, int n) {
  return n <= w ? fmt::format("{}[{}:0]", name, n - 1) : ext(name, w, n);
}

class GraphWriter {
public:
  GraphWriter(hdl::Module& m, const cmvm::Graph& g, int inW, double budget, bool byDelay)
      : m_(m), g_(g), inW_(inW), budget_(budget), byDelay_(byDelay) {
    stage_.assign(g.nodes.size(), 0);
    time_.assign(g.nodes.size(), 0.0);
    regs_.assign(g.nodes.size(), {});
    names_.resize(g.nodes.size());
  }

  int width(int n) const { return std::max(2, g_.nodes[size_t(n)].width()); }

  /// Stage and time of every node: ASAP, a node moving to the next stage when its operands'
  /// time plus its own adder would pass the budget.
  void schedule() {
    for (size_t i = size_t(g_.inputs); i < g_.nodes.size(); ++i) {
      const cmvm::Node& n = g_.nodes[i];
      int s = std::max(stage_[size_t(n.a)], stage_[size_t(n.b)]);
      double t = std::max(at(n.a, s), at(n.b, s));
      double c = cost(g_.nodes[i].carryBits());
      if (t + c > budget_ && t > 0) {
        ++s;
        t = 0;
      }
      stage_[i] = s;
      time_[i] = t + c;
    }
  }

  /// The stage in which an output's node, aligned and added to the bias and cast, ends (its
  /// result then waits in registers for the layer's last stage).
  int finalStage(const cmvm::Term& t, double finalCost) const {
    if (t.node < 0) return 0;
    int s = stage_[size_t(t.node)];
    double time = time_[size_t(t.node)];
    return time + finalCost > budget_ && time > 0 ? s + 1 : s;
  }

  double cost(int carryBits) const { return byDelay_ ? delay::adderLevel(carryBits) : 1.0; }

  /// Declares every node as a wire of the layer module, in order; inputs read x_reg.
  void writeNodes(const std::string& xReg) {
    std::vector<char> used(g_.nodes.size(), 0);
    for (const cmvm::Term& t : g_.outputs)
      if (t.node >= 0) used[size_t(t.node)] = 1;
    for (size_t i = g_.nodes.size(); i-- > size_t(g_.inputs);)
      if (used[i]) used[size_t(g_.nodes[i].a)] = used[size_t(g_.nodes[i].b)] = 1;
    for (int k = 0; k < g_.inputs; ++k) {
      names_[size_t(k)] = fmt::format("x{}", k);
      if (!used[size_t(k)]) continue;
      m_.add(hdl::Wire{names_[size_t(k)], width(k), {}});
      m_.add(hdl::Assign{names_[size_t(k)],
                         fmt::format("{}[{}:{}]", xReg, (k + 1) * inW_ - 1, k * inW_)});
    }
    for (size_t i = size_t(g_.inputs); i < g_.nodes.size(); ++i) {
      const cmvm::Node& n = g_.nodes[i];
      names_[i] = fmt::format("{}{}", n.shared ? "s" : "t", i);
      if (!used[i]) continue;
      std::string a = ref(n.a, stage_[i]), b = ref(n.b, stage_[i]);
      int w = width(int(i)), wa = width(n.a), wb = width(n.b), d = n.shift;
      // a +- b * 2^d: the low d bits are a's own; the chain adds the w - d bits above them.
      std::string hi =
          fmt::format("{} {} {}", extHigh(a, wa, d, w - d), n.negB ? "-" : "+", ext(b, wb, w - d));
      std::string expr = d > 0 ? fmt::format("{{{}, {}}}", hi, extLow(a, wa, d)) : hi;
      m_.add(hdl::Wire{names_[i], w, {}});
      m_.add(hdl::Assign{names_[i], expr});
    }
  }

  /// Node n's value as available in stage s (a register chain when n is computed earlier).
  std::string ref(int n, int s) {
    return delayed(names_[size_t(n)], width(n), stage_[size_t(n)], s, &regs_[size_t(n)]);
  }

  /// `name` (computed in stage `from`) as available in stage `to`: registers name_r<k> for the
  /// stages k in (from, to], each made once (`made` lists those that exist).
  std::string delayed(const std::string& name, int w, int from, int to, std::vector<int>* made) {
    std::string prev = name;
    for (int k = from + 1; k <= to; ++k) {
      std::string reg = fmt::format("{}_r{}", name, k);
      if (std::find(made->begin(), made->end(), k) == made->end()) {
        // Kept as flip-flops: the low bits of a sum pass through every stage unchanged, and
        // Yosys would pack such chains into SRL16Es, launching a nanosecond late.
        m_.add(hdl::Register{reg, w, prev, "en", {}, true});
        made->push_back(k);
        regBits_ += w;
      }
      prev = reg;
    }
    return prev;
  }

  int64_t regBits() const { return regBits_; }

private:
  /// When node n's value is ready in stage s: its own time there, else at its register's
  /// launch (flip-flops: the pipeline registers are kept out of shift-register LUTs).
  double at(int n, int s) const { return stage_[size_t(n)] == s ? time_[size_t(n)] : 0.0; }

  hdl::Module& m_;
  const cmvm::Graph& g_;
  int inW_;
  double budget_;
  bool byDelay_;
  std::vector<int> stage_;
  std::vector<double> time_;
  std::vector<std::vector<int>> regs_;
  std::vector<std::string> names_;
  int64_t regBits_ = 0;
};

} // namespace

AdderGraphStats addAdderGraph(hdl::Module& m, const DenseCore& c, const std::string& layer,
                              const std::vector<int64_t>& perm, std::optional<int64_t> rawMin,
                              const RtlSettings& s, const std::string& inPrefix,
                              const std::string& outPrefix) {
  if (!cmvmApplies(c))
    fail(ErrorKind::Unsupported,
         "layer '{}': strategy shift_add needs products that cast to the accumulator {} without "
         "rounding or overflow (the input {} times the weight {} is {}); use an \"exact\" "
         "accumulator or strategy dsp",
         layer, formatToString(c.q->acc().format), formatToString(c.in),
         formatToString(c.q->weight().format),
         formatToString(productFormat(c.in, c.q->weight().format)));
  const LayerQuant& q = *c.q;
  const FixedFormat& af = q.acc().format;
  const FixedFormat& of = q.result().format;
  const int inW = c.in.width;
  int64_t nIn = perm.empty() ? c.K : int64_t(perm.size());
  // W in the order the stream delivers the inputs (zero columns: not connected).
  std::vector<int64_t> w(size_t(c.N * nIn), 0);
  for (int64_t o = 0; o < c.N; ++o)
    for (int64_t i = 0; i < nIn; ++i) {
      int64_t src = perm.empty() ? i : perm[size_t(i)];
      if (src >= 0) w[size_t(o * nIn + i)] = c.w[size_t(o * c.K + src)];
    }
  // Input ranges: the format's, or from the stream's lower bound (after a Relu: 0).
  int64_t lo = std::max(minRaw(c.in), rawMin.value_or(minRaw(c.in)));
  std::vector<cmvm::Range> in(size_t(nIn), cmvm::Range{lo, maxRaw(c.in)});
  for (int64_t i = 0; i < nIn; ++i)
    if (!perm.empty() && perm[size_t(i)] < 0) in[size_t(i)] = {0, 0};
  cmvm::Graph g = cmvm::solve(w, c.N, nIn, in);

  double budget = std::numeric_limits<double>::infinity(), finalCost = 0;
  bool byDelay = s.clockMhz > 0 && s.stageLevels <= 0;
  if (s.stageLevels > 0) {
    budget = s.stageLevels;
    finalCost = 1;
  } else if (byDelay) {
    budget = delay::stageBudget(s.clockMhz);
    finalCost = delay::adderLevel(af.width) + delay::kCast;
  }
  // Stage of the layer's last logic: the latest output's (all outputs leave together).
  GraphWriter gw(m, g, inW, budget, byDelay);
  gw.schedule();
  int P = 0;
  for (const cmvm::Term& t : g.outputs)
    P = std::max(P, gw.finalStage(t, finalCost));

  AdderGraphStats st;
  st.adders = g.adders();
  st.shared = g.sharedAdders();
  st.digits = g.digits;
  st.carryBits = g.carryBits();
  st.depth = g.depth();
  st.stages = P;
  m.addComment(fmt::format(
      "Multiplier-free: y = W x as an adder graph (canonical signed digits, common subexpressions "
      "shared across the {} outputs): {} adders for {} nonzero digits, {} of them shared; depth "
      "{} adder levels, {} pipeline stage(s)",
      c.N, st.adders, st.digits, st.shared, st.depth, P));
  // Range-sized nodes are cut where a sum needs fewer bits (their top bits unread), an input
  // without a nonzero weight is not read at all, and without pipeline stages en is not either.
  m.addRaw("  /* verilator lint_off UNUSEDSIGNAL */\n");
  m.add(hdl::Wire{"en", 1, {}});
  m.add(hdl::Wire{"load_in", 1, {}});
  m.add(hdl::Wire{"load_out", 1, {}});
  m.add(hdl::Instance{"triad_pipe",
                      "u_pipe",
                      {{"P", std::to_string(P)}},
                      {{"clk", "clk"},
                       {"rst_n", "rst_n"},
                       {"in_tvalid", inPrefix + "_tvalid"},
                       {"in_tready", inPrefix + "_tready"},
                       {"out_tvalid", outPrefix + "_tvalid"},
                       {"out_tready", outPrefix + "_tready"},
                       {"en", "en"},
                       {"load_in", "load_in"},
                       {"load_out", "load_out"}},
                      "valid/ready, the input register's and the pipeline's enables"});
  m.add(hdl::Register{
      "x_reg", nIn * inW, inPrefix + "_tdata", "load_in",
      fmt::format("the input vector: x{} .. x0, {} each", nIn - 1, formatToString(c.in))});
  gw.writeNodes("x_reg");

  // Per output, in its own final stage: the exact sum aligned to the accumulator (SHL more
  // fraction bits), plus the bias cast to the accumulator, modulo 2^ACC_W; then the result cast,
  // which waits in registers for the layer's last stage (P).
  const FixedFormat pf = productFormat(c.in, q.weight().format);
  const int shl = af.fracBits() - pf.fracBits();
  const int accW = af.width;
  m.add(hdl::Wire{"y", c.N * of.width,
                  fmt::format("results, {} each, in the last stage", formatToString(of))});
  for (int64_t o = 0; o < c.N; ++o) {
    const cmvm::Term& t = g.outputs[size_t(o)];
    const int from = gw.finalStage(t, finalCost); // this output's last stage
    int64_t bias =
        c.b.empty() ? 0
                    : cast(c.b[size_t(o)], q.bias().format, af, q.acc().rounding, q.acc().overflow);
    uint64_t ub = uint64_t(bias) & (accW >= 64 ? ~uint64_t(0) : (uint64_t(1) << accW) - 1);
    int sh = t.node < 0 ? accW : t.shift + shl;
    std::string acc;
    if (sh >= accW) {
      acc = hdl::hexLiteral(bias, accW);
    } else {
      std::string v = gw.ref(t.node, from);
      int hw = accW - sh;
      std::string term = ext(v, gw.width(t.node), hw);
      uint64_t hiBias = ub >> sh;
      std::string hi = hiBias == 0 && !t.neg
                           ? term
                           : fmt::format("{} {} {}", hdl::hexLiteral(int64_t(hiBias), hw),
                                         t.neg ? "-" : "+", term);
      acc = sh > 0 ? fmt::format("{{{}, {}}}", hi,
                                 hdl::hexLiteral(int64_t(ub & ((uint64_t(1) << sh) - 1)), sh))
                   : hi;
      st.finalBits += hiBias == 0 && !t.neg ? 0 : hw;
    }
    std::string accName = fmt::format("acc{}", o);
    m.add(hdl::Wire{accName, accW,
                    o == 0 ? fmt::format("accumulators, {}", formatToString(af)) : std::string()});
    m.add(hdl::Assign{accName, acc});
    hdl::Instance cst{"triad_cast",
                      fmt::format("u_cast{}", o),
                      {{"IN_W", std::to_string(accW)},
                       {"IN_FRAC", std::to_string(af.fracBits())},
                       {"OUT_W", std::to_string(of.width)},
                       {"OUT_FRAC", std::to_string(of.fracBits())},
                       {"ROUNDING", std::to_string(roundingCode(q.result().rounding))},
                       {"SATURATE", std::to_string(saturateCode(q.result().overflow))}},
                      {{"in_data", accName}, {"out_data", fmt::format("y{}", o)}},
                      {}};
    m.add(hdl::Wire{fmt::format("y{}", o), of.width, {}});
    m.add(std::move(cst));
    std::vector<int> made;
    m.add(hdl::Assign{fmt::format("y[{}:{}]", (o + 1) * of.width - 1, o * of.width),
                      gw.delayed(fmt::format("y{}", o), of.width, from, P, &made)});
  }
  m.addRaw("  /* verilator lint_on UNUSEDSIGNAL */\n");
  m.add(hdl::Register{"y_reg", c.N * of.width, "y", "load_out", "the output register"});
  m.add(hdl::Assign{outPrefix + "_tdata", "y_reg"});
  st.regBits = gw.regBits();
  return st;
}

} // namespace triad::fpga
