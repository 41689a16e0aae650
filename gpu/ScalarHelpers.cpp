// OpenCL C definitions of the scalar helpers that ir/ScalarExpr's OpenCL dialect calls
// (`triad_<helper>_<types>`): the counterparts of cpu/runtime/triad_scalar.h, one function per
// instantiation a program uses, each include-guarded so that any mix of kernels concatenates.
// Float16 values are binary16 bits in a ushort; conversions are exact (to float) and round to
// nearest even (from float), as the reference's Half does.
#include "gpu/KernelGen.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <set>

namespace triad::gpu {

namespace {

struct IntType {
  const char* name;
  int bits;
  bool isSigned;
};

const IntType kIntTypes[] = {{"char", 8, true},     {"uchar", 8, false}, {"short", 16, true},
                             {"ushort", 16, false}, {"int", 32, true},   {"uint", 32, false},
                             {"long", 64, true},    {"ulong", 64, false}};

const IntType* intType(const std::string& name) {
  for (const IntType& t : kIntTypes)
    if (name == t.name) return &t;
  return nullptr;
}

std::string unsignedOf(const IntType& t) {
  return t.isSigned ? fmt::format("u{}", t.name) : std::string(t.name);
}

std::string guarded(const std::string& name, const std::string& body) {
  std::string g = "TRIAD_HELPER_" + name;
  for (char& c : g)
    c = char(toupper(c));
  return fmt::format("#ifndef {0}\n#define {0}\n{1}#endif\n", g, body);
}

const char* kHalfToFloat = R"(// binary16 bits -> float (exact).
float triad_half_to_float(ushort h) {
  const uint sign = (uint)(h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) { // zero or subnormal: m * 2^-24
    const float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return as_float(e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13)));
}
)";

const char* kHalfFromFloat =
    R"(// float -> binary16 bits, nearest even; overflow gives inf, NaN a quiet NaN.
ushort triad_half_from_float(float f) {
  const uint x = as_uint(f);
  const uint sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return (ushort)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return (ushort)(sign | 0x7c00u); // rounds to >= 65520
  if (a < 0x38800000u) // subnormal or zero: units of 2^-24, ties to even
    return (ushort)(sign | (uint)rint(as_float(a) * 16777216.0f));
  const uint m = a & 0x7fffffu;
  uint h = (((a >> 23) - 112u) << 10) | (m >> 13);
  const uint rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // a carry may bump the exponent
  return (ushort)(sign | h);
}
)";

std::string halfMinMax(bool isMax) {
  return fmt::format(R"(// {0} of float16 values in float, the first NaN propagating.
ushort triad_half_{1}(ushort a, ushort b) {{
  const float x = triad_half_to_float(a), y = triad_half_to_float(b);
  return triad_half_from_float(x != x ? x : y != y ? y : {2} ? y : x);
}}
)",
                     isMax ? "Max" : "Min", isMax ? "max" : "min", isMax ? "x < y" : "y < x");
}

/// a^b on integers: wrapping repeated squaring; a negative exponent gives the truncated real
/// result (0 unless a is 1 or -1).
std::string ipow(const IntType& a, const IntType& b) {
  std::string w = a.bits < 32 ? "uint" : unsignedOf(a);
  std::string neg;
  if (b.isSigned)
    neg = fmt::format("  if (b < 0) {{\n    if (a == 1) return 1;\n{}    return 0;\n  }}\n",
                      a.isSigned ? "    if (a == -1) return (b & 1) ? -1 : 1;\n" : "");
  return fmt::format(R"(// {0}^{1}: wrapping repeated squaring.
{0} triad_ipow_{0}_{1}({0} a, {1} b) {{
{2}  {3} r = 1, base = ({3})a;
  for ({4} e = ({4})b; e; e >>= 1) {{
    if (e & 1) r = ({3})(r * base);
    base = ({3})(base * base);
  }}
  return ({0})r;
}}
)",
                     a.name, b.name, neg, w, unsignedOf(b));
}

/// Integer Mod: the divisor's sign (or the dividend's, fmod); x mod 0 and x mod -1 give 0.
std::string intMod(const IntType& t, bool fmodMode) {
  std::string body;
  if (t.isSigned) {
    body = fmt::format("  if (b == -1) return 0;\n  {} r = ({})(a % b);\n", t.name, t.name);
    if (!fmodMode) body += "  if (r != 0 && (r < 0) != (b < 0)) r = r + b;\n";
    body += "  return r;\n";
  } else {
    body = fmt::format("  return ({})(a % b);\n", t.name);
  }
  return fmt::format("{0} triad_int_mod{1}_{0}({0} a, {0} b) {{\n  if (b == 0) return 0;\n{2}}}\n",
                     t.name, fmodMode ? "_fmod" : "", body);
}

/// A float to an integer type as the reference's Tensor::castTo: truncate, wrap modulo 2^64,
/// keep the low bits; NaN and infinities give 0. Exact in float: every float beyond 2^24 is an
/// integer, and fmod is exact.
std::string castFloatTo(const IntType& t) {
  return fmt::format(
      R"(// float -> {0}: truncation, wrapping modulo 2^64 (the reference's cast rule).
{0} triad_cast_float_to_{0}(float v) {{
  if (isinf(v) || isnan(v)) return 0;
  float x = trunc(v);
  if (!(x >= -9223372036854775808.0f && x < 9223372036854775808.0f)) {{
    x = fmod(x, 18446744073709551616.0f);
    if (x >= 9223372036854775808.0f) x -= 18446744073709551616.0f;
    if (x < -9223372036854775808.0f) x += 18446744073709551616.0f;
  }}
  return ({0})(ulong)(long)x;
}}
)",
      t.name);
}

// The float64 forms (cl_khr_fp64): Cast from float64, int^real Pow, float64 -> float16.
std::string castDoubleTo(const IntType& t) {
  return fmt::format(
      R"(// double -> {0}: truncation, wrapping modulo 2^64 (the reference's cast rule).
{0} triad_cast_to_int_{0}(double v) {{
  if (isinf(v) || isnan(v)) return 0;
  double x = trunc(v);
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {{
    x = fmod(x, 18446744073709551616.0);
    if (x >= 9223372036854775808.0) x -= 18446744073709551616.0;
    if (x < -9223372036854775808.0) x += 18446744073709551616.0;
  }}
  return ({0})(ulong)(long)x;
}}
)",
      t.name);
}

std::string realToInt(const IntType& t) {
  // [lo, 2^digits): digits = bits - 1 for signed types.
  double lo = t.isSigned ? -std::ldexp(1.0, t.bits - 1) : 0.0;
  double hi = std::ldexp(1.0, t.isSigned ? t.bits - 1 : t.bits);
  return fmt::format(R"(// double -> {0}, truncating; NaN and values outside {0} give 0.
{0} triad_real_to_int_{0}(double v) {{
  const double x = trunc(v);
  if (!(x >= {1:.1f} && x < {2:.1f})) return 0;
  return ({0})x;
}}
)",
                     t.name, lo, hi);
}

const char* kHalfFromDouble = R"(// double -> binary16 bits in one rounding (nearest even).
ushort triad_half_from_double(double d) {
  if (isnan(d)) return triad_half_from_float((float)d);
  const ushort sign = signbit(d) ? 0x8000 : 0;
  const double a = fabs(d);
  if (a >= 65520.0) return (ushort)(sign | 0x7c00u);
  if (a < 6.103515625e-05) return (ushort)(sign | (ushort)rint(a * 16777216.0));
  int e;
  frexp(a, &e);
  int ex = e - 1;
  double q = rint(ldexp(a, 10 - ex));
  if (q >= 2048.0) {
    q = 1024.0;
    ++ex;
  }
  return (ushort)(sign | (ushort)((ex + 15) << 10) | (ushort)((uint)q - 1024u));
}
)";

// x / y rounded to nearest even, whatever the device's own division does (OpenCL C allows
// 2.5 ulp): from the device's quotient q, step one ulp at a time towards the true quotient (the
// side the residual x - q*y says, fma: one rounding, exact next to x/y) while the residual
// shrinks; the last q is the float nearest x/y, the correctly rounded quotient, since a
// quotient of two floats is never a midpoint. One fma and one step when q is already right.
// QuantizeLinear's and QONNX Quant's x / scale must match the reference bit for bit.
const char* kDivRn = R"(// x / y, correctly rounded (nearest even).
float triad_div_rn(float x, float y) {
  float q = x / y;
  if (!isfinite(q) || q == 0.0f) return q;
  float r = fma(-q, y, x);
  // Towards +inf (bits + 1 for a positive q) when the true quotient is above q.
  const int step = ((r > 0.0f) == (y > 0.0f)) == (q > 0.0f) ? 1 : -1;
  for (int i = 0; i < 3; ++i) {
    const float c = as_float(as_int(q) + step);
    const float rc = fma(-c, y, x);
    if (!(fabs(rc) < fabs(r))) break;
    q = c;
    r = rc;
  }
  return q;
}
)";

/// QuantizeLinear's rounding and saturation (cpu/runtime/triad_scalar.h's quantize_linear, the
/// reference's quantizeValue): round half to even, add the zero point, clamp; NaN gives the
/// zero point.
std::string quantizeLinear(const IntType& t) {
  double lo = t.isSigned ? -std::ldexp(1.0, t.bits - 1) : 0.0;
  double hi = std::ldexp(1.0, t.isSigned ? t.bits - 1 : t.bits) - 1;
  return fmt::format(
      R"(// float -> {0}: round half to even, + zero point, saturate (QuantizeLinear).
{0} triad_quantize_linear_{0}(float v, int zp) {{
  const float r = isnan(v) ? 0.0f : rint(v);
  return ({0})clamp(r + (float)zp, {1:.1f}f, {2:.1f}f);
}}
)",
      t.name, lo, hi);
}

} // namespace

std::string scalarHelpers(std::string_view source) {
  static const std::regex call(
      R"(\btriad_(half_to_float|half_from_float|half_min|half_max|ipow_[a-z]+_[a-z]+|int_mod(?:_fmod)?_[a-z]+|cast_float_to_[a-z]+|cast_to_int_[a-z]+|real_to_int_[a-z]+|half_from_double|div_rn|quantize_linear_[a-z]+)\()");
  std::set<std::string> used;
  std::string text(source);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator();
       ++it)
    used.insert((*it)[1].str());
  if (used.empty()) return {};
  std::string out;
  // The conversions first: the other helpers call them.
  bool half = used.count("half_min") || used.count("half_max");
  if (half || used.count("half_to_float")) out += guarded("half_to_float", kHalfToFloat);
  if (half || used.count("half_from_float") || used.count("half_from_double"))
    out += guarded("half_from_float", kHalfFromFloat);
  for (const std::string& u : used) {
    if (u == "half_min" || u == "half_max") {
      out += guarded(u, halfMinMax(u == "half_max"));
    } else if (u.rfind("ipow_", 0) == 0) {
      size_t sep = u.find('_', 5);
      const IntType* a = intType(u.substr(5, sep - 5));
      const IntType* b = intType(u.substr(sep + 1));
      if (a && b) out += guarded(u, ipow(*a, *b));
    } else if (u.rfind("int_mod", 0) == 0) {
      bool f = u.rfind("int_mod_fmod_", 0) == 0;
      if (const IntType* t = intType(u.substr(f ? 13 : 8))) out += guarded(u, intMod(*t, f));
    } else if (u == "div_rn") {
      out += guarded(u, kDivRn);
    } else if (u.rfind("quantize_linear_", 0) == 0) {
      if (const IntType* t = intType(u.substr(16)); t && t->bits <= 16)
        out += guarded(u, quantizeLinear(*t));
    } else if (u == "half_from_double") {
      out += guarded(u, kHalfFromDouble);
    } else if (u.rfind("cast_to_int_", 0) == 0) {
      if (const IntType* t = intType(u.substr(12))) out += guarded(u, castDoubleTo(*t));
    } else if (u.rfind("real_to_int_", 0) == 0) {
      if (const IntType* t = intType(u.substr(12))) out += guarded(u, realToInt(*t));
    } else if (u.rfind("cast_float_to_", 0) == 0) {
      if (const IntType* t = intType(u.substr(14))) out += guarded(u, castFloatTo(*t));
    }
  }
  return "// Scalar helpers (ir/ScalarExpr's OpenCL dialect).\n" + out;
}

} // namespace triad::gpu
