// The default pass pipeline on real models: every shipped model (models/MANIFEST.json) gives
// the same interpreter results before and after the pipeline on its reference input, and both
// match the ONNX Runtime reference output. The on-demand zoo models (ResNet, MobileNetV2, BERT,
// ... in $TRIAD_ZOO_CACHE or ~/.cache/triad/zoo) are checked the same way when
// TRIAD_PASSES_LARGE=1 is set (they take minutes in the reference interpreter).
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/passes/Pass.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>

using namespace triad;
namespace fs = std::filesystem;

namespace {

// Largest |a - b| relative to atol + rtol * |b| over all elements (<= 1 passes).
double worstRatio(const ir::Tensor& a, const ir::Tensor& b, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.getDouble(i), y = b.getDouble(i);
    worst = std::max(worst, std::fabs(x - y) / (atol + rtol * std::fabs(y)));
  }
  return worst;
}

int countKind(const ir::Graph& g, ir::OpKind k) {
  return int(std::count_if(g.nodes().begin(), g.nodes().end(),
                           [&](const auto& n) { return n->kind() == k; }));
}

struct ModelCase {
  std::string name;
  fs::path file;
  std::vector<ir::Tensor> inputs;
  std::vector<ir::Tensor> reference; // ONNX Runtime outputs, in graph-output order
};

// Imports the model, runs the interpreter, the default pipeline and the interpreter again;
// returns the pass records. Results must agree within rtol 1e-5 (the rewrites reassociate
// sums: MatMul + Add -> Gemm adds the bias in the accumulator) and match ONNX Runtime within the
// zoo's tolerance (rtol 1e-4, atol 1e-6; `refRtol`, `refAtol` for the large models).
std::vector<ir::PassRecord> checkModel(const ModelCase& c, double refRtol, double refAtol) {
  frontend::ImportOptions o;
  o.batch = c.inputs.at(0).shape().at(0);
  frontend::ImportResult r = frontend::importOnnxFile(c.file, o);
  size_t nodesBefore = r.graph.nodes().size();
  std::vector<ir::Tensor> before = ir::Interpreter(r.graph).run(c.inputs);
  std::vector<ir::PassRecord> records = ir::defaultPipeline().run(r.graph);
  std::vector<ir::Tensor> after = ir::Interpreter(r.graph).run(c.inputs);
  double maxDiff = 0;
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i)
    if (before[i].type() == after[i].type())
      for (int64_t k = 0; k < after[i].numElements(); ++k)
        maxDiff = std::max(maxDiff, std::fabs(after[i].getDouble(k) - before[i].getDouble(k)));
  std::string changed;
  for (const auto& rec : records)
    if (rec.changed) changed += " " + rec.name;
  std::printf(
      "[ %s ] %zu -> %zu nodes (Gemm %d, MatMul %d); max |after - before| %.3g; changed by:%s\n",
      c.name.c_str(), nodesBefore, r.graph.nodes().size(), countKind(r.graph, ir::OpKind::Gemm),
      countKind(r.graph, ir::OpKind::MatMul), maxDiff, changed.empty() ? " none" : changed.c_str());
  std::fflush(stdout);
  EXPECT_EQ(before.size(), after.size()) << c.name;
  EXPECT_EQ(after.size(), c.reference.size()) << c.name;
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    EXPECT_EQ(before[i].type(), after[i].type()) << c.name << " output " << i;
    if (!(before[i].type() == after[i].type())) continue;
    double drift = worstRatio(after[i], before[i], 1e-5, 1e-7);
    EXPECT_LE(drift, 1.0) << c.name << " output " << i << ": optimized graph differs";
    if (i < c.reference.size()) {
      EXPECT_EQ(after[i].shape(), c.reference[i].shape()) << c.name << " output " << i;
      if (after[i].shape() == c.reference[i].shape()) {
        EXPECT_LE(worstRatio(after[i], c.reference[i].castTo(after[i].dtype()), refRtol, refAtol),
                  1.0)
            << c.name << " output " << i << ": differs from ONNX Runtime";
      }
    }
  }
  return records;
}

nlohmann::json readJson(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

} // namespace

TEST(PassesOnModels, ShippedModelsKeepTheirResults) {
  fs::path models = fs::path(TRIAD_SOURCE_DIR) / "models";
  nlohmann::json manifest = readJson(models / "MANIFEST.json");
  int checked = 0;
  for (const auto& [name, m] : manifest.at("models").items()) {
    if (!m.contains("reference")) continue;
    ModelCase c{name, models / m.at("file").get<std::string>(), {}, {}};
    c.inputs.push_back(frontend::readNpy(models / m["reference"]["input"].get<std::string>()));
    c.reference.push_back(frontend::readNpy(models / m["reference"]["output"].get<std::string>()));
    checkModel(c, 1e-4, 1e-6);
    ++checked;
  }
  // PyTorch's exporter already folds BatchNormalization and emits Gemm for these small models,
  // so here the pipeline must above all change nothing it should not; the rewrites themselves
  // are exercised by the large models (BERT's MatMul + Add) and the hand-built graphs.
  EXPECT_GE(checked, 4);
}

TEST(PassesOnModels, LargeZooModelsKeepTheirResults) {
  const char* enabled = std::getenv("TRIAD_PASSES_LARGE");
  if (!enabled || std::string(enabled) != "1")
    GTEST_SKIP() << "set TRIAD_PASSES_LARGE=1 to run the pipeline on the on-demand zoo models";
  const char* cacheEnv = std::getenv("TRIAD_ZOO_CACHE");
  const char* home = std::getenv("HOME");
  fs::path cache =
      cacheEnv ? fs::path(cacheEnv) : fs::path(home ? home : ".") / ".cache" / "triad" / "zoo";
  // TRIAD_PASSES_LARGE_MODELS=resnet18,bert_base restricts the run to those models.
  const char* onlyEnv = std::getenv("TRIAD_PASSES_LARGE_MODELS");
  std::string only = onlyEnv ? std::string(",") + onlyEnv + "," : std::string();
  int checked = 0;
  for (const char* name : {"resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "vgg16",
                           "bert_base", "gpt2_small"}) {
    if (!only.empty() && only.find(std::string(",") + name + ",") == std::string::npos) continue;
    fs::path dir = cache / name;
    if (!fs::exists(dir / (std::string(name) + ".json"))) continue;
    nlohmann::json entry = readJson(dir / (std::string(name) + ".json"));
    ModelCase c{name, dir / entry.at("file").get<std::string>(), {}, {}};
    for (const auto& in : entry.at("inputs"))
      c.inputs.push_back(frontend::readNpy(dir / in.at("reference").get<std::string>()));
    for (const auto& out : entry.at("outputs"))
      c.reference.push_back(frontend::readNpy(dir / out.at("reference").get<std::string>()));
    checkModel(c, 1e-3, 1e-4); // the zoo's large-model tolerance (tests/zoo/check_large.py)
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no zoo models in " << cache;
}
