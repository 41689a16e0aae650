// CPU lowerings: index and data-movement ops (Pad, Tile, Gather/Scatter variants, TopK, ...).
// See cpu/Lowering.h for the table these entries join.
#include "cpu/LoweringUtil.h"

namespace triad::cpu {

using namespace ir;
using namespace lower;

void addMovementLowerings(LoweringTable& t) {
  (void)t;
}

} // namespace triad::cpu
