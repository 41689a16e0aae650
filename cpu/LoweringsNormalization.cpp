// CPU lowerings: normalization, pooling and linear-algebra ops (InstanceNorm, GroupNorm, LRN, N-d
// pools, Einsum, ...). See cpu/Lowering.h for the table these entries join.
#include "cpu/LoweringUtil.h"

namespace triad::cpu {

using namespace ir;
using namespace lower;

void addNormalizationLowerings(LoweringTable& t) {
  (void)t;
}

} // namespace triad::cpu
