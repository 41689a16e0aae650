#!/usr/bin/env bash
# The main job: set up, build, and run the flow on a shipped model. Today that flow is the
# ONNX frontend and the reference interpreter (the CPU, GPU and FPGA targets plug into the same
# commands as they land): inspect the PyTorch-exported digits CNN, run it on the 360-image test
# split, and report its accuracy against the labels.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh > build.log 2>&1 || { tail -50 build.log; exit 1; }
mkdir -p out
MODEL=${1:-models/digits_cnn.onnx}
X=${2:-models/digits_test_x.npy}
Y=${3:-models/digits_test_y.npy}
echo "== triad inspect $MODEL"
build/cli/triad inspect "$MODEL" --json out/inspect.json --dot out/graph.dot
N=$(.venv/bin/python -c "import numpy as np; print(np.load('$X', mmap_mode='r').shape[0])")
echo
echo "== triad run $MODEL on $N test images (interpreter)"
build/cli/triad run "$MODEL" --batch "$N" --input "$X" --output out/probs.npy
.venv/bin/python - "$Y" <<'PY'
import sys
import numpy as np
p = np.load("out/probs.npy")
y = np.load(sys.argv[1])
print(f"top-1 accuracy on {len(y)} test images: {(p.argmax(1) == y).mean():.4f}")
PY
echo "outputs in out/: inspect.json, graph.dot, probs.npy"
