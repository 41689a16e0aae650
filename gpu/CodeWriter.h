// A small indenting writer for generated OpenCL C (internal to gpu/).
//
// A model's strings (graph, node and value names) are untrusted: they never reach the source by
// hand. Kernel names are kernelIdentifier()s made distinct by the code generator's
// escape::Uniquer; names in comments go through escape::comment, string literals through
// escape::stringLiteral(s, escape::Lang::OpenCL) (ir/Escape.h).
#pragma once

#include "ir/Escape.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace triad::gpu {

class CodeWriter {
public:
  template <typename... Args> void line(fmt::format_string<Args...> f, Args&&... args) {
    text_.append(size_t(indent_) * 2, ' ');
    text_ += fmt::format(f, std::forward<Args>(args)...);
    text_ += '\n';
  }
  void blank() { text_ += '\n'; }
  /// Several lines (e.g. a user snippet), each indented at the current level.
  void lines(std::string_view block) {
    while (!block.empty()) {
      size_t eol = block.find('\n');
      std::string_view l = block.substr(0, eol);
      if (!l.empty()) text_.append(size_t(indent_) * 2, ' ');
      text_ += l;
      text_ += '\n';
      if (eol == std::string_view::npos) break;
      block.remove_prefix(eol + 1);
    }
  }
  /// "<header> {" and one level deeper; close() ends it.
  template <typename... Args> void open(fmt::format_string<Args...> f, Args&&... args) {
    text_.append(size_t(indent_) * 2, ' ');
    text_ += fmt::format(f, std::forward<Args>(args)...);
    text_ += " {\n";
    ++indent_;
  }
  void close(std::string_view trailer = "}") {
    --indent_;
    text_.append(size_t(indent_) * 2, ' ');
    text_ += trailer;
    text_ += '\n';
  }
  const std::string& str() const { return text_; }

private:
  std::string text_;
  int indent_ = 0;
};

/// A float literal OpenCL C reads back exactly: "1.0f", "1e-05f", "0.125f".
inline std::string floatLiteral(float v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

/// Rounds `n` up to a multiple of `m`.
inline int64_t roundUp(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}
inline int64_t ceilDiv(int64_t n, int64_t m) {
  return (n + m - 1) / m;
}

/// "acc = ...;" epilogue text for the kernel comment ("none" when empty).
std::string describeEpilogue(std::string_view code, std::string_view description);

/// Kernel parameter list: fixed buffers then the epilogue's parameters, joined for a signature.
std::string joinParams(const std::vector<std::string>& params, int indent);

/// The name part of a parameter declaration ("__global const float* restrict bias" -> "bias").
std::string paramName(std::string_view decl);

/// Appends declarations `extra` (an epilogue's parameters) to a kernel's `decls` and their names
/// to its `names` (GeneratedKernel::params).
void appendParams(const std::vector<std::string>& extra, std::vector<std::string>& decls,
                  std::vector<std::string>& names);

/// The include-guarded work-group reduction helpers (sum and max) used by reduction kernels.
std::string workGroupReduceHelpers();

} // namespace triad::gpu
