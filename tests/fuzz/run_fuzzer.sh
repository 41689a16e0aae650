#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed time: the fuzz.<target>.run CTest cases, and the long
# campaigns of scripts/fuzz.sh.
#
#   run_fuzzer.sh FUZZER SECONDS WORKDIR SEED_DIR... [-- LIBFUZZER_FLAGS...]
#
# New inputs go to WORKDIR/corpus (kept between runs, so coverage accumulates), crashes, leaks,
# time-outs and out-of-memory inputs to WORKDIR/artifacts/, libFuzzer's log to WORKDIR/log.
# Exit 0: no finding; 1: a finding (the input is printed, with how to replay it); 77: the
# fuzzer was not built (no clang++ with libFuzzer).
set -uo pipefail
fuzzer=$1 seconds=$2 work=$3
shift 3
seeds=()
while (($#)) && [[ $1 != -- ]]; do
  seeds+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
if [[ ! -x $fuzzer ]]; then
  echo "SKIP: $fuzzer is not built (needs clang++ and libclang-rt-14-dev: scripts/setup.sh)"
  exit 77
fi
target=$(basename "$fuzzer" _fuzzer)
mkdir -p "$work/corpus" "$work/artifacts"
existing=()
for s in "${seeds[@]}"; do [[ -d $s ]] && existing+=("$s"); done

# -timeout: a unit slower than 10 s is a hang; -rss_limit_mb/-malloc_limit_mb: memory beyond
# 2 GiB (one allocation or in all) is a finding, as issue 14 asks sizes to be checked first.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
max_len=65536
[[ $target == quant_config || $target == tensor_file ]] && max_len=8192
dict=()
here=$(dirname "$0")
[[ -f $here/$target.dict ]] && dict=(-dict="$here/$target.dict")
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
  -max_len=$max_len -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" "$@" \
  "$work/corpus" "${existing[@]}" > "$work/log" 2>&1
rc=$?
# The last status line and the final statistics: executions, coverage (cov) and features (ft).
grep -E '^#[0-9]+.*(cov|DONE)' "$work/log" | tail -n 2
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$work/log"
if ((rc != 0)); then
  echo "FINDING (libFuzzer exit $rc); the end of its log ($work/log):"
  tail -n 60 "$work/log"
  shopt -s nullglob
  for a in "$work"/artifacts/*; do
    echo "input: $a"
    echo "  replay (gcc build): triad-fuzz-replay-$target $a"
    echo "  once fixed, keep it: cp $a tests/fuzz/regressions/$target/<what-it-was>"
  done
  exit 1
fi
exit 0
