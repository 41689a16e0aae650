// triad_collect: deserializer. FRAME transfers of N elements (W bits each) in, one transfer of
// FRAME*N elements out: output element t*N + e (out_tdata[(t*N + e)*W +: W]) is element e of
// the frame's t-th input transfer (e.g. a pixel stream collected into a whole tensor for a
// dense layer).
//
// Parameters: N elements per input transfer, W element bits, FRAME transfers per frame.
//
// Implementation: the first FRAME-1 transfers of a frame shift into an assembly register
// ((FRAME-1)*N*W flip-flops, none for FRAME = 1); the last transfer goes, together with the
// assembly register, straight into the output register (FRAME*N*W flip-flops).
// Timing: latency 1 (the output is valid in the cycle after the frame's last transfer is
// accepted). The first FRAME-1 transfers of a frame are always accepted (in_tready = 1), also
// while the previous frame's output waits; only the last transfer waits for the output
// register (in_tready = ~out_tvalid | out_tready on it). With input always valid and output
// always ready: one transfer per cycle, FRAME cycles per frame, frames back to back.
module triad_collect #(
    parameter integer N = 4,
    parameter integer W = 16,
    parameter integer FRAME = 4
) (
    input  wire                 clk,
    input  wire                 rst_n,
    input  wire [      N*W-1:0] in_tdata,
    input  wire                 in_tvalid,
    output wire                 in_tready,
    output reg  [FRAME*N*W-1:0] out_tdata,
    output reg                  out_tvalid,
    input  wire                 out_tready
);
  localparam integer TW = N * W;  // one input transfer
  localparam integer CNT_W = (FRAME > 1) ? $clog2(FRAME) : 1;
  localparam [31:0] LAST = FRAME - 1;

  wire last;
  wire out_free = ~out_tvalid | out_tready;
  assign in_tready = ~last | out_free;
  wire take = in_tvalid & in_tready;
  wire [FRAME*TW-1:0] full;  // the frame, when this transfer is its last

  generate
    if (FRAME > 1) begin : g_asm
      reg [CNT_W-1:0] cnt;
      reg [(FRAME-1)*TW-1:0] asm_q;  // transfer t of the frame in slot t once FRAME-1 are in
      assign last = (cnt == LAST[CNT_W-1:0]);
      assign full = {in_tdata, asm_q};
      always @(posedge clk) begin
        if (!rst_n) cnt <= {CNT_W{1'b0}};
        else if (take) cnt <= last ? {CNT_W{1'b0}} : cnt + 1'b1;
      end
      if (FRAME > 2) begin : g_shift
        always @(posedge clk) if (take & ~last) asm_q <= {in_tdata, asm_q[(FRAME-1)*TW-1:TW]};
      end else begin : g_one
        always @(posedge clk) if (take & ~last) asm_q <= in_tdata;
      end
    end else begin : g_single
      assign last = 1'b1;
      assign full = in_tdata;
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (take & last) out_tvalid <= 1'b1;
    else if (out_tready) out_tvalid <= 1'b0;
  end
  always @(posedge clk) if (take & last) out_tdata <= full;
endmodule
