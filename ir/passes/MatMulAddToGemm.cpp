// matmul-add-to-gemm: the dense layer PyTorch exports as MatMul + Add becomes one Gemm
//
//   Y = Add(MatMul(A[M,K], B[K,N]), C)     B, C constant; C [N], [1,N] or any all-ones shape
//     = Gemm(A, B, C')                      with C' the bias as [N] (or [1] for a scalar)
//
// so that targets see the bias as part of the product (one pass over the output, and the
// form fold-batchnorm and the targets' Gemm lowerings already handle).
//
// Activations of rank > 2 (BERT's [B,S,K] x [K,N] + bias) are flattened around the Gemm:
//   Reshape(A -> [B*S, K]) -> Gemm -> Reshape([B*S, N] -> [B, S, N]).
// Shapes are static, so both Reshapes are plain views (row-major data is unchanged) that
// every target implements as a copy-free alias. To keep their number down: an activation that
// is itself a view (Reshape, Flatten, Squeeze, Unsqueeze) is flattened from the view's input;
// one flattened activation serves every product that reads it (query, key and value); and
// Reshapes that read the result (splitting attention heads) read the 2-D product directly, the
// unflatten being dropped when nothing else reads it. Only float types (f32, f16, f64) are
// rewritten; the MatMul's output must feed nothing but the Add, and the Add must not broadcast the
// product to a larger shape. The Add's output value keeps its name.
#include "ir/ops/Linear.h"
#include "ir/ops/Movement.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace triad::ir {

namespace {

struct Match {
  Node* matmul = nullptr;
  Node* add = nullptr;
  Value* bias = nullptr;
};

/// The bias as Gemm's C: [N] or [1] (for one element); nullopt unless every dimension but
/// the last is 1 and the last is N or 1.
std::optional<Shape> gemmBiasShape(const Shape& c, int64_t N) {
  for (size_t i = 0; i + 1 < c.size(); ++i)
    if (c[i] != 1) return std::nullopt;
  int64_t last = c.empty() ? 1 : c.back();
  if (last != N && last != 1) return std::nullopt;
  return Shape{last};
}

class MatMulAddToGemm final : public Pass {
public:
  std::string_view name() const override { return "matmul-add-to-gemm"; }

  bool run(Graph& g) override {
    flattened_.clear();
    dead_.clear();
    std::vector<Match> matches = findMatches(g);
    for (const Match& m : matches)
      rewrite(g, m);
    for (const Match& m : matches) {
      dead_.insert(m.matmul);
      dead_.insert(m.add);
    }
    g.removeNodes([&](const Node& n) { return dead_.count(&n) > 0; });
    g.sortNodes(); // the new nodes were appended after the Add's users
    return !matches.empty();
  }

private:
  static std::vector<Match> findMatches(const Graph& g) {
    std::vector<int> uses = g.useCounts();
    std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
    std::vector<Match> out;
    for (const auto& np : g.nodes()) {
      Node* add = np.get();
      if (add->kind() != OpKind::Add || add->inputs().size() != 2) continue;
      for (size_t side = 0; side < 2; ++side) {
        Value* product = add->input(side);
        Value* bias = add->input(1 - side);
        Node* mm = product ? product->producer() : nullptr;
        if (!mm || mm->kind() != OpKind::MatMul || !bias || !bias->isConstant()) continue;
        if (uses[size_t(product->id())] != 1 || graphOutputs.count(product)) continue;
        Value* a = mm->input(0);
        Value* b = mm->input(1);
        const TensorType& y = product->type();
        if (!b->isConstant() || b->type().rank() != 2 || a->type().rank() < 2) continue;
        if (!isFloat(y.dtype) || y.dtype == DType::Fixed || bias->type().dtype != y.dtype) continue;
        if (!(add->output(0)->type() == y) || y.numElements() == 0) continue;
        if (!gemmBiasShape(bias->type().shape, b->type().shape[1])) continue;
        out.push_back({mm, add, bias});
        break;
      }
    }
    return out;
  }

  void rewrite(Graph& g, const Match& m) {
    Value* a = m.matmul->input(0);
    Value* b = m.matmul->input(1);
    Value* y = m.add->output(0);
    const TensorType outType = y->type();
    int64_t K = a->type().shape.back(), N = b->type().shape[1];
    int64_t M = a->type().numElements() / K;
    const std::string& layer = m.matmul->name();

    Value* c = m.bias;
    Shape cShape = *gemmBiasShape(c->type().shape, N);
    if (c->type().shape != cShape)
      c = g.addConstant(freshValueName(g, c->name() + ":gemm_bias"),
                        c->constant().reshaped(cShape));

    // The Add's output name passes to the value that now computes it.
    std::string yName = y->name();
    g.renameValue(y, freshValueName(g, yName + ":removed"));

    auto gemmAttrs = std::make_shared<GemmAttrs>();
    TensorType gemmType{outType.dtype, {M, N}, {}};
    if (a->type().rank() == 2) {
      Node* gemm = g.addNode(OpKind::Gemm, layer, {a, b, c}, gemmAttrs, {yName}, {gemmType});
      g.replaceAllUses(y, gemm->output(0));
      return;
    }
    // [d0, ..., K] -> [M, K] -> Gemm -> [M, N] -> [d0, ..., N]
    Node* gemm = g.addNode(OpKind::Gemm, layer, {flatten(g, a, M, K, layer), b, c}, gemmAttrs,
                           {freshValueName(g, yName + ":2d")}, {gemmType});
    auto unflat = std::make_shared<ReshapeAttrs>();
    unflat->shape = outType.shape;
    Node* back = g.addNode(OpKind::Reshape, layer + "/unflatten", {gemm->output(0)}, unflat,
                           {yName}, {outType});
    g.replaceAllUses(y, back->output(0));
    // Users that reshape the result anyway (attention heads: [B,S,768] -> [B,S,12,64]) read
    // the 2-D product directly; the unflatten goes when nothing else reads it.
    bool stillUsed = std::count(g.outputs().begin(), g.outputs().end(), back->output(0)) > 0;
    for (const auto& np : g.nodes())
      for (size_t i = 0; i < np->inputs().size(); ++i) {
        if (np->input(i) != back->output(0)) continue;
        if (np->kind() == OpKind::Reshape && i == 0)
          g.setNodeInput(np.get(), 0, gemm->output(0));
        else
          stillUsed = true;
      }
    if (!stillUsed) dead_.insert(back);
  }

  // The activation as [M, K]: views of views read the original (Reshape(Reshape(x)) is
  // Reshape(x) in row-major order), and activations flattened once are shared (BERT's query,
  // key and value projections read the same LayerNorm output).
  Value* flatten(Graph& g, Value* a, int64_t M, int64_t K, const std::string& layer) {
    for (Node* p = a->producer(); p && p->input(0) &&
                                  (p->kind() == OpKind::Reshape || p->kind() == OpKind::Flatten ||
                                   p->kind() == OpKind::Squeeze || p->kind() == OpKind::Unsqueeze);
         p = a->producer())
      a = p->input(0);
    if (a->type().shape == Shape{M, K}) return a;
    auto it = flattened_.find(a);
    if (it != flattened_.end()) return it->second;
    auto flat = std::make_shared<ReshapeAttrs>();
    flat->shape = {M, K};
    Node* n = g.addNode(OpKind::Reshape, layer + "/flatten", {a}, flat,
                        {freshValueName(g, a->name() + ":2d")},
                        {TensorType{a->type().dtype, {M, K}, {}}});
    flattened_[a] = n->output(0);
    return n->output(0);
  }

  std::unordered_map<const Value*, Value*> flattened_;
  std::unordered_set<const Node*> dead_;
};

} // namespace

std::unique_ptr<Pass> createMatMulAddToGemmPass() {
  return std::make_unique<MatMulAddToGemm>();
}

} // namespace triad::ir
