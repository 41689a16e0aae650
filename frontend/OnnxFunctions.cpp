#include "frontend/OnnxFunctions.h"
#include "ir/Diagnostics.h"
#include "ir/OpDef.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace triad::frontend {

namespace {

std::string normalDomain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

std::string functionLabel(const onnx::FunctionProto& f) {
  return f.domain().empty() ? fmt::format("'{}'", f.name())
                            : fmt::format("'{}' (domain '{}')", f.name(), f.domain());
}

class Inliner {
public:
  static constexpr int kMaxInlinedNodes = 1 << 22;

  Inliner(onnx::ModelProto& model, int opset) : model_(model), opset_(opset) {}

  int run() {
    if (model_.functions_size() == 0) return 0;
    for (const onnx::FunctionProto& f : model_.functions())
      addFunction(f);
    const onnx::GraphProto& g = model_.graph();
    for (const auto& v : g.input())
      taken_.insert(v.name());
    for (const auto& t : g.initializer())
      taken_.insert(t.name());
    for (const auto& n : g.node()) {
      for (const auto& v : n.input())
        taken_.insert(v);
      for (const auto& v : n.output())
        taken_.insert(v);
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> flat;
    for (const onnx::NodeProto& n : g.node())
      expand(n, flat);
    model_.mutable_graph()->mutable_node()->Swap(&flat);
    model_.clear_functions();
    return inlined_;
  }

private:
  using Key = std::pair<std::string, std::string>; // (domain, name)

  void addFunction(const onnx::FunctionProto& f) {
    if (f.name().empty()) fail(ErrorKind::InvalidModel, "a model-local function has no name");
    Key key{normalDomain(f.domain()), f.name()};
    if (!functions_.emplace(key, &f).second)
      fail(ErrorKind::InvalidModel, "function {} is defined twice", functionLabel(f));
    domains_.insert(key.first);
    for (const auto& o : f.opset_import())
      if (normalDomain(o.domain()).empty() && o.version() != opset_)
        fail(ErrorKind::Unsupported,
             "function {} imports ONNX opset {} but the model imports opset {}; Triad maps one "
             "default-domain opset per model",
             functionLabel(f), o.version(), opset_);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i)
      name = fmt::format("{}.{}", base, i);
    taken_.insert(name);
    return name;
  }

  void expand(const onnx::NodeProto& call,
              google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    std::string domain = normalDomain(call.domain());
    auto it = functions_.find({domain, call.op_type()});
    if (it == functions_.end()) {
      if (!domain.empty() && domains_.count(domain) && !ir::findOnnxOp(domain, call.op_type())) {
        std::vector<std::string> names;
        for (const auto& [key, f] : functions_)
          if (key.first == domain) names.push_back(fmt::format("'{}'", key.second));
        fail(ErrorKind::InvalidModel,
             "node '{}' calls function '{}' of domain '{}', which the model does not define "
             "(functions of that domain: {})",
             call.name(), call.op_type(), domain, fmt::join(names, ", "));
      }
      // Functions calling functions can multiply the node count exponentially: bounded.
      if (out.size() >= kMaxInlinedNodes)
        fail(ErrorKind::Unsupported,
             "inlining the model's functions gives more than {} nodes (at node '{}' ({}))",
             kMaxInlinedNodes, call.name(), call.op_type());
      *out.Add() = call;
      return;
    }
    const onnx::FunctionProto& f = *it->second;
    std::string label = functionLabel(f);
    for (const std::string& active : stack_)
      if (active == label) {
        std::string chain = fmt::format("{} -> {}", fmt::join(stack_, " -> "), label);
        fail(ErrorKind::InvalidModel,
             "node '{}' calls function {} recursively ({}); recursive functions cannot be "
             "inlined",
             call.name(), label, chain);
      }
    auto where = [&] { return fmt::format("node '{}' (call of function {})", call.name(), label); };
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
      fail(ErrorKind::InvalidModel,
           "{}: has {} inputs and {} outputs, the function takes {} and {}", where(),
           call.input_size(), call.output_size(), f.input_size(), f.output_size());
    std::set<std::string> declared(f.attribute().begin(), f.attribute().end());
    std::unordered_map<std::string, const onnx::AttributeProto*> callAttrs;
    for (const auto& a : call.attribute()) {
      if (!declared.count(a.name()))
        fail(ErrorKind::InvalidModel,
             "{}: sets attribute '{}', which the function does not declare (it declares: {})",
             where(), a.name(),
             declared.empty() ? std::string("none")
                              : fmt::format("'{}'", fmt::join(declared, "', '")));
      callAttrs[a.name()] = &a;
    }

    // Names inside the body -> names in the graph.
    std::string prefix = call.name() + "/";
    std::unordered_map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : std::string();
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() && !call.output(i).empty()
                                ? call.output(i)
                                : fresh(prefix + f.output(i));
    for (const onnx::NodeProto& b : f.node())
      for (const std::string& o : b.output())
        if (!o.empty() && !rename.count(o)) rename[o] = fresh(prefix + o);

    stack_.push_back(label);
    for (int j = 0; j < f.node_size(); ++j) {
      const onnx::NodeProto& b = f.node(j);
      onnx::NodeProto n = b;
      n.set_name(prefix + (b.name().empty() ? fmt::format("{}_{}", b.op_type(), j) : b.name()));
      for (int i = 0; i < b.input_size(); ++i) {
        if (b.input(i).empty()) continue;
        auto r = rename.find(b.input(i));
        if (r == rename.end())
          fail(ErrorKind::InvalidModel,
               "{}: body node '{}' ({}) reads '{}', which is neither an input of the function nor "
               "computed in its body",
               where(), n.name(), b.op_type(), b.input(i));
        n.set_input(i, r->second);
      }
      for (int i = 0; i < b.output_size(); ++i)
        if (!b.output(i).empty()) n.set_output(i, rename.at(b.output(i)));
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
      for (const onnx::AttributeProto& a : b.attribute()) {
        if (a.ref_attr_name().empty()) {
          *attrs.Add() = a;
          continue;
        }
        if (!declared.count(a.ref_attr_name()))
          fail(ErrorKind::InvalidModel,
               "{}: body node '{}' ({}) attribute '{}' refers to '{}', which the function does "
               "not declare",
               where(), n.name(), b.op_type(), a.name(), a.ref_attr_name());
        auto c = callAttrs.find(a.ref_attr_name());
        if (c == callAttrs.end()) continue; // not set by the call: the op's default applies
        onnx::AttributeProto* resolved = attrs.Add();
        *resolved = *c->second;
        resolved->set_name(a.name());
      }
      n.mutable_attribute()->Swap(&attrs);
      expand(n, out);
    }
    stack_.pop_back();
    ++inlined_;
  }

  onnx::ModelProto& model_;
  int opset_;
  std::map<Key, const onnx::FunctionProto*> functions_;
  std::set<std::string> domains_;
  std::unordered_set<std::string> taken_;
  std::vector<std::string> stack_; // functions being expanded, outermost first
  int inlined_ = 0;
};

} // namespace

int inlineLocalFunctions(onnx::ModelProto& model, int modelOpset) {
  return Inliner(model, modelOpset).run();
}

} // namespace triad::frontend
