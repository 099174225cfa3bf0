"""The kill switch beyond plain requests (docs/operations.md, "The kill switch"): from the stop
on, every new tunnel of the agent gets 403 `agent_stopped`, and every tunnel it has open (opaque
or inspected) is cut; its held requests (`ask`) end refused and can no longer be approved; and
`mode: report` does not relax it. (Plain requests, the reload and the resume are in
test_request_controls.BreakerTest.)"""

import time
import unittest

from harness import env
from harness.base import CurlAnswer, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule, tunnel_rule
from harness.tls_support import TlsTunnel
from test_approvals import ApprovalCase
from test_tls_interception import InterceptionCase, inspect_rule


class KillSwitchCase(InterceptionCase):
    admin = True

    def stop_agent(self, name="default"):
        r = admin_call(self.proxy.admin, "POST", "/agents/%s/stop" % name)
        self.assertEqual(r.status, 200, r)
        self.addCleanup(self.resume_agent, name)

    def resume_agent(self, name="default"):
        r = admin_call(self.proxy.admin, "POST", "/agents/%s/resume" % name)
        self.assertEqual(r.status, 200, r)

    def connect(self, authority):
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
        return c.read_response(tunnel=True), c


class KillSwitchTunnelTest(KillSwitchCase):
    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port),
            inspect_rule(cls.good.port),
            tunnel_rule(cls.good.port, name="opaque", hosts=["origin.test"]),
        ], tls=cls.tls_section())
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def test_connect_refused_once_stopped(self):
        r, c = self.connect("origin.test:%d" % self.good.port)
        self.assertEqual(r.status, 200, r)  # before the stop: an ordinary tunnel
        self.stop_agent()
        for authority in ("origin.test:%d" % self.good.port, "insp.test:%d" % self.good.port):
            with self.subTest(authority=authority):
                before = len(self.good.tls_server_names)
                r, c = self.connect(authority)
                self.assert_answer(r, "agent_stopped")
                self.assert_audit(scheme="connect", reason="agent_stopped",
                                  client_port=c.local_port)
                self.assertEqual(self.good.tls_server_names[before:], [],
                                 "a stopped agent's tunnel reached the origin")

    def wait_cut(self, t):
        """True once the proxy closed the tunnel `t` (a TlsTunnel) without being asked to."""
        deadline = time.monotonic() + env.t(10)
        while not t.eof and time.monotonic() < deadline:
            t.read_responses(1)
        return t.eof

    def test_open_inspected_tunnel_cut(self):
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, t.connect_response)
        m1, m2 = marker(), marker()
        t.send("GET /echo/allowed-%s HTTP/1.1\r\nHost: insp.test\r\n\r\n" % m1)
        r = t.read_responses(1)
        self.assertEqual(r[0].status, 200, r)
        t.buffer.clear()
        self.stop_agent()
        # The tunnel was opened before the stop: the stop cuts it.
        self.assertTrue(self.wait_cut(t), "the stopped agent's inspected tunnel stayed open")
        try:
            t.send("GET /echo/allowed-%s HTTP/1.1\r\nHost: insp.test\r\n\r\n" % m2)
        except OSError:
            pass
        self.assertEqual(self.good.seen(m2), [], "a stopped agent's request reached the origin")

    def test_open_opaque_tunnel_cut(self):
        t = TlsTunnel(self.proxy.port, "origin.test:%d" % self.good.port, self.certs.ca_cert)
        self.addCleanup(t.close)
        self.assertIsNotNone(t.tls, t.connect_response)
        t.send("GET /echo/opaque-%s HTTP/1.1\r\nHost: origin.test\r\n\r\n" % marker())
        self.assertEqual(t.read_responses(1)[0].status, 200)
        t.buffer.clear()
        self.stop_agent()
        self.assertTrue(self.wait_cut(t), "the stopped agent's opaque tunnel stayed open")
        # Its one record says why it ended.
        self.assert_audit(scheme="connect", reason="agent_stopped",
                          client_port=t.raw.local_port)

    def test_inspected_request_with_curl_refused(self):
        self.stop_agent()
        m = marker()
        r = self.curl(self.insp_url("/echo/allowed-%s" % m), args=["--cacert", self.ica.cert])
        # The CONNECT itself is refused: curl sees the proxy's own answer.
        self.assertEqual(r.responses[0].status, 403, r)
        self.assertEqual(r.responses[0].header("X-Airlock-Reason"), "agent_stopped", r)
        self.assert_audit(scheme="connect", reason="agent_stopped", client_port=r.local_port)
        self.assertEqual(self.good.seen(m), [])


class KillSwitchHeldTest(ApprovalCase):
    """A stop ends what the agent has held: a plain request and a CONNECT waiting for an
    operator are refused at once (agent_stopped), each with one `approval` record, and are
    gone from GET /approvals, so that nothing is approved for a stopped agent."""

    def test_stop_refuses_held_requests(self):
        m = marker()
        f_get = self.held_get("/echo/stopped-%s" % m)
        names_before = len(self.good.tls_server_names)
        f_tunnel = self.held_connect("origin.test:%d" % self.good.port)
        p_get = self.wait_pending(path="/echo/stopped-%s" % m)
        p_tunnel = self.wait_pending(method="CONNECT", host="origin.test")
        r = admin_call(self.proxy.admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r)
        self.addCleanup(admin_call, self.proxy.admin, "POST", "/agents/default/resume")
        # Answered without any decision, long before the holds' 30 s.
        self.assertEqual(f_get.result(env.t(10)), (403, "agent_stopped"))
        t = f_tunnel.result(env.t(10))
        self.assertIsNone(t.tls)
        self.assertEqual(t.connect_response.status, 403)
        self.assertEqual(t.connect_response.header("X-Airlock-Reason"), "agent_stopped")
        pending = [p["id"] for p in self.approvals()["pending"]]
        for p in (p_get, p_tunnel):
            self.assertNotIn(p["id"], pending)
            self.decide(p["id"], expect=404)  # nothing left to approve
            rec = self.proxy.wait_audit(type="approval", action="agent_stopped",
                                        approval_id=p["id"])
            self.assertIsNotNone(rec, "no record of the held request the stop ended")
            self.assertEqual(rec["outcome"], "agent_stopped")
        self.assertEqual(len([x for x in self.proxy.audit() if x.get("type") == "approval" and
                              x.get("action") == "agent_stopped"]), 2)
        self.assert_audit(reason="agent_stopped", path="/echo/stopped-%s" % m)
        self.assertEqual(self.origin.seen(m), [])
        self.assertEqual(self.good.tls_server_names[names_before:], [])


class KillSwitchReportModeTest(KillSwitchCase):
    """mode: report relaxes policy decisions, never the kill switch (docs/policy.md)."""

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port, mode="report"),
            inspect_rule(cls.good.port, mode="report"),
        ], tls=cls.tls_section(), mode="report")
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def test_report_mode_does_not_bypass_the_stop(self):
        # Report mode lets an off-policy request through (recorded, not enforced)...
        m0 = marker()
        r = self.curl(self.url("/elsewhere-%s" % m0, host="origin.test"))
        self.assertNotEqual(r.header("X-Airlock-Reason"), "path_denied", r)
        self.stop_agent()
        # ...but a stopped agent gets nothing: allowed, off-policy, tunnel, inspected.
        m = marker()
        for url, args in ((self.url("/echo/%s" % m), []),
                          (self.url("/elsewhere-%s" % m), []),
                          (self.insp_url("/echo/allowed-%s" % m), ["--cacert", self.ica.cert])):
            with self.subTest(url=url):
                r = self.curl(url, args=args)
                answer = CurlAnswer(r)
                if url.startswith("https:"):
                    self.assertEqual(r.responses[0].status, 403, r)
                    self.assertEqual(r.responses[0].header("X-Airlock-Reason"), "agent_stopped")
                else:
                    self.assert_answer(answer, "agent_stopped")
                self.assert_audit(reason="agent_stopped", client_port=r.local_port)
        self.assertEqual(self.origin.seen(m), [])
        self.assertEqual(self.good.seen(m), [])


class ReportModeUnlistedHostTest(KillSwitchCase):
    """A host no rule names, with the whole policy in report mode: recorded and let through
    (docs/policy.md, report mode), and refused like everything else once the agent is
    stopped. Its own class: when the proxy gets this wrong it may die, and the other classes
    must not inherit that."""

    @classmethod
    def policy(cls):
        # The unlisted host is the origin's address spelled as an IP literal, which no rule
        # names; the policy-wide CIDR exception lets the reported request reach it.
        p = make_policy([origin_rule(cls.origin.port)], tls=cls.tls_section(), mode="report",
                        network={"block_private": True, "allow_cidrs": ["127.0.0.1/32"]})
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def unlisted(self, m):
        return "http://127.0.0.1:%d/echo/%s" % (self.origin.port, m)

    def test_unlisted_host_reported_not_refused(self):
        m = marker()
        r = self.curl(self.unlisted(m))
        self.assertEqual(r.status, 200, r)
        rec = self.assert_audit(path="/echo/%s" % m, client_port=r.local_port)
        # Recorded as what enforce mode would have refused.
        self.assertEqual((rec["decision"], rec["reason"]), ("report", "host_denied"), rec)
        self.assertIsNone(rec["rule"], rec)

    def test_unlisted_host_refused_once_stopped(self):
        self.stop_agent()
        m = marker()
        r = self.curl(self.unlisted(m))
        self.assert_answer(CurlAnswer(r), "agent_stopped")
        self.assert_audit(reason="agent_stopped", client_port=r.local_port)
        self.assertEqual(self.origin.seen(m), [])


if __name__ == "__main__":
    unittest.main()
