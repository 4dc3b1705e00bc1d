#!/usr/bin/env bash
# Sets up the Debian packages, then configures and builds dp in build/
# (Release, 2 jobs: the reference machine has 2 cores): every target, or
# only those DP_BUILD_TARGETS names (space-separated, e.g. "dp-opt").
#
#   utils/build.sh [extra cmake arguments]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DP_BUILD_DIR:-$root/build}
jobs=${DP_JOBS:-2}

"$root/utils/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_DIR=/usr/lib/llvm-14/lib/cmake/llvm "$@"
# shellcheck disable=SC2086 # the targets are words
cmake --build "$build" -j "$jobs" ${DP_BUILD_TARGETS:+--target $DP_BUILD_TARGETS}
