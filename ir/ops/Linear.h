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

} // namespace triad::ir
