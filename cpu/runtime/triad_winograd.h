// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// Winograd F(2x2, 3x3) and F(4x4, 3x3) on the blocked layout.
#pragma once

#include "triad_blocked.h"

namespace triad_rt {

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

} // namespace triad_rt
