// The panel GEMM and convolution kernels for CPU devices (internal to gpu/; generateGemm and
// generateConv2DImplicitGemm call them for GemmParams::panel), and what they share with the
// tiled ones.
#pragma once

#include "gpu/KernelGen.h"

namespace triad::gpu {

GeneratedKernel generatePanelGemm(std::string_view layer, const GemmShape& shape,
                                  const GemmParams& params, const Epilogue& epilogue);

GeneratedKernel generatePanelConv(std::string_view layer, const ConvShape& shape,
                                  const GemmParams& params, const Epilogue& epilogue);

/// The header comment of a GEMM kernel: layer, product and storage of the operands.
std::vector<std::string> gemmComment(std::string_view layer, const GemmShape& shape,
                                     std::string_view kind);

} // namespace triad::gpu
