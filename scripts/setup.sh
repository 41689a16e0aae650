#!/usr/bin/env bash
# Installs everything Triad needs on a Debian 12 machine, idempotently:
#   - system packages (compiler, CMake, ONNX/protobuf, fmt, CLI11, nlohmann-json, GoogleTest,
#     Python, Verilator, Yosys and nextpnr-ice40 + IceStorm for the FPGA flow, PoCL for OpenCL,
#     OpenBLAS as a benchmark peer, clang and its libFuzzer run-time for the fuzz targets),
#     installed with apt-get when missing (needs root, as on CI);
#   - the project's Python environment .venv/ with pinned packages (requirements.txt), and the
#     benchmark peers' .venv-peers/ (requirements-peers.txt: the newest ONNX Runtime and
#     OpenVINO), each rebuilt only when its requirements file changes.
# With --zoo it also installs Debian's CPU-only PyTorch, torchvision and scikit-learn, which the
# model-zoo scripts (scripts/zoo/) need to train or export models; tests never need them.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake g++ pkg-config git ca-certificates
  libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev
  python3 python3-venv python3-pip python3-dev
  verilator yosys nextpnr-ice40 fpga-icestorm ccache
  libbenchmark-dev libopenblas-dev libsqlite3-dev chromium
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  clang libclang-rt-14-dev
)

if [[ ${1:-} == --zoo ]]; then
  APT_PACKAGES+=(python3-torch python3-torchvision python3-sklearn)
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing system packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python environment: Debian's python3 (3.11) unless TRIAD_PYTHON names another.
PY=${TRIAD_PYTHON:-python3}
make_venv() { # DIR REQUIREMENTS
  local stamp=$1/.requirements.sha256 want
  want=$(sha256sum "$2" | cut -d' ' -f1)
  if [[ ! -x $1/bin/python || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup: creating $1 with $($PY --version)"
    "$PY" -m venv "$1"
    "$1/bin/python" -m pip install -q --upgrade pip
    "$1/bin/python" -m pip install -q -r "$2"
    echo "$want" > "$stamp"
  fi
}
make_venv .venv requirements.txt
make_venv .venv-peers requirements-peers.txt
echo "setup: ok ($(.venv/bin/python -c 'import onnx; print("onnx", onnx.__version__)'); peers:" \
  "$(.venv-peers/bin/python -c 'import onnxruntime as o, openvino as v; print("onnxruntime", o.__version__, "openvino", v.__version__)'))"
