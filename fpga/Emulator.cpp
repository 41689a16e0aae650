#include "fpga/Emulator.h"

#include "fpga/layers/Layer.h"
#include "ir/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace triad::fpga {

std::string LayerInfo::formats() const {
  std::string s;
  if (usesWeights)
    s += fmt::format("w {} ", formatToString(quant.weight().format)) +
         (usesAcc || op == "Add" || op == "BatchNormalization"
              ? fmt::format("b {} ", formatToString(quant.bias().format))
              : "");
  if (usesAcc) s += fmt::format("acc {} ", formatToString(quant.acc().format));
  s += fmt::format("-> {}", formatToString(outFormat));
  return s;
}

// The driver: plans every node through the layer table (fpga/layers/) and runs the layers.
struct Emulator::Impl {
  const ir::Graph& g;
  Quant input;
  std::optional<InputGrid> grid;
  std::map<int, RealAffine> real;
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<LayerInfo> infos;
  std::vector<FixedFormat> fmt;
  std::vector<bool> known;
  ValueRanges range; // calibration max |x| per value id

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
      if (v->type().shape.empty())
        fail(ErrorKind::Unsupported,
             "graph input '{}' is a scalar: the FPGA takes a batch of "
             "samples (the first dimension)",
             v->name());
      if (range[size_t(v->id())]) inRange = std::max(inRange.value_or(0), *range[size_t(v->id())]);
    }
    input = resolveInput(cfg, inRange);
    // A model whose inputs all go straight into the same QONNX Quant is quantized once, as that
    // Quant does (its layer then only clamps), unless the config sets the input precision.
    // A QDQ model whose inputs all go into the same QuantizeLinear onto an integer grid: the host
    // quantizes them onto it, as that QuantizeLinear does.
    if (!cfg.input.precision) {
      if (std::optional<Quant> q = importedInputQuant(g)) {
        input = *q;
      } else if (auto ig = importedInputGrid(g)) {
        grid = ig->first;
        input = Quant{ig->second, Rounding::Convergent, Overflow::Saturate};
      }
    }
    for (ir::Value* v : g.inputs()) {
      fmt[size_t(v->id())] = input.format;
      known[size_t(v->id())] = true;
    }
    plan(cfg);
    for (ir::Value* v : g.outputs())
      if (!known[size_t(v->id())])
        fail(ErrorKind::Unsupported, "graph output '{}' is not computed by an emulated layer",
             v->name());
    for (const auto& l : layers)
      infos.push_back(l->info);
    for (const auto& entry : cfg.layers) {
      const std::string& name = entry.first; // a plain reference: lambdas capture it (C++17)
      if (std::none_of(layers.begin(), layers.end(),
                       [&](const auto& l) { return l->info.name == name; })) {
        std::string names;
        for (const auto& l : layers)
          names += (names.empty() ? "" : ", ") + l->info.name;
        fail(ErrorKind::Usage,
             "the config names layer '{}', which is not a layer of the model "
             "(BatchNormalization folds into its Conv or Gemm; layers: {})",
             name, names);
      }
    }
  }

  void plan(const QuantConfig& cfg) {
    std::vector<int> uses(g.values().size(), 0);
    for (const auto& n : g.nodes())
      for (ir::Value* v : n->inputs())
        if (v) ++uses[size_t(v->id())];
    for (ir::Value* v : g.outputs())
      ++uses[size_t(v->id())];
    PlanContext ctx(g, cfg, range, fmt, known);
    ctx.importedMode = std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) {
      return n->kind() == ir::OpKind::Quant || n->kind() == ir::OpKind::BipolarQuant ||
             n->kind() == ir::OpKind::Trunc || n->kind() == ir::OpKind::QuantizeLinear;
    });
    ctx.inputGrid = grid;
    if (grid)
      for (ir::Value* v : g.inputs())
        ctx.setReal(v->id(), RealAffine{{grid->scale}, {}});
    for (const auto& up : g.nodes()) {
      const ir::Node& n = *up;
      if (isConstantQuantizer(n)) {
        ctx.foldConstantQuantizer(n); // a weight's precision, not a layer
        continue;
      }
      for (size_t i = 1; i < n.outputs().size(); ++i)
        if (n.output(i) && uses[size_t(n.output(i)->id())] > 0)
          unsupportedNode(n,
                          fmt::format("output {} is used; only the first output is emulated", i));
      const LayerKind* kind = findLayerKind(n.kind());
      if (!kind) unsupportedNode(n, "the FPGA emulator does not support this op");
      if (ir::Support s = kind->supports(n); !s.ok) unsupportedNode(n, s.reason);
      ctx.realApplied = false;
      std::unique_ptr<Layer> L = kind->plan(n, ctx);
      LayerInfo& info = L->info;
      info.name = n.name();
      info.op = std::string(opKindName(n.kind()));
      info.output = n.output(0)->id();
      L->outShape = n.output(0)->type().shape;
      auto first =
          std::find_if(info.inputs.begin(), info.inputs.end(), [](int v) { return v >= 0; });
      TRIAD_ASSERT(first != info.inputs.end(), "layer '{}' has no data operand", info.name);
      info.input = *first;
      info.inFormat = fmt[size_t(info.input)];
      info.outFormat = info.passThrough ? info.inFormat : info.quant.result().format;
      fmt[size_t(info.output)] = info.outFormat;
      known[size_t(info.output)] = true;
      if (!ctx.realApplied) propagateReal(n, info, ctx);
      layers.push_back(std::move(L));
    }
    real = ctx.reals();
  }
};

int64_t streamChunks(const ir::Graph& g, std::span<const ir::Tensor> inputs) {
  if (inputs.size() != 1 || g.inputs().size() != 1) return 0;
  const ir::Value* v = g.inputs()[0];
  const ir::Shape &want = v->type().shape, &got = inputs[0].shape();
  if (want.empty() || got.size() != want.size() || got[0] == want[0] || want[0] <= 0 ||
      !std::equal(got.begin() + 1, got.end(), want.begin() + 1))
    return 0;
  if (got[0] % want[0] != 0)
    fail(ErrorKind::Runtime,
         "input '{}' holds {} samples; the model fixes its leading dimension at {}, so its stream "
         "takes a multiple of {} samples",
         v->name(), got[0], want[0], want[0]);
  return got[0] / want[0];
}

namespace {

/// Rows [first, first + count) of t along its leading dimension.
ir::Tensor rowsOf(const ir::Tensor& t, int64_t first, int64_t count) {
  ir::TensorType type = t.type();
  size_t rowBytes = t.byteSize() / size_t(type.shape[0]);
  type.shape[0] = count;
  ir::Tensor out(type);
  std::memcpy(out.raw(), t.raw() + size_t(first) * rowBytes, size_t(count) * rowBytes);
  return out;
}

/// The tensors one after another along their leading dimension.
ir::Tensor concatRows(const std::vector<ir::Tensor>& parts) {
  ir::TensorType type = parts[0].type();
  if (type.shape.empty()) type.shape = {1};
  type.shape[0] = 0;
  for (const ir::Tensor& p : parts)
    type.shape[0] += p.shape().empty() ? 1 : p.shape()[0];
  ir::Tensor out(type);
  size_t at = 0;
  for (const ir::Tensor& p : parts) {
    std::memcpy(out.raw() + at, p.raw(), p.byteSize());
    at += p.byteSize();
  }
  return out;
}

} // namespace

ValueRanges observeRanges(const ir::Graph& g, std::span<const ir::Tensor> inputs,
                          const ir::ProgressFn& progress) {
  if (int64_t chunks = streamChunks(g, inputs)) {
    ValueRanges all;
    int64_t b = g.inputs()[0]->type().shape[0];
    for (int64_t c = 0; c < chunks; ++c) {
      ir::Tensor part = rowsOf(inputs[0], c * b, b);
      ValueRanges r = observeRanges(g, std::span<const ir::Tensor>(&part, 1), progress);
      all.resize(r.size());
      for (size_t i = 0; i < r.size(); ++i)
        if (r[i]) all[i] = std::max(all[i].value_or(0.0), *r[i]);
    }
    return all;
  }
  ValueRanges range(g.values().size());
  ir::Interpreter interp(g);
  interp.setProgress(progress); // per layer run
  std::vector<ir::Tensor> all = interp.runAll(inputs);
  for (size_t i = 0; i < all.size() && i < range.size(); ++i)
    // A value no node computes (a dead one) has no data: nothing observed.
    if (all[i].byteSize() > 0 && ir::isFloat(all[i].dtype()))
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
const std::optional<InputGrid>& Emulator::inputGrid() const {
  return impl_->grid;
}
int64_t Emulator::quantizeInput(double x, CastStatus* st) const {
  if (impl_->grid) return impl_->grid->quantize(x);
  const Quant& q = impl_->input;
  return quantize(x, q.format, q.rounding, q.overflow, st);
}
const RealAffine* Emulator::realAffine(int valueId) const {
  auto it = impl_->real.find(valueId);
  return it == impl_->real.end() ? nullptr : &it->second;
}
const std::vector<std::unique_ptr<Layer>>& Emulator::planned() const {
  return impl_->layers;
}

EmulatorResult Emulator::run(std::span<const ir::Tensor> inputs, bool compare) const {
  const Impl& I = *impl_;
  const ir::Graph& g = I.g;
  if (int64_t chunks = streamChunks(g, inputs)) {
    int64_t b = g.inputs()[0]->type().shape[0];
    std::vector<EmulatorResult> parts;
    for (int64_t c = 0; c < chunks; ++c) {
      ir::Tensor part = rowsOf(inputs[0], c * b, b);
      parts.push_back(run(std::span<const ir::Tensor>(&part, 1), compare));
    }
    EmulatorResult R = parts[0];
    for (auto member : {&EmulatorResult::raw, &EmulatorResult::values, &EmulatorResult::floatRef})
      for (size_t i = 0; i < (R.*member).size(); ++i) {
        std::vector<ir::Tensor> each;
        for (const EmulatorResult& p : parts)
          each.push_back((p.*member)[i]);
        (R.*member)[i] = concatRows(each);
      }
    for (size_t c = 1; c < parts.size(); ++c) {
      const EmulatorResult& p = parts[c];
      for (size_t i = 0; i < R.layers.size(); ++i) {
        LayerReport& r = R.layers[i];
        const LayerReport& q = p.layers[i];
        r.maxAbsError = std::max(r.maxAbsError, q.maxAbsError);
        r.saturated += q.saturated;
        r.wrapped += q.wrapped;
        r.elements += q.elements;
      }
      for (size_t i = 0; i < R.layerRaw.size(); ++i)
        R.layerRaw[i].insert(R.layerRaw[i].end(), p.layerRaw[i].begin(), p.layerRaw[i].end());
    }
    return R;
  }
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
    const RealAffine* a = realAffine(id);
    if (a && !ir::isFloat(t.dtype())) return; // a QuantizeLinear's integers: q, not q - z
    int64_t plane = 1;
    for (size_t d = 2; d < t.shape().size(); ++d)
      plane *= t.shape()[d];
    for (int64_t i = 0; i < t.numElements(); ++i) {
      const FixedFormat& f = I.fmt[size_t(id)];
      double x = a ? a->real(v[size_t(i)], f, i, plane) : dequantize(v[size_t(i)], f);
      rep.maxAbsError = std::max(rep.maxAbsError, std::fabs(x - t.getDouble(i)));
    }
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
      raw[k] = quantizeInput(x[k], &st);
      inRep.saturated += st.saturated;
      inRep.wrapped += st.wrapped;
    }
    inRep.elements += int64_t(x.size());
    maxErr(v->id(), inRep);
  }
  R.layers.push_back(inRep);

  for (const auto& L : I.layers) {
    LayerReport rep{
        L->info.name, L->info.op, L->info.formats(), 0, 0, 0, ir::numElements(L->outShape)};
    L->exec(val, rep);
    maxErr(L->info.output, rep);
    R.layers.push_back(std::move(rep));
    R.layerRaw.push_back(val[size_t(L->info.output)]);
  }

  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const ir::Value* v = g.outputs()[o];
    const FixedFormat& f = I.fmt[size_t(v->id())];
    ir::Tensor raw(ir::TensorType{ir::DType::Fixed, v->type().shape, f});
    ir::Tensor flt(ir::DType::F32, v->type().shape);
    const auto& src = val[size_t(v->id())];
    const RealAffine* a = realAffine(v->id());
    int64_t plane = 1;
    for (size_t d = 2; d < v->type().shape.size(); ++d)
      plane *= v->type().shape[d];
    for (size_t i = 0; i < src.size(); ++i) {
      raw.data<int64_t>()[i] = src[i];
      flt.data<float>()[i] =
          float(a ? a->real(src[i], f, int64_t(i), plane) : dequantize(src[i], f));
    }
    R.raw.push_back(std::move(raw));
    R.values.push_back(std::move(flt));
    if (compare) R.floatRef.push_back(ref[size_t(v->id())]);
  }
  return R;
}

} // namespace triad::fpga
