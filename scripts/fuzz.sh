#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/README.md) with clang-14 under ASan/UBSan and runs them.
# Usage:
#   scripts/fuzz.sh ctest              build, then the `fuzz` ctest label: every target for
#                                      AIRLOCK_FUZZ_SECONDS (5) on its seeds; what CI runs
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#                                      each target (default: all) for SECONDS (default 600),
#                                      one after the other on one core (-jobs=1 equivalent),
#                                      keeping what it learns in BUILD_DIR/fuzz/work/TARGET
# Build dir: AIRLOCK_FUZZ_BUILD_DIR (default build-fuzz). A crash or a broken property stops that
# target and leaves its input in BUILD_DIR/fuzz/artifacts/; the script then exits 1. Keep the
# input as a regression seed: fix the bug, then copy it to fuzz/corpus/TARGET/crash-<what>.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${AIRLOCK_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=(http_request host client_hello proxy_v2 dns_query policy redaction_stream json_body
         mcp_jsonrpc dlp_scan injection query_params
         approval_fleet websocket_frame h2_session h2_client_session protobuf_view)

# -O1 and line tables only: a quarter of the compile time of -O2 -g, and several times the
# executions per second of -O0 (the build is what CI pays for; see fuzz/README.md).
CC=${CC:-clang-14} CXX=${CXX:-clang++-14} "$root/scripts/build.sh" "$dir" \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
  -DAIRLOCK_WERROR=ON -DAIRLOCK_BUILD_FUZZ=ON -DAIRLOCK_BUILD_TESTS=OFF -DAIRLOCK_BUILD_BENCH=OFF

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ "${1:-}" = ctest ]; then
  cd "$dir"
  exec ctest --output-on-failure -j "${AIRLOCK_JOBS:-2}" -L fuzz
fi

seconds=${1:-600}
shift || true
[ $# -gt 0 ] && targets=("$@")
status=0
for t in "${targets[@]}"; do
  work=$dir/fuzz/work/$t
  mkdir -p "$work" "$dir/fuzz/artifacts"
  echo "== fuzz_$t for ${seconds}s"
  if ! "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/fuzz/artifacts/$t-" \
      "$work" "$root/fuzz/corpus/$t" > "$dir/fuzz/$t.log" 2>&1; then
    status=1
    echo "fuzz_$t FAILED: see $dir/fuzz/$t.log and $dir/fuzz/artifacts/"
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE' "$dir/fuzz/$t.log" || true
done
exit $status
