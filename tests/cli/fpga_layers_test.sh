#!/usr/bin/env bash
# Every FPGA layer kind in one CNN, bit-exact in RTL: a generated ONNX model with Conv 3x3 (same
# padding), 1x1, 7x7, strided with asymmetric pads, dilated and depthwise; MaxPool with padding,
# AveragePool, GlobalMaxPool; a BatchNormalization no Conv absorbs; HardSwish, HardSigmoid,
# LeakyRelu, Tanh; a residual Add (a fork and a FIFO), Concat of channels (a FIFO), an Add of a
# per-channel constant, a nearest Resize by 2; Flatten, Gemm, Softmax. triad compile --target fpga (auto reuse) + triad
# sim on 40 random inputs with gaps and back-pressure: 0 mismatches, 0 missing; the design
# lints clean from rtl/files.f; triad run --target fpga equals the float model within the
# quantization error. Exits 77 (skipped) without verilator.
# Usage: fpga_layers_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
if ! command -v verilator >/dev/null; then
  echo "SKIP: verilator is not on PATH"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=$SRC/.venv/bin/python
$PY - "$TMP" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(7)
nodes, inits = [], []
def const(name, a):
    inits.append(numpy_helper.from_array(np.asarray(a, np.float32), name)); return name
def node(op, ins, name, **kw):
    nodes.append(helper.make_node(op, ins, [name], name="/" + name, **kw)); return name
def conv(x, name, cin, cout, k, group=1, **kw):
    w = rng.normal(0, np.sqrt(2.0 / (cin // group * k * k)), (cout, cin // group, k, k))
    return node("Conv", [x, const(name + ".w", w), const(name + ".b", rng.normal(0, .1, cout))],
                name, kernel_shape=[k, k], group=group, **kw)
x = conv("input", "c1", 3, 8, 3, pads=[1, 1, 1, 1])                       # 12x12
x = node("HardSwish", [x], "hswish")
c2 = conv(x, "c2", 8, 8, 3, group=8, strides=[2, 2], pads=[1, 1, 0, 0])  # depthwise -> 6x6
bn = node("BatchNormalization", [c2, const("bn.s", rng.uniform(.5, 1.5, 8)),
          const("bn.b", rng.normal(0, .2, 8)), const("bn.m", rng.normal(0, .2, 8)),
          const("bn.v", rng.uniform(.5, 1.5, 8))], "bn")
lk = node("LeakyRelu", [bn], "leaky", alpha=0.1)
a = conv(lk, "c3", 8, 8, 1)
b = conv(lk, "c4", 8, 8, 7, pads=[3, 3, 3, 3])
s = node("Add", [a, b], "res")
cat = node("Concat", [s, c2], "cat", axis=1)                               # 16 x 6x6
mp = node("MaxPool", [cat], "mpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
ap = node("AveragePool", [mp], "apool", kernel_shape=[2, 2], strides=[2, 2])  # 3x3
bias = node("Add", [ap, const("chan.bias", rng.normal(0, .3, (16, 1, 1)))], "cbias")
hs = node("HardSigmoid", [bias], "hsig", alpha=0.3, beta=0.4)
up = node("Resize", [hs, "", const("up.scales", [1, 1, 2, 2])], "up", mode="nearest")  # 6x6
c5 = conv(up, "c5", 16, 4, 3, pads=[2, 2, 2, 2], dilations=[2, 2])          # 6x6
gp = node("GlobalMaxPool", [c5], "gmax")
fl = node("Flatten", [gp], "flat", axis=1)
fc = node("Gemm", [fl, const("fc.w", rng.normal(0, .8, (5, 4))), const("fc.b", rng.normal(0, .1, 5))],
          "fc", transB=1)
th = node("Tanh", [fc], "tanh")
nodes.append(helper.make_node("Softmax", [th], ["probs"], name="/Softmax", axis=1))
g = helper.make_graph(nodes, "all_layers",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 12, 12])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 5])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, d + "/all_layers.onnx")
np.save(d + "/x.npy", rng.uniform(-1, 1, (40, 3, 12, 12)).astype(np.float32))
PYEOF
fail=0
D=$TMP/design
if "$TRIAD" compile "$TMP/all_layers.onnx" --target fpga --reuse auto -o "$D" >/dev/null &&
   (cd "$D/rtl" && verilator --lint-only -Wall --top-module all_layers $(grep -v '^//' files.f)) &&
   "$TRIAD" sim "$D" --input "$TMP/x.npy" --json "$D/sim.json" --output "$D/y.npy" &&
   "$TRIAD" run "$TMP/all_layers.onnx" --target fpga --batch 40 -i "$TMP/x.npy" -o "$D/yq.npy" >/dev/null &&
   "$TRIAD" run "$TMP/all_layers.onnx" --batch 40 -i "$TMP/x.npy" -o "$D/yf.npy" >/dev/null &&
   $PY - "$D" <<'PYEOF'
import json, sys
import numpy as np
d = sys.argv[1]
j, s = json.load(open(d + "/sim.json")), json.load(open(d + "/summary.json"))
assert j["samples"] == 40 and j["mismatches"] == 0 and j["missing"] == 0, j
ops = {l["op"] for l in s["layers"]}
want = {"Conv", "HardSwish", "BatchNormalization", "LeakyRelu", "Add", "Concat", "MaxPool",
        "AveragePool", "HardSigmoid", "Resize", "GlobalMaxPool", "Gemm", "Tanh", "Softmax"}
assert want <= ops, want - ops
assert len(s["fifos"]) >= 2, s["fifos"]
y, yq, yf = np.load(d + "/y.npy"), np.load(d + "/yq.npy"), np.load(d + "/yf.npy")
assert np.array_equal(y, yq), "RTL != triad run --target fpga"
err = float(np.abs(yq - yf).max())
print(f"all_layers: {len(s['layers'])} layers, max |fixed - float| {err:.4f}, latency "
      f"{j['latency_cycles']} cycles, II {j['ii']}")
assert err < 0.05, err
PYEOF
then echo "ok   every layer kind bit-exact in RTL"; else echo "FAIL every layer kind"; fail=1; fi
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
