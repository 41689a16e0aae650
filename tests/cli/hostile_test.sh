#!/usr/bin/env bash
# Hostile models and inputs (the classes an outside mutation fuzzer found, issue 14): each must
# give its documented exit code and name the culprit, never crash (signal), hang (a FIFO or
# /dev/zero) or leak a file outside the model's folder. Models come from hostile_models.py.
# Usage: hostile_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$(dirname "$0")/../lib.sh"
"$SRC/.venv/bin/python" "$SRC/tests/cli/hostile_models.py" "$TMP" || { echo "FAIL model generation"; exit 1; }
H=$TMP
# Every command runs under a time limit: exit 124 is a hang.
T() { timeout 60 "$TRIAD" "$@"; }

# 1. libonnx's shape inference never sees an unvalidated model.
check const-raw-data-short 4 "node 'konst' \(Constant\).*raw_data has 17 bytes" -- T inspect "$H/const_short.onnx"
check scan-subgraph 5 "Scan" -- T inspect "$H/scan.onnx"
check graph-attribute 5 "relu_g.*'body'" -- T inspect "$H/relu_graph_attr.onnx"
check conv-strides-0 4 "node 'conv0' \(Conv\).*strides" -- T run "$H/conv_stride0.onnx" --target interp --input "$SRC/models/digits_test_x.npy"
check maxpool-strides-0 4 "node 'mp0' \(MaxPool\).*strides" -- T inspect "$H/maxpool_stride0.onnx"
check avgpool-strides-0 4 "node 'ap0' \(AveragePool\).*strides" -- T inspect "$H/avgpool_stride0.onnx"
check conv-dilations-0 4 "node 'conv_d0' \(Conv\).*dilations" -- T inspect "$H/conv_dil0.onnx"
check maxpool-kernel-0 4 "node 'mp_k0' \(MaxPool\).*kernel_shape" -- T inspect "$H/maxpool_k0.onnx"
check conv-group-0 4 "node 'conv_g0' \(Conv\).*group" -- T inspect "$H/conv_group0.onnx"

# 2. External data never reads outside the model's folder, by any path form, nor hangs.
check ext-ok 0 "" -- T run "$H/ext/ok.onnx" --input "$H/x4.npy"
check ext-symlink-out 4 "initializer 'W'.*'passwd' must be a file inside the model's folder" -- T run "$H/ext/symlink.onnx" --input "$H/x4.npy"
if grep -q root: "$TMP/out" "$TMP/err"; then bad "no /etc/passwd bytes in the output"; fi
check ext-dev-zero 4 "'zero' must be a file inside the model's folder" -- T run "$H/ext/zero.onnx" --input "$H/x4.npy"
check ext-fifo 4 "is not a regular file" -- T run "$H/ext/fifo.onnx" --input "$H/x4.npy"
check ext-directory 4 "is not a regular file" -- T run "$H/ext/dir.onnx" --input "$H/x4.npy"
check ext-dotdot 4 "must be a file inside" -- T run "$H/ext/dotdot.onnx" --input "$H/x4.npy"
check ext-absolute 4 "must be a file inside" -- T run "$H/ext/abs.onnx" --input "$H/x4.npy"
check ext-offset-not-number 4 "offset 'abc' is not a non-negative integer" -- T run "$H/ext/nonnum.onnx" --input "$H/x4.npy"
check ext-offset-overflow 4 "beyond its end" -- T run "$H/ext/overflow.onnx" --input "$H/x4.npy"

# 3. Sizes are checked before anything is allocated: exit 7 (resource) or 3/4, named.
check npy-huge-dims 7 "huge.npy" -- T run "$H/ext/ok.onnx" --input "$H/huge.npy"
check npy-23-digit-dim 3 "digits23.npy.*shape" -- T run "$H/ext/ok.onnx" --input "$H/digits23.npy"
check npy-overflowing-dims 7 "ovf.npy" -- T run "$H/ext/ok.onnx" --input "$H/ovf.npy"
check input-dev-zero 3 "zero.npy.*not a regular file" -- T run "$H/ext/ok.onnx" --input "$H/zero.npy"
check expand-huge 7 "node 'expand_big' \(Expand\)" -- T inspect "$H/expand_huge.onnx"
check tile-huge 7 "node 'tile_big' \(Tile\)" -- T inspect "$H/tile_huge.onnx"
check tile-overflow 7 "node 'tile_ovf' \(Tile\)" -- T inspect "$H/tile_overflow.onnx"
check constantofshape-huge 7 "node 'cos_big' \(ConstantOfShape\)" -- T inspect "$H/cos_huge.onnx"
check resize-nan-scale 4 "node 'resize_nan' \(Resize\).*scales" -- T inspect "$H/resize_nan.onnx"
check resize-negative-scale 4 "node 'resize_neg' \(Resize\).*scales" -- T inspect "$H/resize_neg.onnx"
check resize-huge 7 "node 'resize_big' \(Resize\)" -- T inspect "$H/resize_huge.onnx"
check conv-weight-rank-1 4 "node 'conv_r1' \(Conv\)" -- T inspect "$H/conv_w_rank1.onnx"
check max-memory 7 "--max-memory" -- T run "$SRC/models/digits_cnn.onnx" --batch 360 --input "$SRC/models/digits_test_x.npy" --max-memory 64K
check max-memory-bad-value 2 "usage error: --max-memory 'lots'" -- T inspect "$SRC/models/digits_cnn.onnx" --max-memory lots

# 4. Passes are linear: 50,000 Identity nodes through --opt in seconds (was over 20 s).
start=$(date +%s)
check identity-chain-opt 0 "" -- T run "$H/identity_chain.onnx" --opt --input "$H/x4.npy"
(( $(date +%s) - start < 20 )) && good "identity-chain-opt under 20 s" || bad "identity-chain-opt took $(( $(date +%s) - start )) s"

# 5. The graph's interface; option errors in the documented form.
check duplicate-output 4 "graph output 'y' is listed twice" -- T inspect "$H/dup_output.onnx"
check sequence-output 5 "graph output 'y' is not a tensor" -- T inspect "$H/seq_output.onnx"
check initializer-input-contradicts 4 "graph input 'B' is declared FLOAT\[7\] but its initializer is f32\[4\]" -- T inspect "$H/init_input_contradict.onnx"
check unknown-option-form 2 "^triad: usage error: .*--frobnicate" -- T run "$SRC/models/digits_cnn.onnx" --frobnicate
check missing-argument-form 2 "^triad: usage error: " -- T run
check bad-batch-form 2 "^triad: usage error: .*--batch" -- T inspect "$SRC/models/digits_cnn.onnx" --batch 0
if grep -rq "$SRC" "$TMP/err"; then bad "no build paths in messages"; fi

finish
