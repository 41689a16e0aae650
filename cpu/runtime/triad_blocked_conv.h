// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// The blocked convolution's entry points: weight packing, scratch sizes, conv2d_nchwc and
// conv2d_nchwc_nchw (dispatching to the blocked kernels and Winograd).
#pragma once

#include "triad_winograd.h"

namespace triad_rt {

/// Floats of conv2d_nchwc's packed weights (output channels rounded up to whole blocks).
inline size_t conv2d_nchwc_weights_size(const Conv2dShape& s) {
  if (const int m = conv2d_nchwc_winograd(s))
    return static_cast<size_t>(m + 2) * (m + 2) * s.OC * s.C;
  return static_cast<size_t>(detail::nchwc_oc(s)) * s.Cg() * s.KH * s.KW;
}
/// Packs w[OC, C/group, KH, KW]. Dense: panels of kCP output channels (the last may hold fewer
/// whole blocks; channels past OC get zero weights), each as [C/16][KH][KW][16 lanes][panel
/// channels], planar as [KH][KW][C][panel channels]. Depthwise: [C/16][KH][KW][16]. Winograd:
/// U[xi] = (G g G^T)[xi] for each of the alpha^2 positions, each packed as the weights of a 1x1
/// convolution (OC * C floats).
inline void conv2d_nchwc_pack_weights(const Conv2dShape& s, const float* w, float* dst) {
  const int KHW = s.KH * s.KW;
  if (const int m = conv2d_nchwc_winograd(s)) {
    const int A = m + 2;
    const double* G = detail::wino_g(m);
    Conv2dShape one = s;
    one.KH = one.KW = 1;
    one.pad_t = one.pad_l = one.pad_b = one.pad_r = 0;
    const size_t CO = static_cast<size_t>(s.OC) * s.C;
    std::vector<float> u(CO);
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) {
        for (size_t k = 0; k < CO; ++k) {
          const float* g = w + k * 9;
          double acc = 0;
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b)
              acc += G[i * 3 + a] * g[a * 3 + b] * G[j * 3 + b];
          u[k] = static_cast<float>(acc);
        }
        conv2d_nchwc_pack_weights(one, u.data(), dst + (i * A + j) * CO);
      }
    return;
  }
  if (detail::nchwc_depthwise(s)) {
    for (int c = 0; c < s.C; ++c)
      for (int t = 0; t < KHW; ++t)
        dst[(static_cast<size_t>(c / kCB) * KHW + t) * kCB + c % kCB] =
            w[static_cast<size_t>(c) * KHW + t];
    return;
  }
  // Planar: the whole input is one block of C lanes.
  const int lanes = detail::nchwc_planar(s) ? s.C : kCB, OCp = detail::nchwc_oc(s);
  const size_t K = static_cast<size_t>(s.C) * KHW;
  for (int q0 = 0; q0 < OCp; q0 += kCP) {
    const int wq = std::min(kCP, OCp - q0);
    float* d = dst + static_cast<size_t>(q0) * K;
    for (int cb = 0; cb < s.C / lanes; ++cb)
      for (int t = 0; t < KHW; ++t)
        for (int l = 0; l < lanes; ++l)
          for (int j = 0; j < wq; ++j)
            *d++ = q0 + j < s.OC ? w[(static_cast<size_t>(q0 + j) * s.C + cb * lanes + l) * KHW + t]
                                 : 0.0f;
  }
}
/// Bytes of scratch conv2d_nchwc needs (0: none) for an input that is blocked or NCHW.
inline size_t conv2d_nchwc_scratch_bytes(const Conv2dShape& s, bool x_blocked) {
  if (const int m = conv2d_nchwc_winograd(s))
    return detail::wino_scratch(s, detail::wino_geom(s, m), nullptr).end + 63;
  const size_t f = detail::nchwc_input_floats(s, x_blocked);
  return f ? f * sizeof(float) + 63 : 0;
}

/// The blocked convolution (conv2d_nchwc_supported(s), OC a multiple of 16). x: NCHW, or
/// blocked when x_blocked (never planar); y: blocked. packed_w from conv2d_nchwc_pack_weights;
/// bias: OC floats or null; scratch: conv2d_nchwc_scratch_bytes(s, x_blocked) bytes. Epilogue: see
/// above.
namespace detail {
template <class Epi>
void conv2d_nchwc_k(const Conv2dShape& s, const float* x, bool x_blocked, const float* packed_w,
                    const float* bias, float* y, void* scratch, Epi epi) {
  if (const int m = conv2d_nchwc_winograd(s)) {
    if (m == 2)
      detail::nchwc_winograd<2>(s, x, x_blocked, packed_w, bias, y, scratch, epi);
    else
      detail::nchwc_winograd<4>(s, x, x_blocked, packed_w, bias, y, scratch, epi);
    return;
  }
  const float* xin = x;
  const bool copy = detail::nchwc_input_floats(s, x_blocked) != 0;
  float* buf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + 63) / 64 * 64);
  if (detail::nchwc_depthwise(s)) {
    if (copy) {
      to_nchwc(x, false, s.N, s.C, s.H, s.W, 0, 0, 0, 0, buf);
      xin = buf;
    }
    detail::nchwc_depthwise_conv(s, xin, packed_w, bias, y, epi);
    return;
  }
  if (detail::nchwc_planar(s)) {
    detail::nchwc_planar_conv(s, x, packed_w, bias, y, epi);
    return;
  }
  const int Hp = s.H + s.pad_t + s.pad_b, Wp = s.W + s.pad_l + s.pad_r;
  if (copy) {
    to_nchwc(x, x_blocked, s.N, s.C, s.H, s.W, s.pad_t, s.pad_l, s.pad_b, s.pad_r, buf);
    xin = buf;
  }
  const int Cb = s.C / kCB, OCb = detail::nchwc_oc(s) / kCB, OH = s.OH(), OW = s.OW();
  const int KHW = s.KH * s.KW;
  const ptrdiff_t cstride = static_cast<ptrdiff_t>(Hp) * Wp * kCB;
  const ptrdiff_t ys = static_cast<ptrdiff_t>(OH) * OW * kCB; // between output blocks
  const ptrdiff_t K = static_cast<ptrdiff_t>(s.C) * KHW;
  ptrdiff_t taps[64];
  for (int kh = 0; kh < s.KH; ++kh)
    for (int kw = 0; kw < s.KW; ++kw)
      taps[kh * s.KW + kw] =
          (static_cast<ptrdiff_t>(kh) * s.dil_h * Wp + static_cast<ptrdiff_t>(kw) * s.dil_w) * kCB;
  // Rows of output pixels: one output row each, or (1x1, stride 1, no pads) runs of a plane.
  const bool flat =
      s.KH == 1 && s.KW == 1 && s.stride_h == 1 && s.stride_w == 1 && !detail::nchwc_padded(s);
  const ptrdiff_t P = static_cast<ptrdiff_t>(OH) * OW;
  const ptrdiff_t panels = (OCb + kCPB - 1) / kCPB;
  const int run = flat ? detail::nchwc_flat_run(s.N, P, panels, num_threads()) : OW;
  const ptrdiff_t runsPerImage = flat ? (P + run - 1) / run : OH;
  const ptrdiff_t rows = static_cast<ptrdiff_t>(s.N) * runsPerImage;
  // Weights larger than the input: each panel's weights stay cached while the rows stream by.
  const bool panelOuter = static_cast<double>(s.OC) * K > static_cast<double>(s.N) * s.C * Hp * Wp;
  const int sw = s.stride_w;
  parallel_for(rows * panels, static_cast<double>(run) * kCP * K, [&](ptrdiff_t it) {
    const ptrdiff_t r = panelOuter ? it % rows : it / panels;
    const ptrdiff_t q = panelOuter ? it / rows : it % panels;
    const ptrdiff_t n = r / runsPerImage, j = r % runsPerImage;
    const ptrdiff_t p0 = flat ? j * run : j * OW; // first output pixel of the row in its plane
    const int len = flat ? static_cast<int>(std::min<ptrdiff_t>(run, P - p0)) : OW;
    const float* arow = xin + n * Cb * cstride +
                        (flat ? p0 * kCB : j * s.stride_h * static_cast<ptrdiff_t>(Wp) * kCB);
    const int blocks = static_cast<int>(std::min<ptrdiff_t>(kCPB, OCb - q * kCPB));
    const float* wq = packed_w + q * kCP * K;
    const float* bq = bias ? bias + q * kCP : nullptr;
    float* yq = y + (n * OCb + q * kCPB) * ys + p0 * kCB;
    for (int t0 = 0; t0 < len; t0 += kCMR) {
      const int mr = std::min(kCMR, len - t0);
      detail::nchwc_tile_for(mr, blocks, sw, false)(Cb, KHW, taps, cstride, arow + t0 * sw * kCB,
                                                    wq, bq, yq + t0 * kCB, ys);
    }
    // The epilogue once per row and block (still in L1): per tile, its call cost a fifth of
    // a small-K layer's time (MobileNetV2's 1x1 from 16 channels).
    for (int b = 0; b < blocks; ++b)
      epi(yq + b * ys, static_cast<int>(n * OCb + q * kCPB + b), static_cast<int>(p0 * kCB),
          len * kCB);
  });
}
} // namespace detail
template <class Epi = EpiNone>
inline void conv2d_nchwc(const Conv2dShape& s, const float* x, bool x_blocked,
                         const float* packed_w, const float* bias, float* y, void* scratch,
                         const Epi& epi = {}) {
  detail::conv2d_nchwc_k<EpiRef>(s, x, x_blocked, packed_w, bias, y, scratch, EpiRef(epi));
}

/// Bytes of scratch conv2d_nchwc_nchw needs.
inline size_t conv2d_nchwc_nchw_scratch_bytes(const Conv2dShape& s, bool x_blocked) {
  const size_t yb =
      static_cast<size_t>(s.N) * detail::nchwc_oc(s) * s.OH() * s.OW() * sizeof(float);
  return (yb + 63) / 64 * 64 + 63 + conv2d_nchwc_scratch_bytes(s, x_blocked);
}
/// conv2d_nchwc with an NCHW output (the last blocked layer before an NCHW reader): computed
/// blocked into scratch, then reordered into y, with the epilogue once per output plane as
/// conv2d calls it: epi(plane, oc, 0, OH*OW). Output channels that are no multiple of 16 are
/// computed padded to whole blocks (zero weights); the bias is then added per plane.
namespace detail {
template <class Epi>
void conv2d_nchwc_nchw_k(const Conv2dShape& s, const float* x, bool x_blocked,
                         const float* packed_w, const float* bias, float* y, void* scratch,
                         Epi epi) {
  float* yb = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + 63) / 64 * 64);
  const ptrdiff_t P = static_cast<ptrdiff_t>(s.OH()) * s.OW();
  const size_t ybytes = static_cast<size_t>(s.N) * nchwc_oc(s) * P * sizeof(float);
  const bool whole = s.OC % kCB == 0; // else the bias has too few channels for the tiles
  conv2d_nchwc(s, x, x_blocked, packed_w, whole ? bias : nullptr, yb,
               reinterpret_cast<char*>(yb) + (ybytes + 63) / 64 * 64, EpiNone{});
  from_nchwc(yb, s.N, s.OC, P, y);
  parallel_for(static_cast<ptrdiff_t>(s.N) * s.OC, static_cast<double>(P), [&](ptrdiff_t it) {
    const int oc = static_cast<int>(it % s.OC);
    float* plane = y + it * P;
    if (!whole && bias)
      for (ptrdiff_t p = 0; p < P; ++p)
        plane[p] += bias[oc];
    epi(plane, oc, 0, static_cast<int>(P));
  });
}
} // namespace detail
template <class Epi = EpiNone>
inline void conv2d_nchwc_nchw(const Conv2dShape& s, const float* x, bool x_blocked,
                              const float* packed_w, const float* bias, float* y, void* scratch,
                              const Epi& epi = {}) {
  detail::conv2d_nchwc_nchw_k<EpiRef>(s, x, x_blocked, packed_w, bias, y, scratch, EpiRef(epi));
}

} // namespace triad_rt
