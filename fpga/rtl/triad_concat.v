// triad_concat: channel concatenation of two streams, one register stage. A transfer takes one
// vector from each input together (like triad_add: each input's ready waits for the other's
// valid): a holds NA elements of A_W bits (A_FRAC fraction bits), b NB elements of B_W bits
// (B_FRAC fraction bits). Output element i < NA is cast(a_i), element NA + j is cast(b_j)
// (out_tdata[i*OUT_W +: OUT_W]), each cast to OUT_W/OUT_FRAC with ROUNDING and SATURATE as in
// triad_cast. Timing: latency 1, one transfer per cycle; a_tready = (~out_tvalid | out_tready)
// & b_tvalid, b_tready = (~out_tvalid | out_tready) & a_tvalid.
module triad_concat #(
    parameter integer NA = 4,
    parameter integer A_W = 16,
    parameter integer A_FRAC = 10,
    parameter integer NB = 4,
    parameter integer B_W = 16,
    parameter integer B_FRAC = 10,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1
) (
    input  wire                     clk,
    input  wire                     rst_n,
    input  wire [       NA*A_W-1:0] a_tdata,
    input  wire                     a_tvalid,
    output wire                     a_tready,
    input  wire [       NB*B_W-1:0] b_tdata,
    input  wire                     b_tvalid,
    output wire                     b_tready,
    output reg  [(NA+NB)*OUT_W-1:0] out_tdata,
    output reg                      out_tvalid,
    input  wire                     out_tready
);
  wire en = ~out_tvalid | out_tready;
  wire both = a_tvalid & b_tvalid;
  assign a_tready = en & b_tvalid;
  assign b_tready = en & a_tvalid;

  wire [(NA+NB)*OUT_W-1:0] y;
  genvar i;
  generate
    for (i = 0; i < NA; i = i + 1) begin : g_a
      triad_cast #(
          .IN_W(A_W),
          .IN_FRAC(A_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (a_tdata[i*A_W+:A_W]),
          .out_data(y[i*OUT_W+:OUT_W])
      );
    end
    for (i = 0; i < NB; i = i + 1) begin : g_b
      triad_cast #(
          .IN_W(B_W),
          .IN_FRAC(B_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (b_tdata[i*B_W+:B_W]),
          .out_data(y[(NA+i)*OUT_W+:OUT_W])
      );
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (en) out_tvalid <= both;
  end
  always @(posedge clk) if (en & both) out_tdata <= y;
endmodule
