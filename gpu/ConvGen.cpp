// Direct 2-D convolution (incl. grouped and depthwise) and 2-D pooling generators, NCHW.
#include "gpu/CodeWriter.h"
#include "gpu/KernelGen.h"

#include <algorithm>

namespace triad::gpu {

// ---------------------------------------------------------------------------------------------
// Shapes

int64_t ConvShape::outH() const {
  return (H + padTop + padBottom - dilationH * (R - 1) - 1) / strideH + 1;
}
int64_t ConvShape::outW() const {
  return (W + padLeft + padRight - dilationW * (S - 1) - 1) / strideW + 1;
}

std::string ConvShape::toString() const {
  return fmt::format("X[{},{},{},{}] * W[{},{},{},{}] -> Y[{},{},{},{}], stride {}x{}, pads "
                     "(t{} l{} b{} r{}), dilation {}x{}, group {}{}",
                     N, C, H, W, K, group > 0 ? C / group : C, R, S, N, K, outH(), outW(), strideH,
                     strideW, padTop, padLeft, padBottom, padRight, dilationH, dilationW, group,
                     depthwise() ? " (depthwise)" : "");
}

void ConvShape::validate() const {
  if (N < 1 || C < 1 || H < 1 || W < 1 || K < 1 || R < 1 || S < 1 || strideH < 1 || strideW < 1 ||
      dilationH < 1 || dilationW < 1 || group < 1 || padTop < 0 || padLeft < 0 || padBottom < 0 ||
      padRight < 0)
    fail(ErrorKind::Usage, "convolution {}: sizes, strides and dilations must be positive",
         toString());
  if (C % group != 0 || K % group != 0)
    fail(ErrorKind::Usage, "convolution: group {} does not divide channels in {} / out {}", group,
         C, K);
  if (outH() < 1 || outW() < 1)
    fail(ErrorKind::Usage, "convolution {}: the kernel does not fit the padded input", toString());
  if (N * K * outH() * outW() >= (int64_t(1) << 31) || N * C * H * W >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "convolution {}: tensors exceed 32-bit indexing", toString());
}

std::string ConvParams::toString() const {
  return fmt::format("blockK {} workW {} wg {}x{}", blockK, workW, wgW, wgH);
}

// ---------------------------------------------------------------------------------------------
// Direct convolution

GeneratedKernel generateConv2D(std::string_view layer, const ConvShape& s, const ConvParams& p,
                               const Epilogue& epi, const IntOperands* integer) {
  s.validate();
  if (integer && epi.code.empty())
    fail(ErrorKind::Usage, "convolution '{}': integer operands need an epilogue declaring acc",
         layer);
  // Float, or integers shifted by their zero points and summed in int32 (IntOperands).
  const std::string scalar = integer ? "int" : "float", zero = integer ? "0" : "0.0f";
  auto load = [&](const std::string& element, bool isX) {
    return integer ? IntOperands::shifted(element, isX ? integer->bShift : integer->aShift)
                   : element;
  };
  if (p.blockK < 1 || p.workW < 1 || p.wgW < 1 || p.wgH < 1 || p.blockK * p.workW > 256)
    fail(ErrorKind::Usage, "convolution '{}': invalid parameters {}", layer, p.toString());
  const int64_t OH = s.outH(), OW = s.outW(), G = s.group;
  const int64_t Cg = s.C / G, Kg = s.K / G;
  const int64_t BK = std::min<int64_t>(p.blockK, Kg);
  const int64_t kBlocks = ceilDiv(Kg, BK);
  const int64_t wBlocks = ceilDiv(OW, p.workW);

  GeneratedKernel k;
  k.name = kernelIdentifier(layer);
  k.range.dims = 3;
  k.range.global = {size_t(roundUp(wBlocks, p.wgW)), size_t(roundUp(OH, p.wgH)),
                    size_t(s.N * G * kBlocks)};
  k.range.local = {size_t(p.wgW), size_t(p.wgH), 1};
  k.params = {"X", "W", "Y"};
  std::vector<std::string> decls = {
      fmt::format("__global const {}* restrict X", integer ? integer->bType : "float"),
      fmt::format("__global const {}* restrict W", integer ? integer->aType : "float"),
      fmt::format("__global {}* restrict Y", integer ? integer->cType : "float")};
  appendParams(epi.params, decls, k.params);
  const bool padded = s.padTop || s.padLeft || s.padBottom || s.padRight;
  // Without padding, every tap of an in-range output lies inside the input.
  const bool checkIH = padded, checkIW = padded;

  CodeWriter w;
  w.line("// Layer: {} (Conv, direct{}), {}", escape::comment(layer),
         s.depthwise() ? ", depthwise" : "",
         integer ? integer->describe() : "f32");
  w.line("//   {}", s.toString());
  w.line("//   X stored [N,C,H,W], W stored [K,C/group,R,S], Y stored [N,K,OH,OW]");
  w.line("// Blocking: {}: each work-item computes {} output channel(s) x {} output column(s)",
         p.toString(), BK, p.workW);
  w.line("//   of one output row; dim 0 = column blocks, dim 1 = rows, dim 2 = image x group x "
         "channel block.");
  w.line("// Epilogue: {}", describeEpilogue(epi.code, epi.description));
  w.line("// Launch: {}.", k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, {}, 1)))", p.wgW, p.wgH);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(decls, int(head.size())));
  w.line("const int C = {}, H = {}, W_IN = {}, K = {}, OH = {}, OW = {};", s.C, s.H, s.W, s.K, OH,
         OW);
  w.line("const int CG = {}, KG = {}; // channels per group in / out", Cg, Kg);
  w.line("const int ow0 = get_global_id(0) * {};", p.workW);
  w.line("const int oh = get_global_id(1);");
  w.line("const int z = get_global_id(2);");
  w.line("const int kb = z % {}, g = (z / {}) % {}, n = z / {};", kBlocks, kBlocks, G, kBlocks * G);
  w.line("if (oh >= OH || ow0 >= OW) return;");
  w.line("const int kg0 = kb * {}; // first output channel of this block, within the group", BK);
  w.line("{} sums[{}][{}];", scalar, BK, p.workW);
  w.line("for (int kk = 0; kk < {}; ++kk)", BK);
  w.line("  for (int j = 0; j < {}; ++j) sums[kk][j] = {};", p.workW, zero);
  w.open("for (int c = 0; c < CG; ++c)");
  w.line("__global const {}* x = X + ((n * C + g * CG + c) * H) * W_IN;",
         integer ? integer->bType : "float");
  w.line("__global const {}* wt = W + ((g * KG + kg0) * CG + c) * {};",
         integer ? integer->aType : "float", s.R * s.S);
  w.open("for (int r = 0; r < {}; ++r)", s.R);
  w.line("const int ih = oh * {} - {} + r * {};", s.strideH, s.padTop, s.dilationH);
  if (checkIH) w.line("if (ih < 0 || ih >= H) continue;");
  w.open("for (int s = 0; s < {}; ++s)", s.S);
  w.line("{} xv[{}];", scalar, p.workW);
  w.open("for (int j = 0; j < {}; ++j)", p.workW);
  w.line("const int iw = (ow0 + j) * {} - {} + s * {};", s.strideW, s.padLeft, s.dilationW);
  // Columns past OW (the last block) may index past the row: clamp them into range.
  const std::string xe = load("x[ih * W_IN + iw]", true);
  if (checkIW)
    w.line("xv[j] = (iw >= 0 && iw < W_IN) ? {} : {};", xe, zero);
  else if (OW % p.workW != 0)
    w.line("xv[j] = iw < W_IN ? {} : {};", xe, zero);
  else
    w.line("xv[j] = {};", xe);
  w.close();
  w.open("for (int kk = 0; kk < {}; ++kk)", BK);
  if (Kg % BK != 0) w.line("if (kg0 + kk >= KG) break;");
  w.line("const {} wv = {};", scalar,
         load(fmt::format("wt[kk * {} + r * {} + s]", Cg * s.R * s.S, s.S), false));
  if (integer)
    w.line("for (int j = 0; j < {}; ++j) sums[kk][j] += wv * xv[j];", p.workW);
  else
    w.line("for (int j = 0; j < {}; ++j) sums[kk][j] = mad(wv, xv[j], sums[kk][j]);", p.workW);
  w.close();
  w.close();
  w.close();
  w.close();
  w.line("// Epilogue and store.");
  w.open("for (int kk = 0; kk < {}; ++kk)", BK);
  if (Kg % BK != 0) w.line("if (kg0 + kk >= KG) break;");
  w.line("const int k = g * KG + kg0 + kk;");
  w.open("for (int j = 0; j < {}; ++j)", p.workW);
  w.line("const int ow = ow0 + j;");
  if (OW % p.workW != 0) w.line("if (ow >= OW) break;");
  w.line("{}", integer ? "const int iacc = sums[kk][j];" : "float acc = sums[kk][j];");
  if (!epi.code.empty()) w.lines(epi.code);
  w.line("Y[((n * K + k) * OH + oh) * OW + ow] = acc;");
  w.close();
  w.close();
  w.close();
  k.source = w.str();
  return k;
}

// ---------------------------------------------------------------------------------------------
// Pooling

namespace {

int64_t pooledSize(int64_t in, int64_t k, int64_t stride, int64_t padBegin, int64_t padEnd,
                   int64_t dilation, bool ceilMode) {
  int64_t span = in + padBegin + padEnd - dilation * (k - 1) - 1;
  int64_t out = (ceilMode ? ceilDiv(span, stride) : span / stride) + 1;
  // In ceil mode the last window must start inside the input or its leading padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin) --out;
  return out;
}

} // namespace

int64_t PoolShape::outH() const {
  return pooledSize(H, kernelH, strideH, padTop, padBottom, dilationH, ceilMode);
}
int64_t PoolShape::outW() const {
  return pooledSize(W, kernelW, strideW, padLeft, padRight, dilationW, ceilMode);
}

std::string PoolShape::toString() const {
  return fmt::format("{}Pool X[{},{},{},{}] -> Y[{},{},{},{}], kernel {}x{}, stride {}x{}, pads "
                     "(t{} l{} b{} r{}), dilation {}x{}{}{}",
                     kind == PoolKind::Max ? "Max" : "Average", N, C, H, W, N, C, outH(), outW(),
                     kernelH, kernelW, strideH, strideW, padTop, padLeft, padBottom, padRight,
                     dilationH, dilationW, ceilMode ? ", ceil mode" : "",
                     kind == PoolKind::Avg && countIncludePad ? ", count_include_pad" : "");
}

GeneratedKernel generatePool2D(std::string_view layer, const PoolShape& s, const PoolParams& p) {
  if (s.N < 1 || s.C < 1 || s.H < 1 || s.W < 1 || s.kernelH < 1 || s.kernelW < 1 || s.strideH < 1 ||
      s.strideW < 1 || s.dilationH < 1 || s.dilationW < 1 || s.padTop < 0 || s.padLeft < 0 ||
      s.padBottom < 0 || s.padRight < 0 || s.outH() < 1 || s.outW() < 1)
    fail(ErrorKind::Usage, "pooling '{}': invalid shape {}", layer, s.toString());
  if (p.wgSize < 1) fail(ErrorKind::Usage, "pooling '{}': work-group size must be >= 1", layer);
  const int64_t OH = s.outH(), OW = s.outW();
  const int64_t total = s.N * s.C * OH * OW;
  if (total >= (int64_t(1) << 31) || s.N * s.C * s.H * s.W >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "pooling '{}': tensors exceed 32-bit indexing", layer);
  const bool isMax = s.kind == PoolKind::Max;

  GeneratedKernel k;
  k.name = kernelIdentifier(layer);
  k.range.dims = 1;
  k.range.global = {size_t(roundUp(total, p.wgSize)), 1, 1};
  k.range.local = {size_t(p.wgSize), 1, 1};
  k.params = {"X", "Y"};

  CodeWriter w;
  w.line("// Layer: {} ({}Pool), f32", escape::comment(layer), isMax ? "Max" : "Average");
  w.line("//   {}", s.toString());
  w.line("// One work-item per output element; launch: {}.", k.range.toString());
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", p.wgSize);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}__global const float* restrict X,\n{}__global float* restrict Y)", head,
         std::string(head.size(), ' '));
  w.line("const int H = {}, W = {}, OH = {}, OW = {};", s.H, s.W, OH, OW);
  w.line("const int idx = get_global_id(0);");
  w.line("if (idx >= {}) return;", total);
  w.line("const int ow = idx % OW, oh = (idx / OW) % OH, nc = idx / (OH * OW);");
  w.line("__global const float* x = X + nc * H * W;");
  w.line("const int h0 = oh * {} - {}, w0 = ow * {} - {};", s.strideH, s.padTop, s.strideW,
         s.padLeft);
  w.line("float acc = {};", isMax ? "-INFINITY" : "0.0f");
  if (!isMax) w.line("int count = 0;");
  w.open("for (int r = 0; r < {}; ++r)", s.kernelH);
  w.line("const int ih = h0 + r * {};", s.dilationH);
  w.line("if (ih < 0 || ih >= H) continue;");
  w.open("for (int c = 0; c < {}; ++c)", s.kernelW);
  w.line("const int iw = w0 + c * {};", s.dilationW);
  w.line("if (iw < 0 || iw >= W) continue;");
  if (isMax) {
    w.line("acc = fmax(acc, x[ih * W + iw]);");
  } else {
    w.line("acc += x[ih * W + iw];");
    w.line("++count;");
  }
  w.close();
  w.close();
  if (!isMax) {
    if (s.countIncludePad) {
      // The divisor counts the window positions inside the padded input (not past its pads).
      w.line("const int hs = max(h0, -{}), he = min(h0 + {}, H + {});", s.padTop,
             (s.kernelH - 1) * s.dilationH + 1, s.padBottom);
      w.line("const int ws = max(w0, -{}), we = min(w0 + {}, W + {});", s.padLeft,
             (s.kernelW - 1) * s.dilationW + 1, s.padRight);
      w.line("const int padded = ((he - hs + {} - 1) / {}) * ((we - ws + {} - 1) / {});",
             s.dilationH, s.dilationH, s.dilationW, s.dilationW);
      w.line("acc = acc / (float)padded;");
    } else {
      w.line("acc = count > 0 ? acc / (float)count : 0.0f;");
    }
  }
  w.line("Y[idx] = acc;");
  w.close();
  k.source = w.str();
  return k;
}

} // namespace triad::gpu
