#!/usr/bin/env bash
# Installs what Ember needs to build and test (Debian packages), then configures and builds.
# Idempotent: packages already present are not touched, and apt is not called at all when
# nothing is missing. Sourced by run.sh and test.sh; usable alone: scripts/setup.sh [build-dir].
set -euo pipefail

EMBER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-${EMBER_BUILD_DIR:-$EMBER_ROOT/build}}"

# What building needs; then what the tests and benchmarks add (PyTorch and ONNX's test data as
# oracles, clang for the fuzz target). EMBER_SETUP_PACKAGES=build installs the first list only
# (the Dockerfile's build stage, with -DEMBER_TESTS=OFF -DEMBER_BENCH=OFF).
packages=(build-essential cmake ninja-build ccache git
          libeigen3-dev nlohmann-json3-dev libcli11-dev libboost-context-dev
          pybind11-dev python3-dev python3-numpy libopenmpi-dev openmpi-bin
          libonnx-dev libprotobuf-dev)
if [ "${EMBER_SETUP_PACKAGES:-all}" != "build" ]; then
  packages+=(doctest-dev libbenchmark-dev python3-pytest python3-torch
             libonnx-testdata python3-onnx clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ember setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# nvcc lives outside PATH in the CUDA toolkit's default location.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# ccache: a base dir makes paths relative, so a fresh clone elsewhere hits the same cache.
export CCACHE_BASEDIR="$EMBER_ROOT"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ember-ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
export CCACHE_NOHASHDIR=1

jobs="$(nproc)"
cmake -S "$EMBER_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${EMBER_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$jobs" ${EMBER_BUILD_TARGETS:+--target $EMBER_BUILD_TARGETS}
