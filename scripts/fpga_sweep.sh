#!/usr/bin/env bash
# Reuse-factor sweep of the FPGA flow (docs/fpga.md, "R sweep"): for each R, triad compile
# --target fpga (the whole model, Softmax included), triad sim (Verilator: latency, II, 0
# mismatches required) and triad synth (Yosys synth_xilinx per layer module), timing each step.
# Prints a markdown table and writes OUT/sweep.json.
# Usage: scripts/fpga_sweep.sh [-m MODEL] [-x INPUTS.npy] [-n N] [-r "1 2 4 8"] [-f xc7|ice40]
#                              [-o OUT] [-t TRIAD]
#   defaults: models/jet_mlp.onnx, models/jet_test_x.npy, 200 inputs, R in 1 2 4 8, xc7,
#   out/fpga_sweep/<model>, build/cli/triad.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=$ROOT/models/jet_mlp.onnx
X=$ROOT/models/jet_test_x.npy
N=200
RS="1 2 4 8"
FAMILY=xc7
OUT=
TRIAD=$ROOT/build/cli/triad
while getopts "m:x:n:r:f:o:t:" opt; do
  case $opt in
  m) MODEL=$OPTARG ;; x) X=$OPTARG ;; n) N=$OPTARG ;; r) RS=$OPTARG ;; f) FAMILY=$OPTARG ;;
  o) OUT=$OPTARG ;; t) TRIAD=$OPTARG ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
  esac
done
NAME=$(basename "$MODEL" .onnx)
OUT=${OUT:-$ROOT/out/fpga_sweep/$NAME}
PY=$ROOT/.venv/bin/python
[[ -x $PY ]] || PY=python3
mkdir -p "$OUT"
$PY -c "import numpy as np; np.save('$OUT/x.npy', np.load('$X')[:$N].astype(np.float32))"

now() { date +%s.%N; }
for r in $RS; do
  d=$OUT/r$r
  rm -rf "$d"
  t0=$(now)
  "$TRIAD" compile "$MODEL" --target fpga --reuse "$r" --input "$OUT/x.npy" -o "$d"
  t1=$(now)
  "$TRIAD" sim "$d" --input "$OUT/x.npy" --json "$d/sim.json"
  t2=$(now)
  "$TRIAD" synth "$d" --family "$FAMILY" --json "$d/synth.json"
  t3=$(now)
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {
    printf "{\"compile_s\": %.3f, \"sim_s\": %.3f, \"synth_s\": %.3f}\n", b - a, c - b, d - c }' \
    > "$d/times.json"
done

$PY - "$OUT" "$NAME" "$RS" <<'PYEOF'
import json, sys
out, name, rs = sys.argv[1], sys.argv[2], sys.argv[3].split()
rows = []
print(f"| model | R | multipliers | latency (cycles) | II | LUT | FF | DSP | BRAM18/36 | logic depth "
      f"| compile + sim + synth (s) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rs:
    d = f"{out}/r{r}"
    s, m, y, t = (json.load(open(f"{d}/{f}.json")) for f in ("summary", "sim", "synth", "times"))
    assert m["mismatches"] == 0 and m["missing"] == 0, m
    tot = y["total"]
    bram = f'{tot.get("bram18", 0)}/{tot.get("bram36", 0)}' if "bram18" in tot else str(tot["bram"])
    wall = t["compile_s"] + t["sim_s"] + t["synth_s"]
    rows.append({"r": int(r), "multipliers": s["multipliers"], "latency": m["latency_cycles"],
                 "ii": m["ii"], "total": tot, "times": t, "sim_build_s": m["build_seconds"],
                 "synth_wall_s": y["wall_seconds"], "modules": y["modules"]})
    print(f'| {name} | {r} | {s["multipliers"]} | {m["latency_cycles"]} | {m["ii"]:g} | {tot["lut"]} '
          f'| {tot["ff"]} | {tot["dsp"]} | {bram} | {tot["logic_depth"]} '
          f'| {t["compile_s"]:.0f} + {t["sim_s"]:.0f} + {t["synth_s"]:.0f} = {wall:.0f} |')
json.dump(rows, open(f"{out}/sweep.json", "w"), indent=1)
PYEOF
