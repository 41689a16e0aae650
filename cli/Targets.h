// The targets a planning command (triad partition, triad bench) works with, built from its
// options (the GPU device, the FPGA's reuse, clock and part), and the cost context they need:
// device models measured on this machine (cached), the GPU link measured, the FPGA part's budget.
#pragma once

#include "ir/Target.h"
#include "ir/partition/Partition.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace triad::cli {

struct PlanTargetOptions {
  int threads = 0;
  std::string device;      // OpenCL device selector
  std::string reuse = "1"; // FPGA reuse factor, or "auto"
  double clockMhz = 200;   // FPGA clock
  std::string fpgaPart;    // named FPGA part (its budget); empty: no limit
};

void addPlanTargetOptions(CLI::App& cmd, PlanTargetOptions& o);

struct Targets {
  ir::TargetRegistry registry;
};

Targets makeTargets(const PlanTargetOptions& o);

/// Fills po.costs (device models: measured and cached when `calibrate`, else nominal; `force`
/// measures again) and po.links's GPU link (measured when calibrating, unless a links file set
/// it). Targets that cannot run here (no OpenCL device) are dropped from po.targets with a note.
void fillCosts(const Targets& t, const PlanTargetOptions& o, ir::partition::Options& po,
               bool calibrate, bool force, const std::function<void(const std::string&)>& note);

} // namespace triad::cli
