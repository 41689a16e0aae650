#!/usr/bin/env python3
"""QDQ models from ONNX Runtime's post-training quantization (quantize_static) of jet_mlp.

    /tmp/qonnx-venv/bin/python scripts/zoo/qdq_models.py --quantize   # recent onnx + onnxruntime
    .venv/bin/python scripts/zoo/qdq_models.py --reference            # the project's ORT 1.20.1

(the project's .venv has onnx 1.13, with which onnxruntime.quantization does not import) write,
calibrated on the first 500 test jets / 300 test digits:

  models/jet_mlp_qdq.onnx       jet_mlp, QDQ format, per tensor: activations uint8, weights int8
  models/jet_mlp_qdq_pc.onnx    jet_mlp, per channel weights (int8), activations int8
  models/resblock_cnn_qdq.onnx  the residual CNN (Conv, BN, residual Add, GAP, Dense, Softmax),
                                per channel int8 weights, uint8 activations

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


NAMES = ["jet_mlp_qdq", "jet_mlp_qdq_pc", "resblock_cnn_qdq"]
# (model, source, inputs, labels)
SOURCES = {"jet_mlp_qdq": ("jet_mlp", "jet_test_x.npy", "jet_test_y.npy"),
           "jet_mlp_qdq_pc": ("jet_mlp", "jet_test_x.npy", "jet_test_y.npy"),
           "resblock_cnn_qdq": ("resblock_cnn", "digits_test_x.npy", "digits_test_y.npy")}


def quantize():
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self, x):
            self.it = iter([{"input": x[i : i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.it, None)

    kws = [dict(per_channel=False, activation_type=QuantType.QUInt8),
           dict(per_channel=True, activation_type=QuantType.QInt8),
           dict(per_channel=True, activation_type=QuantType.QUInt8)]
    for name, kw in zip(NAMES, kws):
        base, xs, _ = SOURCES[name]
        src = os.path.join(ROOT, "models", base + ".onnx")
        x = np.load(os.path.join(ROOT, "models", xs)).astype(np.float32)
        out = os.path.join(ROOT, "models", name + ".onnx")
        count = 500 if base == "jet_mlp" else 300
        quantize_static(src, out, Reader(x[:count]), quant_format=QuantFormat.QDQ,
                        weight_type=QuantType.QInt8, **kw)
        print(f"{out}: {os.path.getsize(out)} bytes")


def main():
    if "--quantize" in sys.argv:
        quantize()
    if "--reference" not in sys.argv:
        return
    for name in NAMES:
        _, xs, ys = SOURCES[name]
        x = np.load(os.path.join(ROOT, "models", xs)).astype(np.float32)
        y = np.load(os.path.join(ROOT, "models", ys))
        out = os.path.join(ROOT, "models", name + ".onnx")
        ref = run_ort(out, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        fused = run_ort(out, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        np.save(os.path.join(ROOT, "models", "ref", name + "_output.npy"), ref.astype(np.float32))
        print(f"{name}: onnxruntime {ort.__version__}, top-1 {float((ref.argmax(1) == y).mean()):.4f}, "
              f"max |unfused - fused ORT| {float(np.abs(ref - fused).max()):g}")


if __name__ == "__main__":
    main()
