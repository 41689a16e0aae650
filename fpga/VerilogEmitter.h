// The Verilog emitter of the FPGA target: turns the emulator's layer plan (formats and quantized
// constants) into one module per layer instantiating the hand-written blocks of fpga/rtl/
// (triad_dense, triad_relu, triad_leaky_relu, triad_clip, triad_lut, triad_softmax, triad_add,
// triad_cast, ...), a top module joining them with valid/ready streams (forks where a result is
// read twice, FIFOs on the early operand of a residual Add), and a Verilator C++ testbench.
// Supported layers: Dense (Gemm/MatMul, BatchNormalization folded), Relu, LeakyRelu, Clip,
// Sigmoid, Tanh, Softmax, Add (two streams or a constant row) and pass-through reshapes; anything
// else is an Unsupported error unless the design is cut before it with `until` (docs/fpga.md).
#pragma once

#include "fpga/Emulator.h"

#include <map>
#include <string>
#include <vector>

namespace triad::fpga {

struct VerilogOptions {
  std::string name = "top";                  // top module name (sanitized)
  int64_t reuse = 1;                         // default reuse factor of Dense layers
  std::map<std::string, int64_t> layerReuse; // per layer (ONNX name)
  std::string until;                         // last layer of the design (empty: the whole graph)
};

/// One layer of the generated design.
struct RtlStage {
  std::string layer, module, op;
  int64_t nIn = 0, nOut = 0, reuse = 1;
  FixedFormat in, out;
  FixedFormat in2;         // Add: the second operand (a stream or the constant)
  int64_t multipliers = 0; // Dense: nIn*nOut/reuse; LeakyRelu and Softmax: one per element
  int64_t latency = 0;     // cycles through the block (Dense R+1, Softmax 5, others 1)
  size_t layerIndex = 0;   // index in Emulator::layers()
};

struct VerilogDesign {
  std::string top;              // top module name
  std::vector<RtlStage> stages; // in stream order (pass-through layers omitted)
  int64_t inElems = 0, outElems = 0;
  FixedFormat inFormat, outFormat;
  size_t lastLayer = 0; // index in Emulator::layers() of the layer whose output the design emits
  int64_t latency = 0;  // cycles from an input accepted to its output valid (no stalls)
  std::vector<std::string> blocks; // the fpga/rtl/ modules the design instantiates
  std::string verilog;             // the generated module file
  std::string testbench;           // the generated Verilator testbench (C++)
};

/// Valid reuse factors of a Dense layer with `nIn` inputs: the divisors of nIn.
std::vector<int64_t> validReuseFactors(int64_t nIn);
/// A legal, keyword-safe Verilog identifier for an ONNX name ("/fc1/Gemm" -> "fc1_Gemm").
std::string verilogName(const std::string& s);
/// Builds the design. Throws triad::Error: Unsupported naming the layer, Usage for a bad reuse
/// factor (listing the valid ones) or an unknown `until` layer.
VerilogDesign emitVerilog(const ir::Graph& g, const Emulator& emu, const VerilogOptions& o);
/// The hand-written RTL blocks (file name, text), embedded at build time from fpga/rtl/.
const std::vector<std::pair<std::string, std::string>>& rtlLibrary();

} // namespace triad::fpga
