"""triad.bench: the report of `triad bench` as a dict."""
import numpy as np

import triad


def test_bench_report(small, tmp_path):
    seen = []
    r = triad.bench(small / "mlp.onnx", targets=["interp", "cpu"], batch=[1, 4], repeat=4,
                    warmup=1, rounds=2, out_dir=tmp_path, progress=lambda s, f: seen.append(s))
    assert r["schema"] == "triad-bench/1" and r["run"]["status"] == "complete"
    got = {(x["target"], x["batch"]): x for x in r["results"]}
    assert set(got) == {("interp", 1), ("interp", 4), ("cpu", 1), ("cpu", 4)}
    for res in got.values():
        assert res["status"] == "ok", res
        assert res["latency_ms"]["p50"] > 0
    assert r["model"]["macs"] == 4 * 8 + 8 * 3
    assert (tmp_path / "report.html").exists() and seen == ["bench", "bench"]


def test_bench_usage_errors(small):
    for kwargs in ({"targets": ["tpu"]}, {"batch": [0]}, {"labels": "y.npy"}):
        try:
            triad.bench(small / "mlp.onnx", **kwargs)
        except triad.UsageError:
            continue
        raise AssertionError(f"no UsageError for {kwargs}")
    assert np  # numpy is the package's one dependency
