// Elementwise ops as scalar C expressions: the lowering table that every code-generating
// target shares. The CPU target (C++) and the GPU target (OpenCL C) both turn a fused chain of
// elementwise nodes into one loop body built from these expressions, so an op's scalar math is
// written once for generated code (and once, as the oracle, in ir/ops/).
//
// Expressions are valid C++ (with `using std::exp;` etc. in scope, so calls resolve to the float
// overloads) and OpenCL C 1.2 (whose math built-ins are overloaded for float): they use only
// the function names listed by scalarMathFunctions(), float literals with an `f` suffix,
// INFINITY/NAN, the conditional operator and C casts.
#pragma once

#include "ir/Graph.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace triad::ir {

/// Whether `n` has a scalar expression for its operand types (float32 math, plus Cast, Where and
/// comparisons over the dtypes listed in the implementation). Constant inputs are fine; absent
/// optional inputs are handled (Clip without bounds).
bool hasScalarExpr(const Node& n);

/// The expression computing output 0 of `n` from its inputs' expressions (`operands[i]` for IR
/// input i; empty string for absent inputs). Constant scalar operands may be passed as
/// literals (see scalarLiteral). Precondition: hasScalarExpr(n).
std::string scalarExpr(const Node& n, std::span<const std::string> operands);

/// A C literal for one element of a constant, in its dtype ("0.5f", "-INFINITY", "3", "1").
std::string scalarLiteral(const Tensor& t, int64_t index = 0);

/// A float literal valid in C++ and OpenCL C ("0.5f", "INFINITY", "(-2.0f)").
std::string floatLiteral(float v);

/// The C type name of a dtype in generated C++ ("float", "int64_t", "bool").
std::string cppTypeName(DType t);

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
