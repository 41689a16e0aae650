#include "cli/Targets.h"

#include "cli/Commands.h"

namespace triad::cli {

void addPlanTargetOptions(CLI::App& cmd, PlanTargetOptions& o) {
  cmd.add_option("--threads", o.threads,
                 "Threads of the CPU target (default: TRIAD_THREADS, else the physical cores)")
      ->check(positiveInt());
  cmd.add_option("--device", o.device, "OpenCL device of the gpu target (see `triad devices`)");
  cmd.add_option("--reuse", o.reuse, "FPGA reuse factor of Dense and Conv layers, or 'auto'")
      ->capture_default_str();
  cmd.add_option("--clock-mhz", o.clockMhz, "FPGA clock the cycle counts are converted at")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--fpga-part", o.fpgaPart,
                 "FPGA part whose resources bound what is placed on it (e.g. xc7a100t, xcku115, "
                 "xcvu9p); default: no limit");
}

} // namespace triad::cli
