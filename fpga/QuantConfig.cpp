#include "fpga/QuantConfig.h"

#include "frontend/TensorIO.h"
#include "ir/Diagnostics.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace triad::fpga {

std::string_view toString(Strategy s) {
  switch (s) {
  case Strategy::Dsp:
    return "dsp";
  case Strategy::ShiftAdd:
    return "shift_add";
  case Strategy::Auto:
    return "auto";
  }
  return "?";
}

std::optional<Strategy> parseStrategy(std::string_view s) {
  for (Strategy v : {Strategy::Dsp, Strategy::ShiftAdd, Strategy::Auto})
    if (toString(v) == s) return v;
  return std::nullopt;
}

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, kNumRoles> kRoleKeys = {"weight", "bias", "accumulator",
                                                               "result"};

// A JSON value in an error message. Strings from the command line (--precision) may hold any
// bytes; json::dump() throws on invalid UTF-8, so those are shown with U+FFFD instead.
std::string show(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

struct Ctx {
  const std::string& label;
  [[noreturn]] void error(const std::string& where, const std::string& msg) const {
    fail(ErrorKind::Usage, "{}: {}: {}", label, where, msg);
  }
};

// Wraps errors from the format/mode parsers with the key they came from.
template <typename F> auto withKey(const Ctx& c, const std::string& where, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    c.error(where, e.what());
  }
}

std::string asString(const Ctx& c, const std::string& where, const json& j) {
  if (!j.is_string()) c.error(where, fmt::format("expected a string, got {}", show(j)));
  return j.get<std::string>();
}

FormatSpec formatAt(const Ctx& c, const std::string& where, const json& j) {
  std::string s = asString(c, where, j);
  return withKey(c, where, [&] { return parseFormatSpec(s); });
}

RoleSpec parseRole(const Ctx& c, const std::string& where, const json& j) {
  RoleSpec r;
  if (j.is_string()) {
    r.precision = formatAt(c, where, j);
    return r;
  }
  if (!j.is_object())
    c.error(where, fmt::format("expected a format string or an object, got {}", show(j)));
  for (auto& [k, v] : j.items()) {
    std::string w = where + "." + k;
    // The lambdas capture `value`, not the structured binding `v`: clang 14, which builds the
    // fuzz targets, cannot capture structured bindings.
    const json& value = v;
    if (k == "precision")
      r.precision = formatAt(c, w, v);
    else if (k == "rounding")
      r.rounding = withKey(c, w, [&] { return parseRounding(asString(c, w, value)); });
    else if (k == "overflow")
      r.overflow = withKey(c, w, [&] { return parseOverflow(asString(c, w, value)); });
    else
      c.error(w, "unknown key (expected precision, rounding, overflow)");
  }
  return r;
}

double positiveNumber(const Ctx& c, const std::string& where, const json& j, bool powerOfTwo) {
  if (!j.is_number()) c.error(where, fmt::format("expected a number, got {}", show(j)));
  double v = j.get<double>();
  int e = 0;
  if (!(v > 0) || (powerOfTwo && std::frexp(v, &e) != 0.5))
    c.error(where, fmt::format("expected a positive {}, got {}", powerOfTwo ? "power of two" : "",
                               show(j)));
  return v;
}

LayerSpec parseLayer(const Ctx& c, const std::string& where, const json& j) {
  LayerSpec l;
  if (j.is_string()) {
    l.precision = formatAt(c, where, j);
    return l;
  }
  if (!j.is_object())
    c.error(where, fmt::format("expected a format string or an object, got {}", show(j)));
  for (auto& [k, v] : j.items()) {
    std::string w = where + "." + k;
    auto role = std::find(kRoleKeys.begin(), kRoleKeys.end(), k);
    if (role != kRoleKeys.end()) {
      l.roles[size_t(role - kRoleKeys.begin())] = parseRole(c, w, v);
    } else if (k == "precision") {
      l.precision = formatAt(c, w, v);
    } else if (k == "table_size") {
      double n = positiveNumber(c, w, v, true);
      if (n < 2 || n > 65536 || !v.is_number_integer())
        c.error(w, "expected an integer power of two in 2..65536");
      l.tableSize = int64_t(n);
    } else if (k == "table_range") {
      l.tableRange = positiveNumber(c, w, v, true);
    } else if (k == "exp_precision") {
      l.expPrecision = formatAt(c, w, v);
    } else if (k == "inv_precision") {
      l.invPrecision = formatAt(c, w, v);
    } else if (k == "inv_range") {
      l.invRange = positiveNumber(c, w, v, true);
    } else {
      c.error(w, "unknown key (expected precision, weight, bias, accumulator, result, "
                 "table_size, table_range, exp_precision, inv_precision, inv_range)");
    }
  }
  return l;
}

// Copies what `src` sets over `dst`.
void mergeLayer(LayerSpec& dst, const LayerSpec& src) {
  if (src.precision) dst.precision = src.precision;
  for (size_t i = 0; i < src.roles.size(); ++i) {
    if (src.roles[i].precision) dst.roles[i].precision = src.roles[i].precision;
    if (src.roles[i].rounding) dst.roles[i].rounding = src.roles[i].rounding;
    if (src.roles[i].overflow) dst.roles[i].overflow = src.roles[i].overflow;
  }
  if (src.tableSize) dst.tableSize = src.tableSize;
  if (src.tableRange) dst.tableRange = src.tableRange;
  if (src.expPrecision) dst.expPrecision = src.expPrecision;
  if (src.invPrecision) dst.invPrecision = src.invPrecision;
  if (src.invRange) dst.invRange = src.invRange;
}

Quant resolveFormat(const FormatSpec& spec, Rounding r, Overflow o, std::optional<double> maxAbs,
                    int margin) {
  Quant q{spec.format, r, o};
  if (spec.autoIntBits && maxAbs) {
    q.format.intBits = autoIntBits(*maxAbs, spec.format.width, spec.format.isSigned) + margin;
  }
  return q;
}

} // namespace

std::string_view toString(Role r) {
  return kRoleKeys[size_t(r)];
}

FormatSpec parseFormatSpec(std::string_view s) {
  std::string l(s);
  for (char& ch : l)
    ch = char(std::tolower(static_cast<unsigned char>(ch)));
  std::erase_if(l, [](char ch) { return std::isspace(static_cast<unsigned char>(ch)); });
  if (l == "auto") return FormatSpec{FixedFormat{16, 6, true}, true};
  if (l == "exact") return FormatSpec{FixedFormat{16, 6, true}, false, true};
  size_t p = l.find(",auto>");
  if (p != std::string::npos && p + 6 == l.size()) {
    FormatSpec f{parseFormat(l.substr(0, p) + ",0>"), true};
    f.format.intBits = f.format.isSigned ? 1 : 0;
    return f;
  }
  return FormatSpec{parseFormat(s), false};
}

QuantConfig QuantConfig::fromJson(const std::string& text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e400
    fail(ErrorKind::Usage, "{}: not valid JSON: {}", label, e.what());
  }
  Ctx c{label};
  if (!j.is_object()) c.error("top level", "expected a JSON object");
  QuantConfig q;
  for (auto& [k, v] : j.items()) {
    if (k == "default") {
      q.defaults = parseLayer(c, k, v);
    } else if (k == "input") {
      q.input = parseRole(c, k, v);
    } else if (k == "auto_margin") {
      if (!v.is_number_integer() || v.get<int>() < 0 || v.get<int>() > 16)
        c.error(k, fmt::format("expected an integer in 0..16, got {}", show(v)));
      q.autoMargin = v.get<int>();
    } else if (k == "layers") {
      if (!v.is_object()) c.error(k, "expected an object keyed by ONNX node name");
      for (auto& [name, lv] : v.items())
        q.layers[name] = parseLayer(c, fmt::format("layers['{}']", name), lv);
    } else if (k == "reuse") {
      // Reuse factors per layer: read by the Verilog emitter's caller (triad compile).
      if (!v.is_object()) c.error(k, "expected an object mapping layer names to integers");
      for (auto& [name, r] : v.items())
        if (!r.is_number_integer() || r.get<int64_t>() < 1)
          c.error(fmt::format("reuse['{}']", name),
                  fmt::format("expected a positive integer, got {}", show(r)));
    } else if (k == "strategy") {
      // Dense/Conv strategies per layer ("dsp", "shift_add", "auto"): read like "reuse".
      if (!v.is_object()) c.error(k, "expected an object mapping layer names to strategies");
      for (auto& [name, st] : v.items())
        if (!st.is_string() || !parseStrategy(st.get<std::string>()))
          c.error(fmt::format("strategy['{}']", name),
                  fmt::format("expected \"dsp\", \"shift_add\" or \"auto\", got {}", show(st)));
    } else if (k == "weights") {
      // Dense/Conv weight storage per layer at reuse > 1 ("rom", "logic"): read like "reuse".
      if (!v.is_object())
        c.error(k, "expected an object mapping layer names to \"rom\" or \"logic\"");
      for (auto& [name, st] : v.items())
        if (!st.is_string() || (st.get<std::string>() != "rom" && st.get<std::string>() != "logic"))
          c.error(fmt::format("weights['{}']", name),
                  fmt::format("expected \"rom\" or \"logic\", got {}", show(st)));
    } else {
      c.error(k, "unknown key (expected default, input, layers, auto_margin, reuse, strategy, "
                 "weights)");
    }
  }
  return q;
}

QuantConfig QuantConfig::load(const std::filesystem::path& path) {
  return fromJson(frontend::readFile(path), path.string());
}

FixedFormat exactAccumulator(const FixedFormat& in, const FixedFormat& weight, int64_t fanIn) {
  int g = 0;
  while ((int64_t(1) << g) < fanIn + 1)
    ++g;
  return FixedFormat{in.width + weight.width + g, in.intBits + weight.intBits + g,
                     in.isSigned || weight.isSigned};
}

int autoIntBits(double maxAbs, int width, bool isSigned) {
  if (!(maxAbs > 0) || !std::isfinite(maxAbs)) return isSigned ? 1 : 0;
  for (int i = -width; i < 64; ++i) {
    FixedFormat f{width, i, isSigned};
    if (f.fracBits() > 64) continue;
    if (maxAbs <= maxValue(f)) return i;
  }
  return 64;
}

LayerQuant resolveLayer(const QuantConfig& c, const std::string& layer, const RoleRanges& ranges,
                        double defaultTableRange) {
  static const LayerSpec kEmpty;
  auto it = c.layers.find(layer);
  const LayerSpec& L = it == c.layers.end() ? kEmpty : it->second;
  const LayerSpec& D = c.defaults;
  const FormatSpec builtin{FixedFormat{16, 6, true}, false};
  const FormatSpec builtinAcc{FixedFormat{16, 6, true}, false, true};
  LayerQuant q;
  for (int r = 0; r < kNumRoles; ++r) {
    Role role = Role(r);
    bool constant = role == Role::Weight || role == Role::Bias;
    FormatSpec f = L.roles[r].precision        ? *L.roles[r].precision
                   : L.precision               ? *L.precision
                   : D.roles[r].precision      ? *D.roles[r].precision
                   : D.precision               ? *D.precision
                   : role == Role::Accumulator ? builtinAcc
                                               : builtin;
    Rounding rd = L.roles[r].rounding.value_or(
        D.roles[r].rounding.value_or(constant ? Rounding::Convergent : Rounding::Truncate));
    Overflow ov = L.roles[r].overflow.value_or(D.roles[r].overflow.value_or(
        role == Role::Accumulator ? Overflow::Wrap : Overflow::Saturate));
    if (f.exact) {
      if (role != Role::Accumulator)
        fail(ErrorKind::Usage, "layer '{}': {}: \"exact\" is a precision for accumulators only",
             layer, toString(role));
      q.exactAccumulator = true;
    }
    q.roles[r] = resolveFormat(f, rd, ov, ranges[r], constant ? 0 : c.autoMargin);
    const FixedFormat& ff = q.roles[r].format;
    int limit = role == Role::Accumulator ? 62 : 32;
    if (ff.width > limit)
      fail(ErrorKind::Usage, "layer '{}': {} format {} is wider than {} bits", layer,
           toString(role), formatToString(ff), limit);
    try {
      checkFormat(ff);
    } catch (const Error& e) {
      fail(ErrorKind::Usage, "layer '{}': {}: {}", layer, toString(role), e.what());
    }
  }
  q.tableSize = L.tableSize.value_or(D.tableSize.value_or(1024));
  q.tableRange = L.tableRange.value_or(D.tableRange.value_or(defaultTableRange));
  // hls4ml's exp_table_t / inv_table_t: ap_fixed<18,8,AP_RND,AP_SAT>.
  FormatSpec tdef{FixedFormat{18, 8, true}, false};
  q.exp = Quant{L.expPrecision.value_or(D.expPrecision.value_or(tdef)).format,
                Rounding::RoundHalfUp, Overflow::Saturate};
  q.inv = Quant{L.invPrecision.value_or(D.invPrecision.value_or(tdef)).format,
                Rounding::RoundHalfUp, Overflow::Saturate};
  for (const Quant* t : {&q.exp, &q.inv})
    if (t->format.width > 32)
      fail(ErrorKind::Usage, "layer '{}': table format {} is wider than 32 bits", layer,
           formatToString(t->format));
  q.invRange = L.invRange.value_or(D.invRange.value_or(0));
  return q;
}

Quant resolveInput(const QuantConfig& c, std::optional<double> maxAbs) {
  const RoleSpec& I = c.input;
  FormatSpec f = I.precision            ? *I.precision
                 : c.defaults.precision ? *c.defaults.precision
                                        : FormatSpec{FixedFormat{16, 6, true}, false};
  Quant q = resolveFormat(f, I.rounding.value_or(Rounding::Convergent),
                          I.overflow.value_or(Overflow::Saturate), maxAbs, c.autoMargin);
  if (q.format.width > 32)
    fail(ErrorKind::Usage, "input format {} is wider than 32 bits", formatToString(q.format));
  return q;
}

void QuantConfig::applyOverride(std::string_view spec) {
  const std::string label = "--precision";
  std::string text(spec);
  size_t eq = text.find('=');
  size_t colon = eq == std::string::npos ? std::string::npos : text.rfind(':', eq);
  if (eq == std::string::npos || colon == std::string::npos || colon == 0 || eq == colon + 1 ||
      eq + 1 == text.size())
    fail(ErrorKind::Usage,
         "--precision '{}': expected LAYER:KEY=VALUE, e.g. /fc1/Gemm:weight=fixed<8,2> (KEY: "
         "precision, weight, bias, accumulator, result, table_size, table_range, exp_precision, "
         "inv_precision, inv_range)",
         text);
  std::string layer = text.substr(0, colon), key = text.substr(colon + 1, eq - colon - 1);
  std::string value = text.substr(eq + 1);
  json j = json::object();
  json v = json::parse(value, nullptr, false);
  j[key] = v.is_number() ? v : json(value);
  Ctx c{label};
  mergeLayer(layers[layer], parseLayer(c, fmt::format("layers['{}']", layer), j));
}

void QuantConfig::applyDefaultPrecision(std::string_view format) {
  try {
    defaults.precision = parseFormatSpec(format);
  } catch (const Error& e) {
    fail(ErrorKind::Usage, "--default-precision: {}", e.what());
  }
}

QuantConfig QuantConfig::fromCommandLine(const std::string& path,
                                         const std::string& defaultPrecision,
                                         const std::vector<std::string>& overrides) {
  QuantConfig c = path.empty() ? QuantConfig{} : load(path);
  if (!defaultPrecision.empty()) c.applyDefaultPrecision(defaultPrecision);
  for (const std::string& o : overrides)
    c.applyOverride(o);
  return c;
}

} // namespace triad::fpga
