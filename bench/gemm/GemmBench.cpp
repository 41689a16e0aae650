// triad-gemm-bench: the run-time GEMM of cpu/runtime/triad_kernels.h against OpenBLAS
// (cblas_sgemm, same thread count set explicitly), in the same run, interleaved, with warm-up and
// medians; plus the machine's measured FMA peak (a register-only loop of independent FMAs at the
// kernels' vector width). Built like generated code: -O3 -march=native -fopenmp.
//
//   triad-gemm-bench                       # all sizes, threads 1 and 2, table on stdout
//   triad-gemm-bench --json out.json       # also write the results as JSON (atomically)
//   triad-gemm-bench --quick               # fewer sizes and samples (a smoke run)
#include "cpu/runtime/triad_kernels.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---------------------------------------------------------------------------------------------
// FMA peak: per thread, 12 independent accumulator vectors (enough to cover FMA latency x
// throughput on current x86 cores), each updated by one FMA per iteration; nothing touches memory.
// ---------------------------------------------------------------------------------------------

double fmaLoop(long iters) {
  using triad_rt::vf;
  volatile float seed = 0.999999f, add = 1e-7f;
  vf b = triad_rt::vset1(seed), c = triad_rt::vset1(add);
  vf acc[12];
  for (auto& a : acc)
    a = triad_rt::vset1(1.0f);
  auto t0 = Clock::now();
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      acc[i] = triad_rt::vfma(acc[i], b, c);
  }
  auto t1 = Clock::now();
  vf s = acc[0];
  for (int i = 1; i < 12; ++i)
    s = triad_rt::vadd(s, acc[i]);
  alignas(64) float out[triad_rt::kW];
  triad_rt::vstore(out, s);
  volatile float sink = out[0];
  (void)sink;
  return 2.0 * 12 * triad_rt::kW * static_cast<double>(iters) / seconds(t0, t1) / 1e9;
}

/// GFLOP/s of `threads` threads running the FMA loop together: the best of many short trials
/// (~10 ms each), so that time slices lost to other processes on a shared machine do not count.
double fmaPeak(int threads, int trials) {
  const long iters = 2'000'000;
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += fmaLoop(iters);
    best = std::max(best, total);
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Cases and implementations
// ---------------------------------------------------------------------------------------------

enum class Const { B, A }; // which operand is a constant (weights), pre-packed in "triad-packed"

struct Case {
  std::string name;
  int M, N, K;
  Const constant = Const::B;
};

struct Impl {
  std::string name;
  std::function<void()> run;
};

struct Result {
  std::string caseName, impl;
  int M, N, K, threads;
  double medianGflops, bestGflops, medianSeconds, pctPeak;
};

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

void writeJsonAtomically(const std::string& path, const nlohmann::json& j) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Triad GEMM micro-benchmark: run-time kernels vs OpenBLAS"};
  std::vector<int> threadCounts = {1, 2};
  std::vector<int> sizes = {64, 128, 256, 384, 512, 768, 1024, 1536, 2048};
  int samples = 7;
  double minSample = 0.05;
  int settleMs = 200;
  bool quick = false;
  std::string jsonPath;
  app.add_option("--threads", threadCounts, "thread counts to run (each for both libraries)");
  app.add_option("--sizes", sizes, "square sizes M = N = K");
  app.add_option("--samples", samples, "timed samples per implementation (median reported)");
  app.add_option("--min-sample", minSample, "minimum seconds per sample (repeats the call)");
  app.add_option("--settle-ms", settleMs,
                 "pause between libraries so the other's spinning worker threads go idle");
  app.add_flag("--quick", quick, "sizes 64..512, 3 samples");
  app.add_option("--json", jsonPath, "write results to this JSON file (atomically)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    sizes = {64, 128, 256, 512};
    samples = 3;
    minSample = 0.02;
  }

  std::vector<Case> cases;
  for (int s : sizes)
    cases.push_back({"square " + std::to_string(s), s, s, s, Const::B});
  cases.push_back({"gemv 1x4096x4096", 1, 4096, 4096, Const::B});
  cases.push_back({"bert ffn 128x3072x768", 128, 3072, 768, Const::B});
  cases.push_back({"resnet conv 64x3136x576", 64, 3136, 576, Const::A});

  fmt::print("CPU: {} ({} hardware threads)\n", cpuModel(), std::thread::hardware_concurrency());
  fmt::print("Triad kernels: {} micro-kernel {}x{}, KC {} MC {} NC {}\n", TRIAD_RT_ISA,
             triad_rt::kMR, triad_rt::kNR, triad_rt::kKC, triad_rt::kMC, triad_rt::kNC);
  fmt::print("OpenBLAS: {} (core {})\n", openblas_get_config(), openblas_get_corename());

  std::map<int, double> peak;
  for (int t : threadCounts) {
    peak[t] = fmaPeak(t, 40);
    fmt::print("FMA peak ({} lanes fp32), {} thread(s): {:.1f} GFLOP/s\n", triad_rt::kW, t,
               peak[t]);
  }
  fmt::print("\n");

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<Result> results;

  fmt::print("{:<24} {:>3} | {:>14} {:>5} | {:>14} {:>5} | {:>14} {:>5} | {:>6} {:>6}\n",
             "shape (MxNxK)", "thr", "Triad med(best)", "%pk", "Tr-packed", "%pk", "OpenBLAS",
             "%pk", "Tr/OB", "TrP/OB");
  for (const Case& c : cases) {
    std::vector<float> A(static_cast<size_t>(c.M) * c.K), B(static_cast<size_t>(c.K) * c.N);
    std::vector<float> C(static_cast<size_t>(c.M) * c.N), Cref(C.size()), y(c.N);
    for (auto& v : A)
      v = dist(rng);
    for (auto& v : B)
      v = dist(rng);
    std::vector<float> packed(c.constant == Const::B ? triad_rt::packed_b_size(c.K, c.N)
                                                     : triad_rt::packed_a_size(c.M, c.K));
    if (c.constant == Const::B)
      triad_rt::pack_b(c.K, c.N, B.data(), c.N, false, packed.data());
    else
      triad_rt::pack_a(c.M, c.K, A.data(), c.K, false, packed.data());

    std::vector<Impl> impls = {
        {"triad",
         [&] {
           triad_rt::gemm(c.M, c.N, c.K, A.data(), c.K, false, B.data(), c.N, false, C.data(), c.N);
         }},
        {"triad-packed",
         [&] {
           if (c.constant == Const::B)
             triad_rt::gemm_packed_b(c.M, c.N, c.K, A.data(), c.K, false, packed.data(), C.data(),
                                     c.N);
           else
             triad_rt::gemm_packed_a(c.M, c.N, c.K, packed.data(), B.data(), c.N, false, C.data(),
                                     c.N);
         }},
        {"openblas",
         [&] {
           cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.M, c.N, c.K, 1.0f, A.data(),
                       c.K, B.data(), c.N, 0.0f, Cref.data(), c.N);
         }},
    };
    if (c.M == 1)
      impls.push_back({"openblas-sgemv", [&] {
                         cblas_sgemv(CblasRowMajor, CblasTrans, c.K, c.N, 1.0f, B.data(), c.N,
                                     A.data(), 1, 0.0f, y.data(), 1);
                       }});
    const double flops = 2.0 * c.M * c.N * c.K;

    for (int t : threadCounts) {
      triad_rt::set_num_threads(t);
      openblas_set_num_threads(t);
      // Warm-up (packing buffers, thread pools, caches) and per-implementation repeat counts.
      std::vector<int> reps(impls.size());
      for (size_t i = 0; i < impls.size(); ++i) {
        impls[i].run();
        auto t0 = Clock::now();
        impls[i].run();
        double once = std::max(seconds(t0, Clock::now()), 1e-7);
        reps[i] = std::max(1, static_cast<int>(minSample / once));
        std::this_thread::sleep_for(std::chrono::milliseconds(settleMs));
      }
      // Correctness: Triad against OpenBLAS on this case.
      impls[0].run();
      impls[2].run();
      double maxErr = 0;
      for (size_t i = 0; i < C.size(); ++i)
        maxErr = std::max(maxErr, static_cast<double>(std::fabs(C[i] - Cref[i])));
      if (maxErr > 1e-5 * c.K) {
        fmt::print(stderr, "{}: Triad and OpenBLAS differ by {} (K = {})\n", c.name, maxErr, c.K);
        return 1;
      }
      // Interleaved samples: every round runs each implementation once, rotating the order.
      std::vector<std::vector<double>> times(impls.size());
      for (int s = 0; s < samples; ++s) {
        for (size_t k = 0; k < impls.size(); ++k) {
          size_t i = (k + s) % impls.size();
          auto t0 = Clock::now();
          for (int r = 0; r < reps[i]; ++r)
            impls[i].run();
          times[i].push_back(seconds(t0, Clock::now()) / reps[i]);
          std::this_thread::sleep_for(std::chrono::milliseconds(settleMs));
        }
      }
      std::vector<double> med(impls.size());
      for (size_t i = 0; i < impls.size(); ++i) {
        med[i] = median(times[i]);
        double best = *std::min_element(times[i].begin(), times[i].end());
        results.push_back({c.name, impls[i].name, c.M, c.N, c.K, t, flops / med[i] / 1e9,
                           flops / best / 1e9, med[i], 100.0 * flops / med[i] / 1e9 / peak[t]});
      }
      auto gf = [&](size_t i) { return flops / med[i] / 1e9; };
      auto col = [&](size_t i) {
        double best = flops / *std::min_element(times[i].begin(), times[i].end()) / 1e9;
        return fmt::format("{:>6.1f} ({:>5.1f}) {:>4.0f}%", gf(i), best, 100 * gf(i) / peak[t]);
      };
      fmt::print("{:<24} {:>3} | {} | {} | {} | {:>6.2f} {:>6.2f}", c.name, t, col(0), col(1),
                 col(2), med[2] / med[0], med[2] / med[1]);
      if (impls.size() > 3)
        fmt::print("   (OpenBLAS sgemv {:.1f} GFLOP/s, {:.2f} ms; Triad packed {:.2f} ms)", gf(3),
                   med[3] * 1e3, med[1] * 1e3);
      fmt::print("\n");
      std::fflush(stdout);
    }
  }
  fmt::print(
      "\nGFLOP/s: median (best) of {} interleaved samples; %pk: median against the measured FMA "
      "peak for the same thread count; Tr/OB: OpenBLAS time / Triad time (> 1: Triad "
      "faster); Tr-packed: constant operand pre-packed (B, or A for the conv shape).\n",
      samples);

  if (!jsonPath.empty()) {
    nlohmann::json j;
    j["cpu"] = cpuModel();
    j["triad_isa"] = TRIAD_RT_ISA;
    j["triad_micro_tile"] = {triad_rt::kMR, triad_rt::kNR};
    j["openblas_config"] = openblas_get_config();
    j["openblas_core"] = openblas_get_corename();
    j["samples"] = samples;
    for (auto& [t, p] : peak)
      j["fma_peak_gflops"][std::to_string(t)] = p;
    j["results"] = nlohmann::json::array();
    for (const Result& r : results)
      j["results"].push_back({{"case", r.caseName},
                              {"impl", r.impl},
                              {"M", r.M},
                              {"N", r.N},
                              {"K", r.K},
                              {"threads", r.threads},
                              {"gflops_median", r.medianGflops},
                              {"gflops_best", r.bestGflops},
                              {"seconds_median", r.medianSeconds},
                              {"pct_peak_median", r.pctPeak}});
    writeJsonAtomically(jsonPath, j);
    fmt::print("wrote {}\n", jsonPath);
  }
  return 0;
}
