// Pooling and the work-group reduction kernels (softmax, layer normalization, global pooling)
// on the OpenCL device against naive references, with two work-group sizes each: one smaller
// and one larger than some of the rows.
#include "gpu_TestUtil.h"

#include <gtest/gtest.h>

#include <limits>

namespace triad::gpu {
namespace {

PoolShape pool(PoolKind kind, int64_t N, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
               int64_t pad) {
  PoolShape s;
  s.kind = kind;
  s.N = N, s.C = C, s.H = H, s.W = W;
  s.kernelH = s.kernelW = k;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
  return s;
}

PoolShape avgCeilIncludePad() {
  PoolShape s = pool(PoolKind::Avg, 1, 3, 8, 7, 3, 2, 1);
  s.ceilMode = true;
  s.countIncludePad = true;
  return s;
}

PoolShape maxDilated() {
  PoolShape s = pool(PoolKind::Max, 2, 2, 9, 9, 2, 1, 0);
  s.dilationH = s.dilationW = 2;
  s.padBottom = 1;
  return s;
}

struct PoolCase {
  const char* name;
  PoolShape shape;
};

const PoolCase kPools[] = {
    {"max3s2p1", pool(PoolKind::Max, 2, 3, 11, 9, 3, 2, 1)},
    {"avg2s2", pool(PoolKind::Avg, 1, 4, 8, 10, 2, 2, 0)},
    {"avg3s2p1_excl", pool(PoolKind::Avg, 1, 2, 7, 7, 3, 2, 1)},
    {"avg3s2p1_ceil_incl", avgCeilIncludePad()},
    {"max2_dilated", maxDilated()},
};
const PoolParams kPoolParams[] = {PoolParams{}, PoolParams{.wgSize = 16}};

struct RowCase {
  const char* name;
  int64_t rows, cols;
};
const RowCase kRows[] = {{"r5x37", 5, 37}, {"r3x300", 3, 300}, {"r4x1", 4, 1}};
const ReduceParams kReduce[] = {ReduceParams{.wgSize = 32}, ReduceParams{.wgSize = 128}};

std::string poolName(size_t c, size_t p) {
  return fmt::format("pool_{}_p{}", kPools[c].name, p);
}
std::string rowName(const char* op, size_t c, size_t p) {
  return fmt::format("{}_{}_p{}", op, kRows[c].name, p);
}

std::vector<GeneratedKernel> allKernels() {
  std::vector<GeneratedKernel> ks;
  for (size_t c = 0; c < std::size(kPools); ++c)
    for (size_t p = 0; p < std::size(kPoolParams); ++p)
      ks.push_back(generatePool2D(poolName(c, p), kPools[c].shape, kPoolParams[p]));
  for (size_t c = 0; c < std::size(kRows); ++c)
    for (size_t p = 0; p < std::size(kReduce); ++p) {
      const RowCase& r = kRows[c];
      ks.push_back(generateSoftmax(rowName("softmax", c, p), r.rows, r.cols, kReduce[p]));
      ks.push_back(
          generateLayerNorm(rowName("layernorm", c, p), r.rows, r.cols, 1e-5f, c != 1, kReduce[p]));
    }
  // Global pooling: each row shape with one of the two work-group sizes (fewer kernels to compile).
  for (size_t c = 0; c < std::size(kRows); ++c) {
    const RowCase& r = kRows[c];
    ks.push_back(generateGlobalPool(rowName("gap", c, c % 2), PoolKind::Avg, 1, r.rows, r.cols,
                                    kReduce[c % 2]));
    ks.push_back(generateGlobalPool(rowName("gmp", c, (c + 1) % 2), PoolKind::Max, r.rows, 1,
                                    r.cols, kReduce[(c + 1) % 2]));
  }
  return ks;
}

const Program& reduceProgram(Context& ctx) {
  static const std::vector<GeneratedKernel> ks = allKernels();
  return gputest::programFor(ctx, "gpu_reduce_test", ks);
}

std::vector<double> referencePool(const PoolShape& s, const std::vector<float>& X) {
  const int64_t OH = s.outH(), OW = s.outW();
  std::vector<double> Y(size_t(s.N * s.C * OH * OW));
  for (int64_t nc = 0; nc < s.N * s.C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t count = 0, padded = 0;
        for (int64_t r = 0; r < s.kernelH; ++r)
          for (int64_t q = 0; q < s.kernelW; ++q) {
            int64_t ih = oh * s.strideH - s.padTop + r * s.dilationH;
            int64_t iw = ow * s.strideW - s.padLeft + q * s.dilationW;
            if (ih >= -s.padTop && ih < s.H + s.padBottom && iw >= -s.padLeft &&
                iw < s.W + s.padRight)
              ++padded;
            if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
            double v = X[size_t((nc * s.H + ih) * s.W + iw)];
            mx = std::max(mx, v);
            sum += v;
            ++count;
          }
        double y = s.kind == PoolKind::Max ? mx
                   : s.countIncludePad     ? sum / double(padded)
                                           : sum / double(count);
        Y[size_t((nc * OH + oh) * OW + ow)] = y;
      }
  return Y;
}

TEST(GpuPool, OutputSizes) {
  EXPECT_EQ(kPools[0].shape.outH(), 6); // (11 + 2 - 3) / 2 + 1
  EXPECT_EQ(kPools[0].shape.outW(), 5);
  EXPECT_EQ(kPools[3].shape.outH(), 5); // ceil((8 + 2 - 3) / 2) + 1 = 5
  EXPECT_EQ(kPools[3].shape.outW(), 4); // ceil((7 + 2 - 3) / 2) + 1 = 4
  EXPECT_EQ(kPools[4].shape.outH(), 8); // (9 + 1 - 3) / 1 + 1
  PoolShape edge = pool(PoolKind::Max, 1, 1, 5, 5, 2, 2, 0);
  edge.ceilMode = true; // ceil((5 - 2) / 2) + 1 = 3, the last window starts at 4 < 5: kept
  EXPECT_EQ(edge.outH(), 3);
  edge.padTop = edge.padBottom = 1; // ceil((7-2)/2)+1 = 4; window 3 starts at 6 >= 5 + 1: dropped
  EXPECT_EQ(edge.outH(), 3);
}

TEST(GpuPool, MatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = reduceProgram(ctx);
  for (size_t c = 0; c < std::size(kPools); ++c) {
    const PoolShape& s = kPools[c].shape;
    std::vector<float> X = gputest::randomData(size_t(s.N * s.C * s.H * s.W), unsigned(300 + c));
    std::vector<double> want = referencePool(s, X);
    for (size_t p = 0; p < std::size(kPoolParams); ++p) {
      GeneratedKernel k = generatePool2D(poolName(c, p), s, kPoolParams[p]);
      std::vector<float> got = gputest::runKernel(ctx, prog, k, {&X}, 1, want.size());
      EXPECT_LT(gputest::relError(got, want), 1e-6) << poolName(c, p) << ": " << s.toString();
    }
  }
}

TEST(GpuReduce, SoftmaxMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = reduceProgram(ctx);
  for (size_t c = 0; c < std::size(kRows); ++c) {
    const RowCase& r = kRows[c];
    // Large offsets: without the max subtraction exp() would overflow.
    std::vector<float> X = gputest::randomData(size_t(r.rows * r.cols), unsigned(400 + c), 80, 95);
    std::vector<double> want(X.size());
    for (int64_t i = 0; i < r.rows; ++i) {
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < r.cols; ++j)
        mx = std::max(mx, double(X[size_t(i * r.cols + j)]));
      for (int64_t j = 0; j < r.cols; ++j)
        sum += std::exp(X[size_t(i * r.cols + j)] - mx);
      for (int64_t j = 0; j < r.cols; ++j)
        want[size_t(i * r.cols + j)] = std::exp(X[size_t(i * r.cols + j)] - mx) / sum;
    }
    for (size_t p = 0; p < std::size(kReduce); ++p) {
      GeneratedKernel k = generateSoftmax(rowName("softmax", c, p), r.rows, r.cols, kReduce[p]);
      std::vector<float> got = gputest::runKernel(ctx, prog, k, {&X}, 1, want.size());
      EXPECT_LT(gputest::relError(got, want), 1e-6) << k.name;
    }
  }
}

TEST(GpuReduce, LayerNormMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = reduceProgram(ctx);
  for (size_t c = 0; c < std::size(kRows); ++c) {
    const RowCase& r = kRows[c];
    const bool hasBeta = c != 1;
    std::vector<float> X = gputest::randomData(size_t(r.rows * r.cols), unsigned(500 + c), -3, 5);
    std::vector<float> gamma = gputest::randomData(size_t(r.cols), unsigned(600 + c), 0.5f, 2);
    std::vector<float> beta = gputest::randomData(size_t(r.cols), unsigned(700 + c));
    std::vector<double> want(X.size());
    for (int64_t i = 0; i < r.rows; ++i) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < r.cols; ++j)
        mean += X[size_t(i * r.cols + j)];
      mean /= double(r.cols);
      for (int64_t j = 0; j < r.cols; ++j) {
        double d = X[size_t(i * r.cols + j)] - mean;
        var += d * d;
      }
      var /= double(r.cols);
      for (int64_t j = 0; j < r.cols; ++j)
        want[size_t(i * r.cols + j)] =
            (X[size_t(i * r.cols + j)] - mean) / std::sqrt(var + 1e-5) * gamma[size_t(j)] +
            (hasBeta ? beta[size_t(j)] : 0.0);
    }
    for (size_t p = 0; p < std::size(kReduce); ++p) {
      GeneratedKernel k =
          generateLayerNorm(rowName("layernorm", c, p), r.rows, r.cols, 1e-5f, hasBeta, kReduce[p]);
      std::vector<float> got =
          hasBeta ? gputest::runKernel(ctx, prog, k, {&X, &gamma, &beta}, 3, want.size())
                  : gputest::runKernel(ctx, prog, k, {&X, &gamma}, 2, want.size());
      EXPECT_LT(gputest::relError(got, want), 2e-5) << k.name;
    }
  }
}

TEST(GpuReduce, GlobalPoolingMatchesReference) {
  TRIAD_GPU_CONTEXT_OR_SKIP(ctx);
  const Program& prog = reduceProgram(ctx);
  for (size_t c = 0; c < std::size(kRows); ++c) {
    const RowCase& r = kRows[c];
    std::vector<float> X = gputest::randomData(size_t(r.rows * r.cols), unsigned(800 + c));
    std::vector<double> avg(size_t(r.rows)), mx(size_t(r.rows), -1e300);
    for (int64_t i = 0; i < r.rows; ++i) {
      for (int64_t j = 0; j < r.cols; ++j) {
        avg[size_t(i)] += X[size_t(i * r.cols + j)];
        mx[size_t(i)] = std::max(mx[size_t(i)], double(X[size_t(i * r.cols + j)]));
      }
      avg[size_t(i)] /= double(r.cols);
    }
    size_t pa = c % 2, pm = (c + 1) % 2;
    GeneratedKernel a =
        generateGlobalPool(rowName("gap", c, pa), PoolKind::Avg, 1, r.rows, r.cols, kReduce[pa]);
    EXPECT_LT(gputest::relError(gputest::runKernel(ctx, prog, a, {&X}, 1, avg.size()), avg), 1e-6)
        << a.name;
    GeneratedKernel m =
        generateGlobalPool(rowName("gmp", c, pm), PoolKind::Max, r.rows, 1, r.cols, kReduce[pm]);
    EXPECT_LT(gputest::relError(gputest::runKernel(ctx, prog, m, {&X}, 1, mx.size()), mx), 1e-7)
        << m.name;
  }
}

TEST(GpuReduce, RejectsNonPowerOfTwoWorkGroups) {
  EXPECT_THROW(generateSoftmax("s", 2, 8, ReduceParams{.wgSize = 48}), Error);
  EXPECT_THROW(generateLayerNorm("l", 0, 8, 1e-5f, true), Error);
  GeneratedKernel k = generateLayerNorm("/encoder/ln_1", 4, 768, 1e-5f, true);
  EXPECT_EQ(k.params, (std::vector<std::string>{"X", "gamma", "beta", "Y"}));
  EXPECT_NE(k.source.find("rsqrt(var + 9.99999975e-06f)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("triad_work_group_sum"), std::string::npos);
}

} // namespace
} // namespace triad::gpu
