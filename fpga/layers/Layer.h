// The FPGA layer table: one entry per layer kind, read by the emulator (planning and bit-accurate
// execution), the Verilog emitter (each layer's RTL module and its cost), `triad inspect` and
// the FpgaTarget (per-node support with a reason).
//
// A LayerKind names the ONNX ops it covers, says whether a node's form is supported (static:
// attributes and constant operands, with the reason when not) and plans a node into a Layer:
// formats resolved from the QuantConfig, constants quantized. A Layer runs on raw fixed-point
// integers (the arithmetic contract of docs/fpga.md) and writes its RTL module for the stream
// geometry of its operands. Adding a layer kind = one file in fpga/layers/ with its entry in
// layerTable() (fpga/layers/Table.cpp), its RTL block in fpga/rtl/ and its tests.
#pragma once

#include "fpga/Emulator.h"
#include "fpga/Hdl.h"
#include "ir/Escape.h"
#include "ir/Target.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace triad::fpga {

/// Raw values of the emulator by value id (the IR's logical layout: NCHW, row-major).
using RawValues = std::vector<std::vector<int64_t>>;

[[noreturn]] void unsupportedNode(const ir::Node& n, const std::string& why);

/// What a layer kind sees while planning one node.
class PlanContext {
public:
  PlanContext(const ir::Graph& g, const QuantConfig& cfg, const ValueRanges& ranges,
              std::vector<FixedFormat>& fmt, std::vector<bool>& known)
      : graph(g), config(cfg), ranges_(ranges), fmt_(fmt), known_(known) {}
  const ir::Graph& graph;
  const QuantConfig& config;

  /// Value id of data input i (produced by a planned layer or a graph input); Unsupported naming
  /// the node otherwise.
  int dataInput(const ir::Node& n, size_t i) const;
  /// The constant input i (Unsupported naming `what` when it is missing or not constant).
  const ir::Tensor& constInput(const ir::Node& n, size_t i, const char* what) const;
  /// Calibration max |x| of a value (nullopt: not observed).
  std::optional<double> range(int valueId) const;
  const FixedFormat& format(int valueId) const { return fmt_[size_t(valueId)]; }

  // Imported precisions (QONNX quantizers; fpga/layers/Quant.cpp) ---------------------------
  /// Folds a quantizer whose inputs are all constants: its values become a constant operand
  /// (constInput) and its format the imported precision of its output.
  void foldConstantQuantizer(const ir::Node& n);
  /// The precision the model gives a value (a QONNX quantizer's output), if any.
  std::optional<Quant> imported(const ir::Value* v) const;
  /// Why a constant quantizer's output has no exact format (nullopt: it has one, or the value
  /// is not a quantizer's). A layer reading it must have the role set in the config.
  std::optional<std::string> importError(const ir::Value* v) const;
  void setImported(int valueId, const Quant& q) { imported_[valueId] = q; }

  // QDQ integer grids (fpga/layers/Quant.cpp) --------------------------------------------------
  /// The real meaning of a value's raw integers (null: the format's own).
  const RealAffine* real(int valueId) const;
  void setReal(int valueId, RealAffine a) { real_[valueId] = std::move(a); }
  const std::map<int, RealAffine>& reals() const { return real_; }
  /// Set by a layer's plan when it applied its operands' RealAffine itself; otherwise the
  /// emulator passes it through the layers that commute with it, or refuses (propagateReal).
  bool realApplied = false;
  /// The host's input grid (Emulator), if any: a QuantizeLinear on a graph input with it passes.
  std::optional<InputGrid> inputGrid;
  /// The integers of a folded DequantizeLinear constant (a QDQ weight or bias), when the graph
  /// recorded them and they still are the value's constant.
  const ir::DequantizedFrom* quantizedConstant(const ir::Value* v) const;
  /// The graph carries QONNX quantizers: layers the config leaves alone keep exact results
  /// (Dense/Conv: the exact accumulator when it fits 32 bits; Relu, Clip: the input format).
  bool importedMode = false;
  /// Whether the config sets a role of a layer itself (layers[name] or default), which then wins
  /// over an imported precision.
  bool configSets(const std::string& layer, Role r) const;

private:
  const ValueRanges& ranges_;
  std::vector<FixedFormat>& fmt_;
  std::vector<bool>& known_;
  std::map<int, ir::Tensor> folded_;        // value id -> values of a folded constant quantizer
  std::map<int, Quant> imported_;           // value id -> imported precision
  std::map<int, std::string> importErrors_; // value id -> why it has no exact format
  std::map<int, RealAffine> real_;          // value id -> the real meaning of its integers
};

/// After a layer's plan that did not apply its operands' RealAffine: passes it on through the
/// layers that commute with it (Relu, max/average pooling, reshapes, DequantizeLinear) or refuses
/// naming the node.
void propagateReal(const ir::Node& n, const LayerInfo& info, PlanContext& ctx);
/// The grid of a QuantizeLinear that the host applies to every graph input (all uses of all
/// inputs are the same QuantizeLinear, whose scale is not a power of two or whose zero point is
/// not 0), with the format of its integers.
std::optional<std::pair<InputGrid, FixedFormat>> importedInputGrid(const ir::Graph& g);

/// ONNX's requantization onto an integer grid (the arithmetic of a QuantizeLinear on the FPGA,
/// fpga/layers/Quant.cpp): per channel a multiplier and an offset in fixed point, y =
/// clamp(cast(x * m[c] + t[c], out, convergent, saturate), lo, hi): triad_scale then triad_clip.
struct Requant {
  FixedFormat in, mf, tf, out; // input, multiplier, offset and result formats
  std::vector<int64_t> m, t;   // raw, per channel (one entry: per tensor)
  int64_t lo = 0, hi = 0;      // the grid's bounds (result format)
  /// Chooses the formats for real multipliers `mult` and offsets `off` (per channel or one)
  /// on input format `in` and a grid [lo, hi] (integers: fixed<W,W>, W the fewest bits).
  static Requant plan(const FixedFormat& in, const std::vector<double>& mult,
                      const std::vector<double>& off, int64_t lo, int64_t hi);
  int64_t apply(int64_t x, int64_t c, CastStatus* st = nullptr) const;
};

/// A QONNX quantizer (Quant, BipolarQuant, Trunc) whose inputs are all constants: folded by the
/// emulator into the layer that reads it, never a layer itself.
bool isConstantQuantizer(const ir::Node& n);
/// A constant, or the output of a constant quantizer (a weight the model quantized).
bool isConstantOperand(const ir::Value* v);
/// The exact format of a constant quantizer's folded values (fpga/layers/Quant.cpp), or why
/// there is none (no fixed<W,I> of at most 32 bits holds them exactly), naming the node.
std::variant<Quant, std::string> constantQuantizerFormat(const ir::Node& n,
                                                         const ir::Tensor& values);
/// The graph inputs' format when every use of every graph input is the same data Quant (the
/// input is then quantized once, as the Quant does, instead of twice).
std::optional<Quant> importedInputQuant(const ir::Graph& g);

/// Geometry of a stream inside the FPGA part: a frame (one sample) is h*w transfers of c
/// elements each (channels-last pixels in raster order; h = w = 1 for vectors). `chw` marks a
/// vector that is the NCHW flattening of an h x w x c pixel stream (after Flatten): its logical
/// element c*h*w + y*w + x travels as element c of transfer y*w + x.
struct StreamGeom {
  int64_t h = 1, w = 1, c = 0;
  bool chw = false;
  bool seq = false; // rows of [B, T, K] (w = T): transfers in the logical order
  int64_t transfers() const { return h * w; }
  int64_t elements() const { return h * w * c; }
  bool operator==(const StreamGeom&) const = default;
};

/// A window generator's delay line (triad_window's shift register), for the resource estimate:
/// `lanes` parallel bit lanes (channels x element bits), `taps` taps per lane (flip-flops), and
/// the runs of stages between consecutive taps (shift-register LUTs, SRLC32E, when long).
struct DelayLine {
  int64_t lanes = 0, taps = 0;
  std::vector<int64_t> runs;
};

/// One data operand of a layer's RTL.
struct RtlOperand {
  StreamGeom geom;
  FixedFormat format;
  /// The least raw value the stream can carry, when its producer bounds it above the format's
  /// (a Relu: 0); adder graphs size their nodes by it.
  std::optional<int64_t> rawMin;
};

/// Per-design settings a layer's RTL reads.
struct RtlSettings {
  int64_t reuse = 1;      // this layer's reuse factor (Dense-like layers)
  std::string module;     // the (unique) module name to give the layer
  int stageLevels = 0;    // adder-tree levels per pipeline stage (0: from clockMhz, or none)
  double clockMhz = 0;    // > 0: each Dense/Conv core picks its levels per stage for this clock
  int shiftAddDigits = 2; // reuse 1: products by constants of <= this many digits in logic
  Strategy strategy = Strategy::Dsp;
  bool weightRom = false; // reuse > 1: the weights in a ROM (block RAM), not multiplexers
};

/// A multiplier-free layer's adder graph (fpga/Cmvm.h) as built.
struct AdderGraphStats {
  int64_t adders = 0, shared = 0; // adders, of which common subexpressions
  int64_t digits = 0;             // nonzero signed digits of the weights
  int64_t carryBits = 0;          // the adders' carry-chain bits (LUTs)
  int64_t finalBits = 0;          // the bias adds' bits (LUTs)
  int64_t regBits = 0;            // pipeline register bits (FFs)
  int depth = 0;                  // adder levels
  int stages = 0;                 // pipeline registers between input and output register
};

/// A layer's RTL: its module (clk, rst_n, in_* or a_*/b_* input streams, out_* stream), the
/// geometry it produces and its cost model. `passThrough`: no module, the stream is renamed.
struct RtlLayer {
  bool passThrough = false;
  hdl::Module module;
  StreamGeom out;
  FixedFormat outFormat;
  std::vector<std::string> operandPrefixes = {"in"};
  int64_t latency = 0;        // cycles from the last input transfer it needs to its output
  int64_t lookahead = 0;      // input transfers it takes before its first output (line buffers)
  int64_t cyclesPerFrame = 0; // at full speed, one frame (0: one per transfer)
  int64_t trailing = 0;       // steps after the last input transfer before the last output
                              // (a window's bottom and right padding)
  int64_t multipliers = 0;
  int64_t reuse = 0;      // Dense-like layers: the reuse factor used
  int stageLevels = 0;    // Dense-like layers: the settings' adder-tree levels per stage
  uint64_t stageMask = 0; // Dense-like layers: the registered tree levels (bit l: level l)
  int shiftAddDigits = 0; // Dense-like layers at reuse 1: constant products in logic
  bool weightRom = false; // Dense-like layers at reuse > 1: the weights read from a ROM
  std::optional<AdderGraphStats> adderGraph; // Dense-like layers built as an adder graph
  std::optional<int64_t> outMin;             // the least raw output, when above the format's
  int64_t memoryBits = 0;                    // line buffers and tables
  std::set<std::string> blocks;              // fpga/rtl/ modules instantiated
  std::string summary;                       // one line for the design header
  DelayLine delay;                           // a window's line buffer (none: lanes = 0)
};

/// One planned layer.
class Layer {
public:
  virtual ~Layer() = default;
  LayerInfo info;
  ir::Shape outShape;
  /// Runs the layer on raw values (val[info.output] is written); counts per output element.
  virtual void exec(RawValues& val, LayerReport& rep) const = 0;
  /// The layer's RTL for operands of the given geometry. Throws Unsupported naming the layer
  /// when a form has no RTL.
  virtual RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings& s) const = 0;
};

/// A layer whose values are its input's (a DequantizeLinear after its QuantizeLinear, a
/// BatchNormalization folded into its grid's requantization): no RTL, the stream passes on.
class PassThroughLayer final : public Layer {
public:
  void exec(RawValues& val, LayerReport&) const override {
    val[size_t(info.output)] = val[size_t(info.input)];
  }
  RtlLayer rtl(std::span<const RtlOperand> ops, const RtlSettings&) const override {
    RtlLayer r;
    r.passThrough = true;
    r.out = ops[0].geom;
    r.outFormat = ops[0].format;
    return r;
  }
};

/// The layer's resources on a 7-series part (LUT including shift-register and RAM LUTs, FF,
/// DSP48E1, RAMB18) for its RTL `r` on operands `ops`: an estimate from the layer's data (the
/// multiply-accumulate array's products, their operand widths and its adder tree; delay lines,
/// tables, pipeline and stream registers), calibrated against Yosys' synth_xilinx
/// (fpga/layers/Resources.cpp; accuracy in docs/fpga.md, "Resources (estimate)").
ir::Resources estimateResources(const Layer& l, std::span<const RtlOperand> ops, const RtlLayer& r);

/// A triad_fifo of `depth` x `width` bits (LUT RAM up to 64 deep, else block RAM) and its
/// pointers.
ir::Resources estimateFifo(int64_t width, int64_t depth);

struct LayerKind {
  std::string_view name;
  std::vector<ir::OpKind> ops;
  /// Whether a node's form is supported (attributes, constant operands), with the reason.
  ir::Support (*supports)(const ir::Node&);
  std::unique_ptr<Layer> (*plan)(const ir::Node&, PlanContext&);
};

/// Every layer kind (fpga/layers/Table.cpp).
const std::vector<const LayerKind*>& layerTable();
/// The kind covering an op (nullptr: none).
const LayerKind* findLayerKind(ir::OpKind op);
/// Support of one node on the FPGA: its kind, then the kind's check of its form.
ir::Support fpgaSupport(const ir::Node& n);

// Shared by the layer files ---------------------------------------------------------------

/// Rounding / overflow codes of triad_cast.
int roundingCode(Rounding r);
int saturateCode(Overflow o);
/// Unsupported naming the layer when a format is unsigned (the RTL blocks take signed formats).
void requireSigned(const FixedFormat& f, const std::string& layer, const char* what);
/// OUT_W, OUT_FRAC, ROUNDING, SATURATE of a result quantization.
std::vector<hdl::Param> resultParams(const FixedFormat& out, const Quant& q);
/// A module with the standard ports (clk, rst_n, one in_ stream per prefix, out_).
hdl::Module layerModule(const std::string& name, const std::vector<std::string>& prefixes,
                        const std::vector<int64_t>& inBits, int64_t outBits);
/// A constant table as one literal: entry i at [i*width +: width], the last entry first.
std::string tableLiteral(const std::vector<int64_t>& t, int width);
int log2Exact(int64_t v);
/// floor(raw / 2^sh) for any sh (negative: a left shift), saturated to [INT64_MIN/2, INT64_MAX/2].
int64_t shiftFloor(int64_t raw, int sh);
double maxAbsOf(const std::vector<double>& v);
/// Quantizes constants with a role's modes; counts clamped ones into `saturated`.
std::vector<int64_t> quantizeAll(const std::vector<double>& v, const Quant& q, int64_t* saturated);
/// Unsupported unless the operand is a vector stream (no spatial frame).
void requireVector(const RtlOperand& op, const std::string& layer, const std::string& op_);

} // namespace triad::fpga
