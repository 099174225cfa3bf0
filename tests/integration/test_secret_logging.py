"""Secrets stay out of the most talkative logs: the proxy at `--log-level debug` while it
injects, swaps placeholders and refuses them (plain and inside an inspected tunnel), and
`airlock run --verbose` handing placeholders over for a policy whose secrets come from the
environment and from files. Every spelling of every value is looked for (harness/secret_scan),
in the proxy's stderr and audit log (scanned whole after it stopped, by SecretsCase) and in the
launcher's output."""

import os
import subprocess
import tempfile
import unittest

from harness import capabilities, env, secret_scan
from harness.base import CurlAnswer, marker
from harness.proxy import Airlock, make_policy
from test_credential_injection import (BASIC_PW, BASIC_USER, FILE_KEY, PH_VALUE, API_TOKEN,
                                       SecretsCase, placeholder_for)

PLACEHOLDER = placeholder_for(PH_VALUE, "tok_")


class DebugLogTest(SecretsCase):
    SECRETS = {"api_token": API_TOKEN, "file_key": FILE_KEY, "basic_pw": BASIC_PW,
               "ph_token": PH_VALUE}
    FILE_SECRETS = ("file_key",)

    @classmethod
    def leak_needles(cls):
        return {"basic credential": secret_scan.basic_spelling(BASIC_USER, BASIC_PW)}

    @classmethod
    def _new_proxy(cls):
        return Airlock(cls.policy(), threads=cls.threads, name=cls.__name__,
                       env_extra=cls.secret_env(), log_level="debug")

    @classmethod
    def policy(cls):
        pe, pt = cls.echo.port, cls.tls_echo.port
        bearer = {"headers": {"Authorization": "Bearer ${secrets.api_token}"},
                  "query": {"api_key": "${secrets.file_key}"}}
        rules = [
            cls.echo_rule(pe, "api", ["api.test"], inject=bearer),
            cls.echo_rule(pe, "basic", ["basic.test"],
                          inject={"basic": {"username": BASIC_USER,
                                            "password": "${secrets.basic_pw}"}}),
            cls.echo_rule(pe, "other", ["other.test"]),
            cls.insp_rule(pt, "insp", ["insp.test"], inject=bearer),
        ]
        secrets = {
            "api_token": cls.secret_decl("api_token"),
            "file_key": cls.secret_decl("file_key"),
            "basic_pw": cls.secret_decl("basic_pw"),
            "ph_token": cls.secret_decl("ph_token", placeholder=PLACEHOLDER,
                                        hosts=["api.test", "insp.test"]),
        }
        return make_policy(rules, tls=cls.tls_section(), secrets=secrets)

    def test_injection_and_placeholders_logged_without_values(self):
        m = marker()
        for url, args in (
                (self.echo.url("/echo/a-%s?x=1" % m, "api.test"), ["-H", "X-Ph: " + PLACEHOLDER]),
                (self.echo.url("/echo/b-%s" % m, "basic.test"), []),
                (self.tls_echo.url("/echo/c-%s" % m, "insp.test"),
                 ["--cacert", self.ica.cert, "-H", "X-Ph: " + PLACEHOLDER])):
            with self.subTest(url=url):
                r = self.curl(url, args=args)
                self.assertEqual(r.status, 200, r)
                self.assert_response_clean(r)
        # A placeholder sent where it is not bound: refused, and logged as such.
        r = self.curl(self.echo.url("/echo/d-%s" % m, "other.test"),
                      args=["-H", "X-Ph: " + PLACEHOLDER])
        self.assert_answer(CurlAnswer(r), "placeholder_refused")
        for part in ("a-", "b-", "c-", "d-"):
            self.audit_for(part + m)
        # The debug line of the refusal is there (so this really ran at debug level)...
        debug = [line for line in self.proxy.stderr().splitlines()
                 if " debug proxy: " in line and "placeholder_refused" in line]
        self.assertTrue(debug, "no debug-level line for the refusal:\n%s"
                        % self.proxy.stderr()[-2000:])
        # ...and nothing at any level names a value.
        self.assert_no_secret(self.proxy.stderr(), "debug-level stderr")


class LauncherVerboseTest(unittest.TestCase):
    """`airlock run --verbose --policy P`: the launcher reads the policy's secret declarations
    to hand placeholders over, and its verbose output names them without their values."""

    def test_verbose_run_prints_no_secret(self):
        capabilities.require(self, "userns")
        with tempfile.TemporaryDirectory(prefix="airlock-itest-verbose-") as tmp:
            os.chmod(tmp, 0o755)
            # The proxy's files in a folder of their own: --policy hides it from the jail whole.
            proxy_dir, work = os.path.join(tmp, "proxy"), os.path.join(tmp, "work")
            os.mkdir(proxy_dir)
            os.mkdir(work)
            key = os.path.join(proxy_dir, "svc.key")
            with open(key, "w") as f:
                f.write(FILE_KEY + "\n")
            os.chmod(key, 0o600)
            policy = os.path.join(proxy_dir, "policy.yaml")
            with open(policy, "w") as f:
                f.write("secrets:\n"
                        "  tok: {env: AIRLOCK_ITEST_VERBOSE_TOK, placeholder: '%s',"
                        " hosts: [api.test]}\n"
                        "  svc: {file: %s}\n"
                        "agents: {default: {rules: []}}\nrules: []\n" % (PLACEHOLDER, key))
            child_env = env.sanitizer_env(dict(os.environ, AIRLOCK_ITEST_VERBOSE_TOK=PH_VALUE,
                                               TMPDIR=tmp))
            r = subprocess.run([env.airlock_bin(), "run", "--verbose", "--policy", policy,
                                "--", "sh", "-c", "printenv AIRLOCK_ITEST_VERBOSE_TOK"],
                               capture_output=True, timeout=env.t(60), cwd=work, env=child_env)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out.decode(errors="replace")[-3000:])
        self.assertEqual(r.stdout.decode().strip(), PLACEHOLDER)  # what the command got
        self.assertIn(b"airlock run", r.stderr, "no verbose output at all")
        found = secret_scan.scan(out, {"tok": PH_VALUE, "svc": FILE_KEY})
        self.assertEqual(found, [], "airlock run --verbose printed a secret: %r" % found)


if __name__ == "__main__":
    unittest.main()
