#!/usr/bin/python3
"""The HTTP/2 scenario: kept-alive requests on one inspected HTTP/2 connection.

h2load (Debian nghttp2-client) sends GET /small on one TLS connection with ALPN h2 (10 streams
in flight) to an HTTP/2 origin (nghttpd, Debian nghttp2-server) three ways: directly, through
Airlock (an inspected rule, h2 to the client and to the origin) and through mitmproxy (HTTP/2
interception). h2load speaks no proxy protocol, so for the two proxies it connects to a local
CONNECT forwarder (bench/lib/connect_forwarder.py, the same for both) that opens the tunnel and
then relays bytes; the tunnel names 127.0.0.1, which the origin's certificate carries.

Reports requests per second, the proxy's CPU microseconds per request, and the ratios Airlock /
mitmproxy and Airlock / direct; writes bench/results/h2.json. Bounded: a fixed request count per
run (--requests), each run under a timeout. Not part of the test suite; `bench/run.sh h2`.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import procfs  # noqa: E402
from lib.connect_forwarder import ConnectForwarder  # noqa: E402
from lib.servers import LOOPBACK, Airlock, BenchError, Mitmproxy, Process, free_port  # noqa
from lib.servers import wait_listening  # noqa: E402
from lib.tls_certs import TlsFiles  # noqa: E402

SMALL_BODY = b"airlock bench: a small keep-alive response body of about one hundred bytes.\n" \
             b"0123456789abcdef0123\n"
STREAMS = 10


class Nghttpd(Process):
    name = "nghttpd"

    def __init__(self, workdir, tls):
        super().__init__()
        self.dir = os.path.join(workdir, "nghttpd")
        os.makedirs(os.path.join(self.dir, "htdocs"))
        with open(os.path.join(self.dir, "htdocs", "small"), "wb") as f:
            f.write(SMALL_BODY)
        self.tls = tls
        self.port = free_port()

    def start(self):
        self.proc = subprocess.Popen(
            ["nghttpd", "-a", LOOPBACK, "-d", os.path.join(self.dir, "htdocs"), str(self.port),
             self.tls.origin_key, self.tls.origin_cert],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "a"))
        wait_listening(self.port, self.proc, self.name)


class H2Airlock(Airlock):
    """One inspected rule for the origin by its IP literal (h2load sends no SNI to a forwarder
    on 127.0.0.1), GET /small only, no audit file."""

    def policy(self):
        t = self.tls
        return f"""\
listen: {{proxy: '{LOOPBACK}:0', admin: 'off'}}
audit: {{path: 'off'}}
tls: {{ca_cert: '{t.ca_cert}', ca_key: '{t.ca_key}', upstream_ca: '{t.origin_ca}'}}
agents: {{default: {{rules: [inspected]}}}}
rules:
  - name: inspected
    hosts: ['{LOOPBACK}']
    addresses: [{LOOPBACK}]
    allow_cidrs: [{LOOPBACK}/32]
    ports: [{self.origin_port}]
    inspect: true
    methods: [GET]
    paths: ['^/small$']
"""


def h2load(port, requests, timeout):
    """Runs h2load; returns (requests per second, requests succeeded)."""
    cmd = ["h2load", "-n", str(requests), "-c", "1", "-m", str(STREAMS),
           f"https://{LOOPBACK}:{port}/small"]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"h2load did not finish in {timeout}s")
    rate = re.search(r"finished in [0-9.]+\w+, ([0-9.]+) req/s", run.stdout)
    done = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", run.stdout)
    if run.returncode != 0 or not rate or not done:
        raise BenchError(f"h2load failed ({run.returncode}): {run.stdout[-800:]}{run.stderr}")
    if "h2" not in run.stdout:
        raise BenchError("h2load did not speak h2: " + run.stdout[-400:])
    return float(rate.group(1)), int(done.group(1))


def measure(name, port, proc, args):
    h2load(port, max(200, args.requests // 10), args.timeout)  # warm-up: leaves, pools
    runs = []
    for _ in range(args.rounds):
        cpu0 = procfs.cpu_seconds(proc.pid) if proc else 0.0
        rate, ok = h2load(port, args.requests, args.timeout)
        cpu = (procfs.cpu_seconds(proc.pid) - cpu0) if proc else 0.0
        if ok != args.requests:
            raise BenchError(f"{name}: {ok} of {args.requests} requests succeeded")
        runs.append({"requests_per_second": rate,
                     "cpu_us_per_request": round(cpu * 1e6 / ok, 1) if proc else None})
    best = max(runs, key=lambda r: r["requests_per_second"])
    print(f"  {name:<10} {best['requests_per_second']:>10,.0f} req/s"
          + (f", {best['cpu_us_per_request']} us CPU/req" if proc else ""), flush=True)
    return {"best": best, "runs": runs}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--airlock", required=True, help="the airlock binary (Release)")
    p.add_argument("--requests", type=int, default=50000, help="requests per run")
    p.add_argument("--rounds", type=int, default=2, help="runs per target; the best counts")
    p.add_argument("--timeout", type=int, default=120, help="seconds one h2load run may take")
    p.add_argument("--quick", action="store_true", help="5,000 requests, one round")
    args = p.parse_args()
    if args.quick:
        args.requests, args.rounds = 5000, 1
    results = {"requests": args.requests, "streams": STREAMS}
    with tempfile.TemporaryDirectory(prefix="airlock-bench-h2-") as work:
        tls = TlsFiles(work, args.airlock)
        origin = Nghttpd(work, tls)
        airlock = H2Airlock(work, args.airlock, origin.port, 1, tls=tls)
        mitm = Mitmproxy(work, tls, http2=True)
        started, forwarders = [], []
        try:
            for s in (origin, airlock, mitm):
                s.start()
                started.append(s)
            authority = f"{LOOPBACK}:{origin.port}"
            print(f"== (h2) {args.requests} GET /small on one HTTP/2 connection, {STREAMS} streams"
                  f" in flight, best of {args.rounds}", flush=True)
            results["direct"] = measure("direct", origin.port, None, args)
            for name, proxy in (("airlock", airlock), ("mitmproxy", mitm)):
                fwd = ConnectForwarder(proxy.port, authority)
                forwarders.append(fwd)
                results[name] = measure(name, fwd.port, proxy, args)
        finally:
            for f in forwarders:
                f.stop()
            for s in reversed(started):
                s.stop()
    rate = {k: results[k]["best"]["requests_per_second"] for k in ("direct", "airlock",
                                                                    "mitmproxy")}
    results["ratios"] = {"airlock_vs_mitmproxy": round(rate["airlock"] / rate["mitmproxy"], 2),
                         "airlock_vs_direct": round(rate["airlock"] / rate["direct"], 2)}
    print(f"  ratios: airlock/mitmproxy {results['ratios']['airlock_vs_mitmproxy']}x, "
          f"airlock/direct {results['ratios']['airlock_vs_direct']}x")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "h2.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench h2: {e}", file=sys.stderr)
        sys.exit(1)
