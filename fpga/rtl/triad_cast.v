// triad_cast: the one lossy conversion of the fixed-point contract (docs/fpga.md, fpga::cast).
// Re-quantizes a signed raw value with IN_FRAC fraction bits to OUT_W bits with OUT_FRAC
// fraction bits: align the binary point (left shift: exact; right shift by S bits: round the
// dropped bits with ROUNDING), then fit the integer into OUT_W bits with SATURATE.
//   ROUNDING: 0 truncate (floor), 1 round half up, 2 convergent (ties to even)
//   SATURATE: 0 wrap (keep the low OUT_W bits), 1 clamp to [-2^(OUT_W-1), 2^(OUT_W-1)-1]
// Purely combinational; signed formats only.
module triad_cast #(
    parameter integer IN_W     = 16,
    parameter integer IN_FRAC  = 10,
    parameter integer OUT_W    = 16,
    parameter integer OUT_FRAC = 10,
    parameter integer ROUNDING = 0,
    parameter integer SATURATE = 1
) (
    input  wire [ IN_W-1:0] in_data,
    output wire [OUT_W-1:0] out_data
);
  localparam integer D = OUT_FRAC - IN_FRAC;  // > 0: shift left, < 0: shift right
  localparam integer S = (D < 0) ? -D : 0;  // bits dropped
  localparam integer L = (D > 0) ? D : 0;  // bits added
  // Width of the aligned and rounded value: wide enough for the left shift, for the dropped
  // bits plus a sign bit, and for the rounding increment.
  localparam integer BASE_W = (IN_W + L > S + 1) ? IN_W + L : S + 1;
  localparam integer Q_W = BASE_W + 1;

  wire signed [Q_W-1:0] q;

  // Which of the rounding bits and high bits are read depends on the modes.
  /* verilator lint_off UNUSEDSIGNAL */

  generate
    if (S == 0) begin : g_left
      wire signed [Q_W-1:0] ext = {{(Q_W - IN_W) {in_data[IN_W-1]}}, in_data};
      assign q = ext <<< L;
    end else begin : g_right
      wire signed [Q_W-1:0] ext = {{(Q_W - IN_W) {in_data[IN_W-1]}}, in_data};
      wire signed [Q_W-1:0] fl = ext >>> S;
      wire half = ext[S-1];
      wire rest;
      if (S > 1) begin : g_rest
        assign rest = |ext[S-2:0];
      end else begin : g_norest
        assign rest = 1'b0;
      end
      wire inc;
      if (ROUNDING == 1) begin : g_rnd
        assign inc = half;
      end else if (ROUNDING == 2) begin : g_conv
        assign inc = half & (rest | fl[0]);
      end else begin : g_trn
        assign inc = 1'b0;
      end
      assign q = fl + {{(Q_W - 1) {1'b0}}, inc};
    end

    if (Q_W <= OUT_W) begin : g_fits
      assign out_data = {{(OUT_W - Q_W) {q[Q_W-1]}}, q};
    end else begin : g_fit
      // In range when the bits from OUT_W-1 up are all copies of the sign.
      wire [Q_W-OUT_W:0] top = q[Q_W-1:OUT_W-1];
      wire over = ~((&top) | ~(|top));
      if (SATURATE != 0) begin : g_sat
        assign out_data = !over ? q[OUT_W-1:0]
                        : q[Q_W-1] ? {1'b1, {(OUT_W - 1) {1'b0}}} : {1'b0, {(OUT_W - 1) {1'b1}}};
      end else begin : g_wrap
        assign out_data = q[OUT_W-1:0];
      end
    end
  endgenerate
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
