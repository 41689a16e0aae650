// Triad CPU run-time: the scalar helpers of generated elementwise code beyond float32 math.
//
// Float16 is stored as its binary16 bits (uint16_t); math converts to float, computes, and
// rounds back, exactly as Triad's reference kernels do (ir/Tensor.cpp's Half, ir/ops/
// Elementwise.cpp's halfFromDouble). Integer Pow and int^real Pow follow ir/ops/Elementwise.cpp's
// powElem (wrapping repeated squaring; truncation with out-of-range values giving 0), integer
// Mod its ModOp.
//
// Header-only C++17, no dependency beyond the standard library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// Before a generated elementwise loop: its operands are either the output itself (in place, same
// index) or disjoint from it, so no iteration depends on another. Compilers cannot see that
// through the arena's pointers and would version the loop on an overlap check that an in-place
// loop fails, running it unvectorized.
#if defined(__clang__)
#define TRIAD_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TRIAD_IVDEP _Pragma("GCC ivdep")
#else
#define TRIAD_IVDEP
#endif

namespace triad_rt {

/// binary16 bits -> float (exact).
inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) { // zero or subnormal: mant * 2^-24
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                            : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// float -> binary16 bits, rounding to nearest even; overflow gives inf, NaN a quiet NaN.
inline uint16_t half_from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to a value >= 65520: overflow to inf
    return uint16_t(sign | 0x7c00u);
  if (absx < 0x38800000u) { // below the smallest normal half: subnormal or zero
    float a;
    std::memcpy(&a, &absx, sizeof a);
    float r = std::nearbyint(a * 16777216.0f); // units of 2^-24, ties to even
    return uint16_t(sign | uint32_t(r));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // carry may bump the exponent
  return uint16_t(sign | h);
}

/// Min and Max of float16 values in float, NaN propagating (the first NaN), rounded back (which
/// only canonicalizes a NaN), as the reference's MinOp/MaxOp on float16.
inline uint16_t half_min(uint16_t a, uint16_t b) {
  float x = half_to_float(a), y = half_to_float(b);
  return half_from_float(x != x ? x : y != y ? y : y < x ? y : x);
}
inline uint16_t half_max(uint16_t a, uint16_t b) {
  float x = half_to_float(a), y = half_to_float(b);
  return half_from_float(x != x ? x : y != y ? y : x < y ? y : x);
}

/// double -> binary16 bits in one rounding (nearest even): Cast to float16 from any wider
/// type (through float, ties could round twice).
inline uint16_t half_from_double(double d) {
  if (std::isnan(d)) return half_from_float(float(d));
  uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  double a = std::fabs(d);
  if (a >= 65520.0) return uint16_t(sign | 0x7c00u); // rounds to infinity
  if (a < 0x1p-14)                                   // subnormal: units of 2^-24
    return uint16_t(sign | uint16_t(std::nearbyint(a * 0x1p24)));
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;
  double q = std::nearbyint(std::ldexp(a, 10 - exp)); // [1024, 2048]
  if (q >= 2048.0) {
    q = 1024.0;
    ++exp;
  }
  return uint16_t(sign | uint16_t((exp + 15) << 10) | uint16_t(uint32_t(q) - 1024u));
}

/// A real to integer type T, truncating; NaN and values outside T give 0.
template <typename T> T real_to_int(double v) {
  double t = std::trunc(v);
  const double lo = double(std::numeric_limits<T>::lowest());
  const double hi_excl = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (!(t >= lo && t < hi_excl)) return T(0);
  return static_cast<T>(t);
}

/// Cast of a real to integer type T as the reference's Tensor::castTo: truncate toward zero,
/// wrap modulo 2^64 and keep T's low bits (two's complement); NaN and infinities give 0.
template <typename T> T cast_to_int(double v) {
  if (!std::isfinite(v)) return T(0);
  double t = std::trunc(v);
  constexpr double k2to63 = 9223372036854775808.0, k2to64 = 18446744073709551616.0;
  if (!(t >= -k2to63 && t < k2to63)) {
    t = std::fmod(t, k2to64);
    if (t >= k2to63) t -= k2to64;
    if (t < -k2to63) t += k2to64;
  }
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(t)));
}

/// a^b on integers: wrapping repeated squaring; a negative exponent gives the truncated real
/// result (0 unless a is 1 or -1).
template <typename A, typename B> A ipow(A a, B b) {
  using W = std::conditional_t<(sizeof(A) < 4), uint32_t, std::make_unsigned_t<A>>;
  if constexpr (std::is_signed_v<B>) {
    if (b < 0) {
      if (a == 1) return 1;
      if constexpr (std::is_signed_v<A>)
        if (a == -1) return (b & 1) ? A(-1) : A(1);
      return 0;
    }
  }
  W result = 1, base = W(a);
  for (auto e = std::make_unsigned_t<B>(b); e; e >>= 1) {
    if (e & 1) result = W(result * base);
    base = W(base * base);
  }
  return A(result);
}

/// Integer Mod: the remainder with the divisor's sign (`fmod` false) or the dividend's (C's %,
/// `fmod` true); x mod 0 and x mod -1 give 0.
template <bool fmod, typename T> T int_mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0; // MIN % -1 traps in C++
    T r = T(a % b);
    if (!fmod && r != 0 && (r < 0) != (b < 0)) r = T(r + b);
    return r;
  } else {
    return T(a % b);
  }
}

// A loop that reads a QuantizeLinear's value back (QuantizeLinear -> DequantizeLinear in one chain)
// is compiled without GCC's PRE: it specialized what follows the clamp for the clamped ends
// (constants for 0 and 255), after which the loop was no longer if-convertible and stayed scalar
// (ResNet-50 QDQ's last residual chain: 0.95 ms for 100,352 elements).
#if defined(__GNUC__) && !defined(__clang__)
#define TRIAD_QDQ_LOOP __attribute__((optimize("no-tree-pre")))
#else
#define TRIAD_QDQ_LOOP
#endif

/// QuantizeLinear's last step (ir/ops/Quantize.h, quantizeValue) on v = x / scale:
/// saturate(round_half_even(v) + zp) into Q, NaN giving the zero point. nearbyint rounds half to
/// even in the default rounding mode (as the QONNX quantizers' rint); max(0, r) + min(0, r) is r,
/// or 0 for NaN (each keeps its second operand then). Written so that loops of it vectorize
/// (gcc if-converts none of the equivalent conditionals).
template <typename Q> inline Q quantize_linear(float v, int32_t zp) {
  const float r = std::nearbyint(v);
  const float z = std::max(0.0f, r) + std::min(0.0f, r);
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(
      static_cast<int32_t>(std::min(std::max(z + static_cast<float>(zp), lo), hi)));
}

} // namespace triad_rt
