#include "fpga/Fit.h"

#include "fpga/layers/DenseCore.h"
#include "ir/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace triad::fpga {

namespace {

// Adder graphs are solved for layers of at most this many weights (the solver's time grows
// with the pairs of digits; a larger layer would not fit a part's LUTs at reuse 1 anyway).
constexpr int64_t kMaxAdderGraphWeights = 4096;
// Rounds of re-weighting the resources over budget, per candidate II.
constexpr int kWeightRounds = 24;

// The stage of `layer` in `d` (nullptr when the design has none).
const RtlStage* stageOf(const VerilogDesign& d, const std::string& layer) {
  auto it = std::find_if(d.stages.begin(), d.stages.end(),
                         [&](const RtlStage& s) { return s.layer == layer; });
  return it == d.stages.end() ? nullptr : &*it;
}

struct Option {
  int64_t reuse = 1;
  Strategy strategy = Strategy::Dsp;
  bool rom = false;
  int64_t cycles = 0;
  ir::Resources res;
};

struct Tunable {
  std::string layer;
  std::vector<Option> options;
};

using Weights = std::array<double, 4>;

std::array<double, 4> parts(const ir::Resources& r) {
  return {r.lut, r.ff, r.dsp, r.bram18};
}

// Use of the budget, weighted; a resource the part does not have costs without bound.
double cost(const ir::Resources& r, const ir::Resources& budget, const Weights& w) {
  auto u = parts(r), b = parts(budget);
  double c = 0;
  for (size_t k = 0; k < 4; ++k)
    if (u[k] > 0) c += b[k] > 0 ? w[k] * u[k] / b[k] : std::numeric_limits<double>::infinity();
  return c;
}

std::string resourcesText(const ir::Resources& r, const ir::Resources& budget) {
  return fmt::format("LUT {:.0f} of {:.0f}, FF {:.0f} of {:.0f}, DSP {:.0f} of {:.0f}, RAMB18 "
                     "{:.0f} of {:.0f}",
                     r.lut, budget.lut, r.ff, budget.ff, r.dsp, budget.dsp, r.bram18,
                     budget.bram18);
}

void apply(VerilogOptions& o, const std::string& layer, const Option& opt) {
  o.layerReuse[layer] = opt.reuse;
  o.layerStrategy[layer] = opt.strategy;
  if (opt.rom)
    o.romLayers.insert(layer);
  else
    o.romLayers.erase(layer);
}

} // namespace

FitResult fitToPart(const ir::Graph& g, const Emulator& emu, const VerilogOptions& base,
                    const Device& part, const FitOptions& fo) {
  if (!(fo.margin > 0 && fo.margin <= 1))
    fail(ErrorKind::Usage, "--fit-margin {}: expected a fraction in (0, 1]", fo.margin);
  FitResult fr;
  const ir::Resources& pr = part.resources;
  fr.budget = {pr.lut * fo.margin, pr.ff * fo.margin, pr.dsp * fo.margin, pr.bram18 * fo.margin};

  // The probes' base: pinned layers keep their strategy; the others start at reuse 1 with
  // multipliers.
  VerilogOptions probe = base;
  probe.autoReuse = false;
  probe.reuse = 1;
  for (const auto& [layer, r] : base.layerReuse)
    if (!probe.layerStrategy.count(layer)) probe.layerStrategy[layer] = base.strategy;
  probe.strategy = Strategy::Dsp;
  VerilogDesign d0 = emitVerilog(g, emu, probe);
  ++fr.probes;

  // What the search cannot change: pinned and other layers, the top's glue.
  std::vector<Tunable> tunables;
  ir::Resources fixedRes = d0.glue;
  int64_t fixedCycles = 1;
  for (const RtlStage& s : d0.stages) {
    if (!isDenseCore(s) || base.layerReuse.count(s.layer) || s.nOut < 1 || s.multipliers < 1) {
      fixedRes += s.resources;
      fixedCycles = std::max(fixedCycles, stageCyclesPerSample(s));
      if (isDenseCore(s))
        fr.layers.push_back({s.layer, s.reuse, s.adderGraph ? Strategy::ShiftAdd : Strategy::Dsp,
                             s.weightRom, stageCyclesPerSample(s), s.resources, true});
      continue;
    }
    Tunable t{s.layer, {}};
    const int64_t nIn = s.multipliers / s.nOut; // at reuse 1
    // The layer's strategy: the config's, else the caller's when it chose one, else multipliers
    // (with the adder graph as one more option below).
    auto pinned = base.layerStrategy.find(s.layer);
    const Strategy strategy = pinned != base.layerStrategy.end() ? pinned->second
                              : fo.chooseStrategy                ? Strategy::Dsp
                                                                 : base.strategy;
    // A layer pinned to shift_add has one option: reuse 1 (its adder graph).
    for (int64_t r : denseReuseFactors(nIn, s.nOut)) {
      if (strategy == Strategy::ShiftAdd && r > 1) break;
      t.options.push_back({r, strategy, false, 0, {}});
      if (r > 1) t.options.push_back({r, strategy, true, 0, {}});
    }
    if (fo.chooseStrategy && pinned == base.layerStrategy.end() &&
        nIn * s.nOut <= kMaxAdderGraphWeights)
      t.options.push_back({1, Strategy::Auto, false, 0, {}}); // an adder graph where it applies
    fr.candidates += int64_t(t.options.size());
    tunables.push_back(std::move(t));
  }

  // Probe: round k plans every layer's k-th option (layers with fewer repeat their first).
  size_t rounds = 0;
  for (const Tunable& t : tunables)
    rounds = std::max(rounds, t.options.size());
  for (size_t k = 0; k < rounds; ++k) {
    VerilogOptions o = probe;
    for (const Tunable& t : tunables)
      apply(o, t.layer, t.options[k < t.options.size() ? k : 0]);
    VerilogDesign d = emitVerilog(g, emu, o);
    ++fr.probes;
    for (Tunable& t : tunables) {
      if (k >= t.options.size()) continue;
      const RtlStage* st = stageOf(d, t.layer);
      if (!st) continue;
      t.options[k].cycles = stageCyclesPerSample(*st);
      t.options[k].res = st->resources;
    }
  }

  // Candidate IIs, smallest first.
  std::set<int64_t> iis{fixedCycles};
  for (const Tunable& t : tunables)
    for (const Option& op : t.options)
      if (op.cycles >= fixedCycles) iis.insert(op.cycles);

  ir::Resources smallest;
  double smallestCost = std::numeric_limits<double>::infinity();
  for (int64_t T : iis) {
    Weights w{1, 1, 1, 1};
    for (int round = 0; round < kWeightRounds; ++round) {
      std::vector<size_t> pick;
      ir::Resources total = fixedRes;
      bool possible = true;
      for (const Tunable& t : tunables) {
        size_t best = t.options.size();
        double bestCost = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < t.options.size(); ++i) {
          const Option& op = t.options[i];
          if (op.cycles > T) continue;
          double c = cost(op.res, fr.budget, w);
          if (best == t.options.size() || c < bestCost ||
              (c == bestCost && op.cycles < t.options[best].cycles)) {
            best = i;
            bestCost = c;
          }
        }
        if (best == t.options.size()) {
          possible = false;
          break;
        }
        pick.push_back(best);
        total += t.options[best].res;
      }
      if (!possible) break;
      double unweighted = cost(total, fr.budget, {1, 1, 1, 1});
      if (unweighted < smallestCost) {
        smallestCost = unweighted;
        smallest = total;
      }
      if (total.fitsIn(fr.budget)) {
        // Spend block RAM the design leaves unused: a layer whose weights sit in multiplexers
        // takes the ROM of the same reuse where that saves LUTs and the total still fits, the
        // largest savings first (the II does not change; large constant multiplexers are also
        // what makes synthesis and Verilator slow).
        std::vector<std::tuple<double, size_t, size_t>> swaps; // LUTs saved, layer, option
        for (size_t i = 0; i < tunables.size(); ++i) {
          const Option& cur = tunables[i].options[pick[i]];
          if (cur.rom || cur.reuse < 2) continue;
          for (size_t k = 0; k < tunables[i].options.size(); ++k) {
            const Option& alt = tunables[i].options[k];
            if (alt.rom && alt.reuse == cur.reuse && alt.strategy == cur.strategy &&
                alt.res.lut < cur.res.lut)
              swaps.push_back({cur.res.lut - alt.res.lut, i, k});
          }
        }
        std::sort(swaps.rbegin(), swaps.rend());
        for (const auto& [saved, i, k] : swaps) {
          ir::Resources next = total;
          const ir::Resources &from = tunables[i].options[pick[i]].res,
                              &to = tunables[i].options[k].res;
          next.lut += to.lut - from.lut;
          next.ff += to.ff - from.ff;
          next.dsp += to.dsp - from.dsp;
          next.bram18 += to.bram18 - from.bram18;
          if (!next.fitsIn(fr.budget)) continue;
          total = next;
          pick[i] = k;
        }
        VerilogOptions o = probe;
        for (size_t i = 0; i < tunables.size(); ++i)
          apply(o, tunables[i].layer, tunables[i].options[pick[i]]);
        VerilogDesign d = emitVerilog(g, emu, o);
        ++fr.probes;
        if (!d.resources().fitsIn(fr.budget)) break; // the glue grew: try a slower design
        fr.options = o;
        fr.design = std::move(d);
        for (size_t i = 0; i < tunables.size(); ++i) {
          const Option& op = tunables[i].options[pick[i]];
          const RtlStage* st = stageOf(fr.design, tunables[i].layer);
          fr.layers.push_back({tunables[i].layer, op.reuse,
                               st && st->adderGraph ? Strategy::ShiftAdd : Strategy::Dsp, op.rom,
                               op.cycles, op.res, false});
        }
        // In the design's order.
        std::map<std::string, size_t> order;
        for (size_t i = 0; i < fr.design.stages.size(); ++i)
          order[fr.design.stages[i].layer] = i;
        std::stable_sort(
            fr.layers.begin(), fr.layers.end(),
            [&](const FitLayer& a, const FitLayer& b) { return order[a.layer] < order[b.layer]; });
        for (const RtlStage& s : fr.design.stages)
          fr.ii = std::max(fr.ii, stageCyclesPerSample(s));
        return fr;
      }
      auto u = parts(total), b = parts(fr.budget);
      for (size_t k = 0; k < 4; ++k)
        if (u[k] > b[k]) w[k] *= 2;
    }
  }
  fail(ErrorKind::Usage,
       "the design does not fit {} ({}) within {:.0f}% of its resources: the smallest design "
       "found needs {} (pin layers with the config's \"reuse\", narrow the precision, or choose "
       "a larger part)",
       part.name, part.description, fo.margin * 100, resourcesText(smallest, fr.budget));
}

} // namespace triad::fpga
