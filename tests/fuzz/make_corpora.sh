#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets in OUT/<target>/ (build-dir only: nothing here is
# committed but the small hand-made seeds of tests/fuzz/seeds/):
#   onnx_load, onnx_interp  the shipped models (models/*.onnx), every ONNX node-test model and
#                           tests/fuzz/seeds/onnx (external data, a model-local function);
#   onnx_codegen            the shipped models and tests/fuzz/seeds/onnx only (every input runs
#                           every generator: the node tests' 1,100 models would take minutes);
#   tensor_file             tests/fuzz/seeds/tensor_file (.npy) and the node tests' first
#                           inputs under 1 KiB (.pb), each behind the format byte (\x01: .pb);
#   quant_config            tests/fuzz/seeds/quant_config.
# Regression inputs (tests/fuzz/regressions/<target>/) are seeds too.
#
#   make_corpora.sh SOURCE_DIR NODE_DATA_DIR|"" OUT
set -euo pipefail
src=$1 node=$2 out=$3
rm -rf "$out.tmp"
mkdir -p "$out.tmp"/{onnx_load,onnx_interp,onnx_codegen,tensor_file,quant_config}
cp "$src"/models/*.onnx "$out.tmp/onnx_load/"
if [[ -n $node && -d $node ]]; then
  for m in "$node"/*/model.onnx; do
    t=$(basename "$(dirname "$m")")
    cp "$m" "$out.tmp/onnx_load/$t.onnx"
  done
  for p in "$node"/*/test_data_set_0/input_0.pb; do
    [[ $(stat -c %s "$p") -lt 1024 ]] || continue
    t=$(basename "$(dirname "$(dirname "$p")")")
    { printf '\x01'; cat "$p"; } > "$out.tmp/tensor_file/$t.pb"
  done
fi
cp "$src"/tests/fuzz/seeds/onnx/* "$out.tmp/onnx_load/"
cp "$out.tmp"/onnx_load/* "$out.tmp/onnx_interp/"
cp "$src"/models/*.onnx "$src"/tests/fuzz/seeds/onnx/* "$out.tmp/onnx_codegen/"
cp "$src"/tests/fuzz/seeds/tensor_file/* "$out.tmp/tensor_file/"
cp "$src"/tests/fuzz/seeds/quant_config/* "$out.tmp/quant_config/"
for t in onnx_load onnx_interp onnx_codegen tensor_file quant_config; do
  if compgen -G "$src/tests/fuzz/regressions/$t/*" > /dev/null; then
    cp "$src"/tests/fuzz/regressions/"$t"/* "$out.tmp/$t/"
  fi
done
rm -rf "$out"
mv "$out.tmp" "$out"
for t in onnx_load onnx_interp onnx_codegen tensor_file quant_config; do
  echo "make_corpora: $t: $(ls "$out/$t" | wc -l) seeds"
done
