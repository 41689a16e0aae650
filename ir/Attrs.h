// Typed op attributes.
//
// Every op with attributes declares a struct deriving from AttrsOf<Self> and lists its fields
// once in `fields(f)`; printing, equality (for CSE) and hashing are derived from that list:
//
//   struct ConvAttrs : AttrsOf<ConvAttrs> {
//     std::vector<int64_t> kernel, strides, pads, dilations;
//     int64_t group = 1;
//     template <class F> void fields(F&& f) const {
//       f("kernel", kernel); f("strides", strides); f("pads", pads);
//       f("dilations", dilations); f("group", group);
//     }
//   };
//
// Field types: bool, int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
// Tensor, and enums with a `toString(E)` overload found by ADL.
#pragma once

#include "ir/Tensor.h"

#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace triad::ir {

class Attrs {
public:
  virtual ~Attrs() = default;
  /// (name, printed value) pairs in declaration order.
  virtual std::vector<std::pair<std::string, std::string>> printed() const = 0;
  /// Exact equality: same attribute struct and identical field values (for CSE).
  virtual bool equals(const Attrs& other) const = 0;
  /// Hash consistent with equals (equal attributes hash equally), from the printed fields.
  size_t hash() const {
    size_t h = 0;
    for (const auto& [name, value] : printed())
      h = (h ^ std::hash<std::string>{}(name + "=" + value)) * 1099511628211ull;
    return h;
  }
};

/// Ops without attributes share this.
struct NoAttrs final : Attrs {
  std::vector<std::pair<std::string, std::string>> printed() const override { return {}; }
  bool equals(const Attrs& o) const override { return dynamic_cast<const NoAttrs*>(&o); }
};

namespace detail {
std::string printTensorAttr(const Tensor& t);
inline std::string printFloat(float v) {
  return fmt::format("{}", v);
}

template <typename T> std::string printAttrValue(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, float>)
    return printFloat(v);
  else if constexpr (std::is_same_v<T, std::string>)
    return fmt::format("\"{}\"", v);
  else if constexpr (std::is_same_v<T, Tensor>)
    return printTensorAttr(v);
  else if constexpr (std::is_enum_v<T>)
    return std::string(toString(v));
  else if constexpr (std::is_same_v<T, std::vector<float>>) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s.append(printFloat(v[i]));
    }
    s += ']';
    return s;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return fmt::format("[{}]", fmt::join(v, ","));
  else if constexpr (std::is_same_v<T, std::optional<float>>)
    return v ? printFloat(*v) : "none";
  else if constexpr (std::is_same_v<T, std::optional<int64_t>>)
    return v ? fmt::format("{}", *v) : "none";
  else
    return fmt::format("{}", v);
}

/// Exact equality of one field value: floating-point values compare by bit pattern (so a NaN
/// equals the same NaN and -0 differs from 0: two nodes are interchangeable only when their
/// attributes are identical), tensors by type and bytes.
template <typename T> bool attrValueEquals(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, float>)
    return std::memcmp(&a, &b, sizeof(float)) == 0;
  else if constexpr (std::is_same_v<T, std::vector<float>>)
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  else if constexpr (std::is_same_v<T, std::optional<float>>)
    return a.has_value() == b.has_value() && (!a || attrValueEquals(*a, *b));
  else
    return a == b;
}
} // namespace detail

template <typename Derived> struct AttrsOf : Attrs {
  std::vector<std::pair<std::string, std::string>> printed() const override {
    std::vector<std::pair<std::string, std::string>> out;
    static_cast<const Derived&>(*this).fields([&](const char* name, const auto& value) {
      out.emplace_back(name, detail::printAttrValue(value));
    });
    return out;
  }
  bool equals(const Attrs& other) const override {
    auto* o = dynamic_cast<const Derived*>(&other);
    if (!o) return false;
    // Both objects list the same fields in the same order. Some fields are computed on the fly
    // (temporaries that only live during the callback), so field i of `other` is compared from
    // inside a second walk rather than remembered by address.
    bool equal = true;
    size_t i = 0;
    static_cast<const Derived&>(*this).fields([&](const char*, const auto& mine) {
      using T = std::decay_t<decltype(mine)>;
      size_t j = 0;
      o->fields([&](const char*, const auto& theirs) {
        if (j++ != i) return;
        if constexpr (std::is_same_v<T, std::decay_t<decltype(theirs)>>)
          equal = equal && detail::attrValueEquals(mine, theirs);
        else
          equal = false;
      });
      ++i;
    });
    return equal;
  }
};

} // namespace triad::ir
