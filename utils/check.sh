#!/usr/bin/env bash
# Sets up, builds, and runs every test: the GoogleTest unit tests (through
# ctest) and the lit suite. Ends with one line "N passed, N failed" that
# counts both; exits non-zero if anything failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DP_BUILD_DIR:-$root/build}

# Arguments are extra cmake arguments (utils/check-hardening.sh passes the
# sanitizer build's).
"$root/utils/build.sh" "$@" || { echo "0 passed, 1 failed"; exit 1; }

ctest_log=$(mktemp)
lit_log=$(mktemp)
pytest_log=$(mktemp)
trap 'rm -f "$ctest_log" "$lit_log" "$pytest_log"' EXIT

echo "== unit tests (ctest)"
ctest --test-dir "$build" --output-on-failure -j 2 2>&1 | tee "$ctest_log"
echo "== lit tests"
python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv "$build/test" 2>&1 |
  tee "$lit_log"

echo "== runtime tests (pytest)"
# DP_PYTEST_TESTS: which tests (default: all of python/tests).
DP_OPT="$build/bin/dp-opt" OMP_NUM_THREADS=1 /usr/bin/python3 -m pytest -q \
  -p no:cacheprovider ${DP_PYTEST_TESTS:-"$root/python/tests"} 2>&1 |
  tee "$pytest_log"

# ctest: "100% tests passed, 0 tests failed out of 57"
unit_total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$ctest_log")
unit_failed=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$ctest_log")
unit_total=${unit_total:-0}
unit_failed=${unit_failed:-1}
# lit: "  Passed: 24", "  Failed: 2", "  Unresolved: 1", ...
lit_count() {
  sed -n "s/^ *$1 *: *\([0-9]*\)$/\1/p" "$lit_log" | head -n 1
}
lit_passed=$(lit_count Passed)
lit_failed=0
for kind in Failed Unresolved "Timed Out" "Unexpectedly Passed"; do
  n=$(lit_count "$kind")
  lit_failed=$((lit_failed + ${n:-0}))
done
lit_passed=${lit_passed:-0}
if ((lit_passed + lit_failed == 0)); then lit_failed=1; fi

# pytest: "3 failed, 40 passed, 2 warnings in 61.2s" (errors count as
# failures; no summary line at all is one failure)
py_summary=$(grep -E '^=*\s*[0-9]+ (passed|failed|error)' "$pytest_log" |
  tail -n 1)
py_count() {
  echo "$py_summary" | sed -n "s/.*\b\([0-9][0-9]*\) $1.*/\1/p" | head -n 1
}
py_passed=$(py_count passed)
py_failed=$(py_count failed)
py_errors=$(py_count error)
py_passed=${py_passed:-0}
py_failed=$((${py_failed:-0} + ${py_errors:-0}))
if [[ -z $py_summary ]]; then py_failed=1; fi

passed=$((unit_total - unit_failed + lit_passed + py_passed))
failed=$((unit_failed + lit_failed + py_failed))
echo "unit tests: $((unit_total - unit_failed)) passed, $unit_failed failed;" \
  "lit tests: $lit_passed passed, $lit_failed failed;" \
  "runtime tests: $py_passed passed, $py_failed failed"

# Then the hardening part (docs/hardening.md): the sanitizer build and its
# tests, and a short run of every fuzz target. CI runs it;
# DP_CHECK_HARDENING=0 leaves it out of a local run.
if [[ ${DP_CHECK_HARDENING:-1} != 0 ]]; then
  hardening_log=$(mktemp)
  "$root/utils/check-hardening.sh" 2>&1 | tee "$hardening_log"
  line=$(sed -n 's/^hardening: \([0-9]* passed, [0-9]* failed\)$/\1/p' \
    "$hardening_log" | tail -n 1)
  rm -f "$hardening_log"
  hardening_passed=$(echo "${line:-0 passed}" | sed 's/ passed.*//')
  hardening_failed=$(echo "${line:-, 1 failed}" | sed 's/.*, \([0-9]*\) failed/\1/')
  passed=$((passed + hardening_passed))
  failed=$((failed + hardening_failed))
fi
echo "$passed passed, $failed failed"
((failed == 0))
