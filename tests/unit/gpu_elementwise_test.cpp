// The elementwise generator on the OpenCL device: several inputs with NumPy broadcasting
// (including scalars and size-1 dimensions on both sides), a body expression, two parameter
// sets, and the errors for shapes that do not broadcast.
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>

namespace triad::gpu {
namespace {

const ElementwiseParams kParams[] = {ElementwiseParams{},
                                     ElementwiseParams{.wgSize = 32, .itemsPerThread = 3}};

// Y[2,3,5] = fmax(x * scale + bias, 0): x full, bias per middle dim [3,1], scale a scalar.
const std::vector<int64_t> kOut1 = {2, 3, 5};
const std::vector<ElementwiseInput> kIn1 = {{"x", {2, 3, 5}}, {"bias", {3, 1}}, {"scale", {}}};
const char* kBody1 = "fmax(x * scale + bias, 0.0f)";

// Y[4,5,6] = a - b * c with a[4,1,6], b[1,5,1], c[6] (both sides broadcast).
const std::vector<int64_t> kOut2 = {4, 5, 6};
const std::vector<ElementwiseInput> kIn2 = {{"a", {4, 1, 6}}, {"b", {1, 5, 1}}, {"c", {6}}};
const char* kBody2 = "a - b * c";

std::vector<GeneratedKernel> allKernels() {
  std::vector<GeneratedKernel> ks;
  for (size_t p = 0; p < std::size(kParams); ++p) {
    ks.push_back(generateElementwise(fmt::format("scale_bias_relu_p{}", p), kOut1, kIn1, kBody1,
                                     kParams[p]));
    ks.push_back(
        generateElementwise(fmt::format("broadcast_both_p{}", p), kOut2, kIn2, kBody2, kParams[p]));
  }
  return ks;
}

const Program& elementwiseProgram(Context& ctx) {
  static const std::vector<GeneratedKernel> ks = allKernels();
  return gputest::programFor(ctx, "gpu_elementwise_test", ks);
}

TEST(GpuElementwise, Source) {
  GeneratedKernel k = generateElementwise("/block/Add", kOut1, kIn1, kBody1);
  EXPECT_EQ(k.name, "block_Add");
  EXPECT_EQ(k.params, (std::vector<std::string>{"x_data", "bias_data", "scale_data", "Y"}));
  EXPECT_NE(k.source.find("Y[2,3,5] = fmax(x * scale + bias, 0.0f)"), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("const float x = x_data[idx];"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("const float bias = bias_data[d1];"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("const float scale = scale_data[0];"), std::string::npos) << k.source;
  EXPECT_EQ(k.range.global[0], 64u); // 30 outputs / 4 per work-item, rounded up to 64
}

TEST(GpuElementwise, RejectsBadInputs) {
  EXPECT_THROW(generateElementwise("e", {2, 3}, {{"x", {4}}}, "x"), Error);       // 4 vs 3
  EXPECT_THROW(generateElementwise("e", {2, 3}, {{"x", {1, 2, 3}}}, "x"), Error); // rank
  EXPECT_THROW(generateElementwise("e", {3}, {{"x", {3}}, {"x", {3}}}, "x + x"), Error);
  EXPECT_THROW(generateElementwise("e", {3}, {{"float", {3}}}, "float"), Error);
  EXPECT_THROW(generateElementwise("e", {3}, {{"x", {3}}}, ""), Error);
}

TEST(GpuElementwise, MatchesReferenceWithBroadcasting) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = elementwiseProgram(ctx);
  std::vector<float> x = gputest::randomData(30, 1), bias = gputest::randomData(3, 2),
                     scale = {1.5f};
  std::vector<double> want1(30);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) {
        int idx = (i * 3 + j) * 5 + k;
        want1[size_t(idx)] = std::max(0.0f, x[size_t(idx)] * scale[0] + bias[size_t(j)]);
      }
  std::vector<float> a = gputest::randomData(24, 3), b = gputest::randomData(5, 4),
                     c = gputest::randomData(6, 5);
  std::vector<double> want2(120);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 6; ++k)
        want2[size_t((i * 5 + j) * 6 + k)] =
            a[size_t(i * 6 + k)] - double(b[size_t(j)]) * double(c[size_t(k)]);
  for (size_t p = 0; p < std::size(kParams); ++p) {
    GeneratedKernel k1 =
        generateElementwise(fmt::format("scale_bias_relu_p{}", p), kOut1, kIn1, kBody1, kParams[p]);
    EXPECT_LT(
        gputest::relError(gputest::runKernel(ctx, prog, k1, {&x, &bias, &scale}, 3, 30), want1),
        1e-6)
        << k1.name;
    GeneratedKernel k2 =
        generateElementwise(fmt::format("broadcast_both_p{}", p), kOut2, kIn2, kBody2, kParams[p]);
    EXPECT_LT(gputest::relError(gputest::runKernel(ctx, prog, k2, {&a, &b, &c}, 3, 120), want2),
              1e-6)
        << k2.name;
  }
}

} // namespace
} // namespace triad::gpu
