#!/usr/bin/env python3
"""Before/after of one model on the CPU target under two settings of an environment variable,
in interleaved rounds (A B, B A, ...) of `triad run --repeat N --json`: the median over rounds of
each side's p50 and their ratio, with the load average before and after.

Example (Winograd off against the automatic choice; docs/performance.md):
  .venv/bin/python bench/env_ab.py ~/.cache/triad/zoo/resnet50/resnet50.onnx \\
      -i ~/.cache/triad/zoo/resnet50/resnet50_input0.npy --var TRIAD_WINOGRAD --a 0 --b '' \\
      --threads 1 --rounds 6 --repeat 10
An empty value unsets the variable.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load():
    return float(open("/proc/loadavg").read().split()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("-i", "--input", action="append", default=[])
    ap.add_argument("--var", required=True, help="the environment variable")
    ap.add_argument("--a", required=True, help="its value on side A (before); empty: unset")
    ap.add_argument("--b", required=True, help="its value on side B (after); empty: unset")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per side and round")
    ap.add_argument("--triad", default=str(ROOT / "build" / "cli" / "triad"))
    args = ap.parse_args()
    sides = {"A": args.a, "B": args.b}
    p50 = {"A": [], "B": []}
    loads = [load()]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        for r in range(args.rounds):
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                env = dict(os.environ)
                env.pop(args.var, None)
                if sides[side]:
                    env[args.var] = sides[side]
                cmd = [args.triad, "run", args.model, "--target", "cpu", "--threads",
                       str(args.threads), "--repeat", str(args.repeat + 1), "--json", out]
                for i in args.input:
                    cmd += ["-i", i]
                subprocess.run(cmd, env=env, check=True, capture_output=True)
                with open(out) as f:
                    p50[side].append(json.load(f)["p50_ms"])
            loads.append(load())
    for side in ("A", "B"):
        v = p50[side]
        print(f"{side} ({args.var}={sides[side] or '<unset>'}): p50 median {statistics.median(v):.2f} ms"
              f" over rounds {' '.join(f'{x:.1f}' for x in v)}")
    a, b = statistics.median(p50["A"]), statistics.median(p50["B"])
    print(f"threads {args.threads}: A/B = {a / b:.3f} (above 1: B faster); load {min(loads):.1f}-{max(loads):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
