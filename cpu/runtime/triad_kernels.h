// Triad CPU run-time kernels: GEMM, convolution, pooling and row-wise helpers for generated code.
//
// Header-only C++17 with no dependency beyond the standard library (threads) and <immintrin.h>.
// Embedded in the triad binary and written next to every generated source, so emitted
// code builds on its own. The CPU target compiles the large kernels once, apart (see "Separate
// compilation" at the end), and generated code reaches them through EpiRef. Everything is fp32,
// row-major (matrices) or NCHW (tensors), except the channel-blocked convolution (NCHW16c,
// `conv2d_nchwc`) that generated code chains.
//
// The SIMD width is chosen at compile time from the target macros, so `-march=native` picks the
// host's best:  __AVX512F__ -> 16 lanes, 14x32 GEMM micro-kernel;  __AVX2__ + __FMA__ -> 8 lanes,
// 6x16;  otherwise a portable scalar path (4x8 micro-kernel), correct everywhere.
//
// Threading: a small pool of worker threads (`set_num_threads(n)`, default: the hardware's
// threads). Work is split into items that the calling thread and the workers take from one
// atomic counter, so the caller never waits for a worker that has not started: on a busy machine
// a descheduled worker costs nothing (OpenMP's fork/join, which waits for every team member, made
// each parallel layer cost a scheduler time slice there). Parallel jobs are only posted when the
// work is large enough (kParallelMinWork multiply-adds or equivalent); small layers run inline.
// A job posted from inside a job runs inline (no nesting). On a busy machine the pool adapts
// (detail::ParallelGovernor): when parallel jobs keep taking longer than the caller alone would
// have, jobs run inline for a while; a spinning thread that finds itself descheduled turns
// spinning off for every thread for a while (TRIAD_POOL_ADAPT=0 turns both off).
//
// Memory: GEMM packs operands into thread-local buffers that grow on first use and are then
// reused (no allocation in steady state). The implicit-GEMM convolution's grid and output
// buffers are supplied by the caller (`conv2d_scratch_bytes`). Constant operands (weights) can be
// packed once at load time (`pack_a` / `pack_b`, `conv2d_pack_weights`).
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
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

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

// ============================================================================================
// Threading
// ============================================================================================

/// Below this much work (multiply-adds or element-ops) a call stays on the calling thread.
constexpr double kParallelMinWork = 1 << 18;

namespace detail {
inline int& thread_setting() {
  static int n = 0;
  return n;
}
} // namespace detail

/// Threads used by every kernel (n < 1 resets to the default, OpenMP's max threads).
inline void set_num_threads(int n) {
  detail::thread_setting() = n < 1 ? 0 : n;
}
inline int num_threads() {
  int n = detail::thread_setting();
  if (n > 0) return n;
  // hardware_concurrency() reads /sys/devices/system/cpu/online: once, not per layer.
  static const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return hw;
}

namespace detail {
/// One parallel job: items [0, n) taken from `next` by whoever comes first, in runs [b, e) that
/// fn(ctx, b, e) computes. Each claim takes (items left) / div items (at least 1; div 0: one
/// at a time): large contiguous runs first, single items at the end (guided scheduling), so a
/// thread that starts late or runs slow leaves at most one item for the others to wait on.
struct Job {
  void (*fn)(void*, ptrdiff_t, ptrdiff_t) = nullptr;
  void* ctx = nullptr;
  ptrdiff_t n = 0;
  ptrdiff_t div = 0;
  std::atomic<ptrdiff_t> next{0};
  std::atomic<int> refs{0}; // workers inside the job (changed under the pool's mutex)
};

inline bool& inside_job() {
  thread_local bool inside = false;
  return inside;
}

/// How long an idle worker (and a caller waiting for workers) spins before sleeping, in
/// microseconds: TRIAD_SPIN_US, default 50. Layers follow each other within microseconds, so
/// a short spin catches the next job without the futex wake-up (several microseconds, often
/// more than a small layer's whole parallel part); bounded, so an idle model costs nothing.
inline int spin_us() {
  static const int us = [] {
    const char* e = std::getenv("TRIAD_SPIN_US");
    return e ? std::max(0, std::atoi(e)) : 50;
  }();
  return us;
}
/// Whether the pool adapts to a busy machine (ParallelGovernor, and spinning turned off after a
/// spinning thread was descheduled): yes unless TRIAD_POOL_ADAPT=0 (for comparisons).
inline bool pool_adapts() {
  static const bool on = [] {
    const char* e = std::getenv("TRIAD_POOL_ADAPT");
    return !(e && e[0] == '0' && e[1] == 0);
  }();
  return on;
}
/// Until when spinning is off (steady_clock ticks): set when a spinning thread finds it was
/// descheduled, i.e. another process wants this core. Spinning then only takes time from the
/// threads it waits for (or from the neighbour), so everyone sleeps at once for a while.
inline std::atomic<int64_t>& no_spin_until() {
  static std::atomic<int64_t> t{0};
  return t;
}
/// How long spinning stays off after a thread was descheduled while spinning.
constexpr std::chrono::milliseconds kNoSpinAfterPreemption{20};
/// A gap this long between two looks at the clock in a spin loop (normally a few microseconds
/// apart) means the thread was descheduled.
constexpr std::chrono::microseconds kPreemptedGap{100};

/// Spins until done() or the spin time is up; true if done. Stops early, and turns spinning off
/// for every thread for kNoSpinAfterPreemption, when the spinning thread is descheduled.
template <class F> inline bool spin_until(F done) {
  const int us = spin_us();
  if (us <= 0) return done();
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now(), last = t0;
  const bool adapt = pool_adapts();
  if (adapt && t0.time_since_epoch().count() < no_spin_until().load(std::memory_order_relaxed))
    return done();
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__SSE2__)
    _mm_pause();
#endif
    if ((i & 63) == 63) {
      auto t = clock::now();
      if (adapt && t - last > kPreemptedGap) {
        no_spin_until().store((t + kNoSpinAfterPreemption).time_since_epoch().count(),
                              std::memory_order_relaxed);
        return done();
      }
      if (t - t0 > std::chrono::microseconds(us)) return done();
      last = t;
    }
  }
}

/// Whether parallel jobs pay off right now, judged by the thread that posts them (one per
/// calling thread). After each parallel job it compares the job's wall time with what the
/// caller alone would have taken (its own time per item times the items). On a shared machine
/// workers can be descheduled for a whole time slice, before or while holding an item, and the
/// job then takes longer than running inline would have. When that is the trend (a moving
/// average of the ratio above kLossLimit), the next jobs run inline, a stretch that doubles
/// while the trend persists (up to kMaxInline jobs, a few seconds of a large model) and resets
/// when threads pay again; the first parallel job after a stretch (which wakes sleeping workers)
/// is not judged. Each judged job can cost a time slice (a worker descheduled holding an item),
/// so after a stretch one more slow job starts the next.
class ParallelGovernor {
public:
  static constexpr double kLossLimit = 0.95; // average job time / inline estimate
  static constexpr int kMinInline = 16, kMaxInline = 16384;
  /// Whether the next job may use worker threads (counts down an inline stretch).
  bool allow() {
    if (inline_left_ > 0) {
      --inline_left_;
      if (inline_left_ == 0) warmup_ = true;
      return false;
    }
    return true;
  }
  /// A parallel job of `n` items took `elapsed` (any unit); the caller ran `own_items` of them
  /// in `own_time`.
  void record(ptrdiff_t n, ptrdiff_t own_items, double elapsed, double own_time) {
    if (warmup_) {
      warmup_ = false;
      return;
    }
    if (own_items <= 0 || own_time <= 0 || n <= 0) return;
    const double ratio = elapsed / (own_time / static_cast<double>(own_items) * n);
    loss_ = 0.75 * loss_ + 0.25 * ratio;
    if (loss_ > kLossLimit && ratio > kLossLimit) {
      // The average stays where it is: one more slow job after the stretch starts the next.
      inline_left_ = stretch_;
      stretch_ = std::min(2 * stretch_, kMaxInline);
    } else if (ratio < 0.9) {
      stretch_ = kMinInline;
    }
  }
  int inline_left() const { return inline_left_; }
  double loss() const { return loss_; }

private:
  static constexpr double kStart = 0.75;
  double loss_ = kStart;
  int inline_left_ = 0, stretch_ = kMinInline;
  bool warmup_ = false;
};

inline ParallelGovernor& governor() {
  thread_local ParallelGovernor g;
  return g;
}

/// Worker threads that spin briefly, then sleep between jobs. The caller of run() works on its
/// own job and then waits only for items that workers already took.
class Pool {
public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
      t.join();
  }
  void run(int threads, ptrdiff_t n, ptrdiff_t div, void (*fn)(void*, ptrdiff_t, ptrdiff_t),
           void* ctx) {
    const auto t0 = std::chrono::steady_clock::now();
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.div = div;
    {
      std::lock_guard<std::mutex> l(m_);
      while (static_cast<int>(workers_.size()) < threads - 1)
        workers_.emplace_back([this] { work(); });
      job_ = &job;
      wanted_ = threads - 1;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    const auto t1 = std::chrono::steady_clock::now();
    const ptrdiff_t own = drain(job);
    const auto t2 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> l(m_);
      job_ = nullptr; // late workers find nothing
    }
    if (!spin_until([&] { return job.refs.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> l(m_);
      done_.wait(l, [&] { return job.refs.load(std::memory_order_relaxed) == 0; });
    }
    const auto t3 = std::chrono::steady_clock::now();
    governor().record(n, own, std::chrono::duration<double>(t3 - t0).count(),
                      std::chrono::duration<double>(t2 - t1).count());
  }

private:
  /// Runs items of `job` until none is left; returns how many this thread ran.
  static ptrdiff_t drain(Job& job) {
    bool& inside = inside_job();
    bool was = inside;
    inside = true;
    ptrdiff_t ran = 0;
    for (;;) {
      ptrdiff_t b, take = 1;
      if (job.div <= 0) {
        b = job.next.fetch_add(1, std::memory_order_relaxed);
      } else {
        b = job.next.load(std::memory_order_relaxed);
        do
          take = std::max<ptrdiff_t>(1, (job.n - b) / job.div);
        while (b < job.n &&
               !job.next.compare_exchange_weak(b, b + take, std::memory_order_relaxed));
      }
      if (b >= job.n) break;
      take = std::min(take, job.n - b);
      job.fn(job.ctx, b, b + take);
      ran += take;
    }
    inside = was;
    return ran;
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               stop_.load(std::memory_order_relaxed);
      });
      Job* job;
      {
        std::unique_lock<std::mutex> l(m_);
        wake_.wait(l, [&] {
          return stop_ ||
                 (job_ && generation_.load(std::memory_order_relaxed) != seen && wanted_ > 0);
        });
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        --wanted_;
        job = job_;
        job->refs.fetch_add(1, std::memory_order_relaxed);
      }
      drain(*job);
      {
        std::lock_guard<std::mutex> l(m_);
        if (job->refs.fetch_sub(1, std::memory_order_release) == 1) done_.notify_all();
      }
    }
  }
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  int wanted_ = 0;                // workers the current job may still take
  std::atomic<bool> stop_{false}; // set under the mutex; read by spinning workers without it
};

inline Pool& pool() {
  static Pool p;
  return p;
}

/// f(i) for i in [0, n) on up to `threads` threads (the caller included), items claimed one at
/// a time, or guided (see Job) when div > 0.
template <class F> void pool_for(int threads, ptrdiff_t n, F& f, ptrdiff_t div = 0) {
  if (threads <= 1 || n <= 1 || inside_job() || (pool_adapts() && !governor().allow())) {
    for (ptrdiff_t i = 0; i < n; ++i)
      f(i);
    return;
  }
  pool().run(
      threads, n, div,
      [](void* c, ptrdiff_t b, ptrdiff_t e) {
        for (ptrdiff_t i = b; i < e; ++i)
          (*static_cast<F*>(c))(i);
      },
      &f);
}

/// Threads worth using for `items` independent items of `work_per_item` each (1 = inline).
inline int threads_for(ptrdiff_t items, double work_per_item) {
  int nt = num_threads();
  if (nt <= 1 || items <= 1 || static_cast<double>(items) * work_per_item < kParallelMinWork)
    return 1;
  return static_cast<int>(std::min<ptrdiff_t>(nt, items));
}
} // namespace detail

/// f(i) for i in [0, n) over threads when n * work_per_item is large enough: guided runs of
/// contiguous items (each claim a 1/(2*threads) share of what is left), so the threads finish
/// within one item of each other. (Fixed chunks of n/(4*threads) items left up to a whole chunk
/// to one thread when the other started a few microseconds late: ResNet-50's 7x7 stem ran
/// 1.68x faster on two threads than on one.)
template <class F> inline void parallel_for(ptrdiff_t n, double work_per_item, F&& f) {
  const int nt = detail::threads_for(n, work_per_item);
  auto item = [&f](ptrdiff_t i) { f(i); };
  detail::pool_for(nt, n, item, 2 * static_cast<ptrdiff_t>(nt));
}

// ============================================================================================
// Scratch memory
// ============================================================================================

namespace detail {
struct AlignedBuffer {
  float* p = nullptr;
  size_t n = 0;
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(p); }
  float* get(size_t floats) {
    if (floats > n) {
      std::free(p);
      size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      p = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!p) {
        n = 0;
        throw std::bad_alloc();
      }
      n = floats;
    }
    return p;
  }
};
/// Per-thread growing buffers: slot 0 packs A blocks, slot 1 packs B blocks, slot 2 edge tiles,
/// slots 3-4 the depthwise convolution's grid and output, slot 5 a padded input row, slot 6 the
/// padded tap rows of a planar-input blocked convolution.
inline float* tls_buffer(int slot, size_t floats) {
  thread_local AlignedBuffer bufs[7];
  return bufs[slot].get(floats);
}
} // namespace detail

// ============================================================================================
// GEMM: C[M,N] = A[M,K] * B[K,N], then epi(row segment) on each finished block of C.
// ============================================================================================

// Register blocking (MR x NR micro-tile of C, NR = kNV vectors) and cache blocking (KC x NR
// micro-panels of B stay in L1, MC x KC blocks of A in L2, KC x NC blocks of B in L3).
#if defined(__AVX512F__)
constexpr int kMR = 14, kNV = 2, kKC = 256, kMC = 14 * 24, kNC = 2048;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kMR = 6, kNV = 2, kKC = 256, kMC = 6 * 48, kNC = 2048;
#else
constexpr int kMR = 4, kNV = 8, kKC = 256, kMC = 4 * 64, kNC = 1024;
#endif
constexpr int kNR = kNV * kW;
/// GEMMs with at most this many rows read unpacked B in place (see gemm_run).
constexpr int kDirectMaxM = 48;
/// Longest K one micro-kernel call runs over a pre-packed B (gemm_run_packed_b): a K x kNR
/// panel (up to 256 KiB with AVX-512) then stays in L2 while every row panel of a block reads it.
constexpr int kKCPackedB = 2048;

// ---- Epilogues: called as epi(float* c, int row, int col0, int n) once per finished row
// segment c[0..n) of C = C[row, col0 .. col0+n), while the block is in cache. Must be
// thread-safe across distinct segments (it is called from every thread).

/// No epilogue.
struct EpiNone {
  void operator()(float*, int, int, int) const {}
};
/// A lambda to run after the built-in part (EpiNone-like when not given).
struct NoThen {
  void operator()(float*, int, int, int) const {}
};
/// c[j] += bias[row], then `then` (activation, residual add, ...).
template <class Then = NoThen> struct EpiBiasRow {
  const float* bias;
  Then then{};
  void operator()(float* c, int row, int col0, int n) const {
    vf b = vset1(bias[row]);
    int j = 0;
#ifndef TRIAD_RT_SCALAR
    for (; j + kW <= n; j += kW)
      vstore(c + j, vadd(vload(c + j), b));
#endif
    for (; j < n; ++j)
      c[j] += bias[row];
    (void)b;
    then(c, row, col0, n);
  }
};
/// c[j] += bias[col0 + j], then `then`.
template <class Then = NoThen> struct EpiBiasCol {
  const float* bias;
  Then then{};
  void operator()(float* c, int row, int col0, int n) const {
    add_array(c, bias + col0, c, n);
    then(c, row, col0, n);
  }
};
template <class Then = NoThen> inline EpiBiasRow<Then> epi_bias_row(const float* b, Then t = {}) {
  return EpiBiasRow<Then>{b, t};
}
template <class Then = NoThen> inline EpiBiasCol<Then> epi_bias_col(const float* b, Then t = {}) {
  return EpiBiasCol<Then>{b, t};
}
/// Ready-made `then` parts.
struct ThenRelu {
  void operator()(float* c, int, int, int n) const { relu_array(c, c, n); }
};
struct ThenGelu {
  void operator()(float* c, int, int, int n) const { gelu_array(c, c, n); }
};

/// Any epilogue behind one indirect call per row segment, which is how the public kernels below
/// (gemm*, conv2d*) pass it on: each kernel is then instantiated once, not once per generated
/// layer (that made compiling a ResNet-50 take 20 s of CPU), and can be compiled separately
/// (triad_kernels.cpp, TRIAD_RT_PRECOMPILED). A call costs a few nanoseconds against the
/// microseconds of work behind each segment. The referenced functor must outlive the call.
class EpiRef {
public:
  EpiRef() = default;
  EpiRef(EpiNone) {}
  template <class F, class = typename std::enable_if<
                         !std::is_same<typename std::decay<F>::type, EpiRef>::value &&
                         !std::is_same<typename std::decay<F>::type, EpiNone>::value>::type>
  EpiRef(const F& f)
      : fn_([](const void* f, float* c, int row, int col0, int n) {
          (*static_cast<const F*>(f))(c, row, col0, n);
        }),
        f_(&f) {}
  void operator()(float* c, int row, int col0, int n) const { fn_(f_, c, row, col0, n); }

private:
  static void none(const void*, float*, int, int, int) {}
  void (*fn_)(const void*, float*, int, int, int) = &none;
  const void* f_ = nullptr;
};

// ---- Packed layouts. Packed A: panels of kMR rows; panel p holds rows [p*kMR, p*kMR + kMR)
// for all K as K groups of kMR floats (zero-padded rows past M), at offset p*kMR*K.
// Packed B: panels of kNR columns; panel q holds columns [q*kNR, ...) as K groups of kNR floats
// (zero-padded columns past N), at offset q*kNR*K. Sizes are in floats.
inline size_t packed_a_size(int M, int K) {
  return static_cast<size_t>((M + kMR - 1) / kMR) * kMR * static_cast<size_t>(K);
}
inline size_t packed_b_size(int K, int N) {
  return static_cast<size_t>((N + kNR - 1) / kNR) * kNR * static_cast<size_t>(K);
}

namespace detail {
/// A strided matrix view: element (i, j) at p[i * rs + j * cs].
struct View {
  const float* p;
  ptrdiff_t rs, cs;
  const float* const* rows = nullptr; // when set, row i starts at rows[i] (cs == 1)
  const int* cols = nullptr;          // with rows: column j is rows[i][cols[j]] (a gather)
  const float* at(ptrdiff_t i, ptrdiff_t j) const {
    return rows ? rows[i] + j * cs : p + i * rs + j * cs;
  }
};

/// Packs rows [i0, i0+mr) x cols [k0, k0+kc) of A into one kMR-panel (k-major, kMR per k).
inline void pack_a_panel(View a, int i0, int mr, int k0, int kc, float* dst) {
  if (a.cs == 1) {
    for (int i = 0; i < mr; ++i) {
      const float* src = a.at(i0 + i, k0);
      for (int k = 0; k < kc; ++k)
        dst[k * kMR + i] = src[k];
    }
  } else {
    for (int k = 0; k < kc; ++k) {
      const float* src = a.at(i0, k0 + k);
      for (int i = 0; i < mr; ++i)
        dst[k * kMR + i] = src[i * a.rs];
    }
  }
  if (mr < kMR)
    for (int k = 0; k < kc; ++k)
      for (int i = mr; i < kMR; ++i)
        dst[k * kMR + i] = 0.0f;
}

/// Packs rows [k0, k0+kc) x cols [j0, j0+nr) of B into one kNR-panel (k-major, kNR per k).
inline void pack_b_panel(View b, int k0, int kc, int j0, int nr, float* dst) {
  if (b.cols) {
    const int* cj = b.cols + j0;
    for (int k = 0; k < kc; ++k) {
      const float* src = b.rows[k0 + k];
      float* d = dst + static_cast<ptrdiff_t>(k) * kNR;
      int j = 0;
#if defined(__AVX512F__)
      for (; j + 16 <= nr; j += 16)
        _mm512_storeu_ps(d + j,
                         _mm512_mask_i32gather_ps(
                             _mm512_setzero_ps(), 0xFFFF,
                             _mm512_loadu_si512(reinterpret_cast<const void*>(cj + j)), src, 4));
#elif defined(__AVX2__) && defined(__FMA__)
      for (; j + 8 <= nr; j += 8)
        _mm256_storeu_ps(d + j,
                         _mm256_i32gather_ps(
                             src, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cj + j)), 4));
#endif
      for (; j < nr; ++j)
        d[j] = src[cj[j]];
      for (; j < kNR && j % kW; ++j)
        d[j] = 0.0f;
      for (; j < kNR; j += kW)
        vstore(d + j, vzero());
    }
    return;
  }
  if (b.cs == 1) {
    for (int k = 0; k < kc; ++k) {
      const float* src = b.at(k0 + k, j0);
      float* d = dst + static_cast<ptrdiff_t>(k) * kNR;
      if (nr == kNR) {
        for (int v = 0; v < kNV; ++v)
          vstore(d + v * kW, vload(src + v * kW));
      } else {
        // Whole vectors where possible (every panel of a small GEMM is an edge panel).
        int j = 0;
        for (; j + kW <= nr; j += kW)
          vstore(d + j, vload(src + j));
        if (j < nr) {
          vstore(d + j, vload_lanes(src + j, 0, nr - j));
          j += kW;
        }
        for (; j < kNR; j += kW)
          vstore(d + j, vzero());
      }
    }
  } else {
    // Transposed B (b.rs == 1): column j is contiguous in k.
    for (int j = 0; j < nr; ++j) {
      const float* src = b.at(k0, j0 + j);
      for (int k = 0; k < kc; ++k)
        dst[static_cast<ptrdiff_t>(k) * kNR + j] = src[k * b.rs];
    }
    if (nr < kNR)
      for (int k = 0; k < kc; ++k)
        for (int j = nr; j < kNR; ++j)
          dst[static_cast<ptrdiff_t>(k) * kNR + j] = 0.0f;
  }
}

/// The step every register-blocked kernel repeats: r[i][v] += a(i) * b[v*kW ...] for MR rows
/// and NV vectors (the NV vectors of b loaded once, one broadcast per row).
template <int MR, int NV, class A>
__attribute__((always_inline)) inline void outer_step(vf (&r)[MR][NV], const float* b, A a) {
  vf bv[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v)
    bv[v] = vload(b + v * kW);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const vf av = vset1(a(i));
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      r[i][v] = vfma(av, bv[v], r[i][v]);
  }
}

/// Accumulators set to the bias vectors (NV vectors from `bias`) in every row, or to zero.
template <int R, int NV>
__attribute__((always_inline)) inline void init_rows(vf (&r)[R][NV], const float* bias) {
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      r[i][v] = bias ? vload(bias + v * kW) : vzero();
}

/// A micro-panel read in place: element (i, k) at p[i * ld + k] (row-major A, no packing).
struct RowsA {
  const float* p;
  ptrdiff_t ld;
  float operator()(int i) const { return p[i * ld]; }
  void next() { ++p; }
};
/// A packed micro-panel (kMR floats per k, see pack_a_panel).
struct PackedA {
  const float* p;
  float operator()(int i) const { return p[i]; }
  void next() { p += kMR; }
};

/// The micro-kernel: C[0..MRt, 0..kNR) (+)= A[MRt x kc] * Bpanel[kc x kNR], accumulators
/// in registers (MRt * kNV vectors). `acc` adds to C (later K blocks), else overwrites. B's rows
/// are ldb floats apart: kNR for a packed panel, the matrix's row stride when read in place.
/// A is an APanel (PackedA or RowsA): a(i) is element (i, k), next() steps k.
template <int MRt, class APanel>
__attribute__((always_inline)) inline void ukernel_t(int kc, APanel a, const float* __restrict b,
                                                     ptrdiff_t ldb, float* __restrict c,
                                                     ptrdiff_t ldc, bool acc) {
  vf r[MRt][kNV];
#ifndef TRIAD_RT_SCALAR
  // The C tile is stored after the k loop: fetch its lines now (strided rows, which the
  // hardware prefetcher does not follow), so the stores do not wait for memory.
#pragma GCC unroll 16
  for (int i = 0; i < MRt; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < kNV; ++v)
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + v * kW), _MM_HINT_T0);
#endif
  if (acc) {
#pragma GCC unroll 16
    for (int i = 0; i < MRt; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < kNV; ++v)
        r[i][v] = vload(c + i * ldc + v * kW);
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < MRt; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < kNV; ++v)
        r[i][v] = vzero();
  }
  for (int k = 0; k < kc; ++k) {
    outer_step(r, b, a);
    a.next();
    b += ldb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MRt; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < kNV; ++v)
      vstore(c + i * ldc + v * kW, r[i][v]);
}

/// The micro-kernel on a packed A micro-panel `a`.
template <int MRt>
inline void ukernel(int kc, const float* __restrict a, const float* __restrict b, ptrdiff_t ldb,
                    float* __restrict c, ptrdiff_t ldc, bool acc) {
  ukernel_t<MRt>(kc, PackedA{a}, b, ldb, c, ldc, acc);
}
/// The micro-kernel on MRt rows of a row-major A read in place (rows lda floats apart): for
/// GEMMs with few rows, packing A would cost several percent of the product.
template <int MRt>
inline void ukernel_rows(int kc, const float* a, ptrdiff_t lda, const float* __restrict b,
                         ptrdiff_t ldb, float* __restrict c, ptrdiff_t ldc, bool acc) {
  ukernel_t<MRt>(kc, RowsA{a, lda}, b, ldb, c, ldc, acc);
}

using UkernelFn = void (*)(int, const float*, const float*, ptrdiff_t, float*, ptrdiff_t, bool);
using UkernelRowsFn = void (*)(int, const float*, ptrdiff_t, const float*, ptrdiff_t, float*,
                               ptrdiff_t, bool);
template <int... Is>
constexpr std::array<UkernelFn, sizeof...(Is)> ukernel_table(std::integer_sequence<int, Is...>) {
  return {{&ukernel<Is + 1>...}};
}
template <int... Is>
constexpr std::array<UkernelRowsFn, sizeof...(Is)>
ukernel_rows_table(std::integer_sequence<int, Is...>) {
  return {{&ukernel_rows<Is + 1>...}};
}
/// ukernel_rows<mr> for mr in [1, kMR].
inline UkernelRowsFn ukernel_rows_for(int mr) {
  static constexpr auto table = ukernel_rows_table(std::make_integer_sequence<int, kMR>());
  return table[mr - 1];
}
/// ukernel<mr> for mr in [1, kMR].
inline UkernelFn ukernel_for(int mr) {
  static constexpr auto table = ukernel_table(std::make_integer_sequence<int, kMR>());
  return table[mr - 1];
}

/// One GEMM problem; A and B either strided views or pre-packed (full K, layouts above).
struct GemmProblem {
  int M, N, K;
  View a;
  const float* a_packed; // non-null: packed A
  View b;
  const float* b_packed; // non-null: packed B
  float* c;
  ptrdiff_t ldc;
  /// A is a plain row-major matrix (unpacked, no gathered rows, unit column stride): the
  /// micro-kernel can read its rows in place (ukernel_rows).
  bool a_row_major() const { return !a_packed && !a.rows && a.cs == 1; }
};

/// Which A block this thread's packing buffer holds (per thread; `problem` tells calls apart).
struct APackState {
  uint64_t problem = 0;
  int ic = -1, pc = -1;
};

/// Whether kMR rows of a row-major A, `lda` floats apart, would compete for one L1 set when the
/// micro-kernel reads them in place. An L1 set holds the lines 4 KiB apart (64 sets of 64-byte
/// lines) and has 8 ways on the cores we target; kMR rows whose stride is a multiple of 4 KiB (K
/// = 1024, 2048, 3072, ...: BERT's 128x768x3072 product) all fall in one set, and every k step then
/// reloads them from L2: 84 GFLOP/s against 112 for a stride of 3088 floats (AVX-512, one thread).
/// Seven rows per set (a stride of 1536 floats) measured at full speed.
inline bool rows_share_l1_set(ptrdiff_t lda) {
  constexpr int kSets = 64, kLine = 64, kWays = 8;
  int rows_in_set[kSets] = {0};
  for (int i = 0; i < kMR; ++i) {
    const auto byte = static_cast<uint64_t>(i) * static_cast<uint64_t>(lda) * sizeof(float);
    if (++rows_in_set[(byte / kLine) % kSets] >= kWays) return true;
  }
  return false;
}
/// A row stride of at least K floats whose rows do not share L1 sets: K rounded up to a
/// 64-byte line, plus one line when that still conflicts (then consecutive rows are one set apart).
inline int padded_row_stride(int K) {
  const int line = 64 / static_cast<int>(sizeof(float));
  const int ld = (K + line - 1) / line * line;
  return rows_share_l1_set(ld) ? ld + line : ld;
}

/// gemm_run with B pre-packed (constant weights): work items share nothing, so there is no
/// shared B buffer and no barrier per K block. A row-major A is read in place by the
/// micro-kernel (ukernel_rows). When its row stride would make the kMR rows share an L1 set
/// (rows_share_l1_set), the rows are first copied to a buffer with a padded stride (a memcpy per
/// row: 1.9 % of a 128x768x3072 product on one thread, against 25 % lost to the conflicts; packing
/// into kMR panels instead measured 4 % slower than the copy). Any other A (transposed,
/// gathered) is packed once per block of kMC rows. Each happens before the items that read it
/// (was: by every item, once per K block, i.e. 8 times over for a 128-row GEMM on two threads).
/// An item is a chunk of B's column panels; it finishes each C tile over all of K (one call per
/// up to kKCPackedB) while the tile is in registers or L1, and runs the epilogue right after.
template <class Epi> void gemm_run_packed_b(const GemmProblem& g, int nt, Epi& epi) {
  const int M = g.M, N = g.N, K = g.K;
  const int npanels = (N + kNR - 1) / kNR;
  const bool row_major = g.a_row_major();
  const bool copy_rows = row_major && rows_share_l1_set(g.a.rs);
  const bool pack_a = !g.a_packed && !row_major;
  const int mcb = std::min(M, kMC);
  const int ldcopy = copy_rows ? padded_row_stride(K) : 0;
  float* abuf = pack_a      ? tls_buffer(0, packed_a_size(mcb, K))
                : copy_rows ? tls_buffer(0, static_cast<size_t>(mcb) * ldcopy)
                            : nullptr;
  const int kblocks = (K + kKCPackedB - 1) / kKCPackedB;
  const int kcb = (K + kblocks - 1) / kblocks;
  // At least 4 items per thread, taken dynamically: a thread that loses its core does fewer.
  const int nitems = nt > 1 ? std::min(npanels, 4 * nt) : 1;
  for (int ic = 0; ic < M; ic += mcb) {
    const int mc = std::min(mcb, M - ic);
    const int mpanels = (mc + kMR - 1) / kMR;
    const int prep_threads = static_cast<double>(mc) * K < kParallelMinWork ? 1 : nt;
    // Row-major A of this block: row r (from ic) at arows + r * lda.
    const float* arows = row_major ? g.a.at(ic, 0) : nullptr;
    ptrdiff_t lda = g.a.rs;
    if (copy_rows) {
      auto copy = [&](ptrdiff_t p) {
        const int i0 = static_cast<int>(p) * kMR, i1 = std::min(mc, i0 + kMR);
        for (int r = i0; r < i1; ++r)
          std::memcpy(abuf + static_cast<ptrdiff_t>(r) * ldcopy, g.a.at(ic + r, 0),
                      sizeof(float) * K);
      };
      pool_for(prep_threads, mpanels, copy);
      arows = abuf;
      lda = ldcopy;
    }
    const float* ablk = g.a_packed ? g.a_packed + static_cast<ptrdiff_t>(ic) * K : abuf;
    if (pack_a) {
      auto pack = [&](ptrdiff_t p) {
        const int i = static_cast<int>(p) * kMR;
        pack_a_panel(g.a, ic + i, std::min(kMR, mc - i), 0, K,
                     abuf + p * static_cast<ptrdiff_t>(kMR) * K);
      };
      pool_for(prep_threads, mpanels, pack);
    }
    auto item = [&](ptrdiff_t it) {
      float* tile = tls_buffer(2, static_cast<size_t>(kMR) * kNR);
      const int q0 = static_cast<int>(npanels * it / nitems);
      const int q1 = static_cast<int>(npanels * (it + 1) / nitems);
      for (int q = q0; q < q1; ++q) {
        const int j = q * kNR;
        const int nr = std::min(kNR, N - j);
        const float* bq = g.b_packed + static_cast<ptrdiff_t>(q) * kNR * K;
        for (int p = 0; p < mpanels; ++p) {
          const int i = ic + p * kMR;
          const int mr = std::min(kMR, M - i);
          float* cp = g.c + static_cast<ptrdiff_t>(i) * g.ldc + j;
          // Right edge: the full-width kernel accumulates in a private tile, then the valid
          // part is copied out.
          float* out = nr == kNR ? cp : tile;
          const ptrdiff_t ldo = nr == kNR ? g.ldc : kNR;
          const float* ap = ablk + static_cast<ptrdiff_t>(p) * kMR * K;
          for (int pc = 0; pc < K; pc += kcb) {
            const int kc = std::min(kcb, K - pc);
            const float* bp = bq + static_cast<ptrdiff_t>(pc) * kNR;
            if (row_major)
              ukernel_rows_for(mr)(kc, arows + static_cast<ptrdiff_t>(p) * kMR * lda + pc, lda, bp,
                                   kNR, out, ldo, pc > 0);
            else
              ukernel_for(mr)(kc, ap + static_cast<ptrdiff_t>(pc) * kMR, bp, kNR, out, ldo, pc > 0);
          }
          if (nr < kNR)
            for (int r = 0; r < mr; ++r)
              std::memcpy(cp + r * g.ldc, tile + r * kNR, sizeof(float) * nr);
          for (int r = 0; r < mr; ++r)
            epi(cp + r * g.ldc, i + r, j, nr);
        }
      }
    };
    pool_for(nt, nitems, item);
  }
}

template <class Epi> void gemm_run(const GemmProblem& g, Epi& epi) {
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {
    for (int i = 0; i < g.M; ++i) {
      std::memset(g.c + i * g.ldc, 0, sizeof(float) * g.N);
      epi(g.c + i * g.ldc, i, 0, g.N);
    }
    return;
  }
  const int M = g.M, N = g.N, K = g.K;
  double work = static_cast<double>(M) * N * K;
  int nt = num_threads();
  if (nt > 1 && (work < kParallelMinWork * 2 || inside_job())) nt = 1;
  if (g.b_packed) {
    gemm_run_packed_b(g, nt, epi);
    return;
  }
  static std::atomic<uint64_t> serial{0};
  const uint64_t problem = ++serial;
  const int mblocks = (M + kMC - 1) / kMC;
  // Few rows of A: each B element is used in only M multiply-adds, so packing B would cost about
  // as much as the product; full-width panels are then read in place (row stride g.b.rs), and
  // only the right-edge panel is packed.
  const bool direct = !g.b.rows && g.b.cs == 1 && M <= kDirectMaxM;
  // One K block (K <= kKC: attention's Q.K^T and P.V, K = 64 or 128): a row-major A is read in
  // place, as gemm_run_packed_b does; each A panel then serves only N / kNR column panels, so
  // packing it cost more than it saved (BERT's 12 heads, one thread: Q.K^T with its scale and
  // mask epilogue 84 -> 93 GFLOP/s, P.V 84 -> 105).
  const bool rows_a = g.a_row_major() && K <= kKC && !rows_share_l1_set(g.a.rs);
  // B blocks are packed into the calling thread's buffer and read by every thread during the
  // block's compute job.
  float* bbuf =
      tls_buffer(1, static_cast<size_t>(kKC) * ((std::min(kNC, N) + kNR - 1) / kNR) * kNR);
  for (int jc = 0; jc < N; jc += kNC) {
    const int nc = std::min(kNC, N - jc);
    const int npanels = (nc + kNR - 1) / kNR;
    // Work items: (MC block, chunk of its column panels), at least 4 per thread when threaded,
    // taken dynamically: a thread that loses its core does fewer.
    int nchunks = 1;
    if (nt > 1) nchunks = std::min(npanels, std::max(1, (4 * nt + mblocks - 1) / mblocks));
    const int nitems = mblocks * nchunks;

    // C[item] (+)= A[ic block, pc..pc+kc) * B block (panels from bblk, bstride apart).
    auto compute = [&](int it, int pc, int kc, const float* bblk, ptrdiff_t bstride) {
      const int ic = (it / nchunks) * kMC;
      const int chunk = it % nchunks;
      const int mc = std::min(kMC, M - ic);
      const int mpanels = (mc + kMR - 1) / kMR;
      const bool last_k = pc + kc == K;
      float* tile = tls_buffer(2, static_cast<size_t>(kMR) * kNR);
      const float* ablk;
      ptrdiff_t astride;
      if (rows_a) {
        ablk = g.a.at(ic, pc);
        astride = kMR * g.a.rs;
      } else if (g.a_packed) {
        ablk = g.a_packed + static_cast<ptrdiff_t>(ic) * K + static_cast<ptrdiff_t>(pc) * kMR;
        astride = static_cast<ptrdiff_t>(kMR) * K;
      } else {
        float* abuf = tls_buffer(0, static_cast<size_t>(kMC) * kKC);
        thread_local APackState state;
        astride = static_cast<ptrdiff_t>(kMR) * kc;
        if (state.problem != problem || state.ic != ic || state.pc != pc) {
          for (int p = 0; p < mpanels; ++p)
            pack_a_panel(g.a, ic + p * kMR, std::min(kMR, mc - p * kMR), pc, kc,
                         abuf + p * astride);
          state = {problem, ic, pc};
        }
        ablk = abuf;
      }
      const int q0 = npanels * chunk / nchunks, q1 = npanels * (chunk + 1) / nchunks;
      for (int q = q0; q < q1; ++q) {
        const int j = jc + q * kNR;
        const int nr = std::min(kNR, N - j);
        const float* bp = bblk + q * bstride;
        for (int p = 0; p < mpanels; ++p) {
          const int i = ic + p * kMR;
          const int mr = std::min(kMR, M - i);
          const float* ap = ablk + p * astride;
          float* cp = g.c + static_cast<ptrdiff_t>(i) * g.ldc + j;
          auto uk = [&](const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc) {
            if (rows_a)
              ukernel_rows_for(mr)(kc, ap, g.a.rs, b, ldb, c, ldc, pc > 0);
            else
              ukernel_for(mr)(kc, ap, b, ldb, c, ldc, pc > 0);
          };
          if (nr == kNR) {
            if (direct)
              uk(g.b.at(pc, j), g.b.rs, cp, g.ldc);
            else
              uk(bp, kNR, cp, g.ldc);
          } else {
            // Right edge: run the full-width kernel on a private tile, copy the valid part.
            if (pc > 0)
              for (int r = 0; r < mr; ++r)
                std::memcpy(tile + r * kNR, cp + r * g.ldc, sizeof(float) * nr);
            uk(bp, kNR, tile, kNR);
            for (int r = 0; r < mr; ++r)
              std::memcpy(cp + r * g.ldc, tile + r * kNR, sizeof(float) * nr);
          }
          if (last_k)
            for (int r = 0; r < mr; ++r)
              epi(cp + r * g.ldc, i + r, j, nr);
        }
      }
    };

    for (int pc = 0; pc < K; pc += kKC) {
      const int kc = std::min(kKC, K - pc);
      const ptrdiff_t bstride = static_cast<ptrdiff_t>(kNR) * kc;
      auto pack = [&](ptrdiff_t q) {
        const int qi = static_cast<int>(q);
        pack_b_panel(g.b, pc, kc, jc + qi * kNR, std::min(kNR, nc - qi * kNR), bbuf + q * bstride);
      };
      if (direct) {
        if (nc % kNR) pack(npanels - 1);
      } else {
        pool_for(static_cast<double>(npanels) * kNR * kc < kParallelMinWork ? 1 : nt, npanels,
                 pack);
      }
      auto item = [&](ptrdiff_t it) { compute(static_cast<int>(it), pc, kc, bbuf, bstride); };
      pool_for(nt, nitems, item);
    }
  }
}

inline View view_a(const float* A, int lda, bool transA) {
  return transA ? View{A, 1, lda} : View{A, lda, 1};
}
inline View view_b(const float* B, int ldb, bool transB) {
  return transB ? View{B, 1, ldb} : View{B, ldb, 1};
}
} // namespace detail

/// Packs A (M x K; transA: A is stored K x M, lda its row stride) into dst[packed_a_size(M, K)].
inline void pack_a(int M, int K, const float* A, int lda, bool transA, float* dst) {
  detail::View a = detail::view_a(A, lda, transA);
  int panels = (M + kMR - 1) / kMR;
  parallel_for(panels, static_cast<double>(kMR) * K, [&](ptrdiff_t p) {
    int i = static_cast<int>(p) * kMR;
    detail::pack_a_panel(a, i, std::min(kMR, M - i), 0, K,
                         dst + p * kMR * static_cast<ptrdiff_t>(K));
  });
}
/// Packs B (K x N; transB: B is stored N x K, ldb its row stride) into dst[packed_b_size(K, N)].
inline void pack_b(int K, int N, const float* B, int ldb, bool transB, float* dst) {
  detail::View b = detail::view_b(B, ldb, transB);
  int panels = (N + kNR - 1) / kNR;
  parallel_for(panels, static_cast<double>(kNR) * K, [&](ptrdiff_t q) {
    int j = static_cast<int>(q) * kNR;
    detail::pack_b_panel(b, 0, K, j, std::min(kNR, N - j),
                         dst + q * kNR * static_cast<ptrdiff_t>(K));
  });
}

/// C[M,N] = op(A) * op(B), row-major; op(A) = A (M x K, row stride lda) or, with transA, the
/// transpose of A stored K x M; likewise B (K x N, or N x K with transB). Then epi on C.
template <class Epi = EpiNone>
inline void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb,
                 bool transB, float* C, int ldc, const Epi& epi = {}) {
  detail::GemmProblem g{
      M,       N, K,  detail::view_a(A, lda, transA), nullptr, detail::view_b(B, ldb, transB),
      nullptr, C, ldc};
  EpiRef e(epi);
  detail::gemm_run(g, e);
}
/// As gemm, with B pre-packed by pack_b(K, N, ...).
template <class Epi = EpiNone>
inline void gemm_packed_b(int M, int N, int K, const float* A, int lda, bool transA,
                          const float* Bp, float* C, int ldc, const Epi& epi = {}) {
  detail::GemmProblem g{M,  N, K,  detail::view_a(A, lda, transA), nullptr, detail::View{},
                        Bp, C, ldc};
  EpiRef e(epi);
  detail::gemm_run(g, e);
}
/// As gemm, with A pre-packed by pack_a(M, K, ...) (convolution weights).
template <class Epi = EpiNone>
inline void gemm_packed_a(int M, int N, int K, const float* Ap, const float* B, int ldb,
                          bool transB, float* C, int ldc, const Epi& epi = {}) {
  detail::GemmProblem g{M,       N, K,  detail::View{}, Ap, detail::view_b(B, ldb, transB),
                        nullptr, C, ldc};
  EpiRef e(epi);
  detail::gemm_run(g, e);
}

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

// ---- Winograd F(m x m, 3 x 3) for dense 3x3 stride-1 convolutions (Lavin & Gray, 2015). The
// output is cut into m x m tiles; tile Y comes from its (m+2) x (m+2) input patch d as
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A,
// so the alpha^2 = (m+2)^2 transformed positions are independent GEMMs [tiles x C] x [C x OC]:
// m = 4 does 4x fewer multiplies than the direct kernel (36 GEMMs), m = 2 2.25x (16 GEMMs),
// at the cost of the input and output transforms and of F(4x4)'s larger rounding (its
// transforms hold 4, 5 and 8; F(2x2)'s only +-1). The transformed domain is laid out as blocked
// tensors whose "pixels" are the tiles (T = N * tiles per image):
//   V[xi][C/16][T][16]   the transformed input of position xi (0 .. alpha^2),
//   U[xi]                 G g G^T at position xi, packed as conv2d_nchwc's 1x1 weights,
//   Mx[xi][OC/16][T][16]  their products summed over C,
// so each GEMM is a 1x1 blocked convolution of T pixels, run by nchwc_tile. The input is first
// copied blocked with a zero halo that also covers the last tiles' overhang.

namespace detail {
/// TRIAD_WINOGRAD: unset (or anything else): chosen by shape; "0": off; "2" or "4": F(2x2) or
/// F(4x4) for every 3x3 stride-1 dense convolution (comparisons, tests). Read once; tests may set
/// it.
inline int& winograd_setting() {
  static int v = [] {
    const char* e = std::getenv("TRIAD_WINOGRAD");
    if (!e) return -1;
    return std::strcmp(e, "0") == 0   ? 0
           : std::strcmp(e, "2") == 0 ? 2
           : std::strcmp(e, "4") == 0 ? 4
                                      : -1;
  }();
  return v;
}
} // namespace detail

/// The Winograd output tile (2 or 4) conv2d_nchwc uses for `s`, or 0 for its direct kernel.
/// Automatic choice (measured, docs/performance.md "2026-11-25: Winograd"): only with C and
/// OC >= 32 (fewer channels leave the transforms to dominate); F(4x4) where there are at least 6
/// of its tiles, else F(2x2) (ResNet's 7x7 planes: 4 tiles of 4x4 leave the GEMMs' micro-tiles
/// short, and a quarter of their outputs fall outside the plane).
inline int conv2d_nchwc_winograd(const Conv2dShape& s) {
  if (s.group != 1 || s.KH != 3 || s.KW != 3 || s.stride_h != 1 || s.stride_w != 1 ||
      s.dil_h != 1 || s.dil_w != 1 || s.C % kCB != 0 || s.OC % kCB != 0)
    return 0;
  const int set = detail::winograd_setting();
  if (set >= 0) return set;
  if (s.C < 32 || s.OC < 32 || s.OH() < 2 || s.OW() < 2) return 0;
  const ptrdiff_t tiles4 = static_cast<ptrdiff_t>(s.N) * ((s.OH() + 3) / 4) * ((s.OW() + 3) / 4);
  return tiles4 >= 6 ? 4 : 2;
}

namespace detail {
/// Tiling of a Winograd convolution: th x tw tiles of m x m per image, T in all; the blocked,
/// zero-haloed input copy is Hp x Wp (pads, then zeros up to the last tile's patch).
struct WinoGeom {
  int m, alpha, th, tw;
  ptrdiff_t T;
  int Hp, Wp;
};
inline WinoGeom wino_geom(const Conv2dShape& s, int m) {
  WinoGeom g;
  g.m = m;
  g.alpha = m + 2;
  g.th = (s.OH() + m - 1) / m;
  g.tw = (s.OW() + m - 1) / m;
  g.T = static_cast<ptrdiff_t>(s.N) * g.th * g.tw;
  g.Hp = g.th * m + 2;
  g.Wp = g.tw * m + 2;
  return g;
}
/// Scratch layout (floats, each part 64-byte aligned): the input copy, V, Mx.
struct WinoScratch {
  float *xin, *v, *mx;
  uintptr_t end;
};
inline WinoScratch wino_scratch(const Conv2dShape& s, const WinoGeom& g, void* scratch) {
  auto align = [](uintptr_t p) { return (p + 63) / 64 * 64; };
  const size_t a2 = static_cast<size_t>(g.alpha) * g.alpha;
  const uintptr_t xin = align(reinterpret_cast<uintptr_t>(scratch));
  const uintptr_t v = align(xin + sizeof(float) * static_cast<size_t>(s.N) * s.C * g.Hp * g.Wp);
  const uintptr_t mx = align(v + sizeof(float) * a2 * s.C * g.T);
  WinoScratch w;
  w.xin = reinterpret_cast<float*>(xin);
  w.v = reinterpret_cast<float*>(v);
  w.mx = reinterpret_cast<float*>(mx);
  w.end = mx + sizeof(float) * a2 * s.OC * g.T;
  return w;
}
/// The weight transform G (alpha x 3) of F(m x m, 3 x 3), row-major.
inline const double* wino_g(int m) {
  static const double g2[4 * 3] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
  static const double g4[6 * 3] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                                   -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                                   1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
  return m == 2 ? g2 : g4;
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

namespace detail {
/// The 1-D transforms of F(m, 3): `in` is B^T d (alpha -> alpha), `out` is A^T x (alpha -> m).
template <int M> struct WinoTransform;
template <> struct WinoTransform<2> {
  static constexpr int kA = 4;
  __attribute__((always_inline)) static void in(const vf (&d)[4], vf (&t)[4]) {
    t[0] = vsub(d[0], d[2]);
    t[1] = vadd(d[1], d[2]);
    t[2] = vsub(d[2], d[1]);
    t[3] = vsub(d[1], d[3]);
  }
  __attribute__((always_inline)) static void out(const vf (&x)[4], vf (&y)[2]) {
    y[0] = vadd(vadd(x[0], x[1]), x[2]);
    y[1] = vsub(vsub(x[1], x[2]), x[3]);
  }
};
template <> struct WinoTransform<4> {
  static constexpr int kA = 6;
  __attribute__((always_inline)) static void in(const vf (&d)[6], vf (&t)[6]) {
    const vf c4 = vset1(4.0f), c5 = vset1(-5.0f), c2 = vset1(2.0f);
    const vf s12 = vadd(d[1], d[2]), s34 = vadd(d[3], d[4]);
    const vf d12 = vsub(d[1], d[2]), d43 = vsub(d[4], d[3]);
    const vf d42 = vsub(d[4], d[2]), d31 = vsub(d[3], d[1]);
    t[0] = vfma(c4, d[0], vfma(c5, d[2], d[4]));
    t[1] = vfma(vset1(-4.0f), s12, s34);
    t[2] = vfma(c4, d12, d43);
    t[3] = vfma(c2, d31, d42);
    t[4] = vfma(vset1(-2.0f), d31, d42);
    t[5] = vfma(c4, d[1], vfma(c5, d[3], d[5]));
  }
  __attribute__((always_inline)) static void out(const vf (&x)[6], vf (&y)[4]) {
    const vf s12 = vadd(x[1], x[2]), s34 = vadd(x[3], x[4]);
    const vf d12 = vsub(x[1], x[2]), d34 = vsub(x[3], x[4]);
    y[0] = vadd(vadd(x[0], s12), s34);
    y[1] = vfma(vset1(2.0f), d34, d12);
    y[2] = vfma(vset1(4.0f), s34, s12);
    y[3] = vadd(vfma(vset1(8.0f), d34, d12), x[5]);
  }
};

/// One vector of channels of one tile: V[xi] = (B^T d B)[xi] for the patch at `p` (rows `rs`
/// floats apart, pixels kCB), stored at v + xi * vs.
template <int M> inline void wino_input_tile(const float* p, ptrdiff_t rs, float* v, ptrdiff_t vs) {
  using Tr = WinoTransform<M>;
  constexpr int A = Tr::kA;
  vf t[A][A];
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    vf col[A], r[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i)
      col[i] = vload(p + i * rs + j * kCB);
    Tr::in(col, r);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i)
      t[i][j] = r[i];
  }
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    vf r[A];
    Tr::in(t[i], r);
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j)
      vstore(v + (i * A + j) * vs, r[j]);
  }
}

/// One vector of channels of one tile: Y = A^T Mx A (+ bias) from Mx[xi] at mx + xi * ms, its
/// first `rows` x `cols` pixels stored at y (rows `ys` floats apart, pixels kCB).
template <int M>
inline void wino_output_tile(const float* mx, ptrdiff_t ms, const float* bias, float* y,
                             ptrdiff_t ys, int rows, int cols) {
  using Tr = WinoTransform<M>;
  constexpr int A = Tr::kA;
  vf t[M][A];
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    vf col[A], r[M];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i)
      col[i] = vload(mx + (i * A + j) * ms);
    Tr::out(col, r);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
      t[i][j] = r[i];
  }
  const vf b = bias ? vload(bias) : vzero();
  for (int i = 0; i < rows; ++i) {
    vf r[M];
    Tr::out(t[i], r);
    if (cols == M) {
#pragma GCC unroll 8
      for (int j = 0; j < M; ++j)
        vstore(y + i * ys + j * kCB, vadd(r[j], b));
    } else {
      for (int j = 0; j < cols; ++j)
        vstore(y + i * ys + j * kCB, vadd(r[j], b));
    }
  }
}

/// conv2d_nchwc by Winograd F(M x M, 3 x 3) (see "Winograd" above); packed_w holds U.
template <int M, class Epi>
void nchwc_winograd(const Conv2dShape& s, const float* x, bool x_blocked, const float* packed_w,
                    const float* bias, float* y, void* scratch, Epi& epi) {
  constexpr int A = M + 2;
  const WinoGeom g = wino_geom(s, M);
  const WinoScratch mem = wino_scratch(s, g, scratch);
  to_nchwc(x, x_blocked, s.N, s.C, s.H, s.W, s.pad_t, s.pad_l, g.Hp - s.H - s.pad_t,
           g.Wp - s.W - s.pad_l, mem.xin);
  const int Cb = s.C / kCB, OCb = s.OC / kCB, OH = s.OH(), OW = s.OW();
  const ptrdiff_t T16 = g.T * kCB;                                   // one block of V or Mx
  const ptrdiff_t vs = static_cast<ptrdiff_t>(s.C) * g.T;            // between positions of V
  const ptrdiff_t ms = static_cast<ptrdiff_t>(s.OC) * g.T;           // ... and of Mx
  const ptrdiff_t plane = static_cast<ptrdiff_t>(g.Hp) * g.Wp * kCB; // an input block
  const ptrdiff_t rs = static_cast<ptrdiff_t>(g.Wp) * kCB;
  // Input transform: items (image, channel block, tile row).
  parallel_for(static_cast<ptrdiff_t>(s.N) * Cb * g.th, static_cast<double>(g.tw) * A * A * kCB * 4,
               [&](ptrdiff_t it) {
                 const int tr = static_cast<int>(it % g.th);
                 const ptrdiff_t nc = it / g.th, n = nc / Cb, cb = nc % Cb;
                 const float* row = mem.xin + nc * plane + static_cast<ptrdiff_t>(tr) * M * rs;
                 float* v = mem.v + cb * T16 + ((n * g.th + tr) * g.tw) * kCB;
                 for (int tw = 0; tw < g.tw; ++tw)
#pragma GCC unroll 2
                   for (int l = 0; l < kCB; l += kW)
                     wino_input_tile<M>(row + tw * M * kCB + l, rs, v + tw * kCB + l, vs);
               });
  // The alpha^2 GEMMs Mx[xi] = V[xi] U[xi]: items (position, weight panel, chunk of up to 16
  // micro-tiles of tiles, sized evenly so no tile block is a sliver).
  const ptrdiff_t tblocks = (g.T + kCMR - 1) / kCMR;
  const ptrdiff_t chunks = (tblocks + 15) / 16;
  const ptrdiff_t panels = (OCb + kCPB - 1) / kCPB;
  const ptrdiff_t tap0 = 0;
  parallel_for(
      A * A * panels * chunks, static_cast<double>(std::min<ptrdiff_t>(g.T, 16 * kCMR)) * kCP * s.C,
      [&](ptrdiff_t it) {
        const ptrdiff_t chunk = it % chunks, q = it / chunks % panels, xi = it / chunks / panels;
        const int blocks = static_cast<int>(std::min<ptrdiff_t>(kCPB, OCb - q * kCPB));
        const float* v = mem.v + xi * vs;
        const float* w = packed_w + xi * s.OC * s.C + q * kCP * s.C;
        float* mx = mem.mx + xi * ms + q * kCPB * T16;
        for (ptrdiff_t b = chunk * 16; b < std::min(tblocks, chunk * 16 + 16); ++b) {
          const ptrdiff_t t0 = g.T * b / tblocks, t1 = g.T * (b + 1) / tblocks;
          nchwc_tile_for(static_cast<int>(t1 - t0), blocks, 1,
                         false)(Cb, 1, &tap0, T16, v + t0 * kCB, w, nullptr, mx + t0 * kCB, T16);
        }
      });
  // Output transform, bias, then the epilogue on each tile row: items (image, output block,
  // tile row).
  parallel_for(static_cast<ptrdiff_t>(s.N) * OCb * g.th,
               static_cast<double>(g.tw) * A * A * kCB * 2, [&](ptrdiff_t it) {
                 const int tr = static_cast<int>(it % g.th);
                 const ptrdiff_t no = it / g.th, n = no / OCb, ob = no % OCb;
                 const int rows = std::min(M, OH - tr * M);
                 const ptrdiff_t ys = static_cast<ptrdiff_t>(OW) * kCB;
                 float* yrow = y + (no * OH + static_cast<ptrdiff_t>(tr) * M) * ys;
                 const float* mx = mem.mx + ob * T16 + ((n * g.th + tr) * g.tw) * kCB;
                 for (int tw = 0; tw < g.tw; ++tw) {
                   const int cols = std::min(M, OW - tw * M);
#pragma GCC unroll 2
                   for (int l = 0; l < kCB; l += kW)
                     wino_output_tile<M>(mx + tw * kCB + l, ms,
                                         bias ? bias + ob * kCB + l : nullptr,
                                         yrow + tw * M * kCB + l, ys, rows, cols);
                 }
                 epi(yrow, static_cast<int>(no), tr * M * OW * kCB, rows * OW * kCB);
               });
}
} // namespace detail

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

/// Layer normalization: y = (x - mean) / sqrt(var + eps) * scale + bias (biased variance, two
/// passes for accuracy); scale and bias have n elements (bias may be null).
/// Layer normalization of each row of n floats; mean_out / rstd_out (optional) receive each
/// row's mean and 1/sqrt(variance + eps) (ONNX's Mean and InvStdDev outputs).
inline void layernorm_rows(const float* x, float* y, ptrdiff_t rows, ptrdiff_t n,
                           const float* scale, const float* bias, float eps,
                           float* mean_out = nullptr, float* rstd_out = nullptr) {
  parallel_for(rows, 4.0 * static_cast<double>(n), [&](ptrdiff_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float mean = detail::sum_array(xr, n) / static_cast<float>(n);
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

// ============================================================================================
// Separate compilation. The kernels behind EpiRef are templates only so that they can be
// instantiated once: a source that defines TRIAD_RT_INSTANTIATE before including this header
// instantiates them, and one that defines TRIAD_RT_PRECOMPILED leaves them to that object (the
// CPU target compiles them once per compiler and flags and links them into every model). With
// neither, the header stays self-contained.
// ============================================================================================

#if defined(TRIAD_RT_INSTANTIATE)
#define TRIAD_RT_EXTERN
#elif defined(TRIAD_RT_PRECOMPILED)
#define TRIAD_RT_EXTERN extern
#endif
#ifdef TRIAD_RT_EXTERN
namespace detail {
TRIAD_RT_EXTERN template void gemm_run<EpiRef>(const GemmProblem&, EpiRef&);
TRIAD_RT_EXTERN template void conv2d_k<EpiRef>(const Conv2dShape&, const float*, const float*,
                                               float*, void*, EpiRef);
TRIAD_RT_EXTERN template void conv2d_nchwc_k<EpiRef>(const Conv2dShape&, const float*, bool,
                                                     const float*, const float*, float*, void*,
                                                     EpiRef);
TRIAD_RT_EXTERN template void conv2d_nchwc_nchw_k<EpiRef>(const Conv2dShape&, const float*, bool,
                                                          const float*, const float*, float*, void*,
                                                          EpiRef);
} // namespace detail
#undef TRIAD_RT_EXTERN
#endif

} // namespace triad_rt
