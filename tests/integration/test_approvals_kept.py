"""What a hold must keep (docs/operations.md "Approvals"): a secret DLP finds in a held
request's target, and an operator's own edits of the overlay file.

- DLP's checks of the head run before the hold: a request DLP blocks is refused at once, never
  shown to an operator; one it only reports is held, and GET /approvals, the hold's audit
  record and the operator's decision record show the path as the exchange record does
  ([REDACTED:dlp] for the segment), never the key.
- A request no rule allows (approvals.ask_unmatched) is read likewise by the policy-wide `dlp`,
  and so is an agent's access request (its host and reason are shown to the operator): one DLP
  finds a secret in is refused, whatever the action.
- A permanent approval adds its rule to the overlay and keeps the rest of the file byte for
  byte: a rule the operator narrowed stays narrowed; a file it cannot add to is left as it is
  and the approval answers 409."""

import json
import os
import unittest

from harness import env
from harness.base import marker
from harness.ops_admin import admin_call
from harness.proxy import origin_rule
from test_approvals import OVERLAY, ApprovalCase

# AWS's documented example key: DLP's aws-access-key class finds it.
KEY = "AKIAIOSFODNN7EXAMPLE"


class HeldSecretTest(ApprovalCase):
    @classmethod
    def policy(cls):
        p = super().policy()
        p["rules"] += [
            origin_rule(cls.origin.port, name="dlp-blocked", hosts=["blocked.test"],
                        ask={"timeout": "30s"}, dlp={"action": "block"}),
            origin_rule(cls.origin.port, name="dlp-reported", hosts=["reported.test"],
                        ask={"timeout": "30s"}, dlp={"action": "report"}),
        ]
        p["agents"]["default"]["rules"] += ["dlp-blocked", "dlp-reported"]
        return p

    def test_what_dlp_blocks_is_never_held(self):
        m = marker()
        f = self.held_get("/echo/%s/%s" % (KEY, m), host="blocked.test")
        self.assertEqual(f.result(env.t(10)), (403, "dlp_blocked"))
        self.assertEqual(self.origin.seen(m), [])
        self.assert_audit(reason="dlp_blocked", path="/echo/[REDACTED:dlp]/%s" % m)
        self.assertFalse(any(rec.get("type") == "approval" for rec in self.proxy.audit()
                             if m in json.dumps(rec)))

    def test_a_held_secret_is_shown_redacted(self):
        m = marker()
        shown = "/echo/[REDACTED:dlp]/%s" % m
        f = self.held_get("/echo/%s/%s" % (KEY, m), host="reported.test")
        p = self.wait_pending(path=shown)
        self.assertNotIn(KEY, json.dumps(self.approvals()))
        self.decide(p["id"], scope="once")
        self.assertEqual(f.result(env.t(20))[0], 200)
        self.assert_audit(path=shown, decision="allow")
        records = [rec for rec in self.proxy.audit() if m in json.dumps(rec)]
        kinds = {(rec.get("type"), rec.get("action")) for rec in records}
        self.assertTrue({("approval", "held"), ("operator", "approve")} <= kinds, records)
        for rec in records:
            self.assertNotIn(KEY, json.dumps(rec))
            self.assertEqual(rec.get("path"), shown, rec)


class HeldUnmatchedSecretTest(ApprovalCase):
    """A request no rule allows (approvals.ask_unmatched) is read by the policy-wide `dlp`: no
    rule's own applies, and its target is shown to the operator and recorded."""

    @classmethod
    def policy(cls):
        p = super().policy()
        p["dlp"] = {"action": "block"}
        p["approvals"]["access_requests"] = True
        return p

    def test_what_dlp_blocks_is_never_held(self):
        m = marker()
        f = self.held_get("/echo/%s/%s" % (KEY, m), host="127.0.0.1")
        self.assertEqual(f.result(env.t(10)), (403, "dlp_blocked"))
        self.assertEqual(self.origin.seen(m), [])
        self.assert_audit(reason="dlp_blocked", path="/echo/[REDACTED:dlp]/%s" % m)
        records = [rec for rec in self.proxy.audit() if m in json.dumps(rec)]
        self.assertFalse(any(rec.get("type") == "approval" for rec in records), records)
        self.assertNotIn(KEY, json.dumps(records))

    def test_an_access_request_carrying_a_secret_is_refused(self):
        for body in ({"host": "api.example", "reason": "my key is %s" % KEY},
                     {"host": "%s.example" % KEY.lower(), "reason": KEY}):
            r = self.access_request(body)
            self.assertEqual((r.status, r.header("X-Airlock-Reason")), (403, "dlp_blocked"), r)
        self.assertEqual(self.approvals()["pending"], [])
        self.assertNotIn(KEY, json.dumps(self.approvals()))
        self.assertNotIn(KEY.lower(), json.dumps(self.approvals()))

    def test_a_clean_request_is_still_held(self):
        m = marker()
        f = self.held_get("/echo/clean-%s" % m, host="127.0.0.1")
        p = self.wait_pending(path="/echo/clean-%s" % m, host="127.0.0.1")
        self.decide(p["id"], scope="once")
        self.assertEqual(f.result(env.t(20))[0], 200)
        self.assertEqual(len(self.origin.seen(m)), 1)


class HeldUnmatchedReportedSecretTest(ApprovalCase):
    @classmethod
    def policy(cls):
        p = super().policy()
        p["dlp"] = {"action": "report"}
        p["approvals"]["access_requests"] = True
        return p

    def test_a_held_secret_is_shown_redacted(self):
        m = marker()
        shown = "/echo/[REDACTED:dlp]/%s" % m
        f = self.held_get("/echo/%s/%s" % (KEY, m), host="127.0.0.1")
        p = self.wait_pending(path=shown, host="127.0.0.1")
        self.assertEqual(p["rule"], "")
        self.assertNotIn(KEY, json.dumps(self.approvals()))
        self.decide(p["id"], "refuse")
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))
        self.assert_audit(reason="approval_refused", path=shown)
        records = [rec for rec in self.proxy.audit() if m in json.dumps(rec)]
        self.assertNotIn(KEY, json.dumps(records))

    def test_an_access_request_carrying_a_secret_is_refused(self):
        # Reported, not blocked, elsewhere: but the reason would be shown as the agent wrote it.
        m = marker()
        r = self.access_request({"host": "api-%s.example" % m, "reason": "key %s" % KEY})
        self.assertEqual((r.status, r.header("X-Airlock-Reason")), (403, "dlp_blocked"), r)
        self.assertEqual(self.approvals()["pending"], [])
        rec = self.proxy.wait_audit(reason="dlp_blocked", path="/request-access")
        self.assertEqual(rec["dlp"], [{"class": "aws-access-key", "location": "body",
                                       "action": "block"}])
        # Without it, the same request is asked.
        r = self.access_request({"host": "api-%s.example" % m, "reason": "a clean one"})
        self.assertEqual(r.status, 202, r)
        self.wait_pending(host="api-%s.example" % m, reason="a clean one")


# The operator narrowed approved-1 to /echo/safe/ (and left a comment).
NARROWED = """# Permanent approvals, written by airlock (approvals.overlay)
rules:
  - name: "approved-1"
    hosts: ["127.0.0.1"]
    ports: [%d]
    paths: ['/echo/safe/.*']   # narrowed by hand
agents:
  "default":
    rules: ["approved-1"]
"""


class OverlayEditsKeptTest(ApprovalCase):
    def overlay(self):
        return os.path.join(self.proxy.dir, OVERLAY)

    def write_overlay(self, text, reload=True):
        with open(self.overlay(), "w") as fh:
            fh.write(text)
        if reload:
            r = admin_call(self.proxy.admin, "POST", "/reload")
            self.assertEqual(r.status, 200, r)

    def read_overlay(self):
        with open(self.overlay()) as fh:
            return fh.read()

    def approve_permanent(self, host, expect=200):
        """A request to `host` no rule allows, held and approved for good."""
        m = marker()
        f = self.held_get("/echo/p-%s" % m, host=host)
        p = self.wait_pending(path="/echo/p-%s" % m, host=host)
        r = self.decide(p["id"], expect=expect, scope="permanent")
        if expect != 200:  # not applied: the request is still held
            self.decide(p["id"], "refuse")
            self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))
        else:  # let go (only 127.0.0.1 is an allowed destination: others end refused there)
            self.assertNotIn("approval", f.result(env.t(20))[1] or "")
        return r

    def assert_held_then_refuse(self, host, path):
        m = marker()
        f = self.held_get("%s-%s" % (path, m), host=host)
        p = self.wait_pending(path="%s-%s" % (path, m), host=host)
        self.decide(p["id"], "refuse")
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))
        self.assertEqual(self.origin.seen(m), [])

    def test_a_narrowed_rule_stays_narrowed(self):
        text = NARROWED % self.origin.port
        self.write_overlay(text)
        r = self.curl("http://127.0.0.1:%d/echo/safe/x" % self.origin.port)
        self.assertEqual(r.status, 200, r.header("X-Airlock-Reason"))
        self.assert_held_then_refuse("127.0.0.1", "/echo/unsafe")
        # A permanent approval of an unrelated request.
        r = self.approve_permanent("127.0.0.3")
        self.assertIn("approved-2", r.text())
        written = self.read_overlay()
        self.assertEqual(written[:text.index("agents:")], text[:text.index("agents:")])
        self.assertIn('    rules: ["approved-1", "approved-2"]\n', written)
        # Still narrowed: outside /echo/safe/ the request is held, not let through.
        self.assert_held_then_refuse("127.0.0.1", "/echo/unsafe")
        self.assertEqual(self.curl("http://127.0.0.1:%d/echo/safe/y" % self.origin.port).status,
                         200)

    def test_a_file_it_cannot_add_to_is_left_as_it_is(self):
        self.write_overlay("rules: []\nagents: {}\n")
        self.addCleanup(self.write_overlay, "rules: []\nagents: {}\n")
        # Edited since it loaded, and no longer YAML: the approval cannot keep it.
        broken = "rules: [\n  {name: approved-9, hosts: [127.0.0.4], ports: [1]}\n"
        self.write_overlay(broken, reload=False)
        before = os.stat(self.overlay()).st_mtime_ns
        r = self.approve_permanent("127.0.0.5", expect=409)
        self.assertIn("does not parse", r.text())
        self.assertEqual(self.read_overlay(), broken)
        self.assertEqual(os.stat(self.overlay()).st_mtime_ns, before)


if __name__ == "__main__":
    unittest.main()
