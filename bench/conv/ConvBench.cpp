// triad-conv-bench: the CPU run-time's blocked 3x3 stride-1 convolution (conv2d_nchwc) on
// ResNet-50's and VGG-16's layer shapes, by its direct kernel and by Winograd F(2x2, 3x3) and
// F(4x4, 3x3), in one process: interleaved rounds (direct, F2, F4, then the reverse), the
// median over rounds of each mode's best-of-`reps` time. Prints a Markdown table with the
// speed-ups over the direct kernel, the automatic choice (conv2d_nchwc_winograd) and each
// mode's largest error relative to the largest output, against the naive convolution in double.
// A benchmark, not a test: run it by hand (docs/performance.md).
//
// Usage: triad-conv-bench [threads = 1] [rounds = 5] [reps = 5]
#include "cpu/runtime/triad_kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct Layer {
  const char* name;
  int C, H, OC; // square planes, pad 1
};

triad_rt::Conv2dShape shapeOf(const Layer& l) {
  triad_rt::Conv2dShape s;
  s.C = l.C, s.H = s.W = l.H, s.OC = l.OC, s.KH = s.KW = 3;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  return s;
}

/// The naive convolution in double at a sample of outputs (every 7th), for the error column.
double relativeError(const triad_rt::Conv2dShape& s, const std::vector<float>& x,
                     const std::vector<float>& w, const std::vector<float>& yBlocked) {
  const int OH = s.OH(), OW = s.OW();
  double err = 0, scale = 0;
  for (size_t i = 0; i < yBlocked.size(); i += 7) {
    // blocked index -> (oc, oh, ow)
    const size_t lane = i % 16, pix = i / 16 % (static_cast<size_t>(OH) * OW);
    const size_t ob = i / 16 / (static_cast<size_t>(OH) * OW);
    const int oc = static_cast<int>(ob * 16 + lane), oh = static_cast<int>(pix / OW),
              ow = static_cast<int>(pix % OW);
    double acc = 0;
    for (int c = 0; c < s.C; ++c)
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
          const int ih = oh + kh - 1, iw = ow + kw - 1;
          if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
          acc += static_cast<double>(w[((static_cast<size_t>(oc) * s.C + c) * 3 + kh) * 3 + kw]) *
                 x[((static_cast<size_t>(c / 16) * s.H + ih) * s.W + iw) * 16 + c % 16];
        }
    err = std::max(err, std::fabs(acc - yBlocked[i]));
    scale = std::max(scale, std::fabs(acc));
  }
  return err / scale;
}

} // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  triad_rt::set_num_threads(threads);
  const Layer layers[] = {
      {"ResNet-50 layer1 (56x56x64)", 64, 56, 64},
      {"ResNet-50 layer2 (28x28x128)", 128, 28, 128},
      {"ResNet-50 layer3 (14x14x256)", 256, 14, 256},
      {"ResNet-50 layer4 (7x7x512)", 512, 7, 512},
      {"VGG-16 conv1_2 (224x224x64)", 64, 224, 64},
      {"VGG-16 conv2_2 (112x112x128)", 128, 112, 128},
      {"VGG-16 conv3_x (56x56x256)", 256, 56, 256},
      {"VGG-16 conv4_x (28x28x512)", 512, 28, 512},
  };
  std::printf("threads %d, %d rounds, best of %d per round; ISA %s\n\n", threads, rounds, reps,
              TRIAD_RT_ISA);
  std::printf(
      "| layer (3x3, pad 1) | direct | F(2x2) | F(4x4) | F2 speed-up | F4 speed-up | auto | "
      "error direct / F2 / F4 |\n|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Layer& l : layers) {
    const triad_rt::Conv2dShape s = shapeOf(l);
    std::vector<float> x(static_cast<size_t>(s.C) * s.H * s.W),
        w(static_cast<size_t>(s.OC) * s.C * 9), bias(s.OC);
    for (float& v : x)
      v = u(rng);
    for (float& v : w)
      v = u(rng);
    for (float& v : bias)
      v = u(rng);
    const int modes[3] = {0, 2, 4};
    std::vector<float> packed[3];
    std::vector<unsigned char> scratch[3];
    std::vector<float> y(static_cast<size_t>(s.OC) * s.OH() * s.OW());
    double error[3];
    for (int m = 0; m < 3; ++m) {
      triad_rt::detail::winograd_setting() = modes[m];
      packed[m].resize(triad_rt::conv2d_nchwc_weights_size(s));
      triad_rt::conv2d_nchwc_pack_weights(s, w.data(), packed[m].data());
      scratch[m].resize(triad_rt::conv2d_nchwc_scratch_bytes(s, true));
      triad_rt::conv2d_nchwc(s, x.data(), true, packed[m].data(), nullptr, y.data(),
                             scratch[m].data());
      error[m] = relativeError(s, x, w, y);
    }
    std::vector<double> times[3];
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < 3; ++k) {
        const int m = r % 2 == 0 ? k : 2 - k;
        triad_rt::detail::winograd_setting() = modes[m];
        double best = 1e30;
        for (int i = 0; i < reps; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          triad_rt::conv2d_nchwc(s, x.data(), true, packed[m].data(), bias.data(), y.data(),
                                 scratch[m].data());
          best = std::min(
              best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
        }
        times[m].push_back(best);
      }
    double med[3];
    for (int m = 0; m < 3; ++m) {
      std::sort(times[m].begin(), times[m].end());
      med[m] = times[m][times[m].size() / 2];
    }
    triad_rt::detail::winograd_setting() = -1;
    std::printf("| %s | %.3f ms | %.3f ms | %.3f ms | %.2fx | %.2fx | %s | %.1e / %.1e / %.1e |\n",
                l.name, med[0], med[1], med[2], med[0] / med[1], med[0] / med[2],
                triad_rt::conv2d_nchwc_winograd(s) == 4   ? "F4"
                : triad_rt::conv2d_nchwc_winograd(s) == 2 ? "F2"
                                                          : "direct",
                error[0], error[1], error[2]);
  }
  return 0;
}
