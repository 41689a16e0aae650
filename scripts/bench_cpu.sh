#!/usr/bin/env bash
# The CPU target against ONNX Runtime (bench/cpu_vs_ort.py): batch-1 latency and batch-32
# throughput through `triad run` and the ONNX Runtime peer (bench/peers/), same explicit thread
# counts, alternating rounds; outputs checked against ONNX Runtime first. Needs scripts/setup.sh (the .venv with onnxruntime) and scripts/build.sh
# (build/cli/triad, build/bench/triad-gemm-bench). Not a test: results depend on the machine's load.
#
#   scripts/bench_cpu.sh --quick                       # shipped models only, < 2 minutes
#   scripts/bench_cpu.sh --json out/cpu_vs_ort.json    # + ResNet-18/50, MobileNetV2, BERT-base
#
# Every other argument goes to bench/cpu_vs_ort.py (--help lists them). TRIAD_BUILD names
# another build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TRIAD_BUILD:-build}
for f in .venv/bin/python "$build/cli/triad"; do
  if [[ ! -x $f ]]; then
    echo "bench_cpu.sh: $f is missing: run scripts/setup.sh and scripts/build.sh first" >&2
    exit 1
  fi
done
echo "load: $(uptime)" >&2
exec .venv/bin/python bench/cpu_vs_ort.py --triad "$build/cli/triad" \
  --gemm-bench "$build/bench/triad-gemm-bench" "$@"
