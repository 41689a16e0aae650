// triad_scale: a per-channel affine map on a stream of N-element vectors (a BatchNormalization
// that no Conv or Dense absorbs, e.g. after a ReLU or a residual Add), one register stage:
//   y_i = cast(x_i * S_i + T_i)
// The product is exact (IN_W + S_W bits, IN_FRAC + S_FRAC fraction bits); T_i is aligned to the
// product's binary point (exact when T_FRAC <= IN_FRAC + S_FRAC, which the emitter ensures), the
// sum has one more integer bit (exact), and the cast to OUT_W/OUT_FRAC uses ROUNDING/SATURATE as
// in triad_cast. S holds S_i at [i*S_W +: S_W], T holds T_i at [i*T_W +: T_W] (signed raw).
module triad_scale #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
    parameter integer S_W = 16,
    parameter integer S_FRAC = 10,
    parameter integer T_W = 16,
    parameter integer T_FRAC = 10,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1,
    parameter [N*S_W-1:0] S = 0,
    parameter [N*T_W-1:0] T = 0
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
  localparam integer P_W = IN_W + S_W;
  localparam integer P_FRAC = IN_FRAC + S_FRAC;
  localparam integer TL = P_FRAC - T_FRAC;  // left shift of T (>= 0)
  localparam integer A_W0 = (P_W > T_W + TL) ? P_W : T_W + TL;
  localparam integer A_W = A_W0 + 1;  // exact sum

  wire [N*OUT_W-1:0] y;
  assign in_tready = ~out_tvalid | out_tready;

  genvar i;
  generate
    for (i = 0; i < N; i = i + 1) begin : g_el
      wire signed [IN_W-1:0] x = in_tdata[i*IN_W+:IN_W];
      wire signed [S_W-1:0] s = S[i*S_W+:S_W];
      wire signed [T_W-1:0] t = T[i*T_W+:T_W];
      wire signed [A_W-1:0] p = x * s;  // exact: sign-extended to A_W
      wire signed [A_W-1:0] t_ext = {{(A_W - T_W) {t[T_W-1]}}, t};
      wire signed [A_W-1:0] sum = p + (t_ext <<< TL);
      triad_cast #(
          .IN_W(A_W),
          .IN_FRAC(P_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (sum),
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
