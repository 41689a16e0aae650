#include "fpga/Hdl.h"

#include <fmt/format.h>

#include <cctype>

namespace triad::fpga::hdl {

namespace {

const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "always",     "and",       "assign",      "begin",       "buf",         "case",
      "casex",      "casez",     "cell",        "config",      "deassign",    "default",
      "defparam",   "design",    "disable",     "edge",        "else",        "end",
      "endcase",    "endconfig", "endfunction", "endgenerate", "endmodule",   "endprimitive",
      "endspecify", "endtable",  "endtask",     "event",       "for",         "force",
      "forever",    "fork",      "function",    "generate",    "genvar",      "if",
      "ifnone",     "initial",   "inout",       "input",       "instance",    "integer",
      "join",       "large",     "library",     "localparam",  "macromodule", "medium",
      "module",     "nand",      "negedge",     "nor",         "not",         "or",
      "output",     "parameter", "posedge",     "primitive",   "real",        "reg",
      "release",    "repeat",    "signed",      "small",       "specify",     "specparam",
      "strong0",    "strong1",   "supply0",     "supply1",     "table",       "task",
      "time",       "tran",      "tri",         "triand",      "trior",       "use",
      "wait",       "wand",      "weak0",       "weak1",       "while",       "wire",
      "wor",        "xnor",      "xor",         "logic",       "bit",         "byte",
      "int",        "interface", "class",       "do",          "final",       "unique",
      "priority",   "automatic", "genvar",      "localparam",  "shortint",    "longint",
      "struct",     "union",     "typedef",     "enum",        "package",     "program",
      "property",   "sequence",  "string",      "void",        "return",      "break",
      "continue",   "const",     "extern",      "virtual",     "static",      "import",
      "export",     "type",      "var",         "clocking",    "modport",     "chandle"};
  return k;
}

std::string range(int64_t width) {
  return width > 1 ? fmt::format("[{}:0] ", width - 1) : "";
}

} // namespace

std::string legalName(const std::string& s) {
  std::string r;
  for (char c : s) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok)
      r += c;
    else if (!r.empty() && r.back() != '_')
      r += '_';
  }
  while (!r.empty() && r.back() == '_')
    r.pop_back();
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "l_" + r;
  if (keywords().count(r)) r += "_";
  return r;
}

std::string NameUniquer::unique(const std::string& base) {
  std::string b = legalName(base), name = b;
  for (int k = 2; used_.count(name); ++k)
    name = fmt::format("{}_{}", b, k);
  used_.insert(name);
  return name;
}

std::string hexLiteral(int64_t v, int width) {
  uint64_t u = static_cast<uint64_t>(v);
  if (width < 64) u &= (uint64_t(1) << width) - 1;
  return fmt::format("{}'h{:0{}x}", width, u, (width + 3) / 4);
}

std::string commentLines(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl == start && nl == text.size()) break;
    out += indent + "// " + text.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> streamConnections(const std::string& in,
                                                                   const std::string& out) {
  return {{"clk", "clk"},
          {"rst_n", "rst_n"},
          {"in_tdata", in + "_tdata"},
          {"in_tvalid", in + "_tvalid"},
          {"in_tready", in + "_tready"},
          {"out_tdata", out + "_tdata"},
          {"out_tvalid", out + "_tvalid"},
          {"out_tready", out + "_tready"}};
}

void Module::addStreamIn(const std::string& prefix, int64_t bits) {
  addPort(prefix + "_tdata", Dir::In, bits);
  addPort(prefix + "_tvalid", Dir::In, 1);
  addPort(prefix + "_tready", Dir::Out, 1);
}

void Module::addStreamOut(const std::string& prefix, int64_t bits) {
  addPort(prefix + "_tdata", Dir::Out, bits);
  addPort(prefix + "_tvalid", Dir::Out, 1);
  addPort(prefix + "_tready", Dir::In, 1);
}

void Module::add(LocalParam p) {
  items_.push_back({Item::Kind::LocalParam, localParams_.size()});
  localParams_.push_back(std::move(p));
}
void Module::add(Wire w) {
  items_.push_back({Item::Kind::Wire, wires_.size()});
  wires_.push_back(std::move(w));
}
void Module::add(Instance i) {
  items_.push_back({Item::Kind::Instance, instances_.size()});
  instances_.push_back(std::move(i));
}
void Module::add(Assign a) {
  items_.push_back({Item::Kind::Assign, assigns_.size()});
  assigns_.push_back(std::move(a));
}
void Module::addComment(std::string text) {
  items_.push_back({Item::Kind::Comment, texts_.size()});
  texts_.push_back(std::move(text));
}
void Module::addRaw(std::string text) {
  items_.push_back({Item::Kind::Raw, texts_.size()});
  texts_.push_back(std::move(text));
}

void Module::addStreamWires(const std::string& prefix, int64_t bits, const std::string& comment,
                            bool observed) {
  add(Wire{prefix + "_tdata", bits, comment});
  add(Wire{prefix + "_tvalid", 1, {}, observed});
  add(Wire{prefix + "_tready", 1, {}, observed});
}

std::string Module::print() const {
  std::string s = commentLines(comment);
  s += fmt::format("module {} (\n", name);
  for (size_t i = 0; i < ports.size(); ++i) {
    const Port& p = ports[i];
    s += fmt::format("    {} {} {}{}{}\n", p.dir == Dir::In ? "input " : "output",
                     p.reg ? "reg " : "wire", range(p.width), p.name,
                     i + 1 < ports.size() ? "," : "");
  }
  s += ");\n";
  for (const Item& it : items_) {
    switch (it.kind) {
    case Item::Kind::LocalParam: {
      const LocalParam& p = localParams_[it.index];
      s += commentLines(p.comment, "  ");
      s += fmt::format("  localparam [{}:0] {} = {};\n", p.width - 1, p.name, p.value);
      break;
    }
    case Item::Kind::Wire: {
      const Wire& w = wires_[it.index];
      s += commentLines(w.comment, "  ");
      s += fmt::format("  wire {}{}{};\n", range(w.width), w.name,
                       w.observed ? " /* verilator public_flat_rd */" : "");
      break;
    }
    case Item::Kind::Instance: {
      const Instance& in = instances_[it.index];
      s += commentLines(in.comment, "  ");
      s += "  " + in.module;
      if (!in.params.empty()) {
        s += " #(\n";
        for (size_t i = 0; i < in.params.size(); ++i)
          s += fmt::format("      .{}({}){}\n", in.params[i].name, in.params[i].value,
                           i + 1 < in.params.size() ? "," : "");
        s += "  )";
      }
      s += " " + in.name + " (\n";
      for (size_t i = 0; i < in.ports.size(); ++i)
        s += fmt::format("      .{}({}){}\n", in.ports[i].first, in.ports[i].second,
                         i + 1 < in.ports.size() ? "," : "");
      s += "  );\n";
      break;
    }
    case Item::Kind::Assign:
      s += fmt::format("  assign {} = {};\n", assigns_[it.index].lhs, assigns_[it.index].rhs);
      break;
    case Item::Kind::Comment:
      s += commentLines(texts_[it.index], "  ");
      break;
    case Item::Kind::Raw:
      s += texts_[it.index];
      break;
    }
  }
  return s + "endmodule\n";
}

} // namespace triad::fpga::hdl
