"""`concurrent` and the request buckets in inspected tunnels, as the agent sees them (policy.md,
Rate limits): a CONNECT is a request (it takes a token) whose tunnel holds its slots for one
request inside at a time; HTTP/2 streams in flight beside each other each hold a slot of their
own; a request inside a tunnel that another rule allowed takes that rule's slot. Before, one
HTTP/2 connection carried any number of requests at once under `concurrent: 2`, and a
`concurrent: 1` rule was passed by opening the tunnels under another rule of the same host.
"""

import unittest

from harness import env
from harness.base import marker
from harness.h2_client import H2Tunnel
from harness.proxy import make_policy, origin_rule
from harness.tls_support import InspectedOriginCase


class TunnelConcurrencyBase(InspectedOriginCase):
    """The policy and helpers; the tests are below and in test_concurrency_handover."""
    origin_names = ("insp.test", "narrow.test", "counted.test")

    @classmethod
    def policy(cls):
        base = {"addresses": ["127.0.0.1"], "allow_cidrs": ["127.0.0.1/32"],
                "ports": [cls.good.port], "inspect": True}
        return make_policy(
            [origin_rule(cls.origin.port),
             dict(base, name="inspected", hosts=["insp.test"]),
             # Two rules for one host: the CONNECT is allowed by the first, /slow by the second.
             dict(base, name="wide", hosts=["narrow.test"], paths=["^/echo(/.*)?$"]),
             dict(base, name="narrow", hosts=["narrow.test"], paths=["^/slow(/.*)?$"],
                  rate={"concurrent": 1}),
             dict(base, name="counted", hosts=["counted.test"],
                  rate={"requests_per_minute": 1, "burst": 3})],
            agents={"default": {"rules": ["origin", "inspected", "wide", "narrow", "counted"],
                                "rate": {"concurrent": 3}}},
            tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                 "upstream_ca": cls.certs.ca_cert})

    def tunnel(self, host):
        t = H2Tunnel(self.port, "%s:%d" % (host, self.good.port), self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.alpn, "h2")
        return t

    def slow(self, t, m):
        """A stream the origin answers late; returns once the origin holds it."""
        sid = t.request("/slow/%d?m=%s" % (int(env.t(6) * 1000), m))
        self.assertTrue(self.good.wait_seen(m, timeout=env.t(10)), "the origin never saw %s" % m)
        return sid

    def assert_refused(self, t, sid, limit):
        (r,) = t.wait(sid)
        self.assertEqual(r["headers"][":status"], "429", r)
        self.assertEqual(r["headers"].get("x-airlock-reason"), "concurrency_limited", r)
        self.assertIn(limit, r["headers"].get("proxy-status", ""), r)


class TunnelConcurrencyCase(TunnelConcurrencyBase):
    def test_http2_streams_in_flight_each_count(self):
        # concurrent: 3. The tunnel holds one slot with its first stream; each stream beside it
        # takes one more, so a third stream in flight is one too many.
        t = self.tunnel("insp.test")
        m = marker()
        first = self.slow(t, m + "-1")
        second = self.slow(t, m + "-2")
        third = self.slow(t, m + "-3")
        fourth = t.request("/echo/%s-4" % m)
        self.assert_refused(t, fourth, "concurrent=3")
        self.assertEqual(self.good.seen(m + "-4"), [])
        rec = self.proxy.wait_audit(path="/echo/%s-4" % m)
        self.assertIsNotNone(rec)
        self.assertEqual(rec["reason"], "concurrency_limited", rec)
        self.assertEqual(rec["protocol"], "h2", rec)
        for r in t.wait(first, second, third):
            self.assertEqual(r["headers"][":status"], "200", r)
        # Once they ended, their slots are free again.
        (r,) = t.wait(t.request("/echo/%s-5" % m))
        self.assertEqual(r["headers"][":status"], "200", r)

    def test_other_rules_limit_holds_inside_a_tunnel(self):
        # Two tunnels to narrow.test, each allowed by `wide`; a /slow request in each is the
        # `narrow` rule's, and that rule allows one at a time.
        m = marker()
        a, b = self.tunnel("narrow.test"), self.tunnel("narrow.test")
        held = self.slow(a, m + "-a")
        refused = b.request("/slow/1?m=%s-b" % m)
        self.assert_refused(b, refused, "narrow")
        self.assertEqual(self.good.seen(m + "-b"), [])
        (r,) = a.wait(held)
        self.assertEqual(r["headers"][":status"], "200", r)
        # The slot went back before the answer's last frame did.
        (r,) = b.wait(b.request("/slow/1?m=%s-c" % m))
        self.assertEqual(r["headers"][":status"], "200", r)
        rec = self.proxy.wait_audit(path="/slow/1", reason="concurrency_limited")
        self.assertIsNotNone(rec)
        self.assertEqual(rec["rule"], "narrow", rec)

    def test_connect_takes_a_request_token(self):
        # A burst of 3 refilled once a minute: the CONNECT and two requests inside; the third
        # request is refused inside TLS, and the next CONNECT before the tunnel opens.
        m = marker()
        t = self.tunnel("counted.test")
        for i in range(2):
            (r,) = t.wait(t.request("/echo/%s-%d" % (m, i)))
            self.assertEqual(r["headers"][":status"], "200", r)
        (r,) = t.wait(t.request("/echo/%s-2" % m))
        self.assertEqual(r["headers"][":status"], "429", r)
        self.assertEqual(r["headers"].get("x-airlock-reason"), "rate_limited", r)
        with self.assertRaises(AssertionError) as refused:
            H2Tunnel(self.port, "counted.test:%d" % self.good.port, self.ica.cert)
        self.assertIn("429", str(refused.exception))
        rec = self.proxy.wait_audit(scheme="connect", host="counted.test", reason="rate_limited")
        self.assertIsNotNone(rec)


if __name__ == "__main__":
    unittest.main()
