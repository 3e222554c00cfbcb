#!/usr/bin/env bash
# Every test suite: install what is missing, build in Release, run ctest (GPU-labelled tests
# skip cleanly without a GPU). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
