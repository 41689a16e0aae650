#!/usr/bin/env python3
"""RNN, GRU and LSTM on Triad against ONNX Runtime, an independent implementation.

    .venv-peers/bin/python tests/recurrent_vs_ort_test.py PATH/TO/triad

Models are built here with onnx's helper at opsets 14 and 22 (random weights, seeded):
bidirectional, with sequence_lens of different lengths per batch row (ONNX's reference evaluator
ignores sequence_lens; ONNX Runtime defines what the outputs past a row's length are), initial
states, LSTM peepholes and clip, GRU with both linear_before_reset settings, an RNN with
non-default activations. Each runs through `triad run` on the interpreter and the CPU target;
every output must be within 1e-5 of ONNX Runtime's. (ONNX Runtime refuses layout 1, which the
node suite's test_*_batchwise cases and the unit tests cover.) Plain asserts; exit 0 on success.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SEQ, BATCH, INPUT, HIDDEN, DIRS = 6, 3, 5, 4, 2


def build(op, gates, opset, attrs, rng, peepholes=False):
    shape_w = (DIRS, gates * HIDDEN, INPUT)
    inits = [
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape_w).astype(np.float32), "W"),
        numpy_helper.from_array(
            rng.uniform(-0.5, 0.5, (DIRS, gates * HIDDEN, HIDDEN)).astype(np.float32), "R"
        ),
        numpy_helper.from_array(
            rng.uniform(-0.5, 0.5, (DIRS, 2 * gates * HIDDEN)).astype(np.float32), "B"
        ),
    ]
    inputs = ["X", "W", "R", "B", "lens", "h0"]
    state = [DIRS, BATCH, HIDDEN]
    graph_inputs = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT]),
        helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]),
        helper.make_tensor_value_info("h0", TensorProto.FLOAT, state),
    ]
    feeds = {
        "X": rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32),
        "lens": np.array([SEQ, 3, 1], dtype=np.int32),
        "h0": (0.3 * rng.standard_normal(state)).astype(np.float32),
    }
    outputs = ["Y", "Y_h"]
    if op == "LSTM":
        inputs.append("c0")
        graph_inputs.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, state))
        feeds["c0"] = (0.3 * rng.standard_normal(state)).astype(np.float32)
        outputs.append("Y_c")
        if peepholes:
            inputs.append("P")
            inits.append(
                numpy_helper.from_array(
                    rng.uniform(-0.5, 0.5, (DIRS, 3 * HIDDEN)).astype(np.float32), "P"
                )
            )
    node = helper.make_node(
        op, inputs, outputs, name=f"{op.lower()}0", hidden_size=HIDDEN,
        direction="bidirectional", **attrs
    )
    graph = helper.make_graph(
        [node], "recurrent", graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model, feeds


def main() -> int:
    triad = sys.argv[1]
    rng = np.random.default_rng(2026)
    cases = [
        ("LSTM", 4, 22, {}, True),
        ("LSTM", 4, 14, {"clip": 3.0, "input_forget": 1}, False),
        ("GRU", 3, 22, {"linear_before_reset": 1}, False),
        ("GRU", 3, 14, {}, False),
        ("RNN", 1, 22, {"activations": ["Relu", "Tanh"]}, False),
    ]
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for op, gates, opset, attrs, peepholes in cases:
            model, feeds = build(op, gates, opset, attrs, rng, peepholes)
            path = tmp / f"{op}_{opset}.onnx"
            onnx.save(model, str(path))
            want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
                None, feeds
            )
            args = []
            for name, value in feeds.items():
                np.save(tmp / f"in_{name}.npy", value)
                args += ["--input", f"{name}={tmp / f'in_{name}.npy'}"]
            for target in ("interp", "cpu"):
                outs = [tmp / f"out{k}.npy" for k in range(len(want))]
                cmd = [triad, "run", str(path), "--target", target] + args
                for o in outs:
                    cmd += ["--output", str(o)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                assert r.returncode == 0, f"{op} opset {opset} {attrs} on {target}: {r.stderr}"
                for k, o in enumerate(outs):
                    got = np.load(o)
                    assert got.shape == want[k].shape, (op, target, k, got.shape)
                    err = float(np.abs(got - want[k]).max())
                    assert err <= 1e-5, f"{op} opset {opset} {attrs} on {target}, output {k}: {err}"
                    checked += 1
                print(f"{op} opset {opset} {attrs} on {target}: within 1e-5 of ONNX Runtime "
                      f"{ort.__version__}")
    print(f"recurrent_vs_ort: {checked} outputs checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
