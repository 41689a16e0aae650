// The GPU code generator: an IR graph becomes ONE OpenCL C program (PoCL and most drivers pay a
// fixed cost per program build, so every kernel of a model goes into the same one).
//
// The graph is cut into fusion groups with the GPU policy (ir/Fusion), every materialized value
// gets a place from the shared memory plan (ir/MemoryPlan), and each group becomes one kernel
// named after its layers:
//   - anchors (Gemm, MatMul, Conv) use the tiled GEMM / direct / implicit-GEMM convolution
//     generators of gpu/KernelGen.h with the group's elementwise tail fused into the epilogue
//     (scalar math from ir/ScalarExpr),
//   - elementwise chains become one kernel (generateElementwiseChain),
//   - pooling, global pooling, softmax, layer normalization use their generators, data movement
//     (Transpose, Slice, Concat, Split, Gather, Expand, BatchNormalization) is emitted here,
//   - view ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) emit nothing,
//   - nodes without a GPU lowering become host steps: the executable reads their inputs back,
//     runs the reference kernel (ir::evalNode) and writes the outputs.
//
// Buffers: one arena (every intermediate, at the plan's offsets), one weights buffer (every
// constant, uploaded once), one buffer per graph input and per graph output. Kernels take only
// the model buffers they touch, as `__global uchar*` bases, and find their operands at byte
// offsets baked into the source as constants (`A = (__global const float*)(triad_weights +
// 4096)`), so their arguments are set once, at compile time.
//
// Names: a model's strings are untrusted (ir/Escape.h). Kernel names are kernelIdentifier()s
// made distinct by one escape::Uniquer per program ("a/b" and "a.b" give a_b and a_b_2), input
// variables likewise per kernel; graph, node and value names appear only in comments, through
// escape::comment (no newline, splice or comment terminator survives).
#pragma once

#include "gpu/KernelGen.h"
#include "gpu/OpenCL.h"
#include "gpu/Tuner.h"
#include "ir/Fusion.h"
#include "ir/MemoryPlan.h"
#include "ir/ScalarExpr.h"
#include "ir/Target.h"

#include <optional>
#include <string>
#include <vector>

namespace triad::gpu {

struct GpuCodeGenOptions {
  bool fuse = true;                   // form fusion groups (off: one group per node)
  const DeviceInfo* device = nullptr; // tuned parameters and work-group limits, when known
  const TuningDb* tuning = nullptr;   // parameters of GEMM/conv shapes tuned on `device`
  size_t maxWorkGroupSize = 256;      // upper bound for generated work-group sizes
};

/// Model buffers, by index: 0 the arena, 1 the weights, then graph inputs, then graph outputs.
struct BufferRef {
  int buffer = -1;    // model buffer index; -1: not materialized
  int64_t offset = 0; // bytes
};

/// One step of a compiled model: a kernel launch or a node run on the host.
struct GpuStep {
  std::string layer;                  // the fusion group's name ("conv1..relu1")
  std::string kernel;                 // kernel name in the program; empty for a host step
  std::string kind;                   // "gemm", "conv (implicit GEMM)", "elementwise", "host", ...
  NDRange range;                      // launch geometry
  std::vector<int> buffers;           // model buffer index of each kernel argument
  std::vector<const ir::Node*> nodes; // the group's nodes
  const ir::Node* hostNode = nullptr; // host steps: the node to evaluate
  std::string hostReason;             // why it has no GPU lowering
  std::optional<GemmShape> gemm;      // GEMM-shaped kernels: the shape (tuning key)
  std::optional<ConvShape> conv;      // implicit-GEMM convolutions: the shape (tuning key)
  std::string params;                 // the generator parameters used ("wg 8x8 work 4x4 ...")
  /// Kernels that check run-time data (indices read from tensors): their slot in the status
  /// buffer, which the kernel sets to 1 when the check fails, and what failed.
  int checkSlot = -1;
  std::string checkWhat;
};

struct GpuProgram {
  std::string source;           // the OpenCL C program
  std::vector<GpuStep> steps;   // in execution order
  std::vector<uint8_t> weights; // constants, each at a 64-byte aligned offset
  std::vector<BufferRef> where; // by Value::id: where the value lives
  int64_t arenaBytes = 0;
  int64_t unsharedBytes = 0;
  int inPlace = 0, views = 0;
  size_t groups = 0, nodes = 0, kernels = 0, hostSteps = 0, tunedKernels = 0;
  std::string fusionSummary;
  std::vector<std::string> bufferNames; // by model buffer index
  std::vector<size_t> bufferBytes;      // by model buffer index
  /// The status buffer (one int per checking step, zeroed before every run and read after it;
  /// model buffer index 2 + inputs + outputs), or -1 when no kernel checks run-time data.
  int statusBuffer = -1;
  size_t checkSlots = 0;
};

GpuProgram generateOpenCL(const ir::Graph& g, const GpuCodeGenOptions& opts = {});

/// Whether the GPU target compiles `n` into a kernel (else the host runs it), with the reason.
ir::Support gpuSupport(const ir::Node& n);

/// The GPU fusion policy: Gemm/MatMul/Conv anchor epilogues; elementwise ops with a scalar
/// expression (and Expand) fuse.
ir::FusionPolicy gpuFusionPolicy();

/// What elementwise kernels compute (ir::ScalarTypes): everything, float16 in float through the
/// scalar helpers; float64 and double math only on devices with cl_khr_fp64 (elsewhere those
/// nodes run on the host).
ir::ScalarTypes gpuScalarTypes();

/// The OpenCL C type of an element type ("float", "long", "uchar" for bool, ...).
std::string clTypeName(ir::DType t);

/// The implicit-GEMM convolution is used for this shape (else the direct one).
bool useImplicitGemm(const ConvShape& s);

/// The GEMM shape of an implicit-GEMM convolution (its tuning key: per image and group, M =
/// output channels, N = output pixels, K = input channels x kernel taps).
GemmShape implicitGemmShape(const ConvShape& s);

} // namespace triad::gpu
