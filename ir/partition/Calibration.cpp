#include "ir/partition/Calibration.h"

#include "ir/Diagnostics.h"
#include "ir/Files.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace triad::ir::partition {

namespace fs = std::filesystem;

namespace {

// Median wall time of `runs` runs after one warm-up.
double timeRuns(Executable& exe, const std::vector<Tensor>& in, int runs) {
  exe.run(in);
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    exe.run(in);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Tensor filled(Shape shape, float v) {
  Tensor t(DType::F32, std::move(shape));
  for (float& x : t.values<float>())
    x = v;
  return t;
}

double timeGraph(const Target& t, const CompileSettings& s, Graph g, std::vector<Tensor> in,
                 int runs) {
  auto exe = t.compile(g, s);
  return timeRuns(*exe, in, runs);
}

/// The file's text; empty when it does not exist or cannot be read.
std::string readOrEmpty(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  if (f) ss << f.rdbuf();
  return ss.str();
}

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

} // namespace

DeviceModel measureDevice(const Target& t, const CompileSettings& s) {
  DeviceModel d;
  auto attrs = std::make_shared<NoAttrs>();
  int runs = t.name() == "interp" ? 3 : 10;
  { // dense: [256,512] x [512,512]
    Graph g;
    g.name = "calibrate_matmul";
    Value* a = g.addInput("a", {DType::F32, {256, 512}, {}});
    Value* w = g.addConstant("w", filled({512, 512}, 0.01f));
    Node* n =
        g.addNode(OpKind::MatMul, "matmul", {a, w}, attrs, {"y"}, {{DType::F32, {256, 512}, {}}});
    g.addOutput(n->output(0));
    double sec = timeGraph(t, s, std::move(g), {filled({256, 512}, 0.5f)}, runs);
    d.gflops = 2.0 * 256 * 512 * 512 / sec * 1e-9;
  }
  { // element-wise: 4 Mi floats + 4 Mi floats
    const int64_t n = int64_t(1) << 22;
    Graph g;
    g.name = "calibrate_add";
    Value* a = g.addInput("a", {DType::F32, {n}, {}});
    Value* b = g.addInput("b", {DType::F32, {n}, {}});
    Node* add = g.addNode(OpKind::Add, "add", {a, b}, attrs, {"y"}, {{DType::F32, {n}, {}}});
    g.addOutput(add->output(0));
    double sec = timeGraph(t, s, std::move(g), {filled({n}, 1), filled({n}, 2)}, runs);
    d.gbytesPerS = 3.0 * double(n) * 4 / sec * 1e-9;
  }
  { // the fixed cost of a layer
    Graph g;
    g.name = "calibrate_relu";
    Value* a = g.addInput("a", {DType::F32, {16}, {}});
    Node* r = g.addNode(OpKind::Relu, "relu", {a}, attrs, {"y"}, {{DType::F32, {16}, {}}});
    g.addOutput(r->output(0));
    d.layerOverheadUs = timeGraph(t, s, std::move(g), {filled({16}, -1)}, 50) * 1e6;
  }
  return d;
}

fs::path defaultCalibrationPath() {
  if (const char* c = std::getenv("TRIAD_CACHE_DIR"); c && *c)
    return fs::path(c) / "calibration.json";
  if (const char* h = std::getenv("HOME"); h && *h)
    return fs::path(h) / ".cache" / "triad" / "calibration.json";
  return fs::temp_directory_path() / "triad-calibration.json";
}

DeviceModel calibratedDevice(const Target& t, const CompileSettings& s, const std::string& key,
                             const fs::path& cache, bool force,
                             const std::function<void(const std::string&)>& progress) {
  std::string id = fmt::format("{}|{}|{}|threads={}", hostName(), t.name(), key, s.threads);
  // A damaged or unreadable cache is measured again.
  nlohmann::json db = nlohmann::json::parse(readOrEmpty(cache), nullptr, false);
  if (!db.is_object()) db = nlohmann::json::object();
  if (!force && db.contains(id) && db[id].is_object()) {
    const auto& e = db[id];
    DeviceModel d;
    d.gflops = e.value("gflops", d.gflops);
    d.gbytesPerS = e.value("gbytes_per_s", d.gbytesPerS);
    d.layerOverheadUs = e.value("layer_overhead_us", d.layerOverheadUs);
    if (d.gflops > 0 && d.gbytesPerS > 0 && d.layerOverheadUs >= 0) return d;
  }
  if (progress)
    progress(fmt::format("calibrating {} (dense, element-wise, per-layer cost)", t.name()));
  DeviceModel d = measureDevice(t, s);
  if (progress)
    progress(fmt::format("  {}: {:.3g} GFLOP/s, {:.3g} GB/s, {:.3g} us per layer", t.name(),
                         d.gflops, d.gbytesPerS, d.layerOverheadUs));
  db[id] = {{"gflops", d.gflops},
            {"gbytes_per_s", d.gbytesPerS},
            {"layer_overhead_us", d.layerOverheadUs}};
  try {
    // Read again, merge and replace under a lock: concurrent calibrations keep each other's
    // entries; the file is replaced atomically (ir/Files.h).
    createDirectories(cache.parent_path().empty() ? fs::path(".") : cache.parent_path(),
                      "the calibration cache's folder");
    FileLock lock(cache.string() + ".lock");
    nlohmann::json now = nlohmann::json::parse(readOrEmpty(cache), nullptr, false);
    if (!now.is_object()) now = nlohmann::json::object();
    now[id] = db[id];
    writeFileAtomic(cache, now.dump(2) + "\n");
  } catch (const std::exception&) {
    // An unwritable cache only costs a measurement next time.
  }
  return d;
}

} // namespace triad::ir::partition

namespace triad::ir::partition {

namespace {

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '/' && o.empty()) continue;
    o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return o;
}

} // namespace

std::map<std::string, double>
measuredFromProfile(const Graph& g, const std::vector<std::pair<std::string, double>>& layers) {
  std::map<std::string, double> out;
  std::vector<const Node*> nodes;
  for (const auto& n : g.nodes())
    nodes.push_back(n.get());
  for (const auto& [layer, sec] : layers) {
    bool done = false;
    for (size_t i = 0; i < nodes.size() && !done; ++i) {
      if (nodes[i]->name() == layer) {
        out[layer] += sec;
        done = true;
        break;
      }
      std::string joined;
      for (size_t j = i; j < nodes.size() && joined.size() < layer.size(); ++j) {
        if (!joined.empty()) joined += '_';
        joined += sanitize(nodes[j]->name());
        if (joined != layer) continue;
        DeviceModel unit;
        double total = 0;
        for (size_t k = i; k <= j; ++k)
          total += analyticSeconds(nodeWork(*nodes[k]), unit);
        for (size_t k = i; k <= j; ++k)
          out[nodes[k]->name()] += sec * analyticSeconds(nodeWork(*nodes[k]), unit) / total;
        done = true;
        break;
      }
    }
  }
  return out;
}

} // namespace triad::ir::partition
