// Row reductions with work-group reductions in local memory: softmax and layer normalization
// over the last axis, global average / max pooling. One work-group per row; its work-items
// stride over the row's columns, then combine their partial results in local memory.
#include "gpu/CodeWriter.h"
#include "gpu/KernelGen.h"

namespace triad::gpu {

std::string ReduceParams::toString() const {
  return fmt::format("wg {}", wgSize);
}

namespace {

void checkRows(std::string_view what, std::string_view layer, int64_t rows, int64_t cols,
               const ReduceParams& p) {
  if (p.wgSize < 1 || p.wgSize > 4096 || (p.wgSize & (p.wgSize - 1)) != 0)
    fail(ErrorKind::Usage, "{} '{}': work-group size {} is not a power of two in [1, 4096]", what,
         layer, p.wgSize);
  if (rows < 1 || cols < 1)
    fail(ErrorKind::Usage, "{} '{}': rows ({}) and columns ({}) must be positive", what, layer,
         rows, cols);
  if (rows * cols >= (int64_t(1) << 31) || rows * p.wgSize >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "{} '{}': {}x{} exceeds 32-bit indexing", what, layer, rows, cols);
}

GeneratedKernel rowKernel(std::string_view layer, int64_t rows, const ReduceParams& p) {
  GeneratedKernel k;
  k.name = kernelIdentifier(layer);
  k.range.dims = 1;
  k.range.global = {size_t(rows * p.wgSize), 1, 1};
  k.range.local = {size_t(p.wgSize), 1, 1};
  k.localMemBytes = size_t(p.wgSize) * sizeof(float);
  return k;
}

void rowPrologue(CodeWriter& w, const ReduceParams& p) {
  w.line("__local float scratch[{}];", p.wgSize);
  w.line("const int row = get_group_id(0), lid = get_local_id(0);");
}

} // namespace

GeneratedKernel generateSoftmax(std::string_view layer, int64_t rows, int64_t cols,
                                const ReduceParams& p) {
  checkRows("softmax", layer, rows, cols, p);
  GeneratedKernel k = rowKernel(layer, rows, p);
  k.params = {"X", "Y"};
  CodeWriter w;
  w.lines(workGroupReduceHelpers());
  w.blank();
  w.line("// Layer: {} (Softmax over the last axis), f32", escape::comment(layer));
  w.line("//   Y[{},{}] = exp(X - max) / sum(exp(X - max)), per row", rows, cols);
  w.line("// One work-group of {} work-items per row; launch: {}.", p.wgSize, k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", p.wgSize);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}__global const float* restrict X,\n{}__global float* restrict Y)", head,
         std::string(head.size(), ' '));
  rowPrologue(w, p);
  w.line("__global const float* x = X + row * {};", cols);
  w.line("__global float* y = Y + row * {};", cols);
  w.line("float m = -INFINITY;");
  w.line("for (int c = lid; c < {}; c += {}) m = fmax(m, x[c]);", cols, p.wgSize);
  w.line("m = triad_work_group_max(m, scratch);");
  w.line("float sum = 0.0f;");
  w.open("for (int c = lid; c < {}; c += {})", cols, p.wgSize);
  w.line("const float e = exp(x[c] - m);");
  w.line("y[c] = e;");
  w.line("sum += e;");
  w.close();
  w.line("sum = triad_work_group_sum(sum, scratch);");
  w.line("const float inv = 1.0f / sum;");
  w.line("for (int c = lid; c < {}; c += {}) y[c] *= inv;", cols, p.wgSize);
  w.close();
  k.source = w.str();
  return k;
}

GeneratedKernel generateLayerNorm(std::string_view layer, int64_t rows, int64_t cols, float epsilon,
                                  bool hasBeta, const ReduceParams& p, bool statistics) {
  checkRows("layer normalization", layer, rows, cols, p);
  GeneratedKernel k = rowKernel(layer, rows, p);
  k.params = hasBeta ? std::vector<std::string>{"X", "gamma", "beta", "Y"}
                     : std::vector<std::string>{"X", "gamma", "Y"};
  if (statistics) {
    k.params.push_back("Mean");
    k.params.push_back("InvStdDev");
  }
  CodeWriter w;
  w.lines(workGroupReduceHelpers());
  w.blank();
  w.line("// Layer: {} (LayerNormalization over the last axis), f32", escape::comment(layer));
  w.line("//   Y[{},{}] = (X - mean) / sqrt(var + {}) * gamma[{}]{}, per row (two-pass variance)",
         rows, cols, floatLiteral(epsilon), cols, hasBeta ? fmt::format(" + beta[{}]", cols) : "");
  w.line("// One work-group of {} work-items per row; launch: {}.", p.wgSize, k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", p.wgSize);
  std::string head = fmt::format("void {}(", k.name);
  std::string pad(head.size(), ' ');
  w.open("{}__global const float* restrict X,\n{}__global const float* restrict gamma,\n{}{}"
         "__global float* restrict Y{})",
         head, pad, hasBeta ? pad + "__global const float* restrict beta,\n" : "", pad,
         statistics ? fmt::format(",\n{0}__global float* restrict Mean,\n{0}__global float* "
                                  "restrict InvStdDev",
                                  pad)
                    : "");
  rowPrologue(w, p);
  w.line("__global const float* x = X + row * {};", cols);
  w.line("__global float* y = Y + row * {};", cols);
  w.line("float sum = 0.0f;");
  w.line("for (int c = lid; c < {}; c += {}) sum += x[c];", cols, p.wgSize);
  w.line("const float mean = triad_work_group_sum(sum, scratch) / {};", floatLiteral(float(cols)));
  w.line("float sq = 0.0f;");
  w.open("for (int c = lid; c < {}; c += {})", cols, p.wgSize);
  w.line("const float d = x[c] - mean;");
  w.line("sq = mad(d, d, sq);");
  w.close();
  w.line("const float var = triad_work_group_sum(sq, scratch) / {};", floatLiteral(float(cols)));
  w.line("const float inv = rsqrt(var + {});", floatLiteral(epsilon));
  if (statistics) {
    w.open("if (lid == 0)");
    w.line("Mean[row] = mean;");
    w.line("InvStdDev[row] = inv;");
    w.close();
  }
  w.line("for (int c = lid; c < {}; c += {}) y[c] = (x[c] - mean) * inv * gamma[c]{};", cols,
         p.wgSize, hasBeta ? " + beta[c]" : "");
  w.close();
  k.source = w.str();
  return k;
}

GeneratedKernel generateGlobalPool(std::string_view layer, PoolKind kind, int64_t N, int64_t C,
                                   int64_t spatial, const ReduceParams& p) {
  const bool isMax = kind == PoolKind::Max;
  checkRows(isMax ? "global max pooling" : "global average pooling", layer, N * C, spatial, p);
  GeneratedKernel k = rowKernel(layer, N * C, p);
  k.params = {"X", "Y"};
  CodeWriter w;
  w.lines(workGroupReduceHelpers());
  w.blank();
  w.line("// Layer: {} (Global{}Pool), f32", escape::comment(layer), isMax ? "Max" : "Average");
  w.line("//   X[{},{},{} spatial] -> Y[{},{},1,1]", N, C, spatial, N, C);
  w.line("// One work-group of {} work-items per (image, channel); launch: {}.", p.wgSize,
         k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", p.wgSize);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}__global const float* restrict X,\n{}__global float* restrict Y)", head,
         std::string(head.size(), ' '));
  rowPrologue(w, p);
  w.line("__global const float* x = X + row * {};", spatial);
  if (isMax) {
    w.line("float m = -INFINITY;");
    w.line("for (int i = lid; i < {}; i += {}) m = fmax(m, x[i]);", spatial, p.wgSize);
    w.line("m = triad_work_group_max(m, scratch);");
    w.line("if (lid == 0) Y[row] = m;");
  } else {
    w.line("float sum = 0.0f;");
    w.line("for (int i = lid; i < {}; i += {}) sum += x[i];", spatial, p.wgSize);
    w.line("sum = triad_work_group_sum(sum, scratch);");
    w.line("if (lid == 0) Y[row] = sum / {};", floatLiteral(float(spatial)));
  }
  w.close();
  k.source = w.str();
  return k;
}

} // namespace triad::gpu
