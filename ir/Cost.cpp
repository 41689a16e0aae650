#include "ir/Cost.h"
#include "ir/Graph.h"
#include "ir/Target.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace triad::ir {

NodeWork nodeWork(const Node& n) {
  NodeWork w;
  std::vector<std::optional<TensorType>> in;
  std::vector<const Tensor*> consts;
  for (Value* v : n.inputs()) {
    in.push_back(v ? std::optional<TensorType>(v->type()) : std::nullopt);
    consts.push_back(v && v->isConstant() ? &v->constant() : nullptr);
    if (v) w.bytes += v->type().numElements() * int64_t(dtypeSize(v->type().dtype));
  }
  std::vector<TensorType> outs;
  for (Value* v : n.outputs()) {
    outs.push_back(v->type());
    w.bytes += v->type().numElements() * int64_t(dtypeSize(v->type().dtype));
  }
  if (n.def().macs) w.macs = n.def().macs(InferContext{n.attrs(), in, consts}, outs);
  return w;
}

double analyticSeconds(const NodeWork& w, const DeviceModel& d) {
  double compute = 2.0 * double(w.macs) / (std::max(d.gflops, 1e-6) * 1e9);
  double memory = double(w.bytes) / (std::max(d.gbytesPerS, 1e-6) * 1e9);
  return std::max(compute, memory) + d.layerOverheadUs * 1e-6;
}

const DeviceModel& CostContext::device(const std::string& target) const {
  static const DeviceModel fallback;
  auto it = devices.find(target);
  return it == devices.end() ? fallback : it->second;
}

std::vector<NodeCost> Target::estimate(const Graph& g, const CostContext& ctx) const {
  const std::string me(name());
  const DeviceModel& d = ctx.device(me);
  auto mit = ctx.measured.find(me);
  std::vector<NodeCost> out;
  for (const auto& n : g.nodes()) {
    NodeCost c;
    Support s = supports(*n);
    c.supported = s.ok;
    c.reason = s.reason;
    if (mit != ctx.measured.end())
      if (auto it = mit->second.find(n->name()); it != mit->second.end()) {
        c.seconds = it->second;
        c.basis = "measured";
        out.push_back(std::move(c));
        continue;
      }
    NodeWork w = nodeWork(*n);
    c.seconds = analyticSeconds(w, d);
    c.basis = w.macs > 0
                  ? fmt::format("analytic: {:.3g} MMAC at {:.3g} GFLOP/s", w.macs * 1e-6, d.gflops)
                  : fmt::format("analytic: {:.3g} KB at {:.3g} GB/s", w.bytes * 1e-3, d.gbytesPerS);
    out.push_back(std::move(c));
  }
  return out;
}

} // namespace triad::ir
