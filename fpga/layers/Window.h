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
  /// Calls f(sample, oy, ox, window) for every window of `batch` NCHW samples in x.
  template <class F>
  void forEach(const std::vector<int64_t>& x, int64_t batch, int64_t pad, F&& f) const {
    std::vector<int64_t> w(static_cast<size_t>(size()));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          gather(&x[size_t(b * C * H * W)], oy, ox, pad, w.data());
          f(b, oy, ox, w.data());
        }
  }
  /// Unsupported naming the layer unless the operand is this window's H x W x C pixel stream
  /// in a signed format.
  void requireStream(const RtlOperand& a, const LayerInfo& info) const;
  /// The window generator's share of a layer's RTL cost: lookahead, cycles per frame (the
  /// padded raster), line-buffer bits.
  void addCosts(RtlLayer& r, int elemWidth) const;
};

/// The window of a Conv or pool node (kernel, strides, pads, dilations of rank 2) over its
/// [N, C, H, W] input; Unsupported naming the node for other ranks.
Window2d windowOf(const ir::Node& n, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                  const std::vector<int64_t>& dilations);

/// A Conv or pool layer (with members win and batch) with its data input, window and batch set
/// from the node and its attributes A (kernel, strides, pads, dilations).
template <class L, class A>
std::unique_ptr<L> planWindowLayer(const ir::Node& n, PlanContext& ctx) {
  auto l = std::make_unique<L>();
  l->info.inputs = {ctx.dataInput(n, 0)};
  const auto& a = n.attrs<A>();
  l->win = windowOf(n, a.kernel, a.strides, a.pads, a.dilations);
  l->batch = n.input(0)->type().shape[0];
  return l;
}

/// Adds a triad_window instance (in_* -> PREFIX_*) to `m`.
void addWindowInstance(hdl::Module& m, const Window2d& w, int elemWidth, int64_t pad,
                       const std::string& outPrefix);

} // namespace triad::fpga
