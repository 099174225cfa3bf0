"""What an HTTP/1.0 client gets when the origin's body has no length, and when it is cut.

- RFC 9112 section 6.1: a response to an HTTP/1.0 request carries no Transfer-Encoding. A body
  the origin sends chunked reaches such a client close-delimited (the chunk framing undone, the
  connection closed after it), on the proxy port and inside an intercepted tunnel alike.
- A close-delimited body ends where the connection ends, so a body the origin's stream cut
  short (a TLS origin gone without close_notify, a chunked body missing its last chunk) must not
  reach the client followed by a clean end: the proxy ends the client's connection abortively
  (no TLS close_notify, a TCP reset), and the client sees an error instead of a body that looks
  whole (RFC 9112 section 9.8, RFC 8446 section 6.1). The audit record says upstream_error.
"""

import socket
import ssl
import threading
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.origin import RawOrigin, pattern_bytes
from harness.proxy import make_policy, origin_rule
from harness.tls_support import AirlockCA, AlpnOrigin, OriginCerts, TlsTunnel

CUT_BODY = b"PART-ONE-"


def inspect_rule(port, name, hosts=("insp.test",)):
    return {"name": name, "hosts": list(hosts), "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [port], "inspect": True}


class CutTlsOrigin:
    """A TLS origin that answers each request with a close-delimited 200 (no Content-Length, not
    chunked), then ends the TCP connection without a close_notify: a truncated response, as
    a cut connection (or a FIN injected between proxy and origin) leaves it."""

    def __init__(self, context):
        self.context = context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        for _ in range(50):  # bounded: a test needs a few connections
            conn = None
            while conn is None and not self.stopping:
                try:
                    conn, _ = self.listener.accept()
                except socket.timeout:
                    continue
                except OSError:
                    return
            if self.stopping:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
            tls.settimeout(env.t(10))
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                piece = tls.recv(4096)
                if not piece:
                    return
                head += piece
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + CUT_BODY)
            # The TCP connection ends under the TLS one: a FIN, no close_notify.
            conn.shutdown(socket.SHUT_RDWR)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def stop(self):
        self.stopping = True
        self.thread.join(env.t(10))
        self.listener.close()


def read_to_end(sock, limit):
    """Everything `sock` yields until it ends, and how: "clean" (EOF; over TLS a close_notify),
    "reset" (a TCP reset), "tls-error" (the TLS stream ended without close_notify) or
    "open" (nothing ended within `limit` seconds)."""
    data = bytearray()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            piece = sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return bytes(data), "reset"
        except ssl.SSLError:
            return bytes(data), "tls-error"
        if not piece:
            return bytes(data), "clean"
        data += piece
    return bytes(data), "open"


class Http10FramingTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("insp.test", "cut.test"))
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        cls.cut = CutTlsOrigin(OriginCerts.server_context(cls.certs.good))
        # Plain HTTP: a chunked body whose last chunk never comes (the origin closes).
        cls.cut_chunked = RawOrigin(RawOrigin.reply(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n" + CUT_BODY + b"\r\n"
        )).start()

    @classmethod
    def extra_teardown(cls):
        cls.good.stop()
        cls.cut.stop()
        cls.cut_chunked.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            origin_rule(cls.cut_chunked.port, name="cut-chunked", hosts=["cut.test"],
                        paths=["^/.*$"]),
            inspect_rule(cls.good.port, "inspected"),
            inspect_rule(cls.cut.port, "inspected-cut", hosts=["cut.test"]),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def assert_unchunked(self, raw, size):
        head, sep, body = raw.partition(b"\r\n\r\n")
        self.assertTrue(sep, "no whole response head: %r" % raw[:200])
        self.assertTrue(head.startswith(b"HTTP/1.0 200"), head)
        fields = head.lower()
        self.assertNotIn(b"transfer-encoding", fields, head)
        self.assertNotIn(b"content-length", fields, head)
        self.assertNotIn(b"keep-alive", fields, head)
        self.assertEqual(body, pattern_bytes(size), "body not passed on unchunked")

    # -- chunked bodies to HTTP/1.0 clients -------------------------------------------------

    def test_plain_http10_client_gets_a_chunked_body_close_delimited(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/chunked/3000"), version="HTTP/1.0"))
        raw, end = read_to_end(c.sock, env.t(10))
        self.assertEqual(end, "clean", "the close ends the body: %r" % raw[-80:])
        self.assert_unchunked(raw, 3000)
        rec = self.assert_audit(path="/chunked/3000", client_port=c.local_port)
        self.assertEqual((rec["status"], rec["reason"]), (200, "ok"), rec)

    def test_http10_client_in_tunnel_gets_a_chunked_body_close_delimited(self):
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, t.connect_response)
        t.send("GET /chunked/3000 HTTP/1.0\r\nHost: insp.test\r\n\r\n")
        raw, end = read_to_end(t.tls, env.t(10))
        self.assertEqual(end, "clean", "the close ends the body: %r" % raw[-80:])
        self.assert_unchunked(raw, 3000)
        rec = self.assert_audit(path="/chunked/3000", client_port=t.raw.local_port)
        self.assertEqual((rec["status"], rec["reason"]), (200, "ok"), rec)

    def test_http11_client_still_gets_chunked(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/chunked/3000"), headers=[("Connection", "close")]))
        [r] = c.read_responses(1)
        self.assertEqual(r.status, 200)
        self.assertEqual((r.header("Transfer-Encoding") or "").lower(), "chunked")
        self.assertTrue(r.complete)
        self.assertEqual(r.body, pattern_bytes(3000))

    # -- cut bodies ---------------------------------------------------------------------------

    def test_cut_body_in_tunnel_ends_without_close_notify(self):
        t = TlsTunnel(self.proxy.port, "cut.test:%d" % self.cut.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, t.connect_response)
        m = marker()
        t.send("GET /page-%s HTTP/1.0\r\nHost: cut.test\r\n\r\n" % m)
        raw, end = read_to_end(t.tls, env.t(10))
        self.assertIn(end, ("reset", "tls-error"),
                      "a cut close-delimited body was ended cleanly, so it looks whole: %r"
                      % raw[-80:])
        rec = self.assert_audit(path="/page-%s" % m)
        self.assertEqual(rec["reason"], "upstream_error", rec)
        self.assertIn("truncated", rec["detail"], rec)

    def test_cut_chunked_body_to_plain_http10_client_is_reset(self):
        m = marker()
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", "http://cut.test:%d/cut-%s" % (self.cut_chunked.port, m),
                            version="HTTP/1.0"))
        raw, end = read_to_end(c.sock, env.t(10))
        self.assertEqual(end, "reset",
                         "a cut body was ended with a clean close: %r" % raw[-80:])
        self.assertNotIn(b"transfer-encoding", raw.partition(b"\r\n\r\n")[0].lower(), raw)
        rec = self.assert_audit(path="/cut-%s" % m)
        self.assertEqual(rec["reason"], "upstream_error", rec)
        self.assert_proxy_alive()


if __name__ == "__main__":
    unittest.main()
