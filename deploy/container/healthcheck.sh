#!/bin/bash
# Container health check: GET /healthz on the admin listener must answer 200. The runtime
# image has no curl; bash's /dev/tcp is enough for one HTTP/1.1 request on loopback or the
# address in $AIRLOCK_HEALTHCHECK_ADDR (IPv4:PORT).
set -u
addr=${AIRLOCK_HEALTHCHECK_ADDR:-127.0.0.1:9464}
exec 3<> "/dev/tcp/${addr%:*}/${addr##*:}" || exit 1
printf 'GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$addr" >&3
IFS= read -r -t 2 status <&3 || exit 1
[[ $status == "HTTP/1.1 200 "* ]]
