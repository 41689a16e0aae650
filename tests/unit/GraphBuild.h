// Building IR graphs by hand in tests: nodes with shapes inferred by the op's own rule, typed
// attributes filled in place, and seeded random tensors.
#pragma once

#include "ir/Graph.h"

#include <fmt/format.h>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace triad::testutil {

inline ir::Tensor randomTensor(ir::Shape s, std::mt19937& rng, ir::DType dt = ir::DType::F32) {
  ir::Tensor t(ir::DType::F32, std::move(s));
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& v : t.values<float>())
    v = d(rng);
  return dt == ir::DType::F32 ? t : t.castTo(dt);
}

/// Appends a node whose output types come from the op's shape rule.
inline ir::Node* add(ir::Graph& g, ir::OpKind kind, const std::string& name,
                     std::vector<ir::Value*> inputs,
                     std::shared_ptr<const ir::Attrs> attrs = nullptr, size_t numOutputs = 1) {
  if (!attrs) attrs = std::make_shared<ir::NoAttrs>();
  std::vector<std::optional<ir::TensorType>> types;
  std::vector<const ir::Tensor*> consts;
  for (ir::Value* v : inputs) {
    types.push_back(v ? std::optional<ir::TensorType>(v->type()) : std::nullopt);
    consts.push_back(v && v->isConstant() ? &v->constant() : nullptr);
  }
  std::vector<ir::TensorType> out = ir::opDef(kind).infer(ir::InferContext{*attrs, types, consts});
  out.resize(numOutputs);
  std::vector<std::string> names;
  for (size_t i = 0; i < numOutputs; ++i)
    names.push_back(numOutputs == 1 ? name : fmt::format("{}:{}", name, i));
  return g.addNode(kind, name, std::move(inputs), attrs, names, out);
}

/// Typed attributes: attrs<TransposeAttrs>([](auto& a) { a.perm = {1, 0}; }).
template <typename A, typename F> std::shared_ptr<const ir::Attrs> attrs(F&& fill) {
  auto a = std::make_shared<A>();
  fill(*a);
  return a;
}

} // namespace triad::testutil
