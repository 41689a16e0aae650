// Attributes of the loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), shared by
// every target's lowering.
//
// Layout: the scores / log-probabilities are [N, C, d1..dk] (k >= 0), the integer targets
// [N, d1..dk] and the optional class weights [C].
#pragma once

#include "ir/Attrs.h"

#include <optional>
#include <string_view>

namespace triad::ir {

enum class LossReduction : uint8_t { None, Sum, Mean };
inline std::string_view toString(LossReduction r) {
  switch (r) {
  case LossReduction::None:
    return "none";
  case LossReduction::Sum:
    return "sum";
  case LossReduction::Mean:
    return "mean";
  }
  return "?";
}

/// Per element: loss[n, d] = -input[n, t, d] * w[t] with t = target[n, d] and w[t] = 1 without
/// weights; elements whose target equals `ignoreIndex` contribute 0 with weight 0.
///   None: loss has the shape of target;   Sum: the scalar sum;
///   Mean: sum(loss) / sum(w[t]) over the elements not ignored (NaN when all are ignored).
/// SoftmaxCrossEntropyLoss applies this to log_softmax(scores) along axis 1; its optional second
/// output is that log-probability tensor.
struct LossAttrs : AttrsOf<LossAttrs> {
  LossReduction reduction = LossReduction::Mean;
  std::optional<int64_t> ignoreIndex; // nullopt: no target value is ignored
  template <class F> void fields(F&& f) const {
    f("reduction", reduction);
    f("ignoreIndex", ignoreIndex);
  }
};

} // namespace triad::ir
