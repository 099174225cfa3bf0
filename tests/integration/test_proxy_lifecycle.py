"""The process: the listening line, command-line overrides, graceful shutdown on SIGTERM and
SIGINT (in-flight requests finish, new connections are refused, exit 0), and refusal of a bad
policy file with file:line:column errors."""

import os
import re
import signal
import socket
import threading
import time
import unittest

from harness import clients, env
from harness.origin import OriginServer
from harness.proxy import Airlock, LISTENING, make_policy, origin_rule


class LifecycleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def start(self, limits=None, **kw):
        proxy = Airlock(make_policy([origin_rule(self.origin.port)], limits=limits), **kw)
        self.addCleanup(proxy.cleanup)
        return proxy.start()

    def get(self, proxy, path, **kw):
        return clients.curl(self.origin.url(path), proxy_port=proxy.port, **kw)

    def assert_clean(self, proxy):
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])

    def test_listening_line(self):
        proxy = self.start()
        self.assertRegex(proxy.listening_line,
                         r"^listening proxy=127\.0\.0\.1:\d+ admin=off$")
        self.assertNotEqual(proxy.port, 0)
        self.assertEqual(self.get(proxy, "/echo").status, 200)
        self.assertEqual(proxy.stop(), 0)
        self.assert_clean(proxy)

    def test_listen_and_admin_overrides(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proxy = self.start(args=["--listen", "127.0.0.1:%d" % port, "--admin", "127.0.0.1:0"])
        m = LISTENING.match(proxy.listening_line)
        self.assertEqual(proxy.port, port)
        self.assertRegex(m.group(3), r"^127\.0\.0\.1:\d+$")
        admin_port = int(m.group(3).rsplit(":", 1)[1])
        self.assertNotEqual(admin_port, 0)
        r = clients.curl("http://127.0.0.1:%d/healthz" % admin_port)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(proxy.stop(), 0)

    def test_sigterm_finishes_in_flight_request(self):
        proxy = self.start()
        result = {}

        def slow():
            result["r"] = self.get(proxy, "/slow/2000")

        t = threading.Thread(target=slow)
        t.start()
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and not self.origin.seen("/slow/2000"):
            time.sleep(0.02)
        self.assertTrue(self.origin.seen("/slow/2000"), "slow request never reached the origin")
        proxy.send_signal(signal.SIGTERM)
        # New connections are refused soon after the signal.
        # (Attempts that race the signal's delivery may still be served; each has its own
        # path, and the one that is refused must not have reached the origin.)
        refused = None
        attempt = 0
        deadline = time.monotonic() + env.t(1.5)
        while time.monotonic() < deadline:
            attempt += 1
            path = "/echo/after-term-%d" % attempt
            try:
                with socket.create_connection(("127.0.0.1", proxy.port), timeout=1) as s:
                    s.sendall(b"GET %s HTTP/1.1\r\nHost: origin.test\r\n\r\n"
                              % self.origin.url(path).encode())
                    s.settimeout(2)
                    data = s.recv(100)
                    if not data or data.startswith(b"HTTP/1.1 503"):
                        refused = path
                        break
            except OSError:
                refused = path
                break
            time.sleep(0.05)
        self.assertIsNotNone(refused, "the proxy still accepted and served after SIGTERM")
        self.assertEqual(self.origin.seen(refused), [])
        t.join(env.t(10))
        r = result.get("r")
        self.assertIsNotNone(r)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.status, 200, "in-flight request cut by SIGTERM: %r" % r)
        self.assertEqual(r.json(), {"slept_ms": 2000})
        self.assertEqual(proxy.stop(timeout=env.t(10)), 0)
        # The audit line of the in-flight request was written before exit.
        self.assertIsNotNone(proxy.wait_audit(path="/slow/2000", status=200, timeout=0.5))
        self.assert_clean(proxy)

    def test_drain_timeout_cuts_a_long_request_and_exits_0(self):
        """docs/operations.md: requests in flight get limits.drain_timeout to finish; one that
        takes longer is cut, and the process still exits 0."""
        proxy = self.start(limits={"drain_timeout": "1s"})
        m = "drain-%d" % id(proxy)
        hold = 600000  # the origin would answer after 10 minutes: only the drain can end it
        result = {}

        def slow():
            result["r"] = self.get(proxy, "/slow/%d?%s" % (hold, m), max_time=env.t(120))

        t = threading.Thread(target=slow)
        t.start()
        self.assertTrue(self.origin.wait_seen(m, env.t(10), complete=False),
                        "the long request never reached the origin")
        proxy.send_signal(signal.SIGTERM)
        # Exits 0 on its own once drain_timeout is over (the deadline is only a bound on
        # waiting: far beyond 1 s, far below the request's 10 minutes).
        self.assertEqual(proxy.stop(timeout=env.t(30)), 0, proxy.stderr()[-3000:])
        t.join(env.t(30))
        self.assertFalse(t.is_alive(), "the client was left hanging after the proxy exited")
        r = result["r"]
        self.assertNotEqual(r.status, 200, "the long request was not cut: %r" % r)
        self.assertNotEqual(r.returncode, 0, "curl got a whole answer: %r" % r)
        # Its one record says what the client got (nothing: the connection closed) and why,
        # without blaming the origin.
        rec = proxy.wait_audit(path="/slow/%d" % hold, timeout=0.5)
        self.assertEqual((rec["status"], rec["reason"]), (0, "shutting_down"), rec)
        self.assertIn("cut by the drain", rec["detail"])
        self.assert_clean(proxy)

    def test_a_head_still_arriving_at_the_drains_end_is_recorded_as_cut(self):
        # Its connection is closed when drain_timeout is over: the client gets nothing, and the
        # record says so (status 0, shutting_down), not a 400 for a malformed request.
        proxy = self.start(limits={"drain_timeout": "1s"})
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=env.t(10)) as c:
            c.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: "
                      % self.origin.url("/echo/half").encode())
            time.sleep(env.t(0.5))  # the proxy reads bytes as they come; this is ample
            proxy.send_signal(signal.SIGTERM)
            self.assertEqual(c.recv(65536), b"")
        self.assertEqual(proxy.stop(timeout=env.t(30)), 0)
        rec = proxy.wait_audit(reason="shutting_down", timeout=0.5)
        self.assertEqual(rec["status"], 0, rec)
        self.assertIn("request head was arriving", rec["detail"])
        self.assertEqual([r for r in proxy.audit() if r.get("reason") == "bad_request"], [])
        self.assert_clean(proxy)

    def test_sigterm_with_idle_keep_alive_exits_promptly(self):
        proxy = self.start()
        c = clients.RawClient(proxy.port)
        self.addCleanup(c.close)
        c.send(b"GET %s HTTP/1.1\r\nHost: origin.test\r\n\r\n" % self.origin.url("/echo").encode())
        self.assertEqual(c.read_response().status, 200)
        start = time.monotonic()
        self.assertEqual(proxy.stop(signal.SIGTERM, timeout=env.t(8)), 0)
        self.assertLess(time.monotonic() - start, env.t(5),
                        "an idle keep-alive connection held up shutdown")
        self.assertTrue(c.read_until_close(env.t(2)))

    def test_sigterm_when_idle_exits_promptly(self):
        # Nothing in flight, no client connected: there is nothing to drain.
        proxy = self.start()
        self.assertEqual(self.get(proxy, "/echo").status, 200)
        start = time.monotonic()
        self.assertEqual(proxy.stop(signal.SIGTERM, timeout=env.t(15)), 0)
        self.assertLess(time.monotonic() - start, env.t(2),
                        "an idle proxy took %.1fs to stop" % (time.monotonic() - start))

    def test_signal_right_after_listening_line(self):
        # Once the listening line is out, the proxy is ready, and that includes handling
        # SIGTERM gracefully (exit 0, not death by the signal's default action).
        codes = []
        for _ in range(5):
            proxy = self.start()
            proxy.send_signal(signal.SIGTERM)
            codes.append(proxy.stop(timeout=env.t(15)))
        self.assertEqual(codes, [0] * 5)

    def test_sigterm_again_while_stopping_still_exits_0(self):
        # A supervisor that repeats SIGTERM (or a test that stops a proxy already draining):
        # the repeats must not end the process by the signal's default action as it tears
        # down. Every 5 ms from the first signal until it exits, with a request in flight.
        proxy = self.start()
        result = {}
        t = threading.Thread(target=lambda: result.update(r=self.get(proxy, "/slow/300")))
        t.start()
        self.assertTrue(self.origin.wait_seen("/slow/300", timeout=env.t(5), complete=False))
        deadline = time.monotonic() + env.t(15)
        while proxy.proc.poll() is None and time.monotonic() < deadline:
            proxy.send_signal(signal.SIGTERM)
            time.sleep(0.005)
        t.join(env.t(15))
        self.assertEqual(proxy.stop(timeout=env.t(15)), 0, proxy.stderr()[-3000:])
        self.assertEqual(result["r"].status, 200, "the in-flight request was cut")
        self.assert_clean(proxy)

    def test_sigint(self):
        proxy = self.start()
        self.assertEqual(self.get(proxy, "/echo").status, 200)
        self.assertEqual(proxy.stop(signal.SIGINT), 0)
        self.assert_clean(proxy)

    def test_threads_option(self):
        proxy = self.start(threads=4)
        results = []

        def one():
            results.append(self.get(proxy, "/slow/300").status)

        ts = [threading.Thread(target=one) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(env.t(20))
        self.assertEqual(results, [200] * 8)
        self.assertEqual(proxy.stop(), 0)

    def test_bad_arguments(self):
        from harness.proxy import run_airlock
        # (`airlock proxy` alone is not an error: it runs the built-in example policy, see
        # test_built_in_policy_without_config.)
        for args in (["proxy", "--config"], ["proxy", "--bogus"],
                     ["proxy", "--config", "/nonexistent/policy.yaml"],
                     ["proxy", "--threads", "0"], ["proxy", "--log-level", "loud"]):
            with self.subTest(args=args):
                out = run_airlock(args)
                self.assertNotEqual(out.returncode, 0)
                self.assertTrue(out.stderr.strip())
                self.assertNotIn("listening", out.stdout)

    def test_built_in_policy_without_config(self):
        # Without --config the proxy runs the copy of config/example.yaml compiled into it:
        # it starts, and it refuses a host the example does not allow.
        import subprocess
        proc = subprocess.Popen([env.airlock_bin(), "proxy", "--listen", "127.0.0.1:0",
                                 "--admin", "off"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            self.assertTrue(line.startswith("listening proxy=127.0.0.1:"), line)
            port = int(line.split()[1].split(":")[1])
            with socket.create_connection(("127.0.0.1", port), timeout=env.t(5)) as s:
                s.sendall(b"GET http://not-allowed.test/ HTTP/1.1\r\n"
                          b"Host: not-allowed.test\r\nConnection: close\r\n\r\n")
                s.settimeout(env.t(5))
                head = s.recv(4096)
            self.assertTrue(head.startswith(b"HTTP/1.1 403"), head)
            self.assertIn(b"X-Airlock-Reason: host_denied", head)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=env.t(10))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0)


BAD_POLICY = """\
mode: enforce
listen: {proxy: '127.0.0.1:0', admin: 'off'}
audit: {path: 'off'}
agents:
  default: {rules: [origin]}
rules:
  - name: origin
    hosts: [origin.test]
    ports: [8080]
    paths: ['^/(unclosed$']
    methdos: [GET]
"""


class BadPolicyTest(unittest.TestCase):
    def test_bad_policy_refused_with_positions(self):
        proxy = Airlock(BAD_POLICY)
        self.addCleanup(proxy.cleanup)
        with self.assertRaises(AssertionError):
            proxy.start(timeout=env.t(10))
        self.assertNotEqual(proxy.returncode, 0)
        err = proxy.stderr()
        # file:line:column: key: message, for the bad regex (line 10) and the typo (line 11).
        self.assertRegex(err, r"%s:10:\d+: rules\[0\]\.paths\[0\]: " % re.escape(
            proxy.config_path), err)
        self.assertRegex(err, r"%s:11:\d+: rules\[0\]\.methdos: " % re.escape(
            proxy.config_path), err)

    def test_yaml_syntax_error(self):
        proxy = Airlock("rules: [\n  - name: x\n  hosts: ]\n")
        self.addCleanup(proxy.cleanup)
        with self.assertRaises(AssertionError):
            proxy.start()
        self.assertNotEqual(proxy.returncode, 0)
        self.assertRegex(proxy.stderr(), r"%s:\d+:\d+: " % re.escape(proxy.config_path))

    def test_unknown_agent_rule(self):
        text = BAD_POLICY.replace("paths: ['^/(unclosed$']", "paths: ['^/$']") \
            .replace("    methdos: [GET]\n", "").replace("rules: [origin]", "rules: [nope]")
        proxy = Airlock(text)
        self.addCleanup(proxy.cleanup)
        with self.assertRaises(AssertionError):
            proxy.start()
        self.assertRegex(proxy.stderr(), r"%s:5:\d+: agents\.default\.rules\[0\]: " %
                         re.escape(proxy.config_path))


    def test_relay_path_that_is_not_a_socket_refused_cleanly(self):
        """listen.relay naming a file that exists and is not a socket: the proxy does not start,
        says why, exits non-zero, and gets there without undefined behaviour."""
        policy = make_policy([origin_rule(8080)])
        scratch = Airlock(policy)
        self.addCleanup(scratch.cleanup)
        not_a_socket = os.path.join(scratch.dir, "not-a-socket")
        open(not_a_socket, "w").close()
        policy["listen"]["relay"] = not_a_socket
        proxy = Airlock(policy, name="relay-not-socket")
        self.addCleanup(proxy.cleanup)
        with self.assertRaises(AssertionError):
            proxy.start(timeout=env.t(10))
        self.assertNotEqual(proxy.returncode, 0)
        self.assertIn("listen.relay: '%s' exists and is not a socket" % not_a_socket,
                      proxy.stderr())
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])


if __name__ == "__main__":
    unittest.main()
