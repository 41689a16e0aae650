#!/usr/bin/env python3
"""Two threads against one: Triad's CPU target at --threads 1 and 2, with and without a busy
neighbour, per spin setting of its thread pool (TRIAD_SPIN_US).

The issue's requirement: two threads are never slower than one, in any regime of the thread pool.
For every (spin setting, busy neighbours) case the script times `triad run MODEL --target cpu
--threads T --repeat N+1 --json OUT` (C++ timing around each call; p50 of the N timed calls) for
T = 1 and T = 2 in alternating rounds (1 2, 2 1, 1 2, ...), and reports the median p50 over the
rounds and t2/t1 (below 1: two threads faster). A busy neighbour is a separate process spinning
on one core (`while True: pass`), started before the case and stopped after it, as another
user's job would be.

It is a benchmark, not a test: on a shared machine the numbers move with the load (recorded with
every case). `--check R` makes the exit status 1 when a case's t2/t1 exceeds R.

`--adapt 0 1` also runs each case with TRIAD_POOL_ADAPT=0: the pool as it was before its
governor (no inline fallback, spinning never turned off), for before/after comparisons.

Examples:
  .venv/bin/python bench/threads_check.py --models models/digits_cnn.onnx \\
      ~/.cache/triad/zoo/mobilenet_v2/mobilenet_v2.onnx --adapt 0 1 --spin default 1000 --busy 0 1
  .venv/bin/python bench/threads_check.py --smoke      # one quick case (the ctest check)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load():
    return float(open("/proc/loadavg").read().split()[0])


def make_inputs(model, work):
    """Seeded normal inputs for the model's graph inputs (fixed shapes; symbolic dims -> 1)."""
    import numpy as np
    import onnx

    m = onnx.load(str(model), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    files = []
    rng = np.random.default_rng(0)
    for i, inp in enumerate(x for x in m.graph.input if x.name not in inits):
        t = inp.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.integer):
            a = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            a = rng.standard_normal(shape).astype(dtype)
        f = Path(work) / f"{Path(model).stem}_in{i}.npy"
        np.save(f, a)
        files.append(str(f))
    return files


def run_triad(triad, model, inputs, threads, runs, env, work):
    out = Path(work) / "run.json"
    cmd = [triad, "run", str(model), "--target", "cpu", "--threads", str(threads), "--repeat",
           str(runs + 1), "--json", str(out), "-i", *inputs]
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return json.loads(out.read_text())["p50_ms"]


def start_busy(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triad", default=str(ROOT / "build" / "cli" / "triad"))
    ap.add_argument("--models", nargs="+", default=[str(ROOT / "models" / "digits_cnn.onnx")])
    ap.add_argument("--spin", nargs="+", default=["default", "1000"],
                    help="TRIAD_SPIN_US values ('default': unset)")
    ap.add_argument("--adapt", nargs="+", default=["1"],
                    help="TRIAD_POOL_ADAPT values (0: the pool without its governor, as before)")
    ap.add_argument("--busy", nargs="+", type=int, default=[0, 1],
                    help="busy neighbour processes per case")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=1.0,
                    help="seconds per triad run (sets the number of calls)")
    ap.add_argument("--check", type=float, default=None,
                    help="exit 1 when a case's t2/t1 exceeds this")
    ap.add_argument("--json", default=None)
    ap.add_argument("--smoke", action="store_true",
                    help="jet_mlp, one round, default spin, no neighbour: checks the script runs")
    a = ap.parse_args()
    if a.smoke:
        a.models = [str(ROOT / "models" / "jet_mlp.onnx")]
        a.spin, a.busy, a.rounds, a.budget = ["default"], [0], 1, 0.05

    results = []
    with tempfile.TemporaryDirectory(prefix="triad-threads-") as work:
        for model in a.models:
            inputs = make_inputs(model, work)
            base = dict(os.environ)
            base.pop("TRIAD_SPIN_US", None)
            # Compile once (not timed) and size the runs from one timed call per thread count.
            t = run_triad(a.triad, model, inputs, 1, 3, base, work)
            runs = max(5, min(20000, int(a.budget * 1000 / max(t, 1e-3))))
            for adapt, spin in [(ad, sp) for ad in a.adapt for sp in a.spin]:
                env = dict(base)
                env["TRIAD_POOL_ADAPT"] = adapt
                if spin != "default":
                    env["TRIAD_SPIN_US"] = spin
                for busy in a.busy:
                    procs = start_busy(busy)
                    try:
                        time.sleep(0.2)
                        l0 = load()
                        p50 = {1: [], 2: []}
                        for r in range(a.rounds):
                            for threads in ((1, 2) if r % 2 == 0 else (2, 1)):
                                p50[threads].append(
                                    run_triad(a.triad, model, inputs, threads, runs, env, work))
                        l1 = load()
                    finally:
                        stop_busy(procs)
                    t1, t2 = statistics.median(p50[1]), statistics.median(p50[2])
                    case = {"model": Path(model).stem, "adapt": adapt, "spin_us": spin,
                            "busy": busy,
                            "runs": runs, "rounds": a.rounds, "t1_ms": t1, "t2_ms": t2,
                            "t2_over_t1": t2 / t1, "t1_rounds": p50[1], "t2_rounds": p50[2],
                            "load": [l0, l1]}
                    results.append(case)
                    print(f"{case['model']:>14} adapt {adapt} spin {spin:>7} busy {busy}: 1 thread "
                          f"{t1:9.4f} ms, 2 threads {t2:9.4f} ms, t2/t1 {t2 / t1:5.2f} "
                          f"(load {l0:.1f}-{l1:.1f})", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(
            {"command": sys.argv, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
             "cases": results}, indent=1) + "\n")
    if a.check is not None:
        bad = [c for c in results if c["t2_over_t1"] > a.check]
        for c in bad:
            print(f"two threads slower than one: {c['model']} adapt {c['adapt']} spin "
                  f"{c['spin_us']} busy "
                  f"{c['busy']}: t2/t1 {c['t2_over_t1']:.2f} > {a.check}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
