// The HTML report's inline SVG charts, each built from the report JSON: latency per device (the
// FPGA at its clock), throughput against batch, accuracy per device, FPGA resources against the
// part's budget and cycles, the partition plan drawn, predicted against measured partition
// times, and the per-layer breakdown per device.
#pragma once

#include "bench/ReportTables.h"

#include <string>
#include <vector>

namespace triad::bench::detail {

/// The charts that belong to a section (by Section::id; per-layer subsections by their target),
/// as complete <svg> elements; empty when the report has nothing to draw there.
std::vector<std::string> chartsFor(const Section& section, const Json& report,
                                   const Colours& colours);

/// The partition plan drawn: one box per partition coloured by target, the host at the ends,
/// transfers as arrows labelled with their bytes. Exposed for tests.
std::string partitionChart(const Json& plan, const Colours& colours);

} // namespace triad::bench::detail
