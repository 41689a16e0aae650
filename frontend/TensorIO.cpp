#include "frontend/TensorIO.h"
#include "frontend/OnnxTensor.h"
#include "ir/Files.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace triad::frontend {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

std::string readFile(const fs::path& path) {
  // Opened without blocking (a FIFO cannot hang the read) and read only when it is a regular
  // file (not /dev/zero, a socket or a directory), up to its size and the memory limit.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) fail(ErrorKind::Io, "file '{}' does not exist", path.string());
    fail(ErrorKind::Io, "cannot open '{}' for reading: {}", path.string(), std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(ErrorKind::Io, "cannot read '{}'", path.string());
  if (S_ISDIR(st.st_mode)) fail(ErrorKind::Io, "'{}' is a directory, not a file", path.string());
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::Io, "'{}' is not a regular file (a device, FIFO or socket)", path.string());
  if (uint64_t(st.st_size) > ir::memoryLimit())
    fail(ErrorKind::Resource, "'{}' has {}, more than the run may use ({}; --max-memory)",
         path.string(), ir::formatBytes(uint64_t(st.st_size)), ir::formatBytes(ir::memoryLimit()));
  std::string data(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorKind::Io, "reading '{}' failed: {}", path.string(), std::strerror(errno));
    if (n == 0) break; // shrank while being read
    done += size_t(n);
  }
  data.resize(done);
  return data;
}

void writeFileAtomic(const fs::path& path, std::string_view bytes) {
  triad::writeFileAtomic(path, bytes); // temporary, fsync, rename (ir/Files.h)
}

namespace {

struct NpyCode {
  std::string_view descr; // without the byte-order character
  DType type;
};
constexpr NpyCode kNpyCodes[] = {
    {"f4", DType::F32}, {"f2", DType::F16}, {"f8", DType::F64}, {"i8", DType::I64},
    {"i4", DType::I32}, {"i2", DType::I16}, {"i1", DType::I8},  {"u8", DType::U64},
    {"u4", DType::U32}, {"u2", DType::U16}, {"u1", DType::U8},  {"b1", DType::Bool},
};

} // namespace

namespace {

// The Python-literal dict of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }: the value text of `key`
// (a quoted string without its quotes, a bare word, or a tuple's inside), or nullopt.
std::optional<std::string> npyHeaderField(std::string_view header, std::string_view key) {
  std::string quoted = fmt::format("'{}'", key);
  size_t k = header.find(quoted);
  if (k == std::string_view::npos) return std::nullopt;
  size_t i = k + quoted.size();
  auto skipSpace = [&] {
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t'))
      ++i;
  };
  skipSpace();
  if (i >= header.size() || header[i] != ':') return std::nullopt;
  ++i;
  skipSpace();
  if (i >= header.size()) return std::nullopt;
  char open = header[i];
  char close = open == '\'' ? '\'' : open == '(' ? ')' : 0;
  if (close) {
    size_t e = header.find(close, i + 1);
    if (e == std::string_view::npos) return std::nullopt;
    return std::string(header.substr(i + 1, e - i - 1));
  }
  size_t e = i;
  while (e < header.size() && std::isalpha(static_cast<unsigned char>(header[e])))
    ++e;
  return std::string(header.substr(i, e - i));
}

} // namespace

Tensor readNpy(const fs::path& path) {
  std::string data = readFile(path);
  auto bad = [&](std::string_view why) -> Tensor {
    fail(ErrorKind::Io, "'{}' is not a readable .npy file: {}", path.string(), why);
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) return bad("missing magic");
  int major = uint8_t(data[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(data[8]) | (size_t(uint8_t(data[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return bad("truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(data[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return bad(fmt::format("format version {} is unknown", major));
  }
  if (headerLen > data.size() - headerStart) return bad("truncated header");
  std::string_view header(data.data() + headerStart, headerLen);
  std::optional<std::string> descrField = npyHeaderField(header, "descr");
  if (!descrField || descrField->size() < 2) return bad("no 'descr' in header");
  char order = (*descrField)[0];
  if (order == '>') return bad("big-endian data is not supported");
  if (order != '<' && order != '|' && order != '=')
    return bad(fmt::format("element type '{}' is not supported", *descrField));
  std::string descr = descrField->substr(1);
  std::optional<DType> dtype;
  for (const auto& c : kNpyCodes)
    if (c.descr == descr) dtype = c.type;
  if (!dtype) return bad(fmt::format("element type '{}' is not supported", descr));
  if (npyHeaderField(header, "fortran_order") == "True")
    return bad("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  std::optional<std::string> dims = npyHeaderField(header, "shape");
  if (!dims) return bad("no 'shape' in header");
  ir::Shape shape;
  for (size_t i = 0; i < dims->size();) {
    char c = (*dims)[i];
    if (c == ' ' || c == ',' || c == 'L') {
      ++i;
      continue;
    }
    int64_t d = 0;
    auto [p, ec] = std::from_chars(dims->data() + i, dims->data() + dims->size(), d);
    if (ec != std::errc() || d < 0)
      return bad(fmt::format("shape ({}) is not a tuple of sizes", *dims));
    shape.push_back(d);
    i = size_t(p - dims->data());
  }
  ir::TensorType type{*dtype, shape, {}};
  // Sizes are checked against the data (and the memory limit) before allocating.
  uint64_t bytes = ir::checkedByteSize(type, fmt::format("tensor file '{}'", path.string()));
  size_t offset = headerStart + headerLen;
  if (data.size() - offset != bytes)
    return bad(fmt::format("{} data bytes for {}, {} expected", data.size() - offset,
                           ir::typeToString(type), bytes));
  Tensor t(type);
  copyRawElements(t, data.data() + offset);
  return t;
}

void writeNpy(const fs::path& path, const Tensor& t) {
  std::string_view code;
  for (const auto& c : kNpyCodes)
    if (c.type == t.dtype()) code = c.descr;
  if (code.empty())
    fail(ErrorKind::Unsupported, "cannot write {} tensors to .npy", ir::dtypeName(t.dtype()));
  std::string shape = fmt::format("{}", fmt::join(t.shape(), ", "));
  if (t.rank() == 1) shape += ","; // numpy writes one-element tuples as "(5,)"
  char order = t.dtype() == DType::Bool || dtypeSize(t.dtype()) == 1 ? '|' : '<';
  std::string header = fmt::format("{{'descr': '{}{}', 'fortran_order': False, 'shape': ({}), }}",
                                   order, code, shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(t.raw()), t.byteSize());
  writeFileAtomic(path, out);
}

NamedTensor readTensorProtoFile(const fs::path& path) {
  std::string data = readFile(path);
  onnx::TensorProto p;
  if (!p.ParseFromString(data))
    fail(ErrorKind::Io, "'{}' is not a readable ONNX TensorProto (.pb) file", path.string());
  return {p.name(),
          tensorFromProto(p, path.parent_path(), fmt::format("tensor file '{}'", path.string()))};
}

void writeTensorProtoFile(const fs::path& path, const Tensor& t, const std::string& name) {
  writeFileAtomic(path, tensorToProto(t, name).SerializeAsString());
}

NamedTensor readTensorFile(const fs::path& path) {
  std::string ext = path.extension().string();
  if (ext == ".npy") return {"", readNpy(path)};
  if (ext == ".pb") return readTensorProtoFile(path);
  fail(ErrorKind::Usage, "tensor file '{}': unknown extension '{}' (use .npy or .pb)",
       path.string(), ext);
}

void writeTensorFile(const fs::path& path, const Tensor& t, const std::string& name) {
  std::string ext = path.extension().string();
  if (ext == ".npy") return writeNpy(path, t);
  if (ext == ".pb") return writeTensorProtoFile(path, t, name);
  fail(ErrorKind::Usage, "output file '{}': unknown extension '{}' (use .npy or .pb)",
       path.string(), ext);
}

} // namespace triad::frontend
