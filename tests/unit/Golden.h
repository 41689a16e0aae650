// Golden-file comparison for generated text (IR dumps, Verilog): the expected text lives in
// tests/golden/<name>; TRIAD_UPDATE_GOLDEN=1 rewrites the files instead of comparing, and the
// change is then reviewed as a diff, never hand-edited.
#pragma once

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace triad::testing {

inline std::string goldenPath(const std::string& name) {
  return std::string(TRIAD_SOURCE_DIR) + "/tests/golden/" + name;
}

inline void expectGolden(const std::string& text, const std::string& name) {
  std::string path = goldenPath(name);
  if (std::getenv("TRIAD_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "golden file " << path << " is missing (TRIAD_UPDATE_GOLDEN=1 creates it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "golden file " << path
                              << " differs (TRIAD_UPDATE_GOLDEN=1 regenerates it)";
}

} // namespace triad::testing
