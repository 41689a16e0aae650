#!/usr/bin/env python3
"""The peer harnesses of `triad bench` (bench/peers/) and bench/cpu_vs_ort.py.

    .venv/bin/python tests/peers_test.py [PATH/TO/triad]

- The ONNX Runtime peer's protocol on models/digits_cnn.onnx: the ready line, `run`, `infer`
  (against ONNX Runtime called here), `stats`, `profile`, malformed commands (answered with an
  error, the peer stays alive), `quit` (exit 0); stdout holds nothing but protocol lines.
- A broken model file, an unsupported op, a missing input file and a usage error: ready false
  with a why. Two inputs with --dim and two outputs.
- OpenVINO and TVM: ready false with a why when their package is absent from this Python; when
  present (here, or in the Python named by TRIAD_PEER_PYTHON_openvino / TRIAD_PEER_PYTHON_tvm)
  the same protocol checks as ONNX Runtime's, outputs within 1e-5 of ONNX Runtime's.
- The standalone mode (--report): schema-valid triad-bench/1 entries, top-1 on the test set.
- bench/cpu_vs_ort.py on jet_mlp at batch 1, two short rounds, and bench/peer_table.py on jet_mlp
  at 1 and 2 threads with both peers (need the triad binary; skipped without it).
Plain asserts; exit 0 when everything passes.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
sys.path.insert(0, str(PEERS))
import peer_common  # noqa: E402

MODEL = ROOT / "models" / "digits_cnn.onnx"
X = ROOT / "models" / "digits_test_x.npy"
Y = ROOT / "models" / "digits_test_y.npy"
PY = sys.executable
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:5.1f} s] {msg}", flush=True)


class PeerProc:
    def __init__(self, peer, *args, python=PY):
        self.cmd = [python, str(PEERS / f"{peer}_peer.py"), *map(str, args)]
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = []

    def read(self):
        line = self.p.stdout.readline()
        assert line, f"{self.cmd}: no answer; stderr:\n{self.p.stderr.read()[-3000:]}"
        self.lines.append(line)
        return json.loads(line)  # every stdout line must be JSON

    def ask(self, obj):
        self.p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.p.stdin.flush()
        return self.read()

    def finish(self):
        try:
            out, err = self.p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise AssertionError(f"{self.cmd} did not exit")
        assert out == "", f"stdout after the last answer: {out!r}"
        return self.p.returncode, err


def ort_reference(x):
    return ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"]).run(
        None, {"input": x})[0]


def check_protocol(peer, tmp, python=PY, tol=1e-5):
    """The whole protocol on digits_cnn at batch 8 (360 test rows: the last batch is padded)."""
    p = PeerProc(peer, "--model", MODEL, "--batch", 8, "--threads", 1, "--input", X,
                 python=python)
    ready = p.read()
    assert ready["ready"] is True, ready
    assert ready["peer"] == peer and isinstance(ready["version"], str) and ready["version"]
    assert isinstance(ready["compile_s"], float) and ready["compile_s"] > 0, ready
    assert isinstance(ready["device"], str) and ready["device"]
    assert ready["threads"] == 1 and ready["batch"] == 8
    assert ready["inputs"] == [{"name": "input", "dtype": "float32", "shape": [8, 1, 8, 8]}]

    a = p.ask({"cmd": "run", "n": 5})
    assert len(a["samples_ms"]) == 5 and all(isinstance(s, float) and s > 0
                                             for s in a["samples_ms"]), a
    a = p.ask({"cmd": "run", "n": 2, "warmup": 3})
    assert len(a["samples_ms"]) == 2, a

    out = Path(tmp) / f"{peer}_y.npy"
    a = p.ask({"cmd": "infer", "input": str(X), "output": str(out)})
    assert a == {"ok": True, "rows": 360}, a
    x = np.load(X)
    y, ref = np.load(out), ort_reference(x)
    assert y.shape == ref.shape == (360, 10), (y.shape, ref.shape)
    max_err = float(np.max(np.abs(y - ref)))
    assert max_err <= tol, f"{peer}: infer differs from ONNX Runtime by {max_err}"
    # A part of a batch (3 rows at batch 8), several outputs as a list.
    x3 = Path(tmp) / "x3.npy"
    np.save(x3, x[5:8])
    a = p.ask({"cmd": "infer", "input": [str(x3)], "output": [str(out)]})
    assert a == {"ok": True, "rows": 3}, a
    assert np.max(np.abs(np.load(out) - ref[5:8])) <= tol

    a = p.ask({"cmd": "stats"})
    assert isinstance(a["peak_rss_mib"], float) and a["peak_rss_mib"] > 1, a

    for bad in ["not json", "", "[1, 2]", '{"cmd": 3}', '{"cmd": "fly"}', '{"cmd": "run"}',
                '{"cmd": "run", "n": -1}', '{"cmd": "run", "n": true}',
                '{"cmd": "infer", "input": "/nonexistent.npy", "output": "/tmp/y.npy"}',
                '{"cmd": "infer", "input": 7, "output": "/tmp/y.npy"}']:
        a = p.ask(bad)
        assert set(a) == {"error"} and isinstance(a["error"], str) and a["error"], (bad, a)
    a = p.ask({"cmd": "run", "n": 1})  # still alive
    assert len(a["samples_ms"]) == 1

    a = p.ask({"cmd": "profile", "n": 2})
    if "error" not in a:
        assert a["layers"] and all(isinstance(l["layer"], str) and l["ms"] >= 0
                                   for l in a["layers"]), a

    assert p.ask({"cmd": "quit"}) == {"ok": True}
    rc, err = p.finish()
    assert rc == 0, f"{peer}: quit exited {rc}:\n{err[-2000:]}"
    assert "Traceback" not in err, err[-3000:]
    log(f"{peer} {ready['version']}: protocol ok (infer max abs err {max_err:.3g} against "
        f"ONNX Runtime)")


def unsupported_model(tmp):
    """A well-formed model with an op no runtime has."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    g = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example")],
                          "unsupported", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.example", 1)])
    path = Path(tmp) / "unsupported.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def check_multi_input(tmp):
    """Two inputs (one an integer mask) with a symbolic 'seq' (--dim), two outputs: the random
    fixed batch, `infer` with {name: file} and a list of outputs."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
    m = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    y1 = helper.make_tensor_value_info("y1", TensorProto.FLOAT, ["batch", "seq"])
    y2 = helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["batch", "seq"])
    g = helper.make_graph([helper.make_node("Cast", ["attention_mask"], ["mf"], to=1),
                           helper.make_node("Add", ["x", "mf"], ["y1"]),
                           helper.make_node("Neg", ["x"], ["y2"])], "two", [x, m], [y1, y2])
    model = Path(tmp) / "two.onnx"
    model.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
                      .SerializeToString())
    check_not_ready("onnxruntime", ["--model", model, "--batch", 2, "--threads", 1], "--dim seq")
    p = PeerProc("onnxruntime", "--model", model, "--batch", 2, "--threads", 1, "--dim", "seq=3")
    ready = p.read()
    assert ready["ready"] and ready["inputs"] == [
        {"name": "x", "dtype": "float32", "shape": [2, 3]},
        {"name": "attention_mask", "dtype": "int64", "shape": [2, 3]}], ready
    assert len(p.ask({"cmd": "run", "n": 2})["samples_ms"]) == 2
    xs = np.arange(15, dtype=np.float32).reshape(5, 3)
    ms = np.ones((5, 3), dtype=np.int64)
    np.save(Path(tmp) / "xs.npy", xs)
    np.save(Path(tmp) / "ms.npy", ms)
    outs = [str(Path(tmp) / "y1.npy"), str(Path(tmp) / "y2.npy")]
    a = p.ask({"cmd": "infer", "input": {"attention_mask": str(Path(tmp) / "ms.npy"),
                                         "x": str(Path(tmp) / "xs.npy")}, "output": outs})
    assert a == {"ok": True, "rows": 5}, a
    assert np.array_equal(np.load(outs[0]), xs + 1) and np.array_equal(np.load(outs[1]), -xs)
    a = p.ask({"cmd": "infer", "input": [str(Path(tmp) / "xs.npy")], "output": outs[0]})
    assert "error" in a, a
    assert p.ask({"cmd": "quit"}) == {"ok": True}
    assert p.finish()[0] == 0
    log("two inputs, --dim, two outputs: ok")


def check_not_ready(peer, args, want, python=PY, rc_want=0):
    p = subprocess.run([python, str(PEERS / f"{peer}_peer.py"), *map(str, args)],
                       input='{"cmd": "quit"}\n', capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    assert len(lines) == 1, f"{peer} {args}: stdout {p.stdout!r}"
    a = json.loads(lines[0])
    assert a["ready"] is False and a["peer"] == peer, a
    assert isinstance(a["why"], str) and want in a["why"], (want, a)
    assert "Traceback" not in a["why"]
    assert p.returncode == rc_want, (p.returncode, p.stderr[-2000:])
    return a["why"]


def has_package(python, module):
    if python == PY:
        return importlib.util.find_spec(module) is not None
    r = subprocess.run([python, "-c", f"import importlib.util,sys; "
                        f"sys.exit(0 if importlib.util.find_spec('{module}') else 1)"])
    return r.returncode == 0


def check_optional(peer, module, tmp):
    python = os.environ.get(f"TRIAD_PEER_PYTHON_{peer}", PY)
    if has_package(python, module):
        check_protocol(peer, tmp, python=python)
        check_not_ready(peer, ["--model", unsupported_model(tmp), "--batch", 1, "--threads", 1],
                        "NoSuchOp", python=python)
    else:
        why = check_not_ready(peer, ["--model", MODEL, "--batch", 1, "--threads", 1],
                              "not installed", python=python)
        log(f"{peer}: absent, ready false ({why})")
    return python


def check_standalone(tmp):
    report = Path(tmp) / "ort.json"
    p = subprocess.run([PY, str(PEERS / "onnxruntime_peer.py"), "--model", str(MODEL), "--batch",
                        "1,8", "--threads", "1", "--input", str(X), "--labels", str(Y),
                        "--report", str(report), "--repeat", "10", "--profile"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == "", p.stdout
    entries = json.loads(report.read_text())
    assert [e["batch"] for e in entries] == [1, 8], entries
    want = json.loads((ROOT / "models" / "MANIFEST.json").read_text())["models"]["digits_cnn"]
    for e in entries:
        problems = peer_common.check_result(e)
        assert not problems, problems
        assert e["target"] == "onnxruntime" and e["kind"] == "peer" and e["status"] == "ok"
        assert e["latency_ms"]["count"] == 10 and len(e["latency_ms"]["samples"]) == 10
        assert abs(e["throughput_per_s"] - e["batch"] * 1e3 / e["latency_ms"]["mean"]) < 1e-6 * \
            e["throughput_per_s"]
        assert e["accuracy"]["samples"] == 360
        assert abs(e["accuracy"]["top1"] - want["test_accuracy"]) < 1e-9, e["accuracy"]
        assert e["memory"]["peak_rss_mib"] > 1 and e["energy"]["joules_per_inference"] is None
        assert e["energy"]["why"] and e["layers"], e
    # The checker itself catches what it should.
    bad = dict(entries[0], latency_ms=dict(entries[0]["latency_ms"], p50=None))
    assert peer_common.check_result(bad)
    bad = dict(entries[0], accuracy={"max_abs_err": None, "max_rel_err": 0, "top1": 1,
                                     "top1_reference": 1})
    assert any("without a 'why'" in x for x in peer_common.check_result(bad))

    # An absent package and a broken model: one entry each, skipped / failed, still valid.
    if importlib.util.find_spec("openvino") is None:
        r2 = Path(tmp) / "ov.json"
        p = subprocess.run([PY, str(PEERS / "openvino_peer.py"), "--model", str(MODEL),
                            "--batch", "1", "--threads", "1", "--report", str(r2)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        [e] = json.loads(r2.read_text())
        assert e["status"] == "skipped" and "not installed" in e["why"], e
        assert not peer_common.check_result(e)
    r3 = Path(tmp) / "broken.json"
    p = subprocess.run([PY, str(PEERS / "onnxruntime_peer.py"), "--model",
                        str(Path(tmp) / "broken.onnx"), "--batch", "1", "--threads", "1",
                        "--report", str(r3)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    [e] = json.loads(r3.read_text())
    assert e["status"] == "failed" and e["why"], e
    assert not peer_common.check_result(e)
    log(f"standalone report ok: top-1 {entries[0]['accuracy']['top1']:.4f}, p50 "
        f"{entries[0]['latency_ms']['p50']:.4g} ms at batch 1")


def check_cpu_vs_ort(triad, tmp):
    js, md = Path(tmp) / "cvo.json", Path(tmp) / "cvo.md"
    p = subprocess.run([PY, str(ROOT / "bench" / "cpu_vs_ort.py"), "--triad", str(triad),
                        "--models", "jet_mlp", "--batches", "1", "--threads", "1", "--repeat",
                        "2", "--runs", "20", "--no-overhead", "--gemm-bench", "", "--work",
                        str(Path(tmp) / "work"), "--json", str(js), "--markdown", str(md)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    doc = json.loads(js.read_text())
    [row] = doc["summary"]
    assert row["model"] == "jet_mlp" and row["batch"] == 1 and row["threads"] == 1
    assert row["rounds"] == 2 and row["runs_per_round"] == 20
    assert row["triad"]["p50"] > 0 and row["ort"]["p50"] > 0 and row["speedup"] > 0
    assert row["max_abs_err"] <= 1e-4, row
    assert len(doc["runs"]) == 2 and doc["runs"][0]["ort"]["n"] == 20
    assert doc["machine"]["onnxruntime"] == ort.__version__
    text = md.read_text()
    assert "| jet_mlp | 1 | 1 |" in text, text
    log(f"cpu_vs_ort.py ok: jet_mlp ORT/Triad {row['speedup']:.2f}")


def check_peer_table(triad, tmp):
    """bench/peer_table.py: one `triad bench` per thread count with both peers, one row each."""
    js = Path(tmp) / "peer_table.json"
    p = subprocess.run([PY, str(ROOT / "bench" / "peer_table.py"), "--triad", str(triad),
                        "--models", "jet_mlp", "--threads", "1", "2", "--repeat", "4",
                        "--rounds", "2", "--out", str(Path(tmp) / "pt"), "--json", str(js)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    rows = json.loads(js.read_text())["rows"]
    assert [(r["model"], r["threads"], r["batch"]) for r in rows] == [("jet_mlp", 1, 1),
                                                                   ("jet_mlp", 2, 1)], rows
    for r in rows:
        assert r["cpu"]["p50"] > 0 and r["cpu"]["count"] == 4, r
        assert r["cpu"]["max_abs_err"] is not None and r["cpu"]["max_abs_err"] <= 1e-4, r
        assert r["onnxruntime"]["p50"] > 0, r
        if importlib.util.find_spec("openvino") is not None:
            assert r["openvino"]["p50"] > 0 and r["openvino"]["max_abs_err"] <= 1e-4, r
    assert "| jet_mlp | 2 | 1 |" in p.stdout, p.stdout
    log(f"peer_table.py ok: jet_mlp ORT/Triad {rows[0]['onnxruntime']['p50'] / rows[0]['cpu']['p50']:.2f}"
        f" at 1 thread")


def main():
    triad = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "cli" / "triad"
    with tempfile.TemporaryDirectory() as tmp:
        check_protocol("onnxruntime", tmp)
        broken = Path(tmp) / "broken.onnx"
        broken.write_bytes(b"\x08\x07\x12\x04this is not a model" * 3)
        why = check_not_ready("onnxruntime", ["--model", broken, "--batch", 1, "--threads", 1],
                              "")
        log(f"broken model: ready false ({why[:100]})")
        check_not_ready("onnxruntime", ["--model", MODEL, "--batch", 1, "--threads", 1,
                                        "--input", Path(tmp) / "missing.npy"], "missing.npy")
        check_not_ready("onnxruntime", ["--model", unsupported_model(tmp), "--batch", 1,
                                        "--threads", 1], "NoSuchOp")
        check_not_ready("onnxruntime", ["--model", MODEL, "--batch", "x", "--threads", 1],
                        "usage", rc_want=2)
        check_multi_input(tmp)
        check_optional("openvino", "openvino", tmp)
        check_optional("tvm", "tvm", tmp)
        check_standalone(tmp)
        if triad.exists():
            check_cpu_vs_ort(triad, tmp)
            check_peer_table(triad, tmp)
        else:
            log(f"cpu_vs_ort.py, peer_table.py: skipped ({triad} not built)")
    log("all peer tests passed")


if __name__ == "__main__":
    main()
