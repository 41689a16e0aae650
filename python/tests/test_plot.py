"""triad.plot and `triad quantize --plot`: the numerical profile drawn with matplotlib."""
import json
import os
import stat
import sys

import numpy as np
import pytest

import triad
import triad.fpga
import triad.plot

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def jet(models):
    x = np.load(models / "jet_test_x.npy")[:100]
    m = triad.load(models / "jet_mlp.onnx", batch=len(x))
    cfg = triad.fpga.config(m, default="fixed<10,3>")
    return m, x, cfg


def test_profile_matches_the_trace(jet):
    m, x, cfg = jet
    q = m.quantize(cfg, calibration=x)
    prof = triad.plot.profile(q, x)
    trace = q.trace(x)
    assert [r["name"] for r in prof["layers"]] == list(trace)
    for row in prof["layers"]:
        t = trace[row["name"]]
        assert (row["saturated"], row["wrapped"]) == (t["saturated"], t["wrapped"])
        if row["outputs"] and "max" in row["outputs"]:
            assert row["outputs"]["max"] == pytest.approx(float(np.abs(t["float"]).max()), rel=1e-6)
    fc1 = next(r for r in prof["layers"] if r["name"] == "/fc1/Gemm")
    assert fc1["weight_format"]["format"] == "fixed<10,3>" and fc1["weight_format"]["max"] < 4
    assert fc1["weights"]["count"] == 64 * 16
    assert fc1["result_format"]["lsb"] == 2.0 ** -7
    assert any(r["saturated"] for r in prof["layers"])  # fixed<10,3> is short for these values


def test_precision_plot_writes_a_png(jet, tmp_path):
    m, x, cfg = jet
    fig = triad.plot.precision(m.quantize(cfg, calibration=x), x, tmp_path / "p.png")
    data = (tmp_path / "p.png").read_bytes()
    assert data.startswith(PNG) and len(data) > 10000
    assert len(fig.axes) == 2


def test_quantize_plot_from_the_cli(jet, cli, models, tmp_path):
    m, x, cfg = jet
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    cli("quantize", m.path, "--config", tmp_path / "cfg.json", "--input", tmp_path / "x.npy",
        "--plot", tmp_path / "q.png")
    assert (tmp_path / "q.png").read_bytes().startswith(PNG)
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]  # the profile data is removed


def _run_with_python(cli, models, tmp_path, python):
    env = dict(os.environ, TRIAD_PYTHON=str(python))
    import subprocess
    return subprocess.run([cli.path, "quantize", models / "jet_mlp.onnx", "--input",
                           models / "jet_test_x.npy", "--plot", tmp_path / "q.png"],
                          capture_output=True, text=True, env=env)


def test_quantize_plot_without_python_or_matplotlib(cli, models, tmp_path):
    p = _run_with_python(cli, models, tmp_path, tmp_path / "no-such-python")
    assert p.returncode == 5 and "--plot needs Python" in p.stderr, p.stderr
    # A Python on which matplotlib cannot be imported.
    fake = tmp_path / "python-without-matplotlib"
    fake.write_text("#!/bin/sh\nexec " + sys.executable + " -c 'import sys; "
                    "sys.modules[\"matplotlib\"] = None; sys.argv = sys.argv[1:]; "
                    "exec(compile(open(sys.argv[0]).read(), sys.argv[0], \"exec\"))' \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    p = _run_with_python(cli, models, tmp_path, fake)
    assert p.returncode == 5 and "needs matplotlib" in p.stderr, p.stderr
    assert not (tmp_path / "q.png").exists()
