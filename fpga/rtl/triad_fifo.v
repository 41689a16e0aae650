// triad_fifo: a first-in first-out buffer of DEPTH vectors of W bits (a power of two >= 2), on
// the short branch of a residual join so that the long branch can fill its pipeline. Data
// written in one cycle can be read from the next (latency 1).
module triad_fifo #(
    parameter integer W = 16,
    parameter integer DEPTH = 4,
    parameter integer A_W = 2  // $clog2(DEPTH)
) (
    input  wire         clk,
    input  wire         rst_n,
    input  wire [W-1:0] in_tdata,
    input  wire         in_tvalid,
    output wire         in_tready,
    output wire [W-1:0] out_tdata,
    output wire         out_tvalid,
    input  wire         out_tready
);
  reg [W-1:0] mem[0:DEPTH-1];
  // One extra bit tells full from empty; both are readable by a Verilator testbench (occupancy).
  reg [A_W:0] wr  /*verilator public_flat_rd*/;
  reg [A_W:0] rd  /*verilator public_flat_rd*/;
  wire empty = wr == rd;
  wire full = (wr[A_W-1:0] == rd[A_W-1:0]) & (wr[A_W] != rd[A_W]);
  assign in_tready = ~full;
  assign out_tvalid = ~empty;
  assign out_tdata = mem[rd[A_W-1:0]];

  always @(posedge clk) begin
    if (!rst_n) begin
      wr <= {(A_W + 1) {1'b0}};
      rd <= {(A_W + 1) {1'b0}};
    end else begin
      if (in_tvalid & ~full) wr <= wr + 1'b1;
      if (out_tready & ~empty) rd <= rd + 1'b1;
    end
  end
  always @(posedge clk) if (in_tvalid & ~full) mem[wr[A_W-1:0]] <= in_tdata;
endmodule
