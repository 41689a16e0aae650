// triad_softmax: softmax over each N-element input vector with two lookup tables, hls4ml's
// stable form, bit-exact with the emulator (docs/fpga.md, Softmax):
//   d_j   = x_j - max_k x_k                                  (exact, <= 0)
//   e_j   = EXP_TABLE[clamp(floor(d_j / 2^EXP_SHIFT) + SIZE, 0, SIZE-1)]   (EXP_W bits)
//   S     = sum_j e_j                                        (exact)
//   inv   = INV_TABLE[clamp(floor(S / 2^INV_SHIFT), 0, SIZE-1)]            (INV_W bits)
//   y_j   = cast(e_j * inv)   (exact product, EXP_FRAC + INV_FRAC fraction bits)
// Tables: SIZE entries each, entry i at [i*W +: W], filled by the emulator (exp over [-R, 0),
// 1/s over [0, inv_range), both at the midpoints of their steps).
// Pipeline of five register stages (index, exp read, sum and reciprocal index, reciprocal read,
// product and cast), all advancing together when the output is free: full throughput, latency 5.
// Every element has its own exp table memory and the vector one reciprocal table memory, each
// with a registered read, so synthesis can map them to block RAMs.
module triad_softmax #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer SIZE = 1024,
    parameter integer IDX_W = 10,  // $clog2(SIZE)
    parameter integer EXP_SHIFT = 3,
    parameter integer EXP_W = 18,
    parameter integer EXP_FRAC = 10,
    parameter integer INV_SHIFT = 3,
    parameter integer INV_W = 18,
    parameter integer INV_FRAC = 10,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1,
    parameter [SIZE*EXP_W-1:0] EXP_TABLE = 0,
    parameter [SIZE*INV_W-1:0] INV_TABLE = 0
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
  localparam integer D_W = IN_W + 1;  // x_j - max, exact
  localparam integer SUM_W = EXP_W + $clog2(N + 1);  // exact sum of N entries
  localparam integer P_W = EXP_W + INV_W;

  // All stages move together unless the output holds a value nobody takes.
  wire en = ~out_tvalid | out_tready;
  assign in_tready = en;
  reg v1, v2, v3, v4;

  // Stage 1: the row maximum, the differences and their exp table indices.
  reg signed [IN_W-1:0] mx;
  integer k;
  always @* begin
    mx = in_tdata[0+:IN_W];
    for (k = 1; k < N; k = k + 1)
      if ($signed(in_tdata[k*IN_W+:IN_W]) > mx) mx = in_tdata[k*IN_W+:IN_W];
  end
  reg  [   N*IDX_W-1:0] idx1;
  // Stage 2: the exp entries; stage 3 and 4 carry them along.
  wire [   N*EXP_W-1:0] e2;
  reg  [   N*EXP_W-1:0] e3;
  reg  [   N*EXP_W-1:0] e4;
  wire [     N*D_W-1:0] d;
  wire [   N*IDX_W-1:0] idx;

  genvar j;
  generate
    for (j = 0; j < N; j = j + 1) begin : g_el
      wire signed [IN_W-1:0] x = in_tdata[j*IN_W+:IN_W];
      assign d[j*D_W+:D_W] = {x[IN_W-1], x} - {mx[IN_W-1], mx};
      triad_table_index #(
          .V_W(D_W),
          .SHIFT(EXP_SHIFT),
          .OFFSET(SIZE),
          .IDX_W(IDX_W)
      ) u_idx (
          .v  (d[j*D_W+:D_W]),
          .idx(idx[j*IDX_W+:IDX_W])
      );
      reg [EXP_W-1:0] exp_rom[0:SIZE-1];
      reg [EXP_W-1:0] e_q;
      integer i;
      initial for (i = 0; i < SIZE; i = i + 1) exp_rom[i] = EXP_TABLE[i*EXP_W+:EXP_W];
      always @(posedge clk) if (en) e_q <= exp_rom[idx1[j*IDX_W+:IDX_W]];
      assign e2[j*EXP_W+:EXP_W] = e_q;
    end
  endgenerate

  // Stage 3: the exact sum and the reciprocal table index.
  reg signed [SUM_W-1:0] sum;
  always @* begin
    sum = {SUM_W{1'b0}};
    for (k = 0; k < N; k = k + 1) sum = sum + {{(SUM_W - EXP_W) {e2[k*EXP_W+EXP_W-1]}}, e2[k*EXP_W+:EXP_W]};
  end
  wire [IDX_W-1:0] inv_idx;
  triad_table_index #(
      .V_W(SUM_W),
      .SHIFT(INV_SHIFT),
      .OFFSET(0),
      .IDX_W(IDX_W)
  ) u_inv_idx (
      .v  (sum),
      .idx(inv_idx)
  );
  reg [IDX_W-1:0] inv_idx3;
  // Stage 4: the reciprocal.
  reg [INV_W-1:0] inv_rom[0:SIZE-1];
  reg [INV_W-1:0] inv4;
  integer i;
  initial for (i = 0; i < SIZE; i = i + 1) inv_rom[i] = INV_TABLE[i*INV_W+:INV_W];
  always @(posedge clk) if (en) inv4 <= inv_rom[inv_idx3];

  // Stage 5: y_j = cast(e_j * inv).
  wire [N*OUT_W-1:0] y;
  generate
    for (j = 0; j < N; j = j + 1) begin : g_out
      wire signed [EXP_W-1:0] e = e4[j*EXP_W+:EXP_W];
      wire signed [INV_W-1:0] r = inv4;
      wire signed [P_W-1:0] p = e * r;  // exact
      triad_cast #(
          .IN_W(P_W),
          .IN_FRAC(EXP_FRAC + INV_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (p),
          .out_data(y[j*OUT_W+:OUT_W])
      );
    end
  endgenerate

  always @(posedge clk) begin
    if (en) begin
      idx1 <= idx;
      e3 <= e2;
      inv_idx3 <= inv_idx;
      e4 <= e3;
      out_tdata <= y;
    end
  end
  always @(posedge clk) begin
    if (!rst_n) begin
      {v1, v2, v3, v4, out_tvalid} <= 5'b0;
    end else if (en) begin
      {v1, v2, v3, v4, out_tvalid} <= {in_tvalid, v1, v2, v3, v4};
    end
  end
endmodule
