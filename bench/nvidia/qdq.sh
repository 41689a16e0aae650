#!/bin/bash
# Quantized and float CNNs on the GPU target on a lent NVIDIA machine (docs/gpu.md, "int8 on
# NVIDIA"): Triad is built here (a Debian machine) and carried, not rebuilt there: .device/bin
# holds the stripped `triad` and `triad_unit_tests`, .device/lib the shared libraries they need
# that the lent image lacks (protobuf, onnx, fmt, sqlite, the ICD loader; `ldd` lists them);
# the NVIDIA ICD file is written there. On the machine: exports ResNet-50 and MobileNetV2 with the zoo's seeds
# (PyTorch there), quantizes them with ONNX Runtime's quantize_static (the image's onnxruntime;
# bench/qdq_models.py: QDQ, per-channel int8 weights, uint8 activations), times PyTorch eager
# CUDA (float32) as the reference, then `triad run --target gpu` on NVIDIA's OpenCL: float,
# QDQ on the integer kernels, and QDQ on float kernels with Q/DQ fused (TRIAD_GPU_QDQ=float);
# compares each output with ONNX Runtime's CPU run of the same file; runs the GPU unit tests
# there.
#   bash bench/nvidia/qdq.sh          # $OUT: summary.txt, and everything in all.tgz
set -x
R=$PWD; TOP=${OUT:-/tmp/out}; OUT=$TOP/work; mkdir -p $OUT
# The machine returns at most 8 files: the logs travel as one archive, written however we end.
trap 'cp $OUT/summary.txt $TOP/ 2>/dev/null; tar czf $TOP/all.tgz -C $TOP work && rm -rf $OUT' EXIT
PY=${TORCH_PY:-/opt/torch/.venv/bin/python3}
export LD_LIBRARY_PATH=$R/.device/lib:$LD_LIBRARY_PATH
# NVIDIA's ICD, wherever the image keeps its OpenCL library.
mkdir -p /tmp/icd
NV=$(ldconfig -p | awk '/libnvidia-opencl.so.1/ {print $NF; exit}')
[ -n "$NV" ] || NV=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
echo "$NV" > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
export TRIAD_CACHE_DIR=/tmp/triad-cache
T=$R/.device/bin/triad
M=/tmp/models
MODELS=${MODELS:-resnet50 mobilenet_v2}
# CNNs: quantize_static (QDQ, folder NAME_qdq); transformers (bert*): quantize_dynamic (NAME_dyn).
CNNS=$(for m in $MODELS; do [[ $m == bert* ]] || echo $m; done)
TRANSFORMERS=$(for m in $MODELS; do [[ $m == bert* ]] && echo $m; done)
(PYTHONUNBUFFERED=1 $PY bench/nvidia/export_torch_reference.py $M $MODELS > $OUT/export.log 2>&1 &&
 { [ -z "$CNNS" ] || PYTHONUNBUFFERED=1 $PY bench/qdq_models.py --zoo $M $CNNS 2>&1; } | grep -v "Removing initializer" >> $OUT/export.log;
 { [ -z "$TRANSFORMERS" ] || PYTHONUNBUFFERED=1 $PY bench/qdq_models.py --dynamic --zoo $M $TRANSFORMERS 2>&1; } | grep -v "Removing initializer" >> $OUT/export.log;
 echo "rc $?" >> $OUT/export.log) &
EXP=$!
$T devices > $OUT/devices.txt 2>&1; $T devices --json > $OUT/devices.json 2>&1; cat $OUT/devices.txt
# The unit tests look for the sources and the build folder where they were built.
mkdir -p /work && ln -sfn $R /work/main && mkdir -p /work/main/build
TRIAD_OPENCL_DEVICE=NVIDIA timeout 240 $R/.device/bin/triad_unit_tests \
  --gtest_filter='GpuQuant.*:GpuTarget.*:GpuGemm*:GpuConv*:GpuElementwise*' > $OUT/unit.log 2>&1
echo "unit rc $?" | tee -a $OUT/summary.txt; grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/unit.log | head -20 | tee -a $OUT/summary.txt
wait $EXP; tail -5 $OUT/export.log
for m in $MODELS; do
  tag=qdq; variants="float int8 int8_nodp4a int8_nodot4 int8_floatkernels"
  [[ $m == bert* ]] && tag=dyn && variants="float int8 int8_nodp4a int8_nodot4"
  ins=$(ls $M/$m/in*.npy)
  for v in $variants; do
    f=$M/${m}_$tag/${m}_$tag.onnx
    case $v in
      float) f=$M/$m/$m.onnx; env="";;
      int8) env="";;
      int8_nodp4a) env="TRIAD_GPU_DP4A=0";;        # dot4 with four multiplies
      int8_nodot4) env="TRIAD_GPU_INT8_DOT=0";;    # one product per step
      int8_floatkernels) env="TRIAD_GPU_QDQ=float";;
    esac
    env $env timeout 200 $T run $f --target gpu --device NVIDIA --repeat 41 -i $ins \
      -o $OUT/${m}_$v.npy --json $OUT/${m}_$v.json > $OUT/${m}_$v.log 2>&1
    echo "$m $v rc $?" | tee -a $OUT/summary.txt; tail -3 $OUT/${m}_$v.log
  done
  env timeout 100 $T run $M/${m}_$tag/${m}_$tag.onnx --target gpu --device NVIDIA --repeat 5 \
    -i $ins --profile > $OUT/${m}_int8_profile.txt 2>&1
  env timeout 100 $T run $M/$m/$m.onnx --target gpu --device NVIDIA --repeat 5 \
    -i $ins --profile > $OUT/${m}_float_profile.txt 2>&1
  $PY - <<EOF 2>&1 | tee -a $OUT/summary.txt
import glob, json, numpy as np, onnxruntime as ort
m = "$m"; d = "$M"; tag = "$tag"
xs = [np.load(f) for f in sorted(glob.glob(f"{d}/{m}/in*.npy"))]
ref = {"float": np.load(f"{d}/{m}/ref.npy")}
s = ort.InferenceSession(f"{d}/{m}_{tag}/{m}_{tag}.onnx", providers=["CPUExecutionProvider"])
ref["int8"] = s.run(None, {i.name: x for i, x in zip(s.get_inputs(), xs)})[0]
for v in ("int8_nodp4a", "int8_nodot4", "int8_floatkernels"):
    ref[v] = ref["int8"]
t = json.load(open(f"{d}/torch.json"))[m]["torch_cuda_p50_ms"]
for v in ("float", "int8", "int8_nodp4a", "int8_nodot4", "int8_floatkernels"):
    try:
        a = np.load(f"$OUT/{m}_{v}.npy"); j = json.load(open(f"$OUT/{m}_{v}.json"))
        p50 = j["p50_ms"]
        r = ref[v]
        print(m, v, "p50_ms", p50, "torch_cuda_fp32_ms", round(t, 3), "max_abs_vs_ref",
              float(np.abs(a - r).max()), "max_ref", float(np.abs(r).max()),
              "top1_equal", bool((a.reshape(len(a), -1).argmax(1) == r.reshape(len(r), -1).argmax(1)).all()))
    except Exception as e:
        print(m, v, "error", repr(e)[:200])
EOF
done
cp $M/torch.json $OUT/ 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E "Model name|^CPU\(s\)" > $OUT/cpu.txt
