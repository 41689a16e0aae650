#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed time: the fuzz.<target>.run CTest cases, and the long
# campaigns of scripts/fuzz.sh.
#
#   run_fuzzer.sh FUZZER SECONDS WORKDIR SEED_DIR... [-- LIBFUZZER_FLAGS...]
#
# libFuzzer runs in fork mode (-fork=1 unless the flags say otherwise) and goes on past a
# finding, so that one run reports every class it meets. New inputs go to WORKDIR/corpus (kept
# between runs, so coverage accumulates), findings to WORKDIR/artifacts/, libFuzzer's log to
# WORKDIR/log. Each finding is then replayed and classified: "known" when its report matches a
# pattern of tests/fuzz/known_open.txt (a class another change is fixing), "NEW" otherwise.
# Exit 0: no new finding; 1: a new finding (printed, with how to replay it); 77: the fuzzer was
# not built (no clang++ with libFuzzer).
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
here=$(cd "$(dirname "$0")" && pwd)
target=$(basename "$fuzzer" _fuzzer)
mkdir -p "$work/corpus" "$work/artifacts"
existing=()
for s in "${seeds[@]}"; do [[ -d $s ]] && existing+=("$s"); done

# -timeout: a unit slower than 10 s is a hang; -rss_limit_mb/-malloc_limit_mb: memory beyond
# 2 GiB (one allocation or in all) is a finding, as issue 14 asks sizes to be checked first.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)
max_len=65536
[[ $target == quant_config || $target == tensor_file ]] && max_len=8192
extra=(-fork=1)
for f in "$@"; do [[ $f == -fork=* ]] && extra=(); done
dict=()
[[ -f $here/$target.dict ]] && dict=(-dict="$here/$target.dict")
started=$(date +%s)
"$fuzzer" -max_total_time="$seconds" "${limits[@]}" -max_len=$max_len -print_final_stats=1 \
  -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix="$work/artifacts/" \
  "${dict[@]}" "${extra[@]}" "$@" "$work/corpus" "${existing[@]}" > "$work/log" 2>&1
rc=$?
# The last status line: executions (#N), coverage (cov: edges) and features (ft).
grep -E '^#[0-9]+' "$work/log" | tail -n 1
if ((rc != 0)) && ! grep -qE '^#[0-9]+' "$work/log"; then
  echo "libFuzzer failed (exit $rc) before fuzzing; the end of its log ($work/log):"
  tail -n 40 "$work/log"
  exit 1
fi

# Classify the findings of this run (older ones were classified by the run that made them).
known=$here/known_open.txt
new=0 old=0 slow=0
report=$(mktemp)
trap 'rm -f "$report"' EXIT
while IFS= read -r a; do
  replayed=0
  (timeout 30 "$fuzzer" -runs=1 "${limits[@]}" "$a" > "$report" 2>&1) 2> /dev/null || replayed=$?
  what=$(grep -m1 -E '^fuzz: |ERROR: |runtime error:|Assertion' "$report" | cut -c1-200)
  # A time-out that replays cleanly within the limit was the machine's load (CI runs the fuzz
  # tests beside the conformance), not a hang: said, not counted.
  if [[ $(basename "$a") == timeout-* && $replayed == 0 && -z $what ]]; then
    slow=$((slow + 1))
    echo "not reproduced: $(basename "$a"): a time-out that replays cleanly within -timeout (load)"
    continue
  fi
  [[ -z $what ]] && what="(no report on replay: a time-out or a flaky finding)"
  if [[ -f $known ]] && grep -qE -f <(grep -vE '^(#|$)' "$known") "$report"; then
    old=$((old + 1))
    echo "known: $(basename "$a"): $what"
  else
    new=$((new + 1))
    echo "NEW:   $a: $what"
    echo "  replay: build/tests/fuzz/triad-fuzz-replay-$target $a (gcc) or $fuzzer $a"
    echo "  once fixed, keep it: cp $a tests/fuzz/regressions/$target/<what-it-was>"
  fi
done < <(find "$work/artifacts" -type f -newermt "@$started" | sort)
echo "$target: $new new finding(s), $old of known open classes (tests/fuzz/known_open.txt)," \
  "$slow time-out(s) not reproduced"
((new == 0))
