#!/usr/bin/env bash
# The main job: set up, build, and run the cross-device flow on a shipped model. The model is
# compiled and run on every device from the one IR — the reference interpreter, the CPU target
# (generated C++), ONNX Runtime as the peer, the GPU target (OpenCL; PoCL's CPU device on a
# machine without a GPU) and the FPGA target (fixed-point emulator, generated Verilog simulated in
# Verilator) — and bench/crossdevice.py writes the side-by-side report to out/report/:
# report.md, report.html (charts), report.json, and appends to the history out/results.db.
#
#   scripts/demo.sh [MODEL INPUTS LABELS] [crossdevice options, e.g. --synth --reuse 8]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh > build.log 2>&1 || { tail -50 build.log; exit 1; }
MODEL=models/digits_mlp.onnx
X=models/digits_test_x_flat.npy
Y=models/digits_test_y.npy
if [[ $# -ge 3 && ${1:0:2} != -- ]]; then
  MODEL=$1 X=$2 Y=$3
  shift 3
fi
NAME=$(basename "$MODEL" .onnx)
mkdir -p out
.venv/bin/python bench/crossdevice.py "$MODEL" --input "$X" --labels "$Y" --out "out/report/$NAME" \
  --db out/results.db "$@"
echo "open out/report/$NAME/report.html for the charts; the generated C++, OpenCL and Verilog:"
echo "  build/cli/triad compile $MODEL --target cpu -o out/cpu_src   (standalone C++)"
echo "  out/report/$NAME/fpga/rtl/                                      (Verilog)"
