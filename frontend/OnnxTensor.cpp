#include "frontend/OnnxTensor.h"
#include "frontend/TensorIO.h"

#include <fstream>

namespace triad::frontend {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

namespace {

// Reads the external-data bytes of `p` (keys: location, offset, length) next to the model.
std::string readExternalData(const onnx::TensorProto& p, const fs::path& baseDir,
                             const std::string& what, size_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  if (location.empty()) fail(ErrorKind::InvalidModel, "{}: external data without a location", what);
  fs::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos)
    fail(ErrorKind::InvalidModel,
         "{}: external data location '{}' must be a relative path inside the model's folder", what,
         location);
  fs::path file = baseDir / rel;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(ErrorKind::Io, "{}: external data file '{}' is missing or unreadable", what,
         file.string());
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (length < 0) length = int64_t(expectedBytes);
  if (offset < 0 || offset + length > size)
    fail(ErrorKind::InvalidModel,
         "{}: external data file '{}' has {} bytes; offset {} + length {} is beyond its end", what,
         file.string(), size, offset, length);
  std::string bytes(size_t(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) fail(ErrorKind::Io, "{}: reading external data file '{}' failed", what, file.string());
  return bytes;
}

template <typename Src> void fillFrom(Tensor& t, const Src& src) {
  ir::visitDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if constexpr (std::is_same_v<T, ir::Half>)
        d[i].bits = uint16_t(src[int(i)]);
      else
        d[i] = static_cast<T>(src[int(i)]);
    }
  });
}

} // namespace

Tensor tensorFromProto(const onnx::TensorProto& p, const fs::path& baseDir,
                       const std::string& what) {
  auto dtype = ir::dtypeFromOnnx(p.data_type());
  if (!dtype)
    fail(ErrorKind::Unsupported, "{}: element type {} is not supported", what,
         ir::onnxElemTypeName(p.data_type()));
  if (p.has_segment())
    fail(ErrorKind::Unsupported, "{}: segmented tensors are not supported", what);
  ir::Shape shape(p.dims().begin(), p.dims().end());
  // Validate the element count against the data present before allocating anything, so that a
  // corrupt or mistyped file gives a message instead of a huge allocation.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::InvalidModel, "{}: negative dimension {}", what, d);
    if (d > 0 && n > (int64_t(1) << 40) / d)
      fail(ErrorKind::InvalidModel, "{}: shape {} is implausibly large", what,
           ir::shapeToString(shape));
    n *= d;
  }
  size_t bytes = size_t(n) * ir::dtypeSize(*dtype);
  std::string typeStr = ir::typeToString(ir::TensorType{*dtype, shape, {}});
  auto check = [&](int64_t count, const char* field) {
    if (count != n)
      fail(ErrorKind::InvalidModel, "{}: {} has {} values, {} expected for {}", what, field, count,
           n, typeStr);
  };
  if (p.data_location() != onnx::TensorProto::EXTERNAL) {
    if (p.has_raw_data()) {
      if (p.raw_data().size() != bytes)
        fail(ErrorKind::InvalidModel, "{}: raw_data has {} bytes, {} expected for {}", what,
             p.raw_data().size(), bytes, typeStr);
    } else {
      switch (*dtype) {
      case DType::F32:
        check(p.float_data_size(), "float_data");
        break;
      case DType::F64:
        check(p.double_data_size(), "double_data");
        break;
      case DType::I64:
        check(p.int64_data_size(), "int64_data");
        break;
      case DType::U32:
      case DType::U64:
        check(p.uint64_data_size(), "uint64_data");
        break;
      default:
        check(p.int32_data_size(), "int32_data");
        break;
      }
    }
  }
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string raw = readExternalData(p, baseDir, what, bytes);
    if (raw.size() != bytes)
      fail(ErrorKind::InvalidModel, "{}: external data has {} bytes, {} expected for {}", what,
           raw.size(), bytes, typeStr);
    Tensor t(*dtype, shape);
    if (bytes) std::memcpy(t.raw(), raw.data(), bytes);
    return t;
  }
  Tensor t(*dtype, shape);
  if (p.has_raw_data()) {
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), bytes);
    return t;
  }
  switch (*dtype) {
  case DType::F32:
    fillFrom(t, p.float_data());
    break;
  case DType::F64:
    fillFrom(t, p.double_data());
    break;
  case DType::I64:
    fillFrom(t, p.int64_data());
    break;
  case DType::U32:
  case DType::U64:
    fillFrom(t, p.uint64_data());
    break;
  default:
    fillFrom(t, p.int32_data());
    break;
  }
  return t;
}

onnx::TensorProto tensorToProto(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(ir::dtypeToOnnx(t.dtype()));
  for (int64_t d : t.shape())
    p.add_dims(d);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(t.raw()), t.byteSize()));
  return p;
}

} // namespace triad::frontend
