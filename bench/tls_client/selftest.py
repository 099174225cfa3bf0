#!/usr/bin/python3
"""Self-test of airlock_bench_tls_client against well- and ill-behaved loopback servers.

    bench/tls_client/selftest.py BUILD/airlock_bench_tls_client

A load client that miscounts makes every ratio of the HTTPS scenario wrong, so this checks
that it counts what really happened and reports each kind of failure as such: a good origin
directly and through a tunnelling CONNECT proxy; an untrusted CA and a wrong name (tls); a
refused CONNECT and bytes after the CONNECT reply (proxy); 404 (status); a short, chunked or
length-less body (body); a server that never answers (timeout, and the client still ends in
bounded time); a server that keeps the connection open after Connection: close (io); the
handshake mode's per-name samples; bad usage (exit 2). Exit 0 when every case passes.
Everything listens on 127.0.0.1 and is stopped before exit.
"""

import json
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time

BODY = b"x" * 97


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_certs(d):
    """CA + leaf for *.bench.test, and an unrelated CA the client may be told to trust."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", f"{d}/{ca}.key", "-out", f"{d}/{ca}.crt",
                "-days", "1", "-subj", f"/CN=selftest {ca}",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-new", *ec, "-keyout", f"{d}/leaf.key", "-out", f"{d}/leaf.csr",
            "-subj", "/CN=www.bench.test")
    with open(f"{d}/leaf.ext", "w") as f:
        f.write("subjectAltName=DNS:*.bench.test,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", f"{d}/leaf.csr", "-CA", f"{d}/ca.crt", "-CAkey",
            f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/leaf.crt", "-days", "1",
            "-extfile", f"{d}/leaf.ext")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler, **kw):
        super().__init__(("127.0.0.1", 0), handler)
        self.__dict__.update(kw)
        self.requests_served = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


def read_head(f):
    lines = []
    while True:
        line = f.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return lines
        lines.append(line)


class Origin(socketserver.StreamRequestHandler):
    """HTTPS origin; server.behaviour: ok, 404, short, chunked, nolength, silent, keepopen."""

    def handle(self):
        srv = self.server
        try:
            conn = srv.context.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            return
        f = conn.makefile("rb")
        try:
            while True:
                head = read_head(f)
                if head is None:
                    return
                with srv.lock:
                    srv.requests_served += 1
                close = any(h.lower().startswith(b"connection: close") for h in head)
                b = srv.behaviour
                if b == "silent":
                    time.sleep(5)
                    return
                if b == "404":
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                elif b == "short":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nshort")
                elif b == "chunked":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 b"3\r\nabc\r\n0\r\n\r\n")
                elif b == "nolength":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BODY)
                    return
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (
                        len(BODY), b"Connection: close\r\n" if close and b == "ok" else b"",
                        BODY))
                if close and b == "ok":
                    return
                # keepopen: ignores Connection: close and waits for more
        except (ssl.SSLError, OSError):
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass


class Proxy(socketserver.StreamRequestHandler):
    """CONNECT proxy; server.behaviour: tunnel, refuse, extra."""

    def handle(self):
        head = read_head(self.rfile)
        if not head or not head[0].startswith(b"CONNECT "):
            return
        b = self.server.behaviour
        if b == "refuse":
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        if b == "extra":
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\nGARBAGE")
            time.sleep(0.5)
            return
        up = socket.create_connection(("127.0.0.1", self.server.origin_port))
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        down = self.connection

        def pump(a, b_):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b_.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    b_.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        t = threading.Thread(target=pump, args=(up, down), daemon=True)
        t.start()
        pump(down, up)
        t.join(5)
        up.close()


def run_client(binary, port, *args, cafile, host="www.bench.test", timeout=60):
    cmd = [binary, "--connect", f"127.0.0.1:{port}", "--host", host, "--port", "443",
           "--cafile", cafile, *args]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - start
    line = next((l for l in r.stdout.splitlines() if l.startswith("TLS_JSON ")), None)
    return r.returncode, json.loads(line[9:]) if line else None, took, r.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    d = tempfile.mkdtemp(prefix="tls-client-selftest-")
    make_certs(d)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{d}/leaf.crt", f"{d}/leaf.key")
    ca, other = f"{d}/ca.crt", f"{d}/other-ca.crt"
    origin = Server(Origin, context=ctx, behaviour="ok")
    proxy = Server(Proxy, behaviour="tunnel", origin_port=origin.port)
    failures = []

    def check(name, cond, detail):
        print(f"{'ok  ' if cond else 'FAIL'} {name}" + ("" if cond else f": {detail}"))
        if not cond:
            failures.append(name)

    short = ["--seconds", "0.5", "--connections", "2", "--expect-body", str(len(BODY))]

    def errors_only(r, kind):
        return r and r["requests"] == 0 and r["errors"][kind] > 0 and \
            all(v == 0 for k, v in r["errors"].items() if k != kind)

    for mode in ("keepalive", "newconn"):
        origin.behaviour = "ok"
        before = origin.requests_served
        rc, r, _, err = run_client(binary, origin.port, "--mode", mode, *short, cafile=ca)
        served = origin.requests_served - before
        check(f"{mode} direct counts real responses", rc == 0 and r and r["requests"] > 0 and
              sum(r["errors"].values()) == 0 and served >= r["requests"] and
              r["latency_us"]["p50"] > 0, (rc, r, served, err))
        if mode == "newconn" and r:
            check("newconn opens one connection per request",
                  r["connections_opened"] == r["requests"] and r["handshake_us"] is not None,
                  r)
        rc, r, _, err = run_client(binary, proxy.port, "--proxy", "--mode", mode, *short,
                                   cafile=ca)
        check(f"{mode} through a CONNECT tunnel", rc == 0 and r and r["requests"] > 0 and
              sum(r["errors"].values()) == 0, (rc, r, err))
    rc, r, _, _ = run_client(binary, origin.port, *short, cafile=other)
    check("untrusted CA is a tls error", errors_only(r, "tls"), r)
    rc, r, _, _ = run_client(binary, origin.port, *short, cafile=ca, host="www.other.test")
    check("wrong name is a tls error", errors_only(r, "tls"), r)
    for behaviour, kind in (("refuse", "proxy"), ("extra", "proxy")):
        proxy.behaviour = behaviour
        rc, r, _, _ = run_client(binary, proxy.port, "--proxy", *short, cafile=ca)
        check(f"proxy '{behaviour}' is a {kind} error", errors_only(r, kind), r)
    proxy.behaviour = "tunnel"
    for behaviour, kind in (("404", "status"), ("short", "body"), ("chunked", "body"),
                            ("nolength", "body")):
        origin.behaviour = behaviour
        rc, r, _, _ = run_client(binary, origin.port, *short, cafile=ca)
        check(f"origin '{behaviour}' is a {kind} error", errors_only(r, kind), r)
    origin.behaviour = "silent"
    rc, r, took, _ = run_client(binary, origin.port, *short, "--timeout", "1", cafile=ca)
    check("a silent origin is a timeout, and the run still ends",
          errors_only(r, "timeout") and took < 10, (r, took))
    origin.behaviour = "keepopen"
    rc, r, took, _ = run_client(binary, origin.port, "--mode", "newconn", *short, cafile=ca)
    check("ignoring Connection: close is an io error", errors_only(r, "io") and
          "kept the connection open" in r["first_error"] and took < 15, (r, took))
    origin.behaviour = "ok"
    names = ["a.bench.test", "b.bench.test", "c.bench.test"]
    rc, r, _, err = run_client(binary, proxy.port, "--proxy", "--mode", "handshake", "--names",
                               ",".join(names), "--repeat", "3", "--expect-body", "97",
                               cafile=ca)
    check("handshake mode: one sample per name and pass", rc == 0 and r and
          len(r["passes"]) == 3 and all(len(p[k]) == 3 for p in r["passes"] for k in
                                        ("tcp_us", "tunnel_us", "handshake_us", "request_us"))
          and sum(r["errors"].values()) == 0, (r, err))
    rc, r, _, _ = run_client(binary, origin.port, "--mode", "bogus", cafile=ca)
    check("bad usage exits 2", rc == 2 and r is None, rc)
    rc, r, _, _ = run_client(binary, origin.port, cafile=f"{d}/missing.crt")
    check("a missing CA file exits 2", rc == 2 and r is None, rc)
    origin.shutdown()
    proxy.shutdown()
    subprocess.run(["rm", "-rf", d])
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
