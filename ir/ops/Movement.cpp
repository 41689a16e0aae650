// Movement ops: shape manipulation and data movement (see ir/Ops.def for the list).
//
// This file holds the shape-only ops (Reshape, Transpose, Slice, ...) and constants; indexing
// ops live in MovementIndex.cpp, Resize/Upsample in Resize.cpp. Data movement is done on raw
// bytes through an index map (output element -> input element), so every dtype works.
#include "ir/ops/Movement.h"
#include "ir/ops/OpUtil.h"

#include <cstring>
#include <limits>
#include <numeric>

namespace triad::ir {
using namespace ops;

namespace ops {

void gatherElements(const Tensor& src, Tensor& dst, const std::vector<int64_t>& map,
                    const Tensor* fill) {
  TRIAD_ASSERT(int64_t(map.size()) == dst.numElements(), "index map size");
  size_t es = dtypeSize(dst.dtype());
  TRIAD_ASSERT(es == dtypeSize(src.dtype()), "element size mismatch");
  const uint8_t* s = src.raw();
  uint8_t* d = dst.raw();
  const uint8_t* f = fill ? fill->raw() : nullptr;
  auto copy = [&](auto tag) {
    using U = decltype(tag);
    U fv{};
    if (f) std::memcpy(&fv, f, sizeof(U));
    for (size_t i = 0; i < map.size(); ++i) {
      U v;
      if (map[i] < 0) {
        TRIAD_ASSERT(f, "index map needs a fill value");
        v = fv;
      } else {
        std::memcpy(&v, s + size_t(map[i]) * sizeof(U), sizeof(U));
      }
      std::memcpy(d + i * sizeof(U), &v, sizeof(U));
    }
  };
  switch (es) {
  case 1:
    copy(uint8_t{});
    break;
  case 2:
    copy(uint16_t{});
    break;
  case 4:
    copy(uint32_t{});
    break;
  case 8:
    copy(uint64_t{});
    break;
  default:
    TRIAD_ASSERT(false, "element size {}", es);
  }
}

} // namespace ops

namespace {

// Same bytes, new shape: Identity, Reshape, Flatten, Squeeze, Unsqueeze.
void evalCopy(const EvalContext& ctx) {
  Tensor& out = ctx.out(0);
  TRIAD_ASSERT(out.byteSize() == ctx.in(0).byteSize(), "copy size mismatch");
  if (out.byteSize()) std::memcpy(out.raw(), ctx.in(0).raw(), out.byteSize());
}

std::vector<int64_t> requireConstInts(const ParseContext& ctx, size_t i, std::string_view what) {
  auto v = constInts(ctx, i);
  if (!v) invalid("input '{}' must be given", what);
  return *v;
}

// ---- Identity, Dropout ----------------------------------------------------------------------

// Dropout in inference: output = input, mask all true. Training mode (a constant true
// training_mode input) is only supported with ratio 0, where it is the same.
std::shared_ptr<const Attrs> parseDropout(const ParseContext& ctx) {
  (void)ctx.attrs.getInt("seed"); // only matters in training mode
  std::optional<double> ratio;
  if (ctx.opset < 12) {
    if (auto r = ctx.attrs.getFloat("ratio")) ratio = *r;
  } else if (auto r = constDoubles(ctx, 1); r && !r->empty()) {
    ratio = (*r)[0];
  }
  if (ratio && (*ratio < 0 || *ratio >= 1)) invalid("ratio {} is outside [0, 1)", *ratio);
  if (auto t = constInts(ctx, 2); t && !t->empty() && (*t)[0] != 0) {
    if (ratio.value_or(0.5) != 0.0)
      unsupported("input 'training_mode' is true with ratio {}: random dropout is not supported",
                  ratio.value_or(0.5));
  }
  return std::make_shared<NoAttrs>();
}

std::vector<TensorType> inferDropout(const InferContext& ctx) {
  return {ctx.in(0), TensorType{DType::Bool, ctx.in(0).shape, {}}};
}

void evalDropout(const EvalContext& ctx) {
  evalCopy(ctx);
  if (ctx.outputs.size() > 1)
    for (bool& b : ctx.out(1).values<bool>())
      b = true;
}

// ---- Constant, ConstantOfShape, Range, Shape, Size ------------------------------------------

std::shared_ptr<const Attrs> parseConstant(const ParseContext& ctx) {
  auto a = std::make_shared<ConstantAttrs>();
  if (ctx.attrs.has("sparse_value"))
    unsupported("attribute 'sparse_value' (sparse tensors) is not supported");
  if (ctx.attrs.has("value_string") || ctx.attrs.has("value_strings"))
    unsupported("attribute 'value_string(s)' (string tensors) is not supported");
  if (auto t = ctx.attrs.getTensor("value"))
    a->value = *t;
  else if (auto f = ctx.attrs.getFloat("value_float"))
    a->value = Tensor::scalar<float>(*f);
  else if (auto fs = ctx.attrs.getFloats("value_floats"))
    a->value = Tensor::fromVector<float>({int64_t(fs->size())}, *fs);
  else if (auto i = ctx.attrs.getInt("value_int"))
    a->value = Tensor::scalar<int64_t>(*i);
  else if (auto is = ctx.attrs.getInts("value_ints"))
    a->value = Tensor::fromVector<int64_t>({int64_t(is->size())}, *is);
  else
    invalid("Constant needs one of the attributes 'value', 'value_float(s)', 'value_int(s)'");
  return a;
}

std::vector<TensorType> inferConstant(const InferContext& ctx) {
  return {ctx.as<ConstantAttrs>().value.type()};
}

void evalConstant(const EvalContext& ctx) {
  ctx.out(0) = ctx.as<ConstantAttrs>().value;
}

std::shared_ptr<const Attrs> parseConstantOfShape(const ParseContext& ctx) {
  auto a = std::make_shared<ConstantAttrs>();
  a->value = Tensor::scalar<float>(0.0f);
  if (auto t = ctx.attrs.getTensor("value")) {
    if (t->numElements() != 1)
      invalid("attribute 'value' must hold one element, has shape {}", shapeToString(t->shape()));
    a->value = t->reshaped({});
  }
  a->shape = requireConstInts(ctx, 0, "input");
  for (int64_t d : a->shape)
    if (d < 0) invalid("input 'input' holds a negative dimension {}", d);
  return a;
}

std::vector<TensorType> inferConstantOfShape(const InferContext& ctx) {
  const auto& a = ctx.as<ConstantAttrs>();
  return {TensorType{a.value.dtype(), a.shape, a.value.type().fixed}};
}

void evalConstantOfShape(const EvalContext& ctx) {
  const Tensor& v = ctx.as<ConstantAttrs>().value;
  Tensor& out = ctx.out(0);
  size_t es = dtypeSize(out.dtype());
  for (int64_t i = 0; i < out.numElements(); ++i)
    std::memcpy(out.raw() + size_t(i) * es, v.raw(), es);
}

// Range(start, limit, delta): all three are shape operands, so the node has no IR inputs.
std::shared_ptr<const Attrs> parseRange(const ParseContext& ctx) {
  auto a = std::make_shared<RangeAttrs>();
  for (size_t i = 0; i < 3; ++i) {
    const Tensor* t = ctx.constInput(i);
    if (!t) invalid("Range needs inputs 'start', 'limit' and 'delta'");
    if (t->numElements() != 1) invalid("Range input {} must be a scalar", i);
  }
  DType dt = ctx.constInput(0)->dtype();
  if (!isFloat(dt) && !dtypeIn(dt, {DType::I16, DType::I32, DType::I64}))
    unsupported("Range on {} is not supported", dtypeName(dt));
  for (size_t i = 1; i < 3; ++i)
    if (ctx.constInput(i)->dtype() != dt) invalid("Range inputs must share one element type");
  // 'stash_type' (opset 27): the type of f16/bf16 intermediates, float by default; Triad
  // computes them in float (wider types are unaffected).
  if (std::optional<int64_t> stash =
          ctx.opset >= 27 ? ctx.attrs.getInt("stash_type") : std::nullopt;
      stash && *stash != 1 && dt == DType::F16)
    unsupported("attribute 'stash_type' = {} on f16 inputs: Triad keeps intermediates in float",
                *stash);
  double start = ctx.constInput(0)->getDouble(0), limit = ctx.constInput(1)->getDouble(0);
  double delta = ctx.constInput(2)->getDouble(0);
  if (delta == 0) invalid("input 'delta' is zero");
  // The count is checked before it is converted or used: NaN, infinite or beyond int64 (a
  // float cast that is undefined behaviour, an integer span that overflows) is refused.
  if (isFloat(dt)) {
    double n = std::ceil((limit - start) / delta);
    if (!(n < double(int64_t(1) << 62)))
      invalid("Range from {} to {} by {} has {} elements, too many to count", start, limit, delta,
              n);
    a->count = n > 0 ? int64_t(n) : 0;
  } else {
    int64_t s = ctx.constInput(0)->getInt(0), l = ctx.constInput(1)->getInt(0);
    int64_t d = ctx.constInput(2)->getInt(0);
    int64_t span = 0;
    if (__builtin_sub_overflow(l, s, &span) || span == std::numeric_limits<int64_t>::min())
      invalid("Range from {} to {} spans more than int64 can count", s, l);
    // ceil((l - s) / d) in integers.
    int64_t n = span / d + ((span % d != 0) && ((span > 0) == (d > 0)) ? 1 : 0);
    a->count = std::max<int64_t>(n, 0);
  }
  a->start = ctx.constInput(0)->reshaped({});
  a->delta = ctx.constInput(2)->reshaped({});
  return a;
}

std::vector<TensorType> inferRange(const InferContext& ctx) {
  const auto& a = ctx.as<RangeAttrs>();
  return {TensorType{a.start.dtype(), {a.count}, {}}};
}

void evalRange(const EvalContext& ctx) {
  const auto& a = ctx.as<RangeAttrs>();
  Tensor& out = ctx.out(0);
  visitDType(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      TRIAD_ASSERT(false, "Range on bool");
    } else if constexpr (std::is_same_v<T, Half>) {
      float s = a.start.data<Half>()[0], d = a.delta.data<Half>()[0];
      for (int64_t i = 0; i < a.count; ++i)
        out.data<Half>()[i] = Half(s + float(i) * d);
    } else {
      T s = a.start.data<T>()[0], d = a.delta.data<T>()[0];
      for (int64_t i = 0; i < a.count; ++i)
        out.data<T>()[i] = T(s + T(i) * d);
    }
  });
}

std::shared_ptr<const Attrs> parseShape(const ParseContext& ctx) {
  auto a = std::make_shared<ShapeAttrs>();
  int64_t r = inputType(ctx, 0).rank();
  auto clampDim = [&](int64_t v) {
    if (v < 0) v += r;
    return std::clamp<int64_t>(v, 0, r);
  };
  a->start = clampDim(ctx.attrs.getInt("start", 0));
  a->end = std::max(a->start, clampDim(ctx.attrs.getInt("end", r)));
  return a;
}

std::vector<TensorType> inferShape(const InferContext& ctx) {
  const auto& a = ctx.as<ShapeAttrs>();
  return {TensorType{DType::I64, {a.end - a.start}, {}}};
}

void evalShape(const EvalContext& ctx) {
  const auto& a = ctx.as<ShapeAttrs>();
  for (int64_t i = a.start; i < a.end; ++i)
    ctx.out(0).data<int64_t>()[i - a.start] = ctx.in(0).shape()[size_t(i)];
}

std::vector<TensorType> inferSize(const InferContext&) {
  return {TensorType{DType::I64, {}, {}}};
}

void evalSize(const EvalContext& ctx) {
  ctx.out(0).data<int64_t>()[0] = ctx.in(0).numElements();
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze -----------------------------------------------------

std::shared_ptr<const Attrs> parseReshape(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  std::vector<int64_t> want = requireConstInts(ctx, 1, "shape");
  bool allowZero = ctx.attrs.getInt("allowzero", 0) != 0;
  auto a = std::make_shared<ReshapeAttrs>();
  int64_t inferAt = -1, known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == -1) {
      if (inferAt >= 0) invalid("input 'shape' {} has more than one -1", fmt::join(want, ","));
      inferAt = int64_t(i);
    } else if (d == 0 && !allowZero) {
      if (i >= in.size())
        invalid("input 'shape' [{}] copies dimension {} (0) but the input has rank {}",
                fmt::join(want, ","), i, in.size());
      d = in[i];
    } else if (d < 0) {
      invalid("input 'shape' [{}] has invalid dimension {}", fmt::join(want, ","), d);
    }
    a->shape.push_back(d);
    if (d > 0 && known > std::numeric_limits<int64_t>::max() / d)
      invalid("input 'shape' [{}] has more elements than an int64 can count", fmt::join(want, ","));
    if (d != -1) known *= d;
  }
  int64_t n = numElements(in);
  if (inferAt >= 0) {
    if (known == 0 || n % known != 0)
      invalid("cannot reshape {} to [{}]", shapeToString(in), fmt::join(want, ","));
    a->shape[size_t(inferAt)] = n / known;
  } else if (known != n) {
    invalid("cannot reshape {} ({} elements) to [{}]", shapeToString(in), n, fmt::join(want, ","));
  }
  return a;
}

std::vector<TensorType> inferReshape(const InferContext& ctx) {
  const auto& a = ctx.as<ReshapeAttrs>();
  if (numElements(a.shape) != ctx.in(0).numElements())
    invalid("cannot reshape {} to {}", shapeToString(ctx.in(0).shape), shapeToString(a.shape));
  return {withShape(ctx.in(0), a.shape)};
}

std::shared_ptr<const Attrs> parseFlatten(const ParseContext& ctx) {
  auto a = std::make_shared<FlattenAttrs>();
  int64_t r = inputType(ctx, 0).rank();
  int64_t axis = ctx.attrs.getInt("axis", 1);
  if (axis < -r || axis > r)
    invalid("attribute 'axis' {} is out of range for rank {} (valid: {}..{})", axis, r, -r, r);
  a->axis = axis < 0 ? axis + r : axis;
  return a;
}

std::vector<TensorType> inferFlatten(const InferContext& ctx) {
  const Shape& s = ctx.in(0).shape;
  int64_t axis = ctx.as<FlattenAttrs>().axis;
  if (axis > int64_t(s.size())) invalid("attribute 'axis' {} exceeds rank {}", axis, s.size());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < s.size(); ++i)
    (int64_t(i) < axis ? outer : inner) *= s[i];
  return {withShape(ctx.in(0), {outer, inner})};
}

std::vector<int64_t> axesOperand(const ParseContext& ctx, int sinceInput, size_t input,
                                 bool& present) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset >= sinceInput)
    axes = constInts(ctx, input);
  else
    axes = ctx.attrs.getInts("axes");
  present = axes.has_value();
  return axes.value_or(std::vector<int64_t>{});
}

std::shared_ptr<const Attrs> parseSqueeze(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  bool present = false;
  std::vector<int64_t> axes = axesOperand(ctx, 13, 1, present);
  auto a = std::make_shared<AxesAttrs>();
  if (!present) {
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == 1) a->axes.push_back(int64_t(i));
  } else {
    a->axes = normalizeAxes(axes, int64_t(in.size()), "axes");
    std::sort(a->axes.begin(), a->axes.end());
  }
  return a;
}

std::vector<TensorType> inferSqueeze(const InferContext& ctx) {
  const auto& a = ctx.as<AxesAttrs>();
  const Shape& in = ctx.in(0).shape;
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool squeezed = std::find(a.axes.begin(), a.axes.end(), int64_t(i)) != a.axes.end();
    if (squeezed && in[i] != 1)
      invalid("cannot squeeze axis {} of {}: its size is not 1", i, shapeToString(in));
    if (!squeezed) out.push_back(in[i]);
  }
  return {withShape(ctx.in(0), out)};
}

std::shared_ptr<const Attrs> parseUnsqueeze(const ParseContext& ctx) {
  bool present = false;
  std::vector<int64_t> axes = axesOperand(ctx, 13, 1, present);
  if (!present) invalid("Unsqueeze needs 'axes'");
  int64_t outRank = inputType(ctx, 0).rank() + int64_t(axes.size());
  auto a = std::make_shared<AxesAttrs>();
  a->axes = normalizeAxes(axes, outRank, "axes");
  std::sort(a->axes.begin(), a->axes.end());
  return a;
}

std::vector<TensorType> inferUnsqueeze(const InferContext& ctx) {
  const auto& a = ctx.as<AxesAttrs>();
  const Shape& in = ctx.in(0).shape;
  size_t outRank = in.size() + a.axes.size();
  Shape out;
  size_t j = 0;
  for (size_t i = 0; i < outRank; ++i) {
    if (std::find(a.axes.begin(), a.axes.end(), int64_t(i)) != a.axes.end())
      out.push_back(1);
    else {
      if (j >= in.size()) invalid("axes out of range for output rank {}", outRank);
      out.push_back(in[j++]);
    }
  }
  return {withShape(ctx.in(0), out)};
}

// ---- Transpose ---------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseTranspose(const ParseContext& ctx) {
  int64_t r = inputType(ctx, 0).rank();
  auto a = std::make_shared<TransposeAttrs>();
  if (auto p = ctx.attrs.getInts("perm")) {
    if (int64_t(p->size()) != r)
      invalid("attribute 'perm' [{}] has {} entries, the input has rank {}", fmt::join(*p, ","),
              p->size(), r);
    a->perm = normalizeAxes(*p, r, "perm");
  } else {
    for (int64_t i = r - 1; i >= 0; --i)
      a->perm.push_back(i);
  }
  return a;
}

std::vector<TensorType> inferTranspose(const InferContext& ctx) {
  const auto& a = ctx.as<TransposeAttrs>();
  const Shape& in = ctx.in(0).shape;
  if (a.perm.size() != in.size())
    invalid("perm has {} entries, the input has rank {}", a.perm.size(), in.size());
  Shape out;
  for (int64_t p : a.perm)
    out.push_back(in[size_t(p)]);
  return {withShape(ctx.in(0), out)};
}

// Index map of a strided view: output multi-index i reads input offset
// base + sum(i[d] * stride[d]). Used by Transpose and Slice.
std::vector<int64_t> stridedMap(const Shape& out, int64_t base, const std::vector<int64_t>& st) {
  int64_t n = numElements(out);
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(out.size(), 0);
  int64_t off = base;
  for (int64_t o = 0; o < n; ++o) {
    map[size_t(o)] = off;
    for (int64_t d = int64_t(out.size()) - 1; d >= 0; --d) {
      size_t ud = size_t(d);
      ++idx[ud];
      off += st[ud];
      if (idx[ud] < out[ud]) break;
      off -= st[ud] * idx[ud];
      idx[ud] = 0;
    }
  }
  return map;
}

void evalTranspose(const EvalContext& ctx) {
  const auto& a = ctx.as<TransposeAttrs>();
  std::vector<int64_t> inStrides = stridesOf(ctx.in(0).shape());
  std::vector<int64_t> st;
  for (int64_t p : a.perm)
    st.push_back(inStrides[size_t(p)]);
  gatherElements(ctx.in(0), ctx.out(0), stridedMap(ctx.out(0).shape(), 0, st));
}

// ---- Concat, Split -----------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseConcat(const ParseContext& ctx) {
  auto axis = ctx.attrs.getInt("axis");
  if (!axis) invalid("attribute 'axis' is required");
  auto a = std::make_shared<AxisAttrs>();
  a->axis = normalizeAxis(*axis, inputType(ctx, 0).rank(), "attribute 'axis'");
  return a;
}

std::vector<TensorType> inferConcat(const InferContext& ctx) {
  int64_t axis = ctx.as<AxisAttrs>().axis;
  const TensorType& first = ctx.in(0);
  if (axis >= first.rank()) invalid("axis {} is out of range for rank {}", axis, first.rank());
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorType& t = ctx.in(i);
    requireSameDType(first, t, "Concat inputs");
    if (t.rank() != first.rank())
      invalid("input {} has shape {}, input 0 has {}: ranks differ", i, shapeToString(t.shape),
              shapeToString(first.shape));
    for (size_t d = 0; d < out.size(); ++d)
      if (int64_t(d) != axis && t.shape[d] != first.shape[d])
        invalid("input {} has shape {}, input 0 has {}: they differ outside axis {}", i,
                shapeToString(t.shape), shapeToString(first.shape), axis);
    out[size_t(axis)] += t.shape[size_t(axis)];
  }
  return {withShape(first, out)};
}

// Splits the tensor into [outer, axisDim * inner] blocks; Concat and Split copy the pieces.
int64_t outerOf(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = 0; d < axis; ++d)
    n *= s[size_t(d)];
  return n;
}
int64_t innerOf(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d)
    n *= s[d];
  return n;
}

void evalConcat(const EvalContext& ctx) {
  int64_t axis = ctx.as<AxisAttrs>().axis;
  Tensor& out = ctx.out(0);
  size_t es = dtypeSize(out.dtype());
  int64_t outer = outerOf(out.shape(), axis);
  size_t outRow = size_t(out.shape()[size_t(axis)] * innerOf(out.shape(), axis)) * es;
  size_t col = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& in = ctx.in(i);
    size_t row = size_t(in.shape()[size_t(axis)] * innerOf(in.shape(), axis)) * es;
    for (int64_t o = 0; o < outer; ++o)
      if (row) std::memcpy(out.raw() + size_t(o) * outRow + col, in.raw() + size_t(o) * row, row);
    col += row;
  }
}

std::shared_ptr<const Attrs> parseSplit(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  if (in.empty()) invalid("input 'input' must have rank >= 1, is a scalar");
  auto a = std::make_shared<SplitAttrs>();
  a->axis = normalizeAxis(ctx.attrs.getInt("axis", 0), int64_t(in.size()), "attribute 'axis'");
  int64_t dim = in[size_t(a->axis)];
  std::optional<std::vector<int64_t>> split;
  if (ctx.opset >= 13)
    split = constInts(ctx, 1);
  else
    split = ctx.attrs.getInts("split");
  auto numOutputs = ctx.attrs.getInt("num_outputs");
  if (split && numOutputs) invalid("'split' and attribute 'num_outputs' are both given");
  if (split) {
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) invalid("'split' [{}] has a negative size", fmt::join(*split, ","));
      if (s > dim - sum) // (checked before adding: a sum beyond the axis could overflow)
        invalid("'split' [{}] sums to more than axis {} of size {}", fmt::join(*split, ","),
                a->axis, dim);
      sum += s;
    }
    if (sum != dim)
      invalid("'split' [{}] sums to {}, axis {} has size {}", fmt::join(*split, ","), sum, a->axis,
              dim);
    a->split = *split;
    return a;
  }
  int64_t n = 0;
  if (numOutputs) {
    n = *numOutputs;
    // The parts are the node's outputs: a count that differs (a huge one allocated as many
    // sizes) is refused.
    if (n < 1 || n != ctx.numOutputs)
      invalid("attribute 'num_outputs' is {}, the node has {} outputs", n, ctx.numOutputs);
    // Opset 18: chunks of ceil(dim / n), the last one smaller.
    int64_t chunk = dim / n + (dim % n != 0);
    for (int64_t i = 0; i < n; ++i)
      a->split.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
    return a;
  }
  n = ctx.numOutputs; // Split into as many equal parts as the node declares outputs
  if (n < 1 || dim % n != 0)
    invalid("axis {} of size {} does not split into {} equal parts", a->axis, dim, n);
  a->split.assign(size_t(n), dim / n);
  return a;
}

std::vector<TensorType> inferSplit(const InferContext& ctx) {
  const auto& a = ctx.as<SplitAttrs>();
  const TensorType& in = ctx.in(0);
  if (a.axis >= in.rank()) invalid("axis {} is out of range for rank {}", a.axis, in.rank());
  int64_t sum = std::accumulate(a.split.begin(), a.split.end(), int64_t(0));
  if (sum != in.shape[size_t(a.axis)])
    invalid("split sizes sum to {}, axis {} has size {}", sum, a.axis, in.shape[size_t(a.axis)]);
  std::vector<TensorType> outs;
  for (int64_t s : a.split) {
    Shape sh = in.shape;
    sh[size_t(a.axis)] = s;
    outs.push_back(withShape(in, sh));
  }
  return outs;
}

void evalSplit(const EvalContext& ctx) {
  const auto& a = ctx.as<SplitAttrs>();
  const Tensor& in = ctx.in(0);
  size_t es = dtypeSize(in.dtype());
  int64_t outer = outerOf(in.shape(), a.axis), inner = innerOf(in.shape(), a.axis);
  size_t inRow = size_t(in.shape()[size_t(a.axis)] * inner) * es;
  size_t col = 0;
  for (size_t i = 0; i < a.split.size(); ++i) {
    size_t row = size_t(a.split[i] * inner) * es;
    if (i < ctx.outputs.size())
      for (int64_t o = 0; o < outer; ++o)
        if (row)
          std::memcpy(ctx.out(i).raw() + size_t(o) * row, in.raw() + size_t(o) * inRow + col, row);
    col += row;
  }
}

// ---- Slice -------------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseSlice(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  int64_t r = int64_t(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    auto s = ctx.attrs.getInts("starts"), e = ctx.attrs.getInts("ends");
    if (!s || !e) invalid("attributes 'starts' and 'ends' are required");
    starts = *s;
    ends = *e;
    axes = intsOr(ctx.attrs, "axes", {});
  } else {
    starts = requireConstInts(ctx, 1, "starts");
    ends = requireConstInts(ctx, 2, "ends");
    axes = constInts(ctx, 3).value_or(std::vector<int64_t>{});
    steps = constInts(ctx, 4).value_or(std::vector<int64_t>{});
  }
  if (ends.size() != starts.size())
    invalid("'starts' has {} entries, 'ends' {}", starts.size(), ends.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    invalid("'starts', 'ends', 'axes' and 'steps' must have the same length");
  if (r == 0 && !starts.empty()) invalid("a scalar (rank 0) has no axis to slice");
  axes = normalizeAxes(axes, r, "axes");
  auto a = std::make_shared<SliceAttrs>();
  a->starts.assign(size_t(r), 0);
  a->steps.assign(size_t(r), 1);
  a->outShape = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t d = size_t(axes[i]);
    int64_t dim = in[d], step = steps[i];
    if (step == 0) invalid("'steps' has a zero entry for axis {}", d);
    int64_t s = starts[i], e = ends[i];
    a->steps[d] = step;
    if (dim == 0) {
      a->outShape[d] = 0;
      continue;
    }
    // Clamp like ONNX: negative indices count from the end, INT64 sentinels and out-of-range
    // indices saturate (ends down to -1 when stepping backwards).
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    // Elements in the half-open span, counted without overflow for any step (INT64_MIN too).
    int64_t span = step > 0 ? e - s : s - e;
    uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(-(step + 1)) + 1;
    int64_t n = span <= 0 ? 0 : int64_t((uint64_t(span) - 1) / stride + 1);
    a->starts[d] = std::max<int64_t>(s, 0);
    a->steps[d] = step;
    a->outShape[d] = std::max<int64_t>(n, 0);
  }
  return a;
}

std::vector<TensorType> inferSlice(const InferContext& ctx) {
  const auto& a = ctx.as<SliceAttrs>();
  if (a.outShape.size() != ctx.in(0).shape.size())
    invalid("slice of rank {} applied to {}", a.outShape.size(), shapeToString(ctx.in(0).shape));
  return {withShape(ctx.in(0), a.outShape)};
}

void evalSlice(const EvalContext& ctx) {
  const auto& a = ctx.as<SliceAttrs>();
  std::vector<int64_t> inStrides = stridesOf(ctx.in(0).shape());
  int64_t base = 0;
  std::vector<int64_t> st(inStrides.size());
  for (size_t d = 0; d < inStrides.size(); ++d) {
    base += a.starts[d] * inStrides[d];
    st[d] = a.steps[d] * inStrides[d];
  }
  gatherElements(ctx.in(0), ctx.out(0), stridedMap(ctx.out(0).shape(), base, st));
}

// ---- Expand, Tile ------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseExpand(const ParseContext& ctx) {
  auto a = std::make_shared<OutShapeAttrs>();
  std::vector<int64_t> shape = requireConstInts(ctx, 1, "shape");
  for (int64_t d : shape)
    if (d < 0) invalid("input 'shape' [{}] has a negative dimension", fmt::join(shape, ","));
  a->outShape = broadcastShapes(inputType(ctx, 0).shape, shape);
  return a;
}

std::vector<TensorType> inferExpand(const InferContext& ctx) {
  const auto& a = ctx.as<OutShapeAttrs>();
  if (broadcastShapes(ctx.in(0).shape, a.outShape) != a.outShape)
    invalid("{} does not broadcast to {}", shapeToString(ctx.in(0).shape),
            shapeToString(a.outShape));
  return {withShape(ctx.in(0), a.outShape)};
}

void evalExpand(const EvalContext& ctx) {
  gatherElements(ctx.in(0), ctx.out(0), broadcastIndexMap(ctx.in(0).shape(), ctx.out(0).shape()));
}

std::shared_ptr<const Attrs> parseTile(const ParseContext& ctx) {
  const Shape& in = inputType(ctx, 0).shape;
  std::vector<int64_t> reps = requireConstInts(ctx, 1, "repeats");
  if (reps.size() != in.size())
    invalid("input 'repeats' has {} entries, the input has rank {}", reps.size(), in.size());
  auto a = std::make_shared<OutShapeAttrs>();
  for (size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0) invalid("input 'repeats' [{}] has a negative entry", fmt::join(reps, ","));
    a->outShape.push_back(multipliedDim(in[i], reps[i], "input 'repeats'"));
  }
  return a;
}

std::vector<TensorType> inferTile(const InferContext& ctx) {
  const auto& a = ctx.as<OutShapeAttrs>();
  const Shape& in = ctx.in(0).shape;
  if (a.outShape.size() != in.size()) invalid("tile rank differs from input {}", shapeToString(in));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] == 0 ? a.outShape[i] != 0 : a.outShape[i] % in[i] != 0)
      invalid("output {} is not a tiling of {}", shapeToString(a.outShape), shapeToString(in));
  return {withShape(ctx.in(0), a.outShape)};
}

void evalTile(const EvalContext& ctx) {
  const Shape& in = ctx.in(0).shape();
  const Shape& out = ctx.out(0).shape();
  std::vector<int64_t> inStrides = stridesOf(in);
  std::vector<int64_t> map(size_t(numElements(out)));
  forEachIndex(out, [&](const std::vector<int64_t>& idx, int64_t lin) {
    int64_t off = 0;
    for (size_t d = 0; d < in.size(); ++d)
      off += (idx[d] % in[d]) * inStrides[d];
    map[size_t(lin)] = off;
  });
  gatherElements(ctx.in(0), ctx.out(0), map);
}

} // namespace

void registerMovementOps(OpTable& table) {
  table.add({.kind = OpKind::Identity,
             .infer = [](const InferContext& c) { return sameAsInput(c); },
             .eval = evalCopy});
  table.add({.kind = OpKind::Dropout,
             .maxInputs = 3,
             .maxOutputs = 2,
             .shapeOperands = {1, 2},
             .sinceOpset = 7,
             .parse = parseDropout,
             .infer = inferDropout,
             .eval = evalDropout});
  table.add({.kind = OpKind::Constant,
             .minInputs = 0,
             .maxInputs = 0,
             .parse = parseConstant,
             .infer = inferConstant,
             .eval = evalConstant});
  table.add({.kind = OpKind::ConstantOfShape,
             .shapeOperands = {0},
             .sinceOpset = 9,
             .parse = parseConstantOfShape,
             .infer = inferConstantOfShape,
             .eval = evalConstantOfShape});
  table.add({.kind = OpKind::Range,
             .minInputs = 3,
             .maxInputs = 3,
             .shapeOperands = {0, 1, 2},
             .sinceOpset = 11,
             .parse = parseRange,
             .infer = inferRange,
             .eval = evalRange});
  table.add({.kind = OpKind::Shape,
             .valueIndependent = true,
             .parse = parseShape,
             .infer = inferShape,
             .eval = evalShape});
  table.add({.kind = OpKind::Size, .valueIndependent = true, .infer = inferSize, .eval = evalSize});
  table.add({.kind = OpKind::Reshape,
             .minInputs = 2,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 5,
             .parse = parseReshape,
             .infer = inferReshape,
             .eval = evalCopy});
  table.add(
      {.kind = OpKind::Flatten, .parse = parseFlatten, .infer = inferFlatten, .eval = evalCopy});
  table.add({.kind = OpKind::Squeeze,
             .maxInputs = 2,
             .shapeOperands = {1},
             .parse = parseSqueeze,
             .infer = inferSqueeze,
             .eval = evalCopy});
  table.add({.kind = OpKind::Unsqueeze,
             .maxInputs = 2,
             .shapeOperands = {1},
             .parse = parseUnsqueeze,
             .infer = inferUnsqueeze,
             .eval = evalCopy});
  table.add({.kind = OpKind::Transpose,
             .parse = parseTranspose,
             .infer = inferTranspose,
             .eval = evalTranspose});
  table.add({.kind = OpKind::Concat,
             .maxInputs = -1,
             .sinceOpset = 4,
             .parse = parseConcat,
             .infer = inferConcat,
             .eval = evalConcat});
  table.add({.kind = OpKind::Split,
             .maxInputs = 2,
             .maxOutputs = -1,
             .shapeOperands = {1},
             .sinceOpset = 2,
             .parse = parseSplit,
             .infer = inferSplit,
             .eval = evalSplit});
  table.add({.kind = OpKind::Slice,
             .maxInputs = 5,
             .shapeOperands = {1, 2, 3, 4},
             .parse = parseSlice,
             .infer = inferSlice,
             .eval = evalSlice});
  table.add({.kind = OpKind::Expand,
             .minInputs = 2,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 8,
             .parse = parseExpand,
             .infer = inferExpand,
             .eval = evalExpand});
  table.add({.kind = OpKind::Tile,
             .minInputs = 2,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 6,
             .parse = parseTile,
             .infer = inferTile,
             .eval = evalTile});
  registerIndexingOps(table);
  registerResizeOps(table);
}

} // namespace triad::ir
