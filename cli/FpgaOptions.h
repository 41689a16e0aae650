// Command-line precision options shared by `triad quantize` and `triad compile --target fpga`
// (docs/fpga.md, "Config file"): applied after --config by fpga::QuantConfig::fromCommandLine.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace triad::cli {

inline void addPrecisionOptions(CLI::App& cmd, std::string& defaultPrecision,
                                std::vector<std::string>& precision) {
  cmd.add_option("--default-precision", defaultPrecision,
                 "Default format of every role, e.g. fixed<18,8> (roles set by --config win)");
  cmd.add_option("--precision", precision,
                 "LAYER:KEY=VALUE override after --config, e.g. /fc1/Gemm:weight=fixed<8,2> or "
                 "/Softmax:table_size=256 (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
}

} // namespace triad::cli
