// The targets a planning command (triad partition, triad bench, the Python package's
// triad.bench) works with, built from its options (the GPU device, the FPGA's reuse, clock and
// part), and the cost context they need: device models measured on this machine (cached), the GPU
// link measured, the FPGA part's budget.
#pragma once

#include "ir/Target.h"
#include "ir/partition/Partition.h"

#include <functional>
#include <string>

namespace triad::bench {

struct BenchOptions;

struct PlanTargetOptions {
  int threads = 0;
  std::string device;      // OpenCL device selector
  std::string reuse = "1"; // FPGA reuse factor, or "auto"
  double clockMhz = 200;   // FPGA clock
  std::string fpgaPart;    // named FPGA part (its budget); empty: no limit
};

struct Targets {
  ir::TargetRegistry registry;
};

Targets makeTargets(const PlanTargetOptions& o);

/// Fills po.costs (device models: measured and cached when `calibrate`, else nominal; `force`
/// measures again) and po.links's GPU link (measured when calibrating, unless a links file set
/// it). Targets that cannot run here (no OpenCL device) are dropped from po.targets with a note.
void fillCosts(const Targets& t, const PlanTargetOptions& o, ir::partition::Options& po,
               bool calibrate, bool force, const std::function<void(const std::string&)>& note);

/// The checks of a benchmark's options beyond their syntax (Usage errors, worded as the flags of
/// `triad bench`): known targets, something to run, batch sizes, --labels with --data, the clock,
/// the reuse factor, the FPGA precision, the timeout.
void checkOptions(const BenchOptions& b, const ir::TargetRegistry& targets);

/// Sets b.planCosts as `triad bench` does: device models measured on this machine (cached), the
/// GPU link measured.
void setMeasuredPlanCosts(BenchOptions& b);

} // namespace triad::bench
