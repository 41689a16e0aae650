#!/usr/bin/env python3
"""A stand-in peer for triad bench's tests: speaks the peer protocol (bench/peers/) without a
runtime. FAKE_PEER_MODE: ok (default), notready, die (aborts at its second run command), hang
(sleeps in run). FAKE_PEER_LOG: a file that gets one line per command, for the interleaving
test. infer writes zeros of shape [rows, FAKE_PEER_COLS] (default 10)."""
import argparse
import json
import os
import sys
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--batch", type=int, required=True)
ap.add_argument("--threads", type=int, required=True)
ap.add_argument("--input", required=True)
args = ap.parse_args()
mode = os.environ.get("FAKE_PEER_MODE", "ok")
log_path = os.environ.get("FAKE_PEER_LOG")


def log(text):
    if log_path:
        with open(log_path, "a") as f:
            f.write(f"{time.monotonic_ns()} {text}\n")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


log(f"start batch={args.batch} threads={args.threads} input={os.path.basename(args.input)}")
if mode == "notready":
    send({"ready": False, "why": "fake peer told not to be ready"})
    sys.exit(0)
send({"ready": True, "device": "fake device", "version": "fake 0.0", "compile_s": 0.001})
runs = 0
for line in sys.stdin:
    cmd = json.loads(line)
    log(cmd["cmd"] + (f" n={cmd['n']}" if "n" in cmd else "")
        + (f" warmup={cmd['warmup']}" if "warmup" in cmd else ""))
    if cmd["cmd"] == "run":
        runs += 1
        if mode == "die" and runs == 2:
            os.abort()
        if mode == "hang":
            time.sleep(3600)
        samples = []
        for _ in range(cmd["n"]):
            t0 = time.perf_counter()
            time.sleep(0.001)
            samples.append((time.perf_counter() - t0) * 1e3)
        send({"samples_ms": samples})
    elif cmd["cmd"] == "infer":
        rows = np.load(cmd["input"]).shape[0]
        np.save(cmd["output"], np.zeros((rows, int(os.environ.get("FAKE_PEER_COLS", "10"))),
                                        np.float32))
        send({"ok": True, "rows": rows})
    elif cmd["cmd"] == "stats":
        send({"peak_rss_mib": 12.5})
    elif cmd["cmd"] == "quit":
        break
