#!/usr/bin/env python3
"""Checks the on-demand zoo models (scripts/zoo/large_models.py) through `triad run`.

For every model present in the cache: its files match the sha256 in <name>.json, and
`triad run --target T` (each target given, default the reference interpreter) on the reference
inputs reproduces the ONNX Runtime reference outputs within rtol 1e-3, atol 1e-4 (max abs and rel
error are reported). Models not in the cache are reported as skipped, not failed.

Usage: .venv/bin/python tests/zoo/check_large.py [TRIAD_BINARY] [--cache DIR] [--model NAME ...]
                                                [--target interp|cpu|gpu ...]

The binary defaults to build/cli/triad; the cache to $TRIAD_ZOO_CACHE or ~/.cache/triad/zoo.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

RTOL, ATOL = 1e-3, 1e-4
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "squeezenet1_1", "bert_base",
          "gpt2_small"]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_model(triad, folder, name, tmp, target):
    """Returns (ok, detail)."""
    with open(os.path.join(folder, f"{name}.json")) as f:
        entry = json.load(f)
    for fn, digest in [(entry["file"], entry["sha256"])] + [
            (t["reference"], t["reference_sha256"]) for t in entry["inputs"] + entry["outputs"]]:
        if sha256(os.path.join(folder, fn)) != digest:
            return False, f"{fn} does not match its recorded sha256 (rebuild with large_models.py)"
    cmd = [triad, "run", os.path.join(folder, entry["file"]), "--target", target]
    for t in entry["inputs"]:
        cmd += ["--input", f"{t['name']}={os.path.join(folder, t['reference'])}"]
    outs = [os.path.join(tmp, f"{name}_out{i}.npy") for i in range(len(entry["outputs"]))]
    for t, path in zip(entry["outputs"], outs):
        cmd += ["--output", f"{t['name']}={path}"]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        return False, f"triad run failed (exit {r.returncode}, {seconds:.1f}s): {r.stderr.strip()}"
    details, ok = [], True
    for t, path in zip(entry["outputs"], outs):
        want = np.load(os.path.join(folder, t["reference"]))
        got = np.load(path)
        if got.shape != want.shape or got.dtype != want.dtype:
            ok = False
            details.append(f"{t['name']}: got {got.dtype}{list(got.shape)}, "
                           f"want {want.dtype}{list(want.shape)}")
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(g - w)
        rel = err / np.maximum(np.abs(w), 1e-30)
        bad = int((err > ATOL + RTOL * np.abs(w)).sum())
        ok &= bad == 0 and bool(np.isfinite(g).all())
        details.append(f"{t['name']}: {bad} of {w.size} outside tolerance, max abs error "
                       f"{err.max():.2e}, max rel error {rel[np.abs(w) > ATOL].max(initial=0):.2e}")
    return ok, f"triad run --target {target} {seconds:.1f}s ({r.stderr.strip().splitlines()[-1]}); " + \
        "; ".join(details)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("triad", nargs="?", default=os.path.join(REPO, "build", "cli", "triad"))
    ap.add_argument("--cache", help="cache folder (default: $TRIAD_ZOO_CACHE or ~/.cache/triad/zoo)")
    ap.add_argument("--model", action="append", default=[], metavar="NAME",
                    help="check only these models (repeatable)")
    ap.add_argument("--target", action="append", default=[], metavar="T",
                    help="triad run --target values to check (repeatable; default: interp)")
    args = ap.parse_args()
    root = args.cache or os.environ.get("TRIAD_ZOO_CACHE") or \
        os.path.join(os.path.expanduser("~"), ".cache", "triad", "zoo")
    unknown = [m for m in args.model if m not in MODELS]
    if unknown:
        print(f"check_large.py: unknown model {', '.join(unknown)}; known: {', '.join(MODELS)}",
              file=sys.stderr)
        return 2
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.model or MODELS:
            folder = os.path.join(root, name)
            if not os.path.exists(os.path.join(folder, f"{name}.json")):
                print(f"skip {name}: not in the cache {root}", flush=True)
                skipped += 1
                continue
            for target in args.target or ["interp"]:
                ok, detail = check_model(args.triad, folder, name, tmp, target)
                print(f"{'ok  ' if ok else 'FAIL'} {name} [{target}]: {detail}", flush=True)
                passed += ok
                failed += not ok
    if skipped:
        print(f"{skipped} skipped (not in the cache; build with scripts/zoo/large_models.py)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
