// Elementwise ops as scalar C expressions: the lowering table that every code-generating
// target shares. The CPU target (C++) and the GPU target (OpenCL C) both turn a fused chain of
// elementwise nodes into one loop body built from these expressions, so an op's scalar math is
// written once for generated code (and once, as the oracle, in ir/ops/).
//
// The float32 core (hasScalarExpr's default) is valid C++ (with `using std::exp;` etc. in scope,
// so calls resolve to the float overloads) and OpenCL C 1.2 (whose math built-ins are
// overloaded for float): it uses only the function names listed by scalarMathFunctions(), float
// literals with an `f` suffix, INFINITY/NAN, the conditional operator and C casts. A target may
// ask for more (ScalarTypes): integer, float64 and float16 math and the ops beyond the core,
// rendered in its dialect (ScalarDialect): C++ calls the triad_rt helpers of
// cpu/runtime/triad_scalar.h, OpenCL C the triad_<helper>_<types> functions the GPU target
// generates (gpu/ScalarHelpers.cpp). Every expression computes what the reference kernel
// (ir/ops/) computes, bit for bit.
#pragma once

#include "ir/Graph.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace triad::ir {

/// The language of generated expressions: C++ (helpers in namespace triad_rt, stdint type names)
/// or OpenCL C (OpenCL type names; helpers named triad_<helper>_<types>, which the GPU target
/// defines for the ones a program uses).
enum class ScalarDialect { Cpp, OpenCL };

/// What a target's generated code handles beyond the float32 core that every target shares
/// (float32 math, casts int/bool -> float32 and -> bool, comparisons, logic, Where).
struct ScalarTypes {
  bool integers = false; ///< int8..int64, uint8..uint64 math (wrapping), bool Equal
  bool f64 = false;      ///< float64 math and casts
  bool f16 = false;      ///< float16 (uint16_t bits) math, computed in float and rounded back
  bool moreOps = false;  ///< Mod, BitShift, Bitwise*, CastLike
  /// Float division rounds correctly (C++; OpenCL C's need not): QONNX's quantizers, whose
  /// x / scale must match the reference bit for bit.
  bool exactDivision = false;
  /// QuantizeLinear/DequantizeLinear per channel of one axis: the target's elementwise kernels
  /// broadcast the [C] scale and zero point as qdqOperandShape says (the GPU's chains and
  /// epilogues).
  bool axisQdq = false;
  /// Everything: the CPU target (C++ with the triad_rt helpers).
  static constexpr ScalarTypes all() { return {true, true, true, true, true}; }
};

/// The shape operand `input` of `n` broadcasts with against n's output: its own, except for the
/// [C] scale and zero point of a per-axis QuantizeLinear/DequantizeLinear, which broadcast as
/// [C, 1, ..., 1] (C at the axis, right-aligned).
Shape qdqOperandShape(const Node& n, size_t input);

/// Whether `n` has a scalar expression for its operand types, given what the target handles
/// (`types`; the default is the float32 core). Constant inputs are fine; absent optional inputs
/// are handled (Clip without bounds).
bool hasScalarExpr(const Node& n, ScalarTypes types = {});

/// The expression computing output 0 of `n` from its inputs' expressions (`operands[i]` for IR
/// input i; empty string for absent inputs and for CastLike's target_type, whose elements are
/// never read). Constant scalar operands may be passed as literals (see scalarLiteral).
/// Precondition: hasScalarExpr(n, types) for the target's types.
/// Float16 operands and results are binary16 bits (uint16_t), as generated code stores them.
std::string scalarExpr(const Node& n, std::span<const std::string> operands,
                       ScalarDialect dialect = ScalarDialect::Cpp);

/// A C literal for one element of a constant, in its dtype ("0.5f", "-INFINITY", "3", "1";
/// float16: its bits, "uint16_t(0x3c00)").
std::string scalarLiteral(const Tensor& t, int64_t index = 0);

/// A float literal valid in C++ and OpenCL C ("0.5f", "INFINITY", "(-2.0f)").
std::string floatLiteral(float v);

/// The C type name of a dtype in generated C++ ("float", "int64_t", "bool").
std::string cppTypeName(DType t);
/// The type name of a dtype in `dialect` (OpenCL C: "float", "long", "bool", float16 "ushort").
std::string scalarTypeName(DType t, ScalarDialect dialect);

/// A Reduce* op as generated code computes it: an accumulator `acc` (its type is the target's
/// choice; the CPU uses double, as the oracle does) starts at `init`, takes each reduced value
/// `v` with the statement `step`, and the result is `finish`, an expression in `acc`, `count`
/// (the number of values) and, when `needsMax`, `mx`: the values' maximum from a first pass
/// (LogSumExp's shift). Same results as ir/ops/Reduce.cpp, NaN and empty reductions included.
struct ReduceExpr {
  std::string init, step, finish;
  bool needsMax = false;
};
/// The expression of a Reduce* kind (nullopt for other kinds).
std::optional<ReduceExpr> reduceExpr(OpKind k);

/// Math function names the expressions use (for `using std::...;` in C++ preludes).
const std::vector<std::string>& scalarMathFunctions();

} // namespace triad::ir
