// triad_pipe: the control of a generated pipeline with one input vector per cycle (the adder
// graphs of multiplier-free Dense/Conv layers, docs/fpga.md "Multiplier-free layers"): an input
// register, P pipeline registers and an output register, all advancing on one enable.
// The datapath lives in the generated layer module and reads:
//   load_in:  the input register takes in_tdata (an input is accepted),
//   en:       every pipeline register moves one stage on,
//   load_out: the output register takes the last stage's result.
// Same protocol as triad_dense at REUSE = 1: en drops only when the last stage holds a result
// and the output register still holds an unaccepted one; then nothing moves and in_tready is 0
// (unless the input register is empty). II = 1; LATENCY = P + 2 (input accepted -> out_tvalid).
module triad_pipe #(
    parameter integer P = 0
) (
    input  wire clk,
    input  wire rst_n,
    input  wire in_tvalid,
    output wire in_tready,
    output wire out_tvalid,
    input  wire out_tready,
    output wire en,
    output wire load_in,
    output wire load_out
);
  reg x_valid;
  reg o_valid;
  wire s_valid;  // the last stage holds a result

  generate
    if (P == 0) begin : g_none
      assign s_valid = x_valid;
    end else begin : g_valid
      reg [P-1:0] v_pipe;
      /* verilator lint_off UNUSEDSIGNAL */
      wire [P:0] v_in = {v_pipe, x_valid};  // the top bit leaves the pipeline
      /* verilator lint_on UNUSEDSIGNAL */
      always @(posedge clk) begin
        if (!rst_n) v_pipe <= {P{1'b0}};
        else if (en) v_pipe <= v_in[P-1:0];
      end
      assign s_valid = v_pipe[P-1];
    end
  endgenerate

  assign en = ~(s_valid & o_valid & ~out_tready);
  assign in_tready = ~x_valid | en;
  assign load_in = in_tready & in_tvalid;
  assign load_out = en & s_valid;
  assign out_tvalid = o_valid;

  always @(posedge clk) begin
    if (!rst_n) begin
      x_valid <= 1'b0;
      o_valid <= 1'b0;
    end else begin
      if (o_valid & out_tready) o_valid <= 1'b0;
      if (load_out) o_valid <= 1'b1;
      if (in_tready) x_valid <= in_tvalid;
    end
  end
endmodule
