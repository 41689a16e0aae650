// triad_upsample: nearest-neighbour upsampling of a channels-last pixel stream by integer
// factors SH (rows) and SW (columns). Input frame: IN_H*IN_W transfers in raster order, each a
// pixel of C elements of W bits (element c at [c*W +: W]); output frame: (IN_H*SH)*(IN_W*SW)
// transfers in raster order, output pixel (y, x) = input pixel (y / SH, x / SW).
//
// Parameters: C channels, W element bits, IN_H x IN_W input image, SH, SW factors (>= 1).
// IN_H only documents the frame: every input row is handled the same way (its first output
// row from the input, the other SH-1 rows from the row buffer), so the block needs no row
// counter and frames follow back to back.
//
// Implementation: the output register holds the current pixel; it is loaded from the input
// (first output row of an input row; the pixel is also pushed into the row buffer) or from the
// row buffer (the other SH-1 rows), and each load is repeated SW times. The row buffer is a
// rotating shift register of IN_W pixels (IN_W*C*W flip-flops, no address decoding; none when
// SH = 1): it shifts once per input column, in the first row taking the input pixel, in the
// repeated rows taking back its own oldest pixel.
// Timing: latency 1 (an output pixel is valid in the cycle after its input pixel is accepted
// or, for repeated rows and columns, after the previous output transfer); one output transfer
// per cycle with the output always ready, so a frame takes IN_H*SH*IN_W*SW cycles; an input
// pixel is accepted once every SW cycles in the first output row of each input row, none in
// the SH-1 repeated rows. in_tready = (~out_tvalid | out_tready) in the cycle that needs a new
// input pixel, 0 otherwise.
module triad_upsample #(
    parameter integer C = 1,
    parameter integer W = 16,
    /* verilator lint_off UNUSEDPARAM */
    parameter integer IN_H = 8,  // documents the frame size only (see above)
    /* verilator lint_on UNUSEDPARAM */
    parameter integer IN_W = 8,
    parameter integer SH = 2,
    parameter integer SW = 2
) (
    input  wire           clk,
    input  wire           rst_n,
    input  wire [C*W-1:0] in_tdata,
    input  wire           in_tvalid,
    output wire           in_tready,
    output reg  [C*W-1:0] out_tdata,
    output reg            out_tvalid,
    input  wire           out_tready
);
  localparam integer PW = C * W;
  localparam integer IX_W = (IN_W > 1) ? $clog2(IN_W) : 1;
  localparam integer SX_W = (SW > 1) ? $clog2(SW) : 1;
  localparam integer SY_W = (SH > 1) ? $clog2(SH) : 1;
  localparam [31:0] IX_LAST = IN_W - 1;
  localparam [31:0] SX_LAST = SW - 1;
  localparam [31:0] SY_LAST = SH - 1;

  reg [IX_W-1:0] ix;  // input column
  reg [SX_W-1:0] sx;  // repetition of the column
  reg [SY_W-1:0] sy;  // repetition of the row (0: from the input)

  wire first_col = (sx == {SX_W{1'b0}});  // a new pixel is loaded
  wire first_row = (sy == {SY_W{1'b0}});  // ... from the input
  wire last_col = (sx == SX_LAST[SX_W-1:0]);
  wire last_ix = (ix == IX_LAST[IX_W-1:0]);
  wire last_row = (sy == SY_LAST[SY_W-1:0]);
  wire need_in = first_col & first_row;
  wire en = ~out_tvalid | out_tready;
  assign in_tready = en & need_in;
  wire load = en & (~need_in | in_tvalid);

  wire [PW-1:0] rb_out;  // the row buffer's oldest pixel (the pixel of column ix)
  generate
    if (SH > 1) begin : g_rb
      reg [IN_W*PW-1:0] rb;  // element IN_W-1 is the oldest
      assign rb_out = rb[(IN_W-1)*PW+:PW];
      wire [PW-1:0] rb_in = first_row ? in_tdata : rb_out;
      if (IN_W > 1) begin : g_shift
        always @(posedge clk) if (load & first_col) rb <= {rb[(IN_W-1)*PW-1:0], rb_in};
      end else begin : g_one
        always @(posedge clk) if (load & first_col) rb <= rb_in;
      end
    end else begin : g_norb
      assign rb_out = in_tdata;  // never selected: with SH = 1 every row is a first row
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) begin
      ix <= {IX_W{1'b0}};
      sx <= {SX_W{1'b0}};
      sy <= {SY_W{1'b0}};
    end else if (load) begin
      if (last_col) begin
        sx <= {SX_W{1'b0}};
        if (last_ix) begin
          ix <= {IX_W{1'b0}};
          sy <= last_row ? {SY_W{1'b0}} : sy + 1'b1;
        end else begin
          ix <= ix + 1'b1;
        end
      end else begin
        sx <= sx + 1'b1;
      end
    end
  end

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (load) out_tvalid <= 1'b1;
    else if (out_tready) out_tvalid <= 1'b0;
  end
  always @(posedge clk) if (load & first_col) out_tdata <= first_row ? in_tdata : rb_out;
endmodule
