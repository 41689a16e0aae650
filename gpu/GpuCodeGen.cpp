#include "gpu/GpuCodeGen.h"

#include "gpu/CodeWriter.h"
#include "gpu/GpuLowering.h"
#include "ir/Diagnostics.h"
#include "ir/ScalarExpr.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace triad::gpu {

using namespace ir;

std::string clTypeName(DType t) {
  // Buffers hold bool as uchar (OpenCL's bool has no defined size); every other element type is
  // stored as the scalar expressions compute with it.
  return t == DType::Bool ? "uchar" : scalarTypeName(t, ScalarDialect::OpenCL);
}

namespace {

Support no(std::string why) {
  return {false, std::move(why)};
}

bool fits32Bit(const Node& n) {
  for (Value* v : n.inputs())
    if (v && numElements(v->type().shape) >= (int64_t(1) << 31)) return false;
  for (Value* v : n.outputs())
    if (numElements(v->type().shape) >= (int64_t(1) << 31)) return false;
  return true;
}

/// Element types elementwise kernels compute with: every one (float16 is stored as its bits and
/// computed in float by the scalar helpers; float64 needs cl_khr_fp64, see needsDouble).
bool clComputable(DType) {
  return true;
}

bool elementwiseOnGpu(const Node& n) {
  if (!(hasScalarExpr(n, gpuScalarTypes()) || n.kind() == OpKind::Expand) ||
      findGpuLowering(n.kind()))
    return false;
  for (Value* v : n.inputs())
    if (v && !clComputable(v->type().dtype)) return false;
  return clComputable(n.output(0)->type().dtype) && fits32Bit(n);
}

/// Whether the kernel of `n` computes with doubles (float64 elements, or the double math of
/// Pow with mixed types): it needs a device with cl_khr_fp64.
bool needsDouble(const Node& n) {
  for (Value* v : n.inputs())
    if (v && v->type().dtype == DType::F64) return true;
  for (Value* v : n.outputs())
    if (v->type().dtype == DType::F64) return true;
  ScalarTypes noF64 = ScalarTypes::all();
  noF64.f64 = false;
  return hasScalarExpr(n, ScalarTypes::all()) && !hasScalarExpr(n, noF64);
}

/// A literal of element `i` of a constant in OpenCL C.
std::string clLiteral(const Tensor& t, int64_t i = 0) {
  switch (t.dtype()) {
  case DType::F32:
    return floatLiteral(t.data<float>()[i]);
  case DType::Bool:
    return t.data<bool>()[i] ? "1" : "0";
  case DType::I64: {
    int64_t v = t.data<int64_t>()[i];
    if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807L - 1)";
    return fmt::format("({}L)", v);
  }
  case DType::U64:
    return fmt::format("({}UL)", t.data<uint64_t>()[i]);
  case DType::F16:
    return fmt::format("((ushort)0x{:04x})", t.data<Half>()[i].bits);
  case DType::F64:
    return scalarLiteral(t, i);
  default:
    return fmt::format("(({}){})", clTypeName(t.dtype()), t.getInt(i));
  }
}

/// Offset expression of an operand of shape `in` broadcast (right-aligned) to `out`, given
/// expressions for the output's coordinates (`coord(d)`) and linear index (`linear`).
std::string broadcastOffset(const Shape& in, const Shape& out, const std::string& linear,
                            const std::function<std::string(size_t)>& coord) {
  if (in == out) return linear;
  size_t lead = out.size() - in.size();
  std::vector<int64_t> st = stridesOf(in);
  std::string off;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    std::string c = coord(d + lead);
    std::string term = st[d] == 1 ? c : fmt::format("{} * {}", c, st[d]);
    off += off.empty() ? term : " + " + term;
  }
  return off.empty() ? "0" : off;
}

/// The shape `v` broadcasts with in the group: its own, or the [C, 1, ..., 1] of a per-axis
/// QuantizeLinear/DequantizeLinear scale or zero point (qdqOperandShape).
Shape operandShape(const FusionGroup& grp, const Value* v) {
  for (const Node* n : grp.nodes)
    for (size_t i = 0; i < n->inputs().size(); ++i)
      if (n->input(i) == v) {
        Shape s = qdqOperandShape(*n, i);
        if (s != v->type().shape) return s;
      }
  return v->type().shape;
}

struct Extra {
  std::string decl; // "__global const float* restrict ep0"
  const Value* value;
  BufferRef ref = {};    // where `value` is null: a place in a buffer that holds no value
  std::string what = {}; // where `value` is null: the comment of its declaration
};

class Generator {
public:
  Generator(const Graph& g, const GpuCodeGenOptions& opts) : g_(g), opts_(opts) {}
  GpuProgram run();

private:
  void placeConstants();
  BufferRef locate(const Value* v) const;
  /// The kernel name of a group (see the definition).
  std::string kernelName(const std::string& layer);
  void emitGroup(size_t gi, const FusionGroup& grp);
  void emitChain(const FusionGroup& grp, const std::string& layer, GpuStep& step);
  void emitCopy(const Node& n, const std::string& layer, GpuStep& step);
  /// `anchorValue`: empty when the kernel declares `acc` and the epilogue rewrites it in place;
  /// else the variable `pre` declares the anchor's value in (GpuLowering::typedTail), and the
  /// epilogue ends declaring `acc` of the group's output type.
  Epilogue buildEpilogue(const FusionGroup& grp, const EpilogueIndex& index, const std::string& pre,
                         std::vector<Extra>& extras, const std::string& anchorValue = "");
  /// Rewrites the kernel's parameters to the model buffers it touches and declares every
  /// parameter (and extra pointer) at its fixed offset.
  void bindKernel(GeneratedKernel& k, const std::map<std::string, const Value*>& bind,
                  const std::vector<Extra>& extras, GpuStep& step,
                  const std::map<std::string, Extra>& packed = {});
  /// Where the derived constant `key` lives in the weights buffer (added on first use).
  BufferRef placePacked(const std::string& key, const std::function<std::vector<float>()>& make);

  const Graph& g_;
  GpuCodeGenOptions opts_;
  MemoryPlan plan_;
  std::vector<BufferRef> where_;
  std::vector<uint8_t> weights_;
  std::map<std::string, BufferRef> packed_; // derived constants by key
  std::vector<GeneratedKernel> kernels_;
  std::vector<GpuStep> steps_;
  escape::Uniquer kernelNames_{escape::Lang::OpenCL}; // one scope: the program
  size_t tuned_ = 0;
  size_t checkSlots_ = 0;
  bool fp64_ = true; // the device computes doubles (cl_khr_fp64), or no device is named
};

void Generator::placeConstants() {
  for (Value* c : g_.constants()) {
    int64_t off = (int64_t(weights_.size()) + 63) / 64 * 64;
    weights_.resize(size_t(off), 0);
    const Tensor& t = c->constant();
    weights_.insert(weights_.end(), t.raw(), t.raw() + t.byteSize());
    where_[size_t(c->id())] = {1, off};
  }
  weights_.resize(size_t((int64_t(weights_.size()) + 63) / 64 * 64), 0);
}

BufferRef Generator::placePacked(const std::string& key,
                                 const std::function<std::vector<float>()>& make) {
  if (auto it = packed_.find(key); it != packed_.end()) return it->second;
  std::vector<float> data = make();
  int64_t off = int64_t(weights_.size()); // a multiple of 64 (placeConstants)
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  weights_.insert(weights_.end(), bytes, bytes + data.size() * sizeof(float));
  weights_.resize(size_t((int64_t(weights_.size()) + 63) / 64 * 64), 0);
  return packed_[key] = BufferRef{1, off};
}

BufferRef Generator::locate(const Value* v) const {
  const Location& loc = plan_.at(v);
  const int inputs = int(g_.inputs().size());
  switch (loc.storage) {
  case Storage::Input:
    return {2 + loc.index, 0};
  case Storage::Output:
    return {2 + inputs + loc.index, 0};
  case Storage::Constant:
    return where_[size_t(loc.owner)];
  case Storage::Arena:
    return {0, loc.offset};
  case Storage::None:
    break;
  }
  return {};
}

/// The group's kernelIdentifier, made distinct from every other kernel of the program by the
/// Uniquer: layers whose names legalise alike ("a/b", "a.b") or repeat get "a_b", "a_b_2", ...
/// Short enough that the suffix keeps it within escape::kMaxIdentifier, so the generators'
/// kernelIdentifier() leaves it as it is and the kernel gets exactly this name.
std::string Generator::kernelName(const std::string& layer) {
  std::string base = kernelIdentifier(layer);
  if (base.size() > escape::kMaxIdentifier - 8)
    base = kernelIdentifier(base.substr(0, escape::kMaxIdentifier - 8));
  std::string id = kernelNames_.fresh(base);
  TRIAD_ASSERT(kernelIdentifier(id) == id, "kernel name '{}' is not an identifier", id);
  return id;
}

Epilogue Generator::buildEpilogue(const FusionGroup& grp, const EpilogueIndex& index,
                                  const std::string& pre, std::vector<Extra>& extras,
                                  const std::string& anchorValue) {
  Epilogue e;
  e.code = pre;
  if (!grp.anchored || grp.nodes.size() < 2) {
    if (!anchorValue.empty())
      e.code += fmt::format("const {} acc = {};\n", clTypeName(grp.last()->output(0)->type().dtype),
                            anchorValue);
    if (!pre.empty()) e.description = "bias";
    return e;
  }
  const Value* out = grp.last()->output(0);
  const Shape& os = out->type().shape;
  std::vector<int64_t> ost = stridesOf(os);
  std::string code;
  std::set<size_t> declared;
  bool linearDeclared = false;
  // Output coordinates the operands need: direct where the kernel knows them, else derived
  // from the linear index (declared once).
  auto linear = [&]() -> std::string {
    if (!linearDeclared) {
      code += fmt::format("const int e_idx = {};\n", index.linear);
      linearDeclared = true;
    }
    return "e_idx";
  };
  auto coord = [&](size_t d) -> std::string {
    if (index.coords.size() == os.size() && !index.coords[d].empty()) return index.coords[d];
    if (!declared.count(d)) {
      std::string l = linear();
      std::string c = ost[d] == 1 ? l : fmt::format("{} / {}", l, ost[d]);
      if (d > 0) c = fmt::format("({}) % {}", c, os[d]);
      code += fmt::format("const int e_d{} = {};\n", d, c);
      declared.insert(d);
    }
    return fmt::format("e_d{}", d);
  };
  std::unordered_map<const Value*, std::string> expr;
  expr[grp.nodes[0]->output(0)] = anchorValue.empty() ? "acc" : anchorValue;
  std::string description;
  for (size_t i = 1; i < grp.nodes.size(); ++i) {
    const Node* n = grp.nodes[i];
    std::vector<std::string> ops;
    for (Value* v : n->inputs()) {
      if (!v || (n->kind() == OpKind::CastLike && v == n->input(1))) {
        ops.emplace_back(); // absent, or CastLike's type-only input
        continue;
      }
      if (!expr.count(v)) {
        if (v->isConstant() && v->constant().numElements() == 1) {
          expr[v] = clLiteral(v->constant());
        } else {
          size_t k = extras.size();
          std::string t = clTypeName(v->type().dtype);
          std::string ptr = fmt::format("ep{}", k);
          extras.push_back({fmt::format("__global const {}* restrict {}", t, ptr), v});
          std::string off = broadcastOffset(operandShape(grp, v), os, "", coord);
          if (off.empty()) off = linear(); // same shape as the output
          code += fmt::format("const {} ev{} = {}[{}]; // {}{}\n", t, k, ptr, off,
                              escape::comment(v->name()), shapeToString(v->type().shape));
          expr[v] = fmt::format("ev{}", k);
        }
      }
      ops.push_back(expr.at(v));
    }
    std::string ex =
        n->kind() == OpKind::Expand ? ops[0] : scalarExpr(*n, ops, ScalarDialect::OpenCL);
    code += fmt::format("const {} et{} = {}; // {} ({})\n", clTypeName(n->output(0)->type().dtype),
                        i, ex, escape::comment(n->name()), opKindName(n->kind()));
    expr[n->output(0)] = fmt::format("et{}", i);
    description += fmt::format("{}{}", description.empty() ? "" : ", ", opKindName(n->kind()));
  }
  if (anchorValue.empty())
    code += fmt::format("acc = et{};\n", grp.nodes.size() - 1);
  else
    code +=
        fmt::format("const {} acc = et{};\n", clTypeName(out->type().dtype), grp.nodes.size() - 1);
  e.code = pre + code;
  e.description = (pre.empty() ? "" : "bias, ") + description;
  return e;
}

void Generator::bindKernel(GeneratedKernel& k, const std::map<std::string, const Value*>& bind,
                           const std::vector<Extra>& extras, GpuStep& step,
                           const std::map<std::string, Extra>& packed) {
  std::string head = "void " + k.name + "(";
  size_t h = k.source.find(head);
  TRIAD_ASSERT(h != std::string::npos, "kernel '{}': signature not found", k.name);
  size_t open = h + head.size();
  size_t close = k.source.find(") {\n", open);
  TRIAD_ASSERT(close != std::string::npos, "kernel '{}': signature not closed", k.name);
  std::vector<std::string> decls;
  std::string text = k.source.substr(open, close - open);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string d =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    d.erase(0, d.find_first_not_of(" \n"));
    d.erase(d.find_last_not_of(" \n") + 1);
    if (!d.empty()) decls.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<Extra> all;
  for (const std::string& d : decls) {
    std::string name = paramName(d);
    if (auto p = packed.find(name); p != packed.end()) {
      Extra x = p->second;
      x.decl = d;
      all.push_back(x);
      continue;
    }
    auto it = bind.find(name);
    TRIAD_ASSERT(it != bind.end() && it->second, "kernel '{}': parameter '{}' is not bound", k.name,
                 name);
    all.push_back({d, it->second});
  }
  all.insert(all.end(), extras.begin(), extras.end());
  const size_t inputs = g_.inputs().size();
  const int statusBuffer = int(2 + inputs + g_.outputs().size());
  auto baseName = [&](int b) -> std::string {
    if (b == statusBuffer) return "triad_status";
    if (b == 0) return "triad_arena";
    if (b == 1) return "triad_weights";
    if (size_t(b) < 2 + inputs) return fmt::format("triad_in{}", b - 2);
    return fmt::format("triad_out{}", size_t(b) - 2 - inputs);
  };
  auto readOnly = [&](int b) { return b == 1 || (b >= 2 && size_t(b) < 2 + inputs); };
  std::set<int> used;
  std::string body;
  for (const Extra& x : all) {
    BufferRef r = x.value ? locate(x.value) : x.ref;
    TRIAD_ASSERT(r.buffer >= 0, "kernel '{}': value '{}' has no storage", k.name,
                 x.value ? x.value->name() : paramName(x.decl));
    std::string name = paramName(x.decl);
    std::string type = x.decl.substr(0, x.decl.size() - name.size());
    if (size_t p = type.find(" restrict"); p != std::string::npos) type.erase(p, 9);
    type.erase(type.find_last_not_of(' ') + 1);
    bool isConst = type.find("const") != std::string::npos;
    TRIAD_ASSERT(isConst || !readOnly(r.buffer),
                 "kernel '{}' would write '{}' in a read-only buffer", k.name, x.value->name());
    used.insert(r.buffer);
    std::string at =
        r.offset ? fmt::format("{} + {}", baseName(r.buffer), r.offset) : baseName(r.buffer);
    // The value's name, or what a packed constant holds (which names its source value): text
    // from the model, so escaped for the comment.
    std::string what = x.value          ? x.value->name() + " " + typeToString(x.value->type())
                       : x.what.empty() ? "run-time check flag (status buffer)"
                                        : x.what;
    body += fmt::format("  {} = ({})({}); // {}\n", x.decl, type, at, escape::comment(what, 240));
  }
  std::vector<std::string> params;
  k.params.clear();
  step.buffers.clear();
  for (int b : used) {
    params.push_back(fmt::format("__global {}uchar* {}", readOnly(b) ? "const " : "", baseName(b)));
    k.params.push_back(baseName(b));
    step.buffers.push_back(b);
  }
  std::string sig = joinParams(params, int(h - k.source.rfind('\n', h) - 1 + head.size()));
  k.source = k.source.substr(0, open) + sig + ") {\n" +
             "  // Operands at fixed byte offsets in the model's buffers.\n" + body +
             k.source.substr(close + 4);
}

void Generator::emitChain(const FusionGroup& grp, const std::string& layer, GpuStep& step) {
  const Value* out = grp.last()->output(0);
  ElementwiseChain ch;
  ch.outShape = out->type().shape;
  ch.outType = clTypeName(out->type().dtype);
  std::map<std::string, const Value*> bind;
  std::unordered_map<const Value*, std::string> expr;
  escape::Uniquer vars(escape::Lang::OpenCL); // the input variables, without their "v_"
  std::set<std::string> chosen;
  // CastLike's second input gives only a type: its elements are never read.
  auto typeOnly = [&](const Value* v) {
    for (const Node* n : grp.nodes)
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (n->input(i) == v && !(n->kind() == OpKind::CastLike && i == 1)) return false;
    return true;
  };
  for (Value* v : grp.externalInputs()) {
    if (typeOnly(v)) {
      expr[v] = "";
      continue;
    }
    if (v->isConstant() && v->constant().numElements() == 1) {
      expr[v] = clLiteral(v->constant());
      continue;
    }
    // "v_<name>", distinct whatever the values are called ("a/b" and "a.b" become v_a_b and
    // v_a_b_2), and no variable is another's "<variable>_data" parameter ("x" and "x_data").
    std::string base = escape::identifier(v->name(), escape::Lang::OpenCL, "x").substr(0, 40);
    std::string id;
    do
      id = vars.fresh(base);
    while (chosen.count(id + "_data"));
    chosen.insert(id);
    vars.reserve(id + "_data");
    std::string name = "v_" + id;
    ch.inputs.push_back({name, operandShape(grp, v), clTypeName(v->type().dtype)});
    bind[name + "_data"] = v;
    expr[v] = name;
  }
  std::string description;
  for (size_t i = 0; i < grp.nodes.size(); ++i) {
    const Node* n = grp.nodes[i];
    std::vector<std::string> ops;
    for (Value* v : n->inputs())
      ops.push_back(v ? expr.at(v) : std::string());
    std::string e =
        n->kind() == OpKind::Expand ? ops[0] : scalarExpr(*n, ops, ScalarDialect::OpenCL);
    ch.statements.push_back(fmt::format("const {} t{} = {}; // {} ({})",
                                        clTypeName(n->output(0)->type().dtype), i, e,
                                        escape::comment(n->name()), opKindName(n->kind())));
    expr[n->output(0)] = fmt::format("t{}", i);
    description += fmt::format("{}{}", description.empty() ? "" : " -> ", opKindName(n->kind()));
  }
  ch.result = fmt::format("t{}", grp.nodes.size() - 1);
  ch.description = description;
  bind["Y"] = out;
  ElementwiseParams p;
  GeneratedKernel k = generateElementwiseChain(layer, ch, p);
  bindKernel(k, bind, {}, step);
  step.kind = grp.nodes.size() > 1 ? "elementwise (fused)" : "elementwise";
  step.params = p.toString();
  step.kernel = k.name;
  step.range = k.range;
  kernels_.push_back(std::move(k));
}

void Generator::emitCopy(const Node& n, const std::string& layer, GpuStep& step) {
  // A view whose output needs its own storage (a graph output): copy the elements.
  const Value* in = n.input(0);
  const Value* out = n.output(0);
  static const char* types[] = {"uchar", "ushort", "uint", "ulong"};
  size_t sz = dtypeSize(out->type().dtype);
  std::string t = types[sz == 1 ? 0 : sz == 2 ? 1 : sz == 4 ? 2 : 3];
  ElementwiseChain ch;
  ch.outShape = out->type().shape;
  ch.outType = t;
  ch.inputs.push_back({"x", out->type().shape, t});
  ch.result = "x";
  ch.description = fmt::format("{} of {} (a copy: the output needs its own buffer)",
                               opKindName(n.kind()), in->name());
  GeneratedKernel k = generateElementwiseChain(layer, ch);
  bindKernel(k, {{"x_data", in}, {"Y", out}}, {}, step);
  step.kind = "copy";
  step.kernel = k.name;
  step.range = k.range;
  kernels_.push_back(std::move(k));
}

void Generator::emitGroup(size_t gi, const FusionGroup& grp) {
  if (plan_.aliasStep[gi]) return; // a view: no code
  const Node* head = grp.nodes.front();
  bool empty = true;
  for (Value* o : grp.last()->outputs())
    empty = empty && numElements(o->type().shape) == 0;
  if (empty) return; // nothing to compute
  GpuStep step;
  step.layer = grp.name();
  step.nodes = grp.nodes;
  auto host = [&](std::string reason) {
    step.kind = "host";
    step.hostNode = head;
    step.hostReason = std::move(reason);
    step.kernel.clear();
    steps_.push_back(step);
  };
  Support s = gpuSupport(*head);
  if (s.ok && !fp64_ && needsDouble(*head))
    s = no("double arithmetic and the device has no cl_khr_fp64");
  if (!s.ok) {
    TRIAD_ASSERT(grp.nodes.size() == 1, "host node {} was fused", head->name());
    host(s.reason);
    return;
  }
  // The generators name the kernel after `layer` and print it in their comments: they get the
  // kernel's identifier; the model's name of the layer is a comment above the kernel.
  const std::string layer = kernelName(grp.name());
  try {
    if (grp.nodes.size() == 1 && isViewOp(head->kind())) {
      emitCopy(*head, layer, step);
    } else if (const GpuLowering* low = findGpuLowering(head->kind())) {
      GpuLowerContext c{*head, layer, opts_, {}, {}, {}, {}, {}, {},
                        {},    {},    {},    {}, {}, {}, {}, {}, false};
      std::vector<Extra> extras;
      std::map<std::string, Extra> packed;
      c.bindPacked = [&](const std::string& param, const std::string& key,
                         const std::function<std::vector<float>()>& make, const std::string& what) {
        packed[param] = Extra{"", nullptr, placePacked(key, make), what};
      };
      c.scratch = [&](const std::string& param, int ints, const std::string& what) {
        BufferRef at{int(2 + g_.inputs().size() + g_.outputs().size()), int64_t(checkSlots_) * 4};
        checkSlots_ += size_t(ints);
        packed[param] = Extra{"", nullptr, at, what + " (scratch, zeroed before each run)"};
      };
      c.freshName = [&](const std::string& suffix) {
        return kernelName(grp.name() + "_" + suffix);
      };
      c.preStep = [&](GeneratedKernel k, const std::map<std::string, const Value*>& bind,
                      const std::string& kind) {
        GpuStep pre = step;
        bindKernel(k, bind, {}, pre, packed);
        pre.kind = kind;
        pre.kernel = k.name;
        pre.range = k.range;
        k.source = fmt::format("// Model layer: {}\n", escape::comment(grp.name(), 400)) + k.source;
        steps_.push_back(std::move(pre));
        kernels_.push_back(std::move(k));
      };
      c.output = [&](size_t i) -> const Value* {
        return grp.anchored ? grp.last()->output(i) : head->output(i);
      };
      c.epilogue = [&](const EpilogueIndex& index, const std::string& pre) {
        return buildEpilogue(grp, index, pre, extras, low->typedTail ? "q_val" : "");
      };
      c.check = [&](const std::string& what) {
        if (step.checkSlot < 0) {
          step.checkSlot = int(checkSlots_++);
          step.checkWhat = what;
          BufferRef at{int(2 + g_.inputs().size() + g_.outputs().size()),
                       int64_t(step.checkSlot) * 4};
          extras.push_back({"__global int* restrict triad_check", nullptr, at});
        }
        return std::string("triad_check");
      };
      c.pointer = [&](const std::string& name, const Value* v) {
        extras.push_back(
            {fmt::format("__global const {}* restrict {}", clTypeName(v->type().dtype), name), v});
        return name;
      };
      low->emit(c);
      bindKernel(c.kernel, c.bind, extras, step, packed);
      step.kind = c.kind;
      step.gemm = c.gemm;
      if (c.kind == "conv (implicit GEMM)") step.conv = c.conv;
      step.params = c.params;
      step.kernel = c.kernel.name;
      step.range = c.kernel.range;
      tuned_ += c.tuned;
      kernels_.push_back(std::move(c.kernel));
    } else {
      emitChain(grp, layer, step);
    }
  } catch (const Error& e) {
    // A shape the generators refuse (e.g. beyond 32-bit indexing) runs on the host.
    if (e.kind() != ErrorKind::Unsupported || grp.nodes.size() != 1) throw;
    host(e.what());
    return;
  }
  GeneratedKernel& k = kernels_.back();
  TRIAD_ASSERT(k.name == layer && step.kernel == layer, "kernel '{}' generated as '{}'", layer,
               k.name);
  k.source = fmt::format("// Model layer: {}\n", escape::comment(grp.name(), 400)) + k.source;
  steps_.push_back(std::move(step));
}

GpuProgram Generator::run() {
  FusionPolicy policy = gpuFusionPolicy();
  fp64_ = !opts_.device || opts_.device->fp64;
  if (!fp64_) { // nodes computing in double run on the host: keep them out of groups
    policy.isAnchor = [inner = policy.isAnchor](const Node& n) {
      return !needsDouble(n) && inner(n);
    };
    policy.isFusableElementwise = [inner = policy.isFusableElementwise](const Node& n) {
      return !needsDouble(n) && inner(n);
    };
  }
  if (!opts_.fuse) policy.isAnchor = [](const Node&) { return false; };
  if (!opts_.fuse) policy.isFusableElementwise = [](const Node&) { return false; };
  std::vector<FusionGroup> groups = formFusionGroups(g_, policy);
  if (!opts_.fuse) // still mark single elementwise nodes, so that they become chain kernels
    for (FusionGroup& grp : groups)
      grp.elementwise = elementwiseOnGpu(*grp.nodes.front());
  if (opts_.device && opts_.device->maxWorkGroupSize)
    opts_.maxWorkGroupSize = std::min(opts_.maxWorkGroupSize, opts_.device->maxWorkGroupSize);
  plan_ = planMemory(g_, groups);
  where_.assign(g_.values().size(), BufferRef{});
  placeConstants();
  for (const auto& v : g_.values())
    if (!v->isConstant()) where_[size_t(v->id())] = locate(v.get());
  for (size_t gi = 0; gi < groups.size(); ++gi)
    emitGroup(gi, groups[gi]);

  GpuProgram p;
  std::string model = escape::comment(g_.name.empty() ? "model" : g_.name);
  size_t hostSteps = 0;
  for (const GpuStep& s : steps_)
    hostSteps += s.kernel.empty();
  CodeWriter banner;
  banner.line("// Model '{}' compiled by Triad for the GPU target (OpenCL C 1.2).", model);
  banner.line("// {} nodes -> {} kernels, {} host steps; {}.", g_.nodes().size(), kernels_.size(),
              hostSteps, describeFusion(groups));
  banner.line("// Buffers: triad_arena {} bytes of intermediates ({} without reuse; {} in place, "
              "{} views), triad_weights {} bytes,",
              plan_.arenaBytes, plan_.unsharedBytes, plan_.inPlaceCount, plan_.aliasCount,
              weights_.size());
  for (size_t i = 0; i < g_.inputs().size(); ++i)
    banner.line("//   triad_in{} = input '{}' {}", i, escape::comment(g_.inputs()[i]->name()),
                typeToString(g_.inputs()[i]->type()));
  for (size_t i = 0; i < g_.outputs().size(); ++i)
    banner.line("//   triad_out{} = output '{}' {}", i, escape::comment(g_.outputs()[i]->name()),
                typeToString(g_.outputs()[i]->type()));
  p.source = banner.str() + programSource(kernels_);
  p.steps = std::move(steps_);
  p.weights = std::move(weights_);
  p.where = std::move(where_);
  p.arenaBytes = plan_.arenaBytes;
  p.unsharedBytes = plan_.unsharedBytes;
  p.inPlace = plan_.inPlaceCount;
  p.views = plan_.aliasCount;
  p.groups = groups.size();
  p.nodes = g_.nodes().size();
  p.kernels = kernels_.size();
  p.hostSteps = hostSteps;
  p.tunedKernels = tuned_;
  p.fusionSummary = describeFusion(groups);
  p.checkSlots = checkSlots_;
  p.bufferNames = {"arena", "weights"};
  p.bufferBytes = {size_t(plan_.arenaBytes), p.weights.size()};
  for (const Value* v : g_.inputs()) {
    p.bufferNames.push_back(fmt::format("input '{}'", v->name()));
    p.bufferBytes.push_back(size_t(numElements(v->type().shape)) * dtypeSize(v->type().dtype));
  }
  for (const Value* v : g_.outputs()) {
    p.bufferNames.push_back(fmt::format("output '{}'", v->name()));
    p.bufferBytes.push_back(size_t(numElements(v->type().shape)) * dtypeSize(v->type().dtype));
  }
  if (checkSlots_ > 0) {
    p.statusBuffer = int(p.bufferNames.size());
    p.bufferNames.push_back("status");
    p.bufferBytes.push_back(checkSlots_ * 4);
  }
  return p;
}

} // namespace

Support gpuSupport(const Node& n) {
  if (isViewOp(n.kind())) return {};
  bool empty = true; // every output empty: nothing to compute (the group emits no kernel)
  for (Value* v : n.outputs())
    empty = empty && numElements(v->type().shape) == 0;
  if (empty) return {};
  if (const GpuLowering* l = findGpuLowering(n.kind()))
    return l->supports ? l->supports(n) : Support{};
  if (elementwiseOnGpu(n)) return {};
  if (hasScalarExpr(n, gpuScalarTypes()) || n.kind() == OpKind::Expand)
    return no("a tensor exceeds 32-bit indexing");
  for (Value* v : n.inputs())
    if (v && v->type().dtype != DType::F32)
      return no(fmt::format("no GPU lowering for {} with {} inputs", opKindName(n.kind()),
                            dtypeName(v->type().dtype)));
  return no(fmt::format("no GPU lowering for {}", opKindName(n.kind())));
}

ScalarTypes gpuScalarTypes() {
  ScalarTypes t = ScalarTypes::all();
  // OpenCL C's float division may be off by ulps; the dialect's quantizers divide through
  // triad_div_rn, which rounds correctly (gpu/ScalarHelpers.cpp).
  t.exactDivision = true;
  t.axisQdq = true; // chains and epilogues broadcast per-axis operands (qdqOperandShape)
  return t;
}

FusionPolicy gpuFusionPolicy() {
  FusionPolicy p;
  p.isAnchor = [](const Node& n) {
    const GpuLowering* l = findGpuLowering(n.kind());
    return l && l->anchor && gpuSupport(n).ok;
  };
  p.isFusableElementwise = [](const Node& n) { return elementwiseOnGpu(n); };
  p.anchorTailChangesType = [](const Node& n) {
    const GpuLowering* l = findGpuLowering(n.kind());
    return l && l->typedTail;
  };
  return p;
}

GpuProgram generateOpenCL(const Graph& g, const GpuCodeGenOptions& opts) {
  return Generator(g, opts).run();
}

} // namespace triad::gpu
