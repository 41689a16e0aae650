// The run-time kernel headers of cpu/runtime/, embedded in the library at build time
// (cmake/embed.cmake): written next to every generated source so that it compiles on its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace triad::cpu {

/// (file name, text) of every header in cpu/runtime/.
const std::vector<std::pair<std::string, std::string>>& runtimeFiles();

} // namespace triad::cpu
