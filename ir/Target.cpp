#include "ir/Target.h"
#include "ir/Interpreter.h"

#include <fmt/format.h>

namespace triad::ir {

const Target* TargetRegistry::find(std::string_view name) const {
  for (const auto& t : targets_)
    if (t->name() == name) return t.get();
  return nullptr;
}

std::vector<const Target*> TargetRegistry::all() const {
  std::vector<const Target*> out;
  for (const auto& t : targets_)
    out.push_back(t.get());
  return out;
}

std::string TargetRegistry::names() const {
  std::string s;
  for (const auto& t : targets_)
    s += (s.empty() ? "" : ", ") + std::string(t->name());
  return s;
}

namespace {

class InterpreterExecutable final : public Executable {
public:
  explicit InterpreterExecutable(const Graph& g) : interp_(g) {}
  std::vector<Tensor> run(std::span<const Tensor> inputs) override { return interp_.run(inputs); }

private:
  Interpreter interp_;
};

class InterpreterTarget final : public Target {
public:
  std::string_view name() const override { return "interp"; }
  std::string_view description() const override {
    return "reference interpreter (float32 and integer semantics of ONNX; the oracle)";
  }
  Support supports(const Node& n) const override {
    if (findOp(n.kind())) return {};
    return {false, fmt::format("no reference kernel for {}", opKindName(n.kind()))};
  }
  std::unique_ptr<Executable> compile(const Graph& g, const CompileSettings&) const override {
    return std::make_unique<InterpreterExecutable>(g);
  }
};

} // namespace

std::unique_ptr<Target> makeInterpreterTarget() {
  return std::make_unique<InterpreterTarget>();
}

} // namespace triad::ir
