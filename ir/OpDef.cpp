#include "ir/OpDef.h"

#include <fmt/format.h>

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

struct OnnxHistory {
  std::string_view release;
  int newestOpset = 0;
  std::map<std::string_view, std::vector<int>, std::less<>> versions;

  OnnxHistory() {
#define TRIAD_ONNX_SCHEMAS(Release, Newest)                                                        \
  release = Release;                                                                               \
  newestOpset = Newest;
#define TRIAD_ONNX_OP(Name, ...) versions[Name] = {__VA_ARGS__};
#include "ir/OnnxOpVersions.def"
#undef TRIAD_ONNX_OP
#undef TRIAD_ONNX_SCHEMAS
    TRIAD_ASSERT(newestOpset >= kReviewedOnnxOpset,
                 "ir/OnnxOpVersions.def (onnx {}, opset {}) predates the reviewed opset {}",
                 release, newestOpset, kReviewedOnnxOpset);
  }
};

const OnnxHistory& onnxHistory() {
  static const OnnxHistory h;
  return h;
}

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
      TRIAD_ASSERT(d.throughVersion == 0 || !onnxOpHistory(d.onnxName).empty(),
                   "op {} names an ONNX version but is not a default-domain op",
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

std::string_view onnxSchemaRelease() {
  return onnxHistory().release;
}

int newestOnnxOpset() {
  return onnxHistory().newestOpset;
}

std::span<const int> onnxOpHistory(std::string_view opType) {
  const auto& m = onnxHistory().versions;
  auto it = m.find(opType);
  return it == m.end() ? std::span<const int>() : std::span<const int>(it->second);
}

int onnxOpVersionAt(std::string_view opType, int opset) {
  int version = 0;
  for (int v : onnxOpHistory(opType))
    if (v <= opset) version = v;
  return version;
}

int implementedOnnxVersion(const OpDef& def) {
  return def.throughVersion ? def.throughVersion
                            : onnxOpVersionAt(def.onnxName, kReviewedOnnxOpset);
}

std::string onnxVersionProblem(const OpDef& def, int opset) {
  if (!def.domain.empty()) return {};
  std::span<const int> history = onnxOpHistory(def.onnxName);
  int version = onnxOpVersionAt(def.onnxName, opset);
  if (!history.empty() && version == 0)
    return fmt::format("{} (domain ai.onnx) does not exist at opset {}: it was added in opset {}",
                       def.onnxName, opset, history.front());
  if (opset < def.sinceOpset)
    return fmt::format("opset {} semantics of {} are not supported (from opset {})", opset,
                       def.onnxName, def.sinceOpset);
  int implemented = implementedOnnxVersion(def);
  if (version > implemented)
    return fmt::format("opset {} selects version {} of {} (domain ai.onnx), which Triad does not "
                       "implement: it implements {} up to version {}",
                       opset, version, def.onnxName, def.onnxName, implemented);
  return {};
}

std::vector<const OpDef*> allOps() {
  std::vector<const OpDef*> out;
  for (const OpDef& d : registry().defs)
    out.push_back(&d);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->kind < b->kind; });
  return out;
}

} // namespace triad::ir
