// Element types and tensor types of the Triad IR.
//
// Every value in the IR carries a TensorType: an element type (DType) and a static shape.
// The fixed-point type is first-class from the start because the FPGA target quantizes
// graphs to it and the emulator, the RTL and the testbench all speak it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triad::ir {

enum class DType : uint8_t {
  F32,
  F16,
  F64,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  Bool,
  Fixed, // two's complement fixed point, see FixedSpec; stored as int64 raw integers
};

/// Fixed-point format in the hls4ml/ap_fixed convention: `width` bits in total, of which
/// `intBits` are integer bits (including the sign bit when signed). The real value of a raw
/// integer r is r * 2^-(width - intBits).
struct FixedSpec {
  int width = 16;
  int intBits = 6;
  bool isSigned = true;

  int fracBits() const { return width - intBits; }
  bool operator==(const FixedSpec&) const = default;
};

std::string_view dtypeName(DType t);
std::optional<DType> dtypeFromName(std::string_view name);
/// Size in bytes of one element as stored in a Tensor.
size_t dtypeSize(DType t);
/// ONNX TensorProto.DataType codes (FLOAT=1, UINT8=2, ... FLOAT16=10, DOUBLE=11, ...). Types the IR
/// lacks (string, complex, bfloat16) give nullopt. Used by the frontend and by Cast's parser.
std::optional<DType> dtypeFromOnnx(int32_t onnxElemType);
int32_t dtypeToOnnx(DType t);                            // Fixed has no ONNX code: asserts
std::string_view onnxElemTypeName(int32_t onnxElemType); // "FLOAT", "STRING", ...
bool isFloat(DType t);                                   // F32, F16, F64
bool isInteger(DType t);
bool isSignedInteger(DType t);

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape& s);
/// Product of the dims s[from, to) (to clamped to the rank): outer/inner sizes around an axis.
int64_t numElements(const Shape& s, size_t from, size_t to = SIZE_MAX);
std::string shapeToString(const Shape& s); // "[1,3,224,224]"

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  std::optional<FixedSpec> fixed; // set iff dtype == Fixed

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const { return ir::numElements(shape); }
  bool operator==(const TensorType&) const = default;
};

/// "f32[1,10]", "fixed<16,6>[64]", "bool[]" (scalar).
std::string typeToString(const TensorType& t);

} // namespace triad::ir
