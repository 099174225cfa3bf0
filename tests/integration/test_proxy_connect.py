"""CONNECT tunnels: opaque TLS to a real TLS origin through curl and openssl, and the
ClientHello check (SNI must equal the CONNECT host; the first bytes must be TLS)."""

import hashlib
import time
import unittest

from harness import clients, env
from harness.base import ProxyTestCase, marker
from harness.origin import RawOrigin, pattern_sha256
from harness.proxy import make_policy, origin_rule, tunnel_rule


class ConnectTest(ProxyTestCase):
    tls = True
    adversarial = True

    @classmethod
    def extra_setup(cls):
        cls.sink = RawOrigin(RawOrigin.record_only).start()

    @classmethod
    def extra_teardown(cls):
        cls.sink.stop()

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            tunnel_rule(cls.tls_origin.port),
            tunnel_rule(cls.sink.port, name="sink", hosts=["sink.test"]),
            tunnel_rule(cls.sink.port, name="sink-ip", hosts=["127.0.0.1"], addresses=None),
        ])

    def connect(self, authority, host_header=True):
        c = self.raw()
        self.addCleanup(c.close)
        req = "CONNECT %s HTTP/1.1\r\n" % authority
        if host_header:
            req += "Host: %s\r\n" % authority
        c.send(req + "\r\n")
        r = c.read_response(tunnel=True)
        return r, c

    def sink_bytes_for(self, before, settle=0.3):
        """Bytes the sink got on connections opened after `before` connections (after waiting
        `settle` seconds for anything still in flight)."""
        time.sleep(settle)
        return b"".join(bytes(rec["data"]) for rec in self.sink.connections[before:])

    def wait_sink(self, before, expected):
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and self.sink_bytes_for(before, 0) != expected:
            time.sleep(0.05)
        self.assertEqual(self.sink_bytes_for(before), expected)

    # -- real clients -------------------------------------------------------------------------

    def test_curl_https_through_tunnel(self):
        r = self.curl(self.tls_origin.url("/echo/tunnel?x=1"),
                      args=["--cacert", self.ca.ca_cert])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.responses[0].status, 200, "CONNECT answer: %r" % r.responses)
        self.assertEqual(r.status, 200)
        echo = r.json()
        self.assertEqual(echo["path"], "/echo/tunnel")
        self.assertIn("origin.test", self.tls_origin.tls_server_names)
        rec = self.assert_audit(scheme="connect", port=self.tls_origin.port,
                                decision="allow", client_port=r.local_port)
        self.assertEqual(rec["host"], "origin.test")
        self.assertEqual(rec["rule"], "origin-tls")
        self.assertEqual(rec["upstream"], "127.0.0.1:%d" % self.tls_origin.port)

    def test_curl_https_large_download_through_tunnel(self):
        n = 5_000_000
        r = self.curl(self.tls_origin.url("/bytes/%d" % n), args=["--cacert", self.ca.ca_cert])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.body), n)
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), pattern_sha256(n))

    def test_curl_https_upload_through_tunnel(self):
        body = bytes(range(256)) * 8000
        r = self.curl(self.tls_origin.url("/echo/up"), input=body,
                      args=["--cacert", self.ca.ca_cert, "--data-binary", "@-"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(body).hexdigest())

    def test_openssl_s_client_matching_sni(self):
        out = clients.s_client(self.proxy.port, "origin.test:%d" % self.tls_origin.port,
                               servername="origin.test", cafile=self.ca.ca_cert,
                               send=b"GET /echo/sclient HTTP/1.1\r\nHost: origin.test\r\n"
                                    b"Connection: close\r\n\r\n")
        self.assertIn(b"HTTP/1.1 200", out.stdout, out.stderr.decode()[-2000:])
        self.assertIn(b"Verify return code: 0 (ok)", out.stdout)

    def test_openssl_s_client_other_sni_refused(self):
        before = len(self.tls_origin.tls_server_names)
        mark = self.proxy.audit_mark()  # s_client's local port is unknown: records after this
        out = clients.s_client(self.proxy.port, "origin.test:%d" % self.tls_origin.port,
                               servername="other.test", cafile=self.ca.ca_cert,
                               send=b"GET /echo/sni-mismatch HTTP/1.1\r\nHost: other.test\r\n"
                                    b"Connection: close\r\n\r\n")
        self.assertNotEqual(out.returncode, 0, "handshake with SNI other.test succeeded")
        self.assertNotIn(b"HTTP/1.1 200", out.stdout)
        self.assertEqual(self.tls_origin.seen("/echo/sni-mismatch"), [])
        self.assertNotIn("other.test", self.tls_origin.tls_server_names[before:])
        rec = self.assert_audit(scheme="connect", reason="sni_mismatch", after=mark,
                                port=self.tls_origin.port)
        self.assertEqual(rec["decision"], "deny")

    # -- hand-made ClientHellos into a recording sink ----------------------------------------

    def test_valid_hello_forwarded_verbatim(self):
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        hello = clients.client_hello("sink.test")
        c.send(hello[:7])  # split inside the record header
        time.sleep(0.1)
        c.send(hello[7:60])
        time.sleep(0.1)
        c.send(hello[60:] + b"after-hello")
        self.wait_sink(before, hello + b"after-hello")

    def test_wrong_sni_closed_and_nothing_forwarded(self):
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        c.take()
        c.send(clients.client_hello("evil.test"))
        self.assertTrue(c.closed_by_peer(env.t(5)), "tunnel with SNI evil.test left open")
        self.assertEqual(self.sink_bytes_for(before), b"")
        rec = self.assert_audit(scheme="connect", reason="sni_mismatch", port=self.sink.port,
                                client_port=c.local_port)
        self.assertEqual(rec["decision"], "deny")

    def test_sni_mismatch_answered_with_unrecognized_name_alert(self):
        # RFC 6066 section 3: a server that does not recognise the name may send a fatal
        # unrecognized_name(112) alert; the proxy sends exactly that record, then closes.
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        c.take()
        c.send(clients.client_hello("evil.test"))
        self.assertTrue(c.closed_by_peer(env.t(5)), "tunnel with SNI evil.test left open")
        # TLS record: alert(21), version 3.3, length 2, level fatal(2), unrecognized_name(112).
        self.assertEqual(bytes(c.buffer), bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112]))
        self.assert_audit(scheme="connect", reason="sni_mismatch", client_port=c.local_port)
        self.assertEqual(self.sink_bytes_for(before, 0), b"")

    def test_sni_case_insensitive(self):
        # SNI is a DNS name: compare case-insensitively (RFC 6066 section 3, RFC 4343).
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200)
        hello = clients.client_hello("SINK.Test")
        c.send(hello)
        self.wait_sink(before, hello)

    def test_missing_sni_for_name_refused(self):
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        c.send(clients.client_hello(None))
        self.assertTrue(c.closed_by_peer(env.t(5)), "tunnel without SNI left open")
        self.assertEqual(self.sink_bytes_for(before), b"")
        self.assert_audit(scheme="connect", reason="sni_mismatch", port=self.sink.port,
                          client_port=c.local_port)

    def test_not_tls_closed_and_nothing_forwarded(self):
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        m = marker()
        # Not an HTTP/1.x request line either (plain HTTP is served: test_tunnel_plain_http).
        c.send("HELLO /%s\r\nHost: sink.test\r\n\r\n" % m)
        self.assertTrue(c.closed_by_peer(env.t(5)), "plain-text tunnel left open")
        self.assertNotIn(m.encode(), self.sink_bytes_for(before))
        rec = self.assert_audit(scheme="connect", reason="not_tls", port=self.sink.port,
                                client_port=c.local_port)
        self.assertEqual(rec["decision"], "deny")

    def test_not_tls_to_tls_origin_closed(self):
        r, c = self.connect("origin.test:%d" % self.tls_origin.port)
        self.assertEqual(r.status, 200, r)
        c.send(b"\x00\x01garbage that is not a handshake\r\n\r\n")
        self.assertTrue(c.closed_by_peer(env.t(5)))

    def test_ip_literal_connect_without_sni(self):
        before = len(self.sink.connections)
        r, c = self.connect("127.0.0.1:%d" % self.sink.port)
        self.assertEqual(r.status, 200, r)
        hello = clients.client_hello(None)
        c.send(hello)
        self.wait_sink(before, hello)

    def test_tunnel_close_propagates(self):
        before = len(self.sink.connections)
        r, c = self.connect("sink.test:%d" % self.sink.port)
        self.assertEqual(r.status, 200)
        c.send(clients.client_hello("sink.test"))
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and len(self.sink.connections) == before:
            time.sleep(0.05)
        self.assertGreater(len(self.sink.connections), before)
        c.close()
        rec = self.sink.connections[before]
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and not rec["closed"]:
            time.sleep(0.05)
        self.assertTrue(rec["closed"], "upstream side stayed open after the client closed")

    def test_connect_port_denied(self):
        r, c = self.connect("origin.test:%d" % (self.tls_origin.port + 1))
        self.assert_answer(r, "port_denied")

    def test_connect_audit_counts_bytes(self):
        n = 333_333
        r = self.curl(self.tls_origin.url("/bytes/%d" % n), args=["--cacert", self.ca.ca_cert])
        self.assertEqual(r.status, 200)
        # bytes_out counts what went to the client: the TLS records carrying the body, so a
        # little more than the body itself.
        rec = self.assert_audit(scheme="connect", port=self.tls_origin.port,
                                client_port=r.local_port, bytes_out=lambda b: isinstance(b, int) and n < b < n + 50_000)
        self.assertGreater(rec["bytes_in"], 0)


if __name__ == "__main__":
    unittest.main()
