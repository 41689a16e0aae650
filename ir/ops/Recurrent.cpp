// Recurrent ops: RNN, GRU and LSTM (ONNX's definitions, opsets 7/14/22 and layout from 14).
//
// One driver runs every op: for each direction and time step it computes the gate
// pre-activations X_t W^T + H_{t-1} R^T + Wb + Rb for the whole batch, then the op's cell
// updates the state. Arithmetic is in double (the inputs' float type at the end), activations
// are ONNX's list for recurrent ops, and `clip` bounds every gate's pre-activation.
//
// sequence_lens follows ONNX Runtime (the reference evaluator ignores it): a batch row with
// length L runs steps 0..L-1 (the reverse direction L-1..0), its outputs after L are zero, and
// Y_h / Y_c hold its state after its last step.
#include "ir/ops/Recurrent.h"
#include "ir/ops/OpUtil.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace triad::ir {
using namespace ops;

namespace {

enum class RecurrentKind { Rnn, Gru, Lstm };

int gatesOf(RecurrentKind k) {
  return k == RecurrentKind::Rnn ? 1 : k == RecurrentKind::Gru ? 3 : 4;
}
int functionsOf(RecurrentKind k) {
  return k == RecurrentKind::Rnn ? 1 : k == RecurrentKind::Gru ? 2 : 3;
}

/// A gate function of ONNX's recurrent ops, with its alpha and beta.
struct Activation {
  enum Kind {
    Relu,
    Tanh,
    Sigmoid,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  } kind = Tanh;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
    case Relu:
      return x > 0 ? x : 0;
    case Tanh:
      return std::tanh(x);
    case Sigmoid:
      return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
    case Affine:
      return alpha * x + beta;
    case LeakyRelu:
      return x >= 0 ? x : alpha * x;
    case ThresholdedRelu:
      return x > alpha ? x : 0;
    case ScaledTanh:
      return alpha * std::tanh(beta * x);
    case HardSigmoid:
      return std::clamp(alpha * x + beta, 0.0, 1.0);
    case Elu:
      return x >= 0 ? x : alpha * std::expm1(x);
    case Softsign:
      return x / (1 + std::abs(x));
    case Softplus:
      return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

/// Name, whether it takes alpha / beta, and their defaults (ONNX Runtime's).
struct ActivationInfo {
  std::string_view name;
  Activation::Kind kind;
  bool hasAlpha, hasBeta;
  float alpha, beta;
};
constexpr ActivationInfo kActivations[] = {
    {"Relu", Activation::Relu, false, false, 0, 0},
    {"Tanh", Activation::Tanh, false, false, 0, 0},
    {"Sigmoid", Activation::Sigmoid, false, false, 0, 0},
    {"Affine", Activation::Affine, true, true, 1.0f, 0.0f},
    {"LeakyRelu", Activation::LeakyRelu, true, false, 0.01f, 0},
    {"ThresholdedRelu", Activation::ThresholdedRelu, true, false, 1.0f, 0},
    {"ScaledTanh", Activation::ScaledTanh, true, true, 1.0f, 1.0f},
    {"HardSigmoid", Activation::HardSigmoid, true, true, 0.2f, 0.5f},
    {"Elu", Activation::Elu, true, false, 1.0f, 0},
    {"Softsign", Activation::Softsign, false, false, 0, 0},
    {"Softplus", Activation::Softplus, false, false, 0, 0},
};

const ActivationInfo* findActivation(std::string_view name) {
  for (const auto& a : kActivations)
    if (std::equal(a.name.begin(), a.name.end(), name.begin(), name.end(),
                   [](char x, char y) { return std::tolower(x) == std::tolower(y); }))
      return &a;
  return nullptr;
}

/// The attributes' activations as functions, per direction then per gate function.
std::vector<Activation> activationsOf(const RecurrentAttrs& a) {
  std::vector<Activation> out;
  size_t begin = 0, i = 0;
  while (begin <= a.activations.size()) {
    size_t end = a.activations.find(',', begin);
    if (end == std::string::npos) end = a.activations.size();
    std::string_view name(a.activations.data() + begin, end - begin);
    const ActivationInfo* info = findActivation(name);
    TRIAD_ASSERT(info, "activation '{}' was checked at parse time", name);
    out.push_back({info->kind, a.alphas[i], a.betas[i]});
    ++i;
    begin = end + 1;
  }
  return out;
}

ParseFn parseRecurrent(RecurrentKind kind) {
  return [kind](const ParseContext& ctx) -> std::shared_ptr<const Attrs> {
    auto a = std::make_shared<RecurrentAttrs>();
    std::string dir =
        enumAttr(ctx.attrs, "direction", "forward", {"forward", "reverse", "bidirectional"});
    a->direction = dir == "forward"   ? RnnDirection::Forward
                   : dir == "reverse" ? RnnDirection::Reverse
                                      : RnnDirection::Bidirectional;
    a->layout = ctx.opset >= 14 ? ctx.attrs.getInt("layout", 0) : 0;
    if (a->layout != 0 && a->layout != 1)
      invalid("attribute 'layout' is {}; it must be 0 or 1", a->layout);
    std::optional<int64_t> hidden = ctx.attrs.getInt("hidden_size");
    if (hidden) {
      if (*hidden < 1) invalid("attribute 'hidden_size' is {}; it must be positive", *hidden);
      a->hiddenSize = *hidden;
    } else {
      const TensorType& R = inputType(ctx, 2);
      if (R.rank() != 3) invalid("input R must have rank 3, has shape {}", shapeToString(R.shape));
      a->hiddenSize = R.shape[2];
    }
    if (std::optional<float> clip = ctx.attrs.getFloat("clip")) {
      if (!(*clip > 0)) invalid("attribute 'clip' is {}; it must be positive", *clip);
      a->clip = *clip;
    }
    if (kind == RecurrentKind::Gru)
      a->linearBeforeReset = ctx.attrs.getInt("linear_before_reset", 0) != 0;
    if (kind == RecurrentKind::Lstm) a->inputForget = ctx.attrs.getInt("input_forget", 0) != 0;

    // Gate functions: the attribute's, or the op's defaults, for each direction.
    size_t perDir = size_t(functionsOf(kind));
    std::vector<std::string> names =
        ctx.attrs.getStrings("activations").value_or(std::vector<std::string>{});
    if (names.empty()) {
      std::vector<std::string> dflt = kind == RecurrentKind::Rnn ? std::vector<std::string>{"Tanh"}
                                      : kind == RecurrentKind::Gru
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
      for (int64_t d = 0; d < a->directions(); ++d)
        names.insert(names.end(), dflt.begin(), dflt.end());
    }
    if (names.size() != perDir * size_t(a->directions()))
      invalid("attribute 'activations' has {} functions; a {} {} needs {}", names.size(), dir,
              kind == RecurrentKind::Rnn   ? "RNN"
              : kind == RecurrentKind::Gru ? "GRU"
                                           : "LSTM",
              perDir * size_t(a->directions()));
    std::vector<float> alphas = floatsOr(ctx.attrs, "activation_alpha", {});
    std::vector<float> betas = floatsOr(ctx.attrs, "activation_beta", {});
    size_t ai = 0, bi = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      const ActivationInfo* info = findActivation(names[i]);
      if (!info)
        unsupported("attribute 'activations' names '{}', which is not one of ONNX's recurrent "
                    "activation functions",
                    names[i]);
      if (i) a->activations += ',';
      a->activations.append(info->name);
      a->alphas.push_back(info->hasAlpha && ai < alphas.size() ? alphas[ai++] : info->alpha);
      a->betas.push_back(info->hasBeta && bi < betas.size() ? betas[bi++] : info->beta);
    }
    return a;
  };
}

/// Checks `t` has shape `want` (the dims in ONNX's order for the attributes' layout).
void requireShape(const TensorType& t, const Shape& want, std::string_view what) {
  if (t.shape != want)
    invalid("{} has shape {}; expected {}", what, shapeToString(t.shape), shapeToString(want));
}

InferFn inferRecurrent(RecurrentKind kind) {
  return [kind](const InferContext& ctx) -> std::vector<TensorType> {
    const auto& a = ctx.as<RecurrentAttrs>();
    const TensorType& X = ctx.in(0);
    requireFloat(X, "input X");
    requireRank(X, 3, "input X");
    int64_t seq = X.shape[a.layout ? 1 : 0], batch = X.shape[a.layout ? 0 : 1];
    int64_t input = X.shape[2], H = a.hiddenSize, D = a.directions(), G = gatesOf(kind);
    requireSameDType(X, ctx.in(1), "inputs X and W");
    requireSameDType(X, ctx.in(2), "inputs X and R");
    requireShape(ctx.in(1), {D, G * H, input}, "input W");
    requireShape(ctx.in(2), {D, G * H, H}, "input R");
    if (ctx.has(3)) {
      requireSameDType(X, ctx.in(3), "inputs X and B");
      requireShape(ctx.in(3), {D, 2 * G * H}, "input B");
    }
    if (ctx.has(4)) {
      if (ctx.in(4).dtype != DType::I32)
        invalid("input sequence_lens has element type {}; it must be int32",
                dtypeName(ctx.in(4).dtype));
      requireShape(ctx.in(4), {batch}, "input sequence_lens");
    }
    Shape state = a.layout ? Shape{batch, D, H} : Shape{D, batch, H};
    for (size_t i : {size_t(5), size_t(6)}) {
      if (i == 6 && kind != RecurrentKind::Lstm) break;
      if (!ctx.has(i)) continue;
      requireSameDType(X, ctx.in(i), i == 5 ? "inputs X and initial_h" : "inputs X and initial_c");
      requireShape(ctx.in(i), state, i == 5 ? "input initial_h" : "input initial_c");
    }
    if (kind == RecurrentKind::Lstm && ctx.has(7)) {
      requireSameDType(X, ctx.in(7), "inputs X and P");
      requireShape(ctx.in(7), {D, 3 * H}, "input P");
    }
    TensorType y = withShape(X, a.layout ? Shape{batch, seq, D, H} : Shape{seq, D, batch, H});
    std::vector<TensorType> out{y, withShape(X, state)};
    if (kind == RecurrentKind::Lstm) out.push_back(withShape(X, state));
    return out;
  };
}

EvalFn evalRecurrent(RecurrentKind kind) {
  return [kind](const EvalContext& ctx) {
    const auto& a = ctx.as<RecurrentAttrs>();
    const Tensor& Xt = ctx.in(0);
    const Shape& xs = Xt.shape();
    const int64_t seq = xs[a.layout ? 1 : 0], batch = xs[a.layout ? 0 : 1], input = xs[2];
    const int64_t H = a.hiddenSize, D = a.directions(), G = gatesOf(kind);
    const bool lstm = kind == RecurrentKind::Lstm, gru = kind == RecurrentKind::Gru;
    std::vector<double> X = Xt.toDoubleVector(), W = ctx.in(1).toDoubleVector(),
                        R = ctx.in(2).toDoubleVector();
    std::vector<double> B =
        ctx.has(3) ? ctx.in(3).toDoubleVector() : std::vector<double>(size_t(D * 2 * G * H), 0.0);
    std::vector<int64_t> lens(size_t(batch), seq);
    if (ctx.has(4)) {
      lens = ctx.in(4).toInt64Vector();
      for (int64_t b = 0; b < batch; ++b)
        if (lens[size_t(b)] < 0 || lens[size_t(b)] > seq)
          fail(ErrorKind::Runtime, "sequence_lens[{}] is {}; it must be in 0..{}", b,
               lens[size_t(b)], seq);
    }
    std::vector<double> H0 =
        ctx.has(5) ? ctx.in(5).toDoubleVector() : std::vector<double>(size_t(D * batch * H), 0.0);
    std::vector<double> C0 = lstm && ctx.has(6) ? ctx.in(6).toDoubleVector()
                                                : std::vector<double>(size_t(D * batch * H), 0.0);
    std::vector<double> P = lstm && ctx.has(7) ? ctx.in(7).toDoubleVector()
                                               : std::vector<double>(size_t(D * 3 * H), 0.0);
    std::vector<Activation> fns = activationsOf(a);
    const size_t perDir = size_t(functionsOf(kind));
    auto clip = [&](double v) {
      return a.clip ? std::clamp(v, -double(*a.clip), double(*a.clip)) : v;
    };

    // Index helpers for the two layouts.
    auto xAt = [&](int64_t t, int64_t b) {
      return X.data() + (a.layout ? (b * seq + t) * input : (t * batch + b) * input);
    };
    auto stateAt = [&](int64_t d, int64_t b) {
      return size_t(a.layout ? (b * D + d) * H : (d * batch + b) * H);
    };
    std::vector<double> Y(size_t(seq * D * batch * H), 0.0);
    auto yAt = [&](int64_t t, int64_t d, int64_t b) {
      return size_t(a.layout ? ((b * seq + t) * D + d) * H : ((t * D + d) * batch + b) * H);
    };
    std::vector<double> Yh(size_t(D * batch * H)), Yc(size_t(D * batch * H));

    const size_t HS = static_cast<size_t>(H);
    // Per-step scratch, allocated once: GRU's update/reset gates and reset state.
    std::vector<double> gates(HS * size_t(G)), h(HS), c(HS), rh(HS), z(HS), r(HS), rhv(HS);
    for (int64_t d = 0; d < D; ++d) {
      bool reverse = a.direction == RnnDirection::Reverse || d == 1;
      const double* Wd = W.data() + d * G * H * input;
      const double* Rd = R.data() + d * G * H * H;
      const double* Wb = B.data() + d * 2 * G * H;
      const double* Rb = Wb + G * H;
      const double* Pd = P.data() + d * 3 * H;
      const Activation* f = fns.data() + size_t(d) * perDir;
      for (int64_t b = 0; b < batch; ++b) {
        std::copy_n(H0.begin() + std::ptrdiff_t(stateAt(d, b)), H, h.begin());
        std::copy_n(C0.begin() + std::ptrdiff_t(stateAt(d, b)), H, c.begin());
        int64_t len = lens[size_t(b)];
        for (int64_t step = 0; step < len; ++step) {
          int64_t t = reverse ? len - 1 - step : step;
          const double* x = xAt(t, b);
          // Pre-activations of every gate: X_t W^T + Wb, plus H R^T + Rb except for GRU's
          // hidden gate when the reset applies before the recurrence.
          for (int64_t g = 0; g < G * H; ++g) {
            double s = Wb[g];
            for (int64_t i = 0; i < input; ++i)
              s += x[i] * Wd[g * input + i];
            gates[size_t(g)] = s;
          }
          auto recur = [&](int64_t g, const double* hv) {
            double s = Rb[g];
            for (int64_t i = 0; i < H; ++i)
              s += hv[i] * Rd[g * H + i];
            return s;
          };
          if (kind == RecurrentKind::Rnn) {
            for (int64_t j = 0; j < H; ++j)
              rh[size_t(j)] = f[0](clip(gates[size_t(j)] + recur(j, h.data())));
            h = rh;
          } else if (gru) { // gates z, r, h
            for (int64_t j = 0; j < H; ++j) {
              z[size_t(j)] = f[0](clip(gates[size_t(j)] + recur(j, h.data())));
              r[size_t(j)] = f[0](clip(gates[size_t(H + j)] + recur(H + j, h.data())));
            }
            for (int64_t j = 0; j < H; ++j)
              rhv[size_t(j)] = r[size_t(j)] * h[size_t(j)];
            for (int64_t j = 0; j < H; ++j) {
              double hh = a.linearBeforeReset ? r[size_t(j)] * recur(2 * H + j, h.data())
                                              : recur(2 * H + j, rhv.data());
              double ht = f[1](clip(gates[size_t(2 * H + j)] + hh));
              rh[size_t(j)] = (1 - z[size_t(j)]) * ht + z[size_t(j)] * h[size_t(j)];
            }
            h = rh;
          } else { // LSTM: gates i, o, f, c; peepholes i, o, f
            for (int64_t j = 0; j < H; ++j) {
              double gi = gates[size_t(j)] + recur(j, h.data()) + Pd[j] * c[size_t(j)];
              double go = gates[size_t(H + j)] + recur(H + j, h.data());
              double gf = gates[size_t(2 * H + j)] + recur(2 * H + j, h.data()) +
                          Pd[2 * H + j] * c[size_t(j)];
              double gc = gates[size_t(3 * H + j)] + recur(3 * H + j, h.data());
              double it = f[0](clip(gi));
              double ft = a.inputForget ? 1 - it : f[0](clip(gf));
              double ct = f[1](clip(gc));
              double cn = ft * c[size_t(j)] + it * ct;
              double ot = f[0](clip(go + Pd[H + j] * cn));
              rh[size_t(j)] = ot * f[2](cn);
              gates[size_t(3 * H + j)] = cn; // the new cell state, stored once every gate read c
            }
            for (int64_t j = 0; j < H; ++j)
              c[size_t(j)] = gates[size_t(3 * H + j)];
            h = rh;
          }
          std::copy(h.begin(), h.end(), Y.begin() + std::ptrdiff_t(yAt(t, d, b)));
        }
        std::copy(h.begin(), h.end(), Yh.begin() + std::ptrdiff_t(stateAt(d, b)));
        std::copy(c.begin(), c.end(), Yc.begin() + std::ptrdiff_t(stateAt(d, b)));
      }
    }
    auto store = [&](size_t i, const std::vector<double>& v) {
      if (i >= ctx.outputs.size()) return;
      Tensor& out = ctx.out(i);
      for (size_t e = 0; e < v.size(); ++e)
        out.setDouble(int64_t(e), v[e]);
    };
    store(0, Y);
    store(1, Yh);
    if (lstm) store(2, Yc);
  };
}

OpDef recurrentDef(OpKind kind, RecurrentKind rk) {
  bool lstm = rk == RecurrentKind::Lstm;
  return {.kind = kind,
          .minInputs = 3,
          .maxInputs = lstm ? 8 : 6,
          .minOutputs = 1,
          .maxOutputs = lstm ? 3 : 2,
          .sinceOpset = 7,
          .parse = parseRecurrent(rk),
          .infer = inferRecurrent(rk),
          .eval = evalRecurrent(rk)};
}

} // namespace

void registerRecurrentOps(OpTable& table) {
  table.add(recurrentDef(OpKind::RNN, RecurrentKind::Rnn));
  table.add(recurrentDef(OpKind::GRU, RecurrentKind::Gru));
  table.add(recurrentDef(OpKind::LSTM, RecurrentKind::Lstm));
}

} // namespace triad::ir
