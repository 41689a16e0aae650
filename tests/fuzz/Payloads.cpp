#include "tests/fuzz/Payloads.h"

#include "tests/fuzz/FuzzHarness.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

namespace triad::fuzz {

const std::string& markerPath() {
  static const std::string path = "/tmp/triad-fuzz-code-execution";
  return path;
}

const std::vector<std::string>& stringPayloads() {
  static const std::vector<std::string> payloads = [] {
    const std::string& m = markerPath();
    return std::vector<std::string>{
        // C++ / OpenCL C: a directive and a static initializer on new lines.
        fmt::format("a\n#ifndef PWNED_ONCE\n#define PWNED_ONCE\n#include <cstdlib>\nstatic int "
                    "pwned_x = std::system(\"touch {}\");\n#endif\n//",
                    m),
        fmt::format("*/ static int pwned_y = std::system(\"touch {}\"); /*", m),
        fmt::format("\"); static int pwned_z = std::system(\"touch {}\"); (\"", m),
        "ends in a splice \\",
        "trigraph \?\?/",
        "\n#error PWNED\n",
        // Verilog.
        fmt::format("m\n`include \"/etc/passwd\"\ninitial $system(\"touch {}\"); // PWNED\n", m),
        fmt::format("*/ initial $system(\"touch {}\"); /*", m),
        // Makefiles, shell, Tcl, Python.
        fmt::format("mk\n\t$(shell touch {})\nPWNED:\n", m),
        fmt::format("$(touch {}) `touch {}` ; touch {} #", m, m, m),
        fmt::format("[exec touch {}]", m),
        fmt::format("'''; __import__('os').system('touch {}'); '''", m),
        // Markup.
        "<script>document.title='PWNED'</script>",
        "| a | b |\n|---|---| PWNED",
        "\"]; evil_PWNED [label=\"x\"]; x -> y [label=\"",
        // Format strings, terminals, long names.
        "{} {0} {:>99999999} %s%n%x",
        "\x1b[2J\x1b]0;PWNED\x07\r\x7f",
        "\u202e ünïcødé 名前 \U0001f600",
        std::string(4096, 'L') + "\n#error PWNED long\n",
        "a/b",
        "a.b",
    };
  }();
  return payloads;
}

const std::vector<std::string>& payloadLines() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    for (const std::string& p : stringPayloads()) {
      size_t start = p.find('\n');
      while (start != std::string::npos) {
        size_t end = p.find('\n', start + 1);
        std::string line = p.substr(start + 1, end == std::string::npos ? end : end - start - 1);
        size_t b = line.find_first_not_of(" \t\r");
        line = b == std::string::npos ? "" : line.substr(b);
        // Only lines that name the marker or PWNED: "#include <cstdlib>" is a generator's own.
        if (line.find("PWNED") != std::string::npos || line.find(markerPath()) != std::string::npos)
          out.push_back(line);
        start = end;
      }
    }
    return out;
  }();
  return lines;
}

std::string injectedLine(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    size_t b = line.find_first_not_of(" \t\r");
    if (b != std::string_view::npos) {
      line = line.substr(b);
      for (const std::string& p : payloadLines())
        if (line.substr(0, p.size()) == p) return std::string(line.substr(0, 200));
    }
    start = end + 1;
  }
  return {};
}

void checkMarker(std::string_view where) {
  std::error_code ec;
  if (std::filesystem::exists(markerPath(), ec)) {
    std::filesystem::remove(markerPath(), ec);
    finding("code execution",
            fmt::format("{}: a model string ran as code (it created {})", where, markerPath()));
  }
}

} // namespace triad::fuzz
