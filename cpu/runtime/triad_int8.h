// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// Integer GEMM and convolution for quantized models (QLinearConv, QLinearMatMul, MatMulInteger as
// ir/passes/FuseQdq.cpp makes them from QDQ graphs): int32 sums of (x - x_zp) * (w - w_zp) over
// 8-bit operands, exact, then an epilogue that stores the sums or requantizes them to 8 bits.
//
// Exactness. Both operands are shifted by their zero points when they are packed, into int16
// (-255 .. 255), and multiplied in pairs along K: vpmaddwd sums two int16 products into an
// int32 lane (at most 2 * 255 * 255, never saturating), vpaddd accumulates, wrapping as the
// reference's int32 accumulators do. (vpmaddubsw, which multiplies the 8-bit values directly,
// saturates its int16 pair sums whenever both products are large: ONNX Runtime's u8s8 kernels
// on CPUs without VNNI accept that error; these kernels do not.) On CPUs with AVX-VNNI or
// AVX512-VNNI, vpdpwssd does the multiply and the add in one instruction, same layout.
//
// Layouts (the same on every instruction set, so packed weights never depend on the build):
//   packed A: panels of kQMR rows; per pair of K indices kp, kQMR int32 words each holding the
//             int16 pair (A[i][2kp], A[i][2kp+1]);  rows past M and the K index past K are 0.
//   packed B: panels of kQNR columns; per kp, kQNR words (B[2kp][j], B[2kp+1][j]).
// The micro-kernel computes a kQMR x kQNR tile of C = A * B with kQMR broadcasts of A's words
// against two vectors of B's per kp. A convolution is C[oc][pixel] = W[oc][k] * im2col(x)[k][pixel]
// (weights packed as A once, at load; the input packed as B per run), so its output rows are
// NCHW planes; a MatMul is C[m][n] = x[m][k] * W[k][n] (activations packed as A per run,
// weights as B at load).
//
// With VNNI (AVX512-VNNI, AVX-VNNI) there is a second, byte layout for the common case of
// signed weights with zero point 0 (unsigned ones with 128): vpdpbusd multiplies unsigned by
// signed bytes and sums four products into an int32 lane without saturating, four times the work
// of an int16 pair per instruction. The activations stay bytes (int8 ones XOR 0x80, their zero
// point + 128); the weights are bytes; the activations' zero point comes out as a compensation,
// sum((x - x_zp) * w) = sum(x * w) - x_zp * sum(w), with sum(w) per output taken at pack time;
// wrapping int32 arithmetic keeps it exact. Layout q8: panels of kQ8MR (broadcast operand) and
// kQ8NR (vector operand) lines, per quad of K indices kq four consecutive bytes per line.
// Packed weights begin with a 64-byte header saying which layout they hold (QPacked), decided at
// pack time from the zero points and the instruction set the code was compiled for.
//
// On AVX-512 a convolution's byte-layout weights take the c4 order (qconv_c4) unless it is
// depthwise or 1x1 stride 1: K runs over (quad of channels, tap, channel in the quad), so that the
// input, copied once per run into a padded NCHW4c buffer, gives each quad row of a B panel as
// 4-byte words (no im2col). The GEMM then requantizes its tiles in registers (q8_gemm_requant).
//
// Requantization (the reference's, ir/ops/QuantizeProducts.cpp): y = saturate(round_half_even(
// float(int32(acc + bias)) * mult) + y_zp), where mult = x_scale * w_scale / y_scale in float and
// NaN gives the zero point; the caller may narrow [lo, hi] (a fused Relu or Clip).
#pragma once

#include "triad_conv.h" // Conv2dShape

#include <vector>

// GCC 12 reports the AVX-512 intrinsics' own _mm512_undefined_*() placeholders as maybe
// uninitialized once they are inlined into these kernels (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace triad_rt {

constexpr int kQMR = 6, kQNR = 16;

// The byte (u8 x s8) layout: 512-bit VNNI, 256-bit VNNI, or (TRIAD_Q8_SCALAR, for the kernel
// tests on machines without VNNI) its layouts with a scalar micro-kernel; otherwise absent.
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define TRIAD_Q8_ISA 512
constexpr int kQ8MR = 8, kQ8NR = 32;
#elif defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define TRIAD_Q8_ISA 256
constexpr int kQ8MR = 6, kQ8NR = 16;
#elif defined(TRIAD_Q8_SCALAR)
#define TRIAD_Q8_ISA 1
constexpr int kQ8MR = 8, kQ8NR = 32;
#endif

/// Quads of K indices in the byte layout.
inline int q8_quads(int K) {
  return (K + 3) / 4;
}

/// Header of packed weights: which layout follows, 64 bytes after the start.
struct QPacked {
  int32_t q8 = 0; // 1: the byte layout (with its sums of weights after the panels); 0: int16 pairs
  int32_t c4 = 0; // 1 (with q8): a convolution's K in the c4 order (qconv_c4)
  static constexpr size_t kHeader = 64;
  static const QPacked& of(const void* p) { return *static_cast<const QPacked*>(p); }
  template <class T> static const T* data(const void* p) {
    return reinterpret_cast<const T*>(static_cast<const char*>(p) + kHeader);
  }
  template <class T> static T* data(void* p) {
    return reinterpret_cast<T*>(static_cast<char*>(p) + kHeader);
  }
};

/// Whether weights of type W with these zero points take the byte layout: representable as
/// signed bytes with zero point 0 (int8 with zero point 0, uint8 with 128) on a VNNI build.
template <class W> inline bool q8_weights(const W* zp, int n) {
#if defined(TRIAD_Q8_ISA)
  const int want = std::is_signed_v<W> ? 0 : 128;
  if (!zp) return want == 0;
  for (int i = 0; i < n; ++i)
    if (static_cast<int>(zp[i]) != want) return false;
  return true;
#else
  (void)zp, (void)n;
  return false;
#endif
}

inline int q_kpairs(int K) {
  return (K + 1) / 2;
}
inline size_t q_packed_a_bytes(int M, int K) {
  return static_cast<size_t>((M + kQMR - 1) / kQMR) * kQMR * q_kpairs(K) * 2 * sizeof(int16_t);
}
inline size_t q_packed_b_bytes(int K, int N) {
  return static_cast<size_t>((N + kQNR - 1) / kQNR) * kQNR * q_kpairs(K) * 2 * sizeof(int16_t);
}

/// Packs `rows` vectors of K shifted values, v(r, k), in panels of W (kQMR: A's rows; kQNR: B's
/// columns): per pair of K indices kp, W int16 pairs (v(r, 2kp), v(r, 2kp+1)); past `rows` and K,
/// 0.
template <int W, class Get> inline void q_pack_pairs(int rows, int K, Get v, int16_t* dst) {
  const int kp = q_kpairs(K);
  for (int r0 = 0; r0 < rows; r0 += W)
    for (int p = 0; p < kp; ++p)
      for (int i = 0; i < W; ++i, dst += 2) {
        const int r = r0 + i, k = 2 * p;
        dst[0] = r < rows ? static_cast<int16_t>(v(r, k)) : int16_t(0);
        dst[1] = r < rows && k + 1 < K ? static_cast<int16_t>(v(r, k + 1)) : int16_t(0);
      }
}

/// Packs A (M x K) with a(i, k) giving the shifted value: panels of kQMR rows (layout above).
template <class Get> inline void q_pack_a(int M, int K, Get a, int16_t* dst) {
  q_pack_pairs<kQMR>(M, K, a, dst);
}

/// Packs B (K x N) with b(k, j) giving the shifted value: panels of kQNR columns.
template <class Get> inline void q_pack_b(int K, int N, Get b, int16_t* dst) {
  q_pack_pairs<kQNR>(
      N, K, [&](int j, int k) { return b(k, j); }, dst);
}

namespace detail {
/// Packs the columns [j0, j0 + kQNR) of B (K x N, row k at rows[k], 8-bit values of type X
/// shifted by zp) into one panel; columns past N are 0.
template <class X>
inline void q_pack_b_panel(int K, int N, const X* const* rows, int zp, int j0, int16_t* dst) {
  const int kp = q_kpairs(K);
  const int n = std::min(kQNR, N - j0);
#if defined(__AVX2__)
  if (n == kQNR) {
    const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zp));
    auto widen = [&](const X* r) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + j0));
      return _mm256_sub_epi16(
          std::is_signed_v<X> ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v), z);
    };
    for (int p = 0; p < kp; ++p, dst += 2 * kQNR) {
      const __m256i a = widen(rows[2 * p]);
      const __m256i b = 2 * p + 1 < K ? widen(rows[2 * p + 1]) : _mm256_setzero_si256();
      const __m256i lo = _mm256_unpacklo_epi16(a, b); // columns 0-3 | 8-11
      const __m256i hi = _mm256_unpackhi_epi16(a, b); // columns 4-7 | 12-15
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + kQNR),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    return;
  }
#endif
  for (int p = 0; p < kp; ++p)
    for (int j = 0; j < kQNR; ++j, dst += 2) {
      const int k = 2 * p;
      dst[0] = j < n ? static_cast<int16_t>(rows[k][j0 + j] - zp) : int16_t(0);
      dst[1] = j < n && k + 1 < K ? static_cast<int16_t>(rows[k + 1][j0 + j] - zp) : int16_t(0);
    }
}

#if defined(__AVX2__)
/// The 6x16 int32 tile on 256-bit vectors, for both layouts (the same bytes per step: six 4-byte
/// words of A, 24 bytes, and two vectors of B, 64): per step mac(acc, broadcast word of A's row
/// i, B's vector) into each row's two accumulators. Written out so that they stay in registers.
template <class Mac>
inline void tile_6x16(int steps, const void* a, const void* b, int32_t* __restrict c, Mac mac) {
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int p = 0; p < steps; ++p, pa += 24, pb += 64) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32));
    auto step = [&](int i, __m256i& x0, __m256i& x1) {
      int32_t w;
      std::memcpy(&w, pa + 4 * i, sizeof w);
      const __m256i av = _mm256_set1_epi32(w);
      x0 = mac(x0, av, b0);
      x1 = mac(x1, av, b1);
    };
    step(0, c00, c01);
    step(1, c10, c11);
    step(2, c20, c21);
    step(3, c30, c31);
    step(4, c40, c41);
    step(5, c50, c51);
  }
  auto put = [&](int i, __m256i x0, __m256i x1) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * 16), x0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * 16 + 8), x1);
  };
  put(0, c00, c01);
  put(1, c10, c11);
  put(2, c20, c21);
  put(3, c30, c31);
  put(4, c40, c41);
  put(5, c50, c51);
}
#endif

/// The micro-kernel: c[i * kQNR + j] = sum over kp pairs of A's panel row i times B's panel
/// column j (int32, wrapping).
inline void q_ukernel(int kp, const int16_t* __restrict a, const int16_t* __restrict b,
                      int32_t* __restrict c) {
#if defined(__AVX2__)
  static_assert(kQMR == 6 && kQNR == 16, "tile_6x16's geometry");
  tile_6x16(kp, a, b, c, [](__m256i x, __m256i av, __m256i bv) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(x, av, bv);
#elif defined(__AVXVNNI__)
    return _mm256_dpwssd_avx_epi32(x, av, bv);
#else
    return _mm256_add_epi32(x, _mm256_madd_epi16(av, bv));
#endif
  });
#else
  for (int i = 0; i < kQMR * kQNR; ++i)
    c[i] = 0;
  for (int p = 0; p < kp; ++p, a += 2 * kQMR, b += 2 * kQNR)
    for (int i = 0; i < kQMR; ++i)
      for (int j = 0; j < kQNR; ++j) {
        const uint32_t s = static_cast<uint32_t>(a[2 * i] * b[2 * j] + a[2 * i + 1] * b[2 * j + 1]);
        c[i * kQNR + j] = static_cast<int32_t>(static_cast<uint32_t>(c[i * kQNR + j]) + s);
      }
#endif
}

#if defined(TRIAD_Q8_ISA)
#if TRIAD_Q8_ISA == 512
/// The 8x32 tile on 512-bit vectors: per quad, the broadcast panel's 8 words against the vector
/// panel's two vectors, 16 accumulators that stay in registers. init(i) gives row i's starting
/// value (both of its vectors), finish(i, x0, x1) takes its sums (columns 0-15, 16-31).
template <bool BcastU8, class Init, class Finish>
__attribute__((always_inline)) inline void q8_tile512(int kq, const uint8_t* __restrict a,
                                                      const uint8_t* __restrict b, const Init& init,
                                                      const Finish& finish) {
  __m512i c00 = init(0), c01 = c00, c10 = init(1), c11 = c10, c20 = init(2), c21 = c20,
          c30 = init(3), c31 = c30, c40 = init(4), c41 = c40, c50 = init(5), c51 = c50,
          c60 = init(6), c61 = c60, c70 = init(7), c71 = c70;
  for (int p = 0; p < kq; ++p, a += 4 * kQ8MR, b += 4 * kQ8NR) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
    auto step = [&](int i, __m512i& x0, __m512i& x1) {
      int32_t w;
      std::memcpy(&w, a + 4 * i, sizeof w);
      const __m512i av = _mm512_set1_epi32(w);
      if constexpr (BcastU8) {
        x0 = _mm512_dpbusd_epi32(x0, av, b0);
        x1 = _mm512_dpbusd_epi32(x1, av, b1);
      } else {
        x0 = _mm512_dpbusd_epi32(x0, b0, av);
        x1 = _mm512_dpbusd_epi32(x1, b1, av);
      }
    };
    step(0, c00, c01);
    step(1, c10, c11);
    step(2, c20, c21);
    step(3, c30, c31);
    step(4, c40, c41);
    step(5, c50, c51);
    step(6, c60, c61);
    step(7, c70, c71);
  }
  finish(0, c00, c01);
  finish(1, c10, c11);
  finish(2, c20, c21);
  finish(3, c30, c31);
  finish(4, c40, c41);
  finish(5, c50, c51);
  finish(6, c60, c61);
  finish(7, c70, c71);
}
#endif

/// The byte micro-kernel: c[i * kQ8NR + j] = sum over kq quads of the broadcast panel's line i
/// times the vector panel's line j, four byte products each, the unsigned operand being the
/// broadcast one when BcastU8 (a MatMul's activations) and the vector one otherwise (a
/// convolution's im2col); int32, wrapping.
template <bool BcastU8>
inline void q8_ukernel(int kq, const uint8_t* __restrict a, const uint8_t* __restrict b,
                       int32_t* __restrict c) {
#if TRIAD_Q8_ISA == 512
  q8_tile512<BcastU8>(
      kq, a, b, [](int) { return _mm512_setzero_si512(); },
      [&](int i, __m512i x0, __m512i x1) {
        _mm512_storeu_si512(c + i * kQ8NR, x0);
        _mm512_storeu_si512(c + i * kQ8NR + 16, x1);
      });
#elif TRIAD_Q8_ISA == 256
  static_assert(kQ8MR == 6 && kQ8NR == 16, "tile_6x16's geometry");
  tile_6x16(kq, a, b, c, [](__m256i x, __m256i av, __m256i bv) {
    const __m256i u = BcastU8 ? av : bv, s = BcastU8 ? bv : av;
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(x, u, s);
#else
    return _mm256_dpbusd_avx_epi32(x, u, s);
#endif
  });
#else
  for (int i = 0; i < kQ8MR * kQ8NR; ++i)
    c[i] = 0;
  for (int p = 0; p < kq; ++p, a += 4 * kQ8MR, b += 4 * kQ8NR)
    for (int i = 0; i < kQ8MR; ++i)
      for (int j = 0; j < kQ8NR; ++j) {
        uint32_t sum = static_cast<uint32_t>(c[i * kQ8NR + j]);
        for (int t = 0; t < 4; ++t) {
          const uint8_t x = a[4 * i + t], y = b[4 * j + t];
          const int u = BcastU8 ? x : y, v = static_cast<int8_t>(BcastU8 ? y : x);
          sum += static_cast<uint32_t>(u * v);
        }
        c[i * kQ8NR + j] = static_cast<int32_t>(sum);
      }
#endif
}
#endif

/// One requantized value: saturate(round_half_even(float(int32(acc + bias)) * mult) + zp) in
/// [lo, hi]; NaN gives the zero point. QuantizeLinear's own step (triad_scalar.h) into int16,
/// wide enough for every 8-bit [lo, hi].
inline int q_requant1(int32_t acc, int32_t bias, float mult, int zp, int lo, int hi) {
  const float v = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc) +
                                                          static_cast<uint32_t>(bias))) *
                  mult;
  return std::min(std::max(static_cast<int>(quantize_linear<int16_t>(v, zp)), lo), hi);
}

#if defined(__AVX2__)
/// q_requant1 on 8 lanes (vroundps rounds half to even whatever MXCSR says).
inline __m256i q_requant8(__m256i acc, __m256i bias, __m256 mult, __m256i zp, __m256i lo,
                          __m256i hi) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc, bias)), mult);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); // NaN -> 0
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-65536.0f)), _mm256_set1_ps(65536.0f));
  __m256i r =
      _mm256_cvttps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  r = _mm256_add_epi32(r, zp);
  return _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
}

/// 16 int32 values in [-128, 255] (already clamped) -> 16 bytes of type Y.
template <class Y> inline __m128i q_narrow16(__m256i r0, __m256i r1) {
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), 0xD8);
  const __m128i l = _mm256_castsi256_si128(w), h = _mm256_extracti128_si256(w, 1);
  return std::is_signed_v<Y> ? _mm_packs_epi16(l, h) : _mm_packus_epi16(l, h);
}
#endif

#if defined(__AVX512F__)
/// q_requant1 on 16 lanes whose sums already hold the bias: the same steps as q_requant8
/// (cvtps2dq rounds half to even under the explicit rounding mode).
inline __m512i q_requant16(__m512i acc, __m512 mult, __m512i zp, __m512i lo, __m512i hi) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult);
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); // NaN -> 0
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-65536.0f)), _mm512_set1_ps(65536.0f));
  __m512i r = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_add_epi32(r, zp);
  return _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
}

/// Stores the low bytes of 16 int32 lanes, the lanes in mask k (all 16: a plain store). vpmovdb
/// into a register, then the store: vpmovdb with a memory operand is many times slower on AMD's
/// Zen 4.
inline void q_store16(void* dst, __mmask16 k, __m512i v) {
  const __m128i b = _mm512_cvtepi32_epi8(v);
  if (k == 0xFFFF)
    _mm_storeu_si128(static_cast<__m128i*>(dst), b);
  else
    _mm_mask_storeu_epi8(dst, k, b);
}
#endif
} // namespace detail

/// Requantizing epilogue: C (rows x cols, row-major at y with row stride ldy) as 8-bit Y, from
/// tiles of sums with row stride ldt whose rows hold whole multiples of 16 readable sums even
/// when fewer (nr) are stored.
/// bias (int32) and mult are per row (a convolution's output channels: row % period when period
/// is set, rows being n * OC + oc) or, with per_col, per column (a MatMul's); bias may be null;
/// mult has one entry when scalar_mult.
template <class Y> struct QRequantEpi {
  Y* y = nullptr;
  ptrdiff_t ldy = 0;
  const int32_t* bias = nullptr;
  const float* mult = nullptr;
  bool per_col = false, scalar_mult = false;
  int period = 0;
  int zp = 0, lo = 0, hi = 255;

  void operator()(const int32_t* tile, int ldt, int row0, int mr, int col0, int nr) const {
    for (int i = 0; i < mr; ++i) {
      const int row = row0 + i, prow = period ? row % period : row;
      const int32_t* t = tile + static_cast<ptrdiff_t>(i) * ldt;
      Y* out = y + row * ldy + col0;
#if defined(__AVX512F__)
      if (!per_col) {
        const __m512i b = _mm512_set1_epi32(bias ? bias[prow] : 0);
        const __m512 m = _mm512_set1_ps(mult[scalar_mult ? 0 : prow]);
        const __m512i z = _mm512_set1_epi32(zp), l = _mm512_set1_epi32(lo),
                      h = _mm512_set1_epi32(hi);
        for (int j = 0; j < nr; j += 16) { // 16 lanes computed, up to 16 stored
          const __m512i acc = _mm512_add_epi32(_mm512_loadu_si512(t + j), b);
          const __mmask16 k = nr - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (nr - j)) - 1);
          detail::q_store16(out + j, k, detail::q_requant16(acc, m, z, l, h));
        }
        continue;
      }
#endif
#if defined(__AVX2__)
      if (!per_col) {
        const __m256i b = _mm256_set1_epi32(bias ? bias[prow] : 0);
        const __m256 m = _mm256_set1_ps(mult[scalar_mult ? 0 : prow]);
        const __m256i z = _mm256_set1_epi32(zp), l = _mm256_set1_epi32(lo),
                      h = _mm256_set1_epi32(hi);
        for (int j = 0; j < nr; j += 16) { // 16 lanes computed, up to 16 stored
          const __m256i r0 = detail::q_requant8(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + j)), b, m, z, l, h);
          const __m256i r1 = detail::q_requant8(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + j + 8)), b, m, z, l, h);
          const __m128i v = detail::q_narrow16<Y>(r0, r1);
          if (nr - j >= 16) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), v);
          } else {
            alignas(16) Y part[16];
            _mm_store_si128(reinterpret_cast<__m128i*>(part), v);
            std::memcpy(out + j, part, sizeof(Y) * static_cast<size_t>(nr - j));
          }
        }
        continue;
      }
#endif
      for (int j = 0; j < nr; ++j) {
        const int p = per_col ? col0 + j : prow;
        out[j] = static_cast<Y>(
            detail::q_requant1(t[j], bias ? bias[p] : 0, mult[scalar_mult ? 0 : p], zp, lo, hi));
      }
    }
  }
};

/// Epilogue storing the int32 sums (MatMulInteger, ConvInteger).
struct QStoreEpi {
  int32_t* y = nullptr;
  ptrdiff_t ldy = 0;
  void operator()(const int32_t* tile, int ldt, int row0, int mr, int col0, int nr) const {
    for (int i = 0; i < mr; ++i)
      std::memcpy(y + (row0 + i) * ldy + col0, tile + static_cast<ptrdiff_t>(i) * ldt,
                  sizeof(int32_t) * nr);
  }
};

namespace detail {
/// The tile loop of both layouts: C[M, N] from MR-line panels of A (panel_a elements each) and
/// NR-line panels of B (panel_b); tile(a, b, row0, mr, col0, nr) computes and stores the MR x NR
/// tile of those panels (mr, nr of it inside C). Threads take chunks of B's panels small enough to
/// stay in L2 across every row panel, one row panel at a time.
template <int MR, int NR, class TA, class TB, class Tile>
void q_tiles(int M, int N, const TA* pa, size_t panel_a, const TB* pb, size_t panel_b,
             const Tile& tile) {
  if (M <= 0 || N <= 0) return;
  const int mb = (M + MR - 1) / MR, nb = (N + NR - 1) / NR;
  const size_t bytes_b = panel_b * sizeof(TB);
  const int chunk = std::max(1, std::min(nb, static_cast<int>((192 << 10) / (bytes_b + 1))));
  const int nchunks = (nb + chunk - 1) / chunk;
  const double work = static_cast<double>(MR) * chunk * panel_b; // multiply-adds per item
  parallel_for(static_cast<ptrdiff_t>(nchunks) * mb, work, [&](ptrdiff_t it) {
    const int ch = static_cast<int>(it / mb), rb = static_cast<int>(it % mb);
    const TA* a = pa + rb * panel_a;
    const int mr = std::min(MR, M - rb * MR);
    for (int q = ch * chunk; q < std::min(nb, (ch + 1) * chunk); ++q)
      tile(a, pb + q * panel_b, rb * MR, mr, q * NR, std::min(NR, N - q * NR));
  });
}

/// q_tiles with the sums of each tile in memory: ukernel(a, b, sums) fills MR x NR int32 sums,
/// epi(sums, NR, row0, mr, col0, nr) takes them.
template <int MR, int NR, class TA, class TB, class Kernel, class Epi>
void q_tiles_epi(int M, int N, const TA* pa, size_t panel_a, const TB* pb, size_t panel_b,
                 const Kernel& ukernel, const Epi& epi) {
  q_tiles<MR, NR>(M, N, pa, panel_a, pb, panel_b,
                  [&](const TA* a, const TB* b, int row0, int mr, int col0, int nr) {
                    alignas(64) int32_t sums[MR * NR];
                    ukernel(a, b, sums);
                    epi(sums, NR, row0, mr, col0, nr);
                  });
}
} // namespace detail

/// C[M, N] = A * B from packed operands (q_packed_a_bytes / q_packed_b_bytes layouts), epi(tile,
/// ldt, row0, mr, col0, nr) on each finished tile.
template <class Epi>
void q_gemm(int M, int N, int K, const int16_t* pa, const int16_t* pb, const Epi& epi) {
  const int kp = q_kpairs(K);
  detail::q_tiles_epi<kQMR, kQNR>(
      M, N, pa, static_cast<size_t>(kp) * 2 * kQMR, pb, static_cast<size_t>(kp) * 2 * kQNR,
      [kp](const int16_t* a, const int16_t* b, int32_t* t) { detail::q_ukernel(kp, a, b, t); },
      epi);
}

#if defined(TRIAD_Q8_ISA)
/// The byte layout's C[M, N] = A * B - compensation: A's panels (kQ8MR lines) are the
/// broadcast operand, B's (kQ8NR lines) the vector one; the unsigned one is A when BcastU8.
/// The compensation x_zp * sum(w) is subtracted per row (row_sums) or per column (col_sums).
template <bool BcastU8, class Epi>
void q8_gemm(int M, int N, int K, const uint8_t* pa, const uint8_t* pb, uint32_t x_zp,
             const int32_t* row_sums, const int32_t* col_sums, const Epi& epi) {
  const int kq = q8_quads(K);
  detail::q_tiles_epi<kQ8MR, kQ8NR>(
      M, N, pa, static_cast<size_t>(kq) * 4 * kQ8MR, pb, static_cast<size_t>(kq) * 4 * kQ8NR,
      [kq](const uint8_t* a, const uint8_t* b, int32_t* t) {
        detail::q8_ukernel<BcastU8>(kq, a, b, t);
      },
      [&](int32_t* tile, int ldt, int row0, int mr, int col0, int nr) {
        for (int i = 0; i < mr; ++i) {
          int32_t* t = tile + static_cast<ptrdiff_t>(i) * ldt;
          if (row_sums) {
            const uint32_t c = x_zp * static_cast<uint32_t>(row_sums[row0 + i]);
            for (int j = 0; j < kQ8NR; ++j)
              t[j] = static_cast<int32_t>(static_cast<uint32_t>(t[j]) - c);
          } else {
            for (int j = 0; j < nr; ++j)
              t[j] = static_cast<int32_t>(static_cast<uint32_t>(t[j]) -
                                          x_zp * static_cast<uint32_t>(col_sums[col0 + j]));
          }
        }
        epi(tile, ldt, row0, mr, col0, nr);
      });
}
#endif

/// Packs B (K x N) whose row k is rows[k] (8-bit values shifted by zp), in parallel.
template <class X>
inline void q_pack_b_rows(int K, int N, const X* const* rows, int zp, int16_t* dst) {
  const int nb = (N + kQNR - 1) / kQNR;
  const size_t panel = static_cast<size_t>(q_kpairs(K)) * 2 * kQNR;
  parallel_for(nb, static_cast<double>(K) * kQNR, [&](ptrdiff_t q) {
    detail::q_pack_b_panel(K, N, rows, zp, static_cast<int>(q) * kQNR, dst + q * panel);
  });
}

#if defined(TRIAD_Q8_ISA)
inline size_t q8_packed_bytes(int lines, int line_panel, int K) {
  return static_cast<size_t>((lines + line_panel - 1) / line_panel) * line_panel * q8_quads(K) * 4;
}

namespace detail {
/// Packs `lines` lines of K signed bytes, v(line, k) (an int in -128 .. 127), into the byte layout
/// in panels of W lines (0 past `lines` and K); sums[line] = the line's sum when sums is set.
template <int W, class Get>
inline void q8_pack_lines(int lines, int K, Get v, uint8_t* dst, int32_t* sums) {
  const int kq = q8_quads(K);
  for (int r0 = 0; r0 < lines; r0 += W)
    for (int p = 0; p < kq; ++p)
      for (int i = 0; i < W; ++i)
        for (int t = 0; t < 4; ++t, ++dst) {
          const int r = r0 + i, k = 4 * p + t;
          const int x = r < lines && k < K ? v(r, k) : 0;
          *dst = static_cast<uint8_t>(x);
          if (sums && r < lines) sums[r] = (t == 0 && p == 0 ? 0 : sums[r]) + x;
        }
}

/// Interleaves n bytes of four rows into n 4-byte words: dst[4j + t] = r[t][j] ^ flip, or
/// `missing` where r[t] is null.
inline void q8_interleave4(const uint8_t* const r[4], int n, uint8_t flip, uint8_t missing,
                           uint8_t* dst) {
  int j = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip)),
                m = _mm_set1_epi8(static_cast<char>(missing));
  for (; j + 16 <= n; j += 16) {
    auto ld = [&](int t) {
      return r[t] ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[t] + j)), f)
                  : m;
    };
    const __m128i a = ld(0), b = ld(1), c = ld(2), d = ld(3);
    const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    const __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
    __m128i* o = reinterpret_cast<__m128i*>(dst + 4 * j); // words j .. j+3, j+4 .. j+7, ...
    _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(ab0, cd0));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
  }
#endif
  for (; j < n; ++j)
    for (int t = 0; t < 4; ++t)
      dst[4 * j + t] = r[t] ? static_cast<uint8_t>(r[t][j] ^ flip) : missing;
}

/// Packs the columns [j0, j0 + kQ8NR) of B (K x N, row k at rows[k], bytes XOR flip: unsigned)
/// into one panel of the byte layout; columns past N and rows past K are 0.
template <class X>
inline void q8_pack_b_panel(int K, int N, const X* const* rows, uint8_t flip, int j0,
                            uint8_t* dst) {
  const int kq = q8_quads(K), n = std::min(kQ8NR, N - j0);
  for (int p = 0; p < kq; ++p, dst += 4 * kQ8NR) {
    const uint8_t* r[4];
    for (int t = 0; t < 4; ++t)
      r[t] = 4 * p + t < K ? reinterpret_cast<const uint8_t*>(rows[4 * p + t]) + j0 : nullptr;
    q8_interleave4(r, n, flip, 0, dst);
    std::memset(dst + 4 * n, 0, static_cast<size_t>(4 * (kQ8NR - n)));
  }
}
} // namespace detail

#endif

/// The signed byte of a weight w of type W in the byte layout (q8_weights: zero point 0 or 128).
template <class W> inline int q8_weight(W w) {
  return std::is_signed_v<W> ? static_cast<int>(w) : static_cast<int>(w) - 128;
}

#if TRIAD_Q8_ISA == 512
namespace detail {
template <class E> struct is_requant_epi : std::false_type {};
template <class Y> struct is_requant_epi<QRequantEpi<Y>> : std::true_type {};

/// The per-row parameters of q8_gemm_requant: each row's sums start at its bias less the
/// compensation x_zp * row_sums[row] (wrapping as the reference's int32 (acc + bias) does), and
/// its multiplier; finite: every multiplier is. Made once per group, in the calling thread's
/// buffer (read by the threads of the GEMMs that follow).
struct Q8Rows {
  const int32_t* offs;
  const float* mults;
  bool finite;
};
template <class Y>
Q8Rows q8_requant_rows(int M, uint32_t x_zp, const int32_t* row_sums, int row_off,
                       const QRequantEpi<Y>& epi) {
  const int mpad = (M + kQ8MR - 1) / kQ8MR * kQ8MR;
  float* mults = tls_buffer(9, 2 * static_cast<size_t>(mpad));
  int32_t* offs = reinterpret_cast<int32_t*>(mults + mpad);
  bool finite = true;
  for (int r = 0; r < mpad; ++r) {
    const int row = row_off + r, prow = epi.period ? row % epi.period : row;
    offs[r] = r < M ? static_cast<int32_t>(static_cast<uint32_t>(epi.bias ? epi.bias[prow] : 0) -
                                           x_zp * static_cast<uint32_t>(row_sums[r]))
                    : 0;
    mults[r] = r < M ? epi.mult[epi.scalar_mult ? 0 : prow] : 0.0f;
    finite = finite && std::isfinite(mults[r]);
  }
  return {offs, mults, finite};
}

/// The byte layout's C[M, N] = A * B (A's panels broadcast: a convolution's weights) requantized
/// in registers by epi, per row: the sums start at rows.offs and leave the tile as bytes
/// (q_requant16), without a pass over int32 sums in memory. C's rows are epi's rows row_off + r.
template <class Y>
void q8_gemm_requant(int M, int N, int K, const uint8_t* pa, const uint8_t* pb, const Q8Rows& rows,
                     int row_off, const QRequantEpi<Y>& epi) {
  const int kq = q8_quads(K);
  const int32_t* offs = rows.offs;
  const float* mults = rows.mults;
  const bool finite = rows.finite;
  const __m512i zp = _mm512_set1_epi32(epi.zp), lo = _mm512_set1_epi32(epi.lo),
                hi = _mm512_set1_epi32(epi.hi);
  // With finite multipliers no product is NaN, and clamping before rounding to the integers
  // [lo - zp, hi - zp] gives what clamping after it does (rounding is monotonic and keeps
  // integers): five steps per 16 sums instead of q_requant16's nine.
  const __m512 flo = _mm512_set1_ps(static_cast<float>(epi.lo - epi.zp)),
               fhi = _mm512_set1_ps(static_cast<float>(epi.hi - epi.zp));
  auto requant = [&](__m512i acc, __m512 m) __attribute__((always_inline)) {
    if (!finite) return q_requant16(acc, m, zp, lo, hi);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), m);
    v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
    return _mm512_add_epi32(
        _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
  };
  q_tiles<kQ8MR, kQ8NR>(
      M, N, pa, static_cast<size_t>(kq) * 4 * kQ8MR, pb, static_cast<size_t>(kq) * 4 * kQ8NR,
      [&](const uint8_t* a, const uint8_t* b, int row0, int mr, int col0, int nr) {
        const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
        const __mmask16 m1 = nr >= 32  ? __mmask16(0xFFFF)
                             : nr > 16 ? __mmask16((1u << (nr - 16)) - 1)
                                       : __mmask16(0);
        // inlined, or the accumulators leave their registers for every row's call
        q8_tile512<false>(
            kq, a, b,
            [&](int i) __attribute__((always_inline)) { return _mm512_set1_epi32(offs[row0 + i]); },
            [&](int i, __m512i x0, __m512i x1) __attribute__((always_inline)) {
              if (i >= mr) return;
              Y* out = epi.y + static_cast<ptrdiff_t>(row_off + row0 + i) * epi.ldy + col0;
              const __m512 m = _mm512_set1_ps(mults[row0 + i]);
              q_store16(out, m0, requant(x0, m));
              q_store16(out + 16, m1, requant(x1, m));
            });
      });
}
} // namespace detail
#endif

// ---- Convolution --------------------------------------------------------------------------

/// Depthwise convolutions (one input channel per output channel) run a direct kernel over each
/// plane instead of per-group GEMMs of one row; their weights are the shifted taps as int32.
inline bool qconv_depthwise(const Conv2dShape& s) {
  return s.group > 1 && s.group == s.C && s.OC == s.C;
}

/// Whether the convolution reads its input in place (1x1, stride 1, no padding).
inline bool qconv_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 &&
         s.pad_l == 0 && s.pad_b == 0 && s.pad_r == 0;
}

/// Whether a byte-layout convolution takes the c4 order: K ordered as (quad of the group's
/// channels, tap, channel within the quad), the channels padded to a multiple of 4 with zero
/// weights, so that a quad is four channels of one input pixel. The input then goes once into a
/// padded NCHW4c copy, and each quad row of a packed B panel is 32 pixels' 4-byte words copied
/// from it (runs of an output row: one masked vector copy each), with no im2col: 3x3 convolutions
/// spent half their time there. AVX-512 builds; convolutions neither depthwise nor pointwise.
inline bool qconv_c4(const Conv2dShape& s) {
#if TRIAD_Q8_ISA == 512
  return !qconv_depthwise(s) && !qconv_pointwise(s);
#else
  (void)s;
  return false;
#endif
}

/// K in the c4 order: taps times the group's channels rounded up to 4.
inline int qconv_c4_k(const Conv2dShape& s) {
  return s.KH * s.KW * ((s.Cg() + 3) / 4 * 4);
}

/// Bytes of the packed weights of an integer convolution: the QPacked header, then per group the
/// q_packed_a layout, or the byte layout and the OC sums of the weights, whichever is larger.
inline size_t qconv_weights_bytes(const Conv2dShape& s) {
  size_t bytes = static_cast<size_t>(s.OC) * s.KH * s.KW * sizeof(int32_t); // depthwise
  if (!qconv_depthwise(s)) {
    const size_t pairs = q_packed_a_bytes(s.OCg(), s.Kg());
    bytes = static_cast<size_t>(s.group) * pairs;
#if defined(TRIAD_Q8_ISA)
    const int Kq = qconv_c4(s) ? qconv_c4_k(s) : s.Kg();
    const size_t quads = (q8_packed_bytes(s.OCg(), kQ8MR, Kq) + 63) / 64 * 64;
    bytes = std::max(bytes, s.group * quads + static_cast<size_t>(s.OC) * sizeof(int32_t));
#endif
  }
  return QPacked::kHeader + bytes;
}

/// Packs w[OC, C/group, KH, KW] shifted by its zero point (w_zp: n_wzp entries, 1 or OC; null:
/// 0) once, at load, in the byte layout when q8_weights allows it.
template <class W>
inline void qconv_pack_weights(const Conv2dShape& s, const W* w, const W* w_zp, int n_wzp,
                               void* dst) {
  const int Mg = s.OCg(), K = s.Kg();
  QPacked& head = *static_cast<QPacked*>(dst);
  head = QPacked{};
  auto zp = [&](int oc) { return w_zp ? static_cast<int>(w_zp[n_wzp == 1 ? 0 : oc]) : 0; };
  if (qconv_depthwise(s)) {
    int32_t* d = QPacked::data<int32_t>(dst);
    for (int oc = 0; oc < s.OC; ++oc)
      for (int k = 0; k < K; ++k)
        d[static_cast<size_t>(oc) * K + k] =
            static_cast<int32_t>(w[static_cast<size_t>(oc) * K + k]) - zp(oc);
    return;
  }
#if defined(TRIAD_Q8_ISA)
  if (q8_weights(w_zp, n_wzp)) {
    head.q8 = 1;
    head.c4 = qconv_c4(s);
    const int Kq = head.c4 ? qconv_c4_k(s) : K, taps = s.KH * s.KW;
    const size_t quads = (q8_packed_bytes(Mg, kQ8MR, Kq) + 63) / 64 * 64;
    uint8_t* d = QPacked::data<uint8_t>(dst);
    int32_t* sums = reinterpret_cast<int32_t*>(d + s.group * quads);
    for (int g = 0; g < s.group; ++g) {
      const W* wg = w + static_cast<size_t>(g) * Mg * K;
      detail::q8_pack_lines<kQ8MR>(
          Mg, Kq,
          [&](int r, int k) {
            int kw = k; // (c, kh, kw) in w
            if (head.c4) {
              const int quad = k / 4, c = quad / taps * 4 + k % 4;
              if (c >= s.Cg()) return 0;
              kw = c * taps + quad % taps;
            }
            return q8_weight(wg[static_cast<size_t>(r) * K + kw]);
          },
          d + g * quads, sums + g * Mg);
    }
    return;
  }
#endif
  for (int g = 0; g < s.group; ++g) {
    const W* wg = w + static_cast<size_t>(g) * Mg * K;
    q_pack_a(
        Mg, K,
        [&](int r, int k) {
          return static_cast<int>(wg[static_cast<size_t>(r) * K + k]) - zp(g * Mg + r);
        },
        QPacked::data<int16_t>(dst) +
            static_cast<size_t>(g) * q_packed_a_bytes(Mg, K) / sizeof(int16_t));
  }
}

namespace detail {
/// dst[i] = float(src[i]) - zp for i < n. Written out: the 8-bit source may alias the floats, and
/// GCC kept the plain loop scalar.
template <class X> inline void shift_to_float(const X* src, int n, float zp, float* dst) {
  int i = 0;
#if defined(__AVX512F__)
  const __m512 z = _mm512_set1_ps(zp);
  for (; i < n; i += 16) { // the last 16 masked
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m128i b = _mm_maskz_loadu_epi8(k, src + i);
    const __m512i v = std::is_signed_v<X> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    _mm512_mask_storeu_ps(dst + i, k, _mm512_sub_ps(_mm512_cvtepi32_ps(v), z));
  }
#endif
  for (; i < n; ++i)
    dst[i] = static_cast<float>(src[i]) - zp;
}

/// The depthwise kernel, per (image, channel) plane. The plane, shifted by x_zp, goes into a
/// per-thread float grid with a zero halo of the padding, split into its stride phases (rows and
/// columns), so that every tap is one contiguous shift of the flattened output rows: outputs are
/// computed Wq to a row (the phase's width; the last Wq - OW columns are discarded) in one long
/// vector loop per tap. Float is exact here: every product is at most 255 * 255 and the sums are
/// moved into wrapping int32 every 256 taps, below 2^24. epi gets each output row (mr = 1;
/// readable to a multiple of 16 past its end), or the whole plane as one when Wq == OW.
template <class X, class Epi>
void qconv_depthwise_planes(const Conv2dShape& s, const X* x, int x_zp, const int32_t* w,
                            const Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), taps = s.KH * s.KW, sh = s.stride_h, sw = s.stride_w;
  const int Hp = s.H + s.pad_t + s.pad_b, Wp = s.W + s.pad_l + s.pad_r;
  const int Hq = (Hp + sh - 1) / sh, Wq = (Wp + sw - 1) / sw; // one phase
  const size_t phase = static_cast<size_t>(Hq) * Wq, nq = static_cast<size_t>(OH) * Wq;
  // reads past the last phase row: the junk columns' taps, and whole vectors
  const size_t tail = static_cast<size_t>((s.KW - 1) * s.dil_w / sw) + 4 * kW + 64;
  const size_t plane = static_cast<size_t>(s.H) * s.W;
  constexpr int kChunk = 256; // taps summed in float before the int32 sums take them
  parallel_for(
      static_cast<ptrdiff_t>(s.N) * s.C, static_cast<double>(OH) * OW * taps, [&](ptrdiff_t pc) {
        thread_local std::vector<float> grid, wt, accf, xf;
        thread_local std::vector<const float*> src;
        thread_local std::vector<int32_t> acci;
        // Only the halo and the tail must be 0, and no plane writes there: zeroed once
        // per geometry (the thread's last layer may have had another).
        thread_local std::array<int, 8> geometry{};
        const std::array<int, 8> g8 = {s.H, s.W, s.pad_t, s.pad_l, sh, sw, Hq, Wq};
        if (geometry != g8 || grid.size() != phase * sh * sw + tail) {
          grid.assign(phase * sh * sw + tail, 0.0f);
          geometry = g8;
        }
        acci.resize(nq + kW + kQNR);
        accf.resize(nq + 4 * kW);
        xf.resize(static_cast<size_t>(s.W));
        src.resize(kChunk);
        wt.resize(kChunk);
        const int c = static_cast<int>(pc % s.C);
        const X* xc = x + static_cast<size_t>(pc) * plane;
        // the plane's rows shifted into the phases: straight in at stride 1, else through one
        // row of floats
        const float zp = static_cast<float>(x_zp);
        for (int h = 0; h < s.H; ++h) {
          const int hp = h + s.pad_t;
          float* g = grid.data() + static_cast<size_t>(hp % sh) * sw * phase +
                     static_cast<size_t>(hp / sh) * Wq;
          const X* xh = xc + static_cast<size_t>(h) * s.W;
          float* xr = sw == 1 ? g + s.pad_l : xf.data();
          shift_to_float(xh, s.W, zp, xr);
          if (sw == 2) { // padded column c = w + pad_l goes to phase c % 2 at c / 2
            const int pl = s.pad_l, jlo = (pl + 1) / 2, jhi = (pl + s.W) / 2;
            float* d0 = g;
            float* d1 = g + phase;
            const float* from = xr - pl;
            int j = jlo;
#if defined(__AVX512F__)
            const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                                   26, 28, 30),
                          odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
            for (; j + 16 <= jhi; j += 16) { // 32 columns of the row in, 16 to each phase
              const __m512 lo = _mm512_loadu_ps(from + 2 * j),
                           hi = _mm512_loadu_ps(from + 2 * j + 16);
              _mm512_storeu_ps(d0 + j, _mm512_permutex2var_ps(lo, even, hi));
              _mm512_storeu_ps(d1 + j, _mm512_permutex2var_ps(lo, odd, hi));
            }
#endif
            for (; j < jhi; ++j) { // both columns 2j, 2j + 1 in the row
              d0[j] = from[2 * j];
              d1[j] = from[2 * j + 1];
            }
            auto one = [&](int w) { (((w + pl) & 1) ? d1 : d0)[(w + pl) / 2] = xr[w]; };
            for (int w = 0; w < std::min(s.W, 2 * jlo - pl); ++w) // the ends
              one(w);
            for (int w = std::max(0, 2 * jhi - pl); w < s.W; ++w)
              one(w);
          } else if (sw > 2) {
            for (int p = 0; p < sw; ++p) { // phase p: padded columns q * sw + p
              const int q0 = std::max(0, (s.pad_l - p + sw - 1) / sw);
              const int q1 = (s.W + s.pad_l - p + sw - 1) / sw;
              float* d = g + p * phase;
              const float* from = xr + (p - s.pad_l);
              for (int q = q0; q < q1; ++q)
                d[q] = from[q * sw];
            }
          }
        }
        const int32_t* wc = w + static_cast<size_t>(c) * taps;
        int32_t* ai = acci.data();
        for (int t0 = 0; t0 < taps; t0 += kChunk) {
          const int t1 = std::min(taps, t0 + kChunk);
          for (int t = t0; t < t1; ++t) { // the taps' sources and weights
            const int dr = t / s.KW * s.dil_h, dc = t % s.KW * s.dil_w;
            src[t - t0] = grid.data() + static_cast<size_t>(dr % sh * sw + dc % sw) * phase +
                          static_cast<size_t>(dr / sh) * Wq + dc / sw;
            wt[t - t0] = static_cast<float>(wc[t]);
          }
          const int nt = t1 - t0;
          // 4 kW outputs at a time in registers, every tap: loads and FMAs only
          float* a = accf.data();
          const float* const* sp = src.data();
          const float* wp = wt.data();
          for (size_t q = 0; q < nq; q += 4 * kW) {
            vf a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
            for (int t = 0; t < nt; ++t) {
              const float* p = sp[t] + q;
              const vf wv = vset1(wp[t]);
              a0 = vfma(vload(p), wv, a0);
              a1 = vfma(vload(p + kW), wv, a1);
              a2 = vfma(vload(p + 2 * kW), wv, a2);
              a3 = vfma(vload(p + 3 * kW), wv, a3);
            }
            vstore(a + q, a0);
            vstore(a + q + kW, a1);
            vstore(a + q + 2 * kW, a2);
            vstore(a + q + 3 * kW, a3);
          }
          const size_t n = nq;
          if (t0 == 0) {
            for (size_t q = 0; q < n; ++q) // exact integers
              ai[q] = static_cast<int32_t>(a[q]);
          } else {
            for (size_t q = 0; q < n; ++q) // int32 wraps as the reference's
              ai[q] = static_cast<int32_t>(static_cast<uint32_t>(ai[q]) +
                                           static_cast<uint32_t>(static_cast<int32_t>(a[q])));
          }
        }
        // the epilogue on the output rows (the sums' rows are Wq apart, the last Wq - OW junk)
        const int row = static_cast<int>(pc) / s.C * s.OC + c;
        if (Wq == OW)
          epi(ai, kQNR, row, 1, 0, OH * OW);
        else
          for (int oh = 0; oh < OH; ++oh)
            epi(ai + static_cast<size_t>(oh) * Wq, kQNR, row, 1, oh * OW, OW);
      });
}
} // namespace detail

namespace detail {
/// im2col row k (c, kh, kw) of the group's input xg: d[oh * OW + ow] = the input that tap reads
/// for output (oh, ow), pad where that is padding.
template <class X>
inline void qconv_im2col_row(const Conv2dShape& s, const X* xg, int k, X pad, X* d) {
  const int taps = s.KH * s.KW, OH = s.OH(), OW = s.OW(), sw = s.stride_w;
  const int c = k / taps, kh = k % taps / s.KW, kw = k % s.KW;
  const X* xc = xg + static_cast<size_t>(c) * s.H * s.W;
  const unsigned char fill = static_cast<unsigned char>(pad);
  const int iw0 = kw * s.dil_w - s.pad_l; // output ow reads iw0 + ow * sw
  // outputs [lo, hi) of a row read inside it; the rest is padding
  const int lo = std::min(OW, iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw);
  const int hi = std::clamp(s.W - iw0 > 0 ? (s.W - iw0 + sw - 1) / sw : 0, lo, OW);
  for (int oh = 0; oh < OH; ++oh, d += OW) {
    const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
    if (ih < 0 || ih >= s.H) {
      std::memset(d, fill, static_cast<size_t>(OW));
      continue;
    }
    const X* src = xc + static_cast<size_t>(ih) * s.W + iw0;
    std::memset(d, fill, static_cast<size_t>(lo));
    std::memset(d + hi, fill, static_cast<size_t>(OW - hi));
    if (sw == 1) {
      std::memcpy(d + lo, src + lo, static_cast<size_t>(hi - lo));
      continue;
    }
    int ow = lo;
#if defined(__AVX512BW__)
    // stride 2: the even bytes of up to 64 read (masked: never past the row's end)
    for (; sw == 2 && ow < hi; ow += 32) {
      const int n = std::min(32, hi - ow);
      const __m512i v = _mm512_maskz_loadu_epi8((1ull << (2 * n - 1)) - 1, src + 2 * ow);
      _mm256_mask_storeu_epi8(d + ow, static_cast<__mmask32>((1ull << n) - 1),
                              _mm512_cvtepi16_epi8(v));
    }
#endif
    for (; ow < hi; ++ow)
      d[ow] = src[ow * sw];
  }
}

#if TRIAD_Q8_ISA == 512
/// Output pixels per block (a multiple of kQ8NR) of the pointwise and c4 convolutions, or 0 when
/// the group's pixels make too few blocks to keep `threads` busy (fewer than two panels each):
/// 64 bytes per pixel and K within 384 KB of L2, for the block's packed operand (32) and what it
/// is copied from.
inline int qconv_q8_block_pixels(int K, int P, int threads) {
  const int panels = (P + kQ8NR - 1) / kQ8NR;
  if (threads > 1 && panels < 2 * threads) return 0;
  const int fit = std::max(1, (384 << 10) / (64 * std::max(K, 1)));
  const int share = threads > 1 ? (panels + 2 * threads - 1) / (2 * threads) : panels;
  return std::min(fit, share) * kQ8NR;
}
#endif

#if defined(TRIAD_Q8_ISA)
/// One group's byte-layout GEMM of a convolution: C[Mg, P] = the packed weights pw (sums: their
/// row sums) times the B panels pack(j0, dst) writes (the panel of pixels [j0, j0 + kQ8NR)),
/// epi's rows row_off + r. A requantizing epilogue (per row) runs in registers
/// (q8_gemm_requant), in blocks of pixels packed by the thread that multiplies them, so that they
/// never leave its L2, when there are panels enough for the threads; otherwise, and for other
/// epilogues, every panel goes into `packed` first.
template <class Epi, class Pack>
void q8_conv_gemm(int Mg, int P, int K, const uint8_t* pw, const int32_t* sums, uint32_t x_zp,
                  int row_off, uint8_t* packed, const Epi& epi, const Pack& pack) {
  const size_t panel = static_cast<size_t>(q8_quads(K)) * 4 * kQ8NR;
  auto pack_all = [&] {
    parallel_for((P + kQ8NR - 1) / kQ8NR, static_cast<double>(K) * kQ8NR,
                 [&](ptrdiff_t q) { pack(static_cast<int>(q) * kQ8NR, packed + q * panel); });
  };
#if TRIAD_Q8_ISA == 512
  if constexpr (is_requant_epi<Epi>::value) {
    if (!epi.per_col) {
      const Q8Rows rows = q8_requant_rows(Mg, x_zp, sums, row_off, epi);
      const int block = qconv_q8_block_pixels(K, P, num_threads());
      if (block == 0) {
        pack_all();
        q8_gemm_requant(Mg, P, K, pw, packed, rows, row_off, epi);
        return;
      }
      parallel_for((P + block - 1) / block, static_cast<double>(Mg) * block * K, [&](ptrdiff_t bi) {
        const int p0 = static_cast<int>(bi) * block, np = std::min(block, P - p0);
        const int panels = (np + kQ8NR - 1) / kQ8NR;
        uint8_t* mine = reinterpret_cast<uint8_t*>(tls_buffer(8, (panels * panel + 3) / 4));
        for (int q = 0; q < panels; ++q)
          pack(p0 + q * kQ8NR, mine + q * panel);
        Epi e = epi; // columns from p0
        e.y = epi.y + p0;
        q8_gemm_requant(Mg, np, K, pw, mine, rows, row_off, e); // inside this job: this thread
      });
      return;
    }
  }
#endif
  pack_all();
  q8_gemm<false>(Mg, P, K, pw, packed, x_zp, sums, nullptr,
                 [&](const int32_t* tile, int ldt, int row0, int mr, int col0, int nr) {
                   epi(tile, ldt, row_off + row0, mr, col0, nr);
                 });
}
#endif

#if TRIAD_Q8_ISA == 512

/// Copies n <= 32 4-byte words from src, every stride-th (1, 2 or more), to dst.
inline void q8_copy_words(const uint32_t* src, int stride, int n, uint32_t* dst) {
  if (stride == 1) {
    int j = 0;
    for (; j + 16 <= n; j += 16)
      _mm512_storeu_si512(dst + j, _mm512_loadu_si512(src + j));
    if (j < n) {
      const __mmask16 m = __mmask16((1u << (n - j)) - 1);
      _mm512_mask_storeu_epi32(dst + j, m, _mm512_maskz_loadu_epi32(m, src + j));
    }
  } else if (stride == 2) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int j = 0; j < n; j += 16) {
      const int need = 2 * std::min(16, n - j) - 1; // words read: up to the last one taken
      auto mask = [](int k) {
        return k >= 16 ? __mmask16(0xFFFF) : __mmask16(k > 0 ? (1u << k) - 1 : 0);
      };
      const __m512i lo = _mm512_maskz_loadu_epi32(mask(need), src + 2 * j);
      const __m512i hi = _mm512_maskz_loadu_epi32(mask(need - 16), src + 2 * j + 16);
      _mm512_mask_storeu_epi32(dst + j, mask(std::min(16, n - j)),
                               _mm512_permutex2var_epi32(lo, even, hi));
    }
  } else {
    for (int j = 0; j < n; ++j)
      dst[j] = src[static_cast<size_t>(j) * stride];
  }
}

/// The c4 order's convolution (qconv_c4), for the byte layout's weights packed in it: per image
/// and group, the input into a padded NCHW4c copy (x4: per quad of channels, Hp x Wp pixels of 4
/// bytes, XOR flip, the padding and the channels past the group's the unsigned x_zp), then B's
/// panels copied from it and multiplied; blocks of pixels on the thread that multiplies them when
/// the epilogue requantizes and there are panels enough, else all panels first.
template <class X, class Epi>
void qconv_c4_run(const Conv2dShape& s, const X* x, int x_zp, const void* packed_w, void* scratch,
                  const Epi& epi) {
  const int OW = s.OW(), P = s.OH() * OW, Mg = s.OCg(), Cg = s.Cg(), taps = s.KH * s.KW;
  const int C4 = (Cg + 3) / 4 * 4, Kq = qconv_c4_k(s);
  const int Hp = s.H + s.pad_t + s.pad_b, Wp = s.W + s.pad_l + s.pad_r;
  const size_t plane = static_cast<size_t>(s.H) * s.W, plane4 = static_cast<size_t>(Hp) * Wp;
  const uint8_t flip = std::is_signed_v<X> ? 0x80 : 0;
  const uint8_t fill = static_cast<uint8_t>(static_cast<uint8_t>(x_zp) ^ flip);
  const uint32_t xzp = static_cast<uint32_t>(x_zp + flip);
  const size_t quads = (q8_packed_bytes(Mg, kQ8MR, Kq) + 63) / 64 * 64;
  const uint8_t* pw = QPacked::data<uint8_t>(packed_w);
  const int32_t* sums = reinterpret_cast<const int32_t*>(pw + s.group * quads);
  uint8_t* x4 = static_cast<uint8_t*>(scratch);
  x4 += (64 - reinterpret_cast<uintptr_t>(x4) % 64) % 64;
  uint8_t* packed_all = x4 + (C4 / 4 * plane4 * 4 + 63) / 64 * 64;
  // B's panel at pixels [j0, j0 + kQ8NR): per quad (channel quad, tap), each run of pixels in
  // one output row copied from x4 (words stride_w apart), words past P zero.
  auto pack_panel = [&](int j0, uint8_t* dst) {
    struct Run {
      int dst, n;
      size_t src; // x4 word of the run's first pixel at tap (0, 0)
    } runs[kQ8NR];
    int nruns = 0;
    const int end = std::min(P, j0 + kQ8NR);
    for (int p = j0; p < end;) {
      const int oh = p / OW, a = p - oh * OW, b = std::min(OW, a + (end - p));
      runs[nruns++] = {p - j0, b - a,
                       static_cast<size_t>(oh) * s.stride_h * Wp +
                           static_cast<size_t>(a) * s.stride_w};
      p += b - a;
    }
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
    for (int cq = 0; cq < C4 / 4; ++cq) {
      const uint32_t* base = reinterpret_cast<const uint32_t*>(x4) + cq * plane4;
      for (int t = 0; t < taps; ++t, d += kQ8NR) {
        const size_t tap =
            static_cast<size_t>(t / s.KW) * s.dil_h * Wp + static_cast<size_t>(t % s.KW) * s.dil_w;
        for (int r = 0; r < nruns; ++r)
          q8_copy_words(base + runs[r].src + tap, s.stride_w, runs[r].n, d + runs[r].dst);
        for (int j = end - j0; j < kQ8NR; ++j)
          d[j] = 0;
      }
    }
  };
  for (int n = 0; n < s.N; ++n)
    for (int g = 0; g < s.group; ++g) {
      const X* xg = x + (static_cast<size_t>(n) * s.C + static_cast<size_t>(g) * Cg) * plane;
      // the padded NCHW4c copy, one (channel quad, padded row) per item
      parallel_for(static_cast<ptrdiff_t>(C4 / 4) * Hp, 4.0 * Wp, [&](ptrdiff_t it) {
        const int cq = static_cast<int>(it / Hp), hp = static_cast<int>(it % Hp), h = hp - s.pad_t;
        uint8_t* d = x4 + (cq * plane4 + static_cast<size_t>(hp) * Wp) * 4;
        if (h < 0 || h >= s.H) {
          std::memset(d, fill, static_cast<size_t>(Wp) * 4);
          return;
        }
        const uint8_t* r[4];
        for (int t = 0; t < 4; ++t) {
          const int c = 4 * cq + t;
          r[t] =
              c < Cg
                  ? reinterpret_cast<const uint8_t*>(xg + c * plane + static_cast<size_t>(h) * s.W)
                  : nullptr;
        }
        std::memset(d, fill, static_cast<size_t>(s.pad_l) * 4);
        q8_interleave4(r, s.W, flip, fill, d + static_cast<size_t>(s.pad_l) * 4);
        std::memset(d + static_cast<size_t>(s.pad_l + s.W) * 4, fill,
                    static_cast<size_t>(s.pad_r) * 4);
      });
      q8_conv_gemm(Mg, P, Kq, pw + g * quads, sums + g * Mg, xzp, n * s.OC + g * Mg, packed_all,
                   epi, pack_panel);
    }
}

/// Bytes of scratch qconv_c4_run needs: the NCHW4c copy and every panel of B.
inline size_t qconv_c4_scratch_bytes(const Conv2dShape& s) {
  const size_t C4 = static_cast<size_t>(s.Cg() + 3) / 4 * 4;
  const size_t x4 = C4 * (s.H + s.pad_t + s.pad_b) * (s.W + s.pad_l + s.pad_r);
  return (x4 + 63) / 64 * 64 + q8_packed_bytes(s.OH() * s.OW(), kQ8NR, qconv_c4_k(s)) + 64;
}
#endif
} // namespace detail

namespace detail {
/// Bytes of scratch the im2col path of qconv2d needs: the 8-bit im2col of one group (unless
/// pointwise), its row pointers and the packed B operand (either layout).
inline size_t qconv_scratch_bytes_im2col(const Conv2dShape& s) {
  const size_t K = static_cast<size_t>(s.Kg()), P = static_cast<size_t>(s.OH()) * s.OW();
  const size_t cols = qconv_pointwise(s) ? 0 : (K * P + 63) / 64 * 64;
  size_t packed = q_packed_b_bytes(s.Kg(), s.OH() * s.OW());
#if defined(TRIAD_Q8_ISA)
  packed = std::max(packed, q8_packed_bytes(s.OH() * s.OW(), kQ8NR, s.Kg()));
#endif
  return cols + (K * sizeof(void*) + 63) / 64 * 64 + packed + 64;
}
} // namespace detail

/// Bytes of caller-owned scratch qconv2d needs (the im2col path's, or the c4 order's).
inline size_t qconv_scratch_bytes(const Conv2dShape& s) {
  if (qconv_depthwise(s)) return 0; // a row of sums per thread, on the stack
#if TRIAD_Q8_ISA == 512
  if (qconv_c4(s)) // the weights may take the c4 order or not (q8_weights)
    return std::max(detail::qconv_c4_scratch_bytes(s), detail::qconv_scratch_bytes_im2col(s));
#endif
  return detail::qconv_scratch_bytes_im2col(s);
}

/// The integer convolution: y[n, oc, :, :] = epilogue of the int32 sums over (c, kh, kw) of
/// (x - x_zp) * (w - w_zp), with the padding reading x_zp (so contributing 0). packed_w from
/// qconv_pack_weights; epi(tile, ldt, row0, mr, col0, nr) gets rows = output channels of the
/// whole tensor (n * OC + oc) and columns = output pixels; scratch: qconv_scratch_bytes(s).
template <class X, class Epi>
void qconv2d(const Conv2dShape& s, const X* x, int x_zp, const void* packed_w, void* scratch,
             const Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), P = OH * OW, K = s.Kg(), Mg = s.OCg();
  const size_t plane = static_cast<size_t>(s.H) * s.W;
  if (qconv_depthwise(s)) {
    detail::qconv_depthwise_planes(s, x, x_zp, QPacked::data<int32_t>(packed_w), epi);
    return;
  }
#if TRIAD_Q8_ISA == 512
  if (QPacked::of(packed_w).c4) {
    detail::qconv_c4_run(s, x, x_zp, packed_w, scratch, epi);
    return;
  }
#endif
  const bool q8 = QPacked::of(packed_w).q8 != 0;
  char* base = static_cast<char*>(scratch);
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  X* cols = reinterpret_cast<X*>(base);
  const bool pointwise = qconv_pointwise(s);
  if (!pointwise) base += (static_cast<size_t>(K) * P + 63) / 64 * 64;
  const X** rows = reinterpret_cast<const X**>(base);
  base += (static_cast<size_t>(K) * sizeof(void*) + 63) / 64 * 64;
  const X pad = static_cast<X>(x_zp);
  for (int n = 0; n < s.N; ++n)
    for (int g = 0; g < s.group; ++g) {
      const X* xg = x + (static_cast<size_t>(n) * s.C + static_cast<size_t>(g) * s.Cg()) * plane;
      const int row_off = n * s.OC + g * Mg;
      if (pointwise) {
        for (int c = 0; c < K; ++c)
          rows[c] = xg + c * plane;
      } else {
        // im2col rows (c, kh, kw), the padding x_zp
        parallel_for(K, static_cast<double>(P), [&](ptrdiff_t k) {
          detail::qconv_im2col_row(s, xg, static_cast<int>(k), pad, cols + k * P);
          rows[k] = cols + k * P;
        });
      }
#if defined(TRIAD_Q8_ISA)
      if (q8) {
        // unsigned bytes: int8 activations XOR 0x80, their zero point + 128
        const uint8_t flip = std::is_signed_v<X> ? 0x80 : 0;
        const size_t quads = (q8_packed_bytes(Mg, kQ8MR, K) + 63) / 64 * 64;
        const uint8_t* pw = QPacked::data<uint8_t>(packed_w);
        detail::q8_conv_gemm(
            Mg, P, K, pw + g * quads,
            reinterpret_cast<const int32_t*>(pw + s.group * quads) + g * Mg,
            static_cast<uint32_t>(x_zp + flip), row_off, reinterpret_cast<uint8_t*>(base), epi,
            [&](int j0, uint8_t* dst) { detail::q8_pack_b_panel(K, P, rows, flip, j0, dst); });
        continue;
      }
#endif
      (void)q8;
      int16_t* pb = reinterpret_cast<int16_t*>(base);
      q_pack_b_rows(K, P, rows, x_zp, pb);
      const size_t wgroup = q_packed_a_bytes(Mg, K) / sizeof(int16_t);
      q_gemm(Mg, P, K, QPacked::data<int16_t>(packed_w) + g * wgroup, pb,
             [&](const int32_t* tile, int ldt, int row0, int mr, int col0, int nr) {
               epi(tile, ldt, row_off + row0, mr, col0, nr);
             });
    }
}

// ---- MatMul -------------------------------------------------------------------------------

/// Bytes of a constant B (K x N) packed by qmatmul_pack_b: the QPacked header, then the
/// q_packed_b layout, or the byte layout and the N sums of its columns, whichever is larger.
inline size_t qmatmul_weights_bytes(int K, int N) {
  size_t bytes = q_packed_b_bytes(K, N);
#if defined(TRIAD_Q8_ISA)
  bytes = std::max(bytes, (q8_packed_bytes(N, kQ8NR, K) + 63) / 64 * 64 +
                              static_cast<size_t>(N) * sizeof(int32_t));
#endif
  return QPacked::kHeader + bytes;
}

/// Packs a constant B (K x N) shifted by its zero point (b_zp: n_bzp entries, 1 or N; null: 0)
/// once, at load; b(k, j) at b[k * N + j]. The byte layout when q8_weights allows it.
template <class W>
inline void qmatmul_pack_b(int K, int N, const W* b, const W* b_zp, int n_bzp, void* dst) {
  QPacked& head = *static_cast<QPacked*>(dst);
  head = QPacked{};
#if defined(TRIAD_Q8_ISA)
  if (q8_weights(b_zp, n_bzp)) {
    head.q8 = 1;
    uint8_t* d = QPacked::data<uint8_t>(dst);
    detail::q8_pack_lines<kQ8NR>(
        N, K, [&](int j, int k) { return q8_weight(b[static_cast<size_t>(k) * N + j]); }, d,
        reinterpret_cast<int32_t*>(d + (q8_packed_bytes(N, kQ8NR, K) + 63) / 64 * 64));
    return;
  }
#endif
  q_pack_b(
      K, N,
      [&](int k, int j) {
        const int z = b_zp ? static_cast<int>(b_zp[n_bzp == 1 ? 0 : j]) : 0;
        return static_cast<int>(b[static_cast<size_t>(k) * N + j]) - z;
      },
      QPacked::data<int16_t>(dst));
}

/// Bytes of scratch qmatmul needs (A packed per run, either layout).
inline size_t qmatmul_scratch_bytes(int M, int K) {
  size_t bytes = q_packed_a_bytes(M, K);
#if defined(TRIAD_Q8_ISA)
  bytes = std::max(bytes, q8_packed_bytes(M, kQ8MR, K));
#endif
  return bytes + 64;
}

/// C[M, N] = (A - a_zp) * (B - b_zp) for an 8-bit row-major A (row stride lda) and B packed by
/// qmatmul_pack_b; epi on each tile (rows m, columns n).
template <class X, class Epi>
void qmatmul(int M, int N, int K, const X* a, ptrdiff_t lda, int a_zp, const void* packed_b,
             void* scratch, const Epi& epi) {
  char* base = static_cast<char*>(scratch);
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
#if defined(TRIAD_Q8_ISA)
  if (QPacked::of(packed_b).q8) {
    const uint8_t flip = std::is_signed_v<X> ? 0x80 : 0;
    uint8_t* pa = reinterpret_cast<uint8_t*>(base);
    const size_t panel = static_cast<size_t>(q8_quads(K)) * 4 * kQ8MR;
    parallel_for((M + kQ8MR - 1) / kQ8MR, static_cast<double>(kQ8MR) * K, [&](ptrdiff_t p) {
      const int i0 = static_cast<int>(p) * kQ8MR, mr = std::min(kQ8MR, M - i0);
      detail::q8_pack_lines<kQ8MR>(
          mr, K,
          [&](int r, int k) {
            return static_cast<int>(static_cast<uint8_t>(a[(i0 + r) * lda + k]) ^ flip);
          },
          pa + p * panel, nullptr);
    });
    const uint8_t* pb = QPacked::data<uint8_t>(packed_b);
    q8_gemm<true>(
        M, N, K, pa, pb, static_cast<uint32_t>(a_zp + flip), nullptr,
        reinterpret_cast<const int32_t*>(pb + (q8_packed_bytes(N, kQ8NR, K) + 63) / 64 * 64), epi);
    return;
  }
#endif
  int16_t* pa = reinterpret_cast<int16_t*>(base);
  const int mb = (M + kQMR - 1) / kQMR;
  const size_t panel = static_cast<size_t>(q_kpairs(K)) * 2 * kQMR;
  parallel_for(mb, static_cast<double>(kQMR) * K, [&](ptrdiff_t p) {
    const int i0 = static_cast<int>(p) * kQMR, mr = std::min(kQMR, M - i0);
    q_pack_a(
        mr, K, [&](int r, int k) { return static_cast<int>(a[(i0 + r) * lda + k]) - a_zp; },
        pa + p * panel);
  });
  q_gemm(M, N, K, pa, QPacked::data<int16_t>(packed_b), epi);
}

} // namespace triad_rt

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
