// triad_add: elementwise sum of two streams of N-element vectors (a residual join), one register
// stage: y_i = cast(a_i + b_i), the sum exact (both aligned to the finer binary point, one more
// integer bit). A transfer takes one vector from each input together; each input's ready
// waits for the other's valid. For a constant operand the layer module drives b with the
// constant and b_tvalid = 1. ROUNDING/SATURATE as in triad_cast.
module triad_add #(
    parameter integer N = 4,
    parameter integer A_W = 16,
    parameter integer A_FRAC = 10,
    parameter integer B_W = 16,
    parameter integer B_FRAC = 10,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1
) (
    input  wire               clk,
    input  wire               rst_n,
    input  wire [  N*A_W-1:0] a_tdata,
    input  wire               a_tvalid,
    output wire               a_tready,
    input  wire [  N*B_W-1:0] b_tdata,
    input  wire               b_tvalid,
    output wire               b_tready,
    output reg  [N*OUT_W-1:0] out_tdata,
    output reg                out_tvalid,
    input  wire               out_tready
);
  localparam integer F = (A_FRAC > B_FRAC) ? A_FRAC : B_FRAC;  // the finer binary point
  localparam integer AL = F - A_FRAC, BL = F - B_FRAC;  // alignment shifts
  localparam integer S_W0 = (A_W + AL > B_W + BL) ? A_W + AL : B_W + BL;
  localparam integer S_W = S_W0 + 1;  // exact sum

  wire en = ~out_tvalid | out_tready;
  wire both = a_tvalid & b_tvalid;
  assign a_tready = en & b_tvalid;
  assign b_tready = en & a_tvalid;

  wire [N*OUT_W-1:0] y;
  genvar i;
  generate
    for (i = 0; i < N; i = i + 1) begin : g_el
      wire signed [A_W-1:0] a = a_tdata[i*A_W+:A_W];
      wire signed [B_W-1:0] b = b_tdata[i*B_W+:B_W];
      wire signed [S_W-1:0] a_ext = {{(S_W - A_W) {a[A_W-1]}}, a};
      wire signed [S_W-1:0] b_ext = {{(S_W - B_W) {b[B_W-1]}}, b};
      wire signed [S_W-1:0] s = (a_ext <<< AL) + (b_ext <<< BL);
      triad_cast #(
          .IN_W(S_W),
          .IN_FRAC(F),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (s),
          .out_data(y[i*OUT_W+:OUT_W])
      );
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (en) out_tvalid <= both;
  end
  always @(posedge clk) if (en & both) out_tdata <= y;
endmodule
