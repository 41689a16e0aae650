// triad_pool: reduces a window vector to one value per channel, one register stage (full
// throughput, valid/ready, like triad_relu). The input transfer holds K window positions of N
// channels: element k*N + c (in_tdata[(k*N + c)*IN_W +: IN_W], signed raw, IN_FRAC fraction
// bits) is position k, channel c (triad_window's order with N = C and K = KH*KW). Output
// element c (out_tdata[c*OUT_W +: OUT_W]):
//   MODE 0 (max):     y_c = cast(max_k x_kc), raw signed compare, cast from IN_W/IN_FRAC;
//   MODE 1 (average): s_c = sum_k x_kc, exact (IN_W + ceil(log2 K) bits, IN_FRAC fraction
//                     bits); p_c = s_c * RECIP, exact (that width + RECIP_W bits,
//                     IN_FRAC + RECIP_FRAC fraction bits); y_c = cast(p_c).
// RECIP is the reciprocal of the divisor (e.g. 1/K, or 1/count) as a signed raw value of
// RECIP_W bits with RECIP_FRAC fraction bits. The cast goes to OUT_W/OUT_FRAC with ROUNDING
// and SATURATE as in triad_cast. MODE 1 uses N multipliers; MODE 0 none.
// Timing: latency 1 (the result is registered in the cycle its input is accepted), one
// transfer per cycle; in_tready = ~out_tvalid | out_tready.
module triad_pool #(
    parameter integer N = 4,
    parameter integer K = 4,
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
    input  wire [K*N*IN_W-1:0] in_tdata,
    input  wire               in_tvalid,
    output wire               in_tready,
    output reg  [N*OUT_W-1:0] out_tdata,
    output reg                out_tvalid,
    input  wire               out_tready
);
  localparam integer LOG_K = (K > 1) ? $clog2(K) : 0;
  localparam integer S_W = IN_W + LOG_K;  // exact sum of K values
  localparam integer P_W = S_W + RECIP_W;  // exact product
  wire [N*OUT_W-1:0] y;
  assign in_tready = ~out_tvalid | out_tready;

  genvar c;
  generate
    for (c = 0; c < N; c = c + 1) begin : g_ch
      if (MODE == 0) begin : g_max
        reg [IN_W-1:0] mx;
        integer k;
        always @* begin
          mx = in_tdata[c*IN_W+:IN_W];
          for (k = 1; k < K; k = k + 1)
            if ($signed(in_tdata[(k*N+c)*IN_W+:IN_W]) > $signed(mx))
              mx = in_tdata[(k*N+c)*IN_W+:IN_W];
        end
        triad_cast #(
            .IN_W(IN_W),
            .IN_FRAC(IN_FRAC),
            .OUT_W(OUT_W),
            .OUT_FRAC(OUT_FRAC),
            .ROUNDING(ROUNDING),
            .SATURATE(SATURATE)
        ) u_cast (
            .in_data (mx),
            .out_data(y[c*OUT_W+:OUT_W])
        );
      end else begin : g_avg
        reg [S_W-1:0] s;
        // The sign extension of one value: only its low S_W bits are added.
        /* verilator lint_off UNUSEDSIGNAL */
        reg [S_W+IN_W-1:0] xe;
        /* verilator lint_on UNUSEDSIGNAL */
        integer k;
        always @* begin
          s = {S_W{1'b0}};
          xe = {(S_W + IN_W) {1'b0}};
          for (k = 0; k < K; k = k + 1) begin
            xe = {{S_W{in_tdata[(k*N+c)*IN_W+IN_W-1]}}, in_tdata[(k*N+c)*IN_W+:IN_W]};
            s  = s + xe[S_W-1:0];
          end
        end
        wire signed [S_W-1:0] ss = s;
        wire signed [RECIP_W-1:0] r = RECIP;
        wire signed [P_W-1:0] p = ss * r;  // exact
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
    else if (in_tready) out_tvalid <= in_tvalid;
  end
  always @(posedge clk) if (in_tready & in_tvalid) out_tdata <= y;
endmodule
