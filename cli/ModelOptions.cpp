#include "cli/Commands.h"
#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fmt/ranges.h>

namespace triad::cli {

namespace {
/// A whole number >= `least`, with a readable message (`what`: "positive", ...).
CLI::Validator wholeNumberFrom(long long least, const char* what, const char* name) {
  return CLI::Validator(
      [least, what](std::string& s) -> std::string {
        long long x = 0;
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data(), end, x);
        if (ec != std::errc() || p != end || x < least)
          return fmt::format("'{}' is not a {} whole number", s, what);
        return {};
      },
      name);
}
} // namespace

std::string terminalText(std::string_view s) {
  return escape::printableLines(s);
}

const CLI::Validator& positiveInt() {
  static const CLI::Validator v = wholeNumberFrom(1, "positive", "POSITIVE");
  return v;
}

const CLI::Validator& nonNegativeInt() {
  static const CLI::Validator v = wholeNumberFrom(0, "non-negative", "NONNEGATIVE");
  return v;
}

void applyMemoryLimit(const std::string& flag) {
  std::string text = flag;
  const char* env = std::getenv("TRIAD_MAX_MEMORY");
  if (text.empty() && env) text = env;
  if (text.empty()) return;
  std::string where = flag.empty() ? "TRIAD_MAX_MEMORY" : "--max-memory";
  double x = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [p, ec] = std::from_chars(begin, end, x);
  std::string unit(p, end);
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"B", 1},
                                                          {"K", 1024.0},
                                                          {"KB", 1e3},
                                                          {"KIB", 1024.0},
                                                          {"M", 1048576.0},
                                                          {"MB", 1e6},
                                                          {"MIB", 1048576.0},
                                                          {"G", 1073741824.0},
                                                          {"GB", 1e9},
                                                          {"GIB", 1073741824.0},
                                                          {"T", 1099511627776.0},
                                                          {"TB", 1e12},
                                                          {"TIB", 1099511627776.0}};
  double scale = -1;
  for (const auto& [name, s] : kUnits)
    if (unit == name) scale = s;
  if (ec != std::errc() || p == begin || scale < 0 || !(x > 0) || x * scale > 1.8e19)
    fail(ErrorKind::Usage, "{} '{}': expected a size such as 8G, 512M or 1.5GiB", where, text);
  ir::setMemoryLimit(uint64_t(x * scale));
  ::setenv("TRIAD_MAX_MEMORY", text.c_str(), 1);
}

std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs) {
  frontend::ImportOptions o;
  for (const std::string& d : specs)
    frontend::addDim(o, d);
  return o.dims;
}

void ModelOptions::add(CLI::App& cmd) {
  cmd.add_option("model", model, "ONNX model file (.onnx)")->required();
  batchOption = cmd.add_option("--batch", batch,
                               "Value of a symbolic batch (first) dimension (default: the input "
                               "file's, else 1)")
                    ->check(positiveInt());
  cmd.add_option("--dim", dims,
                 "Value of another symbolic dimension, NAME=VALUE (repeatable; default: "
                 "the input file's)");
  cmd.add_flag("--opt", optimize,
               fmt::format("Run the target-independent passes ({}); compiled targets always do",
                           fmt::join(ir::allPassNames(), ", ")));
  cmd.add_flag("--print-after-all", printAfterAll, "Print the IR after every pass (implies --opt)");
  cmd.add_option("--print-after", printAfter, "Print the IR after the named pass (implies --opt)");
}

frontend::ImportResult ModelOptions::load(bool optimizeAnyway) const {
  frontend::ImportOptions opts;
  if (batchGiven()) opts.batch = batch;
  opts.inputShapes = inputShapes;
  opts.streamBatch = streamBatch;
  opts.dims = parseDims(dims);
  frontend::ImportResult r = frontend::importOnnxFile(model, opts);
  if (optimize || optimizeAnyway || printAfterAll || !printAfter.empty()) {
    std::vector<std::string> known = ir::allPassNames();
    for (const std::string& p : printAfter)
      if (std::find(known.begin(), known.end(), p) == known.end())
        fail(ErrorKind::Usage, "--print-after '{}': no such pass (passes: {})", p,
             fmt::join(known, ", "));
    ir::PassOptions po;
    po.printAfterAll = printAfterAll;
    po.printAfter = {printAfter.begin(), printAfter.end()};
    ir::defaultPipeline().run(r.graph, po);
  }
  return r;
}

} // namespace triad::cli
