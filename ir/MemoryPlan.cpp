#include "ir/MemoryPlan.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace triad::ir {

bool isViewOp(OpKind k) {
  return k == OpKind::Reshape || k == OpKind::Flatten || k == OpKind::Squeeze ||
         k == OpKind::Unsqueeze || k == OpKind::Identity;
}

namespace {

struct Buffer {
  int64_t bytes = 0;
  int first = 0, last = 0; // group indices, inclusive (last: the last reader of the storage)
  int64_t offset = -1;
};

int64_t alignUp(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

} // namespace

MemoryPlan planMemory(const Graph& g, std::span<const FusionGroup> groups,
                      const MemoryPlanOptions& opts) {
  MemoryPlan plan;
  plan.location.resize(g.values().size());
  plan.aliasStep.assign(groups.size(), false);
  for (size_t i = 0; i < g.inputs().size(); ++i)
    plan.location[size_t(g.inputs()[i]->id())] = {Storage::Input, int(i), 0, g.inputs()[i]->id()};
  for (Value* c : g.constants())
    plan.location[size_t(c->id())] = {Storage::Constant, -1, 0, c->id()};
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    Location& l = plan.location[size_t(g.outputs()[i]->id())];
    if (l.storage == Storage::None) // the first occurrence wins
      l = {Storage::Output, int(i), 0, g.outputs()[i]->id()};
  }

  // Views share their source's storage: find each value's root, then the last group that
  // reads any value of a root (its lifetime end).
  std::unordered_map<const Value*, const Value*> root;
  auto rootOf = [&](const Value* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Node* last = groups[gi].last();
    if (groups[gi].nodes.size() == 1 && isViewOp(last->kind()) &&
        plan.location[size_t(last->output(0)->id())].storage == Storage::None) {
      plan.aliasStep[gi] = true;
      ++plan.aliasCount;
      root[last->output(0)] = rootOf(last->input(0));
    }
  }
  std::unordered_map<const Value*, int> lastUse;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (Value* in : groups[gi].externalInputs())
      lastUse[rootOf(in)] = int(gi);

  // Buffers: one per materialized intermediate; views and in-place outputs join their source's.
  std::vector<Buffer> buffers;
  std::unordered_map<const Value*, int> bufferOf; // by root value
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const FusionGroup& grp = groups[gi];
    if (plan.aliasStep[gi]) continue;
    for (Value* out : grp.last()->outputs()) {
      if (plan.location[size_t(out->id())].storage != Storage::None) continue; // graph output
      int64_t bytes = numElements(out->type().shape) * int64_t(dtypeSize(out->type().dtype));
      int end = std::max(int(gi), lastUse.count(out) ? lastUse[out] : int(gi));
      // In place: an elementwise chain (no anchor, one output, every node of the output's
      // shape) over a same-sized arena operand whose storage nobody reads after this group.
      int donor = -1;
      if (opts.inPlace && grp.elementwise && grp.last()->outputs().size() == 1) {
        bool elementwise = true;
        for (const Node* n : grp.nodes)
          elementwise = elementwise && n->outputs().size() == 1 &&
                        n->output(0)->type().shape == out->type().shape;
        if (elementwise)
          for (Value* in : grp.externalInputs()) {
            const Value* r = rootOf(in);
            auto bi = bufferOf.find(r);
            if (bi == bufferOf.end() || in->type().shape != out->type().shape ||
                dtypeSize(in->type().dtype) != dtypeSize(out->type().dtype))
              continue;
            const Buffer& b = buffers[size_t(bi->second)];
            if (lastUse[r] == int(gi) && b.last == int(gi) && b.bytes == bytes) {
              donor = bi->second;
              break;
            }
          }
      }
      if (donor >= 0) {
        bufferOf[out] = donor;
        buffers[size_t(donor)].last = end;
        ++plan.inPlaceCount;
        continue;
      }
      bufferOf[out] = int(buffers.size());
      buffers.push_back({bytes, int(gi), end, -1});
    }
  }
  // A buffer is live from its first producer to its last reader; outputs nobody reads still
  // need their step.
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return buffers[size_t(a)].bytes > buffers[size_t(b)].bytes;
  });
  std::vector<int> placed;
  for (int bi : order) {
    Buffer& b = buffers[size_t(bi)];
    int64_t size = alignUp(std::max<int64_t>(b.bytes, 1), opts.alignment);
    plan.unsharedBytes += size;
    // Intervals taken by live-overlapping buffers, sorted by offset; take the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (int pi : placed) {
      const Buffer& p = buffers[size_t(pi)];
      if (p.first <= b.last && b.first <= p.last)
        taken.push_back(
            {p.offset, p.offset + alignUp(std::max<int64_t>(p.bytes, 1), opts.alignment)});
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [lo, hi] : taken) {
      if (offset + size <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(bi);
  }
  for (auto [v, bi] : bufferOf)
    plan.location[size_t(v->id())] = {Storage::Arena, -1, buffers[size_t(bi)].offset, v->id()};
  // Views: the location of their root (an arena buffer, an input, an output or a constant).
  for (auto [v, r] : root)
    plan.location[size_t(v->id())] = plan.location[size_t(r->id())];
  return plan;
}

} // namespace triad::ir
