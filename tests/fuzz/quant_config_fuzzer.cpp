// Fuzz target `quant_config`: the FPGA precision configuration (fpga/QuantConfig.h) as `triad
// quantize` and `triad compile --target fpga` read it. The input is the JSON file, optionally
// followed by lines after a line "--": the first of them is --default-precision, the others are
// --precision LAYER:KEY=VALUE overrides. Every layer the config names (and one it does not) is
// then resolved with and without calibration ranges, as the quantizer does, and the resolved
// formats quantize and convert a few values (fpga/FixedPoint.h), as the emulator does.
#include "fpga/QuantConfig.h"
#include "tests/fuzz/FuzzHarness.h"

#include <limits>

using namespace triad;

namespace {

std::vector<std::string> splitLines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) nl = s.size();
    out.emplace_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// What the emulator does with a resolved layer: quantize to the weight format, multiply into
// the (exact) accumulator, cast to the result format and back to a real number.
void exercise(const fpga::LayerQuant& q) {
  const fpga::Quant& w = q.weight();
  for (double x : {0.0, -1.5, 3.25, 1e30, -1e-30}) {
    int64_t raw = fpga::quantize(x, w.format, w.rounding, w.overflow);
    fpga::FixedFormat acc =
        q.exactAccumulator ? fpga::exactAccumulator(w.format, w.format, 16) : q.acc().format;
    if (acc.width > 62) continue; // resolveLayer refuses such a config; exact may exceed it
    fpga::FixedFormat prod = fpga::productFormat(w.format, w.format);
    if (prod.width > 64 || prod.width - prod.intBits > 64) continue;
    int64_t p = fpga::multiply(raw, w.format, raw, w.format);
    int64_t a = fpga::cast(p, prod, acc, q.acc().rounding, q.acc().overflow);
    int64_t r = fpga::cast(a, acc, q.result().format, q.result().rounding, q.result().overflow);
    (void)fpga::dequantize(r, q.result().format);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::asText(data, size);
  std::string json(text);
  std::vector<std::string> flags;
  if (size_t sep = text.find("\n--\n"); sep != std::string_view::npos) {
    json = std::string(text.substr(0, sep));
    flags = splitLines(text.substr(sep + 4));
  }
  fuzz::guarded([&] {
    fpga::QuantConfig c = fpga::QuantConfig::fromJson(json, "fuzz.json");
    if (!flags.empty() && !flags[0].empty()) c.applyDefaultPrecision(flags[0]);
    for (size_t i = 1; i < flags.size(); ++i)
      c.applyOverride(flags[i]);
    std::vector<std::string> layers = {"not-in-the-config"};
    for (const auto& [name, spec] : c.layers)
      layers.push_back(name);
    const double inf = std::numeric_limits<double>::infinity();
    const fpga::RoleRanges ranges[] = {
        {}, {1.5, 0.25, 1e6, 3.0}, {0.0, -1.0, inf, std::numeric_limits<double>::quiet_NaN()}};
    for (const std::string& layer : layers)
      for (const fpga::RoleRanges& r : ranges)
        fuzz::guarded([&] { exercise(fpga::resolveLayer(c, layer, r)); });
    for (std::optional<double> maxAbs : {std::optional<double>(), std::optional<double>(7.5),
                                         std::optional<double>(inf), std::optional<double>(0.0)})
      fuzz::guarded([&] { (void)fpga::resolveInput(c, maxAbs); });
  });
  return 0;
}
