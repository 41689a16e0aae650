#!/usr/bin/env bash
# End-to-end tests of the `triad` command: help, inspect and run on a shipped PyTorch-exported
# CNN, and must-fail cases that check the documented exit code and that stderr names the culprit.
# Usage: cli_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$(dirname "$0")/../lib.sh"

CNN=$SRC/models/digits_cnn.onnx
X=$SRC/models/digits_test_x.npy

check help 0 "inspect" -- "$TRIAD" --help
check inspect-help 0 "--batch" -- "$TRIAD" inspect --help
check run-help 0 "--input" -- "$TRIAD" run --help
check inspect-cnn 0 "MaxPool" -- "$TRIAD" inspect "$CNN" --json "$TMP/inspect.json" --dot "$TMP/g.dot" --ir
grep -q '"macs"' "$TMP/inspect.json" && grep -q "digraph" "$TMP/g.dot" && echo "ok   inspect-json-dot" && pass=$((pass + 1)) || { echo "FAIL inspect-json-dot"; failn=$((failn + 1)); }
check run-cnn-batch 0 "probs" -- "$TRIAD" run "$CNN" --batch 360 --input "$X" --output "$TMP/probs.npy"
[[ -s $TMP/probs.npy ]] && echo "ok   run-wrote-output" && pass=$((pass + 1)) || { echo "FAIL run-wrote-output"; failn=$((failn + 1)); }
check run-by-name 0 "" -- "$TRIAD" run "$CNN" --batch 360 --input "input=$X" --output "probs=$TMP/probs2.pb"

check print-after-all 0 "IR after pass 'fold-batchnorm'" -- "$TRIAD" inspect "$SRC/models/resblock_cnn.onnx" --print-after-all
check run-opt 0 "probs" -- "$TRIAD" run "$CNN" --opt --batch 360 --input "$X" --output "$TMP/probs_opt.npy"
cmp -s "$TMP/probs.npy" "$TMP/probs_opt.npy" && echo "ok   run-opt-same-output" && pass=$((pass + 1)) || { echo "FAIL run-opt-same-output"; failn=$((failn + 1)); }
check bad-pass-name 2 "no such pass" -- "$TRIAD" inspect "$CNN" --print-after frobnicate

# Fixed point (the FPGA emulator): digits MLP at the default fixed<16,6> keeps float accuracy.
check quantize-report 0 "accuracy: fixed 0.9722, float 0.9722" -- "$TRIAD" quantize "$SRC/models/digits_mlp.onnx" \
  --input "$SRC/models/digits_test_x_flat.npy" --labels "$SRC/models/digits_test_y.npy" --report --json "$TMP/q.json"
grep -q '"layers"' "$TMP/q.json" && echo "ok   quantize-json" && pass=$((pass + 1)) || { echo "FAIL quantize-json"; failn=$((failn + 1)); }
echo '{"default": {"wieght": "fixed<8,3>"}}' >"$TMP/bad.json"
check quantize-bad-config 2 "default.wieght: unknown key" -- "$TRIAD" quantize "$SRC/models/digits_mlp.onnx" \
  --config "$TMP/bad.json" --input "$SRC/models/digits_test_x_flat.npy"
echo '{"layers": {"/fc9/Gemm": "fixed<8,3>"}}' >"$TMP/nolayer.json"
check quantize-unknown-layer 2 "/fc9/Gemm" -- "$TRIAD" quantize "$SRC/models/digits_mlp.onnx" \
  --config "$TMP/nolayer.json" --input "$SRC/models/digits_test_x_flat.npy"
"$SRC/.venv/bin/python" - "$TMP/exp.onnx" <<'PYEOF'
import sys
from onnx import TensorProto, helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
g = helper.make_graph([helper.make_node("Exp", ["x"], ["y"], name="/act/Exp")], "exp", [x], [y])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PYEOF
"$SRC/.venv/bin/python" -c "import numpy as n; n.save('$TMP/x4.npy', n.ones((3, 4), n.float32))"
check quantize-unsupported-op 5 "/act/Exp' .Exp." -- "$TRIAD" quantize "$TMP/exp.onnx" --input "$TMP/x4.npy"
check quantize-cnn 0 "" -- "$TRIAD" quantize "$CNN" --input "$X"
# An int8 QDQ model from ONNX Runtime's quantizer (.venv-peers), run on the CPU's integer
# kernels: it keeps the float model's accuracy on the digits (within two points, 95% top-1
# agreement), is a QDQ model, and runs with triad run like any model.
check quantize-qdq 0 "top-1 agreement with float" -- "$TRIAD" quantize "$SRC/models/resblock_cnn.onnx" \
  --format qdq --calibrate "$X" --labels "$SRC/models/digits_test_y.npy" -o "$TMP/rb_int8.onnx" --json "$TMP/qdq.json"
"$SRC/.venv/bin/python" - "$TMP/qdq.json" "$TMP/rb_int8.onnx" <<'PYEOF' && echo "ok   quantize-qdq-accuracy" && pass=$((pass + 1)) || { echo "FAIL quantize-qdq-accuracy"; failn=$((failn + 1)); }
import json, sys
import onnx
j = json.load(open(sys.argv[1]))["outputs"][0]
ops = [n.op_type for n in onnx.load(sys.argv[2]).graph.node]
print(j, ops.count("QuantizeLinear"), "QuantizeLinear")
assert j["top1_agreement"] >= 0.95 and j["accuracy_int8"] >= j["accuracy_float"] - 0.02
assert ops.count("QuantizeLinear") >= 5 and ops.count("DequantizeLinear") >= 10
PYEOF
check run-qdq-cpu 0 "probs" -- "$TRIAD" run "$TMP/rb_int8.onnx" --target cpu --batch 360 --input "$X"
check quantize-qdq-needs-calibration 2 "needs --calibrate" -- "$TRIAD" quantize "$CNN" --format qdq -o "$TMP/x.onnx"
check quantize-qdq-needs-onnx-output 2 "FILE.onnx" -- "$TRIAD" quantize "$CNN" --format qdq --calibrate "$X" -o "$TMP/x.npy"
check quantize-qdq-wrong-calibration-rank 6 "holds f32.2000,16.; input 'input'" -- "$TRIAD" quantize "$CNN" \
  --format qdq --calibrate "$SRC/models/jet_test_x.npy" -o "$TMP/z.onnx"
printf 'garbage' >"$TMP/garbage.onnx"
check quantize-qdq-corrupt-model 4 "garbage.onnx: cannot parse" -- "$TRIAD" quantize "$TMP/garbage.onnx" \
  --format qdq --calibrate "$X" -o "$TMP/z.onnx"
check quantize-qdq-no-quantizer 5 "quantization tools" -- env TRIAD_PYTHON=/usr/bin/python3 "$TRIAD" quantize "$CNN" \
  --format qdq --calibrate "$X" -o "$TMP/y.onnx"

# CPU target: compiled C++ gives the interpreter's answers; standalone sources build and run alone.
export TRIAD_CACHE_DIR=$TMP/cache TRIAD_CXXFLAGS="-O1 -march=native"
check run-cpu 0 "ran on cpu" -- "$TRIAD" run "$CNN" --target cpu --threads 2 --batch 360 --input "$X" --output "$TMP/probs_cpu.npy" --repeat 2 --profile
grep -q "per-layer time on cpu" "$TMP/err" && echo "ok   run-cpu-profile" && pass=$((pass + 1)) || { echo "FAIL run-cpu-profile"; failn=$((failn + 1)); }
"$SRC/.venv/bin/python" -c "import numpy as n,sys; a,b=n.load(sys.argv[1]),n.load(sys.argv[2]); sys.exit(0 if n.allclose(a,b,rtol=1e-4,atol=1e-6) else 1)" "$TMP/probs.npy" "$TMP/probs_cpu.npy" \
  && echo "ok   run-cpu-matches-interp" && pass=$((pass + 1)) || { echo "FAIL run-cpu-matches-interp"; failn=$((failn + 1)); }
check compile-cpu 0 "arena" -- "$TRIAD" compile "$SRC/models/resblock_cnn.onnx" --target cpu -o "$TMP/standalone"
if make -s -C "$TMP/standalone" CXXFLAGS="-std=c++17 -O1 -pthread" >"$TMP/make.log" 2>&1 && (cd "$TMP/standalone" && ./resblock_cnn >"$TMP/standalone.out"); then
  [[ $(wc -w <"$TMP/standalone.out") -ge 8 ]] && echo "ok   standalone-build-and-run" && pass=$((pass + 1)) || { echo "FAIL standalone-build-and-run: no output"; failn=$((failn + 1)); }
else
  echo "FAIL standalone-build-and-run"; head -20 "$TMP/make.log"; failn=$((failn + 1))
fi
# A QDQ model exports on the integer kernels, as `triad run --target cpu` compiles it, and the
# example main times it and writes its output: byte-identical with triad run's.
check compile-cpu-qdq 0 "arena" -- "$TRIAD" compile "$SRC/models/resblock_cnn_qdq.onnx" --target cpu -o "$TMP/standalone_q"
grep -q "triad_rt::qconv2d" "$TMP/standalone_q/resblock_cnn_qdq.cpp" && ! grep -q "float\* pk_" "$TMP/standalone_q/resblock_cnn_qdq.cpp" \
  && echo "ok   standalone-qdq-integer-kernels" && pass=$((pass + 1)) || { echo "FAIL standalone-qdq-integer-kernels"; failn=$((failn + 1)); }
"$SRC/.venv/bin/python" -c "import numpy as n,sys; x=n.load(sys.argv[1])[:1]; n.save(sys.argv[2], x); x.tofile(sys.argv[3])" "$X" "$TMP/x1.npy" "$TMP/x1.bin"
"$TRIAD" run "$SRC/models/resblock_cnn_qdq.onnx" --target cpu --batch 1 --input "$TMP/x1.npy" --output "$TMP/q1.npy" >/dev/null 2>&1
if make -s -C "$TMP/standalone_q" CXXFLAGS="-std=c++17 -O1 -march=native -pthread" >"$TMP/make_q.log" 2>&1 &&
  (cd "$TMP/standalone_q" && ./resblock_cnn_qdq --threads 2 --repeat 3 --input "$TMP/x1.bin" --output "$TMP/q1.bin" >"$TMP/standalone_q.out") &&
  grep -q "2 threads, 3 runs: median" "$TMP/standalone_q.out" &&
  "$SRC/.venv/bin/python" -c "import numpy as n,sys; a=n.load(sys.argv[1]).ravel(); b=n.fromfile(sys.argv[2], a.dtype); sys.exit(0 if a.size == b.size and (a == b).all() else 1)" "$TMP/q1.npy" "$TMP/q1.bin"; then
  echo "ok   standalone-qdq-timed-output-equals-run" && pass=$((pass + 1))
else
  echo "FAIL standalone-qdq-timed-output-equals-run"; head -20 "$TMP/make_q.log"; cat "$TMP/standalone_q.out" 2>/dev/null; failn=$((failn + 1))
fi
(cd "$TMP/standalone_q" && ./resblock_cnn_qdq --input "$TMP/x4.npy" >/dev/null 2>"$TMP/bad_in.err"); [[ $? -eq 1 ]] && grep -q "does not hold exactly" "$TMP/bad_in.err" \
  && echo "ok   standalone-input-size-checked" && pass=$((pass + 1)) || { echo "FAIL standalone-input-size-checked"; failn=$((failn + 1)); }
! grep -rq "triad/" "$TMP/standalone"/*.cpp "$TMP/standalone"/*.h && echo "ok   standalone-no-triad-includes" && pass=$((pass + 1)) || { echo "FAIL standalone-no-triad-includes"; failn=$((failn + 1)); }
check bad-target 2 "available: interp, cpu" -- "$TRIAD" run "$CNN" --target tpu --input "$X"
# A compiler flag the compiler rejects is the user's configuration (exit 2), not a Triad bug (70).
check compile-emit-source 0 "wrote" -- "$TRIAD" compile "$CNN" --target cpu --emit-source "$TMP/src"
[[ -s $TMP/src/digits_cnn.cpp && -s $TMP/src/digits_cnn.h && -s $TMP/src/triad_kernels.h && -s $TMP/src/main.cpp ]] && echo "ok   emit-source-files" && pass=$((pass + 1)) || { echo "FAIL emit-source-files"; failn=$((failn + 1)); }
check bad-threads 2 "threads: 'zero' is not a positive whole number" -- "$TRIAD" run "$CNN" --target cpu --threads zero --input "$X"
check bad-batch 2 "batch: '0' is not a positive whole number" -- "$TRIAD" run "$CNN" --batch 0 --input "$X"
check bad-cxxflags 2 "TRIAD_CXXFLAGS" -- env TRIAD_CXXFLAGS="-fno-such-flag-xyz" "$TRIAD" run "$CNN" --target cpu --batch 360 --input "$X"
unset TRIAD_CACHE_DIR TRIAD_CXXFLAGS

# GPU target: OpenCL devices. No platform at all (an empty ICD vendor folder) is "unsupported".
mkdir -p "$TMP/no-icd"
check devices-no-platform 5 "no OpenCL device found" -- env OCL_ICD_VENDORS="$TMP/no-icd" "$TRIAD" devices
if "$TRIAD" devices >/dev/null 2>&1; then # a platform is installed (PoCL in CI)
  check devices-list 0 "selected: \[0\]" -- "$TRIAD" devices --device 0
  check devices-json 0 '"opencl_c_version"' -- "$TRIAD" devices --json
  check devices-bad-selector 2 "'no-such-gpu' matches no device" -- "$TRIAD" devices --device no-such-gpu
fi

# Must-fail cases: exit code and a message naming the culprit.
check no-subcommand 2 "" -- "$TRIAD"
check unknown-flag 2 "--frobnicate" -- "$TRIAD" inspect "$CNN" --frobnicate
check missing-model 3 "nope.onnx.*does not exist" -- "$TRIAD" inspect "$TMP/nope.onnx"
head -c 3000 "$CNN" >"$TMP/truncated.onnx"
check truncated-model 4 "truncated.onnx" -- "$TRIAD" inspect "$TMP/truncated.onnx"
echo "not a model" >"$TMP/text.onnx"
check text-model 4 "text.onnx" -- "$TRIAD" inspect "$TMP/text.onnx"
check batch-from-input 0 "probs f32\[360," -- "$TRIAD" run "$CNN" --input "$X"
check wrong-batch-input 6 "input 'input' dimension 0 .* is 360 in file '.*digits_test_x.npy'.*--batch 1 was given" -- "$TRIAD" run "$CNN" --batch 1 --input "$X" --output "$TMP/o.npy"
[[ ! -e $TMP/o.npy ]] && echo "ok   no-output-on-failure" && pass=$((pass + 1)) || { echo "FAIL no-output-on-failure"; failn=$((failn + 1)); }
check missing-input 2 "no --input for model input 'input'" -- "$TRIAD" run "$CNN"
check bad-input-name 2 "no input named 'bogus'" -- "$TRIAD" run "$CNN" --input "bogus=$X"
check run-fpga 0 "ran on fpga" -- "$TRIAD" run "$CNN" --target fpga --batch 360 --input "$X"
check bad-dim 2 "--dim 'batch'" -- "$TRIAD" inspect "$CNN" --dim batch
check bad-output-ext 2 "unknown extension" -- "$TRIAD" run "$CNN" --batch 360 --input "$X" --output "$TMP/o.txt"
check output-dir-missing 3 "does not exist" -- "$TRIAD" run "$CNN" --batch 360 --input "$X" --output "$TMP/nodir/o.npy"

finish
