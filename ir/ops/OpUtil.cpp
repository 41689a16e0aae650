#include "ir/ops/OpUtil.h"

#include <cmath>

#include <fmt/ranges.h>

namespace triad::ir::ops {

Shape spatialOf(const Shape& s) {
  return s.size() < 3 ? Shape{} : Shape(s.begin() + 2, s.end());
}

int64_t multipliedDim(int64_t d, int64_t factor, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(d, factor, &r))
    fail(ErrorKind::Resource, "{}: dimension {} times {} is beyond any tensor", what, d, factor);
  return r;
}

int64_t scaledDim(int64_t d, double scale, std::string_view what) {
  if (!std::isfinite(scale) || scale <= 0)
    invalid("{} has the entry {}, which is not a positive finite number", what, scale);
  double r = std::floor(double(d) * scale);
  if (r >= 0x1p62)
    fail(ErrorKind::Resource, "{}: dimension {} scaled by {} is beyond any tensor", what, d, scale);
  return int64_t(r);
}

int64_t normalizeAxis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1) || (rank == 0 && axis != 0 && axis != -1))
    invalid("{} {} is out of range for rank {} (valid: {}..{})", what, axis, rank, -rank, rank - 1);
  return axis < 0 ? std::max<int64_t>(axis + rank, 0) : axis; // rank 0: axis -1 is axis 0
}

std::vector<int64_t> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                   std::string_view what) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = normalizeAxis(a, rank, what);
    if (std::find(out.begin(), out.end(), n) != out.end())
      invalid("{} [{}] name axis {} twice", what, fmt::join(axes, ","), n);
    out.push_back(n);
  }
  return out;
}

Shape broadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      invalid("shapes {} and {} cannot be broadcast together", shapeToString(a), shapeToString(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcastShapes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes)
    out = broadcastShapes(out, s);
  return out;
}

std::vector<int64_t> broadcastIndexMap(const Shape& inShape, const Shape& outShape) {
  TRIAD_ASSERT(inShape.size() <= outShape.size(), "broadcast rank");
  size_t off = outShape.size() - inShape.size();
  std::vector<int64_t> inStrides = stridesOf(inShape);
  // Effective stride per output dim: 0 where the input is broadcast.
  std::vector<int64_t> eff(outShape.size(), 0);
  for (size_t i = 0; i < inShape.size(); ++i)
    eff[i + off] = inShape[i] == 1 ? 0 : inStrides[i];
  int64_t n = numElements(outShape);
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(outShape.size(), 0);
  int64_t in = 0;
  for (int64_t o = 0; o < n; ++o) {
    map[size_t(o)] = in;
    for (int64_t d = int64_t(outShape.size()) - 1; d >= 0; --d) {
      size_t ud = size_t(d);
      ++idx[ud];
      in += eff[ud];
      if (idx[ud] < outShape[ud]) break;
      in -= eff[ud] * idx[ud];
      idx[ud] = 0;
    }
  }
  return map;
}

void requireFloat(const TensorType& t, std::string_view what) {
  if (!isFloat(t.dtype))
    unsupported("{} has element type {}; only f32, f16 and f64 are supported here", what,
                dtypeName(t.dtype));
}

void requireSameDType(const TensorType& a, const TensorType& b, std::string_view what) {
  if (a.dtype != b.dtype)
    invalid("{}: element types differ ({} vs {})", what, dtypeName(a.dtype), dtypeName(b.dtype));
}

void requireRank(const TensorType& t, int64_t rank, std::string_view what) {
  if (t.rank() != rank)
    invalid("{} must have rank {}, has shape {}", what, rank, shapeToString(t.shape));
}

void requireRankAtLeast(const TensorType& t, int64_t rank, std::string_view what) {
  if (t.rank() < rank)
    invalid("{} must have rank >= {}, has shape {}", what, rank, shapeToString(t.shape));
}

std::optional<std::vector<int64_t>> constInts(const ParseContext& ctx, size_t input) {
  const Tensor* t = ctx.constInput(input);
  if (!t) return std::nullopt;
  // Integer operands (shapes, axes, counts; Dropout's training_mode is bool) are integer tensors
  // in ONNX; a float one would be truncated, and one beyond int64 is undefined to convert.
  if (!isInteger(t->dtype()) && t->dtype() != DType::Bool)
    invalid("input {} must be an integer tensor (int64 or int32), is {}", input,
            typeToString(t->type()));
  return t->toInt64Vector();
}

std::optional<std::vector<double>> constDoubles(const ParseContext& ctx, size_t input) {
  const Tensor* t = ctx.constInput(input);
  if (!t) return std::nullopt;
  return t->toDoubleVector();
}

std::vector<int64_t> intsOr(const AttrReader& a, std::string_view name, std::vector<int64_t> dflt) {
  auto v = a.getInts(name);
  return v ? *v : std::move(dflt);
}

std::vector<float> floatsOr(const AttrReader& a, std::string_view name, std::vector<float> dflt) {
  auto v = a.getFloats(name);
  return v ? *v : std::move(dflt);
}

std::string enumAttr(const AttrReader& a, std::string_view name, std::string dflt,
                     std::initializer_list<std::string_view> allowed) {
  std::string v = a.getString(name).value_or(dflt);
  for (auto s : allowed)
    if (s == v) return v;
  unsupported("attribute '{}' has value \"{}\"; supported values: {}", name, v,
              fmt::join(allowed, ", "));
}

TensorType withShape(const TensorType& t, Shape s) {
  TensorType o = t;
  o.shape = std::move(s);
  return o;
}

const TensorType& inputType(const ParseContext& ctx, size_t i) {
  TRIAD_ASSERT(ctx.hasInput(i), "input {} missing", i);
  return *ctx.inputTypes[i];
}

int64_t readIndex(const Tensor& t, int64_t i, int64_t dim, std::string_view what) {
  int64_t v = t.dtype() == DType::I32 ? int64_t(t.data<int32_t>()[i]) : t.data<int64_t>()[i];
  int64_t r = v < 0 ? v + dim : v;
  if (r < 0 || r >= dim)
    fail(ErrorKind::Runtime, "{} value {} is out of range for a dimension of size {}", what, v,
         dim);
  return r;
}

std::vector<TensorType> sameAsInput(const InferContext& ctx, size_t i) {
  return {ctx.in(i)};
}

void forEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& f) {
  int64_t n = numElements(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    f(idx, lin);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

bool dtypeIn(DType t, std::initializer_list<DType> allowed) {
  return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
}

} // namespace triad::ir::ops
