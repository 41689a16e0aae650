// User-facing errors. A user error (bad model, unsupported op, bad flag value) is thrown as
// triad::Error carrying a category and a message that names the element at fault; the CLI
// catches it at its edge, prints it on stderr and maps the category to an exit code.
// Internal invariants use TRIAD_ASSERT: a failure there is a bug in Triad, not in the input.
#pragma once

#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace triad {

enum class ErrorKind {
  Usage,        // bad command-line flag or value
  Io,           // a file cannot be read or written
  InvalidModel, // the model is malformed (truncated, cycles, dangling inputs, wrong types)
  Unsupported,  // valid ONNX that Triad does not handle (op, attribute value, opset, dtype)
  Runtime,      // valid model, but the inputs given do not fit it
  Resource,     // the model or its inputs need more memory than the run may use (--max-memory)
  Internal,     // a bug in Triad
};

std::string_view errorKindName(ErrorKind k);
/// Documented process exit code for each kind (see docs/cli.md).
int exitCodeFor(ErrorKind k);

class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, std::string message)
      : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

private:
  ErrorKind kind_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(kind, fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] void assertionFailed(const char* cond, const char* file, int line,
                                  const std::string& msg);

} // namespace triad

#define TRIAD_ASSERT(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::triad::assertionFailed(#cond, __FILE__, __LINE__, ::fmt::format("" __VA_ARGS__));          \
  } while (0)
