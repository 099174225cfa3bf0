"""The HTTPS-inspection measurements: requests through an intercepting proxy, kept-alive and
with a new connection per request, and the handshake through it for a new name (a leaf is
minted) vs a name seen before (the leaf comes from the cache).

The client is bench/tls_client (airlock_bench_tls_client): wrk cannot tunnel through CONNECT.
It trusts one CA only: the origin's CA direct, the proxies' interception CA otherwise, so a
proxy that tunnelled instead of intercepting would fail every handshake. Every measurement
checks its answers and raises BenchError otherwise, like the plain scenarios do.
"""

import json
import signal
import subprocess
import threading

from . import procfs
from .servers import LOOPBACK, BenchError
from .tls_certs import DOMAIN

HOST = f"www.{DOMAIN}"


class TlsTarget:
    """An HTTPS target: the origin's TLS port itself ("direct"), or an intercepting proxy."""

    def __init__(self, name, origin, proxy, cafile):
        self.name = name
        self.origin = origin
        self.proxy = proxy
        self.cafile = cafile

    @property
    def connect_port(self):
        return self.proxy.port if self.proxy else self.origin.tls_port

    @property
    def measured(self):
        return self.proxy if self.proxy else self.origin

    def client_args(self):
        args = ["--connect", f"{LOOPBACK}:{self.connect_port}", "--port",
                str(self.origin.tls_port), "--cafile", self.cafile]
        return args + (["--proxy"] if self.proxy else [])

    def url(self, path, host=HOST):
        return f"https://{host}:{self.origin.tls_port}{path}"


def _check_alive(target):
    target.origin.check_alive()
    if target.proxy:
        target.proxy.check_alive()


def _curl(target, path, host=HOST):
    cmd = ["curl", "-sS", "-o", "/dev/null", "--max-time", "20", "--cacert", target.cafile,
           "-w", "%{http_code} %{size_download}"]
    if target.proxy:
        cmd += ["-x", target.proxy.proxy_url]
    else:
        cmd += ["--resolve", f"{host}:{target.origin.tls_port}:{LOOPBACK}"]
    cmd.append(target.url(path, host))
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    fields = run.stdout.split()
    if run.returncode != 0 or len(fields) != 2:
        raise BenchError(f"{target.name}: curl {target.url(path, host)}: exit {run.returncode}: "
                         f"{run.stderr.strip()}")
    return int(fields[0]), int(fields[1])


def verify(target, body_size, refused_path=None):
    """One fetch with curl, trusting only the target's CA; for Airlock also a path outside
    its rule, which must be refused with 403 inside TLS (so the rule really inspects)."""
    code, size = _curl(target, "/small")
    if code != 200 or size != body_size:
        raise BenchError(f"{target.name}: GET /small over HTTPS: HTTP {code}, {size} of "
                         f"{body_size} bytes")
    if refused_path:
        code, _ = _curl(target, refused_path)
        if code != 403:
            raise BenchError(f"{target.name}: GET {refused_path} outside the inspected rule: "
                             f"HTTP {code}, expected 403")


def _run_client(target, client, args, raw_log, timeout, on_mark=None):
    """Runs the client; on_mark(name) is called when it prints `TLS_MARK name`. Returns the
    parsed TLS_JSON."""
    cmd = [client, *target.client_args(), "--host", HOST, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The client bounds its own connections; this bounds the client.
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("TLS_MARK ") and on_mark:
                on_mark(line.split()[1])
        proc.wait()
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode == -signal.SIGKILL:
        raise BenchError(f"{target.name}: the TLS client did not finish within {timeout:.0f}s")
    err = proc.stderr.read()
    with open(raw_log, "w") as f:
        f.write(" ".join(cmd) + "\n\n" + "".join(lines) + err)
    line = next((l for l in lines if l.startswith("TLS_JSON ")), None)
    if proc.returncode != 0 or line is None:
        raise BenchError(f"{target.name}: TLS client failed (status {proc.returncode}): "
                         f"{err.strip()}")
    return json.loads(line[len("TLS_JSON "):])


def _error_text(r):
    bad = {k: v for k, v in r["errors"].items() if v}
    return f"errors {bad}, first: {r['first_error']}" if bad else ""


def _leaf_counters(target):
    """Airlock only: (leaves minted, leaf cache hits) so far, from its admin port."""
    m = target.proxy.metrics() if hasattr(target.proxy, "metrics") else {}
    if "airlock_tls_leaf_mints_total" not in m:
        return None
    return (m["airlock_tls_leaf_mints_total"], m.get("airlock_tls_leaf_cache_hits_total", 0.0))


def load(target, client, mode, connections, seconds, warmup, raw_log, body_size):
    """One load run (mode keepalive or newconn). The proxy's and the origin's CPU are read at
    the client's marks, i.e. over the recorded window only (warm-up and, for keepalive, the
    handshakes that open the connections are outside it)."""
    _check_alive(target)
    hits0 = target.origin.hits()
    leaves0 = _leaf_counters(target)
    cpu = {}

    def on_mark(name):
        cpu[name] = (procfs.cpu_seconds(target.measured.pid),
                     procfs.cpu_seconds(target.origin.pid))

    r = _run_client(target, client,
                    ["--mode", mode, "--connections", str(connections), "--seconds",
                     str(seconds), "--warmup", str(warmup), "--expect-body", str(body_size)],
                    raw_log, timeout=seconds + warmup + 60, on_mark=on_mark)
    hits1 = target.origin.hits()
    leaves1 = _leaf_counters(target)
    n = r["requests"]
    problems = []
    if _error_text(r):
        problems.append(_error_text(r))
    if n == 0:
        problems.append("no request completed")
    origin_hits = hits1 - hits0 - 1  # the status query itself is one hit
    if n and origin_hits < n:
        problems.append(f"the origin saw {origin_hits} requests for {n} responses")
    if "record" not in cpu or "done" not in cpu:
        problems.append("the client printed no TLS_MARK lines")
    if leaves0 and leaves1 and mode == "newconn" and leaves1[0] != leaves0[0]:
        problems.append(f"{leaves1[0] - leaves0[0]:.0f} leaves minted with the cache hot")
    _check_alive(target)
    if problems:
        raise BenchError(f"{target.name} HTTPS {mode} c={connections}: " + "; ".join(problems))
    proxy_cpu = cpu["done"][0] - cpu["record"][0]
    origin_cpu = cpu["done"][1] - cpu["record"][1]
    secs = r["seconds"]
    out = {
        "requests": n,
        "seconds": secs,
        "requests_per_second": round(n / secs, 1),
        "connections_opened": r["connections_opened"],
        "latency_us": r["latency_us"],
        "handshake_us": r["handshake_us"],
        "errors": r["errors"],
        "origin_hits": origin_hits,
        "cpu_seconds": round(proxy_cpu, 3),
        "cpu_us_per_request": round(proxy_cpu * 1e6 / n, 1),
        "origin_cpu_seconds": round(origin_cpu, 3),
        "client_cpu_seconds": r["cpu_seconds"],
        "client_cpu_share": round(r["cpu_seconds"] / secs, 3),
        "setup_seconds": r["setup_seconds"],
        "bytes_per_response": round(r["bytes"] / n, 1),
    }
    if leaves0 and leaves1:
        out["leaves_minted"] = leaves1[0] - leaves0[0]
        out["leaf_cache_hits"] = leaves1[1] - leaves0[1]
    return out


def _median(values):
    v = sorted(values)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def handshakes(target, client, names, raw_log, body_size):
    """One connection at a time, two in a row per name: the first makes the proxy mint a leaf
    for the name, the second is served from its cache. Reports the median of each phase for
    first and second connections; the handshake phase (ClientHello to Finished, after the
    CONNECT reply) is where minting happens. The mint cost is the median over names of
    (first - second) handshake: pairs measured moments apart, which a busy machine disturbs
    less than two separate medians."""
    _check_alive(target)
    leaves0 = _leaf_counters(target)
    r = _run_client(target, client,
                    ["--mode", "handshake", "--names", ",".join(names), "--repeat", "2",
                     "--expect-body", str(body_size)],
                    raw_log, timeout=60 + 2 * len(names))
    leaves1 = _leaf_counters(target)
    problems = []
    if _error_text(r):
        problems.append(_error_text(r))
    passes = r["passes"]
    if len(passes) != 2 or any(len(p["handshake_us"]) != len(names) for p in passes):
        problems.append("not every connection completed")
    if leaves0 and leaves1 and leaves1[0] - leaves0[0] != len(names):
        problems.append(f"{leaves1[0] - leaves0[0]:.0f} leaves minted for {len(names)} new "
                        "names, each connected to twice")
    _check_alive(target)
    if problems:
        raise BenchError(f"{target.name} handshakes: " + "; ".join(problems))

    def summary(p):
        total = [a + b + c + d for a, b, c, d in
                 zip(p["tcp_us"], p["tunnel_us"], p["handshake_us"], p["request_us"])]
        return {k: _median(p[k]) for k in ("tcp_us", "tunnel_us", "handshake_us",
                                            "request_us")} | {"total_us": _median(total)}

    out = {
        "names": len(names),
        "new_name": summary(passes[0]),
        "cached_name": summary(passes[1]),
        "samples": passes,
    }
    out["mint_us"] = _median([a - b for a, b in zip(passes[0]["handshake_us"],
                                                   passes[1]["handshake_us"])])
    if leaves0 and leaves1:
        out["leaves_minted"] = leaves1[0] - leaves0[0]
        out["leaf_cache_hits"] = leaves1[1] - leaves0[1]
    return out
