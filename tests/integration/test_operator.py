"""The admin port's operators (docs/operations.md "Operators and the token"): with `operators:`
configured, every mutating action (reload, stop, resume, approve, refuse) needs
`Authorization: Bearer TOKEN`; a missing, wrong or non-Bearer credential is 401 and audited
without the token. A cross-site request is refused even with the token. Each action is one
audit record saying who did what to which target (scope, duration, outcome), and the held
request's own events are audited too. GET /events streams the audit records live."""

import concurrent.futures
import hashlib
import http.client
import json
import socket
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule

TOKEN = "op-token-" + "7f3a9c2e1b"
ACTIONS = ("/reload", "/agents/default/stop", "/agents/default/resume",
           "/approvals/1/approve", "/approvals/1/refuse")


class OperatorCase(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(cls.origin.port, name="asked", ask={"timeout": "30s"}),
                         origin_rule(cls.origin.port, name="open", hosts=["open.test"])],
                        agents={"default": {
                            "rules": ["asked", "open"],
                            "rate": {"requests_per_minute": 600, "burst": 50, "concurrent": 8},
                            "breaker": {"max_failures": 50, "window": "60s",
                                        "cooldown": "30s"}}})
        p["listen"]["admin"] = "127.0.0.1:0"
        p["operators"] = {"alice": {"token_sha256": hashlib.sha256(TOKEN.encode()).hexdigest()}}
        return p

    def post(self, path, headers=None, body=b""):
        host, _, port = self.proxy.admin.rpartition(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=env.t(10))
        try:
            conn.request("POST", path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.getheader("WWW-Authenticate"), r.read()
        finally:
            conn.close()

    def wait_record(self, **match):
        rec = self.proxy.wait_audit(timeout=env.t(10), **match)
        self.assertIsNotNone(rec, "no audit record %r; last:\n%s" % (
            match, "\n".join(json.dumps(r) for r in self.proxy.audit()[-6:])))
        return rec


class OperatorTokenTest(OperatorCase):
    def test_every_action_refused_without_the_token(self):
        for path in ACTIONS:
            for headers in ({}, {"Authorization": "Bearer wrong-token"},
                            {"Authorization": "Basic " + "YWxpY2U6b3AtdG9rZW4="},
                            {"Authorization": TOKEN}):
                with self.subTest(path=path, headers=headers):
                    status, challenge, body = self.post(path, headers)
                    self.assertEqual(status, 401, body)
                    self.assertEqual(challenge, 'Bearer realm="airlock-admin"')
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        self.assertFalse(any(a["stopped"] for a in agents), agents)
        rec = self.wait_record(type="operator", action="stop", outcome="unauthorized")
        self.assertEqual(rec["by"], "")
        self.assertEqual(rec["path"], "/agents/default/stop")
        # Neither the audit trail nor the log carries a token that was sent.
        self.wait_record(type="operator", action="refuse", outcome="unauthorized")
        with open(self.proxy.audit_path) as f:
            audit_text = f.read()
        for secret in ("wrong-token", TOKEN, "YWxpY2U6b3AtdG9rZW4="):
            self.assertNotIn(secret, audit_text)
            self.assertNotIn(secret, self.proxy.stderr())
        self.assertIn("refused (a credential)", self.proxy.stderr())

    def test_cross_site_refused_even_with_the_token(self):
        auth = {"Authorization": "Bearer " + TOKEN}
        for path in ACTIONS:
            for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                            {"Sec-Fetch-Site": "same-site"}):
                with self.subTest(path=path, headers=headers):
                    status, _, body = self.post(path, dict(headers, **auth))
                    self.assertEqual(status, 403, body)
                    self.assertIn(b"cross-site", body)
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        self.assertFalse(any(a["stopped"] for a in agents), agents)

    def test_actions_with_the_token_are_audited(self):
        auth = {"Authorization": "Bearer " + TOKEN}
        mark = self.proxy.audit_mark()
        status, _, body = self.post("/agents/default/stop", auth)
        self.assertEqual(status, 200, body)
        rec = self.wait_record(after=mark, type="operator", action="stop")
        self.assertEqual((rec["by"], rec["agent"], rec["outcome"]), ("alice", "default", "ok"))
        self.assertTrue(rec["client"].startswith("127.0.0.1:"), rec)
        status, _, body = self.post("/agents/default/resume", auth)
        self.assertEqual(status, 200, body)
        self.wait_record(after=mark, type="operator", action="resume", by="alice", outcome="ok")
        status, _, body = self.post("/agents/nobody/stop", auth)
        self.assertEqual(status, 404, body)
        self.wait_record(after=mark, type="operator", action="stop", agent="nobody",
                         outcome="not_found")
        status, _, body = self.post("/reload", auth)
        self.assertEqual(status, 200, body)
        self.wait_record(after=mark, type="operator", action="reload", by="alice", outcome="ok")
        status, _, body = self.post("/approvals/999/approve", auth)
        self.assertEqual(status, 404, body)
        rec = self.wait_record(after=mark, type="operator", action="approve", approval_id=999)
        self.assertEqual(rec["outcome"], "not_found")

    def test_held_request_approved_with_scope_is_one_record(self):
        m = marker()
        path = "/echo/op-%s" % m
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            f = pool.submit(self.curl, self.url(path), max_time=env.t(40))
            held = self.wait_record(type="approval", action="held", path=path)
            self.assertEqual((held["agent"], held["host"], held["outcome"], held["detail"]),
                             ("default", "origin.test", "pending", "asked"))
            pid = held["approval_id"]
            status, _, body = self.post(
                "/approvals/%d/approve" % pid, {"Authorization": "Bearer " + TOKEN},
                json.dumps({"scope": "agent_host", "duration": "10m"}).encode())
            self.assertEqual(status, 200, body)
            self.assertEqual(f.result(env.t(30)).status, 200)
        rec = self.wait_record(type="operator", action="approve", approval_id=pid)
        self.assertEqual((rec["by"], rec["scope"], rec["duration_s"], rec["outcome"]),
                         ("alice", "agent_host", 600, "ok"))
        self.assertEqual((rec["agent"], rec["host"], rec["method"], rec["path"]),
                         ("default", "origin.test", "GET", path))
        grants = admin_call(self.proxy.admin, "GET", "/approvals").json()["grants"]
        self.assertEqual([g["by"] for g in grants], ["alice"])
        # One record for the decision: the registry's own "decided" is not written again.
        self.assertEqual([r for r in self.proxy.audit() if r.get("approval_id") == pid
                          and r.get("action") not in ("held", "approve")], [])


class AgentsTest(OperatorCase):
    def test_agents_carry_their_limits(self):
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        a = [a for a in agents if a["name"] == "default"][0]
        self.assertEqual((a["limits"]["requests"], a["limits"]["per_seconds"],
                          a["limits"]["burst"], a["limits"]["concurrent"],
                          a["limits"]["requests_per_hour"]), (600, 60, 50, 8, 0))
        self.assertEqual(a["breaker"], {"max_failures": 50, "window_seconds": 60,
                                        "cooldown_seconds": 30})
        rules = admin_call(self.proxy.admin, "GET", "/rules").json()["rules"]
        self.assertEqual([(r["name"], r["in_policy"]) for r in rules if r["in_policy"]],
                         [("asked", True), ("open", True)])


class AbandonedHoldTest(OperatorCase):
    def test_client_gone_drops_the_hold(self):
        m = marker()
        path = "/echo/gone-%s" % m
        c = self.raw(timeout=env.t(10))
        c.send(self.request("GET", self.url(path)))
        held = self.wait_record(type="approval", action="held", path=path)
        c.close()  # the agent gives up
        rec = self.wait_record(type="approval", action="client_gone", path=path)
        self.assertEqual((rec["approval_id"], rec["outcome"]),
                         (held["approval_id"], "approval_abandoned"))
        pending = admin_call(self.proxy.admin, "GET", "/approvals").json()["pending"]
        self.assertEqual([p for p in pending if p.get("path") == path], [])
        self.wait_record(path=path, reason="approval_abandoned")
        self.assertEqual(self.origin.seen(m), [])
        # Deciding it now finds nothing to decide.
        status, _, _ = self.post("/approvals/%d/approve" % held["approval_id"],
                                 {"Authorization": "Bearer " + TOKEN})
        self.assertEqual(status, 404)


class EventStreamTest(OperatorCase):
    def test_decisions_arrive_live(self):
        host, _, port = self.proxy.admin.rpartition(":")
        s = socket.create_connection((host, int(port)), timeout=env.t(10))
        self.addCleanup(s.close)
        s.sendall(("GET /events HTTP/1.1\r\nHost: %s\r\n\r\n" % self.proxy.admin).encode())
        seen = b""
        deadline = time.monotonic() + env.t(10)
        while b"\r\n\r\n" not in seen and time.monotonic() < deadline:
            seen += s.recv(4096)
        head = seen.split(b"\r\n\r\n")[0].decode()
        self.assertTrue(head.startswith("HTTP/1.1 200"), head)
        self.assertIn("text/event-stream", head)
        m = marker()
        # The stream subscribes once its head is written: retry the request until it shows.
        records = []
        deadline = time.monotonic() + env.t(20)
        while not records and time.monotonic() < deadline:
            r = self.curl(self.url("/echo/live-%s" % m, host="open.test"))
            self.assertEqual(r.status, 200)
            end = time.monotonic() + 1
            while time.monotonic() < end and b"live-" + m.encode() not in seen:
                try:
                    seen += s.recv(65536)
                except socket.timeout:
                    break
            for line in seen.decode("utf-8", "replace").split("\n"):
                if line.startswith("data: ") and ("live-" + m) in line:
                    records.append(json.loads(line[6:]))
        self.assertTrue(records, seen[-2000:])
        self.assertEqual((records[0]["decision"], records[0]["rule"]), ("allow", "open"))


if __name__ == "__main__":
    unittest.main()
