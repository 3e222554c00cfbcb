#!/usr/bin/env bash
# Ember's main job: install what is missing, build in Release, report the machine
# (`ember doctor`) and run a short demonstration on the best device.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh build
./build/bin/ember doctor
./build/bin/ember demo "$@"
