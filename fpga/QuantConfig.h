// Precision configuration of a quantized graph: a format, rounding and overflow mode per layer
// (ONNX node name) and per role, loaded from a JSON file (schema in docs/fpga.md).
//
// Roles: `weight` and `bias` (constants, quantized once), `accumulator` (the sum of a dense
// layer's products) and `result` (what a layer passes on). Lookup order for a layer's role:
// layers[name][role] -> layers[name].precision -> default[role] -> default.precision -> built-in.
// Built-in: values fixed<16,6>; weight/bias convergent + saturate; the accumulator "exact" (wide
// enough that a dense layer's sum can neither round nor overflow: see exactAccumulator); result
// truncate + saturate (hls4ml wraps by default, which turns a large logit into a wrong class);
// graph inputs convergent + saturate.
// A precision of "auto" (or "fixed<W,auto>") picks the integer bits from the value range observed
// on calibration inputs (plus `auto_margin` bits for non-constant roles).
#pragma once

#include "fpga/FixedPoint.h"

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace triad::fpga {

/// How a Dense/Conv layer multiplies by its constant weights: DSP multipliers (triad_dense), or
/// at reuse 1 an adder graph of shifts and adds and no multiplier (fpga/Cmvm.h), or `Auto`: the
/// adder graph wherever it applies (reuse 1, products exact in the accumulator), else DSPs.
enum class Strategy { Dsp, ShiftAdd, Auto };
std::string_view toString(Strategy s);
/// "dsp", "shift_add", "auto"; nullopt otherwise.
std::optional<Strategy> parseStrategy(std::string_view s);

enum class Role : uint8_t { Weight, Bias, Accumulator, Result };
constexpr int kNumRoles = 4;
std::string_view toString(Role r);

/// A format as written in the config: integer bits may be left to calibration ("auto").
struct FormatSpec {
  FixedFormat format;
  bool autoIntBits = false;
  bool exact = false; // accumulator only: derived from the operand formats and the fan-in
};
/// "fixed<16,6>", "ufixed<8,3>", "ap_fixed<16,6>", "auto" (= fixed<16,auto>), "fixed<18,auto>",
/// "exact" (accumulators).
FormatSpec parseFormatSpec(std::string_view s);

struct RoleSpec {
  std::optional<FormatSpec> precision;
  std::optional<Rounding> rounding;
  std::optional<Overflow> overflow;
};

/// Everything that can be set for one layer (or as the default for all).
struct LayerSpec {
  std::optional<FormatSpec> precision; // all roles
  std::array<RoleSpec, kNumRoles> roles;
  // Lookup tables (Sigmoid, Tanh, Softmax's exp): entries and input range [-range, range)
  // (Softmax's exp table: [-range, 0)). Both powers of two.
  std::optional<int64_t> tableSize;
  std::optional<double> tableRange;
  // Softmax: formats of the exp and reciprocal table entries and the reciprocal table's input
  // range [0, invRange) (default: the next power of two >= the number of classes).
  std::optional<FormatSpec> expPrecision, invPrecision;
  std::optional<double> invRange;
};

struct QuantConfig {
  LayerSpec defaults;
  RoleSpec input; // graph inputs
  std::map<std::string, LayerSpec> layers;
  int autoMargin = 1;

  /// Parses JSON text; errors are triad::Error(Usage) naming `label` and the key or layer.
  static QuantConfig fromJson(const std::string& text, const std::string& label);
  /// Reads and parses a file (Io error when unreadable).
  static QuantConfig load(const std::filesystem::path& path);
  /// A command-line override "LAYER:KEY=VALUE" (`--precision`), KEY one of the layer keys of
  /// the file (precision, weight, bias, accumulator, result, table_size, ...): sets that key of
  /// layers[LAYER], keeping what else the file says. Usage error naming the flag when malformed.
  void applyOverride(std::string_view spec);
  /// `--default-precision FORMAT`: default.precision (roles the file sets keep their formats).
  void applyDefaultPrecision(std::string_view format);
  /// The config of a command: the file (if any), then --default-precision, then each
  /// --precision override in order.
  static QuantConfig fromCommandLine(const std::string& path, const std::string& defaultPrecision,
                                     const std::vector<std::string>& overrides);
};

/// A fully resolved quantization: format and modes.
struct Quant {
  FixedFormat format;
  Rounding rounding = Rounding::Truncate;
  Overflow overflow = Overflow::Wrap;
};

/// Resolved settings of one layer.
struct LayerQuant {
  std::array<Quant, kNumRoles> roles;
  bool exactAccumulator = false; // roles[Accumulator] is to be derived by exactAccumulator()
  int64_t tableSize = 1024;
  double tableRange = 8;
  Quant exp, inv;
  double invRange = 0; // 0: derived from the class count
  const Quant& weight() const { return roles[0]; }
  const Quant& bias() const { return roles[1]; }
  const Quant& acc() const { return roles[2]; }
  const Quant& result() const { return roles[3]; }
};

/// Largest magnitude seen per role (nullopt: not observed; "auto" then keeps the integer bits of
/// the default format).
using RoleRanges = std::array<std::optional<double>, kNumRoles>;

/// The accumulator format in which the sum of `fanIn` products of x (format `in`) and w (format
/// `weight`) plus one bias term is exact: fixed<Wx+Ww+g, Ix+Iw+g> with g = ceil(log2(fanIn+1)).
FixedFormat exactAccumulator(const FixedFormat& in, const FixedFormat& weight, int64_t fanIn);

/// Smallest integer bits with which every |x| <= maxAbs is representable in `width` bits.
int autoIntBits(double maxAbs, int width, bool isSigned);

/// Resolves a layer's settings. `defaultTableRange` is the op's table range when none is set
/// (8 for Sigmoid and Softmax, 4 for Tanh). Value roles must be at most 32 bits wide and the
/// accumulator at most 62 (Usage errors naming the layer).
LayerQuant resolveLayer(const QuantConfig& c, const std::string& layer, const RoleRanges& ranges,
                        double defaultTableRange = 8);
/// Resolves the graph-input quantization (maxAbs: observed input range for "auto").
Quant resolveInput(const QuantConfig& c, std::optional<double> maxAbs);

} // namespace triad::fpga
