// triad_skid: a skid buffer that registers a stream's ready (VerilogOptions::registerStreams):
// in_tready is a flip-flop, so no combinational path runs from out_tready to in_tready and the
// ready chain of a design stops at every buffer. Data and valid pass straight through while the
// output is taken (no added latency); a transfer that arrives while the output is blocked waits
// in the one spare register, and in_tready drops until it has left.
module triad_skid #(
    parameter integer W = 8
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
  reg [W-1:0] spare;
  reg full;

  assign in_tready = ~full;
  assign out_tvalid = full | in_tvalid;
  assign out_tdata = full ? spare : in_tdata;

  always @(posedge clk) begin
    if (!rst_n) full <= 1'b0;
    else if (out_tready) full <= 1'b0;
    else if (in_tvalid & ~full) full <= 1'b1;
  end
  always @(posedge clk) if (~full & in_tvalid & ~out_tready) spare <= in_tdata;
endmodule
