// The convolution generators (direct, and implicit GEMM) on the OpenCL device against a naive
// NCHW reference: padding, strides, dilation, groups, depthwise and 1x1, two parameter sets
// each, and the bias + ReLU epilogue; the panel implicit GEMM (CPU devices) on the same cases.
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>

namespace triad::gpu {
namespace {

ConvShape conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
               int64_t stride, int64_t pad, int64_t group) {
  ConvShape s;
  s.N = N, s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = S;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
  s.group = group;
  return s;
}

ConvShape stridedDilated() {
  ConvShape s = conv(1, 4, 13, 10, 6, 3, 2, 1, 0, 1);
  s.strideH = 2, s.strideW = 3;
  s.padTop = 1, s.padLeft = 0, s.padBottom = 2, s.padRight = 1;
  s.dilationH = 2;
  return s;
}

struct ConvCase {
  const char* name;
  ConvShape shape;
};

const ConvCase kCases[] = {
    {"basic", conv(2, 3, 9, 11, 5, 3, 3, 1, 1, 1)},
    {"strided", stridedDilated()},
    {"grouped", conv(1, 4, 7, 7, 6, 3, 3, 1, 1, 2)},
    {"depthwise", conv(2, 8, 10, 10, 8, 3, 3, 2, 1, 8)},
    {"pointwise", conv(1, 16, 5, 6, 12, 1, 1, 1, 0, 1)},
};

const ConvParams kDirect[] = {ConvParams{},
                              ConvParams{.blockK = 3, .workW = 3, .wgW = 4, .wgH = 2}};
const GemmParams kImplicit[] = {
    GemmParams{.wgM = 4, .wgN = 8, .workM = 2, .workN = 2, .tileK = 8, .vectorWidth = 1},
    GemmParams{.wgM = 2, .wgN = 8, .workM = 2, .workN = 4, .tileK = 4, .vectorWidth = 4},
};

// The panel kernel: rows (output pixels) and columns (output channels) past multiples of the
// register block in most cases; weights packed with packConvWeights.
const GemmParams kPanel[] = {
    GemmParams{
        .wgM = 2, .wgN = 1, .workM = 5, .workN = 8, .tileK = 1, .vectorWidth = 4, .panel = true},
    GemmParams{
        .wgM = 1, .wgN = 1, .workM = 3, .workN = 16, .tileK = 1, .vectorWidth = 16, .panel = true},
};

Epilogue biasRelu() {
  return Epilogue{"acc = fmax(acc + bias[k], 0.0f);",
                  {"__global const float* restrict bias"},
                  "bias[K] + ReLU"};
}

std::string directName(size_t c, size_t p) {
  return fmt::format("conv_{}_direct{}", kCases[c].name, p);
}
std::string implicitName(size_t c) {
  return fmt::format("conv_{}_implicit", kCases[c].name);
}
std::string panelName(size_t c, size_t p) {
  return fmt::format("conv_{}_panel{}", kCases[c].name, p);
}

// The panel parameter set on the test device (the 16-wide one as float8 on AVX2 CPUs).
GemmParams panelParams(size_t p, const DeviceInfo& d) {
  return gputest::forDevice(kPanel[p], d);
}

std::vector<GeneratedKernel> allKernels(const DeviceInfo& d) {
  std::vector<GeneratedKernel> ks;
  for (size_t c = 0; c < std::size(kCases); ++c) {
    for (size_t p = 0; p < std::size(kDirect); ++p)
      ks.push_back(generateConv2D(directName(c, p), kCases[c].shape, kDirect[p]));
    ks.push_back(generateConv2DImplicitGemm(implicitName(c), kCases[c].shape, kImplicit[c % 2]));
    for (size_t p = 0; p < std::size(kPanel); ++p)
      ks.push_back(generateConv2DImplicitGemm(panelName(c, p), kCases[c].shape, panelParams(p, d)));
  }
  ks.push_back(generateConv2D("conv_grouped_relu_direct", kCases[2].shape, kDirect[1], biasRelu()));
  ks.push_back(generateConv2DImplicitGemm("conv_grouped_relu_implicit", kCases[2].shape,
                                          kImplicit[0], biasRelu()));
  ks.push_back(generateConv2DImplicitGemm("conv_grouped_relu_panel", kCases[2].shape, kPanel[0],
                                          biasRelu()));
  return ks;
}

const Program& convProgram(Context& ctx) {
  static const std::vector<GeneratedKernel> ks = allKernels(ctx.device());
  return gputest::programFor(ctx, "gpu_conv_test", ks);
}

std::vector<double> referenceConv(const ConvShape& s, const std::vector<float>& X,
                                  const std::vector<float>& Wt) {
  const int64_t OH = s.outH(), OW = s.outW(), Cg = s.C / s.group, Kg = s.K / s.group;
  std::vector<double> Y(size_t(s.N * s.K * OH * OW));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k) {
      int64_t g = k / Kg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < s.R; ++r)
              for (int64_t q = 0; q < s.S; ++q) {
                int64_t ih = oh * s.strideH - s.padTop + r * s.dilationH;
                int64_t iw = ow * s.strideW - s.padLeft + q * s.dilationW;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                acc += double(X[size_t(((n * s.C + g * Cg + c) * s.H + ih) * s.W + iw)]) *
                       double(Wt[size_t(((k * Cg + c) * s.R + r) * s.S + q)]);
              }
          Y[size_t(((n * s.K + k) * OH + oh) * OW + ow)] = acc;
        }
    }
  return Y;
}

struct ConvData {
  std::vector<float> X, W;
  std::vector<double> want;
};

ConvData dataFor(size_t c) {
  const ConvShape& s = kCases[c].shape;
  ConvData d;
  d.X = gputest::randomData(size_t(s.N * s.C * s.H * s.W), unsigned(100 + c));
  d.W = gputest::randomData(size_t(s.K * (s.C / s.group) * s.R * s.S), unsigned(200 + c));
  d.want = referenceConv(s, d.X, d.W);
  return d;
}

TEST(GpuConv, ShapesAndSource) {
  const ConvShape& s = kCases[1].shape; // H 13 + 3 pad, dilated kernel 5 high, stride 2
  EXPECT_EQ(s.outH(), 6);
  EXPECT_EQ(s.outW(), 4); // (10 + 1 - 2) / 3 + 1
  GeneratedKernel k = generateConv2D("/features/0/Conv", kCases[3].shape, kDirect[0], biasRelu());
  EXPECT_EQ(k.name, "features_0_Conv");
  EXPECT_NE(k.source.find("(Conv, direct, depthwise)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("X[2,8,10,10] * W[8,1,3,3] -> Y[2,8,5,5]"), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("acc = fmax(acc + bias[k], 0.0f);"), std::string::npos);
  EXPECT_EQ(k.params, (std::vector<std::string>{"X", "W", "Y", "bias"}));
  GeneratedKernel i = generateConv2DImplicitGemm("c", kCases[0].shape);
  EXPECT_NE(i.source.find("float c_im2col(__global const float* x, int row, int col)"),
            std::string::npos)
      << i.source;
  ConvShape bad = kCases[2].shape;
  bad.group = 3; // does not divide 4 input channels
  EXPECT_THROW(generateConv2D("bad", bad), Error);
}

TEST(GpuConv, DirectMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = convProgram(ctx);
  for (size_t c = 0; c < std::size(kCases); ++c) {
    ConvData d = dataFor(c);
    for (size_t p = 0; p < std::size(kDirect); ++p) {
      GeneratedKernel k = generateConv2D(directName(c, p), kCases[c].shape, kDirect[p]);
      std::vector<float> got = gputest::runKernel(ctx, prog, k, {&d.X, &d.W}, 2, d.want.size());
      EXPECT_LT(gputest::relError(got, d.want), 1e-5)
          << directName(c, p) << ": " << kCases[c].shape.toString() << ", "
          << kDirect[p].toString();
    }
  }
}

TEST(GpuConv, ImplicitGemmMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = convProgram(ctx);
  for (size_t c = 0; c < std::size(kCases); ++c) {
    ConvData d = dataFor(c);
    GeneratedKernel k =
        generateConv2DImplicitGemm(implicitName(c), kCases[c].shape, kImplicit[c % 2]);
    std::vector<float> got = gputest::runKernel(ctx, prog, k, {&d.X, &d.W}, 2, d.want.size());
    EXPECT_LT(gputest::relError(got, d.want), 1e-5)
        << implicitName(c) << ": " << kCases[c].shape.toString() << ", "
        << kImplicit[c % 2].toString();
  }
}

TEST(GpuConv, PanelMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = convProgram(ctx);
  for (size_t c = 0; c < std::size(kCases); ++c) {
    ConvData d = dataFor(c);
    for (size_t p = 0; p < std::size(kPanel); ++p) {
      const GemmParams params = panelParams(p, ctx.device());
      std::vector<float> packedW = packConvWeights(d.W.data(), kCases[c].shape, params.workN);
      GeneratedKernel k = generateConv2DImplicitGemm(panelName(c, p), kCases[c].shape, params);
      EXPECT_EQ(k.source.find("barrier("), std::string::npos) << k.source;
      std::vector<float> got = gputest::runKernel(ctx, prog, k, {&d.X, &packedW}, 2, d.want.size());
      EXPECT_LT(gputest::relError(got, d.want), 1e-5)
          << panelName(c, p) << ": " << kCases[c].shape.toString() << ", " << params.toString();
    }
  }
}

TEST(GpuConv, EpilogueBiasRelu) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = convProgram(ctx);
  const ConvShape& s = kCases[2].shape;
  ConvData d = dataFor(2);
  std::vector<float> bias = gputest::randomData(size_t(s.K), 77);
  const int64_t plane = s.outH() * s.outW();
  for (size_t i = 0; i < d.want.size(); ++i)
    d.want[i] = std::max(0.0, d.want[i] + bias[size_t((int64_t(i) / plane) % s.K)]);
  GeneratedKernel direct = generateConv2D("conv_grouped_relu_direct", s, kDirect[1], biasRelu());
  std::vector<float> got =
      gputest::runKernel(ctx, prog, direct, {&d.X, &d.W, &bias}, 2, d.want.size());
  EXPECT_LT(gputest::relError(got, d.want), 1e-5);
  GeneratedKernel implicit =
      generateConv2DImplicitGemm("conv_grouped_relu_implicit", s, kImplicit[0], biasRelu());
  got = gputest::runKernel(ctx, prog, implicit, {&d.X, &d.W, &bias}, 2, d.want.size());
  EXPECT_LT(gputest::relError(got, d.want), 1e-5);
  GeneratedKernel panel =
      generateConv2DImplicitGemm("conv_grouped_relu_panel", s, kPanel[0], biasRelu());
  std::vector<float> packedW = packConvWeights(d.W.data(), s, kPanel[0].workN);
  got = gputest::runKernel(ctx, prog, panel, {&d.X, &packedW, &bias}, 2, d.want.size());
  EXPECT_LT(gputest::relError(got, d.want), 1e-5);
}

} // namespace
} // namespace triad::gpu
