// Scatter, selection and sorting ops: ScatterElements, Scatter (its opset 9/10 name), ScatterND,
// Compress, TopK, ReverseSequence, MaxUnpool.
//
// Index values that come from data (scatter indices, sequence lengths, unpool indices) are
// checked in the kernels and raise a Runtime error when out of range; everything the model
// fixes (ranks, shapes, attribute values) is checked in parse/infer.
#include "ir/ops/Scatter.h"
#include "ir/ops/Movement.h" // ops::gatherElements
#include "ir/ops/OpUtil.h"

#include <cstring>
#include <numeric>

namespace triad::ir {
using namespace ops;

namespace {


// ---- ScatterElements, Scatter, ScatterND ------------------------------------------------------

// 'reduction' exists from opset 16 (none/add/mul); max and min were added in opset 18.
ScatterReduction parseReduction(const ParseContext& ctx) {
  std::string r =
      ctx.opset >= 18
          ? enumAttr(ctx.attrs, "reduction", "none", {"none", "add", "mul", "max", "min"})
      : ctx.opset >= 16 ? enumAttr(ctx.attrs, "reduction", "none", {"none", "add", "mul"})
                        : enumAttr(ctx.attrs, "reduction", "none", {"none"});
  return r == "add"   ? ScatterReduction::Add
         : r == "mul" ? ScatterReduction::Mul
         : r == "max" ? ScatterReduction::Max
         : r == "min" ? ScatterReduction::Min
                      : ScatterReduction::None;
}

// Rejects element types a reduction cannot combine exactly.
void checkReductionType(const TensorType& data, ScatterReduction r) {
  if (data.dtype == DType::Fixed && r == ScatterReduction::Mul)
    unsupported("reduction 'mul' on fixed-point data is not supported");
}

// e (op) u for the reduction; bool uses logical or/and for add/max and mul/min.
template <typename T> T combine(ScatterReduction r, T e, T u) {
  if constexpr (std::is_same_v<T, Half>) {
    return T(combine<float>(r, float(e), float(u)));
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
    case ScatterReduction::None:
      return u;
    case ScatterReduction::Add:
    case ScatterReduction::Max:
      return e || u;
    case ScatterReduction::Mul:
    case ScatterReduction::Min:
      return e && u;
    }
    return u;
  } else {
    switch (r) {
    case ScatterReduction::None:
      return u;
    case ScatterReduction::Add:
      return T(e + u);
    case ScatterReduction::Mul:
      return T(e * u);
    case ScatterReduction::Max:
      return std::max(e, u);
    case ScatterReduction::Min:
      return std::min(e, u);
    }
    return u;
  }
}

// out = data; then out[target[i]] = combine(out[target[i]], updates[i]) in order of i.
void scatterInto(const Tensor& data, const Tensor& updates, const std::vector<int64_t>& target,
                 int64_t sliceLen, ScatterReduction r, Tensor& out) {
  std::memcpy(out.raw(), data.raw(), data.byteSize());
  visitDType(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* u = updates.data<T>();
    for (size_t i = 0; i < target.size(); ++i)
      for (int64_t e = 0; e < sliceLen; ++e) {
        T& dst = o[target[i] + e];
        dst = combine<T>(r, dst, u[int64_t(i) * sliceLen + e]);
      }
  });
}

std::shared_ptr<const Attrs> parseScatterElements(const ParseContext& ctx) {
  auto a = std::make_shared<ScatterElementsAttrs>();
  a->axis =
      normalizeAxis(ctx.attrs.getInt("axis", 0), inputType(ctx, 0).rank(), "attribute 'axis'");
  a->reduction = parseReduction(ctx);
  return a;
}

// The opset 9/10 Scatter: ScatterElements without 'reduction'.
std::shared_ptr<const Attrs> parseScatter(const ParseContext& ctx) {
  auto a = std::make_shared<ScatterElementsAttrs>();
  a->axis =
      normalizeAxis(ctx.attrs.getInt("axis", 0), inputType(ctx, 0).rank(), "attribute 'axis'");
  return a;
}

std::vector<TensorType> inferScatterElements(const InferContext& ctx) {
  const auto& a = ctx.as<ScatterElementsAttrs>();
  const TensorType& data = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  const TensorType& upd = ctx.in(2);
  requireRankAtLeast(data, 1, "input 'data'");
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    invalid("input 'indices' must be int32 or int64, is {}", dtypeName(idx.dtype));
  requireSameDType(data, upd, "inputs 'data' and 'updates'");
  if (idx.rank() != data.rank())
    invalid("input 'indices' {} must have the rank of input 'data' {}", shapeToString(idx.shape),
            shapeToString(data.shape));
  if (upd.shape != idx.shape)
    invalid("input 'updates' {} must have the shape of input 'indices' {}",
            shapeToString(upd.shape), shapeToString(idx.shape));
  if (a.axis < 0 || a.axis >= data.rank())
    invalid("axis {} is out of range for rank {}", a.axis, data.rank());
  for (size_t d = 0; d < idx.shape.size(); ++d)
    if (int64_t(d) != a.axis && idx.shape[d] > data.shape[d])
      invalid("input 'indices' {} exceeds input 'data' {} on axis {}", shapeToString(idx.shape),
              shapeToString(data.shape), d);
  checkReductionType(data, a.reduction);
  return {data};
}

void evalScatterElements(const EvalContext& ctx) {
  const auto& a = ctx.as<ScatterElementsAttrs>();
  const Tensor& data = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  size_t axis = size_t(a.axis);
  std::vector<int64_t> st = stridesOf(data.shape());
  int64_t dim = data.shape()[axis];
  // Update i (multi-index j over indices' shape) targets data[j with j[axis] = indices[j]].
  std::vector<int64_t> target(static_cast<size_t>(idx.numElements()));
  forEachIndex(idx.shape(), [&](const std::vector<int64_t>& j, int64_t lin) {
    int64_t off = 0;
    for (size_t d = 0; d < j.size(); ++d)
      off += (d == axis ? readIndex(idx, lin, dim, "indices") : j[d]) * st[d];
    target[size_t(lin)] = off;
  });
  scatterInto(data, ctx.in(2), target, 1, a.reduction, ctx.out(0));
}

std::shared_ptr<const Attrs> parseScatterND(const ParseContext& ctx) {
  auto a = std::make_shared<ScatterNDAttrs>();
  a->reduction = parseReduction(ctx);
  return a;
}

// data [d0..dr-1], indices [i0..iq-2, k], updates [i0..iq-2, dk..dr-1].
std::vector<TensorType> inferScatterND(const InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  const TensorType& upd = ctx.in(2);
  requireRankAtLeast(data, 1, "input 'data'");
  requireRankAtLeast(idx, 1, "input 'indices'");
  if (idx.dtype != DType::I64)
    invalid("input 'indices' must be int64, is {}", dtypeName(idx.dtype));
  requireSameDType(data, upd, "inputs 'data' and 'updates'");
  int64_t k = idx.shape.back();
  if (k < 1 || k > data.rank())
    invalid("last dimension of input 'indices' {} must be in 1..{} (the rank of 'data')", k,
            data.rank());
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (upd.shape != want)
    invalid("input 'updates' has shape {}; data {} and indices {} require {}",
            shapeToString(upd.shape), shapeToString(data.shape), shapeToString(idx.shape),
            shapeToString(want));
  checkReductionType(data, ctx.as<ScatterNDAttrs>().reduction);
  return {data};
}

void evalScatterND(const EvalContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  const Shape& ds = data.shape();
  size_t k = size_t(idx.shape().back());
  std::vector<int64_t> st = stridesOf(ds);
  int64_t slice = 1; // elements per update slice: prod(data.shape[k:])
  for (size_t d = k; d < ds.size(); ++d)
    slice *= ds[d];
  int64_t tuples = idx.numElements() / int64_t(k);
  std::vector<int64_t> target(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j)
      off += readIndex(idx, t * int64_t(k) + int64_t(j), ds[j], "indices") * st[j];
    target[size_t(t)] = off;
  }
  scatterInto(data, ctx.in(2), target, slice, ctx.as<ScatterNDAttrs>().reduction, ctx.out(0));
}

// ---- Compress ----------------------------------------------------------------------------------

// Condition (input 1) is a shape operand: its true positions become `selected`. Entries past
// the end of the axis may be false (numpy.compress semantics) but not true.
std::shared_ptr<const Attrs> parseCompress(const ParseContext& ctx) {
  const TensorType& in = inputType(ctx, 0);
  if (in.rank() < 1) invalid("input 'input' must have rank >= 1, is a scalar");
  auto a = std::make_shared<CompressAttrs>();
  int64_t n = in.numElements();
  if (auto axis = ctx.attrs.getInt("axis")) {
    a->axis = normalizeAxis(*axis, in.rank(), "attribute 'axis'");
    n = in.shape[size_t(a->axis)];
  }
  const Tensor* cond = ctx.constInput(1);
  if (!cond) invalid("input 'condition' is required");
  if (cond->dtype() != DType::Bool)
    invalid("input 'condition' must be bool, is {}", dtypeName(cond->dtype()));
  if (cond->rank() != 1)
    invalid("input 'condition' must have rank 1, has shape {}", shapeToString(cond->shape()));
  const bool* c = cond->data<bool>();
  for (int64_t i = 0; i < cond->numElements(); ++i) {
    if (!c[i]) continue;
    if (i >= n)
      invalid("input 'condition' selects position {}, but the {} has only {} entries", i,
              a->axis < 0 ? "flattened input" : fmt::format("axis {}", a->axis), n);
    a->selected.push_back(i);
  }
  return a;
}

std::vector<TensorType> inferCompress(const InferContext& ctx) {
  const auto& a = ctx.as<CompressAttrs>();
  const TensorType& in = ctx.in(0);
  requireRankAtLeast(in, 1, "input 'input'");
  int64_t count = int64_t(a.selected.size());
  if (a.axis < 0) {
    if (count && a.selected.back() >= in.numElements())
      invalid("selected position {} is out of range for {} elements", a.selected.back(),
              in.numElements());
    return {withShape(in, {count})};
  }
  if (a.axis >= in.rank()) invalid("axis {} is out of range for rank {}", a.axis, in.rank());
  if (count && a.selected.back() >= in.shape[size_t(a.axis)])
    invalid("selected position {} is out of range for axis {} of {}", a.selected.back(), a.axis,
            shapeToString(in.shape));
  Shape out = in.shape;
  out[size_t(a.axis)] = count;
  return {withShape(in, out)};
}

void evalCompress(const EvalContext& ctx) {
  const auto& a = ctx.as<CompressAttrs>();
  const Tensor& in = ctx.in(0);
  if (a.axis < 0) {
    gatherElements(in, ctx.out(0), a.selected);
    return;
  }
  const Shape& s = in.shape();
  int64_t outer = 1, inner = 1, dim = s[size_t(a.axis)];
  for (int64_t d = 0; d < a.axis; ++d)
    outer *= s[size_t(d)];
  for (size_t d = size_t(a.axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  std::vector<int64_t> map;
  map.reserve(size_t(outer * int64_t(a.selected.size()) * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j : a.selected)
      for (int64_t e = 0; e < inner; ++e)
        map.push_back((o * dim + j) * inner + e);
  gatherElements(in, ctx.out(0), map);
}

// ---- TopK --------------------------------------------------------------------------------------

// K is an attribute before opset 10 and the shape operand input 1 from 10; 'largest' and
// 'sorted' exist from opset 11.
std::shared_ptr<const Attrs> parseTopK(const ParseContext& ctx) {
  const TensorType& x = inputType(ctx, 0);
  requireRankAtLeast(x, 1, "input 'X'");
  auto a = std::make_shared<TopKAttrs>();
  a->axis = normalizeAxis(ctx.attrs.getInt("axis", -1), x.rank(), "attribute 'axis'");
  if (ctx.opset < 10) {
    auto k = ctx.attrs.getInt("k");
    if (!k) invalid("attribute 'k' is required");
    a->k = *k;
  } else {
    auto k = constInts(ctx, 1);
    if (!k) invalid("input 'K' is required");
    if (k->size() != 1) invalid("input 'K' must hold one value, holds {}", k->size());
    a->k = (*k)[0];
  }
  if (ctx.opset >= 11) {
    a->largest = ctx.attrs.getInt("largest", 1) != 0;
    a->sorted = ctx.attrs.getInt("sorted", 1) != 0;
  }
  int64_t dim = x.shape[size_t(a->axis)];
  if (a->k < 0 || a->k > dim)
    invalid("K = {} is out of range for axis {} of size {}", a->k, a->axis, dim);
  return a;
}

std::vector<TensorType> inferTopK(const InferContext& ctx) {
  const auto& a = ctx.as<TopKAttrs>();
  const TensorType& x = ctx.in(0);
  if (x.dtype == DType::Bool) invalid("input 'X' must be numeric, is bool");
  if (a.axis < 0 || a.axis >= x.rank())
    invalid("axis {} is out of range for rank {}", a.axis, x.rank());
  if (a.k < 0 || a.k > x.shape[size_t(a.axis)])
    invalid("K = {} is out of range for axis {} of {}", a.k, a.axis, shapeToString(x.shape));
  Shape out = x.shape;
  out[size_t(a.axis)] = a.k;
  return {withShape(x, out), TensorType{DType::I64, out, {}}};
}

// Whether a ranks strictly before b among the k largest (largest) or smallest values. NaN ranks
// above every number (as in numpy's sort, where NaN sorts last).
template <typename T> bool ranksBefore(T a, T b, bool largest) {
  if constexpr (std::is_same_v<T, Half>) {
    return ranksBefore<float>(float(a), float(b), largest);
  } else if constexpr (std::is_floating_point_v<T>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return largest ? na && !nb : !na && nb;
    return largest ? a > b : a < b;
  } else {
    return largest ? a > b : a < b;
  }
}

void evalTopK(const EvalContext& ctx) {
  const auto& a = ctx.as<TopKAttrs>();
  const Tensor& x = ctx.in(0);
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1, dim = s[size_t(a.axis)], k = a.k;
  for (int64_t d = 0; d < a.axis; ++d)
    outer *= s[size_t(d)];
  for (size_t d = size_t(a.axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  int64_t* pi = ctx.out(1).data<int64_t>();
  visitDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      TRIAD_ASSERT(false, "TopK on bool");
    } else {
      const T* px = x.data<T>();
      T* pv = ctx.out(0).data<T>();
      std::vector<int64_t> order(static_cast<size_t>(dim));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t e = 0; e < inner; ++e) {
          const T* line = px + o * dim * inner + e; // element j at line[j * inner]
          std::iota(order.begin(), order.end(), int64_t(0));
          // Ties keep the lower index first, which makes the order total (and stable).
          std::partial_sort(order.begin(), order.begin() + k, order.end(),
                            [&](int64_t i, int64_t j) {
                              T vi = line[i * inner], vj = line[j * inner];
                              if (ranksBefore<T>(vi, vj, a.largest)) return true;
                              if (ranksBefore<T>(vj, vi, a.largest)) return false;
                              return i < j;
                            });
          for (int64_t r = 0; r < k; ++r) {
            int64_t off = (o * k + r) * inner + e;
            pv[off] = line[order[size_t(r)] * inner];
            pi[off] = order[size_t(r)];
          }
        }
    }
  });
}

// ---- ReverseSequence ---------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseReverseSequence(const ParseContext& ctx) {
  auto a = std::make_shared<ReverseSequenceAttrs>();
  a->batchAxis = ctx.attrs.getInt("batch_axis", 1);
  a->timeAxis = ctx.attrs.getInt("time_axis", 0);
  if (a->batchAxis != 0 && a->batchAxis != 1)
    invalid("attribute 'batch_axis' must be 0 or 1, is {}", a->batchAxis);
  if (a->timeAxis != 0 && a->timeAxis != 1)
    invalid("attribute 'time_axis' must be 0 or 1, is {}", a->timeAxis);
  if (a->batchAxis == a->timeAxis)
    invalid("attributes 'batch_axis' and 'time_axis' are both {}", a->timeAxis);
  return a;
}

std::vector<TensorType> inferReverseSequence(const InferContext& ctx) {
  const auto& a = ctx.as<ReverseSequenceAttrs>();
  const TensorType& x = ctx.in(0);
  const TensorType& lens = ctx.in(1);
  requireRankAtLeast(x, 2, "input 'input'");
  if (lens.dtype != DType::I64)
    invalid("input 'sequence_lens' must be int64, is {}", dtypeName(lens.dtype));
  if (lens.shape != Shape{x.shape[size_t(a.batchAxis)]})
    invalid("input 'sequence_lens' {} must have shape [batch] = [{}] (input {}, batch_axis {})",
            shapeToString(lens.shape), x.shape[size_t(a.batchAxis)], shapeToString(x.shape),
            a.batchAxis);
  return {x};
}

void evalReverseSequence(const EvalContext& ctx) {
  const auto& a = ctx.as<ReverseSequenceAttrs>();
  const Tensor& x = ctx.in(0);
  const Tensor& lens = ctx.in(1);
  const Shape& s = x.shape();
  int64_t d0 = s[0], d1 = s[1];
  int64_t inner = x.numElements() / std::max<int64_t>(d0 * d1, 1);
  int64_t timeLen = s[size_t(a.timeAxis)];
  std::vector<int64_t> len(static_cast<size_t>(s[size_t(a.batchAxis)]));
  for (size_t b = 0; b < len.size(); ++b) {
    len[b] = lens.data<int64_t>()[b];
    if (len[b] < 0 || len[b] > timeLen)
      fail(ErrorKind::Runtime, "sequence_lens[{}] = {} is out of range 0..{}", b, len[b], timeLen);
  }
  std::vector<int64_t> map;
  map.reserve(size_t(x.numElements()));
  for (int64_t i0 = 0; i0 < d0; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1) {
      int64_t b = a.batchAxis == 0 ? i0 : i1;
      int64_t t = a.timeAxis == 0 ? i0 : i1;
      int64_t l = len[size_t(b)];
      int64_t src = t < l ? l - 1 - t : t;
      int64_t j0 = a.timeAxis == 0 ? src : i0, j1 = a.timeAxis == 1 ? src : i1;
      for (int64_t e = 0; e < inner; ++e)
        map.push_back((j0 * d1 + j1) * inner + e);
    }
  gatherElements(x, ctx.out(0), map);
}

// ---- MaxUnpool ---------------------------------------------------------------------------------

// Input 2 (output_shape) is a shape operand. Where it equals the inferred shape the semantics
// are unambiguous. Where it differs, ONNX Runtime and PyTorch read the indices as addressing
// output_shape directly while ONNX's own reference (test_maxunpool_export_with_output_shape)
// unpools into the inferred shape and pads at the end (onnx/onnx#2398): rather than pick one and
// give some users silently wrong numbers, that case is refused as unsupported.
std::shared_ptr<const Attrs> parseMaxUnpool(const ParseContext& ctx) {
  const TensorType& x = inputType(ctx, 0);
  auto a = std::make_shared<MaxUnpoolAttrs>();
  auto kernel = ctx.attrs.getInts("kernel_shape");
  if (!kernel) invalid("attribute 'kernel_shape' is required");
  a->kernel = *kernel;
  size_t n = a->kernel.size();
  if (x.rank() != int64_t(n) + 2)
    invalid("input 'X' {} must have rank {} (2 + the length of 'kernel_shape')",
            shapeToString(x.shape), n + 2);
  a->strides = intsOr(ctx.attrs, "strides", std::vector<int64_t>(n, 1));
  a->pads = intsOr(ctx.attrs, "pads", std::vector<int64_t>(2 * n, 0));
  if (a->strides.size() != n)
    invalid("attribute 'strides' has {} values, 'kernel_shape' {}", a->strides.size(), n);
  if (a->pads.size() != 2 * n)
    invalid("attribute 'pads' has {} values, expected {}", a->pads.size(), 2 * n);
  for (size_t i = 0; i < n; ++i) {
    if (a->kernel[i] < 1) invalid("attribute 'kernel_shape' has a value < 1: {}", a->kernel[i]);
    if (a->strides[i] < 1) invalid("attribute 'strides' has a value < 1: {}", a->strides[i]);
    if (a->pads[i] < 0 || a->pads[i + n] < 0) invalid("attribute 'pads' has a negative value");
  }
  a->outShape = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < n; ++i) {
    int64_t d = (x.shape[i + 2] - 1) * a->strides[i] - a->pads[i] - a->pads[i + n] + a->kernel[i];
    if (d < 1) invalid("the unpooled size of spatial axis {} is {} (< 1)", i, d);
    a->outShape.push_back(d);
  }
  if (auto os = constInts(ctx, 2)) {
    if (os->size() != size_t(x.rank()))
      invalid("input 'output_shape' [{}] must have {} values (the rank of 'X')",
              fmt::join(*os, ","), x.rank());
    if ((*os)[0] != x.shape[0] || (*os)[1] != x.shape[1])
      invalid("input 'output_shape' [{}] must keep the batch and channel dims of 'X' {}",
              fmt::join(*os, ","), shapeToString(x.shape));
    for (int64_t d : *os)
      if (d < 1) invalid("input 'output_shape' [{}] has a dimension < 1", fmt::join(*os, ","));
    if (*os != a->outShape)
      unsupported("input 'output_shape' [{}] differs from the unpooled shape {}; ONNX's "
                  "reference and ONNX Runtime disagree on what that means (onnx/onnx#2398)",
                  fmt::join(*os, ","), shapeToString(a->outShape));
  }
  return a;
}

std::vector<TensorType> inferMaxUnpool(const InferContext& ctx) {
  const auto& a = ctx.as<MaxUnpoolAttrs>();
  const TensorType& x = ctx.in(0);
  const TensorType& idx = ctx.in(1);
  requireFloat(x, "input 'X'");
  if (idx.dtype != DType::I64) invalid("input 'I' must be int64, is {}", dtypeName(idx.dtype));
  if (idx.shape != x.shape)
    invalid("input 'I' {} must have the shape of input 'X' {}", shapeToString(idx.shape),
            shapeToString(x.shape));
  if (a.outShape.size() != x.shape.size())
    invalid("output rank {} differs from the rank of 'X' {}", a.outShape.size(),
            shapeToString(x.shape));
  return {withShape(x, a.outShape)};
}

void evalMaxUnpool(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& idx = ctx.in(1);
  Tensor& y = ctx.out(0);
  std::memset(y.raw(), 0, y.byteSize());
  int64_t total = y.numElements();
  const int64_t* pi = idx.data<int64_t>();
  visitFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      if (pi[i] < 0 || pi[i] >= total)
        fail(ErrorKind::Runtime, "I[{}] = {} is out of range for an output of {} elements", i,
             pi[i], total);
      py[pi[i]] = px[i];
    }
  });
}

} // namespace

void registerScatterOps(OpTable& table) {
  table.add({.kind = OpKind::ScatterElements,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 11,
             .parse = parseScatterElements,
             .infer = inferScatterElements,
             .eval = evalScatterElements});
  table.add({.kind = OpKind::Scatter,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 9,
             .parse = parseScatter,
             .infer = inferScatterElements,
             .eval = evalScatterElements});
  table.add({.kind = OpKind::ScatterND,
             .minInputs = 3,
             .maxInputs = 3,
             .sinceOpset = 11,
             .parse = parseScatterND,
             .infer = inferScatterND,
             .eval = evalScatterND});
  table.add({.kind = OpKind::Compress,
             .minInputs = 2,
             .maxInputs = 2,
             .shapeOperands = {1},
             .sinceOpset = 9,
             .parse = parseCompress,
             .infer = inferCompress,
             .eval = evalCompress});
  table.add({.kind = OpKind::TopK,
             .minInputs = 1,
             .maxInputs = 2,
             .minOutputs = 2,
             .maxOutputs = 2,
             .shapeOperands = {1},
             .parse = parseTopK,
             .infer = inferTopK,
             .eval = evalTopK});
  table.add({.kind = OpKind::ReverseSequence,
             .minInputs = 2,
             .maxInputs = 2,
             .sinceOpset = 10,
             .parse = parseReverseSequence,
             .infer = inferReverseSequence,
             .eval = evalReverseSequence});
  table.add({.kind = OpKind::MaxUnpool,
             .minInputs = 2,
             .maxInputs = 3,
             .shapeOperands = {2},
             .sinceOpset = 9,
             .parse = parseMaxUnpool,
             .infer = inferMaxUnpool,
             .eval = evalMaxUnpool});
}

} // namespace triad::ir
