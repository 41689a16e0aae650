// IR core: types, tensors, graph construction, verifier and printer.
#include "ir/Graph.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/ops/Linear.h"

#include <gtest/gtest.h>

using namespace triad;
using namespace triad::ir;

TEST(Types, NamesRoundTrip) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::I8, DType::U8, DType::Bool})
    EXPECT_EQ(dtypeFromName(dtypeName(t)), t);
  TensorType fx{DType::Fixed, {64}, FixedSpec{16, 6, true}};
  EXPECT_EQ(typeToString(fx), "fixed<16,6>[64]");
  EXPECT_EQ(fx.fixed->fracBits(), 10);
}
