#!/usr/bin/env bash
# Sets up, builds, and runs dp's main job on a bundled model: one training
# step of it placed on the default cluster (4 x P100 + CPU, as in the
# EAGLE and Mars papers) by simulated annealing seeded with every other
# placer (a fixed budget of evaluations, so the result is reproducible),
# simulated, with the report on the terminal; then emit writes the
# placement in every form to out/ (placed ONNX, per-device submodels,
# placement JSON, device_map, Chrome trace, Graphviz, the report as text
# and HTML; docs/emit.md), and the job ends by naming every file it wrote.
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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$build/bin/dp-opt" \
  -passes="import-onnx,unroll-rnn,training-graph,cost-annotate,place{algo=anneal,evals=2000},simulate,emit{format=onnx+split+json+device-map+trace+dot+report+html,out=$out/}" \
  -cluster=p100x4 -disable-output \
  -summary="$out/$name.summary.json" \
  "$model" "$@" 2>&1 | tee "$log" >&2
{
  echo
  echo "main: the report is $out/$name.report.txt (as HTML:" \
    "$out/$name.report.html); files written:"
  echo "  $out/$name.summary.json (simulator summary)"
  sed -n 's/^emit: wrote \(.*\)$/  \1/p' "$log"
} >&2
