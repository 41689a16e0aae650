// Graph passes and the pass manager shared by every target.
//
// A pass rewrites an ir::Graph in place and says whether it changed anything. The manager runs
// a pipeline, verifies the graph after every pass that changed it (a failure there is a bug in
// that pass, reported with its name), can print the IR after all or some passes, and times each.
#pragma once

#include "ir/Graph.h"
#include "ir/passes/Folding.h"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace triad::ir {

class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  /// Rewrites `g`; returns true when it changed anything.
  virtual bool run(Graph& g) = 0;
};

struct PassOptions {
  bool verify = true;
  bool printAfterAll = false;
  std::set<std::string> printAfter; // pass names
  /// Where printed IR goes (default: stdout).
  std::function<void(std::string_view)> print;
};

struct PassRecord {
  std::string name;
  bool changed = false;
  double milliseconds = 0;
};

class PassManager {
public:
  PassManager& add(std::unique_ptr<Pass> p);
  /// Runs the pipeline; throws triad::Error(Internal) naming the pass when verification fails.
  std::vector<PassRecord> run(Graph& g, const PassOptions& opts = {}) const;
  std::vector<std::string> names() const;

private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

// The passes (one file each in ir/passes/).
std::unique_ptr<Pass> createRemoveIdentityPass(); // Identity, inference Dropout, zero Pad
/// Nodes computable ahead of run time become constants (Folding.h: size guard, Shape chains).
std::unique_ptr<Pass> createConstantFoldPass(int64_t maxGrowthElements = kMaxFoldGrowthElements);
/// Common subexpressions: identical constants, then nodes of the same kind, attributes and inputs.
std::unique_ptr<Pass> createCsePass();
std::unique_ptr<Pass> createFoldBatchNormPass(); // BatchNormalization into Conv/Gemm
/// MatMul by a constant [K,N] followed by Add of a constant [N] bias -> Gemm (Reshapes around
/// it when the activation has rank > 2).
std::unique_ptr<Pass> createMatMulAddToGemmPass();
std::unique_ptr<Pass> createFuseGeluPass(); // the exact GELU's erf pattern into one Gelu
/// LayerNorm spelled out (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div [, Mul, Add]) into
/// one LayerNormalization.
std::unique_ptr<Pass> createFuseLayerNormPass();
/// Softmax spelled out ([ReduceMax, Sub,] Exp, ReduceSum, Div) into one Softmax.
std::unique_ptr<Pass> createFuseSoftmaxPass();
std::unique_ptr<Pass> createDeadCodeEliminationPass();
/// DequantizeLinear -> Conv/Gemm/MatMul -> QuantizeLinear into the integer ops (QLinearConv;
/// MatMulInteger with the requantization for Gemm and MatMul) where that is exact per the ONNX
/// semantics; not in the default pipeline: targets with integer kernels run it (CPU, GPU).
std::unique_ptr<Pass> createFuseQdqPass();
/// The copy of `g` a target with integer kernels compiles: fuse-qdq, then dead-code elimination
/// of the float paths the integer nodes replaced; null when `g` has no QuantizeLinear (compiled
/// as it is).
std::shared_ptr<Graph> fuseQdqCopy(const Graph& g);
/// fuseQdqCopy(g) when the target's QDQ models run on its integer kernels: the environment
/// variable `envVar` set to "int" or "float" (an override for comparisons: TRIAD_CPU_QDQ,
/// TRIAD_GPU_QDQ) decides, else the target's `option`; any other non-empty value is a usage
/// error naming the variable. Null otherwise.
std::shared_ptr<Graph> qdqIntegerCopy(const Graph& g, bool option, const char* envVar);

/// `base` if no value of `g` has that name, else `base.1`, `base.2`, ... (for values passes add).
std::string freshValueName(const Graph& g, const std::string& base);

/// The target-independent pipeline run before any target lowers a graph.
PassManager defaultPipeline();
/// Every pass by name, for --print-after validation.
std::vector<std::string> allPassNames();

} // namespace triad::ir
