// triad_clip: elementwise Clip on a stream of N-element vectors, one register stage:
// y_i = cast(min(max(x_i, LO), HI)). LO and HI are the bounds quantized to the input format
// (signed IN_W bits); ROUNDING/SATURATE as in triad_cast.
module triad_clip #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
    parameter [IN_W-1:0] LO = 0,
    parameter [IN_W-1:0] HI = 0,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1
) (
    input  wire               clk,
    input  wire               rst_n,
    input  wire [ N*IN_W-1:0] in_tdata,
    input  wire               in_tvalid,
    output wire               in_tready,
    output reg  [N*OUT_W-1:0] out_tdata,
    output reg                out_tvalid,
    input  wire               out_tready
);
  wire [N*OUT_W-1:0] y;
  assign in_tready = ~out_tvalid | out_tready;

  genvar i;
  generate
    for (i = 0; i < N; i = i + 1) begin : g_el
      wire signed [IN_W-1:0] x = in_tdata[i*IN_W+:IN_W];
      wire signed [IN_W-1:0] lo = LO;
      wire signed [IN_W-1:0] hi = HI;
      wire signed [IN_W-1:0] c = (x < lo) ? lo : (x > hi) ? hi : x;
      triad_cast #(
          .IN_W(IN_W),
          .IN_FRAC(IN_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (c),
          .out_data(y[i*OUT_W+:OUT_W])
      );
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (in_tready) out_tvalid <= in_tvalid;
  end
  always @(posedge clk) if (in_tready & in_tvalid) out_tdata <= y;
endmodule
