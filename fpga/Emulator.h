// The bit-accurate emulator of a quantized graph: the golden model of the FPGA target's RTL.
//
// It plans every node through the FPGA layer table (fpga/layers/Layer.h: Dense, Conv, pooling,
// activations, lookup tables, Softmax, Add, Concat, BatchNormalization, pass-through reshapes),
// quantizes constants with the QuantConfig and runs every layer on raw fixed-point integers with
// the arithmetic of fpga/FixedPoint.h. The exact contract (what the RTL must reproduce) is in
// docs/fpga.md. BatchNormalization after a Conv or Gemm is folded by the shared pass pipeline
// (ir/passes fold-batchnorm), which callers run first.
#pragma once

#include "fpga/QuantConfig.h"
#include "ir/Graph.h"
#include "ir/Progress.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace triad::fpga {

class Layer;

/// A value on a QDQ integer grid (docs/fpga.md, "Imported precisions"): its real value is
/// dequantize(raw, format) * scale[c] + offset[c], c its channel (axis 1 of the IR value, the
/// stream's element; one entry: the same for all; no offset: 0). Set where a QuantizeLinear with
/// a scale that is not a power of two (or a zero point) puts a value on its grid.
struct RealAffine {
  std::vector<double> scale, offset;
  double scaleAt(int64_t c) const { return scale.size() == 1 ? scale[0] : scale[size_t(c)]; }
  double offsetAt(int64_t c) const {
    return offset.empty() ? 0 : offset.size() == 1 ? offset[0] : offset[size_t(c)];
  }
  bool perTensor() const { return scale.size() == 1 && offset.size() <= 1; }
  bool hasOffset() const;
  /// The real value of raw element i of a value whose channel c = (i / plane) % channels.
  double real(int64_t raw, const FixedFormat& f, int64_t i, int64_t plane) const;
  /// "0.0296" or "per channel (8)", for messages and RTL comments.
  std::string describe() const;
};

/// The host's conversion of a float graph input for a QDQ model whose inputs all go into the
/// same QuantizeLinear onto an integer grid: k = clamp(round_half_even(float(x) / scale), lo, hi)
/// with lo = qmin - z, hi = qmax - z, as ONNX Runtime computes q - z (in float32).
struct InputGrid {
  double scale = 1;
  int64_t lo = 0, hi = 0;
  int64_t quantize(double x) const;
};

/// One emulated layer as planned (formats resolved).
struct LayerInfo {
  std::string name;                // ONNX node name (the first node of a fused group)
  std::string op;                  // the ONNX op: "Gemm", "Conv", "Relu", ...
  std::vector<std::string> folded; // names of nodes folded into this layer
  LayerQuant quant;
  FixedFormat inFormat, outFormat;
  bool usesWeights = false, usesAcc = false, passThrough = false;
  int64_t constSaturated = 0;    // constants clamped when quantized (weights, bias, bounds)
  int input = -1, output = -1;   // value ids of the (first) data input and of the output
  int64_t fanIn = 0, fanOut = 0; // Dense: K inputs and N outputs per row
  std::vector<int64_t> weights;  // Dense: quantized raw w[n][k] at n*K + k (weight format)
  std::vector<int64_t> biases;   // Dense: quantized raw b[n] (bias format); empty without bias
  // What the RTL needs of the other layers (docs/fpga.md, the arithmetic contract):
  std::vector<int> inputs;          // value ids of the operands; -1 for Add's constant operand
  int64_t alpha = 0;                // LeakyRelu: the slope (weight format)
  int64_t lo = 0, hi = 0;           // Clip: the bounds (input format)
  std::vector<int64_t> constRaw;    // Add: the constant operand (bias format), row-major
  ir::Shape constShape;             // Add: its shape
  std::vector<int64_t> table;       // Sigmoid/Tanh (result format), Softmax's exp (exp format)
  std::vector<int64_t> invTable;    // Softmax: the reciprocal table (inv format)
  int tableShift = 0, invShift = 0; // index = clamp(floor(raw / 2^shift) + offset, 0, size-1)
  /// "w fixed<16,6> b fixed<16,6> acc fixed<16,6> -> fixed<16,6>" style summary.
  std::string formats() const;
};

struct LayerReport {
  std::string name, op, formats;
  double maxAbsError = 0; // vs the float interpreter on the same inputs
  int64_t saturated = 0;  // output elements where a saturating cast clamped
  int64_t wrapped = 0;    // output elements where a wrapping cast or the accumulator wrapped
  int64_t elements = 0;
};

struct EmulatorResult {
  std::vector<ir::Tensor> raw;                // DType::Fixed tensors (int64 raw values, spec set)
  std::vector<ir::Tensor> values;             // the same dequantized to f32
  std::vector<ir::Tensor> floatRef;           // the float interpreter's outputs (when compared)
  std::vector<LayerReport> layers;            // first row: the graph input quantization
  std::vector<std::vector<int64_t>> layerRaw; // every layer's raw output (layers() order)
};

/// Largest |x| of every value (indexed by Value::id) when the float interpreter runs `inputs`;
/// nullopt for values that are not float. Value ids do not depend on the batch size, so ranges
/// observed on a model imported with one batch size apply to the same model imported with another.
using ValueRanges = std::vector<std::optional<double>>;

/// The leading dimension of an FPGA design is its stream of samples. When a graph with one input
/// fixes that dimension at B (a model exported at batch 1, the default of torch.onnx.export) and
/// `inputs` holds N samples, N a multiple of B and every other dimension as the graph's: N / B
/// (the number of graph-sized chunks the samples go through one after another); 0 when the input
/// fits the graph as it is. Runtime error naming the input when N is not a multiple of B.
int64_t streamChunks(const ir::Graph& g, std::span<const ir::Tensor> inputs);
ValueRanges observeRanges(const ir::Graph& g, std::span<const ir::Tensor> inputs,
                          const ir::ProgressFn& progress = {});

class Emulator {
public:
  /// Plans the layers and resolves precisions. `calibration` (graph inputs, in order) feeds
  /// "auto" precisions; without it "auto" keeps the default integer bits. Throws
  /// triad::Error(Unsupported) naming the node for ops or forms the emulator does not handle.
  Emulator(const ir::Graph& g, const QuantConfig& config,
           std::span<const ir::Tensor> calibration = {});
  /// The same with ranges observed beforehand (see observeRanges).
  Emulator(const ir::Graph& g, const QuantConfig& config, const ValueRanges& ranges);
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  /// Runs on float inputs (graph-input order and types). With `compare`, also runs the float
  /// interpreter and fills per-layer errors.
  /// Runs the inputs; N samples through a graph of a fixed batch B run as N / B chunks
  /// (streamChunks), their results concatenated along the samples.
  EmulatorResult run(std::span<const ir::Tensor> inputs, bool compare = true) const;

  const std::vector<LayerInfo>& layers() const;
  const Quant& inputQuant() const;
  /// The input grid of a QDQ model (see InputGrid), if its inputs are quantized onto one.
  const std::optional<InputGrid>& inputGrid() const;
  /// The graph input as the FPGA receives it: inputGrid's integers, else quantize(inputQuant).
  int64_t quantizeInput(double x, CastStatus* st = nullptr) const;
  /// The real meaning of a value's raw integers when it is on a QDQ grid (null: the format's).
  const RealAffine* realAffine(int valueId) const;
  /// The planned layers (the table's objects: execution, RTL, cost), in layers() order.
  const std::vector<std::unique_ptr<Layer>>& planned() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace triad::fpga
