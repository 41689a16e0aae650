#!/usr/bin/env bash
# The cross-device flow end to end on the shipped jet MLP: every device runs, outputs agree with
# the reference interpreter, the FPGA RTL is bit-exact with the emulator, and the report files and
# the SQLite history are written. Usage: crossdevice_test.sh TRIAD_BINARY SOURCE_DIR
set -euo pipefail
TRIAD=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export TRIAD_CACHE_DIR=$TMP/cache TRIAD_CXXFLAGS="-O1 -march=native"
"$SRC/.venv/bin/python" "$SRC/bench/crossdevice.py" "$SRC/models/jet_mlp.onnx" \
  --input "$SRC/models/jet_test_x.npy" --labels "$SRC/models/jet_test_y.npy" --out "$TMP/report/jet" \
  --repeat 3 --fpga-samples 64 --triad "$TRIAD" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
"$SRC/.venv/bin/python" - "$TMP" <<'PY'
import json, sqlite3, sys
tmp = sys.argv[1]
rep = json.load(open(f"{tmp}/report/jet/report.json"))
dev = {(d["device"], d.get("engine", "").split()[0]): d for d in rep["devices"]}
failures = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: failures.append(what)
interp = dev[("interp", "triad")]
check(interp["status"] == "ok" and abs(interp["accuracy"] - 0.697) < 1e-3, "interpreter accuracy 0.697")
cpu = dev[("cpu", "triad")]
check(cpu["status"] == "ok" and cpu["max_abs_error"] < 1e-4 and cpu["accuracy"] == interp["accuracy"],
      "cpu target agrees with the interpreter")
ort = dev[("cpu", "onnxruntime")]
check(ort["status"] == "ok" and ort["max_abs_error"] < 1e-4, "onnxruntime agrees with the interpreter")
gpu = dev[("gpu", "triad")]
check(gpu["status"] == "ok" and gpu["max_abs_error"] < 1e-4 or
      (gpu["status"] == "skipped" and "OpenCL" in gpu.get("reason", "")), "gpu target agrees (or no OpenCL)")
fpga = dev[("fpga", "triad")]
check(fpga["status"] == "ok" and fpga["accuracy"] is not None, "fpga emulator accuracy reported")
rtl = fpga.get("rtl", {})
check(rtl.get("status") == "ok" and rtl["mismatches"] == 0 and rtl["ii"] == 1 or
      (rtl.get("status") == "skipped" and "verilator" in rtl.get("reason", "")), "fpga RTL bit-exact, II 1 (--reuse auto: R = 1 on an MLP)")
html = open(f"{tmp}/report/jet/report.html").read()
check("<svg" in html and "onnxruntime" in html, "report.html has charts")
check("| cpu | triad cpu |" in open(f"{tmp}/report/jet/report.md").read(), "report.md has the table")
rows = sqlite3.connect(f"{tmp}/report/results.db").execute("SELECT COUNT(*) FROM results").fetchone()[0]
check(rows >= 20, f"history has {rows} rows")
sys.exit(1 if failures else 0)
PY
