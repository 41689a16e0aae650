// triad_leaky_relu: elementwise LeakyRelu on a stream of N-element vectors, one register stage:
// y_i = cast(x_i) for x_i >= 0, else cast(x_i * ALPHA) with the exact product (IN_W + A_W bits,
// IN_FRAC + A_FRAC fraction bits). ALPHA is the slope quantized to the weight format (signed
// A_W bits, A_FRAC fraction bits). ROUNDING/SATURATE as in triad_cast.
module triad_leaky_relu #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
    parameter integer A_W = 16,
    parameter integer A_FRAC = 10,
    parameter [A_W-1:0] ALPHA = 0,
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
  localparam integer P_W = IN_W + A_W;
  wire [N*OUT_W-1:0] y;
  assign in_tready = ~out_tvalid | out_tready;

  genvar i;
  generate
    for (i = 0; i < N; i = i + 1) begin : g_el
      wire signed [IN_W-1:0] x = in_tdata[i*IN_W+:IN_W];
      wire signed [A_W-1:0] a = ALPHA;
      wire signed [P_W-1:0] p = x * a;  // exact
      wire [OUT_W-1:0] y_pos, y_neg;
      triad_cast #(
          .IN_W(IN_W),
          .IN_FRAC(IN_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast_pos (
          .in_data (x),
          .out_data(y_pos)
      );
      triad_cast #(
          .IN_W(P_W),
          .IN_FRAC(IN_FRAC + A_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast_neg (
          .in_data (p),
          .out_data(y_neg)
      );
      assign y[i*OUT_W+:OUT_W] = x[IN_W-1] ? y_neg : y_pos;
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (in_tready) out_tvalid <= in_tvalid;
  end
  always @(posedge clk) if (in_tready & in_tvalid) out_tdata <= y;
endmodule
