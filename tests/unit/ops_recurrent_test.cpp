// RNN, GRU and LSTM: properties the ONNX node suite does not check (sequence_lens, both layouts
// with two directions, GRU's linear_before_reset, activation parameters, clip), each against a
// second computation of the same values, and the errors for malformed inputs.
#include "OpTestUtil.h"
#include "ir/ops/Recurrent.h"

#include <gtest/gtest.h>
#include <random>

using namespace triad;
using namespace triad::optest;

namespace {

Tensor uniformTensor(Shape s, uint32_t seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(size_t(ir::numElements(s)));
  for (float& x : v)
    x = u(rng);
  return Tensor::fromVector<float>(std::move(s), v);
}

/// Elements [t0, t0 + n) of axis `axis` of t.
Tensor sliceAxis(const Tensor& t, size_t axis, int64_t t0, int64_t n) {
  Shape s = t.shape();
  int64_t outer = ir::numElements(s, 0, axis), inner = ir::numElements(s, axis + 1, s.size());
  int64_t dim = s[axis];
  s[axis] = n;
  std::vector<float> out;
  const float* p = t.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = t0; i < t0 + n; ++i)
      out.insert(out.end(), p + (o * dim + i) * inner, p + (o * dim + i + 1) * inner);
  return Tensor::fromVector<float>(std::move(s), out);
}

struct Case {
  ir::OpKind kind;
  int64_t gates;
};

} // namespace

// A batch row shorter than the sequence: its outputs after its length are zero, and its final
// states equal those of running that row alone on just its steps (both directions: the reverse
// one starts at the row's last valid step).
TEST(Recurrent, SequenceLensMatchTruncatedRuns) {
  for (Case c : {Case{ir::OpKind::RNN, 1}, Case{ir::OpKind::GRU, 3}, Case{ir::OpKind::LSTM, 4}}) {
    SCOPED_TRACE(std::string(ir::opKindName(c.kind)));
    const int64_t seq = 5, batch = 2, in = 3, H = 4, D = 2;
    Tensor X = uniformTensor({seq, batch, in}, 1);
    Tensor W = uniformTensor({D, c.gates * H, in}, 2);
    Tensor R = uniformTensor({D, c.gates * H, H}, 3);
    Tensor B = uniformTensor({D, 2 * c.gates * H}, 4);
    Tensor lens = Tensor::fromVector<int32_t>({batch}, {5, 3});
    Tensor h0 = uniformTensor({D, batch, H}, 5);
    LiteralAttrs attrs{{"direction", "bidirectional"}, {"hidden_size", H}};
    int outs = c.kind == ir::OpKind::LSTM ? 3 : 2;
    std::vector<const Tensor*> inputs{&X, &W, &R, &B, &lens, &h0};
    auto full = runNode(c.kind, inputs, attrs, 22, outs);
    const Tensor& Y = full.outs[0]; // [seq, D, batch, H]
    for (int64_t t = 3; t < seq; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < H; ++j)
          EXPECT_EQ(Y.data<float>()[((t * D + d) * batch + 1) * H + j], 0.0f);

    // Row 1 alone, cut to its 3 steps.
    Tensor X1 = sliceAxis(sliceAxis(X, 1, 1, 1), 0, 0, 3);
    Tensor h01 = sliceAxis(h0, 1, 1, 1);
    std::vector<const Tensor*> alone{&X1, &W, &R, &B, nullptr, &h01};
    auto cut = runNode(c.kind, alone, attrs, 22, outs);
    expectNear(sliceAxis(full.outs[1], 1, 1, 1), cut.outs[1], 1e-6);
    expectNear(sliceAxis(sliceAxis(Y, 0, 0, 3), 2, 1, 1), cut.outs[0], 1e-6);
    if (outs == 3) expectNear(sliceAxis(full.outs[2], 1, 1, 1), cut.outs[2], 1e-6);
  }
}

// layout 1 ([batch, seq, ...]) computes the same values as layout 0, transposed.
TEST(Recurrent, BatchFirstLayoutIsATranspose) {
  const int64_t seq = 4, batch = 3, in = 2, H = 3, D = 2;
  Tensor X = uniformTensor({seq, batch, in}, 7);
  Tensor W = uniformTensor({D, 4 * H, in}, 8), R = uniformTensor({D, 4 * H, H}, 9);
  Tensor P = uniformTensor({D, 3 * H}, 10);
  LiteralAttrs attrs{{"direction", "bidirectional"}, {"hidden_size", H}};
  auto seqFirst =
      runNode(ir::OpKind::LSTM, {&X, &W, &R, nullptr, nullptr, nullptr, nullptr, &P}, attrs, 14, 3);
  // X as [batch, seq, in].
  std::vector<float> xb;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t i = 0; i < in; ++i)
        xb.push_back(X.data<float>()[(t * batch + b) * in + i]);
  Tensor XB = Tensor::fromVector<float>({batch, seq, in}, xb);
  LiteralAttrs batchFirst{
      {"direction", "bidirectional"}, {"hidden_size", H}, {"layout", int64_t(1)}};
  auto bf = runNode(ir::OpKind::LSTM, {&XB, &W, &R, nullptr, nullptr, nullptr, nullptr, &P},
                    batchFirst, 14, 3);
  ASSERT_EQ(bf.outs[0].shape(), (Shape{batch, seq, D, H}));
  ASSERT_EQ(bf.outs[1].shape(), (Shape{batch, D, H}));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < H; ++j)
          EXPECT_EQ(seqFirst.outs[0].data<float>()[((t * D + d) * batch + b) * H + j],
                    bf.outs[0].data<float>()[((b * seq + t) * D + d) * H + j]);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < H; ++j)
        EXPECT_EQ(seqFirst.outs[2].data<float>()[(d * batch + b) * H + j],
                  bf.outs[2].data<float>()[(b * D + d) * H + j]);
}

// One GRU step by hand: linear_before_reset moves the reset gate outside the recurrence, and
// the activations' alpha/beta are consumed in order by the functions that take them.
TEST(Recurrent, GruStepByHand) {
  const int64_t H = 1;
  Tensor X = Tensor::fromVector<float>({1, 1, 1}, {0.5f});
  Tensor W = Tensor::fromVector<float>({1, 3, 1}, {0.3f, -0.2f, 0.7f});
  Tensor R = Tensor::fromVector<float>({1, 3, 1}, {0.1f, 0.4f, -0.6f});
  Tensor B = Tensor::fromVector<float>({1, 6}, {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f});
  Tensor h0 = Tensor::fromVector<float>({1, 1, 1}, {0.8f});
  double x = 0.5, h = 0.8;
  for (int64_t lbr : {0, 1}) {
    // g = ScaledTanh(alpha 2, beta 0.5), f = HardSigmoid(alpha 0.3, beta 0.4): alphas
    // [0.3, 2], betas [0.4, 0.5] in function order (f, g).
    LiteralAttrs attrs{{"hidden_size", H},
                       {"linear_before_reset", lbr},
                       {"activations", std::vector<std::string>{"HardSigmoid", "ScaledTanh"}},
                       {"activation_alpha", std::vector<float>{0.3f, 2.0f}},
                       {"activation_beta", std::vector<float>{0.4f, 0.5f}}};
    auto hs = [](double v) { return std::clamp(0.3 * v + 0.4, 0.0, 1.0); };
    double zz = hs(0.3 * x + 0.1 * h + 0.01 + 0.04), rr = hs(-0.2 * x + 0.4 * h + 0.02 + 0.05);
    double pre =
        lbr ? 0.7 * x + 0.03 + rr * (-0.6 * h + 0.06) : 0.7 * x + 0.03 + (-0.6 * rr * h) + 0.06;
    double ht = 2.0 * std::tanh(0.5 * pre);
    double want = (1 - zz) * ht + zz * h;
    auto out = runNode(ir::OpKind::GRU, {&X, &W, &R, &B, nullptr, &h0}, attrs, 22, 2);
    EXPECT_NEAR(out.outs[1].data<float>()[0], want, 1e-6) << "linear_before_reset " << lbr;
  }
}

// clip bounds every gate's pre-activation: an RNN with Relu and a huge input gives the clip.
TEST(Recurrent, ClipBoundsPreActivations) {
  Tensor X = Tensor::fromVector<float>({1, 1, 1}, {100.0f});
  Tensor W = Tensor::fromVector<float>({1, 1, 1}, {1.0f});
  Tensor R = Tensor::fromVector<float>({1, 1, 1}, {0.0f});
  LiteralAttrs attrs{{"hidden_size", int64_t(1)},
                     {"clip", 2.5f},
                     {"activations", std::vector<std::string>{"Relu"}}};
  EXPECT_FLOAT_EQ(run(ir::OpKind::RNN, {&X, &W, &R}, attrs, 22).data<float>()[0], 2.5f);
}

TEST(Recurrent, MalformedInputsAreNamed) {
  Tensor X = uniformTensor({2, 1, 3}, 1);
  Tensor W = uniformTensor({1, 4, 3}, 2), R = uniformTensor({1, 4, 4}, 3);
  Tensor badW = uniformTensor({1, 4, 2}, 2);
  expectError(
      [&] {
        run(ir::OpKind::RNN, {&X, &badW, &R}, {{"hidden_size", int64_t(4)}}, 22);
      },
      ErrorKind::InvalidModel, {"input W", "[1,4,2]", "[1,4,3]"});
  expectError(
      [&] {
        run(ir::OpKind::RNN, {&X, &W, &R},
            {{"activations", std::vector<std::string>{"Tanh", "Tanh"}}}, 22);
      },
      ErrorKind::InvalidModel, {"'activations'", "2 functions", "needs 1"});
  expectError(
      [&] {
        run(ir::OpKind::RNN, {&X, &W, &R}, {{"activations", std::vector<std::string>{"Gelu"}}}, 22);
      },
      ErrorKind::Unsupported, {"'Gelu'"});
  Tensor lens = Tensor::fromVector<int32_t>({1}, {3});
  expectError(
      [&] {
        run(ir::OpKind::RNN, {&X, &W, &R, nullptr, &lens}, {}, 22);
      },
      ErrorKind::Runtime, {"sequence_lens[0] is 3", "0..2"});
}
