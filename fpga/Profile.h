// The numerical profile of a quantized model (hls4ml's `numerical` profile, with the emulator's
// overflow counts): per layer, the spread of the magnitudes of its float weights and of its float
// outputs on given inputs, beside the ranges its fixed-point formats can hold, the saturations
// and wraps the emulator counted and the largest error fixed vs float. `triad quantize --plot`
// and the Python package's triad.plot draw it (python/triad/plot.py).
#pragma once

#include "fpga/Emulator.h"

#include <nlohmann/json.hpp>

namespace triad::fpga {

/// The profile of `emu` (planned on `g`) for one run on `inputs` (float, graph-input order).
/// JSON: {"layers": [{name, op, formats, weights: STATS|null, weight_format: RANGE|null,
/// outputs: STATS|null, result_format: RANGE, saturated, wrapped, const_saturated,
/// max_abs_error, elements}]} with STATS = {count, zeros, min, q25, median, q75, max} over the
/// nonzero |x| and RANGE = {format, lsb, max}; the first row is the graph input.
nlohmann::json precisionProfile(const ir::Graph& g, const Emulator& emu,
                                std::span<const ir::Tensor> inputs,
                                const ir::ProgressFn& progress = {});

} // namespace triad::fpga
