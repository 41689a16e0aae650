#include "fpga/Hdl.h"

#include "ir/Diagnostics.h"
#include "ir/Escape.h"

#include <fmt/format.h>

#include <algorithm>

namespace triad::fpga::hdl {

namespace {

// A comment line's longest escaped form (the longest fixed line is under 200 characters; a
// model name in one is at most escape::comment's 160).
constexpr size_t kMaxCommentLine = 1024;

// Every name the printer writes is a plain identifier: a model string that reached one unescaped
// is a bug, never Verilog.
const std::string& ident(const std::string& s, const char* what) {
  TRIAD_ASSERT(escape::isIdentifier(s), "the Verilog printer got {} '{}', not an identifier", what,
               escape::printable(s));
  return s;
}

std::string range(int64_t width) {
  return width > 1 ? fmt::format("[{}:0] ", width - 1) : "";
}

} // namespace

std::string hexLiteral(int64_t v, int width) {
  uint64_t u = static_cast<uint64_t>(v);
  if (width < 64) u &= (uint64_t(1) << width) - 1;
  return fmt::format("{}'h{:0{}x}", width, u, (width + 3) / 4);
}

std::string packedHexLiteral(const std::vector<int64_t>& msbFirst, int width) {
  // Bits, least significant first, then hex digits from the top.
  const size_t n = msbFirst.size(), bits = n * size_t(width);
  std::vector<uint8_t> bit(bits, 0);
  for (size_t e = 0; e < n; ++e) {
    uint64_t u = static_cast<uint64_t>(msbFirst[n - 1 - e]);
    for (int b = 0; b < width; ++b)
      bit[e * size_t(width) + size_t(b)] = b < 64 ? uint8_t(u >> b & 1) : uint8_t(u >> 63 & 1);
  }
  const size_t digits = (bits + 3) / 4;
  const bool separate = width % 4 == 0;
  std::string s = fmt::format("{}'h", bits);
  for (size_t d = digits; d-- > 0;) {
    unsigned v = 0;
    for (size_t b = 0; b < 4; ++b)
      if (d * 4 + b < bits) v |= unsigned(bit[d * 4 + b]) << b;
    s += "0123456789abcdef"[v];
    if (separate && d > 0 && (d * 4) % size_t(width) == 0) s += '_';
  }
  return s;
}

std::string commentLines(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl == start && nl == text.size()) break;
    out += indent + "// " +
           escape::comment(std::string_view(text).substr(start, nl - start), kMaxCommentLine) +
           "\n";
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
void Module::add(Register r) {
  items_.push_back({Item::Kind::Register, registers_.size()});
  registers_.push_back(std::move(r));
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
  s += fmt::format("module {} (\n", ident(name, "module name"));
  for (size_t i = 0; i < ports.size(); ++i) {
    const Port& p = ports[i];
    s += fmt::format("    {} {} {}{}{}\n", p.dir == Dir::In ? "input " : "output",
                     p.reg ? "reg " : "wire", range(p.width), ident(p.name, "port"),
                     i + 1 < ports.size() ? "," : "");
  }
  s += ");\n";
  for (const Item& it : items_) {
    switch (it.kind) {
    case Item::Kind::LocalParam: {
      const LocalParam& p = localParams_[it.index];
      s += commentLines(p.comment, "  ");
      s += fmt::format("  localparam [{}:0] {} = {};\n", p.width - 1, ident(p.name, "localparam"),
                       p.value);
      break;
    }
    case Item::Kind::Wire: {
      const Wire& w = wires_[it.index];
      s += commentLines(w.comment, "  ");
      s += fmt::format("  wire {}{}{};\n", range(w.width), ident(w.name, "wire"),
                       w.observed ? " /* verilator public_flat_rd */" : "");
      break;
    }
    case Item::Kind::Instance: {
      const Instance& in = instances_[it.index];
      s += commentLines(in.comment, "  ");
      s += "  " + ident(in.module, "instantiated module");
      if (!in.params.empty()) {
        s += " #(\n";
        for (size_t i = 0; i < in.params.size(); ++i)
          s += fmt::format("      .{}({}){}\n", ident(in.params[i].name, "parameter"),
                           in.params[i].value, i + 1 < in.params.size() ? "," : "");
        s += "  )";
      }
      s += " " + ident(in.name, "instance") + " (\n";
      for (size_t i = 0; i < in.ports.size(); ++i)
        s += fmt::format("      .{}({}){}\n", ident(in.ports[i].first, "port"), in.ports[i].second,
                         i + 1 < in.ports.size() ? "," : "");
      s += "  );\n";
      break;
    }
    case Item::Kind::Assign:
      s += fmt::format("  assign {} = {};\n", assigns_[it.index].lhs, assigns_[it.index].rhs);
      break;
    case Item::Kind::Register: {
      const Register& r = registers_[it.index];
      s += commentLines(r.comment, "  ");
      s += fmt::format("  {}reg {}{};\n  always @(posedge clk) if ({}) {} <= {};\n",
                       r.keep ? "(* keep *) " : "", range(r.width), ident(r.name, "reg"), r.enable,
                       r.name, r.next);
      break;
    }
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
