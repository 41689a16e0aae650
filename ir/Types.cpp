#include "ir/Types.h"
#include "ir/Diagnostics.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace triad::ir {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4},     {DType::F16, "f16", 2}, {DType::F64, "f64", 8},
    {DType::I64, "i64", 8},     {DType::I32, "i32", 4}, {DType::I16, "i16", 2},
    {DType::I8, "i8", 1},       {DType::U64, "u64", 8}, {DType::U32, "u32", 4},
    {DType::U16, "u16", 2},     {DType::U8, "u8", 1},   {DType::Bool, "bool", 1},
    {DType::Fixed, "fixed", 8},
};
const DTypeInfo& info(DType t) {
  for (const auto& i : kDTypes)
    if (i.type == t) return i;
  TRIAD_ASSERT(false, "unknown dtype {}", int(t));
  return kDTypes[0];
}
} // namespace

std::string_view dtypeName(DType t) {
  return info(t).name;
}
size_t dtypeSize(DType t) {
  return info(t).size;
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

namespace {
struct OnnxCode {
  int32_t code;
  std::string_view name;
  std::optional<DType> type;
};
constexpr OnnxCode kOnnxCodes[] = {
    {0, "UNDEFINED", std::nullopt},
    {1, "FLOAT", DType::F32},
    {2, "UINT8", DType::U8},
    {3, "INT8", DType::I8},
    {4, "UINT16", DType::U16},
    {5, "INT16", DType::I16},
    {6, "INT32", DType::I32},
    {7, "INT64", DType::I64},
    {8, "STRING", std::nullopt},
    {9, "BOOL", DType::Bool},
    {10, "FLOAT16", DType::F16},
    {11, "DOUBLE", DType::F64},
    {12, "UINT32", DType::U32},
    {13, "UINT64", DType::U64},
    {14, "COMPLEX64", std::nullopt},
    {15, "COMPLEX128", std::nullopt},
    {16, "BFLOAT16", std::nullopt},
    // Types of newer ONNX releases, named in errors (issue 28: not element types of Triad yet).
    {17, "FLOAT8E4M3FN", std::nullopt},
    {18, "FLOAT8E4M3FNUZ", std::nullopt},
    {19, "FLOAT8E5M2", std::nullopt},
    {20, "FLOAT8E5M2FNUZ", std::nullopt},
    {21, "UINT4", std::nullopt},
    {22, "INT4", std::nullopt},
    {23, "FLOAT4E2M1", std::nullopt},
    {24, "FLOAT8E8M0", std::nullopt},
    {25, "UINT2", std::nullopt},
    {26, "INT2", std::nullopt},
};
} // namespace

std::optional<DType> dtypeFromOnnx(int32_t code) {
  for (const auto& c : kOnnxCodes)
    if (c.code == code) return c.type;
  return std::nullopt;
}

int32_t dtypeToOnnx(DType t) {
  for (const auto& c : kOnnxCodes)
    if (c.type == t) return c.code;
  TRIAD_ASSERT(false, "{} has no ONNX element type", dtypeName(t));
  return 0;
}

std::string_view onnxElemTypeName(int32_t code) {
  for (const auto& c : kOnnxCodes)
    if (c.code == code) return c.name;
  return "UNKNOWN";
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::F64;
}
bool isSignedInteger(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8;
}
bool isInteger(DType t) {
  return isSignedInteger(t) || t == DType::U64 || t == DType::U32 || t == DType::U16 ||
         t == DType::U8;
}

int64_t numElements(const Shape& s) {
  return numElements(s, 0, s.size());
}

int64_t numElements(const Shape& s, size_t from, size_t to) {
  to = std::min(to, s.size());
  if (std::any_of(s.begin() + std::ptrdiff_t(std::min(from, to)), s.begin() + std::ptrdiff_t(to),
                  [](int64_t d) { return d == 0; }))
    return 0; // a zero anywhere: no partial product may overflow first
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    if (__builtin_mul_overflow(n, s[i], &n))
      fail(ErrorKind::Resource, "shape {} has more elements than can be counted", shapeToString(s));
  return n;
}

std::string shapeToString(const Shape& s) {
  return fmt::format("[{}]", fmt::join(s, ","));
}

std::string typeToString(const TensorType& t) {
  if (t.dtype == DType::Fixed && t.fixed)
    return fmt::format("{}fixed<{},{}>{}", t.fixed->isSigned ? "" : "u", t.fixed->width,
                       t.fixed->intBits, shapeToString(t.shape));
  return fmt::format("{}{}", dtypeName(t.dtype), shapeToString(t.shape));
}

} // namespace triad::ir
