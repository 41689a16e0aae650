#include "fpga/Profile.h"

#include "ir/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace triad::fpga {

namespace {

nlohmann::json stats(std::vector<double> v) {
  size_t zeros = 0;
  std::vector<double> mag;
  mag.reserve(v.size());
  for (double x : v)
    if (x == 0 || !std::isfinite(x))
      ++zeros;
    else
      mag.push_back(std::fabs(x));
  if (mag.empty()) return {{"count", v.size()}, {"zeros", zeros}};
  std::sort(mag.begin(), mag.end());
  auto q = [&](double p) { return mag[size_t(p * double(mag.size() - 1))]; };
  return {{"count", v.size()}, {"zeros", zeros}, {"min", mag.front()}, {"q25", q(0.25)},
          {"median", q(0.5)},  {"q75", q(0.75)}, {"max", mag.back()}};
}

nlohmann::json range(const FixedFormat& f) {
  return {{"format", formatToString(f)}, {"lsb", lsb(f)}, {"max", maxValue(f)}};
}

} // namespace

nlohmann::json precisionProfile(const ir::Graph& g, const Emulator& emu,
                                std::span<const ir::Tensor> inputs,
                                const ir::ProgressFn& progress) {
  int64_t nodes = int64_t(g.nodes().size());
  if (progress) progress("emulator", 0, nodes + 1);
  EmulatorResult res = emu.run(inputs, true);
  ir::Interpreter interp(g);
  if (progress) // the float reference, layer by layer, after the emulator's step
    interp.setProgress([&](const std::string& step, int64_t done, int64_t) {
      progress(step, done + 1, nodes + 1);
    });
  std::vector<ir::Tensor> ref = interp.runAll(inputs);
  std::map<std::string, const ir::Node*> byName;
  for (const auto& n : g.nodes())
    byName.emplace(n->name(), n.get());

  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < res.layers.size(); ++i) {
    const LayerReport& r = res.layers[i];
    nlohmann::json row = {{"name", r.name},           {"op", r.op},
                          {"formats", r.formats},     {"saturated", r.saturated},
                          {"wrapped", r.wrapped},     {"max_abs_error", r.maxAbsError},
                          {"elements", r.elements},   {"weights", nullptr},
                          {"weight_format", nullptr}, {"const_saturated", 0}};
    if (i == 0) { // the graph input
      std::vector<double> x;
      for (const ir::Tensor& t : inputs)
        for (double d : t.toDoubleVector())
          x.push_back(d);
      row["outputs"] = stats(std::move(x));
      row["result_format"] = range(emu.inputQuant().format);
    } else {
      const LayerInfo& l = emu.layers()[i - 1];
      int id = l.output;
      row["outputs"] = size_t(id) < ref.size() && ref[size_t(id)].numElements() > 0
                           ? stats(ref[size_t(id)].toDoubleVector())
                           : nlohmann::json();
      row["result_format"] = range(l.outFormat);
      row["const_saturated"] = l.constSaturated;
      if (l.usesWeights) {
        // The float constants the layer's weights come from (its node's constant inputs but
        // the bias: the first one of rank 2 or more).
        auto it = byName.find(l.name);
        if (it != byName.end())
          for (const ir::Value* v : it->second->inputs())
            if (v && v->isConstant() && ir::isFloat(v->type().dtype) && v->type().rank() >= 2) {
              row["weights"] = stats(v->constant().toDoubleVector());
              break;
            }
        row["weight_format"] = range(l.quant.weight().format);
      }
    }
    rows.push_back(row);
  }
  return {{"layers", rows}};
}

} // namespace triad::fpga
