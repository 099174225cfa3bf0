#!/usr/bin/env bash
# Builds Airlock (Release) and runs the proxy with the example policy (config/example.yaml),
# listening on 127.0.0.1:3128 with the admin port on 127.0.0.1:9464. A development CA for
# TLS interception is created in certs/ on first run (never committed).
# Usage: scripts/run.sh [extra `airlock proxy` options...]; AIRLOCK_CONFIG picks another policy.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh" "$root/build-release" -DAIRLOCK_BUILD_TESTS=OFF
bin="$root/build-release/src/app/airlock"
if [ ! -f "$root/certs/ca.crt" ] && "$bin" ca --help > /dev/null 2>&1; then
  "$bin" ca init --dir "$root/certs"
fi
exec "$bin" proxy --config "${AIRLOCK_CONFIG:-$root/config/example.yaml}" "$@"
