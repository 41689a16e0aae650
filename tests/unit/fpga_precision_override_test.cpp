// Command-line precision overrides (--default-precision, --precision LAYER:KEY=VALUE) on top of a
// config file: what they set, what they keep, and the errors naming the flag.
#include "fpga/QuantConfig.h"
#include "ir/Diagnostics.h"

#include <gtest/gtest.h>

using namespace triad;
using namespace triad::fpga;

TEST(PrecisionOverride, SetsOneKeyAndKeepsTheRestOfTheFile) {
  QuantConfig c = QuantConfig::fromJson(
      R"({"layers": {"/fc1/Gemm": {"weight": {"precision": "fixed<10,3>",
                                               "rounding": "truncate"}, "bias": "fixed<12,4>"}}})",
      "f.json");
  c.applyOverride("/fc1/Gemm:weight=fixed<8,2>");
  c.applyOverride("/Softmax:table_size=256");
  c.applyOverride("/Softmax:exp_precision=fixed<12,4>");
  c.applyDefaultPrecision("fixed<18,8>");
  const LayerSpec& l = c.layers.at("/fc1/Gemm");
  EXPECT_EQ(formatToString(l.roles[0].precision->format), "fixed<8,2>");
  EXPECT_EQ(l.roles[0].rounding, Rounding::Truncate); // from the file
  EXPECT_EQ(formatToString(l.roles[1].precision->format), "fixed<12,4>");
  EXPECT_EQ(c.layers.at("/Softmax").tableSize, 256);
  EXPECT_EQ(formatToString(c.layers.at("/Softmax").expPrecision->format), "fixed<12,4>");
  EXPECT_EQ(formatToString(c.defaults.precision->format), "fixed<18,8>");
  // Resolved: the layer's weight role wins over the default precision; others take the default.
  LayerQuant q = resolveLayer(c, "/fc1/Gemm", RoleRanges{});
  EXPECT_EQ(formatToString(q.weight().format), "fixed<8,2>");
  EXPECT_EQ(formatToString(q.result().format), "fixed<18,8>");
  // Layer names may hold ':'; the key is after the last one before '='.
  c.applyOverride("a:b/Gemm:result=fixed<9,3>");
  EXPECT_EQ(formatToString(c.layers.at("a:b/Gemm").roles[3].precision->format), "fixed<9,3>");
}

TEST(PrecisionOverride, ErrorsNameTheFlag) {
  auto expectUsage = [](auto f, const std::string& text) {
    try {
      f();
      FAIL() << "expected an error containing " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  QuantConfig c;
  expectUsage([&] { c.applyOverride("nonsense"); },
              "--precision 'nonsense': expected LAYER:KEY=VALUE");
  expectUsage([&] { c.applyOverride("/fc1/Gemm:wieght=fixed<8,2>"); },
              "--precision: layers['/fc1/Gemm'].wieght: unknown key");
  expectUsage([&] { c.applyOverride("/fc1/Gemm:weight=fixed<8"); }, "layers['/fc1/Gemm'].weight");
  expectUsage([&] { c.applyOverride("/Softmax:table_size=100"); }, "table_size");
  expectUsage([&] { c.applyDefaultPrecision("fixed<99,2>"); }, "--default-precision");
  // Found by the quant_config fuzz target: a value that is not valid UTF-8 made the message
  // itself throw (nlohmann::json's dump(): an internal error, exit 70).
  expectUsage(
      [&] { c.applyOverride("/Softmax:table_size=25\xca\xf5"); },
      "--precision: layers['/Softmax'].table_size: expected a number, got \"25\xef\xbf\xbd");
  expectUsage([&] { c.applyOverride("fc:weight=\xff"); }, "layers['fc'].weight");
}
