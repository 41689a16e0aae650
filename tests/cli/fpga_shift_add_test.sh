#!/usr/bin/env bash
# End to end: `triad compile --target fpga --strategy shift_add` (multiplier-free Dense/Conv as
# adder graphs): jet_mlp whole at reuse 1 on 1,000 test inputs and digits_cnn (Conv windows) on
# 500 images are bit-exact with the emulator in Verilator (steady pass, and random gaps with
# back-pressure), II 1 (jet) and the frame (digits_cnn), the predicted latency, no multiplier in
# any Dense/Conv layer, lint clean (jet with --register-streams: skid buffers between layers, no
# added latency); a per-layer strategy from the config; the must-fail cases.
# Exits 77 (skipped) without verilator.
# Usage: fpga_shift_add_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
if ! command -v verilator >/dev/null; then
  echo "SKIP: verilator is not on PATH"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
PY=$SRC/.venv/bin/python
[[ -x $PY ]] || PY=python3
MODEL=$SRC/models/jet_mlp.onnx
$PY -c "import numpy as np; np.save('$TMP/x.npy', np.load('$SRC/models/jet_test_x.npy')[:1000])" || exit 1

"$TRIAD" compile "$MODEL" --target fpga --strategy dsp_free -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "expected dsp, shift_add or auto" "$TMP/err"; then
  echo "FAIL --strategy dsp_free: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   an unknown strategy is a usage error"; fi
"$TRIAD" compile "$MODEL" --target fpga --strategy shift_add --reuse 4 -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "layer '/fc1/Gemm': strategy shift_add .* needs reuse 1" "$TMP/err"; then
  echo "FAIL shift_add at reuse 4: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   shift_add at reuse 4 is a usage error naming the layer"; fi
echo '{"strategy": {"/fc2/Gemm": "adders"}}' >"$TMP/badcfg.json"
"$TRIAD" compile "$MODEL" --target fpga --config "$TMP/badcfg.json" -o "$TMP/bad" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "strategy\['/fc2/Gemm'\]" "$TMP/err"; then
  echo "FAIL bad config strategy: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   a bad strategy in the config names its key"; fi

d=$TMP/jet
# With --register-streams: a skid buffer (registered ready) in front of every layer, which adds
# no cycle to the latency.
if "$TRIAD" compile "$MODEL" --target fpga --strategy shift_add --register-streams \
     --input "$TMP/x.npy" -o "$d" &&
   (cd "$d/rtl" && verilator --lint-only -Wall --top-module jet_mlp $(grep -v '^//' files.f)) &&
   "$TRIAD" sim "$d" --input "$TMP/x.npy" --json "$d/sim.json" &&
   $PY - "$d" <<'PYEOF'
import json, sys
d = sys.argv[1]
j, s = json.load(open(d + "/sim.json")), json.load(open(d + "/summary.json"))
assert j["samples"] == 1000 and j["mismatches"] == 0 and j["missing"] == 0, j
assert j["ii"] == 1, j
assert j["latency_cycles"] == s["latency_cycles"] <= 36, (j, s["latency_cycles"])
assert s["strategy"] == "shift_add", s["strategy"]
dense = [l for l in s["layers"] if l["op"] == "Gemm"]
assert len(dense) == 4, dense
for l in dense:
    g = l["adder_graph"]
    assert l["strategy"] == "shift_add" and l["multipliers"] == 0 and l["estimate"]["dsp"] == 0, l
    assert 0 < g["shared"] < g["adders"] < g["digits"], g
    assert l["latency_cycles"] == g["stages"] + 2, l
v = open(d + "/rtl/jet_mlp.v").read()
assert "triad_dense" not in v and "triad_pipe" in v
assert s["register_streams"] and v.count("  triad_skid #(") == len(s["layers"]), s["blocks"]
print("jet_mlp shift_add:", sum(l["adder_graph"]["adders"] for l in dense), "adders,",
      s["estimate"], "latency", s["latency_cycles"])
PYEOF
then echo "ok   jet_mlp shift_add: bit-exact, II 1, no multiplier in the Dense layers"
else echo "FAIL jet_mlp shift_add"; fail=1; fi

# Per layer from the config: fc2 on DSPs, the rest as adder graphs.
echo '{"strategy": {"/fc2/Gemm": "dsp"}}' >"$TMP/cfg.json"
if "$TRIAD" compile "$MODEL" --target fpga --strategy auto --config "$TMP/cfg.json" -o "$TMP/mix" >/dev/null &&
   $PY - "$TMP/mix/summary.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
st = {l["layer"]: l["strategy"] for l in s["layers"] if l["op"] == "Gemm"}
assert st == {"/fc1/Gemm": "shift_add", "/fc2/Gemm": "dsp", "/fc3/Gemm": "shift_add",
              "/fc4/Gemm": "shift_add"}, st
PYEOF
then echo "ok   per-layer strategy from the config"; else echo "FAIL per-layer strategy"; fail=1; fi

# digits_cnn: Conv windows through adder graphs, 500 images bit-exact, II the 8x8 frame.
$PY -c "
import numpy as np
x = np.load('$SRC/models/digits_test_x.npy')
noisy = x[:140] + np.random.default_rng(1).normal(0, 2.0, x[:140].shape).astype(np.float32)
np.save('$TMP/cx.npy', np.concatenate([x, noisy]))" || exit 1
d=$TMP/cnn
if "$TRIAD" compile "$SRC/models/digits_cnn.onnx" --target fpga --strategy shift_add -o "$d" &&
   (cd "$d/rtl" && verilator --lint-only -Wall --top-module digits_cnn $(grep -v '^//' files.f)) &&
   "$TRIAD" sim "$d" --input "$TMP/cx.npy" --json "$d/sim.json" &&
   $PY - "$d" <<'PYEOF'
import json, sys
d = sys.argv[1]
j, s = json.load(open(d + "/sim.json")), json.load(open(d + "/summary.json"))
assert j["samples"] == 500 and j["mismatches"] == 0 and j["missing"] == 0, j
assert j["ii"] == 64, j
conv = [l for l in s["layers"] if l["op"] in ("Conv", "Gemm")]
assert any(l["op"] == "Conv" for l in conv), conv
assert all(l["strategy"] == "shift_add" and l["multipliers"] == 0 for l in conv), conv
PYEOF
then echo "ok   digits_cnn shift_add: Conv and Dense bit-exact, II 64"
else echo "FAIL digits_cnn shift_add"; fail=1; fi
exit $fail
