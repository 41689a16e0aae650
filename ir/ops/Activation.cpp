// Activation ops (see ir/Ops.def for the list this family defines).
#include "ir/ops/OpUtil.h"

namespace triad::ir {

void registerActivationOps(OpTable& table) { (void)table; }

} // namespace triad::ir
