#include "frontend/OnnxTensor.h"
#include "frontend/TensorIO.h"

#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace triad::frontend {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

namespace {

// A non-negative decimal integer (an external-data offset or length), or an error naming it.
int64_t parseExternalNumber(const std::string& value, const std::string& key,
                            const std::string& what) {
  int64_t x = -1;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, x);
  if (value.empty() || ec != std::errc() || p != end || x < 0)
    fail(ErrorKind::InvalidModel, "{}: external data {} '{}' is not a non-negative integer", what,
         key, value);
  return x;
}

// Reads the external-data bytes of `p` (keys: location, offset, length) from a regular file
// inside the model's folder. The location is resolved with every symbolic link followed and must
// stay inside the folder; the file is opened without blocking (a FIFO cannot hang the read), must
// be a regular file, and the file actually opened is checked again through /proc/self/fd, so that
// no path form (`..`, absolute, symlinks, links swapped in between) reads outside the folder.
std::string readExternalData(const onnx::TensorProto& p, const fs::path& baseDir,
                             const std::string& what, size_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parseExternalNumber(kv.value(), "offset", what);
    else if (kv.key() == "length")
      length = parseExternalNumber(kv.value(), "length", what);
  }
  if (location.empty()) fail(ErrorKind::InvalidModel, "{}: external data without a location", what);
  auto outside = [&] {
    fail(ErrorKind::InvalidModel,
         "{}: external data location '{}' must be a file inside the model's folder", what,
         location);
  };
  fs::path rel(location);
  if (rel.is_absolute() || location.find('\0') != std::string::npos) outside();
  for (const auto& part : rel)
    if (part == "..") outside();
  std::error_code ec;
  fs::path dir = fs::canonical(baseDir.empty() ? fs::path(".") : baseDir, ec);
  if (ec)
    fail(ErrorKind::Io, "{}: the model's folder '{}' cannot be resolved", what, baseDir.string());
  fs::path file = fs::canonical(dir / rel, ec);
  if (ec)
    fail(ErrorKind::Io, "{}: external data file '{}' is missing or unreadable", what,
         (dir / rel).string());
  auto inside = [&](const fs::path& f) {
    fs::path r = f.lexically_relative(dir);
    return !r.empty() && *r.begin() != ".." && !r.is_absolute();
  };
  if (!inside(file)) outside();
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    fail(ErrorKind::Io, "{}: external data file '{}' cannot be opened", what, file.string());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail(ErrorKind::InvalidModel, "{}: external data '{}' is not a regular file", what,
         file.string());
  fs::path opened = fs::read_symlink(fmt::format("/proc/self/fd/{}", fd), ec);
  if (!ec && !inside(opened)) outside();
  int64_t size = st.st_size;
  if (length < 0) length = int64_t(expectedBytes);
  if (offset > size || length > size - offset)
    fail(ErrorKind::InvalidModel,
         "{}: external data file '{}' has {} bytes; offset {} + length {} is beyond its end", what,
         file.string(), size, offset, length);
  if (uint64_t(length) != expectedBytes)
    fail(ErrorKind::InvalidModel, "{}: external data has {} bytes, {} expected", what, length,
         expectedBytes);
  std::string bytes(size_t(length), '\0');
  for (int64_t done = 0; done < length;) {
    ssize_t n = ::pread(fd, bytes.data() + done, size_t(length - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail(ErrorKind::Io, "{}: reading external data file '{}' failed", what, file.string());
    done += n;
  }
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
  // Sizes are checked before anything is allocated, so that a corrupt or mistyped file gives a
  // message instead of a huge allocation.
  for (int64_t d : shape)
    if (d < 0) fail(ErrorKind::InvalidModel, "{}: negative dimension {}", what, d);
  size_t bytes = size_t(ir::checkedByteSize(ir::TensorType{*dtype, shape, {}}, what));
  int64_t n = int64_t(bytes / ir::dtypeSize(*dtype));
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
    std::string raw = readExternalData(p, baseDir, what, bytes); // exactly `bytes` long
    Tensor t(*dtype, shape);
    copyRawElements(t, raw.data());
    return t;
  }
  Tensor t(*dtype, shape);
  if (p.has_raw_data()) {
    copyRawElements(t, p.raw_data().data());
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

void copyRawElements(Tensor& t, const char* bytes) {
  if (t.byteSize() == 0) return;
  std::memcpy(t.raw(), bytes, t.byteSize());
  if (t.dtype() == DType::Bool)
    for (size_t i = 0; i < t.byteSize(); ++i)
      t.raw()[i] = t.raw()[i] != 0;
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
