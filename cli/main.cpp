// triad: compile ONNX models for CPU, GPU and FPGA from one graph IR.
#include "cli/Commands.h"
#include "cpu/CpuTarget.h"
#include "fpga/FpgaTarget.h"
#include "gpu/GpuTarget.h"
#include "ir/Diagnostics.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

namespace {

constexpr const char* kExitCodes = R"(Exit codes:
  0   success
  2   usage error (bad flag or value)
  3   i/o error (a file cannot be read or written)
  4   invalid model (malformed ONNX: truncated, cycles, dangling inputs, wrong types)
  5   unsupported (valid ONNX that Triad does not handle: op, attribute, opset, dtype)
  6   run-time error (inputs that do not fit the model)
  7   resource limit (the model or its inputs need more memory than --max-memory)
  70  internal error (a bug in Triad: please report it))";

// " run" when a subcommand was named on the command line, for the --help hint.
std::string subcommandOf(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({}))
    if (sub->parsed()) return " " + sub->get_name();
  return "";
}

} // namespace

int main(int argc, char** argv) {
  using namespace triad;
  CLI::App app{"triad: compile ONNX models for CPU, GPU and FPGA from one graph IR"};
  app.set_version_flag("--version", "triad 0.1.0");
  app.footer(kExitCodes);
  app.require_subcommand(1);
  // Options of the command itself may follow the subcommand's (`triad run m.onnx --max-memory 2G`).
  app.fallthrough();
  std::string maxMemory;
  app.add_option("--max-memory", maxMemory,
                 "Most memory a run may hold in tensors, e.g. 8G, 512M, 1.5GiB (default: "
                 "TRIAD_MAX_MEMORY, else the machine's memory); a model that needs more is "
                 "refused naming the node and size (exit 7)");

  ir::TargetRegistry targets;
  targets.add(ir::makeInterpreterTarget());
  targets.add(cpu::makeCpuTarget());   // threads: --threads, TRIAD_THREADS, physical cores
  targets.add(gpu::makeGpuTarget());   // OpenCL; the device is chosen at compile time
  targets.add(fpga::makeFpgaTarget()); // the bit-accurate emulator at fixed<16,6>

  std::map<CLI::App*, cli::Action> actions;
  auto add = [&](cli::Action (*f)(CLI::App&, const ir::TargetRegistry&)) {
    size_t before = app.get_subcommands({}).size();
    cli::Action a = f(app, targets);
    CLI::App* sub = app.get_subcommands({})[before];
    sub->footer(kExitCodes);
    actions[sub] = std::move(a);
  };
  add(cli::addInspect);
  add(cli::addRun);
  add(cli::addQuantize);
  add(cli::addCompile);
  add(cli::addSim);
  add(cli::addSynth);
  add(cli::addDevices);
  add(cli::addTune);
  add(cli::addBench);
  add(cli::addPartition);
  add(cli::addReport);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e); // --help, --version
    fmt::print(stderr, "triad: {}: {}\n(run 'triad{} --help' for the options)\n",
               errorKindName(ErrorKind::Usage), cli::terminalText(e.what()), subcommandOf(app));
    return exitCodeFor(ErrorKind::Usage);
  }
  try {
    cli::applyMemoryLimit(maxMemory);
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const Error& e) {
    fmt::print(stderr, "triad: {}: {}\n", errorKindName(e.kind()), cli::terminalText(e.what()));
    return exitCodeFor(e.kind());
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "triad: {}: out of memory (the machine or its cgroup has less than the run needs; "
               "--max-memory bounds what a model may use)\n",
               errorKindName(ErrorKind::Resource));
    return exitCodeFor(ErrorKind::Resource);
  } catch (const std::filesystem::filesystem_error& e) { // unwritable or full disk, named
    fmt::print(stderr, "triad: {}: {}\n", errorKindName(ErrorKind::Io),
               cli::terminalText(e.what()));
    return exitCodeFor(ErrorKind::Io);
  } catch (const std::exception& e) {
    fmt::print(stderr, "triad: internal error: {}\n", cli::terminalText(e.what()));
    return exitCodeFor(ErrorKind::Internal);
  }
  return 0;
}
