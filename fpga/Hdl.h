// A small Verilog AST and its printer: what the FPGA target's generated modules are made of
// (modules, ports, parameters, wires, instances with named connections, continuous assignments)
// The generator builds the AST; nothing else writes Verilog text (the layer modules' constant
// tables are expressions, printed as given). Identifiers come from the escape module
// (ir/Escape.h: escape::identifier, escape::Uniquer): the printer checks that every name it prints
// is a plain identifier, and prints every comment line through escape::comment, so a model's
// strings (layer names) never become Verilog.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace triad::fpga::hdl {

/// A sized hexadecimal literal of `width` bits ("16'h03ff"); negative values in two's complement.
std::string hexLiteral(int64_t v, int width);
/// One literal of n x width bits holding the values, the first one in the most significant
/// bits; an underscore between values when width is a multiple of 4. Verilator folds a
/// concatenation of n literals in time ~n^2, so large tables are written a word per line.
std::string packedHexLiteral(const std::vector<int64_t>& msbFirst, int width);

enum class Dir { In, Out };

struct Port {
  std::string name;
  Dir dir = Dir::In;
  int64_t width = 1;
  bool reg = false;
};

struct Param {
  std::string name, value;
};

/// A localparam holding a constant (weights, tables): `localparam [W-1:0] NAME = value;`.
struct LocalParam {
  std::string name;
  int64_t width = 1;
  std::string value;   // a Verilog expression (hex literals, concatenations)
  std::string comment; // printed above it, one "// " line per '\n'-separated line
};

struct Wire {
  std::string name;
  int64_t width = 1;
  std::string comment;
  bool observed = false; // readable by a Verilator testbench (public_flat_rd)
};

struct Instance {
  std::string module, name;
  std::vector<Param> params;
  std::vector<std::pair<std::string, std::string>> ports; // port -> expression
  std::string comment;
};

struct Assign {
  std::string lhs, rhs;
};

/// A register loaded on the rising edge of clk while `enable` is 1:
///   reg [W-1:0] name;  always @(posedge clk) if (enable) name <= next;
/// `keep`: (* keep *) on it, so synthesis keeps its flip-flops as they are (Yosys would pack a
/// chain of three or more into shift-register LUTs, whose clock-to-out is a nanosecond later).
struct Register {
  std::string name;
  int64_t width = 1;
  std::string next;   // a Verilog expression
  std::string enable; // a 1-bit signal
  std::string comment;
  bool keep = false;
};

/// One item of a module body, printed in the order added.
struct Item {
  enum class Kind { LocalParam, Wire, Instance, Assign, Register, Comment, Raw } kind;
  size_t index = 0;
};

class Module {
public:
  std::string name;
  std::string comment; // printed above the module, one "// " line per line
  std::vector<Port> ports;

  void addPort(std::string n, Dir d, int64_t width, bool reg = false) {
    ports.push_back({std::move(n), d, width, reg});
  }
  /// in/out stream ports: PREFIX_tdata [bits], PREFIX_tvalid, PREFIX_tready.
  void addStreamIn(const std::string& prefix, int64_t bits);
  void addStreamOut(const std::string& prefix, int64_t bits);
  void add(LocalParam p);
  void add(Wire w);
  void add(Instance i);
  void add(Assign a);
  void add(Register r);
  void addComment(std::string text);
  /// Text printed verbatim (lint pragmas).
  void addRaw(std::string text);
  /// Wires PREFIX_tdata [bits], PREFIX_tvalid, PREFIX_tready.
  void addStreamWires(const std::string& prefix, int64_t bits, const std::string& comment = {},
                      bool observed = false);

  std::string print() const;

private:
  std::vector<Item> items_;
  std::vector<LocalParam> localParams_;
  std::vector<Wire> wires_;
  std::vector<Instance> instances_;
  std::vector<Assign> assigns_;
  std::vector<Register> registers_;
  std::vector<std::string> texts_;
};

/// The stream connections of a block whose ports are in_* and out_* (plus clk, rst_n).
std::vector<std::pair<std::string, std::string>> streamConnections(const std::string& in,
                                                                   const std::string& out);

/// "// " before every line of `text` ('\n'-separated), each line through escape::comment (no
/// line splice, no comment terminator, printable ASCII only; cut at 1024 characters). A model
/// string in comment text goes in as escape::comment(name) too: it cannot then start a line of
/// its own (tools read "// verilator ..." at a comment's start as a directive).
std::string commentLines(const std::string& text, const std::string& indent = "");

} // namespace triad::fpga::hdl
