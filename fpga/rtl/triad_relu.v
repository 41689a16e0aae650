// triad_relu: elementwise ReLU on a stream of N-element vectors, y_i = cast(max(x_i, 0)), with
// one register stage (full throughput, valid/ready).
module triad_relu #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
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
      wire [IN_W-1:0] x = in_tdata[i*IN_W+:IN_W];
      wire [IN_W-1:0] r = x[IN_W-1] ? {IN_W{1'b0}} : x;
      triad_cast #(
          .IN_W(IN_W),
          .IN_FRAC(IN_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (r),
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
