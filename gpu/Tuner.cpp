#include "gpu/Tuner.h"

#include "gpu/BinaryCache.h"
#include "ir/Files.h"
#include "ir/TrustedFile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>

namespace triad::gpu {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::json;

Json paramsToJson(const GemmParams& p) {
  Json j{{"wgM", p.wgM},     {"wgN", p.wgN},     {"workM", p.workM},
         {"workN", p.workN}, {"tileK", p.tileK}, {"vectorWidth", p.vectorWidth}};
  if (p.panel) j["panel"] = true;
  return j;
}

GemmParams paramsFromJson(const Json& j) {
  GemmParams p;
  p.wgM = j.at("wgM").get<int>();
  p.wgN = j.at("wgN").get<int>();
  p.workM = j.at("workM").get<int>();
  p.workN = j.at("workN").get<int>();
  p.tileK = j.at("tileK").get<int>();
  p.vectorWidth = j.at("vectorWidth").get<int>();
  p.panel = j.value("panel", false); // absent in entries written before the panel kernel
  validateGemmParams(p);
  return p;
}

// Reads the entries of a database file; throws (std::exception) when it is not one.
std::map<std::string, TunedGemm> readEntries(const std::string& text) {
  std::map<std::string, TunedGemm> m;
  Json j = Json::parse(text);
  if (!j.is_object() || j.value("format", "") != "triad-tuning-db" || j.value("version", 0) != 1)
    throw std::runtime_error("not a triad tuning database (format/version)");
  for (const auto& [key, e] : j.at("entries").items()) {
    std::string kind = e.at("kind").get<std::string>();
    if (kind != "gemm" && kind != "conv") continue; // both store GEMM blocking parameters
    TunedGemm t;
    t.params = paramsFromJson(e.at("params"));
    t.ns = e.at("ns").get<double>();
    t.defaultNs = e.at("default_ns").get<double>();
    t.candidates = e.at("candidates").get<int>();
    m[key] = t;
  }
  return m;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Database

std::filesystem::path TuningDb::defaultPath() {
  return defaultCacheRoot() / "tuning.json";
}

TuningDb::TuningDb(std::filesystem::path path) : path_(std::move(path)) {
  std::optional<std::string> text = readFileIfExists(path_);
  if (!text) return;
  try {
    gemm_ = readEntries(*text);
  } catch (const std::exception& e) {
    warning_ = fmt::format("tuning database '{}' is unreadable ({}); starting an empty one",
                           path_.string(), e.what());
    gemm_.clear();
  }
}

std::string TuningDb::gemmKey(const GemmShape& s, const DeviceInfo& d) {
  return fmt::format("gemm {}x{}x{}x{} {}{}{}{} | {} | {}", s.batch, s.M, s.N, s.K,
                     s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.broadcastA ? " bcastA" : "",
                     s.broadcastB ? " bcastB" : "", d.name, d.driverVersion);
}

std::string TuningDb::convKey(const ConvShape& s, const DeviceInfo& d) {
  return fmt::format("conv {}x{}x{}x{} k{} {}x{} s{}x{} p{},{},{},{} d{}x{} g{} | {} | {}", s.N,
                     s.C, s.H, s.W, s.K, s.R, s.S, s.strideH, s.strideW, s.padTop, s.padLeft,
                     s.padBottom, s.padRight, s.dilationH, s.dilationW, s.group, d.name,
                     d.driverVersion);
}

std::optional<TunedGemm> TuningDb::findGemm(const std::string& key) const {
  auto it = gemm_.find(key);
  if (it == gemm_.end()) return std::nullopt;
  return it->second;
}

void TuningDb::putGemm(const std::string& key, const TunedGemm& entry) {
  gemm_[key] = entry;
}

void TuningDb::save() const {
  // Read, merge and replace under a lock: two tuners saving at once keep both their entries.
  fs::path dir = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  makePrivateDir(dir, "the folder of the tuning database"); // created 0700 (ir/TrustedFile.h)
  FileLock lock(path_.string() + ".lock");
  std::map<std::string, TunedGemm> merged;
  if (std::optional<std::string> text = readFileIfExists(path_)) {
    try {
      merged = readEntries(*text);
    } catch (const std::exception&) {
      // Unreadable: replaced by ours.
    }
  }
  for (const auto& [k, v] : gemm_)
    merged[k] = v;
  Json entries = Json::object();
  for (const auto& [k, v] : merged)
    entries[k] = Json{{"kind", k.rfind("conv ", 0) == 0 ? "conv" : "gemm"},
                      {"params", paramsToJson(v.params)},
                      {"ns", v.ns},
                      {"default_ns", v.defaultNs},
                      {"candidates", v.candidates}};
  Json j = {{"format", "triad-tuning-db"}, {"version", 1}, {"entries", entries}};
  writeFileAtomic(path_, j.dump(2) + "\n");
}

// ---------------------------------------------------------------------------------------------
// Candidates

namespace {

/// The panel kernel's grid on a CPU device (`s`: the product the panel kernel computes): the
/// defaults (cpuPanelParams) first, then work-groups of 1 to 4 work-items x register blocks of
/// 1 to 4 vectors of the preferred width (at most maxVectorWidth; or half of it) across and as
/// many rows as leave a few of the device's vector registers free, in a fixed-seed shuffle.
std::vector<GemmParams> panelCandidates(const GemmShape& s, const DeviceInfo& d, int limit) {
  const GemmParams first = cpuPanelParams(s.N, d);
  const int V = first.vectorWidth;
  const int registers = V >= 16 ? 28 : 14; // accumulators at most
  const int wgs[][2] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {2, 2}};
  std::vector<GemmParams> grid;
  for (const auto& wg : wgs)
    for (int v : {V, V / 2})
      for (int vectors = 1; vectors <= 4; ++vectors)
        for (int rows : {2, 3, 4, 6, 8, 12, 16}) {
          if (v < 1 || rows * vectors > registers) continue;
          GemmParams p = first;
          p.wgM = wg[0];
          p.wgN = wg[1];
          p.vectorWidth = v;
          p.workN = vectors * v;
          p.workM = rows;
          if (p == first || int64_t(vectors - 1) * v >= s.N || rows > 2 * s.M) continue;
          if (d.maxWorkGroupSize && size_t(p.workGroupSize()) > d.maxWorkGroupSize) continue;
          grid.push_back(p);
        }
  std::mt19937 rng(12345);
  std::shuffle(grid.begin(), grid.end(), rng);
  std::vector<GemmParams> out{first};
  for (const GemmParams& p : grid) {
    if (int(out.size()) >= limit) break;
    out.push_back(p);
  }
  return out;
}

} // namespace

std::vector<GemmParams> gemmCandidates(const GemmShape& s, const DeviceInfo& d, int limit,
                                       const GemmShape* panelShape) {
  if (d.type == "CPU") return panelCandidates(panelShape ? *panelShape : s, d, limit);
  const int wgs[][2] = {{8, 8}, {16, 16}, {4, 16}, {16, 4}, {8, 16}, {16, 8}, {4, 8}, {8, 4}};
  const int works[][2] = {{4, 4}, {2, 4}, {4, 8}, {8, 4}, {8, 8}, {2, 2}, {1, 4}, {4, 1}, {2, 8}};
  const int tileKs[] = {8, 16, 4, 32};
  const int vecs[] = {1, 4, 2, 8};
  auto fits = [&](const GemmParams& p, bool sizeFilter) {
    try {
      validateGemmParams(p);
    } catch (const Error&) {
      return false;
    }
    size_t wg = size_t(p.workGroupSize());
    if (d.maxWorkGroupSize && wg > d.maxWorkGroupSize) return false;
    if (!gemmParamsFit(p, d)) return false;
    if (d.maxWorkItemSizes.size() >= 2 &&
        (size_t(p.wgN) > d.maxWorkItemSizes[0] || size_t(p.wgM) > d.maxWorkItemSizes[1]))
      return false;
    size_t local = size_t(p.tileK) * size_t(p.tileM() + p.tileN()) * sizeof(float);
    if (d.localMemBytes && local > d.localMemBytes) return false;
    // Tiles far larger than the problem only add idle work-items.
    if (!sizeFilter) return true;
    if (p.tileM() > 2 * s.M && p.tileM() > 8) return false;
    if (p.tileN() > 2 * s.N && p.tileN() > 8) return false;
    if (p.tileK > 2 * s.K && p.tileK > 4) return false;
    return true;
  };
  std::vector<GemmParams> grid;
  for (const auto& wg : wgs)
    for (const auto& wk : works)
      for (int tk : tileKs)
        for (int v : vecs) {
          GemmParams p{wg[0], wg[1], wk[0], wk[1], tk, v};
          if (!(p == GemmParams{}) && fits(p, true)) grid.push_back(p);
        }
  // A fixed-seed shuffle spreads a small budget over the whole grid; the defaults go first
  // (whatever the problem size) so that the speed-up over them is always measured.
  std::mt19937 rng(12345);
  std::shuffle(grid.begin(), grid.end(), rng);
  std::vector<GemmParams> out;
  if (fits(GemmParams{}, false)) out.push_back(GemmParams{});
  for (const GemmParams& p : grid) {
    if (int(out.size()) >= limit) break;
    out.push_back(p);
  }
  return out;
}

GemmParams gemmParamsFor(const GemmShape& shape, const DeviceInfo& device, const TuningDb* db) {
  if (db)
    if (std::optional<TunedGemm> t = db->findGemm(TuningDb::gemmKey(shape, device));
        t && gemmParamsFit(t->params, device))
      return t->params;
  if (device.type == "CPU") return cpuPanelParams(shape.N, device);
  return GemmParams{};
}

// ---------------------------------------------------------------------------------------------
// Tuning

namespace {

/// What differs between tuning a GEMM and an implicit-GEMM convolution: the kernels, the sizes
/// of their three buffers (two inputs, then the output) and the names.
struct TuneTarget {
  std::string key, name, what; // database key, program name, shape for messages
  GemmShape gemm;              // for the candidate grid
  GemmShape panel;             // the product the panel kernel computes (CPU devices)
  std::function<GeneratedKernel(const std::string&, const GemmParams&)> generate;
  /// The panel kernel's second operand, packed for `params` from the random one.
  std::function<std::vector<float>(const std::vector<float>&, const GemmParams&)> pack;
  size_t elems[3] = {0, 0, 0};
};

TuneResult tune(Context& ctx, const TuneTarget& target, const TuneOptions& opt, TuningDb* db) {
  auto t0 = std::chrono::steady_clock::now();
  TuneResult r;
  r.key = target.key;
  if (db)
    if (std::optional<TunedGemm> t = db->findGemm(r.key);
        t && gemmParamsFit(t->params, ctx.device())) {
      r.best = t->params;
      r.bestNs = t->ns;
      r.defaultNs = t->defaultNs;
      r.fromDatabase = true;
      return r;
    }

  std::vector<GemmParams> candidates =
      gemmCandidates(target.gemm, ctx.device(), std::max(1, opt.maxCandidates), &target.panel);
  if (candidates.empty())
    fail(ErrorKind::Unsupported, "{}: no parameter set fits device '{}'", target.what,
         ctx.device().name);
  std::vector<GeneratedKernel> kernels;
  for (size_t i = 0; i < candidates.size(); ++i)
    kernels.push_back(target.generate(fmt::format("tune_{}_{}", target.name, i), candidates[i]));
  double compileBefore = ctx.buildStats().compileSeconds;
  Program program = ctx.build(programSource(kernels), "", "tune_" + target.name);
  r.compileSeconds = ctx.buildStats().compileSeconds - compileBefore;

  // Operands: fixed pseudo-random data.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> A(target.elems[0]), B(target.elems[1]);
  for (float& v : A)
    v = dist(rng);
  for (float& v : B)
    v = dist(rng);
  size_t profileStart = ctx.profile().events.size();
  Buffer bufA = ctx.upload(A, "tune_A"), bufB = ctx.upload(B, "tune_B");
  Buffer bufC = ctx.buffer(target.elems[2] * sizeof(float), "tune_C");
  std::map<int, Buffer> packedB; // panel candidates' B, by panel width
  std::vector<float> reference;
  const size_t defaultIndex = 0; // gemmCandidates puts the device's defaults first
  for (size_t i = 0; i < candidates.size(); ++i) {
    TuneCandidate c;
    c.params = candidates[i];
    if (i > 0 && secondsSince(t0) > opt.budgetSeconds) {
      c.error = "not measured: budget exhausted";
      r.tried.push_back(c);
      continue;
    }
    try {
      Kernel k = program.kernel(kernels[i].name);
      if (k.maxWorkGroupSize(ctx.device().id) < size_t(c.params.workGroupSize())) {
        c.error = fmt::format("work-group size {} exceeds the kernel's limit {}",
                              c.params.workGroupSize(), k.maxWorkGroupSize(ctx.device().id));
        r.tried.push_back(c);
        continue;
      }
      if (c.params.panel) {
        auto it = packedB.find(c.params.workN);
        if (it == packedB.end())
          it =
              packedB.emplace(c.params.workN, ctx.upload(target.pack(B, c.params), "tune_B_panels"))
                  .first;
        k.args(bufA, it->second, bufC);
      } else {
        k.args(bufA, bufB, bufC);
      }
      ctx.launch(k, kernels[i].range); // warm-up (PoCL compiles the work-group function here)
      ctx.finish();
      size_t first = ctx.profile().events.size();
      for (int rep = 0; rep < std::max(1, opt.repeats); ++rep)
        ctx.launch(k, kernels[i].range);
      ctx.finish();
      uint64_t best = 0;
      for (size_t e = first; e < ctx.profile().events.size(); ++e)
        if (best == 0 || ctx.profile().events[e].ns < best) best = ctx.profile().events[e].ns;
      c.ns = double(best);
      if (opt.verify) {
        std::vector<float> out = ctx.download<float>(bufC);
        ctx.finish();
        if (reference.empty()) {
          reference = std::move(out);
        } else {
          double scale = 1, err = 0;
          for (size_t j = 0; j < out.size(); ++j) {
            scale = std::max(scale, double(std::abs(reference[j])));
            double d = std::abs(double(out[j]) - double(reference[j]));
            err = std::isnan(d) ? INFINITY : std::max(err, d);
          }
          if (err > 1e-4 * scale) {
            c.error = fmt::format("wrong result (max error {:.3g})", err);
            c.ns = 0;
          }
        }
      }
    } catch (const Error& e) {
      c.error = e.what();
      c.ns = 0;
    }
    r.tried.push_back(c);
  }
  // Leave the caller's profile as it was.
  ctx.profile().events.resize(std::min(ctx.profile().events.size(), profileStart));

  for (size_t i = 0; i < r.tried.size(); ++i) {
    const TuneCandidate& c = r.tried[i];
    if (c.ns <= 0 || !c.error.empty()) continue;
    if (i == defaultIndex) r.defaultNs = c.ns;
    if (r.bestNs == 0 || c.ns < r.bestNs) {
      r.bestNs = c.ns;
      r.best = c.params;
    }
  }
  if (r.bestNs == 0)
    fail(ErrorKind::Runtime, "{} on '{}': no candidate ran ({})", target.what, ctx.device().name,
         r.tried.empty() ? "none" : r.tried.front().error);
  if (db) {
    int measured = 0;
    for (const TuneCandidate& c : r.tried)
      measured += c.ns > 0;
    db->putGemm(r.key, TunedGemm{r.best, r.bestNs, r.defaultNs, measured});
    db->save();
  }
  return r;
}

} // namespace

TuneResult tuneGemm(Context& ctx, const GemmShape& shape, const TuneOptions& opt, TuningDb* db) {
  TuneTarget t;
  t.key = TuningDb::gemmKey(shape, ctx.device());
  t.name = fmt::format("gemm_{}x{}x{}", shape.M, shape.N, shape.K);
  t.what = "GEMM " + shape.toString();
  t.gemm = shape;
  t.panel = shape;
  t.panel.packedB = true;
  t.generate = [&](const std::string& name, const GemmParams& p) {
    return generateGemm(name, p.panel ? t.panel : shape, p);
  };
  t.pack = [&](const std::vector<float>& b, const GemmParams& p) {
    return packGemmPanels(b.data(), shape, p.workN);
  };
  t.elems[0] = size_t((shape.broadcastA ? 1 : shape.batch) * shape.M * shape.K);
  t.elems[1] = size_t((shape.broadcastB ? 1 : shape.batch) * shape.K * shape.N);
  t.elems[2] = size_t(shape.batch * shape.M * shape.N);
  return tune(ctx, t, opt, db);
}

TuneResult tuneConv(Context& ctx, const ConvShape& shape, const TuneOptions& opt, TuningDb* db) {
  shape.validate();
  TuneTarget t;
  t.key = TuningDb::convKey(shape, ctx.device());
  t.name = fmt::format("conv_{}x{}x{}x{}_k{}_{}x{}", shape.N, shape.C, shape.H, shape.W, shape.K,
                       shape.R, shape.S);
  t.what = "convolution " + shape.toString();
  t.gemm.M = shape.K / shape.group;
  t.gemm.N = shape.outH() * shape.outW();
  t.gemm.K = shape.C / shape.group * shape.R * shape.S;
  t.gemm.batch = shape.N * shape.group;
  t.panel = panelConvShape(shape);
  t.pack = [&](const std::vector<float>& w, const GemmParams& p) {
    return packConvWeights(w.data(), shape, p.workN);
  };
  t.generate = [&](const std::string& name, const GemmParams& p) {
    return generateConv2DImplicitGemm(name, shape, p);
  };
  t.elems[0] = size_t(shape.N * shape.C * shape.H * shape.W);
  t.elems[1] = size_t(shape.K * (shape.C / shape.group) * shape.R * shape.S);
  t.elems[2] = size_t(shape.N * shape.K * shape.outH() * shape.outW());
  return tune(ctx, t, opt, db);
}

} // namespace triad::gpu
