#!/usr/bin/env bash
# The hardening part of CI (docs/hardening.md), run by utils/check.sh after
# the normal build and tests:
#   1. the sanitizer build (ASan + UBSan, build-asan/) and the whole test
#      suite, unit and lit, against it;
#   2. every libFuzzer target (clang-19, build-fuzz/) for a short fixed time.
# Ends with one line "hardening: N passed, N failed": the sanitizer build's
# tests plus one per fuzz target.
#
#   DP_ASAN_BUILD_DIR   the sanitizer build (default build-asan)
#   DP_FUZZ_BUILD_DIR   the fuzzer build (default build-fuzz)
#   DP_FUZZ_SECONDS     seconds per fuzz target (default 20)
#   DP_ASAN_LIT_FILTER_OUT
#                       lit tests the sanitizer build leaves out (a regular
#                       expression; default: the three slowest, see below;
#                       set it to '^$' to run every test)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
asan_build=${DP_ASAN_BUILD_DIR:-$root/build-asan}
fuzz_build=${DP_FUZZ_BUILD_DIR:-$root/build-fuzz}
fuzz_seconds=${DP_FUZZ_SECONDS:-20}

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Adds the counts of the last "N passed, N failed" line of $log.
count() {
  local line
  line=$(grep -E '^([a-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ -z $line ]]; then
    failed=$((failed + 1))
    return
  fi
  line=${line#*: }
  passed=$((passed + $(echo "$line" | sed 's/ passed.*//')))
  failed=$((failed + $(echo "$line" | sed 's/.*passed, \([0-9]*\) failed.*/\1/')))
}

# -O1 keeps the instrumented build quick to compile and its tests quick to
# run; assertions stay on (DP_ENABLE_ASSERTIONS). Sanitizer reports abort
# (test/lit.cfg.py sets the options for lit; these are for ctest).
#
# Every unit test and every lit test runs against it but three, which the
# normal build has just run and which would take more than half of the
# sanitizer build's lit time (docs/hardening.md, "CI time"): the
# libonnx-testdata sweep (its 1072 models are also the onnx-binary fuzz
# target's seeds, which it imports under ASan and UBSan below), Graphviz
# rendering of the bundled models' DOT, and the every-placer determinism
# check on nmt2 (each placer's code runs under the sanitizers in
# test/Place). Of the runtime's tests only the end-to-end ones run: they
# are the ones where dp-opt does the work (placing exported models,
# reading the runtime's profiles); the others test Python alone.
asan_lit_filter_out=${DP_ASAN_LIT_FILTER_OUT-'^dp :: (Import/onnx-testdata|Models/emit-dot-render|dp-opt/determinism-placers)\.test$'}
echo "== sanitizer build (ASan + UBSan) in $asan_build"
start=$SECONDS
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:intercept_tls_get_addr=0} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:abort_on_error=1} \
LIT_FILTER_OUT=$asan_lit_filter_out \
DP_BUILD_DIR=$asan_build DP_CHECK_HARDENING=0 \
DP_PYTEST_TESTS=$root/python/tests/test_end_to_end.py \
  bash "$root/utils/check.sh" -DDP_ENABLE_SANITIZERS=ON \
  -DDP_BUILD_BENCHMARKS=OFF "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" \
  2>&1 | sed 's/^\([0-9]* passed, [0-9]* failed\)$/asan: \1/' | tee "$log"
count
echo "== sanitizer build and tests: $((SECONDS - start)) s"

echo "== fuzzers ($fuzz_seconds s each) in $fuzz_build"
start=$SECONDS
python3 "$root/utils/fuzz.py" --build "$fuzz_build" --time "$fuzz_seconds" \
  2>&1 | tee "$log"
count
echo "== fuzzer build and runs: $((SECONDS - start)) s"

echo "hardening: $passed passed, $failed failed"
((failed == 0))
