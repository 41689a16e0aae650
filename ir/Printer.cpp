#include "ir/Printer.h"
#include "ir/Escape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace triad::ir {

namespace {

/// A model string (untrusted) as a quoted token of the text form: quotes and backslashes escaped,
/// then control characters, escape sequences and bytes that are not UTF-8 as \xNN
/// (escape::printable): one line, nothing that acts on a terminal.
std::string quoted(std::string_view s) {
  std::string esc;
  for (char c : s) {
    if (c == '"' || c == '\\') esc += '\\';
    esc += c;
  }
  return fmt::format("\"{}\"", escape::printable(esc));
}

/// A value's type (its symbolic dimensions are the model's names) for the text form.
std::string typeText(const Value* v) {
  return escape::printable(typeToString(v->type()));
}

std::string valueRef(const Value* v) {
  if (!v) return "none";
  const std::string& n = v->name();
  bool plain = !n.empty();
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
          c == ':' || c == '-'))
      plain = false;
  if (plain) return fmt::format("%{}", n);
  return fmt::format("%{}", quoted(n)); // (not "%" + ...: a gcc 12 -Wrestrict false positive)
}

std::string printAttrs(const Attrs& a) {
  auto p = a.printed();
  if (p.empty()) return "";
  std::string s = " {";
  for (size_t i = 0; i < p.size(); ++i)
    s += fmt::format("{}{}={}", i ? ", " : "", p[i].first, escape::printable(p[i].second));
  s += "}";
  return s;
}

std::string constantBody(const Tensor& t) {
  if (t.numElements() <= kInlineConstantLimit) {
    std::vector<std::string> vals;
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (t.dtype() == DType::Bool)
        vals.push_back(t.getInt(i) ? "true" : "false");
      else if (t.dtype() == DType::F64)
        vals.push_back(fmt::format("{}", t.getDouble(i)));
      else if (isFloat(t.dtype()))
        vals.push_back(fmt::format("{}", float(t.getDouble(i))));
      else
        vals.push_back(fmt::format("{}", t.getInt(i)));
    }
    return fmt::format("[{}]", fmt::join(vals, ", "));
  }
  return fmt::format("#{}", tensorHash(t));
}

} // namespace

std::string tensorHash(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  };
  std::string type = typeToString(t.type());
  mix(type.data(), type.size());
  mix(t.raw(), t.byteSize());
  return fmt::format("{:016x}", h);
}

std::string detail::printTensorAttr(const Tensor& t) {
  return fmt::format("{} {}", typeToString(t.type()), constantBody(t));
}

std::string printGraph(const Graph& g) {
  std::string s = fmt::format("graph {} opset {} {{\n", quoted(g.name), g.opset);
  for (Value* v : g.inputs())
    s += fmt::format("  input {}: {}\n", valueRef(v), typeText(v));
  auto uses = g.useCounts();
  for (Value* v : g.constants()) {
    if (uses[size_t(v->id())] == 0) continue; // unused constants are not part of the program
    s +=
        fmt::format("  const {}: {} = {}\n", valueRef(v), typeText(v), constantBody(v->constant()));
  }
  for (const auto& n : g.nodes()) {
    std::vector<std::string> outs, ins;
    for (Value* v : n->outputs())
      outs.push_back(fmt::format("{}: {}", valueRef(v), typeText(v)));
    for (Value* v : n->inputs())
      ins.push_back(valueRef(v));
    s += fmt::format("  {} = {}({}){}  # {}\n", fmt::join(outs, ", "), opKindName(n->kind()),
                     fmt::join(ins, ", "), printAttrs(n->attrs()), escape::printable(n->name()));
  }
  for (Value* v : g.outputs())
    s += fmt::format("  output {}\n", valueRef(v));
  return s + "}\n";
}

std::string toDot(const Graph& g) {
  // Statement IDs are numbers (v3, n7, out5); every model string is in a label, escaped by
  // escape::dotString (a name can neither end its string nor add a statement, an attribute or
  // DOT's own \N / \G / \l escapes). A multi-line label joins escaped pieces with DOT's "\n".
  auto piece = [](std::string_view x) {
    std::string q = escape::dotString(x);
    return q.substr(1, q.size() - 2); // the escaped text, inside a label's own quotes
  };
  std::string s = fmt::format("digraph {} {{\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n",
                              escape::dotString(g.name));
  for (Value* v : g.inputs())
    s += fmt::format("  v{} [shape=ellipse, label=\"{}\\n{}\"];\n", v->id(), piece(v->name()),
                     piece(typeToString(v->type())));
  for (const auto& n : g.nodes()) {
    int64_t params = 0;
    for (Value* v : n->inputs())
      if (v && v->isConstant()) params += v->type().numElements();
    s += fmt::format("  n{} [shape=box, style=rounded, label=\"{}\\n{}{}\"];\n", n->id(),
                     piece(opKindName(n->kind())), piece(n->name()),
                     params ? fmt::format("\\n{} params", params) : "");
  }
  for (const auto& n : g.nodes())
    for (Value* v : n->inputs()) {
      if (!v || v->isConstant()) continue;
      std::string from =
          v->producer() ? fmt::format("n{}", v->producer()->id()) : fmt::format("v{}", v->id());
      s += fmt::format("  {} -> n{} [label={}];\n", from, n->id(),
                       escape::dotString(typeToString(v->type())));
    }
  for (Value* v : g.outputs()) {
    s += fmt::format("  out{} [shape=ellipse, label=\"{}\\n{}\"];\n", v->id(), piece(v->name()),
                     piece(typeToString(v->type())));
    std::string from =
        v->producer() ? fmt::format("n{}", v->producer()->id()) : fmt::format("v{}", v->id());
    s += fmt::format("  {} -> out{};\n", from, v->id());
  }
  return s + "}\n";
}

} // namespace triad::ir
