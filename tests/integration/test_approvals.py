"""Held requests (`ask`, docs/operations.md "Approvals"): a plain request, a CONNECT (held
before the 200) and a request inside an inspected tunnel, each approved (it then goes through),
refused (403 approval_refused) and timed out (403 approval_timeout); the scopes once,
agent_host and permanent (a rule written to the overlay file the policy includes, reloaded and
shown as a diff); and the hold bounds under a flood of asking requests (429 approval_limit).

Every held request runs in a thread of its own; the test waits for it to show up in
GET /approvals, decides on the admin port, then reads the client's answer."""

import concurrent.futures
import http.client
import json
import os
import time
import unittest

import yaml

from harness import env
from harness.base import marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule, tunnel_rule
from harness.tls_support import TlsTunnel
from test_tls_interception import InterceptionCase, inspect_rule

OVERLAY = "approved.yaml"


class ApprovalCase(InterceptionCase):
    admin = True
    threads = 2

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port, name="asked", ask={"timeout": "30s"}),
            origin_rule(cls.origin.port, name="quick", hosts=["quick.test"],
                        ask={"timeout": "1s"}),
            tunnel_rule(cls.good.port, name="asked-tls", hosts=["origin.test"], ask=True),
            inspect_rule(cls.good.port, ask=True),
        ], tls=cls.tls_section())
        p["listen"]["admin"] = "127.0.0.1:0"
        # Requests no rule allows are held too; the origin is on loopback, allowed here.
        p["network"] = {"block_private": True, "allow_cidrs": ["127.0.0.1/32"]}
        p["approvals"] = {"ask_unmatched": True, "timeout": "30s", "max_held_per_agent": 4,
                          "max_held_total": 8, "overlay": OVERLAY}
        p["include"] = [OVERLAY]
        return p

    def setUp(self):
        super().setUp()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
        self.addCleanup(self.pool.shutdown, wait=True)

    # -- the admin port ---------------------------------------------------------------------

    def approvals(self):
        r = admin_call(self.proxy.admin, "GET", "/approvals")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def wait_pending(self, **match):
        """The pending approval matching `match` (waits for it to appear)."""
        deadline = time.monotonic() + env.t(10)
        while True:
            for p in self.approvals()["pending"]:
                if all(p.get(k) == v for k, v in match.items()):
                    return p
            if time.monotonic() >= deadline:
                self.fail("no pending approval with %r: %r" % (match, self.approvals()))
            time.sleep(0.05)

    def decide(self, pid, action="approve", expect=200, **body):
        r = admin_call(self.proxy.admin, "POST", "/approvals/%d/%s" % (pid, action),
                       body=json.dumps(body) if body else None)
        self.assertEqual(r.status, expect, r)
        return r

    # -- clients ----------------------------------------------------------------------------

    def access_request(self, body=None, query=""):
        """A GET (query) or POST (body) to the access-request endpoint: its response."""
        c = self.raw(timeout=env.t(10))
        try:
            url = "http://airlock.internal/request-access" + query
            if body is None:
                c.send(self.request("GET", url, headers=[("Connection", "close")]))
            else:
                c.send(self.request("POST", url, body=json.dumps(body).encode(),
                                    headers=[("Connection", "close"),
                                             ("Content-Type", "application/json")]))
            return c.read_responses(1)[-1]
        finally:
            c.close()

    def held_get(self, path, host="origin.test", port=None):
        """A plain GET through the proxy in a thread: (future of (status, reason))."""
        url = "http://%s:%d%s" % (host, port or self.origin.port, path)

        def go():
            c = self.raw(timeout=env.t(40))
            try:
                c.send(self.request("GET", url, headers=[("Connection", "close")]))
                r = c.read_responses(1)[-1]
                return r.status, r.header("X-Airlock-Reason")
            finally:
                c.close()
        return self.pool.submit(go)

    def held_connect(self, authority):
        """A CONNECT in a thread: (future of the TlsTunnel once the proxy answered)."""
        def go():
            t = TlsTunnel(self.proxy.port, authority, self.certs.ca_cert
                          if not authority.startswith("insp.") else self.ica.cert)
            self.addCleanup(t.close)
            return t
        return self.pool.submit(go)


class HeldPlainRequestTest(ApprovalCase):
    def test_approved_once(self):
        m = marker()
        f = self.held_get("/echo/once-%s" % m)
        p = self.wait_pending(path="/echo/once-%s" % m)
        self.assertEqual((p["agent"], p["host"], p["rule"], p["kind"]),
                         ("default", "origin.test", "asked", "request"))
        self.assertEqual(self.origin.seen(m), [], "a held request reached the origin")
        self.decide(p["id"], scope="once")
        self.assertEqual(f.result(env.t(20))[0], 200)
        self.assertEqual(len(self.origin.seen(m)), 1)
        # Once: the next request is held again.
        m2 = marker()
        f2 = self.held_get("/echo/again-%s" % m2)
        p2 = self.wait_pending(path="/echo/again-%s" % m2)
        self.decide(p2["id"], "refuse")
        self.assertEqual(f2.result(env.t(20)), (403, "approval_refused"))
        self.assertEqual(self.origin.seen(m2), [])
        self.assert_audit(reason="approval_refused", path="/echo/again-%s" % m2)

    def test_timed_out(self):
        m = marker()
        f = self.held_get("/echo/slow-%s" % m, host="quick.test")
        self.assertEqual(f.result(env.t(20)), (403, "approval_timeout"))
        self.assertEqual(self.origin.seen(m), [])
        self.assertFalse(any(p["path"] == "/echo/slow-%s" % m
                             for p in self.approvals()["pending"]))

    def test_agent_host_grant(self):
        m = marker()
        f = self.held_get("/echo/grant-%s/first" % m)
        p = self.wait_pending(path="/echo/grant-%s/first" % m)
        # Narrowed to this test's own paths: the other tests' requests stay held.
        prefix = "/echo/grant-%s" % m
        self.decide(p["id"], scope="agent_host", duration="1h", method=True, path_prefix=prefix)
        self.assertEqual(f.result(env.t(20))[0], 200)
        grants = self.approvals()["grants"]
        self.assertTrue(any(g["host"] == "origin.test" and g["method"] == "GET" and
                            g["path_prefix"] == prefix for g in grants), grants)
        # Covered now: straight through, no hold.
        r = self.curl(self.url("%s/covered" % prefix))
        self.assertEqual(r.status, 200, r)
        # Not covered: another method.
        f3 = self.pool.submit(lambda: self.curl(self.url("%s/post" % prefix),
                                                args=["--data", "x"], max_time=env.t(40)))
        p3 = self.wait_pending(path="%s/post" % prefix, method="POST")
        self.decide(p3["id"], "refuse")
        self.assertEqual(f3.result(env.t(20)).status, 403)

    def test_grant_prefix_covers_whole_segments_only(self):
        # An operator allows GET under /echo/seg-M/; a path a server resolves outside it (dot
        # segments, an encoded slash) or one that only shares its first bytes is held again.
        m = marker()
        prefix = "/echo/seg-%s/" % m
        f = self.held_get(prefix + "first")
        p = self.wait_pending(path=prefix + "first")
        self.decide(p["id"], scope="agent_host", duration="1h", method=True,
                    path_prefix=prefix)
        self.assertEqual(f.result(env.t(20))[0], 200)
        for path in (prefix + "../x-" + m, prefix + "%2e%2e/x-" + m, prefix + "..%2fx-" + m,
                     prefix[:-1] + "0/x-" + m):
            with self.subTest(path=path):
                f = self.held_get(path)
                p = self.wait_pending(path=path)  # held, not passed by the grant
                self.decide(p["id"], "refuse")
                self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))
        self.assertEqual([s for s in self.origin.seen(m) if "x-" in s], [])
        # A prefix no request could be under is refused outright.
        f = self.held_get("/echo/seg-bad-%s" % m)
        p = self.wait_pending(path="/echo/seg-bad-%s" % m)
        self.decide(p["id"], expect=400, scope="agent_host", path_prefix="/echo/../")
        self.decide(p["id"], "refuse")
        f.result(env.t(20))

    def test_bad_decisions(self):
        self.decide(999999, expect=404)
        m = marker()
        f = self.held_get("/echo/bad-%s" % m)
        p = self.wait_pending(path="/echo/bad-%s" % m)
        for body in ({"scope": "forever"}, {"duration": "-1s"}, {"path_prefix": "x"},
                     {"other": 1}):
            r = admin_call(self.proxy.admin, "POST", "/approvals/%d/approve" % p["id"],
                           body=json.dumps(body))
            self.assertEqual(r.status, 400, (body, r))
        r = admin_call(self.proxy.admin, "GET", "/approvals/%d/approve" % p["id"])
        self.assertEqual(r.status, 405, r)
        self.decide(p["id"], "refuse")
        self.assertEqual(f.result(env.t(20))[1], "approval_refused")
        self.decide(p["id"], "approve", expect=404)  # decided already


class HeldTunnelTest(ApprovalCase):
    def test_policy_names_the_interception_ca(self):
        # What the console shows as the CA's fingerprint.
        p = admin_call(self.proxy.admin, "GET", "/policy").json()
        self.assertRegex(p["ca_fingerprint"], r"^([0-9A-F]{2}:){31}[0-9A-F]{2}$")

    def test_connect_held_before_the_200(self):
        names_before = len(self.good.tls_server_names)
        f = self.held_connect("origin.test:%d" % self.good.port)
        p = self.wait_pending(method="CONNECT", port=self.good.port, host="origin.test")
        self.assertEqual(p["path"], "")
        self.assertEqual(self.good.tls_server_names[names_before:], [],
                         "a held CONNECT reached the origin")
        self.decide(p["id"])
        t = f.result(env.t(20))
        self.assertIsNotNone(t.tls, t.connect_response)
        m = marker()
        t.send("GET /echo/tunnel-%s HTTP/1.1\r\nHost: origin.test\r\n\r\n" % m)
        self.assertEqual(t.read_responses(1)[0].status, 200)

    def test_connect_refused_and_timed_out(self):
        f = self.held_connect("origin.test:%d" % self.good.port)
        p = self.wait_pending(method="CONNECT", host="origin.test")
        self.decide(p["id"], "refuse")
        t = f.result(env.t(20))
        self.assertIsNone(t.tls)
        self.assertEqual(t.connect_response.status, 403)
        self.assertEqual(t.connect_response.header("X-Airlock-Reason"), "approval_refused")

    def test_inspected_request_held(self):
        f = self.held_connect("insp.test:%d" % self.good.port)
        p = self.wait_pending(method="CONNECT", host="insp.test")
        self.decide(p["id"], scope="once")  # the tunnel; its requests are held one by one
        t = f.result(env.t(20))
        self.assertIsNotNone(t.tls, t.connect_response)
        for action, expect in (("approve", 200), ("refuse", 403)):
            m = marker()
            path = "/echo/allowed-%s" % m
            t.send("GET %s HTTP/1.1\r\nHost: insp.test\r\n\r\n" % path)
            p = self.wait_pending(path=path, host="insp.test")
            self.assertTrue(p["in_tunnel"])
            self.assertEqual(self.good.seen(m), [], "a held inspected request reached the origin")
            self.decide(p["id"], action)
            r = t.read_responses(1)
            t.buffer.clear()
            self.assertEqual(r[0].status, expect, r)
            if expect == 403:
                self.assertEqual(r[0].header("X-Airlock-Reason"), "approval_refused")
                self.assertEqual(self.good.seen(m), [])


class HeldUnmatchedTest(ApprovalCase):
    """approvals.ask_unmatched: a request no rule allows; permanent approvals."""

    def test_permanent_written_to_overlay(self):
        overlay = os.path.join(self.proxy.dir, OVERLAY)
        m = marker()
        f = self.held_get("/echo/unlisted-%s" % m, host="127.0.0.1")
        p = self.wait_pending(path="/echo/unlisted-%s" % m, host="127.0.0.1")
        self.assertEqual(p["rule"], "")
        with open(self.proxy.config_path) as fh:
            policy_before = fh.read()
        r = self.decide(p["id"], scope="permanent")
        self.assertIn("approved-1", r.text())
        self.assertEqual(f.result(env.t(20))[0], 200)
        self.assertEqual(len(self.origin.seen(m)), 1)
        # The operator's file is untouched; the overlay holds the rule and the agent's list.
        with open(self.proxy.config_path) as fh:
            self.assertEqual(fh.read(), policy_before)
        with open(overlay) as fh:
            written = yaml.safe_load(fh)
        self.assertEqual(written["rules"], [{"name": "approved-1", "hosts": ["127.0.0.1"],
                                             "ports": [self.origin.port]}])
        self.assertEqual(written["agents"], {"default": {"rules": ["approved-1"]}})
        # Reloaded, and shown: the diff, and the policy's version changed.
        diff = self.approvals()["overlay_diff"]
        self.assertIn('+  - name: "approved-1"', diff)
        # The next request is allowed by the new rule: no hold.
        r = self.curl("http://127.0.0.1:%d/echo/after-%s" % (self.origin.port, m))
        self.assertEqual(r.status, 200, r)

    def test_flood_is_bounded(self):
        # max_held_per_agent 4: the fifth and later are refused at once, never held.
        futures = [self.held_get("/echo/flood-%d-%s" % (i, marker()), host="127.0.0.2")
                   for i in range(4)]
        deadline = time.monotonic() + env.t(10)
        while len(self.approvals()["pending"]) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(self.approvals()["pending"]), 4, self.approvals())
        for _ in range(6):
            r = self.curl("http://127.0.0.2:%d/echo/over" % self.origin.port)
            self.assertEqual(r.status, 429, r)
            self.assertEqual(r.header("X-Airlock-Reason"), "approval_limit")
        for p in self.approvals()["pending"]:
            self.decide(p["id"], "refuse")
        for fut in futures:
            self.assertEqual(fut.result(env.t(20))[1], "approval_refused")


class AccessRequestTimeoutTest(ApprovalCase):
    """An agent's access request that nobody decides in time: polled as timed_out, and
    recorded once, as a held request's timeout is."""

    @classmethod
    def policy(cls):
        p = super().policy()
        p["approvals"].update({"access_requests": True, "timeout": "1s"})
        return p

    def test_timed_out_access_request_is_audited_once(self):
        host = "access-%s.example" % marker()
        r = self.access_request({"host": host, "port": 443, "reason": "a test"})
        self.assertEqual(r.status, 202, r)
        rid = json.loads(r.body)["id"]
        self.assertIsNotNone(self.proxy.wait_audit(type="approval", action="access_requested",
                                                   approval_id=rid))
        deadline = time.monotonic() + env.t(10)
        outcome = "pending"
        while outcome == "pending" and time.monotonic() < deadline:
            outcome = json.loads(self.access_request(query="?id=%d" % rid).body)["outcome"]
            time.sleep(0.1)
        self.assertEqual(outcome, "timed_out")
        rec = self.proxy.wait_audit(type="approval", action="timed_out", approval_id=rid)
        self.assertIsNotNone(rec, "the access request's timeout left no record")
        self.assertEqual((rec["host"], rec["outcome"]), (host, "approval_timeout"))
        self.approvals()  # looks again: no second record
        self.access_request(query="?id=%d" % rid)
        self.assertEqual(len([x for x in self.proxy.audit() if x.get("approval_id") == rid and
                              x.get("action") == "timed_out"]), 1)


    def test_recorded_at_its_deadline_without_anyone_looking(self):
        # Nobody polls or lists the approvals: the proxy records the timeout on its own.
        host = "unlooked-%s.example" % marker()
        r = self.access_request({"host": host, "port": 443})
        self.assertEqual(r.status, 202, r)
        rid = json.loads(r.body)["id"]
        rec = self.proxy.wait_audit(type="approval", action="timed_out", approval_id=rid,
                                    timeout=env.t(6))
        self.assertIsNotNone(rec, "no record at the deadline")
        self.assertEqual(rec["host"], host)


class AccessRequestApprovedTest(ApprovalCase):
    """Approving an access request grants its host: even under the default scope `once` the
    answer, the audit record and GET /approvals say it is a grant of the host (any method and
    path) for the duration, not one request."""

    @classmethod
    def policy(cls):
        p = super().policy()
        p["approvals"].update({"access_requests": True})
        return p

    def test_once_is_answered_and_recorded_as_the_grant_it_is(self):
        host = "granted-%s.example" % marker()
        r = self.access_request({"host": host, "port": 8443, "reason": "a test"})
        self.assertEqual(r.status, 202, r)
        rid = json.loads(r.body)["id"]
        answer = self.decide(rid).text()  # no body: the default scope, once
        self.assertIn("approved (agent_host): a grant for agent default to %s:8443, any "
                      "method, any path, for 3600 s" % host, answer)
        rec = self.proxy.wait_audit(type="operator", action="approve", approval_id=rid)
        self.assertEqual((rec["scope"], rec["duration_s"], rec["outcome"]),
                         ("agent_host", 3600, "ok"), rec)
        grants = [g for g in self.approvals()["grants"] if g["host"] == host]
        self.assertEqual(len(grants), 1, grants)
        self.assertEqual((grants[0]["port"], grants[0]["method"], grants[0]["path_prefix"]),
                         (8443, "", ""), grants)
        self.assertAlmostEqual(grants[0]["expires"], time.time() + 3600, delta=env.t(60))


class CrossSiteTest(ApprovalCase):
    """Every mutating admin action is refused when a browser on another site sends it (CSRF);
    the same action from the admin port's own origin, or from curl (no such headers), is not."""

    ACTIONS = ("/reload", "/agents/default/stop", "/agents/default/resume",
               "/approvals/1/approve", "/approvals/1/refuse")

    def post(self, path, headers):
        host, _, port = self.proxy.admin.rpartition(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=env.t(10))
        try:
            conn.request("POST", path, body=b"", headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def test_cross_site_refused(self):
        for path in self.ACTIONS:
            for headers in ({"Origin": "http://evil.example"},
                            {"Origin": "null"},
                            {"Sec-Fetch-Site": "cross-site"},
                            {"Sec-Fetch-Site": "same-site"},
                            {"Origin": "https://%s" % self.proxy.admin}):
                with self.subTest(path=path, headers=headers):
                    status, body = self.post(path, headers)
                    self.assertEqual(status, 403, body)
                    self.assertIn(b"cross-site", body)
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        self.assertFalse(any(a["stopped"] for a in agents), agents)
        # The console's own origin, and a client that sends neither header, may act.
        status, _ = self.post("/agents/default/stop",
                              {"Origin": "http://%s" % self.proxy.admin,
                               "Sec-Fetch-Site": "same-origin"})
        self.assertEqual(status, 200)
        status, _ = self.post("/agents/default/resume", {})
        self.assertEqual(status, 200)


if __name__ == "__main__":
    unittest.main()
