// A small auto-tuner for the generated GEMM, and the tuning database later builds reuse.
//
// tuneGemm generates one kernel per candidate parameter set (a grid over work-group shape,
// register tile, K step and vector width, filtered by the device's limits), builds them all as
// ONE program (the OpenCL compile is the expensive part), checks each candidate's output
// against the default parameters' output, times each with profiling events (minimum over
// repeats, after a warm-up launch), and returns the fastest within a time budget. The result
// goes into a TuningDb: a JSON file keyed by kernel kind + shape + device (name and driver
// version), written atomically, so a later compile for the same shape and device reads the
// parameters instead of searching.
#pragma once

#include "gpu/KernelGen.h"
#include "gpu/OpenCL.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace triad::gpu {

struct TunedGemm {
  GemmParams params;
  double ns = 0;        // best device time of the tuned kernel
  double defaultNs = 0; // device time with the device's defaults on the same run
  int candidates = 0;   // how many parameter sets were measured
};

class TuningDb {
public:
  /// The default file: <cache root>/tuning.json ($TRIAD_CACHE_DIR or ~/.cache/triad).
  static std::filesystem::path defaultPath();

  /// Opens (reads) the database at `path`; a missing file is an empty database. A file that is
  /// not a valid database is also treated as empty (it will be rewritten): `warning()` says why.
  explicit TuningDb(std::filesystem::path path);

  /// "gemm 1x512x512x512 NN | <device name> | <driver version>"
  static std::string gemmKey(const GemmShape& shape, const DeviceInfo& device);

  /// "conv 1x64x56x56 k64 3x3 s1x1 p1,1,1,1 d1x1 g1 | <device name> | <driver version>": an
  /// implicit-GEMM convolution (its entry holds GEMM blocking parameters too).
  static std::string convKey(const ConvShape& shape, const DeviceInfo& device);

  /// The entry for a key from gemmKey or convKey.
  std::optional<TunedGemm> findGemm(const std::string& key) const;
  void putGemm(const std::string& key, const TunedGemm& entry);
  size_t size() const { return gemm_.size(); }

  /// Writes the database atomically (temporary file + rename). Re-reads the file first and
  /// merges, so concurrent tuners for different shapes do not drop each other's entries.
  void save() const;

  const std::filesystem::path& path() const { return path_; }
  const std::string& warning() const { return warning_; }

private:
  std::filesystem::path path_;
  std::map<std::string, TunedGemm> gemm_;
  std::string warning_;
};

struct TuneOptions {
  double budgetSeconds = 30; // stop measuring new candidates after this (compile included)
  int maxCandidates = 24;    // grid size limit (the default parameters always come first)
  int repeats = 3;           // timed launches per candidate (minimum is kept)
  bool verify = true;        // compare every candidate's output with the default's
};

struct TuneCandidate {
  GemmParams params;
  double ns = 0;     // best device time; 0 when not measured
  std::string error; // why it was skipped or rejected (launch failure, wrong result)
};

struct TuneResult {
  std::string key;
  GemmParams best;
  double bestNs = 0;
  double defaultNs = 0;
  bool fromDatabase = false; // found in the database, nothing was measured
  std::vector<TuneCandidate> tried;
  double compileSeconds = 0;
  double gflops(const GemmShape& s) const {
    return bestNs > 0 ? 2.0 * double(s.batch * s.M * s.N * s.K) / bestNs : 0;
  }
  double speedup() const { return bestNs > 0 ? defaultNs / bestNs : 0; }
};

/// The candidate grid for `shape` on `device`, the device's default parameters first, at most
/// `limit`: on CPU devices the panel kernel's grid over `panelShape` (the product it computes,
/// transposed for a convolution; `shape` when null), else the tiled kernel's.
std::vector<GemmParams> gemmCandidates(const GemmShape& shape, const DeviceInfo& device, int limit,
                                       const GemmShape* panelShape = nullptr);

/// Searches GEMM parameters for `shape` on the context's device. With a database: returns the
/// stored entry when there is one (fromDatabase), else tunes and stores (and saves) the result.
TuneResult tuneGemm(Context& ctx, const GemmShape& shape, const TuneOptions& options = {},
                    TuningDb* db = nullptr);

/// The same for the implicit-GEMM convolution kernel of `shape` (generateConv2DImplicitGemm):
/// the GEMM parameter grid of its per-image GEMM, measured on the convolution kernel itself.
TuneResult tuneConv(Context& ctx, const ConvShape& shape, const TuneOptions& options = {},
                    TuningDb* db = nullptr);

/// The parameters a compile should use: the database's entry for (shape, device), else the
/// defaults (the panel kernel's on CPU devices). Never measures.
GemmParams gemmParamsFor(const GemmShape& shape, const DeviceInfo& device, const TuningDb* db);

} // namespace triad::gpu
