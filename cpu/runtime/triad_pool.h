// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// Pooling on NCHW tensors and whole-array reductions.
#pragma once

#include "triad_threads.h"

namespace triad_rt {

// ============================================================================================
// Pooling, NCHW. The caller gives the output size (so ceil_mode is its choice).
// ============================================================================================

struct Pool2dShape {
  int N = 1, C = 1, H = 1, W = 1;
  int KH = 1, KW = 1;
  int stride_h = 1, stride_w = 1;
  int dil_h = 1, dil_w = 1; // MaxPool only
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int OH = 1, OW = 1;
};

namespace detail {
/// For each output (plane, oh, ow): f(yptr, plane input, ih0, ih1, iw0, iw1, padded window size)
/// where [ih0, ih1) x [iw0, iw1) is the in-bounds part of the window (dilation 1).
template <class F> void pool_planes(const Pool2dShape& s, const float* x, float* y, F f) {
  const ptrdiff_t planes = static_cast<ptrdiff_t>(s.N) * s.C;
  parallel_for(planes, static_cast<double>(s.OH) * s.OW * s.KH * s.KW, [&](ptrdiff_t pl) {
    const float* xp = x + pl * s.H * s.W;
    float* yp = y + pl * s.OH * s.OW;
    for (int oh = 0; oh < s.OH; ++oh) {
      const int h0 = oh * s.stride_h - s.pad_t;
      const int hend = std::min(h0 + s.KH, s.H + s.pad_b);
      const int ih0 = std::max(h0, 0), ih1 = std::min(h0 + s.KH, s.H);
      for (int ow = 0; ow < s.OW; ++ow) {
        const int w0 = ow * s.stride_w - s.pad_l;
        const int wend = std::min(w0 + s.KW, s.W + s.pad_r);
        const int iw0 = std::max(w0, 0), iw1 = std::min(w0 + s.KW, s.W);
        const int padded = (hend - h0) * (wend - w0);
        yp[oh * s.OW + ow] = f(xp, ih0, ih1, iw0, iw1, padded);
      }
    }
  });
}
} // namespace detail

/// Max pooling (with dilations). A window with no input element gives the lowest float.
inline void max_pool2d(const Pool2dShape& s, const float* x, float* y) {
  if (s.KH == 2 && s.KW == 2 && s.stride_h == 2 && s.stride_w == 2 && s.dil_h == 1 &&
      s.dil_w == 1 && s.pad_t == 0 && s.pad_l == 0 && s.OH == s.H / 2 && s.OW == s.W / 2) {
    // 2x2 stride 2 without pads, the commonest pool: one flat pass over all output rows (no
    // per-plane set-up, which dominates on small planes).
    const ptrdiff_t rows = static_cast<ptrdiff_t>(s.N) * s.C * s.OH;
    parallel_for(rows, static_cast<double>(s.OW) * 4, [&](ptrdiff_t r) {
      const ptrdiff_t pl = r / s.OH, oh = r % s.OH;
      const float* a = x + (pl * s.H + 2 * oh) * s.W;
      const float* b = a + s.W;
      float* o = y + r * s.OW;
      for (int ow = 0; ow < s.OW; ++ow) {
        const float m0 = std::max(a[2 * ow], a[2 * ow + 1]);
        const float m1 = std::max(b[2 * ow], b[2 * ow + 1]);
        o[ow] = std::max(m0, m1);
      }
    });
    return;
  }
  if (s.dil_h == 1 && s.dil_w == 1) {
    // Separable: per output row, the max over the window's input rows (contiguous, vectorized),
    // then per output column the max over the window's columns of that row: KH*W + OW*KW
    // comparisons per output row instead of OW*KH*KW.
    const ptrdiff_t planes = static_cast<ptrdiff_t>(s.N) * s.C;
    parallel_for(planes, static_cast<double>(s.OH) * s.OW * s.KH * s.KW, [&](ptrdiff_t pl) {
      const float* xp = x + pl * s.H * s.W;
      float* yp = y + pl * s.OH * s.OW;
      float* rowmax = detail::tls_buffer(3, static_cast<size_t>(s.W));
      for (int oh = 0; oh < s.OH; ++oh) {
        const int h0 = oh * s.stride_h - s.pad_t;
        const int ih0 = std::max(h0, 0), ih1 = std::min(h0 + s.KH, s.H);
        if (ih0 >= ih1) { // the window lies in the padding
          for (int ow = 0; ow < s.OW; ++ow)
            yp[oh * s.OW + ow] = std::numeric_limits<float>::lowest();
          continue;
        }
        std::memcpy(rowmax, xp + static_cast<ptrdiff_t>(ih0) * s.W, sizeof(float) * s.W);
        for (int ih = ih0 + 1; ih < ih1; ++ih) {
          const float* xr = xp + static_cast<ptrdiff_t>(ih) * s.W;
          for (int iw = 0; iw < s.W; ++iw)
            rowmax[iw] = std::max(rowmax[iw], xr[iw]);
        }
        for (int ow = 0; ow < s.OW; ++ow) {
          const int w0 = ow * s.stride_w - s.pad_l;
          const int iw0 = std::max(w0, 0), iw1 = std::min(w0 + s.KW, s.W);
          float m = std::numeric_limits<float>::lowest();
          for (int iw = iw0; iw < iw1; ++iw)
            m = std::max(m, rowmax[iw]);
          yp[oh * s.OW + ow] = m;
        }
      }
    });
    return;
  }
  const ptrdiff_t planes = static_cast<ptrdiff_t>(s.N) * s.C;
  parallel_for(planes, static_cast<double>(s.OH) * s.OW * s.KH * s.KW, [&](ptrdiff_t pl) {
    const float* xp = x + pl * s.H * s.W;
    float* yp = y + pl * s.OH * s.OW;
    for (int oh = 0; oh < s.OH; ++oh)
      for (int ow = 0; ow < s.OW; ++ow) {
        float m = std::numeric_limits<float>::lowest();
        for (int kh = 0; kh < s.KH; ++kh) {
          const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
          if (ih < 0 || ih >= s.H) continue;
          for (int kw = 0; kw < s.KW; ++kw) {
            const int iw = ow * s.stride_w - s.pad_l + kw * s.dil_w;
            if (iw >= 0 && iw < s.W) m = std::max(m, xp[static_cast<ptrdiff_t>(ih) * s.W + iw]);
          }
        }
        yp[oh * s.OW + ow] = m;
      }
  });
}

/// Average pooling. count_include_pad: divide by the window clipped to the padded input
/// (ONNX/PyTorch); else by the number of in-bounds elements. An empty window gives 0.
inline void avg_pool2d(const Pool2dShape& s, const float* x, float* y, bool count_include_pad) {
  detail::pool_planes(
      s, x, y, [&](const float* xp, int ih0, int ih1, int iw0, int iw1, int padded) {
        float sum = 0.0f;
        for (int ih = ih0; ih < ih1; ++ih)
          for (int iw = iw0; iw < iw1; ++iw)
            sum += xp[static_cast<ptrdiff_t>(ih) * s.W + iw];
        const int cnt =
            count_include_pad ? padded : std::max(0, ih1 - ih0) * std::max(0, iw1 - iw0);
        return cnt > 0 ? sum / static_cast<float>(cnt) : 0.0f;
      });
}

namespace detail {
inline float sum_array(const float* x, ptrdiff_t n) {
  ptrdiff_t i = 0;
  float s = 0.0f;
#ifndef TRIAD_RT_SCALAR
  vf a0 = vzero(), a1 = vzero();
  for (; i + 2 * kW <= n; i += 2 * kW) {
    a0 = vadd(a0, vload(x + i));
    a1 = vadd(a1, vload(x + i + kW));
  }
  s = vhsum(vadd(a0, a1));
#endif
  for (; i < n; ++i)
    s += x[i];
  return s;
}
inline float max_of(const float* x, ptrdiff_t n) {
  ptrdiff_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
#ifndef TRIAD_RT_SCALAR
  if (n >= kW) {
    vf a = vload(x);
    for (i = kW; i + kW <= n; i += kW)
      a = vmax(a, vload(x + i));
    m = vhmax(a);
  }
#endif
  for (; i < n; ++i)
    m = std::max(m, x[i]);
  return m;
}
} // namespace detail

/// y[p] = mean of x[p, 0..hw) for each of `planes` planes (GlobalAveragePool: planes = N*C).
inline void global_avg_pool(ptrdiff_t planes, ptrdiff_t hw, const float* x, float* y) {
  parallel_for(planes, static_cast<double>(hw), [&](ptrdiff_t p) {
    y[p] = detail::sum_array(x + p * hw, hw) / static_cast<float>(hw);
  });
}
/// y[p] = max of x[p, 0..hw).
inline void global_max_pool(ptrdiff_t planes, ptrdiff_t hw, const float* x, float* y) {
  parallel_for(planes, static_cast<double>(hw),
               [&](ptrdiff_t p) { y[p] = detail::max_of(x + p * hw, hw); });
}

} // namespace triad_rt
