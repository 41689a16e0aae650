#!/usr/bin/env bash
# fpga/rtl/triad_dense.v under Verilator against the C++ model in dense_tb.cpp, over reuse
# factors, STAGE_LEVELS (pipelined adder tree) and number formats: per case, a
# `verilator --lint-only -Wall` of the block with the case's parameters, then a steady pass
# (latency == LATENCY, II == REUSE), a pass with ~30% input gaps and ~30% back-pressure and one
# with ~10% gaps and ~70% back-pressure, every output bit checked. Two cases build at a time.
# Prints `ok   CASE` / `FAIL CASE: why` per case and finally `N passed, M failed`; exits 0 only
# when all pass, 77 (skipped) without verilator. DENSE_TEST_ONLY=REGEX runs the matching cases.
# Usage: dense_tests.sh SOURCE_DIR [BUILD_DIR]
set -u
SRC=${1:?usage: dense_tests.sh SOURCE_DIR [BUILD_DIR]}
if ! command -v verilator >/dev/null; then
  echo "SKIP: verilator is not on PATH"
  exit 77
fi
CXX=${CXX:-g++}
JOBS=${DENSE_TEST_JOBS:-2}
if [ $# -ge 2 ]; then
  BUILD=$2
  mkdir -p "$BUILD"
else
  BUILD=$(mktemp -d)
  trap 'rm -rf "$BUILD"' EXIT
fi
BUILD=$(cd "$BUILD" && pwd)
RTL=$SRC/fpga/rtl
TB=$SRC/tests/rtl/dense_tb.cpp
VROOT=$(verilator --getenv VERILATOR_ROOT)
VINC="-I$VROOT/include -I$VROOT/include/vltstd"
VDEFS="-DVM_COVERAGE=0 -DVM_SC=0 -DVM_TRACE=0 -DVM_TRACE_FST=0 -DVM_TRACE_VCD=0"

# Shared objects: the Verilator run-time library and the wrapper generator (built once).
COMMON=$BUILD/common
mkdir -p "$COMMON"
for f in verilated verilated_threads; do
  if [ ! -f "$COMMON/$f.o" ]; then
    $CXX -std=c++17 -O1 $VINC $VDEFS -c "$VROOT/include/$f.cpp" -o "$COMMON/$f.o" &
  fi
done
$CXX -std=c++17 -O1 -DDENSE_TB_GEN "$TB" -o "$COMMON/dense_tb_gen" &
wait
for f in verilated.o verilated_threads.o dense_tb_gen; do
  if [ ! -f "$COMMON/$f" ]; then
    echo "FAIL setup: cannot build $f"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# Cases: NAME then KEY=VALUE overrides of dense_tb.cpp's defaults (N_IN 16, N_OUT 5, REUSE 1,
# fixed<16,6> inputs/weights/biases, exact accumulator ACC_W 37 / ACC_FRAC 20, output
# fixed<16,6> floor + saturate, STAGE_LEVELS 0).
CASES=()
add() { CASES+=("$*"); }
seed=1
for r in 1 2 4; do
  for k in 0 1 2 3; do
    # 16 -> 5, <16,6>, exact accumulator.
    add "n16x5_r${r}_k${k}" REUSE=$r STAGE_LEVELS=$k SEED=$((seed++))
    # 12 -> 3 (KPR 12, 6, 3: unbalanced trees), narrow formats, left-shifting exact accumulator,
    # convergent + wrapping output.
    add "n12x3_r${r}_k${k}" N_IN=12 N_OUT=3 REUSE=$r STAGE_LEVELS=$k IN_W=8 IN_FRAC=3 W_W=6 \
      W_FRAC=4 B_W=10 B_FRAC=5 ACC_W=20 ACC_FRAC=9 OUT_W=9 OUT_FRAC=4 RES_ROUNDING=2 \
      RES_SATURATE=0 SEED=$((seed++))
  done
done
for k in 0 1 2; do
  # One input: a one-leaf tree.
  add "n1x3_r1_k${k}" N_IN=1 N_OUT=3 STAGE_LEVELS=$k IN_W=10 IN_FRAC=4 W_W=9 W_FRAC=5 \
    ACC_W=21 ACC_FRAC=9 OUT_W=8 OUT_FRAC=2 RES_ROUNDING=1 SEED=$((seed++))
done
# Lossy accumulator: the product cast rounds half up and saturates (leaves are ACC_W wide).
add "lossy_sat_r2_k1" N_IN=16 N_OUT=4 REUSE=2 STAGE_LEVELS=1 IN_W=10 IN_FRAC=6 W_W=8 W_FRAC=6 \
  B_W=8 B_FRAC=4 ACC_W=10 ACC_FRAC=6 OUT_W=10 OUT_FRAC=5 ACC_ROUNDING=1 ACC_SATURATE=1 \
  RES_ROUNDING=1 SEED=$((seed++))
add "lossy_sat_r1_k2" N_IN=10 N_OUT=4 REUSE=1 STAGE_LEVELS=2 IN_W=10 IN_FRAC=6 W_W=8 W_FRAC=6 \
  B_W=8 B_FRAC=4 ACC_W=11 ACC_FRAC=6 OUT_W=10 OUT_FRAC=5 ACC_ROUNDING=2 ACC_SATURATE=1 \
  RES_ROUNDING=2 SEED=$((seed++))
# Rounding but never overflowing product cast (convergent; range-sized leaves of P_W-S+1 bits).
add "round_nosat_r1_k1" N_IN=16 N_OUT=4 REUSE=1 STAGE_LEVELS=1 IN_W=10 IN_FRAC=6 W_W=8 \
  W_FRAC=6 ACC_W=24 ACC_FRAC=8 ACC_ROUNDING=2 ACC_SATURATE=1 OUT_W=12 OUT_FRAC=4 \
  SEED=$((seed++))
add "round_nosat_r4_k2" N_IN=16 N_OUT=4 REUSE=4 STAGE_LEVELS=2 IN_W=10 IN_FRAC=6 W_W=8 \
  W_FRAC=6 ACC_W=24 ACC_FRAC=8 ACC_ROUNDING=1 ACC_SATURATE=1 OUT_W=12 OUT_FRAC=4 \
  SEED=$((seed++))
# Wrapping accumulators: products that overflow ACC_W (floor + wrap), and an exact fraction in
# too few bits (the casts wrap; leaves ACC_W wide).
add "wrap_r1_k1" N_IN=16 N_OUT=4 REUSE=1 STAGE_LEVELS=1 IN_FRAC=6 W_FRAC=6 B_FRAC=6 ACC_W=16 \
  ACC_FRAC=4 ACC_ROUNDING=0 ACC_SATURATE=0 OUT_W=12 OUT_FRAC=2 RES_SATURATE=0 SEED=$((seed++))
add "wrap_exact_r2_k2" N_IN=12 N_OUT=3 REUSE=2 STAGE_LEVELS=2 IN_W=8 IN_FRAC=4 W_W=8 W_FRAC=4 \
  B_W=8 B_FRAC=4 ACC_W=14 ACC_FRAC=8 ACC_SATURATE=0 OUT_W=10 OUT_FRAC=4 SEED=$((seed++))
add "sat_exact_r1_k3" N_IN=12 N_OUT=3 REUSE=1 STAGE_LEVELS=3 IN_W=8 IN_FRAC=4 W_W=8 W_FRAC=4 \
  B_W=8 B_FRAC=4 ACC_W=14 ACC_FRAC=8 ACC_SATURATE=1 OUT_W=10 OUT_FRAC=4 SEED=$((seed++))

# Registers where the emitter's delay model puts them (STAGE_MASK: after the products, level 1,
# level 3 and level 4; after level 2 of a 3-level tree), and products by constants of few
# signed digits built from shifts and adds (TERMS: W_TERMS, and W_MAG narrowing the tree).
add "mask_r1" N_IN=16 N_OUT=5 REUSE=1 STAGE_MASK=27 SEED=$((seed++))
add "mask_r2" N_IN=16 N_OUT=4 REUSE=2 STAGE_MASK=5 SEED=$((seed++))
add "terms_r1_k0" N_IN=16 N_OUT=5 REUSE=1 TERMS=1 SEED=$((seed++))
add "terms_mask_r1" N_IN=12 N_OUT=3 REUSE=1 TERMS=1 STAGE_MASK=11 IN_W=8 IN_FRAC=3 W_W=6 \
  W_FRAC=4 B_W=10 B_FRAC=5 ACC_W=20 ACC_FRAC=9 OUT_W=9 OUT_FRAC=4 RES_ROUNDING=2 \
  RES_SATURATE=0 SEED=$((seed++))
add "terms_lossy_r1" N_IN=10 N_OUT=4 REUSE=1 TERMS=1 STAGE_LEVELS=2 IN_W=10 IN_FRAC=6 W_W=8 \
  W_FRAC=6 B_W=8 B_FRAC=4 ACC_W=11 ACC_FRAC=6 OUT_W=10 OUT_FRAC=5 ACC_ROUNDING=2 \
  ACC_SATURATE=1 RES_ROUNDING=2 SEED=$((seed++))

# Output folding (REUSE = N_IN * RO: lanes computing RO outputs each, one group after another)
# and weights read from a ROM (WEIGHT_ROM: one more pipeline stage), alone and together.
add "fold_r32" N_IN=16 N_OUT=6 REUSE=32 SEED=$((seed++))
add "fold_r96_k1" N_IN=16 N_OUT=6 REUSE=96 STAGE_LEVELS=1 SEED=$((seed++))
add "fold_r36_narrow" N_IN=12 N_OUT=6 REUSE=36 IN_W=8 IN_FRAC=3 W_W=6 W_FRAC=4 B_W=10 \
  B_FRAC=5 ACC_W=20 ACC_FRAC=9 OUT_W=9 OUT_FRAC=4 RES_ROUNDING=2 RES_SATURATE=0 SEED=$((seed++))
add "rom_r4" N_IN=16 N_OUT=5 REUSE=4 WEIGHT_ROM=1 SEED=$((seed++))
add "rom_r8_k1" N_IN=16 N_OUT=5 REUSE=8 STAGE_LEVELS=1 WEIGHT_ROM=1 SEED=$((seed++))
add "rom_fold_r48_mask" N_IN=16 N_OUT=6 REUSE=48 STAGE_MASK=1 WEIGHT_ROM=1 SEED=$((seed++))
add "rom_r1" N_IN=16 N_OUT=5 REUSE=1 WEIGHT_ROM=1 SEED=$((seed++))

# One case: lint, generate the wrapper, Verilate, compile, run. Writes DIR/result.
run_case() {
  local name=$1
  shift
  local dir=$BUILD/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  local g=() kv
  for kv in "$@"; do
    case $kv in
      SEED=* | SAMPLES=* | TERMS=*) ;;
      STAGE_MASK=*) g+=("-GSTAGE_MASK=64'd${kv#*=}") ;;
      *) g+=("-G$kv") ;;
    esac
  done
  if ! verilator --lint-only -Wall "${g[@]}" --top-module triad_dense "$RTL/triad_dense.v" \
      "$RTL/triad_cast.v" >"$dir/lint.log" 2>&1; then
    echo "FAIL $name: lint: $(grep -m1 -E '%(Warning|Error)' "$dir/lint.log")" >"$dir/result"
    return
  fi
  if ! "$COMMON/dense_tb_gen" "$@" >"$dir/tb_top.v"; then
    echo "FAIL $name: wrapper generation" >"$dir/result"
    return
  fi
  if ! verilator --cc -Wno-fatal --Mdir "$dir/obj" --top-module tb_top "$dir/tb_top.v" \
      "$RTL/triad_dense.v" "$RTL/triad_cast.v" >"$dir/verilate.log" 2>&1; then
    echo "FAIL $name: verilator: $(grep -m1 -E '%Error' "$dir/verilate.log")" >"$dir/result"
    return
  fi
  # One translation unit (the Verilated model and the testbench): one compiler run per case.
  local f
  for f in "$dir"/obj/Vtb_top*.cpp "$TB"; do
    echo "#include \"$f\""
  done >"$dir/all.cpp"
  if ! $CXX -std=c++17 -O0 $VINC $VDEFS -I"$dir/obj" "$dir/all.cpp" \
      "$COMMON/verilated.o" "$COMMON/verilated_threads.o" -pthread -o "$dir/tb" \
      >"$dir/build.log" 2>&1; then
    echo "FAIL $name: build: $(grep -m1 error "$dir/build.log")" >"$dir/result"
    return
  fi
  local out
  if out=$(cd "$dir" && timeout 120 ./tb "$@" 2>&1); then
    echo "ok   $name: $out" >"$dir/result"
  else
    echo "FAIL $name: $(echo "$out" | tail -n 3 | tr '\n' ' ')" >"$dir/result"
  fi
}

# At most JOBS cases at a time; results printed in order.
names=()
running=0
for c in "${CASES[@]}"; do
  read -r -a a <<<"$c"
  # DENSE_TEST_ONLY: a regular expression; only the cases whose name matches run.
  if [ -n "${DENSE_TEST_ONLY:-}" ] && ! [[ ${a[0]} =~ $DENSE_TEST_ONLY ]]; then continue; fi
  names+=("${a[0]}")
  run_case "${a[@]}" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

pass=0
fail=0
for n in "${names[@]}"; do
  if [ -f "$BUILD/$n/result" ]; then
    line=$(cat "$BUILD/$n/result")
  else
    line="FAIL $n: no result"
  fi
  echo "$line"
  case $line in
    ok*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)) ;;
  esac
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
