#include "ir/System.h"

#include "ir/Diagnostics.h"

#include <cstdio>

namespace triad {

std::string runCapture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) fail(ErrorKind::Io, "cannot run '{}'", cmd);
  char buf[4096];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, k);
  *rc = pclose(p);
  return out;
}

std::string shellQuote(std::string_view s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace triad
