// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// SIMD abstraction (`vf`, kW lanes chosen from the target macros) and the transcendental
// functions shared by vector bodies and scalar tails.
#pragma once

#include "triad_scalar.h" // float16 conversions, integer pow/mod, casts (generated elementwise code)

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h> // _mm_pause
#endif

namespace triad_rt {

// ============================================================================================
// SIMD abstraction: `vf` is one vector of kW floats (a plain float in the scalar build).
// ============================================================================================

#if defined(__AVX512F__)
#define TRIAD_RT_ISA "avx512"
using vf = __m512;
constexpr int kW = 16;
inline vf vload(const float* p) {
  return _mm512_loadu_ps(p);
}
inline void vstore(float* p, vf v) {
  _mm512_storeu_ps(p, v);
}
inline vf vset1(float x) {
  return _mm512_set1_ps(x);
}
inline vf vzero() {
  return _mm512_setzero_ps();
}
inline vf vfma(vf a, vf b, vf c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline vf vadd(vf a, vf b) {
  return _mm512_add_ps(a, b);
}
inline vf vsub(vf a, vf b) {
  return _mm512_sub_ps(a, b);
}
inline vf vmul(vf a, vf b) {
  return _mm512_mul_ps(a, b);
}
inline vf vdiv(vf a, vf b) {
  return _mm512_div_ps(a, b);
}
// GCC 12 warns (-Wmaybe-uninitialized, PR105593) inside intrinsics built on
// _mm512_undefined_*; the full-mask forms below take an explicit source and compile to the
// same unmasked instructions.
inline vf vmax(vf a, vf b) {
  return _mm512_mask_max_ps(a, 0xFFFF, a, b);
}
inline vf vmin(vf a, vf b) {
  return _mm512_mask_min_ps(a, 0xFFFF, a, b);
}
inline float vhsum(vf v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  __m256 s8 = _mm256_add_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float vhmax(vf v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  __m256 s8 = _mm256_max_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// 2^n for integer-valued n in [-127, 127] (n = -127 gives 0).
inline vf vpow2i(vf n) {
  const __m512i z = _mm512_setzero_si512();
  __m512i i = _mm512_mask_cvtps_epi32(z, 0xFFFF, n);
  i = _mm512_add_epi32(i, _mm512_set1_epi32(127));
  return _mm512_castsi512_ps(_mm512_mask_slli_epi32(z, 0xFFFF, i, 23));
}
// Lanes [a, b) of p (clamped to [0, kW]), zeros elsewhere; touches no other memory.
inline vf vload_lanes(const float* p, int a, int b) {
  a = std::max(a, 0), b = std::min(b, 16);
  const __mmask16 m = b > a ? static_cast<__mmask16>(((1u << b) - 1u) & ~((1u << a) - 1u)) : 0;
  return _mm512_maskz_loadu_ps(m, p);
}
// Stores lanes [0, n) of v (n in [0, kW]).
inline void vstore_lanes(float* p, vf v, int n) {
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
}
#elif defined(__AVX2__) && defined(__FMA__)
#define TRIAD_RT_ISA "avx2"
using vf = __m256;
constexpr int kW = 8;
inline vf vload(const float* p) {
  return _mm256_loadu_ps(p);
}
inline void vstore(float* p, vf v) {
  _mm256_storeu_ps(p, v);
}
inline vf vset1(float x) {
  return _mm256_set1_ps(x);
}
inline vf vzero() {
  return _mm256_setzero_ps();
}
inline vf vfma(vf a, vf b, vf c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline vf vadd(vf a, vf b) {
  return _mm256_add_ps(a, b);
}
inline vf vsub(vf a, vf b) {
  return _mm256_sub_ps(a, b);
}
inline vf vmul(vf a, vf b) {
  return _mm256_mul_ps(a, b);
}
inline vf vdiv(vf a, vf b) {
  return _mm256_div_ps(a, b);
}
inline vf vmax(vf a, vf b) {
  return _mm256_max_ps(a, b);
}
inline vf vmin(vf a, vf b) {
  return _mm256_min_ps(a, b);
}
inline float vhsum(vf v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float vhmax(vf v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline vf vpow2i(vf n) {
  __m256i i = _mm256_cvtps_epi32(n);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23));
}
inline __m256i lane_mask(int a, int b) {
  const __m256i l = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(a), l),
                             _mm256_cmpgt_epi32(_mm256_set1_epi32(b), l));
}
inline vf vload_lanes(const float* p, int a, int b) {
  return _mm256_maskload_ps(p, lane_mask(a, b));
}
inline void vstore_lanes(float* p, vf v, int n) {
  _mm256_maskstore_ps(p, lane_mask(0, n), v);
}
#else
#define TRIAD_RT_ISA "scalar"
#define TRIAD_RT_SCALAR 1
using vf = float;
constexpr int kW = 1;
#endif

// Scalar primitives, always defined (the vector tail loops use them; in the scalar build they
// are the vector primitives too). Branch-free so that loops calling them auto-vectorize.
#ifdef TRIAD_RT_SCALAR
inline vf vload(const float* p) {
  return *p;
}
inline void vstore(float* p, vf v) {
  *p = v;
}
inline vf vset1(float x) {
  return x;
}
inline vf vzero() {
  return 0.0f;
}
inline float vhsum(float v) {
  return v;
}
inline float vhmax(float v) {
  return v;
}
inline vf vload_lanes(const float* p, int a, int b) {
  return a <= 0 && b > 0 ? *p : 0.0f;
}
inline void vstore_lanes(float* p, vf v, int n) {
  if (n > 0) *p = v;
}
#endif
inline float vfma(float a, float b, float c) {
  return a * b + c;
}
inline float vadd(float a, float b) {
  return a + b;
}
inline float vsub(float a, float b) {
  return a - b;
}
inline float vmul(float a, float b) {
  return a * b;
}
inline float vdiv(float a, float b) {
  return a / b;
}
inline float vmax(float a, float b) {
  return a > b ? a : b;
}
inline float vmin(float a, float b) {
  return a < b ? a : b;
}
inline float vpow2i(float n) {
  int32_t i = (static_cast<int32_t>(n) + 127) << 23;
  float r;
  std::memcpy(&r, &i, sizeof r);
  return r;
}
template <class V> inline V vsplat(float x);
template <> inline float vsplat<float>(float x) {
  return x;
}
#ifndef TRIAD_RT_SCALAR
template <> inline vf vsplat<vf>(float x) {
  return vset1(x);
}
#endif

// ============================================================================================
// Transcendental functions, generic over float and vf (same algorithm, so vector bodies and
// scalar tails agree).
// ============================================================================================

/// e^x, Cephes-style: x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial for e^r, times 2^n.
/// Max relative error about 1.5e-7 (measured in tests/cpu_kernels) for x in [-87, 88.37];
/// results below about 1e-38 flush to 0 (no denormals); x > 88.376 is clamped (no inf).
template <class V> inline V exp_t(V x) {
  x = vmin(vmax(x, vsplat<V>(-88.3762626647949f)), vsplat<V>(88.3762626647949f));
  // Round to nearest with the 1.5 * 2^23 trick (exact for |t| < 2^22, no SSE4.1 needed).
  V t = vmul(x, vsplat<V>(1.44269504088896341f));
  V n = vsub(vadd(t, vsplat<V>(12582912.0f)), vsplat<V>(12582912.0f));
  V r = vfma(n, vsplat<V>(-0.693359375f), x);
  r = vfma(n, vsplat<V>(2.12194440e-4f), r);
  V p = vsplat<V>(1.9875691500e-4f);
  p = vfma(p, r, vsplat<V>(1.3981999507e-3f));
  p = vfma(p, r, vsplat<V>(8.3334519073e-3f));
  p = vfma(p, r, vsplat<V>(4.1665795894e-2f));
  p = vfma(p, r, vsplat<V>(1.6666665459e-1f));
  p = vfma(p, r, vsplat<V>(5.0000001201e-1f));
  V r2 = vmul(r, r);
  p = vfma(p, r2, vadd(r, vsplat<V>(1.0f)));
  return vmul(p, vpow2i(n));
}

/// erf(x): rational minimax approximation x*P(x^2)/Q(x^2) on [-4, 4] (erf is +-1 in fp32 beyond),
/// the form used by Eigen. Max relative error about 4e-7 (a few ulp).
template <class V> inline V erf_t(V x) {
  x = vmin(vmax(x, vsplat<V>(-4.0f)), vsplat<V>(4.0f));
  V x2 = vmul(x, x);
  V p = vfma(x2, vsplat<V>(-2.72614225801306e-10f), vsplat<V>(2.77068142495902e-08f));
  p = vfma(x2, p, vsplat<V>(-2.10102402082508e-06f));
  p = vfma(x2, p, vsplat<V>(-5.69250639462346e-05f));
  p = vfma(x2, p, vsplat<V>(-7.34990630326855e-04f));
  p = vfma(x2, p, vsplat<V>(-2.95459980854025e-03f));
  p = vfma(x2, p, vsplat<V>(-1.60960333262415e-02f));
  p = vmul(x, p);
  V q = vfma(x2, vsplat<V>(-1.45660718464996e-05f), vsplat<V>(-2.13374055278905e-04f));
  q = vfma(x2, q, vsplat<V>(-1.68282697438203e-03f));
  q = vfma(x2, q, vsplat<V>(-7.37332916720468e-03f));
  q = vfma(x2, q, vsplat<V>(-1.42647390514189e-02f));
  return vdiv(p, q);
}

/// tanh(x): rational approximation on [-7.9, 7.9] (+-1 beyond). Max relative error about 4e-7.
template <class V> inline V tanh_t(V x) {
  x = vmin(vmax(x, vsplat<V>(-7.90531110763549805f)), vsplat<V>(7.90531110763549805f));
  V x2 = vmul(x, x);
  V p = vfma(x2, vsplat<V>(-2.76076847742355e-16f), vsplat<V>(2.00018790482477e-13f));
  p = vfma(x2, p, vsplat<V>(-8.60467152213735e-11f));
  p = vfma(x2, p, vsplat<V>(5.12229709037114e-08f));
  p = vfma(x2, p, vsplat<V>(1.48572235717979e-05f));
  p = vfma(x2, p, vsplat<V>(6.37261928875436e-04f));
  p = vfma(x2, p, vsplat<V>(4.89352455891786e-03f));
  p = vmul(x, p);
  V q = vfma(x2, vsplat<V>(1.19825839466702e-06f), vsplat<V>(1.18534705686654e-04f));
  q = vfma(x2, q, vsplat<V>(2.26843463243900e-03f));
  q = vfma(x2, q, vsplat<V>(4.89352518554385e-03f));
  return vdiv(p, q);
}

/// 1 / (1 + e^-x).
template <class V> inline V sigmoid_t(V x) {
  return vdiv(vsplat<V>(1.0f), vadd(vsplat<V>(1.0f), exp_t(vsub(vsplat<V>(0.0f), x))));
}
/// GELU with erf (BERT's Erf pattern): 0.5 x (1 + erf(x / sqrt 2)).
template <class V> inline V gelu_t(V x) {
  V e = erf_t(vmul(x, vsplat<V>(0.70710678118654752f)));
  return vmul(vmul(x, vsplat<V>(0.5f)), vadd(vsplat<V>(1.0f), e));
}

// Scalar entry points for generated elementwise code (inline, branch-free: loops auto-vectorize).
inline float exp_s(float x) {
  return exp_t<float>(x);
}
inline float erf_s(float x) {
  return erf_t<float>(x);
}
inline float tanh_s(float x) {
  return tanh_t<float>(x);
}
inline float sigmoid_s(float x) {
  return sigmoid_t<float>(x);
}
inline float gelu_s(float x) {
  return gelu_t<float>(x);
}

namespace detail {
/// y[i] = f(x[i]) with vector body and scalar tail; x == y allowed.
template <class F> inline void map_rows(const float* x, float* y, ptrdiff_t n, F f) {
  ptrdiff_t i = 0;
#ifndef TRIAD_RT_SCALAR
  for (; i + kW <= n; i += kW)
    vstore(y + i, f(vload(x + i)));
#endif
  for (; i < n; ++i)
    y[i] = f(x[i]);
}
} // namespace detail

// Array versions (in place allowed: x == y).
inline void exp_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return exp_t(v); });
}
inline void erf_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return erf_t(v); });
}
inline void tanh_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return tanh_t(v); });
}
inline void sigmoid_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return sigmoid_t(v); });
}
inline void gelu_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return gelu_t(v); });
}
inline void relu_array(const float* x, float* y, ptrdiff_t n) {
  detail::map_rows(x, y, n, [](auto v) { return vmax(v, vsplat<decltype(v)>(0.0f)); });
}
/// y[i] = x[i] + z[i] (residual add); any of them may alias.
inline void add_array(const float* x, const float* z, float* y, ptrdiff_t n) {
  ptrdiff_t i = 0;
#ifndef TRIAD_RT_SCALAR
  for (; i + kW <= n; i += kW)
    vstore(y + i, vadd(vload(x + i), vload(z + i)));
#endif
  for (; i < n; ++i)
    y[i] = x[i] + z[i];
}

} // namespace triad_rt
