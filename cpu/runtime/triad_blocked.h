// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// The channel-blocked layout (NCHW16c): conversions and the dense, planar and depthwise
// kernels the blocked convolution runs.
#pragma once

#include "triad_conv.h"

namespace triad_rt {

// ============================================================================================
// Channel-blocked convolution (NCHW16c). A blocked tensor [N, C, H, W] (C a multiple of 16) is
// stored as [N, C/16, H, W, 16]: element (n, c, h, w) at
// (((n*C/16 + c/16)*H + h)*W + w)*16 + c%16. Code generation keeps the tensors between such
// convolutions blocked, so no layer repacks its input:
//   - dense (group 1): each output tile is kCMR pixels of one output row x kCP output channels
//     in registers. Input values are broadcast straight from the blocked input (a pixel's 16
//     channels are one cache line) against a weight vector of kCP output channels; the K loop
//     runs over (input block, tap, lane). Padded inputs are copied once into a zero-haloed
//     blocked buffer; 1x1 stride-1 convolutions treat the whole plane as one row.
//   - depthwise: one vector of 16 channels per pixel, several pixels per register block, taps
//     that fall into the padding skipped (no padded copy).
//   - planar input: a dense convolution whose input channels are not a multiple of 16 (an RGB
//     stem, a 24-channel bottleneck) reads its NCHW input directly: the same output tiles, with
//     one broadcast per (tap, input channel). Padded inputs go through a zero-haloed copy of the
//     tap rows of one output row (per thread, in L1).
// Output channels that are not a multiple of 16 are computed in a blocked scratch padded with
// zero weights and written NCHW (conv2d_nchwc_nchw only).
// The bias initialises the accumulators; the epilogue then runs on each finished output row (or
// run of a plane) of one 16-channel block, as epi(c, row = n*OC/16 + block, col0 = pixel*16,
// len = pixels*16): the blocked output is a matrix [N*OC/16, OH*OW*16] and `c - y` its linear
// offset.
// ============================================================================================

constexpr int kCB = 16; // channels per block
#if defined(__AVX512F__)
constexpr int kCMR = 14, kCNV = 2; // 14 pixels x 32 output channels (28 accumulators)
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kCMR = 6, kCNV = 2; // 6 x 16 (12 accumulators)
#else
constexpr int kCMR = 4, kCNV = 16; // 4 x 16 (scalar)
#endif
constexpr int kCP = kCNV * kW;  // output channels per weight panel
constexpr int kCPB = kCP / kCB; // blocks per panel
constexpr int kCDV = kCB / kW;  // vectors per block (depthwise)
static_assert(kCP % kCB == 0, "a weight panel holds whole blocks");

/// Taps (input channels x kernel taps) of the most a planar-input convolution takes.
constexpr int kNchwcPlanarTaps = 256;

/// Whether conv2d_nchwc_nchw computes `s`, and conv2d_nchwc too when OC is a multiple of 16:
/// 2-D dense (group 1, stride_w <= 2, at most 64 kernel taps) with C a multiple of 16, or with
/// any other C read planar (at most kNchwcPlanarTaps taps in all); or depthwise (group == C ==
/// OC, a multiple of 16, KH <= 64).
inline bool conv2d_nchwc_supported(const Conv2dShape& s) {
  if (s.group == 1)
    return s.stride_w <= 2 && s.KH * s.KW <= 64 &&
           (s.C % kCB == 0 || s.C * s.KH * s.KW <= kNchwcPlanarTaps);
  return s.group == s.C && s.OC == s.C && s.C % kCB == 0 && s.KH <= 64;
}

namespace detail {
inline bool nchwc_depthwise(const Conv2dShape& s) {
  return s.group > 1;
}
/// A dense convolution whose input channels are no multiple of 16: its input is read NCHW.
inline bool nchwc_planar(const Conv2dShape& s) {
  return s.group == 1 && s.C % kCB != 0;
}
/// Output channels rounded up to whole blocks.
inline int nchwc_oc(const Conv2dShape& s) {
  return (s.OC + kCB - 1) / kCB * kCB;
}
/// Pixels per run of a flat (1x1, stride 1) blocked convolution: up to 8 tiles, fewer (whole
/// tiles) while the layer has under 4 items (runs x weight panels) per thread, so that two
/// threads split a small plane evenly (MobileNetV2's 7x7 projections: 5 items of 49 pixels,
/// at most 5/3 = 1.67x on two threads, became 20 of 14).
inline int nchwc_flat_run(int images, ptrdiff_t P, ptrdiff_t panels, int threads) {
  ptrdiff_t run = std::min<ptrdiff_t>(P, kCMR * 8);
  auto items = [&](ptrdiff_t r) { return images * ((P + r - 1) / r) * panels; };
  while (threads > 1 && run > kCMR && items(run) < 4 * threads)
    run = std::max<ptrdiff_t>(kCMR, ((run + 1) / 2 + kCMR - 1) / kCMR * kCMR);
  return static_cast<int>(run);
}
inline bool nchwc_padded(const Conv2dShape& s) {
  return s.pad_t != 0 || s.pad_l != 0 || s.pad_b != 0 || s.pad_r != 0;
}
/// Floats of the (padded, for dense) blocked input conv2d_nchwc builds in scratch; 0 when it
/// reads x in place.
inline size_t nchwc_input_floats(const Conv2dShape& s, bool x_blocked) {
  if (nchwc_planar(s)) return 0;
  if (nchwc_depthwise(s)) return x_blocked ? 0 : static_cast<size_t>(s.N) * s.C * s.H * s.W;
  if (x_blocked && !nchwc_padded(s)) return 0;
  return static_cast<size_t>(s.N) * s.C * (s.H + s.pad_t + s.pad_b) * (s.W + s.pad_l + s.pad_r);
}
} // namespace detail

/// x (NCHW, or blocked when `blocked`) -> blocked with a zero halo of (pt, pl, pb, pr) pixels:
/// dst is [N, C/16, H+pt+pb, W+pl+pr, 16].
inline void to_nchwc(const float* x, bool blocked, int N, int C, int H, int W, int pt, int pl,
                     int pb, int pr, float* dst) {
  const int Cb = C / kCB, Hp = H + pt + pb, Wp = W + pl + pr;
  const ptrdiff_t plane = static_cast<ptrdiff_t>(Hp) * Wp * kCB, HW = static_cast<ptrdiff_t>(H) * W;
  parallel_for(static_cast<ptrdiff_t>(N) * Cb, static_cast<double>(plane), [&](ptrdiff_t it) {
    const ptrdiff_t n = it / Cb, cb = it % Cb;
    float* d = dst + it * plane;
    std::memset(d, 0, sizeof(float) * pt * Wp * kCB);
    std::memset(d + static_cast<ptrdiff_t>(pt + H) * Wp * kCB, 0, sizeof(float) * pb * Wp * kCB);
    for (int h = 0; h < H; ++h) {
      float* row = d + static_cast<ptrdiff_t>(pt + h) * Wp * kCB;
      std::memset(row, 0, sizeof(float) * pl * kCB);
      std::memset(row + static_cast<ptrdiff_t>(pl + W) * kCB, 0, sizeof(float) * pr * kCB);
      float* out = row + pl * kCB;
      if (blocked) {
        std::memcpy(out, x + (it * H + h) * static_cast<ptrdiff_t>(W) * kCB,
                    sizeof(float) * W * kCB);
        continue;
      }
      const float* src = x + (n * C + cb * kCB) * HW + static_cast<ptrdiff_t>(h) * W;
      for (int w = 0; w < W; ++w)
        for (int l = 0; l < kCB; ++l)
          out[w * kCB + l] = src[l * HW + w];
    }
  });
}

/// Blocked [N, ceil(C/16), H*W, 16] -> NCHW (the lanes past C in the last block are dropped).
inline void from_nchwc(const float* x, int N, int C, ptrdiff_t HW, float* dst) {
  const int Cb = (C + kCB - 1) / kCB;
  parallel_for(static_cast<ptrdiff_t>(N) * Cb, static_cast<double>(HW * kCB), [&](ptrdiff_t it) {
    const ptrdiff_t n = it / Cb, cb = it % Cb;
    const float* src = x + it * HW * kCB;
    float* d = dst + (n * C + cb * kCB) * HW;
    const int lanes = std::min<int>(kCB, C - static_cast<int>(cb) * kCB);
    // 64 pixels at a time: their 4 KB of source stay in L1 for the 16 output rows.
    for (ptrdiff_t p0 = 0; p0 < HW; p0 += 64) {
      const ptrdiff_t p1 = std::min<ptrdiff_t>(HW, p0 + 64);
      for (int l = 0; l < lanes; ++l)
        for (ptrdiff_t p = p0; p < p1; ++p)
          d[l * HW + p] = src[p * kCB + l];
    }
  });
}

namespace detail {
/// One dense output tile: MRt pixels (input pixels SW*L floats apart) x NVt vectors of output
/// channels, for inputs of L lanes per pixel (16: blocked; 1: planar, one tap per input
/// channel). a: the tile's first input pixel at tap offset 0 of input block 0; taps[t]: offset
/// of tap t; cstride: floats between input blocks; w: the panel's packed weights; y: the tile's
/// first output pixel in the panel's first block, ys floats between output blocks.
template <int MRt, int NVt, int SW, int L>
void nchwc_tile(int cb, int ntaps, const ptrdiff_t* taps, ptrdiff_t cstride,
                const float* __restrict a, const float* __restrict w, const float* __restrict bias,
                float* __restrict y, ptrdiff_t ys) {
  vf r[MRt][NVt];
  init_rows(r, bias);
  for (int c = 0; c < cb; ++c) {
    const float* ac = a + c * cstride;
    for (int t = 0; t < ntaps; ++t) {
      const float* ap = ac + taps[t];
#pragma GCC unroll 4
      for (int l = 0; l < L; ++l) {
        outer_step(r, w, [ap, l](int i) { return ap[i * SW * L + l]; });
        w += NVt * kW;
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MRt; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < NVt; ++v)
      vstore(y + (v * kW / kCB) * ys + i * kCB + (v * kW) % kCB, r[i][v]);
}

using NchwcTileFn = void (*)(int, int, const ptrdiff_t*, ptrdiff_t, const float*, const float*,
                             const float*, float*, ptrdiff_t);
template <int NVt, int SW, int L, int... Is>
constexpr std::array<NchwcTileFn, sizeof...(Is)> nchwc_tiles(std::integer_sequence<int, Is...>) {
  return {{&nchwc_tile<Is + 1, NVt, SW, L>...}};
}
/// nchwc_tile for mr pixels (1..kCMR), a panel of `blocks` blocks (1..kCPB), stride sw (1, 2),
/// a blocked or a planar input.
inline NchwcTileFn nchwc_tile_for(int mr, int blocks, int sw, bool planar) {
  using Seq = std::make_integer_sequence<int, kCMR>;
  constexpr int kHalf = kCPB > 1 ? kCNV / kCPB : kCNV; // vectors of a one-block panel
  static constexpr std::array<NchwcTileFn, kCMR> fns[2][2][2] = {
      {{nchwc_tiles<kCNV, 1, kCB>(Seq()), nchwc_tiles<kCNV, 2, kCB>(Seq())},
       {nchwc_tiles<kHalf, 1, kCB>(Seq()), nchwc_tiles<kHalf, 2, kCB>(Seq())}},
      {{nchwc_tiles<kCNV, 1, 1>(Seq()), nchwc_tiles<kCNV, 2, 1>(Seq())},
       {nchwc_tiles<kHalf, 1, 1>(Seq()), nchwc_tiles<kHalf, 2, 1>(Seq())}}};
  return fns[planar][blocks != kCPB][sw - 1][mr - 1];
}

/// Depthwise: PB output pixels of one row and one 16-channel block. `in` points at input column
/// (ow0*sw - pl) of the tap row; edge pixels (Checked) skip taps outside [0, W).
template <int PB, bool Checked>
inline void nchwc_dw_pixels(const Conv2dShape& s, const float* const* rows, int nrows,
                            const int* khs, const float* wb, const float* bias, int ow0, float* y) {
  vf r[PB][kCDV];
  init_rows(r, bias);
  for (int k = 0; k < nrows; ++k) {
    const float* row = rows[k];
    const float* wr = wb + static_cast<ptrdiff_t>(khs[k]) * s.KW * kCB;
    for (int kw = 0; kw < s.KW; ++kw) {
      vf wv[kCDV];
#pragma GCC unroll 16
      for (int v = 0; v < kCDV; ++v)
        wv[v] = vload(wr + kw * kCB + v * kW);
#pragma GCC unroll 8
      for (int p = 0; p < PB; ++p) {
        const int iw = (ow0 + p) * s.stride_w - s.pad_l + kw * s.dil_w;
        if (Checked && (iw < 0 || iw >= s.W)) continue;
        const float* in = row + static_cast<ptrdiff_t>(iw) * kCB;
#pragma GCC unroll 16
        for (int v = 0; v < kCDV; ++v)
          r[p][v] = vfma(vload(in + v * kW), wv[v], r[p][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < PB; ++p)
#pragma GCC unroll 16
    for (int v = 0; v < kCDV; ++v)
      vstore(y + (ow0 + p) * kCB + v * kW, r[p][v]);
}

/// Depthwise, square K x K kernel, stride S, no dilation: PB output pixels of one row and one
/// 16-channel block, with the input vectors of each tap row loaded once and reused by every tap
/// that reads them ((PB - 1) * S + K loads per tap row instead of K * PB). rows[kh]: input row
/// oh*S - pad_t + kh of the block, null inside the padding; iw0: input column of the first
/// pixel's first tap. Checked: columns outside [0, W) read as zeros (edge blocks).
template <int K, int S, int PB, bool Checked>
inline void nchwc_dw_block(const float* const* rows, const float* wb, const float* bias, int iw0,
                           int W, float* y) {
  constexpr int NI = (PB - 1) * S + K;
#pragma GCC unroll 16
  for (int v = 0; v < kCDV; ++v) {
    vf r[PB];
#pragma GCC unroll 16
    for (int p = 0; p < PB; ++p)
      r[p] = bias ? vload(bias + v * kW) : vzero();
#pragma GCC unroll 8
    for (int kh = 0; kh < K; ++kh) {
      const float* row = rows[kh];
      if (!row) continue;
      vf in[NI];
#pragma GCC unroll 32
      for (int i = 0; i < NI; ++i) {
        const int iw = iw0 + i;
        in[i] = Checked && (iw < 0 || iw >= W)
                    ? vzero()
                    : vload(row + static_cast<ptrdiff_t>(iw) * kCB + v * kW);
      }
#pragma GCC unroll 8
      for (int kw = 0; kw < K; ++kw) {
        const vf wv = vload(wb + (kh * K + kw) * kCB + v * kW);
#pragma GCC unroll 16
        for (int p = 0; p < PB; ++p)
          r[p] = vfma(in[p * S + kw], wv, r[p]);
      }
    }
#pragma GCC unroll 16
    for (int p = 0; p < PB; ++p)
      vstore(y + p * kCB + v * kW, r[p]);
  }
}

/// Output columns [ow, end) of one row with nchwc_dw_block: blocks of PB pixels, then halves
/// for the tail; blocks reaching outside the unchecked columns [lo, hi) check their columns.
template <int K, int S, int PB>
inline void nchwc_dw_span(const float* const* rows, const float* wb, const float* bias, int pad_l,
                          int W, int lo, int hi, int ow, int end, float* yr) {
  for (; ow + PB <= end; ow += PB) {
    const int iw0 = ow * S - pad_l;
    float* y = yr + static_cast<ptrdiff_t>(ow) * kCB;
    if (ow < lo || ow + PB > hi)
      nchwc_dw_block<K, S, PB, true>(rows, wb, bias, iw0, W, y);
    else
      nchwc_dw_block<K, S, PB, false>(rows, wb, bias, iw0, W, y);
  }
  if constexpr (PB > 1) nchwc_dw_span<K, S, PB / 2>(rows, wb, bias, pad_l, W, lo, hi, ow, end, yr);
}

/// One output row of a K x K stride-S depthwise convolution (nchwc_dw_square).
using NchwcDwRowFn = void (*)(const float* const*, const float*, const float*, int, int, int, int,
                              int, float*);
template <int K, int S>
void nchwc_dw_row(const float* const* rows, const float* wb, const float* bias, int pad_l, int W,
                  int lo, int hi, int OW, float* yr) {
  // Pixels per block: 14 at stride 1 (14 accumulators and 16 input vectors in AVX-512's 32
  // registers), 7 at stride 2; MobileNet's widths (112, 56, 28, 14, 7) are multiples of 7.
#if defined(__AVX512F__)
  constexpr int PB = S == 1 ? 14 : 7;
#elif defined(__AVX2__) && defined(__FMA__)
  constexpr int PB = 4;
#else
  constexpr int PB = 2;
#endif
  nchwc_dw_span<K, S, PB>(rows, wb, bias, pad_l, W, lo, hi, 0, OW, yr);
}
/// The row kernel for square 3x3 and 5x5 kernels at stride 1 or 2 without dilation (MobileNet's
/// and EfficientNet's depthwise layers); null for other shapes (nchwc_dw_pixels).
inline NchwcDwRowFn nchwc_dw_square(const Conv2dShape& s) {
  return square_dw_kernel<NchwcDwRowFn>(s, [](auto k, auto st) -> NchwcDwRowFn {
    return &nchwc_dw_row<decltype(k)::value, decltype(st)::value>;
  });
}

template <class Epi>
void nchwc_depthwise_conv(const Conv2dShape& s, const float* x, const float* packed_w,
                          const float* bias, float* y, Epi& epi) {
#if defined(__AVX512F__)
  constexpr int PB = 8;
#elif defined(__AVX2__) && defined(__FMA__)
  constexpr int PB = 4;
#else
  constexpr int PB = 1;
#endif
  const int Cb = s.C / kCB, OH = s.OH(), OW = s.OW(), KHW = s.KH * s.KW;
  const ptrdiff_t plane = static_cast<ptrdiff_t>(s.H) * s.W * kCB;
  const ptrdiff_t oplane = static_cast<ptrdiff_t>(OH) * OW * kCB;
  // Output columns whose taps all fall inside [0, W): [lo, hi).
  int lo = 0, hi = OW;
  while (lo < OW && lo * s.stride_w - s.pad_l < 0)
    ++lo;
  while (hi > lo && (hi - 1) * s.stride_w - s.pad_l + (s.KW - 1) * s.dil_w >= s.W)
    --hi;
  if (hi < lo) hi = lo;
  const NchwcDwRowFn square = nchwc_dw_square(s);
  // Items of R output rows (at least 64 pixels where the plane has them): small planes (7x7,
  // 14x14) call the epilogue once per item, not once per short row.
  const int R = std::min(OH, std::max(1, (64 + OW - 1) / OW));
  const int bands = (OH + R - 1) / R;
  parallel_for(static_cast<ptrdiff_t>(s.N) * Cb * bands, static_cast<double>(R) * OW * KHW * kCB,
               [&](ptrdiff_t it) {
                 const int oh0 = static_cast<int>(it % bands) * R;
                 const int oh1 = std::min(OH, oh0 + R);
                 const ptrdiff_t nc = it / bands; // n*Cb + cb
                 const int cb = static_cast<int>(nc % Cb);
                 const float* xp = x + nc * plane;
                 const float* wb = packed_w + static_cast<ptrdiff_t>(cb) * KHW * kCB;
                 const float* bb = bias ? bias + cb * kCB : nullptr;
                 for (int oh = oh0; oh < oh1; ++oh) {
                   float* yr = y + nc * oplane + static_cast<ptrdiff_t>(oh) * OW * kCB;
                   const float* rows[64];
                   if (square) { // every tap row, null in the padding
                     for (int kh = 0; kh < s.KH; ++kh) {
                       const int ih = oh * s.stride_h - s.pad_t + kh;
                       rows[kh] = ih < 0 || ih >= s.H ? nullptr
                                                      : xp + static_cast<ptrdiff_t>(ih) * s.W * kCB;
                     }
                     square(rows, wb, bb, s.pad_l, s.W, lo, hi, OW, yr);
                     continue;
                   }
                   int khs[64];
                   int nrows = 0;
                   for (int kh = 0; kh < s.KH && nrows < 64; ++kh) {
                     const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
                     if (ih < 0 || ih >= s.H) continue;
                     rows[nrows] = xp + static_cast<ptrdiff_t>(ih) * s.W * kCB;
                     khs[nrows++] = kh;
                   }
                   for (int ow = 0; ow < lo; ++ow)
                     nchwc_dw_pixels<1, true>(s, rows, nrows, khs, wb, bb, ow, yr);
                   int ow = lo;
                   for (; ow + PB <= hi; ow += PB)
                     nchwc_dw_pixels<PB, false>(s, rows, nrows, khs, wb, bb, ow, yr);
                   for (; ow < hi; ++ow)
                     nchwc_dw_pixels<1, false>(s, rows, nrows, khs, wb, bb, ow, yr);
                   for (ow = hi; ow < OW; ++ow)
                     nchwc_dw_pixels<1, true>(s, rows, nrows, khs, wb, bb, ow, yr);
                 }
                 epi(y + nc * oplane + static_cast<ptrdiff_t>(oh0) * OW * kCB, static_cast<int>(nc),
                     oh0 * OW * kCB, (oh1 - oh0) * OW * kCB);
               });
}

/// The planar-input convolution (nchwc_planar(s)): x NCHW, y blocked. One item per output row:
/// without padding its tiles read x in place (tap (kh, kw) of channel c at
/// (c*H + kh*dh)*W + kw*dw from the row's first input pixel); with padding the row's C*KH input
/// rows are first copied into a zero-haloed per-thread buffer of width W + pad_l + pad_r.
/// Taps are ordered [KH][KW][C], as the weights are packed.
template <class Epi>
void nchwc_planar_conv(const Conv2dShape& s, const float* x, const float* packed_w,
                       const float* bias, float* y, Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), KHW = s.KH * s.KW, T = s.C * KHW, sw = s.stride_w;
  const int OCb = nchwc_oc(s) / kCB, Wp = s.W + s.pad_l + s.pad_r;
  const bool padded = nchwc_padded(s);
  const ptrdiff_t HW = static_cast<ptrdiff_t>(s.H) * s.W;
  const ptrdiff_t ys = static_cast<ptrdiff_t>(OH) * OW * kCB; // between output blocks
  const ptrdiff_t panels = (OCb + kCPB - 1) / kCPB;
  ptrdiff_t taps[kNchwcPlanarTaps];
  for (int kh = 0; kh < s.KH; ++kh)
    for (int kw = 0; kw < s.KW; ++kw)
      for (int c = 0; c < s.C; ++c)
        taps[(kh * s.KW + kw) * s.C + c] =
            padded ? static_cast<ptrdiff_t>(c * s.KH + kh) * Wp + kw * s.dil_w
                   : (static_cast<ptrdiff_t>(c) * s.H + kh * s.dil_h) * s.W + kw * s.dil_w;
  parallel_for(
      static_cast<ptrdiff_t>(s.N) * OH, static_cast<double>(OW) * nchwc_oc(s) * T,
      [&](ptrdiff_t it) {
        const ptrdiff_t n = it / OH;
        const int oh = static_cast<int>(it % OH);
        const float* xn = x + n * s.C * HW;
        const float* arow = xn + static_cast<ptrdiff_t>(oh) * s.stride_h * s.W;
        if (padded) {
          float* buf = tls_buffer(6, static_cast<size_t>(s.C) * s.KH * Wp);
          for (int c = 0; c < s.C; ++c)
            for (int kh = 0; kh < s.KH; ++kh) {
              float* d = buf + static_cast<ptrdiff_t>(c * s.KH + kh) * Wp;
              const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
              if (ih < 0 || ih >= s.H) {
                std::memset(d, 0, sizeof(float) * Wp);
                continue;
              }
              std::memset(d, 0, sizeof(float) * s.pad_l);
              std::memcpy(d + s.pad_l, xn + c * HW + static_cast<ptrdiff_t>(ih) * s.W,
                          sizeof(float) * s.W);
              std::memset(d + s.pad_l + s.W, 0, sizeof(float) * s.pad_r);
            }
          arow = buf;
        }
        for (ptrdiff_t q = 0; q < panels; ++q) {
          const int blocks = static_cast<int>(std::min<ptrdiff_t>(kCPB, OCb - q * kCPB));
          const float* wq = packed_w + q * kCP * T;
          const float* bq = bias ? bias + q * kCP : nullptr;
          float* yq = y + (n * OCb + q * kCPB) * ys + static_cast<ptrdiff_t>(oh) * OW * kCB;
          for (int t0 = 0; t0 < OW; t0 += kCMR) {
            const int mr = std::min(kCMR, OW - t0);
            nchwc_tile_for(mr, blocks, sw, true)(1, T, taps, 0, arow + t0 * sw, wq, bq,
                                                 yq + t0 * kCB, ys);
          }
          for (int b = 0; b < blocks; ++b)
            epi(yq + b * ys, static_cast<int>(n * OCb + q * kCPB + b), oh * OW * kCB, OW * kCB);
        }
      });
}
} // namespace detail

} // namespace triad_rt
