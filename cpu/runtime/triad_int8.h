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
// Requantization (the reference's, ir/ops/QuantizeProducts.cpp): y = saturate(round_half_even(
// float(int32(acc + bias)) * mult) + y_zp), where mult = x_scale * w_scale / y_scale in float and
// NaN gives the zero point; the caller may narrow [lo, hi] (a fused Relu or Clip).
#pragma once

#include "triad_conv.h" // Conv2dShape

#include <vector>

namespace triad_rt {

constexpr int kQMR = 6, kQNR = 16;

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

/// The micro-kernel: c[i * kQNR + j] = sum over kp pairs of A's panel row i times B's panel
/// column j (int32, wrapping).
inline void q_ukernel(int kp, const int16_t* __restrict a, const int16_t* __restrict b,
                      int32_t* __restrict c) {
#if defined(__AVX2__)
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int p = 0; p < kp; ++p, a += 2 * kQMR, b += 2 * kQNR) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    auto step = [&](int i, __m256i& x0, __m256i& x1) {
      int32_t w;
      std::memcpy(&w, a + 2 * i, sizeof w);
      const __m256i av = _mm256_set1_epi32(w);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
      x0 = _mm256_dpwssd_epi32(x0, av, b0);
      x1 = _mm256_dpwssd_epi32(x1, av, b1);
#elif defined(__AVXVNNI__)
      x0 = _mm256_dpwssd_avx_epi32(x0, av, b0);
      x1 = _mm256_dpwssd_avx_epi32(x1, av, b1);
#else
      x0 = _mm256_add_epi32(x0, _mm256_madd_epi16(av, b0));
      x1 = _mm256_add_epi32(x1, _mm256_madd_epi16(av, b1));
#endif
    };
    step(0, c00, c01);
    step(1, c10, c11);
    step(2, c20, c21);
    step(3, c30, c31);
    step(4, c40, c41);
    step(5, c50, c51);
  }
  auto put = [&](int i, __m256i x0, __m256i x1) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * kQNR), x0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * kQNR + 8), x1);
  };
  put(0, c00, c01);
  put(1, c10, c11);
  put(2, c20, c21);
  put(3, c30, c31);
  put(4, c40, c41);
  put(5, c50, c51);
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
} // namespace detail

/// Requantizing epilogue: C (rows x cols, row-major at y with row stride ldy) as 8-bit Y. Each
/// tile row must hold kQNR readable sums even when fewer (nr) are stored.
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

  void operator()(const int32_t* tile, int row0, int mr, int col0, int nr) const {
    for (int i = 0; i < mr; ++i) {
      const int row = row0 + i, prow = period ? row % period : row;
      const int32_t* t = tile + i * kQNR;
      Y* out = y + row * ldy + col0;
#if defined(__AVX2__)
      if (!per_col) { // all kQNR lanes of the tile row are computed, nr of them stored
        const __m256i b = _mm256_set1_epi32(bias ? bias[prow] : 0);
        const __m256 m = _mm256_set1_ps(mult[scalar_mult ? 0 : prow]);
        const __m256i z = _mm256_set1_epi32(zp), l = _mm256_set1_epi32(lo),
                      h = _mm256_set1_epi32(hi);
        const __m256i r0 = detail::q_requant8(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)), b, m, z, l, h);
        const __m256i r1 = detail::q_requant8(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + 8)), b, m, z, l, h);
        const __m128i v = detail::q_narrow16<Y>(r0, r1);
        if (nr == kQNR) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
        } else {
          alignas(16) Y part[kQNR];
          _mm_store_si128(reinterpret_cast<__m128i*>(part), v);
          std::memcpy(out, part, sizeof(Y) * static_cast<size_t>(nr));
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
  void operator()(const int32_t* tile, int row0, int mr, int col0, int nr) const {
    for (int i = 0; i < mr; ++i)
      std::memcpy(y + (row0 + i) * ldy + col0, tile + i * kQNR, sizeof(int32_t) * nr);
  }
};

/// C[M, N] = A * B from packed operands (q_packed_a_bytes / q_packed_b_bytes layouts), epi(tile,
/// row0, mr, col0, nr) on each finished kQMR x kQNR tile. Threads take chunks of B's panels small
/// enough to stay in L2 across every row panel, one row panel at a time.
template <class Epi>
void q_gemm(int M, int N, int K, const int16_t* pa, const int16_t* pb, const Epi& epi) {
  if (M <= 0 || N <= 0) return;
  const int kp = q_kpairs(K);
  const int mb = (M + kQMR - 1) / kQMR, nb = (N + kQNR - 1) / kQNR;
  const size_t panel_b = static_cast<size_t>(kp) * 2 * kQNR; // int16 per B panel
  const size_t panel_a = static_cast<size_t>(kp) * 2 * kQMR;
  const int chunk = std::max(1, std::min(nb, static_cast<int>((192 << 10) / (panel_b * 2 + 1))));
  const int nchunks = (nb + chunk - 1) / chunk;
  const double work = static_cast<double>(kQMR) * kQNR * chunk * kp * 2;
  parallel_for(static_cast<ptrdiff_t>(nchunks) * mb, work, [&](ptrdiff_t it) {
    const int ch = static_cast<int>(it / mb), rb = static_cast<int>(it % mb);
    alignas(64) int32_t tile[kQMR * kQNR];
    const int16_t* a = pa + rb * panel_a;
    const int mr = std::min(kQMR, M - rb * kQMR);
    for (int q = ch * chunk; q < std::min(nb, (ch + 1) * chunk); ++q) {
      detail::q_ukernel(kp, a, pb + q * panel_b, tile);
      epi(tile, rb * kQMR, mr, q * kQNR, std::min(kQNR, N - q * kQNR));
    }
  });
}

/// Packs B (K x N) whose row k is rows[k] (8-bit values shifted by zp), in parallel.
template <class X>
inline void q_pack_b_rows(int K, int N, const X* const* rows, int zp, int16_t* dst) {
  const int nb = (N + kQNR - 1) / kQNR;
  const size_t panel = static_cast<size_t>(q_kpairs(K)) * 2 * kQNR;
  parallel_for(nb, static_cast<double>(K) * kQNR, [&](ptrdiff_t q) {
    detail::q_pack_b_panel(K, N, rows, zp, static_cast<int>(q) * kQNR, dst + q * panel);
  });
}

// ---- Convolution --------------------------------------------------------------------------

/// Depthwise convolutions (one input channel per output channel) run a direct kernel over each
/// plane instead of per-group GEMMs of one row; their weights are the shifted taps as int32.
inline bool qconv_depthwise(const Conv2dShape& s) {
  return s.group > 1 && s.group == s.C && s.OC == s.C;
}

/// Bytes of the packed weights of an integer convolution (per group, q_packed_a layout).
inline size_t qconv_weights_bytes(const Conv2dShape& s) {
  if (qconv_depthwise(s)) return static_cast<size_t>(s.OC) * s.KH * s.KW * sizeof(int32_t);
  return static_cast<size_t>(s.group) * q_packed_a_bytes(s.OCg(), s.Kg());
}

/// Packs w[OC, C/group, KH, KW] shifted by its zero point (w_zp: n_wzp entries, 1 or OC; null:
/// 0) once, at load.
template <class W>
inline void qconv_pack_weights(const Conv2dShape& s, const W* w, const W* w_zp, int n_wzp,
                               int16_t* dst) {
  const int Mg = s.OCg(), K = s.Kg();
  if (qconv_depthwise(s)) {
    int32_t* d = reinterpret_cast<int32_t*>(dst);
    for (int oc = 0; oc < s.OC; ++oc)
      for (int k = 0; k < K; ++k)
        d[static_cast<size_t>(oc) * K + k] =
            static_cast<int32_t>(w[static_cast<size_t>(oc) * K + k]) -
            (w_zp ? static_cast<int32_t>(w_zp[n_wzp == 1 ? 0 : oc]) : 0);
    return;
  }
  for (int g = 0; g < s.group; ++g) {
    const W* wg = w + static_cast<size_t>(g) * Mg * K;
    q_pack_a(
        Mg, K,
        [&](int r, int k) {
          const int oc = g * Mg + r;
          const int z = w_zp ? static_cast<int>(w_zp[n_wzp == 1 ? 0 : oc]) : 0;
          return static_cast<int>(wg[static_cast<size_t>(r) * K + k]) - z;
        },
        dst + static_cast<size_t>(g) * q_packed_a_bytes(Mg, K) / sizeof(int16_t));
  }
}

/// Whether the convolution reads its input in place (1x1, stride 1, no padding).
inline bool qconv_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 &&
         s.pad_l == 0 && s.pad_b == 0 && s.pad_r == 0;
}

namespace detail {
/// The depthwise kernel, per (image, channel) plane: the plane shifted by x_zp into int16 with a
/// zero halo of the padding, split by column into its stride phases (a tap of stride-2 outputs
/// then reads one phase contiguously), in a per-thread buffer; then per output row int32 sums
/// over the taps, vectorized over the row; epi gets each row in pieces of at most kQNR columns
/// (mr = 1).
template <class X, class Epi>
void qconv_depthwise_planes(const Conv2dShape& s, const X* x, int x_zp, const int32_t* w,
                            const Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), taps = s.KH * s.KW, sw = s.stride_w;
  const int Hp = s.H + s.pad_t + s.pad_b, Wp = s.W + s.pad_l + s.pad_r;
  const int Wq = (Wp + sw - 1) / sw; // columns per phase
  const size_t phase = static_cast<size_t>(Hp) * Wq;
  const size_t plane = static_cast<size_t>(s.H) * s.W;
  parallel_for(static_cast<ptrdiff_t>(s.N) * s.C, static_cast<double>(OH) * OW * taps,
               [&](ptrdiff_t pc) {
                 // Locals: the sums are int32 stores, which could alias the captured ints.
                 const int ow_n = OW, oh_n = OH, kh_n = s.KH, kw_n = s.KW, sh = s.stride_h;
                 const int dh = s.dil_h, dw = s.dil_w, swl = sw;
                 const size_t wq = static_cast<size_t>(Wq), ph = phase;
                 thread_local std::vector<int16_t> grid;
                 thread_local std::vector<int32_t> acc;
                 grid.assign(phase * sw, 0);
                 acc.resize(static_cast<size_t>(OW + kQNR)); // whole tile rows for epi
                 const int c = static_cast<int>(pc % s.C);
                 const X* xc = x + static_cast<size_t>(pc) * plane;
                 for (int h = 0; h < s.H; ++h) {
                   const X* xr = xc + static_cast<size_t>(h) * s.W;
                   for (int p = 0; p < sw; ++p) {
                     // phase p holds padded columns q * sw + p, input columns q * sw + p - pad_l
                     const int q0 = std::max(0, (s.pad_l - p + sw - 1) / sw);
                     const int q1 = (s.W + s.pad_l - p + sw - 1) / sw;
                     int16_t* d = grid.data() + p * phase + static_cast<size_t>(h + s.pad_t) * Wq;
                     const int off = p - s.pad_l; // q * sw + off >= 0 for q >= q0
                     for (int q = q0; q < q1; ++q)
                       d[q] = static_cast<int16_t>(static_cast<int>(xr[q * sw + off]) - x_zp);
                   }
                 }
                 const int32_t* wc = w + static_cast<size_t>(c) * taps;
                 const int row = static_cast<int>(pc) / s.C * s.OC + c;
                 int32_t* a = acc.data();
                 for (int oh = 0; oh < oh_n; ++oh) {
                   for (int j = 0; j < ow_n; ++j)
                     a[j] = 0;
                   for (int kh = 0; kh < kh_n; ++kh) {
                     const size_t r = static_cast<size_t>(oh * sh + kh * dh) * wq;
                     for (int kw = 0; kw < kw_n; ++kw) {
                       const int pcol = kw * dw; // output j reads padded column j * sw + pcol
                       const int16_t* src = grid.data() + (pcol % swl) * ph + r + pcol / swl;
                       const int32_t wv = wc[kh * kw_n + kw];
                       for (int j = 0; j < ow_n; ++j)
                         a[j] = static_cast<int32_t>(static_cast<uint32_t>(a[j]) +
                                                     static_cast<uint32_t>(src[j] * wv)); // wraps
                     }
                   }
                   for (int j = 0; j < ow_n; j += kQNR)
                     epi(a + j, row, 1, oh * ow_n + j, std::min(kQNR, ow_n - j));
                 }
               });
}
} // namespace detail

/// Bytes of caller-owned scratch qconv2d needs: the 8-bit im2col of one group (unless
/// pointwise), its row pointers and the packed B operand.
inline size_t qconv_scratch_bytes(const Conv2dShape& s) {
  if (qconv_depthwise(s)) return 0; // a row of sums per thread, on the stack
  const size_t K = static_cast<size_t>(s.Kg()), P = static_cast<size_t>(s.OH()) * s.OW();
  const size_t cols = qconv_pointwise(s) ? 0 : (K * P + 63) / 64 * 64;
  return cols + (K * sizeof(void*) + 63) / 64 * 64 + q_packed_b_bytes(s.Kg(), s.OH() * s.OW()) + 64;
}

/// The integer convolution: y[n, oc, :, :] = epilogue of the int32 sums over (c, kh, kw) of
/// (x - x_zp) * (w - w_zp), with the padding reading x_zp (so contributing 0). packed_w from
/// qconv_pack_weights; epi(tile, row0, mr, col0, nr) gets rows = output channels of the whole
/// tensor (n * OC + oc) and columns = output pixels; scratch: qconv_scratch_bytes(s).
template <class X, class Epi>
void qconv2d(const Conv2dShape& s, const X* x, int x_zp, const int16_t* packed_w, void* scratch,
             const Epi& epi) {
  const int OH = s.OH(), OW = s.OW(), P = OH * OW, K = s.Kg(), Mg = s.OCg();
  const size_t plane = static_cast<size_t>(s.H) * s.W;
  if (qconv_depthwise(s)) {
    detail::qconv_depthwise_planes(s, x, x_zp, reinterpret_cast<const int32_t*>(packed_w), epi);
    return;
  }
  char* base = static_cast<char*>(scratch);
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  X* cols = reinterpret_cast<X*>(base);
  const bool pointwise = qconv_pointwise(s);
  if (!pointwise) base += (static_cast<size_t>(K) * P + 63) / 64 * 64;
  const X** rows = reinterpret_cast<const X**>(base);
  base += (static_cast<size_t>(K) * sizeof(void*) + 63) / 64 * 64;
  int16_t* pb = reinterpret_cast<int16_t*>(base);
  const size_t wgroup = q_packed_a_bytes(Mg, K) / sizeof(int16_t);
  const X pad = static_cast<X>(x_zp);
  for (int n = 0; n < s.N; ++n)
    for (int g = 0; g < s.group; ++g) {
      const X* xg = x + (static_cast<size_t>(n) * s.C + static_cast<size_t>(g) * s.Cg()) * plane;
      if (pointwise) {
        for (int c = 0; c < K; ++c)
          rows[c] = xg + c * plane;
      } else {
        // im2col rows (c, kh, kw), the padding x_zp
        parallel_for(K, static_cast<double>(P), [&](ptrdiff_t k) {
          const int c = static_cast<int>(k) / (s.KH * s.KW),
                    t = static_cast<int>(k) % (s.KH * s.KW);
          const int kh = t / s.KW, kw = t % s.KW;
          const X* xc = xg + c * plane;
          X* d = cols + k * P;
          for (int oh = 0; oh < OH; ++oh, d += OW) {
            const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
            if (ih < 0 || ih >= s.H) {
              std::memset(d, static_cast<unsigned char>(pad), OW);
              continue;
            }
            const X* xr = xc + static_cast<size_t>(ih) * s.W;
            const int iw0 = kw * s.dil_w - s.pad_l;
            if (s.stride_w == 1) {
              const int lo = std::clamp(-iw0, 0, OW), hi = std::clamp(s.W - iw0, lo, OW);
              std::memset(d, static_cast<unsigned char>(pad), lo);
              std::memcpy(d + lo, xr + iw0 + lo, hi - lo);
              std::memset(d + hi, static_cast<unsigned char>(pad), OW - hi);
            } else {
              // outputs [lo, hi) read inside the row; the rest is padding
              const int sw = s.stride_w;
              const int lo = std::min(OW, iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw);
              const int hi =
                  std::max(lo, std::min(OW, s.W - iw0 > 0 ? (s.W - iw0 + sw - 1) / sw : 0));
              std::memset(d, static_cast<unsigned char>(pad), lo);
              const X* src = xr + iw0;
              for (int ow = lo; ow < hi; ++ow)
                d[ow] = src[ow * sw];
              std::memset(d + hi, static_cast<unsigned char>(pad), OW - hi);
            }
          }
          rows[k] = cols + k * P;
        });
      }
      q_pack_b_rows(K, P, rows, x_zp, pb);
      const int row_off = n * s.OC + g * Mg;
      q_gemm(Mg, P, K, packed_w + g * wgroup, pb,
             [&](const int32_t* tile, int row0, int mr, int col0, int nr) {
               epi(tile, row_off + row0, mr, col0, nr);
             });
    }
}

// ---- MatMul -------------------------------------------------------------------------------

/// Packs a constant B (K x N) shifted by its zero point (b_zp: n_bzp entries, 1 or N; null: 0)
/// once, at load; b(k, j) at b[k * N + j].
template <class W>
inline void qmatmul_pack_b(int K, int N, const W* b, const W* b_zp, int n_bzp, int16_t* dst) {
  q_pack_b(
      K, N,
      [&](int k, int j) {
        const int z = b_zp ? static_cast<int>(b_zp[n_bzp == 1 ? 0 : j]) : 0;
        return static_cast<int>(b[static_cast<size_t>(k) * N + j]) - z;
      },
      dst);
}

/// Bytes of scratch qmatmul needs (A packed per run).
inline size_t qmatmul_scratch_bytes(int M, int K) {
  return q_packed_a_bytes(M, K) + 64;
}

/// C[M, N] = (A - a_zp) * (B - b_zp) for an 8-bit row-major A (row stride lda) and B packed by
/// qmatmul_pack_b; epi on each tile (rows m, columns n).
template <class X, class Epi>
void qmatmul(int M, int N, int K, const X* a, ptrdiff_t lda, int a_zp, const int16_t* packed_b,
             void* scratch, const Epi& epi) {
  char* base = static_cast<char*>(scratch);
  int16_t* pa =
      reinterpret_cast<int16_t*>(base + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64);
  const int mb = (M + kQMR - 1) / kQMR;
  const size_t panel = static_cast<size_t>(q_kpairs(K)) * 2 * kQMR;
  parallel_for(mb, static_cast<double>(kQMR) * K, [&](ptrdiff_t p) {
    const int i0 = static_cast<int>(p) * kQMR, mr = std::min(kQMR, M - i0);
    q_pack_a(
        mr, K, [&](int r, int k) { return static_cast<int>(a[(i0 + r) * lda + k]) - a_zp; },
        pa + p * panel);
  });
  q_gemm(M, N, K, pa, packed_b, epi);
}

} // namespace triad_rt
