#!/bin/bash
# The GPU target on a machine with an NVIDIA GPU (docs/gpu.md, "NVIDIA H100"): builds Triad into
# build-dev/, registers NVIDIA's OpenCL ICD when the machine has only PoCL's, exports ResNet-50 and
# BERT-base with the zoo's seeds and code (scripts/zoo/large_models.py; PyTorch with CUDA in
# $TORCH_PY), times PyTorch eager on CUDA as the reference, then `triad run --target gpu`
# (NVIDIA's OpenCL) and `--target cpu`, and compares both outputs with PyTorch's.
#
# The lent machines have no network and no libonnx-dev: its files (Debian's libonnx-dev,
# libonnx1, libonnxifi) and SQLite's header and library are carried in .device/onnx and
# .device/sqlite (ignored by git), and .device/icd/nvidia.icd names /usr/lib/libnvidia-opencl.so.1.
#   bash bench/nvidia/run.sh            # $OUT: logs, outputs, JSON timings
set -x
R=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$R/.device/onnx/usr/lib/x86_64-linux-gnu:$R/.device/sqlite:$LD_LIBRARY_PATH
export OCL_ICD_VENDORS=$R/.device/icd
export TRIAD_CACHE_DIR=/tmp/triad-cache
(${TORCH_PY:-/opt/torch/.venv/bin/python3} bench/nvidia/export_torch_reference.py /tmp/models > $OUT/export.log 2>&1; echo "rc $?" >> $OUT/export.log) &
EXP=$!
if [ ! -x build-dev/cli/triad ]; then
  cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRIAD_PYTHON=OFF \
    -DONNX_DIR=$R/.device/onnx/usr/lib/x86_64-linux-gnu/cmake/ONNX -DSQLite3_INCLUDE_DIR=$R/.device/sqlite -DSQLite3_LIBRARY=$R/.device/sqlite/libsqlite3.so > $OUT/configure.log 2>&1 || { tail -30 $OUT/configure.log; exit 1; }
  cmake --build build-dev -j16 --target triad > $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -60; exit 1; }
fi
T=build-dev/cli/triad
$T devices 2>&1 | tee $OUT/devices.txt
wait $EXP; cat $OUT/export.log
for m in resnet50 bert_base; do
  D=/tmp/models/$m; ins=$(ls $D/in*.npy)
  for tgt in gpu cpu; do
    timeout 200 $T run $D/$m.onnx --target $tgt $([ $tgt = gpu ] && echo --device NVIDIA) --repeat 21 -i $ins -o $OUT/${m}_$tgt.npy \
      --json $OUT/${m}_$tgt.json > $OUT/${m}_$tgt.log 2>&1; echo "$m $tgt rc $?"; tail -2 $OUT/${m}_$tgt.log
  done
  ${TORCH_PY:-/opt/torch/.venv/bin/python3} -c "
import numpy as np,sys
r=np.load('$D/ref.npy')
for t in ('gpu','cpu'):
  try: a=np.load('$OUT/${m}_'+t+'.npy'); print('$m',t,'max abs vs torch', float(np.abs(a-r).max()), 'max |ref|', float(np.abs(r).max()))
  except Exception as e: print('$m',t,e)"
done
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E "Model name|^CPU\(s\)" > $OUT/cpu.txt
