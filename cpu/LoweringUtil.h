// Helpers shared by the CPU lowering families (cpu/Lowerings*.cpp): dtype checks, shapes, the
// epilogue glue and strided-copy emission. Internal to the CPU target.
#pragma once

#include "cpu/Lowering.h"

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace triad::cpu {

using LoweringTable = std::unordered_map<ir::OpKind, Lowering>;

/// The lowering families, each in its own file, each adding its op kinds to the table.
void addMovementLowerings(LoweringTable& t);      // cpu/LoweringsMovement.cpp
void addNormalizationLowerings(LoweringTable& t); // cpu/LoweringsNormalization.cpp
void addSignalLowerings(LoweringTable& t);        // cpu/LoweringsSignal.cpp

namespace lower {

ir::Support no(std::string why);
bool allF32(const ir::Node& n);
/// Every input and output is float32.
ir::Support requireF32(const ir::Node& n);
/// Input 0's dtype is one of `ok`.
ir::Support requireInput0(const ir::Node& n, std::initializer_list<ir::DType> ok);
ir::Support requireF32OrF64Input(const ir::Node& n);
ir::Support requireF32Input0(const ir::Node& n);
/// Any element types (data movement works on bytes).
ir::Support anyType(const ir::Node& n);

const ir::Shape& shapeOf(const ir::Value* v);
int64_t elemBytes(const ir::Value* v);

/// Emits `auto epi_chain = <group epilogue>;` when there is one and returns the epilogue to pass
/// to a kernel: `pre` (statements over c[j], j < n, with row/col0 in scope) followed by the
/// group's chain.
std::string epilogueWith(LowerContext& c, const std::string& pre, const std::string& index,
                         int64_t ld);

/// Dims of a shape as (extent, stride) with extent-1 dims dropped and contiguous neighbours
/// merged: the index space of `dims` in row-major order, for offsetOf.
using DimList = std::vector<std::pair<int64_t, int64_t>>;
DimList mergedDims(const ir::Shape& s, const std::vector<bool>& take);
/// The element offset of linear index `i` over `dims` (an expression).
std::string offsetOf(const std::string& i, const DimList& dims);

/// The index spaces of a reduction of `x` over `axes` (the reduced dims and the kept dims, each
/// through mergedDims) and the number of values reduced into each output.
struct ReductionDims {
  DimList reduced, kept;
  int64_t count = 1;
};
ReductionDims reductionDims(const ir::Shape& x, const std::vector<int64_t>& axes);

/// `s` as the body of a C string literal.
std::string cEscape(const std::string& s);

/// `<Op> '<node name>'` for run-time error messages (escaped for a C string literal).
std::string who(const ir::Node& n);

/// Input `input` holds indices: int32 or int64.
ir::Support requireIndices(const ir::Node& n, size_t input);

/// Emits the statements normalising the index variable `var` (already declared, int64_t) against
/// an axis of size `dim` and failing the run when it is outside [-dim, dim).
void emitIndexCheck(Code& body, const ir::Node& n, const std::string& var, int64_t dim,
                    const std::string& what);

/// The statements declaring `triad_rt::Conv2dShape s` for a 1-D or 2-D convolution node (Conv,
/// ConvInteger, QLinearConv: ConvAttrs, input 0 the data, output 0 the result).
std::vector<std::string> conv2dShapeLines(const ir::Node& n);

/// `v` as int32 bytes: a compile-time table for LowerContext::data.
std::vector<uint8_t> int32Table(const std::vector<int64_t>& v);

/// Emits a copy of a strided sub-block: for every index of `extent` (row-major), copy one
/// element (or a contiguous run along the last dim when both strides there are 1; or, for a
/// transpose, a plane of the last dim and the one the source is contiguous in, in tiles).
void emitStridedCopy(Code& body, const std::string& dst, const std::string& src,
                     const ir::Shape& extent, const std::vector<int64_t>& dstStride,
                     const std::vector<int64_t>& srcStride, int64_t srcBase, int64_t elem);

} // namespace lower
} // namespace triad::cpu
