#!/usr/bin/env bash
# The test command: sets up the machine, builds, and runs every test (unit tests, frontend
# error tests, CLI, shipped model zoo, ONNX node-test conformance) through CTest, then the
# sanitized suite (scripts/test_sanitize.sh: the unit, CLI, report and interpreter-conformance
# tests again under ASan + UBSan + LSan, in build-asan/). Extra arguments go to both ctest runs.
# TRIAD_SANITIZE_SUITE=0 skips the sanitized suite for a quicker local run (not with CI set).
# The large-model checks (label `large`) need the on-demand zoo and run with `ctest -L large`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
rc=0
(cd build && ctest --output-on-failure -j "${TRIAD_JOBS:-$(nproc)}" -LE large "$@") || rc=$?
release_end=$SECONDS
summary="test.sh: setup, build and Release suite ${release_end} s (exit ${rc})"
# CI has 90 minutes in all. The sanitized suite (its tests ~17 minutes and its cold -Og build ~20
# more on 2 loaded cores; far less with a warm ccache) gets what is left of TRIAD_CI_BUDGET_S
# (seconds since this script began, 5,100 by default: 85 minutes). It starts only while at least
# 15 minutes are left, and scripts/test_sanitize.sh stops its build and its tests at the deadline,
# saying what it did not run; a test that failed before the deadline still fails the run.
budget=${TRIAD_CI_BUDGET_S:-5100}
if [[ -n ${CI:-} || ${TRIAD_SANITIZE_SUITE:-1} != 0 ]]; then
  if ((SECONDS <= budget - 900)); then
    src=0
    TRIAD_SANITIZE_SECONDS=$((budget - SECONDS)) scripts/test_sanitize.sh "$@" || src=$?
    ((src == 0)) || rc=$src
    summary+="; sanitized suite $((SECONDS - release_end)) s (exit ${src})"
  else
    summary+="; sanitized suite SKIPPED: under 15 minutes left of TRIAD_CI_BUDGET_S=${budget} s"
  fi
fi
echo "$summary; total ${SECONDS} s"
exit $rc
