// Attributes of the dense-product ops (Gemm, MatMul), shared by every target's lowering.
#pragma once

#include "ir/Attrs.h"

namespace triad::ir {

struct GemmAttrs : AttrsOf<GemmAttrs> {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool transA = false;
  bool transB = false;
  template <class F> void fields(F&& f) const {
    f("alpha", alpha);
    f("beta", beta);
    f("transA", transA);
    f("transB", transB);
  }
};

namespace ops {
/// Shapes of a numpy-style matmul: 1-D operands are promoted (A: [K] -> [1,K], B: [K] -> [K,1])
/// and the promoted dimension removed from `out`; batch dimensions broadcast. Shared by MatMul,
/// MatMulInteger and QLinearMatMul.
struct MatMulShapes {
  Shape aBatch, bBatch, batch; // each operand's batch dims and their broadcast
  int64_t M = 1, K = 1, N = 1;
  Shape out;
};
MatMulShapes matmulShapes(const Shape& a, const Shape& b);
} // namespace ops

} // namespace triad::ir
