"""An origin for the credential-injection and redaction tests: it echoes what it received
(headers, query, body, decoded Basic credentials) as JSON and reflects the credentials into
response headers, and it answers any other path with a response the test scripts.

Echo: every path not routed otherwise (e.g. /echo/<marker>?a=b) answers 200 application/json:

    {"method", "target", "path", "query" (raw), "params" (parse_qs, lists of values),
     "headers" (list of [name, value] pairs), "body" (latin-1 text), "basic" (null or
     {"user", "password"} decoded from Authorization: Basic)}

with the response headers X-Echo-Authorization (the Authorization received, if any),
X-Echo-Query (the raw query) and X-Echo-Target (the request target), so a test can check that
the proxy redacts secrets from response *headers* too.

Scripted: `origin.route(path, fn)` makes requests for exactly `path` (query ignored) call
`fn(req)`, where `req` is a ScriptedRequest with the parsed request and helpers to answer:
send() (Content-Length), send_chunked() (pieces, flushing and sleeping between them),
send_head() + write_chunk() + end_chunks() for step-by-step streams, write_raw().

Every request is recorded (`requests`, `seen(marker)`), with its headers, target and body, so
a test asserts what the origin actually received (an injected credential, or no secret).
"""

import base64
import json
import socket
import ssl
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

from .clients import header_value
from .origin import OriginServer

PIECE = 64 * 1024


class ScriptedRequest:
    """What a route function gets: the request as received and ways to answer it."""

    def __init__(self, handler, record):
        self._h = handler
        self.record = record
        self.method = record["method"]
        self.target = record["target"]
        self.path = record["path"]
        self.query = record["query"]
        self.headers = record["headers"]
        self.body = record["body_bytes"]

    def header(self, name, default=None):
        return header_value(self.headers, name, default)

    def head(self, status, headers=()):
        """Only a status line and headers (for 304 and other bodiless answers)."""
        self._h.send_response(status)
        for k, v in headers:
            self._h.send_header(k, v)
        self._h.end_headers()

    def send(self, status=200, headers=(), body=b"", ctype="text/plain"):
        """A whole response with Content-Length (ctype None: no Content-Type)."""
        hs = list(headers)
        if ctype is not None and not any(k.lower() == "content-type" for k, _ in hs):
            hs.append(("Content-Type", ctype))
        hs.append(("Content-Length", str(len(body))))
        self.head(status, hs)
        if self.method != "HEAD":
            self.write_raw(body)

    def send_head(self, status=200, headers=(), ctype="text/plain", chunked=True):
        hs = list(headers)
        if ctype is not None and not any(k.lower() == "content-type" for k, _ in hs):
            hs.append(("Content-Type", ctype))
        if chunked:
            hs.append(("Transfer-Encoding", "chunked"))
        else:
            # Delimited by close (RFC 9112 section 6.3, item 8).
            hs.append(("Connection", "close"))
            self._h.close_connection = True
        self.head(status, hs)

    def write_chunk(self, data):
        if data:
            self.write_raw(b"%x\r\n" % len(data) + data + b"\r\n")

    def end_chunks(self):
        self.write_raw(b"0\r\n\r\n")

    def write_raw(self, data):
        self._h.wfile.write(data)
        self._h.wfile.flush()

    def send_chunked(self, pieces, status=200, headers=(), ctype="text/plain", delay=0.0):
        """Chunked response, one chunk per piece, flushed, `delay` s between pieces."""
        self.send_head(status, headers, ctype)
        for i, piece in enumerate(pieces):
            if i and delay:
                time.sleep(delay)
            self.write_chunk(piece)
        self.end_chunks()


def ranged(body, ctype="text/plain", always_part=False):
    """A route that answers like a static file server: a single-range request (RFC 9110
    section 14.2, "Range: bytes=first-last") gets 206 and that part with Content-Range,
    anything else 200 and the whole body. `always_part`: 206 with the first half even
    without Range (a broken origin)."""

    def fn(req):
        rng = req.header("Range")
        if not rng and not always_part:
            return req.send(200, body=body, ctype=ctype)
        first, _, last = (rng or "bytes=0-%d" % (len(body) // 2 - 1))[6:].partition("-")
        part = body[int(first):int(last) + 1]
        span = "bytes %s-%d/%d" % (first, int(first) + len(part) - 1, len(body))
        return req.send(206, [("Content-Range", span)], body=part, ctype=ctype)

    return fn


def echo_document(record):
    basic = None
    auth = None
    for k, v in record["headers"]:
        if k.lower() == "authorization":
            auth = v
    if auth and auth[:6].lower() == "basic ":
        try:
            user, _, password = base64.b64decode(auth[6:].strip(),
                                                 validate=True).decode("latin-1").partition(":")
            basic = {"user": user, "password": password}
        except (ValueError, UnicodeDecodeError):
            basic = {"error": "undecodable"}
    return {
        "method": record["method"],
        "target": record["target"],
        "path": record["path"],
        "query": record["query"],
        "params": urllib.parse.parse_qs(record["query"], keep_blank_values=True),
        "headers": record["headers"],
        "body": record["body_bytes"].decode("latin-1"),
        "basic": basic,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "airlock-itest-echo/1"
    sys_version = ""
    timeout = 30

    def log_message(self, fmt, *args):
        pass

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError, ValueError):
            self.close_connection = True

    def do_GET(self):
        self._dispatch()

    do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def _read_body(self):
        te = ",".join(self.headers.get_all("Transfer-Encoding") or [])
        if "chunked" in te.lower():
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline(3)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _dispatch(self):
        origin = self.server.origin
        split = urllib.parse.urlsplit(self.path)
        record = {
            "method": self.command,
            "target": self.path,
            "path": split.path,
            "query": split.query,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_bytes": b"",
            "complete": False,
            "time": time.time(),
        }
        origin._request_started(record)
        record["body_bytes"] = self._read_body()
        record["complete"] = True
        fn = origin._route(split.path)
        req = ScriptedRequest(self, record)
        if fn is not None:
            fn(req)
            return
        doc = echo_document(record)
        extra = [("X-Echo-Query", record["query"]), ("X-Echo-Target", record["target"])]
        auth = self.headers.get("Authorization")
        if auth is not None:
            extra.append(("X-Echo-Authorization", auth))
        req.send(200, extra, json.dumps(doc).encode(), "application/json")


class EchoOrigin(OriginServer):
    """Threaded HTTP/1.1 echo origin on 127.0.0.1:<ephemeral> (HTTPS with tls_context): the
    harness's OriginServer (lifecycle, TLS, request log: seen, wait_seen) with the echo and
    scripted-route handler above."""

    handler_class = _Handler

    def __init__(self, tls_context=None):
        super().__init__(tls_context)
        self._routes = {}

    def route(self, path, fn):
        with self._lock:
            self._routes[path] = fn

    def _route(self, path):
        with self._lock:
            return self._routes.get(path)

    def all_received_bytes(self):
        """Every header and body byte received so far, for 'the origin never saw X' checks."""
        with self._lock:
            out = []
            for r in self.requests:
                out.append(r["target"].encode("latin-1", "replace"))
                for k, v in r["headers"]:
                    out.append(("%s: %s" % (k, v)).encode("latin-1", "replace"))
                out.append(r["body_bytes"])
            return b"\n".join(out)
