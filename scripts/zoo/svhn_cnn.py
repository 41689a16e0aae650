#!/usr/bin/env python3
"""Writes the SVHN CNN of hls4ml's tutorial with fixed-seed random weights (no training data).

Architecture (hls4ml tutorial part 6, "io_stream" CNN): input 3x32x32; three blocks of
Conv 3x3 (16, 16, 24 channels, valid padding) + BatchNormalization + ReLU + MaxPool 2x2;
Flatten; Dense 42 + BatchNormalization + ReLU; Dense 64 + BatchNormalization + ReLU; Dense 10;
Softmax. Weights are He-scaled normal draws and BatchNormalization statistics are made so that
every layer's activations stay in a few units (as a trained network's do), so fixed<16,6> is a
fair test of the arithmetic. The images are uniform in [0, 1).

Usage: svhn_cnn.py MODEL.onnx [--images N IMAGES.npy] [--seed S]
Needs numpy and onnx (the project's .venv has both).
"""
import argparse
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(seed):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def bn(x, name, c):
        # Statistics chosen so that the normalized output has unit scale per channel.
        scale = rng.uniform(0.8, 1.2, c)
        bias = rng.uniform(-0.1, 0.3, c)
        mean = rng.uniform(-0.2, 0.2, c)
        var = rng.uniform(0.5, 1.5, c)
        ins = [x] + [const(f"{name}.{k}", v) for k, v in
                     (("scale", scale), ("bias", bias), ("mean", mean), ("var", var))]
        nodes.append(helper.make_node("BatchNormalization", ins, [name + "_out"], name=name,
                                      epsilon=1e-3))
        return name + "_out"

    def relu(x, name):
        nodes.append(helper.make_node("Relu", [x], [name + "_out"], name=name))
        return name + "_out"

    x = "input"
    c = 3
    for i, co in enumerate((16, 16, 24), 1):
        w = rng.normal(0, np.sqrt(2.0 / (c * 9)), (co, c, 3, 3))
        b = rng.normal(0, 0.05, co)
        nodes.append(helper.make_node("Conv", [x, const(f"conv{i}.w", w), const(f"conv{i}.b", b)],
                                      [f"conv{i}_out"], name=f"/conv{i}/Conv",
                                      kernel_shape=[3, 3], pads=[0, 0, 0, 0]))
        x = relu(bn(f"conv{i}_out", f"/bn{i}/BatchNormalization", co), f"/relu{i}/Relu")
        nodes.append(helper.make_node("MaxPool", [x], [f"pool{i}_out"], name=f"/pool{i}/MaxPool",
                                      kernel_shape=[2, 2], strides=[2, 2]))
        x = f"pool{i}_out"
        c = co
    nodes.append(helper.make_node("Flatten", [x], ["flat"], name="/Flatten", axis=1))
    x, k = "flat", 24 * 2 * 2
    for i, n in enumerate((42, 64, 10), 1):
        w = rng.normal(0, np.sqrt(2.0 / k), (n, k))
        b = rng.normal(0, 0.05, n)
        nodes.append(helper.make_node("Gemm", [x, const(f"fc{i}.w", w), const(f"fc{i}.b", b)],
                                      [f"fc{i}_out"], name=f"/fc{i}/Gemm", transB=1))
        x = f"fc{i}_out"
        if n != 10:
            x = relu(bn(x, f"/bnd{i}/BatchNormalization", n), f"/relud{i}/Relu")
        k = n
    nodes.append(helper.make_node("Softmax", [x], ["probs"], name="/Softmax", axis=1))
    g = helper.make_graph(
        nodes, "svhn_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="triad scripts/zoo/svhn_cnn.py")
    onnx.checker.check_model(m)
    return m


def atomic_save(path, write):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--images", nargs=2, metavar=("N", "FILE"))
    ap.add_argument("--seed", type=int, default=20261124)
    a = ap.parse_args()
    m = build(a.seed)
    atomic_save(a.model, lambda p: onnx.save(m, p))
    if a.images:
        n = int(a.images[0])
        x = np.random.default_rng(a.seed + 1).random((n, 3, 32, 32), dtype=np.float32)
        atomic_save(a.images[1], lambda p: np.save(p, x))


if __name__ == "__main__":
    main()
