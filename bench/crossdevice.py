#!/usr/bin/env python3
"""The cross-device flow: one model compiled and run on every device, side by side.

For MODEL with test inputs X (and labels Y) it measures, in one run on this machine:
  - the reference interpreter (the oracle: every other output is compared with it),
  - the CPU target (generated C++), the GPU target (OpenCL: PoCL here, any vendor elsewhere),
    and ONNX Runtime as the peer, each with latency p50/p90/p99 over --repeat runs, compile time,
    max abs error against the interpreter and top-1 accuracy,
  - the FPGA target for the layers it covers: fixed-point accuracy of the bit-accurate emulator,
    and for MLPs the generated Verilog simulated in Verilator (latency and II in cycles,
    bit-exact check) and sized by Yosys (LUT/FF/DSP/BRAM),
and writes OUT/report.json, OUT/report.md, OUT/report.html (inline SVG charts) and appends every
number to a SQLite history (OUT/../results.db by default) for comparisons over time.

Usage: .venv/bin/python bench/crossdevice.py MODEL --input X.npy [--labels Y.npy] [--out DIR]
       [--repeat N] [--threads N] [--reuse R] [--synth] [--skip gpu,fpga,ort] [--db FILE]
A device that cannot run here (no OpenCL platform, no verilator or yosys, an op the FPGA flow
does not cover) is reported as skipped with the reason; it never fails the flow.
"""
import argparse
import datetime
import html
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run(cmd, **kw):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return r, time.monotonic() - t0


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def accuracy(probs, labels):
    if labels is None or probs.ndim != 2 or probs.shape[0] != labels.shape[0]:
        return None
    return float((probs.argmax(1) == labels).mean())


def triad_device(args, device, x_path, out_dir, reference, labels):
    """Runs `triad run --target device`; returns the device's result entry."""
    out = os.path.join(out_dir, f"y_{device}.npy")
    timing = os.path.join(out_dir, f"timing_{device}.json")
    cmd = [args.triad, "run", args.model, "--target", device, "--batch", str(args.batch),
           "--input", x_path, "--output", out, "--repeat", str(args.repeat), "--json", timing,
           "--profile"]
    if device == "cpu" and args.threads:
        cmd += ["--threads", str(args.threads)]
    r, secs = run(cmd)
    if r.returncode != 0:
        return {"device": device, "status": "skipped",
                "reason": last_line(r.stderr) or f"exit {r.returncode}"}
    t = json.load(open(timing))
    y = np.load(out)
    entry = {"device": device, "status": "ok", "engine": f"triad {device}",
             "compile_s": t["compile_ms"] / 1e3, "p50_ms": t["p50_ms"], "p90_ms": t["p90_ms"],
             "p99_ms": t["p99_ms"], "first_run_ms": t["first_run_ms"],
             "layers": sorted(t.get("layers", []), key=lambda l: -l["ms"])[:8],
             "accuracy": accuracy(y, labels)}
    if reference is not None:
        entry["max_abs_error"] = float(np.abs(y.astype(np.float64) - reference).max())
    return entry


def ort_device(args, x, reference, labels):
    try:
        import onnxruntime as ort
    except ImportError as e:
        return {"device": "cpu", "engine": "onnxruntime", "status": "skipped", "reason": str(e)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads or os.cpu_count()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    t0 = time.monotonic()
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    compile_s = time.monotonic() - t0
    name = sess.get_inputs()[0].name
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        y = sess.run(None, {name: x})[0]
        times.append((time.perf_counter() - t0) * 1e3)
    timed = sorted(times[1:] if len(times) > 1 else times)
    pick = lambda q: timed[min(len(timed) - 1, int(q * len(timed)))]
    entry = {"device": "cpu", "engine": f"onnxruntime {ort.__version__}", "status": "ok",
             "compile_s": compile_s, "p50_ms": timed[len(timed) // 2], "p90_ms": pick(0.9),
             "p99_ms": pick(0.99), "first_run_ms": times[0], "accuracy": accuracy(y, labels)}
    if reference is not None:
        entry["max_abs_error"] = float(np.abs(y.astype(np.float64) - reference).max())
    return entry


def fpga_device(args, x_path, out_dir, labels_path):
    """Emulator accuracy, then (when the model is an MLP the emitter covers) RTL sim + synth."""
    entry = {"device": "fpga", "engine": "triad fpga (fixed<16,6>)", "status": "ok"}
    qjson = os.path.join(out_dir, "quantize.json")
    cmd = [args.triad, "quantize", args.model, "--input", x_path, "--json", qjson]
    if labels_path:
        cmd += ["--labels", labels_path]
    r, secs = run(cmd)
    if r.returncode != 0:
        return {**entry, "status": "skipped", "reason": last_line(r.stderr)}
    q = json.load(open(qjson))
    out0 = q["outputs"][0]
    entry.update({"accuracy": out0.get("accuracy_fixed"), "float_accuracy": out0.get("accuracy_float"),
                  "top1_agreement": out0.get("top1_agreement"),
                  "max_abs_error": out0.get("max_abs_error")})
    # RTL: a small slice of the inputs keeps the Verilator run short.
    xs = np.load(x_path)[: args.fpga_samples]
    xs_path = os.path.join(out_dir, "x_fpga.npy")
    np.save(xs_path, xs)
    design = os.path.join(out_dir, "fpga")
    r, compile_s = run([args.triad, "compile", args.model, "--target", "fpga", "--reuse",
                        str(args.reuse), "--input", xs_path, "-o", design])
    if r.returncode != 0:
        entry["rtl"] = {"status": "skipped", "reason": last_line(r.stderr)}
        return entry
    sim_json = os.path.join(out_dir, "sim.json")
    r, sim_s = run([args.triad, "sim", design, "--input", xs_path, "--json", sim_json])
    if r.returncode not in (0, 6):
        entry["rtl"] = {"status": "skipped", "reason": last_line(r.stderr)}
        return entry
    s = json.load(open(sim_json))
    entry["rtl"] = {"status": "ok", "reuse": args.reuse, "samples": s["samples"],
                    "latency_cycles": s["latency_cycles"], "ii": s["ii"],
                    "mismatches": s["mismatches"], "inferences_per_second": s["inferences_per_second"],
                    "latency_us_at_200mhz": s["latency_cycles"] / 200.0,
                    "compile_s": compile_s, "sim_s": sim_s}
    if not args.synth:
        entry["synth"] = {"status": "skipped", "reason": "Yosys takes minutes per layer: add --synth"}
        return entry
    syn_json = os.path.join(out_dir, "synth.json")
    r, syn_s = run([args.triad, "synth", design, "--json", syn_json])
    if r.returncode != 0:
        entry["synth"] = {"status": "skipped", "reason": last_line(r.stderr)}
    else:
        tot = json.load(open(syn_json))["total"]
        entry["synth"] = {"status": "ok", "family": "xc7", "seconds": syn_s,
                          **{k: tot.get(k) for k in ("lut", "ff", "dsp", "bram36_equivalent")}}
    return entry


def bar_chart(title, rows, unit):
    """Horizontal bars as inline SVG: rows = [(label, value)]."""
    rows = [(l, v) for l, v in rows if v is not None]
    if not rows:
        return ""
    w, bh, left = 560, 22, 200
    top = max(v for _, v in rows) or 1
    h = 30 + bh * len(rows)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img">',
             f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>']
    for i, (label, v) in enumerate(rows):
        y = 26 + i * bh
        bw = max(1, (w - left - 80) * v / top)
        parts.append(f'<text x="0" y="{y + 15}">{html.escape(label)}</text>')
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{bw:.1f}" height="{bh - 6}" fill="#4a7ab5"/>')
        parts.append(f'<text x="{left + bw + 4:.1f}" y="{y + 15}">{v:.4g} {unit}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def render_markdown(rep):
    lines = [f"# Triad cross-device report: {os.path.basename(rep['model'])}", "",
             f"{rep['timestamp']} · {rep['host']} · git {rep['git']} · batch {rep['batch']} · "
             f"{rep['macs']:,} MACs per batch", "",
             "| device | engine | p50 ms | p90 ms | p99 ms | compile s | accuracy | max abs error vs interp |",
             "|---|---|---|---|---|---|---|---|"]
    for d in rep["devices"]:
        if d["status"] != "ok":
            lines.append(f"| {d['device']} | {d.get('engine', '')} | skipped: {d.get('reason', '')} |||||")
            continue
        lines.append(f"| {d['device']} | {d['engine']} | {fmt(d.get('p50_ms'), '.3f')} | "
                     f"{fmt(d.get('p90_ms'), '.3f')} | {fmt(d.get('p99_ms'), '.3f')} | "
                     f"{fmt(d.get('compile_s'), '.1f')} | {fmt(d.get('accuracy'), '.4f')} | "
                     f"{fmt(d.get('max_abs_error'), '.2e')} |")
    fp = next((d for d in rep["devices"] if d["device"] == "fpga"), None)
    if fp and fp["status"] == "ok":
        lines += ["", "## FPGA", "",
                  f"Fixed point (bit-accurate emulator): accuracy {fmt(fp.get('accuracy'), '.4f')} "
                  f"(float {fmt(fp.get('float_accuracy'), '.4f')}), top-1 agreement with float "
                  f"{fmt(fp.get('top1_agreement'), '.4f')}."]
        rtl = fp.get("rtl", {})
        if rtl.get("status") == "ok":
            lines.append(f"RTL (reuse {rtl['reuse']}, Verilator, {rtl['samples']} inputs): latency "
                         f"{rtl['latency_cycles']} cycles ({rtl['latency_us_at_200mhz']:.3f} µs at an assumed "
                         f"200 MHz), II {rtl['ii']}, {rtl['inferences_per_second']:.3g} inferences/s, "
                         f"{rtl['mismatches']} mismatches against the emulator.")
        else:
            lines.append(f"RTL: skipped ({rtl.get('reason', '')}).")
        syn = fp.get("synth", {})
        if syn.get("status") == "ok":
            lines.append(f"Yosys synth_xilinx (xc7): {syn['lut']} LUT, {syn['ff']} FF, {syn['dsp']} DSP48E1, "
                         f"{syn.get('bram36_equivalent')} BRAM36 ({syn['seconds']:.0f} s).")
        elif syn:
            lines.append(f"Resources: skipped ({syn.get('reason', '')}).")
    lines += ["", "Latency: median of runs 2..N (`--repeat`); the FPGA's is simulated cycles, not wall "
              "time. Errors are against the reference interpreter on the same inputs."]
    return "\n".join(lines) + "\n"


def render_html(rep, md):
    ok = [d for d in rep["devices"] if d["status"] == "ok" and d.get("p50_ms") is not None]
    lat = bar_chart("Latency p50 (ms, lower is better)", [(d["engine"], d["p50_ms"]) for d in ok], "ms")
    acc_rows = [(d["engine"], d.get("accuracy")) for d in rep["devices"] if d["status"] == "ok"]
    acc = bar_chart("Top-1 accuracy", acc_rows, "")
    body = html.escape(md).replace("\n", "<br>\n")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Triad report</title>"
            f"<style>body{{font-family:sans-serif;max-width:900px;margin:2em auto}}</style></head>"
            f"<body>{lat}<br>{acc}<hr><div style='font-family:monospace'>{body}</div></body></html>\n")


def record_history(db, rep):
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE IF NOT EXISTS results (timestamp TEXT, git TEXT, host TEXT, "
                    "model TEXT, batch INTEGER, device TEXT, engine TEXT, metric TEXT, value REAL)")
        rows = []
        for d in rep["devices"]:
            if d["status"] != "ok":
                continue
            metrics = {k: d.get(k) for k in ("p50_ms", "p90_ms", "p99_ms", "compile_s", "accuracy",
                                              "max_abs_error")}
            for sub in ("rtl", "synth"):
                for k, v in (d.get(sub) or {}).items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        metrics[f"{sub}_{k}"] = v
            for k, v in metrics.items():
                if v is not None:
                    rows.append((rep["timestamp"], rep["git"], rep["host"], rep["model"], rep["batch"],
                                 d["device"], d["engine"], k, float(v)))
        con.executemany("INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?)", rows)
    con.close()
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--input", required=True, help="test inputs (.npy), first dim = batch")
    ap.add_argument("--labels", help="labels (.npy) for top-1 accuracy")
    ap.add_argument("--out", default="out/report")
    ap.add_argument("--db", help="SQLite history (default: OUT/../results.db)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (triad and ORT); 0: all")
    ap.add_argument("--reuse", default="auto",
                    help="FPGA reuse factor of Dense and Conv layers, or auto (keeps the II)")
    ap.add_argument("--fpga-samples", type=int, default=200, help="inputs streamed through the RTL")
    ap.add_argument("--skip", default="", help="comma list of gpu, fpga, ort")
    ap.add_argument("--synth", action="store_true",
                    help="also size the FPGA design with Yosys (minutes per layer module)")
    ap.add_argument("--triad", default=os.path.join(REPO, "build", "cli", "triad"))
    args = ap.parse_args()
    args.skip = set(s for s in args.skip.split(",") if s)
    os.makedirs(args.out, exist_ok=True)
    x = np.load(args.input)
    args.batch = x.shape[0]
    labels = np.load(args.labels) if args.labels else None

    r, _ = run([args.triad, "inspect", args.model, "--batch", str(args.batch), "--json",
                os.path.join(args.out, "inspect.json")])
    if r.returncode != 0:
        sys.exit(f"crossdevice: triad inspect failed: {last_line(r.stderr)}")
    insp = json.load(open(os.path.join(args.out, "inspect.json")))
    macs = int(insp.get("totals", {}).get("macs", 0))
    git = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "unknown"
    rep = {"model": args.model, "batch": args.batch, "macs": macs, "git": git,
           "timestamp": datetime.datetime.now().isoformat(timespec="seconds"),
           "host": f"{platform.node()} ({os.cpu_count()} cores)", "devices": []}

    print(f"crossdevice: {args.model}, batch {args.batch}, {macs:,} MACs", flush=True)
    ref = triad_device(args, "interp", args.input, args.out, None, labels)
    reference = np.load(os.path.join(args.out, "y_interp.npy")).astype(np.float64) \
        if ref["status"] == "ok" else None
    rep["devices"].append(ref)
    steps = [("cpu", lambda: triad_device(args, "cpu", args.input, args.out, reference, labels))]
    if "ort" not in args.skip:
        steps.append(("ort", lambda: ort_device(args, x, reference, labels)))
    if "gpu" not in args.skip:
        steps.append(("gpu", lambda: triad_device(args, "gpu", args.input, args.out, reference, labels)))
    if "fpga" not in args.skip:
        steps.append(("fpga", lambda: fpga_device(args, args.input, args.out, args.labels)))
    for name, step in steps:
        print(f"crossdevice: {name} ...", flush=True)
        entry = step()
        rep["devices"].append(entry)
        status = entry["status"] if entry["status"] != "ok" else \
            f"p50 {fmt(entry.get('p50_ms'), '.3f')} ms, accuracy {fmt(entry.get('accuracy'), '.4f')}"
        print(f"crossdevice:   {entry.get('engine', name)}: {status} {entry.get('reason', '')}", flush=True)

    md = render_markdown(rep)
    write_atomic(os.path.join(args.out, "report.json"), json.dumps(rep, indent=2) + "\n")
    write_atomic(os.path.join(args.out, "report.md"), md)
    write_atomic(os.path.join(args.out, "report.html"), render_html(rep, md))
    db = args.db or os.path.join(os.path.dirname(os.path.abspath(args.out)), "results.db")
    n = record_history(db, rep)
    print()
    print(md)
    print(f"crossdevice: wrote {args.out}/report.json, report.md, report.html; {n} rows appended to {db}")


if __name__ == "__main__":
    main()
