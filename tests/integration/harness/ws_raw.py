"""Raw WebSocket frames (RFC 6455 section 5), for what no library sends: a frame writer and
reader, an absolute-form upgrade through the proxy, and an origin that breaks the closing
handshake's rules on purpose (HostileOrigin)."""

import base64
import hashlib
import os
import socket
import struct
import threading

from harness import env


GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3


def frame(opcode, payload, masked=True, fin=True, rsv1=False, mask_key=None):
    """One frame; a masked one with a random key, or `mask_key` (b"\\0" * 4 leaves the payload
    as it is: cheap for big floods). `rsv1`: a permessage-deflate message (RFC 7692)."""
    head = bytes([(0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode])
    n = len(payload)
    m = 0x80 if masked else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if masked:
        key = mask_key or os.urandom(4)
        if any(key):
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        head += key
    return head + payload


def read_frame(sock, buf, masked=False):
    """(opcode, payload, rest of buf) of the next server frame (a client's when `masked`)."""
    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before a whole frame: %r" % buf)
            buf += chunk
    need(2)
    opcode, n = buf[0] & 0x0F, buf[1] & 0x7F
    pos = 2
    if n == 126:
        need(4)
        n, pos = struct.unpack("!H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, pos = struct.unpack("!Q", buf[2:10])[0], 10
    key = b""
    if masked:
        need(pos + 4)
        key, pos = buf[pos:pos + 4], pos + 4
    need(pos + n)
    payload = buf[pos:pos + n]
    if masked:
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return opcode, payload, buf[pos + n:]


def read_until_closed(sock, buf):
    """Every server frame until the peer closes the connection: [(opcode, payload)]."""
    frames = []
    while True:
        try:
            op, payload, buf = read_frame(sock, buf)
        except AssertionError:  # the connection ended (between frames, or inside one)
            return frames
        frames.append((op, payload))


def accept_upgrade(c, extensions=b""):
    """A server's side of the opening handshake on socket `c`: reads the request head, answers
    101 (with `extensions` agreed, when given). Returns (request head, bytes read past it), or
    None when the peer closed first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = c.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    key = [ln.split(b":", 1)[1].strip() for ln in head.split(b"\r\n")
           if ln.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    agreed = b"Sec-WebSocket-Extensions: " + extensions + b"\r\n" if extensions else b""
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n" + agreed +
              b"\r\n")
    return head, rest


class HostileOrigin:
    """A raw WebSocket server on 127.0.0.1:0 that breaks RFC 6455 section 5.5.1 where the path
    says (no library would), one thread per connection:
    - /origin-after-close/...: on the client's Close, answers with Close 4000 and then a text
      frame, in one write, and keeps its TCP end open until the peer closes it (at most 3 s);
    - /agent-after-close/...: on the client's Close, answers with Close 1000 and closes its
      sending side (a server closes first, section 7.1.1); keeps every frame it was sent.
    `frames[path]` holds (opcode, payload) of what it read, once `done[path]` is set."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.frames = {}
        self.done = {}
        self.lock = threading.Lock()

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.sock.close()

    def done_event(self, path):
        with self.lock:
            return self.done.setdefault(path, threading.Event())

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        c.settimeout(env.t(10))
        path, got = None, []
        try:
            opened = accept_upgrade(c)
            if opened is None:
                return
            head, buf = opened
            path = head.split(b" ")[1].decode("latin-1")
            while True:
                op, payload, buf = read_frame(c, buf, masked=True)
                got.append((op, payload))
                if op == 0x8:
                    break
            if path.startswith("/origin-after-close/"):
                c.sendall(frame(0x8, struct.pack("!H", 4000) + b"origin", masked=False) +
                          frame(0x1, b"DATA-AFTER-CLOSE " + path.encode(), masked=False))
                c.settimeout(3)
            else:
                c.sendall(frame(0x8, struct.pack("!H", 1000), masked=False))
                c.shutdown(socket.SHUT_WR)
            while True:  # until the peer closes (a frame read cut short ends here too)
                op, payload, buf = read_frame(c, buf, masked=True)
                got.append((op, payload))
        except (OSError, AssertionError):
            pass
        finally:
            c.close()
            if path:
                with self.lock:
                    self.frames[path] = got
                self.done_event(path).set()


def raw_upgrade(proxy_port, url, host, extra="", timeout=None):
    """An absolute-form upgrade to the proxy (`extra`: more header lines, each ending in CRLF);
    returns (response head, socket, buffered bytes)."""
    s = socket.create_connection(("127.0.0.1", proxy_port), timeout=timeout or env.t(20))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
               % (url, host, key, extra)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head.decode("latin-1"), s, rest
