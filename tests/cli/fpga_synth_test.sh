#!/usr/bin/env bash
# triad synth on a tiny model (x[4] -> Dense 4->3 -> ReLU -> Dense 3->2 -> Softmax) at reuse 1:
# the JSON has every layer module and the top's glue, non-zero LUT and FF counts, one DSP48E1 per
# multiplier (the weights have 3 or more signed digits, so none is built from shifts and adds), the
# Softmax's three tables (two exp, one reciprocal) in block RAM, and a logic depth; ice40 maps the
# dense layers' 16x16 products to one SB_MAC16 each. On xc7 every layer has an estimated Fmax that
# is its slowest register-to-register path by the delay model, at least the 200 MHz it was compiled
# for, and the design's is the slowest layer's. With nextpnr-ice40 on PATH, --family ice40 --pnr places and
# routes the model without its Softmax (it fits an iCE40 UP5K) and reports a positive Fmax and
# logic cell count; without it that part prints SKIP. Also: a missing yosys is an i/o error (exit
# 3) naming scripts/setup.sh, as is a missing nextpnr-ice40 with --pnr. Exits 77 (skipped) without
# yosys.
# Usage: fpga_synth_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
if ! command -v yosys >/dev/null; then
  echo "SKIP: yosys is not on PATH"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
PY=$SRC/.venv/bin/python
$PY - "$TMP" <<'PYEOF' || exit 1
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
w1 = np.array([[0.37, -0.61, 1.23, -0.83], [0.71, 0.29, -1.37, 0.43],
               [-0.91, 1.11, 0.57, -0.33]], np.float32)
w2 = np.array([[1.31, -0.77, 0.39], [-0.59, 0.93, -1.17]], np.float32)
init = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.array([0.1, -0.2, 0.3], np.float32), "b1"),
        numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.array([0.05, -0.15], np.float32), "b2")]
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="/fc1/Gemm", transB=1),
         helper.make_node("Relu", ["h"], ["r"], name="/Relu"),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["l"], name="/fc2/Gemm", transB=1),
         helper.make_node("Softmax", ["l"], ["y"], name="/Softmax", axis=-1)]
g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])], init)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(m, d + "/tiny.onnx")
np.save(d + "/x.npy", np.random.default_rng(1).uniform(-4, 4, (16, 4)).astype(np.float32))
PYEOF

if ! "$TRIAD" compile "$TMP/tiny.onnx" --target fpga --input "$TMP/x.npy" -o "$TMP/d" >/dev/null; then
  echo "FAIL compile"; exit 1
fi
# Without yosys on PATH: an i/o error that says how to install it.
PATH=/nonexistent "$TRIAD" synth "$TMP/d" 2>"$TMP/err"
rc=$?
if [[ $rc -ne 3 ]] || ! grep -q "scripts/setup.sh" "$TMP/err"; then
  echo "FAIL missing yosys: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   missing yosys -> exit 3"; fi
# --pnr without nextpnr-ice40 (yosys found through a PATH holding only it): exit 3, setup.sh.
mkdir -p "$TMP/bin" && ln -s "$(command -v yosys)" "$TMP/bin/yosys"
PATH=$TMP/bin "$TRIAD" synth "$TMP/d" --family ice40 --pnr 2>"$TMP/err"
rc=$?
if [[ $rc -ne 3 ]] || ! grep -q "nextpnr-ice40.*scripts/setup.sh" "$TMP/err"; then
  echo "FAIL missing nextpnr: exit $rc"; cat "$TMP/err"; fail=1
else echo "ok   missing nextpnr-ice40 -> exit 3"; fi

for fam in xc7 ice40; do
  if ! "$TRIAD" synth "$TMP/d" --family $fam --json "$TMP/$fam.json"; then
    echo "FAIL synth $fam"; fail=1; continue
  fi
  if ! $PY - "$TMP/$fam.json" "$TMP/d/summary.json" $fam <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); fam = sys.argv[3]
mods = {m["module"]: m for m in j["modules"]}
for l in s["layers"]:
    assert l["module"] in mods, (l["module"], list(mods))
assert any(m.get("glue") for m in j["modules"]), j["modules"]
t = j["total"]
assert t["lut"] > 0 and t["ff"] > 0, t
# 4*3 + 3*2 dense multipliers and the Softmax's 2 (exp * reciprocal), one DSP each.
assert s["multipliers"] == 20, s["multipliers"]
# xc7: one DSP48E1 (25x18) per multiplier. ice40: an SB_MAC16 (16x16) per 16x16 dense product;
# the Softmax's 18x18 products (fixed<18,8> tables) take several each.
for l in s["layers"]:
    if fam == "xc7" or l["op"] != "Softmax":
        assert mods[l["module"]]["dsp"] == l["multipliers"], (l, mods[l["module"]])
if fam == "xc7":
    assert t["dsp"] == s["multipliers"], (t["dsp"], s["multipliers"])
else:
    assert t["dsp"] > s["multipliers"], (t["dsp"], s["multipliers"])
sm = mods[s["layers"][-1]["module"]]
if fam == "xc7":
    assert sm["bram18"] + 2 * sm["bram36"] == 3, sm  # two exp tables and the reciprocal table
    assert sm["logic_depth"] is not None and sm["logic_depth"] > 0, sm
    assert t["logic_depth"] >= sm["logic_depth"], t
    # Fmax: the slowest register-to-register path by the delay model (sim/Timing.h): its steps
    # (launch, the combinational cells, capture) add up to the period, the kinds of its cells to
    # the path mix, and it has no more cells than the longest path by count (ltp).
    dm = j["delay_model"]
    kinds = ("lut", "carry_entry", "carry", "muxf", "dsp", "dsp_cascade")
    for l in s["layers"]:
        m = mods[l["module"]]
        assert m["fmax_mhz"] is not None and m["fmax_mhz"] > 0, m
        steps = m["critical_path"]
        assert steps[0]["kind"] == "launch" and steps[-1]["kind"] == "capture", steps
        period = sum(st["net_ns"] + st["cell_ns"] for st in steps)
        assert abs(m["period_ns"] - period) < 1e-9, m
        assert abs(m["fmax_mhz"] - min(1000 / period, dm["clock_cap_mhz"])) < 1e-6, m
        for k in kinds:
            assert m["path"][k] == sum(st["kind"] == k for st in steps[1:-1]), (k, m)
        assert sum(m["path"].values()) <= m["logic_depth"], m
        # Compiled for 200 MHz: every stage fits the clock by the same model.
        assert s["clock_mhz"] == 200 and m["fmax_mhz"] >= 200, (l["layer"], m)
    assert j["fmax_mhz"] == min(mods[l["module"]]["fmax_mhz"] for l in s["layers"]), j["fmax_mhz"]
    assert j["total"]["fmax_mhz"] == j["fmax_mhz"] and j["logic_depth"] == t["logic_depth"], j
else:
    assert sm["bram"] >= 3, sm
print(fam, "LUT", t["lut"], "FF", t["ff"], "DSP", t["dsp"], "depth", t["logic_depth"],
      "Fmax~", j.get("fmax_mhz"))
PYEOF
  then echo "FAIL $fam: $(head -c 3000 "$TMP/$fam.json")"; fail=1; else echo "ok   $fam"; fi
done

# --strategy shift_add: the Dense layers as adder graphs; by Yosys' count no DSP48E1 in them, and
# every layer still meets the 200 MHz it was compiled for by the delay model.
if "$TRIAD" compile "$TMP/tiny.onnx" --target fpga --strategy shift_add --until /fc2/Gemm \
     -o "$TMP/sa" >/dev/null &&
   "$TRIAD" synth "$TMP/sa" --json "$TMP/sa.json" >/dev/null &&
   $PY - "$TMP/sa.json" "$TMP/sa/summary.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
mods = {m["module"]: m for m in j["modules"]}
for l in s["layers"]:
    m = mods[l["module"]]
    assert m["dsp"] == 0 and m["fmax_mhz"] >= 200, (l["layer"], m["dsp"], m["fmax_mhz"])
    if l["op"] == "Gemm":
        assert l["strategy"] == "shift_add" and m["lut"] > 0, (l, m["lut"])
print("shift_add LUT", j["total"]["lut"], "FF", j["total"]["ff"], "DSP", j["total"]["dsp"],
      "Fmax~", j["fmax_mhz"])
PYEOF
then echo "ok   shift_add: no DSP, >= 200 MHz"; else echo "FAIL shift_add synth"; fail=1; fi

# Place and route on an iCE40 UP5K: the model up to fc2 with fc1 at reuse 2 (12 multipliers in
# logic, the UP5K has 8 DSPs; at reuse 1 it needs 5,300 of the 5,280 cells), compiled for an
# iCE40's clock (25 MHz). The per-layer reuse comes from the config file's "reuse" key.
if ! command -v nextpnr-ice40 >/dev/null; then
  echo "SKIP pnr: nextpnr-ice40 is not on PATH (scripts/setup.sh installs it)"
elif ! echo '{"reuse": {"/fc1/Gemm": 2}}' >"$TMP/reuse.json" ||
     ! "$TRIAD" compile "$TMP/tiny.onnx" --target fpga --until /fc2/Gemm --clock-mhz 25 \
       --config "$TMP/reuse.json" -o "$TMP/p" >/dev/null; then
  echo "FAIL compile --until /fc2/Gemm"; fail=1
elif ! "$TRIAD" synth "$TMP/p" --family ice40 --pnr --device up5k --json "$TMP/pnr.json"; then
  echo "FAIL synth --pnr"; fail=1
elif ! $PY - "$TMP/pnr.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))["pnr"]
assert p["device"] == "up5k" and p["fmax_mhz"] > 0, p
assert 0 < p["logic_cells"] <= p["logic_cells_available"] == 5280, p
assert p["dsp"] == 0 and not p["dsp_mapped"] and p["ram"] == 0, p
print("pnr up5k Fmax", round(p["fmax_mhz"], 2), "MHz, LC", p["logic_cells"])
PYEOF
then echo "FAIL pnr: $(head -c 3000 "$TMP/pnr.json")"; fail=1; else echo "ok   pnr up5k"; fi
exit $fail
