#include "ir/Tensor.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <fstream>
#include <unistd.h>

namespace triad::ir {

namespace {

uint64_t machineMemory() {
  uint64_t bytes = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  // A container's cgroup (v2, then v1) may allow less than the machine has.
  for (const char* f :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(f);
    uint64_t limit = 0;
    if (in >> limit && limit > 0 && limit < bytes) bytes = limit;
  }
  return bytes ? bytes : uint64_t(1) << 34;
}

std::atomic<uint64_t>& limitStore() {
  static std::atomic<uint64_t> limit{machineMemory()};
  return limit;
}

} // namespace

uint64_t memoryLimit() {
  return limitStore().load(std::memory_order_relaxed);
}

void setMemoryLimit(uint64_t bytes) {
  limitStore().store(bytes, std::memory_order_relaxed);
}

std::string formatBytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[u]);
}

uint64_t checkedByteSize(const TensorType& t, std::string_view what) {
  for (int64_t d : t.shape)
    if (d < 0) fail(ErrorKind::InvalidModel, "{}: negative dimension in {}", what, typeToString(t));
  // Counted as numElements counts (signed, a zero dimension anywhere gives 0), so that every
  // shape that passes here can be counted everywhere else.
  int64_t n = 1;
  bool overflow = false;
  if (std::find(t.shape.begin(), t.shape.end(), int64_t(0)) != t.shape.end())
    n = 0;
  else
    for (int64_t d : t.shape)
      overflow = overflow || __builtin_mul_overflow(n, d, &n);
  uint64_t bytes = 0;
  if (overflow || __builtin_mul_overflow(uint64_t(n), uint64_t(dtypeSize(t.dtype)), &bytes))
    fail(ErrorKind::Resource, "{}: {} has more elements than can be counted", what,
         typeToString(t));
  if (bytes > memoryLimit())
    fail(ErrorKind::Resource, "{}: {} needs {}, more than the run may use ({}; --max-memory)", what,
         typeToString(t), formatBytes(bytes), formatBytes(memoryLimit()));
  return bytes;
}

// Round-to-nearest-even float -> binary16 conversion, handling subnormals, inf and NaN.
uint16_t Half::floatToHalfBits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to a value >= 65520: overflow to inf
    return uint16_t(sign | 0x7c00u);
  if (absx < 0x38800000u) { // below the smallest normal half: subnormal or zero
    // Scale so that the half subnormal unit (2^-24) is 1 and round to nearest even.
    float a = std::bit_cast<float>(absx) * 16777216.0f; // 2^24
    float r = std::nearbyint(a);
    return uint16_t(sign | uint32_t(r));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // carry may bump the exponent
  return uint16_t(sign | h);
}

float Half::halfBitsToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

Tensor::Tensor(TensorType type) : type_(std::move(type)) {
  bytes_.assign(size_t(checkedByteSize(type_, "a tensor")), 0);
}

double Tensor::getDouble(int64_t i) const {
  return visitDType(dtype(), [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(static_cast<T>(data<T>()[i]));
  });
}

int64_t Tensor::getInt(int64_t i) const {
  return visitDType(dtype(), [&](auto tag) -> int64_t {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half>)
      return int64_t(float(data<T>()[i]));
    else
      return static_cast<int64_t>(data<T>()[i]);
  });
}

void Tensor::setDouble(int64_t i, double v) {
  visitDType(dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Half>)
      data<T>()[i] = Half(float(v));
    else
      data<T>()[i] = static_cast<T>(v);
  });
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numElements()));
  for (int64_t i = 0; i < numElements(); ++i)
    v[size_t(i)] = getInt(i);
  return v;
}

std::vector<double> Tensor::toDoubleVector() const {
  std::vector<double> v(static_cast<size_t>(numElements()));
  for (int64_t i = 0; i < numElements(); ++i)
    v[size_t(i)] = getDouble(i);
  return v;
}

namespace {
// Converts one element with ONNX Cast semantics: float->int truncates toward zero, NaN/inf to
// int is undefined in ONNX and becomes 0 here, anything nonzero becomes true.
template <typename To, typename From> To convertElement(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, Half>)
      return float(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, Half>)
      return v;
    else
      return Half(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    if constexpr (std::is_same_v<From, Half>)
      return static_cast<To>(float(v));
    else
      return static_cast<To>(v);
  } else {
    // integer destination: truncate toward zero, then wrap modulo 2^64 and keep the low bits
    // (two's complement), as C does for an in-range value and x86 integer conversion would for
    // a wider type; NaN and infinities give 0. ONNX leaves out-of-range casts undefined; this
    // rule is defined for every input (cpu/runtime/triad_scalar.h's cast_to_int is the same).
    double d;
    if constexpr (std::is_same_v<From, Half>)
      d = float(v);
    else if constexpr (std::is_integral_v<From>)
      return static_cast<To>(v);
    else
      d = static_cast<double>(v);
    if (!std::isfinite(d)) return To(0);
    double t = std::trunc(d);
    constexpr double k2to63 = 9223372036854775808.0, k2to64 = 18446744073709551616.0;
    if (!(t >= -k2to63 && t < k2to63)) {
      t = std::fmod(t, k2to64); // exact, in (-2^64, 2^64)
      if (t >= k2to63) t -= k2to64;
      if (t < -k2to63) t += k2to64; // both exact: multiples of 2^11 within 2^63
    }
    return static_cast<To>(static_cast<uint64_t>(static_cast<int64_t>(t)));
  }
}
} // namespace

Tensor Tensor::castTo(DType to) const {
  TRIAD_ASSERT(to != DType::Fixed && dtype() != DType::Fixed,
               "fixed-point casts go through the quantizer");
  Tensor out(to, shape());
  visitDType(dtype(), [&](auto fromTag) {
    using From = decltype(fromTag);
    visitDType(to, [&](auto toTag) {
      using To = decltype(toTag);
      const From* src = data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < numElements(); ++i)
        dst[i] = convertElement<To>(src[i]);
    });
  });
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  TRIAD_ASSERT(ir::numElements(shape) == numElements(), "reshape {} to {}",
               shapeToString(this->shape()), shapeToString(shape));
  Tensor t = *this;
  t.type_.shape = std::move(shape);
  return t;
}

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = int64_t(s.size()) - 2; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * s[size_t(i) + 1];
  return st;
}

} // namespace triad::ir
