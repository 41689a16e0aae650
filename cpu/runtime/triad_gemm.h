// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// fp32 GEMM: register- and cache-blocked micro-kernels, packing (pack_a / pack_b), epilogues
// (EpiRef and the ready-made bias/activation parts).
#pragma once

#include "triad_threads.h"

namespace triad_rt {

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

} // namespace triad_rt
