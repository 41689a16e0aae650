#!/usr/bin/env bash
# The sanitized suite (docs/reliability.md, "Sanitizers"): builds Triad with AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer into build-asan/ (CMake preset `asan`: -Og -g1,
# only the targets the tests need) and runs under them the unit tests, the CLI, report, bench and
# fault tests, the shipped zoo and the interpreter and GPU conformance. The C++ that the CPU
# target generates and dlopens is built with the same sanitizer flags. Any report fails the run,
# also one from a process whose exit code a test ignores: every report is written to
# build-asan/sanitizer-reports/ and the run fails if that folder is not empty. scripts/test.sh
# runs this after the Release suite; extra arguments go to ctest (e.g. -R cli.triad).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TRIAD_JOBS:-$(nproc)}
# Warnings are enforced by the Release build (-Werror in CI); -Og builds add gcc false positives
# (maybe-uninitialized), so this build does not make them errors.
cmake --preset asan > build-asan-configure.log 2>&1 || {
  cat build-asan-configure.log; exit 1; }
# Only what the tests run (triad, the test executables), not the benchmarks in bench/.
# TRIAD_SANITIZE_SECONDS (set by scripts/test.sh for CI's 90 minutes): the time this script may
# take; the build gets all but the last 10 minutes of it and the tests the rest.
limit=${TRIAD_SANITIZE_SECONDS:-0}
bounded() { # SECONDS_LEFT COMMAND...: the command, stopped after SECONDS_LEFT if a limit is set
  local left=$1
  shift
  if ((limit > 0)); then timeout "$((left > 60 ? left : 60))" "$@"; else "$@"; fi
}
start=$SECONDS
brc=0
bounded $((limit - 600)) cmake --build build-asan -j "$jobs" --target triad_test_binaries || brc=$?
if ((brc == 124)); then
  echo "test_sanitize: SKIPPED: the build did not finish within ${limit} s less 10 minutes" \
    "(TRIAD_SANITIZE_SECONDS); no sanitized test ran"
  exit 0
fi
((brc == 0)) || exit $brc
echo "test_sanitize: built in $((SECONDS - start)) s"

# Left out (docs/reliability.md): the CPU conformance (23 minutes in Release, ~1,000 compiles;
# the same code generator and kernels run in the unit and CLI tests), the RTL tests and the CLI
# tests of the FPGA flow (their time goes to Verilator and Yosys, not to Triad), the large zoo.
reports=build-asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
rc=0
start=$SECONDS
log=build-asan/sanitized-ctest.log
set -o pipefail
bounded $((limit - SECONDS)) ctest --preset asan -j "$jobs" -LE '^(large|rtl)$' \
  -E '^conformance\.onnx_node_tests(_newest)?\.cpu$' "$@" 2>&1 | tee "$log" || rc=$?
if ((rc == 124)); then
  # Stopped at the deadline: what finished is judged, the rest is named as not run.
  rc=0
  ! grep -Eq '\*\*\*(Failed|Exception|Timeout)|Failed  +[0-9.]+ sec' "$log" || rc=1
  echo "test_sanitize: CUT at the deadline (TRIAD_SANITIZE_SECONDS=${limit}) after" \
    "$(grep -Ec ' Test +#[0-9]+: ' "$log") finished tests; the rest did not run"
fi
echo "test_sanitize: tests ran in $((SECONDS - start)) s"
# An empty report file holds no report: a process SIGKILLed between opening its log and writing
# to it (faults.kill kills triad at random moments, also inside LeakSanitizer's exit-time check,
# whose tracer opens the log as the process dies). Named, not counted.
while IFS= read -r f; do
  echo "test_sanitize: empty $f (a process killed as its sanitizer opened the log), not a report"
  rm -f "$f"
done < <(find "$reports" -type f -empty)
if [[ -n $(ls -A "$reports") ]]; then
  echo "test_sanitize: sanitizer reports (build-asan/sanitizer-reports/):"
  for f in "$reports"/*; do
    echo "==== $f"
    head -60 "$f"
  done
  exit 1
fi
exit $rc
