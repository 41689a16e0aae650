#!/usr/bin/env bash
# A fuzzing campaign: builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/,
# makes the seed corpora, and fuzzes one target for a given time, in fork mode so that the
# campaign goes on past a finding and collects every crash, time-out and out-of-memory input.
#
#   scripts/fuzz.sh [TARGET] [SECONDS] [-- LIBFUZZER_FLAGS...]
#
# TARGET: onnx_load (default), onnx_interp, tensor_file or quant_config; SECONDS default 3600.
# TRIAD_JOBS sets the number of fuzzing processes (default: all cores). The corpus grows in
# build-fuzz/runs/TARGET/corpus across campaigns; findings land in build-fuzz/runs/TARGET/artifacts/;
# the log (with libFuzzer's executions, cov and ft) is build-fuzz/runs/TARGET/log.
# Replay a finding with the gcc build: build/tests/fuzz/triad-fuzz-replay-TARGET FILE
# (tests/fuzz/README.md: triage, and how a finding becomes a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-onnx_load}
seconds=${2:-3600}
shift $(($# < 2 ? $# : 2))
[[ ${1:-} == -- ]] && shift
case $target in
onnx_load | onnx_interp | tensor_file | quant_config) ;;
*) echo "fuzz.sh: unknown target '$target' (onnx_load, onnx_interp, tensor_file, quant_config)" >&2; exit 2 ;;
esac
clang=$(command -v clang++-14 || command -v clang++ || true)
[[ -n $clang ]] || { echo "fuzz.sh: needs clang++ (scripts/setup.sh installs it)" >&2; exit 2; }
jobs=${TRIAD_JOBS:-$(nproc)}

cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER="$clang" -DTRIAD_FUZZ=ON -DCMAKE_BUILD_TYPE=Fuzz \
  "-DCMAKE_CXX_FLAGS_FUZZ=-O1 -g" > build-fuzz-configure.log || { cat build-fuzz-configure.log; exit 1; }
cmake --build build-fuzz -j "$jobs" --target "${target}_fuzzer"
node=$(ls -d .venv/lib/python3*/site-packages/onnx/backend/test/data/node 2>/dev/null | head -n 1 || true)
tests/fuzz/make_corpora.sh "$PWD" "$node" build-fuzz/corpora

echo "fuzz.sh: $target for $seconds s with $jobs process(es)"
tests/fuzz/run_fuzzer.sh "build-fuzz/tests/fuzz/${target}_fuzzer" "$seconds" "build-fuzz/runs/$target" \
  "build-fuzz/corpora/$target" -- -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 "$@"
