#include "frontend/ShapeBinding.h"
#include "ir/Diagnostics.h"

#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <set>

namespace triad::frontend {

namespace {

bool isFixed(const onnx::TensorShapeProto::Dimension& d) {
  return d.has_dim_value() && d.dim_value() >= 0;
}

// "f32[N,20,?]": the input as the model declares it.
std::string declared(const onnx::TypeProto::Tensor& tt) {
  std::vector<std::string> dims;
  for (const auto& d : tt.shape().dim())
    dims.push_back(isFixed(d) ? std::to_string(d.dim_value())
                              : (d.dim_param().empty() ? "?" : d.dim_param()));
  auto dtype = ir::dtypeFromOnnx(tt.elem_type());
  return fmt::format("{}[{}]", dtype ? ir::dtypeName(*dtype) : ir::onnxElemTypeName(tt.elem_type()),
                     fmt::join(dims, ","));
}

std::string sourceOf(const InputShape& s) {
  return s.source.empty() ? std::string("the tensor given") : fmt::format("file '{}'", s.source);
}

// "input 'x' dimension 1 ('seq')" or "input 'x' dimension 2 (unnamed)".
std::string dimName(const std::string& input, int axis, const std::string& param) {
  return fmt::format("input '{}' dimension {} ({})", input, axis,
                     param.empty() ? std::string("unnamed") : fmt::format("'{}'", param));
}

} // namespace

std::string DimBinding::toString() const {
  std::vector<std::string> parts;
  for (const auto& [name, v] : dims)
    parts.push_back(fmt::format("{}={}", name, v));
  for (const auto& [input, byAxis] : axes)
    for (const auto& [axis, v] : byAxis)
      parts.push_back(fmt::format("{}[{}]={}", input, axis, v));
  return fmt::format("{}", fmt::join(parts, ", "));
}

ImportOptions withBinding(ImportOptions options, const DimBinding& binding) {
  for (const auto& [name, v] : binding.dims)
    options.dims[name] = v;
  for (const auto& [input, byAxis] : binding.axes)
    for (const auto& [axis, v] : byAxis)
      options.axes[input][axis] = v;
  return options;
}

bool DeclaredTensor::open() const {
  for (const auto& d : shape)
    if (std::holds_alternative<std::string>(d)) return true;
  return false;
}

bool DeclaredIo::open() const {
  for (const DeclaredTensor& t : inputs)
    if (t.open()) return true;
  return false;
}

DeclaredIo declaredGraphIo(const onnx::GraphProto& graph, const ImportOptions& fixed) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer())
    initializers.insert(init.name());
  // Sizes by dim_param: --dim's, and those a batch gives to named first dimensions of inputs
  // (outputs with the same name have that size too).
  std::map<std::string, int64_t> named = fixed.dims;
  auto describe = [&](const onnx::ValueInfoProto& vi, bool isInput) {
    DeclaredTensor t;
    t.name = vi.name();
    if (!vi.type().has_tensor_type()) return t;
    const auto& tt = vi.type().tensor_type();
    auto dtype = ir::dtypeFromOnnx(tt.elem_type());
    t.dtype = std::string(dtype ? ir::dtypeName(*dtype) : ir::onnxElemTypeName(tt.elem_type()));
    t.hasShape = tt.has_shape();
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (isFixed(d)) {
        t.shape.emplace_back(int64_t(d.dim_value()));
        continue;
      }
      const std::string param = d.has_dim_param() ? d.dim_param() : "";
      if (auto it = named.find(param); !param.empty() && it != named.end())
        t.shape.emplace_back(it->second);
      else if (auto ia = fixed.axes.find(vi.name());
               isInput && param.empty() && ia != fixed.axes.end() && ia->second.count(i))
        t.shape.emplace_back(ia->second.at(i));
      else if (isInput && i == 0 && fixed.batch) {
        t.shape.emplace_back(*fixed.batch);
        if (!param.empty()) named.emplace(param, *fixed.batch);
      } else
        t.shape.emplace_back(param.empty() ? std::string("?") : param);
    }
    return t;
  };
  DeclaredIo io;
  for (const auto& vi : graph.input())
    if (!initializers.count(vi.name())) io.inputs.push_back(describe(vi, true));
  for (const auto& vi : graph.output())
    io.outputs.push_back(describe(vi, false));
  return io;
}

DimBinding bindGraphDims(const onnx::GraphProto& graph, const std::vector<InputShape>& shapes,
                         const ImportOptions& fixed, std::optional<Error>* deferred) {
  // Throws, or keeps the first problem and goes on without the shape or size at fault.
  auto problem = [&](ErrorKind kind, std::string what) {
    if (!deferred) throw Error(kind, std::move(what));
    if (!*deferred) deferred->emplace(kind, std::move(what));
  };
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer())
    initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  std::vector<std::string> names;
  for (const auto& vi : graph.input())
    if (!initializers.count(vi.name())) {
      inputs.push_back(&vi);
      names.push_back(vi.name());
    }

  // Which input each shape is for: by name, or the next by position.
  std::map<const onnx::ValueInfoProto*, const InputShape*> given;
  size_t positional = 0, numPositional = 0;
  for (const InputShape& s : shapes)
    numPositional += s.input.empty();
  std::vector<std::pair<const onnx::ValueInfoProto*, const InputShape*>> order;
  for (const InputShape& s : shapes) {
    const onnx::ValueInfoProto* vi = nullptr;
    if (s.input.empty()) {
      if (positional >= inputs.size()) {
        problem(ErrorKind::Usage,
                fmt::format("{} inputs given in order; the model has {} input{} ({})",
                            numPositional, inputs.size(), inputs.size() == 1 ? "" : "s",
                            fmt::join(names, ", ")));
        continue;
      }
      vi = inputs[positional++];
    } else {
      for (const auto* in : inputs)
        if (in->name() == s.input) vi = in;
      if (!vi) {
        problem(ErrorKind::Usage, fmt::format("the model has no input named '{}' (its inputs: {})",
                                              s.input, fmt::join(names, ", ")));
        continue;
      }
    }
    auto [it, fresh] = given.emplace(vi, &s);
    if (!fresh) {
      problem(ErrorKind::Usage,
              fmt::format("input '{}' is given twice ({} and {}); one tensor per input", vi->name(),
                          sourceOf(*it->second), sourceOf(s)));
      continue;
    }
    order.emplace_back(vi, &s);
  }

  struct Where {
    std::string input;
    int axis;
    const InputShape* shape;
  };
  DimBinding out;
  std::map<std::string, Where> boundAt; // dim_param -> where its size came from
  for (const auto& [vi, s] : order) {
    const std::string& name = vi->name();
    // Inputs that are not tensors or have no shape are refused by the importer, naming them.
    if (!vi->type().has_tensor_type() || !vi->type().tensor_type().has_shape()) continue;
    const auto& tt = vi->type().tensor_type();
    const auto& dims = tt.shape().dim();
    ir::Shape shape = s->shape;
    auto shown = [&] {
      std::vector<std::string> parts;
      for (int64_t v : shape)
        parts.push_back(v < 0 ? "*" : std::to_string(v));
      return fmt::format("[{}]", fmt::join(parts, ","));
    };
    if (size_t(dims.size()) != shape.size()) {
      problem(ErrorKind::Runtime,
              fmt::format("input '{}' expects {} (rank {}), {} holds {} (rank {})", name,
                          declared(tt), dims.size(), sourceOf(*s), shown(), shape.size()));
      continue;
    }
    for (int i = 0; i < dims.size(); ++i) {
      const auto& d = dims[i];
      int64_t v = shape[size_t(i)];
      if (v < 0) continue;                                     // left open by the data
      if (i == 0 && fixed.streamBatch && isFixed(d)) continue; // the stream: chunks of the size
      if (isFixed(d)) {
        if (d.dim_value() != v)
          problem(ErrorKind::Runtime,
                  fmt::format("input '{}' expects {}, {} holds {}: dimension {} is fixed at {}",
                              name, declared(tt), sourceOf(*s), shown(), i, d.dim_value()));
        continue;
      }
      const std::string param = d.has_dim_param() ? d.dim_param() : "";
      // Sizes fixed ahead of time (--dim, --batch) must agree with the data.
      std::optional<int64_t> want;
      std::string by;
      if (auto it = fixed.dims.find(param); !param.empty() && it != fixed.dims.end()) {
        want = it->second;
        by = fmt::format("--dim {}={}", param, it->second);
      } else if (auto ia = fixed.axes.find(name);
                 param.empty() && ia != fixed.axes.end() && ia->second.count(i)) {
        want = ia->second.at(i);
        by = fmt::format("a size of {}", *want);
      } else if (i == 0 && fixed.batch) {
        want = fixed.batch;
        by = fmt::format("--batch {}", *fixed.batch);
      }
      if (want) {
        if (*want != v)
          problem(ErrorKind::Runtime,
                  fmt::format("{} is {} in {} (it holds {}), but {} was given; leave it out to "
                              "take the size from the data",
                              dimName(name, i, param), v, sourceOf(*s), shown(), by));
        continue;
      }
      if (param.empty()) {
        out.axes[name][i] = v;
        continue;
      }
      auto [it, fresh] = boundAt.emplace(param, Where{name, i, s});
      if (fresh) {
        out.dims[param] = v;
      } else if (out.dims[param] != v) {
        const Where& w = it->second;
        problem(ErrorKind::Runtime,
                fmt::format("dimension '{}' is {} in input '{}' (dimension {}, {}) but {} in "
                            "input '{}' (dimension {}, {}); one size per dim_param",
                            param, out.dims[param], w.input, w.axis, sourceOf(*w.shape), v, name, i,
                            sourceOf(*s)));
      }
    }
  }
  return out;
}

} // namespace triad::frontend
