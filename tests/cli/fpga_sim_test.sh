#!/usr/bin/env bash
# End to end: triad compile --target fpga + triad sim on jet_mlp (up to the logits, before
# Softmax) at reuse 1 and 4 on 1,000 test inputs: 0 mismatches, II = R, a cached second build, and
# the must-fail cases (Softmax without --until, an invalid reuse factor). Exits 77 (skipped)
# without verilator.
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

"$TRIAD" compile "$MODEL" --target fpga -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 5 ]] || ! grep -q "'/Softmax' (Softmax).*--until '/fc4/Gemm'" "$TMP/err"; then
  echo "FAIL softmax: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   softmax is unsupported, --until suggested"; fi
"$TRIAD" compile "$MODEL" --target fpga --until /fc4/Gemm --reuse 3 -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "valid: 1, 2, 4, 8, 16" "$TMP/err"; then
  echo "FAIL reuse 3: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   reuse 3 rejected with the valid values"; fi

for r in 1 4; do
  d=$TMP/jet_r$r
  if ! "$TRIAD" compile "$MODEL" --target fpga --until /fc4/Gemm --reuse $r --input "$TMP/x.npy" -o "$d"; then
    echo "FAIL compile r=$r"; fail=1; continue
  fi
  if ! "$TRIAD" sim "$d" --input "$TMP/x.npy" --json "$d/sim.json" --output "$d/y.npy"; then
    echo "FAIL sim r=$r"; fail=1; continue
  fi
  if ! $PY - "$d/sim.json" $r <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1])); r = int(sys.argv[2])
assert j["samples"] == 1000, j
assert j["mismatches"] == 0 and j["missing"] == 0, j
assert j["ii"] == r, j
PYEOF
  then echo "FAIL r=$r: $(cat "$d/sim.json")"; fail=1; else echo "ok   jet_mlp r=$r"; fi
done
# Same design again: the Verilated build comes from the cache.
if "$TRIAD" sim "$TMP/jet_r1" --input "$TMP/x.npy" | grep -q "cached build"; then
  echo "ok   cached build"
else echo "FAIL: second sim did not reuse the build"; fail=1; fi
# A relative output folder works too (Verilator's make runs elsewhere).
if (cd "$TMP" && "$TRIAD" sim jet_r4 --input x.npy >/dev/null); then
  echo "ok   relative folder"
else echo "FAIL: triad sim with a relative folder"; fail=1; fi
exit $fail
