// Reduce ops: Reduce*, ArgMax/ArgMin, CumSum and CumProd (see ir/Ops.def for the list).
//
// Reductions accumulate in double for floating types (rounded once at the end) and in 64-bit
// integers for integer sums and products.
#include "ir/ops/Reduce.h"

#include "ir/ops/OpUtil.h"

#include <cstring>
#include <limits>

namespace triad::ir {
using namespace ops;

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <typename T> double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return double(float(v));
  else
    return double(v);
}

template <typename T> T fromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half(float(v));
  else if constexpr (std::is_integral_v<T>)
    // NaN (the mean of no elements, the log of a negative sum) has no integer value: 0 (a NaN to
    // int cast is undefined behaviour in C++).
    return std::isnan(v) ? T(0)
                         : static_cast<T>(std::clamp(v, double(std::numeric_limits<T>::lowest()),
                                                     double(std::numeric_limits<T>::max())));
  else
    return static_cast<T>(v);
}

// ---- Reduce* -----------------------------------------------------------------------------------

// Axes are an attribute before `axesInputSince` (13 for ReduceSum, 18 for the others) and the
// optional input 1 from then on.
std::shared_ptr<const Attrs> parseReduceWith(const ParseContext& ctx, int axesInputSince) {
  int64_t r = inputType(ctx, 0).rank();
  auto a = std::make_shared<ReduceAttrs>();
  a->keepdims = ctx.attrs.getInt("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset >= axesInputSince)
    axes = constInts(ctx, 1);
  else
    axes = ctx.attrs.getInts("axes");
  bool noop = ctx.attrs.getInt("noop_with_empty_axes", 0) != 0;
  if (axes && !axes->empty()) {
    a->axes = normalizeAxes(*axes, r, "axes");
    std::sort(a->axes.begin(), a->axes.end());
  } else if (!noop) {
    for (int64_t i = 0; i < r; ++i)
      a->axes.push_back(i);
  }
  return a;
}

Shape keptShape(const Shape& in, const std::vector<int64_t>& axes) {
  Shape s = in;
  for (int64_t d : axes)
    s[size_t(d)] = 1;
  return s;
}

InferFn inferReduceFor(ReduceKind kind) {
  return [kind](const InferContext& ctx) -> std::vector<TensorType> {
    const auto& a = ctx.as<ReduceAttrs>();
    const TensorType& in = ctx.in(0);
    bool ok = isFloat(in.dtype) || isInteger(in.dtype);
    if (!ok) unsupported("reduction on {} is not supported", dtypeName(in.dtype));
    (void)kind;
    for (int64_t d : a.axes)
      if (d >= in.rank()) invalid("axis {} is out of range for rank {}", d, in.rank());
    Shape out;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      bool reduced = std::find(a.axes.begin(), a.axes.end(), int64_t(d)) != a.axes.end();
      if (!reduced)
        out.push_back(in.shape[d]);
      else if (a.keepdims)
        out.push_back(1);
    }
    TensorType o = in;
    o.shape = out;
    return {o};
  };
}

// map[i]: output element that input element i reduces into.
template <typename T, typename Acc>
void reduceAccumulate(ReduceKind kind, const Tensor& X, Tensor& Y, const std::vector<int64_t>& map,
                      int64_t count) {
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  size_t n = size_t(Y.numElements());
  std::vector<Acc> acc(n, kind == ReduceKind::Prod ? Acc(1) : Acc(0));
  std::vector<double> mx; // LogSumExp: per-output maximum (for stability)
  if (kind == ReduceKind::LogSumExp) {
    mx.assign(n, -std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < map.size(); ++i)
      mx[size_t(map[i])] = std::max(mx[size_t(map[i])], toDouble(px[i]));
  }
  for (size_t i = 0; i < map.size(); ++i) {
    Acc& s = acc[size_t(map[i])];
    Acc v;
    if constexpr (std::is_same_v<Acc, double>)
      v = toDouble(px[i]);
    else
      v = Acc(px[i]);
    switch (kind) {
    case ReduceKind::Prod:
      s *= v;
      break;
    case ReduceKind::L1:
      if constexpr (std::is_signed_v<Acc>)
        s += v < 0 ? -v : v;
      else
        s += v;
      break;
    case ReduceKind::L2:
    case ReduceKind::SumSquare:
      s += v * v;
      break;
    case ReduceKind::LogSumExp:
      if constexpr (std::is_same_v<Acc, double>) {
        double m = mx[size_t(map[i])];
        if (std::isfinite(m)) s += std::exp(v - m);
      }
      break;
    default:
      s += v;
      break;
    }
  }
  for (size_t o = 0; o < n; ++o) {
    double v;
    if constexpr (std::is_same_v<Acc, double>)
      v = acc[o];
    else {
      // Integer sums/products: keep all 64 bits, then wrap into T like integer arithmetic.
      py[o] = static_cast<T>(acc[o]);
      continue;
    }
    switch (kind) {
    case ReduceKind::Mean:
      v = v / double(count);
      break;
    case ReduceKind::L2:
      v = std::sqrt(v);
      break;
    case ReduceKind::LogSum:
      v = std::log(v);
      break;
    case ReduceKind::LogSumExp:
      v = std::isfinite(mx[o]) ? mx[o] + std::log(v) : mx[o];
      break;
    default:
      break;
    }
    py[o] = fromDouble<T>(v);
  }
}

template <typename T>
void reduceMinMax(bool isMax, const Tensor& X, Tensor& Y, const std::vector<int64_t>& map) {
  const T* px = X.data<T>();
  T* py = Y.data<T>();
  using C = std::conditional_t<std::is_same_v<T, Half>, float, T>;
  size_t n = size_t(Y.numElements());
  std::vector<C> best(n);
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < map.size(); ++i) {
    size_t o = size_t(map[i]);
    C v = C(px[i]);
    if (!seen[o] || (isMax ? v > best[o] : v < best[o]) || v != v) {
      if (!(seen[o] && best[o] != best[o])) best[o] = v; // NaN sticks
      seen[o] = true;
    }
  }
  for (size_t o = 0; o < n; ++o) {
    if (seen[o])
      py[o] = T(best[o]);
    else if constexpr (std::is_floating_point_v<C>) // empty reduction
      py[o] = T(isMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity());
    else
      py[o] = isMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
}

EvalFn evalReduceFor(ReduceKind kind) {
  return [kind](const EvalContext& ctx) {
    const auto& a = ctx.as<ReduceAttrs>();
    const Tensor& X = ctx.in(0);
    Tensor& Y = ctx.out(0);
    if (a.axes.empty()) { // noop_with_empty_axes: the output is the input
      if (Y.byteSize()) std::memcpy(Y.raw(), X.raw(), Y.byteSize());
      return;
    }
    std::vector<int64_t> map = broadcastIndexMap(keptShape(X.shape(), a.axes), X.shape());
    int64_t count = Y.numElements() ? X.numElements() / Y.numElements() : 0;
    visitDType(X.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        TRIAD_ASSERT(false, "reduction on bool");
      } else if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
        reduceMinMax<T>(kind == ReduceKind::Max, X, Y, map);
      } else if constexpr (std::is_integral_v<T>) {
        using IAcc = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        if (kind == ReduceKind::Sum || kind == ReduceKind::Prod || kind == ReduceKind::L1 ||
            kind == ReduceKind::SumSquare)
          reduceAccumulate<T, IAcc>(kind, X, Y, map, count);
        else
          reduceAccumulate<T, double>(kind, X, Y, map, count);
      } else {
        reduceAccumulate<T, double>(kind, X, Y, map, count);
      }
    });
  };
}

// ---- ArgMax, ArgMin ----------------------------------------------------------------------------

std::shared_ptr<const Attrs> parseArgReduce(const ParseContext& ctx) {
  auto a = std::make_shared<ArgReduceAttrs>();
  a->axis =
      normalizeAxis(ctx.attrs.getInt("axis", 0), inputType(ctx, 0).rank(), "attribute 'axis'");
  a->keepdims = ctx.attrs.getInt("keepdims", 1) != 0;
  a->selectLastIndex = ctx.attrs.getInt("select_last_index", 0) != 0;
  return a;
}

std::vector<TensorType> inferArgReduce(const InferContext& ctx) {
  const auto& a = ctx.as<ArgReduceAttrs>();
  const TensorType& in = ctx.in(0);
  if (!isFloat(in.dtype) && !isInteger(in.dtype))
    unsupported("ArgMax/ArgMin on {} is not supported", dtypeName(in.dtype));
  requireRankAtLeast(in, 1, "input");
  if (a.axis >= in.rank()) invalid("axis {} is out of range for rank {}", a.axis, in.rank());
  if (in.shape[size_t(a.axis)] == 0) invalid("cannot take ArgMax/ArgMin over an empty axis");
  Shape out = in.shape;
  if (a.keepdims)
    out[size_t(a.axis)] = 1;
  else
    out.erase(out.begin() + a.axis);
  return {TensorType{DType::I64, out, {}}};
}

void evalArgReduce(const EvalContext& ctx, bool isMax) {
  const auto& a = ctx.as<ArgReduceAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& s = X.shape();
  int64_t outer = 1, inner = 1, dim = s[size_t(a.axis)];
  for (int64_t d = 0; d < a.axis; ++d)
    outer *= s[size_t(d)];
  for (size_t d = size_t(a.axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  int64_t* py = ctx.out(0).data<int64_t>();
  visitDType(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = std::conditional_t<std::is_same_v<T, Half>, float, T>;
    const T* px = X.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = px + o * dim * inner + i;
        C best = C(base[0]);
        int64_t at = 0;
        for (int64_t k = 1; k < dim; ++k) {
          C v = C(base[k * inner]);
          bool better = isMax ? v > best : v < best;
          if (better || (a.selectLastIndex && v == best)) {
            best = v;
            at = k;
          }
        }
        py[o * inner + i] = at;
      }
  });
}

// ---- CumSum, CumProd (opset 26) ----------------------------------------------------------------

std::shared_ptr<const Attrs> parseCumSum(const ParseContext& ctx) {
  auto a = std::make_shared<CumSumAttrs>();
  const Tensor* axis = ctx.constInput(1);
  if (!axis || axis->numElements() != 1) invalid("input 'axis' must be a scalar");
  a->axis = normalizeAxis(axis->getInt(0), inputType(ctx, 0).rank(), "input 'axis'");
  a->exclusive = ctx.attrs.getInt("exclusive", 0) != 0;
  a->reverse = ctx.attrs.getInt("reverse", 0) != 0;
  return a;
}

std::vector<TensorType> inferCumSum(const InferContext& ctx) {
  const auto& a = ctx.as<CumSumAttrs>();
  const TensorType& in = ctx.in(0);
  if (!isFloat(in.dtype) && !dtypeIn(in.dtype, {DType::I32, DType::I64, DType::U32, DType::U64}))
    unsupported("element type {} is not supported", dtypeName(in.dtype));
  requireRankAtLeast(in, 1, "input");
  if (a.axis >= in.rank()) invalid("axis {} is out of range for rank {}", a.axis, in.rank());
  return {in};
}

template <typename T> struct CumulativeAcc { using type = double; };
template <std::integral T> struct CumulativeAcc<T> { using type = std::make_unsigned_t<T>; };

/// Running sums (CumSum) or products (CumProd): floats accumulate in double, integers in
/// their own type, wrapping.
void evalCumulative(const EvalContext& ctx, bool product) {
  const auto& a = ctx.as<CumSumAttrs>();
  const Tensor& X = ctx.in(0);
  const Shape& s = X.shape();
  int64_t outer = 1, inner = 1, dim = s[size_t(a.axis)];
  for (int64_t d = 0; d < a.axis; ++d)
    outer *= s[size_t(d)];
  for (size_t d = size_t(a.axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  visitDType(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      TRIAD_ASSERT(false, "cumulative op on bool");
    } else {
      // Integers wrap in the unsigned type of their width (no signed overflow).
      using Acc = typename CumulativeAcc<T>::type;
      const T* px = X.data<T>();
      T* py = ctx.out(0).data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          Acc acc = product ? Acc(1) : Acc(0);
          for (int64_t step = 0; step < dim; ++step) {
            int64_t k = a.reverse ? dim - 1 - step : step;
            int64_t at = (o * dim + k) * inner + i;
            Acc v;
            if constexpr (std::is_same_v<Acc, double>)
              v = toDouble(px[at]);
            else
              v = Acc(px[at]);
            auto combine = [&] { acc = product ? Acc(acc * v) : Acc(acc + v); };
            if (!a.exclusive) combine();
            if constexpr (std::is_same_v<Acc, double>)
              py[at] = fromDouble<T>(acc);
            else
              py[at] = T(acc);
            if (a.exclusive) combine();
          }
        }
    }
  });
}

} // namespace

void registerReduceOps(OpTable& table) {
  struct Entry {
    OpKind kind;
    ReduceKind rk;
  };
  const Entry reduces[] = {
      {OpKind::ReduceMean, ReduceKind::Mean},
      {OpKind::ReduceSum, ReduceKind::Sum},
      {OpKind::ReduceMax, ReduceKind::Max},
      {OpKind::ReduceMin, ReduceKind::Min},
      {OpKind::ReduceProd, ReduceKind::Prod},
      {OpKind::ReduceL1, ReduceKind::L1},
      {OpKind::ReduceL2, ReduceKind::L2},
      {OpKind::ReduceLogSum, ReduceKind::LogSum},
      {OpKind::ReduceLogSumExp, ReduceKind::LogSumExp},
      {OpKind::ReduceSumSquare, ReduceKind::SumSquare},
  };
  for (const Entry& e : reduces) {
    int axesInputSince = e.kind == OpKind::ReduceSum ? 13 : 18;
    table.add(
        {.kind = e.kind,
         .maxInputs = 2,
         .shapeOperands = {1},
         .parse = [axesInputSince](
                      const ParseContext& ctx) { return parseReduceWith(ctx, axesInputSince); },
         .infer = inferReduceFor(e.rk),
         .eval = evalReduceFor(e.rk)});
  }
  table.add({.kind = OpKind::ArgMax,
             .parse = parseArgReduce,
             .infer = inferArgReduce,
             .eval = [](const EvalContext& ctx) { evalArgReduce(ctx, true); }});
  table.add({.kind = OpKind::ArgMin,
             .parse = parseArgReduce,
             .infer = inferArgReduce,
             .eval = [](const EvalContext& ctx) { evalArgReduce(ctx, false); }});
  struct Cumulative {
    OpKind kind;
    int since;
    bool product;
  };
  for (Cumulative c :
       {Cumulative{OpKind::CumSum, 11, false}, Cumulative{OpKind::CumProd, 26, true}})
    table.add(
        {.kind = c.kind,
         .minInputs = 2,
         .maxInputs = 2,
         .shapeOperands = {1},
         .sinceOpset = c.since,
         .parse = parseCumSum,
         .infer = inferCumSum,
         .eval = [product = c.product](const EvalContext& ctx) { evalCumulative(ctx, product); }});
}

} // namespace triad::ir
