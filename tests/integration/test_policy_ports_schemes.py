"""Port ranges and per-rule schemes through the real proxy and curl (issue 17, items 2 and 3).

A rule with `ports: [A-B]` allows a port inside the range and refuses one outside with a compact
list; a rule with `schemes: [https]` lets curl through its CONNECT tunnel to a TLS origin but
refuses a plain `GET http://host:port/` to the same port (which would send plaintext to a TLS
port), and a `schemes: [http]` rule the reverse (curl --proxytunnel sends CONNECT for an http://
URL, as Node's proxy agent does)."""

import unittest

from harness.base import CurlAnswer, ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule, tunnel_rule


class PortRangeTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        # The origin's port is the last of a range; the next port is outside it.
        return make_policy([origin_rule(["80", "%d-%d" % (max(1, p - 100), p)])])

    def test_port_inside_the_range_is_allowed(self):
        m = marker()
        r = self.curl(self.url("/echo/" + m))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "/echo/" + m)
        self.assert_audit(path="/echo/" + m, decision="allow", rule="origin")

    def test_port_outside_the_range_is_refused_with_a_compact_list(self):
        p = self.origin.port
        m = marker()
        r = self.curl("http://origin.test:%d/echo/%s" % (p + 1, m))
        answer = CurlAnswer(r)
        self.assert_answer(answer, "port_denied")
        rec = self.assert_audit(path="/echo/" + m, decision="deny", reason="port_denied")
        self.assertEqual(rec["port"], p + 1)
        expected = "80, %d-%d" % (max(1, p - 100), p)
        self.assertIn(expected, answer.header("Proxy-Status"))


class SchemesTest(ProxyTestCase):
    tls = True

    @classmethod
    def policy(cls):
        return make_policy([
            # The TLS origin only through CONNECT.
            tunnel_rule(cls.tls_origin.port, name="tls-only", schemes=["https"]),
            # The plain origin under another name, only as plain http.
            origin_rule(cls.origin.port, name="plain-only", hosts=["plain.test"],
                        schemes=["http"]),
        ])

    def test_connect_allowed_on_a_connect_only_rule(self):
        r = self.curl(self.tls_origin.url("/echo/tls"), args=["--cacert", self.ca.ca_cert])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.status, 200, r)
        self.assert_audit(scheme="connect", port=self.tls_origin.port, decision="allow",
                          rule="tls-only")

    def test_plain_get_refused_on_a_connect_only_rule(self):
        m = marker()
        r = self.curl("http://origin.test:%d/echo/%s" % (self.tls_origin.port, m))
        self.assert_answer(CurlAnswer(r), "scheme_denied")
        rec = self.assert_audit(path="/echo/" + m, decision="deny", reason="scheme_denied")
        self.assertEqual(rec["rule"], "tls-only")
        self.assertEqual(rec["port"], self.tls_origin.port)

    def test_plain_get_allowed_on_a_plain_only_rule(self):
        m = marker()
        r = self.curl(self.origin.url("/echo/" + m, "plain.test"))
        self.assertEqual(r.status, 200, r)
        self.assert_audit(path="/echo/" + m, decision="allow", rule="plain-only")

    def test_connect_refused_on_a_plain_only_rule(self):
        r = self.curl(self.origin.url("/echo/" + marker(), "plain.test"),
                      args=["--proxytunnel"])
        self.assertNotEqual(r.returncode, 0, r)
        self.assertTrue(r.responses, "no CONNECT answer: %r" % r)
        connect_answer = r.responses[0]
        self.assertEqual(connect_answer.status, 403, r)
        rec = self.assert_audit(scheme="connect", port=self.origin.port, decision="deny")
        self.assertEqual(rec["reason"], "scheme_denied")
        self.assertEqual(rec["rule"], "plain-only")


if __name__ == "__main__":
    unittest.main()
