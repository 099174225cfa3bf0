"""A chunked body whose last chunk `0\\r\\n` and the CRLF after it arrive in separate reads
(issue 17, the fuzz finding fuzz/corpus/http_request/crash-beast-final-chunk-assert): an empty
chunked body, whose last chunk comes first. Beast 1.81 asserts in parse_chunk_header when
handed fewer than 5 bytes after the last chunk line: Debug
builds, such as CI's sanitizer build this test runs against, aborted. The codec
(h1_body.hpp read_some_body) waits for more instead.

The pauses between the pieces only make separate reads likely; nothing asserts on time. Both
ways a body is read are covered: streamed to the origin, and held whole for a body check. And
a response body from an origin that splits its last chunk the same way.

And a chunk-size line or a trailer section that never ends (Beast 1.81 bounds neither): the
proxy stops buffering it past 64 KiB and refuses the body, from an origin and from a client,
instead of growing its buffer with all that comes."""

import json
import socket
import threading
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule

PAUSE = 0.2


class SplitChunkOrigin:
    """Answers every request with an empty chunked body: the head with "0\\r\\n", then "\\r", then
    "\\n", each after a pause."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(env.t(10))
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    self.answer(conn, data)
                except (OSError, KeyError):
                    pass

    def answer(self, conn, head):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                     b"Connection: close\r\n\r\n0\r\n")
        for piece in (b"\r", b"\n"):
            time.sleep(PAUSE)
            conn.sendall(piece)

    def stop(self):
        self.stopping = True
        self.sock.close()


# 1 MiB of a line that never ends, sent in pieces: far past the proxy's 64 KiB bound.
ENDLESS = 1 << 20
ENDLESS_KINDS = {
    "extension": b"5;x=",           # a chunk-size line's extension
    "trailer": b"0\r\nX-Trailer: ",  # the trailer section after the last chunk
}


def send_endless(conn, start):
    """`start`, then ENDLESS bytes of 'a' without a line end; stops when the peer is gone."""
    conn.sendall(start)
    piece = b"a" * 16384
    for _ in range(ENDLESS // len(piece)):
        conn.sendall(piece)


class EndlessLineOrigin(SplitChunkOrigin):
    """Answers `GET /<kind>` with a chunked head, then ENDLESS_KINDS[kind] and a line that never
    ends."""

    def answer(self, conn, head):
        kind = head.split(b" ", 2)[1].rsplit(b"/", 1)[-1].decode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        send_endless(conn, ENDLESS_KINDS[kind])


class ChunkedSplitTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.split_origin = SplitChunkOrigin()
        cls.endless_origin = EndlessLineOrigin()

    @classmethod
    def extra_teardown(cls):
        cls.split_origin.stop()
        cls.endless_origin.stop()

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            origin_rule(cls.origin.port, name="checked", hosts=["checked.test"],
                        body={"json": {}}),
            origin_rule(cls.split_origin.port, name="split", hosts=["split.test"]),
            origin_rule(cls.endless_origin.port, name="endless", hosts=["endless.test"],
                        paths=["/endless/.*"]),
        ])

    def send_split(self, host):
        m = marker()
        c = self.raw()
        self.addCleanup(c.close)
        c.send("POST http://%s:%d/echo/%s HTTP/1.1\r\nHost: %s\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
               % (host, self.origin.port, m, host))
        for piece in ("\r", "\n"):
            time.sleep(PAUSE)
            c.send(piece)
        r = c.read_response()
        self.assertIsNotNone(r, "no answer (did the proxy abort?)")
        self.assertTrue(self.proxy.alive(), "the proxy died")
        return m, r

    def test_streamed_request_body(self):
        m, r = self.send_split("origin.test")
        self.assertEqual(r.status, 200, r)
        echo = json.loads(r.body)
        self.assertEqual((echo["path"], echo["body_length"]), ("/echo/%s" % m, 0))

    def test_request_body_held_whole(self):
        # The empty body is read whole, then refused by the JSON check: an answer, not an abort.
        m, r = self.send_split("checked.test")
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "body_denied", r)

    def test_response_body(self):
        r = self.curl("http://split.test:%d/echo/x" % self.split_origin.port)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"")
        self.assertTrue(self.proxy.alive())

    def test_a_response_line_that_never_ends_is_refused(self):
        for kind in ENDLESS_KINDS:
            with self.subTest(kind=kind):
                mark = self.proxy.audit_mark()
                path = "/endless/%s" % kind
                self.curl("http://endless.test:%d%s" % (self.endless_origin.port, path))
                rec = self.proxy.wait_audit(after=mark, path=path)
                self.assertIsNotNone(rec)
                self.assertEqual(rec["reason"], "upstream_error", rec)
                self.assertEqual(rec["detail"], "response body: header limit exceeded", rec)
                self.assertTrue(self.proxy.alive(), "the proxy died")

    def test_a_request_line_that_never_ends_is_refused(self):
        for kind, start in ENDLESS_KINDS.items():
            with self.subTest(kind=kind):
                mark = self.proxy.audit_mark()
                path = "/echo/endless-%s" % kind
                c = self.raw()
                self.addCleanup(c.close)
                c.send("POST http://origin.test:%d%s HTTP/1.1\r\nHost: origin.test\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n" % (self.origin.port, path))
                try:
                    send_endless(c.sock, start)
                except OSError:
                    pass  # the proxy answered and closed before all of it went
                rec = self.proxy.wait_audit(after=mark, path=path)
                self.assertIsNotNone(rec)
                self.assertEqual(rec["decision"], "deny", rec)
                self.assertIn("header limit exceeded", rec["detail"], rec)
                self.assertTrue(self.proxy.alive(), "the proxy died")


if __name__ == "__main__":
    unittest.main()
