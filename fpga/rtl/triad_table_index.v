// triad_table_index: the address of a lookup table entry (docs/fpga.md, Sigmoid/Tanh/Softmax):
// index = clamp(floor(v / 2^SHIFT) + OFFSET, 0, 2^IDX_W - 1) for a signed V_W-bit raw value v.
// The table has 2^IDX_W entries and 0 <= OFFSET <= 2^IDX_W. SHIFT < 0 multiplies by 2^-SHIFT (exactly: the width grows). Purely combinational; the
// emulator computes the same index (fpga/Emulator.cpp, tableIndex).
module triad_table_index #(
    parameter integer V_W = 16,
    parameter integer SHIFT = 4,
    parameter integer OFFSET = 512,
    parameter integer IDX_W = 10  // log2 of the table size
) (
    input  wire [  V_W-1:0] v,
    output wire [IDX_W-1:0] idx
);
  localparam integer S = (SHIFT > 0) ? SHIFT : 0;  // bits dropped (floor)
  localparam integer L = (SHIFT < 0) ? -SHIFT : 0;  // bits added (exact)
  // Wide enough for the shifted value and OFFSET, plus a sign bit and a carry.
  localparam integer BASE_W = (V_W + L > IDX_W + 1) ? V_W + L : IDX_W + 1;
  localparam integer E_W = BASE_W + 2;
  localparam [31:0] OFF32 = OFFSET;
  wire [E_W-1:0] off = {{(E_W - IDX_W - 1) {1'b0}}, OFF32[IDX_W:0]};  // OFFSET <= 2^IDX_W

  wire signed [E_W-1:0] ext = {{(E_W - V_W) {v[V_W-1]}}, v};
  wire signed [E_W-1:0] shifted = (ext >>> S) <<< L;
  wire [E_W-1:0] i = shifted + off;
  wire neg = i[E_W-1];
  wire big = |i[E_W-2:IDX_W];  // >= 2^IDX_W when not negative
  assign idx = neg ? {IDX_W{1'b0}} : big ? {IDX_W{1'b1}} : i[IDX_W-1:0];
endmodule
