// triad run: run a model on inputs from .npy/.pb files and write its outputs.
#include "cli/Commands.h"
#include "frontend/TensorIO.h"

#include <chrono>
#include <fmt/format.h>

namespace triad::cli {

namespace {

struct RunOptions {
  ModelOptions model;
  std::string target = "interp";
  std::vector<std::string> inputs, outputs;
};

// "name=path" or "path"; names are graph input/output names.
std::pair<std::string, std::string> splitBinding(const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos) return {"", s};
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int runRun(const RunOptions& o, const ir::TargetRegistry& targets) {
  const ir::Target* target = targets.find(o.target);
  if (!target)
    fail(ErrorKind::Usage, "--target '{}' is not available (available: {})", o.target,
         targets.names());
  frontend::ImportResult r = o.model.load(target->name() != "interp");
  const ir::Graph& g = r.graph;

  // Bind inputs: by name (name=file) or by position.
  std::vector<std::optional<ir::Tensor>> bound(g.inputs().size());
  size_t positional = 0;
  for (const std::string& spec : o.inputs) {
    auto [name, path] = splitBinding(spec);
    size_t idx;
    if (name.empty()) {
      idx = positional++;
      if (idx >= g.inputs().size())
        fail(ErrorKind::Usage, "{} --input files given; the model has {} input{}", o.inputs.size(),
             g.inputs().size(), g.inputs().size() == 1 ? "" : "s");
    } else {
      auto it = std::find_if(g.inputs().begin(), g.inputs().end(),
                             [&](ir::Value* v) { return v->name() == name; });
      if (it == g.inputs().end())
        fail(ErrorKind::Usage, "--input '{}': the model has no input named '{}'", spec, name);
      idx = size_t(it - g.inputs().begin());
    }
    frontend::NamedTensor t = frontend::readTensorFile(path);
    const ir::TensorType& want = g.inputs()[idx]->type();
    if (t.tensor.dtype() != want.dtype || t.tensor.shape() != want.shape)
      fail(ErrorKind::Runtime, "input '{}' expects {}, file '{}' holds {}", g.inputs()[idx]->name(),
           typeToString(want), path, typeToString(t.tensor.type()));
    bound[idx] = std::move(t.tensor);
  }
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i])
      fail(ErrorKind::Usage, "no --input for model input '{}' ({})", g.inputs()[i]->name(),
           typeToString(g.inputs()[i]->type()));
    inputs.push_back(std::move(*bound[i]));
  }

  auto exe = target->compile(g);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<ir::Tensor> outs = exe->run(inputs);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  for (size_t i = 0; i < outs.size(); ++i) {
    const ir::Tensor& t = outs[i];
    std::string preview;
    for (int64_t k = 0; k < std::min<int64_t>(t.numElements(), 8); ++k)
      preview += fmt::format("{}{:.6g}", k ? ", " : "", t.getDouble(k));
    fmt::print("{} {} = [{}{}]\n", g.outputs()[i]->name(), typeToString(t.type()), preview,
               t.numElements() > 8 ? ", ..." : "");
  }
  size_t positionalOut = 0;
  for (const std::string& spec : o.outputs) {
    auto [name, path] = splitBinding(spec);
    size_t idx;
    if (name.empty()) {
      idx = positionalOut++;
      if (idx >= outs.size())
        fail(ErrorKind::Usage, "{} --output files given; the model has {} output{}",
             o.outputs.size(), outs.size(), outs.size() == 1 ? "" : "s");
    } else {
      auto it = std::find_if(g.outputs().begin(), g.outputs().end(),
                             [&](ir::Value* v) { return v->name() == name; });
      if (it == g.outputs().end())
        fail(ErrorKind::Usage, "--output '{}': the model has no output named '{}'", spec, name);
      idx = size_t(it - g.outputs().begin());
    }
    frontend::writeTensorFile(path, outs[idx], g.outputs()[idx]->name());
  }
  std::fflush(stdout); // keep the timing line after the outputs when both go to one terminal
  fmt::print(stderr, "ran on {} in {:.2f} ms\n", target->name(), ms);
  return 0;
}

} // namespace

Action addRun(CLI::App& app, const ir::TargetRegistry& targets) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on input tensors and write its outputs");
  o->model.add(*cmd);
  cmd->add_option("--target", o->target,
                  fmt::format("Where to run ({}): interp is the reference interpreter, cpu the "
                              "compiled C++ (threads: TRIAD_THREADS)",
                              targets.names()))
      ->capture_default_str();
  cmd->add_option(
      "-i,--input", o->inputs,
      "Input tensor file (.npy or ONNX TensorProto .pb), in input order or as NAME=FILE");
  cmd->add_option("-o,--output", o->outputs,
                  "Where to write an output (.npy or .pb), in output order or as NAME=FILE");
  return [o, &targets] { return runRun(*o, targets); };
}

} // namespace triad::cli
