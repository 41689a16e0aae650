// triad_global_pool: global pooling over a frame. FRAME transfers of N elements in (signed raw,
// IN_FRAC fraction bits; element c at in_tdata[c*IN_W +: IN_W], e.g. the pixels of a
// channels-last image with N = C), one transfer of N elements out per frame (element c at
// out_tdata[c*OUT_W +: OUT_W]):
//   MODE 0 (max):     y_c = cast(max_t x_tc), raw signed compare, cast from IN_W/IN_FRAC;
//   MODE 1 (average): s_c = sum_t x_tc, exact (accumulator of IN_W + ceil(log2 FRAME) bits,
//                     IN_FRAC fraction bits); p_c = s_c * RECIP, exact (IN_FRAC + RECIP_FRAC
//                     fraction bits); y_c = cast(p_c).
// RECIP (signed raw, RECIP_W bits, RECIP_FRAC fraction bits) is 1/FRAME in the chosen format.
// The cast goes to OUT_W/OUT_FRAC with ROUNDING and SATURATE as in triad_cast. MODE 1 uses N
// multipliers (on the final sum only).
// Timing: the first FRAME-1 transfers of a frame are always accepted (in_tready = 1, also while
// the previous result waits); the last one waits for the output register (in_tready =
// ~out_tvalid | out_tready) and the result is valid in the cycle after it is accepted
// (latency 1). With input always valid and output always ready: one transfer per cycle, FRAME
// cycles per frame, frames back to back. Storage: N accumulators and the output register.
module triad_global_pool #(
    parameter integer N = 4,
    parameter integer FRAME = 16,
    parameter integer MODE = 0,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
    parameter integer RECIP_W = 16,
    parameter integer RECIP_FRAC = 16,
    parameter [RECIP_W-1:0] RECIP = 0,
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
  localparam integer LOG_F = (FRAME > 1) ? $clog2(FRAME) : 0;
  localparam integer A_W = (MODE == 0) ? IN_W : IN_W + LOG_F;  // accumulator
  localparam integer P_W = A_W + RECIP_W;  // exact product (average)
  localparam integer CNT_W = (FRAME > 1) ? $clog2(FRAME) : 1;
  localparam [31:0] LAST = FRAME - 1;

  /* verilator lint_off UNUSEDSIGNAL */
  wire first;  // the frame's first transfer (not read when FRAME = 1)
  /* verilator lint_on UNUSEDSIGNAL */
  wire last;
  assign in_tready = ~last | ~out_tvalid | out_tready;
  wire take = in_tvalid & in_tready;

  generate
    if (FRAME > 1) begin : g_cnt
      reg [CNT_W-1:0] cnt;
      assign first = (cnt == {CNT_W{1'b0}});
      assign last  = (cnt == LAST[CNT_W-1:0]);
      always @(posedge clk) begin
        if (!rst_n) cnt <= {CNT_W{1'b0}};
        else if (take) cnt <= last ? {CNT_W{1'b0}} : cnt + 1'b1;
      end
    end else begin : g_one
      assign first = 1'b1;
      assign last  = 1'b1;
    end
  endgenerate

  wire [N*OUT_W-1:0] y;
  genvar c;
  generate
    for (c = 0; c < N; c = c + 1) begin : g_ch
      wire signed [IN_W-1:0] x = in_tdata[c*IN_W+:IN_W];
      wire signed [A_W-1:0] nxt;  // the accumulator with this transfer
      if (FRAME > 1) begin : g_acc
        reg signed [A_W-1:0] acc;
        if (MODE == 0) begin : g_max
          assign nxt = (first | (x > acc)) ? x : acc;
        end else begin : g_sum
          wire signed [A_W-1:0] xe = {{LOG_F{x[IN_W-1]}}, x};
          assign nxt = first ? xe : acc + xe;
        end
        always @(posedge clk) if (take & ~last) acc <= nxt;
      end else begin : g_noacc
        assign nxt = x;
      end
      if (MODE == 0) begin : g_max_out
        triad_cast #(
            .IN_W(IN_W),
            .IN_FRAC(IN_FRAC),
            .OUT_W(OUT_W),
            .OUT_FRAC(OUT_FRAC),
            .ROUNDING(ROUNDING),
            .SATURATE(SATURATE)
        ) u_cast (
            .in_data (nxt),
            .out_data(y[c*OUT_W+:OUT_W])
        );
      end else begin : g_avg_out
        wire signed [RECIP_W-1:0] r = RECIP;
        wire signed [P_W-1:0] p = nxt * r;  // exact
        triad_cast #(
            .IN_W(P_W),
            .IN_FRAC(IN_FRAC + RECIP_FRAC),
            .OUT_W(OUT_W),
            .OUT_FRAC(OUT_FRAC),
            .ROUNDING(ROUNDING),
            .SATURATE(SATURATE)
        ) u_cast (
            .in_data (p),
            .out_data(y[c*OUT_W+:OUT_W])
        );
      end
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) out_tvalid <= 1'b0;
    else if (take & last) out_tvalid <= 1'b1;
    else if (out_tready) out_tvalid <= 1'b0;
  end
  always @(posedge clk) if (take & last) out_tdata <= y;
endmodule
