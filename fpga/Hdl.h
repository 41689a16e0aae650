// A small Verilog AST and its printer: what the FPGA target's generated modules are made of
// (modules, ports, parameters, wires, instances with named connections, continuous assignments)
// and a name uniquer that makes every identifier legal, keyword-safe and unique in its scope.
// The generator builds the AST; nothing else writes Verilog text (the layer modules' constant
// tables are expressions, printed as given).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace triad::fpga::hdl {

/// Makes identifiers legal Verilog (letters, digits, '_'; not starting with a digit; no keyword
/// of Verilog-2005 or SystemVerilog) and unique among the names it has handed out.
class NameUniquer {
public:
  /// Reserves `name` as is (a port or a fixed name): later requests get another spelling.
  void reserve(const std::string& name) { used_.insert(name); }
  /// A legal form of `base` not handed out before: base, base_2, base_3, ...
  std::string unique(const std::string& base);

private:
  std::set<std::string> used_;
};

/// A legal, keyword-safe Verilog identifier for an ONNX name ("/fc1/Gemm" -> "fc1_Gemm").
std::string legalName(const std::string& s);
/// A sized hexadecimal literal of `width` bits ("16'h03ff"); negative values in two's complement.
std::string hexLiteral(int64_t v, int width);

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

/// One item of a module body, printed in the order added.
struct Item {
  enum class Kind { LocalParam, Wire, Instance, Assign, Comment, Raw } kind;
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
  std::vector<std::string> texts_;
};

/// The stream connections of a block whose ports are in_* and out_* (plus clk, rst_n).
std::vector<std::pair<std::string, std::string>> streamConnections(const std::string& in,
                                                                   const std::string& out);

/// "// " before every line of `text`.
std::string commentLines(const std::string& text, const std::string& indent = "");

} // namespace triad::fpga::hdl
