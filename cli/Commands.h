// The `triad` command's subcommands. Each registers its options on the app and returns the
// function that runs it; errors are triad::Error, mapped to exit codes in main.cpp.
#pragma once

#include "frontend/OnnxImporter.h"
#include "ir/Target.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace triad::cli {

/// Checks that an option is a positive whole number, with a readable message (CLI11's
/// PositiveNumber reports a range up to DBL_MAX).
const CLI::Validator& positiveInt();
/// The same for a whole number >= 0.
const CLI::Validator& nonNegativeInt();

/// Text for the terminal (stdout or stderr): a model's names, its warnings and error messages that
/// quote them are untrusted, so every line is escape::printable (no escape sequences, bells,
/// carriage returns or invalid UTF-8 reach the terminal); the text's own line breaks stay.
std::string terminalText(std::string_view s);

/// --dim values ("NAME=V", V a positive integer) by name; a malformed one is a usage error.
std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs);

/// Options every command that loads a model shares.
struct ModelOptions {
  std::string model;
  int64_t batch = 1;
  std::vector<std::string> dims; // "name=value"
  bool optimize = false;         // run the default pass pipeline (ir/passes) after import
  bool printAfterAll = false;
  std::vector<std::string> printAfter;
  /// Shapes of the tensors that will be given (input files): the dynamic dimensions that
  /// --batch and --dim leave open take their sizes from them (frontend::bindDims).
  std::vector<frontend::InputShape> inputShapes;
  bool streamBatch = false;           // frontend::ImportOptions::streamBatch (FPGA flows)
  CLI::Option* batchOption = nullptr; // set by add(): --batch given on the command line?
  bool batchGiven() const { return batchOption && batchOption->count() > 0; }
  void add(CLI::App& cmd);
  /// Imports the model; runs the pass pipeline with --opt (or when `optimizeAnyway`: compiled
  /// targets always want it).
  frontend::ImportResult load(bool optimizeAnyway = false) const;
};

/// Sets the memory limit from --max-memory (or TRIAD_MAX_MEMORY when empty): "8G", "512M",
/// "1.5GiB", "1000000" bytes. It is exported as TRIAD_MAX_MEMORY to the processes triad starts.
void applyMemoryLimit(const std::string& flag);

using Action = std::function<int()>;
/// triad compile --target cpu: writes standalone C++ (cli/CompileCpu.cpp).
int compileCpu(const ModelOptions& model, const std::string& outdir);
Action addInspect(CLI::App& app, const ir::TargetRegistry& targets);
Action addRun(CLI::App& app, const ir::TargetRegistry& targets);
Action addQuantize(CLI::App& app, const ir::TargetRegistry& targets);
Action addCompile(CLI::App& app, const ir::TargetRegistry& targets);
Action addSim(CLI::App& app, const ir::TargetRegistry& targets);
Action addSynth(CLI::App& app, const ir::TargetRegistry& targets);
Action addDevices(CLI::App& app, const ir::TargetRegistry& targets);
Action addTune(CLI::App& app, const ir::TargetRegistry& targets);
Action addBench(CLI::App& app, const ir::TargetRegistry& targets);
Action addPartition(CLI::App& app, const ir::TargetRegistry& targets);
Action addReport(CLI::App& app, const ir::TargetRegistry& targets);

} // namespace triad::cli
