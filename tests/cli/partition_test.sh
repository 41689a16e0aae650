#!/usr/bin/env bash
# End-to-end tests of `triad partition` on the shipped digits CNN: a three-target manual plan run
# against the interpreter with JSON, DOT and SVG output, pipeline mode, and must-fail cases that
# check the exit code (2: usage) and that the output names the culprit. Nominal device models
# (--no-calibrate) throughout: no measurements, a few seconds in all.
# Usage: partition_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$(dirname "$0")/../lib.sh"

CNN=$SRC/models/digits_cnn.onnx
# The middle target: the GPU where an OpenCL device exists, else the interpreter.
MID=gpu
if ! "$TRIAD" devices >/dev/null 2>&1; then MID=interp; fi
echo "middle target: $MID"

if check "partition three targets --run" 0 "max \|output - interpreter\|" -- \
  "$TRIAD" partition "$CNN" --targets cpu,$MID,fpga --no-calibrate --place /conv2/Conv=$MID \
  --place /fc/Gemm=fpga --run --repeat 2 --json "$TMP/plan.json" --dot "$TMP/plan.dot" \
  --svg "$TMP/plan.svg"; then
  err=$(sed -nE 's/.*max \|output - interpreter\| = ([0-9.eE+-]+).*/\1/p' "$TMP/out")
  if [[ -n $err ]] && awk -v e="$err" 'BEGIN { exit !(e < 0.05) }'; then
    good "partition output error $err < 0.05"
  else
    bad "partition output error '$err' not < 0.05"
  fi
  if python3 - "$TMP/plan.json" "$MID" <<'PY'; then
import json, sys
j = json.load(open(sys.argv[1]))
targets = {p["target"] for p in j["partitions"]}
assert targets == {"cpu", sys.argv[2], "fpga"}, targets
for p in j["partitions"]:
    assert isinstance(p["measured_ms"], (int, float)) and p["measured_ms"] >= 0, p
    assert p["nodes"], p
assert j["transfers"] and j["nodes"], "no transfers or nodes"
assert isinstance(j["measured_ms"], (int, float)), j["measured_ms"]
for t in j["transfers"]:
    if "fpga" in t["link"]:
        assert t["measured_ms"] is None, t  # no FPGA here: modelled
        assert t["modelled_ms"] >= 0, t
PY
    good "partition JSON: three targets, measured_ms per partition"
  else
    bad "partition JSON"
  fi
  if grep -q "digraph" "$TMP/plan.dot" && [[ $(grep -c "subgraph cluster_[0-9]" "$TMP/plan.dot") -ge 3 ]]; then
    good "partition DOT has a cluster per partition"
  else
    bad "partition DOT"
  fi
  if head -c 200 "$TMP/plan.svg" | grep -Eq "^(<\?xml|<svg)"; then
    good "partition SVG"
  else
    bad "partition SVG does not start with <?xml or <svg"
  fi
fi

check "partition single" 0 "8 on cpu" -- \
  "$TRIAD" partition "$CNN" --mode single --targets cpu,fpga --no-calibrate
check "partition pipeline prints throughput" 0 "throughput" -- \
  "$TRIAD" partition "$CNN" --mode pipeline --targets cpu,fpga --no-calibrate --batch 16
check "partition pipeline --run measures its throughput" 0 "pipelined throughput .stages overlapped" -- \
  "$TRIAD" partition "$CNN" --mode pipeline --targets cpu,fpga --no-calibrate --batch 16 --run --repeat 2
check "partition manual without --place" 2 "--place" -- \
  "$TRIAD" partition "$CNN" --mode manual --targets cpu,fpga --no-calibrate
check "partition unknown node" 2 "/nope" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --place /nope=cpu
check "partition unknown target" 2 "nosuch" -- \
  "$TRIAD" partition "$CNN" --targets cpu,nosuch --no-calibrate
check "partition unknown mode" 2 "fastest" -- \
  "$TRIAD" partition "$CNN" --mode fastest --targets cpu --no-calibrate
check "partition unknown FPGA part" 2 "nosuchpart" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --fpga-part nosuchpart
echo '{"fpga": {"gbytes_per_s": -3}}' >"$TMP/links_bad.json"
check "partition bad links file" nonzero "links_bad.json" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --links "$TMP/links_bad.json"
echo '{"fpga": ' >"$TMP/links_notjson.json"
check "partition links file not JSON" nonzero "links_notjson.json" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --links "$TMP/links_notjson.json"
check "partition missing links file" nonzero "links_missing.json" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --links "$TMP/links_missing.json"
# Free links: the nominal FPGA is faster than the CPU on every layer, so auto moves work there.
echo '{"fpga": {"gbytes_per_s": 1000000, "latency_us": 0}, "conversion_ns_per_element": 0}' \
  >"$TMP/links_fast.json"
check "partition auto with free links uses the FPGA" 0 "[1-9][0-9]* on fpga" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate --links "$TMP/links_fast.json"
check "partition auto with PCIe links stays on the CPU" 0 "nodes: 8 on cpu;" -- \
  "$TRIAD" partition "$CNN" --targets cpu,fpga --no-calibrate

finish
