"""Origin servers the proxy forwards to: a threaded HTTP/1.1 server (plain or TLS) with test
endpoints, and a raw TCP server that records bytes and replies with whatever a test scripts.

HTTP endpoints (OriginServer):
  /echo[/...]      JSON: method, target, path, query, http_version, headers (list of pairs),
                   body_length, body_sha256, chunked (bool), conn_id, sni (TLS: the server
                   name the connection's client sent). Reads Content-Length and chunked bodies.
                   `?set-header=Name:Value` (repeatable) adds response headers.
  /bytes/N         N bytes of pattern() with Content-Length, written in 64 KiB pieces
  /chunked/N       N bytes of pattern(), chunked, 64 KiB chunks
  /slow/MS         sleeps MS milliseconds, then answers a small JSON body
  /status/CODE     answers CODE with a short body (none for 204/304)
  /conn-id         the id of the TCP connection the request came on (keep-alive reuse)
  /ws              WebSocket-style upgrade: 101, then echoes raw bytes until EOF
Every request is recorded (OriginServer.requests): a record is appended when the head has
been read (complete=False) and completed once the whole body has been read (complete=True).
"""

import base64
import hashlib
import json
import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATTERN_PERIOD = 251  # prime, so the pattern never lines up with power-of-two buffer sizes
PIECE = 64 * 1024
_BLOCK = bytes(i % PATTERN_PERIOD for i in range(PIECE + PATTERN_PERIOD))


def pattern(offset, n):
    """n (<= 64 KiB) bytes of the deterministic body content starting at `offset`."""
    start = offset % PATTERN_PERIOD
    return _BLOCK[start:start + n]


def pattern_bytes(total):
    out = bytearray()
    while len(out) < total:
        out += pattern(len(out), min(PIECE, total - len(out)))
    return bytes(out)


def pattern_sha256(total):
    h = hashlib.sha256()
    done = 0
    while done < total:
        n = min(PIECE, total - done)
        h.update(pattern(done, n))
        done += n
    return h.hexdigest()


class BodyError(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "airlock-itest-origin/1"
    sys_version = ""
    timeout = 30  # an idle keep-alive connection's thread gives up after this

    def setup(self):
        super().setup()
        self.origin = self.server.origin
        self.conn_id = self.origin._connection_started(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.origin._connection_finished(self.connection)

    def log_message(self, fmt, *args):
        pass

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError, BodyError):
            self.close_connection = True

    def do_GET(self):
        self._dispatch()

    do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    # -- bodies -------------------------------------------------------------------------------

    def _read_body(self):
        """Reads the request body; returns (length, sha256 hex, chunked)."""
        te = ",".join(self.headers.get_all("Transfer-Encoding") or [])
        h = hashlib.sha256()
        if "chunked" in te.lower():
            total = 0
            while True:
                line = self.rfile.readline(1024)
                if not line.endswith(b"\n"):
                    raise BodyError("truncated chunk size line")
                size_text = line.split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise BodyError("bad chunk size %r" % size_text)
                if size < 0:
                    raise BodyError("negative chunk size")
                if size == 0:
                    while True:  # trailers
                        t = self.rfile.readline(65537)
                        if not t.endswith(b"\n"):
                            raise BodyError("truncated trailers")
                        if t in (b"\r\n", b"\n"):
                            return total, h.hexdigest(), True
                left = size
                while left:
                    piece = self.rfile.read(min(left, PIECE))
                    if not piece:
                        raise BodyError("truncated chunk")
                    h.update(piece)
                    left -= len(piece)
                    total += len(piece)
                if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                    raise BodyError("missing CRLF after chunk")
        length = self.headers.get("Content-Length")
        if length is None:
            return 0, h.hexdigest(), False
        try:
            left = int(length)
        except ValueError:
            raise BodyError("bad Content-Length")
        total = 0
        while left:
            piece = self.rfile.read(min(left, PIECE))
            if not piece:
                raise BodyError("truncated body")
            h.update(piece)
            left -= len(piece)
            total += len(piece)
        return total, h.hexdigest(), False

    # -- answers ------------------------------------------------------------------------------

    def _send(self, code, body=b"", ctype="text/plain", headers=()):
        self.send_response(code)
        if code not in (204, 304) and not (100 <= code < 200):
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and code not in (204, 304):
            self.wfile.write(body)

    def _dispatch(self):
        split = urllib.parse.urlsplit(self.path)
        record = {
            "method": self.command,
            "target": self.path,
            "path": split.path,
            "query": split.query,
            "http_version": self.request_version,
            "headers": [[k, v] for k, v in self.headers.items()],
            "conn_id": self.conn_id,
            # TLS: the server name the connection's client sent (None: none, or plain HTTP).
            "sni": getattr(self.connection, "sni", None),
            "complete": False,
            "body_length": None,
            "time": time.time(),
        }
        self.origin._request_started(record)
        try:
            length, digest, chunked = self._read_body()
        except BodyError as e:
            record["error"] = str(e)
            self.close_connection = True
            try:
                self._send(400, b"bad body\n", headers=[("Connection", "close")])
            except OSError:
                pass
            return
        record.update(body_length=length, body_sha256=digest, chunked=chunked, complete=True)
        path = split.path
        parts = path.split("/")
        if path == "/echo" or path.startswith("/echo/"):
            query = urllib.parse.parse_qs(split.query)
            extra = []
            for item in query.get("set-header", []):
                name, _, value = item.partition(":")
                extra.append((name, value))
            body = dict(record)
            body.pop("time", None)
            self._send(200, json.dumps(body).encode(), "application/json", extra)
        elif len(parts) == 3 and parts[1] == "bytes" and parts[2].isdigit():
            self._bytes(int(parts[2]))
        elif len(parts) == 3 and parts[1] == "chunked" and parts[2].isdigit():
            self._chunked(int(parts[2]))
        elif len(parts) == 3 and parts[1] == "slow" and parts[2].isdigit():
            time.sleep(int(parts[2]) / 1000.0)
            self._send(200, json.dumps({"slept_ms": int(parts[2])}).encode(), "application/json")
        elif len(parts) == 3 and parts[1] == "status" and parts[2].isdigit():
            code = int(parts[2])
            self._send(code, b"status %d\n" % code)
        elif path == "/conn-id":
            self._send(200, str(self.conn_id).encode())
        elif path == "/ws" and "websocket" in (self.headers.get("Upgrade") or "").lower():
            self._websocket()
        elif self.origin.fallback is not None:
            self._send(200, self.origin.fallback)
        else:
            self._send(404, b"not found\n")

    def _bytes(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        sent = 0
        while sent < n:
            piece = pattern(sent, min(PIECE, n - sent))
            self.wfile.write(piece)
            sent += len(piece)

    def _chunked(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.command == "HEAD":
            return
        sent = 0
        while sent < n:
            piece = pattern(sent, min(PIECE, n - sent))
            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            sent += len(piece)
        self.wfile.write(b"0\r\n\r\n")

    def _websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        # From here on the connection is a raw byte pipe: echo until EOF.
        while True:
            data = self.rfile.read1(PIECE) if hasattr(self.rfile, "read1") else \
                self.connection.recv(PIECE)
            if not data:
                return
            self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, origin, tls_context):
        self.origin = origin
        self.tls_context = tls_context
        super().__init__(address, origin.handler_class)

    def process_request(self, request, client_address):
        self.origin._accepted()
        super().process_request(request, client_address)

    def finish_request(self, request, client_address):
        if self.tls_context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            tls = self.tls_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.origin._tls_failed(e)
            return
        try:
            self.origin._tls_succeeded(tls)
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        self.origin.errors += 1


class OriginServer:
    """Threaded HTTP/1.1 origin on 127.0.0.1:<ephemeral>. Use as a context manager or call
    start()/stop(). With tls_context (an ssl.SSLContext for the server) it speaks HTTPS.
    The lifecycle, TLS, connection counting and request log are shared with EchoOrigin
    (echo_origin.py), which only brings its own handler_class."""

    handler_class = _Handler

    def __init__(self, tls_context=None, host="127.0.0.1", fallback=None):
        """fallback: bytes answered (200 text/plain) to any path not listed above, instead of
        404 (the launcher tests' origin greets every path)."""
        self.fallback = fallback
        self._lock = threading.Lock()
        self._tls_context = tls_context
        self._host = host
        self._server = None
        self._thread = None
        self._live = set()
        self._next_conn = 0
        self.accepted = 0
        self.errors = 0
        self.tls_failures = []
        self.tls_server_names = []
        self.requests = []

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self):
        self._server = _Server((self._host, 0), self, self._tls_context)
        if self._tls_context is not None:
            self._tls_context.sni_callback = self._sni
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            live = list(self._live)
        for s in live:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(5)
        self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._server.server_address[1]

    def url(self, path, host="origin.test"):
        scheme = "https" if self._tls_context is not None else "http"
        return "%s://%s:%d%s" % (scheme, host, self.port, path)

    # -- what the origin saw ------------------------------------------------------------------

    def reset(self):
        with self._lock:
            self.accepted = 0
            self.errors = 0
            self.requests = []
            self.tls_failures = []
            self.tls_server_names = []

    def seen(self, marker):
        """Requests whose target contains `marker` (complete or not)."""
        with self._lock:
            return [r for r in self.requests if marker in r["target"]]

    def completed(self, marker):
        return [r for r in self.seen(marker) if r["complete"]]

    def wait_seen(self, marker, timeout=5.0, complete=True):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.completed(marker) if complete else self.seen(marker)
            if found:
                return found
            time.sleep(0.02)
        return []

    # -- callbacks from the server threads ----------------------------------------------------

    def _sni(self, sslobj, server_name, ctx):
        with self._lock:
            self.tls_server_names.append(server_name)
        sslobj.sni = server_name  # the connection's own, for its requests' records

    def _accepted(self):
        with self._lock:
            self.accepted += 1

    def _tls_failed(self, error):
        with self._lock:
            self.tls_failures.append(repr(error))

    def _tls_succeeded(self, sock):
        pass

    def _connection_started(self, sock):
        with self._lock:
            self._next_conn += 1
            self._live.add(sock)
            return self._next_conn

    def _connection_finished(self, sock):
        with self._lock:
            self._live.discard(sock)

    def _request_started(self, record):
        with self._lock:
            self.requests.append(record)


class RawOrigin:
    """A TCP server on 127.0.0.1 that records every byte each connection sends and runs
    `behavior(conn, record)` per connection, in its own thread. `record` is a dict with
    "data" (bytearray of everything received so far) and "closed" (bool).

    Behaviors: RawOrigin.record_only (read until EOF), RawOrigin.reply(bytes) (read a request
    head, send the bytes, close), RawOrigin.echo (echo until EOF)."""

    def __init__(self, behavior=None):
        self.behavior = behavior or RawOrigin.record_only
        self.connections = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._stop = False
        self._thread = None
        self._clients = []

    @property
    def port(self):
        return self._sock.getsockname()[1]

    def start(self):
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop = True
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def received(self):
        """All bytes received, over every connection, concatenated."""
        with self._lock:
            return b"".join(bytes(r["data"]) for r in self.connections)

    def _accept_loop(self):
        self._sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            record = {"data": bytearray(), "closed": False}
            with self._lock:
                self.connections.append(record)
                self._clients.append(conn)
            threading.Thread(target=self._run, args=(conn, record), daemon=True).start()

    def _run(self, conn, record):
        conn.settimeout(30)
        try:
            self.behavior(conn, record)
        except OSError:
            pass
        finally:
            record["closed"] = True
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def record_only(conn, record):
        while True:
            data = conn.recv(PIECE)
            if not data:
                return
            record["data"] += data

    @staticmethod
    def echo(conn, record):
        while True:
            data = conn.recv(PIECE)
            if not data:
                return
            record["data"] += data
            conn.sendall(data)

    @staticmethod
    def reply(payload, linger=0.0):
        """Reads one request head, sends `payload` verbatim, waits `linger` s, then closes."""

        def behavior(conn, record):
            while b"\r\n\r\n" not in record["data"]:
                data = conn.recv(PIECE)
                if not data:
                    return
                record["data"] += data
            conn.sendall(payload)
            if linger:
                time.sleep(linger)

        return behavior
