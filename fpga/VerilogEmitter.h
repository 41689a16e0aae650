// The Verilog emitter of the FPGA target: a driver over the layer table (fpga/layers/Layer.h).
// Each planned layer writes its own module (instantiating the hand-written blocks of fpga/rtl/);
// the driver tracks every stream's geometry (vectors, or channels-last pixel frames), names
// everything through one uniquer, joins the layers in a top module with valid/ready streams
// (forks where a result is read twice, FIFOs sized by a static analysis on the early operand of
// a join), and writes a Verilator C++ testbench. Anything without RTL is an Unsupported error
// naming the layer unless the design is cut before it with `until` (docs/fpga.md).
#pragma once

#include "fpga/Emulator.h"
#include "fpga/layers/Layer.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace triad::fpga {

struct VerilogOptions {
  std::string name = "top"; // top module name (made legal)
  int64_t reuse = 1;        // default reuse factor of Dense and Conv layers
  /// Reuse per layer chosen to match the design's bottleneck: every Dense/Conv layer not named
  /// in layerReuse gets the largest valid factor that keeps its cycles per sample within half
  /// the slowest stage's (the II at reuse 1), so the II is kept and multipliers drop.
  bool autoReuse = false;
  std::map<std::string, int64_t> layerReuse; // per layer (ONNX name)
  std::string until;                         // last layer of the design (empty: the whole graph)
  int stageLevels = 0;                       // adder-tree levels per pipeline stage (0: none)
  double clockMhz = 0;    // > 0: the stages from the delay model at this clock (stageMaskFor)
  int shiftAddDigits = 2; // reuse 1: constant products of <= this many signed digits in logic
  /// How Dense/Conv layers multiply by their constant weights (Strategy), for every layer not
  /// named in layerStrategy.
  Strategy strategy = Strategy::Dsp;
  std::map<std::string, Strategy> layerStrategy; // per layer (ONNX name)
  /// Dense/Conv layers at reuse > 1 whose weights are read from a ROM (block RAM) rather than
  /// selected by multiplexers (triad_dense's WEIGHT_ROM), by ONNX name.
  std::set<std::string> romLayers;
  /// A skid buffer (triad_skid: a registered ready, no added latency) in front of every layer
  /// operand, so the valid/ready chain never runs combinationally through two layers.
  bool registerStreams = false;
  /// FIFO depths by hand, by the joining layer's name (a power of two >= 2), instead of the
  /// static analysis: to tighten them after a simulation, or to provoke a deadlock in a test.
  std::map<std::string, int64_t> fifoDepth;
};

/// One layer of the generated design.
struct RtlStage {
  std::string layer, module, op;
  int64_t nIn = 0, nOut = 0, reuse = 1; // elements per transfer in and out
  int stageLevels = 0;                  // Dense/Conv: the options' adder-tree levels per stage
  uint64_t stageMask = 0;               // Dense/Conv: the registered tree levels (bit l: level l)
  StreamGeom inGeom, outGeom;
  FixedFormat in, out;
  FixedFormat in2; // a second operand's format (Add, Concat)
  int64_t multipliers = 0;
  std::optional<AdderGraphStats> adderGraph; // Dense/Conv built without multipliers
  bool weightRom = false;                    // Dense/Conv: weights read from a ROM
  int64_t latency = 0;                       // cycles through the block (no stalls)
  int64_t lookahead = 0;                     // input transfers taken before the first output
  int64_t memoryBits = 0;                    // line buffers and tables
  int64_t cyclesPerFrame = 0; // cycles one sample takes at full speed (0: one per transfer)
  size_t layerIndex = 0;      // index in Emulator::layers()
  /// The layer's share of the design latency: cycles from the last transfer of sample 0 on its
  /// latest operand (the design input: its first transfer) to its own last output transfer.
  /// Along a chain of layers these sum to VerilogDesign::latency.
  int64_t fillCycles = 0;
  ir::Resources resources; // estimateResources (LUT, FF, DSP48E1, RAMB18 on xc7)
};

/// A FIFO the driver inserted on the early operand of a join.
struct RtlFifo {
  std::string name, layer; // instance name; the layer whose operand it buffers
  int64_t depth = 0, width = 0;
  int addrBits = 0;
  bool manual = false; // the depth was given by hand (VerilogOptions::fifoDepth)
  std::string why;
};

/// A stream between two layers of the top module (for stall reports).
struct RtlStream {
  std::string wire;             // PREFIX of PREFIX_tvalid / PREFIX_tready
  std::string producer, reader; // layer names ("(input)" for the design input)
};

struct VerilogDesign {
  std::string top;              // top module name
  std::vector<RtlStage> stages; // in stream order (pass-through layers omitted)
  std::vector<RtlFifo> fifos;
  std::vector<RtlStream> streams;
  int64_t inElems = 0, outElems = 0; // elements per transfer
  StreamGeom inGeom, outGeom;        // per sample: frames of transfers
  FixedFormat inFormat, outFormat;
  size_t lastLayer = 0; // index in Emulator::layers() of the layer whose output the design emits
  int64_t latency = 0;  // cycles from an input accepted to its output valid (no stalls)
  int stageLevels = 0;  // adder-tree levels per pipeline stage of the Dense/Conv cores (0: none)
  double clockMhz = 0;  // the clock they were chosen for (0: none given)
  ir::Resources glue;   // the top's forks and FIFOs (estimate)
  std::vector<std::string> blocks; // the fpga/rtl/ modules the design instantiates
  std::string verilog;             // the generated module file
  std::string testbench;           // the generated Verilator testbench (C++)
  /// The rtl/ files of the design (its blocks, then the generated file; top module last).
  std::vector<std::pair<std::string, std::string>> files() const;
  /// Every layer's estimated resources and the glue's.
  ir::Resources resources() const;
  /// files.f: one file name per line (what lint and synthesis scripts read), top module named.
  std::string fileList() const;
};

/// Reuse factors of a Dense layer with `nIn` inputs that keep one output per lane: the divisors
/// of nIn (`--reuse auto` chooses among these; denseReuseFactors adds output folding).
std::vector<int64_t> validReuseFactors(int64_t nIn);
/// A legal, keyword-safe Verilog identifier for an ONNX name ("/fc1/Gemm" -> "fc1_Gemm"):
/// escape::identifier for Verilog ("l_" when nothing legal is left).
std::string verilogName(const std::string& s);
/// Builds the design. Throws triad::Error: Unsupported naming the layer, Usage for a bad reuse
/// factor (listing the valid ones) or an unknown `until` layer.
VerilogDesign emitVerilog(const ir::Graph& g, const Emulator& emu, const VerilogOptions& o);
/// Cycles one sample spends in a stage at full speed (its share of the design's II).
int64_t stageCyclesPerSample(const RtlStage& s);
/// Whether a stage is a Dense/Conv multiply-accumulate core (reuse, strategy, weight storage).
bool isDenseCore(const RtlStage& s);
/// The hand-written RTL blocks (file name, text), embedded at build time from fpga/rtl/.
const std::vector<std::pair<std::string, std::string>>& rtlLibrary();

/// Raw values of one value (n samples, the IR's logical layout) in the order a stream of
/// geometry `g` carries them: NCHW samples become channels-last transfers.
std::vector<int64_t> toStreamOrder(const std::vector<int64_t>& logical, const StreamGeom& g);
/// The inverse of toStreamOrder.
std::vector<int64_t> fromStreamOrder(const std::vector<int64_t>& stream, const StreamGeom& g);
/// The stream geometry of a value of this IR shape ([B,C,H,W]: H x W pixels of C; [B,T,K]: T
/// transfers of K; [B,K]: one vector).
StreamGeom streamGeomOf(const ir::Shape& s);

} // namespace triad::fpga
