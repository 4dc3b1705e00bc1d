#!/usr/bin/env bash
# Sets up, builds, and runs dp's main job on a bundled model: one training
# step of it placed on the default cluster (4 x P100 + CPU, as in the
# EAGLE and Mars papers) by simulated annealing seeded with every other
# placer (a fixed budget of evaluations, so the result is reproducible),
# simulated, with the report on the terminal; then emit writes the
# placement in every form to out/ (placed ONNX, per-device submodels,
# placement JSON, device_map, Chrome trace, Graphviz, the report as text
# and HTML; docs/emit.md), naming each file as it is written; the job
# ends by saying where the report is and how to run the placement. It
# builds only the driver (dp-opt), not the tests and benchmarks.
#
#   utils/main.sh [model.onnx] [extra dp-opt arguments]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DP_BUILD_DIR:-$root/build}
model=${1:-$root/models/inception_v3.onnx}
shift || true
out=${DP_OUT_DIR:-$root/out}

DP_BUILD_TARGETS=dp-opt "$root/utils/build.sh" >&2
mkdir -p "$out"
name=$(basename "$model" .onnx)
"$build/bin/dp-opt" \
  -passes="import-onnx,unroll-rnn,training-graph,cost-annotate,place{algo=anneal,evals=2000},simulate,emit{format=onnx+split+json+device-map+trace+dot+report+html,out=$out/}" \
  -cluster=p100x4 -disable-output \
  -summary="$out/$name.summary.json" \
  "$model" "$@" >&2
devices=$("$build/bin/dp-opt" -print-cluster -cluster=p100x4 |
  sed -n '/^devices:/,/^$/s/^ *\(gpu:[0-9]*\) .*/\1=cpu/p' | paste -sd, -)
{
  echo
  echo "main: the report is $out/$name.report.txt; as a page," \
    "$out/$name.report.html (open it in a browser); the simulator's" \
    "summary is $out/$name.summary.json."
  echo "main: to run the placed step here, every device on this" \
    "machine's CPU (one process, dp's seeded weights):"
  echo "  PYTHONPATH=$root/python /usr/bin/python3 -m dp_torch run" \
    "$out/$name.placed.onnx --train --device-map $devices --steps 1" \
    "--warmup 0 --report -"
  echo "main: to place and run a model on this machine as two workers," \
    "see README.md, \"A short tour\"."
} >&2
