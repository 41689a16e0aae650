// triad_dense: a streaming fully connected layer, y = cast(sum_i cast(x_i * w_oi) + cast(b_o)).
// The input vector arrives as one word (element i in in_tdata[i*IN_W +: IN_W]) and the output
// vector leaves the same way. With reuse factor REUSE (which divides N_IN) there are
// N_OUT * N_IN / REUSE multipliers: in the c-th of REUSE cycles, output o's multipliers take the
// inputs c, c + REUSE, c + 2*REUSE, ... A new input is accepted every REUSE cycles (REUSE = 1:
// one per cycle); the result is registered one cycle after the last partial sum.
// Arithmetic (docs/fpga.md): each product is exact (IN_W + W_W bits), is cast to the
// accumulator format with ACC_ROUNDING/ACC_SATURATE; the bias is cast the same way; the sum
// wraps modulo 2^ACC_W; the result is cast to OUT_W/OUT_FRAC with RES_ROUNDING/RES_SATURATE.
// WEIGHTS holds w[o][i] at bit (o*N_IN + i)*W_W, BIASES b[o] at bit o*B_W (all signed raw).
module triad_dense #(
    parameter integer N_IN = 4,
    parameter integer N_OUT = 4,
    parameter integer REUSE = 1,
    parameter integer IN_W = 16,
    parameter integer IN_FRAC = 10,
    parameter integer W_W = 16,
    parameter integer W_FRAC = 10,
    parameter integer B_W = 16,
    parameter integer B_FRAC = 10,
    parameter integer ACC_W = 32,
    parameter integer ACC_FRAC = 20,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ACC_ROUNDING = 0,
    parameter integer ACC_SATURATE = 0,
    parameter integer RES_ROUNDING = 0,
    parameter integer RES_SATURATE = 1,
    parameter [N_OUT*N_IN*W_W-1:0] WEIGHTS = 0,
    parameter [N_OUT*B_W-1:0] BIASES = 0
) (
    input  wire                   clk,
    input  wire                   rst_n,
    input  wire [ N_IN*IN_W-1:0]  in_tdata,
    input  wire                   in_tvalid,
    output wire                   in_tready,
    output reg  [N_OUT*OUT_W-1:0] out_tdata,
    output reg                    out_tvalid,
    input  wire                   out_tready
);
  localparam integer KPR = N_IN / REUSE;  // multipliers per output
  localparam integer CNT_W = (REUSE > 1) ? $clog2(REUSE) : 1;
  localparam integer P_W = IN_W + W_W;
  localparam integer P_FRAC = IN_FRAC + W_FRAC;
  localparam [31:0] LAST = REUSE - 1;

  reg [N_IN*IN_W-1:0] x_reg;
  reg x_valid;
  reg [CNT_W-1:0] cnt;
  reg [N_OUT*ACC_W-1:0] acc;

  wire last = (cnt == LAST[CNT_W-1:0]);
  wire stall = last & out_tvalid & ~out_tready;
  wire advance = x_valid & ~stall;
  assign in_tready = ~x_valid | (last & ~stall);

  wire [N_OUT*N_IN*W_W-1:0] w_rom = WEIGHTS;
  wire [N_OUT*ACC_W-1:0] b_acc;  // biases in the accumulator format
  wire [N_OUT*ACC_W-1:0] acc_next;
  wire [N_OUT*OUT_W-1:0] y;

  // This cycle's column: input c + k*REUSE and weight (o, c + k*REUSE) are at constant offsets
  // of the shifted vectors (REUSE = 1: no shift). Each cycle reads every REUSE-th element of them.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [N_IN*IN_W-1:0] x_col;
  wire [N_OUT*N_IN*W_W-1:0] w_col;
  /* verilator lint_on UNUSEDSIGNAL */
  genvar o, k;
  generate
    if (REUSE == 1) begin : g_r1
      assign x_col = x_reg;
      assign w_col = w_rom;
    end else begin : g_rn
      assign x_col = x_reg >> (cnt * IN_W);
      assign w_col = w_rom >> (cnt * W_W);
    end
    for (o = 0; o < N_OUT; o = o + 1) begin : g_out
      wire [KPR*ACC_W-1:0] cp;  // cast products
      for (k = 0; k < KPR; k = k + 1) begin : g_mul
        wire signed [IN_W-1:0] xv = x_col[k*REUSE*IN_W+:IN_W];
        wire signed [W_W-1:0] wv = w_col[(o*N_IN+k*REUSE)*W_W+:W_W];
        wire signed [P_W-1:0] p = xv * wv;  // exact
        triad_cast #(
            .IN_W(P_W),
            .IN_FRAC(P_FRAC),
            .OUT_W(ACC_W),
            .OUT_FRAC(ACC_FRAC),
            .ROUNDING(ACC_ROUNDING),
            .SATURATE(ACC_SATURATE)
        ) u_cast_p (
            .in_data (p),
            .out_data(cp[k*ACC_W+:ACC_W])
        );
      end
      // Sum modulo 2^ACC_W by a balanced adder tree (depth ceil(log2 KPR); the wrap makes the
      // order irrelevant): a heap of 2*KPR-1 nodes, leaves KPR-1.., node i = 2i+1 + 2i+2.
      /* verilator lint_off UNOPTFLAT */
      wire [(2*KPR-1)*ACC_W-1:0] tree  /*verilator split_var*/;
      /* verilator lint_on UNOPTFLAT */
      genvar t;
      assign tree[(KPR-1)*ACC_W+:KPR*ACC_W] = cp;
      for (t = 0; t < KPR - 1; t = t + 1) begin : g_sum
        assign tree[t*ACC_W+:ACC_W] = tree[(2*t+1)*ACC_W+:ACC_W] + tree[(2*t+2)*ACC_W+:ACC_W];
      end
      wire [ACC_W-1:0] s = tree[0+:ACC_W];
      triad_cast #(
          .IN_W(B_W),
          .IN_FRAC(B_FRAC),
          .OUT_W(ACC_W),
          .OUT_FRAC(ACC_FRAC),
          .ROUNDING(ACC_ROUNDING),
          .SATURATE(ACC_SATURATE)
      ) u_cast_b (
          .in_data (BIASES[o*B_W+:B_W]),
          .out_data(b_acc[o*ACC_W+:ACC_W])
      );
      wire [ACC_W-1:0] base = (cnt == {CNT_W{1'b0}}) ? b_acc[o*ACC_W+:ACC_W] : acc[o*ACC_W+:ACC_W];
      assign acc_next[o*ACC_W+:ACC_W] = base + s;
      triad_cast #(
          .IN_W(ACC_W),
          .IN_FRAC(ACC_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(RES_ROUNDING),
          .SATURATE(RES_SATURATE)
      ) u_cast_y (
          .in_data (acc_next[o*ACC_W+:ACC_W]),
          .out_data(y[o*OUT_W+:OUT_W])
      );
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) begin
      x_valid <= 1'b0;
      cnt <= {CNT_W{1'b0}};
      out_tvalid <= 1'b0;
    end else begin
      if (out_tvalid & out_tready) out_tvalid <= 1'b0;
      if (advance) begin
        if (last) begin
          cnt <= {CNT_W{1'b0}};
          out_tvalid <= 1'b1;
        end else begin
          cnt <= cnt + 1'b1;
        end
      end
      if (in_tready) x_valid <= in_tvalid;
    end
  end

  always @(posedge clk) begin
    if (in_tready & in_tvalid) x_reg <= in_tdata;
    if (advance) acc <= acc_next;
    if (advance & last) out_tdata <= y;
  end
endmodule
