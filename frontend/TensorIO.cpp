#include "frontend/TensorIO.h"
#include "frontend/OnnxTensor.h"
#include "ir/Files.h"

#include <fmt/ranges.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace triad::frontend {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

std::string readFile(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorKind::Io, "file '{}' does not exist", path.string());
  if (fs::is_directory(path, ec))
    fail(ErrorKind::Io, "'{}' is a directory, not a file", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, "cannot open '{}' for reading", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(ErrorKind::Io, "reading '{}' failed", path.string());
  return ss.str();
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
  if (headerStart + headerLen > data.size()) return bad("truncated header");
  std::string header = data.substr(headerStart, headerLen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([<>|=])([a-z]\d+)')")))
    return bad("no 'descr' in header");
  if (m[1] == ">") return bad("big-endian data is not supported");
  std::string descr = m[2];
  std::optional<DType> dtype;
  for (const auto& c : kNpyCodes)
    if (c.descr == descr) dtype = c.type;
  if (!dtype) return bad(fmt::format("element type '{}' is not supported", descr));
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)")))
    return bad("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    return bad("no 'shape' in header");
  ir::Shape shape;
  std::string dims = m[1];
  std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator();
       ++it)
    shape.push_back(std::stoll(it->str()));
  Tensor t(*dtype, shape);
  size_t offset = headerStart + headerLen;
  if (data.size() - offset != t.byteSize())
    return bad(fmt::format("{} data bytes for {}, {} expected", data.size() - offset,
                           ir::typeToString(t.type()), t.byteSize()));
  if (t.byteSize()) std::memcpy(t.raw(), data.data() + offset, t.byteSize());
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
