#include "python/src/Convert.h"

#include "ir/Diagnostics.h"

#include <cstring>

namespace triad::python {

namespace {

ir::DType dtypeOf(const nb::dlpack::dtype& d, const std::string& what) {
  using Code = nb::dlpack::dtype_code;
  auto code = Code(d.code);
  if (d.lanes == 1) {
    if (code == Code::Float && d.bits == 32) return ir::DType::F32;
    if (code == Code::Float && d.bits == 64) return ir::DType::F64;
    if (code == Code::Float && d.bits == 16) return ir::DType::F16;
    if (code == Code::Int && d.bits == 64) return ir::DType::I64;
    if (code == Code::Int && d.bits == 32) return ir::DType::I32;
    if (code == Code::Int && d.bits == 16) return ir::DType::I16;
    if (code == Code::Int && d.bits == 8) return ir::DType::I8;
    if (code == Code::UInt && d.bits == 64) return ir::DType::U64;
    if (code == Code::UInt && d.bits == 32) return ir::DType::U32;
    if (code == Code::UInt && d.bits == 16) return ir::DType::U16;
    if (code == Code::UInt && d.bits == 8) return ir::DType::U8;
    if (code == Code::Bool && d.bits == 8) return ir::DType::Bool;
  }
  fail(ErrorKind::Unsupported, "{}: an array of {}-bit elements of type code {} has no IR type",
       what, d.bits, d.code);
}

nb::dlpack::dtype dlpackOf(ir::DType t) {
  switch (t) {
  case ir::DType::F32:
    return nb::dtype<float>();
  case ir::DType::F64:
    return nb::dtype<double>();
  case ir::DType::F16:
    return {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
  case ir::DType::I64:
  case ir::DType::Fixed:
    return nb::dtype<int64_t>();
  case ir::DType::I32:
    return nb::dtype<int32_t>();
  case ir::DType::I16:
    return nb::dtype<int16_t>();
  case ir::DType::I8:
    return nb::dtype<int8_t>();
  case ir::DType::U64:
    return nb::dtype<uint64_t>();
  case ir::DType::U32:
    return nb::dtype<uint32_t>();
  case ir::DType::U16:
    return nb::dtype<uint16_t>();
  case ir::DType::U8:
    return nb::dtype<uint8_t>();
  case ir::DType::Bool:
    return nb::dtype<bool>();
  }
  TRIAD_ASSERT(false, "bad dtype");
  return nb::dtype<float>();
}

} // namespace

ir::Tensor toTensor(const InArray& a, const std::string& what) {
  ir::Shape shape;
  for (size_t i = 0; i < a.ndim(); ++i)
    shape.push_back(int64_t(a.shape(i)));
  ir::Tensor t(dtypeOf(a.dtype(), what), shape);
  TRIAD_ASSERT(t.byteSize() == a.nbytes(), "array and tensor sizes differ");
  if (t.byteSize() > 0) std::memcpy(t.raw(), a.data(), t.byteSize());
  return t;
}

nb::object toArray(ir::Tensor&& t) {
  auto* owned = new ir::Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<ir::Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> a(owned->raw(), shape.size(), shape.data(), owner, nullptr,
                           dlpackOf(owned->dtype()));
  return nb::cast(a);
}

nb::object toArray(const std::vector<double>& values, const ir::Shape& shape) {
  ir::Tensor t(ir::DType::F32, shape);
  if (t.numElements() != int64_t(values.size()))
    t = ir::Tensor(ir::DType::F32, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.data<float>()[i] = float(values[i]);
  return toArray(std::move(t));
}

} // namespace triad::python
