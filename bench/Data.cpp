#include "bench/Data.h"

#include <algorithm>
#include <cstring>

namespace triad::bench {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

size_t rowBytes(const ir::Tensor& t) {
  int64_t rows = rowCount(t);
  return rows > 0 ? t.byteSize() / size_t(rows) : 0;
}

} // namespace

int64_t rowCount(const ir::Tensor& t) {
  return t.rank() == 0 ? 1 : t.shape()[0];
}

ir::TensorType withRows(ir::TensorType type, int64_t rows) {
  if (!type.shape.empty()) type.shape[0] = rows;
  return type;
}

ir::Tensor takeRows(const ir::Tensor& data, int64_t start, int64_t batch, bool pad) {
  ir::Tensor out(withRows(data.type(), batch));
  int64_t n = rowCount(data);
  size_t rb = rowBytes(data);
  TRIAD_ASSERT(n > 0, "no rows");
  for (int64_t r = 0; r < batch; ++r) {
    int64_t src = pad ? std::min(start + r, n - 1) : (start + r) % n;
    std::memcpy(out.raw() + size_t(r) * rb, data.raw() + size_t(src) * rb, rb);
  }
  return out;
}

ir::Tensor randomRows(const ir::TensorType& type, int64_t start, int64_t rows, uint64_t seed,
                      int input) {
  ir::Tensor t(withRows(type, rows));
  int64_t per = rows > 0 ? t.numElements() / rows : 0;
  for (int64_t r = 0; r < rows; ++r) {
    uint64_t s = splitmix(seed ^ splitmix(uint64_t(input) << 40 ^ uint64_t(start + r)));
    for (int64_t k = 0; k < per; ++k) {
      s = splitmix(s);
      double u = double(s >> 11) * 0x1.0p-53;
      bool isFloat =
          t.dtype() == ir::DType::F32 || t.dtype() == ir::DType::F64 || t.dtype() == ir::DType::F16;
      t.setDouble(r * per + k, isFloat ? u : double(s & 1));
    }
  }
  return t;
}

void putRows(ir::Tensor& acc, int64_t total, int64_t at, const ir::Tensor& part, int64_t rows) {
  if (acc.type().shape.empty() && acc.byteSize() == 0)
    acc = ir::Tensor(withRows(part.type(), total));
  size_t rb = rowBytes(part);
  TRIAD_ASSERT(at + rows <= rowCount(acc), "rows out of range");
  std::memcpy(acc.raw() + size_t(at) * rb, part.raw(), size_t(rows) * rb);
}

} // namespace triad::bench
