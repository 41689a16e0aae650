"""Writes the models and inputs of tests/cli/dims_test.sh into the folder given, and the
outputs ONNX Runtime computes for them (*_ort.npy), to compare Triad's against.

mlp.onnx  input[batch_size, 20] -> Gemm, Relu, Gemm, Softmax -> probs[batch_size, 5]: a PyTorch
          export with a dynamic batch axis (a named first dimension).
seq.onnx  x[?, seq, 6] (unnamed batch, named sequence), mask[?, seq, 1] -> MatMul, Add, Relu, Mul
          -> y[?, seq, 4].
tok.onnx  tokens[batch, seq, 6] -> MatMul, Relu -> out[batch, seq, 4]: one input, for bench."""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper as nh

os.chdir(sys.argv[1])
rng = np.random.default_rng(7)


def save(nodes, inputs, outputs, inits, name):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="pytorch")
    m.ir_version = 8
    open(f"{name}.onnx", "wb").write(m.SerializeToString())


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


save([h.make_node("Gemm", ["input", "W1", "B1"], ["h"], transB=1, name="/fc1/Gemm"),
      h.make_node("Relu", ["h"], ["r"], name="/relu/Relu"),
      h.make_node("Gemm", ["r", "W2", "B2"], ["logits"], transB=1, name="/fc2/Gemm"),
      h.make_node("Softmax", ["logits"], ["probs"], axis=1, name="/softmax/Softmax")],
     [h.make_tensor_value_info("input", T.FLOAT, ["batch_size", 20])],
     [h.make_tensor_value_info("probs", T.FLOAT, ["batch_size", 5])],
     [nh.from_array(f32(16, 20) * 0.3, "W1"), nh.from_array(f32(16) * 0.1, "B1"),
      nh.from_array(f32(5, 16) * 0.3, "W2"), nh.from_array(f32(5) * 0.1, "B2")], "mlp")

x = h.make_tensor_value_info("x", T.FLOAT, [None, "seq", 6])
mask = h.make_tensor_value_info("mask", T.FLOAT, [None, "seq", 1])
save([h.make_node("MatMul", ["x", "W"], ["xw"], name="/proj/MatMul"),
      h.make_node("Add", ["xw", "B"], ["xb"], name="/proj/Add"),
      h.make_node("Relu", ["xb"], ["xr"], name="/act/Relu"),
      h.make_node("Mul", ["xr", "mask"], ["y"], name="/mask/Mul")],
     [x, mask], [h.make_tensor_value_info("y", T.FLOAT, [None, "seq", 4])],
     [nh.from_array(f32(6, 4), "W"), nh.from_array(f32(4) * 0.1, "B")], "seq")

save([h.make_node("MatMul", ["tokens", "W"], ["tw"], name="/proj/MatMul"),
      h.make_node("Relu", ["tw"], ["out"], name="/act/Relu")],
     [h.make_tensor_value_info("tokens", T.FLOAT, ["batch", "seq", 6])],
     [h.make_tensor_value_info("out", T.FLOAT, ["batch", "seq", 4])],
     [nh.from_array(f32(6, 4), "W")], "tok")

mlp = ort.InferenceSession("mlp.onnx", providers=["CPUExecutionProvider"])
seq = ort.InferenceSession("seq.onnx", providers=["CPUExecutionProvider"])
for rows in (1, 4):
    a = f32(rows, 20)
    np.save(f"x{rows}.npy", a)
    np.save(f"x{rows}_ort.npy", mlp.run(None, {"input": a})[0])
    xs, ms = f32(rows, 7, 6), (rng.random((rows, 7, 1)) > 0.3).astype(np.float32)
    np.save(f"s{rows}.npy", xs)
    np.save(f"m{rows}.npy", ms)
    np.save(f"s{rows}_ort.npy", seq.run(None, {"x": xs, "mask": ms})[0])
np.save("x4_21.npy", f32(4, 21))         # a fixed dimension that does not fit
np.save("m4_seq5.npy", np.ones((4, 5, 1), np.float32))  # seq 5 beside x's 7
np.save("labels4.npy", np.array([0, 1, 2, 3], np.int64))
np.save("s6.npy", f32(6, 7, 6))          # bench --data: 6 rows of seq 7
