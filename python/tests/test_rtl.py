"""Quantized.write_verilog, triad.sim and triad.synth: the same design folder and reports as
`triad compile --target fpga`, `triad sim` and `triad synth`; the RTL bit-exact with
Quantized.predict. Skipped without Verilator (sim) or Yosys (synth)."""
import json
import shutil

import numpy as np
import pytest

import triad
import triad.fpga


@pytest.fixture(scope="module")
def design(small, cli, tmp_path_factory):
    """The small MLP at reuse 2 with inputs x, written by Python and by the CLI."""
    d = tmp_path_factory.mktemp("rtl")
    x = np.random.default_rng(3).normal(0, 1, (12, 4)).astype(np.float32)
    m = triad.load(small / "mlp.onnx")  # the batch bound from the arrays, as the CLI's --input
    cfg = triad.fpga.config(m, default="fixed<12,5>", reuse=2)
    q = m.quantize(cfg, calibration=x)
    summary = q.write_verilog(d / "py", x)
    np.save(d / "x.npy", x)
    (d / "cfg.json").write_text(json.dumps(cfg))
    cli("compile", small / "mlp.onnx", "--target", "fpga", "--config", d / "cfg.json",
        "--input", d / "x.npy", "-o", d / "cli")
    return d, m, q, x, summary


def test_write_verilog_is_triad_compile(design):
    d, _, _, _, summary = design
    want = json.loads((d / "cli" / "summary.json").read_text())
    assert summary == json.loads((d / "py" / "summary.json").read_text())
    for key in set(want) - {"compile"}:
        assert summary[key] == want[key], key
    assert [layer["reuse"] for layer in summary["layers"] if "reuse" in layer] == [2, 2]
    rtl = sorted(p.name for p in (d / "cli" / "rtl").iterdir())
    assert rtl == sorted(p.name for p in (d / "py" / "rtl").iterdir())
    for name in rtl:
        assert (d / "py" / "rtl" / name).read_bytes() == (d / "cli" / "rtl" / name).read_bytes()
    raw = np.load(d / "py" / "expected_raw.npy")
    assert np.array_equal(raw, np.load(d / "cli" / "expected_raw.npy"))


@pytest.mark.skipif(not shutil.which("verilator"), reason="verilator is not installed")
def test_sim_is_bit_exact_with_predict(design, cli):
    d, _, q, x, _ = design
    seen = []
    r = triad.sim(d / "py", x, progress=lambda s, f: seen.append((s, f)))
    assert r["samples"] == len(x) and r["mismatches"] == 0 and r["missing"] == 0
    assert r["ii"] > 0 and r["latency_cycles"] > 0
    assert np.array_equal(r["outputs"], q.predict(x))
    assert seen[0] == ("sim", 0.0) and seen[-1] == ("sim", 1.0) and len(seen) > 2
    assert [f for _, f in seen] == sorted(f for _, f in seen)
    assert {s for s, _ in seen} >= {"sim:expected", "sim:verilator"}
    p = cli("sim", d / "cli", "--input", d / "x.npy", "--json", d / "sim.json")
    want = json.loads((d / "sim.json").read_text())
    for key in ("samples", "latency_cycles", "ii", "mismatches", "missing", "total_cycles"):
        assert r[key] == want[key], key
    assert p.returncode == 0
    # Other inputs: the expected outputs are recomputed from the folder's config.json and
    # calibration.npy (the compile's precisions), and still match.
    x2 = x[:5] * 0.5
    r2 = triad.sim(d / "py", x2)
    assert r2["mismatches"] == 0 and np.array_equal(r2["outputs"], q.predict(x2))


def test_sim_refuses_a_folder_that_is_no_design(tmp_path):
    with pytest.raises(triad.UsageError) as e:
        triad.sim(tmp_path, np.zeros((1, 4), np.float32))
    assert "summary.json" in str(e.value)


@pytest.mark.skipif(not shutil.which("yosys"), reason="yosys is not installed")
def test_synth_reports_every_layer(design, cli):
    d, _, _, _, summary = design
    r = triad.synth(d / "py", jobs=2)
    layers = [m["layer"] for m in r["modules"] if "layer" in m]
    assert layers == [layer["layer"] for layer in summary["layers"]]
    assert r["total"]["lut"] > 0 and r["total"]["ff"] > 0
    cli("synth", d / "cli", "--json", d / "synth.json", "-j", 2)
    want = json.loads((d / "synth.json").read_text())
    assert r["total"] == want["total"]
