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
DenseCore planDenseCore(LayerInfo& info, const PlanContext& ctx, const std::vector<double>& w,
                        const std::vector<double>& bias, int64_t K, int64_t N, int inputValue,
                        std::optional<double> outRange);

/// Adds WEIGHTS and BIASES localparams and a triad_dense instance to `m`, reading weight column
/// j of the RTL's input vector from column perm[j] of the core (identity when perm is empty).
/// Returns the multipliers. Usage error listing the valid factors when `reuse` does not divide K.
int64_t addDenseInstance(hdl::Module& m, const DenseCore& c, const std::string& layer,
                         const std::vector<int64_t>& perm, int64_t reuse, int stageLevels,
                         const std::string& inPrefix, const std::string& outPrefix);

/// Cycles through triad_dense from its input accepted to its output valid.
int64_t denseLatency(int64_t reuse, int64_t kPerOutput, int stageLevels);

} // namespace triad::fpga
