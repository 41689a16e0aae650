#!/usr/bin/env bash
# The leading dimension of an FPGA design is its stream: a model exported at a fixed batch (1, the
# default of torch.onnx.export, or 2) takes any multiple of that many samples in `triad compile
# --target fpga --input`, `triad sim`, `triad run --target fpga` and `triad quantize`, with the
# results of the same model at a dynamic batch (bit-exact in Verilator, II 1); a sample count that
# is not a multiple is refused naming the input (exit 6); other targets keep the fixed size.
# Exits 77 (skipped) without verilator.
# Usage: fpga_stream_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
if ! command -v verilator >/dev/null; then
  echo "SKIP: verilator is not on PATH"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
PY=$SRC/.venv/bin/python
[[ -x $PY ]] || PY=python3
$PY - "$SRC/models/jet_mlp.onnx" "$TMP" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
m = onnx.load(sys.argv[1])
for b in (1, 2):
    for v in list(m.graph.input) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim[0]
        d.ClearField("dim_param")
        d.dim_value = b
    onnx.save(m, f"{sys.argv[2]}/jet_b{b}.onnx")
x = np.load(sys.argv[1].replace("jet_mlp.onnx", "jet_test_x.npy"))
np.save(sys.argv[2] + "/x4.npy", x[:4])
np.save(sys.argv[2] + "/x5.npy", x[:5])
np.save(sys.argv[2] + "/x300.npy", x[:300])
PYEOF

d=$TMP/b1
if "$TRIAD" compile "$TMP/jet_b1.onnx" --target fpga --input "$TMP/x4.npy" -o "$d" >/dev/null &&
   "$TRIAD" sim "$d" --input "$TMP/x300.npy" --json "$d/sim.json" --output "$d/y.npy" >/dev/null &&
   "$TRIAD" run "$SRC/models/jet_mlp.onnx" --target fpga -i "$TMP/x300.npy" -o "$TMP/dyn.npy" >/dev/null &&
   $PY - "$d" "$TMP/dyn.npy" <<'PYEOF'
import json, sys
import numpy as np
d, dyn = sys.argv[1], sys.argv[2]
j = json.load(open(d + "/sim.json"))
assert j["samples"] == 300 and j["mismatches"] == 0 and j["missing"] == 0 and j["ii"] == 1, j
assert json.load(open(d + "/summary.json"))["samples"] == 4
# The RTL's outputs for the batch-1 export are the emulator's for the model at a dynamic batch.
assert np.array_equal(np.load(d + "/y.npy"), np.load(dyn))
PYEOF
then echo "ok   batch-1 export: compile with 4 samples, sim 300 samples bit-exact, as the dynamic model"
else echo "FAIL batch-1 compile/sim"; fail=1; fi

# triad run --target fpga: 4 samples through the batch-1 and the batch-2 export, as the dynamic one.
if "$TRIAD" run "$TMP/jet_b1.onnx" --target fpga -i "$TMP/x4.npy" -o "$TMP/r1.npy" >/dev/null &&
   "$TRIAD" run "$TMP/jet_b2.onnx" --target fpga -i "$TMP/x4.npy" -o "$TMP/r2.npy" >/dev/null &&
   "$TRIAD" run "$SRC/models/jet_mlp.onnx" --target fpga -i "$TMP/x4.npy" -o "$TMP/rd.npy" >/dev/null &&
   $PY -c "
import numpy as np
a, b, c = (np.load('$TMP/' + f) for f in ('r1.npy', 'r2.npy', 'rd.npy'))
assert a.shape == (4, 5) and np.array_equal(a, c) and np.array_equal(b, c), (a.shape, b.shape)"
then echo "ok   run --target fpga streams 4 samples through batch-1 and batch-2 exports"
else echo "FAIL run --target fpga"; fail=1; fi

# triad quantize (the emulator against float) on the batch-1 export.
if "$TRIAD" quantize "$TMP/jet_b1.onnx" -i "$TMP/x300.npy" --json "$TMP/q.json" >/dev/null &&
   $PY -c "
import json; j = json.load(open('$TMP/q.json'))
assert j['layers'][0]['elements'] == 300 * 16, j['layers'][0]"
then echo "ok   quantize streams 300 samples through the batch-1 export"
else echo "FAIL quantize"; fail=1; fi

# Not a multiple of the fixed batch: exit 6 naming the input; other targets keep the fixed size.
"$TRIAD" run "$TMP/jet_b2.onnx" --target fpga -i "$TMP/x5.npy" -o "$TMP/bad.npy" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 6 ]] || ! grep -q "holds 5 samples; the model fixes its leading dimension at 2" "$TMP/err"; then
  echo "FAIL 5 samples at batch 2: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   5 samples through a batch-2 export: exit 6"; fi
"$TRIAD" run "$TMP/jet_b1.onnx" --target interp -i "$TMP/x4.npy" -o "$TMP/bad.npy" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 6 ]] || ! grep -q "dimension 0 is fixed at 1" "$TMP/err"; then
  echo "FAIL interp on a fixed batch: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   the interpreter keeps the fixed batch (exit 6)"; fi
exit $fail
