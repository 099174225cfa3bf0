"""Clients that drive the proxy: curl, raw sockets (for malformed input), urllib, openssl.

Raw sockets are the only way to send what a well-behaved client never would (smuggling
attempts, bad framing, slow heads); parse_responses() reads back what the proxy answered,
including several pipelined responses on one connection.
"""

import os
import re
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

from . import env



def header_value(pairs, name, default=None):
    """The first value of header `name` (case-insensitive) in (name, value) pairs."""
    name = name.lower()
    for k, v in pairs:
        if k.lower() == name:
            return v
    return default


def closed_port():
    """A loopback port with nothing listening (bound, then released): connects are refused.
    Also a free port for a server started next."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    """One HTTP response: status, reason, headers (list of (name, value)), body (bytes).
    `complete` is False when the connection ended before the framing said the body was done."""

    def __init__(self, version, status, reason, headers, body=b"", complete=True):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.complete = complete

    def header(self, name, default=None):
        return header_value(self.headers, name, default)

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def json(self):
        import json
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %s %s headers=%r body=%r%s>" % (
            self.status, self.reason, self.headers, self.body[:200],
            "" if self.complete else " INCOMPLETE")


def parse_head(block):
    """Parses a response head (bytes, without the final empty line)."""
    lines = block.decode("latin-1").split("\r\n")
    # (curl writes an HTTP/2 answer's head as "HTTP/2 200 ", without a minor version.)
    m = re.match(r"^(HTTP/\d(?:\.\d)?) (\d{3})(?: (.*))?$", lines[0])
    if not m:
        raise ValueError("not an HTTP status line: %r" % lines[0])
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers.append((name, value.strip()))
    return m.group(1), int(m.group(2)), m.group(3) or "", headers


def parse_responses(data, head_request=(), eof=True, tunnel=False):
    """Splits `data` (everything read from one connection) into Response objects.

    head_request: indices of responses that answer HEAD requests (no body). With eof=True the
    connection is known to be closed, so a body delimited by close ends at the data's end.
    tunnel: the request was CONNECT, so a 2xx answer has no body and tunnel bytes follow it
    (RFC 9110 section 9.3.6). Returns (responses, leftover bytes that do not form a
    response)."""
    out = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        try:
            version, status, reason, headers = parse_head(data[pos:end])
        except ValueError:
            break
        resp = Response(version, status, reason, headers)
        pos = end + 4
        if 100 <= status < 200 and status != 101:
            out.append(resp)
            continue
        connected = tunnel and 200 <= status < 300
        no_body = (len(out) in head_request or status in (204, 304) or status == 101 or
                   connected)
        te = (resp.header("Transfer-Encoding") or "").lower()
        cl = resp.header("Content-Length")
        if no_body:
            pass
        elif "chunked" in te:
            body = bytearray()
            complete = False
            while True:
                nl = data.find(b"\r\n", pos)
                if nl < 0:
                    break
                try:
                    size = int(data[pos:nl].split(b";")[0], 16)
                except ValueError:
                    break
                if size == 0:
                    trailer_end = data.find(b"\r\n\r\n", nl)
                    if data[nl:nl + 4] == b"\r\n\r\n":
                        pos = nl + 4
                        complete = True
                    elif trailer_end >= 0:
                        pos = trailer_end + 4
                        complete = True
                    break
                if nl + 2 + size + 2 > len(data):
                    body += data[nl + 2:nl + 2 + size]
                    pos = len(data)
                    break
                body += data[nl + 2:nl + 2 + size]
                pos = nl + 2 + size + 2
            resp.body = bytes(body)
            resp.complete = complete
            if not complete:
                pos = len(data)
        elif cl is not None:
            try:
                n = int(cl)
            except ValueError:
                n = len(data) - pos
            resp.body = data[pos:pos + n]
            resp.complete = len(resp.body) == n
            pos += len(resp.body)
        else:
            resp.body = data[pos:]
            resp.complete = eof
            pos = len(data)
        out.append(resp)
        if status == 101 or connected:
            break
    return out, data[pos:]


class RawClient:
    """A plain TCP connection to the proxy for hand-written requests."""

    def __init__(self, port, host="127.0.0.1", source=None, timeout=None):
        self.timeout = env.t(10) if timeout is None else timeout
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if source:
            self.sock.bind((source, 0))
        self.sock.settimeout(self.timeout)
        self.sock.connect((host, port))
        self.local_port = self.sock.getsockname()[1]  # the audit record's `client` port
        self.buffer = bytearray()
        self.eof = False
        self.reset = False

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        self.sock.sendall(data)

    def try_send(self, data):
        """send() that reports a peer reset instead of raising it."""
        try:
            self.send(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.reset = True
            return False

    def _recv(self, deadline):
        """One recv, waiting at most until `deadline` (a deadline in the past polls once)."""
        self.sock.settimeout(max(0.0, deadline - time.monotonic()))
        try:
            data = self.sock.recv(1 << 16)
        except (socket.timeout, BlockingIOError):
            return False
        except ConnectionResetError:
            self.reset = True
            self.eof = True
            return False
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def read_until_close(self, timeout=None):
        """Reads until EOF or reset (True) or timeout (False). Data lands in self.buffer."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.eof:
            if not self._recv(deadline) and not self.eof and time.monotonic() >= deadline:
                return False
        return True

    def poll_closed(self):
        """Non-blocking: True when the peer has closed (or reset) the connection."""
        return self.read_until_close(0)

    def read_responses(self, count=1, timeout=None, head_request=(), tunnel=False):
        """Reads until `count` complete responses have arrived, or EOF, or timeout. Returns the
        parsed responses (maybe fewer than count; the last may be incomplete). With tunnel
        (a CONNECT was sent) a 2xx answer ends the HTTP part; its bytes are then removed from
        the buffer, which keeps only what came through the tunnel."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            responses, rest = parse_responses(bytes(self.buffer), head_request, eof=self.eof,
                                              tunnel=tunnel)
            if tunnel and responses and 200 <= responses[-1].status < 300:
                del self.buffer[:len(self.buffer) - len(rest)]
                return responses
            done = [r for r in responses if r.status >= 200 or r.status == 101]
            if len(done) >= count and all(r.complete for r in done[:count]):
                return responses
            if self.eof or time.monotonic() >= deadline:
                return responses
            self._recv(deadline)

    def read_response(self, timeout=None, head=False, tunnel=False):
        """One final response (skipping 1xx), or None when nothing parsable came back."""
        responses = self.read_responses(1, timeout, head_request=(0,) if head else (),
                                        tunnel=tunnel)
        final = [r for r in responses if r.status >= 200 or r.status == 101]
        return final[0] if final else None

    def take(self, n=None):
        """Removes and returns buffered bytes (for after a CONNECT or 101)."""
        n = len(self.buffer) if n is None else n
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def recv_exact(self, n, timeout=None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while len(self.buffer) < n and not self.eof:
            if not self._recv(deadline) and time.monotonic() >= deadline:
                break
        return self.take(min(n, len(self.buffer)))

    def closed_by_peer(self, timeout=None):
        """True when the proxy closes (or resets) the connection within `timeout`; bytes that
        arrive meanwhile are kept in self.buffer."""
        return self.read_until_close(timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def exchange(port, data, timeout=None, count=1, head_request=()):
    """Sends `data` on a fresh connection and returns (responses, client)."""
    client = RawClient(port, timeout=timeout)
    client.send(data)
    responses = client.read_responses(count, head_request=head_request)
    return [r for r in responses if r.status >= 200 or r.status == 101], client


class CurlResult:
    def __init__(self, returncode, responses, body, stderr, write_out):
        self.returncode = returncode
        self.responses = responses   # every header block curl saw (CONNECT reply, 100, final)
        self.body = body
        self.stderr = stderr
        self.write_out = write_out

    @property
    def final(self):
        return self.responses[-1] if self.responses else None

    @property
    def status(self):
        return self.final.status if self.final else None

    def header(self, name, default=None):
        return self.final.header(name, default) if self.final else default

    def json(self):
        import json
        return json.loads(self.body)

    def __repr__(self):
        return "<CurlResult rc=%d status=%s body=%r stderr=%r>" % (
            self.returncode, self.status, self.body[:200], self.stderr[-500:])


def _split_header_blocks(raw):
    blocks = []
    for block in raw.split(b"\r\n\r\n"):
        if block.strip():
            try:
                version, status, reason, headers = parse_head(block.strip(b"\r\n"))
            except ValueError:
                continue
            blocks.append(Response(version, status, reason, headers))
    return blocks


LOCAL_PORT_MARK = "airlock-itest-local-port="


def curl(*urls, proxy_port=None, args=(), input=None, max_time=None, body_file=None):
    """Runs curl -sS against `urls` through 127.0.0.1:proxy_port. Headers go to a file (-D),
    the body to another (-o) unless body_file is given (e.g. os.devnull)."""
    max_time = env.t(20) if max_time is None else max_time
    with tempfile.TemporaryDirectory(prefix="airlock-curl-") as tmp:
        head_path = os.path.join(tmp, "head")
        out_path = body_file or os.path.join(tmp, "body")
        # The local port of curl's connection to the proxy, on stderr (a later -w in args
        # replaces this one): the audit record's `client` field names it, which ties an audit
        # assertion to this very request.
        cmd = ["curl", "-sS", "--max-time", str(max_time), "-D", head_path,
               "-w", "%{stderr}" + LOCAL_PORT_MARK + "%{local_port}\n"]
        if proxy_port is not None:
            cmd += ["-x", "http://127.0.0.1:%d" % proxy_port]
        cmd += list(args)
        for u in urls:
            cmd += ["-o", out_path, u] if len(urls) == 1 else [u]
        proc = subprocess.run(cmd, input=input, capture_output=True, timeout=max_time + 10)
        raw_head = b""
        if os.path.exists(head_path):
            with open(head_path, "rb") as f:
                raw_head = f.read()
        body = proc.stdout
        if len(urls) == 1 and body_file is None and os.path.exists(out_path):
            with open(out_path, "rb") as f:
                body = f.read()
        stderr = proc.stderr.decode("utf-8", "replace")
        local_port = None
        m = re.search(re.escape(LOCAL_PORT_MARK) + r"(\d+)\n", stderr)
        if m:
            local_port = int(m.group(1)) or None
            stderr = stderr[:m.start()] + stderr[m.end():]
        result = CurlResult(proc.returncode, _split_header_blocks(raw_head), body, stderr,
                            proc.stdout)
        result.local_port = local_port
        return result


def urllib_open(url, proxy_port, data=None, method=None, headers=None, timeout=None):
    """urllib with an explicit ProxyHandler. Returns (status, headers, body); HTTP errors
    are returned the same way, not raised."""
    proxy = "http://127.0.0.1:%d" % proxy_port
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy,
                                                                      "https": proxy}))
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with opener.open(req, timeout=env.t(15) if timeout is None else timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def client_hello(server_name, alpn=None):
    """The bytes of a real TLS ClientHello (Python's ssl module), with SNI `server_name`
    (None: no SNI)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(alpn)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def s_client(proxy_port, connect, servername=None, cafile=None, send=b"", timeout=None):
    """openssl s_client through the proxy (-proxy). Returns the CompletedProcess (text)."""
    cmd = ["openssl", "s_client", "-proxy", "127.0.0.1:%d" % proxy_port, "-connect", connect,
           "-verify_return_error", "-ign_eof"]
    if servername is not None:
        cmd += ["-servername", servername]
    else:
        cmd += ["-noservername"]
    if cafile:
        cmd += ["-CAfile", cafile]
    timeout = env.t(15) if timeout is None else timeout
    try:
        return subprocess.run(cmd, input=send, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("openssl s_client did not finish in %ss: %r" % (timeout, e.stdout))
