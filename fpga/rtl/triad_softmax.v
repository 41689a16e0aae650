// triad_softmax: softmax over each N-element input vector with two lookup tables, hls4ml's
// stable form, bit-exact with the emulator (docs/fpga.md, Softmax):
//   d_j   = x_j - max_k x_k                                  (exact, <= 0)
//   e_j   = EXP_TABLE[clamp(floor(d_j / 2^EXP_SHIFT) + SIZE, 0, SIZE-1)]   (EXP_W bits)
//   S     = sum_j e_j                                        (exact)
//   inv   = INV_TABLE[clamp(floor(S / 2^INV_SHIFT), 0, SIZE-1)]            (INV_W bits)
//   y_j   = cast(e_j * inv)   (exact product, EXP_FRAC + INV_FRAC fraction bits)
// Tables: SIZE entries each, entry i at [i*W +: W], filled by the emulator (exp over [-R, 0),
// 1/s over [0, inv_range), both at the midpoints of their steps).
//
// Pipeline (every register advances on one enable, which drops only while the output holds a
// vector nobody takes: full throughput, II = 1), each stage sized by the emitter's delay model
// (fpga/layers/Softmax.cpp):
//   max:  all N(N-1)/2 comparisons x_j >= x_k at once, then the first maximum's one-hot select
//         and an AND-OR multiplexer: mx. MAX_SPLIT = 1 registers the comparisons in between.
//   exp:  d_j = x_j - mx and its table index address each element's exp table (a block RAM
//         with a registered read).
//   sum:  a balanced adder tree of DS = ceil(log2 N) levels over the exp entries (level l:
//         EXP_W + l bits, exact), registered after level l where SUM_REGS[l] is set (level 0:
//         the table outputs themselves, l <= DS: after the whole sum), then the reciprocal
//         table's index addresses its block RAM (registered read).
//   inv:  the reciprocal registered once more (a block RAM's clock-to-out is ~2.5 ns).
//   mult: p_j = e_j * inv registered (a DSP48E1), then cast into out_tdata.
// LATENCY = (MAX_SPLIT ? 2 : 1) + 5 + popcount(SUM_REGS[DS:0]).
module triad_softmax #(
    parameter integer N = 4,
    parameter integer IN_W = 16,
    parameter integer SIZE = 1024,
    parameter integer IDX_W = 10,  // $clog2(SIZE)
    parameter integer EXP_SHIFT = 3,
    parameter integer EXP_W = 18,
    parameter integer EXP_FRAC = 10,
    parameter integer INV_SHIFT = 3,
    parameter integer INV_W = 18,
    parameter integer INV_FRAC = 10,
    parameter integer OUT_W = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1,
    parameter integer MAX_SPLIT = 0,
    parameter [31:0] SUM_REGS = 0,
    parameter [SIZE*EXP_W-1:0] EXP_TABLE = 0,
    parameter [SIZE*INV_W-1:0] INV_TABLE = 0
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
  localparam integer D_W = IN_W + 1;  // x_j - max, exact
  localparam integer Q_S = (EXP_SHIFT > 0) ? EXP_SHIFT : 0;  // the exp index: bits dropped
  localparam integer Q_L = (EXP_SHIFT < 0) ? -EXP_SHIFT : 0;  // ... or added
  localparam integer Q_W = (D_W + Q_L > IDX_W) ? D_W + Q_L + 1 : IDX_W + 1;
  localparam integer DS = $clog2(N);  // sum tree levels
  localparam integer S_W = EXP_W + DS;  // the exact sum
  localparam integer P_W = EXP_W + INV_W;
  function integer regs_upto(input [31:0] mask, input integer last);
    integer b;
    begin
      regs_upto = 0;
      for (b = 0; b <= last && b < 32; b = b + 1) regs_upto = regs_upto + {31'b0, mask[b]};
    end
  endfunction
  localparam integer NSUM = regs_upto(SUM_REGS, DS);
  localparam integer MAXR = (MAX_SPLIT != 0) ? 2 : 1;
  /* verilator lint_off UNUSEDPARAM */
  // For the emitter and testbenches: cycles from an accepted input to its output.
  localparam integer LATENCY = MAXR + 5 + NSUM;
  /* verilator lint_on UNUSEDPARAM */
  localparam integer NV = LATENCY - 1;  // valid flags before out_tvalid

  // All stages move together unless the output holds a value nobody takes.
  wire en = ~out_tvalid | out_tready;
  assign in_tready = en;

  genvar j, k, l;

  // ---- max: comparisons, one-hot select of the first maximum, AND-OR multiplexer.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [N*N-1:0] ge_c;  // ge[j*N + k] = x_j >= x_k, j < k (the other bits unused)
  wire [N*N-1:0] ge;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [N*IN_W-1:0] xs;  // the inputs, in step with ge
  generate
    for (j = 0; j < N; j = j + 1) begin : g_cmp_row
      for (k = 0; k < N; k = k + 1) begin : g_cmp
        if (j < k) begin : g_ge
          assign ge_c[j*N+k] = $signed(in_tdata[j*IN_W+:IN_W]) >= $signed(in_tdata[k*IN_W+:IN_W]);
        end else begin : g_none
          assign ge_c[j*N+k] = 1'b0;
        end
      end
    end
    if (MAX_SPLIT != 0) begin : g_split
      reg [N*N-1:0] ge_r;
      reg [N*IN_W-1:0] x_r;
      always @(posedge clk) begin
        if (en) begin
          ge_r <= ge_c;
          x_r  <= in_tdata;
        end
      end
      assign ge = ge_r;
      assign xs = x_r;
    end else begin : g_nosplit
      assign ge = ge_c;
      assign xs = in_tdata;
    end
  endgenerate
  // sel_j: x_j >= every later x_k and > every earlier one (exactly one j is selected).
  wire [N-1:0] sel;
  wire [N*IN_W-1:0] masked;  // x_j where selected, else 0
  generate
    for (j = 0; j < N; j = j + 1) begin : g_sel
      wire [N-1:0] wins;
      for (k = 0; k < N; k = k + 1) begin : g_w
        if (k > j) begin : g_later
          assign wins[k] = ge[j*N+k];
        end else if (k < j) begin : g_earlier
          assign wins[k] = ~ge[k*N+j];
        end else begin : g_self
          assign wins[k] = 1'b1;
        end
      end
      assign sel[j] = &wins;
      assign masked[j*IN_W+:IN_W] = sel[j] ? xs[j*IN_W+:IN_W] : {IN_W{1'b0}};
    end
  endgenerate
  reg [IN_W-1:0] mx_c;
  integer m;
  always @* begin
    mx_c = {IN_W{1'b0}};
    for (m = 0; m < N; m = m + 1) mx_c = mx_c | masked[m*IN_W+:IN_W];
  end
  reg signed [IN_W-1:0] mx;
  reg [N*IN_W-1:0] xm;  // the inputs, in step with mx
  always @(posedge clk) begin
    if (en) begin
      mx <= mx_c;
      xm <= xs;
    end
  end

  // ---- exp: differences, table indices, one table (block RAM) per element.
  wire [N*EXP_W-1:0] e0;  // the exp entries (sum level 0)
  generate
    for (j = 0; j < N; j = j + 1) begin : g_el
      wire signed [IN_W-1:0] x = xm[j*IN_W+:IN_W];
      wire [D_W-1:0] d = {x[IN_W-1], x} - {mx[IN_W-1], mx};
      // triad_table_index's clamp(floor(d / 2^EXP_SHIFT) + SIZE, 0, SIZE-1) for d <= 0, short:
      // q = floor(d / 2^EXP_SHIFT) <= 0 is 0 only for d = 0 (x is the maximum: the last entry);
      // else the entry is q's low IDX_W bits when q >= -SIZE (its higher bits all ones), or 0.
      wire signed [Q_W-1:0] de = {{(Q_W - D_W) {d[D_W-1]}}, d};
      /* verilator lint_off UNUSEDSIGNAL */
      wire signed [Q_W-1:0] q = (de >>> Q_S) <<< Q_L;
      /* verilator lint_on UNUSEDSIGNAL */
      wire top = x == mx;
      wire in_range = &q[Q_W-1:IDX_W];
      wire [IDX_W-1:0] idx = top ? {IDX_W{1'b1}} : in_range ? q[IDX_W-1:0] : {IDX_W{1'b0}};
      reg [EXP_W-1:0] exp_rom[0:SIZE-1];
      reg [EXP_W-1:0] e_q;
      integer i;
      initial for (i = 0; i < SIZE; i = i + 1) exp_rom[i] = EXP_TABLE[i*EXP_W+:EXP_W];
      always @(posedge clk) if (en) e_q <= exp_rom[idx];
      assign e0[j*EXP_W+:EXP_W] = e_q;
    end
  endgenerate

  // ---- sum: level l has ceil(N / 2^l) nodes of EXP_W + l bits (packed level after level);
  // the exp entries travel beside the tree through the same registers.
  function integer lvl_n(input integer lv);
    lvl_n = (N + (1 << lv) - 1) >> lv;
  endfunction
  function [32*33-1:0] lvl_offsets(input integer levels);
    integer q;
    begin
      lvl_offsets = 0;
      for (q = 1; q <= levels && q < 33; q = q + 1)
        lvl_offsets[q*32+:32] = lvl_offsets[(q-1)*32+:32] + lvl_n(q - 1) * (EXP_W + q - 1);
    end
  endfunction
  localparam [32*33-1:0] OFFS = lvl_offsets(DS + 1);
  localparam integer TREE_BITS = OFFS[(DS+1)*32+:32];
  /* verilator lint_off UNOPTFLAT */
  wire [TREE_BITS-1:0] tree  /*verilator split_var*/;
  /* verilator lint_on UNOPTFLAT */
  /* verilator lint_off UNOPTFLAT */
  wire [(DS+2)*N*EXP_W-1:0] e_lv  /*verilator split_var*/;  // the entries after each level
  /* verilator lint_on UNOPTFLAT */
  assign e_lv[0+:N*EXP_W] = e0;
  generate
    for (l = 0; l <= DS; l = l + 1) begin : g_lvl
      localparam integer NL = (N + (1 << l) - 1) >> l;
      localparam integer WL = EXP_W + l;
      localparam integer OL = OFFS[l*32+:32];
      localparam integer NC = (l > 0) ? (N + (1 << (l - 1)) - 1) >> (l - 1) : 1;
      localparam integer WC = (l > 0) ? EXP_W + l - 1 : EXP_W;
      localparam integer OC = (l > 0) ? OFFS[(l-1)*32+:32] : 0;
      wire [N*EXP_W-1:0] e_in = e_lv[l*N*EXP_W+:N*EXP_W];
      if (SUM_REGS[l]) begin : g_ereg
        reg [N*EXP_W-1:0] e_r;
        always @(posedge clk) if (en) e_r <= e_in;
        assign e_lv[(l+1)*N*EXP_W+:N*EXP_W] = e_r;
      end else begin : g_epass
        assign e_lv[(l+1)*N*EXP_W+:N*EXP_W] = e_in;
      end
      for (j = 0; j < NL; j = j + 1) begin : g_node
        wire [WL-1:0] v;
        if (l == 0) begin : g_leaf
          assign v = e0[j*EXP_W+:EXP_W];
        end else begin : g_sum
          wire [WC-1:0] a = tree[OC+2*j*WC+:WC];
          wire [WL-1:0] ae = {a[WC-1], a};
          if (2 * j + 1 < NC) begin : g_add
            wire [WC-1:0] b = tree[OC+(2*j+1)*WC+:WC];
            assign v = ae + {b[WC-1], b};
          end else begin : g_pass
            assign v = ae;
          end
        end
        if (SUM_REGS[l] && l < DS) begin : g_reg
          reg [WL-1:0] r;
          always @(posedge clk) if (en) r <= v;
          assign tree[OL+j*WL+:WL] = r;
        end else begin : g_comb
          assign tree[OL+j*WL+:WL] = v;
        end
      end
    end
  endgenerate
  // The whole sum, registered once more when SUM_REGS[DS] is set.
  wire [S_W-1:0] s_c = tree[OFFS[DS*32+:32]+:S_W];
  wire [S_W-1:0] s;
  generate
    if (SUM_REGS[DS]) begin : g_sreg
      reg [S_W-1:0] s_r;
      always @(posedge clk) if (en) s_r <= s_c;
      assign s = s_r;
    end else begin : g_snoreg
      assign s = s_c;
    end
  endgenerate
  wire [N*EXP_W-1:0] e_s = e_lv[(DS+1)*N*EXP_W+:N*EXP_W];  // in step with s

  // ---- inv: the reciprocal table's index and block RAM, then one more register.
  wire [IDX_W-1:0] inv_idx;
  triad_table_index #(
      .V_W(S_W),
      .SHIFT(INV_SHIFT),
      .OFFSET(0),
      .IDX_W(IDX_W)
  ) u_inv_idx (
      .v  (s),
      .idx(inv_idx)
  );
  reg [INV_W-1:0] inv_rom[0:SIZE-1];
  reg [INV_W-1:0] inv_q, inv_r;
  reg [N*EXP_W-1:0] e_q1, e_q2;
  integer i;
  initial for (i = 0; i < SIZE; i = i + 1) inv_rom[i] = INV_TABLE[i*INV_W+:INV_W];
  always @(posedge clk) if (en) inv_q <= inv_rom[inv_idx];
  always @(posedge clk) begin
    if (en) begin
      e_q1  <= e_s;
      e_q2  <= e_q1;
      inv_r <= inv_q;
    end
  end

  // ---- mult: p_j = e_j * inv (exact), registered; y_j = cast(p_j) into out_tdata.
  wire [N*OUT_W-1:0] y;
  generate
    for (j = 0; j < N; j = j + 1) begin : g_out
      wire signed [EXP_W-1:0] e = e_q2[j*EXP_W+:EXP_W];
      wire signed [INV_W-1:0] r = inv_r;
      reg signed [P_W-1:0] p;
      always @(posedge clk) if (en) p <= e * r;  // exact
      triad_cast #(
          .IN_W(P_W),
          .IN_FRAC(EXP_FRAC + INV_FRAC),
          .OUT_W(OUT_W),
          .OUT_FRAC(OUT_FRAC),
          .ROUNDING(ROUNDING),
          .SATURATE(SATURATE)
      ) u_cast (
          .in_data (p),
          .out_data(y[j*OUT_W+:OUT_W])
      );
    end
  endgenerate

  reg [NV-1:0] v;  // v[0]: the first stage's register holds a vector
  always @(posedge clk) if (en) out_tdata <= y;
  always @(posedge clk) begin
    if (!rst_n) begin
      v <= {NV{1'b0}};
      out_tvalid <= 1'b0;
    end else if (en) begin
      v <= {v[NV-2:0], in_tvalid};
      out_tvalid <= v[NV-1];
    end
  end
endmodule
