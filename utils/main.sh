#!/usr/bin/env bash
# Sets up, builds, and runs dp's main job on a bundled model: import it and
# print the summary report.
#
#   utils/main.sh [model.onnx] [extra dp-opt arguments]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DP_BUILD_DIR:-$root/build}
model=${1:-$root/models/inception_v3.onnx}
shift || true

"$root/utils/build.sh" >&2
"$build/bin/dp-opt" -passes=import-onnx,summary -disable-output "$model" "$@"
