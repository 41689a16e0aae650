// Movement ops that index: Gather, GatherElements, GatherND, Pad, OneHot, Trilu, EyeLike,
// DepthToSpace, SpaceToDepth. Registered from registerMovementOps (Movement.cpp).
//
// Kernels build an index map (output element -> input element, -1 for a fill value) and copy
// bytes with ops::gatherElements, so they work for every dtype.
#include "ir/ops/Movement.h"
#include "ir/ops/OpUtil.h"

#include <algorithm>

namespace triad::ir {
using namespace ops;

namespace {

void requireIndexType(const TensorType& t, std::string_view what) {
  if (t.dtype != DType::I32 && t.dtype != DType::I64)
    invalid("{} must be int32 or int64, is {}", what, dtypeName(t.dtype));
}

// A zero scalar of the element type of `t` (fill value for Trilu, EyeLike).
Tensor zeroOf(const TensorType& t) {
  return Tensor(TensorType{t.dtype, {}, t.fixed});
}

// ---- Gather, GatherElements, GatherND ----------------------------------------------------------

std::shared_ptr<const Attrs> parseAxis(const ParseContext& ctx) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis =
      normalizeAxis(ctx.attrs.getInt("axis", 0), inputType(ctx, 0).rank(), "attribute 'axis'");
  return a;
}

std::vector<TensorType> inferGather(const InferContext& ctx) {
  int64_t axis = ctx.as<AxisAttrs>().axis;
  const TensorType& data = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  requireRankAtLeast(data, 1, "input 'data'");
  requireIndexType(idx, "input 'indices'");
  if (axis >= data.rank()) invalid("axis {} is out of range for rank {}", axis, data.rank());
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {withShape(data, out)};
}

void evalGather(const EvalContext& ctx) {
  int64_t axis = ctx.as<AxisAttrs>().axis;
  const Tensor& data = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  const Shape& ds = data.shape();
  int64_t outer = 1, inner = 1, dim = ds[size_t(axis)];
  for (int64_t d = 0; d < axis; ++d)
    outer *= ds[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < ds.size(); ++d)
    inner *= ds[d];
  int64_t n = idx.numElements();
  std::vector<int64_t> resolved(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    resolved[size_t(j)] = readIndex(idx, j, dim, "indices");
  std::vector<int64_t> map;
  map.reserve(size_t(outer * n * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < inner; ++k)
        map.push_back((o * dim + resolved[size_t(j)]) * inner + k);
  gatherElements(data, ctx.out(0), map);
}

std::vector<TensorType> inferGatherElements(const InferContext& ctx) {
  int64_t axis = ctx.as<AxisAttrs>().axis;
  const TensorType& data = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  requireIndexType(idx, "input 'indices'");
  if (idx.rank() != data.rank())
    invalid("input 'indices' {} must have the rank of input 'data' {}", shapeToString(idx.shape),
            shapeToString(data.shape));
  if (axis >= data.rank()) invalid("axis {} is out of range for rank {}", axis, data.rank());
  for (size_t d = 0; d < idx.shape.size(); ++d)
    if (int64_t(d) != axis && idx.shape[d] > data.shape[d])
      invalid("input 'indices' {} exceeds input 'data' {} on axis {}", shapeToString(idx.shape),
              shapeToString(data.shape), d);
  return {withShape(data, idx.shape)};
}

void evalGatherElements(const EvalContext& ctx) {
  size_t axis = size_t(ctx.as<AxisAttrs>().axis);
  const Tensor& data = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  std::vector<int64_t> st = stridesOf(data.shape());
  int64_t dim = data.shape()[axis];
  std::vector<int64_t> map(size_t(idx.numElements()));
  forEachIndex(idx.shape(), [&](const std::vector<int64_t>& i, int64_t lin) {
    int64_t off = 0;
    for (size_t d = 0; d < i.size(); ++d)
      off += (d == axis ? readIndex(idx, lin, dim, "indices") : i[d]) * st[d];
    map[size_t(lin)] = off;
  });
  gatherElements(data, ctx.out(0), map);
}

std::shared_ptr<const Attrs> parseGatherND(const ParseContext& ctx) {
  auto a = std::make_shared<GatherNDAttrs>();
  a->batchDims = ctx.attrs.getInt("batch_dims", 0);
  if (a->batchDims < 0) invalid("attribute 'batch_dims' is negative ({})", a->batchDims);
  return a;
}

std::vector<TensorType> inferGatherND(const InferContext& ctx) {
  int64_t b = ctx.as<GatherNDAttrs>().batchDims;
  const TensorType& data = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  if (idx.dtype != DType::I64)
    invalid("input 'indices' must be int64, is {}", dtypeName(idx.dtype));
  requireRankAtLeast(idx, 1, "input 'indices'");
  if (b >= std::min(data.rank(), idx.rank()))
    invalid("attribute 'batch_dims' {} must be less than both ranks ({} and {})", b, data.rank(),
            idx.rank());
  int64_t k = idx.shape.back();
  if (k < 1 || k > data.rank() - b)
    invalid("last dimension of input 'indices' {} must be in 1..{}", k, data.rank() - b);
  for (int64_t d = 0; d < b; ++d)
    if (idx.shape[size_t(d)] != data.shape[size_t(d)])
      invalid("batch dimension {} differs: data {}, indices {}", d, shapeToString(data.shape),
              shapeToString(idx.shape));
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
  return {withShape(data, out)};
}

void evalGatherND(const EvalContext& ctx) {
  size_t b = size_t(ctx.as<GatherNDAttrs>().batchDims);
  const Tensor& data = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  const Shape& ds = data.shape();
  const Shape& is = idx.shape();
  size_t k = size_t(is.back());
  std::vector<int64_t> st = stridesOf(ds);
  int64_t slice = 1; // elements copied per index tuple
  for (size_t d = b + k; d < ds.size(); ++d)
    slice *= ds[d];
  int64_t batchSize = 1; // data elements per batch entry
  for (size_t d = b; d < ds.size(); ++d)
    batchSize *= ds[d];
  int64_t tuplesPerBatch = 1;
  for (size_t d = b; d + 1 < is.size(); ++d)
    tuplesPerBatch *= is[d];
  int64_t tuples = numElements(Shape(is.begin(), is.end() - 1));
  std::vector<int64_t> map;
  map.reserve(size_t(tuples * slice));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / tuplesPerBatch) * batchSize;
    for (size_t j = 0; j < k; ++j)
      off += readIndex(idx, t * int64_t(k) + int64_t(j), ds[b + j], "indices") * st[b + j];
    for (int64_t e = 0; e < slice; ++e)
      map.push_back(off + e);
  }
  gatherElements(data, ctx.out(0), map);
}

// ---- Pad ---------------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parsePad(const ParseContext& ctx) {
  const TensorType& in = inputType(ctx, 0);
  int64_t r = in.rank();
  auto a = std::make_shared<PadAttrs>();
  std::string mode =
      enumAttr(ctx.attrs, "mode", "constant", {"constant", "reflect", "edge", "wrap"});
  a->mode = mode == "constant"  ? PadMode::Constant
            : mode == "reflect" ? PadMode::Reflect
            : mode == "edge"    ? PadMode::Edge
                                : PadMode::Wrap;
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  a->value = zeroOf(in);
  if (ctx.opset < 11) {
    auto p = ctx.attrs.getInts("pads");
    if (!p) invalid("attribute 'pads' is required");
    pads = *p;
    float v = ctx.attrs.getFloat("value", 0.0f);
    if (v != 0.0f) {
      if (in.dtype == DType::Fixed) unsupported("a nonzero pad value on fixed-point input");
      a->value = Tensor::scalar<float>(v).castTo(in.dtype);
    }
  } else {
    auto p = constInts(ctx, 1);
    if (!p) invalid("input 'pads' is required");
    pads = *p;
    if (const Tensor* v = ctx.constInput(2); v && v->numElements() > 0) {
      if (v->numElements() != 1) invalid("input 'constant_value' must hold one element");
      if (in.dtype == DType::Fixed) unsupported("a pad value on fixed-point input");
      a->value = v->reshaped({}).castTo(in.dtype);
    }
    if (auto ax = constInts(ctx, 3)) axes = normalizeAxes(*ax, r, "axes");
  }
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    invalid("'pads' has {} entries, expected {} (2 per padded axis)", pads.size(), 2 * axes.size());
  a->pads.assign(size_t(2 * r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    a->pads[size_t(axes[i])] = pads[i];
    a->pads[size_t(axes[i] + r)] = pads[i + axes.size()];
  }
  return a;
}

std::vector<TensorType> inferPad(const InferContext& ctx) {
  const auto& a = ctx.as<PadAttrs>();
  const TensorType& in = ctx.in(0);
  size_t r = in.shape.size();
  if (a.pads.size() != 2 * r) invalid("pads has {} entries for rank {}", a.pads.size(), r);
  Shape out;
  for (size_t d = 0; d < r; ++d) {
    int64_t o = in.shape[d] + a.pads[d] + a.pads[d + r];
    if (o < 0)
      invalid("pads [{}] crop axis {} of {} below zero", fmt::join(a.pads, ","), d,
              shapeToString(in.shape));
    bool grows = a.pads[d] > 0 || a.pads[d + r] > 0;
    if (grows && in.shape[d] == 0 && a.mode != PadMode::Constant)
      invalid("cannot pad empty axis {} in {} mode", d, toString(a.mode));
    out.push_back(o);
  }
  return {withShape(in, out)};
}

void evalPad(const EvalContext& ctx) {
  const auto& a = ctx.as<PadAttrs>();
  const Shape& in = ctx.in(0).shape();
  const Shape& out = ctx.out(0).shape();
  size_t r = in.size();
  std::vector<int64_t> st = stridesOf(in);
  // Per axis: output coordinate -> input coordinate, or -1 for the constant.
  std::vector<std::vector<int64_t>> src(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t dim = in[d];
    for (int64_t o = 0; o < out[d]; ++o) {
      int64_t i = o - a.pads[d];
      if (i < 0 || i >= dim) {
        switch (a.mode) {
        case PadMode::Constant:
          i = -1;
          break;
        case PadMode::Edge:
          i = std::clamp<int64_t>(i, 0, dim - 1);
          break;
        case PadMode::Wrap:
          i = ((i % dim) + dim) % dim;
          break;
        case PadMode::Reflect:
          if (dim == 1) {
            i = 0;
          } else {
            int64_t period = 2 * (dim - 1);
            i = ((i % period) + period) % period;
            if (i >= dim) i = period - i;
          }
          break;
        }
      }
      src[d].push_back(i);
    }
  }
  std::vector<int64_t> map(size_t(numElements(out)));
  forEachIndex(out, [&](const std::vector<int64_t>& idx, int64_t lin) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t i = src[d][size_t(idx[d])];
      if (i < 0) {
        off = -1;
        break;
      }
      off += i * st[d];
    }
    map[size_t(lin)] = off;
  });
  gatherElements(ctx.in(0), ctx.out(0), map, &a.value);
}

// ---- OneHot ------------------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseOneHot(const ParseContext& ctx) {
  auto a = std::make_shared<OneHotAttrs>();
  int64_t outRank = inputType(ctx, 0).rank() + 1;
  a->axis = normalizeAxis(ctx.attrs.getInt("axis", -1), outRank, "attribute 'axis'");
  const Tensor* depth = ctx.constInput(1);
  if (!depth || depth->numElements() != 1) invalid("input 'depth' must be a one-element tensor");
  // Compared as a double first: converting NaN or a value beyond int64 is undefined.
  double d = depth->getDouble(0);
  if (!(d >= 1 && d <= double(int64_t(1) << 62)))
    invalid("input 'depth' is {}; it must be a positive count", d);
  a->depth = int64_t(d);
  return a;
}

std::vector<TensorType> inferOneHot(const InferContext& ctx) {
  const auto& a = ctx.as<OneHotAttrs>();
  const TensorType& idx = ctx.in(0);
  const TensorType& values = ctx.in(1);
  if (idx.dtype == DType::Bool || idx.dtype == DType::Fixed)
    unsupported("input 'indices' of type {}", dtypeName(idx.dtype));
  if (values.numElements() != 2)
    invalid("input 'values' must hold 2 elements [off, on], has shape {}",
            shapeToString(values.shape));
  if (a.axis > idx.rank()) invalid("axis {} is out of range for rank {}", a.axis, idx.rank() + 1);
  Shape out = idx.shape;
  out.insert(out.begin() + a.axis, a.depth);
  return {withShape(values, out)};
}

void evalOneHot(const EvalContext& ctx) {
  const auto& a = ctx.as<OneHotAttrs>();
  const Tensor& idx = ctx.in(0);
  const Shape& is = idx.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a.axis; ++d)
    outer *= is[size_t(d)];
  for (size_t d = size_t(a.axis); d < is.size(); ++d)
    inner *= is[d];
  std::vector<int64_t> map(size_t(outer * a.depth * inner), 0); // 0: off value, 1: on value
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double v = idx.getDouble(o * inner + i);
      if (!(v > -double(a.depth) - 1 && v < double(a.depth))) continue; // off (NaN too)
      int64_t c = int64_t(v);
      if (c < 0) c += a.depth;
      if (c >= 0 && c < a.depth) map[size_t((o * a.depth + c) * inner + i)] = 1;
    }
  gatherElements(ctx.in(1), ctx.out(0), map);
}

// ---- Trilu, EyeLike ----------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseTrilu(const ParseContext& ctx) {
  auto a = std::make_shared<TriluAttrs>();
  a->upper = ctx.attrs.getInt("upper", 1) != 0;
  if (const Tensor* k = ctx.constInput(1)) {
    if (k->numElements() != 1) invalid("input 'k' must be a scalar");
    a->k = k->getInt(0);
  }
  return a;
}

std::vector<TensorType> inferTrilu(const InferContext& ctx) {
  requireRankAtLeast(ctx.in(0), 2, "input");
  return {ctx.in(0)};
}

void evalTrilu(const EvalContext& ctx) {
  const auto& a = ctx.as<TriluAttrs>();
  const Shape& s = ctx.in(0).shape();
  int64_t rows = s[s.size() - 2], cols = s.back();
  int64_t n = ctx.in(0).numElements();
  std::vector<int64_t> map(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t col = i % cols, row = (i / cols) % rows;
    bool keep = a.upper ? col - row >= a.k : col - row <= a.k;
    map[size_t(i)] = keep ? i : -1;
  }
  Tensor zero = zeroOf(ctx.in(0).type());
  gatherElements(ctx.in(0), ctx.out(0), map, &zero);
}

std::shared_ptr<const Attrs> parseEyeLike(const ParseContext& ctx) {
  auto a = std::make_shared<EyeLikeAttrs>();
  a->dtype = inputType(ctx, 0).dtype;
  if (auto code = ctx.attrs.getInt("dtype")) {
    auto t = dtypeFromOnnx(int32_t(*code));
    if (!t) unsupported("attribute 'dtype' = {} ({})", *code, onnxElemTypeName(int32_t(*code)));
    a->dtype = *t;
  }
  a->k = ctx.attrs.getInt("k", 0);
  // A diagonal beyond the matrix is all zeros: k is clamped to [-rows, cols], so that r + k
  // cannot overflow for any attribute value (a fuzz finding: k = INT64_MAX).
  const Shape& in = inputType(ctx, 0).shape;
  if (in.size() == 2) a->k = std::clamp<int64_t>(a->k, -in[0], in[1]);
  return a;
}

std::vector<TensorType> inferEyeLike(const InferContext& ctx) {
  const auto& a = ctx.as<EyeLikeAttrs>();
  requireRank(ctx.in(0), 2, "input");
  if (a.dtype == DType::Fixed) unsupported("EyeLike output of fixed-point type");
  return {TensorType{a.dtype, ctx.in(0).shape, {}}};
}

void evalEyeLike(const EvalContext& ctx) {
  const auto& a = ctx.as<EyeLikeAttrs>();
  Tensor& out = ctx.out(0);
  int64_t rows = out.shape()[0], cols = out.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t c = r + a.k;
    if (c >= 0 && c < cols) out.setDouble(r * cols + c, 1.0);
  }
}

// ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------------

/// `modeSince`: the opset that gave the op its 'mode' attribute (DCR before it).
std::shared_ptr<const Attrs> parseBlock(const ParseContext& ctx, int modeSince) {
  auto a = std::make_shared<BlockAttrs>();
  auto b = ctx.attrs.getInt("blocksize");
  if (!b) invalid("attribute 'blocksize' is required");
  // At most 2^31 - 1, so that blocksize^2 is an int64; the dims it multiplies are checked too.
  if (*b < 1 || *b > (int64_t(1) << 31) - 1)
    invalid("attribute 'blocksize' is {}; it must be in 1..2^31-1", *b);
  a->blocksize = *b;
  a->mode = ctx.opset >= modeSince && enumAttr(ctx.attrs, "mode", "DCR", {"DCR", "CRD"}) == "CRD"
                ? DepthToSpaceMode::CRD
                : DepthToSpaceMode::DCR;
  return a;
}

std::shared_ptr<const Attrs> parseDepthToSpace(const ParseContext& ctx) {
  return parseBlock(ctx, 11);
}

std::shared_ptr<const Attrs> parseSpaceToDepth(const ParseContext& ctx) {
  return parseBlock(ctx, 28);
}

std::vector<TensorType> inferDepthToSpace(const InferContext& ctx) {
  int64_t b = ctx.as<BlockAttrs>().blocksize;
  const TensorType& in = ctx.in(0);
  requireRank(in, 4, "input");
  if (in.shape[1] % (b * b) != 0)
    invalid("channels {} are not divisible by blocksize^2 = {}", in.shape[1], b * b);
  return {withShape(in, {in.shape[0], in.shape[1] / (b * b), numElements(Shape{in.shape[2], b}),
                         numElements(Shape{in.shape[3], b})})};
}

void evalDepthToSpace(const EvalContext& ctx) {
  const auto& a = ctx.as<BlockAttrs>();
  int64_t b = a.blocksize;
  const Shape& o = ctx.out(0).shape();
  int64_t N = o[0], C = o[1], H = o[2] / b, W = o[3] / b;
  std::vector<int64_t> map;
  map.reserve(size_t(numElements(o)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H * b; ++y)
        for (int64_t x = 0; x < W * b; ++x) {
          int64_t i = y % b, j = x % b;
          int64_t ic =
              a.mode == DepthToSpaceMode::DCR ? (i * b + j) * C + c : c * b * b + i * b + j;
          map.push_back(((n * C * b * b + ic) * H + y / b) * W + x / b);
        }
  gatherElements(ctx.in(0), ctx.out(0), map);
}

std::vector<TensorType> inferSpaceToDepth(const InferContext& ctx) {
  int64_t b = ctx.as<BlockAttrs>().blocksize;
  const TensorType& in = ctx.in(0);
  requireRank(in, 4, "input");
  if (in.shape[2] % b != 0 || in.shape[3] % b != 0)
    invalid("spatial dims of {} are not divisible by blocksize {}", shapeToString(in.shape), b);
  return {withShape(
      in, {in.shape[0], numElements(Shape{in.shape[1], b, b}), in.shape[2] / b, in.shape[3] / b})};
}

void evalSpaceToDepth(const EvalContext& ctx) {
  const auto& a = ctx.as<BlockAttrs>();
  int64_t b = a.blocksize;
  const Shape& s = ctx.in(0).shape();
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  std::vector<int64_t> map(size_t(numElements(s)));
  // Output [N, oc, y, x] = input [N, c, y*b + i, x*b + j] with oc = (i*b + j)*C + c (DCR) or
  // c*b*b + i*b + j (CRD).
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < b; ++j) {
          int64_t oc = a.mode == DepthToSpaceMode::DCR ? (i * b + j) * C + c : (c * b + i) * b + j;
          for (int64_t y = 0; y < H / b; ++y)
            for (int64_t x = 0; x < W / b; ++x)
              map[size_t(((n * C * b * b + oc) * (H / b) + y) * (W / b) + x)] =
                  ((n * C + c) * H + y * b + i) * W + x * b + j;
        }
  gatherElements(ctx.in(0), ctx.out(0), map);
}

} // namespace

namespace ops {

void registerIndexingOps(OpTable& table) {
  table.add({.kind = OpKind::Gather,
             .minInputs = 2,
             .maxInputs = 2,
             .parse = parseAxis,
             .infer = inferGather,
             .eval = evalGather});
  table.add({.kind = OpKind::GatherElements,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 11,
             .parse = parseAxis,
             .infer = inferGatherElements,
             .eval = evalGatherElements});
  table.add({.kind = OpKind::GatherND,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 11,
             .parse = parseGatherND,
             .infer = inferGatherND,
             .eval = evalGatherND});
  table.add({.kind = OpKind::Pad,
             .maxInputs = 4,
             .shapeOperands = {1, 2, 3},
             .sinceOpset = 2,
             .parse = parsePad,
             .infer = inferPad,
             .eval = evalPad});
  table.add({.kind = OpKind::OneHot,
             .minInputs = 3,
             .maxInputs = 3,
             .shapeOperands = {1},
             .sinceOpset = 9,
             .parse = parseOneHot,
             .infer = inferOneHot,
             .eval = evalOneHot});
  table.add({.kind = OpKind::Trilu,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 14,
             .parse = parseTrilu,
             .infer = inferTrilu,
             .eval = evalTrilu});
  table.add({.kind = OpKind::EyeLike,
             .valueIndependent = true,
             .sinceOpset = 9,
             .parse = parseEyeLike,
             .infer = inferEyeLike,
             .eval = evalEyeLike});
  table.add({.kind = OpKind::DepthToSpace,
             .parse = parseDepthToSpace,
             .infer = inferDepthToSpace,
             .eval = evalDepthToSpace});
  table.add({.kind = OpKind::SpaceToDepth,
             .parse = parseSpaceToDepth,
             .infer = inferSpaceToDepth,
             .eval = evalSpaceToDepth});
}

} // namespace ops
} // namespace triad::ir
