// Triad CPU run-time kernels: GEMM, convolution, pooling and row-wise helpers for generated code.
//
// Header-only C++17 with no dependency beyond the standard library (threads) and <immintrin.h>.
// Embedded in the triad binary and written next to every generated source, so emitted
// code builds on its own. The CPU target compiles the large kernels once, apart (see "Separate
// compilation" at the end), and generated code reaches them through EpiRef. Everything is fp32 (but
// the integer kernels of triad_int8.h), row-major (matrices) or NCHW (tensors), except the
// channel-blocked convolution (NCHW16c, `conv2d_nchwc`) that generated code chains.
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
//
// The kernels live in one header per subject, each including the ones it builds on:
//   triad_simd.h           SIMD abstraction and math        triad_threads.h   worker pool, scratch
//   triad_gemm.h           fp32 GEMM and packing            triad_conv.h      NCHW convolution
//   triad_blocked.h        channel-blocked layout, kernels  triad_winograd.h  Winograd F(m, 3)
//   triad_blocked_conv.h   blocked convolution entry points triad_pool.h      pooling, reductions
//   triad_rows.h           transposes, row-wise ops     triad_int8.h      integer GEMM, conv
#pragma once

#include "triad_blocked_conv.h"
#include "triad_int8.h"
#include "triad_pool.h"
#include "triad_rows.h"

namespace triad_rt {

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
// The integer kernels for every 8-bit input type and epilogue generated code uses.
#define TRIAD_RT_INT8(X, E)                                                                        \
  TRIAD_RT_EXTERN template void qconv2d<X, E>(const Conv2dShape&, const X*, int, const void*,      \
                                              void*, const E&);                                    \
  TRIAD_RT_EXTERN template void qmatmul<X, E>(int, int, int, const X*, ptrdiff_t, int,             \
                                              const void*, void*, const E&);
TRIAD_RT_INT8(uint8_t, QRequantEpi<uint8_t>)
TRIAD_RT_INT8(uint8_t, QRequantEpi<int8_t>)
TRIAD_RT_INT8(uint8_t, QStoreEpi)
TRIAD_RT_INT8(int8_t, QRequantEpi<uint8_t>)
TRIAD_RT_INT8(int8_t, QRequantEpi<int8_t>)
TRIAD_RT_INT8(int8_t, QStoreEpi)
#undef TRIAD_RT_INT8
#undef TRIAD_RT_EXTERN
#endif

} // namespace triad_rt
