#!/usr/bin/env bash
# A model's strings never become code (issue 25, docs/reliability.md). Copies of shipped models
# whose every string field is hostile (hostile_names.py: payloads for C++, OpenCL C, Verilog,
# Makefiles, Tcl, shell, HTML, SVG, Markdown, DOT and terminals, each creating a marker file if it
# ever runs) go through every path that generates and runs code or writes a report:
#   run --target interp|cpu|gpu|fpga, compile --target cpu + make + the example program,
#   compile --target fpga + sim (Verilator), partition --svg, inspect (text, JSON, DOT),
#   bench with its Markdown and HTML report.
# Each must work, give the plain model's outputs, create no marker, print no control character,
# and leave no generated line that begins with a payload's line.
# Usage: hostile_names_test.sh TRIAD_BINARY SOURCE_DIR [SEED]
set -u
TRIAD=$1
SRC=$2
SEED=${3:-1}
source "$(dirname "$0")/../lib.sh"
PY="$SRC/.venv/bin/python"
export TRIAD_CACHE_DIR=$TMP/cache
export TRIAD_CXXFLAGS="-O1"
MARKER=$TMP/MARKER
H=$TMP/hostile
"$PY" "$SRC/tests/security/hostile_names.py" "$MARKER" "$SEED" "$H" "$SRC/models/jet_mlp.onnx" \
  "$SRC/models/digits_cnn.onnx" "$SRC/models/resblock_cnn.onnx" "$SRC/models/resblock_cnn_qdq.onnx" ||
  { echo "FAIL model generation"; exit 1; }
"$PY" -c "import numpy as np; np.save('$TMP/jet8.npy', np.load('$SRC/models/jet_test_x.npy')[:8]); \
np.save('$TMP/dig4.npy', np.load('$SRC/models/digits_test_x.npy')[:4])" || exit 1
T() { timeout 600 "$TRIAD" "$@"; }

no_marker() { # after every step: nothing from the model ran
  if [[ -e $MARKER ]]; then bad "$1: the marker file exists (code from the model ran)"; rm -f "$MARKER"
  else good "$1: no code from the model ran"; fi
}
same() { # NAME A.npy B.npy: equal outputs
  if "$PY" -c "import numpy as np,sys; a,b=np.load(sys.argv[1]),np.load(sys.argv[2]); \
sys.exit(0 if a.shape==b.shape and np.array_equal(a,b) else 1)" "$2" "$3"; then
    good "$1: the plain model's outputs"
  else bad "$1: outputs differ from the plain model's"; fi
}
clean_text() { # NAME FILE...: no control character but newline and tab (no ESC, CR, BEL)
  local name=$1; shift
  if LC_ALL=C grep -lP '[\x00-\x08\x0b-\x1f\x7f]' "$@" >/dev/null 2>&1; then
    bad "$name: control characters in the output"; else good "$name: no control characters"; fi
}

# 1. Every target runs the hostile model and gives the plain model's outputs.
for t in interp cpu fpga; do
  check "jet_mlp run --target $t (plain)" 0 "" -- T run "$SRC/models/jet_mlp.onnx" --target $t --input "$TMP/jet8.npy" --output "$TMP/jet_plain_$t.npy"
  check "jet_mlp run --target $t (hostile)" 0 "" -- T run "$H/jet_mlp.onnx" --target $t --input "$TMP/jet8.npy" --output "$TMP/jet_host_$t.npy"
  clean_text "jet_mlp run --target $t" "$TMP/out" "$TMP/err"
  same "jet_mlp --target $t" "$TMP/jet_plain_$t.npy" "$TMP/jet_host_$t.npy"
  no_marker "jet_mlp run --target $t"
done
for m in digits_cnn resblock_cnn resblock_cnn_qdq; do # the QDQ one on the int8 kernels
  for t in cpu interp; do
    check "$m run --target $t --profile (hostile)" 0 "" -- T run "$H/$m.onnx" --target $t --input "$TMP/dig4.npy" --output "$TMP/${m}_host_$t.npy" --profile
    clean_text "$m run --target $t --profile" "$TMP/out" "$TMP/err"
    check "$m run --target $t (plain)" 0 "" -- T run "$SRC/models/$m.onnx" --target $t --input "$TMP/dig4.npy" --output "$TMP/${m}_plain_$t.npy"
    same "$m --target $t" "$TMP/${m}_plain_$t.npy" "$TMP/${m}_host_$t.npy"
    no_marker "$m run --target $t"
  done
done
if "$TRIAD" devices 2>/dev/null | grep -qi "opencl\|pocl\|gpu"; then
  for m in digits_cnn resblock_cnn_qdq; do # the QDQ one on the GPU's int8 kernels
    check "$m run --target gpu --profile (hostile)" 0 "" -- env TRIAD_GPU_SOURCE="$TMP/${m}_host.cl" \
      "$TRIAD" run "$H/$m.onnx" --target gpu --input "$TMP/dig4.npy" --output "$TMP/${m}_host_gpu.npy" --profile
    clean_text "$m run --target gpu --profile" "$TMP/out" "$TMP/err"
    check "$m run --target gpu (plain)" 0 "" -- T run "$SRC/models/$m.onnx" --target gpu --input "$TMP/dig4.npy" --output "$TMP/${m}_plain_gpu.npy"
    same "$m --target gpu" "$TMP/${m}_plain_gpu.npy" "$TMP/${m}_host_gpu.npy"
    no_marker "$m run --target gpu" # its OpenCL program ($TMP/*.cl) is read by step 6
  done
else
  echo "skip --target gpu: no OpenCL device"
fi

# 2. Standalone C++ export: its sources, Makefile and example program build and run.
check "compile --target cpu" 0 "" -- T compile "$H/resblock_cnn.onnx" --target cpu -o "$TMP/export"
if (cd "$TMP/export" && CXXFLAGS="-std=c++17 -O1 -pthread" make -s >"$TMP/make.log" 2>&1); then
  good "the export's Makefile builds"
  exe=$(cd "$TMP/export" && find . -maxdepth 1 -type f -perm -u+x | head -n1)
  if [[ -n $exe ]] && (cd "$TMP/export" && timeout 60 "$exe" >"$TMP/exe.log" 2>&1); then
    good "the exported program runs"
  else bad "the exported program runs"; cat "$TMP/exe.log" 2>/dev/null | head -5; fi
else bad "the export's Makefile builds"; head -20 "$TMP/make.log"; fi
no_marker "compile --target cpu + make"

# 3. FPGA: Verilog, the Verilator testbench, simulation bit-exact with the emulator.
check "compile --target fpga" 0 "" -- T compile "$H/jet_mlp.onnx" --target fpga --reuse 4 --input "$TMP/jet8.npy" -o "$TMP/rtl"
check "sim (bit-exact)" 0 "" -- T sim "$TMP/rtl" --input "$TMP/jet8.npy" --output "$TMP/jet_sim.npy"
clean_text "sim" "$TMP/out" "$TMP/err"
"$TRIAD" run "$H/jet_mlp.onnx" --target fpga --batch 8 --input "$TMP/jet8.npy" --output "$TMP/jet_emu.npy" >/dev/null 2>&1
same "sim against the emulator" "$TMP/jet_emu.npy" "$TMP/jet_sim.npy"
no_marker "compile --target fpga + sim"

# 4. Text, JSON, DOT and SVG outputs.
check "inspect" 0 "" -- T inspect "$H/resblock_cnn.onnx" --ir --dot "$TMP/graph.dot" --json "$TMP/inspect.json"
clean_text "inspect" "$TMP/out" "$TMP/err" "$TMP/graph.dot"
ok "inspect --json parses" -- "$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$TMP/inspect.json"
if command -v dot >/dev/null; then
  ok "the DOT file renders" -- dot -Tsvg "$TMP/graph.dot" -o "$TMP/graph.svg"
fi
# One DOT statement per node: the number of node statements equals the IR's node count.
ok "DOT: no injected nodes or edges" -- "$PY" - "$TMP/graph.dot" "$TMP/inspect.json" <<'PY'
import json, re, sys
dot = open(sys.argv[1], encoding="utf-8").read()
# Strip quoted strings: what is left is DOT structure only, which names no payload.
bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot)
assert "evil" not in bare and "PWNED" not in bare, "a payload is outside a quoted string"
PY
check "partition --svg" 0 "" -- T partition "$H/digits_cnn.onnx" --targets cpu,fpga --svg "$TMP/plan.svg"
clean_text "partition" "$TMP/out" "$TMP/err" "$TMP/plan.svg"
no_marker "inspect and partition"

# 5. bench: the report in Markdown and HTML.
check "bench" 0 "" -- T bench "$H/jet_mlp.onnx" --targets interp,cpu,fpga --batch 1 --repeat 3 \
  --reuse 4 --data "$TMP/jet8.npy" -o "$TMP/bench" --no-db
no_marker "bench"
ok "report.html: the payloads are text" -- "$PY" - "$TMP/bench/report.html" "$TMP/bench/report.md" <<'PY'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
low = html.lower()
assert "<script" not in low, "a <script> element in the report"
assert "<img" not in low, "an <img> element in the report"
assert "onerror=" not in low.replace("onerror=&quot;", ""), "an event handler attribute"
md = open(sys.argv[2], encoding="utf-8").read()
for line in md.splitlines():
    if line.startswith("|"):
        # Unescaped pipes only: every row of one table has as many as its header.
        pass
PY
"$PY" - "$TMP/bench/report.md" <<'PY' && good "report.md: tables keep their columns" || bad "report.md: tables keep their columns"
import re, sys
rows = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n")]
def cells(l): return len(re.findall(r'(?<!\\)\|', l))
table = None
for l in rows:
    if l.startswith("|"):
        n = cells(l)
        if table is None: table = n
        elif n != table: sys.exit(f"row {l[:80]!r} has {n} cell borders, the table {table}")
    else:
        table = None
PY

# 6. No generated line begins with a payload's line (the payload stayed inside its comment or
#    literal), in every file any step above wrote.
"$PY" - "$H/payloads.txt" "$TMP" <<'PY' && good "no generated line begins with a payload" || bad "no generated line begins with a payload"
import os, sys
payloads = [p for p in open(sys.argv[1], encoding="utf-8").read().split("\n") if p]
bad = 0
for root, _, files in os.walk(sys.argv[2]):
    if "/hostile" in root or root.endswith("/cache/kernels"):
        continue
    for f in files:
        path = os.path.join(root, f)
        if f.endswith((".npy", ".onnx", ".so", ".o", ".weights")) or os.path.islink(path):
            continue
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        if "\0" in text:
            continue  # binaries
        for n, line in enumerate(text.split("\n"), 1):
            s = line.strip()
            for p in payloads:
                if s.startswith(p):
                    print(f"{path}:{n}: {s[:100]}")
                    bad += 1
sys.exit(1 if bad else 0)
PY
finish
