"""The measurements. Each one runs for a fixed time against one target and returns a dict.

A target is the origin itself ("direct") or a forward proxy in front of it. Every scenario
checks that what came back is what the origin serves and raises BenchError otherwise: a
number measured on errors is not a number.
"""

import json
import os
import resource
import select
import socket
import subprocess
import time

from . import procfs
from .servers import LOOPBACK, BenchError

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "request.lua")


class Target:
    """Where the client connects and how it phrases requests."""

    def __init__(self, name, origin, proxy=None, host=LOOPBACK, headers=()):
        self.name = name
        self.origin = origin
        self.proxy = proxy  # a servers.Process with proxy_url and port, or None for direct
        # The name the request gives the origin (a proxy rule may pin it to the loopback
        # origin), and extra "Name: value" header fields sent with every wrk request.
        self.host = host
        self.headers = tuple(headers)

    @property
    def connect_port(self):
        return self.proxy.port if self.proxy else self.origin.port

    def request_target(self, path):
        # Absolute-form towards a forward proxy, origin-form towards the origin
        # (RFC 9112 section 3.2).
        return f"http://{self.host_header}{path}" if self.proxy else path

    @property
    def host_header(self):
        return f"{self.host}:{self.origin.port}"

    @property
    def measured(self):
        """The process whose CPU and memory the scenario reports."""
        return self.proxy if self.proxy else self.origin


def _check_alive(target):
    target.origin.check_alive()
    if target.proxy:
        target.proxy.check_alive()


def wrk(target, path, threads, connections, seconds, raw_log, expect_body):
    """One wrk run; returns throughput, latency, errors, origin hits and CPU used."""
    _check_alive(target)
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
           "--timeout", "5s", "-s", LUA, f"http://{LOOPBACK}:{target.connect_port}/", "--",
           target.request_target(path), target.host_header, *target.headers]
    hits0 = target.origin.hits()
    cpu0 = procfs.cpu_seconds(target.measured.pid)
    origin_cpu0 = procfs.cpu_seconds(target.origin.pid)
    t0 = time.monotonic()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{target.name}: wrk did not finish within {seconds + 30}s")
    wall = time.monotonic() - t0
    cpu1 = procfs.cpu_seconds(target.measured.pid)
    origin_cpu1 = procfs.cpu_seconds(target.origin.pid)
    hits1 = target.origin.hits()
    with open(raw_log, "w") as f:
        f.write(" ".join(cmd) + "\n\n" + run.stdout + run.stderr)
    line = next((l for l in run.stdout.splitlines() if l.startswith("WRK_JSON ")), None)
    if run.returncode != 0 or line is None:
        raise BenchError(f"{target.name}: wrk failed (status {run.returncode}): "
                         f"{run.stderr.strip() or run.stdout.strip()}")
    r = json.loads(line[len("WRK_JSON "):])
    n = r["requests"]
    secs = r["duration_us"] / 1e6
    # Each query of the status page is one hit itself.
    origin_hits = hits1 - hits0 - 1
    out = {
        "requests": n,
        "seconds": round(secs, 3),
        "requests_per_second": round(n / secs, 1),
        "bytes": r["bytes"],
        "megabytes_per_second": round(r["bytes"] / secs / 1e6, 1),
        "latency_us": r["latency_us"],
        "errors": r["errors"],
        "origin_hits": origin_hits,
        "cpu_seconds": round(cpu1 - cpu0, 3),
        "origin_cpu_seconds": round(origin_cpu1 - origin_cpu0, 3),
        "wall_seconds": round(wall, 3),
        "connections": connections,
        "wrk": cmd[:cmd.index("--") + 1] + [f"'{a}'" for a in cmd[cmd.index("--") + 1:]],
    }
    if n:
        out["cpu_us_per_request"] = round((cpu1 - cpu0) * 1e6 / n, 1)
        out["origin_cpu_us_per_request"] = round((origin_cpu1 - origin_cpu0) * 1e6 / n, 1)
        # Response bytes seen by wrk (head + body); the body alone is expect_body.
        out["bytes_per_response"] = round(r["bytes"] / n, 1)
        out["cpu_seconds_per_gib"] = round((cpu1 - cpu0) / (r["bytes"] / 2**30), 3)
    problems = []
    if n == 0:
        problems.append("no request completed")
    bad = {k: v for k, v in r["errors"].items() if v}
    if bad:
        problems.append(f"errors {bad} (status = responses >= 400; socket errors otherwise)")
    if n and origin_hits < n:
        problems.append(f"the origin saw {origin_hits} requests for {n} responses: "
                        "answers did not come from the origin")
    if n and r["bytes"] / n < expect_body:
        problems.append(f"{r['bytes'] / n:.0f} bytes per response, body alone is {expect_body}")
    _check_alive(target)
    if problems:
        raise BenchError(f"{target.name} {path} c={connections}: " + "; ".join(problems))
    return out


def _curl(target, path, max_time, tunnel):
    cmd = ["curl", "-sS", "-o", "/dev/null", "--max-time", str(max_time), "-w",
           "%{http_code} %{http_connect} %{size_download} %{time_total}"]
    if target.proxy:
        cmd += ["-x", target.proxy.proxy_url]
        if tunnel:
            cmd.append("-p")
    cmd.append(target.origin.url(path))
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=max_time + 10)
    fields = run.stdout.split()
    if len(fields) != 4:
        raise BenchError(f"{target.name}: curl printed {run.stdout!r}: {run.stderr.strip()}")
    code, connect_code, size = (int(f) for f in fields[:3])
    secs = float(fields[3])
    return run.returncode, code, connect_code, size, secs, run.stderr.strip()


def _read_head(sock, deadline, buf=b""):
    """Reads up to the end of a response head; returns (status, content_length, rest)."""
    while b"\r\n\r\n" not in buf:
        buf += _recv(sock, deadline)
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = None
    for h in lines[1:]:
        name, _, value = h.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, length, rest


def connect_throughput(target, path, size, seconds):
    """Bulk download through one CONNECT tunnel (RFC 9110 section 9.3.6) for `seconds`.

    Inside the tunnel the origin is spoken to in plain HTTP, so only the tunnel is measured,
    not TLS. The file is fetched again and again on the tunnel's keep-alive connection; the
    last fetch is cut off at the deadline. Direct runs the same fetches without a proxy.
    The client reads into a 1 MiB buffer, so it costs less CPU than curl and leaves more of
    the two cores to the proxy."""
    _check_alive(target)
    cpu0 = procfs.cpu_seconds(target.measured.pid)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    sock = socket.create_connection((LOOPBACK, target.connect_port), timeout=10)
    total, fetches, complete = 0, 0, 0
    try:
        deadline = time.monotonic() + 10
        if target.proxy:
            authority = f"{LOOPBACK}:{target.origin.port}"
            sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
                         .encode())
            status, _, rest = _read_head(sock, deadline)
            if status != 200:
                raise BenchError(f"{target.name}: CONNECT answered {status}")
            if rest:
                raise BenchError(f"{target.name}: {len(rest)} unexpected bytes after the "
                                 "CONNECT 200 (before any request was sent)")
        request = f"GET {path} HTTP/1.1\r\nHost: {target.host_header}\r\n\r\n".encode()
        start = time.monotonic()
        end = start + seconds
        while time.monotonic() < end:
            sock.sendall(request)
            status, length, rest = _read_head(sock, end + 10)
            fetches += 1
            if status != 200 or length != size:
                raise BenchError(f"{target.name}: GET {path} in the tunnel: HTTP {status}, "
                                 f"Content-Length {length}, expected {size}")
            got = len(rest)
            sock.settimeout(10)
            while got < size and time.monotonic() < end:
                n = sock.recv_into(view, min(len(buf), size - got))
                if n == 0:
                    raise BenchError(f"{target.name}: tunnel closed after {got} of {size} "
                                     "body bytes")
                got += n
            total += got
            if got == size:
                complete += 1
        elapsed = time.monotonic() - start
    except OSError as e:
        raise BenchError(f"{target.name}: CONNECT bulk: {e}")
    finally:
        sock.close()
    cpu = procfs.cpu_seconds(target.measured.pid) - cpu0
    _check_alive(target)
    return {
        "fetches": fetches,
        "complete_fetches": complete,
        "bytes": total,
        "seconds": round(elapsed, 3),
        "megabytes_per_second": round(total / elapsed / 1e6, 1),
        "cpu_seconds": round(cpu, 3),
        "cpu_seconds_per_gib": round(cpu / (total / 2**30), 3) if total else None,
    }


def verify(target, files):
    """Fetch each file once (plain and, through a proxy, via CONNECT) and compare sizes; a
    proxy that does not really forward fails here before any load is sent."""
    for path, size in files.items():
        for tunnel in ((False, True) if target.proxy else (False,)):
            rc, code, connect_code, got, _, err = _curl(target, path, 20, tunnel)
            how = "CONNECT" if tunnel else "GET"
            if rc != 0 or code != 200 or got != size:
                raise BenchError(f"{target.name}: {how} {path}: curl exit {rc}, HTTP {code}, "
                                 f"{got} of {size} bytes: {err}")


def _read_response(sock, deadline):
    """Reads one response with a Content-Length body; returns the status code."""
    status, length, body = _read_head(sock, deadline)
    while len(body) < (length or 0):
        body += _recv(sock, deadline)
    return status


def _recv(sock, deadline):
    left = deadline - time.monotonic()
    if left <= 0:
        raise BenchError("idle connections: timed out reading a response")
    sock.settimeout(left)
    data = sock.recv(65536)
    if not data:
        raise BenchError("idle connections: connection closed before the response ended")
    return data


def idle_connections(target, count, settle_seconds=2.0):
    """Opens `count` connections, sends one small keep-alive request on each, reads the
    response, then leaves them all idle and reads the measured process's RSS."""
    _check_alive(target)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count * 4), hard))
    pid = target.measured.pid
    rss_before = procfs.rss_bytes(pid)
    request = (f"GET {target.request_target('/small')} HTTP/1.1\r\n"
               f"Host: {target.host_header}\r\n\r\n").encode()
    socks = []
    deadline = time.monotonic() + 60
    try:
        for i in range(count):
            s = socket.create_connection((LOOPBACK, target.connect_port), timeout=10)
            socks.append(s)
            s.sendall(request)
            status = _read_response(s, deadline)
            if status != 200:
                raise BenchError(f"{target.name}: idle connection {i}: HTTP {status}")
        time.sleep(settle_seconds)
        rss_idle = procfs.rss_bytes(pid)
        # A connection the proxy has closed reads as EOF: count those still open.
        still_open = 0
        for s in socks:
            readable, _, _ = select.select([s], [], [], 0)
            if not readable:
                still_open += 1
            else:
                s.setblocking(False)
                try:
                    if s.recv(1, socket.MSG_PEEK):
                        still_open += 1
                except (BlockingIOError, OSError):
                    pass
        threads = procfs.thread_count(pid)
    finally:
        for s in socks:
            s.close()
    _check_alive(target)
    if still_open < count:
        raise BenchError(f"{target.name}: only {still_open} of {count} idle connections "
                         f"were still open after {settle_seconds}s")
    return {
        "connections": count,
        "still_open": still_open,
        "rss_before_bytes": rss_before,
        "rss_idle_bytes": rss_idle,
        "rss_idle_mib": round(rss_idle / 2**20, 1),
        "rss_per_connection_kib": round((rss_idle - rss_before) / count / 1024, 1),
        "threads": threads,
    }
