// The multiply-accumulate core shared by Dense (Gemm, MatMul) and Conv: its arithmetic (the
// contract of docs/fpga.md: exact products cast to the accumulator, a sum modulo 2^Wacc, the bias
// cast the same way, the result cast) and its RTL instance (fpga/rtl/triad_dense.v).
#pragma once

#include "fpga/layers/Layer.h"

namespace triad::fpga {

struct DenseCore {
  int64_t K = 0, N = 0;      // inputs and outputs per row
  FixedFormat in;            // the input's format
  std::vector<int64_t> w, b; // quantized w[n][k] at n*K + k; b[n] (empty: no bias)
  const LayerQuant* q = nullptr;
  /// y[n] for one row x[0..K); counts the row's casts into `rep`.
  void row(const int64_t* x, int64_t* y, LayerReport& rep) const;
};

/// Quantizes the float weights w[n][k] (N*K) and bias (N or empty) with the layer's quant and
/// fills `info` (weights, biases, accumulator format, ranges); `outRange` feeds "auto" results.
/// `weightValue` / `biasValue`: the IR values they come from, whose imported precisions (QONNX
/// Quant on the weights) become the weight / bias formats where the config sets none (null
/// when the values were scaled on the way, e.g. by Gemm's alpha).
///
/// On a QDQ integer grid (the input has a RealAffine, scale s_x): the weights must be a folded
/// DequantizeLinear of integers with zero point 0 and a scale per tensor or per output channel
/// (axis `weightOutAxis` of the weight value), the bias one of int32 with scale s_x * s_w[n]
/// (or absent). The core then computes on the integers (weights in fixed<B,B>, B the integers'
/// bits; an exact integer accumulator, which is the result) and the output's RealAffine is
/// s_x * s_w[n] per output channel (set on `node`'s output); anything else is refused naming
/// `node`.
DenseCore planDenseCore(LayerInfo& info, PlanContext& ctx, const std::vector<double>& w,
                        const std::vector<double>& bias, int64_t K, int64_t N, int inputValue,
                        std::optional<double> outRange, const ir::Value* weightValue = nullptr,
                        const ir::Value* biasValue = nullptr, const ir::Node* node = nullptr,
                        int weightOutAxis = 0);

/// Adds WEIGHTS and BIASES localparams and a triad_dense instance to `m`, reading weight column
/// j of the RTL's input vector from column perm[j] of the core (identity when perm is empty);
/// `stageMask`: the registered tree levels (stageMaskFor); at reuse 1 the products by weights
/// of at most `shiftAddDigits` signed digits are shifts and adds (constTerms). Returns the
/// multipliers; `weightRom` (reuse > 1): the weights as a ROM of `reuse` words (triad_dense's
/// WEIGHT_ROM). Usage error listing the valid factors when `reuse` is not (validDenseReuse).
int64_t addDenseInstance(hdl::Module& m, const DenseCore& c, const std::string& layer,
                         const std::vector<int64_t>& perm, int64_t reuse, uint64_t stageMask,
                         int shiftAddDigits, bool weightRom, const std::string& inPrefix,
                         const std::string& outPrefix);

/// Whether every product x * w casts to the accumulator exactly (no rounding, no overflow): then
/// the sum may be computed in any grouping, as an adder graph does.
bool cmvmApplies(const DenseCore& c);

/// A multiplier-free core (reuse 1): the layer's y = W x as an adder graph (fpga/Cmvm.h) of
/// wires and registers added to `m`, pipelined for the settings' clock (or stage levels), with a
/// triad_pipe for its control; latency stats.stages + 2. Unsupported naming the layer when the
/// products do not cast exactly (cmvmApplies).
AdderGraphStats addAdderGraph(hdl::Module& m, const DenseCore& c, const std::string& layer,
                              const std::vector<int64_t>& perm, std::optional<int64_t> rawMin,
                              const RtlSettings& s, const std::string& inPrefix,
                              const std::string& outPrefix);

/// Whether the settings build this core as an adder graph; its products in words for a comment.
bool usesAdderGraph(const DenseCore& c, const RtlSettings& s);
std::string productsText(const DenseCore& c, const RtlSettings& s);

/// What addDenseCore built into a layer's RtlLayer: multipliers, stage mask, blocks, latency.
/// The strategy decides: triad_dense (DSPs, addDenseInstance) or an adder graph
/// (addAdderGraph); `Auto` takes the adder graph at reuse 1 when cmvmApplies. Usage error naming
/// the layer for shift_add at a reuse above 1.
void addDenseCore(RtlLayer& r, const DenseCore& c, const std::string& layer,
                  const std::vector<int64_t>& perm, std::optional<int64_t> rawMin,
                  const RtlSettings& s, const std::string& inPrefix, const std::string& outPrefix);

/// triad_dense's W_TERMS code of a constant weight (its header): how to build x * w from at
/// most `maxTerms` (<= 2) shifted copies of x, or 0 (a multiplier).
uint16_t constTerms(int64_t w, int maxTerms);

/// triad_dense's leaf width (the cast products: range-sized by the largest |w|).
int denseLeafWidth(const DenseCore& c);
/// The registers of every k-th tree level (bit l: after level l), levels 0..depth; 0 for k = 0.
uint64_t uniformStageMask(int stageLevels, int depth);
/// A core's STAGE_MASK: the settings' stageLevels when given (uniformStageMask), else from the
/// delay model at their clock: each stage filled with the adder levels that fit (level l's nodes
/// are min(leaf + l, acc) bits wide), the first one shorter (it starts at DSP48E1 registers), the
/// last holding the accumulate and the output cast; 0 without a clock.
uint64_t stageMaskFor(const DenseCore& c, int64_t reuse, const RtlSettings& s);

/// Cycles through triad_dense from its input accepted to its output valid.
int64_t denseLatency(int64_t reuse, int64_t kPerOutput, uint64_t stageMask, bool weightRom);

/// Reuse factors of a core with nIn inputs and nOut outputs: the divisors of nIn (each output's
/// nIn/R products summed by a tree), and nIn times a divisor d of nOut (output folding: nOut/d
/// lanes, each taking one input per cycle for d outputs one after another; triad_dense).
bool validDenseReuse(int64_t nIn, int64_t nOut, int64_t reuse);
std::vector<int64_t> denseReuseFactors(int64_t nIn, int64_t nOut);
/// Products per output lane at reuse R (the adder tree's leaves): nIn / R, or 1 when folded.
int64_t denseLeaves(int64_t nIn, int64_t reuse);

} // namespace triad::fpga
