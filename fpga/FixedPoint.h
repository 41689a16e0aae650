// Exact fixed-point arithmetic on raw integers: the arithmetic contract shared by the
// bit-accurate emulator (fpga/Emulator.h) and the generated RTL.
//
// A value of format fixed<W,I> (ir::FixedSpec: W bits in total, I integer bits including the sign
// bit when signed, hls4ml's ap_fixed<W,I>) is stored as a raw two's complement integer r in an
// int64; its real value is r * 2^-(W-I). Every function here is exact: products and sums never
// round, and `cast` is the single place where bits are dropped (rounding) or lost (overflow).
// Formats may be up to 64 bits wide (63 when unsigned) so that products of two 32-bit values are
// representable; the quantization config keeps values at 32 bits or less.
#pragma once

#include "ir/Types.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace triad::fpga {

using FixedFormat = ir::FixedSpec;

/// How bits below the target's least significant bit are dropped.
enum class Rounding : uint8_t {
  Truncate,    // toward -inf (ap_fixed AP_TRN)
  RoundHalfUp, // to nearest, ties toward +inf (AP_RND)
  Convergent,  // to nearest, ties to even (AP_RND_CONV)
};
/// What happens to a value outside the target's range.
enum class Overflow : uint8_t {
  Wrap,     // keep the low W bits, two's complement (AP_WRAP)
  Saturate, // clamp to the largest/smallest representable value (AP_SAT)
};

std::string_view toString(Rounding r);
std::string_view toString(Overflow o);
/// "truncate"/"trn", "round"/"round_half_up"/"rnd", "convergent"/"rnd_conv" (case-insensitive).
Rounding parseRounding(std::string_view s);
/// "wrap", "saturate"/"sat".
Overflow parseOverflow(std::string_view s);

/// Throws triad::Error(Usage) when the format cannot be represented (width 1..64, 63 unsigned;
/// fraction bits in [-64, 64]).
void checkFormat(const FixedFormat& f);
/// "fixed<16,6>", "ufixed<8,3>", also hls4ml's "ap_fixed<16,6>", "ap_ufixed<8,3>" (spaces
/// allowed; ap_fixed's optional third and fourth arguments are refused: use the config's
/// rounding/overflow keys). Throws triad::Error(Usage) naming the text.
FixedFormat parseFormat(std::string_view s);
/// "fixed<16,6>" or "ufixed<8,3>".
std::string formatToString(const FixedFormat& f);

int64_t maxRaw(const FixedFormat& f);
int64_t minRaw(const FixedFormat& f);
double maxValue(const FixedFormat& f);
double minValue(const FixedFormat& f);
/// The weight of one least significant bit, 2^-fracBits.
double lsb(const FixedFormat& f);

/// What a cast did to the value's range (rounding alone never sets these).
struct CastStatus {
  bool saturated = false; // overflow with Overflow::Saturate: clamped
  bool wrapped = false;   // overflow with Overflow::Wrap: high bits dropped
};

/// Nearest representable value of x under the modes (NaN gives 0 and counts as saturated).
int64_t quantize(double x, const FixedFormat& f, Rounding r, Overflow o,
                 CastStatus* status = nullptr);
/// The exact real value of a raw integer (as a double: exact for widths up to 53 bits).
double dequantize(int64_t raw, const FixedFormat& f);

/// Re-quantizes a raw value from one format to another: aligns the binary points, rounds the
/// dropped fraction bits with `r`, then fits the integer part with `o`. This is the one
/// conversion the RTL implements too.
int64_t cast(int64_t raw, const FixedFormat& from, const FixedFormat& to, Rounding r, Overflow o,
             CastStatus* status = nullptr);

/// Format of the exact product: widths and integer bits add; signed if either operand is.
FixedFormat productFormat(const FixedFormat& a, const FixedFormat& b);
/// The exact product a*b in productFormat(fa, fb).
int64_t multiply(int64_t a, const FixedFormat& fa, int64_t b, const FixedFormat& fb);
/// Format of the exact sum: the finer binary point, one more integer bit than the wider operand.
FixedFormat sumFormat(const FixedFormat& a, const FixedFormat& b);
/// Shifts a raw value left so that it has `toFracBits` fraction bits (toFracBits >= fracBits).
int64_t align(int64_t raw, const FixedFormat& from, int toFracBits);
/// The exact sum a+b in sumFormat(fa, fb).
int64_t add(int64_t a, const FixedFormat& fa, int64_t b, const FixedFormat& fb);
/// Two's complement wrap of an integer to `width` bits (sign-extended when isSigned).
int64_t wrapBits(__int128 v, int width, bool isSigned);
/// Whether v fits in the format's raw range.
bool fits(__int128 v, const FixedFormat& f);

} // namespace triad::fpga
