// Progress reports of long steps (compiles, calibration, profiles, simulations).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace triad::ir {

/// Progress of a long step: `step` names what is being done (a layer, a phase), `done` of
/// `total` units are finished. Empty: nobody listens.
using ProgressFn = std::function<void(const std::string& step, int64_t done, int64_t total)>;

} // namespace triad::ir
