"""Symbolic dimensions bound from the data (issue 15): triad.load without a batch keeps them
symbolic, each run binds them from its arrays' shapes and compiles once per binding (cached);
batch=/dims= fix them ahead of time, and an array that contradicts a fixed size raises the
error `triad run` exits with. Also the progress callbacks of quantize and profile."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import triad


def _ort(path, x):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def seq_model(tmp_path_factory):
    """y[N, seq] = sum over the last axis of x[N, seq, 3] * w: two symbolic dimensions."""
    d = tmp_path_factory.mktemp("dyn")
    w = nh.from_array(np.array([[0.5], [-1.0], [2.0]], np.float32), "w")
    g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                      h.make_node("Relu", ["m"], ["y"], name="relu")], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, ["N", "seq", 3])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["N", "seq", 1])], [w])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, d / "seq.onnx")
    return d / "seq.onnx"


def test_symbolic_dims_stay_symbolic(small, seq_model):
    m = triad.load(small / "mlp.onnx")
    assert m.batch is None and m.dynamic
    assert m.inputs[0]["shape"] == ["N", 4] and m.outputs[0]["shape"] == ["N", 3]
    info = m.inspect()
    assert info["inputs"][0]["shape"] == ["N", 4] and info["outputs"][0]["shape"] == ["N", 3]
    assert info["totals"]["macs"] == 4 * 8 + 8 * 3  # the layers of one row
    fixed = triad.load(small / "mlp.onnx", batch=5)
    assert fixed.batch == 5 and not fixed.dynamic and fixed.inputs[0]["shape"] == [5, 4]
    # A model with a symbolic dimension past the first loads; its shapes come with the data.
    s = triad.load(seq_model)
    assert s.inputs[0]["shape"] == ["N", "seq", 3]
    assert triad.load(seq_model, dims={"seq": 6}).inputs[0]["shape"] == ["N", 6, 3]


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_each_binding_compiles_once(models, target):
    x = np.load(models / "jet_test_x.npy")[:7]
    exe = triad.load(models / "jet_mlp.onnx").compile(target)
    assert exe.compiles == 0 and exe.bindings == []  # nothing to compile before the data
    for rows in (1, 4, 7):
        y = exe(x[:rows])
        assert y.shape == (rows, 5)
        np.testing.assert_allclose(y, _ort(models / "jet_mlp.onnx", x[:rows]), atol=1e-5)
    assert exe.compiles == 3
    assert exe.bindings == ["batch=1", "batch=4", "batch=7"]
    np.testing.assert_array_equal(exe(x[:4]), exe.run({"input": x[:4]})["probs"])
    assert exe.compiles == 3  # same shapes: the cached executable
    assert exe.outputs[0]["shape"] == [4, 5]  # the last run's binding


def test_two_symbolic_dims_bind_from_one_array(seq_model):
    exe = triad.load(seq_model).compile("cpu")
    rng = np.random.default_rng(1)
    for shape in ((2, 5, 3), (3, 5, 3), (2, 9, 3), (2, 5, 3)):
        x = rng.normal(size=shape).astype(np.float32)
        np.testing.assert_allclose(exe(x), _ort(seq_model, x), atol=1e-6)
    assert exe.bindings == ["N=2, seq=5", "N=2, seq=9", "N=3, seq=5"] and exe.compiles == 3


def test_fixed_sizes_compile_at_once_and_check_the_data(small, seq_model, cli, tmp_path):
    exe = triad.load(small / "mlp.onnx", batch=2).compile("cpu")
    assert exe.compiles == 1 and exe.bindings == [""]
    exe(np.ones((2, 4), np.float32))
    assert exe.compiles == 1
    # The contradiction is the CLI's run-time error (exit 6), naming the data instead of a file.
    x = np.ones((3, 4), np.float32)
    with pytest.raises(triad.RunError) as e:
        exe(x)
    np.save(tmp_path / "x.npy", x)
    p = cli("run", small / "mlp.onnx", "--batch", 2, "--input", tmp_path / "x.npy", check=False)
    assert p.returncode == e.value.exit_code == 6
    want = p.stderr.strip().replace(f"file '{tmp_path / 'x.npy'}'", "the tensor given")
    assert want == f"triad: {e.value.kind}: {e.value}"
    # dims= fixes a named dimension; the others still bind from the data.
    exe = triad.load(seq_model, dims={"seq": 5}).compile("interp")
    assert exe(np.ones((4, 5, 3), np.float32)).shape == (4, 5, 1)
    with pytest.raises(triad.RunError) as e:
        exe(np.ones((4, 6, 3), np.float32))
    assert "but --dim seq=5 was given" in str(e.value)
    with pytest.raises(triad.RunError) as e:
        exe(np.ones((4, 5), np.float32))  # a rank the model does not have
    assert "rank 3" in str(e.value)


def test_quantized_plans_per_binding(models):
    x = np.load(models / "jet_test_x.npy")[:50]
    q = triad.load(models / "jet_mlp.onnx").quantize(calibration=x)
    full = q.predict(x)
    np.testing.assert_array_equal(q.predict(x[:3]), full[:3])
    assert q.bindings == ["batch=3", "batch=50"]


def test_quantize_and_profile_report_per_layer(models):
    import triad.plot
    x = np.load(models / "jet_test_x.npy")[:20]
    m = triad.load(models / "jet_mlp.onnx")
    seen = []
    q = m.quantize(calibration=x, progress=lambda s, f: seen.append((s, f)))
    assert seen[0] == ("quantize", 0.0) and seen[-1] == ("quantize", 1.0) and len(seen) > 4
    assert [f for _, f in seen] == sorted(f for _, f in seen)
    assert {s for s, _ in seen} > {"quantize", "quantize:/fc1/Gemm"}
    seen.clear()
    triad.plot.profile(q, x, progress=lambda s, f: seen.append((s, f)))
    assert seen[0] == ("profile", 0.0) and seen[-1] == ("profile", 1.0) and len(seen) > 4
    assert [f for _, f in seen] == sorted(f for _, f in seen)
    assert "profile:emulator" in {s for s, _ in seen}
