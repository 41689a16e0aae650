#!/usr/bin/env python3
"""The CPU target against its peers, one `triad bench` per model and thread count: the table of
docs/performance.md ("Models: against ONNX Runtime and OpenVINO").

For every model and thread count it runs

  triad bench MODEL --targets cpu --peers onnxruntime,openvino --threads T --batch B ...

(the project's own benchmark: Triad and the peers take turns in interleaved rounds, each side
timed around its own call, outputs checked against the reference interpreter), reads the
report.json it writes and prints one Markdown row per (model, threads, batch): p50 of each side
and the ratios peer p50 / Triad p50 (above 1: Triad faster). The reports stay in --out, the
table (with the machine's load average before and after every case, and the CPU time other
processes took during it, as a percentage of one core: column "others") in --json.

Models are paths, or names of the shipped models (models/NAME.onnx) and of the zoo's large
models (~/.cache/triad/zoo/NAME/NAME.onnx, built by scripts/zoo/large_models.py). A model exported
with a fixed batch of 1 is benchmarked at a larger --batch through a copy whose batch dimension is
symbolic (bench/cpu_vs_ort.py's with_symbolic_batch: models without a Reshape).

Examples:
  .venv/bin/python bench/peer_table.py --models jet_mlp digits_cnn mobilenet_v2 resnet50 \\
      bert_base --threads 1 2 --json bench/results/peers_2026-11-25.json
  .venv/bin/python bench/peer_table.py --models resnet50 --batch 32 --threads 1 2
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZOO = Path(os.environ.get("TRIAD_ZOO_CACHE", Path.home() / ".cache" / "triad" / "zoo"))
SIDES = ("cpu", "onnxruntime", "openvino")


def load():
    return float(open("/proc/loadavg").read().split()[0])


def busy_s():
    """CPU seconds the whole machine has spent busy (all cores; /proc/stat minus idle, iowait)."""
    f = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def own_s():
    """CPU seconds of this process's finished children (the bench and its workers and peers)."""
    t = os.times()
    return t.children_user + t.children_system


def resolve(model):
    p = Path(model)
    if p.suffix == ".onnx":
        if not p.is_file():
            sys.exit(f"peer_table.py: model file {p} not found")
        return p
    for cand in (ROOT / "models" / f"{model}.onnx", ZOO / model / f"{model}.onnx"):
        if cand.exists():
            return cand
    sys.exit(f"peer_table.py: no model {model!r} (models/{model}.onnx or {ZOO}/{model}/)")


def batch_model(model, batch, out):
    """The model itself, or for batch > 1 of a fixed-batch-1 export a symbolic-batch copy."""
    if batch == 1:
        return model
    import onnx

    try:
        m = onnx.load(str(model), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends: say which file
        sys.exit(f"peer_table.py: {model} is not a readable ONNX model: {e}")
    inits = {i.name for i in m.graph.initializer}
    fixed = [i.type.tensor_type.shape.dim[0].dim_value for i in m.graph.input
             if i.name not in inits and i.type.tensor_type.shape.dim]
    if batch == 1 or not any(d == 1 for d in fixed):
        return model
    sys.path.insert(0, str(ROOT / "bench"))
    from cpu_vs_ort import with_symbolic_batch

    copy = Path(out) / f"{model.stem}_symbolic" / f"{model.stem}.onnx"
    copy.parent.mkdir(parents=True, exist_ok=True)
    if not copy.exists() or copy.stat().st_mtime < model.stat().st_mtime:
        with_symbolic_batch(model, copy)
    return copy


def run_case(args, model, threads, batch, out):
    cmd = [args.triad, "bench", str(model), "--targets", "cpu", "--peers", ",".join(args.peers),
           "--threads", str(threads), "--batch", str(batch), "--repeat", str(args.repeat),
           "--rounds", str(args.rounds), "-o", str(out), "--no-db"]
    before = load()
    t0, busy0, own0 = time.time(), busy_s(), own_s()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    # Other processes' CPU time during the run, in cores: on a small machine a fraction of a
    # core elsewhere decides the 2-thread rows (docs/performance.md).
    foreign = max(0.0, (busy_s() - busy0) - (own_s() - own0)) / max(wall, 1e-9)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    report = json.loads((Path(out) / "report.json").read_text())
    row = {"model": Path(model).stem, "threads": threads, "batch": batch, "load_before": before,
           "load_after": load(), "foreign_cores": round(foreign, 3), "seconds": round(wall, 1),
           "command": " ".join(cmd)}
    for res in report["results"]:
        if res["batch"] != batch:
            continue
        if res["status"] != "ok":
            row[res["target"]] = {"status": res["status"], "why": res.get("why")}
            continue
        lat = res["latency_ms"]
        row[res["target"]] = {k: lat[k] for k in ("p50", "p90", "p99", "min", "count")}
        row[res["target"]]["compile_s"] = res.get("compile_s")
        row[res["target"]]["max_abs_err"] = (res.get("accuracy") or {}).get("max_abs_err")
    return row


def fmt_ms(v):
    return f"{v * 1000:.2f} µs" if v < 0.1 else (f"{v:.3f} ms" if v < 10 else f"{v:.1f} ms")


def markdown(rows, peers):
    head = ["model", "threads", "batch", "Triad"] + list(peers) + [f"{p}/Triad" for p in peers]
    head += ["load", "others"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        tri = r.get("cpu", {}).get("p50")
        cells = [r["model"], str(r["threads"]), str(r["batch"]), fmt_ms(tri) if tri else "—"]
        for p in peers:
            v = r.get(p, {}).get("p50")
            cells.append(fmt_ms(v) if v else r.get(p, {}).get("status", "—"))
        for p in peers:
            v = r.get(p, {}).get("p50")
            cells.append(f"{v / tri:.2f}" if v and tri else "—")
        cells.append(f"{r['load_before']:.1f}-{r['load_after']:.1f}")
        f = r.get("foreign_cores")
        cells.append(f"{100 * f:.0f} %" if f is not None else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--batch", nargs="+", type=int, default=[1])
    ap.add_argument("--peers", nargs="+", default=["onnxruntime", "openvino"])
    ap.add_argument("--repeat", type=int, default=60, help="timed runs per side (default 60)")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (default 6)")
    ap.add_argument("--triad", default=str(ROOT / "build" / "cli" / "triad"))
    ap.add_argument("--out", default=str(ROOT / "out" / "peer_table"))
    ap.add_argument("--json", help="write the rows here (atomically)")
    args = ap.parse_args()

    rows = []
    for name in args.models:
        model = resolve(name)
        for batch in args.batch:
            path = batch_model(model, batch, args.out)
            for threads in args.threads:
                out = Path(args.out) / f"{model.stem}_b{batch}_t{threads}"
                row = run_case(args, path, threads, batch, out)
                rows.append(row)
                print(markdown([row], args.peers).splitlines()[-1], flush=True)
    print()
    print(markdown(rows, args.peers))
    if args.json:
        tmp = Path(args.json + ".tmp")
        tmp.write_text(json.dumps({"rows": rows, "peers": args.peers, "argv": sys.argv}, indent=1))
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
