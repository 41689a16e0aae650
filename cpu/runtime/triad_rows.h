// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// Data movement (transposes) and row-wise ops over the last axis (softmax, layer norm).
#pragma once

#include "triad_pool.h" // sum_array, max_of

namespace triad_rt {

// ============================================================================================
// Data movement
// ============================================================================================

/// One plane of a transpose, elements of E bytes: dst[r * ldd + c] = src[r + c * lds] for
/// r < rows, c < cols (offsets in elements). Copied in 16 x 16 tiles, so that the lines of both
/// sides are used whole while in L1: element by element along c, the strided side misses on every
/// element once its stride puts the tile's lines in few L1 sets (BERT's K transpose, [128, 12,
/// 64] -> [12, 64, 128] with a stride of 768 floats: 0.10 ms per layer).
template <int E>
inline void transpose_plane(ptrdiff_t rows, ptrdiff_t cols, const void* src, ptrdiff_t lds,
                            void* dst, ptrdiff_t ldd) {
  constexpr ptrdiff_t kTile = 16;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (ptrdiff_t r0 = 0; r0 < rows; r0 += kTile)
    for (ptrdiff_t c0 = 0; c0 < cols; c0 += kTile) {
      const ptrdiff_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (ptrdiff_t r = r0; r < r1; ++r)
        for (ptrdiff_t c = c0; c < c1; ++c)
          std::memcpy(d + (r * ldd + c) * E, s + (r + c * lds) * E, E);
    }
}

// ============================================================================================
// Row-wise ops over the last axis: `rows` rows of n contiguous floats (x == y allowed).
// ============================================================================================

/// Numerically stable softmax: y = exp(x - max) / sum.
inline void softmax_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n) {
  parallel_for(rows, 8.0 * static_cast<double>(n), [&](ptrdiff_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float m = detail::max_of(xr, n);
    ptrdiff_t i = 0;
    float sum = 0.0f;
#ifndef TRIAD_RT_SCALAR
    vf vm = vset1(m), acc = vzero();
    for (; i + kW <= n; i += kW) {
      vf e = exp_t(vsub(vload(xr + i), vm));
      vstore(yr + i, e);
      acc = vadd(acc, e);
    }
    sum = vhsum(acc);
#endif
    for (; i < n; ++i) {
      yr[i] = exp_s(xr[i] - m);
      sum += yr[i];
    }
    const float inv = 1.0f / sum;
    i = 0;
#ifndef TRIAD_RT_SCALAR
    vf vinv = vset1(inv);
    for (; i + kW <= n; i += kW)
      vstore(yr + i, vmul(vload(yr + i), vinv));
#endif
    for (; i < n; ++i)
      yr[i] *= inv;
  });
}

/// Log-softmax: y = x - max - log(sum exp(x - max)).
inline void log_softmax_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n) {
  parallel_for(rows, 8.0 * static_cast<double>(n), [&](ptrdiff_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float m = detail::max_of(xr, n);
    float sum = 0.0f;
    for (ptrdiff_t i = 0; i < n; ++i)
      sum += exp_s(xr[i] - m);
    const float ls = std::log(sum);
    for (ptrdiff_t i = 0; i < n; ++i)
      yr[i] = (xr[i] - m) - ls; // not xr - (m + ls): that loses digits when |m| is large
  });
}

namespace detail {
/// Normalizes each row of n floats: y = (x - mean) * rstd * scale + bias with
/// rstd = 1 / sqrt(mean((x - mean)^2) + eps); Center false takes the mean as 0 (RMS
/// normalization). Two passes for accuracy; scale has n elements, bias n or null.
template <bool Center>
void norm_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n, const float* scale,
               const float* bias, float eps, float* mean_out, float* rstd_out) {
  parallel_for(rows, 4.0 * static_cast<double>(n), [&](ptrdiff_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float mean = Center ? detail::sum_array(xr, n) / static_cast<float>(n) : 0.0f;
    ptrdiff_t i = 0;
    float ss = 0.0f;
#ifndef TRIAD_RT_SCALAR
    vf vmean = vset1(mean), acc = vzero();
    for (; i + kW <= n; i += kW) {
      vf d = vsub(vload(xr + i), vmean);
      acc = vfma(d, d, acc);
    }
    ss = vhsum(acc);
#endif
    for (; i < n; ++i)
      ss += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    if (mean_out) mean_out[r] = mean;
    if (rstd_out) rstd_out[r] = rstd;
    i = 0;
#ifndef TRIAD_RT_SCALAR
    vf vr = vset1(rstd);
    for (; i + kW <= n; i += kW) {
      vf d = vmul(vsub(vload(xr + i), vmean), vr);
      vf o = bias ? vfma(d, vload(scale + i), vload(bias + i)) : vmul(d, vload(scale + i));
      vstore(yr + i, o);
    }
#endif
    for (; i < n; ++i)
      yr[i] = (xr[i] - mean) * rstd * scale[i] + (bias ? bias[i] : 0.0f);
  });
}
} // namespace detail

/// Layer normalization of each row of n floats: y = (x - mean) / sqrt(var + eps) * scale + bias
/// (biased variance); bias may be null. mean_out / rstd_out (optional) receive each row's mean
/// and 1/sqrt(variance + eps) (ONNX's Mean and InvStdDev outputs).
inline void layernorm_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n,
                           const float* scale, const float* bias, float eps,
                           float* mean_out = nullptr, float* rstd_out = nullptr) {
  detail::norm_rows<true>(x, y, rows, n, scale, bias, eps, mean_out, rstd_out);
}

/// RMS normalization of each row of n floats: y = x / sqrt(mean(x^2) + eps) * scale.
inline void rmsnorm_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n, const float* scale,
                         float eps) {
  detail::norm_rows<false>(x, y, rows, n, scale, nullptr, eps, nullptr, nullptr);
}

} // namespace triad_rt
