#!/usr/bin/env bash
# End to end: `triad compile --target fpga --fpga-part P` fits jet_mlp to an Artix-7 35T (90
# DSPs, 20,800 LUTs: its 4,256 products cannot all be multipliers at reuse 1): the summary and
# fit.json state the part, the budget and every layer's reuse, strategy and weight storage;
# the estimate is within the budget; the design is bit-exact with the emulator in Verilator on
# 300 test inputs (steady, and with gaps and back-pressure) at the II the fit predicts. A layer
# pinned in the config keeps its reuse and ROM; the must-fail cases (--reuse beside
# --fpga-part, an unknown part, a margin nothing fits, a bad "weights" entry).
# Exits 77 (skipped) without verilator.
# Usage: fpga_fit_test.sh TRIAD_BINARY SOURCE_DIR
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
MODEL=$SRC/models/jet_mlp.onnx
$PY -c "import numpy as np; np.save('$TMP/x.npy', np.load('$SRC/models/jet_test_x.npy')[:300])" || exit 1

expect_usage() { # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  "$TRIAD" compile "$MODEL" --target fpga -o "$TMP/bad" "$@" 2>"$TMP/err"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -q -- "$pattern" "$TMP/err"; then
    echo "FAIL $name: exit $rc"; cat "$TMP/err"; fail=1
  else echo "ok   $name"; fi
}
expect_usage "--reuse beside --fpga-part" "drop --reuse '4'" --fpga-part xc7a35t --reuse 4
expect_usage "an unknown part lists the known ones" "the known parts are .*xc7z020" \
  --fpga-part xc7z999
expect_usage "a margin nothing fits states the numbers" \
  "does not fit xc7a35t .* within 1% .*DSP" --fpga-part xc7a35t --fit-margin 0.01
echo '{"weights": {"/fc2/Gemm": "bram"}}' >"$TMP/badcfg.json"
expect_usage "a bad weight storage in the config names its key" "weights\['/fc2/Gemm'\]" \
  --config "$TMP/badcfg.json"

# Fit, compile, simulate.
echo '{"reuse": {"/fc3/Gemm": 32}, "weights": {"/fc3/Gemm": "rom"}}' >"$TMP/pin.json"
if ! "$TRIAD" compile "$MODEL" --target fpga --fpga-part xc7a35t --config "$TMP/pin.json" \
    --input "$TMP/x.npy" -o "$TMP/jet" >"$TMP/compile.log" 2>&1; then
  echo "FAIL compile"; cat "$TMP/compile.log"; exit 1
fi
grep -q "fitted to xc7a35t" "$TMP/compile.log" || { echo "FAIL no fit line"; cat "$TMP/compile.log"; fail=1; }
if ! "$TRIAD" sim "$TMP/jet" --input "$TMP/x.npy" --json "$TMP/sim.json" >"$TMP/sim.log" 2>&1; then
  echo "FAIL sim"; cat "$TMP/sim.log"; exit 1
fi
if $PY - "$TMP/jet" "$TMP/sim.json" <<'PYEOF'; then echo "ok   jet_mlp fits the 35T, bit-exact at the predicted II"; else fail=1; fi
import json, sys
d, simf = sys.argv[1], sys.argv[2]
fit = json.load(open(f"{d}/fit.json"))
summ = json.load(open(f"{d}/summary.json"))
sim = json.load(open(simf))
bad = []
if fit["part"] != "xc7a35t" or abs(fit["budget"]["dsp"] - 72) > 1e-9:
    bad.append(f"part/budget {fit['part']} {fit['budget']}")
if summ.get("fit", {}).get("ii_cycles") != fit["ii_cycles"]:
    bad.append("summary.json has no fit")
for k in ("lut", "ff", "dsp", "bram18"):
    if summ["estimate"][k] > fit["budget"][k] + 1e-9:
        bad.append(f"{k} {summ['estimate'][k]} over {fit['budget'][k]}")
if fit["ii_cycles"] <= 1:
    bad.append(f"II {fit['ii_cycles']}: the 35T cannot hold reuse 1")
layers = {l["layer"]: l for l in summ["layers"]}
fl = {l["layer"]: l for l in fit["layers"]}
for name, l in fl.items():
    s = layers[name]
    if s.get("reuse") != l["reuse"] or s.get("weights") != l["weights"]:
        bad.append(f"{name}: summary {s.get('reuse')}/{s.get('weights')} vs fit {l}")
if fl["/fc3/Gemm"]["reuse"] != 32 or fl["/fc3/Gemm"]["weights"] != "rom" or not fl["/fc3/Gemm"]["pinned"]:
    bad.append(f"pinned layer: {fl['/fc3/Gemm']}")
if "/fc3/Gemm" in fit["config"]["reuse"]:
    bad.append("a pinned layer in the config keys")
if not any(l.get("reuse", 1) > 1 for l in summ["layers"]):
    bad.append("no layer shares multipliers")
if sim["mismatches"] != 0 or sim["missing"] != 0 or sim["samples"] != 300:
    bad.append(f"sim: {sim['mismatches']} mismatches, {sim['missing']} missing")
if abs(sim["ii"] - fit["ii_cycles"]) > 0.5:
    bad.append(f"measured II {sim['ii']} vs predicted {fit['ii_cycles']}")
if sim["latency_cycles"] != summ["latency_cycles"]:
    bad.append(f"latency {sim['latency_cycles']} vs {summ['latency_cycles']}")
# The fit's choices as a config reproduce the same design.
json.dump(fit["config"], open(f"{d}/../refit.json", "w"))
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PYEOF
"$TRIAD" compile "$MODEL" --target fpga --config "$TMP/refit.json" -o "$TMP/refit" >/dev/null 2>&1 ||
  { echo "FAIL the fit's config does not compile"; fail=1; }
# The fit's keys as a config rebuild the same Verilog.
"$TRIAD" compile "$MODEL" --target fpga --fpga-part xc7a35t -o "$TMP/fit2" >"$TMP/fit2.log" 2>&1 ||
  { echo "FAIL fit without a config"; cat "$TMP/fit2.log"; fail=1; }
$PY -c "import json; json.dump(json.load(open('$TMP/fit2/fit.json'))['config'], open('$TMP/fit2.json', 'w'))"
if ! "$TRIAD" compile "$MODEL" --target fpga --config "$TMP/fit2.json" -o "$TMP/refit2" \
    >"$TMP/refit2.log" 2>&1 || ! cmp -s "$TMP/fit2/rtl/jet_mlp.v" "$TMP/refit2/rtl/jet_mlp.v"; then
  echo "FAIL fit.json's config does not rebuild the fitted design"; cat "$TMP/refit2.log"; fail=1
else echo "ok   fit.json's config rebuilds the fitted design"; fi
exit $fail
