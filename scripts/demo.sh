#!/usr/bin/env bash
# The main job: set up, build, and benchmark a shipped CNN on every device from the one IR with
# `triad bench`: the reference interpreter, the CPU target (generated C++), the GPU target
# (OpenCL; PoCL's CPU device on a machine without a GPU), the FPGA target (fixed-point dataflow:
# the bit-accurate emulator, cycles from the RTL's model at 200 MHz, resources against an
# xcku115), `auto` (the graph partitioned across them by the cost model) and ONNX Runtime as the
# peer, interleaved in one run. The report (report.md, report.html with charts, report.json) goes
# to out/report/<model>/ and the run is appended to the history out/results.db.
#
#   scripts/demo.sh [MODEL INPUTS LABELS] [triad bench options, e.g. --batch 1,8,32 --fpga-rtl]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh > build.log 2>&1 || { tail -50 build.log; exit 1; }
MODEL=models/digits_cnn.onnx
X=models/digits_test_x.npy
Y=models/digits_test_y.npy
if [[ $# -ge 3 && ${1:0:2} != -- ]]; then
  MODEL=$1 X=$2 Y=$3
  shift 3
fi
NAME=$(basename "$MODEL" .onnx)
mkdir -p out
build/cli/triad bench "$MODEL" --targets interp,cpu,gpu,fpga,auto --peers onnxruntime \
  --batch 1,8 --data "$X" --labels "$Y" -o "out/report/$NAME" --db out/results.db "$@"
echo "the plan of the auto split:  build/cli/triad partition $MODEL --svg out/report/$NAME/plan.svg"
echo "the generated code:          build/cli/triad compile $MODEL --target cpu -o out/cpu_src  (C++)"
echo "                             build/cli/triad compile $MODEL --target fpga --reuse auto -o out/fpga  (Verilog)"
