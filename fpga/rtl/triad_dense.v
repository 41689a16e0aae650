// triad_dense: a streaming fully connected layer, y = cast(sum_i cast(x_i * w_oi) + cast(b_o)).
// The input vector arrives as one word (element i in in_tdata[i*IN_W +: IN_W]) and the output
// vector leaves the same way. With reuse factor REUSE (which divides N_IN) there are
// N_OUT * N_IN / REUSE multipliers: in the c-th of REUSE cycles (column c), output o's
// multipliers take the inputs c, c + REUSE, c + 2*REUSE, ... A new input is accepted every REUSE
// cycles (REUSE = 1: one per cycle), so II = REUSE.
// Output folding: REUSE may also be N_IN * RO with RO dividing N_OUT (hls4ml's reuse above the
// input count). Then N_OUT / RO output lanes each take one input per cycle: lane k computes
// outputs k*RO .. k*RO + RO - 1 one after another (RO groups of N_IN columns; in column ci of
// group co, lane k takes input ci and weight (k*RO + co, ci)), and a group's results wait in
// y_buf until the vector's last group. In general multiplier m (m = lane * KPR + leaf) reads
// weight m*REUSE + cnt of WEIGHTS in cycle cnt of a vector, whatever the folding.
// Weight storage (REUSE > 1): WEIGHT_ROM = 0 selects each multiplier's weight among its REUSE
// constants (an R-way multiplexer in logic); WEIGHT_ROM = 1 reads all of a cycle's weights as
// one word of a ROM (block RAM), REUSE words of N_OUT*N_IN/REUSE weights: WEIGHTS then holds
// word c at bit c*NM*W_W, multiplier m's weight at m*W_W within it. The ROM's read register,
// and one for the column's inputs, add a pipeline stage (PRE = 1).
// Arithmetic (docs/fpga.md): each product is exact (IN_W + W_W bits), is cast to the
// accumulator format with ACC_ROUNDING/ACC_SATURATE; the bias is cast the same way; the sum
// wraps modulo 2^ACC_W; the result is cast to OUT_W/OUT_FRAC with RES_ROUNDING/RES_SATURATE.
// WEIGHTS holds w[o][i] at bit (o*N_IN + i)*W_W, BIASES b[o] at bit o*B_W (all signed raw).
// W_MAG: bits of the largest |w| (W_W: unknown), which bounds the products and so the tree.
//
// Products by constants (REUSE = 1): W_TERMS holds 16 bits per weight at (o*N_IN + i)*16, in the
// canonical signed digit form the emitter chose to build from shifts and adds instead of a
// multiplier: [15:14] 0 multiply, 1 zero, 2 one term, 3 two terms; [13] a's sign, [12:8] its
// shift; [7] b's sign, [4:0] its shift (w = +-2^a, or +-2^a +-2^b with not both negative).
//
// Adder tree: per output and column, the KPR = N_IN/REUSE cast products (the leaves, level 0)
// are summed by a balanced tree of D = ceil(log2 KPR) levels (level l has ceil(KPR/2^l) nodes;
// node j of level l = node 2j + node 2j+1 of level l-1, or node 2j alone when it has no
// partner). Nodes are range-sized (P_W = IN_W + W_W, P_FRAC = IN_FRAC + W_FRAC; a product fits
// E_W = min(P_W, IN_W + W_MAG) bits, |x * w| < 2^(E_W - 1)): a leaf, the product cast to the
// accumulator, is
//   LEAF_W = E_W + ACC_FRAC - P_FRAC bits when ACC_FRAC >= P_FRAC (exact cast),
//            max(2, E_W + 1 - S) bits when the cast drops S = P_FRAC - ACC_FRAC bits (rounded),
//   capped at ACC_W; below ACC_W the cast can never overflow, so its result is the leaf
//   sign-extended and ACC_SATURATE does not matter; at ACC_W the leaf is the cast as it is
//   (rounding, saturating or wrapping). A node of level l is min(LEAF_W + l, ACC_W) bits: exact
//   while narrower than ACC_W, modulo 2^ACC_W at ACC_W, which is all the sum needs.
//
// Pipelining, STAGE_MASK (bit l: a register after tree level l, 0 <= l <= D; bit 0, the
// products, is set whenever any is), or else STAGE_LEVELS = k (the registers of
// STAGE_MASK = every level l with l % k == 0); the accumulate, acc or bias + tree output,
// counts as adder level D + 1:
//   none: as before: the column's products, tree, accumulate and output cast in one cycle.
//   else: registers (with the column's valid/first/last flags) after the product casts (level
//         0) and after every tree level in the mask. So the first stage is the multiplies +
//         casts (and no adder), the next ones the levels up to each register, and the last
//         stage the levels after the last register, the accumulate and the output cast into
//         the output register. P = number of registered levels; e.g. D = 4: k = 1: mult | 1 |
//         2 | 3 | 4 | acc + cast, k = 2: mult | 1-2 | 3-4 | acc + cast, mask {0,1,3,4}:
//         mult | 1 | 2-3 | 4 | acc + cast (the emitter's delay model picks the mask).
// Stages: x_reg (the accepted input, held for REUSE cycles while cnt walks the columns) ->
// P pipeline registers -> acc / out_tdata. All of them advance together on one enable, which
// drops only when the last stage holds a vector's last column and out_tdata still holds an
// unaccepted result: then nothing moves and in_tready is 0 (unless x_reg is empty).
// Timing: II = REUSE; latency (input accepted -> output valid, no back-pressure):
//   LATENCY = REUSE + 1 + P,   D = ceil(log2(N_IN / REUSE));
//   e.g. N_IN 16, REUSE 1 (D = 4): k = 0/1/2/3/4 -> 2/7/5/4/4 cycles, mask {0,1,3,4} -> 6.
// The columns of one vector reach the accumulator on REUSE consecutive cycles, P cycles after
// they were selected, so the accumulation across columns needs no change and II stays REUSE.
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
    parameter integer STAGE_LEVELS = 0,
    parameter [63:0] STAGE_MASK = 0,
    parameter integer W_MAG = W_W,
    parameter [N_OUT*N_IN*W_W-1:0] WEIGHTS = 0,
    parameter [N_OUT*N_IN*16-1:0] W_TERMS = 0,
    parameter [N_OUT*B_W-1:0] BIASES = 0,
    parameter integer WEIGHT_ROM = 0
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
  localparam integer RO = (REUSE > N_IN) ? REUSE / N_IN : 1;  // output groups (folding)
  localparam integer RI = REUSE / RO;  // columns per group
  localparam integer KPR = N_IN / RI;  // multipliers per output lane (tree leaves)
  localparam integer NL = N_OUT / RO;  // output lanes
  localparam integer NM = NL * KPR;  // multipliers
  localparam integer CI_W = (RI > 1) ? $clog2(RI) : 1;
  localparam integer CO_W = (RO > 1) ? $clog2(RO) : 1;
  localparam integer PRE = (WEIGHT_ROM != 0 && REUSE > 1) ? 1 : 0;  // the ROM's read stage
  localparam integer WCOL_W = (REUSE > 1) ? NM * W_W : 1;
  localparam integer D = $clog2(KPR);  // tree levels
  localparam integer CNT_W = (REUSE > 1) ? $clog2(REUSE) : 1;
  localparam integer P_W = IN_W + W_W;
  localparam integer P_FRAC = IN_FRAC + W_FRAC;
  localparam [31:0] LAST = REUSE - 1;
  localparam [31:0] LAST_CI = RI - 1;
  // The registered tree levels (bit l: after level l).
  function [63:0] stage_mask(input integer k);
    integer m;
    begin
      stage_mask = 0;
      for (m = 0; m <= D && m < 64; m = m + 1) if (k > 0 && m % k == 0) stage_mask[m] = 1'b1;
    end
  endfunction
  localparam [63:0] MASK = (STAGE_MASK != 0) ? (STAGE_MASK | 64'd1) : stage_mask(STAGE_LEVELS);
  function integer regs(input [63:0] mask);
    integer m;
    begin
      regs = 0;
      for (m = 0; m <= D && m < 64; m = m + 1) regs = regs + {31'b0, mask[m]};
    end
  endfunction
  localparam integer P = regs(MASK);
  /* verilator lint_off UNUSEDPARAM */
  // For the emitter and testbenches: cycles from an accepted input to its output.
  localparam integer LATENCY = REUSE + 1 + P + PRE;
  /* verilator lint_on UNUSEDPARAM */
  // Leaf width: the bits a cast product can need (see the header).
  localparam integer SHL = (ACC_FRAC > P_FRAC) ? ACC_FRAC - P_FRAC : 0;
  localparam integer SHR = (ACC_FRAC < P_FRAC) ? P_FRAC - ACC_FRAC : 0;
  localparam integer E_W = (IN_W + W_MAG < P_W) ? IN_W + W_MAG : P_W;
  localparam integer RANGE_W = (SHR == 0) ? E_W + SHL : ((E_W + 1 - SHR > 2) ? E_W + 1 - SHR : 2);
  localparam integer LEAF_W = (RANGE_W < ACC_W) ? RANGE_W : ACC_W;

  // Tree level l: ceil(KPR / 2^l) nodes of min(LEAF_W + l, ACC_W) bits, packed level after level.
  function integer lvl_n(input integer l);
    lvl_n = (KPR + (1 << l) - 1) >> l;
  endfunction
  function integer lvl_w(input integer l);
    lvl_w = (LEAF_W + l < ACC_W) ? LEAF_W + l : ACC_W;
  endfunction
  // Every level's offset, computed once (32 bits per level, at most 64 levels): Yosys evaluates
  // a constant function at each call, and calls per tree node made elaboration 100x slower.
  function [64*32-1:0] lvl_offsets(input integer levels);
    integer m;
    begin
      lvl_offsets = 0;
      for (m = 1; m <= levels && m < 64; m = m + 1)
        lvl_offsets[m*32+:32] = lvl_offsets[(m-1)*32+:32] + lvl_n(m - 1) * lvl_w(m - 1);
    end
  endfunction
  localparam [64*32-1:0] OFFS = lvl_offsets(D + 1);
  localparam integer TREE_BITS = OFFS[(D+1)*32+:32];
  localparam integer TOP_W = lvl_w(D);
  localparam integer TOP_POS = OFFS[D*32+:32];

  reg [N_IN*IN_W-1:0] x_reg;
  reg x_valid;
  reg [CNT_W-1:0] cnt;
  reg [NL*ACC_W-1:0] acc;
  wire [CI_W-1:0] ci;  // column within the output group
  wire [CO_W-1:0] co;  // output group

  wire last = (cnt == LAST[CNT_W-1:0]);
  wire glast = (ci == LAST_CI[CI_W-1:0]);
  // The last stage's column: valid, first of a group (start from the bias), last of a group
  // (a lane's result is final), last of the vector (write the output), and its group.
  wire s_valid, s_first, s_last;
  /* verilator lint_off UNUSEDSIGNAL */
  wire s_glast;  // with RO = 1 the same as s_last
  wire [CO_W-1:0] s_co;
  /* verilator lint_on UNUSEDSIGNAL */
  wire en = ~(s_valid & s_last & out_tvalid & ~out_tready);
  assign in_tready = ~x_valid | (last & en);

  /* verilator lint_off UNUSEDSIGNAL */
  wire [N_OUT*N_IN*W_W-1:0] w_rom = WEIGHTS;  // at REUSE = 1 read only where a multiplier is
  /* verilator lint_on UNUSEDSIGNAL */
  wire [NL*ACC_W-1:0] b_acc;  // biases in the accumulator format
  wire [NL*ACC_W-1:0] acc_next;
  wire [NL*OUT_W-1:0] y;
  // The column's inputs (one per leaf) and weights (one per multiplier), at the products.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [KPR*IN_W-1:0] xcol;
  wire [WCOL_W-1:0] wcol;  // REUSE = 1: unused (the weights are constants)
  /* verilator lint_on UNUSEDSIGNAL */

  // In cycle c, leaf j of every lane takes input j*RI + ci, and multiplier m weight m*REUSE + c:
  // both are contiguous per leaf or multiplier, so each selects among its own inputs and weights
  // (an R-way multiplexer; REUSE = 1: none) rather than shifting whole vectors, which synthesis
  // would build as a barrel shifter of N_OUT*N_IN*W_W bits first.
  genvar o, l, j;
  generate
    if (RO == 1) begin : g_nofold
      assign ci = cnt;
      assign co = {CO_W{1'b0}};
    end else begin : g_fold
      reg [CI_W-1:0] ci_r;
      reg [CO_W-1:0] co_r;
      always @(posedge clk) begin
        if (!rst_n) begin
          ci_r <= {CI_W{1'b0}};
          co_r <= {CO_W{1'b0}};
        end else if (en & x_valid) begin
          ci_r <= glast ? {CI_W{1'b0}} : ci_r + 1'b1;
          if (glast) co_r <= last ? {CO_W{1'b0}} : co_r + 1'b1;
        end
      end
      assign ci = ci_r;
      assign co = co_r;
    end

    if (REUSE > 1) begin : g_column
      wire [KPR*IN_W-1:0] xsel;
      for (j = 0; j < KPR; j = j + 1) begin : g_x
        wire [RI*IN_W-1:0] xs = x_reg[j*RI*IN_W+:RI*IN_W];
        assign xsel[j*IN_W+:IN_W] = xs[ci*IN_W+:IN_W];
      end
      if (PRE == 0) begin : g_logic
        assign xcol = xsel;
        for (j = 0; j < NM; j = j + 1) begin : g_w
          wire [REUSE*W_W-1:0] ws = w_rom[j*REUSE*W_W+:REUSE*W_W];
          assign wcol[j*W_W+:W_W] = ws[cnt*W_W+:W_W];
        end
      end else begin : g_rom
        // The weights of cycle c as word c of a ROM (block RAM), read a cycle ahead of the
        // products together with the column's inputs.
        reg [NM*W_W-1:0] rom[0:REUSE-1];
        integer c;
        initial begin
          for (c = 0; c < REUSE; c = c + 1) rom[c] = WEIGHTS[c*NM*W_W+:NM*W_W];
        end
        reg [NM*W_W-1:0] w_q;
        reg [KPR*IN_W-1:0] x_q;
        always @(posedge clk) begin
          if (en) begin
            w_q <= rom[cnt];
            x_q <= xsel;
          end
        end
        assign xcol = x_q;
        assign wcol = w_q;
      end
    end else begin : g_const_column
      assign xcol = x_reg;
      assign wcol = 1'b0;
    end

    // The column's flags through the PRE + P pipeline registers (bit 0 first).
    if (PRE + P == 0) begin : g_flags0
      assign s_valid = x_valid;
      assign s_first = (ci == {CI_W{1'b0}});
      assign s_glast = glast;
      assign s_last = last;
      assign s_co = co;
    end else begin : g_flags
      localparam integer PT = PRE + P;
      localparam integer FW = CO_W + 3;
      reg [PT-1:0] v_pipe;
      reg [PT*FW-1:0] f_pipe;
      wire [PT:0] v_in = {v_pipe, x_valid};
      wire [(PT+1)*FW-1:0] f_in = {f_pipe, co, last, glast, ci == {CI_W{1'b0}}};
      always @(posedge clk) begin
        if (!rst_n) v_pipe <= {PT{1'b0}};
        else if (en) v_pipe <= v_in[PT-1:0];
      end
      always @(posedge clk) begin
        if (en) f_pipe <= f_in[PT*FW-1:0];
      end
      assign s_valid = v_in[PT];
      assign s_first = f_in[PT*FW];
      assign s_glast = f_in[PT*FW+1];
      assign s_last = f_in[PT*FW+2];
      assign s_co = f_in[PT*FW+3+:CO_W];
    end

    for (o = 0; o < NL; o = o + 1) begin : g_out
      // Every node of the tree, level after level (a node's bits: OFFS[l] + j*width(l)).
      /* verilator lint_off UNOPTFLAT */
      wire [TREE_BITS-1:0] tree  /*verilator split_var*/;
      /* verilator lint_on UNOPTFLAT */
      for (l = 0; l <= D; l = l + 1) begin : g_lvl
        // This level's node count, width and offset, and the previous level's (inline
        // expressions: no function calls per node).
        localparam integer NL_L = (KPR + (1 << l) - 1) >> l;
        localparam integer WL = (LEAF_W + l < ACC_W) ? LEAF_W + l : ACC_W;
        localparam integer OL = OFFS[l*32+:32];
        localparam integer NC = (l > 0) ? (KPR + (1 << (l - 1)) - 1) >> (l - 1) : 1;
        localparam integer WC = (l > 0 && LEAF_W + l - 1 < ACC_W) ? LEAF_W + l - 1 : ACC_W;
        localparam integer OC = (l > 0) ? OFFS[(l-1)*32+:32] : 0;
        for (j = 0; j < NL_L; j = j + 1) begin : g_node
          localparam integer W = WL;
          localparam integer POS = OL + j * W;
          wire [W-1:0] v;
          if (l == 0) begin : g_leaf
            wire signed [P_W-1:0] p;  // exact
            if (REUSE == 1) begin : g_const
              // The weight is a constant: a multiplier, or the shifts and add of its digits.
              localparam [15:0] T = W_TERMS[(o*N_IN+j)*16+:16];
              /* verilator lint_off UNUSEDSIGNAL */
              wire [IN_W-1:0] xj = x_reg[j*IN_W+:IN_W];
              wire signed [P_W-1:0] xe = {{(P_W - IN_W) {xj[IN_W-1]}}, xj};
              wire signed [P_W-1:0] ta = xe <<< T[12:8];
              wire signed [P_W-1:0] tb = xe <<< T[4:0];
              /* verilator lint_on UNUSEDSIGNAL */
              if (T[15:14] == 2'd1) begin : g_zero
                assign p = {P_W{1'b0}};
              end else if (T[15:14] == 2'd2) begin : g_one
                if (T[13]) begin : g_neg
                  assign p = -ta;
                end else begin : g_pos
                  assign p = ta;
                end
              end else if (T[15:14] == 2'd3) begin : g_two
                if (T[13]) begin : g_neg_a
                  assign p = tb - ta;
                end else if (T[7]) begin : g_neg_b
                  assign p = ta - tb;
                end else begin : g_pos
                  assign p = ta + tb;
                end
              end else begin : g_mul
                wire signed [W_W-1:0] wv = w_rom[(o*N_IN+j)*W_W+:W_W];
                assign p = $signed(xj) * wv;
              end
            end else begin : g_mux
              wire signed [IN_W-1:0] xv = xcol[j*IN_W+:IN_W];
              wire signed [W_W-1:0] wv = wcol[(o*KPR+j)*W_W+:W_W];
              assign p = xv * wv;
            end
            // The cast's result fits in W signed bits: its upper bits are copies of the sign.
            /* verilator lint_off UNUSEDSIGNAL */
            wire [ACC_W-1:0] cp;
            /* verilator lint_on UNUSEDSIGNAL */
            triad_cast #(
                .IN_W(P_W),
                .IN_FRAC(P_FRAC),
                .OUT_W(ACC_W),
                .OUT_FRAC(ACC_FRAC),
                .ROUNDING(ACC_ROUNDING),
                .SATURATE(ACC_SATURATE)
            ) u_cast_p (
                .in_data (p),
                .out_data(cp)
            );
            assign v = cp[W-1:0];
          end else begin : g_sum
            // Children are 0 or 1 bit narrower: sign-extend them to W bits (modulo 2^ACC_W).
            localparam integer CW = WC;
            localparam integer CA = OC + 2 * j * CW;
            wire [CW-1:0] a = tree[CA+:CW];
            wire [W-1:0] ae = {{(W - CW + 1) {a[CW-1]}}, a[CW-2:0]};
            if (2 * j + 1 < NC) begin : g_add
              wire [CW-1:0] b = tree[CA+CW+:CW];
              wire [W-1:0] be = {{(W - CW + 1) {b[CW-1]}}, b[CW-2:0]};
              assign v = ae + be;
            end else begin : g_pass
              assign v = ae;
            end
          end
          if (MASK[l]) begin : g_reg
            reg [W-1:0] r;
            always @(posedge clk) if (en) r <= v;
            assign tree[POS+:W] = r;
          end else begin : g_comb
            assign tree[POS+:W] = v;
          end
        end
      end
      wire [TOP_W-1:0] top = tree[TOP_POS+:TOP_W];
      wire [ACC_W-1:0] s = {{(ACC_W - TOP_W + 1) {top[TOP_W-1]}}, top[TOP_W-2:0]};
      // The lane's bias: output o (RO = 1), or output o*RO + group of its RO outputs.
      wire [B_W-1:0] bv;
      if (RO == 1) begin : g_bias
        assign bv = BIASES[o*B_W+:B_W];
      end else begin : g_bias_fold
        wire [RO*B_W-1:0] bs = BIASES[o*RO*B_W+:RO*B_W];
        assign bv = bs[s_co*B_W+:B_W];
      end
      triad_cast #(
          .IN_W(B_W),
          .IN_FRAC(B_FRAC),
          .OUT_W(ACC_W),
          .OUT_FRAC(ACC_FRAC),
          .ROUNDING(ACC_ROUNDING),
          .SATURATE(ACC_SATURATE)
      ) u_cast_b (
          .in_data (bv),
          .out_data(b_acc[o*ACC_W+:ACC_W])
      );
      wire [ACC_W-1:0] base = s_first ? b_acc[o*ACC_W+:ACC_W] : acc[o*ACC_W+:ACC_W];
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

    // The output vector: the lanes' results (RO = 1), or every group's, collected in y_buf.
    wire [N_OUT*OUT_W-1:0] y_vec;
    if (RO == 1) begin : g_out_vec
      assign y_vec = y;
    end else begin : g_out_buf
      reg [N_OUT*OUT_W-1:0] y_buf;
      for (o = 0; o < NL; o = o + 1) begin : g_lane
        for (j = 0; j < RO; j = j + 1) begin : g_group
          localparam [CO_W-1:0] G = j;
          assign y_vec[(o*RO+j)*OUT_W+:OUT_W] =
              (s_glast && s_co == G) ? y[o*OUT_W+:OUT_W] : y_buf[(o*RO+j)*OUT_W+:OUT_W];
        end
      end
      always @(posedge clk) if (en & s_valid & s_glast) y_buf <= y_vec;
    end
  endgenerate

  always @(posedge clk) begin
    if (!rst_n) begin
      x_valid <= 1'b0;
      cnt <= {CNT_W{1'b0}};
      out_tvalid <= 1'b0;
    end else begin
      if (out_tvalid & out_tready) out_tvalid <= 1'b0;
      if (en & s_valid & s_last) out_tvalid <= 1'b1;
      if (en & x_valid) cnt <= last ? {CNT_W{1'b0}} : cnt + 1'b1;
      if (in_tready) x_valid <= in_tvalid;
    end
  end

  always @(posedge clk) begin
    if (in_tready & in_tvalid) x_reg <= in_tdata;
    if (en & s_valid) acc <= acc_next;
    if (en & s_valid & s_last) out_tdata <= y_vec;
  end
endmodule
