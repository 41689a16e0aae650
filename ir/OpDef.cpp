#include "ir/OpDef.h"

#include <algorithm>
#include <array>
#include <map>

namespace triad::ir {

namespace {
constexpr std::string_view kOpKindNames[] = {
#define TRIAD_OP(Kind, OnnxName, Family) #Kind,
#include "ir/Ops.def"
#undef TRIAD_OP
};

struct Registry {
  std::vector<OpDef> defs;
  std::array<const OpDef*, kNumOpKinds> byKind{};
  std::map<std::pair<std::string, std::string>, const OpDef*> byOnnxName; // (domain, op type)

  Registry() {
    OpTable table;
#define TRIAD_FAMILY(Family) register##Family##Ops(table);
#include "ir/OpFamilies.def"
#undef TRIAD_FAMILY
    defs = std::move(table.defs);
    for (const OpDef& d : defs) {
      TRIAD_ASSERT(!byKind[size_t(d.kind)], "op {} registered twice", opKindName(d.kind));
      TRIAD_ASSERT(d.infer && d.eval, "op {} lacks a shape rule or reference kernel",
                   opKindName(d.kind));
      byKind[size_t(d.kind)] = &d;
      byOnnxName[{std::string(d.domain), std::string(d.onnxName)}] = &d;
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}
} // namespace

std::string_view opKindName(OpKind k) {
  return kOpKindNames[size_t(k)];
}

bool OpDef::isShapeOperand(int i) const {
  return std::find(shapeOperands.begin(), shapeOperands.end(), i) != shapeOperands.end();
}

void OpTable::add(OpDef def) {
  if (def.onnxName.empty()) def.onnxName = opKindName(def.kind);
  defs.push_back(std::move(def));
}

const OpDef* findOp(OpKind kind) {
  return registry().byKind[size_t(kind)];
}

const OpDef& opDef(OpKind kind) {
  const OpDef* d = findOp(kind);
  TRIAD_ASSERT(d, "op {} is not registered", opKindName(kind));
  return *d;
}

const OpDef* findOnnxOp(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx") domain = "";
  if (domain == "finn.custom_op.general" || domain == "onnx.brevitas")
    domain = "qonnx.custom_op.general";
  const auto& m = registry().byOnnxName;
  auto it = m.find({std::string(domain), std::string(opType)});
  return it == m.end() ? nullptr : it->second;
}

std::vector<const OpDef*> allOps() {
  std::vector<const OpDef*> out;
  for (const OpDef& d : registry().defs)
    out.push_back(&d);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->kind < b->kind; });
  return out;
}

} // namespace triad::ir
