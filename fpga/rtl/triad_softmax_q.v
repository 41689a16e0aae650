// triad_softmax_q: a Softmax on a QDQ integer grid followed by its QuantizeLinear (ONNX Runtime's
// QDQ models), over each N-element input vector of integers k (real value s * k), bit-exact with
// the emulator (fpga/layers/Softmax.cpp, docs/fpga.md):
//   d_j = max_k x_k - x_j                                     (exact, >= 0)
//   e_j = EXP_TABLE[d_j] = round(exp(-s d_j) * 2^EXP_FRAC)   (SIZE = 2^IN_W entries, unsigned)
//   S   = sum_j e_j                                           (exact)
//   y_j = min(round_half_even(e_j * R / (S * 2^R_FRAC)), HI)
// R = round(2^R_FRAC / s_y) (unsigned R_W bits): y_j is the QuantizeLinear's k = q - z of
// e_j / S, by an exact division (restoring, Q_B quotient bits: e_j <= S, so the quotient is at
// most R / 2^R_FRAC < 2^(Q_B-1)) instead of a reciprocal table. The grid's lower bound
// qmin - z is <= 0 <= y_j: only HI clamps. The emitter makes Q_B + 1 >= OUT_W and HI < 2^Q_B.
//
// Pipeline, every register on one enable (II = 1): max | exp entries (a read-only memory per
// element, registered read) | sum | divide, round and clamp. LATENCY = 4.
module triad_softmax_q #(
    parameter integer N = 4,
    parameter integer IN_W = 9,
    parameter integer SIZE = 512,  // 2^IN_W
    parameter integer EXP_W = 25,
    parameter integer R_W = 32,
    parameter integer R_FRAC = 24,
    parameter [R_W-1:0] R = 0,
    parameter integer Q_B = 9,
    parameter integer OUT_W = 9,
    parameter [Q_B:0] HI = 0,
    parameter [SIZE*EXP_W-1:0] EXP_TABLE = 0
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
  localparam integer D_W = IN_W + 1;  // max - x_j, exact
  localparam integer S_W = EXP_W + $clog2(N + 1);  // the exact sum
  localparam integer NUM_W = EXP_W + R_W;  // e_j * R
  /* verilator lint_off UNUSEDPARAM */
  localparam integer LATENCY = 4;
  /* verilator lint_on UNUSEDPARAM */
  wire en = ~out_tvalid | out_tready;
  assign in_tready = en;
  reg [2:0] v;  // valid flags of the max, exp and sum stages
  always @(posedge clk) begin
    if (!rst_n) begin
      v <= 3'b0;
      out_tvalid <= 1'b0;
    end else if (en) begin
      v <= {v[1:0], in_tvalid};
      out_tvalid <= v[2];
    end
  end
  // ---- max
  reg signed [IN_W-1:0] mx_c;
  integer m;
  always @* begin
    mx_c = $signed(in_tdata[IN_W-1:0]);
    for (m = 1; m < N; m = m + 1)
      if ($signed(in_tdata[m*IN_W+:IN_W]) > mx_c) mx_c = $signed(in_tdata[m*IN_W+:IN_W]);
  end
  reg signed [IN_W-1:0] mx;
  reg [N*IN_W-1:0] xm;
  always @(posedge clk) begin
    if (en) begin
      mx <= mx_c;
      xm <= in_tdata;
    end
  end
  // ---- exp entries: one read-only memory per element with a registered read (block RAM)
  reg [N*EXP_W-1:0] e;
  genvar j;
  generate
    for (j = 0; j < N; j = j + 1) begin : g_exp
      wire signed [IN_W-1:0] x = xm[j*IN_W+:IN_W];
      /* verilator lint_off UNUSEDSIGNAL */
      wire [D_W-1:0] d = {mx[IN_W-1], mx} - {x[IN_W-1], x};  // 0 .. 2^IN_W - 1
      /* verilator lint_on UNUSEDSIGNAL */
      reg [EXP_W-1:0] exp_rom[0:SIZE-1];
      integer i;
      initial for (i = 0; i < SIZE; i = i + 1) exp_rom[i] = EXP_TABLE[i*EXP_W+:EXP_W];
      always @(posedge clk) if (en) e[j*EXP_W+:EXP_W] <= exp_rom[d[IN_W-1:0]];
    end
  endgenerate
  // ---- sum
  reg [S_W-1:0] s_c;
  integer a;
  always @* begin
    s_c = {S_W{1'b0}};
    for (a = 0; a < N; a = a + 1) s_c = s_c + {{(S_W - EXP_W) {1'b0}}, e[a*EXP_W+:EXP_W]};
  end
  reg [S_W-1:0] sum;
  reg [N*EXP_W-1:0] es;
  always @(posedge clk) begin
    if (en) begin
      sum <= s_c;
      es  <= e;
    end
  end
  // ---- divide, round half to even, clamp. S * 2^R_FRAC has R_FRAC zero bits: the quotient is
  // floor(num_hi / S) with num_hi = num >> R_FRAC, and the remainder (rem_hi * 2^R_FRAC +
  // num_lo) is compared with half the divisor from rem_hi and num_lo's bits.
  localparam integer NH_W = NUM_W - R_FRAC;
  localparam integer L_W = ((NH_W > S_W + Q_B) ? NH_W : S_W + Q_B) + 2;
  wire [L_W-1:0] den = {{(L_W - S_W) {1'b0}}, sum};
  generate
    for (j = 0; j < N; j = j + 1) begin : g_div
      wire [NUM_W-1:0] num = {{R_W{1'b0}}, es[j*EXP_W+:EXP_W]} * {{EXP_W{1'b0}}, R};
      reg [L_W-1:0] rem, t;
      reg [Q_B:0] q;
      integer b;
      always @* begin
        rem = {{(L_W - NH_W) {1'b0}}, num[NUM_W-1:R_FRAC]};
        q = {(Q_B + 1) {1'b0}};
        for (b = Q_B - 1; b >= 0; b = b - 1) begin
          if (rem >= (den << b)) begin
            rem  = rem - (den << b);
            q[b] = 1'b1;
          end
        end
        // 2 * remainder against S * 2^R_FRAC: t = 2 rem_hi + num_lo's top bit, then its rest
        t = (rem << 1) | {{(L_W - 1) {1'b0}}, num[R_FRAC-1]};
        if (t > den || (t == den && (|num[R_FRAC-2:0] || q[0]))) q = q + {{Q_B{1'b0}}, 1'b1};
        if (q > HI) q = HI;
      end
      always @(posedge clk) if (en) out_tdata[j*OUT_W+:OUT_W] <= q[OUT_W-1:0];
    end
  endgenerate
endmodule
