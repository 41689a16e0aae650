#!/usr/bin/env python3
"""models/jet_brevitas_mlp.onnx: a Brevitas MLP exported with brevitas.export.export_qonnx.

jet_mlp's trained float weights (16-64-32-32-5) in Brevitas layers with power-of-two
("FixedPoint") quantizers: QuantIdentity int8 on the input, QuantLinear with int6 weights and
int16 biases, QuantReLU uint8; activation scales calibrated (brevitas.graph.calibrate) on the
first 500 jets. Writes the model and models/ref/jet_brevitas_mlp_output.npy, QONNX's executor on
all 2,000 jets. Needs Brevitas and qonnx (not Triad dependencies):

    python3 -m venv /tmp/brevitas-venv && /tmp/brevitas-venv/bin/pip install "brevitas<0.11" qonnx
    /tmp/brevitas-venv/bin/python scripts/zoo/brevitas_mlp.py

(brevitas 0.10.3, torch 2.12.1, qonnx 1.0.0 wrote the shipped files).
"""
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper

import brevitas.nn as qnn
from brevitas.export import export_qonnx
from brevitas.graph.calibrate import calibration_mode
from brevitas.quant import Int8ActPerTensorFixedPoint, Int8WeightPerTensorFixedPoint, Int16Bias
from brevitas.quant import Uint8ActPerTensorFixedPoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = qnn.QuantIdentity(act_quant=Int8ActPerTensorFixedPoint, return_quant_tensor=True)
        sizes = [(16, 64), (64, 32), (32, 32), (32, 5)]
        self.fcs = torch.nn.ModuleList(
            qnn.QuantLinear(i, o, bias=True, weight_quant=Int8WeightPerTensorFixedPoint,
                            weight_bit_width=6, bias_quant=Int16Bias, return_quant_tensor=True)
            for i, o in sizes)
        self.acts = torch.nn.ModuleList(
            qnn.QuantReLU(act_quant=Uint8ActPerTensorFixedPoint, return_quant_tensor=True)
            for _ in sizes[:-1])

    def forward(self, x):
        x = self.inp(x)
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < len(self.acts):
                x = self.acts[i](x)
        return x.value if hasattr(x, "value") else x


def main():
    torch.manual_seed(0)
    src = onnx.load(os.path.join(ROOT, "models", "jet_mlp.onnx"))
    W = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in src.graph.initializer}
    x = np.load(os.path.join(ROOT, "models", "jet_test_x.npy")).astype(np.float32)
    labels = np.load(os.path.join(ROOT, "models", "jet_test_y.npy"))
    m = Mlp()
    with torch.no_grad():
        for k, fc in enumerate(m.fcs):
            fc.weight.copy_(W[f"fc{k + 1}.weight"])
            fc.bias.copy_(W[f"fc{k + 1}.bias"])
    m.eval()
    with torch.no_grad(), calibration_mode(m):
        for i in range(0, 500, 50):
            m(torch.from_numpy(x[i : i + 50]))
    m.eval()
    path = os.path.join(ROOT, "models", "jet_brevitas_mlp.onnx")
    export_qonnx(m, torch.from_numpy(x[:1]), export_path=path, dynamic_axes={"inp.0": {0: "batch"}},
                 input_names=["inp.0"], dynamo=False,
                 opset_version=17)  # Triad reads opsets up to 18
    with torch.no_grad():
        y_torch = m(torch.from_numpy(x)).numpy()

    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_shapes import InferShapes

    model = onnx.load(path)
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    del fixed.graph.value_info[:]
    for v in [fixed.graph.input[0]] + list(fixed.graph.output):  # the rest: initializers
        v.type.tensor_type.shape.dim[0].dim_value = x.shape[0]
    mw = ModelWrapper(fixed).transform(InferShapes())
    name_in, name_out = mw.graph.input[0].name, mw.graph.output[0].name
    ref = np.asarray(execute_onnx(mw, {name_in: x})[name_out], dtype=np.float32)
    np.save(os.path.join(ROOT, "models", "ref", "jet_brevitas_mlp_output.npy"), ref)
    print(f"{path}: {os.path.getsize(path)} bytes, nodes "
          f"{sorted(set(n.op_type for n in model.graph.node))}; top-1 {float((ref.argmax(1) == labels).mean()):.4f}; "
          f"max |qonnx - brevitas| {float(np.abs(ref - y_torch).max()):g}")


if __name__ == "__main__":
    main()
