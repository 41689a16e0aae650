"""Writes the hostile models and tensor files of tests/cli/hostile_test.sh into the folder given
(the classes an outside fuzzer found: libonnx crashes, external data outside the folder, sizes
that allocate before validation, quadratic passes, malformed graph interfaces)."""
import os
import sys

import numpy as np
import onnx
os.chdir(sys.argv[1])
from onnx import helper as h, TensorProto as T, numpy_helper as nh
def model(nodes, inputs, outputs, inits=(), opset=13, name=None):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m
def save(m, f): open(f, "wb").write(m.SerializeToString())
X = lambda n, s, t=T.FLOAT: h.make_tensor_value_info(n, t, s)
# 1. Constant raw_data shorter than dims
c = h.make_tensor("v", T.FLOAT, [1000], vals=np.zeros(1000, np.float32).tobytes(), raw=True)
c.raw_data = c.raw_data[:17]
save(model([h.make_node("Constant", [], ["c"], value=c, name="konst"), h.make_node("Add", ["x", "c"], ["y"], name="add")], [X("x", [1000])], [X("y", [1000])]), "const_short.onnx")
# 2. Scan with subgraph
body = h.make_graph([h.make_node("Identity", ["a"], ["b"])], "body", [X("a", [1])], [X("b", [1])])
save(model([h.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1, name="scan")], [X("x", [2, 1])], [X("y", [2, 1])]), "scan.onnx")
# Relu with graph attr
save(model([h.make_node("Relu", ["x"], ["y"], body=body, name="relu_g")], [X("x", [2, 1])], [X("y", [2, 1])]), "relu_graph_attr.onnx")
# 3. strides 0
W = nh.from_array(np.ones((2, 1, 3, 3), np.float32), "W")
save(model([h.make_node("Conv", ["x", "W"], ["y"], strides=[0, 0], name="conv0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 2, 6, 6])], [W]), "conv_stride0.onnx")
save(model([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 1], name="mp0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 1, 4, 4])]), "maxpool_stride0.onnx")
save(model([h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 0], name="ap0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 1, 4, 4])]), "avgpool_stride0.onnx")
save(model([h.make_node("Conv", ["x", "W"], ["y"], dilations=[0, 0], name="conv_d0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 2, 6, 6])], [W]), "conv_dil0.onnx")
save(model([h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[0, 0], name="mp_k0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 1, 4, 4])]), "maxpool_k0.onnx")
# 7. Conv weight rank 1
W1 = nh.from_array(np.ones((9,), np.float32), "W")
save(model([h.make_node("Conv", ["x", "W"], ["y"], name="conv_r1")], [X("x", [1, 1, 8, 8])], [X("y", [1, 2, 6, 6])], [W1]), "conv_w_rank1.onnx")
# Conv group 0
save(model([h.make_node("Conv", ["x", "W"], ["y"], group=0, name="conv_g0")], [X("x", [1, 1, 8, 8])], [X("y", [1, 2, 6, 6])], [W]), "conv_group0.onnx")
# 6. Expand huge
shp = nh.from_array(np.array([1 << 20, 1 << 20, 1 << 10], np.int64), "shp")
save(model([h.make_node("Expand", ["x", "shp"], ["y"], name="expand_big")], [X("x", [1])], [X("y", None)], [shp]), "expand_huge.onnx")
rep = nh.from_array(np.array([1 << 40], np.int64), "rep")
save(model([h.make_node("Tile", ["x", "rep"], ["y"], name="tile_big")], [X("x", [4])], [X("y", None)], [rep]), "tile_huge.onnx")
rep2 = nh.from_array(np.array([1 << 62, 4], np.int64), "rep")
save(model([h.make_node("Tile", ["x", "rep"], ["y"], name="tile_ovf")], [X("x", [4, 4])], [X("y", None)], [rep2]), "tile_overflow.onnx")
sc = nh.from_array(np.array([1, 1, np.nan, 2], np.float32), "sc")
save(model([h.make_node("Resize", ["x", "", "sc"], ["y"], name="resize_nan")], [X("x", [1, 1, 4, 4])], [X("y", None)], [sc]), "resize_nan.onnx")
sc2 = nh.from_array(np.array([1, 1, 1e30, 1e30], np.float32), "sc")
save(model([h.make_node("Resize", ["x", "", "sc"], ["y"], name="resize_big")], [X("x", [1, 1, 4, 4])], [X("y", None)], [sc2]), "resize_huge.onnx")
sc3 = nh.from_array(np.array([1, 1, -2, 2], np.float32), "sc")
save(model([h.make_node("Resize", ["x", "", "sc"], ["y"], name="resize_neg")], [X("x", [1, 1, 4, 4])], [X("y", None)], [sc3]), "resize_neg.onnx")
cos = nh.from_array(np.array([1 << 16, 1 << 16, 1 << 16], np.int64), "s")
save(model([h.make_node("ConstantOfShape", ["s"], ["y"], name="cos_big")], [], [X("y", None)], [cos]), "cos_huge.onnx")
# 5. dup outputs, sequence output, init as input contradiction
save(model([h.make_node("Relu", ["x"], ["y"], name="r")], [X("x", [4])], [X("y", [4]), X("y", [4])]), "dup_output.onnx")
seq = h.make_tensor_sequence_value_info("y", T.FLOAT, [4])
save(model([h.make_node("Relu", ["x"], ["y"], name="r")], [X("x", [4])], [seq]), "seq_output.onnx")
B = nh.from_array(np.ones((4,), np.float32), "B")
save(model([h.make_node("Add", ["x", "B"], ["y"], name="a")], [X("x", [4]), X("B", [7])], [X("y", [4])], [B]), "init_input_contradict.onnx")
# 2. external data
os.makedirs("ext", exist_ok=True)
def ext_model(loc, offset=None, length=None, fname="ext/m.onnx"):
    t = onnx.TensorProto(); t.name = "W"; t.data_type = T.FLOAT; t.dims.extend([4])
    t.data_location = T.EXTERNAL
    for k, v in [("location", loc), ("offset", offset), ("length", length)]:
        if v is not None:
            e = t.external_data.add(); e.key = k; e.value = v
    save(model([h.make_node("Add", ["x", "W"], ["y"], name="a")], [X("x", [4])], [X("y", [4])], [t]), fname)
open("ext/w.bin", "wb").write(np.arange(4, dtype=np.float32).tobytes())
ext_model("w.bin", fname="ext/ok.onnx")
if not os.path.lexists("ext/passwd"): os.symlink("/etc/passwd", "ext/passwd")
ext_model("passwd", fname="ext/symlink.onnx")
if not os.path.exists("ext/fifo"): os.mkfifo("ext/fifo")
ext_model("fifo", fname="ext/fifo.onnx")
os.makedirs("ext/dir", exist_ok=True)
ext_model("dir", fname="ext/dir.onnx")
if not os.path.lexists("ext/zero"): os.symlink("/dev/zero", "ext/zero")
ext_model("zero", fname="ext/zero.onnx")
ext_model("w.bin", offset="abc", fname="ext/nonnum.onnx")
ext_model("w.bin", offset="9223372036854775800", length="16", fname="ext/overflow.onnx")
ext_model("../ext/w.bin", fname="ext/dotdot.onnx")
ext_model("/etc/passwd", fname="ext/abs.onnx")
# npy
def npy(header, data=b"", f="x.npy", ver=1):
    hb = header.encode()
    if ver == 1:
        out = b"\x93NUMPY\x01\x00" + len(hb).to_bytes(2, "little") + hb
    else:
        out = b"\x93NUMPY\x02\x00" + len(hb).to_bytes(4, "little") + hb
    open(f, "wb").write(out + data)
npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000), }\n", b"", "huge.npy")
npy("{'descr': '<f4', 'fortran_order': False, 'shape': (12345678901234567890123, ), }\n", b"", "digits23.npy")
npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }\n", b"", "ovf.npy")
if not os.path.lexists("zero.npy"): os.symlink("/dev/zero", "zero.npy")
# identity chain 50000
n = 50000
nodes = [h.make_node("Identity", ["x" if i == 0 else f"t{i-1}"], [f"t{i}" if i < n - 1 else "y"], name=f"id{i}") for i in range(n)]
save(model(nodes, [X("x", [4])], [X("y", [4])]), "identity_chain.onnx")
np.save("x4.npy", np.ones(4, np.float32))

