// Attributes of the signal-processing ops (HannWindow, HammingWindow, BlackmanWindow, DFT, STFT,
// MelWeightMatrix), shared by every target's lowering.
//
// All lengths that set output shapes (window size, dft_length, frame_step, frame_length, the
// MelWeightMatrix inputs) are shape operands and are folded in here at import.
#pragma once

#include "ir/Attrs.h"
#include "ir/OpDef.h"

#include <cmath>
#include <numbers>
#include <vector>

namespace triad::ir {

/// HannWindow, HammingWindow, BlackmanWindow: `size` points of the window as `dtype`. With
/// N = size (periodic) or size - 1 (symmetric):
///   Hann     0.5 - 0.5 cos(2 pi n / N)
///   Hamming  25/46 - 21/46 cos(2 pi n / N)
///   Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
/// A symmetric window of size 1 is [1].
struct WindowAttrs : AttrsOf<WindowAttrs> {
  int64_t size = 0;
  bool periodic = true;
  DType dtype = DType::F32;
  template <class F> void fields(F&& f) const {
    f("size", size);
    f("periodic", periodic);
    f("dtype", dtypeName(dtype));
  }
};

/// DFT of input [batch, n1, ..., nk, c] (c = 1 real, 2 complex) along `axis` (in [0, rank-2]),
/// with the signal zero-padded or truncated to `length` points. Output: the input shape with
/// dim `axis` = length (or length/2 + 1 when onesided) and last dim 2 (real, imaginary).
/// inverse: x[t] = 1/length * sum_k X[k] exp(+2 pi i k t / length).
struct DFTAttrs : AttrsOf<DFTAttrs> {
  int64_t axis = 1;
  int64_t length = 0;
  bool inverse = false;
  bool onesided = false;
  template <class F> void fields(F&& f) const {
    f("axis", axis);
    f("length", length);
    f("inverse", inverse);
    f("onesided", onesided);
  }
};

/// STFT of signal [batch, L, c]: frames start every `frameStep` samples, each `frameLength`
/// samples long (times the window when given), frames = (L - frameLength) / frameStep + 1.
/// Output [batch, frames, frameLength (or frameLength/2 + 1 when onesided), 2].
struct STFTAttrs : AttrsOf<STFTAttrs> {
  int64_t frameStep = 1;
  int64_t frameLength = 0;
  bool onesided = true;
  template <class F> void fields(F&& f) const {
    f("frameStep", frameStep);
    f("frameLength", frameLength);
    f("onesided", onesided);
  }
};

/// MelWeightMatrix [dftLength/2 + 1, numMelBins] as `dtype`. `bins` (numMelBins + 2 values) are
/// the spectrogram bins of the triangle edges, computed at import from sample_rate and the
/// edge frequencies: mel band i rises from bins[i] to 1 at bins[i+1] and falls to bins[i+2].
struct MelWeightMatrixAttrs : AttrsOf<MelWeightMatrixAttrs> {
  int64_t numMelBins = 0;
  int64_t numSpectrogramBins = 0;
  std::vector<int64_t> bins;
  DType dtype = DType::F32;
  template <class F> void fields(F&& f) const {
    f("numMelBins", numMelBins);
    f("numSpectrogramBins", numSpectrogramBins);
    f("bins", bins);
    f("dtype", dtypeName(dtype));
  }
};

namespace ops {

/// The DFTs' twiddle table: cos and sin of 2 pi j / n for j in [0, n), in double. A transform
/// of length n reads entry k * t mod n for output k and input point t.
struct Twiddles {
  std::vector<double> cos, sin;
  explicit Twiddles(int64_t n) : cos(size_t(n)), sin(static_cast<size_t>(n)) {
    for (int64_t j = 0; j < n; ++j) {
      double x = 2.0 * std::numbers::pi * double(j) / double(n);
      cos[size_t(j)] = std::cos(x);
      sin[size_t(j)] = std::sin(x);
    }
  }
  int64_t size() const { return int64_t(cos.size()); }
};

} // namespace ops

} // namespace triad::ir
