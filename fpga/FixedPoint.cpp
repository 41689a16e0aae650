#include "fpga/FixedPoint.h"

#include "ir/Diagnostics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace triad::fpga {

namespace {

using i128 = __int128;

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// Rounds v / 2^d (d >= 1) to an integer with mode r. |v| < 2^65 here.
i128 shiftRightRound(i128 v, int d, Rounding r) {
  d = std::min(d, 100); // beyond 2^65 every d rounds alike
  i128 q = v >> d;      // floor (arithmetic shift)
  unsigned __int128 mask = (static_cast<unsigned __int128>(1) << d) - 1;
  unsigned __int128 rem = static_cast<unsigned __int128>(v) & mask;
  unsigned __int128 half = static_cast<unsigned __int128>(1) << (d - 1);
  switch (r) {
  case Rounding::Truncate:
    return q;
  case Rounding::RoundHalfUp:
    return rem >= half ? q + 1 : q;
  case Rounding::Convergent:
    if (rem > half) return q + 1;
    if (rem == half) return (q & 1) ? q + 1 : q;
    return q;
  }
  return q;
}

int64_t fitRange(i128 v, const FixedFormat& f, Overflow o, CastStatus* status) {
  if (fits(v, f)) return static_cast<int64_t>(v);
  if (o == Overflow::Saturate) {
    if (status) status->saturated = true;
    return v < 0 ? minRaw(f) : maxRaw(f);
  }
  if (status) status->wrapped = true;
  return wrapBits(v, f.width, f.isSigned);
}

} // namespace

std::string_view toString(Rounding r) {
  switch (r) {
  case Rounding::Truncate:
    return "truncate";
  case Rounding::RoundHalfUp:
    return "round_half_up";
  case Rounding::Convergent:
    return "convergent";
  }
  return "?";
}

std::string_view toString(Overflow o) {
  return o == Overflow::Wrap ? "wrap" : "saturate";
}

Rounding parseRounding(std::string_view s) {
  std::string l = lower(trim(s));
  if (l == "truncate" || l == "trn" || l == "ap_trn") return Rounding::Truncate;
  if (l == "round_half_up" || l == "round" || l == "rnd" || l == "ap_rnd")
    return Rounding::RoundHalfUp;
  if (l == "convergent" || l == "rnd_conv" || l == "ap_rnd_conv") return Rounding::Convergent;
  fail(ErrorKind::Usage,
       "unknown rounding mode '{}' (expected truncate, round_half_up, convergent)", s);
}

Overflow parseOverflow(std::string_view s) {
  std::string l = lower(trim(s));
  if (l == "wrap" || l == "ap_wrap") return Overflow::Wrap;
  if (l == "saturate" || l == "sat" || l == "ap_sat") return Overflow::Saturate;
  fail(ErrorKind::Usage, "unknown overflow mode '{}' (expected wrap, saturate)", s);
}

void checkFormat(const FixedFormat& f) {
  int maxWidth = f.isSigned ? 64 : 63;
  if (f.width < 1 || f.width > maxWidth)
    fail(ErrorKind::Usage, "{}: width must be in 1..{}", formatToString(f), maxWidth);
  if (f.fracBits() < -64 || f.fracBits() > 64)
    fail(ErrorKind::Usage, "{}: fraction bits (width - integer bits) must be in -64..64",
         formatToString(f));
}

FixedFormat parseFormat(std::string_view text) {
  std::string s = lower(trim(text));
  auto bad = [&](std::string_view why) -> FixedFormat {
    fail(ErrorKind::Usage,
         "bad fixed-point format '{}': {} (expected fixed<W,I>, ufixed<W,I>, ap_fixed<W,I> or "
         "ap_ufixed<W,I>)",
         text, why);
  };
  FixedFormat f;
  std::string_view v = s;
  if (v.starts_with("ap_")) v.remove_prefix(3);
  if (v.starts_with("ufixed")) {
    f.isSigned = false;
    v.remove_prefix(6);
  } else if (v.starts_with("fixed")) {
    f.isSigned = true;
    v.remove_prefix(5);
  } else {
    return bad("unknown type name");
  }
  v = trim(v);
  if (v.size() < 2 || v.front() != '<' || v.back() != '>') return bad("missing <W,I>");
  v = v.substr(1, v.size() - 2);
  std::vector<std::string_view> args;
  for (size_t start = 0;;) {
    size_t comma = v.find(',', start);
    args.push_back(trim(v.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (args.size() != 2) {
    if (args.size() > 2)
      return bad("only W and I are accepted here; set rounding and overflow with the config's "
                 "'rounding' and 'overflow' keys");
    return bad("expected two arguments W and I");
  }
  int nums[2];
  for (int i = 0; i < 2; ++i) {
    std::string_view a = args[size_t(i)];
    auto [p, ec] = std::from_chars(a.data(), a.data() + a.size(), nums[i]);
    if (a.empty() || ec != std::errc() || p != a.data() + a.size())
      return bad(fmt::format("'{}' is not an integer", a));
  }
  f.width = nums[0];
  f.intBits = nums[1];
  checkFormat(f);
  return f;
}

std::string formatToString(const FixedFormat& f) {
  return fmt::format("{}fixed<{},{}>", f.isSigned ? "" : "u", f.width, f.intBits);
}

int64_t maxRaw(const FixedFormat& f) {
  int bits = f.isSigned ? f.width - 1 : f.width;
  return bits >= 63 ? INT64_MAX : (int64_t(1) << bits) - 1;
}

int64_t minRaw(const FixedFormat& f) {
  if (!f.isSigned) return 0;
  return f.width >= 64 ? INT64_MIN : -(int64_t(1) << (f.width - 1));
}

double lsb(const FixedFormat& f) {
  return std::ldexp(1.0, -f.fracBits());
}
double maxValue(const FixedFormat& f) {
  return dequantize(maxRaw(f), f);
}
double minValue(const FixedFormat& f) {
  return dequantize(minRaw(f), f);
}

bool fits(i128 v, const FixedFormat& f) {
  return v >= minRaw(f) && v <= maxRaw(f);
}

int64_t wrapBits(i128 v, int width, bool isSigned) {
  TRIAD_ASSERT(width >= 1 && width <= 64, "wrap to {} bits", width);
  auto u = static_cast<unsigned __int128>(v);
  uint64_t low = static_cast<uint64_t>(u); // low 64 bits
  if (width < 64) low &= (uint64_t(1) << width) - 1;
  if (isSigned && width < 64 && (low >> (width - 1)) & 1) low |= ~((uint64_t(1) << width) - 1);
  return static_cast<int64_t>(low);
}

int64_t quantize(double x, const FixedFormat& f, Rounding r, Overflow o, CastStatus* status) {
  if (std::isnan(x)) {
    if (status) status->saturated = true;
    return 0;
  }
  double y = std::ldexp(x, f.fracBits()); // exact (barring under/overflow of the exponent)
  double q = 0;
  if (std::isinf(y) || std::fabs(y) >= 0x1p60) {
    q = y; // already an integer, and far out of range: only the overflow mode matters
  } else {
    double fl = std::floor(y);
    double rem = y - fl; // exact
    switch (r) {
    case Rounding::Truncate:
      q = fl;
      break;
    case Rounding::RoundHalfUp:
      q = rem >= 0.5 ? fl + 1 : fl;
      break;
    case Rounding::Convergent:
      q = rem > 0.5 ? fl + 1 : rem < 0.5 ? fl : (std::fmod(fl, 2.0) != 0 ? fl + 1 : fl);
      break;
    }
  }
  if (q >= -0x1p62 && q <= 0x1p62) return fitRange(static_cast<i128>(q), f, o, status);
  // Far out of range.
  if (o == Overflow::Saturate || std::isinf(q)) {
    if (o == Overflow::Saturate) {
      if (status) status->saturated = true;
      return q < 0 ? minRaw(f) : maxRaw(f);
    }
    if (status) status->wrapped = true;
    return 0; // +-inf wraps to 0 (all low bits are zero)
  }
  // Wrap: q is an integer; q mod 2^64 is exact in double arithmetic (fmod is exact).
  double m = std::fmod(q, 0x1p64); // in (-2^64, 2^64)
  if (status) status->wrapped = true;
  auto mag = static_cast<unsigned __int128>(std::fabs(m));
  i128 v = m < 0 ? -static_cast<i128>(mag) : static_cast<i128>(mag);
  return wrapBits(v, f.width, f.isSigned);
}

double dequantize(int64_t raw, const FixedFormat& f) {
  return std::ldexp(static_cast<double>(raw), -f.fracBits());
}

int64_t cast(int64_t raw, const FixedFormat& from, const FixedFormat& to, Rounding r, Overflow o,
             CastStatus* status) {
  int d = to.fracBits() - from.fracBits();
  i128 v = raw;
  if (d > 0) {
    if (d >= 64) { // every bit of the value lands at or above 2^64
      if (raw == 0) return 0;
      if (o == Overflow::Saturate) {
        if (status) status->saturated = true;
        return raw < 0 ? minRaw(to) : maxRaw(to);
      }
      if (status) status->wrapped = true;
      return 0;
    }
    v = v * (i128(1) << d);
  } else if (d < 0) {
    v = shiftRightRound(v, -d, r);
  }
  return fitRange(v, to, o, status);
}

FixedFormat productFormat(const FixedFormat& a, const FixedFormat& b) {
  FixedFormat p{a.width + b.width, a.intBits + b.intBits, a.isSigned || b.isSigned};
  TRIAD_ASSERT(p.width <= (p.isSigned ? 64 : 63), "product {} x {} is wider than 64 bits",
               formatToString(a), formatToString(b));
  return p;
}

int64_t multiply(int64_t a, const FixedFormat& fa, int64_t b, const FixedFormat& fb) {
  FixedFormat p = productFormat(fa, fb);
  i128 v = i128(a) * i128(b);
  TRIAD_ASSERT(fits(v, p), "product out of its format");
  return static_cast<int64_t>(v);
}

FixedFormat sumFormat(const FixedFormat& a, const FixedFormat& b) {
  bool isSigned = a.isSigned || b.isSigned;
  // Integer bits of each operand in the result's signedness.
  int ia = a.intBits + (isSigned && !a.isSigned ? 1 : 0);
  int ib = b.intBits + (isSigned && !b.isSigned ? 1 : 0);
  int frac = std::max(a.fracBits(), b.fracBits());
  int ib2 = std::max(ia, ib) + 1;
  FixedFormat s{ib2 + frac, ib2, isSigned};
  TRIAD_ASSERT(s.width <= (s.isSigned ? 64 : 63), "sum of {} and {} is wider than 64 bits",
               formatToString(a), formatToString(b));
  return s;
}

int64_t align(int64_t raw, const FixedFormat& from, int toFracBits) {
  int d = toFracBits - from.fracBits();
  TRIAD_ASSERT(d >= 0 && d < 63, "align by {} bits", d);
  i128 v = i128(raw) * (i128(1) << d);
  TRIAD_ASSERT(v >= INT64_MIN && v <= INT64_MAX, "aligned value exceeds 64 bits");
  return static_cast<int64_t>(v);
}

int64_t add(int64_t a, const FixedFormat& fa, int64_t b, const FixedFormat& fb) {
  FixedFormat s = sumFormat(fa, fb);
  i128 v = i128(align(a, fa, s.fracBits())) + i128(align(b, fb, s.fracBits()));
  TRIAD_ASSERT(fits(v, s), "sum out of its format");
  return static_cast<int64_t>(v);
}

} // namespace triad::fpga
