// The command-line options of the planning targets (triad partition); the targets themselves
// and their costs are the library's (bench/PlanTargets.h).
#pragma once

#include "bench/PlanTargets.h"

#include <CLI/CLI.hpp>

namespace triad::cli {

using bench::fillCosts;
using bench::makeTargets;
using bench::PlanTargetOptions;
using bench::Targets;

void addPlanTargetOptions(CLI::App& cmd, PlanTargetOptions& o);

} // namespace triad::cli
