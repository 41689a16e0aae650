// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// Convolution on NCHW tensors: direct, depthwise and implicit-GEMM kernels, weight packing.
#pragma once

#include "triad_gemm.h"

namespace triad_rt {

// ============================================================================================
// Convolution, NCHW: y[N, OC, OH, OW] = conv(x[N, C, H, W], w[OC, C/group, KH, KW]), then
// epi(float* c, int oc, int p0, int n) on each finished segment y[n, oc, p0 .. p0+n) of an
// output plane (p = oh * OW + ow). The offset c - y locates the same element in any tensor of
// y's shape (residual adds). Algorithms by shape:
//   pointwise (1x1, stride 1, no pad; one image or large planes): per image and group,
//     y = W[OCg, Cg] * x[Cg, H*W] with x read in place;
//   depthwise (group == C, any channel multiplier): a direct vectorised kernel on the grid
//     layout below, one (image, channel) plane at a time;
//   implicit (everything else): a GEMM whose B operand is read straight from the grid layout
//     (each im2col row is a shifted run of a grid plane, so no im2col copy), several images per
//     GEMM when the planes are small.
//
// The grid layout. A convolution with stride (sh, sw) reads the zero-padded input xpad at rows
// oh*sh + kh*dh. Split xpad into its stride phases, plane(a, b)[i][j] = xpad[i*sh + a][j*sw + b]
// (Hq x Wq each, zeros past the pads), and stack the images of one phase: column
// g = n*Hq*Wq + i*Wq + j. Output (oh, ow) of image n is then computed at column
// g = n*Hq*Wq + oh*Wq + ow, and tap (kh, kw) reads phase ((kh*dh) % sh, (kw*dw) % sw) at column
// g + (kh*dh / sh) * Wq + (kw*dw / sw): one contiguous shifted run per tap for every output.
// Columns with oh >= OH or ow >= OW are computed too and dropped (they read only the planes'
// zero slack or a neighbour's pixels). Only the phases some tap reads are built.
// ============================================================================================

struct Conv2dShape {
  int N = 1, C = 1, H = 1, W = 1; // input
  int OC = 1, KH = 1, KW = 1;     // output channels, kernel
  int group = 1;
  int stride_h = 1, stride_w = 1;
  int dil_h = 1, dil_w = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0; // begin/end pads per axis (asymmetric ok)
  int OH() const { return (H + pad_t + pad_b - dil_h * (KH - 1) - 1) / stride_h + 1; }
  int OW() const { return (W + pad_l + pad_r - dil_w * (KW - 1) - 1) / stride_w + 1; }
  int Cg() const { return C / group; }
  int OCg() const { return OC / group; }
  int Kg() const { return Cg() * KH * KW; }
};

enum class ConvAlgo { Pointwise, Depthwise, Implicit, Direct };

/// Convolutions this small (multiply-adds per image) run direct when unpadded, stride 1 and
/// dense.
constexpr double kDirectMaxMacs = 1 << 16;

inline ConvAlgo conv2d_algo(const Conv2dShape& s) {
  if (s.group == s.C && s.group > 1 && s.Cg() == 1) return ConvAlgo::Depthwise;
  if (s.group == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 && s.pad_l == 0 &&
      s.pad_b == 0 && s.pad_r == 0 && s.OC <= 64 &&
      static_cast<double>(s.OC) * s.OH() * s.OW() * s.Kg() <= kDirectMaxMacs)
    return ConvAlgo::Direct;
  if (s.KH == 1 && s.KW == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 &&
      s.pad_l == 0 && s.pad_b == 0 && s.pad_r == 0 &&
      (s.N == 1 || static_cast<ptrdiff_t>(s.H) * s.W >= 1024))
    return ConvAlgo::Pointwise;
  return ConvAlgo::Implicit;
}

namespace detail {
/// The grid layout of one convolution for `images` images (see above).
struct ConvGrid {
  int sh, sw, Hq, Wq, images;
  int nrow, ncol;   // phases some tap reads, per axis
  ptrdiff_t G;      // columns: images * Hq * Wq
  ptrdiff_t stride; // floats per (channel, phase) plane: G + slack, a multiple of 16
  ptrdiff_t chan;   // floats per channel: nrow * ncol * stride
};

/// Slot of phase `a` among the distinct phases (k * dil) % stride, k < K, in order of first
/// appearance; -1 when no tap reads it (phase_count: how many are read).
inline int phase_slot(int a, int K, int dil, int stride) {
  int slot = 0;
  for (int k = 0; k < K; ++k) {
    int pk = k * dil % stride;
    bool first = true;
    for (int j = 0; j < k && first; ++j)
      first = j * dil % stride != pk;
    if (!first) continue;
    if (pk == a) return slot;
    ++slot;
  }
  return -1;
}
inline int phase_count(int K, int dil, int stride) {
  int n = 0;
  for (int a = 0; a < stride; ++a)
    n += phase_slot(a, K, dil, stride) >= 0;
  return n;
}

inline ConvGrid conv_grid(const Conv2dShape& s, int images) {
  ConvGrid gd;
  gd.sh = s.stride_h, gd.sw = s.stride_w, gd.images = images;
  gd.Hq = (s.H + s.pad_t + s.pad_b + s.stride_h - 1) / s.stride_h;
  gd.Wq = (s.W + s.pad_l + s.pad_r + s.stride_w - 1) / s.stride_w;
  gd.nrow = phase_count(s.KH, s.dil_h, s.stride_h);
  gd.ncol = phase_count(s.KW, s.dil_w, s.stride_w);
  gd.G = static_cast<ptrdiff_t>(images) * gd.Hq * gd.Wq;
  // Columns read past the last one: the largest tap shift plus the kernels' vector overrun.
  const ptrdiff_t shift = static_cast<ptrdiff_t>((s.KH - 1) * s.dil_h / s.stride_h) * gd.Wq +
                          (s.KW - 1) * s.dil_w / s.stride_w;
  gd.stride = (gd.G + shift + 4 * kW + 15) / 16 * 16;
  gd.chan = gd.stride * gd.nrow * gd.ncol;
  return gd;
}
/// Offset of tap (kh, kw) from a channel's grid start.
inline ptrdiff_t grid_tap(const Conv2dShape& s, const ConvGrid& gd, int kh, int kw) {
  const int ra = phase_slot(kh * s.dil_h % s.stride_h, s.KH, s.dil_h, s.stride_h);
  const int cb = phase_slot(kw * s.dil_w % s.stride_w, s.KW, s.dil_w, s.stride_w);
  return (ra * gd.ncol + cb) * gd.stride +
         static_cast<ptrdiff_t>(kh * s.dil_h / s.stride_h) * gd.Wq + kw * s.dil_w / s.stride_w;
}

/// xrow[q .. q + kW) with the lanes outside [lo, hi) zero; reads xrow only inside [lo, hi).
inline vf vload_in(const float* xrow, int q, int lo, int hi) {
  if (q >= lo && q + kW <= hi) return vload(xrow + q);
  return vload_lanes(xrow + q, lo - q, hi - q);
}
/// d[j] = xrow[j] for j in [lo, hi), 0 elsewhere in [0, n); reads xrow only inside [lo, hi).
/// Writes d only inside [0, room) (room >= n): with room past n, the last vector is stored
/// whole (the caller rewrites or owns d[n, room): rows filled in order overwrite the previous
/// row's overrun) instead of masked, which is slow on some cores (Zen 4/5) and is every row's
/// only store on small planes.
inline void fill_row(float* d, const float* xrow, int lo, int hi, int n, ptrdiff_t room = 0) {
  int j = 0;
  for (; j + kW <= n; j += kW)
    vstore(d + j, vload_in(xrow, j, lo, hi));
  if (j < n) {
    if (j + kW <= room)
      vstore(d + j, vload_in(xrow, j, lo, hi));
    else
      vstore_lanes(d + j, vload_in(xrow, j, lo, hi), n - j);
  }
}
/// Copies rows src[r * sstride .. + n) to d[r * n ..) for r < rows (a plane's valid columns);
/// writes nothing past d[rows * n).
inline void copy_rows(float* d, const float* src, ptrdiff_t sstride, int rows, int n) {
  for (int r = 0; r < rows; ++r)
    fill_row(d + static_cast<ptrdiff_t>(r) * n, src + r * sstride, 0, n, n,
             static_cast<ptrdiff_t>(rows - r) * n);
}
/// e[j] = xrow[2j], o[j] = xrow[2j + 1] for j in [0, n) (either may be null), with xrow's
/// elements outside [lo, hi) read as 0 (and not read).
inline void deinterleave2(const float* xrow, int lo, int hi, float* e, float* o, int n) {
  int j = 0;
#if defined(__AVX512F__)
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
  for (; j < n; j += 16) {
    const __m512 v0 = vload_in(xrow, 2 * j, lo, hi), v1 = vload_in(xrow, 2 * j + 16, lo, hi);
    const int m = std::min(16, n - j);
    if (m == 16) {
      if (e) _mm512_storeu_ps(e + j, _mm512_permutex2var_ps(v0, ie, v1));
      if (o) _mm512_storeu_ps(o + j, _mm512_permutex2var_ps(v0, io, v1));
    } else {
      if (e) vstore_lanes(e + j, _mm512_permutex2var_ps(v0, ie, v1), m);
      if (o) vstore_lanes(o + j, _mm512_permutex2var_ps(v0, io, v1), m);
    }
  }
#endif
  for (; j < n; ++j) {
    const int q = 2 * j;
    if (e) e[j] = q >= lo && q < hi ? xrow[q] : 0.0f;
    if (o) o[j] = q + 1 >= lo && q + 1 < hi ? xrow[q + 1] : 0.0f;
  }
}

/// Writes image `n`'s part of every phase plane of one input channel xc[H, W] into the
/// channel's grid dst (phase planes `gd.stride` apart), and zeroes the slack after the last
/// image when `n` is the last.
inline void grid_fill(const Conv2dShape& s, const ConvGrid& gd, const float* xc, int n,
                      float* dst) {
  const ptrdiff_t imgoff = static_cast<ptrdiff_t>(n) * gd.Hq * gd.Wq;
  const int L = gd.Wq * gd.sw; // a padded input row, rounded up to whole strides
  float* tmp = gd.sw > 2 ? tls_buffer(5, static_cast<size_t>(L)) : nullptr;
  for (int a = 0; a < gd.sh; ++a) {
    const int ra = phase_slot(a, s.KH, s.dil_h, s.stride_h);
    if (ra < 0) continue;
    float* planes = dst + ra * gd.ncol * gd.stride + imgoff; // phase (a, slot 0), this image
    for (int i = 0; i < gd.Hq; ++i) {
      const ptrdiff_t rowoff = static_cast<ptrdiff_t>(i) * gd.Wq;
      const int ih = i * gd.sh + a - s.pad_t;
      const bool inside = ih >= 0 && ih < s.H;
      // The padded row: column q holds x[ih, q - pad_l].
      const float* xrow = xc + static_cast<ptrdiff_t>(inside ? ih : 0) * s.W - s.pad_l;
      const int lo = inside ? s.pad_l : 0, hi = inside ? s.pad_l + s.W : 0;
      if (gd.sw == 1) {
        // Overrun into the next row (filled next) or into the slack after the last image;
        // not into the next image, which another thread may be filling.
        const ptrdiff_t room =
            static_cast<ptrdiff_t>(gd.Hq - i) * gd.Wq + (n == gd.images - 1 ? gd.stride - gd.G : 0);
        fill_row(planes + rowoff, xrow, lo, hi, gd.Wq, room);
        continue;
      }
      if (gd.sw == 2) {
        const int ce = phase_slot(0, s.KW, s.dil_w, 2), co = phase_slot(1, s.KW, s.dil_w, 2);
        deinterleave2(xrow, lo, hi, ce < 0 ? nullptr : planes + ce * gd.stride + rowoff,
                      co < 0 ? nullptr : planes + co * gd.stride + rowoff, gd.Wq);
        continue;
      }
      fill_row(tmp, xrow, lo, std::min(hi, L), L);
      for (int b = 0; b < gd.sw; ++b) {
        const int cb = phase_slot(b, s.KW, s.dil_w, s.stride_w);
        if (cb < 0) continue;
        float* d = planes + cb * gd.stride + rowoff;
        for (int j = 0; j < gd.Wq; ++j)
          d[j] = tmp[j * gd.sw + b];
      }
    }
  }
  if (n == gd.images - 1)
    for (int p = 0; p < gd.nrow * gd.ncol; ++p)
      std::memset(dst + p * gd.stride + gd.G, 0, sizeof(float) * (gd.stride - gd.G));
}

/// Depthwise outputs out[oh * Wq + g .. + kW) for R output rows from oh0 and every g < Wq (step
/// kW), K x K kernel, stride S, dilation 1: each grid row is loaded once per block of R rows and
/// used for every (row, tap) that reads it. Vectors past a row's end compute the next row's
/// first columns (the same values), so nothing is masked.
template <int K, int S, int R>
inline void dw_rows(const ConvGrid& gd, const float* grid, const vf* wv, int oh0, float* out) {
  constexpr int ncol = S < K ? S : K;
  for (int g = 0; g < gd.Wq; g += kW) {
    vf acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      acc[r] = vzero();
#pragma GCC unroll 16
    for (int pr = 0; pr < S * (R - 1) + K; ++pr) {
      // Padded input row S*oh0 + pr: phase pr % S, grid row oh0 + pr / S.
      const float* row =
          grid + (pr % S) * ncol * gd.stride + static_cast<ptrdiff_t>(oh0 + pr / S) * gd.Wq + g;
      vf in[K];
#pragma GCC unroll 8
      for (int kw = 0; kw < K; ++kw)
        in[kw] = vload(row + (kw % S) * gd.stride + kw / S);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const int kh = pr - S * r;
        if (kh < 0 || kh >= K) continue;
#pragma GCC unroll 8
        for (int kw = 0; kw < K; ++kw)
          acc[r] = vfma(wv[kh * K + kw], in[kw], acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      vstore(out + static_cast<ptrdiff_t>(oh0 + r) * gd.Wq + g, acc[r]);
  }
}
/// All OH output rows with dw_rows, 4 rows at a time.
template <int K, int S>
inline void dw_plane(const ConvGrid& gd, const float* grid, const float* w, int OH, float* out) {
  vf wv[K * K];
  for (int t = 0; t < K * K; ++t)
    wv[t] = vset1(w[t]);
  int oh = 0;
  for (; oh + 4 <= OH; oh += 4)
    dw_rows<K, S, 4>(gd, grid, wv, oh, out);
  switch (OH - oh) {
  case 3:
    dw_rows<K, S, 3>(gd, grid, wv, oh, out);
    break;
  case 2:
    dw_rows<K, S, 2>(gd, grid, wv, oh, out);
    break;
  case 1:
    dw_rows<K, S, 1>(gd, grid, wv, oh, out);
    break;
  default:
    break;
  }
}
/// The depthwise shapes with register-blocked kernels: square 3x3 and 5x5 kernels at stride 1
/// or 2 without dilation (MobileNet's and EfficientNet's). Returns pick(K, S) (K and S as
/// std::integral_constant<int, .>) for those, null for other shapes.
template <class Fn, class Pick> Fn square_dw_kernel(const Conv2dShape& s, Pick pick) {
  if (s.KH != s.KW || s.stride_h != s.stride_w || s.dil_h != 1 || s.dil_w != 1) return nullptr;
  using I3 = std::integral_constant<int, 3>;
  using I5 = std::integral_constant<int, 5>;
  using S1 = std::integral_constant<int, 1>;
  using S2 = std::integral_constant<int, 2>;
  const int k = s.KH, st = s.stride_w;
  if (k == 3 && st == 1) return pick(I3{}, S1{});
  if (k == 3 && st == 2) return pick(I3{}, S2{});
  if (k == 5 && st == 1) return pick(I5{}, S1{});
  if (k == 5 && st == 2) return pick(I5{}, S2{});
  return nullptr;
}

using DwPlaneFn = void (*)(const ConvGrid&, const float*, const float*, int, float*);
/// The register-blocked plane kernel for this shape, or null (generic tap loop).
inline DwPlaneFn dw_plane_for(const Conv2dShape& s) {
  return square_dw_kernel<DwPlaneFn>(s, [](auto k, auto st) -> DwPlaneFn {
    return &dw_plane<decltype(k)::value, decltype(st)::value>;
  });
}

/// Depthwise convolution: output channel oc reads input channel oc / (OC / C). Per (image,
/// input channel): build its grid (thread-local), then every output of the plane is
/// sum_t w[t] * grid[g + tap_t], four vectors at a time, and the valid columns are copied out.
/// Vectors of output channels the direct kernel computes (OC <= 64 rounded up to 1, 2, 4 or
/// all the vectors 64 channels take); its packed weights hold direct_nv(s) * kW channels.
constexpr int kDirectMaxNV = (64 + kW - 1) / kW;
inline int direct_nv(const Conv2dShape& s) {
  const int nv = (s.OC + kW - 1) / kW;
  return nv <= 1 ? 1 : nv <= 2 ? 2 : nv <= 4 && kDirectMaxNV >= 4 ? 4 : kDirectMaxNV;
}

/// Direct convolution for tiny layers (ConvAlgo::Direct): output channels across the vector
/// lanes (weights packed [C][KH][KW][direct_nv * kW]), PB output pixels at a time (independent
/// accumulators), no set-up beyond the pixels' input pointers. Writes NCHW through a small
/// transpose, then runs the epilogue once per output plane.
template <int NVt, class Epi>
void direct_conv2d_nv(const Conv2dShape& s, const float* x, const float* w, float* y, Epi& epi) {
  constexpr int PB = NVt <= 2 ? 8 : NVt <= 4 ? 6 : NVt <= 8 ? 3 : 1;
  const int OH = s.OH(), OW = s.OW();
  const ptrdiff_t P = static_cast<ptrdiff_t>(OH) * OW, HW = static_cast<ptrdiff_t>(s.H) * s.W;
  // Images go to the threads when there are enough of them.
  parallel_for(s.N, static_cast<double>(s.OC) * P * s.Kg(), [&](ptrdiff_t n) {
    alignas(64) float tile[PB][NVt * kW];
    const float* xn = x + n * s.C * HW;
    float* yn = y + n * s.OC * P;
    for (ptrdiff_t p0 = 0; p0 < P; p0 += PB) {
      const int pb = static_cast<int>(std::min<ptrdiff_t>(PB, P - p0));
      const float* xp[PB];
      for (int i = 0; i < PB; ++i) {
        const ptrdiff_t p = p0 + std::min(i, pb - 1); // past the end: repeat the last pixel
        xp[i] = xn + (p / OW) * s.W + p % OW;
      }
      vf r[PB][NVt];
      init_rows(r, nullptr);
      const float* wk = w;
      for (int c = 0; c < s.C; ++c)
        for (int kh = 0; kh < s.KH; ++kh)
          for (int kw = 0; kw < s.KW; ++kw) {
            const ptrdiff_t off = c * HW + static_cast<ptrdiff_t>(kh) * s.dil_h * s.W +
                                  static_cast<ptrdiff_t>(kw) * s.dil_w;
            outer_step(r, wk, [&xp, off](int i) { return xp[i][off]; });
            wk += NVt * kW;
          }
#pragma GCC unroll 8
      for (int i = 0; i < PB; ++i)
#pragma GCC unroll 8
        for (int v = 0; v < NVt; ++v)
          vstore(&tile[i][v * kW], r[i][v]);
      for (int oc = 0; oc < s.OC; ++oc)
        for (int i = 0; i < pb; ++i)
          yn[oc * P + p0 + i] = tile[i][oc];
    }
    for (int oc = 0; oc < s.OC; ++oc)
      epi(yn + oc * P, oc, 0, static_cast<int>(P));
  });
}

template <class Epi>
void direct_conv2d(const Conv2dShape& s, const float* x, const float* w, float* y, Epi& epi) {
  switch (direct_nv(s)) {
  case 1:
    return direct_conv2d_nv<1>(s, x, w, y, epi);
  case 2:
    return direct_conv2d_nv<2>(s, x, w, y, epi);
  case 4:
    return direct_conv2d_nv<(kDirectMaxNV >= 4 ? 4 : kDirectMaxNV)>(s, x, w, y, epi);
  default:
    return direct_conv2d_nv<kDirectMaxNV>(s, x, w, y, epi);
  }
}

template <class Epi>
void depthwise_conv2d(const Conv2dShape& s, const float* x, const float* w, float* y, Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), mult = s.OCg(), T = s.KH * s.KW;
  const ConvGrid gd = conv_grid(s, 1);
  const ptrdiff_t cols = static_cast<ptrdiff_t>(OH) * gd.Wq; // grid columns holding outputs
  const ptrdiff_t ocols = (cols + 4 * kW - 1) / (4 * kW) * (4 * kW);
  const ptrdiff_t P = static_cast<ptrdiff_t>(OH) * OW;
  const DwPlaneFn blocked = dw_plane_for(s);
  constexpr int kMaxTaps = 64;
  ptrdiff_t taps_local[kMaxTaps];
  std::vector<ptrdiff_t> taps_heap;
  ptrdiff_t* taps = taps_local;
  if (T > kMaxTaps) {
    taps_heap.resize(static_cast<size_t>(T));
    taps = taps_heap.data();
  }
  for (int kh = 0; kh < s.KH; ++kh)
    for (int kw = 0; kw < s.KW; ++kw)
      taps[kh * s.KW + kw] = grid_tap(s, gd, kh, kw);
  const ptrdiff_t items = static_cast<ptrdiff_t>(s.N) * s.C;
  parallel_for(items, static_cast<double>(cols) * T * mult, [&](ptrdiff_t item) {
    const int n = static_cast<int>(item / s.C), ic = static_cast<int>(item % s.C);
    float* grid = tls_buffer(3, static_cast<size_t>(gd.chan));
    float* out = tls_buffer(4, static_cast<size_t>(ocols + kW));
    grid_fill(s, gd, x + (static_cast<ptrdiff_t>(n) * s.C + ic) * s.H * s.W, 0, grid);
    for (int m = 0; m < mult; ++m) {
      const int oc = ic * mult + m;
      const float* wp = w + static_cast<ptrdiff_t>(oc) * T;
      if (blocked) {
        blocked(gd, grid, wp, OH, out);
      } else {
        for (ptrdiff_t g = 0; g < ocols; g += 4 * kW) {
          vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
          for (int t = 0; t < T; ++t) {
            const vf wv = vset1(wp[t]);
            const float* p = grid + taps[t] + g;
            a0 = vfma(wv, vload(p), a0);
            a1 = vfma(wv, vload(p + kW), a1);
            a2 = vfma(wv, vload(p + 2 * kW), a2);
            a3 = vfma(wv, vload(p + 3 * kW), a3);
          }
          vstore(out + g, a0);
          vstore(out + g + kW, a1);
          vstore(out + g + 2 * kW, a2);
          vstore(out + g + 3 * kW, a3);
        }
      }
      float* yp = y + (static_cast<ptrdiff_t>(n) * s.OC + oc) * P;
      copy_rows(yp, out, gd.Wq, OH, OW);
      epi(yp, oc, 0, static_cast<int>(P)); // one call per plane: long vector loops
    }
  });
}

/// How the implicit GEMM runs: `images` per GEMM (enough for ~4096 columns, at most all), and
/// whether its columns are the grid's (contiguous panels, invalid columns computed and dropped)
/// or only the valid outputs ("compact": panels gathered through a column map), chosen when the
/// grid would need over 10 % more column panels (small planes: 7x7 outputs on a 9x9 grid).
struct ImplicitPlan {
  int images;
  bool compact;
};
inline ImplicitPlan implicit_plan(const Conv2dShape& s) {
  const ptrdiff_t plane = conv_grid(s, 1).G;
  ImplicitPlan pl;
  pl.images = static_cast<int>(std::max<ptrdiff_t>(1, std::min<ptrdiff_t>(s.N, 4096 / plane)));
  const ptrdiff_t gridPanels = (pl.images * plane + kNR - 1) / kNR;
  const ptrdiff_t validPanels =
      (pl.images * static_cast<ptrdiff_t>(s.OH()) * s.OW() + kNR - 1) / kNR;
  // Gathering costs about a load per element, less than a tenth of the extra panels' work even
  // with few output channels (digits_cnn: 16).
  pl.compact = gridPanels * 10 > validPanels * 11;
  return pl;
}

/// Where the implicit GEMM's buffers lie in the caller's scratch, for `images` images: the grid
/// of one group's channels, the GEMM's output (columns: the grid's, or the valid outputs when
/// compact), the im2col row pointers and the compact column map, each 64-byte aligned. `end` is
/// one past the last byte (offsets from 0 when `scratch` is null: conv2d_scratch_bytes).
struct ImplicitScratch {
  float* grid;
  float* c;
  const float** rows;
  int* colmap;
  uintptr_t end;
};
inline ImplicitScratch implicit_scratch(const Conv2dShape& s, const ImplicitPlan& plan,
                                        const ConvGrid& gd, void* scratch) {
  auto align = [](uintptr_t p) { return (p + 63) / 64 * 64; };
  const size_t ncols =
      plan.compact ? static_cast<size_t>(gd.images) * s.OH() * s.OW() : static_cast<size_t>(gd.G);
  ImplicitScratch m;
  const uintptr_t grid = align(reinterpret_cast<uintptr_t>(scratch));
  const uintptr_t c = align(grid + sizeof(float) * static_cast<size_t>(s.Cg()) * gd.chan);
  const uintptr_t rows = align(c + sizeof(float) * static_cast<size_t>(s.OCg()) * ncols);
  const uintptr_t colmap = align(rows + sizeof(float*) * static_cast<size_t>(s.Kg()));
  m.grid = reinterpret_cast<float*>(grid);
  m.c = reinterpret_cast<float*>(c);
  m.rows = reinterpret_cast<const float**>(rows);
  m.colmap = reinterpret_cast<int*>(colmap);
  m.end = colmap + (plan.compact ? sizeof(int) * ncols : 0);
  return m;
}
} // namespace detail

/// Floats of the packed weights (conv2d_pack_weights).
inline size_t conv2d_packed_weights_size(const Conv2dShape& s) {
  if (conv2d_algo(s) == ConvAlgo::Depthwise) return static_cast<size_t>(s.OC) * s.KH * s.KW;
  if (conv2d_algo(s) == ConvAlgo::Direct)
    return static_cast<size_t>(detail::direct_nv(s)) * kW * s.Kg();
  return static_cast<size_t>(s.group) * packed_a_size(s.OCg(), s.Kg());
}
/// Packs w[OC, C/group, KH, KW] for conv2d (once, at model load).
inline void conv2d_pack_weights(const Conv2dShape& s, const float* w, float* dst) {
  if (conv2d_algo(s) == ConvAlgo::Depthwise) {
    std::memcpy(dst, w, sizeof(float) * conv2d_packed_weights_size(s));
    return;
  }
  if (conv2d_algo(s) == ConvAlgo::Direct) {
    const int ocp = detail::direct_nv(s) * kW, K = s.Kg();
    for (int k = 0; k < K; ++k)
      for (int oc = 0; oc < ocp; ++oc)
        dst[static_cast<size_t>(k) * ocp + oc] =
            oc < s.OC ? w[static_cast<size_t>(oc) * K + k] : 0.0f;
    return;
  }
  size_t per_group = packed_a_size(s.OCg(), s.Kg());
  for (int g = 0; g < s.group; ++g)
    pack_a(s.OCg(), s.Kg(), w + static_cast<size_t>(g) * s.OCg() * s.Kg(), s.Kg(), false,
           dst + g * per_group);
}
/// Bytes of caller-owned scratch conv2d needs (0 for pointwise and depthwise): the grid of one
/// group's channels, the GEMM's output on the grid, and the im2col row pointers.
inline size_t conv2d_scratch_bytes(const Conv2dShape& s) {
  if (conv2d_algo(s) != ConvAlgo::Implicit) return 0;
  const detail::ImplicitPlan pl = detail::implicit_plan(s);
  // Laid out from address 0; up to 63 more bytes align a caller's unaligned scratch.
  return detail::implicit_scratch(s, pl, detail::conv_grid(s, pl.images), nullptr).end + 63;
}

/// The convolution. packed_w from conv2d_pack_weights; scratch: conv2d_scratch_bytes(s) bytes
/// (may be null when that is 0). Epilogue: see above; EpiNone, epi_bias_row(bias) (bias per
/// output channel), or any functor.
namespace detail {
template <class Epi>
void conv2d_k(const Conv2dShape& s, const float* x, const float* packed_w, float* y, void* scratch,
              Epi epi) {
  const ConvAlgo algo = conv2d_algo(s);
  if (algo == ConvAlgo::Depthwise) {
    detail::depthwise_conv2d(s, x, packed_w, y, epi);
    return;
  }
  if (algo == ConvAlgo::Direct) {
    detail::direct_conv2d(s, x, packed_w, y, epi);
    return;
  }
  const int OCg = s.OCg(), Cg = s.Cg(), Kg = s.Kg(), OH = s.OH(), OW = s.OW();
  const ptrdiff_t P = static_cast<ptrdiff_t>(OH) * OW, HW = static_cast<ptrdiff_t>(s.H) * s.W;
  const size_t wgroup = packed_a_size(OCg, Kg);
  if (algo == ConvAlgo::Pointwise) {
    auto one = [&](ptrdiff_t item) {
      const int n = static_cast<int>(item / s.group), g = static_cast<int>(item % s.group);
      const float* xg = x + (static_cast<ptrdiff_t>(n) * s.C + static_cast<ptrdiff_t>(g) * Cg) * HW;
      float* yg = y + (static_cast<ptrdiff_t>(n) * s.OC + static_cast<ptrdiff_t>(g) * OCg) * P;
      const int oc0 = g * OCg;
      auto gepi = [&epi, oc0](float* c, int row, int col0, int len) {
        epi(c, oc0 + row, col0, len);
      };
      gemm_packed_a(OCg, static_cast<int>(P), Kg, packed_w + g * wgroup, xg, static_cast<int>(P),
                    false, yg, static_cast<int>(P), gepi);
    };
    // Several groups whose GEMMs are each too small to split well run side by side.
    const ptrdiff_t items = static_cast<ptrdiff_t>(s.N) * s.group;
    const double perItem = static_cast<double>(OCg) * static_cast<double>(P) * Kg;
    if (items > 1 && perItem < 8 * kParallelMinWork)
      parallel_for(items, perItem, one);
    else
      for (ptrdiff_t it = 0; it < items; ++it)
        one(it);
    return;
  }
  // Implicit GEMM on the grid, `nb` images at a time, per group.
  const detail::ImplicitPlan plan = detail::implicit_plan(s);
  const int nb = plan.images;
  const int KHW = s.KH * s.KW;
  for (int n0 = 0; n0 < s.N; n0 += nb) {
    const int images = std::min(nb, s.N - n0);
    const detail::ConvGrid gd = detail::conv_grid(s, images);
    const ptrdiff_t ncols = plan.compact ? images * P : gd.G; // the GEMM's N
    const detail::ImplicitScratch mem = detail::implicit_scratch(s, plan, gd, scratch);
    float* grid = mem.grid;
    float* cbuf = mem.c;
    const float** rows = mem.rows;
    int* colmap = mem.colmap;
    for (int kh = 0; kh < s.KH; ++kh)
      for (int kw = 0; kw < s.KW; ++kw)
        rows[kh * s.KW + kw] = grid + detail::grid_tap(s, gd, kh, kw);
    for (int c = 1; c < Cg; ++c)
      for (int t = 0; t < KHW; ++t)
        rows[c * KHW + t] = rows[t] + c * gd.chan;
    if (plan.compact)
      for (int n = 0, q = 0; n < images; ++n)
        for (int oh = 0; oh < OH; ++oh)
          for (int ow = 0; ow < OW; ++ow)
            colmap[q++] = static_cast<int>((static_cast<ptrdiff_t>(n) * gd.Hq + oh) * gd.Wq + ow);
    for (int g = 0; g < s.group; ++g) {
      parallel_for(static_cast<ptrdiff_t>(Cg) * images,
                   static_cast<double>(gd.Hq) * gd.Wq * gd.nrow * gd.ncol, [&](ptrdiff_t it) {
                     const int c = static_cast<int>(it / images), n = static_cast<int>(it % images);
                     detail::grid_fill(
                         s, gd, x + ((static_cast<ptrdiff_t>(n0) + n) * s.C + g * Cg + c) * HW, n,
                         grid + c * gd.chan);
                   });
      // One image in compact columns: C is y itself.
      const bool inPlace = plan.compact && images == 1;
      float* yg = y + (static_cast<ptrdiff_t>(n0) * s.OC + static_cast<ptrdiff_t>(g) * OCg) * P;
      detail::View b{nullptr, 0, 1, rows, plan.compact ? colmap : nullptr};
      detail::GemmProblem prob{OCg,
                               static_cast<int>(ncols),
                               Kg,
                               detail::View{},
                               packed_w + g * wgroup,
                               b,
                               nullptr,
                               inPlace ? yg : cbuf,
                               inPlace ? P : ncols};
      EpiNone none;
      detail::gemm_run(prob, none);
      // Valid columns to y, then the epilogue once per output plane (long vector loops).
      parallel_for(static_cast<ptrdiff_t>(images) * OCg, static_cast<double>(P), [&](ptrdiff_t it) {
        const int n = static_cast<int>(it / OCg), row = static_cast<int>(it % OCg);
        const int oc = g * OCg + row;
        float* yp = y + ((static_cast<ptrdiff_t>(n0) + n) * s.OC + oc) * P;
        if (plan.compact) {
          if (!inPlace) std::memcpy(yp, cbuf + row * ncols + n * P, sizeof(float) * P);
        } else {
          const float* src =
              cbuf + static_cast<ptrdiff_t>(row) * gd.G + static_cast<ptrdiff_t>(n) * gd.Hq * gd.Wq;
          detail::copy_rows(yp, src, gd.Wq, OH, OW);
        }
        epi(yp, oc, 0, static_cast<int>(P));
      });
    }
  }
}
} // namespace detail
template <class Epi = EpiNone>
inline void conv2d(const Conv2dShape& s, const float* x, const float* packed_w, float* y,
                   void* scratch, const Epi& epi = {}) {
  detail::conv2d_k<EpiRef>(s, x, packed_w, y, scratch, EpiRef(epi));
}

} // namespace triad_rt
