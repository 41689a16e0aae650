#!/usr/bin/env bash
# The test command: sets up the machine, builds, and runs every test (unit tests, frontend
# error tests, CLI, shipped model zoo, ONNX node-test conformance) through CTest. The large-model
# checks (label `large`) need the on-demand zoo and run with `ctest -L large`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "${TRIAD_JOBS:-$(nproc)}" -LE large "$@"
