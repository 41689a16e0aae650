#include "frontend/OnnxImporter.h"
#include "frontend/OnnxFunctions.h"
#include "frontend/OnnxTensor.h"
#include "frontend/ShapeBinding.h"
#include "frontend/TensorIO.h"
#include "ir/Escape.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"
#include "ir/ops/Quantize.h"
#include "ir/passes/Folding.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <map>
#include <onnx/shape_inference/implementation.h>
#include <poll.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace triad::frontend {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;
using ir::TensorType;

namespace {

std::string describeNode(const onnx::NodeProto& n) {
  std::string domain = n.domain().empty() ? "" : fmt::format(", domain '{}'", n.domain());
  return fmt::format("node '{}' ({}{})", n.name(), n.op_type(), domain);
}

/// Re-throws a triad::Error with `prefix: ` in front, keeping its kind.
template <typename F> auto withContext(const std::string& prefix, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("{}: {}", prefix, e.what()));
  }
}

// libonnx's shape inference is third-party code that has corrupted the heap, divided by zero
// and crashed on malformed models. It runs only on models Triad has validated, and then in a
// child process with a time limit, so that nothing it does can take the importer down: the child
// sends back the inferred value_info (or libonnx's exception), and a crash, a hang or garbage
// becomes a warning. Returns nullopt with `warning` set when no result came back.
std::optional<onnx::GraphProto> inferShapesContained(onnx::ModelProto& model,
                                                     std::string& warning) {
  constexpr int kTimeoutMs = 30000;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    warning = "ONNX shape inference cross-check skipped: cannot create a pipe";
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    warning = "ONNX shape inference cross-check skipped: cannot fork";
    return std::nullopt;
  }
  if (pid == 0) { // the child: the model is its own copy-on-write copy
    ::close(fds[0]);
    ::alarm(kTimeoutMs / 1000 + 1);
    std::string out;
    try {
      onnx::shape_inference::InferShapes(model);
      onnx::GraphProto vi;
      *vi.mutable_value_info() = model.graph().value_info();
      out = "R" + vi.SerializeAsString();
    } catch (const std::exception& e) {
      out = std::string("E") + e.what();
    }
    for (size_t done = 0; done < out.size();) {
      ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) ::_exit(1);
      done += size_t(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  bool timedOut = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  for (;;) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now())
                       .count());
    pollfd p{fds[0], POLLIN, 0};
    int r = left > 0 ? ::poll(&p, 1, left) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timedOut = r == 0;
      break;
    }
    char buf[1 << 16];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (timedOut) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    warning = fmt::format("ONNX shape inference cross-check skipped: libonnx took over {} s",
                          kTimeoutMs / 1000);
    return std::nullopt;
  }
  if (WIFSIGNALED(status)) {
    warning = fmt::format("ONNX shape inference cross-check skipped: libonnx crashed ({})",
                          ::strsignal(WTERMSIG(status)));
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got.empty()) {
    warning = "ONNX shape inference cross-check skipped: libonnx gave no result";
    return std::nullopt;
  }
  if (got[0] == 'E') {
    warning = fmt::format("ONNX shape inference failed: {}", got.substr(1));
    return std::nullopt;
  }
  onnx::GraphProto vi;
  if (got[0] != 'R' || !vi.ParseFromString(got.substr(1))) {
    warning = "ONNX shape inference cross-check skipped: libonnx gave no result";
    return std::nullopt;
  }
  return vi;
}

// AttrReader over one NodeProto that records which attributes the op's parser read, so that
// attributes Triad does not understand are refused instead of silently ignored.
class OnnxAttrReader final : public ir::AttrReader {
public:
  OnnxAttrReader(const onnx::NodeProto& node, fs::path baseDir) : baseDir_(std::move(baseDir)) {
    for (const auto& a : node.attribute()) {
      if (!a.ref_attr_name().empty())
        fail(ErrorKind::Unsupported, "attribute '{}' refers to a function attribute", a.name());
      attrs_[a.name()] = &a;
    }
  }

  bool has(std::string_view name) const override { return find(name) != nullptr; }

  std::optional<int64_t> getInt(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::INT, "an integer (INT)");
    return a ? std::optional<int64_t>(a->i()) : std::nullopt;
  }
  std::optional<float> getFloat(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::FLOAT, "a float (FLOAT)");
    return a ? std::optional<float>(a->f()) : std::nullopt;
  }
  std::optional<std::string> getString(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::STRING, "a string (STRING)");
    return a ? std::optional<std::string>(a->s()) : std::nullopt;
  }
  std::optional<std::vector<int64_t>> getInts(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::INTS, "a list of integers (INTS)");
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  std::optional<std::vector<float>> getFloats(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::FLOATS, "a list of floats (FLOATS)");
    if (!a) return std::nullopt;
    return std::vector<float>(a->floats().begin(), a->floats().end());
  }
  std::optional<std::vector<std::string>> getStrings(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::STRINGS, "a list of strings (STRINGS)");
    if (!a) return std::nullopt;
    return std::vector<std::string>(a->strings().begin(), a->strings().end());
  }
  std::optional<Tensor> getTensor(std::string_view name) const override {
    auto* a = get(name, onnx::AttributeProto::TENSOR, "a tensor (TENSOR)");
    if (!a) return std::nullopt;
    return tensorFromProto(a->t(), baseDir_, fmt::format("attribute '{}'", name));
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [k, v] : attrs_)
      out.push_back(k);
    return out;
  }
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : attrs_)
      if (!read_.count(k)) out.push_back(k);
    return out;
  }

private:
  const onnx::AttributeProto* find(std::string_view name) const {
    auto it = attrs_.find(std::string(name));
    if (it == attrs_.end()) return nullptr;
    read_.insert(it->first);
    return it->second;
  }
  const onnx::AttributeProto* get(std::string_view name, onnx::AttributeProto::AttributeType type,
                                  std::string_view what) const {
    const onnx::AttributeProto* a = find(name);
    if (a && a->type() != type)
      fail(ErrorKind::InvalidModel, "attribute '{}' must be {}, is {}", name, what,
           onnx::AttributeProto::AttributeType_Name(a->type()));
    return a;
  }

  fs::path baseDir_;
  std::map<std::string, const onnx::AttributeProto*> attrs_;
  mutable std::set<std::string> read_;
};

class Importer {
public:
  Importer(onnx::ModelProto& model, fs::path baseDir, std::string label,
           const ImportOptions& options)
      : model_(model), baseDir_(std::move(baseDir)), label_(std::move(label)), opts_(options) {}

  ImportResult run() {
    result_.irVersion = model_.ir_version();
    result_.producer = fmt::format("{} {}", model_.producer_name(), model_.producer_version());
    if (!model_.has_graph()) fail(ErrorKind::InvalidModel, "the model has no graph");
    checkStrings();
    graph().name = model_.graph().name().empty() ? "model" : model_.graph().name();
    checkOpset();
    const onnx::GraphProto& g = model_.graph();
    if (g.sparse_initializer_size() > 0)
      fail(ErrorKind::Unsupported, "sparse initializers ('{}') are not supported",
           g.sparse_initializer(0).values().name());
    // Unnamed nodes get "<OpType>_<index>" so that every message can name them.
    for (int i = 0; i < g.node_size(); ++i)
      if (g.node(i).name().empty())
        model_.mutable_graph()->mutable_node(i)->set_name(
            fmt::format("{}_{}", g.node(i).op_type(), i));
    // Calls of model-local functions are replaced by their bodies (named after the call).
    inlineLocalFunctions(model_, opset_);
    importInitializers(g);
    // Inputs that do not fit the model are reported after the model itself is validated (a
    // broken model is the first thing to fix); the sizes that do fit are bound meanwhile.
    if (!opts_.inputShapes.empty()) {
      result_.binding = bindGraphDims(g, opts_.inputShapes, opts_, &inputMismatch_);
      opts_ = withBinding(opts_, result_.binding);
    }
    importInputs(g);
    std::vector<const onnx::NodeProto*> order = topologicalOrder(g);
    rejectUnknownOps(order);
    for (const onnx::NodeProto* n : order)
      importNode(*n);
    importOutputs(g);
    ir::verifyOrThrow(graph(), ErrorKind::Internal);
    if (inputMismatch_) throw *inputMismatch_;
    ir::checkWorkingSet(graph());
    // Only now, with every tensor, attribute and edge validated by Triad, does third-party code
    // see the model.
    if (opts_.onnxShapeCheck) crossCheckOnnxShapes();
    return std::move(result_);
  }

private:
  ir::Graph& graph() { return result_.graph; }

  /// Every name the IR keeps (and every artifact may show) is text: valid UTF-8 without NUL.
  /// Anything else is refused here, naming the field, so that later code (JSON, C strings, file
  /// formats) never meets a name it cannot represent. What the names *say* is escaped by the
  /// emitters (ir/Escape.h), never trusted.
  void checkStrings() {
    auto check = [](const std::string& s, auto&& what) {
      size_t bad = 0;
      if (!escape::validUtf8(s, &bad))
        fail(ErrorKind::InvalidModel,
             "{} is not valid UTF-8 text (byte 0x{:02x} at offset {}): '{}'", what(),
             static_cast<unsigned char>(s[bad]), bad, escape::printable(s));
    };
    check(model_.producer_name(), [] { return std::string("the model's producer_name"); });
    check(model_.producer_version(), [] { return std::string("the model's producer_version"); });
    const onnx::GraphProto& g = model_.graph();
    check(g.name(), [] { return std::string("the graph's name"); });
    auto nodes = [&](const auto& list, std::string_view where) {
      for (int i = 0; i < list.size(); ++i) {
        const onnx::NodeProto& n = list.Get(i);
        auto node = [&] { return fmt::format("{}node #{} ({})", where, i, n.op_type()); };
        check(n.name(), [&] { return node() + "'s name"; });
        check(n.op_type(), [&] { return node() + "'s op_type"; });
        for (int k = 0; k < n.input_size(); ++k)
          check(n.input(k), [&] { return fmt::format("input {} of {}", k, node()); });
        for (int k = 0; k < n.output_size(); ++k)
          check(n.output(k), [&] { return fmt::format("output {} of {}", k, node()); });
      }
    };
    nodes(g.node(), "");
    for (const auto& f : model_.functions())
      nodes(f.node(), fmt::format("function '{}': ", escape::printable(f.name())));
    for (int i = 0; i < g.input_size(); ++i)
      check(g.input(i).name(), [&] { return fmt::format("graph input #{}'s name", i); });
    for (int i = 0; i < g.output_size(); ++i)
      check(g.output(i).name(), [&] { return fmt::format("graph output #{}'s name", i); });
    for (int i = 0; i < g.value_info_size(); ++i)
      check(g.value_info(i).name(), [&] { return fmt::format("value_info #{}'s name", i); });
    for (int i = 0; i < g.initializer_size(); ++i)
      check(g.initializer(i).name(), [&] { return fmt::format("initializer #{}'s name", i); });
  }

  void checkOpset() {
    int64_t opset = -1;
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (opset < 0) {
      for (const auto& n : model_.graph().node())
        if (n.domain().empty() || n.domain() == "ai.onnx")
          fail(ErrorKind::InvalidModel,
               "node '{}' ({}) is in the default ONNX domain, which the model does not import "
               "(opset_import)",
               n.name(), n.op_type());
      opset = kMaxOpset; // no default-domain node: unknown ops of other domains are reported
    }
    if (opset < kMinOpset || opset > kMaxOpset)
      fail(ErrorKind::Unsupported,
           "the model uses ONNX opset {}; Triad supports opsets {} to {} (the op definitions "
           "of onnx {})",
           opset, kMinOpset, kMaxOpset, ir::onnxSchemaRelease());
    opset_ = int(opset);
    graph().opset = opset_;
  }

  // ONNX's own shape inference (libonnx) as a cross-check of Triad's op table (which computes
  // every shape itself: libonnx may predate the model's opset); disagreements become warnings.
  void crossCheckOnnxShapes() {
    std::string warning;
    std::optional<onnx::GraphProto> inferred = inferShapesContained(model_, warning);
    if (!inferred) {
      result_.warnings.push_back(warning);
      return;
    }
    for (const auto& vi : inferred->value_info()) {
      ir::Value* v = graph().findValue(vi.name());
      if (!v || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
      const auto& shape = vi.type().tensor_type().shape();
      ir::Shape s;
      bool isStatic = true;
      for (const auto& d : shape.dim()) {
        if (!d.has_dim_value()) isStatic = false;
        s.push_back(d.dim_value());
      }
      if (isStatic && s != v->type().shape)
        result_.warnings.push_back(fmt::format("value '{}': ONNX shape inference says {}, Triad {}",
                                               vi.name(), ir::shapeToString(s),
                                               ir::shapeToString(v->type().shape)));
    }
  }

  void importInitializers(const onnx::GraphProto& g) {
    for (const auto& init : g.initializer()) {
      std::string what = fmt::format("initializer '{}'", init.name());
      if (init.name().empty()) fail(ErrorKind::InvalidModel, "an initializer has no name");
      if (values_.count(init.name())) fail(ErrorKind::InvalidModel, "{} is defined twice", what);
      values_[init.name()] =
          graph().addConstant(init.name(), tensorFromProto(init, baseDir_, what));
    }
  }

  TensorType inputType(const onnx::ValueInfoProto& vi) {
    std::string what = fmt::format("graph input '{}'", vi.name());
    if (!vi.type().has_tensor_type())
      fail(ErrorKind::Unsupported,
           "{} is not a tensor (sequence, map and optional inputs are not supported)", what);
    const auto& tt = vi.type().tensor_type();
    auto dtype = ir::dtypeFromOnnx(tt.elem_type());
    if (!dtype)
      fail(ErrorKind::Unsupported, "{} has element type {}, which is not supported", what,
           ir::onnxElemTypeName(tt.elem_type()));
    if (!tt.has_shape())
      fail(ErrorKind::Unsupported, "{} has no shape (unknown rank); Triad needs static shapes",
           what);
    TensorType t{*dtype, {}, {}};
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() >= 0) {
        t.shape.push_back(d.dim_value());
        continue;
      }
      std::string param = d.has_dim_param() ? d.dim_param() : "";
      auto it = opts_.dims.find(param);
      auto ia = opts_.axes.find(vi.name());
      if (!param.empty() && it != opts_.dims.end())
        t.shape.push_back(it->second);
      else if (param.empty() && ia != opts_.axes.end() && ia->second.count(i))
        t.shape.push_back(ia->second.at(i));
      else if (i == 0)
        t.shape.push_back(opts_.batch.value_or(1));
      else if (inputMismatch_) // the size was left unbound because its input does not fit
        throw *inputMismatch_;
      else if (param.empty())
        fail(ErrorKind::Unsupported,
             "{} dimension {} (unnamed) is dynamic; Triad compiles static shapes: give a tensor "
             "for the input (its size is taken from it) or re-export the model with a fixed "
             "size",
             what, i);
      else
        fail(ErrorKind::Unsupported,
             "{} dimension {} ('{}') is dynamic; Triad compiles static shapes: give it a value "
             "with --dim {}=N, give a tensor for the input (its size is taken from it) or "
             "re-export the model with a fixed size",
             what, i, param, param);
    }
    ir::checkedByteSize(t, what);
    return t;
  }

  void importInputs(const onnx::GraphProto& g) {
    // Graph inputs from which a shape operand is computed (directly or through other nodes,
    // e.g. Cast -> Range) may be bound to values (see ImportOptions).
    std::set<std::string> shapeFeeders;
    if (opts_.bindInput) {
      std::unordered_map<std::string, const onnx::NodeProto*> producerOf;
      for (const auto& n : g.node())
        for (const auto& o : n.output())
          producerOf[o] = &n;
      std::vector<std::string> work;
      for (const auto& n : g.node()) {
        const ir::OpDef* def = ir::findOnnxOp(n.domain(), n.op_type());
        if (!def) continue;
        for (int i : def->shapeOperands)
          if (i < n.input_size() && !n.input(i).empty()) work.push_back(n.input(i));
      }
      while (!work.empty()) {
        std::string v = std::move(work.back());
        work.pop_back();
        if (!shapeFeeders.insert(v).second) continue;
        auto it = producerOf.find(v);
        if (it != producerOf.end())
          for (const auto& in : it->second->input())
            if (!in.empty()) work.push_back(in);
      }
    }
    std::set<std::string> seen;
    for (const auto& vi : g.input()) {
      if (!seen.insert(vi.name()).second)
        fail(ErrorKind::InvalidModel, "graph input '{}' is listed twice", vi.name());
      if (values_.count(vi.name())) { // an initializer listed as input (a default value)
        checkInitializerDeclaration(vi, values_[vi.name()]->type());
        continue;
      }
      TensorType t = inputType(vi);
      if (shapeFeeders.count(vi.name()) && opts_.bindInput) {
        if (const Tensor* bound = opts_.bindInput(vi.name())) {
          if (bound->dtype() != t.dtype || bound->shape() != t.shape)
            fail(ErrorKind::Runtime, "value bound to graph input '{}' is {}, the input is {}",
                 vi.name(), ir::typeToString(bound->type()), ir::typeToString(t));
          values_[vi.name()] = graph().addConstant(vi.name(), *bound);
          result_.boundInputs.push_back(vi.name());
          continue;
        }
      }
      values_[vi.name()] = graph().addInput(vi.name(), t);
    }
  }

  // An initializer that is also a graph input: the input's declared type must describe it.
  void checkInitializerDeclaration(const onnx::ValueInfoProto& vi, const TensorType& actual) {
    std::string what = fmt::format("graph input '{}'", vi.name());
    if (!vi.type().has_tensor_type())
      fail(ErrorKind::InvalidModel, "{} is also an initializer (a tensor) but is declared {}", what,
           vi.type().has_sequence_type() ? "a sequence" : "not a tensor");
    const auto& tt = vi.type().tensor_type();
    auto dtype = ir::dtypeFromOnnx(tt.elem_type());
    bool mismatch = tt.elem_type() != 0 && dtype != actual.dtype;
    if (tt.has_shape()) {
      mismatch |= tt.shape().dim_size() != int(actual.shape.size());
      for (int i = 0; !mismatch && i < tt.shape().dim_size(); ++i)
        mismatch |= tt.shape().dim(i).has_dim_value() &&
                    tt.shape().dim(i).dim_value() != actual.shape[size_t(i)];
    }
    if (mismatch)
      fail(ErrorKind::InvalidModel, "{} is declared {} but its initializer is {}", what,
           describeDeclared(tt), ir::typeToString(actual));
  }

  static std::string describeDeclared(const onnx::TypeProto::Tensor& tt) {
    std::vector<std::string> dims;
    if (tt.has_shape())
      for (const auto& d : tt.shape().dim())
        dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                                         : (d.dim_param().empty() ? "?" : d.dim_param()));
    return fmt::format("{}{}", ir::onnxElemTypeName(tt.elem_type()),
                       tt.has_shape() ? fmt::format("[{}]", fmt::join(dims, ","))
                                      : "[unknown rank]");
  }

  // Kahn's algorithm, stable with respect to the file's order. Reports dangling inputs,
  // values produced twice and cycles, naming the nodes involved.
  std::vector<const onnx::NodeProto*> topologicalOrder(const onnx::GraphProto& g) {
    int n = g.node_size();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < n; ++i) {
      for (const auto& out : g.node(i).output()) {
        if (out.empty()) continue;
        if (values_.count(out))
          fail(ErrorKind::InvalidModel, "{}: output '{}' is also a graph input or initializer",
               describeNode(g.node(i)), out);
        auto [it, fresh] = producer.emplace(out, i);
        if (!fresh)
          fail(ErrorKind::InvalidModel, "value '{}' is produced twice, by {} and {} (not SSA)", out,
               describeNode(g.node(it->second)), describeNode(g.node(i)));
      }
    }
    std::vector<std::vector<int>> users(static_cast<size_t>(n));
    std::vector<int> pending(static_cast<size_t>(n), 0);
    for (int i = 0; i < n; ++i) {
      std::set<int> deps;
      for (const auto& in : g.node(i).input()) {
        if (in.empty() || values_.count(in)) continue;
        auto it = producer.find(in);
        if (it == producer.end())
          fail(ErrorKind::InvalidModel,
               "{}: input '{}' is not produced by any node, graph input or initializer",
               describeNode(g.node(i)), in);
        deps.insert(it->second);
      }
      pending[size_t(i)] = int(deps.size());
      for (int d : deps)
        users[size_t(d)].push_back(i);
    }
    std::vector<const onnx::NodeProto*> order;
    std::set<int> ready;
    for (int i = 0; i < n; ++i)
      if (pending[size_t(i)] == 0) ready.insert(i);
    while (!ready.empty()) {
      int i = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(&g.node(i));
      for (int u : users[size_t(i)])
        if (--pending[size_t(u)] == 0) ready.insert(u);
    }
    if (int(order.size()) != n) {
      std::vector<std::string> cyc;
      for (int i = 0; i < n; ++i)
        if (pending[size_t(i)] > 0) cyc.push_back(fmt::format("'{}'", g.node(i).name()));
      fail(ErrorKind::InvalidModel, "the graph has a cycle through nodes {}", fmt::join(cyc, ", "));
    }
    return order;
  }

  void rejectUnknownOps(const std::vector<const onnx::NodeProto*>& nodes) {
    std::map<std::string, std::vector<std::string>> unknown; // "Op (domain)" -> node names
    for (const auto* n : nodes) {
      if (ir::findOnnxOp(n->domain(), n->op_type())) continue;
      std::string key;
      if (n->domain().empty() || n->domain() == "ai.onnx") {
        int version = ir::onnxOpVersionAt(n->op_type(), opset_);
        key = version ? fmt::format("{} (domain ai.onnx, version {} at opset {})", n->op_type(),
                                    version, opset_)
              : ir::onnxOpHistory(n->op_type()).empty()
                  ? fmt::format("{} (not an op of the ai.onnx domain of onnx {})", n->op_type(),
                                ir::onnxSchemaRelease())
                  : fmt::format("{} (domain ai.onnx; the op is newer than opset {})", n->op_type(),
                                opset_);
      } else {
        key = fmt::format("{} (domain '{}')", n->op_type(), n->domain());
      }
      unknown[key].push_back(fmt::format("'{}'", n->name()));
    }
    if (unknown.empty()) return;
    std::string msg = fmt::format("{} op type{} not supported by Triad:", unknown.size(),
                                  unknown.size() == 1 ? " is" : "s are");
    for (auto& [op, names] : unknown) {
      size_t shown = std::min<size_t>(names.size(), 8);
      msg += fmt::format("\n  {}: {} node{} ({}{})", op, names.size(), names.size() == 1 ? "" : "s",
                         fmt::join(names.begin(), names.begin() + long(shown), ", "),
                         names.size() > shown ? ", ..." : "");
    }
    throw Error(ErrorKind::Unsupported, msg);
  }

  void importNode(const onnx::NodeProto& n) {
    std::string where = describeNode(n);
    withContext(where, [&] { importNodeUnchecked(n); });
  }

  void importNodeUnchecked(const onnx::NodeProto& n) {
    const ir::OpDef& def = *ir::findOnnxOp(n.domain(), n.op_type());
    if (std::string problem = ir::onnxVersionProblem(def, opset_); !problem.empty())
      fail(ErrorKind::Unsupported, "{}", problem);
    int numIn = n.input_size();
    while (numIn > 0 && n.input(numIn - 1).empty())
      --numIn; // trailing absent optionals
    if (numIn < def.minInputs || (def.maxInputs >= 0 && numIn > def.maxInputs))
      fail(ErrorKind::InvalidModel, "has {} inputs; {} takes {}", numIn, n.op_type(),
           arity(def.minInputs, def.maxInputs));
    // ONNX puts optional inputs after the required ones: an empty name (an absent optional
    // input) among the first minInputs, or among the inputs of a variadic op, would reach the
    // op's shape rule and kernel as a missing operand.
    for (int i = 0; i < numIn; ++i)
      if (n.input(i).empty() && (i < def.minInputs || def.maxInputs < 0))
        fail(ErrorKind::InvalidModel, "input {} is empty (absent), but {} requires it", i,
             n.op_type());
    if (n.output_size() < def.minOutputs ||
        (def.maxOutputs >= 0 && n.output_size() > def.maxOutputs))
      fail(ErrorKind::InvalidModel, "has {} outputs; {} produces {}", n.output_size(), n.op_type(),
           arity(def.minOutputs, def.maxOutputs));

    std::vector<ir::Value*> onnxInputs;
    std::vector<std::optional<TensorType>> onnxTypes;
    std::vector<const Tensor*> onnxConsts;
    for (int i = 0; i < numIn; ++i) {
      const std::string& name = n.input(i);
      ir::Value* v = name.empty() ? nullptr : values_.at(name);
      if (v && def.isShapeOperand(i) && !v->isConstant())
        fail(ErrorKind::Unsupported,
             "input {} ('{}') must be a constant: it determines the output shape and Triad "
             "compiles static shapes, but it is {}",
             i, name,
             v->producer()
                 ? fmt::format("computed at run time by node '{}' ({})", v->producer()->name(),
                               ir::opKindName(v->producer()->kind()))
                 : "a graph input");
      onnxInputs.push_back(v);
      onnxTypes.push_back(v ? std::optional<TensorType>(v->type()) : std::nullopt);
      onnxConsts.push_back(v && v->isConstant() ? &v->constant() : nullptr);
    }

    OnnxAttrReader reader(n, baseDir_);
    ir::ParseContext pctx{reader, opset_, onnxConsts, onnxTypes, n.output_size()};
    std::shared_ptr<const ir::Attrs> attrs;
    if (def.parse)
      attrs = def.parse(pctx);
    else
      attrs = std::make_shared<ir::NoAttrs>();
    std::vector<std::string> unread = reader.unread();
    if (!unread.empty())
      fail(ErrorKind::Unsupported, "attribute{} {} {} not supported by Triad's {}",
           unread.size() == 1 ? "" : "s", fmt::format("'{}'", fmt::join(unread, "', '")),
           unread.size() == 1 ? "is" : "are", n.op_type());

    // IR inputs: the ONNX inputs without shape operands, trailing absent ones dropped.
    std::vector<ir::Value*> irInputs;
    for (int i = 0; i < numIn; ++i)
      if (!def.isShapeOperand(i)) irInputs.push_back(onnxInputs[size_t(i)]);
    while (!irInputs.empty() && !irInputs.back())
      irInputs.pop_back();

    std::vector<std::optional<TensorType>> irTypes;
    for (ir::Value* v : irInputs)
      irTypes.push_back(v ? std::optional<TensorType>(v->type()) : std::nullopt);
    // The inputs known now (constants, and placeholders for value-independent ops), shared with
    // the constant-fold pass (ir/passes/Folding.h).
    ir::FoldInputs known(def, irInputs);
    std::vector<TensorType> types = def.infer(ir::InferContext{*attrs, irTypes, known.tensors()});
    if (types.size() < size_t(n.output_size()))
      fail(ErrorKind::Unsupported, "declares {} outputs; Triad's {} computes only {}",
           n.output_size(), n.op_type(), types.size());
    types.resize(size_t(n.output_size()));

    std::vector<std::string> outNames;
    for (int i = 0; i < n.output_size(); ++i)
      outNames.push_back(n.output(i).empty() ? fmt::format("{}:unused{}", n.name(), i)
                                             : n.output(i));
    // Sizes are checked before folding or anything else allocates them.
    for (size_t i = 0; i < types.size(); ++i)
      ir::checkedByteSize(types[i], fmt::format("output '{}'", outNames[i]));

    if (opts_.foldConstants) {
      if (auto outs = ir::tryFoldNode(def, *attrs, known, types)) {
        for (size_t i = 0; i < outs->size(); ++i)
          values_[outNames[i]] = graph().addConstant(outNames[i], std::move((*outs)[i]));
        // A dequantized weight keeps its integers for the targets that compute with them.
        ir::recordFoldedDequantize(def.kind, *attrs, known, values_[outNames[0]]);
        return;
      }
    }
    ir::Node* node = graph().addNode(def.kind, n.name(), irInputs, attrs, outNames, types);
    for (size_t i = 0; i < outNames.size(); ++i)
      values_[outNames[i]] = node->output(i);
  }

  static std::string arity(int lo, int hi) {
    if (hi < 0) return fmt::format("{} or more", lo);
    if (lo == hi) return fmt::format("{}", lo);
    return fmt::format("{} to {}", lo, hi);
  }

  void importOutputs(const onnx::GraphProto& g) {
    if (g.output_size() == 0) fail(ErrorKind::InvalidModel, "the graph has no outputs");
    std::set<std::string> seen;
    for (const auto& vi : g.output()) {
      if (!seen.insert(vi.name()).second)
        fail(ErrorKind::InvalidModel, "graph output '{}' is listed twice", vi.name());
      if (vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET && !vi.type().has_tensor_type())
        fail(ErrorKind::Unsupported,
             "graph output '{}' is not a tensor (sequence, map and optional outputs are not "
             "supported)",
             vi.name());
      auto it = values_.find(vi.name());
      if (it == values_.end())
        fail(ErrorKind::InvalidModel, "graph output '{}' is not produced by any node", vi.name());
      ir::Value* v = it->second;
      if (vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() != 0) {
        auto declared = ir::dtypeFromOnnx(vi.type().tensor_type().elem_type());
        if (declared && *declared != v->type().dtype)
          fail(ErrorKind::InvalidModel, "graph output '{}' is declared {} but computed as {}",
               vi.name(), ir::dtypeName(*declared), ir::dtypeName(v->type().dtype));
      }
      graph().addOutput(v);
    }
  }

  onnx::ModelProto& model_;
  fs::path baseDir_;
  std::string label_;
  ImportOptions opts_;                 // the caller's, with the sizes bound from inputShapes
  std::optional<Error> inputMismatch_; // the first input shape that does not fit (thrown late)
  int opset_ = 0;
  ImportResult result_;
  std::unordered_map<std::string, ir::Value*> values_;
};

} // namespace

namespace {

onnx::ModelProto parseModel(const std::string& bytes) {
  onnx::ModelProto model;
  if (bytes.empty()) fail(ErrorKind::InvalidModel, "the file is empty");
  if (!model.ParseFromString(bytes))
    fail(ErrorKind::InvalidModel,
         "cannot parse as an ONNX model (the file is truncated, corrupt or not ONNX)");
  if (!model.has_graph() || model.ir_version() == 0)
    fail(ErrorKind::InvalidModel,
         "not an ONNX model: no graph or ir_version (the file may be truncated)");
  return model;
}

} // namespace

ImportResult importOnnxBytes(const std::string& bytes, const fs::path& baseDir,
                             const std::string& label, const ImportOptions& options) {
  return withContext(label, [&] {
    onnx::ModelProto model = parseModel(bytes);
    return Importer(model, baseDir, label, options).run();
  });
}

DimBinding bindDims(const fs::path& path, const std::vector<InputShape>& shapes,
                    const ImportOptions& fixed) {
  std::string bytes = readFile(path);
  return withContext(path.string(), [&] {
    onnx::ModelProto model = parseModel(bytes);
    return bindGraphDims(model.graph(), shapes, fixed);
  });
}

DeclaredIo declaredIo(const fs::path& path, const ImportOptions& fixed) {
  std::string bytes = readFile(path);
  return withContext(path.string(), [&] {
    onnx::ModelProto model = parseModel(bytes);
    return declaredGraphIo(model.graph(), fixed);
  });
}

ImportResult importOnnxFile(const fs::path& path, const ImportOptions& options) {
  std::string bytes = readFile(path);
  return importOnnxBytes(bytes, path.parent_path(), path.string(), options);
}

void addDim(ImportOptions& options, const std::string& spec, std::string_view what) {
  auto eq = spec.find('=');
  int64_t v = 0;
  try {
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument(spec);
    size_t used = 0;
    v = std::stoll(spec.substr(eq + 1), &used);
    if (used != spec.size() - eq - 1 || v <= 0) throw std::invalid_argument(spec);
  } catch (const std::exception&) {
    fail(ErrorKind::Usage, "{} '{}': expected NAME=VALUE with a positive integer VALUE", what,
         spec);
  }
  options.dims[spec.substr(0, eq)] = v;
}

} // namespace triad::frontend
