// ir/Escape.h: the one place a model string becomes text in a generated artifact (issue 25).
// Property tests over strings drawn from a hostile alphabet, and a real compiler as the judge:
// comments and literals made of them compile warning-free (trigraphs on) and the literals read
// back byte for byte.
#include "ir/Escape.h"
#include "ir/System.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <regex>
#include <set>

using namespace triad;
namespace fs = std::filesystem;

namespace {

/// Newlines, comment and literal delimiters, splices, trigraph starts, shell and markup
/// characters, control characters, UTF-8 (valid and not), long runs.
std::string hostile(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {
      "\n",       "\r",   "\r\n",       "*/",     "/*",
      "//",       "\\",   "\\\n",       "\"",     "'",
      "?\?/",     "?\?=", "?",          "#",      "#include <cstdlib>",
      "`include", "$",    "$(shell x)", "`",      "<",
      ">",        "&",    "|",          "{}",     "%s",
      "\x1b[31m", "\x07", "\t",         "\x7f",   "\x01",
      "é",        "名前", "\U0001f600", "\u202e", "\xff",
      "\xc0\x80", "a",    "b",          "_",      "__",
      "0",        "9",    " ",          ".",      "/",
      "-",        "int",  "module",     "float4", "kernel",
      "NULL"};
  std::string s;
  int n = int(rng() % 12);
  for (int i = 0; i < n; ++i)
    s += atoms[rng() % atoms.size()];
  if (rng() % 20 == 0) s += std::string(4096, 'x');
  return s;
}

bool hasRawControl(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

} // namespace

TEST(Escape, CommentIsInertInEveryCommentSyntax) {
  std::mt19937 rng(1);
  for (int i = 0; i < 5000; ++i) {
    std::string s = hostile(rng), c = escape::comment(s);
    SCOPED_TRACE(escape::printable(s));
    for (unsigned char ch : c)
      ASSERT_TRUE(ch >= 0x20 && ch < 0x7f) << "printable ASCII only";
    EXPECT_EQ(c.find("*/"), std::string::npos);
    EXPECT_EQ(c.find("/*"), std::string::npos);
    EXPECT_EQ(c.find("??"), std::string::npos);
    EXPECT_TRUE(c.empty() || c.back() != '\\') << "no line splice";
    EXPECT_LE(c.size(), 160u + 3);
    if (c.size() < 100) {
      EXPECT_EQ(escape::comment(c), c) << "escaped once reads the same twice";
    }
  }
  EXPECT_EQ(escape::comment("/conv1/Conv"), "/conv1/Conv"); // ordinary names read as they are
  EXPECT_EQ(escape::comment("a\nb"), "a\\x0ab");
  EXPECT_EQ(escape::comment("x */ y"), "x *\\x2f y");
}

TEST(Escape, IdentifiersAreLegalBoundedAndUniqued) {
  std::mt19937 rng(2);
  std::regex legal("[A-Za-z][A-Za-z0-9_]*");
  escape::Uniquer u(escape::Lang::Cpp);
  std::map<std::string, std::string> given;
  std::set<std::string> seen;
  for (int i = 0; i < 5000; ++i) {
    std::string s = hostile(rng);
    for (escape::Lang lang : {escape::Lang::Cpp, escape::Lang::OpenCL, escape::Lang::Verilog}) {
      std::string id = escape::identifier(s, lang);
      SCOPED_TRACE(escape::printable(s) + " -> " + id);
      EXPECT_TRUE(std::regex_match(id, legal));
      EXPECT_EQ(id.find("__"), std::string::npos) << "reserved in C++";
      EXPECT_LE(id.size(), escape::kMaxIdentifier + 1);
    }
    std::string id = u(s);
    auto [it, fresh] = given.emplace(s, id);
    if (fresh)
      EXPECT_TRUE(seen.insert(id).second) << "two names, one identifier: " << id;
    else
      EXPECT_EQ(it->second, id) << "one name, two identifiers";
  }
  EXPECT_EQ(escape::identifier("/fc1/Gemm", escape::Lang::Verilog), "fc1_Gemm");
  EXPECT_EQ(escape::identifier("module", escape::Lang::Verilog), "module_");
  EXPECT_EQ(escape::identifier("float4", escape::Lang::OpenCL), "float4_");
  EXPECT_EQ(escape::identifier("", escape::Lang::Cpp), "l");
  EXPECT_EQ(escape::identifier("3x", escape::Lang::Cpp), "l_3x");
  escape::Uniquer v(escape::Lang::Verilog);
  std::set<std::string> ids = {v("a/b"), v("a.b"), v("a b"), v("a_b")};
  EXPECT_EQ(ids.size(), 4u) << "names that differ only in lost characters stay apart";
  EXPECT_NE(escape::identifier(std::string(300, 'a') + "1", escape::Lang::Cpp),
            escape::identifier(std::string(300, 'a') + "2", escape::Lang::Cpp));
}

TEST(Escape, MarkupForms) {
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string s = hostile(rng);
    SCOPED_TRACE(escape::printable(s));
    std::string h = escape::html(s);
    EXPECT_EQ(h.find_first_of("<>\"'"), std::string::npos);
    std::string noTabs = h;
    std::erase(noTabs, '\t');
    EXPECT_FALSE(hasRawControl(noTabs)) << "XML 1.0 forbids control characters";
    std::string md = escape::markdown(s);
    EXPECT_EQ(md.find('\n'), std::string::npos);
    for (size_t k = 0; k < md.size(); ++k)
      if (md[k] == '|') {
        size_t slashes = 0;
        for (size_t j = k; j > 0 && md[j - 1] == '\\'; --j)
          ++slashes;
        EXPECT_EQ(slashes % 2, 1u) << "an unescaped '|' ends a table cell: " << md;
      }
    std::string dot = escape::dotString(s);
    ASSERT_GE(dot.size(), 2u);
    EXPECT_EQ(dot.front(), '"');
    EXPECT_EQ(dot.back(), '"');
    for (size_t k = 1; k + 1 < dot.size(); ++k) {
      if (dot[k] == '\\') {
        ++k; // an escape pair
        continue;
      }
      EXPECT_NE(dot[k], '"') << "an unescaped quote ends the DOT string: " << dot;
    }
    EXPECT_FALSE(hasRawControl(dot));
    std::string p = escape::printable(s);
    EXPECT_FALSE(hasRawControl(p));
    EXPECT_TRUE(escape::validUtf8(p));
  }
  EXPECT_EQ(escape::html("<script>"), "&lt;script&gt;");
  EXPECT_EQ(escape::markdown("a|b"), "a\\|b");
  size_t bad = 0;
  EXPECT_FALSE(escape::validUtf8("ab\xff", &bad));
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(escape::validUtf8(std::string("a\0b", 3)));
  EXPECT_TRUE(escape::validUtf8("名前 ✓"));
}

// The compiler is the judge: every hostile string as a // comment, a /* */ comment and a string
// literal, compiled with trigraphs on and warnings as errors; the program prints the literals,
// which must read back as the strings, byte for byte. Nothing else runs.
TEST(Escape, CppCommentsAndLiteralsCompileAndReadBack) {
  std::mt19937 rng(4);
  std::vector<std::string> strings;
  for (int i = 0; i < 300; ++i)
    strings.push_back(hostile(rng));
  std::string src = "#include <cstdio>\n#include <cstring>\nint main() {\n";
  std::string expected;
  for (const std::string& s : strings) {
    src += "  // " + escape::comment(s) + "\n";
    src += "  /* " + escape::comment(s) + " */\n";
    src += fmt::format("  {{ static const char s[] = {}; std::fwrite(s, 1, sizeof s - 1, stdout); "
                       "std::fputc(0, stdout); }}\n",
                       escape::stringLiteral(s, escape::Lang::Cpp));
    expected += s;
    expected += '\0';
  }
  src += "  return 0;\n}\n";
  fs::path dir = fs::temp_directory_path() / fmt::format("triad-escape-{}", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "t.cpp") << src;
  int rc = 0;
  std::string log = runCapture(fmt::format("cd {} && c++ -std=c++17 -trigraphs -Wall -Wextra "
                                           "-Wcomment -Werror t.cpp -o t 2>&1",
                                           shellQuote(dir.string())),
                               &rc);
  ASSERT_EQ(rc, 0) << log;
  std::string out = runCapture(shellQuote((dir / "t").string()), &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, expected);
  fs::remove_all(dir);
}
