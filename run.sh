#!/usr/bin/env bash
# Ember's main job: install what is missing, build in Release, report the machine
# (`ember doctor`), run a short demonstration, and train the default model on the bundled
# digits (arguments go to `ember train`).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh build
./build/bin/ember doctor
./build/bin/ember demo
./build/bin/ember train "$@"
