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
start=$SECONDS
cmake --build build-asan -j "$jobs" --target triad_test_binaries
echo "test_sanitize: built in $((SECONDS - start)) s"

# Left out (docs/reliability.md): the CPU conformance (23 minutes in Release, ~1,000 compiles;
# the same code generator and kernels run in the unit and CLI tests), the RTL tests and the CLI
# tests of the FPGA flow (their time goes to Verilator and Yosys, not to Triad), the large zoo.
reports=build-asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
rc=0
start=$SECONDS
ctest --preset asan -j "$jobs" -LE '^(large|rtl)$' -E '^conformance\.onnx_node_tests\.cpu$' "$@" ||
  rc=$?
echo "test_sanitize: tests ran in $((SECONDS - start)) s"
if [[ -n $(ls -A "$reports") ]]; then
  echo "test_sanitize: sanitizer reports (build-asan/sanitizer-reports/):"
  for f in "$reports"/*; do
    echo "==== $f"
    head -60 "$f"
  done
  exit 1
fi
exit $rc
