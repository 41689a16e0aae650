#!/usr/bin/env python3
"""Node tests for QONNX's Quant, BipolarQuant and Trunc (tests/data/qonnx/<case>/).

Each case is a one-node ONNX model (model.onnx), its input (input_0.npy) and the output of
QONNX's own executor (qonnx.core.onnx_exec.execute_onnx) on it (output_0.npy): the reference
that tests/unit/ops_qonnx_test.cpp holds Triad's interpreter and CPU target to, bit for bit.

QONNX is not a dependency of Triad: run this with a throwaway venv that has it, e.g.

    python3 -m venv /tmp/qonnx-venv && /tmp/qonnx-venv/bin/pip install qonnx
    /tmp/qonnx-venv/bin/python scripts/zoo/qonnx_node_tests.py tests/data/qonnx

(qonnx 1.0.0, numpy 2.4 wrote the shipped files). Rounding mode ROUND_TO_ZERO, which Brevitas
names but QONNX's executor does not, is computed here as numpy's fix (= DOWN).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QONNX = "qonnx.custom_op.general"


def inputs_for(shape, scale, rng):
    """Values around and beyond the grid: ties (k + 1/2) · scale, exact grid points, normals."""
    n = int(np.prod(shape))
    s = float(np.max(np.abs(scale)))
    ties = (np.arange(n) - n // 2 + 0.5).astype(np.float32) * np.float32(s)
    grid = (np.arange(n) - n // 2).astype(np.float32) * np.float32(s)
    wide = rng.standard_normal(n).astype(np.float32) * np.float32(40 * s)
    pick = rng.integers(0, 3, n)
    x = np.where(pick == 0, ties, np.where(pick == 1, grid, wide)).astype(np.float32)
    x[0] = np.float32(1e9)
    x[1] = np.float32(-1e9)
    x[2] = np.float32(-0.0)
    return x.reshape(shape)


def make_model(op, domain, opset_version, x_shape, consts, attrs, n_dyn_inputs=1):
    """One node: input X (f32), the other inputs as initializers, output Y."""
    names = ["X"] + [c[0] for c in consts]
    node = helper.make_node(op, names, ["Y"], name=f"/{op.lower()}0", domain=domain, **attrs)
    inits = [numpy_helper.from_array(np.asarray(v), name) for name, v in consts]
    g = helper.make_graph(
        [node],
        "qonnx_node_test",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    m = helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(domain, opset_version)],
        producer_name="triad-qonnx-node-tests",
    )
    m.ir_version = 8
    return m


def reference(model, x, fallback=None):
    if fallback is not None:
        return fallback(x)
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    out = execute_onnx(ModelWrapper(model), {"X": x})
    return np.asarray(out["Y"])


def f32(v):
    return np.asarray(v, dtype=np.float32)


def cases(rng):
    q = lambda scale, zp, bits: [("scale", f32(scale)), ("zeropt", f32(zp)), ("bitwidth", bits)]
    yield "quant_int8_round", "Quant", QONNX, 1, [2, 3, 8], q(0.05, 0, f32(8)), dict(signed=1, narrow=0, rounding_mode="ROUND")
    yield "quant_int8_narrow", "Quant", QONNX, 1, [4, 16], q(0.125, 0, f32(8)), dict(signed=1, narrow=1, rounding_mode="ROUND")
    yield "quant_uint4_zp_floor", "Quant", QONNX, 1, [4, 16], q(0.25, 3, f32(4)), dict(signed=0, narrow=0, rounding_mode="FLOOR")
    yield "quant_uint5_narrow_ceil", "Quant", QONNX, 1, [4, 16], q(0.3, 0, f32(5)), dict(signed=0, narrow=1, rounding_mode="CEIL")
    yield "quant_per_channel", "Quant", QONNX, 1, [2, 3, 4, 4], q(
        np.array([0.5, 0.0625, 0.1], np.float32).reshape(1, 3, 1, 1),
        np.array([0, 1, -2], np.float32).reshape(1, 3, 1, 1), f32(6)), dict(signed=1, narrow=0)
    yield "quant_per_row", "Quant", QONNX, 1, [5, 8], q(
        (np.arange(5, dtype=np.float32) + 1).reshape(5, 1) / np.float32(16), f32(0), f32(4)), dict(signed=1, narrow=1)
    yield "quant_bipolar_1bit", "Quant", QONNX, 1, [3, 10], q(0.5, 0, f32(1)), dict(signed=1, narrow=0)
    yield "quant_unsigned_1bit", "Quant", QONNX, 1, [3, 10], q(0.5, 0, f32(1)), dict(signed=0, narrow=0)
    yield "quant_int32", "Quant", QONNX, 1, [4, 16], q(2.0**-20, 0, f32(32)), dict(signed=1, narrow=0)
    yield "quant_int16_bitwidth_i64", "Quant", QONNX, 1, [4, 16], q(0.001, 0, np.array(16, np.int64)), dict(signed=1, narrow=1)
    for mode in ["half_even", "UP", "DOWN", "HALF_UP", "HALF_DOWN"]:
        yield f"quant_mode_{mode.lower()}", "Quant", QONNX, 1, [4, 16], q(0.25, 0, f32(6)), dict(signed=1, narrow=0, rounding_mode=mode)
    yield "quant_domain_finn", "Quant", "finn.custom_op.general", 1, [2, 16], q(0.25, 0, f32(4)), dict(signed=1, narrow=0)
    yield "quant_domain_brevitas", "Quant", "onnx.brevitas", 1, [2, 16], q(0.25, 0, f32(4)), dict(signed=1, narrow=0)
    yield "bipolar_quant", "BipolarQuant", QONNX, 1, [2, 4, 6], [("scale", f32(np.array([0.5, 1, 2, 0.25]).reshape(1, 4, 1)))], {}
    yield "trunc_v2", "Trunc", QONNX, 2, [4, 16], [
        ("scale", f32(0.125)), ("zeropt", f32(0)), ("in_bits", f32(12)), ("out_scale", f32(1.0)), ("out_bits", f32(6))], dict(signed=1, narrow=0, rounding_mode="FLOOR")
    yield "trunc_v2_round", "Trunc", QONNX, 2, [4, 16], [
        ("scale", f32(0.0625)), ("zeropt", f32(2)), ("in_bits", f32(10)), ("out_scale", f32(0.5)), ("out_bits", f32(4))], dict(signed=0, narrow=0, rounding_mode="ROUND")
    yield "trunc_v1", "Trunc", QONNX, 1, [4, 16], [
        ("scale", f32(0.125)), ("zeropt", f32(0)), ("in_bits", f32(12)), ("out_bits", f32(8))], dict(rounding_mode="FLOOR")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/qonnx"
    rng = np.random.default_rng(15)
    for name, op, domain, ver, shape, consts, attrs in cases(rng):
        m = make_model(op, domain, ver, shape, consts, attrs)
        scale = consts[0][1]
        x = inputs_for(shape, scale, rng)
        fallback = None
        if attrs.get("rounding_mode", "").upper() == "ROUND_TO_ZERO":
            raise SystemExit("ROUND_TO_ZERO cases are computed by Triad's unit test, not here")
        y = reference(m, x, fallback).astype(np.float32)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input_0.npy"), x)
        np.save(os.path.join(d, "output_0.npy"), y)
        print(f"{name}: {op} {shape} -> {list(y.shape)}")


if __name__ == "__main__":
    main()
