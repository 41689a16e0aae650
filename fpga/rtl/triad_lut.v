// triad_lut: an elementwise function by table lookup (Sigmoid, Tanh) on a stream of N-element
// vectors: y_i = TABLE[clamp(floor(x_i / 2^SHIFT) + SIZE/2, 0, SIZE-1)]. The table holds SIZE
// entries of OUT_W bits (entry j at TABLE[j*OUT_W +: OUT_W]) sampling f over [-R, R) at the
// midpoints of SIZE steps (the emulator fills it; docs/fpga.md). Each element has its own
// read-only memory with a registered read (one register stage, full throughput, valid/ready), so
// synthesis can map it to a block RAM.
module triad_lut #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer SHIFT = 4,
    parameter integer SIZE = 1024,
    parameter integer IDX_W = 10,  // $clog2(SIZE)
    parameter integer OUT_W = 16,
    parameter [SIZE*OUT_W-1:0] TABLE = 0
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
  assign in_tready = ~out_tvalid | out_tready;
  wire load = in_tready & in_tvalid;

  genvar e;
  generate
    for (e = 0; e < N; e = e + 1) begin : g_el
      wire [IDX_W-1:0] idx;
      triad_table_index #(
          .V_W(IN_W),
          .SHIFT(SHIFT),
          .OFFSET(SIZE / 2),
          .IDX_W(IDX_W)
      ) u_idx (
          .v  (in_tdata[e*IN_W+:IN_W]),
          .idx(idx)
      );
      reg [OUT_W-1:0] rom[0:SIZE-1];
      integer j;
      initial for (j = 0; j < SIZE; j = j + 1) rom[j] = TABLE[j*OUT_W+:OUT_W];
      always @(posedge clk) if (load) out_tdata[e*OUT_W+:OUT_W] <= rom[idx];
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (in_tready) out_tvalid <= in_tvalid;
  end
endmodule
