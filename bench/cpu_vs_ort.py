#!/usr/bin/env python3
"""Triad's CPU target against ONNX Runtime: batch-1 latency and batch-32 throughput.

A thin driver over two command-line interfaces, at the same explicit thread count; it knows
nothing of Triad's generated code:

- Triad: `triad run MODEL --target cpu --batch B --threads T --repeat N+1 -i X.npy --json OUT`
  (compiles through the CPU target's build cache, runs N+1 times, reports compile_ms and the
  p50/p90/p99/min of runs 2..N+1; timed in C++ around each call). `--profile` adds its per-layer
  times.
- ONNX Runtime: the peer harness bench/peers/onnxruntime_peer.py (one process per case, alive
  across rounds) over its JSON-lines protocol (bench/peers/README.md): `{"cmd": "run", "n": N,
  "warmup": 1}` times N calls through an IOBinding on preallocated buffers, in Python.

For every case (model, batch, threads) Triad's outputs (`triad run -o`) are first checked
against ONNX Runtime's (the peer's `infer`) on the benchmark batch (rtol 1e-3, atol 1e-4; the
script stops with exit code 1 otherwise). Then both sides are timed in alternating rounds
(T O, O T, T O, ...; --repeat rounds, a short pause between sides so the other side's spinning
worker threads go idle; each side's first call in a round is untimed), each round N calls per
side, N from --budget (or --runs). The tables give the median over rounds of each side's p50
(p90, p99), and ORT/Triad with its range over rounds. The per-call fixed overhead of each side is
measured on an identity-sized model (Relu on a [1,1] tensor): Triad's is a C++ call, ORT's
includes Python's call into it. GFLOP/s = 2 x MACs (`triad inspect --json`) / p50; the
machine's FMA peak from `triad-gemm-bench`.

Inputs: the shipped models' test data (models/MANIFEST.json; the first B rows), the zoo's
reference inputs where their shape fits, else seeded random data; written as .npy files to
--work and given to both sides.

The large models (scripts/zoo/large_models.py exports, in --zoo) have a fixed batch of 1; for
batch 32 the script writes a copy with a symbolic batch dimension (CNNs only: their only
reshape is a Flatten). BERT-base is run at batch 1 (its export's Reshapes bake in batch 1 and
sequence length 128).

Since the `triad bench` work this script no longer builds the generated sources itself: the
ctypes bindings, its own compile flags and build cache, and the regexes over the generated
source are gone, and with them --cxx and --jobs (compiling is `triad run`'s business), the
plain `session.run` timing on the identity model (the peer times its IOBinding path), and the
per-layer-*kind* grouping of Triad's profile (--profile now lists Triad's layers by name, as
`triad run --profile --json` reports them, and ONNX Runtime's time per op kind from its own
profiler through the peer). The results in bench/results/ from commit 39d707f and earlier were
taken the old way (both sides in one Python process through ctypes): the ORT side now includes
Python's call overhead (the identity model shows how much), Triad's does not, which matters for
the shipped models (microseconds per call) and not for the large ones.

Examples:
  .venv/bin/python bench/cpu_vs_ort.py --quick
  .venv/bin/python bench/cpu_vs_ort.py --threads 1 2 --repeat 3 --json cpu_vs_ort.json
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "peers"))
import peer_common  # noqa: E402

SHIPPED = ["digits_mlp", "jet_mlp", "digits_cnn"]
LARGE = ["resnet18", "resnet50", "mobilenet_v2", "bert_base"]
BATCH_FIXED = {"bert_base"}  # export bakes in batch 1 (Reshape constants)
RTOL, ATOL = 1e-3, 1e-4
IDENTITY = "identity_relu"
PEER = ROOT / "bench" / "peers" / "onnxruntime_peer.py"
SETTLE_S = 0.02  # pause after each side's block so its worker threads go idle


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


write_atomic = peer_common.write_atomic


# ------------------------------------------------------------------------------------------------
# Models and inputs


def identity_model(path):
    """The identity-sized model: Relu on a float [1,1] tensor (what a call costs by itself)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], IDENTITY, [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench")
    m.ir_version = 8
    onnx.checker.check_model(m)
    data = m.SerializeToString()
    if not Path(path).exists() or Path(path).read_bytes() != data:  # keep the mtime otherwise
        write_atomic(path, data)


def model_path(name, zoo_dir, build_missing):
    if name in SHIPPED:
        return ROOT / "models" / f"{name}.onnx"
    p = Path(zoo_dir) / name / f"{name}.onnx"
    if not p.exists():
        if not build_missing:
            raise BenchError(f"{p} is missing: build it with /usr/bin/python3 "
                             f"scripts/zoo/large_models.py --model {name}")
        log(f"[zoo] building {name} (scripts/zoo/large_models.py)")
        subprocess.run(["/usr/bin/python3", str(ROOT / "scripts/zoo/large_models.py"), "--model",
                        name, "--cache", str(zoo_dir)], check=True)
    return p


def with_symbolic_batch(src, dst):
    """A copy of a fixed-batch-1 model whose batch (first) dimension is symbolic, 'batch'."""
    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) and dims[0].dim_value == 1:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    for n in m.graph.node:
        if n.op_type == "Reshape":
            raise BenchError(f"{src}: has a Reshape ({n.name}); cannot make its batch symbolic")
    write_atomic(dst, m.SerializeToString())


def shipped_test_inputs(name):
    try:
        man = json.loads((ROOT / "models" / "MANIFEST.json").read_text())
        f = man["models"][name].get("test_inputs")
        return ROOT / "models" / f if f else None
    except (OSError, KeyError, ValueError):
        return None


def write_inputs(name, path, batch, zoo_dir, work, rng):
    """The benchmark batch as .npy files (one per model input, in input order): the shipped test
    data, the zoo's reference inputs where their shape fits, else seeded random data."""
    try:
        spec = peer_common.model_spec(path, batch, {})
    except peer_common.PeerError as e:
        raise BenchError(f"{path}: {e}") from None
    files = []
    test = shipped_test_inputs(name)
    for i, s in enumerate(spec.inputs):
        a = None
        ref = Path(zoo_dir) / name / f"{name}_input{i}.npy"
        if i == 0 and test is not None and test.exists():
            a = peer_common.fit_rows(np.load(test), s, batch, str(test))
        elif ref.exists():
            r = np.load(ref)
            if list(r.shape) == s.shape:
                a = r.astype(s.dtype)
        if a is None:
            a = peer_common.random_input(s, rng)
        f = Path(work) / "inputs" / f"{name}_b{batch}_input{i}.npy"
        peer_common.save_npy_atomic(f, np.ascontiguousarray(a))
        files.append(f)
    return files, spec


# ------------------------------------------------------------------------------------------------
# Triad: `triad run`


def triad_run(args, path, batch, threads, inputs, runs, work, tag, outputs=None, profile=False):
    """`triad run --target cpu` with runs+1 calls (the first untimed); returns its JSON."""
    out = Path(work) / "runs" / f"{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(args.triad), "run", str(path), "--target", "cpu", "--batch", str(batch),
           "--threads", str(threads), "--repeat", str(runs + 1), "--json", str(out)]
    for f in inputs:
        cmd += ["-i", str(f)]
    for f in outputs or []:
        cmd += ["-o", str(f)]
    if profile:
        cmd.append("--profile")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}"
                         f"{r.stderr[-2000:]}")
    d = json.loads(out.read_text())
    return d


def triad_stats(d):
    """Seconds, like the ORT side: pooled percentiles where `triad run` gives raw samples, else
    its own p50/p90/p99/min of the timed runs."""
    if isinstance(d.get("samples_ms"), list) and d["samples_ms"]:
        return percentiles([x * 1e-3 for x in d["samples_ms"]])
    return {"n": int(d.get("runs", 0)), "p50": d["p50_ms"] * 1e-3, "p90": d["p90_ms"] * 1e-3,
            "p99": d["p99_ms"] * 1e-3, "min": d.get("min_ms", d["p50_ms"]) * 1e-3,
            "mean": d["mean_ms"] * 1e-3 if "mean_ms" in d else None,
            "compile_s": d.get("compile_ms", 0.0) * 1e-3}


# ------------------------------------------------------------------------------------------------
# ONNX Runtime: the peer harness


class Peer:
    """bench/peers/onnxruntime_peer.py as a child process, over its JSON-lines protocol."""

    def __init__(self, python, path, batch, threads, inputs, no_spin):
        cmd = [python, str(PEER), "--model", str(path), "--batch", str(batch), "--threads",
               str(threads)]
        for f in inputs:
            cmd += ["--input", str(f)]
        if no_spin:
            cmd.append("--no-spin")
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=None, text=True, bufsize=1)
        self.ready = self._read()
        if not self.ready.get("ready"):
            self.close()
            raise BenchError(f"the ONNX Runtime peer is not ready: "
                             f"{self.ready.get('why', self.ready)}")

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            rc = self.p.wait()
            raise BenchError(f"{' '.join(self.cmd)} ended (exit {rc}) without answering")
        return json.loads(line)

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        a = self._read()
        if "error" in a:
            raise BenchError(f"ONNX Runtime peer: {cmd['cmd']}: {a['error']}")
        return a

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write('{"cmd": "quit"}\n')
                self.p.stdin.flush()
                self.p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()


# ------------------------------------------------------------------------------------------------
# Timing


def percentiles(ts):
    a = np.sort(np.asarray(ts, dtype=np.float64))
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)),
            "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "min": float(a[0]), "mean": float(a.mean())}


def wait_for_load(limit, max_wait):
    if limit <= 0:
        return os.getloadavg()[0]
    t_end = time.time() + max_wait
    while os.getloadavg()[0] > limit and time.time() < t_end:
        time.sleep(5)
    return os.getloadavg()[0]


def check_outputs(case, triad_files, ort_files, out_names):
    errs = []
    for name, tf, of in zip(out_names, triad_files, ort_files):
        t, o = np.load(tf), np.load(of)
        if t.shape != o.shape:
            raise BenchError(f"{case}: output '{name}' has shape {t.shape} in Triad, "
                             f"{o.shape} in ONNX Runtime")
        if not np.allclose(t, o, rtol=RTOL, atol=ATOL):
            err = np.abs(t.astype(np.float64) - o)
            i = np.unravel_index(np.argmax(err - RTOL * np.abs(o)), err.shape)
            raise BenchError(f"{case}: output '{name}' differs from ONNX Runtime beyond rtol "
                             f"{RTOL}, atol {ATOL}: max abs err {err.max():.3g}; at {tuple(i)} "
                             f"Triad {t[i]!r}, ORT {o[i]!r}")
        errs.append(float(np.max(np.abs(t.astype(np.float64) - o))) if t.size else 0.0)
    return max(errs) if errs else 0.0


def inspect_macs(triad, path, batch, work):
    j = Path(work) / f"inspect_{Path(path).stem}_b{batch}.json"
    r = subprocess.run([str(triad), "inspect", str(path), "--batch", str(batch), "--json",
                        str(j)], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"triad inspect {path} failed ({r.returncode}): {r.stderr[-2000:]}")
    d = json.loads(j.read_text())
    return int(d["totals"]["macs"])


def fma_peak(gemm_bench, threads):
    if not gemm_bench or not Path(gemm_bench).exists():
        log(f"[peak] {gemm_bench or 'triad-gemm-bench'} not found: FMA peak not measured")
        return {}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "peak.json"
        subprocess.run([str(gemm_bench), "--threads", *map(str, threads), "--sizes", "64",
                        "--samples", "1", "--json", str(out)], check=True, capture_output=True)
        j = json.loads(out.read_text())
    return {int(k): float(v) for k, v in j["fma_peak_gflops"].items()}


def machine_info(ort_version):
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "onnxruntime": ort_version, "nproc": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU family", "Model", "Core(s) per socket",
                             "Thread(s) per core", "Hypervisor vendor", "L2 cache", "L3 cache"):
                info[k.strip()] = v.strip()
    except OSError:
        pass
    try:
        cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
        info["cxx"] = cxx.splitlines()[0]
    except (OSError, IndexError):
        pass
    return info


# ------------------------------------------------------------------------------------------------
# One case


def run_case(args, case, threads, rounds, budget, work, tag):
    """Checks the outputs, then times both sides in alternating rounds. Returns one record per
    round (seconds) and the peer's version."""
    name, batch, path, inputs = case["model"], case["batch"], case["path"], case["inputs"]
    out_names = case["spec"].outputs
    load0 = wait_for_load(args.wait_load, args.wait_max)
    peer = Peer(args.python, path, batch, threads, inputs, args.no_spin)
    try:
        # Outputs: `triad run -o` against the peer's `infer`, on the benchmark batch.
        odir = Path(work) / "outputs"
        odir.mkdir(parents=True, exist_ok=True)
        tri_out = [odir / f"{tag}_triad_{i}.npy" for i in range(len(out_names))]
        ort_out = [odir / f"{tag}_ort_{i}.npy" for i in range(len(out_names))]
        first = triad_run(args, path, batch, threads, inputs, 2, work, f"{tag}_check", tri_out)
        peer.ask(cmd="infer", input=[str(f) for f in inputs], output=[str(f) for f in ort_out])
        err = check_outputs(tag, tri_out, ort_out, out_names)
        # Calls per round: --runs, else the budget over the slower side's per-call estimate.
        est_ort = min(peer.ask(cmd="run", n=3, warmup=1)["samples_ms"]) * 1e-3
        est = max(est_ort, triad_stats(first)["min"])
        runs = args.runs or int(min(args.max_runs, max(args.min_runs,
                                                       budget / rounds / max(est, 1e-9))))
        records = []
        for k in range(rounds):
            order = ("triad", "ort") if k % 2 == 0 else ("ort", "triad")
            st = {}
            for side in order:
                if side == "triad":
                    d = triad_run(args, path, batch, threads, inputs, runs, work, f"{tag}_r{k}")
                    st["triad"] = triad_stats(d)
                else:
                    s = peer.ask(cmd="run", n=runs, warmup=1)["samples_ms"]
                    st["ort"] = percentiles([x * 1e-3 for x in s])
                time.sleep(SETTLE_S)
            records.append(st)
        stats = peer.ask(cmd="stats")
    finally:
        peer.close()
    load1 = os.getloadavg()[0]
    out = []
    for k, st in enumerate(records):
        r = {"model": name, "batch": batch, "threads": threads, "round": k, "macs": case["macs"],
             "runs_per_round": runs, "max_abs_err": err, "load_before": load0,
             "load_after": load1, "ort_peak_rss_mib": stats.get("peak_rss_mib"),
             "triad_compile_s": first.get("compile_ms", 0.0) * 1e-3,
             "ort_compile_s": peer.ready.get("compile_s")}
        for side, s in st.items():
            r[side] = s
            s["gflops_p50"] = 2.0 * case["macs"] / s["p50"] / 1e9
            s["per_s_p50"] = batch / s["p50"]
        r["speedup_p50"] = st["ort"]["p50"] / st["triad"]["p50"]
        out.append(r)
    return out, peer.ready.get("version")


def profile_case(args, case, threads, work, tag):
    """Triad's per-layer time (`triad run --profile --json`) and ONNX Runtime's per-node time
    (its profiler, through the peer), over --profile-runs calls."""
    n = args.profile_runs
    d = triad_run(args, case["path"], case["batch"], threads, case["inputs"], n, work,
                  f"{tag}_profile", profile=True)
    peer = Peer(args.python, case["path"], case["batch"], threads, case["inputs"], args.no_spin)
    try:
        layers = peer.ask(cmd="profile", n=n)["layers"]
    finally:
        peer.close()
    ortk = {}
    for e in layers:
        k = ortk.setdefault(e.get("op", "?"), {"seconds": 0.0, "layers": 0})
        k["seconds"] += e["ms"] * 1e-3
        k["layers"] += 1
    return {"triad_layers": [(x["layer"], x["ms"] * 1e-3) for x in d.get("layers", [])],
            "triad_wall": d["p50_ms"] * 1e-3, "ort": ortk,
            "ort_layers": sorted(((e["layer"], e["ms"] * 1e-3) for e in layers),
                                 key=lambda kv: -kv[1]),
            "calls": n}


def print_profile(tag, p):
    print(f"\nProfile {tag} ({p['calls']} calls; Triad p50 {fmt_time(p['triad_wall'])} per "
          "call):")
    tt = sum(s for _, s in p["triad_layers"]) or 1.0
    print("  Triad layer                              time   share")
    for name, s in sorted(p["triad_layers"], key=lambda kv: -kv[1]):
        print(f"  {name[:36]:<36} {fmt_time(s):>9} {100 * s / tt:>6.1f}%")
    to = sum(e["seconds"] for e in p["ort"].values()) or 1.0
    print("  ORT kernel (op_name)          nodes      time   share")
    for k, e in sorted(p["ort"].items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {k[:28]:<28} {e['layers']:>7} {fmt_time(e['seconds']):>9} "
              f"{100 * e['seconds'] / to:>6.1f}%")


# ------------------------------------------------------------------------------------------------
# Tables


def unit_of(seconds):
    return (1e6, "µs") if seconds < 1e-3 else (1e3, "ms") if seconds < 1 else (1.0, "s")


def fmt_num(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def fmt_time(seconds):
    k, u = unit_of(seconds)
    return f"{fmt_num(seconds * k)} {u}"


def fmt_cell(st):
    """p50 (p90 / p99), all in the unit p50 reads best in."""
    k, u = unit_of(st["p50"])
    return f"{fmt_num(st['p50'] * k)} ({fmt_num(st['p90'] * k)} / {fmt_num(st['p99'] * k)}) {u}"


def summarize(results):
    """Per (model, batch, threads): median over rounds of each p50 (p90, p99), with the range."""
    keyed = {}
    for r in results:
        keyed.setdefault((r["model"], r["batch"], r["threads"]), []).append(r)
    out = []
    for (model, batch, threads), rs in keyed.items():
        row = {"model": model, "batch": batch, "threads": threads, "rounds": len(rs),
               "runs_per_round": rs[0]["runs_per_round"], "macs": rs[0]["macs"],
               "max_abs_err": rs[0]["max_abs_err"],
               "load": [min(r["load_before"] for r in rs), max(r["load_after"] for r in rs)],
               "triad_compile_s": rs[0]["triad_compile_s"], "ort_compile_s": rs[0]["ort_compile_s"],
               "ort_peak_rss_mib": rs[0]["ort_peak_rss_mib"]}
        for side in ("triad", "ort"):
            p50s = sorted(r[side]["p50"] for r in rs)
            row[side] = {"p50": float(np.median(p50s)), "p50_range": [p50s[0], p50s[-1]],
                         "p90": float(np.median([r[side]["p90"] for r in rs])),
                         "p99": float(np.median([r[side]["p99"] for r in rs])),
                         "n": sum(r[side]["n"] for r in rs)}
            row[side]["gflops"] = 2.0 * row["macs"] / row[side]["p50"] / 1e9
            row[side]["per_s"] = batch / row[side]["p50"]
        sp = sorted(r["speedup_p50"] for r in rs)
        row["speedup"] = float(np.median(sp))
        row["speedup_range"] = [sp[0], sp[-1]]
        out.append(row)
    return out


def table_rows(summary):
    """The result table as rows of strings (stdout and the Markdown file share it)."""
    head = ["model", "batch", "threads", "Triad p50 (p90 / p99)", "ORT p50 (p90 / p99)",
            "ORT/Triad", "Triad GFLOP/s", "ORT GFLOP/s", "Triad inf/s", "ORT inf/s", "load"]
    rows = []
    for row in summary:
        if row["model"] == IDENTITY:
            continue
        t, o = row["triad"], row["ort"]
        sp = f"{row['speedup']:.2f}"
        if row["rounds"] > 1:
            sp += f" ({row['speedup_range'][0]:.2f}-{row['speedup_range'][1]:.2f})"
        rows.append([row["model"], str(row["batch"]), str(row["threads"]), fmt_cell(t),
                     fmt_cell(o), sp, f"{t['gflops']:.1f}", f"{o['gflops']:.1f}",
                     fmt_num(t["per_s"]), fmt_num(o["per_s"]),
                     f"{row['load'][0]:.1f}-{row['load'][1]:.1f}"])
    return head, rows


def overhead_lines(summary):
    return [f"threads {row['threads']}: Triad {fmt_cell(row['triad'])} (C++ call), ORT "
            f"IOBinding {fmt_cell(row['ort'])} (Python call)"
            for row in summary if row["model"] == IDENTITY]


def peak_text(peak):
    return ", ".join(f"{v:.0f} GFLOP/s at {k} thread{'s' if k > 1 else ''}"
                     for k, v in sorted(peak.items())) or "not measured"


def print_table(summary, peak):
    lines = overhead_lines(summary)
    if lines:
        print()
        print("Per-call fixed overhead (identity-sized model: Relu on [1,1]), p50 (p90 / p99):")
        for line in lines:
            print("  " + line)
    print()
    print("ORT/Triad = ORT p50 / Triad p50 (> 1: Triad faster); GFLOP/s = 2 x MACs / p50; FMA "
          f"peak {peak_text(peak)}")
    head, rows = table_rows(summary)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def markdown(summary, peak):
    head, rows = table_rows(summary)
    out = []
    lines = overhead_lines(summary)
    if lines:
        out += ["Per-call fixed overhead (identity-sized model), p50 (p90 / p99):", ""]
        out += ["- " + line for line in lines] + [""]
    out += ["FMA peak: " + peak_text(peak), ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--models", nargs="+", default=None, metavar="NAME",
                    help=f"models (default: {' '.join(SHIPPED + LARGE)})")
    ap.add_argument("--quick", action="store_true",
                    help="shipped models only, short budgets (about a minute once compiled)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--repeat", type=int, default=None,
                    help="alternating rounds per case (each side timed once per round; the "
                    "spread over rounds is reported; default 5, quick 3)")
    ap.add_argument("--budget", type=float, default=None,
                    help="timed seconds per case and side, over all rounds (default 3, quick 0.6)")
    ap.add_argument("--runs", type=int, default=None,
                    help="timed calls per side and round (instead of --budget)")
    ap.add_argument("--max-runs", type=int, default=None, help="timed calls per round at most")
    ap.add_argument("--min-runs", type=int, default=None, help="timed calls per round at least")
    ap.add_argument("--wait-load", type=float, default=0.0, metavar="L",
                    help="before each case wait until the 1-minute load average is below L")
    ap.add_argument("--wait-max", type=float, default=180.0,
                    help="longest wait for --wait-load, seconds")
    ap.add_argument("--triad", default=os.environ.get("TRIAD", str(ROOT / "build/cli/triad")))
    ap.add_argument("--gemm-bench", default=str(ROOT / "build/bench/triad-gemm-bench"),
                    help="triad-gemm-bench for the FMA peak ('' to skip)")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python that runs the ONNX Runtime peer (default: this one)")
    ap.add_argument("--work", default=str(Path.home() / ".cache/triad/bench"),
                    help="inputs, outputs, symbolic-batch copies and `triad run` JSON files")
    ap.add_argument("--zoo", default=os.environ.get("TRIAD_ZOO_CACHE",
                                                    str(Path.home() / ".cache/triad/zoo")))
    ap.add_argument("--no-build-missing", action="store_true",
                    help="fail instead of building a missing large model")
    ap.add_argument("--no-overhead", action="store_true",
                    help="skip the identity-sized model (per-call overhead)")
    ap.add_argument("--json", default=None, help="write all results to this file (atomically)")
    ap.add_argument("--no-spin", action="store_true",
                    help="idle worker threads sleep instead of spinning: OMP_WAIT_POLICY=passive "
                    "for Triad, session.intra_op.allow_spinning=0 for ONNX Runtime")
    ap.add_argument("--profile", action="store_true",
                    help="instead of timing: Triad's per-layer time (`triad run --profile`) and "
                    "ONNX Runtime's per-op-kind time (its profiler, through the peer)")
    ap.add_argument("--profile-runs", type=int, default=50, help="calls profiled per side")
    ap.add_argument("--markdown", default=None, help="write the tables as Markdown to this file")
    args = ap.parse_args()

    if args.no_spin:
        os.environ["OMP_WAIT_POLICY"] = "passive"  # inherited by `triad run`
    elif os.environ.get("OMP_WAIT_POLICY"):
        log(f"note: OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} is set for Triad's threads")
    models = args.models or (SHIPPED if args.quick else SHIPPED + LARGE)
    rounds = args.repeat or (3 if args.quick else 5)
    budget = args.budget if args.budget is not None else (0.6 if args.quick else 3.0)
    args.max_runs = args.max_runs or (1000 if args.quick else 5000)
    args.min_runs = args.min_runs or (5 if args.quick else 10)
    if rounds < 1 or (args.runs is not None and args.runs < 1):
        raise BenchError("--repeat and --runs must be at least 1")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if not Path(args.triad).exists():
        raise BenchError(f"{args.triad} not found: build Triad first (scripts/build.sh) or pass "
                         "--triad")
    rng = np.random.default_rng(5)
    t_start = time.time()
    log(f"load average at start: {os.getloadavg()}")

    cases = []
    names = ([] if args.profile or args.no_overhead else [IDENTITY]) + models
    for name in names:
        if name == IDENTITY:
            src = work / IDENTITY / f"{IDENTITY}.onnx"
            identity_model(src)
        else:
            src = model_path(name, args.zoo, not args.no_build_missing)
        fixed = None
        try:
            m = onnx.load(str(src), load_external_data=False)
            d0 = m.graph.input[0].type.tensor_type.shape.dim[0]
            fixed = d0.dim_value if d0.HasField("dim_value") else None
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            log(f"[{name}] cannot read the input shape: {e}")
        for batch in ([1] if name == IDENTITY else args.batches):
            path = src
            if fixed is not None and batch != fixed:
                if name in BATCH_FIXED:
                    log(f"[{name}] batch {batch} skipped: the export fixes batch {fixed}")
                    continue
                path = work / f"{name}_symbolic" / f"{name}.onnx"
                if not path.exists() or path.stat().st_mtime < src.stat().st_mtime:
                    with_symbolic_batch(src, path)
            inputs, spec = write_inputs(name, path, batch, args.zoo, work, rng)
            macs = inspect_macs(args.triad, path, batch, work)
            cases.append({"model": name, "batch": batch, "path": path, "inputs": inputs,
                          "spec": spec, "macs": macs})
            log(f"[{name} b{batch}] {macs:,} MACs; inputs {', '.join(map(str, inputs))}")

    peak = {} if args.profile else fma_peak(args.gemm_bench, args.threads)
    if peak:
        log(f"FMA peak GFLOP/s by threads: {peak}")

    results, profiles, ort_version = [], [], None
    for threads in args.threads:
        for case in cases:
            tag = f"{case['model']}_b{case['batch']}_t{threads}"
            label = f"{case['model']} b{case['batch']} t{threads}"
            if args.profile:
                p = profile_case(args, case, threads, work, tag)
                p.update({"model": case["model"], "batch": case["batch"], "threads": threads})
                profiles.append(p)
                print_profile(label, p)
                continue
            recs, ort_version = run_case(args, case, threads, rounds, budget, work, tag)
            results += recs
            s = summarize(recs)[0]
            log(f"[{label}] Triad p50 {fmt_time(s['triad']['p50'])}, ORT p50 "
                f"{fmt_time(s['ort']['p50'])}, ORT/Triad {s['speedup']:.2f}x "
                f"({rounds} rounds of {s['runs_per_round']}; max abs err "
                f"{s['max_abs_err']:.3g}; load {s['load'][0]:.1f}->{s['load'][1]:.1f})")

    info = machine_info(ort_version)
    if args.profile:
        if args.json:
            write_atomic(args.json, json.dumps({"machine": info, "profiles": profiles},
                                               indent=1) + "\n")
        return
    summary = summarize(results)
    print_table(summary, peak)
    if args.json:
        doc = {"machine": info, "spin": not args.no_spin,
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
               "fma_peak_gflops": {str(k): v for k, v in peak.items()},
               "command": " ".join([Path(sys.executable).name] + sys.argv),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "seconds": time.time() - t_start, "rtol": RTOL, "atol": ATOL,
               "method": "triad run (C++ timing) vs bench/peers/onnxruntime_peer.py (IOBinding, "
                         "Python timing), alternating rounds",
               "summary": summary, "runs": results}
        write_atomic(args.json, json.dumps(peer_common._finite(doc), indent=1) + "\n")
        log(f"wrote {args.json}")
    if args.markdown:
        write_atomic(args.markdown, markdown(summary, peak))
        log(f"wrote {args.markdown}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)
