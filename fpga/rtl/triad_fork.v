// triad_fork: copies one stream to N_OUT consumers (a layer output used twice, e.g. by a
// residual Add). Eager: each output takes the vector as soon as it is ready; the input is
// released when every output has taken it. No register on the data path (latency 0).
module triad_fork #(
    parameter integer W = 16,
    parameter integer N_OUT = 2
) (
    input  wire             clk,
    input  wire             rst_n,
    input  wire [  W-1:0]   in_tdata,
    input  wire             in_tvalid,
    output wire             in_tready,
    output wire [  W-1:0]   out_tdata,
    output wire [N_OUT-1:0] out_tvalid,
    input  wire [N_OUT-1:0] out_tready
);
  reg [N_OUT-1:0] done;  // outputs that already took the current input
  assign out_tdata = in_tdata;
  assign out_tvalid = {N_OUT{in_tvalid}} & ~done;
  assign in_tready = &(out_tready | done);

  always @(posedge clk) begin
    if (!rst_n) done <= {N_OUT{1'b0}};
    else if (in_tvalid & in_tready) done <= {N_OUT{1'b0}};
    else done <= done | (out_tvalid & out_tready);
  end
endmodule
