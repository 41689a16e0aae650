"""Fixtures of the triad package's tests (run by CTest's `python` label, python/CMakeLists.txt):
the in-build package on PYTHONPATH, the `triad` command in TRIAD_CLI, the shipped models, and
small ONNX models written with onnx.helper (valid, broken and unsupported ones)."""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def _model(nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape, t=T.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


@pytest.fixture(scope="session")
def models():
    return MODELS


@pytest.fixture(scope="session")
def cli():
    """Runs the `triad` command: cli("quantize", ...) -> CompletedProcess."""
    exe = os.environ.get("TRIAD_CLI") or shutil.which("triad")
    if not exe:
        pytest.skip("TRIAD_CLI is not set (CTest sets it)")

    def run(*args, check=True):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"triad {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
        return p

    run.path = exe
    return run


@pytest.fixture(scope="session")
def small(tmp_path_factory):
    """Small models: mlp.onnx (Gemm, Relu, Gemm; dynamic batch), broken.onnx (a Conv with
    strides 0), exp.onnx (Exp: fine on the CPU, unsupported on the FPGA), unknown_op.onnx."""
    d = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(7)
    w1 = nh.from_array(rng.normal(0, 0.5, (8, 4)).astype(np.float32), "w1")
    b1 = nh.from_array(rng.normal(0, 0.1, (8,)).astype(np.float32), "b1")
    w2 = nh.from_array(rng.normal(0, 0.5, (3, 8)).astype(np.float32), "w2")
    b2 = nh.from_array(rng.normal(0, 0.1, (3,)).astype(np.float32), "b2")
    mlp = _model([h.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
                  h.make_node("Relu", ["h"], ["r"], name="relu"),
                  h.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1, name="fc2")],
                 [_vi("x", ["N", 4])], [_vi("y", ["N", 3])], [w1, b1, w2, b2])
    onnx.save(mlp, d / "mlp.onnx")
    w = nh.from_array(np.ones((2, 1, 3, 3), np.float32), "W")
    onnx.save(_model([h.make_node("Conv", ["x", "W"], ["y"], strides=[0, 0], name="conv0")],
                     [_vi("x", [1, 1, 8, 8])], [_vi("y", [1, 2, 6, 6])], [w]), d / "broken.onnx")
    onnx.save(_model([h.make_node("Exp", ["x"], ["y"], name="act")], [_vi("x", [2, 4])],
                     [_vi("y", [2, 4])]), d / "exp.onnx")
    onnx.save(_model([h.make_node("Frobnicate", ["x"], ["y"], name="frob")], [_vi("x", [4])],
                     [_vi("y", [4])]), d / "unknown_op.onnx")
    (d / "truncated.onnx").write_bytes(mlp.SerializeToString()[:50])
    return d
