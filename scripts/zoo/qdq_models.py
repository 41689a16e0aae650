#!/usr/bin/env python3
"""QDQ models from ONNX Runtime's post-training quantization (quantize_static) of jet_mlp.

    /tmp/qonnx-venv/bin/python scripts/zoo/qdq_models.py --quantize   # recent onnx + onnxruntime
    .venv/bin/python scripts/zoo/qdq_models.py --reference            # the project's ORT 1.20.1

(the project's .venv has onnx 1.13, with which onnxruntime.quantization does not import) write,
from models/jet_mlp.onnx calibrated on the first 500 jets of models/jet_test_x.npy:

  models/jet_mlp_qdq.onnx     QDQ format, per tensor: activations uint8, weights int8
  models/jet_mlp_qdq_pc.onnx  QDQ format, per channel weights (int8), activations int8

and for each models/ref/<name>_output.npy: ONNX Runtime's outputs on all 2000 jets with graph
optimizations off (ORT_DISABLE_ALL: QuantizeLinear/DequantizeLinear run as the ONNX spec
defines them, in float; with optimizations on, ORT fuses them into integer QLinear kernels that
round differently).
"""
import os
import sys

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_ort(path, x, opt):
    so = ort.SessionOptions()
    so.graph_optimization_level = opt
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {"input": x})[0]


NAMES = ["jet_mlp_qdq", "jet_mlp_qdq_pc"]


def quantize(x):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self, x):
            self.it = iter([{"input": x[i : i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.it, None)

    src = os.path.join(ROOT, "models", "jet_mlp.onnx")
    kws = [dict(per_channel=False, activation_type=QuantType.QUInt8),
           dict(per_channel=True, activation_type=QuantType.QInt8)]
    for name, kw in zip(NAMES, kws):
        out = os.path.join(ROOT, "models", name + ".onnx")
        quantize_static(src, out, Reader(x[:500]), quant_format=QuantFormat.QDQ,
                        weight_type=QuantType.QInt8, **kw)
        print(f"{out}: {os.path.getsize(out)} bytes")


def main():
    x = np.load(os.path.join(ROOT, "models", "jet_test_x.npy")).astype(np.float32)
    y = np.load(os.path.join(ROOT, "models", "jet_test_y.npy"))
    if "--quantize" in sys.argv:
        quantize(x)
    if "--reference" not in sys.argv:
        return
    for name in NAMES:
        out = os.path.join(ROOT, "models", name + ".onnx")
        ref = run_ort(out, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        fused = run_ort(out, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        np.save(os.path.join(ROOT, "models", "ref", name + "_output.npy"), ref.astype(np.float32))
        print(f"{name}: onnxruntime {ort.__version__}, top-1 {float((ref.argmax(1) == y).mean()):.4f}, "
              f"max |unfused - fused ORT| {float(np.abs(ref - fused).max()):g}")


if __name__ == "__main__":
    main()
