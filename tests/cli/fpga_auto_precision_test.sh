#!/usr/bin/env bash
# End to end: `triad quantize --auto --budget B` (automatic precision, fpga/AutoPrecision.h) on
# jet_mlp (2,000 test samples with labels) and digits_cnn (360 images): the written config keeps
# top-1 within the budget of float, saves weight bits against 16 bits everywhere, reports the
# design's resources beside fixed<16,6>'s, and compiles for the FPGA; without labels the budget
# is a relative output error; the must-fail cases.
# Usage: fpga_auto_precision_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
PY=$SRC/.venv/bin/python
[[ -x $PY ]] || PY=python3
M=$SRC/models

expect_usage() { # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  "$TRIAD" quantize "$M/jet_mlp.onnx" --input "$M/jet_test_x.npy" "$@" >/dev/null 2>"$TMP/err"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q -- "$pattern" "$TMP/err"; then
    echo "FAIL $name: exit $rc"; cat "$TMP/err"; fail=1
  else echo "ok   $name"; fi
}
expect_usage "--auto needs --write-config" "needs --write-config" --auto
expect_usage "--auto refuses a config" "drop --config" --auto --write-config "$TMP/c.json" \
  --default-precision 'fixed<8,3>'
expect_usage "a negative budget" "--budget -1" --auto --budget -1 --write-config "$TMP/c.json"

check() { # NAME MODEL X Y
  local name=$1 model=$2 x=$3 y=$4
  if ! "$TRIAD" quantize "$model" --input "$x" --labels "$y" --auto --budget 0.5 \
      --write-config "$TMP/$name.json" --json "$TMP/$name.report.json" >"$TMP/$name.log" 2>&1; then
    echo "FAIL $name: quantize --auto"; cat "$TMP/$name.log"; fail=1; return
  fi
  if ! "$TRIAD" compile "$model" --target fpga --config "$TMP/$name.json" --input "$x" \
      -o "$TMP/$name.fpga" >"$TMP/$name.compile.log" 2>&1; then
    echo "FAIL $name: the config does not compile"; cat "$TMP/$name.compile.log"; fail=1; return
  fi
  if $PY - "$TMP/$name.report.json" <<'PYEOF'; then echo "ok   $name: within 0.5 points, fewer bits"; else cat "$TMP/$name.log"; fail=1; fi
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
if r["float_accuracy"] - r["auto"]["accuracy"] > 0.005 + 1e-12:
    bad.append(f"top-1 {r['auto']['accuracy']} vs float {r['float_accuracy']}")
if not r["weight_bits"]["auto"] < 0.75 * r["weight_bits"]["fixed16"]:
    bad.append(f"weight bits {r['weight_bits']}")
if not r["activation_bits"]["auto"] < r["activation_bits"]["fixed16"]:
    bad.append(f"activation bits {r['activation_bits']}")
res = r.get("resources")
if not res or not res["auto"]["lut"] < res["fixed16"]["lut"]:
    bad.append(f"resources {res}")
if any(k["width"] > 16 or k["width"] < 2 for k in r["knobs"]):
    bad.append("a width out of range")
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PYEOF
}
check jet "$M/jet_mlp.onnx" "$M/jet_test_x.npy" "$M/jet_test_y.npy"
check digits_cnn "$M/digits_cnn.onnx" "$M/digits_test_x.npy" "$M/digits_test_y.npy"

# Without labels: a relative error budget.
if "$TRIAD" quantize "$M/jet_mlp.onnx" --input "$M/jet_test_x.npy" --auto --budget 0.02 \
    --write-config "$TMP/rel.json" --json "$TMP/rel.report.json" >"$TMP/rel.log" 2>&1 &&
    $PY -c "
import json; r = json.load(open('$TMP/rel.report.json'))
assert r['metric'] == 'relative_error' and r['auto']['relative_error'] <= 0.02, r['auto']
"; then echo "ok   without labels the budget is a relative error"
else echo "FAIL relative budget"; cat "$TMP/rel.log"; fail=1; fi
exit $fail
