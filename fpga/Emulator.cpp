#include "fpga/Emulator.h"

#include "ir/Interpreter.h"
#include "ir/ops/Activation.h"
#include "ir/ops/Linear.h"
#include "ir/ops/Normalization.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace triad::fpga {

namespace {

using i128 = __int128;

enum class LKind { Dense, Relu, LeakyRelu, Clip, Pass, Add, Sigmoid, Tanh, Softmax };

struct Layer {
  LayerInfo info;
  LKind kind{};
  std::vector<int> in; // data input value ids (Add: -1 for the constant operand)
  int out = -1;
  ir::Shape outShape;
  // Dense: out[m][n] = sum_k x[m][k] * w[n][k] + b[n]
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> w, b;
  // LeakyRelu slope (weight format); Clip bounds (input format)
  int64_t alpha = 0, lo = 0, hi = 0;
  // Add
  std::vector<ir::Shape> inShapes;
  std::vector<int64_t> constRaw; // the constant operand, in the bias format
  int constIndex = -1;
  // Tables: index = (raw >> shift) + offset, clamped to [0, size)
  std::vector<int64_t> table, invTable;
  int tableShift = 0, invShift = 0;
  int64_t tableOffset = 0;
  int64_t rows = 0, cols = 0; // Softmax
};

// floor(raw / 2^sh) for any sh (negative: multiply), saturated to int64.
int64_t shiftFloor(int64_t raw, int sh) {
  if (sh >= 0) return sh >= 63 ? (raw < 0 ? -1 : 0) : raw >> sh;
  if (-sh >= 62) return raw == 0 ? 0 : raw < 0 ? INT64_MIN / 2 : INT64_MAX / 2;
  i128 v = i128(raw) * (i128(1) << -sh);
  return v > INT64_MAX / 2 ? INT64_MAX / 2 : v < INT64_MIN / 2 ? INT64_MIN / 2 : int64_t(v);
}

int64_t tableIndex(int64_t raw, int shift, int64_t offset, int64_t size) {
  int64_t i = shiftFloor(raw, shift) + offset;
  return std::clamp<int64_t>(i, 0, size - 1);
}

int log2Exact(double v) {
  int e = 0;
  double m = std::frexp(v, &e);
  TRIAD_ASSERT(m == 0.5, "{} is not a power of two", v);
  return e - 1;
}

double maxAbsOf(const std::vector<double>& v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

// Flat input index for every output index under numpy broadcasting.
std::vector<int64_t> broadcastMap(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> map(size_t(ir::numElements(out)));
  auto inStrides = ir::stridesOf(in);
  size_t off = out.size() - in.size();
  std::vector<int64_t> idx(out.size(), 0);
  for (size_t flat = 0; flat < map.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1) src += idx[d + off] * inStrides[d];
    map[flat] = src;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return map;
}

[[noreturn]] void unsupportedNode(const ir::Node& n, const std::string& why) {
  fail(ErrorKind::Unsupported, "node '{}' ({}): {}", n.name(), opKindName(n.kind()), why);
}

} // namespace

std::string LayerInfo::formats() const {
  std::string s;
  if (usesWeights)
    s += fmt::format("w {} ", formatToString(quant.weight().format)) +
         (op.starts_with("Gemm") || op.starts_with("MatMul") || op == "Add"
              ? fmt::format("b {} ", formatToString(quant.bias().format))
              : "");
  if (usesAcc) s += fmt::format("acc {} ", formatToString(quant.acc().format));
  s += fmt::format("-> {}", formatToString(outFormat));
  return s;
}

struct Emulator::Impl {
  const ir::Graph& g;
  Quant input;
  std::vector<Layer> layers;
  std::vector<LayerInfo> infos;
  std::vector<FixedFormat> fmt;
  std::vector<bool> known;
  std::vector<std::optional<double>> range; // calibration max |x| per value id

  Impl(const ir::Graph& graph, const QuantConfig& cfg, const ValueRanges& ranges)
      : g(graph), range(ranges) {
    size_t nv = g.values().size();
    fmt.resize(nv);
    known.assign(nv, false);
    range.resize(nv);
    std::optional<double> inRange;
    for (ir::Value* v : g.inputs()) {
      if (!ir::isFloat(v->type().dtype))
        fail(ErrorKind::Unsupported, "graph input '{}' is {}: the emulator takes float inputs",
             v->name(), typeToString(v->type()));
      if (range[size_t(v->id())]) inRange = std::max(inRange.value_or(0), *range[size_t(v->id())]);
    }
    input = resolveInput(cfg, inRange);
    for (ir::Value* v : g.inputs()) {
      fmt[size_t(v->id())] = input.format;
      known[size_t(v->id())] = true;
    }
    plan(cfg);
    for (ir::Value* v : g.outputs())
      if (!known[size_t(v->id())])
        fail(ErrorKind::Unsupported, "graph output '{}' is not computed by an emulated layer",
             v->name());
    for (const Layer& l : layers)
      infos.push_back(l.info);
    for (const auto& [name, spec] : cfg.layers) {
      (void)spec;
      if (std::none_of(layers.begin(), layers.end(),
                       [&](const Layer& l) { return l.info.name == name; })) {
        std::string names;
        for (const Layer& l : layers)
          names += (names.empty() ? "" : ", ") + l.info.name;
        fail(ErrorKind::Usage,
             "the config names layer '{}', which is not a layer of the model "
             "(BatchNormalization folds into its Gemm; layers: {})",
             name, names);
      }
    }
  }

  int dataInput(const ir::Node& n, size_t i) {
    ir::Value* v = n.input(i);
    if (!v) unsupportedNode(n, fmt::format("input {} is missing", i));
    if (v->isConstant())
      unsupportedNode(
          n, fmt::format("input {} ('{}') is a constant; the emulator expects data", i, v->name()));
    if (!known[size_t(v->id())])
      unsupportedNode(n, fmt::format("input '{}' is not produced by an emulated layer", v->name()));
    return v->id();
  }

  const ir::Tensor& constInput(const ir::Node& n, size_t i, const char* what) {
    ir::Value* v = n.input(i);
    if (!v || !v->isConstant())
      unsupportedNode(n, fmt::format("{} (input {}) must be a constant", what, i));
    return v->constant();
  }

  void plan(const QuantConfig& cfg) {
    std::vector<std::vector<const ir::Node*>> consumers(g.values().size());
    for (const auto& n : g.nodes())
      for (ir::Value* v : n->inputs())
        if (v) consumers[size_t(v->id())].push_back(n.get());
    std::set<int> graphOutputs;
    for (ir::Value* v : g.outputs())
      graphOutputs.insert(v->id());
    std::set<const ir::Node*> folded;

    for (const auto& up : g.nodes()) {
      const ir::Node& n = *up;
      if (folded.count(&n)) continue;
      Layer L;
      L.info.name = n.name();
      L.info.op = std::string(opKindName(n.kind()));
      L.out = n.output(0)->id();
      for (size_t i = 1; i < n.outputs().size(); ++i)
        if (n.output(i) && !consumers[size_t(n.output(i)->id())].empty())
          unsupportedNode(n,
                          fmt::format("output {} is used; only the first output is emulated", i));
      RoleRanges rr;
      double tableRange = 8;
      switch (n.kind()) {
      case ir::OpKind::Gemm:
      case ir::OpKind::MatMul: {
        L.kind = LKind::Dense;
        L.in = {dataInput(n, 0)};
        const ir::Shape& aShape = n.input(0)->type().shape;
        const ir::Tensor& B = constInput(n, 1, "the weight matrix B");
        if (B.rank() != 2) unsupportedNode(n, "the weight matrix must be 2-D");
        std::vector<double> bv = B.toDoubleVector();
        std::vector<double> w, bias;
        bool transB = false;
        double alpha = 1, beta = 1;
        if (n.kind() == ir::OpKind::Gemm) {
          const auto& a = n.attrs<ir::GemmAttrs>();
          if (a.transA) unsupportedNode(n, "transA=1 is not supported");
          transB = a.transB;
          alpha = a.alpha;
          beta = a.beta;
          L.K = aShape[1];
          L.M = aShape[0];
        } else {
          if (aShape.empty()) unsupportedNode(n, "scalar input");
          L.K = aShape.back();
          L.M = ir::numElements(aShape) / std::max<int64_t>(L.K, 1);
        }
        L.N = transB ? B.shape()[0] : B.shape()[1];
        w.resize(size_t(L.N * L.K));
        for (int64_t nn = 0; nn < L.N; ++nn)
          for (int64_t k = 0; k < L.K; ++k)
            w[size_t(nn * L.K + k)] = alpha * bv[size_t(transB ? nn * L.K + k : k * L.N + nn)];
        if (n.kind() == ir::OpKind::Gemm && n.input(2)) {
          const ir::Tensor& C = constInput(n, 2, "the bias C");
          std::vector<double> cv = C.toDoubleVector();
          bias.resize(size_t(L.N));
          if (C.numElements() == 1)
            std::fill(bias.begin(), bias.end(), beta * cv[0]);
          else if (C.numElements() == L.N && C.shape().back() == L.N)
            for (int64_t nn = 0; nn < L.N; ++nn)
              bias[size_t(nn)] = beta * cv[size_t(nn)];
          else
            unsupportedNode(n, fmt::format("bias of shape {} (expected [{}] or [1,{}])",
                                           ir::shapeToString(C.shape()), L.N, L.N));
        }
        // Fold a following BatchNormalization over the N channels.
        const auto& cons = consumers[size_t(L.out)];
        if (n.outputs().size() == 1 && cons.size() == 1 && !graphOutputs.count(L.out) &&
            cons[0]->kind() == ir::OpKind::BatchNormalization && ir::numElements(aShape) > 0 &&
            n.output(0)->type().rank() == 2) {
          const ir::Node& bn = *cons[0];
          bool ok = bn.outputs().size() == 1 || consumers[size_t(bn.output(1)->id())].empty();
          for (size_t i = 1; i <= 4; ++i)
            ok = ok && bn.input(i) && bn.input(i)->isConstant() &&
                 bn.input(i)->constant().numElements() == L.N;
          if (ok) {
            float eps = bn.attrs<ir::NormAttrs>().epsilon;
            auto sc = bn.input(1)->constant().toDoubleVector();
            auto sh = bn.input(2)->constant().toDoubleVector();
            auto mean = bn.input(3)->constant().toDoubleVector();
            auto var = bn.input(4)->constant().toDoubleVector();
            if (bias.empty()) bias.assign(size_t(L.N), 0.0);
            for (int64_t nn = 0; nn < L.N; ++nn) {
              double s = sc[size_t(nn)] / std::sqrt(var[size_t(nn)] + double(eps));
              for (int64_t k = 0; k < L.K; ++k)
                w[size_t(nn * L.K + k)] *= s;
              bias[size_t(nn)] = (bias[size_t(nn)] - mean[size_t(nn)]) * s + sh[size_t(nn)];
            }
            folded.insert(&bn);
            L.info.folded.push_back(bn.name());
            L.info.op += "+BatchNormalization";
            L.out = bn.output(0)->id();
          }
        }
        rr[0] = maxAbsOf(w);
        if (!bias.empty()) rr[1] = maxAbsOf(bias);
        rr[2] = rr[3] = range[size_t(L.out)];
        L.info.quant = resolveLayer(cfg, L.info.name, rr);
        const Quant& qw = L.info.quant.weight();
        const Quant& qb = L.info.quant.bias();
        for (double x : w) {
          CastStatus st;
          L.w.push_back(quantize(x, qw.format, qw.rounding, qw.overflow, &st));
          L.info.constSaturated += st.saturated || st.wrapped;
        }
        for (double x : bias) {
          CastStatus st;
          L.b.push_back(quantize(x, qb.format, qb.rounding, qb.overflow, &st));
          L.info.constSaturated += st.saturated || st.wrapped;
        }
        L.info.usesWeights = L.info.usesAcc = true;
        productFormat(fmt[size_t(L.in[0])], qw.format); // asserts the width
        if (L.info.quant.exactAccumulator)
          L.info.quant.roles[size_t(Role::Accumulator)].format =
              exactAccumulator(fmt[size_t(L.in[0])], qw.format, L.K);
        break;
      }
      case ir::OpKind::Relu:
      case ir::OpKind::LeakyRelu:
      case ir::OpKind::Clip: {
        L.kind = n.kind() == ir::OpKind::Relu        ? LKind::Relu
                 : n.kind() == ir::OpKind::LeakyRelu ? LKind::LeakyRelu
                                                     : LKind::Clip;
        L.in = {dataInput(n, 0)};
        if (L.kind == LKind::LeakyRelu) rr[0] = std::fabs(n.attrs<ir::AlphaAttrs>().alpha);
        rr[3] = range[size_t(L.out)];
        L.info.quant = resolveLayer(cfg, L.info.name, rr);
        const FixedFormat& inF = fmt[size_t(L.in[0])];
        if (L.kind == LKind::LeakyRelu) {
          const Quant& qw = L.info.quant.weight();
          CastStatus st;
          L.alpha =
              quantize(n.attrs<ir::AlphaAttrs>().alpha, qw.format, qw.rounding, qw.overflow, &st);
          L.info.constSaturated += st.saturated || st.wrapped;
          L.info.usesWeights = true;
        } else if (L.kind == LKind::Clip) {
          const auto& a = n.attrs<ir::ClipAttrs>();
          auto bound = [&](size_t i, std::optional<float> attr, int64_t dflt) {
            double v;
            if (n.input(i))
              v = constInput(n, i, i == 1 ? "min" : "max").getDouble(0);
            else if (attr)
              v = *attr;
            else
              return dflt;
            return quantize(v, inF, Rounding::Convergent, Overflow::Saturate);
          };
          L.lo = bound(1, a.min, minRaw(inF));
          L.hi = bound(2, a.max, maxRaw(inF));
        }
        break;
      }
      case ir::OpKind::Identity:
      case ir::OpKind::Flatten:
      case ir::OpKind::Reshape:
      case ir::OpKind::Dropout: {
        L.kind = LKind::Pass;
        L.in = {dataInput(n, 0)};
        L.info.passThrough = true;
        L.info.quant = resolveLayer(cfg, L.info.name, rr);
        break;
      }
      case ir::OpKind::Add: {
        L.kind = LKind::Add;
        for (size_t i = 0; i < 2; ++i) {
          ir::Value* v = n.input(i);
          L.inShapes.push_back(v->type().shape);
          if (v->isConstant()) {
            if (L.constIndex >= 0) unsupportedNode(n, "both operands are constants");
            L.constIndex = int(i);
            L.in.push_back(-1);
            rr[1] = maxAbsOf(v->constant().toDoubleVector());
          } else {
            L.in.push_back(dataInput(n, i));
          }
        }
        rr[3] = range[size_t(L.out)];
        L.info.quant = resolveLayer(cfg, L.info.name, rr);
        if (L.constIndex >= 0) {
          const Quant& qb = L.info.quant.bias();
          for (double x : n.input(size_t(L.constIndex))->constant().toDoubleVector()) {
            CastStatus st;
            L.constRaw.push_back(quantize(x, qb.format, qb.rounding, qb.overflow, &st));
            L.info.constSaturated += st.saturated || st.wrapped;
          }
        }
        break;
      }
      case ir::OpKind::Sigmoid:
      case ir::OpKind::Tanh: {
        L.kind = n.kind() == ir::OpKind::Sigmoid ? LKind::Sigmoid : LKind::Tanh;
        L.in = {dataInput(n, 0)};
        tableRange = L.kind == LKind::Tanh ? 4 : 8;
        rr[3] = L.kind == LKind::Tanh ? 1.0 : 1.0;
        L.info.quant = resolveLayer(cfg, L.info.name, rr, tableRange);
        const LayerQuant& q = L.info.quant;
        // N entries over [-R, R): step 2^s; index = floor(x / step) + N/2.
        double step = 2 * q.tableRange / double(q.tableSize);
        int s = log2Exact(step);
        L.tableShift = fmt[size_t(L.in[0])].fracBits() + s;
        L.tableOffset = q.tableSize / 2;
        for (int64_t i = 0; i < q.tableSize; ++i) {
          double x = -q.tableRange + (double(i) + 0.5) * step;
          double y = L.kind == LKind::Sigmoid ? 1 / (1 + std::exp(-x)) : std::tanh(x);
          L.table.push_back(
              quantize(y, q.result().format, Rounding::Convergent, Overflow::Saturate));
        }
        break;
      }
      case ir::OpKind::Softmax: {
        L.kind = LKind::Softmax;
        L.in = {dataInput(n, 0)};
        const ir::Shape& sh = n.input(0)->type().shape;
        const auto& axes = n.attrs<ir::SoftmaxAttrs>().axes;
        if (sh.empty() || axes != std::vector<int64_t>{int64_t(sh.size()) - 1})
          unsupportedNode(n, "only a softmax over the last axis is supported");
        L.cols = sh.back();
        L.rows = ir::numElements(sh) / std::max<int64_t>(L.cols, 1);
        rr[3] = 1.0;
        L.info.quant = resolveLayer(cfg, L.info.name, rr, 8);
        LayerQuant& q = L.info.quant;
        if (q.invRange == 0)
          q.invRange = std::ldexp(1.0, int(std::ceil(std::log2(double(L.cols)))));
        // exp table: N entries over [-R, 0), step 2^s; index = floor(d / step) + N.
        double step = q.tableRange / double(q.tableSize);
        L.tableShift = fmt[size_t(L.in[0])].fracBits() + log2Exact(step);
        L.tableOffset = q.tableSize;
        for (int64_t i = 0; i < q.tableSize; ++i)
          L.table.push_back(quantize(std::exp(-q.tableRange + (double(i) + 0.5) * step),
                                     q.exp.format, q.exp.rounding, q.exp.overflow));
        // reciprocal table: N entries over [0, invRange); index = floor(sum / istep).
        double istep = q.invRange / double(q.tableSize);
        L.invShift = q.exp.format.fracBits() + log2Exact(istep);
        for (int64_t i = 0; i < q.tableSize; ++i)
          L.invTable.push_back(quantize(1.0 / ((double(i) + 0.5) * istep), q.inv.format,
                                        q.inv.rounding, q.inv.overflow));
        productFormat(q.exp.format, q.inv.format);
        break;
      }
      default:
        unsupportedNode(n, "the FPGA emulator does not support this op");
      }
      L.outShape = g.values()[size_t(L.out)]->type().shape;
      if (L.kind == LKind::Pass) {
        L.info.inFormat = L.info.outFormat = fmt[size_t(L.in[0])];
      } else {
        L.info.inFormat = L.in[0] >= 0 ? fmt[size_t(L.in[0])] : fmt[size_t(L.in[1])];
        L.info.outFormat = L.info.quant.result().format;
      }
      fmt[size_t(L.out)] = L.info.outFormat;
      known[size_t(L.out)] = true;
      L.info.input = L.in[0] >= 0 ? L.in[0] : (L.in.size() > 1 ? L.in[1] : -1);
      L.info.output = L.out;
      L.info.inputs = L.in;
      L.info.alpha = L.alpha;
      L.info.lo = L.lo;
      L.info.hi = L.hi;
      L.info.constRaw = L.constRaw;
      if (L.constIndex >= 0) L.info.constShape = L.inShapes[size_t(L.constIndex)];
      L.info.table = L.table;
      L.info.invTable = L.invTable;
      L.info.tableShift = L.tableShift;
      L.info.invShift = L.invShift;
      if (L.kind == LKind::Dense) {
        L.info.fanIn = L.K;
        L.info.fanOut = L.N;
        L.info.weights = L.w;
        L.info.biases = L.b;
      }
      layers.push_back(std::move(L));
    }
  }

  // Runs one layer; counts per output element.
  void exec(const Layer& L, std::vector<std::vector<int64_t>>& val, LayerReport& rep) const {
    const Quant& res = L.info.quant.result();
    std::vector<int64_t> out(size_t(ir::numElements(L.outShape)));
    auto count = [&](const CastStatus& st) {
      rep.saturated += st.saturated;
      rep.wrapped += st.wrapped;
    };
    const FixedFormat inF = L.in[0] >= 0 ? fmt[size_t(L.in[0])] : FixedFormat{};
    switch (L.kind) {
    case LKind::Dense: {
      const std::vector<int64_t>& x = val[size_t(L.in[0])];
      const Quant& qw = L.info.quant.weight();
      const Quant& qa = L.info.quant.acc();
      const Quant& qb = L.info.quant.bias();
      FixedFormat pf = productFormat(inF, qw.format);
      const FixedFormat& af = qa.format;
      for (int64_t m = 0; m < L.M; ++m)
        for (int64_t nn = 0; nn < L.N; ++nn) {
          CastStatus st;
          i128 exact = 0;
          for (int64_t k = 0; k < L.K; ++k) {
            int64_t p = multiply(x[size_t(m * L.K + k)], inF, L.w[size_t(nn * L.K + k)], qw.format);
            exact += cast(p, pf, af, qa.rounding, qa.overflow, &st);
          }
          if (!L.b.empty())
            exact += cast(L.b[size_t(nn)], qb.format, af, qa.rounding, qa.overflow, &st);
          // The sum wraps modulo 2^accWidth whatever the order of additions.
          int64_t acc = wrapBits(exact, af.width, af.isSigned);
          if (acc != exact) st.wrapped = true;
          out[size_t(m * L.N + nn)] = cast(acc, af, res.format, res.rounding, res.overflow, &st);
          count(st);
        }
      break;
    }
    case LKind::Relu:
    case LKind::LeakyRelu:
    case LKind::Clip: {
      const std::vector<int64_t>& x = val[size_t(L.in[0])];
      const Quant& qw = L.info.quant.weight();
      for (size_t i = 0; i < out.size(); ++i) {
        CastStatus st;
        int64_t v = x[i];
        if (L.kind == LKind::Relu)
          out[i] = cast(std::max<int64_t>(v, 0), inF, res.format, res.rounding, res.overflow, &st);
        else if (L.kind == LKind::Clip)
          out[i] =
              cast(std::clamp(v, L.lo, L.hi), inF, res.format, res.rounding, res.overflow, &st);
        else if (v >= 0)
          out[i] = cast(v, inF, res.format, res.rounding, res.overflow, &st);
        else
          out[i] = cast(multiply(v, inF, L.alpha, qw.format), productFormat(inF, qw.format),
                        res.format, res.rounding, res.overflow, &st);
        count(st);
      }
      break;
    }
    case LKind::Pass:
      out = val[size_t(L.in[0])];
      break;
    case LKind::Add: {
      FixedFormat f[2];
      const std::vector<int64_t>* src[2];
      for (int i = 0; i < 2; ++i) {
        if (L.in[size_t(i)] < 0) {
          f[i] = L.info.quant.bias().format;
          src[i] = &L.constRaw;
        } else {
          f[i] = fmt[size_t(L.in[size_t(i)])];
          src[i] = &val[size_t(L.in[size_t(i)])];
        }
      }
      FixedFormat sf = sumFormat(f[0], f[1]);
      auto m0 = broadcastMap(L.inShapes[0], L.outShape);
      auto m1 = broadcastMap(L.inShapes[1], L.outShape);
      for (size_t i = 0; i < out.size(); ++i) {
        CastStatus st;
        int64_t s = add((*src[0])[size_t(m0[i])], f[0], (*src[1])[size_t(m1[i])], f[1]);
        out[i] = cast(s, sf, res.format, res.rounding, res.overflow, &st);
        count(st);
      }
      break;
    }
    case LKind::Sigmoid:
    case LKind::Tanh: {
      const std::vector<int64_t>& x = val[size_t(L.in[0])];
      int64_t n = int64_t(L.table.size());
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = L.table[size_t(tableIndex(x[i], L.tableShift, L.tableOffset, n))];
      break;
    }
    case LKind::Softmax: {
      const std::vector<int64_t>& x = val[size_t(L.in[0])];
      const LayerQuant& q = L.info.quant;
      int64_t n = int64_t(L.table.size());
      FixedFormat pf = productFormat(q.exp.format, q.inv.format);
      std::vector<int64_t> e(size_t(L.cols));
      for (int64_t r = 0; r < L.rows; ++r) {
        const int64_t* row = &x[size_t(r * L.cols)];
        int64_t mx = *std::max_element(row, row + L.cols);
        int64_t sum = 0;
        for (int64_t c = 0; c < L.cols; ++c) {
          e[size_t(c)] = L.table[size_t(tableIndex(row[c] - mx, L.tableShift, L.tableOffset, n))];
          sum += e[size_t(c)];
        }
        int64_t inv = L.invTable[size_t(tableIndex(sum, L.invShift, 0, n))];
        for (int64_t c = 0; c < L.cols; ++c) {
          CastStatus st;
          out[size_t(r * L.cols + c)] =
              cast(multiply(e[size_t(c)], q.exp.format, inv, q.inv.format), pf, res.format,
                   res.rounding, res.overflow, &st);
          count(st);
        }
      }
      break;
    }
    }
    val[size_t(L.out)] = std::move(out);
  }
};

ValueRanges observeRanges(const ir::Graph& g, std::span<const ir::Tensor> inputs) {
  ValueRanges range(g.values().size());
  std::vector<ir::Tensor> all = ir::Interpreter(g).runAll(inputs);
  for (size_t i = 0; i < all.size() && i < range.size(); ++i)
    if (all[i].numElements() > 0 && ir::isFloat(all[i].dtype()))
      range[i] = maxAbsOf(all[i].toDoubleVector());
  return range;
}

Emulator::Emulator(const ir::Graph& g, const QuantConfig& config,
                   std::span<const ir::Tensor> calibration)
    : Emulator(g, config, calibration.empty() ? ValueRanges{} : observeRanges(g, calibration)) {}
Emulator::Emulator(const ir::Graph& g, const QuantConfig& config, const ValueRanges& ranges)
    : impl_(std::make_unique<Impl>(g, config, ranges)) {}
Emulator::~Emulator() = default;

const std::vector<LayerInfo>& Emulator::layers() const {
  return impl_->infos;
}
const Quant& Emulator::inputQuant() const {
  return impl_->input;
}

EmulatorResult Emulator::run(std::span<const ir::Tensor> inputs, bool compare) const {
  const Impl& I = *impl_;
  const ir::Graph& g = I.g;
  if (inputs.size() != g.inputs().size())
    fail(ErrorKind::Runtime, "{} inputs given; the model has {}", inputs.size(), g.inputs().size());
  EmulatorResult R;
  std::vector<ir::Tensor> ref;
  if (compare) ref = ir::Interpreter(g).runAll(inputs);
  std::vector<std::vector<int64_t>> val(g.values().size());
  auto maxErr = [&](int id, LayerReport& rep) {
    if (!compare || size_t(id) >= ref.size() || ref[size_t(id)].numElements() == 0) return;
    const ir::Tensor& t = ref[size_t(id)];
    const auto& v = val[size_t(id)];
    for (int64_t i = 0; i < t.numElements(); ++i)
      rep.maxAbsError = std::max(
          rep.maxAbsError, std::fabs(dequantize(v[size_t(i)], I.fmt[size_t(id)]) - t.getDouble(i)));
  };

  LayerReport inRep{"(input)", "quantize", "-> " + formatToString(I.input.format), 0, 0, 0, 0};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* v = g.inputs()[i];
    if (inputs[i].shape() != v->type().shape)
      fail(ErrorKind::Runtime, "input '{}' expects {}, got {}", v->name(), typeToString(v->type()),
           typeToString(inputs[i].type()));
    std::vector<double> x = inputs[i].toDoubleVector();
    auto& raw = val[size_t(v->id())];
    raw.resize(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      CastStatus st;
      raw[k] = quantize(x[k], I.input.format, I.input.rounding, I.input.overflow, &st);
      inRep.saturated += st.saturated;
      inRep.wrapped += st.wrapped;
    }
    inRep.elements += int64_t(x.size());
    maxErr(v->id(), inRep);
  }
  R.layers.push_back(inRep);

  for (const Layer& L : I.layers) {
    LayerReport rep{L.info.name, L.info.op, L.info.formats(), 0, 0, 0, ir::numElements(L.outShape)};
    I.exec(L, val, rep);
    maxErr(L.out, rep);
    R.layers.push_back(std::move(rep));
    R.layerRaw.push_back(val[size_t(L.out)]);
  }

  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const ir::Value* v = g.outputs()[o];
    const FixedFormat& f = I.fmt[size_t(v->id())];
    ir::Tensor raw(ir::TensorType{ir::DType::Fixed, v->type().shape, f});
    ir::Tensor flt(ir::DType::F32, v->type().shape);
    const auto& src = val[size_t(v->id())];
    for (size_t i = 0; i < src.size(); ++i) {
      raw.data<int64_t>()[i] = src[i];
      flt.data<float>()[i] = float(dequantize(src[i], f));
    }
    R.raw.push_back(std::move(raw));
    R.values.push_back(std::move(flt));
    if (compare) R.floatRef.push_back(ref[size_t(v->id())]);
  }
  return R;
}

} // namespace triad::fpga
