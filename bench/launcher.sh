#!/usr/bin/env bash
# Launcher start cost in one command: `airlock run -- true` vs unshare-only vs bubblewrap.
#
#   bench/launcher.sh [launcher_start.py options]     e.g. --runs 20, --warmup 2
#
# 1. installs bubblewrap from Debian when bwrap is missing (apt-get update first);
# 2. builds airlock in Release with scripts/build.sh into build-release (or uses AIRLOCK_BIN:
#    an airlock binary is used as is, a directory is used as the build directory);
# 3. runs bench/lib/launcher_start.py: prints a table and writes
#    bench/results/launcher.json. The airlock-pty row runs `airlock run --ca CA -- true` with
#    a pty as stdin and stdout (the pty relay and the trust binds on), with a throwaway CA.
#
# Exit status: 0 when every command ran (goals met or not), non-zero when one is broken.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

# --- 1. tools -------------------------------------------------------------------------------
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
[ -x /usr/bin/python3 ] || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- 2. airlock (Release) -------------------------------------------------------------------
build_dir="$repo/build-release"
airlock_bin=""
if [ -n "${AIRLOCK_BIN:-}" ]; then
  if [ -f "$AIRLOCK_BIN" ] && [ -x "$AIRLOCK_BIN" ]; then
    airlock_bin=$AIRLOCK_BIN
  else
    build_dir=$AIRLOCK_BIN
  fi
fi
if [ -z "$airlock_bin" ]; then
  for tool in cmake g++ ninja; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "bench: $tool not found: run scripts/install-deps.sh first" >&2
      exit 2
    fi
  done
  echo "bench: building airlock (Release) in $build_dir"
  "$repo/scripts/build.sh" "$build_dir" -DAIRLOCK_BUILD_TESTS=OFF
  airlock_bin="$build_dir/src/app/airlock"
fi
if [ ! -x "$airlock_bin" ]; then
  echo "bench: no airlock binary at $airlock_bin" >&2
  exit 2
fi

# --- 3. run -----------------------------------------------------------------------------
# A throwaway CA for the airlock-pty row (issue 18: pty relay and trust binds on); its Java
# store lands in the caller's cache directory once, like any first run with a new CA.
ca_dir=$(mktemp -d "${TMPDIR:-/tmp}/airlock-bench-ca.XXXXXX")
trap 'rm -rf "$ca_dir"' EXIT
"$airlock_bin" ca init --dir "$ca_dir/ca" >/dev/null
/usr/bin/python3 "$here/lib/launcher_start.py" --airlock "$airlock_bin" --ca "$ca_dir/ca/ca.crt" \
  --json "$here/results/launcher.json" "$@"
