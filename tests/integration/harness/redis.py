"""A redis-server (Debian's package) for the shared-state tests, on 127.0.0.1. Redis cannot be
told "any free port", so the port is picked by binding a socket to port 0 first and closing it
(the same port is reused by restart()). Persistence is off unless `appendonly` is asked for.
`call()` is a minimal RESP2 client (https://redis.io/docs/reference/protocol-spec/), so the
tests need no Python Redis package. With `tls` (a harness.certs.TestCA), the port speaks TLS
only (`--port 0 --tls-port`, Debian's redis-server is built with TLS) with the CA's server
certificate (DNS:origin.test, IP:127.0.0.1), and call() speaks TLS to it."""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from . import env


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RedisServer:
    def __init__(self, tls=None):
        self.tls = tls
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="airlock-redis-")
        self.proc = None

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        log = open(os.path.join(self.dir, "redis.log"), "ab")
        ports = ["--port", str(self.port)]
        if self.tls is not None:
            ports = ["--port", "0", "--tls-port", str(self.port),
                     "--tls-cert-file", self.tls.server_cert, "--tls-key-file",
                     self.tls.server_key, "--tls-ca-cert-file", self.tls.ca_cert,
                     "--tls-auth-clients", "no"]
        self.proc = subprocess.Popen(
            [exe, "--bind", "127.0.0.1", *ports, "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--loglevel", "warning"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + env.t(10)
        while time.monotonic() < deadline:
            try:
                if self.call("PING") == "PONG":
                    return self
            except (OSError, ssl.SSLError):
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError("redis-server did not start on %d" % self.port)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(env.t(10))
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def subscribe(self, channel, timeout=5):
        """A Subscription to `channel` (subscribed when this returns)."""
        return Subscription(self, channel, timeout)

    def call(self, *args, timeout=5):
        """One command on a fresh connection; the decoded reply (errors raise)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            if self.tls is not None:  # the TLS socket takes over the descriptor
                s = self.tls.client_context().wrap_socket(s, server_hostname="127.0.0.1")
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            with s.makefile("rb") as f:
                return _read(f)
        finally:
            s.close()


class Subscription:
    """A connection subscribed to one channel (RESP2 SUBSCRIBE): next_message() is the text of
    the next message published there."""

    def __init__(self, server, channel, timeout=5):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
        if server.tls is not None:
            self.sock = server.tls.client_context().wrap_socket(self.sock,
                                                                server_hostname="127.0.0.1")
        c = channel.encode()
        self.sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(c), c))
        self.f = self.sock.makefile("rb")
        confirmed = _read(self.f)
        if not (isinstance(confirmed, list) and confirmed[0] == "subscribe"):
            raise OSError("SUBSCRIBE %s: %r" % (channel, confirmed))

    def next_message(self, timeout):
        self.sock.settimeout(timeout)
        while True:
            m = _read(self.f)
            if isinstance(m, list) and len(m) == 3 and m[0] == "message":
                return m[2]

    def close(self):
        self.f.close()
        self.sock.close()


def _read(f):
    line = f.readline()
    if not line:
        raise OSError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise OSError("bad reply %r" % line)
