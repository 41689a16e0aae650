// A dense, row-major tensor with owned storage: constants in the IR, inputs and outputs of
// every backend, and the interpreter's working values.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/Types.h"

#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace triad::ir {

/// IEEE binary16 storage type. Arithmetic goes through float: `Half(float(a) + float(b))`.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(floatToHalfBits(f)) {}              // NOLINT: implicit on purpose
  operator float() const { return halfBitsToFloat(bits); } // NOLINT
  static uint16_t floatToHalfBits(float f);
  static float halfBitsToFloat(uint16_t h);
};

/// The C++ storage type of each DType.
template <DType T> struct StorageOf;
template <> struct StorageOf<DType::F32> { using type = float; };
template <> struct StorageOf<DType::F16> { using type = Half; };
template <> struct StorageOf<DType::F64> { using type = double; };
template <> struct StorageOf<DType::I64> { using type = int64_t; };
template <> struct StorageOf<DType::I32> { using type = int32_t; };
template <> struct StorageOf<DType::I16> { using type = int16_t; };
template <> struct StorageOf<DType::I8> { using type = int8_t; };
template <> struct StorageOf<DType::U64> { using type = uint64_t; };
template <> struct StorageOf<DType::U32> { using type = uint32_t; };
template <> struct StorageOf<DType::U16> { using type = uint16_t; };
template <> struct StorageOf<DType::U8> { using type = uint8_t; };
template <> struct StorageOf<DType::Bool> { using type = bool; };
template <> struct StorageOf<DType::Fixed> { using type = int64_t; };

template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, Half>)
    return DType::F16;
  else if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::U64;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::U32;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::U16;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else
    static_assert(!sizeof(T), "no DType for this C++ type");
}

/// Calls f(T{}) with T the storage type of `t` (int64_t for Fixed).
template <typename F> decltype(auto) visitDType(DType t, F&& f) {
  switch (t) {
  case DType::F32:
    return f(float{});
  case DType::F16:
    return f(Half{});
  case DType::F64:
    return f(double{});
  case DType::I64:
    return f(int64_t{});
  case DType::I32:
    return f(int32_t{});
  case DType::I16:
    return f(int16_t{});
  case DType::I8:
    return f(int8_t{});
  case DType::U64:
    return f(uint64_t{});
  case DType::U32:
    return f(uint32_t{});
  case DType::U16:
    return f(uint16_t{});
  case DType::U8:
    return f(uint8_t{});
  case DType::Bool:
    return f(bool{});
  case DType::Fixed:
    return f(int64_t{});
  }
  TRIAD_ASSERT(false, "bad dtype");
  return f(float{});
}

class Tensor {
public:
  Tensor() = default;
  /// Zero-initialised tensor of the given type.
  explicit Tensor(TensorType type);
  Tensor(DType dtype, Shape shape) : Tensor(TensorType{dtype, std::move(shape), {}}) {}

  template <typename T> static Tensor fromVector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtypeOf<T>(), std::move(shape));
    TRIAD_ASSERT(static_cast<int64_t>(values.size()) == t.numElements(), "size mismatch");
    for (size_t i = 0; i < values.size(); ++i)
      t.data<T>()[i] = values[i];
    return t;
  }
  template <typename T> static Tensor scalar(T v) { return fromVector<T>({}, {v}); }

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t rank() const { return type_.rank(); }
  int64_t numElements() const { return type_.numElements(); }
  size_t byteSize() const { return bytes_.size(); }

  uint8_t* raw() { return bytes_.data(); }
  const uint8_t* raw() const { return bytes_.data(); }

  template <typename T> T* data() {
    TRIAD_ASSERT(storageMatches<T>(), "tensor of {} accessed as another type", dtypeName(dtype()));
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T> const T* data() const {
    TRIAD_ASSERT(storageMatches<T>(), "tensor of {} accessed as another type", dtypeName(dtype()));
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <typename T> std::span<T> values() { return {data<T>(), size_t(numElements())}; }
  template <typename T> std::span<const T> values() const {
    return {data<T>(), size_t(numElements())};
  }

  /// Element i converted to double / int64 (for shape operands, printing and comparisons).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  void setDouble(int64_t i, double v);
  /// All elements as int64 (shape operands such as Reshape's shape, Slice's starts).
  std::vector<int64_t> toInt64Vector() const;
  std::vector<double> toDoubleVector() const;

  /// Element-by-element conversion with C++ semantics (float to int truncates, like ONNX Cast).
  Tensor castTo(DType to) const;
  /// Same data with another shape of equal element count.
  Tensor reshaped(Shape shape) const;

  bool operator==(const Tensor& o) const { return type_ == o.type_ && bytes_ == o.bytes_; }

private:
  template <typename T> bool storageMatches() const {
    return dtypeOf<T>() == dtype() || (dtype() == DType::Fixed && std::is_same_v<T, int64_t>);
  }
  TensorType type_;
  std::vector<uint8_t> bytes_;
};

/// Row-major strides (in elements) of a shape.
std::vector<int64_t> stridesOf(const Shape& s);

/// The most bytes a run may hold in tensors (`--max-memory`). By default the machine's memory,
/// or its cgroup's limit where that is lower. Every tensor allocation is checked against it, and
/// the importer checks each value of a model, and the working set of a run, before allocating.
uint64_t memoryLimit();
void setMemoryLimit(uint64_t bytes);
/// "1.5 GiB", "640 KiB", "12 B": sizes in messages.
std::string formatBytes(uint64_t bytes);
/// Bytes of a tensor of type `t`, checked before anything is allocated: a negative dimension
/// throws InvalidModel; an element count that overflows, or more bytes than memoryLimit(),
/// throws Resource. Messages start with `what` (e.g. "node 'x' (Tile): output 'y'").
uint64_t checkedByteSize(const TensorType& t, std::string_view what);

} // namespace triad::ir
