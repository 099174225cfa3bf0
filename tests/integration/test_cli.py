"""`airlock check` and `airlock explain` on real policy files."""

import os
import re
import tempfile
import unittest

import yaml

from harness.proxy import make_policy, origin_rule, run_airlock
from harness.tls_support import AirlockCA

GOOD = make_policy([origin_rule(8080)], audit={"path": "off"})

BAD = """\
mode: enforce
listen: {proxy: '127.0.0.1:0', admin: 'off'}
audit: {path: 'off'}
limits: {body_bytes: 10 MiBs}
agents:
  default: {rules: [origin]}
rules:
  - name: origin
    hosts: [origin.test]
    ports: [70000]
    paths: ['^/(unclosed$']
"""


# Secrets from a variable and a file that do not exist here (as in a CI pipeline), and a CA key
# that is not there either.
WITH_SECRETS = """\
mode: enforce
listen: {proxy: '127.0.0.1:0', admin: 'off'}
audit: {path: 'off'}
secrets:
  github: {env: AIRLOCK_ITEST_UNSET_VARIABLE_9f3c, hosts: [api.github.com]}
  openai: {file: /nonexistent/airlock-itest/openai-key}
agents:
  default: {rules: [github]}
rules:
  - name: github
    hosts: [api.github.com]
    ports: [443, 8000-8999]
    schemes: [https]
    inspect: true
    inject:
      headers: {Authorization: 'Bearer ${secrets.github}'}
tls: {ca_cert: CA_CERT, ca_key: /nonexistent/airlock-itest/ca.key}
"""


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-cli-")
        cls.good = os.path.join(cls.tmp.name, "good.yaml")
        with open(cls.good, "w") as f:
            yaml.safe_dump(GOOD, f, sort_keys=False)
        cls.bad = os.path.join(cls.tmp.name, "bad.yaml")
        with open(cls.bad, "w") as f:
            f.write(BAD)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_check_ok(self):
        out = run_airlock(["check", "--config", self.good])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("ok", out.stdout)
        self.assertEqual(out.stderr.strip(), "")

    def test_check_reports_every_error_with_position(self):
        out = run_airlock(["check", "--config", self.bad])
        self.assertEqual(out.returncode, 1, out)
        err = out.stderr
        path = re.escape(self.bad)
        self.assertRegex(err, r"(?m)^%s:4:\d+: limits\.body_bytes: " % path)
        self.assertRegex(err, r"(?m)^%s:10:\d+: rules\[0\]\.ports\[0\]: " % path)
        self.assertRegex(err, r"(?m)^%s:11:\d+: rules\[0\]\.paths\[0\]: " % path)

    def _with_secrets(self, text=None):
        ca_cert = os.path.join(self.tmp.name, "ca.crt")
        with open(ca_cert, "w") as f:
            f.write("not read by check beyond being readable\n")
        path = os.path.join(self.tmp.name, "with-secrets.yaml")
        with open(path, "w") as f:
            f.write((text or WITH_SECRETS).replace("CA_CERT", ca_cert))
        return path

    def test_check_needs_secrets_by_default(self):
        out = run_airlock(["check", "--config", self._with_secrets()])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("secrets.github", out.stderr)
        self.assertIn("secrets.openai", out.stderr)
        self.assertIn("tls.ca_key", out.stderr)

    def test_check_no_secrets_validates_everything_else(self):
        path = self._with_secrets()
        out = run_airlock(["check", "--config", path, "--no-secrets"])
        self.assertEqual(out.returncode, 0, out)
        self.assertIn(": ok (1 rules, 1 agents, version ", out.stdout)
        self.assertIn("secrets not read", out.stdout)
        # What each rule allows, ports printed compactly.
        self.assertIn("rule github: ports 443, 8000-8999; schemes https; inspect", out.stdout)
        # Still an error: a reference to a secret the policy does not define, a bad range.
        broken = WITH_SECRETS.replace("${secrets.github}", "${secrets.gitlab}").replace(
            "8000-8999", "8999-8000")
        out = run_airlock(["check", "--config", self._with_secrets(broken), "--no-secrets"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("gitlab", out.stderr)
        self.assertRegex(out.stderr, r"(?m):12:\d+: rules\[0\]\.ports\[1\]: range 8999-8000 ")
        self.assertNotIn("secrets.github", out.stderr)

    def test_check_loads_the_ca_as_the_proxy_does(self):
        # A key that is not the certificate's, or a certificate that is not one: the proxy would
        # not start with them, so check does not pass them either.
        one, two = AirlockCA(), AirlockCA()
        self.addCleanup(one.cleanup)
        self.addCleanup(two.cleanup)
        junk = os.path.join(self.tmp.name, "junk.crt")
        with open(junk, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")

        def check(cert, key):
            policy = dict(GOOD, tls={"ca_cert": cert, "ca_key": key})
            path = os.path.join(self.tmp.name, "ca-check.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(policy, f, sort_keys=False)
            return run_airlock(["check", "--config", path])

        self.assertEqual(check(one.cert, one.key).returncode, 0)
        mismatch = check(one.cert, two.key)
        self.assertEqual(mismatch.returncode, 1, mismatch)
        self.assertIn("tls.ca_cert: CA key", mismatch.stderr)
        self.assertIn("does not match the certificate", mismatch.stderr)
        bad = check(junk, one.key)
        self.assertEqual(bad.returncode, 1, bad)
        self.assertIn("tls.ca_cert: CA certificate", bad.stderr)

    def test_check_missing_file(self):
        out = run_airlock(["check", "--config", os.path.join(self.tmp.name, "nope.yaml")])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("nope.yaml", out.stderr)

    def test_check_usage(self):
        self.assertEqual(run_airlock(["check"]).returncode, 2)

    def test_explain_allowed(self):
        out = run_airlock(["explain", "--config", self.good, "GET",
                           "http://origin.test:8080/echo/x"])
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("allowed by rule origin", out.stdout)

    def _dlp_policy(self, action):
        policy = {
            "mode": "enforce", "listen": {"proxy": "127.0.0.1:0", "admin": "off"},
            "audit": {"path": "off"},
            "agents": {"default": {"rules": ["api", "quiet"]}},
            "rules": [{"name": "api", "hosts": ["api.test"], "ports": [80],
                       "methods": ["POST"], "dlp": {"action": action}},
                      {"name": "quiet", "hosts": ["quiet.test"], "ports": [80],
                       "methods": ["POST"], "dlp": "off"}],
        }
        path = os.path.join(self.tmp.name, "dlp-%s.yaml" % action)
        with open(path, "w") as f:
            yaml.safe_dump(policy, f, sort_keys=False)
        return path

    def _explain_body(self, policy, url, body):
        body_path = os.path.join(self.tmp.name, "body.json")
        with open(body_path, "w") as f:
            f.write(body)
        return run_airlock(["explain", "--config", policy, "--body", body_path, "POST", url])

    def test_explain_a_body_shows_what_dlp_finds_and_does(self):
        key = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id
        body = '{"note": "deploy", "key": "%s"}' % key
        out = self._explain_body(self._dlp_policy("block"), "http://api.test/upload", body)
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("dlp (rule api): aws-access-key in the body", out.stdout)
        self.assertIn("action block: refused, 403 dlp_blocked", out.stdout)
        self.assertNotIn(key, out.stdout + out.stderr)
        out = self._explain_body(self._dlp_policy("report"), "http://api.test/upload", body)
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("action report", out.stdout)
        out = self._explain_body(self._dlp_policy("redact"), "http://api.test/upload", body)
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("action redact: the body goes on", out.stdout)
        # Encoded, it cannot be replaced in place: refused under redact too.
        encoded = '{"blob": "%s"}' % __import__("base64").b64encode(
            ("aws_access_key_id=" + key).encode()).decode()
        out = self._explain_body(self._dlp_policy("redact"), "http://api.test/upload", encoded)
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("cannot be replaced in place", out.stdout)
        # Nothing found; a rule with dlp off.
        out = self._explain_body(self._dlp_policy("block"), "http://api.test/upload",
                                 '{"note": "deploy"}')
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("dlp (rule api): nothing found in the body", out.stdout)
        out = self._explain_body(self._dlp_policy("block"), "http://quiet.test/upload", body)
        self.assertEqual(out.returncode, 0, out)
        self.assertIn("dlp: off under this rule", out.stdout)

    def test_explain_denied_path(self):
        out = run_airlock(["explain", "--config", self.good, "GET",
                           "http://origin.test:8080/secret"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("path_denied", out.stdout)

    def test_explain_denied_host_and_method(self):
        out = run_airlock(["explain", "--config", self.good, "GET", "http://other.test:8080/"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("host_denied", out.stdout)
        out = run_airlock(["explain", "--config", self.good, "DELETE",
                           "http://origin.test:8080/echo"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("method_denied", out.stdout)

    def test_explain_connect_needs_inspection(self):
        out = run_airlock(["explain", "--config", self.good, "CONNECT", "origin.test:8080"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("needs_inspection", out.stdout)

    def test_explain_address_guard(self):
        policy = make_policy([{"name": "lit", "hosts": ["127.0.0.1"], "ports": [80]}],
                             audit={"path": "off"})
        path = os.path.join(self.tmp.name, "lit.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(policy, f)
        out = run_airlock(["explain", "--config", path, "GET", "http://127.1/"])
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("destination_ip_prohibited", out.stdout + out.stderr)

    def test_explain_unknown_agent(self):
        out = run_airlock(["explain", "--config", self.good, "--agent", "nobody", "GET",
                           "http://origin.test:8080/echo"])
        self.assertEqual(out.returncode, 2, out)

    def test_explain_bad_policy(self):
        out = run_airlock(["explain", "--config", self.bad, "GET", "http://origin.test/"])
        self.assertEqual(out.returncode, 2, out)
        self.assertRegex(out.stderr, r"%s:\d+:\d+: " % re.escape(self.bad))


if __name__ == "__main__":
    unittest.main()
