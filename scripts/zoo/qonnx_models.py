#!/usr/bin/env python3
"""models/jet_qmlp.onnx: jet_mlp's trained weights as a quantization-aware QONNX model.

The graph has the form Brevitas' QONNX export gives a QuantLinear/QuantReLU MLP (Quant nodes of
domain qonnx.custom_op.general on the input, on every weight and bias, and after every ReLU),
built with the onnx helper API: Brevitas needs PyTorch, which this machine's zoo does not install
(a multi-GB download). Every scale is a power of two with zero point 0 (Brevitas' *FixedPoint
quantizers), so the FPGA target imports each Quant as an exact fixed<W,I> format:

  input  Quant int8,  scale 2^-4                       -> fixed<8,4>
  fc1    weight Quant int6 narrow, per tensor          bias Quant int16 at s_in * s_w
  relu1  Quant uint8 (calibrated power-of-two scale)   -> fixed<9,*>
  fc2    weight Quant int6 narrow, per output channel  bias as fc1
  relu2  Quant uint8;  fc3 int6 per tensor; relu3 Quant uint8
  fc4    weight Quant int8 narrow, per tensor -> logits (no Softmax: the logits are exact sums)

Writes models/jet_qmlp.onnx and models/ref/jet_qmlp_output.npy: QONNX's executor
(qonnx.core.onnx_exec.execute_onnx) on models/jet_test_x.npy (2000 jets). Run with a venv that
has qonnx (not the project's .venv):

    /tmp/qonnx-venv/bin/python scripts/zoo/qonnx_models.py
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QONNX = "qonnx.custom_op.general"


def pow2_scale(max_abs, max_int):
    """Smallest power of two s with max_abs / s <= max_int."""
    return 2.0 ** math.ceil(math.log2(max(max_abs, 1e-12) / max_int))


def np_quant(x, s, bits, signed, narrow):
    lo = -(2 ** (bits - 1)) + (1 if narrow else 0) if signed else 0
    hi = 2 ** (bits - 1) - 1 if signed else 2**bits - 1 - (1 if narrow else 0)
    return (np.round(np.clip(x / s, lo, hi)) * s).astype(np.float32)


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, name, v):
        self.inits.append(numpy_helper.from_array(np.asarray(v, dtype=np.float32), name))
        return name

    def quant(self, name, x, scale, bits, signed, narrow):
        ins = [x, self.const(name + ".scale", scale), self.const(name + ".zeropt", 0.0),
               self.const(name + ".bitwidth", float(bits))]
        out = name + "_output_0"
        self.nodes.append(helper.make_node("Quant", ins, [out], name=name, domain=QONNX,
                                           signed=int(signed), narrow=int(narrow),
                                           rounding_mode="ROUND"))
        return out


def main():
    src = onnx.load(os.path.join(ROOT, "models", "jet_mlp.onnx"))
    W = {i.name: numpy_helper.to_array(i).astype(np.float32) for i in src.graph.initializer}
    x = np.load(os.path.join(ROOT, "models", "jet_test_x.npy")).astype(np.float32)

    b = Builder()
    s_in = 2.0**-4
    cur = b.quant("/input_quant/Quant", "input", s_in, 8, True, False)
    a = np_quant(x, s_in, 8, True, False)
    layers = [("fc1", 6, False), ("fc2", 6, True), ("fc3", 6, False), ("fc4", 8, False)]
    for i, (name, wbits, per_channel) in enumerate(layers):
        w, bias = W[f"{name}.weight"], W[f"{name}.bias"]
        wmax = (2 ** (wbits - 1)) - 1
        if per_channel:
            s_w = np.array([pow2_scale(np.abs(r).max(), wmax) for r in w], np.float32).reshape(-1, 1)
        else:
            s_w = np.float32(pow2_scale(np.abs(w).max(), wmax))
        wq = np_quant(w, s_w, wbits, True, True)
        wname = b.const(f"{name}.weight", w)
        wq_name = b.quant(f"/{name}/weight_quant/Quant", wname, s_w, wbits, True, True)
        # Bias at the product's scale (Brevitas' Int bias quantizer): per channel when s_w is.
        s_b = (np.float32(s_in) * s_w).reshape(-1) if per_channel else np.float32(s_in) * s_w
        bq = np_quant(bias, s_b, 16, True, False)
        bname = b.const(f"{name}.bias", bias)
        bq_name = b.quant(f"/{name}/bias_quant/Quant", bname, s_b, 16, True, False)
        out = f"/{name}/Gemm_output_0"
        b.nodes.append(helper.make_node("Gemm", [cur, wq_name, bq_name], [out], name=f"/{name}/Gemm",
                                        alpha=1.0, beta=1.0, transB=1))
        y = a @ wq.T + bq
        if i == len(layers) - 1:
            cur = out
            break
        relu = f"/relu{i + 1}/Relu_output_0"
        b.nodes.append(helper.make_node("Relu", [out], [relu], name=f"/relu{i + 1}/Relu"))
        y = np.maximum(y, 0)
        s_act = pow2_scale(float(np.percentile(y, 99.9)), 255)
        cur = b.quant(f"/relu{i + 1}/act_quant/Quant", relu, s_act, 8, False, False)
        a = np_quant(y, s_act, 8, False, False)
        s_in = s_act
    logits = helper.make_node("Identity", [cur], ["logits"], name="/output/Identity")
    b.nodes.append(logits)
    g = helper.make_graph(
        b.nodes, "jet_qmlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 5])],
        initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QONNX, 1)],
                          producer_name="triad scripts/zoo/qonnx_models.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(ROOT, "models", "jet_qmlp.onnx")
    onnx.save(m, path)

    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    from qonnx.transformation.infer_shapes import InferShapes

    fixed = onnx.ModelProto()
    fixed.CopyFrom(m)  # QONNX's executor wants static shapes: the batch of the test set
    for v in list(fixed.graph.input) + list(fixed.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = x.shape[0]
    mw = ModelWrapper(fixed).transform(InferShapes())
    ref = np.asarray(execute_onnx(mw, {"input": x})["logits"], dtype=np.float32)
    np.save(os.path.join(ROOT, "models", "ref", "jet_qmlp_output.npy"), ref)
    labels = np.load(os.path.join(ROOT, "models", "jet_test_y.npy"))
    acc = float((ref.argmax(1) == labels).mean())
    print(f"{path}: {os.path.getsize(path)} bytes; top-1 on jet_test {acc:.4f}; "
          f"max |qonnx - numpy model| {float(np.abs(ref - y).max()):g}")


if __name__ == "__main__":
    main()
