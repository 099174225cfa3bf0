"""Strict parsing of what arrives at the proxy port: request-target forms, schemes, ports,
CONNECT authorities, and junk. Each refusal is a 400 with its reason (RFC 9209 token
http_request_error), and the proxy keeps serving afterwards."""

import json
import unittest

from harness import clients, env
from harness.base import ProxyTestCase, marker, parse_proxy_status
from harness.proxy import make_policy, origin_rule, tunnel_rule


class TargetFormTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy([origin_rule([p, 80]), tunnel_rule(8443)])

    def expect(self, request_line, reasons, extra="", host=None):
        m = marker()
        request_line = request_line.replace("MARK", m)
        host = host or "origin.test:%d" % self.origin.port
        data = "%s\r\nHost: %s\r\n%s\r\n" % (request_line, host, extra)
        [r], _ = self.send_raw(data.encode("latin-1"))
        self.assertIsNotNone(r)
        reason = r.header("X-Airlock-Reason")
        self.assertIn(reason, reasons, "%r -> %r" % (request_line, r))
        self.assert_answer(r, reason, msg=request_line)
        self.assertEqual(self.origin.seen(m), [], "origin saw %r" % request_line)
        return r

    # -- schemes and forms --------------------------------------------------------------------

    def test_https_absolute_form(self):
        self.expect("GET https://origin.test:%d/echo/MARK HTTP/1.1" % self.origin.port,
                    ["unsupported_scheme"])

    def test_other_schemes(self):
        for scheme in ("ftp", "ws", "file", "gopher"):
            with self.subTest(scheme=scheme):
                r = self.expect("GET %s://origin.test:%d/echo/MARK HTTP/1.1"
                                % (scheme, self.origin.port), ["unsupported_scheme"])
                self.assertIn(b"scheme '%s'" % scheme.encode(), r.body)

    def test_a_scheme_of_the_agents_own_text_is_not_repeated(self):
        # Refused before DLP reads anything: a key written as the scheme must not come back in
        # the answer or its Proxy-Status, nor be written to the audit record.
        key = "AKIAIOSFODNN7EXAMPLE"
        for scheme in (key, key.lower(), "x" + key):
            with self.subTest(scheme=scheme):
                mark = self.proxy.audit_mark()
                r = self.expect("GET %s://origin.test:%d/echo/MARK HTTP/1.1"
                                % (scheme, self.origin.port), ["unsupported_scheme"])
                rec = self.proxy.wait_audit(after=mark, reason="unsupported_scheme")
                self.assertIsNotNone(rec)
                for text in (r.body.decode(), r.header("Proxy-Status"), json.dumps(rec)):
                    self.assertNotIn(key[4:12].lower(), text.lower())
                self.assertIn(b"only http:// URLs", r.body)

    def test_origin_form_at_proxy_port(self):
        r = self.expect("GET /echo/MARK HTTP/1.1", ["origin_form"])
        self.assertEqual(r.status, 400)

    def test_origin_form_post(self):
        self.expect("POST /echo/MARK HTTP/1.1", ["origin_form"], extra="Content-Length: 0\r\n")

    def test_asterisk_form(self):
        self.expect("OPTIONS * HTTP/1.1", ["bad_request", "origin_form"])

    def test_userinfo_in_url(self):
        self.expect("GET http://user:pw@origin.test:%d/echo/MARK HTTP/1.1" % self.origin.port,
                    ["bad_request"])
        self.expect("GET http://user@origin.test:%d/echo/MARK HTTP/1.1" % self.origin.port,
                    ["bad_request"])

    def test_fragment_in_url(self):
        self.expect("GET http://origin.test:%d/echo/MARK#frag HTTP/1.1" % self.origin.port,
                    ["bad_request"])

    def test_bad_hosts_in_url(self):
        for host in ("", "exa!mple.test", "a..b", "[::1", "[zz::1]", "1.2.3.4.5",
                     "256.0.0.1", "a" * 64 + ".test"):
            with self.subTest(host=host):
                self.expect("GET http://%s/echo/MARK HTTP/1.1" % host, ["bad_request"])

    def test_bad_ports_in_url(self):
        for port in ("0", "65536", "99999999999"):
            with self.subTest(port=port):
                self.expect("GET http://origin.test:%s/echo/MARK HTTP/1.1" % port, ["bad_port"])
        for port in ("-1", "0x50", "+80", "80a", " 80"):
            with self.subTest(port=port):
                self.expect("GET http://origin.test:%s/echo/MARK HTTP/1.1" % port,
                            ["bad_port", "bad_request"])

    # -- CONNECT ------------------------------------------------------------------------------

    def test_connect_with_path(self):
        self.expect("CONNECT origin.test:8443/MARK HTTP/1.1", ["bad_request"])

    def test_connect_with_userinfo(self):
        self.expect("CONNECT user:pw@origin.test:8443 HTTP/1.1", ["bad_request"])

    def test_connect_missing_port(self):
        self.expect("CONNECT origin.test HTTP/1.1", ["bad_port"])
        self.expect("CONNECT origin.test: HTTP/1.1", ["bad_port"])

    def test_connect_bad_ports(self):
        for port in ("0", "65536"):
            with self.subTest(port=port):
                self.expect("CONNECT origin.test:%s HTTP/1.1" % port, ["bad_port"])
        for port in ("-1", "0x50", "443abc"):
            with self.subTest(port=port):
                self.expect("CONNECT origin.test:%s HTTP/1.1" % port, ["bad_port", "bad_request"])

    def test_connect_bad_host(self):
        # The port is fine; the host is not: that is a malformed target, not a bad port.
        for host in ("exa!mple.test", "a..b", "[zz::1]", "256.0.0.1", 'a"b'):
            with self.subTest(host=host):
                self.expect("CONNECT %s:8443 HTTP/1.1" % host, ["bad_request"])

    def test_connect_absolute_url(self):
        self.expect("CONNECT http://origin.test:8443/ HTTP/1.1", ["bad_request", "bad_port"])

    # -- what the answers and the audit trail carry --------------------------------------------

    def test_proxy_status_well_formed_for_hostile_targets(self):
        # RFC 8941 sf-string: printable ASCII only, with '"' and '\\' escaped.
        for line in (b'CONNECT a"b\\c:443 HTTP/1.1', b"CONNECT \xc3\xa9t\xc3\xa9:443 HTTP/1.1",
                     b'GET http://x/"q\\ HTTP/1.1', b"GET http://\xc3\xa9.test/ HTTP/1.1"):
            with self.subTest(line=line):
                [r], _ = self.send_raw(line + b"\r\nHost: x\r\n\r\n")
                self.assertEqual(r.status, 400, r)
                value = r.header("Proxy-Status")
                self.assertTrue(value and all(0x20 <= ord(c) < 0x7f for c in value),
                                "Proxy-Status is not printable ASCII: %r" % value)
                ps = parse_proxy_status(value)
                self.assertEqual(ps.get("error"), "http_request_error", value)
                self.assertTrue(value.split("details=", 1)[1].startswith('"'), value)

    def test_credentials_in_target_not_recorded(self):
        secret = "s3cretpw" + marker()
        for line in ("CONNECT user:%s@origin.test:8443 HTTP/1.1" % secret,
                     "GET http://user:%s@origin.test:%d/echo HTTP/1.1" % (secret,
                                                                         self.origin.port)):
            with self.subTest(line=line):
                [r], c = self.send_raw(("%s\r\nHost: origin.test\r\n\r\n" % line).encode())
                self.assert_answer(r, "bad_request")
                # This request's own record, written before the file is searched below.
                self.assert_audit(reason="bad_request", client_port=c.local_port)
        with open(self.proxy.audit_path, "rb") as f:
            audit = f.read()
        self.assertNotIn(secret.encode(), audit, "a password from a URL was written to the audit")
        self.assertNotIn(secret, self.proxy.stderr(), "a password from a URL was logged")

    # -- not HTTP/1.1 at all ------------------------------------------------------------------

    def junk(self, data):
        """Junk gets a 400 or a closed connection, never anything else."""
        c = self.raw()
        self.addCleanup(c.close)
        c.try_send(data)
        c.read_until_close(env.t(5))
        rs, _ = clients.parse_responses(bytes(c.buffer))
        for r in rs:
            self.assertIn(r.status, (400, 431), r)
        self.assertTrue(c.eof, "the proxy kept a junk connection open")

    def test_http2_preface(self):
        self.junk(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 20)

    def test_tls_to_plain_port(self):
        self.junk(clients.client_hello("origin.test"))

    def test_binary_garbage(self):
        self.junk(bytes(range(256)) * 4)

    def test_http09(self):
        self.junk(b"GET /\r\n\r\n")

    def test_bad_request_lines(self):
        for line in ("GET  http://origin.test/ HTTP/1.1", "GET http://origin.test/ http/1.1",
                     "GET http://origin.test/ HTTP/1.1 extra", "GET http://origin.test/",
                     "G\x01T http://origin.test/ HTTP/1.1", "GET http://origin.test/\x7f HTTP/1.1"):
            with self.subTest(line=line):
                self.junk(line.encode("latin-1") + b"\r\nHost: origin.test\r\n\r\n")

    def test_unfinished_request_then_close(self):
        c = self.raw()
        c.send(b"GET http://origin.test:%d/echo/half HTTP/1.1\r\nHost: orig" % self.origin.port)
        c.close()
        self.assertEqual(self.origin.seen("/echo/half"), [])


if __name__ == "__main__":
    unittest.main()
