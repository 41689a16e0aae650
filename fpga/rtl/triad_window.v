// triad_window: sliding-window (line-buffer) generator for 2-D convolution and pooling on a
// channels-last pixel stream.
//
// Input: a frame is IN_H*IN_W transfers in raster order (row 0 col 0, row 0 col 1, ...), each
// one pixel of C elements of W bits (element c at in_tdata[c*W +: W]).
// Output: one transfer per output position, OH*OW per frame in raster order, with
//   OH = (IN_H + PAD_T + PAD_B - ((KH-1)*DH + 1)) / SH + 1,
//   OW = (IN_W + PAD_L + PAD_R - ((KW-1)*DW + 1)) / SW + 1,
// each the window vector of KH*KW*C elements: element ((ky*KW + kx)*C + c), at
// out_tdata[((ky*KW + kx)*C + c)*W +: W], is channel c of input pixel
// (oy*SH + ky*DH - PAD_T, ox*SW + kx*DW - PAD_L), or the raw value PAD where that pixel lies
// outside the image (0 for convolution and average pooling, the most negative value for max
// pooling).
//
// Parameters: C channels, W element bits, IN_H x IN_W image, KH x KW kernel, SH/SW strides
// (>= 1), DH/DW dilations (>= 1), PAD_T/PAD_L/PAD_B/PAD_R padding (>= 0), PAD pad value.
//
// Implementation: a walker steps through the padded raster (Hp = IN_H+PAD_T+PAD_B rows by
// Wp = IN_W+PAD_L+PAD_R columns). Each step pushes one pixel into a shift register: an input
// pixel (the step needs, and consumes, one input transfer) or PAD (no input consumed). The
// shift register holds the last SPAN_H-1 padded rows plus SPAN_W-1 pixels,
// (SPAN_H-1)*Wp + SPAN_W-1 pixels of C*W flip-flops (SPAN = (K-1)*D + 1; none for a 1x1
// kernel); the window taps are fixed offsets in {shift register, pushed pixel}. After pushing
// position (py, px) with py >= SPAN_H-1, px >= SPAN_W-1, (py-SPAN_H+1) % SH == 0 and
// (px-SPAN_W+1) % SW == 0 (tracked with phase counters, no division), the window whose bottom
// right tap is (py, px) is loaded into the output register. All taps of an emitted window
// belong to the current frame, so frames follow back to back without any gap or flush.
//
// Timing (exact rule): the walker makes one step per cycle when the step can go: a pad position
// always, an image position when in_tvalid is high. A step that would emit a window waits
// while the output register holds an unaccepted window (out_tvalid & ~out_tready); other steps
// never wait for the output. The window is valid (out_tvalid) in the cycle after the step that
// pushed its bottom-right position (latency 1 from the last needed input accepted, or from the
// last pad position walked when that comes later). With input always valid and output always
// ready: one padded position per cycle, Hp*Wp cycles per frame, the window of (oy, ox) valid
// in cycle (oy*SH + SPAN_H-1)*Wp + ox*SW + SPAN_W-1 + 1 of its frame (cycle 0 = the first
// step of the frame). in_tready is combinational from the walker state and out_tready.
module triad_window #(
    parameter integer C = 1,
    parameter integer W = 16,
    parameter integer IN_H = 8,
    parameter integer IN_W = 8,
    parameter integer KH = 3,
    parameter integer KW = 3,
    parameter integer SH = 1,
    parameter integer SW = 1,
    parameter integer DH = 1,
    parameter integer DW = 1,
    parameter integer PAD_T = 0,
    parameter integer PAD_L = 0,
    parameter integer PAD_B = 0,
    parameter integer PAD_R = 0,
    parameter [W-1:0] PAD = 0
) (
    input  wire                   clk,
    input  wire                   rst_n,
    input  wire [        C*W-1:0] in_tdata,
    input  wire                   in_tvalid,
    output wire                   in_tready,
    output reg  [KH*KW*C*W-1:0]   out_tdata,
    output reg                    out_tvalid,
    input  wire                   out_tready
);
  localparam integer PW = C * W;  // pixel bits
  localparam integer HP = IN_H + PAD_T + PAD_B;  // padded rows
  localparam integer WP = IN_W + PAD_L + PAD_R;  // padded columns
  localparam integer SPAN_H = (KH - 1) * DH + 1;
  localparam integer SPAN_W = (KW - 1) * DW + 1;
  localparam integer SR_LEN = (SPAN_H - 1) * WP + SPAN_W;  // shift register incl. the new pixel
  localparam integer PY_W = (HP > 1) ? $clog2(HP) : 1;
  localparam integer PX_W = (WP > 1) ? $clog2(WP) : 1;
  localparam integer PHY_W = (SH > 1) ? $clog2(SH) : 1;
  localparam integer PHX_W = (SW > 1) ? $clog2(SW) : 1;
  localparam [31:0] HP_LAST = HP - 1;
  localparam [31:0] WP_LAST = WP - 1;
  localparam [31:0] Y0 = SPAN_H - 1;  // first row that completes a window
  localparam [31:0] X0 = SPAN_W - 1;
  localparam [31:0] ROW_LO = PAD_T;  // image rows are [ROW_LO, ROW_HI)
  localparam [31:0] ROW_HI = PAD_T + IN_H;
  localparam [31:0] COL_LO = PAD_L;
  localparam [31:0] COL_HI = PAD_L + IN_W;
  localparam [31:0] SH_LAST = SH - 1;
  localparam [31:0] SW_LAST = SW - 1;

  reg  [PY_W-1:0] py;
  reg  [PX_W-1:0] px;
  reg  [PHY_W-1:0] ph_y;  // (py - Y0) % SH once py >= Y0
  reg  [PHX_W-1:0] ph_x;  // (px - X0) % SW once px >= X0

  wire last_x = (px == WP_LAST[PX_W-1:0]);
  wire last_y = (py == HP_LAST[PY_W-1:0]);

  // Position flags; comparisons against 0 or the raster end are left out (always true).
  wire y_ge, x_ge, row_in_lo, row_in_hi, col_in_lo, col_in_hi, ph_y0, ph_x0;
  generate
    if (SPAN_H > 1) begin : g_yge
      assign y_ge = (py >= Y0[PY_W-1:0]);
    end else begin : g_yge1
      assign y_ge = 1'b1;
    end
    if (SPAN_W > 1) begin : g_xge
      assign x_ge = (px >= X0[PX_W-1:0]);
    end else begin : g_xge1
      assign x_ge = 1'b1;
    end
    if (PAD_T > 0) begin : g_pt
      assign row_in_lo = (py >= ROW_LO[PY_W-1:0]);
    end else begin : g_pt0
      assign row_in_lo = 1'b1;
    end
    if (PAD_B > 0) begin : g_pb
      assign row_in_hi = (py < ROW_HI[PY_W-1:0]);
    end else begin : g_pb0
      assign row_in_hi = 1'b1;
    end
    if (PAD_L > 0) begin : g_pl
      assign col_in_lo = (px >= COL_LO[PX_W-1:0]);
    end else begin : g_pl0
      assign col_in_lo = 1'b1;
    end
    if (PAD_R > 0) begin : g_pr
      assign col_in_hi = (px < COL_HI[PX_W-1:0]);
    end else begin : g_pr0
      assign col_in_hi = 1'b1;
    end
    if (SH > 1) begin : g_phy
      assign ph_y0 = (ph_y == {PHY_W{1'b0}});
    end else begin : g_phy1
      assign ph_y0 = 1'b1;
    end
    if (SW > 1) begin : g_phx
      assign ph_x0 = (ph_x == {PHX_W{1'b0}});
    end else begin : g_phx1
      assign ph_x0 = 1'b1;
    end
  endgenerate

  wire is_img = row_in_lo & row_in_hi & col_in_lo & col_in_hi;
  wire emit = y_ge & x_ge & ph_y0 & ph_x0;  // this step completes a window
  wire can_step = ~(emit & out_tvalid & ~out_tready);
  wire step = can_step & (~is_img | in_tvalid);
  assign in_tready = can_step & is_img;

  // The pushed pixel and the shift register: ext element j (j = 0: the pushed pixel) is the
  // padded position j steps back in the raster.
  wire [PW-1:0] pix = is_img ? in_tdata : {C{PAD}};
  wire [SR_LEN*PW-1:0] ext;
  generate
    if (SR_LEN > 1) begin : g_sr
      reg [(SR_LEN-1)*PW-1:0] sr;
      assign ext = {sr, pix};
      always @(posedge clk) if (step) sr <= ext[(SR_LEN-1)*PW-1:0];
    end else begin : g_nosr
      assign ext = pix;
    end
  endgenerate

  // Window taps: (ky, kx) sits (SPAN_H-1 - ky*DH) rows and (SPAN_W-1 - kx*DW) columns back.
  wire [KH*KW*PW-1:0] win;
  genvar ky, kx;
  generate
    for (ky = 0; ky < KH; ky = ky + 1) begin : g_ky
      for (kx = 0; kx < KW; kx = kx + 1) begin : g_kx
        localparam integer OFF = (SPAN_H - 1 - ky * DH) * WP + (SPAN_W - 1 - kx * DW);
        assign win[(ky*KW+kx)*PW+:PW] = ext[OFF*PW+:PW];
      end
    end
  endgenerate

  // Walker.
  always @(posedge clk) begin
    if (!rst_n) begin
      py   <= {PY_W{1'b0}};
      px   <= {PX_W{1'b0}};
      ph_y <= {PHY_W{1'b0}};
      ph_x <= {PHX_W{1'b0}};
    end else if (step) begin
      if (last_x) begin
        px   <= {PX_W{1'b0}};
        ph_x <= {PHX_W{1'b0}};
        py   <= last_y ? {PY_W{1'b0}} : py + 1'b1;
        if (last_y | ~y_ge | (ph_y == SH_LAST[PHY_W-1:0])) ph_y <= {PHY_W{1'b0}};
        else ph_y <= ph_y + 1'b1;
      end else begin
        px <= px + 1'b1;
        if (~x_ge | (ph_x == SW_LAST[PHX_W-1:0])) ph_x <= {PHX_W{1'b0}};
        else ph_x <= ph_x + 1'b1;
      end
    end
  end

  // Output register.
  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (step & emit) out_tvalid <= 1'b1;
    else if (out_tready) out_tvalid <= 1'b0;
  end
  always @(posedge clk) if (step & emit) out_tdata <= win;
endmodule
