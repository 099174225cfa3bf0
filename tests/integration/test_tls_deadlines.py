"""Deadlines inside intercepted tunnels (`inspect: true`), where the TLS stream keeps them
itself (tls::socket_stream): a client that stops halfway through its handshake, one that
trickles a request head, one that goes quiet between requests, and an origin that does not
answer. Each is cut after its limit, not before and not much later, while a normal request
through another tunnel is served meanwhile, and each refusal is audited with its reason.
"""

import socket
import ssl
import time
import unittest

from harness import clients, env
from harness.base import marker
from harness.proxy import make_policy, origin_rule
from harness.tls_support import InspectedOriginCase, TlsTunnel


class TlsDeadlinesTest(InspectedOriginCase):
    adversarial = True
    admin = False

    @classmethod
    def policy(cls):
        rule = {"name": "inspected", "hosts": ["insp.test"], "addresses": ["127.0.0.1"],
                "allow_cidrs": ["127.0.0.1/32"], "ports": [cls.good.port], "inspect": True}
        return make_policy([origin_rule(cls.origin.port), rule],
                           limits={"head_timeout": "1s", "idle_timeout": "1s",
                                   "response_timeout": "1s"},
                           tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                                "upstream_ca": cls.certs.ca_cert})

    def authority(self):
        return "insp.test:%d" % self.good.port

    def tunnel(self):
        t = TlsTunnel(self.port, self.authority(), self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, t.connect_response)
        return t

    def get(self, t, path):
        t.send("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, self.authority()))
        (r,) = t.read_responses(1)
        return r

    def assert_served_meanwhile(self):
        """Another tunnel is served while the slow one waits for its deadline."""
        start = time.monotonic()
        r = self.get(self.tunnel(), "/echo/meanwhile-%s" % marker())
        self.assertEqual(r.status, 200, r)
        self.assertLess(time.monotonic() - start, env.t(1), "a normal tunnel waited")

    def wait_closed(self, t):
        """Seconds until the proxy ended the tunnel (close_notify, EOF or reset)."""
        start = time.monotonic()
        deadline = start + env.t(6)
        while time.monotonic() < deadline:
            t.tls.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not t.tls.recv(1 << 16):
                    return time.monotonic() - start
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except (ssl.SSLError, OSError):
                return time.monotonic() - start
        self.fail("the tunnel was not ended within %.0f s" % env.t(6))

    def test_stalled_handshake_is_cut_after_head_timeout(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (self.authority(), self.authority()))
        self.assertEqual(c.read_response(tunnel=True).status, 200)
        # A whole ClientHello, then nothing: the proxy has answered and waits for Finished.
        c.send(clients.client_hello("insp.test"))
        start = time.monotonic()
        self.assert_served_meanwhile()
        self.assertTrue(c.read_until_close(env.t(6)), "a stalled handshake was kept open")
        elapsed = time.monotonic() - start
        self.assertGreaterEqual(elapsed, 0.8, "cut before head_timeout")
        rec = self.assert_audit(client_port=c.local_port, method="CONNECT")
        self.assertEqual(rec["reason"], "bad_request", rec)
        self.assertIn("timeout", rec.get("detail", ""), rec)

    def test_trickled_head_inside_tls_is_cut(self):
        t = self.tunnel()
        m = marker()
        head = ("GET /echo/trickle-%s HTTP/1.1\r\nHost: %s\r\nX-Pad: %s\r\n\r\n"
                % (m, self.authority(), "p" * 100)).encode()
        start = time.monotonic()
        try:
            for byte in head[:-1]:  # each byte in a record of its own, 200 ms apart
                t.send(bytes([byte]))
                time.sleep(0.2)
                if time.monotonic() - start > env.t(4):
                    break
        except (ssl.SSLError, OSError):
            pass  # the proxy ended the tunnel while we were still sending
        waited = self.wait_closed(t) + (time.monotonic() - start)
        self.assertLess(waited, env.t(4) + env.t(6), "the trickle was not cut")
        self.assertGreaterEqual(time.monotonic() - start, 0.8, "cut before head_timeout")
        responses, _ = clients.parse_responses(bytes(t.buffer), eof=True)
        if responses:
            self.assert_answer(responses[0], "head_timeout")
        self.assertEqual(self.good.seen(m), [])

    def test_quiet_tunnel_is_ended_after_idle_timeout(self):
        t = self.tunnel()
        self.assertEqual(self.get(t, "/echo/first-%s" % marker()).status, 200)
        waited = self.wait_closed(t)
        self.assertGreaterEqual(waited, 0.8, "ended before idle_timeout")
        self.assertLess(waited, env.t(4))

    def test_silent_origin_gets_504_inside_tls(self):
        t = self.tunnel()
        start = time.monotonic()
        r = self.get(t, "/slow/3000")
        elapsed = time.monotonic() - start
        self.assert_answer(r, "upstream_timeout")
        self.assertGreaterEqual(elapsed, 0.8, "gave up before response_timeout")
        self.assertLess(elapsed, 2.5, "waited for the origin past response_timeout")
        rec = self.assert_audit(scheme="https", path="/slow/3000")
        self.assertEqual(rec["reason"], "upstream_timeout", rec)
        self.assertEqual(rec["status"], 504, rec)


if __name__ == "__main__":
    unittest.main()
