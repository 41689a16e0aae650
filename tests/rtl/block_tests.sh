#!/usr/bin/env bash
# Verilator tests of the streaming RTL blocks (fpga/rtl/triad_{window,collect,pool,global_pool,
# concat,upsample}.v): each block is linted (verilator --lint-only -Wall) and, for every
# configuration below, verilated with the configuration as -G overrides and run with its C++
# testbench (tests/rtl/<block>_tb.cpp, the same values as -D macros), which checks the outputs
# bit-exactly against a reference model under random input gaps and output back-pressure and the
# exact timing rule in a pass without gaps or stalls.
#
# usage: block_tests.sh SOURCE_DIR [BUILD_DIR]
# Prints one "ok   ..." or "FAIL ..." line per case and "N passed, M failed"; exit 0 when all
# pass, 1 otherwise, 77 when verilator is missing. BUILD_DIR defaults to a temporary directory
# (removed at exit). JOBS (default 2) cases run in parallel; FILTER (a substring of
# BLOCK.CASE) runs only the matching cases.
set -u

if [ $# -lt 1 ]; then
  echo "usage: $0 SOURCE_DIR [BUILD_DIR]" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
RTL=$SRC/fpga/rtl
TB=$SRC/tests/rtl
JOBS=${JOBS:-2}

if ! command -v verilator >/dev/null 2>&1; then
  echo "verilator not found: skipped"
  exit 77
fi

if [ $# -ge 2 ]; then
  BUILD=$2
  mkdir -p "$BUILD"
else
  BUILD=$(mktemp -d)
  trap 'rm -rf "$BUILD"' EXIT
fi
BUILD=$(cd "$BUILD" && pwd)

# The Verilog sources of each block (the block itself first).
sources() {
  case $1 in
    triad_window | triad_collect | triad_upsample) echo "$RTL/$1.v" ;;
    *) echo "$RTL/$1.v $RTL/triad_cast.v" ;;
  esac
}

# One case: BLOCK NAME PARAM=VALUE... -> writes $BUILD/<block>.<name>/result ("ok" or "FAIL")
# and its log.
run_case() {
  local block=$1 name=$2
  shift 2
  local dir=$BUILD/$block.$name
  rm -rf "$dir"
  mkdir -p "$dir"
  # NAME=VALUE goes to both; NAME=BITS:VALUE (a raw bit pattern, VALUE >= 0) is passed to
  # Verilator as the sized literal BITS'dVALUE and to the testbench as VALUE.
  local gflags=() dflags="" p n v
  for p in "$@"; do
    n=${p%%=*}
    v=${p#*=}
    case $v in
      *:*) gflags+=("-G$n=${v%%:*}'d${v#*:}") ; dflags+=" -DP_$n=${v#*:}" ;;
      *) gflags+=("-G$n=$v") ; dflags+=" -DP_$n=$v" ;;
    esac
  done
  local srcs
  srcs=$(sources "$block")
  (
    echo "== lint"
    # shellcheck disable=SC2086
    verilator --lint-only -Wall --top-module "$block" "${gflags[@]}" $srcs || exit 1
    echo "== build"
    # shellcheck disable=SC2086
    if ! verilator --cc --exe --build -j 1 -Wno-fatal --top-module "$block" "${gflags[@]}" \
      -CFLAGS "-O0 -I$TB$dflags" -MAKEFLAGS "$MFLAGS" \
      --Mdir "$dir/obj" -o tb $srcs "$TB/${block}_tb.cpp" >"$dir/build.log" 2>&1; then
      tail -30 "$dir/build.log"
      exit 1
    fi
    echo "== run"
    "$dir/obj/tb"
  ) >"$dir/log" 2>&1
  if [ $? -eq 0 ] && grep -q '^PASS$' "$dir/log"; then
    echo ok >"$dir/result"
  else
    echo FAIL >"$dir/result"
  fi
  rm -rf "$dir/obj"
}

# One lint case: BLOCK with default parameters.
lint_case() {
  local block=$1 dir=$BUILD/$1.lint
  rm -rf "$dir"
  mkdir -p "$dir"
  # shellcheck disable=SC2046
  if verilator --lint-only -Wall --top-module "$block" $(sources "$block") >"$dir/log" 2>&1; then
    echo ok >"$dir/result"
  else
    echo FAIL >"$dir/result"
  fi
}

CASES=()
add() { CASES+=("$*"); }

for b in triad_window triad_collect triad_pool triad_global_pool triad_concat triad_upsample; do
  add lint "$b"
done

# triad_window: C W IN_H IN_W KH KW SH SW DH DW PAD_T PAD_L PAD_B PAD_R PAD
win() { add case triad_window "$1" C="$2" W="$3" IN_H="$4" IN_W="$5" KH="$6" KW="$7" SH="$8" SW="$9" \
  DH="${10}" DW="${11}" PAD_T="${12}" PAD_L="${13}" PAD_B="${14}" PAD_R="${15}" PAD="$3:${16}"; }
win k3s1p1_c3 3 8 6 7 3 3 1 1 1 1 1 1 1 1 0
win k3s2_valid_c1 1 8 7 9 3 3 2 2 1 1 0 0 0 0 0
win k5p2_c2 2 6 6 6 5 5 1 1 1 1 2 2 2 2 0
win k1_c3 3 8 4 5 1 1 1 1 1 1 0 0 0 0 0
win k1s2_pad 2 8 5 5 1 1 2 2 1 1 1 0 0 1 5
win k2s2_maxpool 3 8 6 8 2 2 2 2 1 1 0 0 0 0 128
win k3_dil2_p2 2 8 7 7 3 3 1 1 2 2 2 2 2 2 0
win asym_pads 1 8 5 6 3 2 1 1 1 1 2 0 1 3 200
win whole_image 2 8 4 4 4 4 1 1 1 1 0 0 0 0 0
win stride_gt_k 1 8 8 9 2 2 3 4 1 1 0 0 0 0 0
win k3x1_s2x1_dil 1 5 6 5 3 1 2 1 2 1 1 0 0 0 16
win bigpad_maxpool 2 8 3 3 3 3 2 2 1 1 3 3 3 3 128

# triad_collect: N W FRAME
add case triad_collect n3_f5 N=3 W=8 FRAME=5
add case triad_collect n1_f1 N=1 W=8 FRAME=1
add case triad_collect n2_f2 N=2 W=12 FRAME=2
add case triad_collect n4_f12 N=4 W=6 FRAME=12

# triad_pool: N K MODE IN_W IN_FRAC RECIP_W RECIP_FRAC RECIP OUT_W OUT_FRAC ROUNDING SATURATE
pool() { add case triad_pool "$1" N="$2" K="$3" MODE="$4" IN_W="$5" IN_FRAC="$6" RECIP_W="$7" \
  RECIP_FRAC="$8" RECIP="$7:$9" OUT_W="${10}" OUT_FRAC="${11}" ROUNDING="${12}" SATURATE="${13}"; }
pool max_k4 3 4 0 8 4 8 7 0 8 4 0 1
pool max_k9_narrow_rnd 2 9 0 12 6 8 7 0 6 2 1 1
pool max_k4_wrap_up 3 4 0 8 4 8 7 0 8 6 0 0
pool avg_k4_q8_trunc 3 4 1 8 4 8 8 64 8 4 0 1
pool avg_k4_q7_rnd 3 4 1 8 4 8 7 32 8 4 1 1
pool avg_k9_conv_sat 2 9 1 8 3 10 12 455 6 3 2 1
pool avg_k9_conv_wrap 2 9 1 8 3 10 12 455 6 3 2 0
pool avg_k1 4 1 1 8 4 6 4 16 8 4 1 1
pool avg_k3_negrecip 2 3 1 6 2 8 6 235 8 5 2 1
pool avg_k4_conv_sat 3 4 1 8 4 8 8 64 6 3 2 1
pool max_k4_conv 2 4 0 8 4 8 7 0 6 2 2 1

# triad_global_pool: N FRAME MODE IN_W IN_FRAC RECIP_W RECIP_FRAC RECIP OUT_W OUT_FRAC ROUNDING SATURATE
gp() { add case triad_global_pool "$1" N="$2" FRAME="$3" MODE="$4" IN_W="$5" IN_FRAC="$6" RECIP_W="$7" \
  RECIP_FRAC="$8" RECIP="$7:$9" OUT_W="${10}" OUT_FRAC="${11}" ROUNDING="${12}" SATURATE="${13}"; }
gp max_f12 3 12 0 8 4 8 7 0 8 4 0 1
gp max_f1 2 1 0 8 4 8 7 0 6 2 1 1
gp avg_f16_rnd 3 16 1 8 4 8 8 16 8 4 1 1
gp avg_f12_conv_sat 2 12 1 8 3 12 14 1365 6 3 2 1
gp avg_f5_trunc_wrap 4 5 1 10 5 9 10 205 7 5 0 0
gp avg_f16_conv 2 16 1 8 4 8 8 16 10 5 2 0

# triad_concat: NA A_W A_FRAC NB B_W B_FRAC OUT_W OUT_FRAC ROUNDING SATURATE
cc() { add case triad_concat "$1" NA="$2" A_W="$3" A_FRAC="$4" NB="$5" B_W="$6" B_FRAC="$7" OUT_W="$8" \
  OUT_FRAC="$9" ROUNDING="${10}" SATURATE="${11}"; }
cc same_fmt 3 8 4 2 8 4 8 4 0 1
cc mixed_rnd_sat 2 10 6 3 8 2 8 4 1 1
cc mixed_conv_wrap 1 12 3 4 6 5 7 4 2 0

# triad_upsample: C W IN_H IN_W SH SW
add case triad_upsample s2x2_c3 C=3 W=8 IN_H=4 IN_W=5 SH=2 SW=2
add case triad_upsample s1x3_c1 C=1 W=8 IN_H=3 IN_W=4 SH=1 SW=3
add case triad_upsample s3x1_c2 C=2 W=6 IN_H=3 IN_W=3 SH=3 SW=1
add case triad_upsample s1x1_w1 C=2 W=8 IN_H=2 IN_W=1 SH=1 SW=1
add case triad_upsample s2x2_1x1 C=1 W=8 IN_H=1 IN_W=1 SH=2 SW=2

start=$(date +%s)

# The Verilator run-time (verilated.cpp, verilated_threads.cpp) is compiled once and linked into
# every testbench (the per-case makefiles are told to build no global objects).
VROOT=$(verilator --getenv VERILATOR_ROOT)
mkdir -p "$BUILD/common"
for f in verilated verilated_threads; do
  g++ -I"$VROOT/include" -I"$VROOT/include/vltstd" -DVM_COVERAGE=0 -DVM_SC=0 -DVM_TRACE=0 \
    -DVM_TRACE_FST=0 -DVM_TRACE_VCD=0 -faligned-new -O0 -c -o "$BUILD/common/$f.o" \
    "$VROOT/include/$f.cpp" >"$BUILD/common/$f.log" 2>&1 &
done
wait
MFLAGS="OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0 VM_GLOBAL_FAST= VM_GLOBAL_SLOW="
MFLAGS+=" LOADLIBES=$BUILD/common/verilated.o\\ $BUILD/common/verilated_threads.o"
names=()
i=0
for c in "${CASES[@]}"; do
  # shellcheck disable=SC2086
  set -- $c
  kind=$1
  shift
  case " $1.${2:-lint}" in *"${FILTER:-}"*) ;; *) continue ;; esac
  if [ "$kind" = lint ]; then
    names+=("$1.lint")
    lint_case "$1" &
  else
    names+=("$1.$2")
    run_case "$@" &
  fi
  i=$((i + 1))
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
    wait -n 2>/dev/null || sleep 0.2
  done
done
wait

passed=0
failed=0
for n in "${names[@]}"; do
  r=$(cat "$BUILD/$n/result" 2>/dev/null || echo FAIL)
  if [ "$r" = ok ]; then
    echo "ok   $n"
    grep -E '^  (window|collect|pool|global|concat|upsample)' "$BUILD/$n/log" 2>/dev/null | sed 's/^  /       /'
    passed=$((passed + 1))
  else
    echo "FAIL $n"
    sed 's/^/       /' "$BUILD/$n/log" 2>/dev/null | tail -20
    failed=$((failed + 1))
  fi
done
echo "($(($(date +%s) - start)) s)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
