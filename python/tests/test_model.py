"""triad.load, Model.inspect, Model.compile, Executable.run/__call__/profile on every target,
compared with the reference interpreter and with the `triad` command."""
import json
import threading
import time

import numpy as np
import pytest

import triad


def _x(models, batch):
    return np.load(models / "digits_test_x.npy")[:batch]


def test_inspect_is_triad_inspect_json(models, cli, tmp_path):
    m = triad.load(models / "digits_cnn.onnx", batch=2)
    cli("inspect", models / "digits_cnn.onnx", "--batch", 2, "--json", tmp_path / "i.json")
    want = json.loads((tmp_path / "i.json").read_text())
    got = m.inspect()
    got["model"] = want["model"]  # the path as each was given
    assert got == want
    assert got["inputs"][0]["shape"] == [2, 1, 8, 8]
    assert got["totals"]["macs"] == sum(layer["macs"] for layer in got["layers"]) > 0
    assert {"interp", "cpu", "gpu", "fpga"} <= set(got["targets"])


def test_inspect_names_unsupported_ops_with_reasons(small):
    info = triad.load(small / "exp.onnx").inspect()
    assert info["targets"]["cpu"]["unsupported"] == {}
    fpga = info["targets"]["fpga"]
    assert fpga["supported"] == 0 and fpga["layers"] == 1
    assert "Exp" in fpga["unsupported"] and fpga["unsupported"]["Exp"]


def test_dims_bind_symbolic_dimensions(small):
    m = triad.load(small / "mlp.onnx", batch=5)
    assert m.inputs[0]["shape"] == [5, 4] and m.outputs[0]["shape"] == [5, 3]
    assert triad.load(small / "mlp.onnx", dims={"N": 7}).inputs[0]["shape"] == [7, 4]


@pytest.mark.parametrize("target", ["cpu", "gpu", "fpga"])
def test_targets_match_the_interpreter(models, target):
    x = _x(models, 16)
    m = triad.load(models / "digits_cnn.onnx", batch=16)
    ref = m.compile("interp")(x)
    exe = m.compile(target, threads=2)
    assert exe.target == target
    y = exe(x)
    assert y.shape == (16, 10) and y.dtype == np.float32
    # The FPGA target is the fixed<16,6> emulator: close to float, not equal.
    tol = 0.05 if target == "fpga" else 1e-4
    np.testing.assert_allclose(y, ref, atol=tol)
    assert (y.argmax(1) == ref.argmax(1)).mean() >= 0.9


def test_interp_matches_triad_run(models, cli, tmp_path):
    x = _x(models, 8)
    np.save(tmp_path / "x.npy", x)
    cli("run", models / "digits_cnn.onnx", "--batch", 8, "--input", tmp_path / "x.npy",
        "--output", tmp_path / "y.npy")
    y = triad.load(models / "digits_cnn.onnx", batch=8).compile("interp")(x)
    assert np.array_equal(y, np.load(tmp_path / "y.npy"))


def test_run_by_name_and_call_agree(small):
    m = triad.load(small / "mlp.onnx", batch=3)
    exe = m.compile("cpu")
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    out = exe.run({"x": x})
    assert list(out) == ["y"]
    assert np.array_equal(out["y"], exe(x))
    assert np.array_equal(exe.run([x])["y"], exe(x))
    # float64 arrays are cast to the input's float32.
    np.testing.assert_array_equal(exe(x.astype(np.float64)), exe(x))


def test_outputs_are_numpy_arrays_owning_the_result(small):
    exe = triad.load(small / "mlp.onnx", batch=2).compile("interp")
    y = exe(np.ones((2, 4), np.float32))
    assert isinstance(y, np.ndarray) and y.shape == (2, 3) and y.flags.c_contiguous
    assert not y.flags.owndata  # the target's buffer, handed over without a copy
    y2 = exe(np.ones((2, 4), np.float32))
    y[...] = 0  # each run's outputs are their own buffers
    assert np.abs(y2).sum() > 0


def test_profile_is_triad_run_profile(models, cli, tmp_path):
    x = _x(models, 32)
    np.save(tmp_path / "x.npy", x)
    m = triad.load(models / "digits_cnn.onnx", batch=32)
    cpu = m.compile("cpu", threads=1).profile(x, repeat=3)
    assert cpu and all(r["ms"] > 0 and r["kind"] == "layer" for r in cpu)
    assert cpu == sorted(cpu, key=lambda r: -r["ms"])
    cli("run", models / "digits_cnn.onnx", "--target", "cpu", "--threads", 1, "--batch", 32,
        "--input", tmp_path / "x.npy", "--repeat", 3, "--profile", "--json", tmp_path / "r.json")
    want = json.loads((tmp_path / "r.json").read_text())["layers"]
    assert sorted(r["layer"] for r in cpu) == sorted(r["layer"] for r in want)
    assert m.compile("interp").profile(x) == []  # the interpreter records no per-layer times
    exe = m.compile("cpu", profile=True)
    exe(x)
    assert {r["layer"] for r in exe.profile()} == {r["layer"] for r in cpu}


def test_progress_callback(small):
    seen = []
    triad.load(small / "mlp.onnx", batch=2).compile(
        "cpu", progress=lambda s, f: seen.append((s, f)))
    # Start, one step per layer generated (Gemm+Relu fused, Gemm), the C++ compile, the end.
    assert seen[0] == ("compile", 0.0) and seen[-1] == ("compile", 1.0)
    assert len(seen) >= 5
    assert [f for _, f in seen] == sorted(f for _, f in seen)
    steps = [s for s, _ in seen[1:-1]]
    assert all(s.startswith("compile:") for s in steps)
    assert any(s.startswith("compile:codegen ") for s in steps) and "compile:c++" in steps


def test_gil_is_released_while_running(models):
    x = np.load(models / "digits_test_x.npy")
    exe = triad.load(models / "digits_cnn.onnx", batch=len(x)).compile("interp")
    t0 = time.perf_counter()
    exe(x)
    once = time.perf_counter() - t0
    spins = 0
    worker = threading.Thread(target=lambda: [exe(x) for _ in range(3)])
    worker.start()
    while worker.is_alive():
        spins += 1
    # Held, the GIL would stop this loop for each run; released, it spins all along.
    assert spins > 1000 * max(once, 0.01) * 3, (spins, once)
