// Folds an inference BatchNormalization into the Conv or Gemm that produces its input:
//   y = (conv(x) - mean) * s + B,  s = scale / sqrt(var + epsilon)  per channel
//     = conv'(x) with W'[m, ...] = W[m, ...] * s[m] and b'[m] = (b[m] - mean[m]) * s[m] + B[m].
// For Gemm the channel is the output column n (W' scales B's column n; any alpha and beta: the
// folded bias is beta * C, and the Gemm gets beta = 1). A MatMul by a constant [K, N] matrix
// with a 2-D activation becomes a Gemm with the folded bias. Folded only when the producer's
// output feeds nothing but the BatchNormalization and every parameter is constant. Arithmetic
// in double, stored in the weights' type.
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
    std::vector<std::pair<Node*, Node*>> todo; // (producer, BatchNormalization)
    for (const auto& np : g.nodes()) {
      Node* bn = np.get();
      if (bn->kind() != OpKind::BatchNormalization || bn->outputs().size() != 1) continue;
      if (!allConstant(*bn, 1) || bn->inputs().size() != 5) continue;
      Value* x = bn->input(0);
      Node* p = x->producer();
      if (!p ||
          (p->kind() != OpKind::Conv && p->kind() != OpKind::Gemm && p->kind() != OpKind::MatMul))
        continue;
      if (p->kind() == OpKind::MatMul &&
          (p->input(0)->type().rank() != 2 || p->input(1)->type().rank() != 2))
        continue;
      if (g.useCounts()[size_t(x->id())] != 1 || !isFloat(x->type().dtype)) continue;
      if (!p->input(1)->isConstant() ||
          (p->inputs().size() > 2 && p->input(2) && !p->input(2)->isConstant()))
        continue;
      todo.push_back({p, bn});
    }
    std::vector<const Node*> dead;
    bool appended = false;
    for (auto [p, bn] : todo) {
      Node* q = fold(g, *p, *bn);
      if (!q) continue;
      // The folded node computes the BatchNormalization's output: it takes over its name.
      Value* y = bn->output(0);
      std::string name = y->name();
      g.replaceAllUses(y, q->output(0));
      g.renameValue(y, name + ":folded");
      if (q != p) {
        g.renameValue(p->output(0), freshName(g, name + ":matmul"));
        dead.push_back(p);
        appended = true;
      }
      g.renameValue(q->output(0), name);
      dead.push_back(bn);
    }
    g.removeNodes([&](const Node& n) { return std::count(dead.begin(), dead.end(), &n) > 0; });
    if (appended) g.sortNodes();
    return !dead.empty();
  }

private:
  // Rewrites p's weight and bias inputs (a MatMul is replaced by a new Gemm); returns the node
  // that computes the folded result, nullptr when the pattern does not apply.
  Node* fold(Graph& g, Node& p, const Node& bn) {
    const Tensor& scale = bn.input(1)->constant();
    const Tensor& shift = bn.input(2)->constant();
    const Tensor& mean = bn.input(3)->constant();
    const Tensor& var = bn.input(4)->constant();
    double eps = bn.attrs<NormAttrs>().epsilon;
    int64_t channels = scale.numElements();
    std::vector<double> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
    double beta = 1;
    for (int64_t c = 0; c < channels; ++c) {
      s[size_t(c)] = scale.getDouble(c) / std::sqrt(var.getDouble(c) + eps);
      t[size_t(c)] = shift.getDouble(c) - mean.getDouble(c) * s[size_t(c)];
    }
    Tensor w = p.input(1)->constant();
    // Output channel of each weight element.
    std::function<int64_t(int64_t)> channelOf;
    if (p.kind() == OpKind::Conv) {
      if (w.shape()[0] != channels) return nullptr;
      int64_t per = w.numElements() / channels;
      channelOf = [per](int64_t i) { return i / per; };
    } else {
      GemmAttrs a = p.kind() == OpKind::Gemm ? p.attrs<GemmAttrs>() : GemmAttrs{};
      if (w.rank() != 2) return nullptr;
      beta = a.beta;
      int64_t n = a.transB ? w.shape()[0] : w.shape()[1];
      if (n != channels) return nullptr;
      int64_t cols = w.shape()[1];
      if (a.transB)
        channelOf = [cols](int64_t i) { return i / cols; };
      else
        channelOf = [cols](int64_t i) { return i % cols; };
    }
    Tensor bias(w.dtype(), {channels});
    if (Value* b = p.inputs().size() > 2 ? p.input(2) : nullptr) {
      if (b->type().numElements() != channels && b->type().numElements() != 1) return nullptr;
      for (int64_t c = 0; c < channels; ++c)
        bias.setDouble(c, beta * b->constant().getDouble(b->type().numElements() == 1 ? 0 : c));
    }
    for (int64_t i = 0; i < w.numElements(); ++i)
      w.setDouble(i, w.getDouble(i) * s[size_t(channelOf(i))]);
    for (int64_t c = 0; c < channels; ++c)
      bias.setDouble(c, bias.getDouble(c) * s[size_t(c)] + t[size_t(c)]);
    Value* wv = g.addConstant(freshName(g, p.input(1)->name() + ".bnfolded"), std::move(w));
    Value* bv = g.addConstant(freshName(g, p.name() + ".bias.bnfolded"), std::move(bias));
    if (p.kind() == OpKind::Conv) {
      g.setNodeInput(&p, 1, wv);
      g.setNodeInput(&p, 2, bv);
      return &p;
    }
    // Gemm (or MatMul, which becomes one) with the folded bias and beta = 1.
    auto attrs =
        std::make_shared<GemmAttrs>(p.kind() == OpKind::Gemm ? p.attrs<GemmAttrs>() : GemmAttrs{});
    attrs->beta = 1.0f;
    if (p.kind() == OpKind::Gemm && p.attrs<GemmAttrs>().beta == 1.0f && p.inputs().size() > 2) {
      g.setNodeInput(&p, 1, wv);
      g.setNodeInput(&p, 2, bv);
      return &p;
    }
    return g.addNode(OpKind::Gemm, p.name(), {p.input(0), wv, bv}, attrs,
                     {freshName(g, p.output(0)->name() + ".gemm")}, {p.output(0)->type()});
  }
};

} // namespace

std::unique_ptr<Pass> createFoldBatchNormPass() {
  return std::make_unique<FoldBatchNorm>();
}

} // namespace triad::ir
