#include "gpu/GpuTarget.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace triad::gpu {

ir::partition::Link measureHostLink(const std::string& device) {
  Context ctx(selectDevice(device));
  const size_t big = size_t(16) << 20, small = 4;
  std::vector<char> host(big, 1);
  Buffer b = ctx.buffer(big, "calibrate_link");
  auto median = [&](size_t bytes, int runs) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ctx.write(b, host.data(), bytes);
      ctx.read(b, host.data(), bytes);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  median(big, 1); // first touch
  double lat = median(small, 21);
  double bw = double(big) / std::max(1e-9, median(big, 5) - lat);
  ctx.profile().clear();
  ir::partition::Link l;
  l.name = "opencl:" + ctx.device().name;
  l.gbytesPerS = bw * 1e-9;
  l.latencyUs = lat * 1e6;
  l.basis = fmt::format("measured: OpenCL writes/reads of 16 MiB and 4 B on {}", ctx.device().name);
  return l;
}

} // namespace triad::gpu
