// Helpers shared by the layer files and the one table of layer kinds.
#include "fpga/layers/Layer.h"
#include "ir/Interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace triad::fpga {

extern const LayerKind kDenseLayer, kConvLayer, kActivationLayer, kLutLayer, kSoftmaxLayer,
    kAddLayer, kConcatLayer, kReshapeLayer, kPoolLayer, kGlobalPoolLayer, kScaleLayer, kResizeLayer,
    kQuantLayer;

const std::vector<const LayerKind*>& layerTable() {
  static const std::vector<const LayerKind*> table = {
      &kDenseLayer, &kConvLayer,   &kActivationLayer, &kLutLayer,  &kSoftmaxLayer,
      &kAddLayer,   &kConcatLayer, &kReshapeLayer,    &kPoolLayer, &kGlobalPoolLayer,
      &kScaleLayer, &kResizeLayer, &kQuantLayer};
  return table;
}

const LayerKind* findLayerKind(ir::OpKind op) {
  for (const LayerKind* k : layerTable())
    if (std::find(k->ops.begin(), k->ops.end(), op) != k->ops.end()) return k;
  return nullptr;
}

ir::Support fpgaSupport(const ir::Node& n) {
  const LayerKind* k = findLayerKind(n.kind());
  if (!k) return {false, "no FPGA layer for this op"};
  for (size_t i = 0; i < n.inputs().size(); ++i)
    if (n.input(i) && !n.input(i)->isConstant() && !ir::isFloat(n.input(i)->type().dtype) &&
        n.kind() != ir::OpKind::DequantizeLinear) // a QDQ pair's integers (fpga/layers/Quant.cpp)
      return {false, fmt::format("input {} is {}: FPGA layers take float data (quantized to "
                                 "fixed point at the boundary)",
                                 i, typeToString(n.input(i)->type()))};
  return k->supports(n);
}

[[noreturn]] void unsupportedNode(const ir::Node& n, const std::string& why) {
  fail(ErrorKind::Unsupported, "node '{}' ({}): {}", n.name(), opKindName(n.kind()), why);
}

int PlanContext::dataInput(const ir::Node& n, size_t i) const {
  ir::Value* v = n.input(i);
  if (!v) unsupportedNode(n, fmt::format("input {} is missing", i));
  if (v->isConstant())
    unsupportedNode(
        n, fmt::format("input {} ('{}') is a constant; the emulator expects data", i, v->name()));
  if (!known_[size_t(v->id())])
    unsupportedNode(n, fmt::format("input '{}' is not produced by an emulated layer", v->name()));
  return v->id();
}

const ir::Tensor& PlanContext::constInput(const ir::Node& n, size_t i, const char* what) const {
  ir::Value* v = n.input(i);
  if (v)
    if (auto it = folded_.find(v->id()); it != folded_.end()) return it->second;
  if (!v || !v->isConstant())
    unsupportedNode(n, fmt::format("{} (input {}) must be a constant", what, i));
  return v->constant();
}

void PlanContext::foldConstantQuantizer(const ir::Node& n) {
  std::vector<const ir::Tensor*> ins;
  for (ir::Value* v : n.inputs())
    ins.push_back(v ? &v->constant() : nullptr);
  ir::Tensor t = std::move(ir::evalNode(n, ins).at(0));
  auto f = constantQuantizerFormat(n, t);
  if (auto* q = std::get_if<Quant>(&f))
    imported_[n.output(0)->id()] = *q;
  else
    importErrors_[n.output(0)->id()] = std::get<std::string>(f);
  folded_.emplace(n.output(0)->id(), std::move(t));
}

std::optional<Quant> PlanContext::imported(const ir::Value* v) const {
  if (!v) return std::nullopt;
  auto it = imported_.find(v->id());
  return it == imported_.end() ? std::nullopt : std::optional<Quant>(it->second);
}

std::optional<std::string> PlanContext::importError(const ir::Value* v) const {
  if (!v) return std::nullopt;
  auto it = importErrors_.find(v->id());
  return it == importErrors_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

bool PlanContext::configSets(const std::string& layer, Role r) const {
  if (config.defaults.precision || config.defaults.roles[size_t(r)].precision) return true;
  auto it = config.layers.find(layer);
  return it != config.layers.end() &&
         (it->second.precision || it->second.roles[size_t(r)].precision);
}

std::optional<double> PlanContext::range(int valueId) const {
  return size_t(valueId) < ranges_.size() ? ranges_[size_t(valueId)] : std::nullopt;
}

int roundingCode(Rounding r) {
  return r == Rounding::Truncate ? 0 : r == Rounding::RoundHalfUp ? 1 : 2;
}
int saturateCode(Overflow o) {
  return o == Overflow::Saturate ? 1 : 0;
}

void requireSigned(const FixedFormat& f, const std::string& layer, const char* what) {
  if (!f.isSigned)
    fail(ErrorKind::Unsupported,
         "layer '{}': the {} format {} is unsigned; the RTL blocks take signed formats", layer,
         what, formatToString(f));
}

std::vector<hdl::Param> resultParams(const FixedFormat& out, const Quant& q) {
  return {{"OUT_W", std::to_string(out.width)},
          {"OUT_FRAC", std::to_string(out.fracBits())},
          {"ROUNDING", std::to_string(roundingCode(q.rounding))},
          {"SATURATE", std::to_string(saturateCode(q.overflow))}};
}

hdl::Module layerModule(const std::string& name, const std::vector<std::string>& prefixes,
                        const std::vector<int64_t>& inBits, int64_t outBits) {
  hdl::Module m;
  m.name = name;
  m.addPort("clk", hdl::Dir::In, 1);
  m.addPort("rst_n", hdl::Dir::In, 1);
  for (size_t i = 0; i < prefixes.size(); ++i)
    m.addStreamIn(prefixes[i], inBits[i]);
  m.addStreamOut("out", outBits);
  return m;
}

std::string tableLiteral(const std::vector<int64_t>& t, int width) {
  std::string s = "{\n";
  for (size_t k = 0; k < t.size(); ++k) {
    size_t i = t.size() - 1 - k;
    if (k % 8 == 0) s += "      ";
    s += hdl::hexLiteral(t[i], width);
    s += i == 0 ? "\n" : k % 8 == 7 ? ",\n" : ", ";
  }
  return s + "  }";
}

int log2Exact(int64_t v) {
  int k = 0;
  while ((int64_t(1) << k) < v)
    ++k;
  TRIAD_ASSERT((int64_t(1) << k) == v, "{} is not a power of two", v);
  return k;
}

int64_t shiftFloor(int64_t raw, int sh) {
  if (sh >= 0) return sh >= 63 ? (raw < 0 ? -1 : 0) : raw >> sh;
  if (-sh >= 62) return raw == 0 ? 0 : raw < 0 ? INT64_MIN / 2 : INT64_MAX / 2;
  __int128 v = __int128(raw) * (__int128(1) << -sh);
  return v > INT64_MAX / 2 ? INT64_MAX / 2 : v < INT64_MIN / 2 ? INT64_MIN / 2 : int64_t(v);
}

double maxAbsOf(const std::vector<double>& v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

std::vector<int64_t> quantizeAll(const std::vector<double>& v, const Quant& q, int64_t* saturated) {
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (double x : v) {
    CastStatus st;
    out.push_back(quantize(x, q.format, q.rounding, q.overflow, &st));
    *saturated += st.saturated || st.wrapped;
  }
  return out;
}

void requireVector(const RtlOperand& op, const std::string& layer, const std::string& what) {
  if (op.geom.transfers() != 1)
    fail(ErrorKind::Unsupported,
         "layer '{}' ({}) takes vectors; its input is a stream of {} x {} pixels", layer, what,
         op.geom.h, op.geom.w);
}

} // namespace triad::fpga
