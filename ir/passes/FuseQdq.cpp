// QDQ models computed with integers, as ONNX Runtime's QDQ fusions do:
//
//   DequantizeLinear(xq) -> Conv(W, B)  -> QuantizeLinear  =>  QLinearConv(xq, W's int8, B's int32)
//   DequantizeLinear(xq) -> MatMul(W)   -> QuantizeLinear  =>  QLinearMatMul
//   DequantizeLinear(xq) -> Gemm(W[, B]) -> QuantizeLinear =>  MatMulInteger [-> Add(int32 bias)]
//                                                              -> DequantizeLinear(s_x*s_w)
//                                                              -> QuantizeLinear
//
// (Triad has no QGemm: the Gemm's requantization is spelled out, and the CPU fuses the chain
// after MatMulInteger into one loop.) The weights and the bias are constants the importer folded
// from DequantizeLinear of constants; it keeps their integers (Value::dequantizedFrom), and the
// rewrite uses those, so that W - w_zp and the bias are exactly what the model stores.
//
// Exact per the ONNX semantics of the integer ops, i.e. the rewrite is done only when:
//  - x is int8/uint8 dequantized per tensor (scalar scale, scalar or absent zero point);
//  - W is int8/uint8 per tensor or per output channel (Conv: axis 0; Gemm: the N axis; MatMul:
//    axis 1), its zero point of W's type;
//  - the bias (if any) is int32 with zero point 0 and scale s_x * s_w per channel (within 2^-20
//    relative: the quantizers round that product in float32 or float64), or all zeros;
//  - Gemm has alpha = beta = 1, no transA, a rank-2 W and a bias of [N] (transB is handled);
//  - the float result has one reader, the QuantizeLinear, which quantizes per tensor to
//    int8/uint8 with a positive scale; or one reader that is a Relu or a Clip with constant
//    bounds, whose one reader is that QuantizeLinear. The activation then becomes a Clip of the
//    quantized result to [Q(lo), Q(hi)]: Q is non-decreasing, so Q(clamp(v, lo, hi)) =
//    clamp(Q(v), Q(lo), Q(hi)) exactly (Relu: lo = 0, Q(0) = the zero point).
// The DequantizeLinear of x may have other readers: it stays for them. Everything else is left
// alone. Results differ from the float path only where float rounding decides a tie in the
// final rounding (docs/models.md, "QDQ models").
//
// Not in the default pipeline: the interpreter, the oracle, runs the model as written; the CPU
// and GPU targets run this pass on their copy of the graph (fuseQdqCopy).
#include "ir/Escape.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Conv.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Quantize.h"
#include "ir/passes/Pass.h"
#include "ir/passes/Patterns.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

namespace triad::ir {

namespace {

bool isInt8(DType t) {
  return t == DType::U8 || t == DType::I8;
}

bool isScalar(const Tensor& t) {
  return t.shape().size() <= 1 && t.numElements() == 1;
}

/// A float scale per tensor or per channel ([n]) as doubles, or empty when it is neither.
std::vector<double> scalesOf(const Tensor& t, int64_t n) {
  if (!isFloat(t.dtype())) return {};
  if (isScalar(t) || (t.shape().size() == 1 && t.numElements() == n)) return t.toDoubleVector();
  return {};
}

/// x = DequantizeLinear(xq, s, zp) per tensor with int8/uint8 xq and constant operands.
struct DqInput {
  Value* q = nullptr;
  Value* scale = nullptr;
  Value* zeroPoint = nullptr; // may be null (0)
};
std::optional<DqInput> dqInput(const Value* x) {
  const Node* dq = x->producer();
  if (!dq || dq->kind() != OpKind::DequantizeLinear) return {};
  const auto& a = dq->attrs<QuantAxisAttrs>();
  Value* q = dq->input(0);
  Value* s = dq->input(1);
  Value* z = dq->input(2);
  if (a.blockSize != 0 || !isInt8(q->type().dtype) || !s->isConstant() ||
      !isScalar(s->constant()) || s->type().dtype != DType::F32)
    return {};
  if (z && (!z->isConstant() || !isScalar(z->constant()) || z->type().dtype != q->type().dtype))
    return {};
  return DqInput{q, s, z};
}

/// A constant folded from DequantizeLinear of int8/uint8 weights, per tensor or along `axis`
/// (with `channels` entries).
const DequantizedFrom* dqWeights(const Value* w, int64_t axis, int64_t channels) {
  if (!w || !w->isConstant() || !w->dequantizedFrom()) return nullptr;
  const DequantizedFrom& d = *w->dequantizedFrom();
  if (!isInt8(d.q->dtype()) || d.q->shape() != w->type().shape) return nullptr;
  if (d.zeroPoint && d.zeroPoint->dtype() != d.q->dtype()) return nullptr;
  bool perTensor = isScalar(*d.scale) && (!d.zeroPoint || isScalar(*d.zeroPoint));
  bool perChannel =
      d.axis == axis && d.scale->shape() == Shape{channels} &&
      (!d.zeroPoint || isScalar(*d.zeroPoint) || d.zeroPoint->shape() == Shape{channels});
  if (!perTensor && !perChannel) return nullptr;
  if (scalesOf(*d.scale, channels).empty()) return nullptr;
  return &d;
}

/// The bias constant as int32 with zero point 0 and scale s_x * s_w[j] (per channel), else null.
const DequantizedFrom* dqBias(const Value* b, int64_t channels, double sx,
                              const std::vector<double>& sw) {
  if (!b || !b->isConstant() || !b->dequantizedFrom()) return nullptr;
  const DequantizedFrom& d = *b->dequantizedFrom();
  if (d.q->dtype() != DType::I32 || d.q->shape() != Shape{channels}) return nullptr;
  if (d.zeroPoint)
    for (double z : d.zeroPoint->toDoubleVector())
      if (z != 0) return nullptr;
  // An all-zero bias adds nothing whatever its scale (and CSE may have merged it with another
  // zero bias quantized with another scale).
  bool zero = true;
  for (int64_t j = 0; j < channels && zero; ++j)
    zero = d.q->getInt(j) == 0;
  if (zero) return &d;
  std::vector<double> sb = scalesOf(*d.scale, channels);
  if (sb.empty()) return nullptr;
  for (int64_t j = 0; j < channels; ++j) {
    double want = sx * sw[sw.size() == 1 ? 0 : size_t(j)];
    double got = sb[sb.size() == 1 ? 0 : size_t(j)];
    if (!(std::abs(got - want) <= std::ldexp(std::abs(want), -20))) return nullptr;
  }
  return &d;
}

/// The QuantizeLinear that is the only reader of `y` (per tensor, to int8/uint8), else null.
Node* soleQuantize(const Readers& readers, const Value* y) {
  Node* q = readers.sole(y);
  if (!q || q->kind() != OpKind::QuantizeLinear || q->input(0) != y) return nullptr;
  const auto& a = q->attrs<QuantizeLinearAttrs>();
  Value* s = q->input(1);
  Value* z = q->input(2);
  if (a.blockSize != 0 || !isInt8(q->output(0)->type().dtype) || !s->isConstant() ||
      !isScalar(s->constant()) || s->type().dtype != DType::F32)
    return nullptr;
  if (z && (!z->isConstant() || !isScalar(z->constant()))) return nullptr;
  return q;
}

class FuseQdq final : public Pass {
public:
  std::string_view name() const override { return "fuse-qdq"; }

  bool run(Graph& g) override {
    Readers readers(g);
    std::vector<const Node*> dead;
    std::vector<Node*> candidates;
    for (const auto& np : g.nodes())
      if (np->kind() == OpKind::Conv || np->kind() == OpKind::Gemm || np->kind() == OpKind::MatMul)
        candidates.push_back(np.get());
    for (Node* op : candidates) {
      std::optional<DqInput> x = op->input(0) ? dqInput(op->input(0)) : std::nullopt;
      if (!x) continue;
      // An activation between the op and the QuantizeLinear: Relu, or Clip with constant bounds.
      act_ = nullptr;
      Value* y = op->output(0);
      if (Node* r = readers.sole(y); r && !readers.isGraphOutput(y) && activationBounds(*r)) {
        act_ = r;
        y = r->output(0);
      }
      Node* q = soleQuantize(readers, y);
      if (!q || (act_ && !(q->input(1)->constant().getDouble(0) > 0))) continue; // Q monotone
      bool done = false;
      if (op->kind() == OpKind::Conv) done = fuseConv(g, *op, *x, *q);
      if (op->kind() == OpKind::MatMul) done = fuseMatMul(g, *op, *x, *q);
      if (op->kind() == OpKind::Gemm) done = fuseGemm(g, *op, *x, *q);
      if (done) dead.insert(dead.end(), {q, op});
      if (done && act_) dead.push_back(act_);
    }
    if (dead.empty()) return false;
    removeMatched(g, dead);
    // The DequantizeLinear of x when nothing else reads it.
    std::vector<int> uses = g.useCounts();
    g.removeNodes([&](const Node& n) {
      return n.kind() == OpKind::DequantizeLinear && uses[size_t(n.output(0)->id())] == 0;
    });
    return true;
  }

private:
  const Node* act_ = nullptr;                        // the activation being fused, if any
  std::optional<std::pair<float, float>> actBounds_; // its bounds (float; +-inf when open)

  /// Whether `n` is Relu, or Clip whose bounds are constant scalars or attributes; sets
  /// actBounds_.
  bool activationBounds(const Node& n) {
    actBounds_.reset();
    float inf = std::numeric_limits<float>::infinity();
    if (n.kind() == OpKind::Relu) {
      actBounds_ = std::make_pair(0.0f, inf);
      return true;
    }
    if (n.kind() != OpKind::Clip || n.input(0)->type().dtype != DType::F32) return false;
    const auto& a = n.attrs<ClipAttrs>();
    std::pair<float, float> b{a.min.value_or(-inf), a.max.value_or(inf)};
    for (size_t i : {size_t(1), size_t(2)}) {
      Value* v = i < n.inputs().size() ? n.input(i) : nullptr;
      if (!v) continue;
      if (!v->isConstant() || !isScalar(v->constant())) return false;
      (i == 1 ? b.first : b.second) = float(v->constant().getDouble(0));
    }
    if (!(b.first <= b.second)) return false;
    actBounds_ = b;
    return true;
  }

  /// Makes the node computing q's output: `kind` itself, or with an activation fused, `kind`
  /// into a fresh value and a Clip of it to the activation's bounds quantized as q quantizes.
  void produce(Graph& g, Node& q, OpKind kind, const std::string& name, std::vector<Value*> ins,
               std::shared_ptr<const Attrs> attrs) {
    if (!act_) {
      replaceWith(g, q.output(0), kind, name, std::move(ins), std::move(attrs));
      return;
    }
    const TensorType& yt = q.output(0)->type();
    Node* raw = g.addNode(kind, name, std::move(ins), std::move(attrs),
                          {freshValueName(g, q.output(0)->name() + ":unclipped")}, {yt});
    float s = float(q.input(1)->constant().getDouble(0));
    int64_t zp = q.input(2) ? q.input(2)->constant().getInt(0) : 0;
    auto bound = [&](float v, const std::string& suffix) {
      Tensor t(TensorType{yt.dtype, {}, {}});
      if (yt.dtype == DType::U8)
        t.data<uint8_t>()[0] = ops::quantizeValue<uint8_t>(v / s, zp);
      else
        t.data<int8_t>()[0] = ops::quantizeValue<int8_t>(v / s, zp);
      return constant(g, name + suffix, std::move(t));
    };
    replaceWith(g, q.output(0), OpKind::Clip, name + "/" + std::string(opKindName(act_->kind())),
                {raw->output(0), bound(actBounds_->first, "/lo"), bound(actBounds_->second, "/hi")},
                std::make_shared<ClipAttrs>());
  }

  /// A constant sharing `t` (a tensor the importer kept) named after `base`.
  static Value* constant(Graph& g, const std::string& base, std::shared_ptr<const Tensor> t) {
    return g.addConstant(freshValueName(g, base), std::move(t));
  }
  static Value* constant(Graph& g, const std::string& base, Tensor t) {
    return g.addConstant(freshValueName(g, base), std::move(t));
  }
  /// x's zero point, a zero of x's type when the model gives none (QLinear ops want one).
  static Value* xZeroPoint(Graph& g, const DqInput& x) {
    if (x.zeroPoint) return x.zeroPoint;
    return constant(g, x.q->name() + "_zero_point", Tensor(TensorType{x.q->type().dtype, {}, {}}));
  }
  static Value* yZeroPoint(Graph& g, const Node& q) {
    if (q.input(2)) return q.input(2);
    return constant(g, q.output(0)->name() + "_zero_point",
                    Tensor(TensorType{q.output(0)->type().dtype, {}, {}}));
  }
  static Value* wZeroPoint(Graph& g, const std::string& base, const DequantizedFrom& w) {
    if (w.zeroPoint) return constant(g, base + "_zero_point", w.zeroPoint);
    return constant(g, base + "_zero_point", Tensor(TensorType{w.q->dtype(), {}, {}}));
  }

  bool fuseConv(Graph& g, const Node& conv, const DqInput& x, Node& q) {
    Value* w = conv.input(1);
    if (!w || w->type().rank() < 3) return false;
    int64_t m = w->type().shape[0];
    const DequantizedFrom* dw = dqWeights(w, 0, m);
    if (!dw) return false;
    double sx = x.scale->constant().toDoubleVector()[0];
    const DequantizedFrom* db = nullptr;
    if (Value* b = conv.input(2)) {
      db = dqBias(b, m, sx, dw->scale->toDoubleVector());
      if (!db) return false;
    }
    std::string base = conv.name();
    std::vector<Value*> ins = qlinearInputs(g, x, *w, *dw, q);
    if (db) ins.push_back(constant(g, conv.input(2)->name() + "_quantized", db->q));
    produce(g, q, OpKind::QLinearConv, base + "/QLinearConv", ins, conv.attrsPtr());
    return true;
  }

  /// QLinearConv's and QLinearMatMul's first eight inputs: x, its scale and zero point; the
  /// weights' integers, scale and zero point; y's scale and zero point.
  static std::vector<Value*> qlinearInputs(Graph& g, const DqInput& x, const Value& w,
                                           const DequantizedFrom& dw, const Node& q) {
    return {x.q,
            x.scale,
            xZeroPoint(g, x),
            constant(g, w.name() + "_quantized", dw.q),
            constant(g, w.name() + "_scale", dw.scale),
            wZeroPoint(g, w.name(), dw),
            q.input(1),
            yZeroPoint(g, q)};
  }

  bool fuseMatMul(Graph& g, const Node& mm, const DqInput& x, Node& q) {
    Value* w = mm.input(1);
    if (!w || w->type().rank() != 2 || x.q->type().rank() < 2) return false;
    int64_t n = w->type().shape[1];
    const DequantizedFrom* dw = dqWeights(w, 1, n);
    if (!dw) return false;
    std::vector<Value*> ins = qlinearInputs(g, x, *w, *dw, q);
    produce(g, q, OpKind::QLinearMatMul, mm.name() + "/QLinearMatMul", ins,
            std::make_shared<NoAttrs>());
    return true;
  }

  bool fuseGemm(Graph& g, const Node& gemm, const DqInput& x, Node& q) {
    const auto& a = gemm.attrs<GemmAttrs>();
    Value* w = gemm.input(1);
    if (a.alpha != 1.0f || a.transA || !w || w->type().rank() != 2 || x.q->type().rank() != 2)
      return false;
    Value* b = gemm.input(2);
    if (b && a.beta != 1.0f) return false;
    int64_t n = a.transB ? w->type().shape[0] : w->type().shape[1];
    const DequantizedFrom* dw = dqWeights(w, a.transB ? 0 : 1, n);
    if (!dw) return false;
    double sx = x.scale->constant().toDoubleVector()[0];
    std::vector<double> sw = dw->scale->toDoubleVector();
    const DequantizedFrom* db = nullptr;
    if (b) {
      if (b->type().shape != Shape{n}) return false; // a [1, N] or [M, N] bias: left as is
      db = dqBias(b, n, sx, sw);
      if (!db) return false;
    }
    // B as [K, N] int8 (transposed once here when transB).
    std::shared_ptr<const Tensor> wq = dw->q;
    if (a.transB) {
      const Shape& s = dw->q->shape();
      Tensor t(TensorType{dw->q->dtype(), {s[1], s[0]}, {}});
      const uint8_t* src = dw->q->raw();
      uint8_t* dst = t.raw();
      for (int64_t r = 0; r < s[0]; ++r)
        for (int64_t c = 0; c < s[1]; ++c)
          dst[c * s[0] + r] = src[r * s[1] + c];
      wq = std::make_shared<const Tensor>(std::move(t));
    }
    Value* wzp = wZeroPoint(g, w->name(), *dw);
    std::string base = gemm.name();
    Shape yShape = gemm.output(0)->type().shape;
    TensorType acc{DType::I32, yShape, {}};
    Node* mi = g.addNode(OpKind::MatMulInteger, base + "/MatMulInteger",
                         {x.q, constant(g, w->name() + "_quantized", wq), xZeroPoint(g, x), wzp},
                         std::make_shared<NoAttrs>(), {freshValueName(g, base + "/acc")}, {acc});
    Value* sum = mi->output(0);
    if (db) {
      Node* add = g.addNode(
          OpKind::Add, base + "/AddBias", {sum, constant(g, b->name() + "_quantized", db->q)},
          std::make_shared<NoAttrs>(), {freshValueName(g, base + "/acc_bias")}, {acc});
      sum = add->output(0);
    }
    // acc * (s_x * s_w[j]): the accumulator dequantized, then quantized with y's scale.
    Tensor scale(TensorType{DType::F32, sw.size() == 1 ? Shape{} : Shape{n}, {}});
    float* sp = reinterpret_cast<float*>(scale.raw());
    for (size_t j = 0; j < sw.size(); ++j)
      sp[j] = float(sx * sw[j]);
    auto dqa = std::make_shared<QuantAxisAttrs>();
    dqa->axis = sw.size() == 1 ? -1 : 1;
    Node* deq =
        g.addNode(OpKind::DequantizeLinear, base + "/DequantizeAcc",
                  {sum, constant(g, base + "/acc_scale", std::move(scale))}, dqa,
                  {freshValueName(g, base + "/acc_float")}, {TensorType{DType::F32, yShape, {}}});
    std::vector<Value*> qin = {deq->output(0), q.input(1)};
    if (q.input(2)) qin.push_back(q.input(2));
    produce(g, q, OpKind::QuantizeLinear, base + "/Requantize", qin, q.attrsPtr());
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseQdqPass() {
  return std::make_unique<FuseQdq>();
}

std::shared_ptr<Graph> qdqIntegerCopy(const Graph& g, bool option, const char* envVar) {
  const char* e = std::getenv(envVar);
  if (e && *e) {
    std::string_view v(e);
    if (v != "int" && v != "float")
      fail(ErrorKind::Usage, "{}='{}': expected 'int' or 'float' (or unset)", envVar,
           escape::comment(v, 40));
    option = v == "int";
  }
  return option ? fuseQdqCopy(g) : nullptr;
}

std::shared_ptr<Graph> fuseQdqCopy(const Graph& g) {
  bool qdq = false;
  for (const auto& n : g.nodes())
    qdq = qdq || n->kind() == OpKind::QuantizeLinear;
  if (!qdq) return nullptr;
  auto owned = std::make_shared<Graph>(g.clone());
  if (!createFuseQdqPass()->run(*owned)) return nullptr;
  // The float paths the integer nodes replaced (DequantizeLinear of the weights, ...).
  createDeadCodeEliminationPass()->run(*owned);
  return owned;
}

} // namespace triad::ir
