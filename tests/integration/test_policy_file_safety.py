"""The policy file and the files it names, read safely (red team s20, findings 1, 3 and 6):

- a writer that rewrites the policy in place and pauses mid-file, the file still open, never
  has its first part in force (the watcher reacts to a close or a rename, not to each write,
  and loads only bytes that two reads agree on); its complete file is loaded once it closes;
- an empty policy file (a truncation caught before the new content) is refused, by the
  watcher's reload, SIGHUP, `airlock check` and at start, and the policy in force stays;
- a watched secret file replaced by a FIFO or by a link to /dev/zero neither blocks the main
  thread (the admin port keeps answering) nor grows memory: the reload is refused;
- `airlock check` / `explain` given a FIFO (as the policy, an include or tls.ca_cert) refuse
  it at once instead of waiting for a writer;
- a timeout past its bound (24h) is refused by `airlock check` with file, line and key."""

import hashlib
import os
import re
import signal
import tempfile
import unittest

import yaml

from harness import clients, env
from harness.ops_admin import OpsAirlock, ops_policy
from harness.origin import OriginServer
from harness.proxy import make_policy, origin_rule, run_airlock

SECRET = "airlock-itest-policy-file-safety-secret-5d1c"


class PolicyFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def start(self, policy, name):
        proxy = OpsAirlock(policy, name=name)
        self.addCleanup(proxy.cleanup)
        proxy.start()
        self.addCleanup(self.stop, proxy)
        return proxy

    def stop(self, proxy):
        if proxy.alive():
            proxy.stop()
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])

    def get(self, proxy, path):
        return clients.curl(self.origin.url(path), proxy_port=proxy.port)

    def narrow_policy(self):
        """Allows /echo/allowed… only; `paths` is the last key of the last rule, so the file cut
        just before it is valid YAML for a rule that allows every path."""
        rule = origin_rule(self.origin.port, paths=[r"/echo/allowed.*"])
        rule.pop("upgrades", None)
        rule["paths"] = rule.pop("paths")
        return ops_policy([rule])


class HalfWrittenPolicyTest(PolicyFileTest):
    def test_writer_pausing_mid_file_never_has_its_half_in_force(self):
        proxy = self.start(self.narrow_policy(), "half-written")
        self.assertEqual(self.get(proxy, "/status/200").status, 403)
        data = proxy.policy_bytes(self.narrow_policy(), "edited").decode()
        cut = data.index("  paths:")
        target = os.path.realpath(proxy.config_path)
        window = env.t(1.0)  # well past the watcher's debounce and its second read
        during = []
        with open(target, "r+b") as f:
            f.truncate(0)
            f.write(data[:cut].encode())
            f.flush()
            os.fsync(f.fileno())
            # While the writer pauses (the file open, half written), only the policy before
            # the edit decides: /status/200 stays denied for the whole window.
            def half_in_force():
                during.append(self.get(proxy, "/status/200").status)
                return during[-1] != 403
            proxy.wait_for(half_in_force, timeout=window, interval=0.05)
            f.write(data[cut:].encode())
        self.assertTrue(during)
        self.assertEqual(set(during), {403}, "the half-written file was in force: %r" % during)
        # Closed: the complete file is loaded (by the watcher, once).
        status = proxy.wait_version(hashlib.sha256(data.encode()).hexdigest())
        self.assertIsNone(status["last_error"], status)
        self.assertEqual(self.get(proxy, "/status/200").status, 403)
        self.assertEqual(self.get(proxy, "/echo/allowed-1").status, 200)
        self.assertEqual(proxy.reload_count("failure"), 0)
        self.assertEqual(proxy.reload_count("success", "file"), 1)


class EmptyPolicyTest(PolicyFileTest):
    def assert_refused_as_empty(self, proxy, first):
        status = proxy.policy_status()
        self.assertEqual(status["version"], first, status)
        self.assertIn(proxy.config_path, status["last_error"] or "", status)
        self.assertIn("is empty", status["last_error"] or "", status)
        # The policy in force before still decides.
        self.assertEqual(self.get(proxy, "/echo/allowed-2").status, 200)
        self.assertEqual(self.get(proxy, "/status/200").status, 403)

    def test_truncated_file_refused_by_the_watcher_and_by_sighup(self):
        proxy = self.start(self.narrow_policy(), "empty")
        first = proxy.policy_version()
        with open(os.path.realpath(proxy.config_path), "r+b") as f:
            f.truncate(0)
        proxy.wait_reload_count("failure", "file", 1)
        self.assert_refused_as_empty(proxy, first)
        proxy.send_signal(signal.SIGHUP)
        proxy.wait_reload_count("failure", "signal", 1)
        self.assert_refused_as_empty(proxy, first)
        answer = proxy.admin_call("POST", "/reload")
        self.assertEqual(answer.status, 422, answer)
        self.assertIn("is empty", answer.text())

    def test_empty_file_refused_by_check_and_at_start(self):
        with tempfile.TemporaryDirectory(prefix="airlock-itest-empty-") as d:
            for text in ("", "\n  \n", "# only a comment\n"):
                path = os.path.join(d, "policy.yaml")
                with open(path, "w") as f:
                    f.write(text)
                r = run_airlock(["check", "--config", path])
                self.assertNotEqual(r.returncode, 0, r)
                self.assertIn("%s: is empty" % path, r.stdout + r.stderr, r)
                r = run_airlock(["proxy", "--config", path, "--listen", "127.0.0.1:0",
                                 "--admin", "off"])
                self.assertNotEqual(r.returncode, 0, r)
                self.assertIn("is empty", r.stdout + r.stderr, r)
            # `{}` is the policy that refuses everything.
            with open(path, "w") as f:
                f.write("{}\n")
            r = run_airlock(["check", "--config", path])
            self.assertEqual(r.returncode, 0, r)


class WatchedFileSwapTest(PolicyFileTest):
    """A secret file the policy names, replaced (by rename) with something that is no file."""

    def start_with_secret(self, name):
        self.secret_dir = tempfile.TemporaryDirectory(prefix="airlock-itest-swap-")
        self.addCleanup(self.secret_dir.cleanup)
        self.secret_file = os.path.join(self.secret_dir.name, "token")
        with open(self.secret_file, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(self.secret_file, 0o600)
        rule = origin_rule(self.origin.port, inject={"headers": {"X-Token": "${secrets.token}"}})
        policy = ops_policy([rule], secrets={"token": {"file": self.secret_file,
                                                       "hosts": ["origin.test"]}})
        return self.start(policy, name)

    def swap_in(self, make):
        tmp = self.secret_file + ".new"
        make(tmp)
        os.rename(tmp, self.secret_file)

    def assert_still_serving(self, proxy):
        # The admin port answers (the main thread is not stuck in open(2) or in a read without
        # end), the reload the change caused was refused, and the policy in force still works.
        proxy.wait_reload_count("failure", "file", 1, timeout=env.t(5))
        health = proxy.admin_call("GET", "/healthz", timeout=env.t(3))
        self.assertEqual(health.status, 200, health)
        self.assertIn("not a regular file", proxy.policy_status()["last_error"] or "")
        self.assertEqual(self.get(proxy, "/echo/x").status, 200)

    def test_secret_replaced_by_a_fifo(self):
        proxy = self.start_with_secret("swap-fifo")
        self.swap_in(os.mkfifo)
        self.assert_still_serving(proxy)

    def test_secret_replaced_by_a_link_to_dev_zero(self):
        proxy = self.start_with_secret("swap-zero")
        before = proxy.rss_kib()
        self.swap_in(lambda p: os.symlink("/dev/zero", p))
        self.assert_still_serving(proxy)
        self.assertLess(proxy.rss_kib() - before, 128 * 1024, "memory grew reading /dev/zero")


class FifoRefusedByCliTest(unittest.TestCase):
    def test_check_and_explain_refuse_a_fifo_at_once(self):
        with tempfile.TemporaryDirectory(prefix="airlock-itest-fifo-") as d:
            fifo = os.path.join(d, "policy.fifo")
            os.mkfifo(fifo)
            include = os.path.join(d, "include.yaml")
            with open(include, "w") as f:
                f.write("include: [%s]\n" % fifo)
            ca = os.path.join(d, "tls.yaml")
            with open(ca, "w") as f:
                f.write("tls: {ca_cert: %s, ca_key: %s}\n" % (fifo, fifo))
            cases = [
                (["check", "--config", fifo], fifo + ": is not a regular file"),
                (["explain", "--config", fifo, "GET", "http://a.test/"], "not a regular file"),
                (["check", "--config", include], "include[0]: is not a regular file"),
                (["check", "--no-secrets", "--config", ca],
                 "tls.ca_cert: '%s' is not a regular file" % fifo),
                (["check", "--config", "/dev/zero"], "is not a regular file"),
            ]
            for args, want in cases:
                with self.subTest(args=args):
                    # A hang is a TimeoutExpired: the test fails, it does not wait for ever.
                    r = run_airlock(args, timeout=env.t(10))
                    self.assertNotEqual(r.returncode, 0, r)
                    self.assertIn(want, r.stdout + r.stderr, r)


class DurationBoundsTest(unittest.TestCase):
    def test_timeouts_past_their_bound_refused_with_file_line_and_key(self):
        with tempfile.TemporaryDirectory(prefix="airlock-itest-duration-") as d:
            path = os.path.join(d, "policy.yaml")
            for key, value, want in (("response_timeout", "106752d", "at most 24h"),
                                     ("head_timeout", "9999999999s", "at most 24h"),
                                     ("idle_timeout", "25h", "must be at most 24h"),
                                     ("drain_timeout", "2d", "must be at most 24h")):
                with self.subTest(key=key, value=value):
                    policy = make_policy([])
                    policy["limits"] = {key: value}
                    text = yaml.safe_dump(policy, sort_keys=False)
                    with open(path, "w") as f:
                        f.write(text)
                    line = next(i for i, t in enumerate(text.splitlines(), 1) if key in t)
                    r = run_airlock(["check", "--config", path])
                    self.assertNotEqual(r.returncode, 0, r)
                    self.assertRegex(r.stdout + r.stderr,
                                     r"%s:%d:\d+: limits\.%s: .*%s"
                                     % (re.escape(path), line, key, re.escape(want)))
            policy["limits"] = {"idle_timeout": "24h", "response_timeout": "86400s"}
            with open(path, "w") as f:
                f.write(yaml.safe_dump(policy, sort_keys=False))
            r = run_airlock(["check", "--config", path])
            self.assertEqual(r.returncode, 0, r)


if __name__ == "__main__":
    unittest.main()
