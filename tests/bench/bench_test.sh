#!/usr/bin/env bash
# `triad bench` end to end. Usage: bench_test.sh CASE TRIAD_BINARY SOURCE_DIR CACHE_DIR
#   digits    interp, cpu, fpga, auto on digits_mlp at batches 1 and 4 with data and labels:
#             every required field with plausible values, the partition plan with measured
#             times; an unknown target is a usage error (exit 2)
#   failures  a worker that aborts, one that hangs past --timeout, a peer that dies and one that
#             is not ready, an FPGA design larger than the part: each "failed"/"skipped" with
#             its reason, the bench goes on
#   kill      SIGTERM and SIGINT mid-run: exit 143/130, the earlier report.json and history
#             byte-identical, no worker left, the temporary folder removed
#   peers     the fake peer interleaved with Triad's targets: sample counts and round order
#   precision --precision fp32,int8 on digits_cnn: the QDQ copy made and run by interp, cpu, gpu
#             and ONNX Runtime, its accuracy against the float interpreter; an unknown precision is
#             a usage error
#   gpu       the GPU target when an OpenCL platform exists (else skipped with why)
# Crashes and hangs are provoked with TRIAD_BENCH_TEST_CRASH (test builds only).
set -euo pipefail
CASE=$1
TRIAD=$2
SRC=$3
export TRIAD_CACHE_DIR=$4
export TRIAD_CXXFLAGS="-O1 -march=native"
export CI=1
PY="$SRC/.venv/bin/python"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
M="$SRC/models"
DIGITS=(--data "$M/digits_test_x_flat.npy" --labels "$M/digits_test_y.npy")
# digits_mlp at reuse 1 needs ~7,500 DSPs, more than the default part (xcku115) has: reuse 4.
FPGA=(--reuse 4)

check() { # PYTHON-ASSERTIONS over the report at $1
  "$PY" - "$@" <<'PY'
import json, os, sys
rep = json.load(open(sys.argv[1]))
failures = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: failures.append(what)
R = {(r["target"], r["batch"]): r for r in rep["results"]}
exec(open(sys.argv[2]).read())
sys.exit(1 if failures else 0)
PY
}

case "$CASE" in
digits)
  set +e
  "$TRIAD" bench "$M/digits_mlp.onnx" --targets interp,nosuch > "$TMP/usage.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] || { echo "FAIL unknown target: exit $rc, want 2"; cat "$TMP/usage.log"; exit 1; }
  grep -q "no target 'nosuch'" "$TMP/usage.log" || { cat "$TMP/usage.log"; exit 1; }
  echo "ok   unknown target: usage error, exit 2"
  "$TRIAD" bench "$M/digits_mlp.onnx" --targets interp,cpu,fpga,auto --batch 1,4 --repeat 5 \
    "${DIGITS[@]}" "${FPGA[@]}" -o "$TMP/out" --no-db > "$TMP/stdout" 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  [ "$(cat "$TMP/stdout")" = "$TMP/out/report.html" ] || { echo "FAIL printed $(cat "$TMP/stdout")"; exit 1; }
  for f in report.json report.md report.html; do
    [ -s "$TMP/out/$f" ] || { echo "FAIL $f missing"; exit 1; }
  done
  echo "ok   report.json, report.md, report.html written; the html path printed"
  cat > "$TMP/checks.py" <<'PY'
check(rep["schema"] == "triad-bench/1", "schema triad-bench/1")
check(rep["run"]["status"] == "complete" and rep["run"]["id"] and "triad bench" in rep["run"]["command"],
      "run: id, command, complete")
s = rep["system"]
for k in ("host", "os", "cpu_model", "compiler", "verilator", "yosys", "triad_commit", "triad_version"):
    check(isinstance(s.get(k), str) and s[k] != "", f"system.{k} non-empty ({s.get(k)})")
check(s["cores_physical"] >= 1 and s["threads_logical"] >= s["cores_physical"] and s["memory_gib"] > 0,
      "system cores, threads, memory")
check(isinstance(s["opencl"], list), "system.opencl is a list")
m = rep["model"]
check(len(m["sha256"]) == 64 and m["nodes"] > 0 and m["params"] > 0 and m["macs"] > 0, "model hash and sizes")
check(m["data_rows"] == 360, "360 data rows")
check(len(rep["results"]) == 8, "8 results (4 targets x 2 batches)")
ref_top1 = R[("interp", 1)]["accuracy"]["top1"]
for (t, b), r in R.items():
    name = f"{t}@{b}"
    check(r["status"] == "ok", f"{name} ok ({r['why']})")
    l = r["latency_ms"]
    check(l["count"] == 5 and len(l["samples"]) == 5, f"{name} count == repeat")
    check(l["p50"] > 0 and l["min"] <= l["p50"] <= l["p90"] <= l["p99"] <= l["max"], f"{name} min <= p50 <= max")
    check(abs(r["throughput_per_s"] - b / (l["mean"] * 1e-3)) < 1e-6 * r["throughput_per_s"], f"{name} throughput = batch/mean")
    check(r["compile_s"] >= 0 and r["warmup_runs"] == 3 and r["device"], f"{name} compile, warm-up, device")
    a = r["accuracy"]
    check(a["samples"] == 360 and a["max_abs_err"] is not None, f"{name} accuracy on all rows")
    check(abs(a["top1"] - ref_top1) <= 0.02 and a["top1_reference"] == ref_top1, f"{name} top1 {a['top1']} within 0.02 of the interpreter's")
    check(r["memory"]["peak_rss_mib"] > 0, f"{name} peak RSS")
    e = r["energy"]
    check((e["joules_per_inference"] is None) == bool(e["why"]), f"{name} energy or why ({e['why']})")
    check(r["runs_per_round"] == [1, 1, 1, 1, 1], f"{name} 5 rounds of 1 run")
for b in (1, 4):
    check(R[("interp", b)]["accuracy"]["max_abs_err"] == 0, f"interp@{b} equals the reference")
    c = R[("cpu", b)]
    check(c["accuracy"]["max_abs_err"] < 1e-4, f"cpu@{b} agrees with the interpreter")
    check(c["memory"]["arena_bytes"] > 0 and c["threads"] >= 1, f"cpu@{b} arena bytes and threads")
    check(len(c["layers"]) > 0 and all(x["ms"] >= 0 for x in c["layers"]), f"cpu@{b} per-layer profile")
    check(all(x.get("op") and "cycles" not in x for x in c["layers"]) and
          any(x["op"] == "Gemm+Relu" for x in c["layers"]), f"cpu@{b} layers name their ops, count no cycles")
    f = R[("fpga", b)]
    fp = f["fpga"]
    check(fp["latency_cycles"] > 0 and fp["ii"] > 0 and fp["clock_mhz"] == 200, f"fpga@{b} cycles {fp['latency_cycles']}, II, clock")
    check(abs(fp["latency_us"] - fp["latency_cycles"] / 200) < 1e-9, f"fpga@{b} latency_us at the clock")
    check(fp["precision"] == "fixed<16,6>" and fp["measured"] is False, f"fpga@{b} precision, modelled")
    want = (fp["latency_cycles"] + (b - 1) * fp["ii"]) / 200e3
    check(abs(f["latency_ms"]["p50"] - want) < 1e-9 or fp["latency_basis"] == "modelled",
          f"fpga@{b} latency is device time at the clock, not the emulator's")
    check(fp["emulator_ms"]["count"] == 5, f"fpga@{b} emulator wall time kept apart")
    check((fp["resources"] is None) == bool(fp["resources_why"]), f"fpga@{b} resources or why")
    check(len(f["layers"]) > 0 and all(x["cycles"] > 0 for x in f["layers"]), f"fpga@{b} per-layer cycles")
check(R[("fpga", 1)]["accuracy"]["max_abs_err"] > 0, "fpga: fixed point differs from float")
for b in (1, 4):
    a = R[("auto", b)]
    p = a["partition"]
    check(p["mode"] == "auto" and p["algorithm"] and p["predicted_ms"] > 0 and p["measured_ms"] > 0,
          f"auto@{b} plan: mode, algorithm, predicted and measured")
    nodes = [n for part in p["partitions"] for n in part["nodes"]]
    check(len(nodes) == len(p["nodes"]) and all(part["target"] in ("cpu", "fpga") for part in p["partitions"]),
          f"auto@{b} every node placed on cpu or fpga")
    check(all(part["measured_ms"] is not None for part in p["partitions"]), f"auto@{b} measured time per partition")
    check(len(a["layers"]) == len(p["partitions"]) + len(p["transfers"]), f"auto@{b} profile: one row per partition and transfer")
check(rep["partition"] == R[("auto", 1)]["partition"], "top-level partition: the first batch's plan")
PY
  check "$TMP/out/report.json" "$TMP/checks.py"
  ;;

failures)
  export TRIAD_PEERS_DIR="$SRC/tests/bench/peers"
  # The FPGA worker aborts at its first timed run; the peer dies at its second run command.
  TRIAD_BENCH_TEST_CRASH=fpga:run FAKE_PEER_MODE=die "$TRIAD" bench "$M/digits_mlp.onnx" \
    --targets interp,fpga --peers fake --repeat 4 --rounds 4 "${DIGITS[@]}" "${FPGA[@]}" \
    -o "$TMP/crash" --no-db \
    > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cat > "$TMP/checks.py" <<'PY'
check(R[("interp", 1)]["status"] == "ok", "interp ok beside the failures")
check(R[("interp", 1)]["latency_ms"]["count"] == 4, "interp ran all its rounds")
f = R[("fpga", 1)]
check(f["status"] == "failed" and "SIGABRT" in f["why"], f"fpga failed with the signal named ({f['why']})")
p = R[("fake", 1)]
check(p["status"] == "failed" and "SIGABRT" in p["why"], f"dead peer failed with the signal named ({p['why']})")
PY
  check "$TMP/crash/report.json" "$TMP/checks.py"
  # A worker that hangs is stopped at --timeout; a peer that is not ready is skipped.
  TRIAD_BENCH_TEST_CRASH=fpga:hang FAKE_PEER_MODE=notready "$TRIAD" bench "$M/digits_mlp.onnx" \
    --targets interp,fpga --peers fake --repeat 2 --timeout 3 "${FPGA[@]}" -o "$TMP/hang" --no-db \
    > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cat > "$TMP/checks.py" <<'PY'
check(R[("interp", 1)]["status"] == "ok", "interp ok beside the time-out")
f = R[("fpga", 1)]
check(f["status"] == "failed" and f["why"] == "timed out after 3 s", f"fpga failed: timed out ({f['why']})")
p = R[("fake", 1)]
check(p["status"] == "skipped" and "not to be ready" in p["why"], f"peer not ready: skipped ({p['why']})")
check(R[("interp", 1)]["accuracy"]["why"].startswith("no --labels"), "random inputs: error vs interpreter only")
PY
  check "$TMP/hang/report.json" "$TMP/checks.py"
  # A design larger than the part is skipped with why (the FPGA target's budget check).
  "$TRIAD" bench "$M/digits_mlp.onnx" --targets fpga --reuse 1 --fpga-part xcku115 --repeat 1 \
    -o "$TMP/big" --no-db > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cat > "$TMP/checks.py" <<'PY'
f = R[("fpga", 1)]
check(f["status"] == "skipped" and "does not fit the xcku115" in f["why"], f"too large for the part: skipped ({f['why']})")
PY
  check "$TMP/big/report.json" "$TMP/checks.py"
  ;;

kill)
  "$TRIAD" bench "$M/digits_mlp.onnx" --targets interp --repeat 2 -o "$TMP/out" --db "$TMP/h.db" \
    > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cp "$TMP/out/report.json" "$TMP/before.json"
  cp "$TMP/h.db" "$TMP/before.db"
  mkdir "$TMP/tmpdir"
  for sig in TERM INT; do
    # The interpreter's runs hang (test hook), so the bench is mid-run when the signal comes.
    TMPDIR="$TMP/tmpdir" TRIAD_BENCH_TEST_CRASH=interp:hang "$TRIAD" bench "$M/digits_mlp.onnx" \
      --targets interp,fpga --repeat 2 "${FPGA[@]}" -o "$TMP/out" --db "$TMP/h.db" \
      > /dev/null 2> "$TMP/log.$sig" &
    pid=$!
    for _ in $(seq 100); do grep -q "per-layer profile of fpga" "$TMP/log.$sig" 2>/dev/null && break; sleep 0.1; done
    sleep 0.5
    kids=$(pgrep -P $pid || true)
    [ -n "$kids" ] || { echo "FAIL no workers running at SIG$sig"; cat "$TMP/log.$sig"; exit 1; }
    kill -$sig $pid
    set +e
    wait $pid
    rc=$?
    set -e
    want=$([ $sig = TERM ] && echo 143 || echo 130)
    [ $rc -eq $want ] || { echo "FAIL SIG$sig: exit $rc, want $want"; cat "$TMP/log.$sig"; exit 1; }
    cmp "$TMP/before.json" "$TMP/out/report.json" || { echo "FAIL SIG$sig changed report.json"; exit 1; }
    cmp "$TMP/before.db" "$TMP/h.db" || { echo "FAIL SIG$sig changed the history"; exit 1; }
    for k in $kids; do
      if kill -0 $k 2>/dev/null; then echo "FAIL SIG$sig left worker $k running"; exit 1; fi
    done
    [ -z "$(ls -A "$TMP/tmpdir")" ] || { echo "FAIL SIG$sig left $(ls "$TMP/tmpdir")"; exit 1; }
    grep -q "interrupted by SIG$sig" "$TMP/log.$sig" || { cat "$TMP/log.$sig"; exit 1; }
    echo "ok   SIG$sig: exit $rc, report.json and the history unchanged, workers gone, temporary folder removed"
  done
  ;;

peers)
  export TRIAD_PEERS_DIR="$SRC/tests/bench/peers" FAKE_PEER_LOG="$TMP/peer.log"
  "$TRIAD" bench "$M/digits_mlp.onnx" --targets interp,fpga --peers fake --batch 1,2 --repeat 10 \
    --rounds 5 --threads 1 "${DIGITS[@]}" "${FPGA[@]}" -o "$TMP/out" --no-db > /dev/null 2> "$TMP/log" \
    || { cat "$TMP/log"; exit 1; }
  cp "$TMP/peer.log" "$TMP/out/peer.log"
  cat > "$TMP/checks.py" <<'PY'
import os
for b in (1, 2):
    p = R[("fake", b)]
    check(p["status"] == "ok" and p["kind"] == "peer", f"fake@{b} ok, kind peer")
    check(p["latency_ms"]["count"] == 10 and p["runs_per_round"] == [2] * 5, f"fake@{b} 10 samples in 5 rounds")
    check(p["device"] == "fake device" and p["memory"]["peak_rss_mib"] == 12.5, f"fake@{b} ready and stats fields")
    check(p["accuracy"]["samples"] == 360 and p["accuracy"]["top1_reference"] is not None, f"fake@{b} accuracy computed")
    rounds = [s for s in rep["schedule"] if s["batch"] == b]
    check(len(rounds) == 15, f"batch {b}: 15 rounds scheduled (3 participants x 5)")
    for r in range(5):
        who = [s["target"] for s in rounds if s["round"] == r]
        check(sorted(who) == ["fake", "fpga", "interp"], f"batch {b} round {r}: every participant once ({who})")
    order = [s["target"] for s in rounds]
    runs = [i for i, t in enumerate(order) if t == "fake"]
    check(all(b - a > 1 for a, b in zip(runs, runs[1:])), f"batch {b}: the peer's rounds are interleaved ({order})")
log = [l.split()[1:] for l in open(os.path.join(os.path.dirname(sys.argv[1]), "peer.log"))]
check([l[1] for l in log if l[0] == "start"] == ["batch=1", "batch=2"], "one peer per batch, with --batch")
check(all(l[2] == "threads=1" for l in log if l[0] == "start"), "peer got --threads")
check([l for l in log if l[0] == "run"] == [["run", "n=2", "warmup=1"]] * 10,
      "peer: 10 run commands of 2, each turn after one untimed call")
check(rep["settings"]["settle_ms"] == 50, "settings: the settle pause before each turn")
PY
  check "$TMP/out/report.json" "$TMP/checks.py"
  ;;

precision)
  set +e
  "$TRIAD" bench "$M/digits_cnn.onnx" --targets cpu --precision fp32,fp16 > "$TMP/usage.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "precision 'fp16'" "$TMP/usage.log" ||
    { echo "FAIL --precision fp16: exit $rc, want 2 naming it"; cat "$TMP/usage.log"; exit 1; }
  echo "ok   --precision fp16: usage error, exit 2"
  "$TRIAD" bench "$M/digits_cnn.onnx" --targets interp,cpu,gpu --peers onnxruntime --precision fp32,int8 \
    --batch 4 --repeat 4 --rounds 2 --data "$M/digits_test_x.npy" --labels "$M/digits_test_y.npy" \
    -o "$TMP/out" --no-db > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cat > "$TMP/checks.py" <<'PY'
import os
P = {(r["target"], r.get("precision")): r for r in rep["results"]}
check(rep["settings"]["precisions"] == ["fp32", "int8"], "settings: precisions fp32, int8")
check(len(rep["results"]) == 8, f"4 sides x 2 precisions ({len(rep['results'])} results)")
q = rep["model"]["int8"]
check(q["file"] == "model_int8.onnx" and q["quantizer"]["ops"].get("QuantizeLinear", 0) > 0,
      f"the QDQ copy: quantizer summary ({q})")
out = os.path.dirname(sys.argv[1])
check(os.path.getsize(os.path.join(out, "model_int8.onnx")) > 1000, "model_int8.onnx beside the reports")
for t in ("interp", "cpu"):
    f, i = P[(t, "fp32")], P[(t, "int8")]
    check(f["status"] == "ok" and i["status"] == "ok", f"{t}: fp32 and int8 ok ({i['why']})")
    fa, ia = f["accuracy"], i["accuracy"]
    check(fa["max_abs_err"] < 1e-3, f"{t} fp32 agrees with the interpreter ({fa['max_abs_err']})")
    check(ia["max_abs_err"] > fa["max_abs_err"], f"{t} int8 differs from float by its quantization ({ia['max_abs_err']})")
    check(abs(ia["top1"] - fa["top1"]) <= 0.05, f"{t} int8 top-1 within 5 points of fp32 ({ia['top1']} vs {fa['top1']})")
ci, ii = P[("cpu", "int8")], P[("interp", "int8")]
check(abs(ci["accuracy"]["top1"] - ii["accuracy"]["top1"]) <= 0.01, "cpu int8 top-1 = interp int8 top-1")
# The GPU runs the QDQ copy on its integer kernels (or says why not, without OpenCL).
gi = P[("gpu", "int8")]
if not rep["system"]["opencl"]:
    check(gi["status"] == "skipped" and gi["why"], f"no OpenCL platform: gpu int8 skipped with why ({gi['why']})")
else:
    check(gi["status"] == "ok", f"gpu int8 ok ({gi['why']})")
    check(abs(gi["accuracy"]["top1"] - ii["accuracy"]["top1"]) <= 0.01, "gpu int8 top-1 = interp int8 top-1")
    check(gi["accuracy"]["max_abs_err"] > P[("gpu", "fp32")]["accuracy"]["max_abs_err"],
          "gpu int8 differs from float by its quantization")
o = P[("onnxruntime", "int8")]
check(o["status"] == "ok" or (o["status"] == "skipped" and o["why"]), f"onnxruntime runs the QDQ file or says why not ({o['why']})")
md = open(os.path.join(out, "report.md")).read()
check("cpu int8" in md and "int8 copy" in md and "Precisions" in md, "report.md: int8 rows, the copy and the setting")
PY
  check "$TMP/out/report.json" "$TMP/checks.py"
  ;;

gpu)
  "$TRIAD" bench "$M/digits_cnn.onnx" --targets gpu --batch 2 --repeat 3 --data "$M/digits_test_x.npy" \
    --labels "$M/digits_test_y.npy" -o "$TMP/out" --no-db > /dev/null 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
  cat > "$TMP/checks.py" <<'PY'
g = R[("gpu", 2)]
if not rep["system"]["opencl"]:
    check(g["status"] == "skipped" and g["why"], f"no OpenCL platform: gpu skipped with why ({g['why']})")
else:
    check(g["status"] == "ok", f"gpu ok ({g['why']})")
    check(g["latency_ms"]["count"] == 3 and g["latency_ms"]["p50"] > 0, "gpu latency")
    k = g["gpu"]
    check(k["kernel_ms"] > 0 and k["h2d_ms"] >= 0 and k["d2h_ms"] >= 0, f"gpu kernel vs transfer times ({k})")
    check(g["memory"]["arena_bytes"] > 0, "gpu arena bytes")
    check(g["accuracy"]["max_abs_err"] < 1e-4 and abs(g["accuracy"]["top1"] - g["accuracy"]["top1_reference"]) <= 0.02,
          "gpu agrees with the interpreter")
    check(len(g["layers"]) > 0, "gpu per-layer profile")
    check(g["energy"]["joules_per_inference"] is not None or "NVML" in g["energy"]["why"], "gpu energy: NVML or why")
    a = g["gpu_async"]
    check(a["in_flight"] == 2 and a["runs"] >= 8 and a["throughput_per_s"] > 0 and a["outputs_match_sync"],
          f"gpu asynchronous mode: 2 in flight, outputs equal to the synchronous run's ({a})")
    check(rep["settings"]["gpu_in_flight"] == 2, "settings: gpu_in_flight")
    md = open(os.path.join(os.path.dirname(sys.argv[1]), "report.md")).read()
    check("Throughput in flight" in md, "report.md: the GPU table has the in-flight throughput")
PY
  check "$TMP/out/report.json" "$TMP/checks.py"
  ;;
*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac
