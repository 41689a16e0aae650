#!/usr/bin/env bash
# Shapes from the data (issue 15): `triad run`, `quantize`, `partition --run` and `bench --data` bind a model's
# dynamic dimensions (a PyTorch export's named batch, a named sequence, unnamed ones) from the
# input files, as ONNX Runtime does; outputs match ONNX Runtime's on 1-row and 4-row inputs on the
# interpreter and the CPU target, each distinct binding compiles once (the CPU cache), and
# --batch/--dim that contradict a file, or one dim_param given two sizes, are errors naming the
# input, the dimension and the file. Models and ORT's outputs come from dims_models.py.
# Usage: dims_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$(dirname "$0")/../lib.sh"
PY=$SRC/.venv/bin/python
"$PY" "$SRC/tests/cli/dims_models.py" "$TMP" || { echo "FAIL model generation"; exit 1; }
D=$TMP
export TRIAD_CACHE_DIR=$TMP/cache TRIAD_CXXFLAGS="-O1 -march=native"

# same A B: the two .npy files hold the same shape and values within 1e-5.
same() {
  "$PY" -c "import numpy as n, sys; a, b = n.load(sys.argv[1]), n.load(sys.argv[2]); \
sys.exit(0 if a.shape == b.shape and n.allclose(a, b, atol=1e-5, rtol=1e-5) else 1)" "$1" "$2"
}

for t in interp cpu; do
  for rows in 1 4; do
    check "run-mlp-$t-$rows" 0 "probs f32\[$rows,5\]" -- \
      "$TRIAD" run "$D/mlp.onnx" --target "$t" --input "$D/x$rows.npy" --output "$TMP/p_${t}_$rows.npy"
    ok "mlp-$t-$rows-matches-ort" -- same "$TMP/p_${t}_$rows.npy" "$D/x${rows}_ort.npy"
    check "run-seq-$t-$rows" 0 "y f32\[$rows,7,4\]" -- \
      "$TRIAD" run "$D/seq.onnx" --target "$t" --input "$D/s$rows.npy" --input "mask=$D/m$rows.npy" \
      --output "$TMP/y_${t}_$rows.npy"
    ok "seq-$t-$rows-matches-ort" -- same "$TMP/y_${t}_$rows.npy" "$D/s${rows}_ort.npy"
  done
done
# One compiled model per distinct binding: 2 models x 2 bindings; a binding seen before is cached.
check run-mlp-cpu-4-again 0 "probs f32\[4,5\]" -- \
  "$TRIAD" run "$D/mlp.onnx" --target cpu --input "$D/x4.npy"
n=$(find "$TRIAD_CACHE_DIR" -name model.so | wc -l)
[[ $n -eq 4 ]] && good "cpu-cache-one-per-binding" || bad "cpu-cache-one-per-binding ($n compiled models, want 4)"
# --batch and --dim that agree with the file still work, and fix sizes ahead of time.
check run-agreeing-batch 0 "probs f32\[4,5\]" -- "$TRIAD" run "$D/mlp.onnx" --batch 4 --input "$D/x4.npy"
check run-agreeing-dim 0 "y f32\[4,7,4\]" -- \
  "$TRIAD" run "$D/seq.onnx" --dim seq=7 --input "$D/s4.npy" --input "$D/m4.npy"
check inspect-dim 0 "f32\[3,5,6\]" -- "$TRIAD" inspect "$D/seq.onnx" --batch 3 --dim seq=5

# Contradictions: exit 6, naming the input, the dimension and the file.
check contradict-batch 6 "input 'input' dimension 0 \('batch_size'\) is 4 in file '.*x4.npy'.*--batch 1 was given" -- \
  "$TRIAD" run "$D/mlp.onnx" --batch 1 --input "$D/x4.npy" --output "$TMP/never.npy"
[[ ! -e $TMP/never.npy ]] && good "no-output-on-contradiction" || bad "no-output-on-contradiction"
check contradict-dim 6 "input 'x' dimension 1 \('seq'\) is 7 in file '.*s4.npy'.*--dim seq=5 was given" -- \
  "$TRIAD" run "$D/seq.onnx" --dim seq=5 --input "$D/s4.npy" --input "$D/m4.npy"
check contradict-inputs 6 "dimension 'seq' is 7 in input 'x' \(dimension 1, file '.*s4.npy'\) but 5 in input 'mask' \(dimension 1, file '.*m4_seq5.npy'\)" -- \
  "$TRIAD" run "$D/seq.onnx" --input "$D/s4.npy" --input "$D/m4_seq5.npy"
check fixed-dim-mismatch 6 "input 'input' expects f32\[batch_size,20\], file '.*x4_21.npy' holds \[4,21\]: dimension 1 is fixed at 20" -- \
  "$TRIAD" run "$D/mlp.onnx" --input "$D/x4_21.npy"
check input-twice 2 "input 'input' is given twice" -- \
  "$TRIAD" run "$D/mlp.onnx" --input "$D/x1.npy" --input "input=$D/x4.npy"
check unbound-dim 5 "'seq'\) is dynamic.*--dim seq=N" -- "$TRIAD" inspect "$D/seq.onnx"

check partition-run 0 "max \|output - interpreter\| = " -- \
  "$TRIAD" partition "$D/tok.onnx" --targets cpu --run -i "$D/s4.npy"

# quantize: the batch comes from the 4-row input (4 samples compared), or --batch contradicts it.
check quantize-4-rows 0 "top-1 agreement with float: [0-4]/4 " -- \
  "$TRIAD" quantize "$D/mlp.onnx" --input "$D/x4.npy" --labels "$D/labels4.npy" --json "$TMP/q.json"
"$PY" -c "import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if j['outputs'][0]['top1_agreement'] >= 0 else 1)" "$TMP/q.json" \
  && good "quantize-json" || bad "quantize-json"
check quantize-contradict 6 "input 'input' dimension 0 \('batch_size'\) is 4 .*--batch 2 was given" -- \
  "$TRIAD" quantize "$D/mlp.onnx" --batch 2 --input "$D/x4.npy"

# bench --data: the sequence length comes from the data's rows, the batch from --batch, for
# Triad's targets and for ONNX Runtime's peer (given --dim seq=7).
check bench-seq 0 "report.html" -- "$TRIAD" bench "$D/tok.onnx" --targets interp,cpu --batch 1,4 \
  --data "$D/s6.npy" --peers onnxruntime --repeat 2 --warmup 1 --rounds 1 -o "$TMP/bench" --no-db
"$PY" - "$TMP/bench/report.json" <<'PYEOF' && good "bench-seq-report" || bad "bench-seq-report"
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["model"]["data_rows"] == 6, rep["model"]["data_rows"]
rs = {(r["target"], r["batch"]): r for r in rep["results"]}
assert set(rs) == {(t, b) for t in ("interp", "cpu", "onnxruntime") for b in (1, 4)}, sorted(rs)
for k, r in rs.items():
    assert r["status"] == "ok", (k, r.get("why"))
    assert r["accuracy"]["samples"] == 6 and r["accuracy"]["max_abs_err"] < 1e-4, (k, r["accuracy"])
PYEOF
check bench-contradict 2 "--data .*s6.npy.*input 'tokens' dimension 1 \('seq'\) is 7.*--dim seq=5" -- \
  "$TRIAD" bench "$D/tok.onnx" --targets interp --data "$D/s6.npy" --dim seq=5 -o "$TMP/b2" --no-db
check bench-random-dim 0 "report.html" -- "$TRIAD" bench "$D/tok.onnx" --targets interp --dim seq=3 \
  --repeat 2 --warmup 0 --rounds 1 -o "$TMP/b3" --no-db
finish
