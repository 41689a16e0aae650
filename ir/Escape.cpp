#include "ir/Escape.h"

#include <fmt/format.h>

#include <cstdint>
#include <unordered_set>

namespace triad::escape {

namespace {

/// Spellings no identifier may take in any of the languages (one list for all three: a name
/// that is a keyword anywhere gets a '_' everywhere, so the CPU, GPU and FPGA names agree).
/// C++ keywords and alternative tokens, OpenCL C keywords, qualifiers and scalar types, Verilog
/// and SystemVerilog keywords, and the macros of the headers generated code includes.
const std::unordered_set<std::string_view>& reserved() {
  static const std::unordered_set<std::string_view> k = {
      // C++20
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "final", "override",
      "restrict", "main", "std",
      // OpenCL C
      "kernel", "global", "local", "constant", "read_only", "write_only", "read_write", "uchar",
      "ushort", "uint", "ulong", "half", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
      "image1d_t", "image2d_t", "image3d_t", "sampler_t", "event_t", "complex", "imaginary",
      "uniform", "pipe",
      // Verilog-2005 and SystemVerilog
      "always", "assign", "begin", "buf", "casex", "casez", "cell", "config", "deassign",
      "defparam", "design", "disable", "edge", "end", "endcase", "endconfig", "endfunction",
      "endgenerate", "endmodule", "endprimitive", "endspecify", "endtable", "endtask", "event",
      "force", "forever", "fork", "function", "generate", "genvar", "ifnone", "initial", "inout",
      "input", "instance", "integer", "join", "large", "liblist", "library", "localparam",
      "macromodule", "medium", "module", "nand", "negedge", "nmos", "nor", "noshowcancelled",
      "notif0", "notif1", "output", "parameter", "pmos", "posedge", "primitive", "pull0", "pull1",
      "pulldown", "pullup", "pulsestyle_onevent", "pulsestyle_ondetect", "rcmos", "real",
      "realtime", "reg", "release", "repeat", "rnmos", "rpmos", "rtran", "rtranif0", "rtranif1",
      "scalared", "showcancelled", "small", "specify", "specparam", "strong0", "strong1", "supply0",
      "supply1", "table", "task", "time", "tran", "tranif0", "tranif1", "tri", "tri0", "tri1",
      "triand", "trior", "trireg", "use", "vectored", "wait", "wand", "weak0", "weak1", "wire",
      "wor", "xnor", "logic", "bit", "byte", "interface", "unique", "priority", "automatic",
      "shortint", "longint", "package", "program", "property", "sequence", "string", "return",
      "import", "type", "var", "clocking", "modport", "chandle", "endinterface", "endpackage",
      "endprogram", "endclass", "extends", "foreach", "super", "null", "randomize", "rand", "randc",
      "assert", "assume", "cover", "covergroup", "endgroup", "let", "checker", "endchecker",
      "always_comb", "always_ff", "always_latch", "iff", "inside", "dist", "with", "matches",
      "tagged", "timeprecision", "timeunit",
      // macros of the headers the generated sources include
      "NULL", "EOF", "errno", "stdin", "stdout", "stderr", "offsetof", "TRIAD_LAYER", "INFINITY",
      "NAN", "FLT_MAX", "DBL_MAX", "INT_MAX", "INT_MIN", "M_PI", "CHAR_BIT", "MAXFLOAT", "HUGE_VAL",
      "HUGE_VALF", "FLT_MIN", "FLT_EPSILON", "ATOMIC_VAR_INIT"};
  return k;
}

/// OpenCL's vector types (float4, uchar16, ...) are keywords too.
bool isVectorType(std::string_view s) {
  static const char* bases[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                "long", "ulong", "float", "double", "half"};
  for (const char* b : bases) {
    std::string_view base(b);
    if (s.size() > base.size() && s.substr(0, base.size()) == base) {
      std::string_view n = s.substr(base.size());
      if (n == "2" || n == "3" || n == "4" || n == "8" || n == "16") return true;
    }
  }
  return false;
}

bool alnum(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string hexByte(unsigned char c) {
  return fmt::format("\\x{:02x}", c);
}

/// Length of the UTF-8 sequence starting at s[i] if it is valid (and not NUL), else 0.
size_t utf8Length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c == 0) return 0;
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  static const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < minimum[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  return n;
}

} // namespace

std::string identifier(std::string_view s, Lang lang, std::string_view fallback) {
  (void)lang; // one reserved list for every language (see reserved())
  std::string r;
  for (unsigned char c : s) {
    if (alnum(c))
      r += char(c);
    else if (!r.empty() && r.back() != '_')
      r += '_'; // '_' and every other character: runs collapse, so no "__" (reserved in C++)
  }
  while (!r.empty() && r.back() == '_')
    r.pop_back();
  if (r.empty()) r = std::string(fallback);
  if (r[0] >= '0' && r[0] <= '9') r = "l_" + r;
  if (r.size() > kMaxIdentifier) {
    // Cut at a length that leaves room for the hash of the whole name (different long names
    // sharing a prefix stay apart); a cut ending in '_' would make "__".
    r.resize(kMaxIdentifier - 9);
    while (!r.empty() && r.back() == '_')
      r.pop_back();
    r += fmt::format("_{:08x}", fnv1a(s));
  }
  if (reserved().count(r) || isVectorType(r)) r += "_";
  return r;
}

bool isIdentifier(std::string_view s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::string Uniquer::operator()(std::string_view name) {
  std::string key(name);
  if (auto it = of_.find(key); it != of_.end()) return it->second;
  std::string id = fresh(identifier(name, lang_));
  of_.emplace(std::move(key), id);
  return id;
}

std::string Uniquer::fresh(std::string_view base) {
  std::string b = identifier(base, lang_), name = b;
  for (int k = 2; used_.count(name); ++k)
    name = fmt::format("{}_{}", b, k);
  used_.insert(name);
  return name;
}

std::string comment(std::string_view s, size_t maxLen) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    unsigned char prev = i ? static_cast<unsigned char>(s[i - 1]) : 0;
    std::string piece;
    auto hex = [](char h) { return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f'); };
    bool escapeSequence =
        c == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) && hex(s[i + 3]);
    if (escapeSequence)
      piece = "\\"; // "\xNN" stays: comment(comment(s)) == comment(s), text escaped once reads once
    else if (c < 0x20 || c >= 0x7f || c == '\\')
      piece = hexByte(c); // newlines, splices, non-ASCII: visible, inert
    else if ((c == '/' && prev == '*') || (c == '*' && prev == '/'))
      piece = hexByte(c); // no "*/" (ends a block comment) and no "/*" (-Wcomment)
    else if (c == '?' && prev == '?')
      piece = hexByte(c); // no "??x" trigraph
    else
      piece = char(c);
    if (out.size() + piece.size() > maxLen) {
      out += "...";
      break;
    }
    out += piece;
  }
  return out;
}

std::string stringLiteral(std::string_view s, Lang lang) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += {'\\', char(c)};
    else if (c == '?' && lang != Lang::Verilog)
      out += "\\?"; // no trigraph
    else if (c >= 0x20 && c < 0x7f)
      out += char(c);
    else
      out += fmt::format("\\{:03o}", c); // octal: always 3 digits, never swallows what follows
  }
  return out + "\"";
}

std::string html(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      // Control characters are not allowed in XML 1.0 (an SVG with one does not parse).
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        out += hexByte(c);
      else
        out += char(c);
    }
  }
  return out;
}

std::string markdown(std::string_view s) {
  auto word = [](char ch) { return alnum(static_cast<unsigned char>(ch)); };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '\n' || ch == '\r' || ch == '\t') {
      out += ' '; // a table row is one line
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\\\x{:02x}", c); // a literal backslash, then xNN
    } else if (std::string_view("\\`*[]<>&|#~!").find(ch) != std::string_view::npos) {
      out += {'\\', ch}; // would start code, emphasis, a link, HTML, a heading or end a cell
    } else if (ch == '_') {
      // '_' inside a word cannot start emphasis and stays as is.
      bool inWord = i > 0 && i + 1 < s.size() && word(s[i - 1]) && word(s[i + 1]);
      if (!inWord) out += '\\';
      out += ch;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string dotString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\"; // DOT reads \\ as one backslash: no \n, \l, \G escapes of DOT's own
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\\\x{:02x}", c);
    else
      out += char(c);
  }
  return out + "\"";
}

std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8Length(s, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      out += hexByte(c);
      ++i;
      continue;
    }
    // C1 controls (U+0080..U+009F) act on terminals too.
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      out += hexByte(c) + hexByte(static_cast<unsigned char>(s[i + 1]));
      i += 2;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string printableLines(std::string_view s) {
  std::string out;
  for (size_t start = 0;;) {
    size_t nl = s.find('\n', start);
    out += printable(s.substr(start, nl == std::string_view::npos ? nl : nl - start));
    if (nl == std::string_view::npos) return out;
    out += '\n';
    start = nl + 1;
  }
}

bool validUtf8(std::string_view s, size_t* badOffset) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8Length(s, i);
    if (n == 0) {
      if (badOffset) *badOffset = i;
      return false;
    }
    i += n;
  }
  return true;
}

} // namespace triad::escape
