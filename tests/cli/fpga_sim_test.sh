#!/usr/bin/env bash
# End to end: triad compile --target fpga + triad sim on the whole of jet_mlp (Dense, ReLU and the
# final Softmax) at reuse 1 and 4 on 1,000 test inputs: 0 mismatches with the emulator in the
# steady pass and in the pass with random input gaps and back-pressure, II = R, the predicted
# latency, a cached second build; digits_mlp (whole model, reuse 8) on its 360 test inputs: the
# argmax of the RTL's softmax agrees with float's and the accuracy is within 0.5 points; and the
# must-fail cases (an op without RTL, an invalid reuse factor); the CNNs digits_cnn and
# resblock_cnn on their 360 test images, compiled without --input (triad sim computes the
# expected outputs). Exits 77 (skipped) without verilator.
# Usage: fpga_sim_test.sh TRIAD_BINARY SOURCE_DIR
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
$PY -c "import numpy as np; np.save('$TMP/x.npy', np.load('$SRC/models/jet_test_x.npy')[:1000])" || exit 1
MODEL=$SRC/models/jet_mlp.onnx

# A model with an op without an FPGA layer (Exp): exit 5 naming the node.
$PY - "$TMP/exp.onnx" <<'PYEOF' || exit 1
import sys
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
g = helper.make_graph([helper.make_node("Exp", ["x"], ["y"], name="/act/Exp")], "exp", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PYEOF
"$TRIAD" compile "$TMP/exp.onnx" --target fpga -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 5 ]] || ! grep -q "'/act/Exp' (Exp)" "$TMP/err"; then
  echo "FAIL exp: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   a model with Exp is unsupported (exit 5, the node named)"; fi
"$TRIAD" compile "$MODEL" --target fpga --reuse 3 -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "valid: 1, 2, 4, 8, 16" "$TMP/err"; then
  echo "FAIL reuse 3: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   reuse 3 rejected with the valid values"; fi

"$TRIAD" compile "$MODEL" --target fpga --shift-add-digits 3 -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "expected 0, 1 or 2" "$TMP/err"; then
  echo "FAIL shift-add-digits 3: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   --shift-add-digits 3 rejected"; fi
# At reuse 1 the products by weights of few signed digits are shifts and adds (W_TERMS), none
# with --shift-add-digits 0.
if ! "$TRIAD" compile "$MODEL" --target fpga --shift-add-digits 0 -o "$TMP/d0" >/dev/null ||
   grep -q "W_TERMS" "$TMP/d0/rtl/jet_mlp.v"; then
  echo "FAIL --shift-add-digits 0 still writes W_TERMS"; fail=1
else echo "ok   --shift-add-digits 0: every product a multiplier"; fi

for r in 1 4; do
  d=$TMP/jet_r$r
  if ! "$TRIAD" compile "$MODEL" --target fpga --reuse $r --input "$TMP/x.npy" -o "$d"; then
    echo "FAIL compile r=$r"; fail=1; continue
  fi
  if ! "$TRIAD" sim "$d" --input "$TMP/x.npy" --json "$d/sim.json" --output "$d/y.npy"; then
    echo "FAIL sim r=$r"; fail=1; continue
  fi
  if ! $PY - "$d/sim.json" "$d/summary.json" $r <<'PYEOF'
import json, math, sys
j = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); r = int(sys.argv[3])
assert j["samples"] == 1000, j
assert j["mismatches"] == 0 and j["missing"] == 0, j
assert j["ii"] == r, j
# At the default 200 MHz every Dense layer's adder tree is registered where the delay model puts
# its stages (stage_registers: the tree levels after which a register sits, 0 = the products):
# R + 1 + len(stage_registers) cycles (K = 16, 64, 32, 32); three ReLUs and the Softmax (8 cycles
# at 200 MHz: the maximum, the exp tables, a register after the sum's first level and one after
# the sum, the reciprocal table, one more register, the product, the cast). The model predicts
# the measured latency.
assert s["until"] == "/Softmax" and s["layers"][-1]["op"] == "Softmax", s
assert s["clock_mhz"] == 200, s
dl = [l for l in s["layers"] if l["op"] == "Gemm"]
assert [l["inputs"] for l in dl] == [16, 64, 32, 32], dl
for l in dl:
    regs, depth = l["stage_registers"], math.ceil(math.log2(l["inputs"] // r))
    assert regs and regs[0] == 0 and regs == sorted(set(regs)) and regs[-1] <= depth, l
dense = sum(r + 1 + len(l["stage_registers"]) for l in dl)
assert s["shift_add_digits"] == 2, s
if r == 1:  # 732 of jet_mlp's 4,256 products: 0, +-2^k or two signed digits (not both negative)
    v = open(sys.argv[2].replace("summary.json", "rtl/jet_mlp.v")).read()
    import re
    built = sum(int(n) for n in re.findall(r"products built from shifts and adds: (\d+) of", v))
    assert built == 732, built
assert s["layers"][-1]["latency_cycles"] == 8, s["layers"][-1]
assert j["latency_cycles"] == s["latency_cycles"] == dense + 3 + 8, (j, s["latency_cycles"])
PYEOF
  then echo "FAIL r=$r: $(cat "$d/sim.json")"; fail=1; else echo "ok   jet_mlp r=$r"; fi
done
# digits_mlp, the whole model: the RTL's softmax picks the float model's class.
$PY -c "import numpy as np; np.save('$TMP/dx.npy', np.load('$SRC/models/digits_test_x_flat.npy'))" || exit 1
d=$TMP/digits
if "$TRIAD" compile "$SRC/models/digits_mlp.onnx" --target fpga --reuse 8 --input "$TMP/dx.npy" -o "$d" &&
   "$TRIAD" sim "$d" --input "$TMP/dx.npy" --json "$d/sim.json" --output "$d/y.npy" &&
   "$TRIAD" run "$SRC/models/digits_mlp.onnx" --batch 360 -i "$TMP/dx.npy" -o "$d/yf.npy" &&
   $PY - "$d" "$SRC/models/digits_test_y.npy" <<'PYEOF'
import json, sys
import numpy as np
d = sys.argv[1]
j = json.load(open(d + "/sim.json"))
assert j["samples"] == 360 and j["mismatches"] == 0 and j["missing"] == 0, j
y, yf, lab = np.load(d + "/y.npy"), np.load(d + "/yf.npy"), np.load(sys.argv[2])
agree = float(np.mean(y.argmax(1) == yf.argmax(1)))
acc, facc = float(np.mean(y.argmax(1) == lab)), float(np.mean(yf.argmax(1) == lab))
print(f"digits_mlp RTL softmax: top-1 agreement with float {agree:.4f}, accuracy {acc:.4f} "
      f"(float {facc:.4f})")
assert agree >= 0.99 and acc >= facc - 0.005, (agree, acc, facc)
PYEOF
then echo "ok   digits_mlp softmax argmax"; else echo "FAIL digits_mlp"; fail=1; fi
# The CNNs (Conv, MaxPool, Flatten -> Dense; residual Add with a FIFO, BatchNormalization,
# GlobalAveragePool): 500 images through the RTL (the 360 of the test split, then 140 of them
# with noise), bit-exact with the emulator in both passes (random gaps and back-pressure), top-1
# on the test split within 1 point of float; rtl/ holds only the blocks the design uses and lints
# clean from files.f.
$PY -c "
import numpy as np
x = np.load('$SRC/models/digits_test_x.npy')
noisy = x[:140] + np.random.default_rng(1).normal(0, 2.0, x[:140].shape).astype(np.float32)
np.save('$TMP/cx.npy', np.concatenate([x, noisy]))" || exit 1
for m in digits_cnn resblock_cnn; do
  d=$TMP/$m
  if "$TRIAD" compile "$SRC/models/$m.onnx" --target fpga -o "$d" &&
     (cd "$d/rtl" && verilator --lint-only -Wall --top-module $m $(grep -v '^//' files.f)) &&
     "$TRIAD" sim "$d" --input "$TMP/cx.npy" --json "$d/sim.json" --output "$d/y.npy" &&
     "$TRIAD" run "$SRC/models/$m.onnx" --batch 500 -i "$TMP/cx.npy" -o "$d/yf.npy" &&
     $PY - "$d" "$SRC/models/digits_test_y.npy" $m <<'PYEOF'
import json, os, sys
import numpy as np
d, m = sys.argv[1], sys.argv[3]
j = json.load(open(d + "/sim.json"))
assert j["samples"] == 500 and j["mismatches"] == 0 and j["missing"] == 0, j
assert j["ii"] == 64 if m == "digits_cnn" else j["ii"] == 100, j  # the (padded) 8x8 frame
y, yf, lab = np.load(d + "/y.npy")[:360], np.load(d + "/yf.npy")[:360], np.load(sys.argv[2])
acc, facc = float(np.mean(y.argmax(1) == lab)), float(np.mean(yf.argmax(1) == lab))
print(f"{m} RTL: accuracy {acc:.4f} (float {facc:.4f}), latency {j['latency_cycles']} cycles, II {j['ii']}")
assert acc >= facc - 0.01, (acc, facc)
rtl = sorted(f for f in os.listdir(d + "/rtl") if f.endswith(".v"))
assert "triad_lut.v" not in rtl and "triad_leaky_relu.v" not in rtl, rtl
PYEOF
  then echo "ok   $m RTL (compiled without --input: expected outputs computed by triad sim)"
  else echo "FAIL $m"; fail=1; fi
done
# hls4ml's SVHN CNN (fixed-seed weights, scripts/zoo/svhn_cnn.py) at --reuse auto: bit-exact on
# a few images with gaps and back-pressure, II = the 32x32 frame (1,024 cycles).
if $PY "$SRC/scripts/zoo/svhn_cnn.py" "$TMP/svhn.onnx" --images 3 "$TMP/svhn_x.npy" &&
   "$TRIAD" compile "$TMP/svhn.onnx" --target fpga --reuse auto -o "$TMP/svhn" >/dev/null &&
   "$TRIAD" sim "$TMP/svhn" --input "$TMP/svhn_x.npy" --json "$TMP/svhn/sim.json" &&
   $PY -c "import json,sys; j=json.load(open('$TMP/svhn/sim.json')); sys.exit(0 if j['mismatches']==0 and j['missing']==0 and j['ii']==1024 else 1)"
then echo "ok   svhn_cnn RTL at --reuse auto (II 1024)"; else echo "FAIL svhn_cnn"; fail=1; fi
# A FIFO set too shallow by hand deadlocks the residual join: triad sim reports it (exit 6) naming
# the full FIFO and the layer it feeds, within the testbench's cycle budget (no hang); the static
# depth reaches a peak occupancy below it.
"$TRIAD" compile "$SRC/models/resblock_cnn.onnx" --target fpga --fifo-depth /Add=2 -o "$TMP/dl" >/dev/null &&
  timeout 300 "$TRIAD" sim "$TMP/dl" --input "$TMP/cx.npy" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 6 ]] || ! grep -q "deadlock: .*FIFO u_fifo_Add_q0 before '/Add' is full (2 of 2)" "$TMP/err"; then
  echo "FAIL deadlock: exit $rc"; cat "$TMP/out" "$TMP/err"; fail=1
else echo "ok   a too-shallow FIFO is reported as a deadlock naming it (exit 6)"; fi
if grep -q "FIFO u_fifo_Add_q0 before '/Add': depth 64, peak occupancy" <("$TRIAD" sim "$TMP/resblock_cnn" --input "$TMP/cx.npy"); then
  echo "ok   the static FIFO depth and its peak occupancy are reported"
else echo "FAIL fifo report"; fail=1; fi
# Same design again: the Verilated build comes from the cache.
if "$TRIAD" sim "$TMP/jet_r1" --input "$TMP/x.npy" | grep -q "cached build"; then
  echo "ok   cached build"
else echo "FAIL: second sim did not reuse the build"; fail=1; fi
# A relative output folder works too (Verilator's make runs elsewhere).
if (cd "$TMP" && "$TRIAD" sim jet_r4 --input x.npy >/dev/null); then
  echo "ok   relative folder"
else echo "FAIL: triad sim with a relative folder"; fail=1; fi
exit $fail
