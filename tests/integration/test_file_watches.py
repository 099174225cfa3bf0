"""Operations (issue 17, item 6): the files a policy names are watched like the policy itself,
and a reload says when it cannot apply a change.

- a secret file rotated (rewritten in place, or replaced by rename) is picked up without SIGHUP:
  the next request carries the new value;
- a `listen.*` change on reload is reported: log line, the POST /reload answer, GET /policy
  (`restart_needed`) and `airlock_restart_required` 1; the proxy keeps serving where it was
  started."""

import json
import os
import tempfile
import time
import unittest

import yaml

from harness import env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule
from harness.tls_support import fetch_metrics

SECRET_V1 = "airlock-itest-rotated-secret-v1-7f3a"
SECRET_V2 = "airlock-itest-rotated-secret-v2-c91e"
SECRET_V3 = "airlock-itest-rotated-secret-v3-02bd"


class FileWatchTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.secret_dir = tempfile.TemporaryDirectory(prefix="airlock-itest-watch-")
        cls.secret_file = os.path.join(cls.secret_dir.name, "token")
        with open(cls.secret_file, "w") as f:
            f.write(SECRET_V1 + "\n")

    @classmethod
    def extra_teardown(cls):
        cls.secret_dir.cleanup()

    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(
            cls.origin.port, inject={"headers": {"X-Token": "${secrets.token}"}})],
            secrets={"token": {"file": cls.secret_file, "hosts": ["origin.test"]}})
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def write_policy(self, policy):
        policy.setdefault("audit", {"path": self.proxy.audit_path})
        with open(self.proxy.config_path, "w") as f:
            f.write(yaml.safe_dump(policy, sort_keys=False))

    def token_seen(self):
        m = marker()
        r = self.curl(self.url("/echo/%s" % m))
        self.assertEqual(r.status, 200, r)
        # What the origin received (the echo the client gets back has the secret redacted).
        seen = self.origin.seen(m)
        self.assertEqual(len(seen), 1, seen)
        return {k.lower(): v for k, v in seen[0]["headers"]}.get("x-token")

    def wait_token(self, want):
        deadline = time.monotonic() + env.t(10)
        while True:
            got = self.token_seen()
            if got == want or time.monotonic() >= deadline:
                return got
            time.sleep(0.1)

    def test_secret_file_rotation_picked_up_without_sighup(self):
        self.assertEqual(self.token_seen(), SECRET_V1)
        # Rewritten in place (same inode).
        with open(self.secret_file, "r+") as f:
            f.truncate(0)
            f.write(SECRET_V2 + "\n")
        self.assertEqual(self.wait_token(SECRET_V2), SECRET_V2)
        # Replaced by rename (how most tools and Kubernetes write).
        tmp = self.secret_file + ".new"
        with open(tmp, "w") as f:
            f.write(SECRET_V3 + "\n")
        os.rename(tmp, self.secret_file)
        self.assertEqual(self.wait_token(SECRET_V3), SECRET_V3)

    def test_listen_change_reported_as_restart_needed(self):
        policy = self.policy()
        policy["listen"]["relay"] = "127.0.0.1:1"  # never bound by this reload
        self.write_policy(policy)
        answer = admin_call(self.proxy.admin, "POST", "/reload")
        self.assertEqual(answer.status, 200, answer)
        self.assertIn("restart needed", answer.body.decode(), answer)
        self.assertIn("listen.relay", answer.body.decode(), answer)
        status = json.loads(admin_call(self.proxy.admin, "GET", "/policy").body)
        self.assertIn("listen.relay", status["restart_needed"] or "", status)
        self.assertEqual(fetch_metrics(self.proxy.admin).get("airlock_restart_required"), 1)
        self.assertIn("restart needed", self.proxy.stderr())
        # Still serving where it was started; back to the started addresses, no restart needed.
        self.assertIsNotNone(self.token_seen())
        self.write_policy(self.policy())
        answer = admin_call(self.proxy.admin, "POST", "/reload")
        self.assertEqual(answer.status, 200, answer)
        status = json.loads(admin_call(self.proxy.admin, "GET", "/policy").body)
        self.assertIsNone(status["restart_needed"], status)
        self.assertEqual(fetch_metrics(self.proxy.admin).get("airlock_restart_required"), 0)


if __name__ == "__main__":
    unittest.main()
