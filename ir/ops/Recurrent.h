// Attributes of the recurrent ops (RNN, GRU, LSTM), shared by every target's lowering.
#pragma once

#include "ir/Attrs.h"

#include <optional>

namespace triad::ir {

enum class RnnDirection : uint8_t { Forward, Reverse, Bidirectional };
inline std::string_view toString(RnnDirection d) {
  return d == RnnDirection::Forward   ? "forward"
         : d == RnnDirection::Reverse ? "reverse"
                                      : "bidirectional";
}

/// RNN, GRU and LSTM over X [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1),
/// with W [dirs, gates * hidden, input], R [dirs, gates * hidden, hidden] and the optional B,
/// sequence_lens, initial_h (and for LSTM initial_c and the peepholes P).
///
/// `activations` names the gate functions per direction, forward first (RNN: f; GRU: f, g;
/// LSTM: f, g, h), comma-separated, with defaults filled in; `alphas` and `betas` hold each
/// function's parameters (ONNX's activation_alpha/beta consumed in order by the functions that
/// take them, the functions' own defaults otherwise).
struct RecurrentAttrs : AttrsOf<RecurrentAttrs> {
  RnnDirection direction = RnnDirection::Forward;
  int64_t hiddenSize = 0;
  int64_t layout = 0;
  std::optional<float> clip;
  std::string activations;
  std::vector<float> alphas, betas;
  bool linearBeforeReset = false; // GRU
  bool inputForget = false;       // LSTM: the forget gate is 1 - the input gate
  template <class F> void fields(F&& f) const {
    f("direction", direction);
    f("hidden_size", hiddenSize);
    f("layout", layout);
    f("clip", clip);
    f("activations", activations);
    f("alphas", alphas);
    f("betas", betas);
    f("linear_before_reset", linearBeforeReset);
    f("input_forget", inputForget);
  }
  int64_t directions() const { return direction == RnnDirection::Bidirectional ? 2 : 1; }
};

} // namespace triad::ir
