#!/usr/bin/python3
"""Agents may ask first (issue 20): from inside `airlock run`, a confined agent posts an access
request to http://airlock.internal/request-access (a name only the proxy answers: the jail has
no resolver for it and the proxy never forwards it), the operator sees it in GET /approvals
with the agent's reason as raw text, approves it on the admin port, and the agent's poll says
approved; the host is then reachable for that agent, and only for that one.

Usage: /usr/bin/python3 test_access_requests.py /path/to/airlock [unittest args...]
Like test_launcher.py (whose helpers it uses), every test runs as the caller and, when that is
root, as the unprivileged user airlock-test.
"""

import grp
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_launcher as base  # noqa: E402
from harness.ops_admin import admin_call  # noqa: E402
from harness.proxy import Airlock  # noqa: E402

# Inside the jail: ask, poll until decided (bounded), then use the host. Prints lines the test
# reads: "asked <status> <id>", "outcome <outcome>", "get <status>".
AGENT = r"""
import json, sys, time, urllib.request, urllib.error
host, port, reason = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def call(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
status, body = call("GET", "http://%s:%d/before" % (host, port))
print("before", status, flush=True)
status, body = call("POST", "http://airlock.internal/request-access",
                    json.dumps({"host": host, "port": port, "reason": reason}).encode())
answer = json.loads(body)
print("asked", status, answer.get("id"), flush=True)
outcome = "pending"
for _ in range(600):
    status, body = call("GET", answer["poll"])
    outcome = json.loads(body).get("outcome")
    if outcome != "pending":
        break
    time.sleep(0.05)
print("outcome", outcome, flush=True)
status, body = call("GET", "http://%s:%d/after" % (host, port))
print("get", status, flush=True)
"""

REASON = '<img src=x onerror="alert(1)"> need the API for the build & tests'


class AccessRequestBase(base.LauncherTestBase):
    for _name in [n for n in vars(base.LauncherTestBase) if n.startswith("test_")]:
        locals()[_name] = None
    del _name

    def relay_socket(self):
        sock_dir = tempfile.mkdtemp(prefix="airlock-itest-ask-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, sock_dir, True)
        os.chmod(sock_dir, 0o755)
        return os.path.join(sock_dir, "relay.sock")

    def start_admin_proxy(self, policy):
        proxy = Airlock(policy, name="access")
        try:
            proxy.start()
        except BaseException:
            proxy.cleanup()
            raise

        def stop():
            try:
                rc = proxy.stop()
                reports = proxy.sanitizer_reports()
                tail = proxy.stderr()[-3000:]
            finally:
                proxy.cleanup()
            self.assertEqual(rc, 0, tail)
            self.assertEqual(reports, [], tail)
        self.addCleanup(stop)
        return proxy

    def test_agent_asks_and_is_granted(self):
        oport, _ = self.start_origins()
        audit = os.path.join(self.tmp, "audit.jsonl")
        sock = self.relay_socket()
        group = ""
        if self.user is not None:
            group = f", relay_group: {grp.getgrgid(self.user.pw_gid).gr_name}"
        policy = ("listen: {proxy: '127.0.0.1:0', admin: '127.0.0.1:0', relay: '" + sock + "'"
                  + group + "}\n"
                  f"audit: {{path: '{audit}'}}\n"
                  "network: {allow_cidrs: [127.0.0.1/32]}\n"
                  "approvals: {access_requests: true, timeout: 60s}\n"
                  "agents:\n  coder: {rules: []}\n  other: {rules: []}\n"
                  "rules: []\n")
        proxy = self.start_admin_proxy(policy)
        path = os.path.join(self.work, "agent.py")
        with open(path, "w") as f:
            f.write(AGENT)
        os.chmod(path, 0o644)
        result = {}

        def run_agent():
            result["r"] = self.jail(
                f"/usr/bin/python3 agent.py 127.0.0.1 {oport} '{REASON}'",
                "--proxy", f"unix:{sock}", "--proxy-protocol", "--agent", "coder",
                timeout=120, rc=None)
        t = threading.Thread(target=run_agent)
        t.start()
        try:
            pending = None
            deadline = time.monotonic() + 60
            while pending is None and time.monotonic() < deadline and t.is_alive():
                for p in admin_call(proxy.admin, "GET", "/approvals").json()["pending"]:
                    if p["kind"] == "access_request":
                        pending = p
                time.sleep(0.05)
            self.assertIsNotNone(pending, "no access request showed up")
            self.assertEqual((pending["agent"], pending["host"], pending["port"]),
                             ("coder", "127.0.0.1", oport))
            self.assertEqual(pending["reason"], REASON)  # raw: shown escaped, stored as sent
            r = admin_call(proxy.admin, "POST", "/approvals/%d/approve" % pending["id"],
                           body=json.dumps({"scope": "agent_host", "duration": "10m"}))
            self.assertEqual(r.status, 200, r)
        finally:
            t.join(150)
        r = result["r"]
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("before 403", r.stdout, r.stderr[-2000:])
        self.assertIn("asked 202 %d" % pending["id"], r.stdout)
        self.assertIn("outcome approved", r.stdout)
        self.assertIn("get 200", r.stdout)
        # The grant is this agent's only.
        grants = admin_call(proxy.admin, "GET", "/approvals").json()["grants"]
        self.assertEqual([(g["agent"], g["host"], g["port"]) for g in grants],
                         [("coder", "127.0.0.1", oport)])
        other = self.jail(f"curl -sS --max-time 10 -o /dev/null -w 'other %{{http_code}}\\n'"
                          f" http://127.0.0.1:{oport}/other",
                          "--proxy", f"unix:{sock}", "--proxy-protocol", "--agent", "other")
        self.assertIn("other 403", other.stdout)
        # The reserved name was answered, never forwarded: its records say so.
        recs = self.audit_records(audit, host="airlock.internal", at_least=2)
        self.assertTrue(recs)
        self.assertTrue(all(rec["reason"] == "proxy_endpoint" and not rec.get("upstream")
                            for rec in recs), recs)


class AsCaller(AccessRequestBase, unittest.TestCase):
    setUpClass = classmethod(base.AsCaller.setUpClass.__func__)


class AsUnprivilegedUser(AccessRequestBase, unittest.TestCase):
    setUpClass = classmethod(base.AsUnprivilegedUser.setUpClass.__func__)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        base.AIRLOCK = os.path.abspath(sys.argv.pop(1))
        os.environ["AIRLOCK_BIN"] = base.AIRLOCK
    loader, here = unittest.defaultTestLoader, sys.modules[__name__]
    suite = (loader.loadTestsFromNames(sys.argv[1:], here) if sys.argv[1:]
             else loader.loadTestsFromModule(here))
    sys.exit(base.runner.run_suite(suite))
