#!/usr/bin/env python3
"""Checks every shipped model in models/MANIFEST.json end to end through the `triad` command:

- the model file, its test data and reference files match their recorded sha256;
- `triad run` (reference interpreter) reproduces the ONNX Runtime reference outputs
  (rtol 1e-4, atol 1e-6: softmax tails near 1e-17 are compared absolutely);
- `triad run` on the whole test split gives exactly the recorded top-1 accuracy.

Usage: check_zoo.py TRIAD_BINARY MODELS_DIR
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RTOL, ATOL = 1e-4, 1e-6


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def triad_run(triad, model, x, batch, tmp):
    xin = os.path.join(tmp, "x.npy")
    out = os.path.join(tmp, "y.npy")
    np.save(xin, x)
    r = subprocess.run([triad, "run", model, "--batch", str(batch), "--input", xin, "--output", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"triad run failed ({r.returncode}): {r.stderr.strip()}")
    return np.load(out)


def main():
    triad, root = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "MANIFEST.json")) as f:
        manifest = json.load(f)
    passed = failed = 0

    def check(name, ok, detail):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        passed += ok
        failed += not ok

    for fname, digest in manifest["data"].items():
        check(f"data {fname}", sha256(os.path.join(root, fname)) == digest, "sha256")
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in sorted(manifest["models"].items()):
            path = os.path.join(root, m["file"])
            check(f"{name} file", sha256(path) == m["sha256"], f"sha256 {m['sha256'][:16]}")
            ref = m["reference"]
            for key in ("input", "output"):
                check(f"{name} reference {key}",
                      sha256(os.path.join(root, ref[key])) == ref[f"{key}_sha256"], "sha256")
            x = np.load(os.path.join(root, ref["input"]))
            want = np.load(os.path.join(root, ref["output"]))
            try:
                got = triad_run(triad, path, x, len(x), tmp)
                err = np.abs(got.astype(np.float64) - want)
                bad = int((err > ATOL + RTOL * np.abs(want)).sum())
                check(f"{name} reference outputs", got.shape == want.shape and bad == 0,
                      f"{bad} of {want.size} outside rtol {RTOL}, max abs error {err.max():.2e}")
            except RuntimeError as e:
                check(f"{name} reference outputs", False, str(e))
                continue
            x = np.load(os.path.join(root, m["test_inputs"]))
            y = np.load(os.path.join(root, m["test_labels"]))
            probs = triad_run(triad, path, x, len(x), tmp)
            acc = float((probs.argmax(1) == y).mean())
            check(f"{name} test accuracy", acc == m["test_accuracy"],
                  f"{acc:.6f} on {len(y)} (recorded {m['test_accuracy']:.6f})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
