// QONNX's Quant, BipolarQuant and Trunc: the reference interpreter and the CPU target against
// QONNX's own executor, bit for bit, on the node tests of tests/data/qonnx/ (written by
// scripts/zoo/qonnx_node_tests.py with qonnx 1.0.0), plus the rounding table of QONNX's spec
// and the must-fail cases.
#include "cpu/CpuTarget.h"
#include "frontend/OnnxImporter.h"
#include "frontend/TensorIO.h"
#include "ir/Interpreter.h"
#include "ir/ops/QuantizeQonnx.h"

#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>

using namespace triad;
using namespace triad::ir;
namespace fs = std::filesystem;

namespace {

fs::path caseDir() {
  return fs::path(TRIAD_SOURCE_DIR) / "tests" / "data" / "qonnx";
}

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(caseDir()))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Number of elements whose float32 bits differ (NaN counts as equal to NaN).
int64_t bitDiffs(const Tensor& got, const Tensor& want, std::string* first) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape() || got.dtype() != DType::F32 || want.dtype() != DType::F32)
    return -1;
  int64_t diffs = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    float g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::memcmp(&g, &w, sizeof g) != 0) {
      if (diffs++ == 0 && first) *first = fmt::format("element {}: {} vs {}", i, g, w);
    }
  }
  return diffs;
}

class QonnxNode : public ::testing::TestWithParam<std::string> {};

TEST_P(QonnxNode, InterpreterMatchesQonnxExecutorBitForBit) {
  fs::path d = caseDir() / GetParam();
  frontend::ImportResult r = frontend::importOnnxFile(d / "model.onnx");
  Tensor x = frontend::readNpy(d / "input_0.npy");
  Tensor want = frontend::readNpy(d / "output_0.npy");
  std::vector<Tensor> got = Interpreter(r.graph).run(std::vector<Tensor>{x});
  ASSERT_EQ(got.size(), 1u);
  std::string first;
  EXPECT_EQ(bitDiffs(got[0], want, &first), 0) << first;
}

TEST_P(QonnxNode, CpuTargetMatchesQonnxExecutorBitForBit) {
  fs::path d = caseDir() / GetParam();
  frontend::ImportResult r = frontend::importOnnxFile(d / "model.onnx");
  Tensor x = frontend::readNpy(d / "input_0.npy");
  Tensor want = frontend::readNpy(d / "output_0.npy");
  cpu::CpuOptions o;
  o.flags = "-O1 -march=native";
  o.cacheDir = fs::path(TRIAD_BINARY_DIR) / "test-cache" / "cpu";
  o.threads = 1;
  auto exe = cpu::makeCpuTarget(o)->compile(r.graph);
  std::vector<Tensor> got = exe->run(std::vector<Tensor>{x});
  ASSERT_EQ(got.size(), 1u);
  std::string first;
  EXPECT_EQ(bitDiffs(got[0], want, &first), 0) << first;
}

INSTANTIATE_TEST_SUITE_P(Cases, QonnxNode, ::testing::ValuesIn(caseNames()),
                         [](const auto& info) { return info.param; });

TEST(QonnxRounding, SpecTable) {
  // The rounding table of QONNX's Quant spec (docs/qonnx-custom-ops/quant_op.md).
  const float in[] = {5.5f, 2.5f, 1.6f, 1.1f, 1.0f, -1.0f, -1.1f, -1.6f, -2.5f, -5.5f};
  struct Row {
    QonnxRounding mode;
    float out[10];
  };
  const Row rows[] = {
      {QonnxRounding::HalfEven, {6, 2, 2, 1, 1, -1, -1, -2, -2, -6}},
      {QonnxRounding::Ceil, {6, 3, 2, 2, 1, -1, -1, -1, -2, -5}},
      {QonnxRounding::Floor, {5, 2, 1, 1, 1, -1, -2, -2, -3, -6}},
      {QonnxRounding::Up, {6, 3, 2, 2, 1, -1, -2, -2, -3, -6}},
      {QonnxRounding::Down, {5, 2, 1, 1, 1, -1, -1, -1, -2, -5}},
      {QonnxRounding::HalfUp, {6, 3, 2, 1, 1, -1, -1, -2, -3, -6}},
      {QonnxRounding::HalfDown, {5, 2, 2, 1, 1, -1, -1, -2, -2, -5}},
  };
  for (const Row& r : rows)
    for (int i = 0; i < 10; ++i)
      EXPECT_EQ(ops::qonnxRound(in[i], r.mode), r.out[i]) << toString(r.mode) << " " << in[i];
}

TEST(QonnxQuant, IntegerRanges) {
  EXPECT_EQ(ops::qonnxMinInt(true, true, 8), -127);
  EXPECT_EQ(ops::qonnxMinInt(true, false, 8), -128);
  EXPECT_EQ(ops::qonnxMinInt(false, true, 8), 0);
  EXPECT_EQ(ops::qonnxMaxInt(true, true, 8), 127);
  EXPECT_EQ(ops::qonnxMaxInt(false, true, 8), 254);
  EXPECT_EQ(ops::qonnxMaxInt(false, false, 8), 255);
  EXPECT_EQ(ops::qonnxMaxInt(false, false, 32), 4294967295LL);
  EXPECT_EQ(ops::qonnxMinInt(true, false, 32), -2147483648LL);
}

/// The serialized model of a node test.
std::string readModel(const std::string& name) {
  return frontend::readFile(caseDir() / name / "model.onnx");
}

TEST(QonnxQuant, MustFail) {
  // Each model is a shipped node test with bytes patched: the error names the node, the op and
  // the attribute or input.
  std::string m = readModel("quant_int8_round");
  auto expectError = [](const std::string& bytes, ErrorKind kind, const std::string& part) {
    try {
      frontend::importOnnxBytes(bytes, caseDir(), "patched.onnx");
      ADD_FAILURE() << "imported";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  {
    std::string b = m;
    size_t p = b.find("ROUND");
    ASSERT_NE(p, std::string::npos);
    b.replace(p, 5, "RONUD");
    expectError(b, ErrorKind::Unsupported, "rounding_mode");
  }
  {
    std::string b = m;
    size_t p = b.find("qonnx.custom_op.general");
    ASSERT_NE(p, std::string::npos);
    b.replace(p, 5, "qonnz");
    expectError(b, ErrorKind::Unsupported, "Quant (domain 'qonnz.custom_op.general')");
  }
}

} // namespace
