#!/usr/bin/env bash
# Installs every Debian 12 package Airlock's build, tests and CI need. Idempotent: apt-get
# skips what is already there. Run as root (or through sudo).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-format
  # clang and its libFuzzer/sanitizer runtimes for the fuzz targets (fuzz/README.md)
  clang-14 libclang-rt-14-dev
  # libraries
  libboost1.81-all-dev libssl-dev libre2-dev libyaml-cpp-dev prometheus-cpp-dev
  libseccomp-dev zlib1g-dev libgtest-dev libgmock-dev
  # the shared state's Redis client, and the server its integration tests start on loopback
  libhiredis-dev redis-server
  # HTTP/2 on inspected tunnels (src/h2/), and the HTTP/2 clients and servers of its tests
  libnghttp2-dev nghttp2-client nghttp2-server python3-h2 python3-grpcio
  # test clients and tools
  curl openssl ca-certificates python3 python3-requests python3-yaml prometheus
  iproute2 procps
  # toolchains the trust tests run inside `airlock run` (docs/toolchains.md), and
  # systemd-analyze for the unit file check
  git python3-pip openjdk-17-jdk-headless systemd
  # wget (GnuTLS: trusts only the system bundle), for the launcher's trust tests
  wget
  # xxd and hexdump (bsdextrautils), tools an agent hides a key with (test_dlp.py's shell
  # encodings)
  xxd bsdextrautils
  # the BIP-39 English word list (mnemonic/wordlist/english.txt), compiled into the DLP
  # seed-phrase detector (src/filters/dlp/sources.cmake)
  python3-mnemonic
  # WebSocket client and echo server of the WebSocket integration tests (test_websocket.py)
  python3-websockets
  # the console's browser test: headless Chromium driven by Selenium (test_console.py)
  chromium chromium-driver python3-selenium
)
# Node.js and npm (local installs with the jail's writable home): Debian's, unless the machine
# already has a Node.js with its own npm (the build machines' image ships Node 20 from another
# source, whose package conflicts with Debian's npm).
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  :
else
  packages+=(nodejs npm)
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"

# The MCP reference SDK for the MCP integration tests (tests/integration/test_mcp_sdk.py),
# exactly as pinned in its package-lock.json.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
npm ci --prefix "$root/tests/integration/mcp" --no-audit --no-fund
