// CPU lowerings: signal, vision and quantized ops (DFT, STFT, Col2Im, GridSample, RoiAlign,
// QuantizeLinear, ...). See cpu/Lowering.h for the table these entries join.
#include "cpu/LoweringUtil.h"

namespace triad::cpu {

using namespace ir;
using namespace lower;

void addSignalLowerings(LoweringTable& t) {
  (void)t;
}

} // namespace triad::cpu
