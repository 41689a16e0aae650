// OpenCL C kernel generators. Each function returns readable OpenCL C 1.2 source (no extensions,
// f32) for one layer: the kernel is named after the layer (kernelIdentifier; the layer name is
// untrusted and appears elsewhere only through escape::comment), commented with its shapes and
// parameters, and specialised for its static shapes (sizes are literals, edge checks are only
// emitted where a size is not a multiple of the tile). Tile sizes, register blocking, vector
// widths and work-group sizes are the fields of a parameter struct, so the auto-tuner
// (gpu/Tuner.h) can search them. Several generated kernels can go into one program
// (programSource): the fixed per-program cost of an OpenCL build is then paid once.
//
// Epilogue hook: GEMM and convolution take an Epilogue, a snippet of OpenCL C statements that
// rewrites `acc` (the float output value) before it is stored, with extra kernel parameters it
// may read (e.g. a bias buffer). This is where fused bias, activation and elementwise chains plug
// in. Each generator documents the index variables in scope.
#pragma once

#include "gpu/OpenCL.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace triad::gpu {

/// One generated kernel: self-contained source, its name, and how to launch it.
struct GeneratedKernel {
  std::string name;                // OpenCL kernel name (a C identifier from the layer name)
  std::string source;              // OpenCL C 1.2
  NDRange range;                   // launch geometry for the shape it was generated for
  std::vector<std::string> params; // kernel parameter names in order (buffers, then epilogue's)
  size_t localMemBytes = 0;        // static __local memory per work-group
};

/// One program from several kernels, with one banner. Helpers shared between kernels (work-group
/// reductions) are include-guarded, so any mix of kernels concatenates.
std::string programSource(std::span<const GeneratedKernel> kernels);
std::string programSource(const GeneratedKernel& kernel);

/// OpenCL C definitions of the scalar helpers (ir/ScalarExpr's OpenCL dialect: float16
/// conversions, integer Pow and Mod, float-to-integer casts) that `source` calls; programSource
/// puts them before the kernels.
std::string scalarHelpers(std::string_view source);

/// "/layer1/Conv" -> "layer1_Conv": escape::identifier (ir/Escape.h) of `layer`, prefixed "k_"
/// where it would be an OpenCL C built-in function, predefined macro or Triad helper, and
/// never ending like a kernel's helper or table ("_im2col", "_sel", "_s0"). At most
/// escape::kMaxIdentifier characters; kernelIdentifier(kernelIdentifier(x)) is itself. Two
/// layers may get the same identifier ("a/b", "a.b"): the code generator makes them distinct.
std::string kernelIdentifier(std::string_view layer);

/// Statements applied to each output value `acc` (float) before it is stored.
struct Epilogue {
  std::string code;                // e.g. "acc = fmax(acc + bias[col], 0.0f);"
  std::vector<std::string> params; // e.g. {"__global const float* restrict bias"}
  std::string description;         // for the kernel's comment, e.g. "bias + ReLU"
  bool empty() const { return code.empty(); }
};

/// Integer operands of a GEMM or convolution (QLinearConv, QLinearMatMul, MatMulInteger): A (the
/// weights W of a convolution) and B (its input X) are stored as 8- or 16-bit integers, shifted
/// by their zero points into int32 as they are loaded (padding contributes 0), and their
/// products summed in int32, as ONNX Runtime's accumulators do (exact while |sum| < 2^31: K up
/// to 33,000 for 8-bit operands). The epilogue then starts from `const int iacc` instead of the
/// float `acc`, and must declare `acc` of the output's type (the requantization). Tiled and
/// direct kernels only (not the panel kernels).
struct IntOperands {
  std::string aType = "char", bType = "uchar"; // OpenCL element types as stored
  std::string aShift, bShift;  // subtracted from each element; "" for none; may read a buffer
  std::string cType = "uchar"; // the output's element type
  /// Four products per step, one instruction where the device has cl_khr_integer_dot_product
  /// (dot of uchar4/char4), four multiplies where not: the weights come packed at compile time
  /// as words of four consecutive k (packInt8Words, pre-shifted to int8: their zero point is
  /// gone), the activations are gathered four bytes at a time as stored, unshifted, and the
  /// epilogue subtracts their zero point's products, `compensation` (x_zp * the weights' row
  /// sum, an expression of the epilogue's variables). The weights are A (convolution, packedA)
  /// or B (GEMM); vector width 1.
  bool dot4 = false;
  bool packedA = false;
  std::string compensation;
  std::string bPad = "0u"; // dot4: the activations' zero point's byte (the padding), a uint
  bool ptxDp4a = false;    // dot4 on NVIDIA (sm_61 and later): PTX's dp4a through inline asm
  /// "char x uchar -> int32 sums -> uchar", for the kernels' header comments.
  std::string describe() const;
  /// `element` converted to int and shifted by `shift` ("" for none): the plain form's load.
  static std::string shifted(const std::string& element, const std::string& shift);
};

/// Weights [rows][k] (int8 or uint8 bytes, row-major) shifted by `zeroPoint` into int8 and packed
/// as little-endian words of four consecutive k per row, the last word zero-padded: rows x
/// ceil(k/4) words, as float-sized slots for the weights buffer. Empty when some w - zeroPoint
/// leaves int8 (the dot4 form does not apply).
std::vector<float> packInt8Words(const uint8_t* w, bool isSigned, int64_t rows, int64_t k,
                                 int64_t zeroPoint);

// ---------------------------------------------------------------------------------------------
// GEMM: C[b][M,N] = op(A[b])[M,K] · op(B[b])[K,N], op = optional transpose.
// Kernel parameters: (A, B, C, epilogue params...). Epilogue variables: acc, row, col, batch.

struct GemmShape {
  int64_t M = 1, N = 1, K = 1;
  bool transA = false; // A is stored [K, M]
  bool transB = false; // B is stored [N, K]
  int64_t batch = 1;
  bool broadcastA = false; // one A for every batch (e.g. MatMul with a 2-D weight)
  bool broadcastB = false;
  /// Panel kernels only: B is stored in the panel layout of packGemmPanels (a constant packed
  /// once at compile time); else B is read as stored (it must then not be transposed).
  bool packedB = false;
  std::string toString() const; // "4x100x70x60 (AT)" = batch x M x N x K
};

/// Two kernels share these parameters:
///  - tiled (GPUs): a work-group stages tileM x tileK blocks of A and tileK x tileN blocks of B in
///    local memory; work-item (tx, ty) accumulates workM x workN outputs strided over the tile;
///  - panel (CPU devices, `panel`): no local memory and no barriers; each work-item computes a
///    contiguous workM x workN block in floatN registers, reading B as workN-wide rows of a
///    K x workN panel (weights packed once at compile time, packGemmPanels) and broadcasting A;
///    work-items (wgM x wgN per work-group) tile M along dim 0 and N along dim 1. tileK is 1.
struct GemmParams {
  int wgM = 8, wgN = 8;     // work-group size: wgN x wgM work-items (tiled: dim 0 runs along N)
  int workM = 4, workN = 4; // register tile: outputs per work-item (TM x TN)
  int tileK = 8;            // K step of the local-memory tiles
  int vectorWidth = 4; // 1, 2, 4, 8 or 16: B is read from local memory as floatN; divides workN
  bool panel = false;  // the CPU-device panel kernel (above)
  int tileM() const { return panel ? workM : wgM * workM; }
  int tileN() const { return panel ? workN : wgN * workN; }
  int workGroupSize() const { return wgM * wgN; }
  std::string toString() const; // "wg 8x8 work 4x4 k 8 vec 4", "panel wg 4x1 work 6x64 vec 16"
  bool operator==(const GemmParams&) const = default;
};

/// The panel kernel's parameters on a CPU device whose preferred float vector width is
/// `vectorWidth` (CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT): workM x (4 vectors) per work-item,
/// narrowed for small N.
GemmParams cpuPanelParams(int64_t N, int vectorWidth);

/// The widest floatN (4, 8 or 16) the GEMM kernels may use on `device`. On CPU devices
/// the SIMD width (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT; 4 when it says less, SSE and NEON have
/// float4): the kernels pass their vectors by value to builtins (vloadN, vstoreN, mad), and a
/// vector wider than the vector registers changes the x86-64 calling convention, which PoCL's
/// clang reports ("AVX vector argument of type 'float16' without 'avx512f' enabled changes
/// the ABI") and -Werror makes an error. Other devices: 16 (a GPU's native width is often 1,
/// yet its vector loads from local memory are faster).
int maxVectorWidth(const DeviceInfo& device);

/// True when `params` build on `device`: vectorWidth <= maxVectorWidth(device).
bool gemmParamsFit(const GemmParams& params, const DeviceInfo& device);

/// cpuPanelParams for a CPU device: its preferred float vector width, at most maxVectorWidth.
GemmParams cpuPanelParams(int64_t N, const DeviceInfo& device);

/// Throws ErrorKind::Usage naming the parameter at fault.
void validateGemmParams(const GemmParams& p);

GeneratedKernel generateGemm(std::string_view layer, const GemmShape& shape,
                             const GemmParams& params = {}, const Epilogue& epilogue = {},
                             const IntOperands* integer = nullptr);

/// B of `shape` (as stored: [batches][K,N], or [batches][N,K] with transB; one batch when
/// broadcastB) in the panel layout the panel kernel reads: per batch, ceil(N / panelWidth)
/// panels of K rows x panelWidth columns, zero past N.
std::vector<float> packGemmPanels(const float* b, const GemmShape& shape, int panelWidth);

// ---------------------------------------------------------------------------------------------
// 2-D convolution, NCHW: Y[N,K,OH,OW] = X[N,C,H,W] * W[K,C/group,R,S] (stride, pads, dilation,
// groups; group == C == K is depthwise). Kernel parameters: (X, W, Y, epilogue params...).
// Epilogue variables: acc, n, k (output channel), oh, ow.

struct ConvShape {
  int64_t N = 1, C = 1, H = 1, W = 1; // input
  int64_t K = 1, R = 1, S = 1;        // output channels, kernel height and width
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilationH = 1, dilationW = 1;
  int64_t group = 1;
  int64_t outH() const;
  int64_t outW() const;
  bool depthwise() const { return group > 1 && group == C && group == K; }
  std::string toString() const;
  void validate() const; // ErrorKind::Usage on inconsistent sizes
};

/// Direct convolution: each work-item computes blockK output channels x workW output columns
/// of one output row.
struct ConvParams {
  int blockK = 4; // output channels per work-item (clamped to the channels per group)
  int workW = 4;  // output columns per work-item
  int wgW = 8, wgH = 4;
  std::string toString() const;
};

GeneratedKernel generateConv2D(std::string_view layer, const ConvShape& shape,
                               const ConvParams& params = {}, const Epilogue& epilogue = {},
                               const IntOperands* integer = nullptr);

/// Implicit-GEMM convolution: per (image, group), Y[Kg, OH*OW] = W[Kg, Cg*R*S] · im2col(X), with
/// the im2col matrix never stored (the GEMM's B tile is gathered from X). Same parameters and
/// epilogue variables as generateConv2D. With `params.panel` (CPU devices) the product is
/// transposed, Y^T[OH*OW, Kg] = im2col(X)^T · W^T: each work-item gathers workM output pixels'
/// inputs and broadcasts them against workN output channels of W, which the kernel then reads
/// packed (packConvWeights with params.workN), not as stored.
GeneratedKernel generateConv2DImplicitGemm(std::string_view layer, const ConvShape& shape,
                                           const GemmParams& params = {},
                                           const Epilogue& epilogue = {},
                                           const IntOperands* integer = nullptr);

/// The product the panel convolution computes per image and group: M = output pixels, N =
/// output channels, K = Cg*R*S, B = W^T (W stored [Kg, Cg*R*S], so transB), one B per group.
GemmShape panelConvShape(const ConvShape& shape);

/// W[K, C/group, R, S] in the panel layout of the panel convolution: per group, the panels of
/// W^T[Cg*R*S, Kg] (packGemmPanels), `panelWidth` output channels wide.
std::vector<float> packConvWeights(const float* w, const ConvShape& shape, int panelWidth);

// ---------------------------------------------------------------------------------------------
// Pooling, NCHW. Kernel parameters: (X, Y).

enum class PoolKind { Max, Avg };

struct PoolShape {
  PoolKind kind = PoolKind::Max;
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t kernelH = 1, kernelW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilationH = 1, dilationW = 1;
  bool ceilMode = false;
  bool countIncludePad = false; // AveragePool: divide by the window inside the padded input
  int64_t outH() const;
  int64_t outW() const;
  std::string toString() const;
};

struct PoolParams {
  int wgSize = 64; // 1-D work-groups over output elements
};

GeneratedKernel generatePool2D(std::string_view layer, const PoolShape& shape,
                               const PoolParams& params = {});

/// Work-group reductions: one work-group per row; wgSize work-items (a power of two) stride
/// over the row, then reduce in local memory.
struct ReduceParams {
  int wgSize = 64;
  std::string toString() const;
};

/// GlobalAveragePool / GlobalMaxPool: Y[N,C,1,1] from X[N,C,spatial]. Parameters: (X, Y).
GeneratedKernel generateGlobalPool(std::string_view layer, PoolKind kind, int64_t N, int64_t C,
                                   int64_t spatial, const ReduceParams& params = {});

/// Softmax over the last axis of X[rows, cols]. Parameters: (X, Y).
GeneratedKernel generateSoftmax(std::string_view layer, int64_t rows, int64_t cols,
                                const ReduceParams& params = {});

/// LayerNormalization over the last axis: Y = (X - mean) / sqrt(var + epsilon) * gamma + beta.
/// Parameters: (X, gamma, beta, Y), or (X, gamma, Y) without bias; with `statistics` also
/// Mean[rows] and InvStdDev[rows] (ONNX's optional outputs) at the end.
GeneratedKernel generateLayerNorm(std::string_view layer, int64_t rows, int64_t cols, float epsilon,
                                  bool hasBeta, const ReduceParams& params = {},
                                  bool statistics = false);

// ---------------------------------------------------------------------------------------------
// Elementwise: Y[outShape] = body(inputs...), each input broadcast to outShape (NumPy rules:
// shapes aligned on the right, size-1 dimensions repeat). Parameters: one per input, named
// "<name>_data", then Y. In `body` each input is a float variable with its own name.

struct ElementwiseInput {
  std::string name; // a C identifier, used in the body
  std::vector<int64_t> shape;
  std::string type = "float"; // OpenCL C element type of the buffer (float, long, uchar, ...)
};

struct ElementwiseParams {
  int wgSize = 64;
  int itemsPerThread = 4; // outputs per work-item (strided by the global size)
  std::string toString() const;
};

GeneratedKernel generateElementwise(std::string_view layer, const std::vector<int64_t>& outShape,
                                    const std::vector<ElementwiseInput>& inputs,
                                    std::string_view body, const ElementwiseParams& params = {});

/// A fused chain of elementwise ops: `statements` (OpenCL C, one per op, e.g.
/// "const float t1 = x * scale;") run per output element with every input loaded into a
/// variable of its name and type, then `result` is stored to Y (of type `outType`). Same
/// broadcasting, parameters and launch as generateElementwise (which is the one-expression case).
struct ElementwiseChain {
  std::vector<int64_t> outShape;
  std::string outType = "float";
  std::vector<ElementwiseInput> inputs;
  std::vector<std::string> statements;
  std::string result;      // expression stored to Y[idx]
  std::string description; // for the kernel comment (default: the result expression)
};

GeneratedKernel generateElementwiseChain(std::string_view layer, const ElementwiseChain& chain,
                                         const ElementwiseParams& params = {});

} // namespace triad::gpu
