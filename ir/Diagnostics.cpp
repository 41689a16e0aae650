#include "ir/Diagnostics.h"

#include <cstdio>
#include <cstdlib>

namespace triad {

std::string_view errorKindName(ErrorKind k) {
  switch (k) {
  case ErrorKind::Usage:
    return "usage error";
  case ErrorKind::Io:
    return "i/o error";
  case ErrorKind::InvalidModel:
    return "invalid model";
  case ErrorKind::Unsupported:
    return "unsupported";
  case ErrorKind::Runtime:
    return "run-time error";
  case ErrorKind::Resource:
    return "resource limit";
  case ErrorKind::Internal:
    return "internal error";
  }
  return "error";
}

int exitCodeFor(ErrorKind k) {
  switch (k) {
  case ErrorKind::Usage:
    return 2;
  case ErrorKind::Io:
    return 3;
  case ErrorKind::InvalidModel:
    return 4;
  case ErrorKind::Unsupported:
    return 5;
  case ErrorKind::Runtime:
    return 6;
  case ErrorKind::Resource:
    return 7;
  case ErrorKind::Internal:
    return 70;
  }
  return 1;
}

void assertionFailed(const char* cond, const char* file, int line, const std::string& msg) {
  // __FILE__ is repository-relative (-fmacro-prefix-map), or build-relative under ccache's
  // base_dir ("../../ir/Graph.cpp"): either way, no path of the build machine.
  std::string_view f(file);
  while (f.starts_with("../") || f.starts_with("./"))
    f.remove_prefix(f.find('/') + 1);
  file = f.data();
  throw Error(ErrorKind::Internal, fmt::format("internal error: assertion '{}' failed at {}:{}{}{}",
                                               cond, file, line, msg.empty() ? "" : ": ", msg));
}

} // namespace triad
