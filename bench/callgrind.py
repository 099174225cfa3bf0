#!/usr/bin/python3
"""Counts the proxy's own instructions per request (or per connection) with callgrind, which
a busy machine does not change: the Release binary runs under valgrind with one worker
thread, a client drives N exchanges through it, and the figure is (run of N − run of 2) / (N − 2),
so start-up, the first connection and shutdown cancel out.

Scenarios (all on loopback; the origin is nginx on ports picked at run time; the certificates
are made fresh in a temporary directory and removed with it):

  plain     small kept-alive GETs of an http:// URL on one client connection (the pooled
            upstream connection reused)
  large     the same with 1 MiB answers (the body relay; --large-requests of them)
  tls-keep  small kept-alive GETs inside one intercepted CONNECT tunnel (the proxy's leaf,
            TLS to the origin verified against the origin's CA)
  tls-new   a new intercepted connection per request: CONNECT, TLS handshake (the leaf from
            the cache), one GET, close (the upstream handshake resumed)
  tls-resume  the same, the client resuming its TLS session each time with the ticket the last
            connection gave it (a returning client: no certificate, no signature; still ECDHE)

Usage: bench/callgrind.py --bin build-release/src/app/airlock [--scenarios plain,large]
       [--requests 1000] [--connections 100] [--keep DIR]
--keep DIR leaves the callgrind output files there (callgrind_annotate --inclusive=yes FILE).
"""

import argparse
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.servers import LOOPBACK, BenchError, Origin  # noqa: E402
from lib.tls_certs import DOMAIN, TlsFiles  # noqa: E402

SMALL = b"x" * 100 + b"\n"
LARGE = bytes(range(256)) * 4096  # 1 MiB
HOST = f"www.{DOMAIN}"


def policy(origin, tls):
    if not tls:
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: 'off'}}
agents: {{default: {{rules: [origin]}}}}
rules:
  - name: origin
    hosts: [{LOOPBACK}]
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{origin.port}]
"""
    return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: 'off'}}
tls: {{ca_cert: '{tls.ca_cert}', ca_key: '{tls.ca_key}', upstream_ca: '{tls.origin_ca}'}}
agents: {{default: {{rules: [inspected]}}}}
rules:
  - name: inspected
    hosts: ['*.{DOMAIN}']
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{origin.tls_port}]
    inspect: true
"""


def read_response(f):
    """One HTTP/1.1 response with a Content-Length from a file-like socket; its body."""
    status = f.readline()
    if not status.startswith(b"HTTP/1.1 200"):
        raise BenchError(f"unexpected answer: {status!r}")
    length = None
    for _ in range(100):
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise BenchError("response without Content-Length")
    return f.read(length)


def get(f, s, host, path="/small", body=SMALL):
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    if read_response(f) != body:
        raise BenchError("wrong body")


def plain_client(port, origin, n, name="small", body=SMALL):
    with socket.create_connection((LOOPBACK, port), timeout=120) as s, s.makefile("rb") as f:
        for _ in range(n):
            get(f, s, f"{LOOPBACK}:{origin.port}", f"http://{LOOPBACK}:{origin.port}/{name}", body)


def tunnel(port, origin, ctx, session=None):
    s = socket.create_connection((LOOPBACK, port), timeout=120)
    target = f"{HOST}:{origin.tls_port}"
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 4096:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise BenchError(f"CONNECT refused: {head[:100]!r}")
    return ctx.wrap_socket(s, server_hostname=HOST, session=session)


def tls_keep_client(port, origin, n, ctx):
    with tunnel(port, origin, ctx) as t, t.makefile("rb") as f:
        for _ in range(n):
            get(f, t, HOST)


def tls_new_client(port, origin, n, ctx):
    for _ in range(n):
        with tunnel(port, origin, ctx) as t, t.makefile("rb") as f:
            get(f, t, HOST)


def tls_resume_client(port, origin, n, ctx):
    session = None
    for i in range(n):
        with tunnel(port, origin, ctx, session) as t, t.makefile("rb") as f:
            get(f, t, HOST)  # the ticket came before the answer
            if i > 0 and not t.session_reused:
                raise BenchError("the proxy did not resume the client's TLS session")
            session = t.session


def counted_run(binary, config, workdir, label, drive):
    """The proxy under callgrind while drive(port) runs; its instruction count."""
    out = os.path.join(workdir, f"callgrind.{label}.out")
    log = os.path.join(workdir, f"{label}.log")
    stdout_path = os.path.join(workdir, f"{label}.stdout")
    with open(log, "w") as err, open(stdout_path, "w") as stdout:
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "proxy",
             "--config", config, "--admin", "off", "--threads", "1"],
            stdout=stdout, stderr=err)
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"proxy did not start under valgrind (see {log})")
            time.sleep(0.2)
            with open(log, errors="replace") as f, open(stdout_path, errors="replace") as g:
                m = re.search(r"proxy=127\.0\.0\.1:(\d+)", f.read() + g.read())
            if m:
                port = int(m.group(1))
        drive(port)
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    with open(log, errors="replace") as f:
        m = re.search(r"Collected : (\d+)", f.read())
    if not m:
        raise BenchError(f"no callgrind total in {log}")
    return int(m.group(1)), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--scenarios", default="plain,large,tls-keep,tls-new")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--large-requests", type=int, default=50)
    ap.add_argument("--keep", help="directory for the callgrind output files")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    workdir = tempfile.mkdtemp(prefix="airlock-callgrind-")
    origin = None
    try:
        tls = TlsFiles(workdir, binary)
        origin = Origin(workdir, {"small": lambda p: open(p, "wb").write(SMALL),
                                  "large": lambda p: open(p, "wb").write(LARGE)},
                        tls=(tls.origin_cert, tls.origin_key))
        origin.start()
        ctx = ssl.create_default_context(cafile=tls.ca_cert)
        for scenario in args.scenarios.split(","):
            n, unit = {"tls-new": (args.connections, "connection"),
                       "tls-resume": (args.connections, "connection"),
                       "large": (args.large_requests, "1 MiB answer")}.get(
                           scenario, (args.requests, "request"))
            config = os.path.join(workdir, f"{scenario}.yaml")
            with open(config, "w") as f:
                f.write(policy(origin, tls if scenario.startswith("tls") else None))
            drivers = {"plain": lambda port, k: plain_client(port, origin, k),
                       "large": lambda port, k: plain_client(port, origin, k, "large", LARGE),
                       "tls-keep": lambda port, k: tls_keep_client(port, origin, k, ctx),
                       "tls-new": lambda port, k: tls_new_client(port, origin, k, ctx),
                       "tls-resume": lambda port, k: tls_resume_client(port, origin, k, ctx)}
            if scenario not in drivers:
                raise BenchError(f"unknown scenario {scenario}")
            counts = {}
            for k in (2, n):
                counts[k], out = counted_run(binary, config, workdir, f"{scenario}-{k}",
                                             lambda port: drivers[scenario](port, k))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(out, os.path.join(args.keep, os.path.basename(out)))
            per = (counts[n] - counts[2]) / (n - 2)
            print(f"{scenario}: {per / 1000:.1f}K instructions per {unit} "
                  f"(2: {counts[2]}, {n}: {counts[n]})", flush=True)
    except BenchError as e:
        print(f"callgrind.py: {e}", file=sys.stderr)
        return 1
    finally:
        if origin:
            origin.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
