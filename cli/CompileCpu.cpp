// triad compile --target cpu: the model as standalone C++ (no dependency on Triad): <name>.cpp,
// <name>.h, the run-time kernels triad_kernels.h (and the headers it includes), the weights blob
// <name>.weights, an example main.cpp and a Makefile.
#include "cli/Commands.h"
#include "cpu/CodeGen.h"
#include "cpu/CpuTarget.h"
#include "cpu/RuntimeFiles.h"

#include <fmt/format.h>

namespace triad::cli {

int compileCpu(const ModelOptions& model, const std::string& outdir) {
  frontend::ImportResult r = model.load(true);
  cpu::CodeGenOptions co;
  std::string base = std::filesystem::path(model.model).stem().string();
  co.prefix = co.stem = cpu::cIdentifier(base);
  co.standalone = true;
  co.blockedLayout = cpu::blockedLayoutDefault();
  // As the CPU target compiles it: a QDQ model on the integer kernels (TRIAD_CPU_QDQ=float: not).
  std::shared_ptr<ir::Graph> rewritten = cpu::cpuGraph(r.graph);
  cpu::GeneratedCode code = cpu::generateCpp(rewritten ? *rewritten : r.graph, co);
  cpu::writeSources(code, outdir, true);
  fmt::print("wrote {}/{}.cpp, {}.h, {}.weights ({} bytes), main.cpp, Makefile and the run-time "
             "kernels (triad_kernels.h and the {} headers it includes)\n",
             outdir, co.stem, co.stem, co.stem, code.weights.size(),
             cpu::runtimeFiles().size() - 1);
  fmt::print("{} nodes in {} functions: {}\n", code.nodes, code.groups, code.fusionSummary);
  fmt::print("arena {} bytes (one buffer per intermediate: {}), {} in place, {} views\n",
             code.arenaBytes, code.unsharedBytes, code.inPlace, code.views);
  fmt::print("build and run: make -C {} && (cd {} && ./{})\n", outdir, outdir, co.stem);
  return 0;
}

} // namespace triad::cli
