#include "cli/Commands.h"
#include "ir/Diagnostics.h"

namespace triad::cli {

void ModelOptions::add(CLI::App& cmd) {
  cmd.add_option("model", model, "ONNX model file (.onnx)")->required();
  cmd.add_option("--batch", batch, "Value of a symbolic batch (first) dimension")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--dim", dims, "Value of another symbolic dimension, NAME=VALUE (repeatable)");
}

frontend::ImportResult ModelOptions::load() const {
  frontend::ImportOptions opts;
  opts.batch = batch;
  for (const std::string& d : dims) {
    auto eq = d.find('=');
    int64_t v = 0;
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(d);
      size_t used = 0;
      v = std::stoll(d.substr(eq + 1), &used);
      if (used != d.size() - eq - 1 || v <= 0) throw std::invalid_argument(d);
    } catch (const std::exception&) {
      fail(ErrorKind::Usage, "--dim '{}': expected NAME=VALUE with a positive integer VALUE", d);
    }
    opts.dims[d.substr(0, eq)] = v;
  }
  return frontend::importOnnxFile(model, opts);
}

} // namespace triad::cli
