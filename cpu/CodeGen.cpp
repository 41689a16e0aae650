#include "cpu/CodeGen.h"

#include "cpu/Lowering.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/MemoryPlan.h"
#include "ir/ScalarExpr.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace triad::cpu {

using namespace ir;

std::string cIdentifier(std::string_view name) {
  return escape::identifier(name, escape::Lang::Cpp);
}

std::string shapeComment(const TensorType& t) {
  return typeToString(t);
}

namespace {

constexpr int64_t kAlign = 64;

int64_t alignUp(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

/// How one operand of an elementwise loop is read, relative to a segment of the output that
/// starts at linear index `i0` and never crosses a chunk of `chunk` elements.
struct OperandAccess {
  std::string literal;                  // a constant scalar, inlined
  bool invariant = false;               // the same element for the whole segment
  std::vector<std::string> offsetTerms; // summed to the element offset of i0
};

/// Broadcasting analysis of operands against the output shape. `chunk` is the number of
/// trailing output elements over which every operand is either contiguous or invariant.
struct Broadcast {
  int64_t chunk = 1;
  std::vector<OperandAccess> access;
};

/// The shape under which a 4-D NCHW shape is read when its group computes channel-blocked
/// (NCHW16c): [N, C/16, H, W, 16], or [N, 1, H, W, 1] for a channel-broadcast one (C = 1).
Shape blockedView(const Shape& s) {
  TRIAD_ASSERT(s.size() == 4, "blocked view of a rank-{} shape", s.size());
  bool bc = s[1] == 1;
  return {s[0], bc ? 1 : s[1] / 16, s[2], s[3], bc ? 1 : 16};
}

/// `out` is the output's shape as read (its blocked view when `blocked`); operands broadcast
/// against the NCHW shape and are read through their blocked view too.
Broadcast analyzeBroadcast(const Shape& out, const std::vector<const Value*>& operands,
                           bool perElement, const std::string& index, bool blocked) {
  const size_t r = out.size();
  std::vector<Shape> padded;
  for (const Value* v : operands) {
    const Shape& s = v->type().shape;
    Shape t(blocked ? 4 : r, 1);
    std::copy(s.begin(), s.end(), t.begin() + std::ptrdiff_t(t.size() - s.size()));
    padded.push_back(blocked ? blockedView(t) : t);
  }
  // Extend the suffix while every operand stays all-full or all-broadcast over it.
  std::vector<int> status(operands.size(), 0); // 0 undecided, 1 full, 2 broadcast
  size_t suffixStart = r;
  if (!perElement) {
    while (suffixStart > 0) {
      size_t d = suffixStart - 1;
      bool ok = true;
      std::vector<int> next = status;
      for (size_t k = 0; k < operands.size(); ++k) {
        if (out[d] == 1) continue;
        int st = padded[k][d] == out[d] ? 1 : 2;
        if (next[k] == 0)
          next[k] = st;
        else if (next[k] != st)
          ok = false;
      }
      if (!ok) break;
      status = next;
      --suffixStart;
    }
  }
  Broadcast b;
  for (size_t d = suffixStart; d < r; ++d)
    b.chunk *= out[d];
  std::vector<int64_t> outStrides = stridesOf(out);
  for (size_t k = 0; k < operands.size(); ++k) {
    OperandAccess a;
    const Value* v = operands[k];
    if (v->isConstant() && v->constant().numElements() == 1) {
      a.literal = scalarLiteral(v->constant());
      b.access.push_back(a);
      continue;
    }
    a.invariant = status[k] != 1;
    std::vector<int64_t> inStrides = stridesOf(padded[k]);
    // Offset of i0 from the dims before the suffix (all dims when per element), merging runs
    // of consecutive full dims into one term.
    size_t d = 0;
    size_t end = perElement ? r : suffixStart;
    while (d < end) {
      if (padded[k][d] != out[d] || out[d] == 1) {
        ++d;
        continue;
      }
      size_t e = d;
      int64_t extent = out[d];
      while (e + 1 < end && padded[k][e + 1] == out[e + 1]) {
        ++e;
        extent *= out[e];
      }
      std::string q = outStrides[e] == 1 ? index : fmt::format("{} / {}", index, outStrides[e]);
      std::string term = d == 0 ? q : fmt::format("({}) % {}", q, extent);
      if (inStrides[e] != 1) term = fmt::format("({}) * {}", term, inStrides[e]);
      a.offsetTerms.push_back(term);
      d = e + 1;
    }
    // Contiguous operands also advance within the chunk (i0 need not start one).
    if (!perElement && !a.invariant)
      a.offsetTerms.push_back(suffixStart == 0 ? index : fmt::format("{} % {}", index, b.chunk));
    if (perElement) a.invariant = true; // every element is its own segment
    b.access.push_back(a);
  }
  return b;
}

/// CastLike reads only the element type of its input 1 (target_type), never its elements.
bool typeOnlyInput(const Node& n, size_t k) {
  return n.kind() == OpKind::CastLike && k == 1;
}

/// The operands of the group's nodes from `first` on (the anchor's own inputs are its kernel's
/// business) with their access patterns. Each operand broadcasts against the output of the
/// node that reads it (views inside a chain change the shape, never the linear order), and the
/// chunk is one every analysis agrees on (their gcd), so a segment inside one chunk is inside
/// one chunk of each.
struct GroupAccess {
  std::vector<const Value*> operands;
  std::vector<OperandAccess> access;
  int64_t chunk = 1;
};

GroupAccess analyzeGroup(const FusionGroup& grp, size_t first, bool perElement,
                         bool blocked = false) {
  GroupAccess ga;
  std::unordered_set<const Value*> inside;
  if (first > 0) inside.insert(grp.nodes[0]->output(0));
  std::vector<Shape> readAt;
  for (size_t i = first; i < grp.nodes.size(); ++i) {
    const Node* n = grp.nodes[i];
    for (size_t k = 0; k < n->inputs().size(); ++k)
      if (Value* v = n->input(k);
          v && !typeOnlyInput(*n, k) && !inside.count(v) &&
          std::find(ga.operands.begin(), ga.operands.end(), v) == ga.operands.end()) {
        ga.operands.push_back(v);
        const Shape& at = n->output(0)->type().shape;
        readAt.push_back(blocked ? blockedView(at) : at);
      }
    inside.insert(n->output(0));
  }
  ga.chunk = numElements(grp.last()->output(0)->type().shape);
  ga.access.resize(ga.operands.size());
  std::vector<Shape> shapes;
  for (const Shape& sh : readAt)
    if (std::find(shapes.begin(), shapes.end(), sh) == shapes.end()) shapes.push_back(sh);
  for (const Shape& sh : shapes) {
    std::vector<const Value*> subset;
    std::vector<size_t> where;
    for (size_t k = 0; k < ga.operands.size(); ++k)
      if (readAt[k] == sh) {
        subset.push_back(ga.operands[k]);
        where.push_back(k);
      }
    Broadcast b = analyzeBroadcast(sh, subset, perElement, perElement ? "i" : "i0", blocked);
    ga.chunk = std::gcd(ga.chunk, b.chunk);
    for (size_t j = 0; j < where.size(); ++j)
      ga.access[where[j]] = b.access[j];
  }
  if (ga.chunk == 0) ga.chunk = 1;
  return ga;
}

struct ValueRef {
  std::string ptr; // typed pointer expression
};

class Generator {
public:
  Generator(const Graph& g, const CodeGenOptions& opts) : g_(g), opts_(opts) {}

  GeneratedCode run();

private:
  std::string pointer(const Value* v, bool writable) const;
  std::string typeOf(const Value* v) const { return cppTypeName(v->type().dtype); }
  void placeConstants();
  void emitGroup(size_t gi, const FusionGroup& grp);
  void emitChain(const FusionGroup& grp, Code& body);
  /// The loop body computing the group's nodes from `first` on for elements
  /// [i0, i0 + n); `anchorValue` is the expression of the anchor's output element j.
  void emitSegment(const FusionGroup& grp, size_t first, bool perElement, Code& body,
                   const std::string& anchorValue, const std::string& store, bool blocked = false);
  /// Chooses which values are stored channel-blocked (blocked_).
  void assignLayouts(const std::vector<FusionGroup>& groups);
  void emitHostCall(const Node& n, Code& body);

  const Graph& g_;
  CodeGenOptions opts_;
  MemoryPlan plan_;
  std::unordered_map<const Value*, int64_t> weightOffset_;
  std::vector<uint8_t> weights_;
  Code fields_{1}, create_{1}, runBody_{1};
  /// One function per layer: its comment lines, and its definition from `int layer_...` on
  /// (`static` is added when the model is one translation unit).
  struct LayerFn {
    std::string comments, definition;
  };
  std::vector<LayerFn> functions_;
  std::vector<const Node*> hostNodes_;
  escape::Uniquer idents_{escape::Lang::Cpp}; // layer identifiers, distinct per group
  std::vector<std::string> layerNames_;       // by layer index (profiling)
  std::vector<std::string> layerOps_;         // by layer index: "Conv+Relu"
  std::unordered_set<const Value*> blocked_;  // stored NCHW16c
};

std::string Generator::pointer(const Value* v, bool writable) const {
  const Location& loc = plan_.at(v);
  std::string t = typeOf(v);
  std::string cq = writable ? "" : "const ";
  switch (loc.storage) {
  case Storage::Input:
    return fmt::format("(({}{}*)in[{}])", cq, t, loc.index);
  case Storage::Output:
    return fmt::format("(({}*)out[{}])", t, loc.index);
  case Storage::Constant: {
    const Value* owner = g_.values()[size_t(loc.owner)].get();
    return fmt::format("((const {}*)(m.W + {}))", t, weightOffset_.at(owner));
  }
  case Storage::Arena:
    return fmt::format("(({}*)(m.arena + {}))", t, loc.offset);
  case Storage::None:
    break;
  }
  TRIAD_ASSERT(false, "value {} has no storage", v->name());
  return {};
}

void Generator::placeConstants() {
  for (Value* c : g_.constants()) {
    // Only what the code reads: a constant left without users by a pass is not shipped.
    if (c->users().empty() &&
        std::find(g_.outputs().begin(), g_.outputs().end(), c) == g_.outputs().end())
      continue;
    int64_t off = alignUp(int64_t(weights_.size()));
    weights_.resize(size_t(off), 0);
    const Tensor& t = c->constant();
    weights_.insert(weights_.end(), t.raw(), t.raw() + t.byteSize());
    weightOffset_[c] = off;
  }
  weights_.resize(size_t(alignUp(int64_t(weights_.size()))), 0);
}

void Generator::emitSegment(const FusionGroup& grp, size_t first, bool perElement, Code& body,
                            const std::string& anchorValue, const std::string& store,
                            bool blocked) {
  // Per element: every operand offset is computed from i = i0 + j inside the loop.
  GroupAccess ga = analyzeGroup(grp, first, perElement, blocked);
  const std::vector<const Value*>& operands = ga.operands;
  std::unordered_map<const Value*, std::string> expr;
  if (first > 0) expr[grp.nodes[0]->output(0)] = anchorValue;
  Code loads;
  Code& operandCode = perElement ? loads : body;
  for (size_t k = 0; k < operands.size(); ++k) {
    const OperandAccess& a = ga.access[k];
    if (!a.literal.empty()) {
      expr[operands[k]] = a.literal;
      continue;
    }
    std::string offset;
    for (const std::string& t : a.offsetTerms)
      offset += (offset.empty() ? "" : " + ") + t;
    if (offset.empty()) offset = "0";
    std::string p = pointer(operands[k], false);
    if (a.invariant) {
      operandCode.line("const {} s{} = {}[{}];", typeOf(operands[k]), k, p, offset);
      expr[operands[k]] = fmt::format("s{}", k);
    } else {
      operandCode.line("const {}* p{} = {} + {};", typeOf(operands[k]), k, p, offset);
      expr[operands[k]] = fmt::format("p{}[j]", k);
    }
  }
  body.line("TRIAD_IVDEP // in place or disjoint (triad_scalar.h)");
  body.open("for (int64_t j = 0; j < n; ++j)");
  if (perElement) {
    body.line("const int64_t i = i0 + j;");
    body.raw(loads.text());
  }
  std::string lastVar;
  for (size_t i = first; i < grp.nodes.size(); ++i) {
    const Node* nd = grp.nodes[i];
    std::vector<std::string> ops;
    for (size_t k = 0; k < nd->inputs().size(); ++k) {
      Value* v = nd->input(k);
      ops.push_back(v && !typeOnlyInput(*nd, k) ? expr.at(v) : std::string());
    }
    // Expand (a chain head) broadcasts its operand; views keep the linear order.
    std::string e =
        nd->kind() == OpKind::Expand || isViewOp(nd->kind()) ? ops[0] : scalarExpr(*nd, ops);
    std::string var = fmt::format("t{}", i);
    body.line("const {} {} = {}; // {} ({})", typeOf(nd->output(0)), var, e,
              escape::comment(nd->name()), opKindName(nd->kind()));
    expr[nd->output(0)] = var;
    lastVar = var;
  }
  body.line("{} = {};", store, lastVar);
  body.close();
}

void Generator::emitChain(const FusionGroup& grp, Code& body) {
  const Value* out = grp.last()->output(0);
  int64_t total = numElements(out->type().shape);
  // The chunk decides the loop structure: rows of `chunk` contiguous elements, cut into
  // blocks for the threads.
  int64_t chunk = analyzeGroup(grp, 0, false).chunk;
  int64_t block = std::min<int64_t>(chunk, 16384);
  int64_t blocksPerRow = (chunk + block - 1) / block;
  int64_t tasks = total / chunk * blocksPerRow;
  body.line("{}* y = {};", typeOf(out), pointer(out, true));
  // A QuantizeLinear whose value the chain reads on: see TRIAD_QDQ_LOOP (triad_scalar.h).
  bool qdqLoop = std::any_of(grp.nodes.begin(), grp.nodes.end() - 1,
                             [](const Node* n) { return n->kind() == OpKind::QuantizeLinear; });
  body.open(
      fmt::format("auto segment = [&](int64_t i0, int64_t n){}", qdqLoop ? " TRIAD_QDQ_LOOP" : ""));
  // A local pointer: stores through an 8-bit y could otherwise alias the captured y itself.
  body.line("{}* const yo = y + i0;", typeOf(out));
  emitSegment(grp, 0, false, body, "", "yo[j]");
  body.close("};");
  if (tasks == 1) {
    body.line("segment(0, {});", total);
    return;
  }
  // Blocks go to the run-time's threads when the loop is big enough to pay for them.
  body.open(fmt::format("triad_rt::parallel_for({}, {}, [&](ptrdiff_t t)", tasks,
                        std::max<int64_t>(1, total / tasks)));
  body.line("const int64_t row = t / {}, c0 = t % {} * {};", blocksPerRow, blocksPerRow, block);
  body.line("segment(row * {} + c0, std::min<int64_t>({}, {} - c0));", chunk, block, chunk);
  body.close("});");
}

void Generator::emitHostCall(const Node& n, Code& body) {
  if (opts_.standalone)
    fail(ErrorKind::Unsupported,
         "node '{}' ({}) has no native CPU lowering ({}); standalone sources cannot call the "
         "host's reference kernels",
         n.name(), opKindName(n.kind()), nativeSupport(n).reason);
  int call = int(hostNodes_.size());
  hostNodes_.push_back(&n);
  std::string ins, outs;
  for (Value* v : n.inputs())
    ins += (ins.empty() ? "" : ", ") +
           (v ? std::string("(const void*)") + pointer(v, false) : std::string("nullptr"));
  for (Value* v : n.outputs())
    outs += (outs.empty() ? "" : ", ") + std::string("(void*)") + pointer(v, true);
  body.line("// no native lowering ({}): the host runs the reference kernel",
            nativeSupport(n).reason);
  body.line("const void* ins[] = {{{}}};", ins.empty() ? "nullptr" : ins);
  body.line("void* outs[] = {{{}}};", outs);
  body.line("if (!m.host) return m.fail(\"layer '{}' needs the host's kernels\");",
            cIdentifier(n.name()));
  body.line(
      "if (m.host(m.host_ctx, {}, ins, outs)) return m.fail(\"layer '{}' failed on the host\");",
      call, cIdentifier(n.name()));
}

// Channel-blocked layout (NCHW16c). A group's output is stored blocked when its anchor's kernel
// can write it blocked, its channels are a multiple of 16, every node reading it is a blockable
// anchor (as its input 0) or sits in the epilogue of a group whose output is blocked too, and it is
// not a graph output. An epilogue of a blocked group reads its full-size operands blocked, so those
// must be blocked too; channel-broadcast operands and scalars are read as they are. Values failing
// a rule are dropped until none does. Conversions happen inside the anchors' kernels: a blockable
// anchor reads an NCHW input (and, writing NCHW, a blocked one) through a copy in scratch.
void Generator::assignLayouts(const std::vector<FusionGroup>& groups) {
  auto blockable = [](const Node* n) {
    const Lowering* low = n ? kernelLowering(*n) : nullptr;
    return low && low->blockable && nativeSupport(*n).ok && low->blockable(*n);
  };
  std::unordered_map<const Node*, const FusionGroup*> groupOf;
  for (const FusionGroup& grp : groups)
    for (const Node* n : grp.nodes)
      groupOf[n] = &grp;
  std::unordered_set<const Value*> graphOutputs(g_.outputs().begin(), g_.outputs().end());
  // Full-size epilogue operands of each candidate group (they must be blocked with it).
  std::unordered_map<const Value*, std::vector<const Value*>> partners;
  for (const FusionGroup& grp : groups) {
    const Node* a = grp.anchor();
    if (!a || !blockable(a)) continue;
    const Value* out = grp.last()->output(0);
    if (graphOutputs.count(out)) continue;
    const Shape& shape = out->type().shape;
    if (shape.size() != 4 || shape[1] % 16 != 0) continue; // whole blocks of 16 channels only
    bool ok = true;
    std::vector<const Value*> full;
    std::unordered_set<const Value*> inside = {a->output(0)};
    for (size_t i = 1; i < grp.nodes.size() && ok; ++i) {
      const Node* n = grp.nodes[i];
      ok = !isViewOp(n->kind()) && n->output(0)->type().shape == shape;
      inside.insert(n->output(0));
      for (const Value* v : n->inputs()) {
        if (!v || inside.count(v) || !ok) continue;
        if (v->isConstant() && v->constant().numElements() == 1) continue;
        Shape t(4, 1);
        const Shape& vs = v->type().shape;
        if (vs.size() > 4) {
          ok = false;
          continue;
        }
        std::copy(vs.begin(), vs.end(), t.begin() + std::ptrdiff_t(4 - vs.size()));
        if (t[1] == 1) continue; // broadcast over channels
        if (t == shape && !v->isConstant())
          full.push_back(v);
        else
          ok = false;
      }
    }
    if (!ok) continue;
    blocked_.insert(out);
    partners[out] = std::move(full);
  }
  // Readers of each value: (node, input index).
  std::unordered_map<const Value*, std::vector<std::pair<const Node*, size_t>>> readers;
  for (const auto& n : g_.nodes())
    for (size_t k = 0; k < n->inputs().size(); ++k)
      if (n->input(k)) readers[n->input(k)].emplace_back(n.get(), k);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = blocked_.begin(); it != blocked_.end();) {
      const Value* v = *it;
      bool ok = true;
      for (const auto& [n, k] : readers[v]) {
        const FusionGroup* grp = groupOf.at(n);
        if (n == grp->anchor())
          ok = k == 0 && blockable(n);
        else
          ok = grp->anchored && blocked_.count(grp->last()->output(0)) > 0;
        if (!ok) break;
      }
      for (const Value* p : partners[v])
        ok = ok && blocked_.count(p) > 0;
      if (ok) {
        ++it;
      } else {
        it = blocked_.erase(it);
        changed = true;
      }
    }
  }
}

void Generator::emitGroup(size_t gi, const FusionGroup& grp) {
  const Node* head = grp.nodes.front();
  // Functions are named after their layers: the first node, plus the last when fused.
  std::string ident = cIdentifier(head->name());
  if (grp.nodes.size() > 1) ident += "_" + cIdentifier(grp.last()->name());
  ident = idents_.fresh(ident);
  if (plan_.aliasStep[gi]) {
    runBody_.line("// {} ({}): a view of {}, no code", escape::comment(head->name()),
                  opKindName(head->kind()), escape::comment(head->input(0)->name()));
    return;
  }
  Code body(1);
  std::string fname = fmt::format("layer_{}", ident);
  Code comments, fn;
  comments.line("");
  // The comment block: every node with its output type.
  for (const Node* n : grp.nodes)
    comments.line("// {} {} -> {}", opKindName(n->kind()), escape::comment(n->name()),
                  shapeComment(n->output(0)->type()));
  fn.open(fmt::format("int {}(State& m, const void* const* in, void* const* out)", fname));
  fn.line("(void)m; (void)in; (void)out;");
  const Lowering* low = kernelLowering(*head);
  bool native = nativeSupport(*head).ok;
  if (grp.nodes.size() == 1 && isViewOp(head->kind())) {
    // A view whose output needs its own storage (a graph output): copy.
    const Value* in = head->input(0);
    const Value* o = head->output(0);
    body.line("std::memcpy({}, {}, {});", pointer(o, true), pointer(in, false),
              numElements(o->type().shape) * int64_t(dtypeSize(o->type().dtype)));
  } else if (!native) {
    TRIAD_ASSERT(grp.nodes.size() == 1, "host node {} was fused", head->name());
    emitHostCall(*head, body);
  } else if (low && low->emit) {
    LowerContext ctx{*head, ident, {}, {}, {}, body, create_, fields_, {}};
    for (Value* v : head->inputs())
      ctx.inputs.push_back(v ? pointer(v, false) : std::string());
    if (grp.anchored && grp.nodes.size() > 1) {
      const Value* out = grp.last()->output(0);
      ctx.outputs.push_back(pointer(out, true));
      bool blocked = blocked_.count(out) > 0;
      ctx.epilogue = [this, &grp, blocked](const std::string& index, int64_t ld) {
        // Row segments stay inside one broadcast chunk when the chunk is a multiple of the
        // kernel's row length; otherwise every element computes its own operand offsets.
        Code e;
        e.open("[&](float* c, int row, int col0, int n)");
        e.line("const int64_t i0 = {}; (void)i0; (void)row; (void)col0;", index);
        int64_t chunk = analyzeGroup(grp, 1, false, blocked).chunk;
        bool perElement = chunk % ld != 0;
        emitSegment(grp, 1, perElement, e, "c[j]", "c[j]", blocked);
        e.close("}");
        return e.text();
      };
    } else {
      for (Value* v : head->outputs())
        ctx.outputs.push_back(pointer(v, true));
    }
    if (low->blockable) {
      ctx.inputBlocked = blocked_.count(head->input(0)) > 0;
      ctx.outputBlocked = blocked_.count(grp.last()->output(0)) > 0;
    }
    ctx.data = [this](const std::vector<uint8_t>& bytes) {
      int64_t off = alignUp(int64_t(weights_.size()));
      weights_.resize(size_t(off), 0);
      weights_.insert(weights_.end(), bytes.begin(), bytes.end());
      return fmt::format("(m.W + {})", off);
    };
    ctx.scratch = [&ctx](const std::string& bytes) {
      ctx.create.line("m.scratch_bytes = std::max(m.scratch_bytes, (size_t)({}));", bytes);
      return std::string("m.scratch");
    };
    low->emit(ctx);
  } else {
    emitChain(grp, body);
  }
  fn.raw(body.text());
  fn.line("return 0;");
  fn.close();
  functions_.push_back({comments.text(), fn.text()});
  runBody_.line("TRIAD_LAYER({}, {});", layerNames_.size(), fname);
  layerNames_.push_back(ident);
  std::string ops;
  for (const Node* n : grp.nodes)
    ops += (ops.empty() ? "" : "+") + std::string(n->def().onnxName);
  layerOps_.push_back(std::move(ops));
}

GeneratedCode Generator::run() {
  FusionPolicy policy = cpuFusionPolicy();
  if (!opts_.fuse) policy.isAnchor = [](const Node&) { return false; };
  std::vector<FusionGroup> groups = formFusionGroups(g_, policy);
  plan_ = planMemory(g_, groups);
  placeConstants();
  if (opts_.blockedLayout) assignLayouts(groups);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    emitGroup(gi, groups[gi]);
    if (opts_.progress)
      opts_.progress(groups[gi].nodes.front()->name(), int64_t(gi + 1), int64_t(groups.size()));
  }
  // Graph outputs that are not written in place: duplicates, inputs, constants, views.
  for (size_t i = 0; i < g_.outputs().size(); ++i) {
    const Value* v = g_.outputs()[i];
    const Location& loc = plan_.at(v);
    if (loc.storage == Storage::Output && loc.index == int(i)) continue;
    int64_t bytes = numElements(v->type().shape) * int64_t(dtypeSize(v->type().dtype));
    runBody_.line("std::memcpy(out[{}], {}, {}); // graph output '{}'", i, pointer(v, false), bytes,
                  escape::comment(v->name()));
  }

  GeneratedCode gc;
  const std::string& P = opts_.prefix;
  // The model's name only ever appears in comments (it is untrusted text: issue 25).
  std::string model = escape::comment(g_.name.empty() ? "model" : g_.name);
  Code src;
  src.line("// Generated by Triad from model '{}' for the CPU target. Do not edit.", model);
  src.line("// {} nodes in {} functions; {}.", g_.nodes().size(), groups.size(),
           describeFusion(groups));
  src.line("// Memory: arena {} bytes for intermediates (one buffer each would take {}), {} "
           "in-place, {} views;",
           plan_.arenaBytes, plan_.unsharedBytes, plan_.inPlaceCount, plan_.aliasCount);
  src.line("// weights {} bytes; per-layer scratch sized at creation.", weights_.size());
  src.line("//");
  src.line("// Inputs:");
  for (size_t i = 0; i < g_.inputs().size(); ++i)
    src.line("//   in[{}]  {} {}", i, escape::comment(g_.inputs()[i]->name()),
             typeToString(g_.inputs()[i]->type()));
  src.line("// Outputs:");
  for (size_t i = 0; i < g_.outputs().size(); ++i)
    src.line("//   out[{}] {} {}", i, escape::comment(g_.outputs()[i]->name()),
             typeToString(g_.outputs()[i]->type()));
  // The includes and the model's internal types, shared by every translation unit.
  Code pre, decls;
  pre.line("#include \"{}.h\"", opts_.stem);
  pre.line("#include \"triad_kernels.h\"");
  pre.line("");
  pre.line("#include <algorithm>");
  pre.line("#include <cmath>");
  pre.line("#include <cstdint>");
  pre.line("#include <cstdio>");
  pre.line("#include <cstdlib>");
  pre.line("#include <cstring>");
  pre.line("#include <vector>");
  pre.line("");
  pre.line("#include <chrono>");
  pre.line("");
  Code macro;
  macro.line("// Runs layer K; with profiling on, adds its wall time to m.layer_ms[K].");
  macro.line("#define TRIAD_LAYER(K, F) \\");
  macro.line("  do {{ \\");
  macro.line("    auto t0_ = m.profile ? std::chrono::steady_clock::now() \\");
  macro.line("                         : std::chrono::steady_clock::time_point(); \\");
  macro.line("    if (int rc = F(m, in, out)) return rc; \\");
  macro.line("    if (m.profile) \\");
  macro.line("      m.layer_ms[K] += std::chrono::duration<double, std::milli>( \\");
  macro.line("          std::chrono::steady_clock::now() - t0_).count(); \\");
  macro.line("  }} while (0)");
  macro.line("");
  // The math functions of the scalar expressions: std's overloads, except erf and tanh on
  // float, which come from the run-time as branch-free polynomials (relative error < 5e-7) so
  // that loops using them (GELU epilogues) vectorize; NaN still propagates.
  std::string usings;
  for (const std::string& f : scalarMathFunctions())
    if (f != "erf" && f != "tanh") usings += fmt::format("using std::{}; ", f);
  decls.line("{}", usings);
  decls.line("inline float erf(float x) {{ return x != x ? x : triad_rt::erf_s(x); }}");
  decls.line("inline float tanh(float x) {{ return x != x ? x : triad_rt::tanh_s(x); }}");
  decls.line("inline double erf(double x) {{ return std::erf(x); }}");
  decls.line("inline double tanh(double x) {{ return std::tanh(x); }}");
  decls.line("");
  decls.open("struct State");
  decls.line("const unsigned char* W = nullptr; // weights blob");
  decls.line("unsigned char* arena = nullptr;   // {} bytes of intermediates", plan_.arenaBytes);
  decls.line("float* scratch = nullptr;         // per-layer scratch, shared by the layers");
  decls.line("size_t scratch_bytes = 1;         // its size: the largest layer's need (create)");
  decls.line("int threads = 1;");
  decls.line("triad_host_fn host = nullptr;");
  decls.line("void* host_ctx = nullptr;");
  decls.line("char error[512] = {{0}};");
  decls.line("bool profile = false;         // time every layer (P_profile)");
  decls.line("double layer_ms[{}] = {{0}};", std::max<size_t>(layerNames_.size(), 1));
  decls.line("std::vector<void*> owned;");
  decls.raw(fields_.text());
  decls.open("void* alloc(size_t bytes)");
  decls.line("void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);");
  decls.line("if (p) owned.push_back(p);");
  decls.line("return p;");
  decls.close();
  decls.open("int fail(const char* what)");
  decls.line("std::snprintf(error, sizeof error, \"%s\", what);");
  decls.line("return 1;");
  decls.close();
  decls.close("};");

  // The layers, in `units` runs of about equal size: each run is compiled on its own (in
  // parallel) when there are several.
  size_t total = 0;
  for (const LayerFn& f : functions_)
    total += f.definition.size();
  size_t unitChars = opts_.unitChars ? opts_.unitChars : kUnitChars;
  size_t units = std::clamp<size_t>(total / unitChars, 1, std::max(1, opts_.maxUnits));
  units = std::min(units, std::max<size_t>(functions_.size(), 1));
  std::vector<size_t> firstOf(units + 1, functions_.size());
  for (size_t u = 0, i = 0, done = 0; u < units; ++u) {
    firstOf[u] = i;
    while (i < functions_.size() && (u + 1 == units || done < total * (u + 1) / units))
      done += functions_[i++].definition.size();
  }
  auto unitFunctions = [&](size_t u, bool isStatic) {
    std::string text;
    for (size_t i = firstOf[u]; i < firstOf[u + 1]; ++i)
      text += functions_[i].comments + (isStatic ? "static " : "") + functions_[i].definition;
    return text;
  };
  const std::string ns = P + "_impl";
  if (units == 1) {
    src.raw(pre.text());
    src.raw(macro.text());
    src.line("");
    src.line("namespace {{");
    src.line("");
    src.raw(decls.text());
    src.raw(unitFunctions(0, true));
    src.line("");
    src.line("}} // namespace");
  } else {
    Code internal;
    internal.line("// Generated by Triad: the internal types of model '{}', shared by its {} "
                  "translation units.",
                  model, units);
    internal.line("#pragma once");
    internal.raw(pre.text());
    internal.line("namespace {} {{", ns);
    internal.line("");
    internal.raw(decls.text());
    internal.line("");
    for (const std::string& f : layerNames_)
      internal.line("int layer_{}(State& m, const void* const* in, void* const* out);", f);
    internal.line("");
    internal.line("}} // namespace {}", ns);
    gc.extraFiles.push_back({opts_.stem + "_internal.h", internal.text()});
    for (size_t u = 1; u < units; ++u) {
      Code part;
      part.line("// Generated by Triad from model '{}' for the CPU target: layers {} to {} of {}.",
                model, firstOf[u], firstOf[u + 1] - 1, functions_.size());
      part.line("#include \"{}_internal.h\"", opts_.stem);
      part.line("");
      part.line("namespace {} {{", ns);
      part.raw(unitFunctions(u, false));
      part.line("");
      part.line("}} // namespace {}", ns);
      std::string name = fmt::format("{}_{}.cpp", opts_.stem, u);
      gc.extraFiles.push_back({name, part.text()});
    }
    src.line("#include \"{}_internal.h\"", opts_.stem);
    src.line("");
    src.raw(macro.text());
    src.line("namespace {} {{", ns);
    src.raw(unitFunctions(0, false));
    src.line("");
    src.line("}} // namespace {}", ns);
    src.line("");
    src.line("using namespace {};", ns);
  }
  gc.units.push_back(opts_.stem + ".cpp");
  for (size_t u = 1; u < units; ++u)
    gc.units.push_back(fmt::format("{}_{}.cpp", opts_.stem, u));
  src.line("");
  src.line("extern \"C\" {{");
  src.line("");
  src.open(fmt::format("void* {}_create(const unsigned char* weights, int threads, triad_host_fn "
                       "host, void* host_ctx)",
                       P));
  src.line("State* mp = new State;");
  src.line("State& m = *mp;");
  src.line("m.W = weights;");
  src.line("m.threads = threads < 1 ? 1 : threads;");
  src.line("triad_rt::set_num_threads(m.threads);");
  src.line("m.host = host;");
  src.line("m.host_ctx = host_ctx;");
  src.line("m.arena = (unsigned char*)m.alloc({});", std::max<int64_t>(plan_.arenaBytes, 1));
  src.raw(create_.text());
  src.line("m.scratch = (float*)m.alloc(m.scratch_bytes);");
  src.line("return mp;");
  src.close();
  src.line("");
  src.open(fmt::format("int {}_run(void* model, const void* const* in, void* const* out)", P));
  src.line("State& m = *static_cast<State*>(model);");
  src.line("m.error[0] = 0;");
  src.line("(void)in; (void)out; // unused when every output is a constant");
  src.line("// The run-time's thread setting is process-wide (shared by every loaded model).");
  src.line("triad_rt::set_num_threads(m.threads);");
  src.raw(runBody_.text());
  src.line("return 0;");
  src.close();
  src.line("");
  src.open(fmt::format("const char* {}_error(void* model)", P));
  src.line("return static_cast<State*>(model)->error;");
  src.close();
  src.line("");
  src.open(fmt::format("void {}_destroy(void* model)", P));
  src.line("State* m = static_cast<State*>(model);");
  src.line("for (void* p : m->owned) std::free(p);");
  src.line("delete m;");
  src.close();
  src.line("");
  src.line("size_t {}_weights_bytes(void) {{ return {}; }}", P, weights_.size());
  src.line("");
  std::string names;
  for (const std::string& n : layerNames_)
    names += fmt::format("\"{}\", ", n);
  src.line("static const char* const kLayerNames[] = {{{}nullptr}};", names);
  src.line("");
  src.line("/// Turns per-layer timing on (and clears it) or off.");
  src.open(fmt::format("void {}_set_profiling(void* model, int on)", P));
  src.line("State& m = *static_cast<State*>(model);");
  src.line("m.profile = on != 0;");
  src.line("for (double& t : m.layer_ms) t = 0;");
  src.close();
  src.line("");
  src.line("/// Layer names and accumulated milliseconds; returns the number of layers.");
  src.open(
      fmt::format("int {}_profile(void* model, const char* const** names, const double** ms)", P));
  src.line("*names = kLayerNames;");
  src.line("*ms = static_cast<State*>(model)->layer_ms;");
  src.line("return {};", layerNames_.size());
  src.close();
  src.line("");
  src.line("}} // extern \"C\"");

  Code h;
  h.line("// Generated by Triad: the C API of model '{}' compiled for the CPU.", model);
  h.line("#pragma once");
  h.line("#include <stddef.h>");
  h.line("#ifdef __cplusplus");
  h.line("extern \"C\" {{");
  h.line("#endif");
  h.line("#ifndef TRIAD_HOST_FN_DEFINED");
  h.line("#define TRIAD_HOST_FN_DEFINED");
  h.line("/// Runs one node with the host's reference kernel; non-zero on failure (unused by");
  h.line("/// standalone sources).");
  h.line("typedef int (*triad_host_fn)(void* ctx, int call, const void* const* inputs, "
         "void* const* outputs);");
  h.line("#endif");
  h.line("/// `weights`: the {}-byte blob written next to this file (64-byte aligned, must outlive "
         "the model).",
         weights_.size());
  h.line("void* {}_create(const unsigned char* weights, int threads, triad_host_fn host, void* "
         "host_ctx);",
         P);
  h.line("/// in: {} buffers, out: {} buffers (dense, row-major, in graph order). 0 on success.",
         g_.inputs().size(), g_.outputs().size());
  h.line("int {}_run(void* model, const void* const* in, void* const* out);", P);
  h.line("const char* {}_error(void* model);", P);
  h.line("void {}_destroy(void* model);", P);
  h.line("size_t {}_weights_bytes(void);", P);
  h.line("/// Per-layer timing: on/off (clears), then names and accumulated milliseconds.");
  h.line("void {}_set_profiling(void* model, int on);", P);
  h.line("int {}_profile(void* model, const char* const** names, const double** ms);", P);
  h.line("#ifdef __cplusplus");
  h.line("}}");
  h.line("#endif");

  gc.stem = opts_.stem;
  gc.prefix = P;
  gc.source = src.text();
  gc.header = h.text();
  gc.weights = std::move(weights_);
  gc.hostNodes = hostNodes_;
  gc.layerOps = layerOps_;
  gc.arenaBytes = plan_.arenaBytes;
  gc.unsharedBytes = plan_.unsharedBytes;
  gc.inPlace = plan_.inPlaceCount;
  gc.views = plan_.aliasCount;
  gc.groups = groups.size();
  gc.nodes = g_.nodes().size();
  gc.fusionSummary = describeFusion(groups);
  for (const Value* v : g_.inputs())
    gc.ioBytes.push_back(
        {numElements(v->type().shape) * int64_t(dtypeSize(v->type().dtype)), true});
  for (const Value* v : g_.outputs())
    gc.ioBytes.push_back(
        {numElements(v->type().shape) * int64_t(dtypeSize(v->type().dtype)), false});
  return gc;
}

} // namespace

bool blockedLayoutDefault() {
  const char* v = std::getenv("TRIAD_BLOCKED");
  return !(v && std::string_view(v) == "0");
}

GeneratedCode generateCpp(const Graph& g, const CodeGenOptions& opts) {
  return Generator(g, opts).run();
}

} // namespace triad::cpu
