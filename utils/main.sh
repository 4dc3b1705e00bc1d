#!/usr/bin/env bash
# Sets up, builds, and runs dp's main job on a bundled model: one training
# step of it placed on the default cluster (4 x P100 + CPU, as in the
# EAGLE and Mars papers) by simulated annealing seeded with every other
# placer (a fixed budget of evaluations, so the result is reproducible),
# simulated, with the report on the terminal and the JSON summary and
# Chrome trace written to out/.
#
#   utils/main.sh [model.onnx] [extra dp-opt arguments]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DP_BUILD_DIR:-$root/build}
model=${1:-$root/models/inception_v3.onnx}
shift || true
out=${DP_OUT_DIR:-$root/out}

"$root/utils/build.sh" >&2
mkdir -p "$out"
name=$(basename "$model" .onnx)
"$build/bin/dp-opt" \
  -passes='import-onnx,unroll-rnn,training-graph,cost-annotate,place{algo=anneal,evals=2000},simulate' \
  -cluster=p100x4 -disable-output \
  -summary="$out/$name.summary.json" -trace="$out/$name.trace.json" \
  "$model" "$@"
echo "wrote $out/$name.summary.json and $out/$name.trace.json" >&2
