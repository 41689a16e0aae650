#include "frontend/QdqQuantizer.h"

#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/System.h"

#include <filesystem>
#include <sys/wait.h>

#include <fmt/format.h>

namespace triad::frontend {

nlohmann::json quantizeToQdq(const std::string& sourceRoot, const std::string& model,
                             const std::string& calibration, const std::string& out,
                             const QdqOptions& o) {
  namespace fs = std::filesystem;
  std::string python = projectPython(sourceRoot, {".venv-peers", ".venv"}, "python3");
  fs::path script = fs::path(sourceRoot) / "python" / "triad" / "qdq.py";
  if (!fs::exists(script))
    fail(ErrorKind::Unsupported,
         "QDQ quantization needs the triad Python package's qdq.py, not "
         "found at '{}'",
         script.string());
  std::string cmd =
      fmt::format("{} {} {} {} {} --method {} --activations {} --batch {}{} 2>&1",
                  shellQuote(python), shellQuote(script.string()), shellQuote(model),
                  shellQuote(calibration), shellQuote(out), shellQuote(o.method),
                  shellQuote(o.activations), o.batchRows, o.perTensor ? " --per-tensor" : "");
  int rc = 0;
  std::string log = runCapture(cmd, &rc);
  int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  // The quantizer's summary is the last line that is a JSON object.
  std::string last;
  for (size_t p = 0, e; p < log.size(); p = e + 1) {
    e = log.find('\n', p);
    if (e == std::string::npos) e = log.size();
    std::string line = log.substr(p, e - p);
    if (!line.empty() && line.front() == '{') last = line;
  }
  if (code == 3 || code == 126 || code == 127)
    fail(ErrorKind::Unsupported,
         "QDQ quantization needs Python with onnxruntime's quantization tools; '{}' has none "
         "(scripts/setup.sh makes .venv-peers; or set TRIAD_PYTHON): {}",
         python, escape::printableLines(log));
  if (code != 0 || last.empty())
    fail(code == 2 ? ErrorKind::Runtime : ErrorKind::Io, "{}: quantizing to QDQ failed: {}", model,
         escape::printableLines(log));
  return nlohmann::json::parse(last);
}

} // namespace triad::frontend
