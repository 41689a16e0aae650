// Signal processing: window functions (Hann, Hamming, Blackman), DFT, STFT, MelWeightMatrix.
//
// Transforms are plain O(n^2) DFTs computed in double from an exact twiddle table
// (cos/sin of 2 pi j / n, indexed by k * t mod n), then rounded to the input type: slower than
// an FFT but simple and more accurate than the float FFTs of other runtimes, which suits an oracle.
#include "ir/ops/Signal.h"
#include "ir/ops/OpUtil.h"

#include <cstring>
#include <numbers>

namespace triad::ir {
using namespace ops;

namespace {

// A scalar (or one-element) shape operand; nullopt when the optional input is absent.
std::optional<double> scalarOperand(const ParseContext& ctx, size_t i, std::string_view what) {
  auto v = constDoubles(ctx, i);
  if (!v) return std::nullopt;
  if (v->size() != 1) invalid("input '{}' must hold one value, holds {}", what, v->size());
  return (*v)[0];
}

std::optional<int64_t> intOperand(const ParseContext& ctx, size_t i, std::string_view what) {
  auto v = constInts(ctx, i);
  if (!v) return std::nullopt;
  if (v->size() != 1) invalid("input '{}' must hold one value, holds {}", what, v->size());
  return (*v)[0];
}

int64_t requiredIntOperand(const ParseContext& ctx, size_t i, std::string_view what) {
  auto v = intOperand(ctx, i, what);
  if (!v) invalid("input '{}' is required", what);
  return *v;
}

// 'output_datatype' (an ONNX TensorProto data type code; default FLOAT) of the generator ops.
DType outputDType(const ParseContext& ctx) {
  int64_t code = ctx.attrs.getInt("output_datatype", 1);
  auto t = dtypeFromOnnx(int32_t(code));
  if (!t)
    unsupported("attribute 'output_datatype' {} ({}) is not supported", code,
                onnxElemTypeName(int32_t(code)));
  if (*t == DType::Bool) invalid("attribute 'output_datatype' must be numeric, is bool");
  return *t;
}

// Writes double values into a tensor of any numeric dtype (C++ conversion, like numpy astype).
void storeDoubles(Tensor& t, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    t.setDouble(int64_t(i), v[i]);
}

// ---- Windows -----------------------------------------------------------------------------------

enum class WindowKind { Hann, Hamming, Blackman };

std::shared_ptr<const Attrs> parseWindow(const ParseContext& ctx) {
  auto a = std::make_shared<WindowAttrs>();
  a->size = requiredIntOperand(ctx, 0, "size");
  if (a->size < 0) invalid("input 'size' is negative ({})", a->size);
  a->periodic = ctx.attrs.getInt("periodic", 1) != 0;
  a->dtype = outputDType(ctx);
  return a;
}

std::vector<TensorType> inferWindow(const InferContext& ctx) {
  const auto& a = ctx.as<WindowAttrs>();
  return {TensorType{a.dtype, {a.size}, {}}};
}

EvalFn windowEval(WindowKind kind) {
  return [kind](const EvalContext& ctx) {
    const auto& a = ctx.as<WindowAttrs>();
    int64_t N = a.periodic ? a.size : a.size - 1;
    std::vector<double> w(static_cast<size_t>(a.size));
    for (int64_t n = 0; n < a.size; ++n) {
      double x = N > 0 ? 2.0 * std::numbers::pi * double(n) / double(N) : 0.0;
      switch (kind) {
      case WindowKind::Hann:
        w[size_t(n)] = 0.5 - 0.5 * std::cos(x);
        break;
      case WindowKind::Hamming:
        w[size_t(n)] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x);
        break;
      case WindowKind::Blackman:
        w[size_t(n)] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x);
        break;
      }
      if (N == 0) w[size_t(n)] = 1.0; // symmetric window of one point
    }
    storeDoubles(ctx.out(0), w);
  };
}

// ---- DFT kernel --------------------------------------------------------------------------------

// out[k] = sum_{t < n} in[t] exp(-+2 pi i k t / L) for k in [0, m), (re, im) pairs; `n` <= L
// input points (the rest is the zero padding). Inverse transforms use the + sign and 1/L.
void dftLine(const double* inRe, const double* inIm, int64_t n, int64_t m, bool inverse,
             const Twiddles& tw, double* outRe, double* outIm) {
  int64_t L = tw.size();
  double sign = inverse ? 1.0 : -1.0;
  double scale = inverse ? 1.0 / double(L) : 1.0;
  for (int64_t k = 0; k < m; ++k) {
    double re = 0, im = 0;
    int64_t j = 0; // k * t mod L
    int64_t step = k % L;
    for (int64_t t = 0; t < n; ++t) {
      double c = tw.cos[size_t(j)], s = sign * tw.sin[size_t(j)];
      re += inRe[t] * c - inIm[t] * s;
      im += inRe[t] * s + inIm[t] * c;
      j += step;
      if (j >= L) j -= L;
    }
    outRe[k] = re * scale;
    outIm[k] = im * scale;
  }
}

// ---- DFT ---------------------------------------------------------------------------------------

// Opset 17: 'axis' attribute (default 1); from opset 20 'axis' is input 2 (default -2). Negative
// axes count from the back of the full shape (including the trailing [1|2] dim), so the valid
// ones are [-r, -2] and [0, r-2]. dft_length (input 1) defaults to the axis length.
std::shared_ptr<const Attrs> parseDFT(const ParseContext& ctx) {
  const TensorType& x = inputType(ctx, 0);
  int64_t r = x.rank();
  if (r < 2)
    invalid("input 'input' {} must have rank >= 2 ([batch, signal dims..., 1 or 2])",
            shapeToString(x.shape));
  auto a = std::make_shared<DFTAttrs>();
  int64_t axis;
  std::string_view what;
  if (ctx.opset >= 20) {
    axis = intOperand(ctx, 2, "axis").value_or(-2);
    what = "input 'axis'";
  } else {
    axis = ctx.attrs.getInt("axis", 1);
    what = "attribute 'axis'";
  }
  int64_t resolved = axis < 0 ? axis + r : axis;
  if (resolved < 0 || resolved > r - 2)
    invalid("{} {} is out of range for an input of rank {} (valid: {}..-2, 0..{})", what, axis, r,
            -r, r - 2);
  a->axis = resolved;
  a->length = intOperand(ctx, 1, "dft_length").value_or(x.shape[size_t(a->axis)]);
  if (a->length < 1) invalid("input 'dft_length' must be >= 1, is {}", a->length);
  a->inverse = ctx.attrs.getInt("inverse", 0) != 0;
  a->onesided = ctx.attrs.getInt("onesided", 0) != 0;
  if (a->inverse && a->onesided)
    unsupported("attribute 'onesided' = 1 with 'inverse' = 1 (complex-to-real inverse DFT) is "
                "not supported");
  return a;
}

std::vector<TensorType> inferDFT(const InferContext& ctx) {
  const auto& a = ctx.as<DFTAttrs>();
  const TensorType& x = ctx.in(0);
  requireFloat(x, "input 'input'");
  requireRankAtLeast(x, 2, "input 'input'");
  int64_t c = x.shape.back();
  if (c != 1 && c != 2)
    invalid("last dimension of input 'input' {} must be 1 (real) or 2 (complex)",
            shapeToString(x.shape));
  if (a.axis < 0 || a.axis > x.rank() - 2)
    invalid("axis {} is out of range for an input of rank {}", a.axis, x.rank());
  if (a.onesided && c == 2)
    invalid("attribute 'onesided' requires a real input (last dim 1), the input {} is complex",
            shapeToString(x.shape));
  Shape out = x.shape;
  out[size_t(a.axis)] = a.onesided ? a.length / 2 + 1 : a.length;
  out.back() = 2;
  return {TensorType{x.dtype, out, {}}};
}

void evalDFT(const EvalContext& ctx) {
  const auto& a = ctx.as<DFTAttrs>();
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const Shape& s = x.shape();
  size_t r = s.size();
  int64_t c = s.back(), n = s[size_t(a.axis)], m = y.shape()[size_t(a.axis)];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < size_t(a.axis); ++d)
    outer *= s[d];
  for (size_t d = size_t(a.axis) + 1; d + 1 < r; ++d)
    inner *= s[d];
  int64_t used = std::min(n, a.length); // input points read; the rest is zero padding
  Twiddles tw(a.length);
  std::vector<double> inRe(static_cast<size_t>(used)), inIm(static_cast<size_t>(used)),
      outRe(static_cast<size_t>(m)), outIm(static_cast<size_t>(m));
  visitFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        for (int64_t t = 0; t < used; ++t) {
          const T* p = px + ((o * n + t) * inner + e) * c;
          inRe[size_t(t)] = double(p[0]);
          inIm[size_t(t)] = c == 2 ? double(p[1]) : 0.0;
        }
        dftLine(inRe.data(), inIm.data(), used, m, a.inverse, tw, outRe.data(), outIm.data());
        for (int64_t k = 0; k < m; ++k) {
          T* q = py + ((o * m + k) * inner + e) * 2;
          q[0] = T(outRe[size_t(k)]);
          q[1] = T(outIm[size_t(k)]);
        }
      }
  });
}

// ---- STFT --------------------------------------------------------------------------------------

// ONNX inputs: signal, frame_step (shape operand), window (optional, regular: only its length
// matters for shapes), frame_length (optional shape operand). Without both, one frame spans the
// whole signal.
std::shared_ptr<const Attrs> parseSTFT(const ParseContext& ctx) {
  const TensorType& sig = inputType(ctx, 0);
  if (sig.rank() != 3)
    invalid("input 'signal' {} must have rank 3 ([batch, length, 1 or 2])",
            shapeToString(sig.shape));
  int64_t L = sig.shape[1];
  auto a = std::make_shared<STFTAttrs>();
  a->frameStep = requiredIntOperand(ctx, 1, "frame_step");
  if (a->frameStep < 1) invalid("input 'frame_step' must be >= 1, is {}", a->frameStep);
  std::optional<int64_t> winLen;
  if (ctx.hasInput(2)) {
    const TensorType& w = inputType(ctx, 2);
    if (w.rank() != 1)
      invalid("input 'window' must have rank 1, has shape {}", shapeToString(w.shape));
    winLen = w.shape[0];
  }
  auto frameLength = intOperand(ctx, 3, "frame_length");
  if (frameLength && winLen && *frameLength != *winLen)
    invalid("input 'frame_length' {} differs from the length of input 'window' {}", *frameLength,
            *winLen);
  a->frameLength = frameLength ? *frameLength : winLen ? *winLen : L;
  if (a->frameLength < 1 || a->frameLength > L)
    invalid("frame length {} must be in 1..{} (the signal length)", a->frameLength, L);
  a->onesided = ctx.attrs.getInt("onesided", 1) != 0;
  return a;
}

// IR inputs: signal [batch, L, c], window [frameLength] (optional).
std::vector<TensorType> inferSTFT(const InferContext& ctx) {
  const auto& a = ctx.as<STFTAttrs>();
  const TensorType& sig = ctx.in(0);
  requireFloat(sig, "input 'signal'");
  requireRank(sig, 3, "input 'signal'");
  int64_t c = sig.shape[2], L = sig.shape[1];
  if (c != 1 && c != 2)
    invalid("last dimension of input 'signal' {} must be 1 (real) or 2 (complex)",
            shapeToString(sig.shape));
  if (a.onesided && c == 2)
    invalid("attribute 'onesided' = 1 requires a real signal (last dim 1), the signal {} is "
            "complex",
            shapeToString(sig.shape));
  if (ctx.has(1)) {
    requireSameDType(sig, ctx.in(1), "inputs 'signal' and 'window'");
    if (ctx.in(1).shape != Shape{a.frameLength})
      invalid("input 'window' {} must have shape [{}] (the frame length)",
              shapeToString(ctx.in(1).shape), a.frameLength);
  }
  if (a.frameLength < 1 || a.frameLength > L || a.frameStep < 1)
    invalid("frame length {} / step {} do not fit the signal length {}", a.frameLength, a.frameStep,
            L);
  int64_t frames = (L - a.frameLength) / a.frameStep + 1;
  int64_t bins = a.onesided ? a.frameLength / 2 + 1 : a.frameLength;
  return {TensorType{sig.dtype, {sig.shape[0], frames, bins, 2}, {}}};
}

void evalSTFT(const EvalContext& ctx) {
  const auto& a = ctx.as<STFTAttrs>();
  const Tensor& sig = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t batch = sig.shape()[0], L = sig.shape()[1], c = sig.shape()[2];
  int64_t frames = y.shape()[1], bins = y.shape()[2], n = a.frameLength;
  Twiddles tw(n);
  std::vector<double> inRe(static_cast<size_t>(n)), inIm(static_cast<size_t>(n)),
      outRe(static_cast<size_t>(bins)), outIm(static_cast<size_t>(bins));
  visitFloat(sig.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = sig.data<T>();
    const T* pw = ctx.has(1) ? ctx.in(1).data<T>() : nullptr;
    T* py = y.data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t t = 0; t < n; ++t) {
          const T* p = px + (b * L + f * a.frameStep + t) * c;
          double w = pw ? double(pw[t]) : 1.0;
          inRe[size_t(t)] = double(p[0]) * w;
          inIm[size_t(t)] = c == 2 ? double(p[1]) * w : 0.0;
        }
        dftLine(inRe.data(), inIm.data(), n, bins, false, tw, outRe.data(), outIm.data());
        for (int64_t k = 0; k < bins; ++k) {
          T* q = py + ((b * frames + f) * bins + k) * 2;
          q[0] = T(outRe[size_t(k)]);
          q[1] = T(outIm[size_t(k)]);
        }
      }
  });
}

// ---- MelWeightMatrix ---------------------------------------------------------------------------

// All five inputs are shape operands. The triangle edges follow the ONNX reference: numMelBins + 2
// points evenly spaced in mel over [lower, upper] (step (high - low) / (numMelBins + 2)), each
// mapped to spectrogram bin floor((dft_length + 1) * hz / sample_rate).
std::shared_ptr<const Attrs> parseMelWeightMatrix(const ParseContext& ctx) {
  auto a = std::make_shared<MelWeightMatrixAttrs>();
  a->numMelBins = requiredIntOperand(ctx, 0, "num_mel_bins");
  int64_t dftLength = requiredIntOperand(ctx, 1, "dft_length");
  int64_t sampleRate = requiredIntOperand(ctx, 2, "sample_rate");
  auto lower = scalarOperand(ctx, 3, "lower_edge_hertz");
  auto upper = scalarOperand(ctx, 4, "upper_edge_hertz");
  if (!lower || !upper) invalid("inputs 'lower_edge_hertz' and 'upper_edge_hertz' are required");
  a->dtype = outputDType(ctx);
  if (a->numMelBins < 1) invalid("input 'num_mel_bins' must be >= 1, is {}", a->numMelBins);
  if (dftLength < 1) invalid("input 'dft_length' must be >= 1, is {}", dftLength);
  if (sampleRate < 1) invalid("input 'sample_rate' must be >= 1, is {}", sampleRate);
  if (!(*lower >= 0.0) || !(*upper >= *lower))
    invalid("inputs 'lower_edge_hertz' {} and 'upper_edge_hertz' {} must satisfy "
            "0 <= lower <= upper",
            *lower, *upper);
  a->numSpectrogramBins = dftLength / 2 + 1;
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  double lowMel = toMel(*lower), highMel = toMel(*upper);
  int64_t points = a->numMelBins + 2;
  double step = (highMel - lowMel) / double(points);
  for (int64_t i = 0; i < points; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * step + lowMel) / 2595.0) - 1.0);
    a->bins.push_back(int64_t(std::floor(double(dftLength + 1) * hz / double(sampleRate))));
  }
  // Bins never decrease; centres must address a row and right edges may be one past the end.
  if (a->bins[size_t(points - 2)] >= a->numSpectrogramBins ||
      a->bins[size_t(points - 1)] > a->numSpectrogramBins)
    invalid("input 'upper_edge_hertz' {} maps past the {} spectrogram bins of a {}-point DFT at "
            "sample rate {}",
            *upper, a->numSpectrogramBins, dftLength, sampleRate);
  return a;
}

std::vector<TensorType> inferMelWeightMatrix(const InferContext& ctx) {
  const auto& a = ctx.as<MelWeightMatrixAttrs>();
  if (int64_t(a.bins.size()) != a.numMelBins + 2)
    invalid("{} band edges for {} mel bins", a.bins.size(), a.numMelBins);
  return {TensorType{a.dtype, {a.numSpectrogramBins, a.numMelBins}, {}}};
}

void evalMelWeightMatrix(const EvalContext& ctx) {
  const auto& a = ctx.as<MelWeightMatrixAttrs>();
  int64_t M = a.numMelBins;
  std::vector<double> w(size_t(a.numSpectrogramBins * M), 0.0);
  auto at = [&](int64_t row, int64_t col) -> double& { return w[size_t(row * M + col)]; };
  for (int64_t i = 0; i < M; ++i) {
    int64_t lo = a.bins[size_t(i)], mid = a.bins[size_t(i + 1)], hi = a.bins[size_t(i + 2)];
    if (mid == lo)
      at(mid, i) = 1.0;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = double(j - lo) / double(mid - lo);
    for (int64_t j = mid; j < hi; ++j)
      at(j, i) = double(hi - j) / double(hi - mid);
  }
  storeDoubles(ctx.out(0), w);
}

} // namespace

void registerSignalOps(OpTable& table) {
  auto window = [&](OpKind kind, WindowKind wk) {
    table.add({.kind = kind,
               .minInputs = 1,
               .maxInputs = 1,
               .shapeOperands = {0},
               .sinceOpset = 17,
               .parse = parseWindow,
               .infer = inferWindow,
               .eval = windowEval(wk)});
  };
  window(OpKind::HannWindow, WindowKind::Hann);
  window(OpKind::HammingWindow, WindowKind::Hamming);
  window(OpKind::BlackmanWindow, WindowKind::Blackman);
  table.add({.kind = OpKind::DFT,
             .minInputs = 1,
             .maxInputs = 3,
             .shapeOperands = {1, 2},
             .sinceOpset = 17,
             .parse = parseDFT,
             .infer = inferDFT,
             .eval = evalDFT});
  table.add({.kind = OpKind::STFT,
             .minInputs = 2,
             .maxInputs = 4,
             .shapeOperands = {1, 3},
             .sinceOpset = 17,
             .parse = parseSTFT,
             .infer = inferSTFT,
             .eval = evalSTFT});
  table.add({.kind = OpKind::MelWeightMatrix,
             .minInputs = 5,
             .maxInputs = 5,
             .shapeOperands = {0, 1, 2, 3, 4},
             .sinceOpset = 17,
             .parse = parseMelWeightMatrix,
             .infer = inferMelWeightMatrix,
             .eval = evalMelWeightMatrix});
}

} // namespace triad::ir
