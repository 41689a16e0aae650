// Loss functions with inference-time reference semantics: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (= NLL of log_softmax(scores, axis 1)), over [N, C, d1..dk] inputs.
// Log-softmax, sums and the mean's divisor are accumulated in double and rounded once to the
// output type.
#include "ir/ops/Loss.h"
#include "ir/ops/OpUtil.h"

#include <cmath>
#include <limits>

namespace triad::ir {
using namespace ops;

namespace {

std::shared_ptr<const Attrs> parseLoss(const ParseContext& ctx) {
  auto a = std::make_shared<LossAttrs>();
  std::string r = enumAttr(ctx.attrs, "reduction", "mean", {"none", "sum", "mean"});
  a->reduction = r == "none"  ? LossReduction::None
                 : r == "sum" ? LossReduction::Sum
                              : LossReduction::Mean;
  a->ignoreIndex = ctx.attrs.getInt("ignore_index");
  return a;
}

/// Shared shape rule: input [N, C, d...] (float), target [N, d...] (int32/int64), optional weight
/// [C]. Returns the loss type: target's shape for reduction none, else a scalar.
TensorType lossType(const InferContext& ctx, std::string_view inputName) {
  const auto& a = ctx.as<LossAttrs>();
  const TensorType& X = ctx.in(0);
  const TensorType& T = ctx.in(1);
  requireFloat(X, inputName);
  requireRankAtLeast(X, 2, inputName);
  if (!dtypeIn(T.dtype, {DType::I32, DType::I64}))
    invalid("input target has element type {}; it must be int32 or int64", dtypeName(T.dtype));
  Shape want{X.shape[0]};
  want.insert(want.end(), X.shape.begin() + 2, X.shape.end());
  if (T.shape != want)
    invalid("input target {} must have shape {} (input {} {} without its class dim 1)",
            shapeToString(T.shape), shapeToString(want), inputName, shapeToString(X.shape));
  if (ctx.has(2)) {
    const TensorType& W = ctx.in(2);
    requireSameDType(X, W, fmt::format("{} and weight", inputName));
    if (W.shape != Shape{X.shape[1]})
      invalid("input weight {} must have shape [{}] (the classes of {} {})", shapeToString(W.shape),
              X.shape[1], inputName, shapeToString(X.shape));
  }
  Shape out = a.reduction == LossReduction::None ? T.shape : Shape{};
  return TensorType{X.dtype, out, {}};
}

std::vector<TensorType> inferNll(const InferContext& ctx) {
  return {lossType(ctx, "input")};
}

std::vector<TensorType> inferSce(const InferContext& ctx) {
  TensorType loss = lossType(ctx, "scores");
  return {loss, ctx.in(0)}; // log_prob has the type of scores
}

/// The NLL reduction over log-probabilities `logp` ([N, C, D], D = prod(d...)); writes `out`.
/// P is the element type of logp (the input's storage type, or double for SCE's log-softmax).
template <typename T, typename P>
void nllKernel(const LossAttrs& a, const P* logp, const Tensor& target, const Tensor* weight,
               int64_t N, int64_t C, int64_t D, Tensor& out) {
  std::vector<int64_t> t = target.toInt64Vector(); // [N, D]
  std::vector<double> w;
  if (weight) w = weight->toDoubleVector();
  T* y = out.data<T>();
  double sum = 0.0, wsum = 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t cls = t[size_t(n * D + d)];
      double loss = 0.0, wt = 0.0;
      if (!a.ignoreIndex || cls != *a.ignoreIndex) {
        if (cls < 0 || cls >= C)
          fail(ErrorKind::Runtime,
               "target value {} at position {} is out of range for {} classes (ignore_index {})",
               cls, n * D + d, C, a.ignoreIndex ? fmt::format("{}", *a.ignoreIndex) : "unset");
        wt = weight ? w[size_t(cls)] : 1.0;
        loss = -double(logp[(n * C + cls) * D + d]) * wt;
      }
      if (a.reduction == LossReduction::None) y[n * D + d] = T(loss);
      sum += loss;
      wsum += wt;
    }
  if (a.reduction == LossReduction::Sum) y[0] = T(sum);
  // 0/0 (every element ignored) gives NaN, as the ONNX reference does.
  if (a.reduction == LossReduction::Mean) y[0] = T(sum / wsum);
}

/// [N, C, D] view of the input shape.
void lossDims(const Shape& s, int64_t& N, int64_t& C, int64_t& D) {
  N = s[0];
  C = s[1];
  D = 1;
  for (size_t i = 2; i < s.size(); ++i)
    D *= s[i];
}

void evalNll(const EvalContext& ctx) {
  const auto& a = ctx.as<LossAttrs>();
  const Tensor& X = ctx.in(0);
  int64_t N, C, D;
  lossDims(X.shape(), N, C, D);
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    nllKernel<T>(a, X.data<T>(), ctx.in(1), ctx.has(2) ? &ctx.in(2) : nullptr, N, C, D, ctx.out(0));
  });
}

void evalSce(const EvalContext& ctx) {
  const auto& a = ctx.as<LossAttrs>();
  const Tensor& X = ctx.in(0);
  int64_t N, C, D;
  lossDims(X.shape(), N, C, D);
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    // log_softmax over the class dim for every (n, d): x - max - log(sum(exp(x - max))).
    std::vector<double> logp(size_t(X.numElements()));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        int64_t base = n * C * D + d;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < C; ++c)
          mx = std::max(mx, double(x[base + c * D]));
        double s = 0.0;
        for (int64_t c = 0; c < C; ++c)
          s += std::exp(double(x[base + c * D]) - mx);
        double lse = mx + std::log(s);
        for (int64_t c = 0; c < C; ++c)
          logp[size_t(base + c * D)] = double(x[base + c * D]) - lse;
      }
    if (ctx.outputs.size() > 1) {
      T* lp = ctx.out(1).data<T>();
      for (size_t i = 0; i < logp.size(); ++i)
        lp[i] = T(logp[i]);
    }
    nllKernel<T>(a, logp.data(), ctx.in(1), ctx.has(2) ? &ctx.in(2) : nullptr, N, C, D, ctx.out(0));
  });
}

} // namespace

void registerLossOps(OpTable& table) {
  table.add({.kind = OpKind::NegativeLogLikelihoodLoss,
             .minInputs = 2,
             .maxInputs = 3,
             .sinceOpset = 12,
             .parse = parseLoss,
             .infer = inferNll,
             .eval = evalNll});
  table.add({.kind = OpKind::SoftmaxCrossEntropyLoss,
             .minInputs = 2,
             .maxInputs = 3,
             .minOutputs = 1,
             .maxOutputs = 2,
             .sinceOpset = 12,
             .parse = parseLoss,
             .infer = inferSce,
             .eval = evalSce});
}

} // namespace triad::ir
