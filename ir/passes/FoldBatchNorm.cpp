// Folds an inference BatchNormalization into the Conv or Gemm that produces its input:
//   y = (conv(x) - mean) * s + B,  s = scale / sqrt(var + epsilon)  per channel
//     = conv'(x) with W'[m, ...] = W[m, ...] * s[m] and b'[m] = (b[m] - mean[m]) * s[m] + B[m].
// For Gemm the channel is the output column n (W' scales B's column n; requires beta = 1 and a
// bias of N elements or none). Folded only when the producer's output feeds nothing but the
// BatchNormalization and every parameter is constant. Arithmetic in double, stored in the
// weights' type.
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Normalization.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace triad::ir {

namespace {

std::string freshName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.findValue(name); ++i)
    name = fmt::format("{}.{}", base, i);
  return name;
}

bool allConstant(const Node& n, size_t from) {
  for (size_t i = from; i < n.inputs().size(); ++i)
    if (!n.input(i) || !n.input(i)->isConstant()) return false;
  return true;
}

class FoldBatchNorm final : public Pass {
public:
  std::string_view name() const override { return "fold-batchnorm"; }

  bool run(Graph& g) override {
    std::vector<const Node*> dead;
    for (const auto& np : g.nodes()) {
      Node* bn = np.get();
      if (bn->kind() != OpKind::BatchNormalization || bn->outputs().size() != 1) continue;
      if (!allConstant(*bn, 1) || bn->inputs().size() != 5) continue;
      Value* x = bn->input(0);
      Node* p = x->producer();
      if (!p || (p->kind() != OpKind::Conv && p->kind() != OpKind::Gemm)) continue;
      if (g.useCounts()[size_t(x->id())] != 1 || !isFloat(x->type().dtype)) continue;
      if (!p->input(1)->isConstant() || (p->input(2) && !p->input(2)->isConstant())) continue;
      if (!fold(g, *p, *bn)) continue;
      // The producer now computes the BatchNormalization's output: it takes over its name.
      Value* y = bn->output(0);
      std::string name = y->name();
      g.replaceAllUses(y, x);
      g.renameValue(y, name + ":folded");
      g.renameValue(x, name);
      dead.push_back(bn);
    }
    g.removeNodes([&](const Node& n) { return std::count(dead.begin(), dead.end(), &n) > 0; });
    return !dead.empty();
  }

private:
  // Rewrites p's weight and bias inputs; false when the pattern does not apply.
  bool fold(Graph& g, Node& p, const Node& bn) {
    const Tensor& scale = bn.input(1)->constant();
    const Tensor& shift = bn.input(2)->constant();
    const Tensor& mean = bn.input(3)->constant();
    const Tensor& var = bn.input(4)->constant();
    double eps = bn.attrs<NormAttrs>().epsilon;
    int64_t channels = scale.numElements();
    std::vector<double> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      s[size_t(c)] = scale.getDouble(c) / std::sqrt(var.getDouble(c) + eps);
      t[size_t(c)] = shift.getDouble(c) - mean.getDouble(c) * s[size_t(c)];
    }
    Tensor w = p.input(1)->constant();
    // Output channel of each weight element.
    std::function<int64_t(int64_t)> channelOf;
    if (p.kind() == OpKind::Conv) {
      if (w.shape()[0] != channels) return false;
      int64_t per = w.numElements() / channels;
      channelOf = [per](int64_t i) { return i / per; };
    } else {
      const auto& a = p.attrs<GemmAttrs>();
      if (a.beta != 1.0f || w.rank() != 2) return false;
      int64_t n = a.transB ? w.shape()[0] : w.shape()[1];
      if (n != channels) return false;
      int64_t cols = w.shape()[1];
      if (a.transB)
        channelOf = [cols](int64_t i) { return i / cols; };
      else
        channelOf = [cols](int64_t i) { return i % cols; };
    }
    Tensor bias(w.dtype(), {channels});
    if (Value* b = p.input(2)) {
      if (b->type().numElements() != channels && b->type().numElements() != 1) return false;
      for (int64_t c = 0; c < channels; ++c)
        bias.setDouble(c, b->constant().getDouble(b->type().numElements() == 1 ? 0 : c));
    }
    for (int64_t i = 0; i < w.numElements(); ++i)
      w.setDouble(i, w.getDouble(i) * s[size_t(channelOf(i))]);
    for (int64_t c = 0; c < channels; ++c)
      bias.setDouble(c, bias.getDouble(c) * s[size_t(c)] + t[size_t(c)]);
    g.setNodeInput(&p, 1,
                   g.addConstant(freshName(g, p.input(1)->name() + ".bnfolded"), std::move(w)));
    g.setNodeInput(&p, 2,
                   g.addConstant(freshName(g, p.name() + ".bias.bnfolded"), std::move(bias)));
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createFoldBatchNormPass() {
  return std::make_unique<FoldBatchNorm>();
}

} // namespace triad::ir
