#!/usr/bin/env bash
# Airlock benchmark in one command: direct-to-origin vs Squid vs Airlock on loopback, and
# HTTPS inspection: direct vs Squid ssl-bump vs mitmproxy vs Airlock.
#
#   bench/run.sh [bench.py options]     e.g. --quick, --targets direct,squid, --threads 2,
#                                       --scenarios tls (HTTPS inspection only),
#                                       --scenarios shared_state (state: redis vs local),
#                                       --scenarios connect_newconn (new opaque CONNECT tunnels)
#   bench/run.sh h2 [bench/h2.py options]   the HTTP/2 scenario alone (h2load through Airlock
#                                       and mitmproxy to nghttpd, and direct), e.g. --quick
#
# 1. installs what it needs from Debian when missing (squid-openssl, mitmproxy, wrk, nginx,
#    curl, redis-server, openssl, python3), without letting the packages start their system
#    services;
# 2. builds airlock and the redaction and DLP benchmark tools (bench/redaction, bench/dlp) in
#    Release into build-bench-release (or uses AIRLOCK_BIN: an airlock binary is used as is, a
#    directory is used as the build directory; REDACTION_BENCH_BIN and DLP_BENCH_BIN name built
#    tools), and the HTTPS load
#    client (bench/tls_client) into build-bench-release/tls_client (or uses TLS_CLIENT_BIN);
# 3. runs bench/bench.py: prints the tables and writes bench/results/latest.json.
#
# Exit status: 0 when every scenario ran (goals met or not), non-zero when one is broken.
set -euo pipefail

h2=0
if [ "${1:-}" = h2 ]; then
  h2=1
  shift
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

# --- 1. tools -------------------------------------------------------------------------------
missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
# Squid must be the OpenSSL build (Debian's squid-openssl, which replaces the squid package):
# the plain build has no ssl-bump. It serves the plain scenarios the same way.
if ! have squid || ! squid_version=$(PATH="$PATH:/usr/sbin" squid -v 2>/dev/null) ||
  [[ $squid_version != *--with-openssl* ]]; then
  missing+=(squid-openssl)
fi
have mitmdump || missing+=(mitmproxy)
have openssl || missing+=(openssl)
have wrk || missing+=(wrk)
have nginx || missing+=(nginx)
have curl || missing+=(curl)
have redis-server || missing+=(redis-server)  # scenario (s), shared state
if [ "$h2" = 1 ]; then
  have h2load || missing+=(nghttp2-client)
  have nghttpd || missing+=(nghttp2-server)
fi
[ -x /usr/bin/python3 ] || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench: installing ${missing[*]}"
  # Squid and nginx would start as system services on install (and nginx would take port 80):
  # the benchmark runs its own instances, so forbid service starts for the install, the
  # Debian way (policy-rc.d, see invoke-rc.d(8)), unless a policy is already in place.
  policy=/usr/sbin/policy-rc.d
  added_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# added by airlock bench/run.sh for one apt-get install\nexit 101\n' |
      "${sudo_cmd[@]}" tee "$policy" >/dev/null
    "${sudo_cmd[@]}" chmod 755 "$policy"
    added_policy=1
  fi
  cleanup_policy() { if [ "$added_policy" = 1 ]; then "${sudo_cmd[@]}" rm -f "$policy"; fi; }
  trap cleanup_policy EXIT
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  cleanup_policy
  added_policy=0
  trap - EXIT
fi
export PATH="$PATH:/usr/sbin:/sbin"  # squid and nginx live in /usr/sbin

# --- 2. airlock and the redaction tool (Release) -------------------------------------------
build_dir="$repo/build-bench-release"
airlock_bin=""
redaction_bin=${REDACTION_BENCH_BIN:-}
dlp_bin=${DLP_BENCH_BIN:-}
if [ -n "${AIRLOCK_BIN:-}" ]; then
  if [ -f "$AIRLOCK_BIN" ] && [ -x "$AIRLOCK_BIN" ]; then
    airlock_bin=$AIRLOCK_BIN
    # A binary of a build tree (<build>/src/app/airlock): its tool, when that tree has one.
    sibling="$(dirname "$AIRLOCK_BIN")/../../bench/redaction/airlock_redaction_bench"
    if [ -z "$redaction_bin" ] && [ -x "$sibling" ]; then redaction_bin=$sibling; fi
    sibling="$(dirname "$AIRLOCK_BIN")/../../bench/dlp/airlock_dlp_bench"
    if [ -z "$dlp_bin" ] && [ -x "$sibling" ]; then dlp_bin=$sibling; fi
  else
    build_dir=$AIRLOCK_BIN
  fi
fi
if [ -z "$airlock_bin" ]; then
  for tool in cmake g++; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "bench: $tool not found: run scripts/install-deps.sh first" >&2
      exit 2
    fi
  done
  generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  if [ -f "$build_dir/CMakeCache.txt" ]; then generator=(); fi  # keep the existing one
  # Configure every time: cheap, and it picks up components added since the last run. The
  # benchmark tools without the tests (AIRLOCK_BUILD_BENCH); only the targets below are built.
  cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DAIRLOCK_BUILD_TESTS=OFF -DAIRLOCK_BUILD_BENCH=ON >/dev/null
  targets=(airlock)
  if [ -z "$redaction_bin" ] && [ "$h2" = 0 ]; then targets+=(airlock_redaction_bench); fi
  if [ -z "$dlp_bin" ] && [ "$h2" = 0 ]; then targets+=(airlock_dlp_bench); fi
  echo "bench: building ${targets[*]} (Release) in $build_dir"
  cmake --build "$build_dir" --target "${targets[@]}" -j "$(nproc)"
  airlock_bin="$build_dir/src/app/airlock"
  if [ -z "$redaction_bin" ]; then
    redaction_bin="$build_dir/bench/redaction/airlock_redaction_bench"
  fi
  if [ -z "$dlp_bin" ]; then dlp_bin="$build_dir/bench/dlp/airlock_dlp_bench"; fi
fi
if [ ! -x "$airlock_bin" ]; then
  echo "bench: no airlock binary at $airlock_bin" >&2
  exit 2
fi
if [ "$h2" = 1 ]; then
  exec /usr/bin/python3 "$here/h2.py" --airlock "$airlock_bin" "$@"
fi
redaction_args=()
if [ -n "$redaction_bin" ]; then
  redaction_args=(--redaction-bench "$redaction_bin")
else
  # An airlock binary given as is, with no tool beside it: leave the redaction scenario out
  # of the default run (naming it in --scenarios still asks for the tool, and fails).
  echo "bench: no redaction tool (set REDACTION_BENCH_BIN): the redaction scenario is skipped" >&2
  redaction_args=(--no-redaction)
fi
if [ -n "$dlp_bin" ]; then
  redaction_args+=(--dlp-bench "$dlp_bin")
else
  echo "bench: no DLP tool (set DLP_BENCH_BIN): the dlp_throughput scenario is skipped" >&2
  redaction_args+=(--no-dlp-bench)
fi

# The HTTPS load client: its own small CMake project (Boost.Asio + OpenSSL), a few seconds.
tls_client=${TLS_CLIENT_BIN:-}
if [ -z "$tls_client" ]; then
  client_dir="$repo/build-bench-release/tls_client"
  generator=()
  if command -v ninja >/dev/null 2>&1 && [ ! -f "$client_dir/CMakeCache.txt" ]; then
    generator=(-G Ninja)
  fi
  cmake -S "$here/tls_client" -B "$client_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    >/dev/null
  echo "bench: building the HTTPS client in $client_dir"
  cmake --build "$client_dir" -j "$(nproc)"
  tls_client="$client_dir/airlock_bench_tls_client"
fi

# --- 3. run -----------------------------------------------------------------------------
# 1,000 idle connections plus the proxy's upstream side need more than the usual 1,024 fds.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 16384 ]; then
  ulimit -n 16384
else
  ulimit -n "$hard"
fi
exec /usr/bin/python3 "$here/bench.py" --airlock "$airlock_bin" --tls-client "$tls_client" \
  "${redaction_args[@]}" "$@"
