#!/usr/bin/env bash
# Configures and builds Triad (Release) into build/. Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TRIAD_JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${CI:+-DTRIAD_WERROR=ON} "$@" > build-configure.log || {
  cat build-configure.log; exit 1; }
cmake --build build -j "$jobs"
