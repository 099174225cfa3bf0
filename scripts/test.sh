#!/usr/bin/env bash
# Builds Airlock with -Wall -Wextra -Werror under AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the whole test suite (unit and integration) with ctest. This is what CI runs.
# Usage: scripts/test.sh [ctest options...], e.g. scripts/test.sh -L unit
# Tests labelled `slow` (the container image build) are left out; `ctest -L slow` runs them.
# ctest shows a module with a skipped test as "Skipped"; with CI=true any skip that is not on
# the allow-list in tests/integration/harness/runner.py fails the run.
# Then, when no ctest options were given (or AIRLOCK_FUZZ=1), the fuzz targets are built with
# clang and each runs briefly on its seeds (scripts/fuzz.sh ctest); AIRLOCK_FUZZ=0 skips that.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${AIRLOCK_TEST_BUILD_DIR:-$root/build-test}
"$root/scripts/build.sh" "$dir" -DCMAKE_BUILD_TYPE=Debug -DAIRLOCK_WERROR=ON \
  -DAIRLOCK_SANITIZE=ON -DAIRLOCK_BUILD_TESTS=ON
# The integration harness appends the options it needs to these (the last one wins in the
# sanitizers' parser), so exporting them here no longer hides the harness's own
# (tests/integration/harness/env.py: sanitizer_env).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$dir"
fuzz=${AIRLOCK_FUZZ:-$([ $# -eq 0 ] && echo 1 || echo 0)}
ctest --output-on-failure --timeout 600 -j "${AIRLOCK_JOBS:-2}" -LE slow "$@"
if [ "$fuzz" = 1 ]; then
  "$root/scripts/fuzz.sh" ctest
fi
