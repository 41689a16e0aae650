#!/usr/bin/env bash
# Quantization-aware models in (issue 15): the QONNX MLP models/jet_qmlp.onnx (Quant on input,
# weights, biases and activations, power-of-two scales), the Brevitas export
# models/jet_brevitas_mlp.onnx and ONNX Runtime's QDQ models
# models/jet_mlp_qdq{,_pc}.onnx, end to end through the CLI:
# - the interpreter and the CPU target equal QONNX's executor bit for bit on 2,000 jets
#   (models/ref/jet_qmlp_output.npy), the GPU target runs it or refuses it cleanly;
# - triad quantize (the FPGA emulator) imports the model's formats and equals the interpreter
#   bit for bit (its arithmetic is exact at those formats); triad compile --target fpga + triad
#   sim on both QONNX models: the RTL is bit-exact with the emulator (skipped without verilator);
# - must-fail: a Quant with a non-power-of-two scale on data is refused on the FPGA naming the
#   node, an unknown rounding mode at import;
# - QDQ (jet_mlp per tensor and per channel, the residual CNN resblock_cnn per channel): interp,
#   cpu and gpu against ONNX Runtime 1.20.1 (unfused QDQ semantics); the CPU's integer kernels
#   (TRIAD_CPU_QDQ=int) against the same and, cut before Softmax, against live ONNX Runtime with
#   its QDQ fusions; on the FPGA (integer grids with requantization) the emulator equals ONNX
#   Runtime except near rounding ties and the RTL is bit-exact with the emulator on 100 samples
#   of each; a Sigmoid on a grid is refused naming the node; a power-of-two QDQ model keeps its
#   fixed formats (emulator, RTL).
# Usage: qonnx_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$SRC/tests/lib.sh"
PY=$SRC/.venv/bin/python
[[ -x $PY ]] || PY=python3
M=$SRC/models/jet_qmlp.onnx
X=$SRC/models/jet_test_x.npy
REF=$SRC/models/ref/jet_qmlp_output.npy
# The GPU (quantizers on the host) where an OpenCL device exists.
GPU=""
"$TRIAD" devices >/dev/null 2>&1 && GPU=gpu

# same A B: bit-identical float32 arrays
same() {
  $PY - "$1" "$2" <<'PYEOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape, (a.shape, b.shape)
d = int(np.sum(a.astype(np.float32).view(np.uint32) != b.astype(np.float32).view(np.uint32)))
print(f"{a.size} values, {d} differ in any bit, max |diff| {float(np.abs(a - b).max()):g}")
sys.exit(d != 0)
PYEOF
}

check "inspect lists the QONNX Quant nodes" 0 "Quant" -- "$TRIAD" inspect "$M"
check "interp runs jet_qmlp" 0 "" -- "$TRIAD" run "$M" --batch 2000 -i "$X" -o "$TMP/interp.npy"
ok "interp equals QONNX's executor bit for bit" -- same "$TMP/interp.npy" "$REF"
check "cpu runs jet_qmlp" 0 "" -- "$TRIAD" run "$M" --target cpu --batch 2000 -i "$X" -o "$TMP/cpu.npy"
ok "cpu equals QONNX's executor bit for bit" -- same "$TMP/cpu.npy" "$REF"
# The GPU target: runs (Quant through the host fallback) or, without OpenCL, exits 5.
"$TRIAD" run "$M" --target gpu --batch 2000 -i "$X" -o "$TMP/gpu.npy" >"$TMP/gout" 2>&1
rc=$?
if [[ $rc -eq 0 ]]; then
  ok "gpu equals QONNX's executor bit for bit" -- same "$TMP/gpu.npy" "$REF"
elif [[ $rc -eq 5 ]]; then
  good "gpu: no OpenCL device or op refused cleanly (exit 5)"
else
  bad "gpu: exit $rc"; head -5 "$TMP/gout"
fi

# A real Brevitas export (brevitas 0.10.3 export_qonnx, domain onnx.brevitas, initializers
# listed as inputs): interp and cpu equal QONNX's executor, the FPGA emulator equals interp.
B=$SRC/models/jet_brevitas_mlp.onnx
BREF=$SRC/models/ref/jet_brevitas_mlp_output.npy
for t in interp cpu fpga $GPU; do
  check "brevitas mlp on $t" 0 "" -- "$TRIAD" run "$B" --target $t --batch 2000 -i "$X" -o "$TMP/b.$t.npy"
done
ok "brevitas mlp: interp equals QONNX's executor bit for bit" -- same "$TMP/b.interp.npy" "$BREF"
ok "brevitas mlp: cpu equals QONNX's executor bit for bit" -- same "$TMP/b.cpu.npy" "$BREF"
ok "brevitas mlp: fpga emulator equals QONNX's executor bit for bit" -- same "$TMP/b.fpga.npy" "$BREF"
[[ -n $GPU ]] && ok "brevitas mlp: gpu equals QONNX's executor bit for bit" -- same "$TMP/b.gpu.npy" "$BREF"

# FPGA emulator: the model's precisions, output equal to the interpreter's.
check "quantize imports the formats" 0 "fixed<8,4>" -- \
  "$TRIAD" quantize "$M" --input "$X" --report --output "$TMP/fpga.npy"
ok "fpga emulator equals the interpreter bit for bit" -- same "$TMP/fpga.npy" "$TMP/interp.npy"
check "run --target fpga" 0 "" -- "$TRIAD" run "$M" --target fpga --batch 2000 -i "$X" -o "$TMP/fpga2.npy"
ok "run --target fpga equals the interpreter" -- same "$TMP/fpga2.npy" "$TMP/interp.npy"

# Must-fail: a data Quant with scale 0.1 on the FPGA; an unknown rounding mode at import.
$PY - "$TMP" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
def model(scale, mode, path):
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in [("s", scale), ("z", 0.0), ("b", 8.0)]]
    node = helper.make_node("Quant", ["x", "s", "z", "b"], ["y"], name="/act/Quant",
                            domain="qonnx.custom_op.general", rounding_mode=mode)
    g = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("qonnx.custom_op.general", 1)])
    onnx.save(m, path)
model(0.1, "ROUND", sys.argv[1] + "/scale01.onnx")
# A weight Quant with scale 0.3 (Brevitas' default float scales): no exact fixed format.
w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "w")
inits = [w] + [numpy_helper.from_array(np.array(v, np.float32), n)
               for n, v in [("ws", 0.3), ("wz", 0.0), ("wb", 4.0)]]
nodes = [helper.make_node("Quant", ["w", "ws", "wz", "wb"], ["wq"], name="/fc/weight_quant/Quant",
                          domain="qonnx.custom_op.general", narrow=1),
         helper.make_node("Gemm", ["x", "wq"], ["y"], name="/fc/Gemm", transB=1)]
g = helper.make_graph(nodes, "w03", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], initializer=inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                              helper.make_opsetid("qonnx.custom_op.general", 1)]),
          sys.argv[1] + "/w03.onnx")
# Scale 3 * 2^-5: not a power of two, but the int4 values k * 3/32 are exact in fixed<6,1>.
inits[1] = numpy_helper.from_array(np.array(3 / 32, np.float32), "ws")
g = helper.make_graph(nodes, "w3", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], initializer=inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                              helper.make_opsetid("qonnx.custom_op.general", 1)]),
          sys.argv[1] + "/w3.onnx")
model(0.25, "STOCHASTIC", sys.argv[1] + "/badmode.onnx")
np.save(sys.argv[1] + "/x4.npy", np.linspace(-3, 3, 8, dtype=np.float32).reshape(2, 4))
PYEOF
check "fpga refuses a non-power-of-two scale, naming the node" 5 \
  "'/act/Quant' \(Quant\).*not a power of two" -- \
  "$TRIAD" compile "$TMP/scale01.onnx" --target fpga -o "$TMP/bad"
check "fpga refuses inexact weights, naming the layer and the Quant" 5 \
  "layer '/fc/Gemm': weight node '/fc/weight_quant/Quant' \(Quant\).*not exact" -- \
  "$TRIAD" quantize "$TMP/w03.onnx" --input "$TMP/x4.npy"
check "... unless the config sets the weight precision" 0 "w fixed<8,2>" -- \
  "$TRIAD" quantize "$TMP/w03.onnx" --input "$TMP/x4.npy" --report --precision "/fc/Gemm:weight=fixed<8,2>"
check "a weight scale 3*2^-5 folds exactly (fixed<6,1>)" 0 "w fixed<6,1>" -- \
  "$TRIAD" quantize "$TMP/w3.onnx" --input "$TMP/x4.npy" --report
check "interp runs the scale-0.1 Quant" 0 "" -- "$TRIAD" run "$TMP/scale01.onnx" --batch 2 -i "$TMP/x4.npy"
check "unknown rounding mode refused at import" 5 "'/act/Quant'.*rounding_mode.*STOCHASTIC" -- \
  "$TRIAD" inspect "$TMP/badmode.onnx"

# QDQ models from onnxruntime.quantization.quantize_static against ONNX Runtime 1.20.1.
# resblock_cnn_qdq: the residual CNN (Conv, BN, residual Add, GAP, Dense, Softmax) per channel.
for q in jet_mlp_qdq jet_mlp_qdq_pc resblock_cnn_qdq; do
  QX=$X; QB=2000
  [[ $q == resblock_cnn_qdq ]] && QX=$SRC/models/digits_test_x.npy && QB=360
  for t in interp cpu $GPU; do
    if "$TRIAD" run "$SRC/models/$q.onnx" --target $t --batch $QB -i "$QX" -o "$TMP/$q.$t.npy" >/dev/null &&
      $PY - "$TMP/$q.$t.npy" "$SRC/models/ref/${q}_output.npy" <<'PYEOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = a != b
print(f"{a.size} values, {int(d.sum())} differ, max |diff| {float(np.abs(a - b).max()):g}, "
      f"top-1 agreement {float(np.mean(a.argmax(1) == b.argmax(1))):.4f}")
# Outputs are DequantizeLinear of uint8/int8: equal, or (float sums in another order reaching
# another side of a rounding tie) one quantization step apart in a few values.
assert np.abs(a - b).max() <= 1 / 255 + 1e-6 and d.mean() <= 0.002
PYEOF
    then good "$q on $t equals ONNX Runtime"; else bad "$q on $t"; fi
  done
done

# The CPU's integer kernels for QDQ models (fuse-qdq, TRIAD_CPU_QDQ=int; the default is the
# float path, measured faster): the layers are QLinearConv / MatMulInteger, the outputs equal
# ONNX Runtime 1.20.1's reference (graph optimizations off) within the tolerance above, and the
# quantized logits (the model cut before Softmax, whose ORT-fused QLinearSoftmax is a table)
# equal live ONNX Runtime's reference and, on a CPU with VNNI, its optimized QLinearConv/QGemm,
# in every value but float rounding ties (at most 0.2%, one level).
for q in jet_mlp_qdq jet_mlp_qdq_pc resblock_cnn_qdq; do
  QX=$X; QB=2000; KIND=MatMulInteger
  [[ $q == resblock_cnn_qdq ]] && QX=$SRC/models/digits_test_x.npy && QB=360 && KIND=QLinearConv
  check "$q on cpu with integer kernels" 0 "$KIND" -- env TRIAD_CPU_QDQ=int \
    "$TRIAD" run "$SRC/models/$q.onnx" --target cpu --batch $QB -i "$QX" -o "$TMP/$q.int.npy" --profile
  if $PY - "$TMP/$q.int.npy" "$SRC/models/ref/${q}_output.npy" <<'PYEOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = a != b
print(f"{a.size} values, {int(d.sum())} differ, max |diff| {float(np.abs(a - b).max()):g}")
assert np.abs(a - b).max() <= 1 / 255 + 1e-6 and d.mean() <= 0.002
PYEOF
  then good "$q on cpu (integer kernels) equals ONNX Runtime's reference"; else bad "$q int vs ref"; fi
  $PY - "$SRC/models/$q.onnx" "$TMP/${q}_logits.onnx" "$QX" "$TMP/${q}_ort_logits.npy" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
import onnxruntime as ort
m = onnx.load(sys.argv[1])
producer = {o: n for n in m.graph.node for o in n.output}
soft = next(n for n in m.graph.node if n.op_type == "Softmax")
dq = producer[soft.input[0]]
zp = next(i for i in m.graph.initializer if i.name == dq.input[2])
del m.graph.output[:]
m.graph.output.append(onnx.helper.make_tensor_value_info(dq.input[0], zp.data_type, None))
onnx.save(m, sys.argv[2])
o = ort.SessionOptions()
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(sys.argv[2], o, providers=["CPUExecutionProvider"])
np.save(sys.argv[4], s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[3])})[0])
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
s = ort.InferenceSession(sys.argv[2], o, providers=["CPUExecutionProvider"])
np.save(sys.argv[4].replace(".npy", "_ref.npy"),
        s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[3])})[0])
PYEOF
  check "$q logits on cpu with integer kernels" 0 "" -- env TRIAD_CPU_QDQ=int \
    "$TRIAD" run "$TMP/${q}_logits.onnx" --target cpu --batch $QB -i "$QX" -o "$TMP/${q}_logits.npy"
  # ONNX Runtime's fused u8s8 kernels are exact only with VNNI: without it (AVX2's vpmaddubsw)
  # they saturate pairs of products, and differ from its own reference by several levels. Triad
  # is held to the reference everywhere, and to the fused kernels where they are exact.
  vnni=0
  grep -qE 'avx512_vnni|avx_vnni' /proc/cpuinfo && vnni=1
  if $PY - "$TMP/${q}_logits.npy" "$TMP/${q}_ort_logits_ref.npy" "$TMP/${q}_ort_logits.npy" $vnni <<'PYEOF'
import sys
import numpy as np
a, r, f = (np.load(p).astype(np.int32) for p in sys.argv[1:4])
for name, b, required in (("reference", r, True), ("fused kernels", f, sys.argv[4] == "1")):
    d = np.abs(a - b)
    print(f"{a.size} quantized logits, {int((d > 0).sum())} differ from ONNX Runtime's {name}, "
          f"max {d.max()}" + ("" if required else " (not required: no VNNI on this CPU)"))
    if required:
        assert d.max() <= 1 and (d > 0).mean() <= 0.002
PYEOF
  then good "$q quantized logits equal ONNX Runtime's"; else bad "$q logits"; fi
done

# QDQ on the FPGA (integer grids, fpga/layers/Quant.cpp): ORT's calibrated scales and zero
# points. The emulator (triad quantize) against ONNX Runtime: equal except near rounding ties
# (at most 1 step of 1/255 in at most 0.2% of the values), the int8 weight formats and the
# requantization in the report; must-fail: a Sigmoid on a grid is refused naming the node.
for q in jet_mlp_qdq jet_mlp_qdq_pc resblock_cnn_qdq; do
  QX=$X
  [[ $q == resblock_cnn_qdq ]] && QX=$SRC/models/digits_test_x.npy
  if "$TRIAD" quantize "$SRC/models/$q.onnx" --input "$QX" --report --output "$TMP/$q.fpga.npy" \
    >"$TMP/$q.report" && grep -q "w fixed<8,8>" "$TMP/$q.report" &&
    $PY - "$TMP/$q.fpga.npy" "$SRC/models/ref/${q}_output.npy" <<'PYEOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
steps = np.abs(a - b) * 255
print(f"{a.size} values, {int((a != b).sum())} differ, max {steps.max():.3f} steps, "
      f"top-1 agreement {float(np.mean(a.argmax(1) == b.argmax(1))):.4f}")
assert steps.max() <= 1.001 and (a != b).mean() <= 0.002
PYEOF
  then good "$q: fpga emulator equals ONNX Runtime (integer grids)"; else bad "$q on the fpga emulator"; fi
done
$PY - "$TMP/qdq_sigmoid.onnx" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
init = [numpy_helper.from_array(v, n) for n, v in [
    ("s", np.array(0.037, np.float32)), ("z", np.array(119, np.uint8))]]
nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="/in/Q"),
         helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="/in/DQ"),
         helper.make_node("Sigmoid", ["xd"], ["y"], name="/act/Sigmoid")]
g = helper.make_graph(nodes, "qdq_sigmoid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])], initializer=init)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
check "fpga refuses a Sigmoid on a QDQ grid, naming the node" 5 \
  "'/act/Sigmoid' \(Sigmoid\): its input '.*' is on a QDQ integer grid" -- \
  "$TRIAD" compile "$TMP/qdq_sigmoid.onnx" --target fpga -o "$TMP/bad"

# A QDQ model with power-of-two scales and zero points 0 (int8 input, uint8 after the
# ReLU-less Gemm as ORT writes it, int8 weights per channel through DequantizeLinear) keeps the
# fixed formats: it runs on the emulator equal to the interpreter and its RTL is bit-exact with
# the emulator.
$PY - "$TMP/qdq_pow2.onnx" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(15)
w1 = rng.integers(-127, 128, (32, 16)).astype(np.int8)   # int8 per output channel
s1 = (2.0 ** -rng.integers(6, 9, 32)).astype(np.float32)
b1 = (rng.integers(-512, 512, 32) * 2.0**-10).astype(np.float32)
w2 = (rng.integers(-100, 100, (5, 32)) * 2.0**-8).astype(np.float32)
init = [numpy_helper.from_array(v, n) for n, v in [
    ("s_in", np.array(2.0**-4, np.float32)), ("z_in", np.array(0, np.int8)),
    ("w1_q", w1), ("w1_s", s1), ("w1_z", np.zeros(32, np.int8)), ("b1", b1),
    ("s_h", np.array(2.0**-3, np.float32)), ("z_h", np.array(0, np.uint8)), ("w2", w2)]]
nodes = [
    helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"], name="/in/QuantizeLinear"),
    helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xd"], name="/in/DequantizeLinear"),
    helper.make_node("DequantizeLinear", ["w1_q", "w1_s", "w1_z"], ["w1"], name="/fc1/w/DequantizeLinear", axis=0),
    helper.make_node("Gemm", ["xd", "w1", "b1"], ["h"], name="/fc1/Gemm", transB=1),
    helper.make_node("QuantizeLinear", ["h", "s_h", "z_h"], ["hq"], name="/h/QuantizeLinear"),
    helper.make_node("DequantizeLinear", ["hq", "s_h", "z_h"], ["hd"], name="/h/DequantizeLinear"),
    helper.make_node("Gemm", ["hd", "w2"], ["y"], name="/fc2/Gemm", transB=1)]
g = helper.make_graph(nodes, "qdq_pow2", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])], initializer=init)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
check "qdq pow2: interp" 0 "" -- "$TRIAD" run "$TMP/qdq_pow2.onnx" --batch 2000 -i "$X" -o "$TMP/qdq.interp.npy"
check "qdq pow2: fpga imports int8/uint8 formats" 0 "-> fixed<9,6>" -- \
  "$TRIAD" quantize "$TMP/qdq_pow2.onnx" --input "$X" --report --output "$TMP/qdq.fpga.npy"
ok "qdq pow2: fpga emulator equals the interpreter bit for bit" -- \
  same "$TMP/qdq.fpga.npy" "$TMP/qdq.interp.npy"

# RTL: bit-exact with the emulator (Verilator).
if command -v verilator >/dev/null; then
  $PY -c "import numpy as np; np.save('$TMP/x500.npy', np.load('$X')[:500])" || exit 1
  if "$TRIAD" compile "$M" --target fpga --reuse 4 --input "$TMP/x500.npy" -o "$TMP/rtl" >/dev/null &&
    "$TRIAD" sim "$TMP/rtl" --input "$TMP/x500.npy" --json "$TMP/sim.json" --output "$TMP/rtl.npy" >/dev/null &&
    $PY - "$TMP/sim.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"jet_qmlp RTL: {j['samples']} samples, {j['mismatches']} mismatches, II {j['ii']}")
assert j["samples"] == 500 and j["mismatches"] == 0 and j["missing"] == 0, j
PYEOF
  then good "jet_qmlp RTL bit-exact with the emulator"; else bad "jet_qmlp RTL"; fi
  $PY -c "import numpy as np; np.save('$TMP/i500.npy', np.load('$TMP/interp.npy')[:500])" &&
    ok "RTL outputs equal the interpreter's" -- same "$TMP/rtl.npy" "$TMP/i500.npy"
  # The Brevitas export: RTL bit-exact with the emulator, outputs equal to QONNX's executor.
  if "$TRIAD" compile "$B" --target fpga --reuse 4 --input "$TMP/x500.npy" -o "$TMP/brtl" >/dev/null &&
    "$TRIAD" sim "$TMP/brtl" --input "$TMP/x500.npy" --json "$TMP/bsim.json" --output "$TMP/brtl.npy" >/dev/null &&
    $PY - "$TMP/bsim.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"jet_brevitas_mlp RTL: {j['samples']} samples, {j['mismatches']} mismatches, II {j['ii']}")
assert j["samples"] == 500 and j["mismatches"] == 0 and j["missing"] == 0, j
PYEOF
  then good "jet_brevitas_mlp RTL bit-exact with the emulator"; else bad "jet_brevitas_mlp RTL"; fi
  $PY -c "import numpy as np; np.save('$TMP/b500.npy', np.load('$BREF')[:500])" &&
    ok "jet_brevitas_mlp RTL outputs equal QONNX's executor" -- same "$TMP/brtl.npy" "$TMP/b500.npy"
  if "$TRIAD" compile "$TMP/qdq_pow2.onnx" --target fpga --reuse 4 --input "$TMP/x500.npy" -o "$TMP/qrtl" >/dev/null &&
    "$TRIAD" sim "$TMP/qrtl" --input "$TMP/x500.npy" --json "$TMP/qsim.json" >/dev/null &&
    $PY - "$TMP/qsim.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"qdq_pow2 RTL: {j['samples']} samples, {j['mismatches']} mismatches")
assert j["samples"] == 500 and j["mismatches"] == 0 and j["missing"] == 0, j
PYEOF
  then good "qdq pow2 RTL bit-exact with the emulator"; else bad "qdq pow2 RTL"; fi
  # ORT's QDQ models on integer grids: RTL bit-exact with the emulator on 100 samples (the
  # per-channel MLP at reuse 8 and the residual CNN: about 3 minutes of Verilator builds, cached
  # afterwards; jet_mlp_qdq per tensor has the same layers as the per-channel one).
  for q in jet_mlp_qdq_pc resblock_cnn_qdq; do
    QX=$X R=8
    [[ $q == resblock_cnn_qdq ]] && QX=$SRC/models/digits_test_x.npy && R=1
    $PY -c "import numpy as np; np.save('$TMP/$q.x100.npy', np.load('$QX')[:100])" || exit 1
    if "$TRIAD" compile "$SRC/models/$q.onnx" --target fpga --reuse $R --input "$TMP/$q.x100.npy" \
      -o "$TMP/$q.rtl" >/dev/null &&
      grep -q "requantiz" "$TMP/$q.rtl/rtl/"*.v &&
      "$TRIAD" sim "$TMP/$q.rtl" --input "$TMP/$q.x100.npy" --json "$TMP/$q.sim.json" \
        --output "$TMP/$q.rtl.npy" >/dev/null &&
      $PY - "$TMP/$q.sim.json" "$TMP/$q.rtl.npy" "$TMP/$q.fpga.npy" <<'PYEOF'
import json, sys
import numpy as np
j = json.load(open(sys.argv[1]))
r, e = np.load(sys.argv[2]), np.load(sys.argv[3])[:100]
print(f"RTL: {j['samples']} samples, {j['mismatches']} mismatches, latency {j['latency_cycles']}, "
      f"II {j['ii']}; outputs equal to the emulator's: {bool((r == e).all())}")
assert j["samples"] == 100 and j["mismatches"] == 0 and j["missing"] == 0, j
assert (r == e).all()
PYEOF
    then good "$q RTL bit-exact with the emulator"; else bad "$q RTL"; fi
  done
else
  echo "skip RTL: verilator is not on PATH"
fi
finish
