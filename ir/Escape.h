// The one place where a model's strings (graph, node and value names, doc strings, producer,
// metadata) become text in a generated artifact. A model is untrusted input: every emitter —
// generated C++, OpenCL C, Verilog, testbenches, Makefiles, HTML, SVG, DOT, Markdown, terminal
// output — turns a model string into one of the forms below and never formats it by hand.
//
//   identifier     legal in the target language, not a keyword, bounded length; a Uniquer keeps
//                  names that differ only in characters lost by legalisation distinct
//   comment        safe inside `// ... <newline>` and `/* ... */` of C, C++, OpenCL C and Verilog,
//                  and inside `#` comments of Makefiles, Tcl and shell scripts: printable ASCII
//                  only, no newline, no line splice, no comment terminator, no trigraph
//   stringLiteral  a complete, quoted literal of the language with every byte escaped as needed
//   html, markdown, dotString, printable: text for markup, graph files and terminals
//
// docs/reliability.md ("A model's strings are data") states the guarantee and how it is tested.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace triad::escape {

/// The languages whose identifiers and literals differ.
enum class Lang {
  Cpp,     // C++ (the CPU target, its standalone export and the Verilator testbench)
  OpenCL,  // OpenCL C
  Verilog, // Verilog-2005 (and SystemVerilog keywords)
};

/// An identifier for `s` in `lang`: letters, digits and single '_' separators ("/fc1/Gemm" ->
/// "fc1_Gemm"), never starting with a digit or '_', never a keyword or reserved spelling, at most
/// kMaxIdentifier characters (a longer name is cut and ends in a hash of the whole name).
/// `fallback` is used when nothing legal is left (it must itself be legal).
std::string identifier(std::string_view s, Lang lang, std::string_view fallback = "l");
inline constexpr size_t kMaxIdentifier = 64;

/// Whether `s` is already a plain identifier ([A-Za-z_][A-Za-z0-9_]*): what a printer or a
/// command line may take as it is.
bool isIdentifier(std::string_view s);

/// Hands out identifiers in one scope: the same name always gets the same identifier, two
/// different names never do (base, base_2, base_3, ...).
class Uniquer {
public:
  explicit Uniquer(Lang lang) : lang_(lang) {}
  /// Reserves `ident` (a port, a fixed name): no name is given it later.
  void reserve(const std::string& ident) { used_.insert(ident); }
  /// The identifier of `name` in this scope (stable: asked twice, the same answer).
  std::string operator()(std::string_view name);
  /// A new identifier from `base` on every call (for things that are not model names).
  std::string fresh(std::string_view base);

private:
  Lang lang_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, std::string> of_;
};

/// `s` as text for a comment (see the header); at most `maxLen` characters, cut with "...".
/// A "\xNN" already in `s` is kept, so comment(comment(s)) == comment(s) (text escaped where it
/// is inserted and again by a printer reads the same).
std::string comment(std::string_view s, size_t maxLen = 160);

/// `s` as a complete string literal of `lang`, quotes included. Printable ASCII stays; quotes,
/// backslashes and '?' (trigraphs) are escaped; every other byte becomes a 3-digit octal escape.
std::string stringLiteral(std::string_view s, Lang lang = Lang::Cpp);

/// `s` for HTML/XML/SVG text and attribute values: & < > " ' as entities; control characters
/// (other than tab) as U+FFFD-free visible escapes (\xNN).
std::string html(std::string_view s);

/// `s` as inline Markdown text safe in a table cell: characters that start emphasis, code, links,
/// HTML or a heading, or end a cell, are backslash-escaped (CommonMark renders `\<` as `<`); line
/// breaks become spaces, other control characters a visible \xNN.
std::string markdown(std::string_view s);

/// `s` as a Graphviz DOT quoted string, quotes included (also safe as a DOT label: no escape
/// sequence of DOT's own survives).
std::string dotString(std::string_view s);

/// `s` for a terminal or a log line: control characters (ESC and newlines included), DEL and
/// bytes of invalid UTF-8 as \xNN; valid UTF-8 text stays.
std::string printable(std::string_view s);

/// printable() of each line of a multi-line message, its own newlines kept (error messages).
std::string printableLines(std::string_view s);

/// Whether `s` is valid UTF-8 with no NUL; otherwise the offset of the first bad byte.
bool validUtf8(std::string_view s, size_t* badOffset = nullptr);

} // namespace triad::escape
