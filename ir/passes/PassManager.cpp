#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/passes/Pass.h"

#include <chrono>
#include <cstdio>
#include <fmt/format.h>

namespace triad::ir {

PassManager& PassManager::add(std::unique_ptr<Pass> p) {
  passes_.push_back(std::move(p));
  return *this;
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_)
    out.emplace_back(p->name());
  return out;
}

std::vector<PassRecord> PassManager::run(Graph& g, const PassOptions& opts) const {
  auto print = opts.print ? opts.print
                          : [](std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); };
  std::vector<PassRecord> records;
  for (const auto& p : passes_) {
    auto t0 = std::chrono::steady_clock::now();
    bool changed = p->run(g);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    records.push_back({std::string(p->name()), changed, ms});
    if (changed && opts.verify) {
      auto problems = verify(g);
      if (!problems.empty()) {
        std::string msg = fmt::format("after pass '{}' the graph fails verification:", p->name());
        for (const auto& pr : problems)
          msg += "\n  " + pr;
        throw Error(ErrorKind::Internal, msg);
      }
    }
    if (opts.printAfterAll || opts.printAfter.count(std::string(p->name())))
      print(fmt::format("// IR after pass '{}' ({})\n{}", p->name(),
                        changed ? "changed" : "unchanged", printGraph(g)));
  }
  return records;
}

std::string freshValueName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.findValue(name); ++i)
    name = fmt::format("{}.{}", base, i);
  return name;
}

// Order: identities first (they hide constant inputs and duplicates), then folding (which
// creates constants that CSE can merge), CSE (so that duplicated BatchNormalization or bias
// chains are seen once), the pattern rewrites, and dce last to drop everything they orphaned.
PassManager defaultPipeline() {
  PassManager pm;
  pm.add(createRemoveIdentityPass());
  pm.add(createConstantFoldPass());
  pm.add(createCsePass());
  pm.add(createFoldBatchNormPass());
  pm.add(createMatMulAddToGemmPass());
  pm.add(createFuseGeluPass());
  pm.add(createFuseLayerNormPass());
  pm.add(createFuseSoftmaxPass());
  pm.add(createDeadCodeEliminationPass());
  return pm;
}

std::vector<std::string> allPassNames() {
  return defaultPipeline().names();
}

} // namespace triad::ir
