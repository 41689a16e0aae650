// Tests of the CPU run-time kernels (cpu/runtime/triad_kernels.h) against naive reference loops.
// Built twice (tests/CMakeLists.txt): natively (-march=native: the AVX-512 or AVX2 micro-kernels)
// and for baseline x86-64 (the scalar fallback); every GEMM/conv case runs
// with 1 and 2 threads. The header is C++17, so this file is compiled as C++17.
#include "cpu/runtime/triad_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using Vec = std::vector<float>;

Vec randomVec(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  Vec v(n);
  for (auto& x : v)
    x = d(rng);
  return v;
}

/// Aligned-enough owner for packed buffers (the kernels use unaligned loads anyway).
Vec sized(size_t n) {
  return Vec(n, std::nanf(""));
}

struct ThreadScope {
  explicit ThreadScope(int n) { triad_rt::set_num_threads(n); }
  ~ThreadScope() { triad_rt::set_num_threads(0); }
};

TEST(KernelIsa, MatchesCompileFlags) {
#if defined(__AVX512F__)
  EXPECT_STREQ(TRIAD_RT_ISA, "avx512");
#elif defined(__AVX2__) && defined(__FMA__)
  EXPECT_STREQ(TRIAD_RT_ISA, "avx2");
#else
  EXPECT_STREQ(TRIAD_RT_ISA, "scalar");
#endif
  std::printf("kernel ISA: %s, micro-tile %dx%d, threads %d\n", TRIAD_RT_ISA, triad_rt::kMR,
              triad_rt::kNR, triad_rt::num_threads());
}

// ---------------------------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------------------------

struct GemmCase {
  int M, N, K;
  bool ta, tb;
  int pad; // extra leading-dimension padding for A, B and C
};

std::string name(const GemmCase& c) {
  return std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
         (c.ta ? " tA" : "") + (c.tb ? " tB" : "") + " pad" + std::to_string(c.pad);
}

enum class Mode { Plain, PackedA, PackedB };
enum class EpiKind { None, BiasRow, BiasCol, BiasColRelu, Custom };

struct GemmData {
  GemmCase c;
  int lda, ldb, ldc;
  Vec A, B, biasR, biasC;
  std::vector<double> ref, abssum;
};

GemmData makeGemm(const GemmCase& c, std::mt19937& rng) {
  GemmData d;
  d.c = c;
  d.lda = (c.ta ? c.M : c.K) + c.pad;
  d.ldb = (c.tb ? c.K : c.N) + c.pad;
  d.ldc = c.N + c.pad;
  d.A = randomVec(static_cast<size_t>(c.ta ? c.K : c.M) * d.lda, rng);
  d.B = randomVec(static_cast<size_t>(c.tb ? c.N : c.K) * d.ldb, rng);
  d.biasR = randomVec(c.M, rng);
  d.biasC = randomVec(c.N, rng);
  d.ref.assign(static_cast<size_t>(c.M) * c.N, 0.0);
  d.abssum.assign(d.ref.size(), 0.0);
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      double s = 0, as = 0;
      for (int k = 0; k < c.K; ++k) {
        double a = c.ta ? d.A[static_cast<size_t>(k) * d.lda + i]
                        : d.A[static_cast<size_t>(i) * d.lda + k];
        double b = c.tb ? d.B[static_cast<size_t>(j) * d.ldb + k]
                        : d.B[static_cast<size_t>(k) * d.ldb + j];
        s += a * b;
        as += std::fabs(a * b);
      }
      d.ref[static_cast<size_t>(i) * c.N + j] = s;
      d.abssum[static_cast<size_t>(i) * c.N + j] = as;
    }
  return d;
}

double expected(const GemmData& d, EpiKind e, int i, int j) {
  double v = d.ref[static_cast<size_t>(i) * d.c.N + j];
  switch (e) {
  case EpiKind::BiasRow:
    return v + d.biasR[i];
  case EpiKind::BiasCol:
    return v + d.biasC[j];
  case EpiKind::BiasColRelu:
    return std::max(0.0, v + d.biasC[j]);
  case EpiKind::Custom:
    return 2.0 * v + i - 0.5 * j; // the lambda below
  case EpiKind::None:
    break;
  }
  return v;
}

/// Runs one GEMM variant; returns C (ldc-strided, padding must stay untouched).
Vec runGemm(const GemmData& d, Mode mode, EpiKind e, std::vector<int>* visits) {
  const GemmCase& c = d.c;
  Vec C(static_cast<size_t>(c.M) * d.ldc, -7.0f);
  auto dispatch = [&](auto epi) {
    if (mode == Mode::Plain) {
      triad_rt::gemm(c.M, c.N, c.K, d.A.data(), d.lda, c.ta, d.B.data(), d.ldb, c.tb, C.data(),
                     d.ldc, epi);
    } else if (mode == Mode::PackedB) {
      Vec bp = sized(triad_rt::packed_b_size(c.K, c.N));
      triad_rt::pack_b(c.K, c.N, d.B.data(), d.ldb, c.tb, bp.data());
      triad_rt::gemm_packed_b(c.M, c.N, c.K, d.A.data(), d.lda, c.ta, bp.data(), C.data(), d.ldc,
                              epi);
    } else {
      Vec ap = sized(triad_rt::packed_a_size(c.M, c.K));
      triad_rt::pack_a(c.M, c.K, d.A.data(), d.lda, c.ta, ap.data());
      triad_rt::gemm_packed_a(c.M, c.N, c.K, ap.data(), d.B.data(), d.ldb, c.tb, C.data(), d.ldc,
                              epi);
    }
  };
  switch (e) {
  case EpiKind::None:
    dispatch(triad_rt::EpiNone{});
    break;
  case EpiKind::BiasRow:
    dispatch(triad_rt::epi_bias_row(d.biasR.data()));
    break;
  case EpiKind::BiasCol:
    dispatch(triad_rt::epi_bias_col(d.biasC.data()));
    break;
  case EpiKind::BiasColRelu:
    dispatch(triad_rt::epi_bias_col(d.biasC.data(), triad_rt::ThenRelu{}));
    break;
  case EpiKind::Custom: {
    float* base = C.data();
    int ldc = d.ldc, N = c.N;
    dispatch([=](float* p, int row, int col0, int n) {
      // The segment must be exactly C[row, col0 .. col0+n).
      EXPECT_EQ(p, base + static_cast<ptrdiff_t>(row) * ldc + col0);
      for (int j = 0; j < n; ++j) {
        p[j] = 2.0f * p[j] + static_cast<float>(row) - 0.5f * static_cast<float>(col0 + j);
#pragma omp atomic
        (*visits)[static_cast<size_t>(row) * N + col0 + j] += 1;
      }
    });
    break;
  }
  }
  return C;
}

void checkGemm(const GemmData& d, const Vec& C, EpiKind e, const std::string& what) {
  const GemmCase& c = d.c;
  int bad = 0;
  for (int i = 0; i < c.M && bad < 5; ++i) {
    for (int j = 0; j < c.N && bad < 5; ++j) {
      double want = expected(d, e, i, j);
      double scale = e == EpiKind::Custom ? 2.0 : 1.0;
      // Rounding bound of a K-term fp32 dot product, plus the epilogue's own rounding.
      double tol = scale * (c.K + 2) * 1.2e-7 * d.abssum[static_cast<size_t>(i) * c.N + j] +
                   1e-6 * (1 + std::fabs(want));
      float got = C[static_cast<size_t>(i) * d.ldc + j];
      if (!(std::fabs(got - want) <= tol)) {
        ADD_FAILURE() << what << " at (" << i << "," << j << "): got " << got << " want " << want
                      << " tol " << tol;
        ++bad;
      }
    }
    for (int j = c.N; j < d.ldc; ++j)
      if (C[static_cast<size_t>(i) * d.ldc + j] != -7.0f && bad++ < 5)
        ADD_FAILURE() << what << ": padding column " << j << " of row " << i << " was written";
  }
}

std::vector<GemmCase> gemmCases() {
  using triad_rt::kKC;
  using triad_rt::kMC;
  using triad_rt::kMR;
  using triad_rt::kNC;
  using triad_rt::kNR;
  std::vector<GemmCase> v = {
      {1, 1, 1, false, false, 0},
      {1, 1, 1, true, true, 3},
      {2, 3, 5, false, false, 0},
      {7, 13, 17, false, false, 1},
      {13, 37, 29, true, false, 0},
      {29, 31, 37, false, true, 2},
      {41, 43, 47, true, true, 0},
      {kMR, kNR, kKC, false, false, 0},
      {kMR + 1, kNR + 1, kKC + 1, false, false, 0},
      {kMR - 1 > 0 ? kMR - 1 : 1, kNR - 1, kKC - 1, false, true, 1},
      {1, 257, 300, false, false, 0},         // GEMV, crosses a K block
      {1, 100, 64, false, true, 0},           // GEMV, transposed B (Linear weights)
      {3, 1, 50, false, false, 0},            // N = 1
      {kMC + 5, 19, 3, false, false, 0},      // crosses an M block
      {5, kNC + kNR + 3, 7, false, false, 0}, // crosses an N block
      {67, 97, 2 * kKC + 11, true, true, 0},  // three K blocks, both transposed
      {127, 131, 139, false, false, 4},       // big enough to run threaded
      // Pre-packed B runs each C tile over all of K in calls of at most kKCPackedB: two and
      // three such K blocks, with an edge tile and a short last row panel (BERT's 128 rows).
      {9 * kMR + 2, 3 * kNR + 5, triad_rt::kKCPackedB + 300, false, false, 0},
      {37, 41, 2 * triad_rt::kKCPackedB + 7, true, false, 1},
      // Row strides of 1024 and 2048 floats put every row of a kMR panel in one L1 set: with
      // pre-packed B, A's rows are then copied to a padded stride first (two kMC blocks here;
      // K not a whole number of cache lines in the second).
      {kMC + 9, 2 * kNR + 3, 1024, false, false, 0},
      {33, 45, 2000, false, false, 48},
  };
  return v;
}

void gemmSuite(int threads) {
  ThreadScope ts(threads);
  std::mt19937 rng(1234 + threads);
  for (const GemmCase& c : gemmCases()) {
    GemmData d = makeGemm(c, rng);
    for (Mode mode : {Mode::Plain, Mode::PackedA, Mode::PackedB}) {
      for (EpiKind e : {EpiKind::None, EpiKind::BiasRow, EpiKind::BiasCol, EpiKind::BiasColRelu,
                        EpiKind::Custom}) {
        std::vector<int> visits(static_cast<size_t>(c.M) * c.N, 0);
        Vec C = runGemm(d, mode, e, &visits);
        std::string what = name(c) + " mode " + std::to_string(static_cast<int>(mode)) + " epi " +
                           std::to_string(static_cast<int>(e)) + " threads " +
                           std::to_string(threads);
        checkGemm(d, C, e, what);
        if (e == EpiKind::Custom) {
          int wrong = 0;
          for (int v : visits)
            wrong += v != 1;
          EXPECT_EQ(wrong, 0) << what << ": epilogue must visit each element exactly once";
        }
      }
    }
  }
}

TEST(Gemm, MatchesReferenceOneThread) {
  gemmSuite(1);
}
TEST(Gemm, MatchesReferenceTwoThreads) {
  gemmSuite(2);
}

TEST(Gemm, RowStridesSharingAnL1SetAreDetected) {
  using triad_rt::kMR;
  using triad_rt::detail::padded_row_stride;
  using triad_rt::detail::rows_share_l1_set;
  // 4 KiB apart: every row in one set (8 ways); fewer rows than ways never conflict.
  for (int ld : {1024, 2048, 3072, 4096})
    EXPECT_EQ(rows_share_l1_set(ld), kMR >= 8) << ld;
  // BERT's 768 (four sets), 1536 (two sets, at most 7 rows each) and padded strides read in place.
  for (int ld : {768, 1536, 3088, 1040, 100})
    EXPECT_FALSE(rows_share_l1_set(ld)) << ld;
  for (int K : {1, 15, 16, 1000, 1024, 2000, 3072}) {
    const int ld = padded_row_stride(K);
    EXPECT_GE(ld, K);
    EXPECT_EQ(ld % 16, 0);
    EXPECT_FALSE(rows_share_l1_set(ld)) << K;
  }
}

TEST(Gemm, ThreadCountDoesNotChangeResults) {
  // Every element is summed in the same k order whatever the split, so results are bitwise equal.
  std::mt19937 rng(7);
  const int M = 300, N = 500, K = 700;
  Vec A = randomVec(static_cast<size_t>(M) * K, rng),
      B = randomVec(static_cast<size_t>(K) * N, rng);
  Vec C1(static_cast<size_t>(M) * N), C2(C1.size());
  {
    ThreadScope ts(1);
    triad_rt::gemm(M, N, K, A.data(), K, false, B.data(), N, false, C1.data(), N);
  }
  {
    ThreadScope ts(2);
    triad_rt::gemm(M, N, K, A.data(), K, false, B.data(), N, false, C2.data(), N);
  }
  EXPECT_EQ(C1, C2);
  // Likewise with B pre-packed (A read in place, or packed when transposed).
  Vec bp = sized(triad_rt::packed_b_size(K, N));
  triad_rt::pack_b(K, N, B.data(), N, false, bp.data());
  for (bool ta : {false, true}) {
    {
      ThreadScope ts(1);
      triad_rt::gemm_packed_b(M, N, K, A.data(), ta ? M : K, ta, bp.data(), C1.data(), N);
    }
    {
      ThreadScope ts(2);
      triad_rt::gemm_packed_b(M, N, K, A.data(), ta ? M : K, ta, bp.data(), C2.data(), N);
    }
    EXPECT_EQ(C1, C2) << (ta ? "transposed A" : "row-major A");
  }
}

// The thread pool's judge of whether parallel jobs pay (the caller's own speed per item against
// the job's wall time): jobs that take longer than the caller alone would have make the next
// jobs run inline, for a stretch that doubles while that persists and resets when threads pay.
TEST(Threading, GovernorFallsBackInlineWhenThreadsDoNotPay) {
  using G = triad_rt::detail::ParallelGovernor;
  G g;
  // Threads that pay (the job in 0.55 of the caller's inline time): always allowed.
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(g.allow());
    g.record(8, 4, 0.55, 0.5); // inline estimate 0.5 / 4 * 8 = 1.0
  }
  EXPECT_LT(g.loss(), 0.6);
  // One slow job does not flip it (a moving average); a run of them does.
  g.record(8, 8, 1.5, 1.0);
  EXPECT_TRUE(g.allow());
  int slow = 1;
  while (g.inline_left() == 0 && slow < 10) {
    g.record(8, 8, 1.5, 1.0); // the caller ran every item and still waited: ratio 1.5
    ++slow;
  }
  EXPECT_GT(slow, 1);
  EXPECT_EQ(g.inline_left(), G::kMinInline);
  for (int i = 0; i < G::kMinInline; ++i)
    ASSERT_FALSE(g.allow()) << i;
  ASSERT_TRUE(g.allow());
  // The first job after a stretch wakes sleeping workers: not judged, however slow.
  g.record(8, 8, 100.0, 1.0);
  EXPECT_EQ(g.inline_left(), 0);
  // Still slow: the next stretch is twice as long, and so on up to kMaxInline.
  int stretch = 0;
  for (int round = 0; round < 12; ++round) {
    while (g.inline_left() == 0) {
      ASSERT_TRUE(g.allow());
      g.record(8, 8, 2.0, 1.0);
    }
    int n = 0;
    while (!g.allow())
      ++n;
    if (round == 0) {
      EXPECT_EQ(n, 2 * G::kMinInline);
    }
    EXPECT_GE(n, stretch);
    stretch = n;
    g.record(8, 8, 2.0, 1.0); // the warm-up job after the stretch
  }
  EXPECT_EQ(stretch, G::kMaxInline);
  // Threads that pay again reset the stretch.
  for (int i = 0; i < 20; ++i)
    g.record(8, 4, 0.5, 0.5);
  for (int i = 0; i < 20 && g.inline_left() == 0; ++i)
    g.record(8, 8, 2.0, 1.0);
  EXPECT_EQ(g.inline_left(), G::kMinInline);
}

// Whatever the governor decides, parallel_for runs every index once and kernels give the same
// bits (inline and threaded runs sum in the same order).
TEST(Threading, GovernorInlineStretchKeepsResults) {
  ThreadScope ts(2);
  auto& g = triad_rt::detail::governor();
  for (int i = 0; i < 30 && g.inline_left() == 0; ++i)
    g.record(8, 8, 4.0, 1.0);
  ASSERT_GT(g.inline_left(), 0);
  std::vector<int> hits(1000, 0);
  triad_rt::parallel_for(1000, 1e6, [&](ptrdiff_t i) { hits[static_cast<size_t>(i)] += 1; });
  for (int h : hits)
    ASSERT_EQ(h, 1);
  while (g.inline_left() > 0)
    g.allow();
}

// Guided claims (parallel_for's jobs): contiguous runs that partition [0, n), each a 1/div share
// of the items left when it was taken (at least one), so the last claims are single items and
// no thread is left holding a large run at the end; div 0 claims one item at a time.
TEST(Threading, PoolGuidedClaimsShrinkToSingleItems) {
  struct Claims {
    std::mutex m;
    std::vector<std::pair<ptrdiff_t, ptrdiff_t>> runs;
  };
  auto record = [](void* c, ptrdiff_t b, ptrdiff_t e) {
    auto* cl = static_cast<Claims*>(c);
    std::lock_guard<std::mutex> l(cl->m);
    cl->runs.emplace_back(b, e);
  };
  for (ptrdiff_t div : {ptrdiff_t{0}, ptrdiff_t{4}}) {
    for (ptrdiff_t n : {ptrdiff_t{2}, ptrdiff_t{7}, ptrdiff_t{1000}}) {
      Claims cl;
      triad_rt::detail::pool().run(2, n, div, record, &cl);
      std::sort(cl.runs.begin(), cl.runs.end());
      ptrdiff_t next = 0;
      for (auto [b, e] : cl.runs) {
        ASSERT_EQ(b, next) << "div " << div << " n " << n;
        ASSERT_GT(e, b);
        // Taken when n - b items were left (claims are in order of b).
        EXPECT_EQ(e - b, div == 0 ? 1 : std::max<ptrdiff_t>(1, (n - b) / div))
            << "div " << div << " n " << n << " b " << b;
        next = e;
      }
      EXPECT_EQ(next, n);
      EXPECT_EQ(cl.runs.back().second - cl.runs.back().first, 1);
      if (div > 0 && n == 1000) {
        EXPECT_LT(cl.runs.size(), 40u); // not one claim per item
      }
    }
  }
}

TEST(Threading, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2}) {
    ThreadScope ts(threads);
    for (ptrdiff_t n : {ptrdiff_t{0}, ptrdiff_t{1}, ptrdiff_t{3}, ptrdiff_t{1000}}) {
      std::vector<int> hits(static_cast<size_t>(n), 0);
      triad_rt::parallel_for(n, 1e6, [&](ptrdiff_t i) { hits[static_cast<size_t>(i)] += 1; });
      for (ptrdiff_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << " i " << i;
    }
  }
  triad_rt::set_num_threads(3);
#ifdef _OPENMP
  EXPECT_EQ(triad_rt::num_threads(), 3);
#else
  EXPECT_EQ(triad_rt::num_threads(), 1);
#endif
  triad_rt::set_num_threads(0);
  EXPECT_GE(triad_rt::num_threads(), 1);
}

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------

std::vector<double> naiveConv(const triad_rt::Conv2dShape& s, const Vec& x, const Vec& w,
                              const Vec& bias) {
  const int OH = s.OH(), OW = s.OW(), Cg = s.C / s.group, OCg = s.OC / s.group;
  std::vector<double> y(static_cast<size_t>(s.N) * s.OC * OH * OW);
  for (int n = 0; n < s.N; ++n)
    for (int oc = 0; oc < s.OC; ++oc) {
      const int g = oc / OCg;
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          double acc = bias[oc];
          for (int c = 0; c < Cg; ++c)
            for (int kh = 0; kh < s.KH; ++kh)
              for (int kw = 0; kw < s.KW; ++kw) {
                int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
                int iw = ow * s.stride_w - s.pad_l + kw * s.dil_w;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                acc += static_cast<double>(
                           x[((static_cast<size_t>(n) * s.C + g * Cg + c) * s.H + ih) * s.W + iw]) *
                       w[((static_cast<size_t>(oc) * Cg + c) * s.KH + kh) * s.KW + kw];
              }
          y[((static_cast<size_t>(n) * s.OC + oc) * OH + oh) * OW + ow] = acc;
        }
    }
  return y;
}

/// conv2d with bias + residual add + relu fused, against the naive conv.
void checkConv(const triad_rt::Conv2dShape& s, std::mt19937& rng, const std::string& what) {
  Vec x = randomVec(static_cast<size_t>(s.N) * s.C * s.H * s.W, rng);
  Vec w = randomVec(static_cast<size_t>(s.OC) * (s.C / s.group) * s.KH * s.KW, rng);
  Vec bias = randomVec(s.OC, rng);
  const size_t ysize = static_cast<size_t>(s.N) * s.OC * s.OH() * s.OW();
  Vec res = randomVec(ysize, rng);
  std::vector<double> ref = naiveConv(s, x, w, bias);
  Vec wp = sized(triad_rt::conv2d_packed_weights_size(s));
  triad_rt::conv2d_pack_weights(s, w.data(), wp.data());
  std::vector<unsigned char> scratch(triad_rt::conv2d_scratch_bytes(s));
  Vec y(ysize, std::nanf(""));
  float* ybase = y.data();
  const float* rbase = res.data();
  std::vector<int> visits(ysize, 0);
  const int P = s.OH() * s.OW();
  triad_rt::conv2d(s, x.data(), wp.data(), y.data(), scratch.empty() ? nullptr : scratch.data(),
                   triad_rt::epi_bias_row(bias.data(), [&](float* c, int oc, int p0, int n) {
                     ptrdiff_t off = c - ybase;
                     EXPECT_EQ(off % P, p0) << what;
                     EXPECT_EQ((off / P) % s.OC, oc) << what;
                     for (int j = 0; j < n; ++j) {
                       c[j] = std::max(0.0f, c[j] + rbase[off + j]);
#pragma omp atomic
                       visits[static_cast<size_t>(off + j)] += 1;
                     }
                   }));
  const int Kg = (s.C / s.group) * s.KH * s.KW;
  int bad = 0;
  for (size_t i = 0; i < ysize && bad < 5; ++i) {
    double want = std::max(0.0, ref[i] + res[i]);
    double tol = (Kg + 3) * 2.4e-7 * (Kg + 2) + 1e-6;
    if (!(std::fabs(y[i] - want) <= tol) || visits[i] != 1) {
      ADD_FAILURE() << what << " at " << i << ": got " << y[i] << " want " << want << " visits "
                    << visits[i];
      ++bad;
    }
  }
}

std::string convName(const triad_rt::Conv2dShape& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "N%d C%d %dx%d OC%d k%dx%d g%d s%d,%d d%d,%d p%d,%d,%d,%d algo %d",
                s.N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.group, s.stride_h, s.stride_w, s.dil_h,
                s.dil_w, s.pad_t, s.pad_l, s.pad_b, s.pad_r,
                static_cast<int>(triad_rt::conv2d_algo(s)));
  return buf;
}

triad_rt::Conv2dShape shape(int N, int C, int H, int W, int OC, int K, int group, int stride,
                            int pad) {
  triad_rt::Conv2dShape s;
  s.N = N, s.C = C, s.H = H, s.W = W, s.OC = OC, s.KH = K, s.KW = K, s.group = group;
  s.stride_h = s.stride_w = stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = pad;
  return s;
}

void convSuite(int threads) {
  ThreadScope ts(threads);
  std::mt19937 rng(99 + threads);
  using triad_rt::ConvAlgo;
  // Named shapes (ResNet/MobileNet-like) with the algorithm they must take.
  struct Named {
    triad_rt::Conv2dShape s;
    ConvAlgo algo;
  };
  std::vector<Named> named = {
      {shape(1, 16, 14, 14, 32, 1, 1, 1, 0), ConvAlgo::Pointwise},
      {shape(2, 8, 9, 7, 12, 1, 2, 1, 0), ConvAlgo::Implicit},      // grouped 1x1, batched
      {shape(1, 8, 15, 15, 16, 3, 1, 1, 1), ConvAlgo::Implicit},    // 3x3 same
      {shape(1, 3, 32, 32, 8, 7, 1, 2, 3), ConvAlgo::Implicit},     // ResNet stem
      {shape(1, 1, 8, 8, 8, 3, 1, 1, 0), ConvAlgo::Direct},         // digits_cnn conv1
      {shape(1, 8, 6, 6, 16, 3, 1, 1, 0), ConvAlgo::Direct},        // digits_cnn conv2
      {shape(2, 3, 7, 9, 20, 2, 1, 1, 0), ConvAlgo::Direct},        // OC not a vector multiple
      {shape(1, 4, 6, 6, 64, 3, 1, 1, 0), ConvAlgo::Direct},        // 64 output channels
      {shape(32, 8, 6, 6, 16, 3, 1, 1, 0), ConvAlgo::Direct},       // images across threads
      {shape(1, 16, 8, 8, 8, 1, 1, 2, 0), ConvAlgo::Implicit},      // 1x1 stride 2 (downsample)
      {shape(1, 24, 17, 17, 24, 3, 24, 1, 1), ConvAlgo::Depthwise}, // MobileNet dw
      {shape(2, 12, 16, 16, 12, 3, 12, 2, 1), ConvAlgo::Depthwise}, // dw stride 2
      {shape(1, 4, 10, 10, 8, 3, 4, 1, 1), ConvAlgo::Depthwise},    // channel multiplier 2
      {shape(1, 64, 56, 56, 64, 3, 1, 1, 1), ConvAlgo::Implicit},   // threaded
      {shape(8, 16, 16, 16, 16, 3, 1, 1, 1), ConvAlgo::Implicit},   // images across threads
      {shape(6, 16, 12, 12, 24, 1, 4, 1, 0), ConvAlgo::Implicit},   // small 1x1 planes, batched
      {shape(1, 16, 12, 12, 24, 1, 4, 1, 0), ConvAlgo::Pointwise},  // (group) items
      {shape(2, 8, 40, 40, 16, 1, 2, 1, 0), ConvAlgo::Pointwise},   // large planes, batched
      {shape(32, 1, 8, 8, 8, 3, 1, 1, 1), ConvAlgo::Implicit},      // padded: 32 images/GEMM
      {shape(40, 8, 13, 11, 5, 3, 1, 2, 1), ConvAlgo::Implicit},    // several image chunks
      {shape(1, 32, 7, 7, 32, 3, 32, 1, 1), ConvAlgo::Depthwise},   // dw on a 7x7 plane
      {shape(1, 16, 21, 19, 16, 5, 16, 2, 2), ConvAlgo::Depthwise}, // dw 5x5 stride 2
      {shape(1, 6, 30, 30, 4, 3, 1, 5, 0), ConvAlgo::Implicit},     // stride above the kernel
      {shape(1, 48, 7, 7, 24, 3, 1, 1, 1), ConvAlgo::Implicit},     // compact columns, in place
      {shape(3, 16, 7, 7, 128, 3, 2, 1, 1), ConvAlgo::Implicit},    // compact, batched, grouped
  };
  {
    // Stride 2 with dilation 2: every tap reads one phase (0, 0).
    triad_rt::Conv2dShape d = shape(2, 4, 17, 16, 6, 3, 1, 2, 2);
    d.dil_h = d.dil_w = 2;
    named.push_back({d, ConvAlgo::Implicit});
    d.group = d.C, d.OC = d.C * 2;
    named.push_back({d, ConvAlgo::Depthwise});
  }
  // Small planes take the compact-column GEMM, large ones the grid's columns.
  EXPECT_TRUE(triad_rt::detail::implicit_plan(shape(1, 48, 7, 7, 64, 3, 1, 1, 1)).compact);
  EXPECT_TRUE(triad_rt::detail::implicit_plan(shape(3, 16, 7, 7, 128, 3, 2, 1, 1)).compact);
  EXPECT_TRUE(triad_rt::detail::implicit_plan(shape(1, 8, 6, 6, 16, 3, 1, 1, 0)).compact);
  EXPECT_FALSE(triad_rt::detail::implicit_plan(shape(1, 64, 56, 56, 64, 3, 1, 1, 1)).compact);
  for (auto& n : named) {
    EXPECT_EQ(triad_rt::conv2d_algo(n.s), n.algo) << convName(n.s);
    checkConv(n.s, rng, convName(n.s) + " threads " + std::to_string(threads));
  }
  // Random shapes: groups, strides, dilations, asymmetric pads.
  std::uniform_int_distribution<int> u(0, 1 << 30);
  for (int t = 0; t < 60; ++t) {
    triad_rt::Conv2dShape s;
    int kind = t % 3; // 0: dense, 1: grouped, 2: depthwise
    s.N = 1 + u(rng) % 2;
    s.group = kind == 0 ? 1 : kind == 1 ? 1 + u(rng) % 3 : 2 + u(rng) % 6;
    int cg = kind == 2 ? 1 : 1 + u(rng) % 5;
    s.C = s.group * cg;
    s.OC = s.group * (kind == 2 ? 1 + u(rng) % 2 : 1 + u(rng) % 7);
    s.KH = 1 + u(rng) % 4, s.KW = 1 + u(rng) % 4;
    s.stride_h = 1 + u(rng) % 3, s.stride_w = 1 + u(rng) % 3;
    s.dil_h = 1 + u(rng) % 2, s.dil_w = 1 + u(rng) % 2;
    s.pad_t = u(rng) % 3, s.pad_l = u(rng) % 3, s.pad_b = u(rng) % 3, s.pad_r = u(rng) % 3;
    s.H = 1 + u(rng) % 19, s.W = 1 + u(rng) % 23;
    if (s.H + s.pad_t + s.pad_b < s.dil_h * (s.KH - 1) + 1 ||
        s.W + s.pad_l + s.pad_r < s.dil_w * (s.KW - 1) + 1)
      continue; // no output
    checkConv(s, rng, convName(s) + " threads " + std::to_string(threads));
  }
}

TEST(Conv2d, MatchesNaiveOneThread) {
  convSuite(1);
}
TEST(Conv2d, MatchesNaiveTwoThreads) {
  convSuite(2);
}

TEST(Conv2d, ScratchOnlyForImplicitGemm) {
  EXPECT_EQ(triad_rt::conv2d_scratch_bytes(shape(1, 16, 14, 14, 32, 1, 1, 1, 0)), 0u);
  EXPECT_EQ(triad_rt::conv2d_scratch_bytes(shape(1, 24, 17, 17, 24, 3, 24, 1, 1)), 0u);
  // 3x3 same on 8 channels of 15x15: the grid is 8 planes of 17x17 (+ slack), the output
  // 16 x 225 floats at least (16 x 17*17 on the grid's columns; which one depends on the
  // micro-tile width), and 72 row pointers: well under the 9x im2col copy.
  const size_t got = triad_rt::conv2d_scratch_bytes(shape(1, 8, 15, 15, 16, 3, 1, 1, 1));
  EXPECT_GE(got, (8u * 17 * 17 + 16u * 225) * sizeof(float) + 72 * sizeof(float*));
  EXPECT_LT(got, 8u * 9 * 225 * sizeof(float));
  // Stride 2: four phase planes of 9x9 per channel instead of one 17x17.
  EXPECT_GE(triad_rt::conv2d_scratch_bytes(shape(1, 8, 15, 15, 16, 3, 1, 2, 1)),
            (8u * 4 * 81 + 16u * 81) * sizeof(float));
}

// ---------------------------------------------------------------------------------------------
// Channel-blocked convolution (NCHW16c)

/// NCHW -> blocked [N, C/16, H*W, 16].
Vec blockedOf(const Vec& x, int N, int C, size_t HW) {
  Vec b(x.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (size_t p = 0; p < HW; ++p)
        b[((static_cast<size_t>(n) * (C / 16) + c / 16) * HW + p) * 16 + c % 16] =
            x[(static_cast<size_t>(n) * C + c) * HW + p];
  return b;
}

/// y[i] == max(0, want[i] + res[i]) within the conv's rounding, each element finished once.
void expectResidualRelu(const Vec& y, const Vec& want, const Vec& res,
                        const std::vector<int>& visits, int Kg, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < y.size() && bad < 5; ++i) {
    double w = std::max(0.0, static_cast<double>(want[i]) + res[i]);
    double tol = (Kg + 3) * 2.4e-7 * (Kg + 2) + 1e-6;
    if (!(std::fabs(y[i] - w) <= tol) || visits[i] != 1) {
      ADD_FAILURE() << what << " at " << i << ": got " << y[i] << " want " << w << " visits "
                    << visits[i];
      ++bad;
    }
  }
}

/// conv2d_nchwc with bias + residual add + relu (epilogue on blocked tiles), from an NCHW and
/// from a blocked input, against the naive conv; every output element is finished exactly once.
/// Input channels that are no multiple of 16 are only read NCHW (planar), output channels that
/// are none only written NCHW (conv2d_nchwc_nchw).
void checkConvNchwc(const triad_rt::Conv2dShape& s, std::mt19937& rng, const std::string& what) {
  ASSERT_TRUE(triad_rt::conv2d_nchwc_supported(s)) << what;
  const bool planarIn = s.C % 16 != 0, wholeOut = s.OC % 16 == 0;
  const size_t HW = static_cast<size_t>(s.H) * s.W, P = static_cast<size_t>(s.OH()) * s.OW();
  Vec x = randomVec(static_cast<size_t>(s.N) * s.C * HW, rng);
  Vec w = randomVec(static_cast<size_t>(s.OC) * (s.C / s.group) * s.KH * s.KW, rng);
  Vec bias = randomVec(s.OC, rng);
  const size_t ysize = static_cast<size_t>(s.N) * s.OC * P;
  Vec res = randomVec(ysize, rng);
  std::vector<double> ref = naiveConv(s, x, w, bias);
  Vec refv(ref.begin(), ref.end());
  Vec refb = wholeOut ? blockedOf(refv, s.N, s.OC, P) : Vec();
  Vec resb = wholeOut ? blockedOf(res, s.N, s.OC, P) : Vec();
  Vec xb = planarIn ? x : blockedOf(x, s.N, s.C, HW);
  Vec wp = sized(triad_rt::conv2d_nchwc_weights_size(s));
  triad_rt::conv2d_nchwc_pack_weights(s, w.data(), wp.data());
  const int Kg = (s.C / s.group) * s.KH * s.KW;
  for (bool blocked : {false, true}) {
    if (!wholeOut || (blocked && planarIn)) continue;
    std::vector<unsigned char> scratch(triad_rt::conv2d_nchwc_scratch_bytes(s, blocked));
    Vec y(ysize, std::nanf(""));
    float* ybase = y.data();
    std::vector<int> visits(ysize, 0);
    triad_rt::conv2d_nchwc(
        s, blocked ? xb.data() : x.data(), blocked, wp.data(), bias.data(), y.data(),
        scratch.empty() ? nullptr : scratch.data(), [&](float* c, int row, int col0, int n) {
          ptrdiff_t off = c - ybase;
          EXPECT_EQ(static_cast<size_t>(off) % (P * 16), static_cast<size_t>(col0)) << what;
          EXPECT_EQ(static_cast<size_t>(off) / (P * 16), static_cast<size_t>(row)) << what;
          for (int j = 0; j < n; ++j) {
            c[j] = std::max(0.0f, c[j] + resb[off + j]);
#pragma omp atomic
            visits[static_cast<size_t>(off + j)] += 1;
          }
        });
    expectResidualRelu(y, refb, resb, visits, Kg, what + (blocked ? " blocked in" : " nchw in"));
  }
  // NCHW output from a blocked input (planar: NCHW): the epilogue runs once per output plane.
  std::vector<unsigned char> scratch(triad_rt::conv2d_nchwc_nchw_scratch_bytes(s, !planarIn));
  Vec y(ysize, std::nanf(""));
  float* ybase = y.data();
  std::vector<int> visits(ysize, 0);
  triad_rt::conv2d_nchwc_nchw(
      s, xb.data(), !planarIn, wp.data(), bias.data(), y.data(), scratch.data(),
      [&](float* c, int oc, int col0, int n) {
        ptrdiff_t off = c - ybase;
        EXPECT_EQ(col0, 0) << what;
        EXPECT_EQ(static_cast<size_t>(n), P) << what;
        EXPECT_EQ(static_cast<size_t>(off) / P % s.OC, static_cast<size_t>(oc)) << what;
        for (int j = 0; j < n; ++j) {
          c[j] = std::max(0.0f, c[j] + res[off + j]);
#pragma omp atomic
          visits[static_cast<size_t>(off + j)] += 1;
        }
      });
  expectResidualRelu(y, refv, res, visits, Kg, what + " nchw out");
}

void convNchwcSuite(int threads) {
  ThreadScope ts(threads);
  std::mt19937 rng(7 + threads);
  std::vector<triad_rt::Conv2dShape> named = {
      shape(1, 64, 56, 56, 64, 1, 1, 1, 0),  // ResNet 1x1, flat runs of a plane
      shape(1, 32, 14, 14, 48, 3, 1, 1, 1),  // 3x3 same, a one-block last panel (AVX-512)
      shape(2, 16, 9, 11, 32, 3, 1, 2, 1),   // stride 2, batched
      shape(1, 16, 8, 8, 16, 1, 1, 2, 0),    // 1x1 stride 2 (downsample)
      shape(1, 32, 7, 7, 64, 3, 1, 1, 1),    // 7x7 plane: a 7-pixel tile
      shape(3, 16, 5, 5, 16, 1, 1, 1, 0),    // flat, several images
      shape(1, 96, 7, 7, 160, 1, 1, 1, 0),   // flat 7x7 projection: runs split for threads
      shape(1, 32, 17, 17, 32, 3, 32, 1, 1), // depthwise
      shape(2, 16, 16, 16, 16, 3, 16, 2, 1), // depthwise stride 2
      shape(1, 48, 7, 7, 48, 3, 48, 1, 1),   // depthwise 7x7 plane
      shape(1, 16, 21, 19, 16, 5, 16, 2, 2), // depthwise 5x5 stride 2
      shape(1, 16, 3, 3, 16, 3, 16, 1, 1),   // depthwise: every pixel an edge
      // Depthwise 3x3/5x5 rows (nchwc_dw_square): widths of whole and partial register blocks.
      shape(1, 32, 23, 23, 32, 3, 32, 1, 1), // 14 + 7 + 2 pixels
      shape(1, 16, 30, 29, 16, 3, 16, 2, 1), // stride 2, 15 = 7 + 7 + 1
      shape(1, 16, 14, 14, 16, 5, 16, 1, 2), // 5x5 stride 1
      shape(1, 16, 7, 7, 16, 3, 16, 2, 1),   // 4 pixels, both edges in one block
      shape(1, 16, 2, 2, 16, 5, 16, 1, 2),   // every tap row but the middle ones in padding
      // Planar input (C no multiple of 16) and NCHW-only output (OC no multiple of 16).
      shape(1, 3, 32, 30, 32, 3, 1, 2, 1),   // MobileNet's stem: padded tap rows
      shape(2, 3, 17, 19, 48, 7, 1, 2, 3),   // ResNet's stem, a one-block last panel
      shape(1, 24, 14, 14, 144, 1, 1, 1, 0), // 1x1 from 24 channels: read in place
      shape(1, 5, 9, 8, 16, 3, 1, 1, 0),     // unpadded 3x3 read in place
      shape(1, 96, 14, 14, 24, 1, 1, 1, 0),  // 96 -> 24: a half-empty block, NCHW out
      shape(1, 24, 9, 9, 40, 3, 1, 2, 1),    // planar in, NCHW out
  };
  {
    triad_rt::Conv2dShape d = shape(1, 16, 13, 12, 32, 3, 1, 1, 2);
    d.dil_h = d.dil_w = 2, d.pad_b = 0, d.stride_h = 3; // dilation, asymmetric pads, stride_h 3
    named.push_back(d);
    d.group = d.C, d.OC = d.C;
    named.push_back(d);
    d.group = 1, d.C = 3, d.OC = 16; // planar: dilation, asymmetric pads, stride_h 3
    named.push_back(d);
    triad_rt::Conv2dShape q = shape(1, 16, 9, 9, 16, 3, 16, 1, 1);
    q.pad_t = 0, q.pad_l = 2, q.pad_r = 0; // square depthwise, asymmetric pads
    named.push_back(q);
  }
  for (const auto& s : named)
    checkConvNchwc(s, rng, convName(s) + " threads " + std::to_string(threads));
  std::uniform_int_distribution<int> u(0, 1 << 30);
  for (int t = 0; t < 45; ++t) {
    triad_rt::Conv2dShape s;
    const bool dw = t % 3 == 1, planar = t % 3 == 2;
    s.N = 1 + u(rng) % 2;
    s.C = planar ? 1 + u(rng) % 40 : 16 * (1 + u(rng) % 3);
    s.OC = dw ? s.C : planar ? 1 + u(rng) % 70 : 16 * (1 + u(rng) % 4);
    s.group = dw ? s.C : 1;
    s.KH = 1 + u(rng) % 4, s.KW = 1 + u(rng) % 4;
    s.stride_h = 1 + u(rng) % 3, s.stride_w = 1 + u(rng) % (dw ? 3 : 2);
    s.dil_h = 1 + u(rng) % 2, s.dil_w = 1 + u(rng) % 2;
    s.pad_t = u(rng) % 3, s.pad_l = u(rng) % 3, s.pad_b = u(rng) % 3, s.pad_r = u(rng) % 3;
    s.H = 1 + u(rng) % 19, s.W = 1 + u(rng) % 23;
    if (s.H + s.pad_t + s.pad_b < s.dil_h * (s.KH - 1) + 1 ||
        s.W + s.pad_l + s.pad_r < s.dil_w * (s.KW - 1) + 1 || !triad_rt::conv2d_nchwc_supported(s))
      continue;
    checkConvNchwc(s, rng, convName(s) + " threads " + std::to_string(threads));
  }
}

TEST(Conv2dNchwc, FlatRunsSplitForThreads) {
  using triad_rt::kCMR;
  const int whole = static_cast<int>(std::min<ptrdiff_t>(3136, kCMR * 8));
  // One thread, or enough items already: runs of up to 8 tiles.
  EXPECT_EQ(triad_rt::detail::nchwc_flat_run(1, 3136, 4, 1), whole);
  EXPECT_EQ(triad_rt::detail::nchwc_flat_run(1, 49, 5, 1), std::min<ptrdiff_t>(49, kCMR * 8));
  EXPECT_EQ(triad_rt::detail::nchwc_flat_run(1, 3136, 4, 2), whole);
  // MobileNetV2's 7x7 projection (5 weight panels) on two threads: whole tiles, >= 8 items.
  for (int threads : {2, 3}) {
    const int run = triad_rt::detail::nchwc_flat_run(1, 49, 5, threads);
    EXPECT_EQ(run % kCMR == 0 || run == 49, true) << run;
    EXPECT_GE((49 + run - 1) / run * 5,
              std::min<ptrdiff_t>(4 * threads, (49 + kCMR - 1) / kCMR * 5))
        << run;
  }
  // Never below one tile.
  EXPECT_EQ(triad_rt::detail::nchwc_flat_run(1, 5, 1, 2), std::min(5, kCMR));
  EXPECT_GE(triad_rt::detail::nchwc_flat_run(1, 100, 1, 64), kCMR);
}

TEST(Conv2dNchwc, MatchesNaiveOneThread) {
  convNchwcSuite(1);
}
TEST(Conv2dNchwc, MatchesNaiveTwoThreads) {
  convNchwcSuite(2);
}

// ---------------------------------------------------------------------------------------------
// Winograd F(2x2, 3x3) and F(4x4, 3x3) inside conv2d_nchwc

/// Forces conv2d_nchwc's Winograd choice for a scope (0: direct, 2, 4; -1: automatic).
struct WinogradScope {
  int old;
  explicit WinogradScope(int m) : old(triad_rt::detail::winograd_setting()) {
    triad_rt::detail::winograd_setting() = m;
  }
  ~WinogradScope() { triad_rt::detail::winograd_setting() = old; }
};

/// The largest |y - exact| of conv2d_nchwc (blocked in and out, bias, no epilogue) relative to
/// the largest |exact| output, against the naive convolution in double.
double nchwcRelativeError(const triad_rt::Conv2dShape& s, std::mt19937& rng) {
  const size_t HW = static_cast<size_t>(s.H) * s.W, P = static_cast<size_t>(s.OH()) * s.OW();
  Vec x = randomVec(static_cast<size_t>(s.N) * s.C * HW, rng);
  Vec w = randomVec(static_cast<size_t>(s.OC) * s.C * s.KH * s.KW, rng);
  Vec bias = randomVec(s.OC, rng);
  std::vector<double> ref = naiveConv(s, x, w, bias);
  Vec wp = sized(triad_rt::conv2d_nchwc_weights_size(s));
  triad_rt::conv2d_nchwc_pack_weights(s, w.data(), wp.data());
  std::vector<unsigned char> scratch(triad_rt::conv2d_nchwc_scratch_bytes(s, true));
  Vec xb = blockedOf(x, s.N, s.C, HW);
  Vec y(ref.size(), std::nanf(""));
  triad_rt::conv2d_nchwc(s, xb.data(), true, wp.data(), bias.data(), y.data(), scratch.data());
  Vec refv(ref.begin(), ref.end());
  Vec refb = blockedOf(refv, s.N, s.OC, P);
  double err = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(y[i]) - refb[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(refb[i])));
    if (std::isnan(y[i])) return INFINITY;
  }
  return err / scale;
}

void winogradSuite(int threads) {
  ThreadScope ts(threads);
  std::mt19937 rng(17 + threads);
  std::vector<triad_rt::Conv2dShape> named = {
      shape(1, 32, 14, 14, 48, 3, 1, 1, 1), // a one-block last weight panel (AVX-512)
      shape(2, 16, 9, 11, 32, 3, 1, 1, 1),  // batched, odd planes: tiles overhang both edges
      shape(1, 48, 7, 7, 64, 3, 1, 1, 1),   // ResNet's last stage, smaller
      shape(3, 16, 5, 5, 16, 3, 1, 1, 0),   // unpadded: 3x3 outputs, one tile per image
      shape(1, 16, 3, 3, 16, 3, 1, 1, 0),   // a single output pixel
      shape(2, 32, 1, 8, 16, 3, 1, 1, 1),   // one input row
      shape(1, 64, 30, 30, 32, 3, 1, 1, 1), // 15x15 / 8x8 tiles: several GEMM tile chunks
  };
  {
    triad_rt::Conv2dShape d = shape(1, 48, 13, 17, 32, 3, 1, 1, 1);
    d.pad_l = 2, d.pad_b = 0; // asymmetric pads
    named.push_back(d);
  }
  std::uniform_int_distribution<int> u(0, 1 << 30);
  for (int t = 0; t < 16; ++t) {
    triad_rt::Conv2dShape s = shape(1 + u(rng) % 3, 16 * (1 + u(rng) % 4), 1 + u(rng) % 19,
                                    1 + u(rng) % 23, 16 * (1 + u(rng) % 4), 3, 1, 1, 0);
    s.pad_t = u(rng) % 3, s.pad_l = u(rng) % 3, s.pad_b = u(rng) % 3, s.pad_r = u(rng) % 3;
    if (s.H + s.pad_t + s.pad_b < 3 || s.W + s.pad_l + s.pad_r < 3) continue;
    named.push_back(s);
  }
  for (int m : {0, 2, 4}) { // 0: the direct kernel on the same shapes
    WinogradScope scope(m);
    for (const auto& s : named) {
      ASSERT_EQ(triad_rt::conv2d_nchwc_winograd(s), m) << convName(s);
      checkConvNchwc(
          s, rng, convName(s) + " F" + std::to_string(m) + " threads " + std::to_string(threads));
    }
  }
}

TEST(Conv2dNchwcWinograd, MatchesNaiveOneThread) {
  winogradSuite(1);
}
TEST(Conv2dNchwcWinograd, MatchesNaiveTwoThreads) {
  winogradSuite(2);
}

TEST(Conv2dNchwcWinograd, Choice) {
  WinogradScope scope(-1);
  using triad_rt::conv2d_nchwc_winograd;
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 3, 1, 1, 1)), 4);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 128, 28, 28, 128, 3, 1, 1, 1)), 4);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 256, 14, 14, 256, 3, 1, 1, 1)), 4);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 512, 7, 7, 512, 3, 1, 1, 1)), 2);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(2, 512, 7, 7, 512, 3, 1, 1, 1)), 4);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 128, 56, 56, 128, 3, 1, 2, 1)), 0); // stride 2
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 16, 56, 56, 64, 3, 1, 1, 1)), 0);   // few channels
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 16, 3, 1, 1, 1)), 0);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 3, 64, 1, 1)), 0); // depthwise
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 5, 1, 1, 2)), 0);  // 5x5
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 1, 1, 1, 0)), 0);  // 1x1
  triad_rt::Conv2dShape d = shape(1, 64, 56, 56, 64, 3, 1, 1, 2);
  d.dil_h = d.dil_w = 2;
  EXPECT_EQ(conv2d_nchwc_winograd(d), 0);
  WinogradScope off(0);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 3, 1, 1, 1)), 0);
  WinogradScope forced(2);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 3, 1, 1, 1)), 2);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 16, 5, 5, 16, 3, 1, 1, 1)), 2);
  EXPECT_EQ(conv2d_nchwc_winograd(shape(1, 64, 56, 56, 64, 3, 1, 2, 1)), 0);
}

/// Rounding, relative to the largest output, over 9 * C-term sums of values in [-1, 1]: F(2x2)'s
/// is no larger than the direct kernel's (measured 4e-7 to 7e-7 against 9e-7 to 1.8e-6: its
/// sums are shorter), F(4x4)'s (transforms holding 4, 5 and 8) about 10x the direct one's
/// (5e-6 to 1.5e-5); both far inside the interpreter's rtol 1e-3.
TEST(Conv2dNchwcWinograd, RoundingError) {
  std::mt19937 rng(5);
  for (const triad_rt::Conv2dShape& s :
       {shape(1, 64, 28, 28, 64, 3, 1, 1, 1), shape(1, 256, 14, 14, 64, 3, 1, 1, 1)}) {
    double direct, f2, f4;
    {
      WinogradScope w(0);
      direct = nchwcRelativeError(s, rng);
    }
    {
      WinogradScope w(2);
      f2 = nchwcRelativeError(s, rng);
    }
    {
      WinogradScope w(4);
      f4 = nchwcRelativeError(s, rng);
    }
    std::printf("%s: max error / max |y|: direct %.2e, F(2x2) %.2e, F(4x4) %.2e\n",
                convName(s).c_str(), direct, f2, f4);
    EXPECT_LT(direct, 5e-6) << convName(s);
    EXPECT_LT(f2, 5e-6) << convName(s);
    EXPECT_LT(f4, 5e-5) << convName(s);
  }
}

TEST(Conv2dNchwc, Supported) {
  EXPECT_TRUE(triad_rt::conv2d_nchwc_supported(shape(1, 64, 56, 56, 256, 1, 1, 1, 0)));
  EXPECT_TRUE(triad_rt::conv2d_nchwc_supported(shape(1, 96, 14, 14, 96, 3, 96, 1, 1)));
  EXPECT_TRUE(triad_rt::conv2d_nchwc_supported(shape(1, 3, 224, 224, 64, 7, 1, 2, 3))); // planar
  EXPECT_FALSE(triad_rt::conv2d_nchwc_supported(shape(1, 8, 16, 16, 16, 7, 1, 1, 3)));  // 392 taps
  EXPECT_TRUE(triad_rt::conv2d_nchwc_supported(shape(1, 64, 8, 8, 24, 1, 1, 1, 0)));    // NCHW out
  EXPECT_FALSE(triad_rt::conv2d_nchwc_supported(shape(1, 24, 8, 8, 24, 3, 24, 1, 1)));  // dw 24
  EXPECT_FALSE(triad_rt::conv2d_nchwc_supported(shape(1, 32, 8, 8, 32, 3, 2, 1, 1)));
  EXPECT_FALSE(triad_rt::conv2d_nchwc_supported(shape(1, 16, 8, 8, 16, 1, 1, 3, 0)));
  // Blocked 1x1 stride-1 input is read in place; a padded one is copied with its halo.
  EXPECT_EQ(triad_rt::conv2d_nchwc_scratch_bytes(shape(1, 16, 8, 8, 16, 1, 1, 1, 0), true), 0u);
  EXPECT_GE(triad_rt::conv2d_nchwc_scratch_bytes(shape(1, 16, 8, 8, 16, 3, 1, 1, 1), true),
            16u * 10 * 10 * sizeof(float));
  EXPECT_EQ(triad_rt::conv2d_nchwc_scratch_bytes(shape(1, 16, 8, 8, 16, 3, 16, 1, 1), true), 0u);
}

TEST(Conv2dNchwc, ReorderRoundTrip) {
  std::mt19937 rng(3);
  Vec x = randomVec(2 * 32 * 5 * 7, rng);
  Vec b(x.size()), back(x.size());
  triad_rt::to_nchwc(x.data(), false, 2, 32, 5, 7, 0, 0, 0, 0, b.data());
  EXPECT_EQ(b, blockedOf(x, 2, 32, 35));
  triad_rt::from_nchwc(b.data(), 2, 32, 35, back.data());
  EXPECT_EQ(back, x);
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

// ---- Integer kernels (triad_int8.h): int32 sums exact, requantization as the reference -------

/// The reference's requantization (ir/ops/Quantize.h, quantizeValue of float(acc + bias) * mult)
/// written independently: std::nearbyint in the default rounding mode rounds half to even.
int requantRef(int32_t acc, int32_t bias, float mult, int zp, int lo, int hi) {
  float v = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc) + bias)) * mult;
  float r = (std::isnan(v) ? 0.0f : std::nearbyint(v)) + static_cast<float>(zp);
  return static_cast<int>(std::min(std::max(r, static_cast<float>(lo)), static_cast<float>(hi)));
}

/// Whether the byte layout (VNNI, or TRIAD_Q8_SCALAR's scalar micro-kernel) is built.
constexpr bool kQ8Built =
#if defined(TRIAD_Q8_ISA)
    true;
#else
    false;
#endif

/// symmetric: weights with the byte layout's zero point (0 for int8, 128 for uint8), which
/// takes that layout where it is built; otherwise random zero points (the int16 layout).
template <class X, class W>
void checkQconv(const triad_rt::Conv2dShape& s, std::mt19937& rng, bool symmetric) {
  const int OH = s.OH(), OW = s.OW(), P = OH * OW, Cg = s.Cg(), Mg = s.OCg();
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<X> x(static_cast<size_t>(s.N) * s.C * s.H * s.W);
  for (auto& v : x)
    v = static_cast<X>(byte(rng));
  std::vector<W> w(static_cast<size_t>(s.OC) * s.Kg()), wz(static_cast<size_t>(s.OC));
  for (auto& v : w)
    v = static_cast<W>(byte(rng));
  for (auto& v : wz)
    v = static_cast<W>(symmetric ? (std::is_signed_v<W> ? 0 : 128) : byte(rng));
  const int xz = static_cast<X>(byte(rng));
  std::vector<int64_t> pw((triad_rt::qconv_weights_bytes(s) + 7) / 8);
  triad_rt::qconv_pack_weights(s, w.data(), wz.data(), s.OC, pw.data());
  EXPECT_EQ(triad_rt::QPacked::of(pw.data()).q8 != 0,
            kQ8Built && symmetric && !triad_rt::qconv_depthwise(s));
  std::vector<char> scratch(triad_rt::qconv_scratch_bytes(s));
  std::vector<int32_t> acc(static_cast<size_t>(s.N) * s.OC * P, 0x5a5a5a5a);
  triad_rt::qconv2d(s, x.data(), xz, pw.data(), scratch.data(), triad_rt::QStoreEpi{acc.data(), P});
  // Requantized to uint8 with a bias and per-channel multipliers (one NaN, one huge), a fused
  // Relu's lower bound (the zero point).
  std::vector<float> mult(static_cast<size_t>(s.OC));
  std::vector<int32_t> bias(static_cast<size_t>(s.OC));
  for (int oc = 0; oc < s.OC; ++oc) {
    mult[size_t(oc)] = 1e-4f * static_cast<float>(1 + byte(rng));
    bias[size_t(oc)] = byte(rng) * 97 - 12000;
  }
  mult[0] = std::nanf("");
  if (s.OC > 1) mult[1] = 1e30f;
  std::vector<uint8_t> y(acc.size(), 0xee);
  triad_rt::QRequantEpi<uint8_t> rq;
  rq.y = y.data();
  rq.ldy = P;
  rq.bias = bias.data();
  rq.mult = mult.data();
  rq.period = s.OC;
  rq.zp = 9;
  rq.lo = 9;
  rq.hi = 255;
  triad_rt::qconv2d(s, x.data(), xz, pw.data(), scratch.data(), rq);
  int bad = 0;
  for (int n = 0; n < s.N; ++n)
    for (int oc = 0; oc < s.OC; ++oc)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          const int g = oc / Mg;
          int64_t sum = 0;
          for (int ci = 0; ci < Cg; ++ci)
            for (int kh = 0; kh < s.KH; ++kh)
              for (int kw = 0; kw < s.KW; ++kw) {
                const int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
                const int iw = ow * s.stride_w - s.pad_l + kw * s.dil_w;
                const bool in = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
                const int xv = in ? x[((size_t(n) * s.C + g * Cg + ci) * s.H + ih) * s.W + iw] : xz;
                const int wv = w[(size_t(oc) * Cg + ci) * s.KH * s.KW + kh * s.KW + kw];
                sum += int64_t(xv - xz) * (wv - wz[size_t(oc)]);
              }
          const size_t i = ((size_t(n) * s.OC + oc) * OH + oh) * OW + ow;
          const int32_t expect = static_cast<int32_t>(static_cast<uint32_t>(sum));
          const int q = requantRef(expect, bias[size_t(oc)], mult[size_t(oc)], 9, 9, 255);
          if ((acc[i] != expect || y[i] != q) && bad++ < 5)
            ADD_FAILURE() << "n " << n << " oc " << oc << " (" << oh << ", " << ow << "): sum "
                          << acc[i] << " expected " << expect << ", requantized " << int(y[i])
                          << " expected " << q;
        }
  EXPECT_EQ(bad, 0);
}

void qconvCases(int threads) {
  ThreadScope scope(threads);
  std::mt19937 rng(17);
  // N, C, H, W, OC, KH, KW, group, strides, pads (t, l, b, r), dilations
  const int cases[][16] = {
      {1, 3, 13, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // odd K (27), padded, edge tiles
      {2, 8, 9, 9, 17, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},     // pointwise, two images
      {1, 6, 14, 14, 12, 3, 3, 2, 2, 2, 1, 1, 0, 0, 1, 1},   // groups, stride 2, asymmetric pads
      {1, 5, 7, 9, 7, 7, 7, 1, 2, 2, 3, 3, 3, 3, 1, 1},      // a 7x7 stem
      {1, 4, 8, 8, 4, 3, 3, 4, 1, 1, 2, 2, 2, 2, 2, 2},      // depthwise, dilated
      {1, 32, 12, 12, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // several row and column panels
      {2, 16, 15, 13, 16, 3, 3, 16, 2, 2, 1, 1, 1, 1, 1, 1}, // depthwise, stride 2 (MobileNet)
      {1, 2, 1, 1100, 2, 1, 3, 2, 1, 1, 0, 1, 0, 1, 1, 1},   // depthwise rows wider than a piece
      {1, 2, 20, 19, 2, 17, 17, 2, 1, 1, 8, 8, 8, 8, 1, 1},  // depthwise, 289 taps (two float runs)
      {1, 3, 11, 12, 3, 3, 5, 3, 2, 3, 1, 2, 0, 1, 1, 2},    // depthwise, strides 2x3, dilated
  };
  for (const auto& c : cases) {
    triad_rt::Conv2dShape s;
    s.N = c[0], s.C = c[1], s.H = c[2], s.W = c[3], s.OC = c[4], s.KH = c[5], s.KW = c[6];
    s.group = c[7], s.stride_h = c[8], s.stride_w = c[9];
    s.pad_t = c[10], s.pad_l = c[11], s.pad_b = c[12], s.pad_r = c[13];
    s.dil_h = c[14], s.dil_w = c[15];
    SCOPED_TRACE(testing::Message()
                 << "C " << s.C << " OC " << s.OC << " k " << s.KH << " g " << s.group);
    for (bool symmetric : {false, true}) {
      checkQconv<uint8_t, int8_t>(s, rng, symmetric);
      checkQconv<int8_t, uint8_t>(s, rng, symmetric);
    }
  }
}

TEST(Int8Conv, MatchesNaiveOneThread) {
  qconvCases(1);
}
TEST(Int8Conv, MatchesNaiveTwoThreads) {
  qconvCases(2);
}

TEST(Int8Conv, RequantizationRoundsHalfToEvenAndSaturates) {
  // Ties of the product (float(acc) * 0.5) go to the even neighbour; beyond the range saturates.
  EXPECT_EQ(triad_rt::detail::q_requant1(5, 0, 0.5f, 0, 0, 255), 2); // 2.5 -> 2
  EXPECT_EQ(triad_rt::detail::q_requant1(7, 0, 0.5f, 0, 0, 255), 4); // 3.5 -> 4
  EXPECT_EQ(triad_rt::detail::q_requant1(-5, 0, 0.5f, 0, -128, 127), -2);
  EXPECT_EQ(triad_rt::detail::q_requant1(1 << 30, 0, 1.0f, 3, 0, 255), 255);
  EXPECT_EQ(triad_rt::detail::q_requant1(5, 0, std::nanf(""), 3, 0, 255), 3); // NaN: zero point
  EXPECT_EQ(triad_rt::detail::q_requant1(INT32_MAX, 1, 1.0f, 0, -128, 127), -128); // wraps
}

TEST(Int8MatMul, MatchesNaive) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int threads : {1, 2}) {
    ThreadScope scope(threads);
    for (auto [M, N, K, sym] : {std::array<int, 4>{1, 1000, 2048, 0},
                                {7, 33, 5, 0},
                                {128, 64, 768, 0},
                                {1, 1000, 2048, 1},
                                {7, 33, 5, 1},
                                {128, 64, 768, 1},
                                {13, 47, 130, 1}}) {
      std::vector<uint8_t> a(size_t(M) * K);
      std::vector<int8_t> b(size_t(K) * N), bz(static_cast<size_t>(N));
      for (auto& v : a)
        v = static_cast<uint8_t>(byte(rng));
      for (auto& v : b)
        v = static_cast<int8_t>(byte(rng));
      for (auto& v : bz)
        v = static_cast<int8_t>(sym ? 0 : byte(rng) % 7 - 3);
      const int az = sym ? 3 : 128;
      std::vector<int64_t> pb((triad_rt::qmatmul_weights_bytes(K, N) + 7) / 8);
      triad_rt::qmatmul_pack_b(K, N, b.data(), bz.data(), N, pb.data());
      EXPECT_EQ(triad_rt::QPacked::of(pb.data()).q8 != 0, kQ8Built && sym);
      std::vector<char> scratch(triad_rt::qmatmul_scratch_bytes(M, K));
      std::vector<int32_t> c(size_t(M) * N);
      triad_rt::qmatmul(M, N, K, a.data(), K, az, pb.data(), scratch.data(),
                        triad_rt::QStoreEpi{c.data(), N});
      std::vector<float> mult(static_cast<size_t>(N));
      for (auto& m : mult)
        m = 1e-5f * static_cast<float>(1 + byte(rng));
      std::vector<int8_t> y(size_t(M) * N);
      triad_rt::QRequantEpi<int8_t> rq;
      rq.y = y.data();
      rq.ldy = N;
      rq.mult = mult.data();
      rq.per_col = true;
      rq.zp = -3;
      rq.lo = -128;
      rq.hi = 127;
      triad_rt::qmatmul(M, N, K, a.data(), K, az, pb.data(), scratch.data(), rq);
      int bad = 0;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          int64_t sum = 0;
          for (int k = 0; k < K; ++k)
            sum += int64_t(a[size_t(i) * K + k] - az) * (b[size_t(k) * N + j] - bz[size_t(j)]);
          const int32_t expect = static_cast<int32_t>(sum);
          const int q = requantRef(expect, 0, mult[size_t(j)], -3, -128, 127);
          if ((c[size_t(i) * N + j] != expect || y[size_t(i) * N + j] != q) && bad++ < 5)
            ADD_FAILURE() << M << "x" << N << "x" << K << " (" << i << ", " << j
                          << "): " << c[size_t(i) * N + j] << " expected " << expect;
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST(Pool, MaxAndAverageMatchNaive) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(0, 1 << 30);
  for (int threads : {1, 2}) {
    ThreadScope ts(threads);
    for (int t = 0; t < 80; ++t) {
      triad_rt::Pool2dShape s;
      s.N = 1 + u(rng) % 2, s.C = 1 + u(rng) % 5, s.H = 1 + u(rng) % 17, s.W = 1 + u(rng) % 17;
      s.KH = 1 + u(rng) % 4, s.KW = 1 + u(rng) % 4;
      s.stride_h = 1 + u(rng) % 3, s.stride_w = 1 + u(rng) % 3;
      bool dilated = t % 4 == 3;
      s.dil_h = dilated ? 1 + u(rng) % 2 : 1, s.dil_w = dilated ? 1 + u(rng) % 2 : 1;
      // ONNX: pads smaller than the kernel.
      s.pad_t = u(rng) % s.KH, s.pad_b = u(rng) % s.KH, s.pad_l = u(rng) % s.KW,
      s.pad_r = u(rng) % s.KW;
      if (t < 8) { // the 2x2 stride-2 fast path (odd sizes in floor mode drop the last row)
        s.KH = s.KW = 2, s.stride_h = s.stride_w = 2, s.dil_h = s.dil_w = 1;
        s.pad_t = s.pad_b = s.pad_l = s.pad_r = 0;
      }
      bool ceil_mode = t % 2 == 1;
      // Output size as ONNX/PyTorch: floor or ceil; in ceil mode the last window must start
      // inside the input or the begin padding.
      auto out = [&](int in, int k, int d, int st, int pb, int pe) {
        int span = in + pb + pe - d * (k - 1) - 1;
        if (span < 0) return 0;
        int o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
        if (ceil_mode && (o - 1) * st >= in + pb) --o;
        return o;
      };
      s.OH = out(s.H, s.KH, s.dil_h, s.stride_h, s.pad_t, s.pad_b);
      s.OW = out(s.W, s.KW, s.dil_w, s.stride_w, s.pad_l, s.pad_r);
      if (s.OH <= 0 || s.OW <= 0) continue;
      Vec x = randomVec(static_cast<size_t>(s.N) * s.C * s.H * s.W, rng);
      const size_t ny = static_cast<size_t>(s.N) * s.C * s.OH * s.OW;
      Vec ymax(ny), yavg(ny), yavgp(ny);
      triad_rt::max_pool2d(s, x.data(), ymax.data());
      if (!dilated) {
        triad_rt::avg_pool2d(s, x.data(), yavg.data(), false);
        triad_rt::avg_pool2d(s, x.data(), yavgp.data(), true);
      }
      for (int p = 0; p < s.N * s.C; ++p)
        for (int oh = 0; oh < s.OH; ++oh)
          for (int ow = 0; ow < s.OW; ++ow) {
            double m = -INFINITY, sum = 0;
            int cnt = 0, cntPad = 0;
            for (int kh = 0; kh < s.KH; ++kh)
              for (int kw = 0; kw < s.KW; ++kw) {
                int ih = oh * s.stride_h - s.pad_t + kh * s.dil_h;
                int iw = ow * s.stride_w - s.pad_l + kw * s.dil_w;
                // Padded extent: [-pad_begin, in + pad_end).
                if (ih < s.H + s.pad_b && iw < s.W + s.pad_r) ++cntPad;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                double v = x[(static_cast<size_t>(p) * s.H + ih) * s.W + iw];
                m = std::max(m, v);
                sum += v;
                ++cnt;
              }
            size_t i = (static_cast<size_t>(p) * s.OH + oh) * s.OW + ow;
            std::string at = "pool case " + std::to_string(t) + " out " + std::to_string(i);
            if (cnt > 0)
              ASSERT_EQ(ymax[i], static_cast<float>(m)) << at;
            else
              ASSERT_EQ(ymax[i], std::numeric_limits<float>::lowest()) << at;
            if (dilated) continue;
            ASSERT_NEAR(yavg[i], cnt ? sum / cnt : 0.0, 1e-6) << at;
            ASSERT_NEAR(yavgp[i], cntPad ? sum / cntPad : 0.0, 1e-6) << at;
          }
    }
  }
}

TEST(Pool, GlobalAverageAndMax) {
  std::mt19937 rng(6);
  for (int hw : {1, 7, 49, 3136}) {
    const int planes = 37;
    Vec x = randomVec(static_cast<size_t>(planes) * hw, rng, -3.0f, 5.0f);
    Vec ya(planes), ym(planes);
    triad_rt::global_avg_pool(planes, hw, x.data(), ya.data());
    triad_rt::global_max_pool(planes, hw, x.data(), ym.data());
    for (int p = 0; p < planes; ++p) {
      double s = 0, m = -INFINITY;
      for (int i = 0; i < hw; ++i) {
        s += x[static_cast<size_t>(p) * hw + i];
        m = std::max(m, static_cast<double>(x[static_cast<size_t>(p) * hw + i]));
      }
      EXPECT_NEAR(ya[p], s / hw, 1e-5) << "hw " << hw;
      EXPECT_EQ(ym[p], static_cast<float>(m)) << "hw " << hw;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Row-wise ops and transcendental functions
// ---------------------------------------------------------------------------------------------

// transpose_plane: tiles of 16 x 16, so sizes on both sides of a tile edge; 1-, 4- and 8-byte
// elements, source and destination strides wider than the plane (the attention's K^T: a plane of
// [64 x 128] out of [128, 12 x 64]).
template <int E>
void checkTransposePlane(ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t lds, ptrdiff_t ldd) {
  std::vector<unsigned char> src(static_cast<size_t>((rows + cols * lds) * E)),
      dst(static_cast<size_t>(rows * ldd * E), 0xAB);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<unsigned char>(i * 131 + 7);
  std::vector<unsigned char> want = dst;
  for (ptrdiff_t r = 0; r < rows; ++r)
    for (ptrdiff_t c = 0; c < cols; ++c)
      std::memcpy(&want[static_cast<size_t>((r * ldd + c) * E)],
                  &src[static_cast<size_t>((r + c * lds) * E)], E);
  triad_rt::transpose_plane<E>(rows, cols, src.data(), lds, dst.data(), ldd);
  EXPECT_EQ(dst, want) << "E " << E << " rows " << rows << " cols " << cols << " lds " << lds
                       << " ldd " << ldd;
}

TEST(DataMovement, TransposePlaneMatchesNaive) {
  for (auto [rows, cols] :
       {std::pair<ptrdiff_t, ptrdiff_t>{1, 1}, {3, 5}, {16, 16}, {17, 33}, {64, 128}, {40, 15}}) {
    checkTransposePlane<4>(rows, cols, rows + 3, cols + 5);
    checkTransposePlane<1>(rows, cols, rows, cols);
    checkTransposePlane<8>(rows, cols, rows + 1, cols);
  }
  checkTransposePlane<4>(64, 128, 768, 128);
}

TEST(RowOps, SoftmaxIsStableAndAccurate) {
  std::mt19937 rng(8);
  for (int n : {1, 5, 16, 17, 1000}) {
    const int rows = 9;
    Vec x = randomVec(static_cast<size_t>(rows) * n, rng, -20.0f, 20.0f);
    for (int j = 0; j < n; j += 3)
      x[j] += 1000.0f; // row 0 has huge logits: a naive exp overflows
    Vec y(x.size()), ly(x.size());
    triad_rt::softmax_rows(x.data(), y.data(), rows, n);
    triad_rt::log_softmax_rows(x.data(), ly.data(), rows, n);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + static_cast<size_t>(r) * n;
      double m = *std::max_element(xr, xr + n), s = 0;
      for (int j = 0; j < n; ++j)
        s += std::exp(static_cast<double>(xr[j]) - m);
      double total = 0;
      for (int j = 0; j < n; ++j) {
        double want = std::exp(static_cast<double>(xr[j]) - m) / s;
        float got = y[static_cast<size_t>(r) * n + j];
        ASSERT_TRUE(std::isfinite(got));
        ASSERT_NEAR(got, want, 1e-6 + 1e-6 * want) << "n " << n << " row " << r;
        double lwant = xr[j] - m - std::log(s);
        ASSERT_NEAR(ly[static_cast<size_t>(r) * n + j], lwant, 1e-5 + 2e-7 * std::fabs(lwant));
        total += got;
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
  // In place.
  Vec z = {1.0f, 2.0f, 3.0f};
  triad_rt::softmax_rows(z.data(), z.data(), 1, 3);
  EXPECT_NEAR(z[2], std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-7);
}

TEST(RowOps, LayerNormMatchesReference) {
  std::mt19937 rng(9);
  for (int n : {1, 7, 64, 768, 1001}) {
    const int rows = 5;
    Vec x = randomVec(static_cast<size_t>(rows) * n, rng, 100.0f, 104.0f); // large mean
    Vec scale = randomVec(n, rng, 0.5f, 2.0f), bias = randomVec(n, rng);
    Vec y(x.size()), y0(x.size());
    triad_rt::layernorm_rows(x.data(), y.data(), rows, n, scale.data(), bias.data(), 1e-5f);
    triad_rt::layernorm_rows(x.data(), y0.data(), rows, n, scale.data(), nullptr, 1e-5f);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + static_cast<size_t>(r) * n;
      double mean = 0, var = 0;
      for (int j = 0; j < n; ++j)
        mean += xr[j];
      mean /= n;
      for (int j = 0; j < n; ++j)
        var += (xr[j] - mean) * (xr[j] - mean);
      var /= n;
      for (int j = 0; j < n; ++j) {
        double norm = (xr[j] - mean) / std::sqrt(var + 1e-5);
        ASSERT_NEAR(y[static_cast<size_t>(r) * n + j], norm * scale[j] + bias[j], 2e-4)
            << "n " << n;
        ASSERT_NEAR(y0[static_cast<size_t>(r) * n + j], norm * scale[j], 2e-4) << "n " << n;
      }
    }
  }
}

/// Max relative error of f over a dense sweep of [lo, hi] (array and scalar entry points).
template <class FArr, class FS, class FRef>
double maxRelError(FArr farr, FS fs, FRef ref, float lo, float hi, double floor_abs) {
  const int n = 200003;
  Vec x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = lo + (hi - lo) * static_cast<float>(i) / (n - 1);
  farr(x.data(), y.data(), n);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    double r = ref(static_cast<double>(x[i]));
    double denom = std::max(std::fabs(r), floor_abs);
    worst = std::max(worst, std::fabs(y[i] - r) / denom);
    worst = std::max(worst, std::fabs(fs(x[i]) - r) / denom);
  }
  return worst;
}

TEST(MathFunctions, AccuracyBounds) {
  double e = maxRelError(
      triad_rt::exp_array, triad_rt::exp_s, [](double v) { return std::exp(v); }, -87.0f, 88.3f,
      0.0);
  double erfe = maxRelError(
      triad_rt::erf_array, triad_rt::erf_s, [](double v) { return std::erf(v); }, -6.0f, 6.0f,
      1e-30);
  double th = maxRelError(
      triad_rt::tanh_array, triad_rt::tanh_s, [](double v) { return std::tanh(v); }, -10.0f, 10.0f,
      1e-30);
  double sg = maxRelError(
      triad_rt::sigmoid_array, triad_rt::sigmoid_s,
      [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, -80.0f, 80.0f, 0.0);
  double ge = maxRelError(
      triad_rt::gelu_array, triad_rt::gelu_s,
      [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }, -8.0f, 8.0f,
      1.0); // absolute below 1: 1 + erf cancels for x < 0
  std::printf(
      "max relative error (%s): exp %.3g erf %.3g tanh %.3g sigmoid %.3g gelu %.3g (abs below 1)\n",
      TRIAD_RT_ISA, e, erfe, th, sg, ge);
  EXPECT_LE(e, 2.0e-7);
  EXPECT_LE(erfe, 5.0e-7);
  EXPECT_LE(th, 5.0e-7);
  EXPECT_LE(sg, 5.0e-7);
  EXPECT_LE(ge, 2.0e-6);
  // Saturation and extremes.
  EXPECT_EQ(triad_rt::exp_s(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(triad_rt::exp_s(1000.0f)));
  EXPECT_EQ(triad_rt::erf_s(10.0f), 1.0f);
  EXPECT_EQ(triad_rt::tanh_s(-30.0f), -1.0f);
  EXPECT_EQ(triad_rt::exp_s(0.0f), 1.0f);
}

TEST(MathFunctions, ReluAndAdd) {
  Vec x = {-2.0f, -0.0f, 0.5f,  3.0f, -1.0f, 2.0f, 7.0f,  -8.0f, 9.0f, -1.0f,
           1.0f,  0.0f,  -3.0f, 4.0f, -5.0f, 6.0f, -7.0f, 8.0f,  1.5f};
  Vec y(x.size()), z(x.size());
  triad_rt::relu_array(x.data(), y.data(), static_cast<ptrdiff_t>(x.size()));
  triad_rt::add_array(x.data(), y.data(), z.data(), static_cast<ptrdiff_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], std::max(0.0f, x[i]));
    EXPECT_EQ(z[i], x[i] + y[i]);
  }
}

} // namespace
