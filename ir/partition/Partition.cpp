#include "ir/partition/Partition.h"
#include "ir/partition/MinCut.h"

#include "ir/Diagnostics.h"
#include "ir/Escape.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace triad::ir::partition {

namespace {

// A node a target cannot run costs this much: large enough that no plan takes it, small enough
// that sums of real costs (microseconds) keep their precision beside it.
constexpr double kForbidden = 1e6;

bool isHost(const std::string& t) {
  return t.empty() || t == "cpu" || t == "interp" || t == "host";
}

std::string ms(double seconds) {
  return fmt::format("{:.4g} ms", seconds * 1e3);
}

} // namespace

// ---- links ---------------------------------------------------------------------------------

double Link::seconds(int64_t bytes) const {
  return latencyUs * 1e-6 + double(bytes) / (std::max(gbytesPerS, 1e-9) * 1e9);
}

Links Links::defaults() {
  Links l;
  Link pcie{"pcie-gen3-x16", 12, 10,
            "default: PCIe Gen3 x16, 12 GB/s sustained, 10 us per transfer"};
  l.toHost["gpu"] = pcie;
  l.toHost["fpga"] = pcie;
  return l;
}

Links Links::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(ErrorKind::Io, "cannot read the links file '{}'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Usage, "links file '{}' is not JSON: {}", path, e.what());
  }
  if (!j.is_object()) fail(ErrorKind::Usage, "links file '{}': expected a JSON object", path);
  Links l = defaults();
  for (auto& [target, v] : j.items()) {
    if (target == "fpga_bytes_per_element" || target == "conversion_ns_per_element") {
      if (!v.is_number() || v.get<double>() < 0)
        fail(ErrorKind::Usage, "links file '{}': '{}' must be a non-negative number", path, target);
      (target == "fpga_bytes_per_element" ? l.fpgaBytesPerElement : l.conversionNsPerElement) =
          v.get<double>();
      continue;
    }
    if (!v.is_object())
      fail(ErrorKind::Usage,
           "links file '{}': '{}' must be an object with gbytes_per_s, latency_us", path, target);
    Link link = l.toHost.count(target) ? l.toHost[target] : Link{};
    link.name = v.value("name", link.name.empty() ? target + "-link" : link.name);
    for (const char* key : {"gbytes_per_s", "latency_us"}) {
      if (!v.contains(key)) continue;
      if (!v[key].is_number() || v[key].get<double>() < 0 ||
          (std::string(key) == "gbytes_per_s" && v[key].get<double>() == 0))
        fail(ErrorKind::Usage, "links file '{}': {}.{} must be a positive number", path, target,
             key);
      (std::string(key) == "gbytes_per_s" ? link.gbytesPerS : link.latencyUs) =
          v[key].get<double>();
    }
    link.basis = v.value("basis", fmt::format("links file {}", path));
    l.toHost[target] = link;
  }
  return l;
}

std::string Links::route(const std::string& from, const std::string& to) const {
  if (from == to) return "";
  std::string r;
  for (const std::string& t : {from, to})
    if (!isHost(t)) r += (r.empty() ? "" : "+") + t;
  return r;
}

int64_t Links::bytes(const std::string& from, const std::string& to, const TensorType& v) const {
  if (route(from, to).empty()) return 0;
  if (from == "fpga" || to == "fpga")
    return int64_t(std::ceil(double(v.numElements()) * fpgaBytesPerElement));
  return v.numElements() * int64_t(dtypeSize(v.dtype));
}

double Links::seconds(const std::string& from, const std::string& to, const TensorType& v) const {
  if (from == to) return 0;
  double s = 0;
  int64_t b = v.numElements() * int64_t(dtypeSize(v.dtype));
  for (const std::string& t : {from, to}) {
    if (isHost(t)) continue;
    auto it = toHost.find(t);
    if (it == toHost.end())
      fail(ErrorKind::Usage,
           "no link to the host is known for target '{}' (add it to the links file)", t);
    if (t == "fpga") {
      int64_t words = int64_t(std::ceil(double(v.numElements()) * fpgaBytesPerElement));
      s += it->second.seconds(words) + double(v.numElements()) * conversionNsPerElement * 1e-9;
    } else {
      s += it->second.seconds(b);
    }
  }
  return s;
}

Mode parseMode(const std::string& s) {
  if (s == "single") return Mode::Single;
  if (s == "manual") return Mode::Manual;
  if (s == "auto") return Mode::Auto;
  if (s == "pipeline") return Mode::Pipeline;
  fail(ErrorKind::Usage, "--mode '{}': expected single, manual, auto or pipeline", s);
}

namespace {

const char* modeName(Mode m) {
  switch (m) {
  case Mode::Single:
    return "single";
  case Mode::Manual:
    return "manual";
  case Mode::Auto:
    return "auto";
  case Mode::Pipeline:
    return "pipeline";
  }
  return "?";
}

// ---- the problem -----------------------------------------------------------------------------

struct Problem {
  const Graph& g;
  const Options& o;
  std::vector<std::string> targets;
  std::vector<const Node*> nodes;
  std::unordered_map<const Node*, int> index;
  std::vector<std::vector<NodeCost>> cost; // [node][target]
  // A value read by a node: its producer (-1: a graph input), the consumers' indices.
  struct Edge {
    const Value* value;
    int producer; // node index, -1 for graph inputs
    int consumer; // node index, -1 for a graph output
  };
  std::vector<Edge> edges;
  std::vector<int> fixed; // per node: a target index from --place, or -1

  Problem(const Graph& graph, const TargetRegistry& reg, const Options& opts) : g(graph), o(opts) {
    targets = o.targets;
    if (targets.empty()) fail(ErrorKind::Usage, "no target to partition over");
    std::vector<const Target*> ts;
    for (const std::string& t : targets) {
      const Target* tg = reg.find(t);
      if (!tg)
        fail(ErrorKind::Usage, "target '{}' is not available (available: {})", t, reg.names());
      ts.push_back(tg);
    }
    for (const auto& n : g.nodes()) {
      index[n.get()] = int(nodes.size());
      nodes.push_back(n.get());
    }
    cost.assign(nodes.size(), std::vector<NodeCost>(targets.size()));
    for (size_t t = 0; t < ts.size(); ++t) {
      std::vector<NodeCost> c = ts[t]->estimate(g, o.costs);
      TRIAD_ASSERT(c.size() == nodes.size(), "target {} estimated {} of {} nodes", targets[t],
                   c.size(), nodes.size());
      for (size_t i = 0; i < nodes.size(); ++i) {
        NodeCost& nc = cost[i][t] = std::move(c[i]);
        if (nc.supported && !nc.resources.empty() && !o.costs.fpgaBudget.empty() &&
            !nc.resources.fitsIn(o.costs.fpgaBudget)) {
          nc.supported = false;
          nc.reason = fmt::format("its layer alone needs more than {} has ({:.0f} LUT, {:.0f} DSP, "
                                  "{:.0f} BRAM18)",
                                  o.costs.fpgaPart.empty() ? "the part" : o.costs.fpgaPart,
                                  nc.resources.lut, nc.resources.dsp, nc.resources.bram18);
        }
      }
    }
    std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::set<const Value*> seen;
      for (const Value* v : nodes[i]->inputs()) {
        if (!v || v->isConstant() || !seen.insert(v).second) continue;
        int p = v->producer() ? index.at(v->producer()) : -1;
        edges.push_back({v, p, int(i)});
      }
    }
    for (const Value* v : graphOutputs)
      if (v->producer()) edges.push_back({v, index.at(v->producer()), -1});
    fixed.assign(nodes.size(), -1);
    for (const auto& [name, target] : o.place) {
      auto it = std::find_if(nodes.begin(), nodes.end(),
                             [&](const Node* n) { return n->name() == name; });
      if (it == nodes.end())
        fail(ErrorKind::Usage, "--place '{}={}': the graph has no node named '{}'", name, target,
             name);
      auto ti = std::find(targets.begin(), targets.end(), target);
      if (ti == targets.end())
        fail(ErrorKind::Usage, "--place '{}={}': '{}' is not one of the targets ({})", name, target,
             target, fmt::join(targets, ", "));
      size_t i = size_t(it - nodes.begin()), t = size_t(ti - targets.begin());
      if (!cost[i][t].supported)
        fail(ErrorKind::Unsupported, "--place '{}={}': node '{}' ({}) cannot run on {}: {}", name,
             target, name, nodes[i]->def().onnxName, target, cost[i][t].reason);
      fixed[i] = int(t);
    }
  }

  double unary(size_t i, size_t t, double lambda) const {
    if (fixed[i] >= 0 && size_t(fixed[i]) != t) return kForbidden;
    const NodeCost& c = cost[i][t];
    if (!c.supported) return kForbidden;
    double penalty = 0;
    if (lambda > 0 && !o.costs.fpgaBudget.empty() && !c.resources.empty())
      penalty = lambda * usage(c.resources);
    return c.seconds + penalty;
  }

  // The largest fraction of the budget a layer uses.
  double usage(const Resources& r) const {
    const Resources& b = o.costs.fpgaBudget;
    auto frac = [](double x, double cap) { return cap > 0 ? x / cap : 0.0; };
    return std::max(
        {frac(r.lut, b.lut), frac(r.ff, b.ff), frac(r.dsp, b.dsp), frac(r.bram18, b.bram18)});
  }

  double transfer(int a, int b, const Value* v) const {
    std::string ta = a < 0 ? "host" : targets[size_t(a)];
    std::string tb = b < 0 ? "host" : targets[size_t(b)];
    return o.links.seconds(ta, tb, v->type());
  }

  Labelling labelling(double lambda) const {
    Labelling p;
    p.labels = int(targets.size());
    p.unary.assign(nodes.size(), std::vector<double>(targets.size()));
    for (size_t i = 0; i < nodes.size(); ++i)
      for (size_t t = 0; t < targets.size(); ++t)
        p.unary[i][t] = unary(i, t, lambda);
    for (const Edge& e : edges) {
      // Graph inputs come from the host, graph outputs go to it: unary terms.
      if (e.producer < 0 || e.consumer < 0) {
        int n = e.producer < 0 ? e.consumer : e.producer;
        for (size_t t = 0; t < targets.size(); ++t)
          p.unary[size_t(n)][t] += transfer(-1, int(t), e.value);
        continue;
      }
      const Value* v = e.value;
      p.pairs.push_back(
          {e.producer, e.consumer, [this, v](int a, int b) { return transfer(a, b, v); }});
    }
    return p;
  }

  Resources fpgaResources(const std::vector<int>& x) const {
    Resources r;
    for (size_t i = 0; i < nodes.size(); ++i)
      r += cost[i][size_t(x[i])].resources;
    return r;
  }
};

// ---- solvers ---------------------------------------------------------------------------------

std::vector<int> solveAuto(const Problem& pb, double* lambdaOut) {
  auto solve = [&](double lambda) {
    std::vector<int> x(pb.nodes.size(), 0);
    alphaExpansion(pb.labelling(lambda), x);
    return x;
  };
  std::vector<int> x = solve(0);
  *lambdaOut = 0;
  const Resources& budget = pb.o.costs.fpgaBudget;
  if (budget.empty() || pb.fpgaResources(x).fitsIn(budget)) return x;
  // The budget as a Lagrange multiplier: seconds charged per whole part used. Raise it until the
  // FPGA's share fits, then bisect down to the cheapest multiplier that still fits.
  double lo = 0, hi = 1e-6;
  std::vector<int> best;
  for (int k = 0; k < 40; ++k, hi *= 4) {
    best = solve(hi);
    if (pb.fpgaResources(best).fitsIn(budget)) break;
  }
  if (!pb.fpgaResources(best).fitsIn(budget)) {
    // Nothing on the FPGA always fits.
    for (size_t i = 0; i < best.size(); ++i)
      if (!pb.cost[i][size_t(best[i])].resources.empty()) best[i] = 0;
    *lambdaOut = std::numeric_limits<double>::infinity();
    return best;
  }
  for (int k = 0; k < 30; ++k) {
    double mid = (lo + hi) / 2;
    std::vector<int> y = solve(mid);
    if (pb.fpgaResources(y).fitsIn(budget)) {
      hi = mid;
      best = std::move(y);
    } else {
      lo = mid;
    }
  }
  *lambdaOut = hi;
  return best;
}

// Pipeline: contiguous stages of the graph's (topological) node order, each device hosting at
// most one stage; the throughput is set by the slowest stage or transfer. A dynamic program
// over (end of stage, its device, the devices used so far) finds the best such split.
std::vector<int> solvePipeline(const Problem& pb, double* bottleneckOut) {
  size_t n = pb.nodes.size(), T = pb.targets.size();
  if (T > 12) fail(ErrorKind::Usage, "pipeline mode takes at most 12 targets");
  // Values crossing the cut before node i (produced before i, read at or after i).
  std::vector<std::vector<const Value*>> crossing(n + 1);
  std::vector<const Value*> outs; // read by the host at the end
  {
    std::unordered_map<const Value*, std::pair<int, int>> span; // producer pos, last use
    for (const auto& e : pb.edges) {
      auto& s = span.try_emplace(e.value, e.producer, e.producer).first->second;
      s.second = std::max(s.second, e.consumer < 0 ? int(n) : e.consumer);
      if (e.consumer < 0) outs.push_back(e.value);
    }
    for (const auto& [v, s] : span)
      for (int c = s.first + 1; c <= s.second && c <= int(n); ++c)
        if (c < int(n)) crossing[size_t(c)].push_back(v);
  }
  auto cutTime = [&](int a, int b, size_t at) {
    double s = 0;
    for (const Value* v : crossing[at])
      s += pb.transfer(a, b, v);
    return s;
  };
  const double inf = std::numeric_limits<double>::infinity();
  size_t masks = size_t(1) << T;
  // best[i][t][mask]: the smallest bottleneck of a split of nodes [0, i) whose last stage runs
  // on t, with the devices in mask used.
  std::vector<double> best((n + 1) * T * masks, inf);
  std::vector<int> from((n + 1) * T * masks, -1);
  auto at = [&](size_t i, size_t t, size_t m) { return (i * T + t) * masks + m; };
  for (size_t i = 1; i <= n; ++i)
    for (size_t t = 0; t < T; ++t) {
      double sum = 0, mx = 0;
      bool dataflow = true;
      for (size_t j = i; j-- > 0;) { // stage [j, i) on t
        double u = pb.unary(j, t, 0);
        if (u >= kForbidden) break;
        sum += u;
        double iv = pb.cost[j][t].interval;
        if (iv < 0) dataflow = false;
        mx = std::max(mx, iv < 0 ? u : iv);
        double stage = dataflow ? mx : sum;
        if (j == 0) {
          double b = std::max(stage, cutTime(-1, int(t), 0));
          size_t k = at(i, t, size_t(1) << t);
          if (b < best[k]) best[k] = b, from[k] = -2;
          continue;
        }
        for (size_t pt = 0; pt < T; ++pt) {
          if (pt == t) continue;
          for (size_t m = 0; m < masks; ++m) {
            if (!(m >> pt & 1) || (m >> t & 1)) continue;
            double prev = best[at(j, pt, m)];
            if (prev == inf) continue;
            double b = std::max({prev, stage, cutTime(int(pt), int(t), j)});
            size_t k = at(i, t, m | size_t(1) << t);
            if (b < best[k]) best[k] = b, from[k] = int(at(j, pt, m));
          }
        }
      }
    }
  double bestB = inf;
  size_t bestK = 0;
  for (size_t t = 0; t < T; ++t)
    for (size_t m = 0; m < masks; ++m) {
      double b = best[at(n, t, m)];
      if (b == inf) continue;
      double o = 0;
      for (const Value* v : outs)
        o += pb.transfer(int(t), -1, v);
      b = std::max(b, o);
      if (b < bestB) bestB = b, bestK = at(n, t, m);
    }
  if (bestB == inf)
    fail(ErrorKind::Unsupported, "no pipeline of the targets {} covers the graph",
         fmt::join(pb.targets, ", "));
  std::vector<int> x(n, 0);
  size_t k = bestK;
  while (true) {
    size_t i = k / masks / T, t = k / masks % T;
    int f = from[k];
    size_t j = f == -2 ? 0 : size_t(f) / masks / T;
    for (size_t q = j; q < i; ++q)
      x[q] = int(t);
    if (f == -2) break;
    k = size_t(f);
  }
  *bottleneckOut = bestB;
  return x;
}

} // namespace

// ---- plan ------------------------------------------------------------------------------------

Plan plan(const Graph& g, const TargetRegistry& targets, const Options& o) {
  Problem pb(g, targets, o);
  Plan p;
  p.mode = o.mode;
  p.fpgaPart = o.costs.fpgaPart;
  size_t n = pb.nodes.size();
  std::vector<int> x(n, 0);
  double lambda = 0, bottleneck = 0;
  switch (o.mode) {
  case Mode::Single:
  case Mode::Manual:
    p.algorithm = o.mode == Mode::Single ? "single target" : "manual placement (--place)";
    for (size_t i = 0; i < n; ++i) {
      x[i] = pb.fixed[i] >= 0 ? pb.fixed[i] : 0;
      if (!pb.cost[i][size_t(x[i])].supported)
        fail(ErrorKind::Unsupported, "node '{}' ({}) cannot run on {}: {}{}", pb.nodes[i]->name(),
             pb.nodes[i]->def().onnxName, pb.targets[size_t(x[i])], pb.cost[i][size_t(x[i])].reason,
             o.mode == Mode::Manual ? " (place it elsewhere with --place NODE=TARGET)" : "");
    }
    break;
  case Mode::Auto:
    p.algorithm = pb.targets.size() <= 2
                      ? "min-cut (exact for two targets)"
                      : "alpha-expansion min-cut (local optimum, within 2x of the best)";
    x = solveAuto(pb, &lambda);
    if (lambda > 0)
      p.algorithm +=
          fmt::format(", the {} budget as a Lagrange multiplier ({})",
                      o.costs.fpgaPart.empty() ? "FPGA" : o.costs.fpgaPart,
                      std::isinf(lambda) ? "FPGA left empty" : fmt::format("{:.3g} s", lambda));
    break;
  case Mode::Pipeline:
    p.algorithm = "dynamic program over contiguous stages (one per device)";
    x = solvePipeline(pb, &bottleneck);
    break;
  }
  for (size_t i = 0; i < n; ++i)
    if (pb.unary(i, size_t(x[i]), 0) >= kForbidden)
      fail(ErrorKind::Unsupported, "node '{}' ({}) runs on none of the targets {}: {}",
           pb.nodes[i]->name(), pb.nodes[i]->def().onnxName, fmt::join(pb.targets, ", "),
           pb.cost[i][0].reason);

  // Partitions: a node joins the latest partition of its target that comes after every
  // partition it reads from; otherwise it opens a new one. The order stays acyclic.
  std::vector<int> partOf(n, -1);
  std::map<std::string, int> lastOfTarget;
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = pb.targets[size_t(x[i])];
    int dep = -1;
    for (const Value* v : pb.nodes[i]->inputs())
      if (v && v->producer()) dep = std::max(dep, partOf[size_t(pb.index.at(v->producer()))]);
    auto it = lastOfTarget.find(t);
    int part;
    if (o.mode != Mode::Pipeline && it != lastOfTarget.end() && it->second >= dep) {
      part = it->second;
    } else if (o.mode == Mode::Pipeline && !p.partitions.empty() &&
               p.partitions.back().target == t) {
      part = int(p.partitions.size()) - 1;
    } else {
      part = int(p.partitions.size());
      p.partitions.push_back({part, t, {}, 0, {}});
      lastOfTarget[t] = part;
    }
    partOf[i] = part;
    Partition& pp = p.partitions[size_t(part)];
    pp.nodes.push_back(pb.nodes[i]);
    const NodeCost& c = pb.cost[i][size_t(x[i])];
    pp.predictedSeconds += c.seconds;
    pp.resources += c.resources;
    if (t == "fpga") p.fpgaResources += c.resources;
  }
  // Transfers: one per value and reading partition (the host for graph outputs).
  std::set<std::pair<const Value*, int>> done;
  for (const auto& e : pb.edges) {
    int from = e.producer < 0 ? -1 : partOf[size_t(e.producer)];
    int to = e.consumer < 0 ? -1 : partOf[size_t(e.consumer)];
    if (from == to || !done.insert({e.value, to}).second) continue;
    std::string ta = from < 0 ? "host" : p.partitions[size_t(from)].target;
    std::string tb = to < 0 ? "host" : p.partitions[size_t(to)].target;
    if (o.links.route(ta, tb).empty()) {
      if (from >= 0 && to >= 0) // host to host: no time, but keep the hand-over visible
        p.transfers.push_back({from, to, e.value, 0, "", "", 0});
      continue;
    }
    Transfer t;
    t.from = from;
    t.to = to;
    t.value = e.value;
    t.bytes = o.links.bytes(ta, tb, e.value->type());
    t.link = o.links.route(ta, tb);
    if (ta == "fpga") t.conversion = "fixed->float";
    if (tb == "fpga") t.conversion = t.conversion.empty() ? "float->fixed" : "fixed->fixed";
    t.predictedSeconds = o.links.seconds(ta, tb, e.value->type());
    p.transfers.push_back(std::move(t));
  }
  for (const Partition& pp : p.partitions)
    p.predictedSeconds += pp.predictedSeconds;
  for (const Transfer& t : p.transfers)
    p.predictedSeconds += t.predictedSeconds;
  if (o.mode == Mode::Pipeline) p.predictedThroughputPerS = bottleneck > 0 ? 1 / bottleneck : 0;

  // Why each node went where it did.
  Labelling lab = pb.labelling(0);
  double e0 = lab.energy(x);
  for (size_t i = 0; i < n; ++i) {
    NodePlacement np;
    np.node = pb.nodes[i];
    np.target = pb.targets[size_t(x[i])];
    for (size_t t = 0; t < pb.targets.size(); ++t)
      np.costs[pb.targets[t]] = pb.cost[i][t];
    size_t fastest = size_t(x[i]);
    int supported = 0;
    for (size_t t = 0; t < pb.targets.size(); ++t) {
      if (!pb.cost[i][t].supported) continue;
      ++supported;
      if (pb.cost[i][t].seconds < pb.cost[i][fastest].seconds) fastest = t;
    }
    const NodeCost& mine = pb.cost[i][size_t(x[i])];
    if (pb.fixed[i] >= 0) {
      np.why = "placed by --place";
    } else if (o.mode == Mode::Single) {
      np.why = "single target";
    } else if (supported == 1) {
      std::string others;
      for (size_t t = 0; t < pb.targets.size(); ++t)
        if (int(t) != x[i])
          others += fmt::format("{}{}: {}", others.empty() ? "" : "; ", pb.targets[t],
                                pb.cost[i][t].reason);
      np.why = fmt::format("only {} runs it ({})", np.target, others);
    } else if (fastest == size_t(x[i])) {
      np.why = fmt::format("fastest here: {}", ms(mine.seconds));
      for (size_t t = 0; t < pb.targets.size(); ++t)
        if (int(t) != x[i] && pb.cost[i][t].supported)
          np.why += fmt::format(", {} {}", pb.targets[t], ms(pb.cost[i][t].seconds));
    } else {
      std::vector<int> y = x;
      y[i] = int(fastest);
      double delta = lab.energy(y) - e0;
      double saved = mine.seconds - pb.cost[i][fastest].seconds;
      if (o.mode == Mode::Pipeline)
        np.why = fmt::format("in the {} stage of the pipeline ({} would take {} instead of {})",
                             np.target, pb.targets[fastest], ms(pb.cost[i][fastest].seconds),
                             ms(mine.seconds));
      else if (lambda > 0 && pb.targets[fastest] == "fpga")
        np.why = fmt::format("the FPGA would take {} instead of {}, but the {} budget is spent",
                             ms(pb.cost[i][fastest].seconds), ms(mine.seconds),
                             o.costs.fpgaPart.empty() ? "part's" : o.costs.fpgaPart);
      else
        np.why = fmt::format("{} would save {} but moving it alone adds {} of transfers",
                             pb.targets[fastest], ms(saved), ms(delta + saved));
    }
    p.nodes.push_back(std::move(np));
  }
  return p;
}

// ---- printing --------------------------------------------------------------------------------

namespace {

std::string resourcesText(const Resources& r) {
  return fmt::format("{:.0f} LUT, {:.0f} FF, {:.0f} DSP, {:.0f} BRAM18", r.lut, r.ff, r.dsp,
                     r.bram18);
}

std::string fmtBytes(int64_t b) {
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", double(b) / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", double(b) / (1 << 10));
  return fmt::format("{} B", b);
}

std::string partName(const Plan& p, int id) {
  return id < 0 ? "host" : fmt::format("P{} ({})", id, p.partitions[size_t(id)].target);
}

} // namespace

std::string planText(const Plan& p, const Graph& g) {
  std::string s;
  std::map<std::string, int> perTarget;
  for (const NodePlacement& n : p.nodes)
    ++perTarget[n.target];
  int64_t moved = 0;
  for (const Transfer& t : p.transfers)
    moved += t.bytes;
  // Names are the model's (untrusted): escape::printable keeps each on its line and out of the
  // terminal's control sequences.
  auto name = [](std::string_view x) { return escape::printable(x); };
  s += fmt::format("partition of '{}' ({} nodes), mode {}: {}\n", name(g.name), p.nodes.size(),
                   modeName(p.mode), p.algorithm);
  std::string counts;
  for (const auto& [t, c] : perTarget)
    counts += fmt::format("{}{} on {}", counts.empty() ? "" : ", ", c, t);
  s += fmt::format("nodes: {}; {} moved per inference over the links\n", counts, fmtBytes(moved));
  s += fmt::format("predicted end to end: {}", ms(p.predictedSeconds));
  if (p.mode == Mode::Pipeline)
    s += fmt::format("; pipelined throughput {:.4g} inferences/s", p.predictedThroughputPerS);
  s += "\n";
  if (!p.fpgaResources.empty())
    s += fmt::format("FPGA resources: {}{}\n", resourcesText(p.fpgaResources),
                     p.fpgaPart.empty() ? "" : " (part " + p.fpgaPart + ")");
  s += "\npartitions (execution order):\n";
  for (const Partition& pp : p.partitions)
    s += fmt::format("  P{:<3} {:<7} {:>4} nodes  {:>12}  {} .. {}\n", pp.id, pp.target,
                     pp.nodes.size(), ms(pp.predictedSeconds), name(pp.nodes.front()->name()),
                     name(pp.nodes.back()->name()));
  s += "\ntransfers:\n";
  if (p.transfers.empty()) s += "  (none)\n";
  for (const Transfer& t : p.transfers)
    s += fmt::format("  {:>10} -> {:<10} {:<24} {:>10}  {:<9} {:>12}{}\n", partName(p, t.from),
                     partName(p, t.to), name(t.value->name()), fmtBytes(t.bytes),
                     t.link.empty() ? "host" : t.link, ms(t.predictedSeconds),
                     t.conversion.empty() ? "" : "  " + t.conversion);
  s += "\nnodes:\n";
  for (const NodePlacement& n : p.nodes) {
    std::string costs;
    for (const auto& [t, c] : n.costs)
      costs +=
          fmt::format("{}{}={}", costs.empty() ? "" : " ", t, c.supported ? ms(c.seconds) : "-");
    s += fmt::format("  {:<28} {:<18} -> {:<6} [{}]  {}\n", name(n.node->name()),
                     n.node->def().onnxName, n.target, costs, name(n.why));
  }
  return s;
}

double measuredThroughput(const RunTimes& t) {
  // The stages run one after another here; in a stream they overlap, so the measured stage and
  // transfer times bound the throughput the same way the prediction does.
  double slowest = 0;
  for (double x : t.partitionSeconds)
    slowest = std::max(slowest, x);
  for (double x : t.transferSeconds)
    slowest = std::max(slowest, x);
  return slowest > 0 ? 1 / slowest : 0;
}

std::string planJson(const Plan& p, const RunTimes* m) {
  nlohmann::json j;
  j["mode"] = modeName(p.mode);
  j["objective"] = p.mode == Mode::Pipeline ? "throughput" : "latency";
  j["algorithm"] = p.algorithm;
  j["predicted_ms"] = p.predictedSeconds * 1e3;
  j["measured_ms"] = m ? nlohmann::json(m->totalSeconds * 1e3) : nlohmann::json();
  if (p.mode == Mode::Pipeline) {
    j["predicted_throughput_per_s"] = p.predictedThroughputPerS;
    double measured = m ? measuredThroughput(*m) : 0;
    j["measured_throughput_per_s"] = measured > 0 ? nlohmann::json(measured) : nlohmann::json();
  }
  if (!p.fpgaPart.empty()) j["fpga_part"] = p.fpgaPart;
  if (!p.fpgaResources.empty())
    j["fpga_resources"] = {{"lut", p.fpgaResources.lut},
                           {"ff", p.fpgaResources.ff},
                           {"dsp", p.fpgaResources.dsp},
                           {"bram18", p.fpgaResources.bram18}};
  nlohmann::json parts = nlohmann::json::array();
  for (const Partition& pp : p.partitions) {
    nlohmann::json names = nlohmann::json::array();
    for (const Node* n : pp.nodes)
      names.push_back(n->name());
    parts.push_back({{"id", pp.id},
                     {"target", pp.target},
                     {"nodes", names},
                     {"predicted_ms", pp.predictedSeconds * 1e3},
                     {"measured_ms", m && size_t(pp.id) < m->partitionSeconds.size()
                                         ? nlohmann::json(m->partitionSeconds[size_t(pp.id)] * 1e3)
                                         : nlohmann::json()}});
  }
  j["partitions"] = parts;
  nlohmann::json xfers = nlohmann::json::array();
  for (size_t i = 0; i < p.transfers.size(); ++i) {
    const Transfer& t = p.transfers[i];
    bool measured = m && i < m->transferMeasured.size() && m->transferMeasured[i];
    xfers.push_back(
        {{"from", t.from},
         {"to", t.to},
         {"tensor", t.value->name()},
         {"bytes", t.bytes},
         {"link", t.link.empty() ? "host" : t.link},
         {"conversion", t.conversion},
         {"predicted_ms", t.predictedSeconds * 1e3},
         {"measured_ms", measured ? nlohmann::json(m->transferSeconds[i] * 1e3) : nlohmann::json()},
         {"modelled_ms", m && i < m->transferSeconds.size()
                             ? nlohmann::json(m->transferSeconds[i] * 1e3)
                             : nlohmann::json()}});
  }
  j["transfers"] = xfers;
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodePlacement& n : p.nodes) {
    nlohmann::json costs = nlohmann::json::object();
    for (const auto& [t, c] : n.costs)
      costs[t] = c.supported ? nlohmann::json(c.seconds * 1e3) : nlohmann::json();
    nodes.push_back({{"node", n.node->name()},
                     {"op", std::string(n.node->def().onnxName)},
                     {"target", n.target},
                     {"why", n.why},
                     {"cost_ms", costs}});
  }
  j["nodes"] = nodes;
  return j.dump();
}

std::string planDot(const Plan& p, const Graph& g) {
  static const std::map<std::string, std::string> colour = {
      {"cpu", "#4e79a7"}, {"gpu", "#59a14f"}, {"fpga", "#e15759"}, {"interp", "#9c755f"}};
  auto fill = [&](const std::string& t) {
    auto it = colour.find(t);
    return escape::dotString(it == colour.end() ? std::string("#bab0ac") : it->second);
  };
  // Statement IDs are numbers (in3, n7, out5, legend0); every name is the model's (untrusted) and
  // only ever in a label, escaped by escape::dotString: it can neither end its string nor add a
  // statement, an edge or an attribute. A two-line label joins escaped pieces with DOT's "\n".
  auto q = [](std::string_view s) { return escape::dotString(s); };
  auto piece = [](std::string_view s) {
    std::string quoted = escape::dotString(s);
    return quoted.substr(1, quoted.size() - 2);
  };
  std::unordered_map<const Node*, int> partOf;
  for (const Partition& pp : p.partitions)
    for (const Node* n : pp.nodes)
      partOf[n] = pp.id;
  std::string s =
      fmt::format("digraph {} {{\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
                  "fontname=\"Helvetica\", fontcolor=white];\n",
                  q(g.name.empty() ? "model" : g.name));
  s += fmt::format("  label={}; labelloc=t;\n",
                   q(fmt::format("{}: {} partitions, predicted {}", p.algorithm,
                                 p.partitions.size(), ms(p.predictedSeconds))));
  for (const Value* v : g.inputs())
    s += fmt::format("  in{} [label={}, shape=ellipse, style=solid, fontcolor=black];\n", v->id(),
                     q(v->name()));
  for (const Value* v : g.outputs())
    s += fmt::format("  out{} [label={}, shape=ellipse, style=solid, fontcolor=black];\n", v->id(),
                     q(v->name()));
  for (const Partition& pp : p.partitions) {
    s += fmt::format("  subgraph cluster_{} {{\n    label={}; style=dashed; color={};\n", pp.id,
                     q(fmt::format("P{} {} {}", pp.id, pp.target, ms(pp.predictedSeconds))),
                     fill(pp.target));
    for (const Node* n : pp.nodes)
      s += fmt::format("    n{} [label=\"{}\\n{}\", fillcolor={}];\n", n->id(), piece(n->name()),
                       piece(n->def().onnxName), fill(pp.target));
    s += "  }\n";
  }
  for (const Partition& pp : p.partitions)
    for (const Node* n : pp.nodes)
      for (const Value* v : n->inputs()) {
        if (!v || v->isConstant()) continue;
        std::string from =
            v->producer() ? fmt::format("n{}", v->producer()->id()) : fmt::format("in{}", v->id());
        bool cut = v->producer() ? partOf[v->producer()] != pp.id : pp.target != "cpu";
        s += fmt::format(
            "  {} -> n{}{};\n", from, n->id(),
            cut ? fmt::format(" [color=\"#d62728\", penwidth=2, label={}]", q(v->name())) : "");
      }
  for (const Value* v : g.outputs())
    if (v->producer()) s += fmt::format("  n{} -> out{};\n", v->producer()->id(), v->id());
  s += "  subgraph cluster_legend {\n    label=\"targets\"; style=solid;\n";
  std::set<std::string> used;
  for (const Partition& pp : p.partitions)
    used.insert(pp.target);
  int k = 0;
  for (const std::string& t : used)
    s += fmt::format("    legend{} [label={}, fillcolor={}];\n", k++, q(t), fill(t));
  s += "  }\n}\n";
  return s;
}

// ---- subgraphs and execution -----------------------------------------------------------------

Graph extractSubgraph(const Graph& g, const std::vector<const Node*>& nodes,
                      std::vector<const Value*>* inputs, std::vector<const Value*>* outputs) {
  Graph sub;
  sub.name = g.name;
  sub.opset = g.opset;
  std::unordered_set<const Node*> inside(nodes.begin(), nodes.end());
  std::unordered_map<const Value*, Value*> map;
  inputs->clear();
  outputs->clear();
  for (const Node* n : nodes) {
    std::vector<Value*> ins;
    for (const Value* v : n->inputs()) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = map.find(v);
      if (it == map.end()) {
        Value* nv;
        if (v->isConstant()) {
          nv = sub.addConstant(v->name(), v->constantPtr());
          // A folded QDQ weight keeps its integers (the FPGA reads them).
          nv->setDequantizedFrom(v->dequantizedFrom());
        } else {
          TRIAD_ASSERT(!v->producer() || !inside.count(v->producer()),
                       "partition nodes out of order at '{}'", n->name());
          nv = sub.addInput(v->name(), v->type());
          inputs->push_back(v);
        }
        it = map.emplace(v, nv).first;
      }
      ins.push_back(it->second);
    }
    std::vector<std::string> names;
    std::vector<TensorType> types;
    for (const Value* v : n->outputs()) {
      names.push_back(v->name());
      types.push_back(v->type());
    }
    Node* nn = sub.addNode(n->kind(), n->name(), std::move(ins), n->attrsPtr(), names, types);
    for (size_t i = 0; i < n->outputs().size(); ++i)
      map[n->outputs()[i]] = nn->outputs()[i];
  }
  // Outputs: values made here that another partition or the graph's caller reads.
  std::unordered_set<const Value*> readOutside(g.outputs().begin(), g.outputs().end());
  for (const auto& n : g.nodes())
    if (!inside.count(n.get()))
      for (const Value* v : n->inputs())
        if (v) readOutside.insert(v);
  for (const Node* n : nodes)
    for (const Value* v : n->outputs())
      if (readOutside.count(v)) {
        sub.addOutput(map.at(v));
        outputs->push_back(v);
      }
  return sub;
}

namespace {

class Partitioned final : public PartitionedExecutable {
public:
  Partitioned(const Graph& g, const Plan& p, const TargetRegistry& reg, const CompileSettings& s)
      : plan_(p) {
    for (const Value* v : g.inputs())
      graphInputs_.push_back(v);
    for (const Value* v : g.outputs())
      graphOutputs_.push_back(v);
    for (const Partition& pp : p.partitions) {
      Part part;
      // Targets may keep a reference to the graph they compiled: it stays where it is.
      part.graph =
          std::make_unique<Graph>(extractSubgraph(g, pp.nodes, &part.inputs, &part.outputs));
      part.graph->name =
          fmt::format("{}_p{}_{}", g.name.empty() ? "model" : g.name, pp.id, pp.target);
      const Target* t = reg.find(pp.target);
      if (!t) fail(ErrorKind::Usage, "target '{}' is not available", pp.target);
      part.exe = t->compile(*part.graph, s);
      part.exe->setProfiling(true);
      parts_.push_back(std::move(part));
    }
    times_.partitionSeconds.assign(parts_.size(), 0);
    times_.transferSeconds.assign(p.transfers.size(), 0);
    times_.transferMeasured.assign(p.transfers.size(), false);
    sums_.assign(parts_.size(), {0, 0});
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    if (inputs.size() != graphInputs_.size())
      fail(ErrorKind::Runtime, "the model takes {} inputs, {} given", graphInputs_.size(),
           inputs.size());
    std::unordered_map<const Value*, Tensor> values;
    for (size_t i = 0; i < inputs.size(); ++i)
      values.emplace(graphInputs_[i], inputs[i]);
    std::vector<double> linkSeconds(parts_.size(), 0); // measured h2d + d2h inside a partition
    for (size_t k = 0; k < parts_.size(); ++k) {
      Part& part = parts_[k];
      std::vector<Tensor> in;
      for (const Value* v : part.inputs) {
        auto it = values.find(v);
        TRIAD_ASSERT(it != values.end(), "partition {} reads '{}' before it is made", k, v->name());
        in.push_back(it->second);
      }
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Tensor> out = part.exe->run(in);
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double modelled = part.exe->modelledSeconds();
      // Transfers the target measured itself (the GPU's uploads and downloads): taken out of the
      // partition's time and given to its transfers.
      double h2d = 0, d2h = 0;
      for (const LayerTime& l : part.exe->profile()) {
        if (l.kind == "h2d") h2d += l.milliseconds * 1e-3;
        if (l.kind == "d2h") d2h += l.milliseconds * 1e-3;
      }
      double dh = h2d - sums_[k].first, dd = d2h - sums_[k].second;
      sums_[k] = {h2d, d2h};
      linkSeconds[k] = dh + dd;
      times_.partitionSeconds[k] = modelled >= 0 ? modelled : std::max(0.0, wall - dh - dd);
      for (size_t i = 0; i < out.size(); ++i)
        values.insert_or_assign(part.outputs[i], std::move(out[i]));
    }
    // Transfers: measured where a partition's target timed its own (apportioned by bytes),
    // else the link model.
    std::vector<int64_t> bytesAt(parts_.size(), 0);
    for (const Transfer& t : plan_.transfers)
      for (int end : {t.from, t.to})
        if (end >= 0 && linkSeconds[size_t(end)] > 0) bytesAt[size_t(end)] += t.bytes;
    times_.totalSeconds = 0;
    for (size_t i = 0; i < plan_.transfers.size(); ++i) {
      const Transfer& t = plan_.transfers[i];
      double measured = 0;
      bool any = false;
      for (int end : {t.from, t.to})
        if (end >= 0 && linkSeconds[size_t(end)] > 0 && bytesAt[size_t(end)] > 0 &&
            plan_.partitions[size_t(end)].target != "fpga") {
          measured += linkSeconds[size_t(end)] * double(t.bytes) / double(bytesAt[size_t(end)]);
          any = true;
        }
      // An FPGA end has no hardware here: its share stays modelled.
      bool fpgaEnd = (t.from >= 0 && plan_.partitions[size_t(t.from)].target == "fpga") ||
                     (t.to >= 0 && plan_.partitions[size_t(t.to)].target == "fpga");
      times_.transferMeasured[i] = any && !fpgaEnd;
      times_.transferSeconds[i] = any && !fpgaEnd ? measured : t.predictedSeconds;
      times_.totalSeconds += times_.transferSeconds[i];
    }
    for (double s : times_.partitionSeconds)
      times_.totalSeconds += s;
    if (profiling_) {
      ++runs_;
      for (size_t k = 0; k < parts_.size(); ++k)
        acc_[k] += times_.partitionSeconds[k];
      for (size_t i = 0; i < plan_.transfers.size(); ++i)
        acc_[parts_.size() + i] += times_.transferSeconds[i];
    }
    std::vector<Tensor> outs;
    for (const Value* v : graphOutputs_) {
      auto it = values.find(v);
      if (it != values.end()) {
        outs.push_back(it->second);
      } else if (v->isConstant()) {
        outs.push_back(v->constant());
      } else {
        fail(ErrorKind::Internal, "graph output '{}' was not computed by any partition", v->name());
      }
    }
    return outs;
  }

  void setProfiling(bool on) override {
    profiling_ = on;
    runs_ = 0;
    acc_.assign(parts_.size() + plan_.transfers.size(), 0);
  }

  std::vector<LayerTime> profile() const override {
    std::vector<LayerTime> out;
    if (!profiling_) return out;
    for (size_t k = 0; k < parts_.size(); ++k) {
      const Partition& pp = plan_.partitions[k];
      out.push_back({fmt::format("P{} {} ({} nodes)", pp.id, pp.target, pp.nodes.size()),
                     acc_[k] * 1e3, "partition", 0});
    }
    for (size_t i = 0; i < plan_.transfers.size(); ++i) {
      const Transfer& t = plan_.transfers[i];
      out.push_back({fmt::format("{} -> {}: {}", partName(plan_, t.from), partName(plan_, t.to),
                                 t.value->name()),
                     acc_[parts_.size() + i] * 1e3, "transfer", 0});
    }
    return out;
  }

  double modelledSeconds() const override { return times_.totalSeconds; }
  const Plan& plan() const override { return plan_; }
  const RunTimes& lastTimes() const override { return times_; }

private:
  struct Part {
    std::unique_ptr<Graph> graph;
    std::vector<const Value*> inputs, outputs;
    std::unique_ptr<Executable> exe;
  };
  Plan plan_;
  std::vector<const Value*> graphInputs_, graphOutputs_;
  std::vector<Part> parts_;
  RunTimes times_;
  std::vector<std::pair<double, double>> sums_;
  bool profiling_ = false;
  int64_t runs_ = 0;
  std::vector<double> acc_;
};

} // namespace

std::unique_ptr<PartitionedExecutable> compilePlan(const Graph& g, const Plan& p,
                                                   const TargetRegistry& targets,
                                                   const CompileSettings& s) {
  return std::make_unique<Partitioned>(g, p, targets, s);
}

} // namespace triad::ir::partition
