"""triad.fpga.config, Model.quantize, Quantized.predict/trace/layers: bit-exact with
`triad quantize`, float and fixed side by side."""
import json

import numpy as np
import pytest

import triad
import triad.fpga


@pytest.fixture(scope="module")
def jet(models):
    x = np.load(models / "jet_test_x.npy")[:200]
    return triad.load(models / "jet_mlp.onnx", batch=len(x)), x


def test_config_lists_every_layer(jet):
    m, _ = jet
    cfg = triad.fpga.config(m, default="fixed<18,8>", reuse=4)
    gemms = [layer["name"] for layer in m.inspect()["layers"] if layer["op"] == "Gemm"]
    assert sorted(cfg["reuse"]) == sorted(gemms) and set(cfg["reuse"].values()) == {4}
    assert cfg["layers"]["/fc1/Gemm"] == {"weight": "fixed<18,8>", "bias": "fixed<18,8>",
                                          "result": "fixed<18,8>"}
    assert cfg["layers"]["/Relu"] == {"result": "fixed<18,8>"}
    assert cfg["default"]["precision"] == "fixed<18,8>"
    json.dumps(cfg)  # a plain, JSON-serialisable dict


@pytest.mark.parametrize("default", ["fixed<16,6>", "fixed<10,3>"])
def test_predict_is_bit_exact_with_triad_quantize(jet, cli, tmp_path, default):
    m, x = jet
    cfg = triad.fpga.config(m, default=default)
    cfg["layers"]["/fc2/Gemm"]["weight"] = "fixed<8,2>"  # an edit per layer
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    np.save(tmp_path / "x.npy", x)
    cli("quantize", m.path, "--config", tmp_path / "cfg.json", "--input", tmp_path / "x.npy",
        "--output", tmp_path / "y.npy", "--json", tmp_path / "q.json")
    q = m.quantize(cfg, calibration=x)
    y = q.predict(x)
    want = np.load(tmp_path / "y.npy")
    assert y.dtype == want.dtype and np.array_equal(y, want)
    # The per-layer report agrees with the CLI's, overflow counts included.
    trace = q.trace(x)
    rows = json.loads((tmp_path / "q.json").read_text())["layers"]
    assert [r["name"] for r in rows] == list(trace)
    for r in rows:
        t = trace[r["name"]]
        assert (t["saturated"], t["wrapped"], t["elements"]) == \
            (r["saturated"], r["wrapped"], r["elements"])
        assert t["max_abs_error"] == pytest.approx(r["max_abs_error"], rel=1e-12, abs=1e-12)


def test_predict_other_batch_sizes(jet, models):
    m, x = jet
    free = triad.load(models / "jet_mlp.onnx")  # the batch bound from each call's inputs
    q = free.quantize(triad.fpga.config(m), calibration=x)
    full = q.predict(x)
    assert np.array_equal(q.predict(x[:7]), full[:7])  # planned again for batch 7
    assert q.bindings == ["batch=200", "batch=7"]
    # With batch=200 fixed at load, other batch sizes are the CLI's run-time error.
    with pytest.raises(triad.RunError) as e:
        m.quantize(triad.fpga.config(m), calibration=x).predict(x[:7])
    assert "--batch 200 was given" in str(e.value)


def test_trace_float_and_fixed_side_by_side(jet):
    m, x = jet
    q = m.quantize(triad.fpga.config(m, default="fixed<8,3>"), calibration=x)
    trace = q.trace(x)
    assert list(trace)[0] == "(input)"
    ref = m.compile("interp")(x)
    last = list(trace.values())[-1]
    assert np.array_equal(last["fixed"].reshape(-1), q.predict(x).reshape(-1))
    np.testing.assert_allclose(last["float"], ref, rtol=1e-5, atol=1e-6)
    for name, t in trace.items():
        assert t["fixed"].shape == t["float"].shape, name
        err = float(np.max(np.abs(t["fixed"].astype(np.float64) - t["float"])))
        assert err == pytest.approx(t["max_abs_error"], rel=1e-5, abs=1e-6), name
    # fixed<8,3> holds [-4, 4): the first layer's outputs saturate and the trace counts it.
    assert trace["/fc1/Gemm"]["saturated"] > 0


def test_layers_report_formats_and_weights(jet):
    m, x = jet
    cfg = triad.fpga.config(m)
    cfg["layers"]["/fc1/Gemm"]["weight"] = "fixed<6,1>"
    layers = {layer["name"]: layer for layer in m.quantize(cfg, calibration=x).layers()}
    fc1 = layers["/fc1/Gemm"]
    assert fc1["roles"]["weight"]["format"] == "fixed<6,1>"
    assert fc1["roles"]["weight"]["min"] == -1.0 and fc1["roles"]["weight"]["max"] == 1 - 2**-5
    w = np.array(fc1["constants"][0]["values"])
    assert w.size == 64 * 16
    outside = int(np.sum((w < -1.0 - 2**-6) | (w > 1.0)))  # clamped whatever the rounding
    assert fc1["const_saturated"] >= outside
