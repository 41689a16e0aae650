// 2-D sliding windows over a channels-last pixel stream: the geometry shared by Conv, MaxPool
// and AveragePool, the emulator's window gather (the same element order as the RTL's
// triad_window: element (ky*KW + kx)*C + c) and the triad_window instance.
#pragma once

#include "fpga/layers/Layer.h"

namespace triad::fpga {

struct Window2d {
  int64_t C = 0, H = 0, W = 0; // input channels and size
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t padT = 0, padL = 0, padB = 0, padR = 0;
  int64_t OH = 0, OW = 0;
  int64_t size() const { return KH * KW * C; }
  /// Fills win (size()) with the window of output position (oy, ox) of one NCHW sample; `pad`
  /// where the window is outside the image.
  void gather(const int64_t* sample, int64_t oy, int64_t ox, int64_t pad, int64_t* win) const;
  /// Input transfers the block takes before its first window (for FIFO sizing).
  int64_t lookahead() const;
};

/// The window of a Conv or pool node (kernel, strides, pads, dilations of rank 2) over its
/// [N, C, H, W] input; Unsupported naming the node for other ranks.
Window2d windowOf(const ir::Node& n, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                  const std::vector<int64_t>& dilations);

/// Adds a triad_window instance (in_* -> PREFIX_*) to `m`.
void addWindowInstance(hdl::Module& m, const Window2d& w, int elemWidth, int64_t pad,
                       const std::string& outPrefix);

} // namespace triad::fpga
