"""Operations (issue 6): the admin endpoints, readiness during a drain, the admin port kept out
of reach of the proxy port, the metrics (lint-clean with promtool, moving with traffic, label
values bounded and free of request data), reloads by every trigger (SIGHUP, file rewrite,
write-and-rename, a Kubernetes `..data` swap, POST /reload), bad policies refused by every
trigger with the old policy still deciding, and SIGHUP reopening the audit file."""

import base64
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import unittest

from harness import capabilities, clients, env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import Metrics, OpsAirlock, ops_policy
from harness.origin import OriginServer
from harness.proxy import REASONS, origin_rule

TOKEN = "ops-tok-51c2e0"
TOKEN_SHA256 = hashlib.sha256(TOKEN.encode()).hexdigest()
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


closed_port = clients.closed_port


def get_request(url, headers=(), method="GET", body=b""):
    host = url.split("://", 1)[1].split("/", 1)[0]
    lines = ["%s %s HTTP/1.1" % (method, url), "Host: %s" % host]
    lines += ["%s: %s" % kv for kv in headers]
    if body:
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def send(port, data):
    """One request on a fresh connection; returns the final response (or None)."""
    responses, client = clients.exchange(port, data)
    client.close()
    return responses[0] if responses else None


class OpsTestCase(ProxyTestCase):
    """ProxyTestCase with an admin listener and the policy in a folder of its own."""

    layout = "plain"

    @classmethod
    def _new_proxy(cls):
        return OpsAirlock(cls.policy(), layout=cls.layout, threads=cls.threads,
                          args=cls.proxy_args, name=cls.__name__)

    def wait_metric(self, name, at_least, **labels):
        """Polls /metrics until the sum of `name{labels}` reaches `at_least` (a request's
        series are updated when its exchange ends, which may be just after the client read the
        answer). Returns the Metrics snapshot."""
        return self.wait_metrics((name, at_least, labels))

    def wait_metrics(self, *conditions):
        """Like wait_metric for several (name, at_least, labels) at once: one request updates
        several series one after the other, so a snapshot may hold some of them only."""
        deadline = time.monotonic() + env.t(3)
        while True:
            m = self.proxy.metrics()
            if all(m.value(name, **labels) >= at_least for name, at_least, labels in conditions):
                return m
            if time.monotonic() >= deadline:
                return m
            time.sleep(0.02)


# -- the admin endpoints -------------------------------------------------------------------------


class AdminEndpointsTest(OpsTestCase):
    @classmethod
    def policy(cls):
        return ops_policy([origin_rule(cls.origin.port)])

    def test_listening_line_names_the_admin_port(self):
        self.assertRegex(self.proxy.listening_line,
                         r"^listening proxy=127\.0\.0\.1:\d+ admin=127\.0\.0\.1:\d+$")
        self.assertNotEqual(self.proxy.admin_port, 0)
        self.assertNotEqual(self.proxy.admin_port, self.proxy.port)

    def test_healthz(self):
        r = self.proxy.admin_call("GET", "/healthz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.content_type, "text/plain; charset=utf-8", r)
        self.assertEqual(r.text().strip(), "ok", r)

    def test_readyz(self):
        r = self.proxy.admin_call("GET", "/readyz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.content_type, "text/plain; charset=utf-8", r)
        self.assertEqual(r.text().strip(), "ready", r)

    def test_metrics(self):
        # A family appears once it has a series: one request gives the request families one.
        self.assertEqual(send(self.port, get_request(self.url("/echo"))).status, 200)
        self.wait_metric("airlock_requests_total", 1)
        r = self.proxy.admin_call("GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.content_type, METRICS_CONTENT_TYPE, r)
        m = Metrics(r.text())
        self.assertEqual(m.types.get("airlock_requests_total"), "counter")
        self.assertEqual(m.types.get("airlock_request_duration_seconds"), "histogram")
        self.assertEqual(m.types.get("airlock_connections_active"), "gauge")
        [build] = m.series("airlock_build_info")
        self.assertEqual(build.value, 1)
        self.assertTrue(build.labels.get("version"), build)
        version = self.proxy.policy_version()
        self.assertEqual(m.value("airlock_policy_info", version=version), 1, r.text())
        self.assertEqual(len(m.series("airlock_policy_info")), 1, r.text())
        self.assertEqual(m.value("airlock_policy_reloads_total", result="success",
                                 trigger="startup"), 1)
        stamp = m.value("airlock_policy_last_reload_success_timestamp_seconds")
        self.assertLess(abs(stamp - time.time()), 3600, "timestamp %s is not Unix time" % stamp)

    def test_policy(self):
        r = self.proxy.admin_call("GET", "/policy")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.content_type, "application/json", r)
        p = r.json()
        self.assertEqual(set(p), {"version", "source", "loaded_at", "last_attempt",
                                  "last_error", "restart_needed", "last_changes",
                                  "ca_fingerprint"}, p)
        self.assertEqual(p["version"], self.proxy.policy_version())
        self.assertEqual(p["source"], self.proxy.config_path)
        self.assertRegex(p["loaded_at"], RFC3339)
        self.assertRegex(p["last_attempt"], RFC3339)
        self.assertIsNone(p["last_error"])
        self.assertIsNone(p["restart_needed"])
        self.assertIsNone(p["ca_fingerprint"])  # no tls section in this policy

    def test_post_reload(self):
        before = self.proxy.reload_count("success", "api")
        r = self.proxy.admin_call("POST", "/reload")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.content_type, "text/plain; charset=utf-8", r)
        self.assertIn(self.proxy.policy_version()[:12], r.text())
        self.assertIn("(api)", r.text())
        self.assertEqual(self.proxy.reload_count("success", "api"), before + 1)
        self.assertIsNone(self.proxy.policy_status()["last_error"])

    def test_head(self):
        for path in ("/healthz", "/readyz", "/metrics", "/policy"):
            with self.subTest(path=path):
                r = self.proxy.admin_call("HEAD", path)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.body, b"", r)
                self.assertIsNotNone(r.header("Content-Type"), r)

    def test_wrong_methods_and_paths(self):
        for method, path, status, allow in (
                ("POST", "/metrics", 405, "GET, HEAD"), ("PUT", "/healthz", 405, "GET, HEAD"),
                ("DELETE", "/policy", 405, "GET, HEAD"), ("GET", "/reload", 405, "POST"),
                ("GET", "/nope", 404, None), ("GET", "/metrics/extra", 404, None),
                ("GET", "http://127.0.0.1/metrics", 404, None)):
            with self.subTest(method=method, path=path):
                r = self.proxy.admin_call(method, path)
                self.assertEqual(r.status, status, r)
                if allow:
                    self.assertEqual(r.header("Allow"), allow, r)

    def test_query_string_ignored(self):
        r = self.proxy.admin_call("GET", "/healthz?verbose=1")
        self.assertEqual(r.status, 200, r)


class DrainReadinessTest(unittest.TestCase):
    """SIGTERM with a slow request in flight: /readyz turns 503 at once and stays so while the
    request finishes; /healthz still answers; the request completes; exit 0."""

    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def test_readyz_503_while_draining(self):
        proxy = OpsAirlock(ops_policy([origin_rule(self.origin.port)]), name="drain")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        self.assertEqual(proxy.admin_call("GET", "/readyz").status, 200)
        slow_ms = int(env.t(2500))
        path = "/slow/%d" % slow_ms
        result = {}

        def slow():
            result["r"] = clients.curl(self.origin.url(path), proxy_port=proxy.port)

        t = threading.Thread(target=slow)
        t.start()
        self.assertTrue(self.origin.wait_seen(path, timeout=env.t(5), complete=False),
                        "the slow request never reached the origin")
        proxy.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        answers = []
        while time.monotonic() - sent < env.t(1):
            r = proxy.admin_call("GET", "/readyz")
            answers.append((round(time.monotonic() - sent, 3), r.status, r.text().strip()))
            if r.status == 503:
                break
            time.sleep(0.01)
        self.assertEqual(answers[-1][1], 503, "readyz during the drain: %r" % answers)
        self.assertTrue(t.is_alive(), "the slow request had already finished: the 503 was not "
                        "seen during the drain")
        self.assertEqual(answers[-1][2], "not ready")
        # Still 503 a little later, while the request is in flight; the process is alive.
        time.sleep(0.2)
        if t.is_alive():
            self.assertEqual(proxy.admin_call("GET", "/readyz").status, 503)
            self.assertEqual(proxy.admin_call("GET", "/healthz").status, 200)
        t.join(env.t(15))
        r = result.get("r")
        self.assertIsNotNone(r)
        self.assertEqual(r.status, 200, "the in-flight request was cut by the drain: %r" % r)
        self.assertEqual(proxy.stop(timeout=env.t(15)), 0, proxy.stderr()[-3000:])
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])


# -- the admin port is out of reach of the proxy port --------------------------------------------


class AdminNotThroughProxyTest(OpsTestCase):
    """The admin listener is one of the proxy's own endpoints: the address guard refuses it
    even when a rule names 127.0.0.1 with an allow_cidrs exception and the admin port."""

    adversarial = True

    @classmethod
    def policy(cls):
        cls.admin_port = closed_port()
        p = cls.origin.port
        a = cls.admin_port
        return ops_policy(
            [origin_rule(p),
             {"name": "admin", "hosts": ["127.0.0.1", "admin.test", "localhost"],
              "addresses": ["127.0.0.1"], "allow_cidrs": ["127.0.0.1/32"], "ports": [a],
              "methods": ["GET", "POST", "HEAD"], "paths": ["^/.*$"]},
             {"name": "admin-tunnel", "hosts": ["127.0.0.1", "admin.test"],
              "addresses": ["127.0.0.1"], "allow_cidrs": ["127.0.0.1/32"], "ports": [a]}],
            listen={"proxy": "127.0.0.1:0", "admin": "127.0.0.1:%d" % a})

    def test_admin_port_is_the_chosen_one(self):
        self.assertEqual(self.proxy.admin_port, self.admin_port)

    def test_admin_refused_through_proxy(self):
        before = self.proxy.metrics()
        for host in ("127.0.0.1", "admin.test", "127.1", "[::ffff:127.0.0.1]", "2130706433"):
            for method, path in (("GET", "/metrics"), ("GET", "/policy"), ("POST", "/reload"),
                                 ("GET", "/healthz")):
                with self.subTest(host=host, method=method, path=path):
                    url = "http://%s:%d%s" % (host, self.admin_port, path)
                    r = send(self.port, get_request(url, method=method))
                    self.assert_answer(r, "destination_ip_prohibited", msg=url)
                    self.assertNotIn(b"airlock_", r.body, "admin content came back")
        # Nothing reached the admin listener through the proxy: no POST /reload was served.
        after = self.proxy.metrics()
        self.assertEqual(after.value("airlock_policy_reloads_total"),
                         before.value("airlock_policy_reloads_total"))

    def test_admin_refused_by_connect(self):
        for host in ("127.0.0.1", "admin.test"):
            with self.subTest(host=host):
                authority = "%s:%d" % (host, self.admin_port)
                r = send(self.port, ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                                     % (authority, authority)).encode())
                self.assert_answer(r, "destination_ip_prohibited", msg=authority)

    def test_the_rule_itself_works_for_another_loopback_service(self):
        # The same shape of rule lets the origin through: the refusal above is the guard's
        # knowledge of the proxy's own endpoints, not a broken rule.
        r = self.curl(self.url("/echo/ok-%s" % marker()))
        self.assertEqual(r.status, 200, r)


# -- metrics -------------------------------------------------------------------------------------


class MetricsTrafficTest(OpsTestCase):
    adversarial = True
    threads = 2

    @classmethod
    def policy(cls):
        p = cls.origin.port
        cls.refused_port = closed_port()
        return ops_policy(
            [origin_rule(p),
             origin_rule(p, name="other", hosts=["other.test"]),
             origin_rule(cls.refused_port, name="refused", hosts=["refused.test"])],
            agents={"default": {"rules": ["origin", "refused"]},
                    "coder": {"rules": ["origin", "other"], "token_sha256": TOKEN_SHA256}})

    def delta(self, before, after, name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    def audit_tuple(self, path_marker):
        rec = self.assert_audit(path=lambda p: p is not None and path_marker in p)
        return (rec["agent"], rec["rule"] or "none", rec["decision"], rec["reason"])

    def test_requests_total_by_agent_rule_decision_reason(self):
        before = self.proxy.metrics()
        sent = []  # markers of the requests made

        def go(url, status, headers=()):
            m = marker()
            full = url.replace("MARK", m)
            r = send(self.port, get_request(full, headers=headers))
            self.assertIsNotNone(r, full)
            self.assertEqual(r.status, status, "%s: %r" % (full, r))
            sent.append(m)

        o = self.origin.port
        for _ in range(3):
            go("http://origin.test:%d/echo/MARK" % o, 200)
        for _ in range(2):
            go("http://nothere.test:%d/echo/MARK" % o, 403)
        go("http://origin.test:%d/forbidden/MARK" % o, 403)
        go("http://other.test:%d/echo/MARK" % o, 403)  # default may not use `other`
        go("http://other.test:%d/echo/MARK" % o, 200, [("Proxy-Authorization",
                                                        basic("coder", TOKEN))])
        go("http://other.test:%d/echo/MARK" % o, 407, [("Proxy-Authorization",
                                                        basic("coder", "wrong"))])
        expected = {}
        for m in sent:
            key = self.audit_tuple(m)
            expected[key] = expected.get(key, 0) + 1
        # The fixed points of the contract, whatever the audit says.
        self.assertEqual(expected.get(("default", "origin", "allow", "ok")), 3, expected)
        self.assertEqual(expected.get(("default", "none", "deny", "host_denied")), 3, expected)
        self.assertEqual(expected.get(("coder", "other", "allow", "ok")), 1, expected)
        after = self.wait_metrics(
            ("airlock_requests_total", before.value("airlock_requests_total") + len(sent), {}),
            ("airlock_request_duration_seconds_count",
             before.value("airlock_request_duration_seconds_count") + len(sent), {}))
        for (agent, rule, decision, reason), n in sorted(expected.items()):
            with self.subTest(agent=agent, rule=rule, decision=decision, reason=reason):
                self.assertEqual(self.delta(before, after, "airlock_requests_total", agent=agent,
                                            rule=rule, decision=decision, reason=reason), n,
                                 "metrics disagree with the audit trail")
        self.assertEqual(self.delta(before, after, "airlock_requests_total"), len(sent))
        self.assertEqual(self.delta(before, after, "airlock_request_duration_seconds_count",
                                    decision="allow"), 4)
        self.assertEqual(self.delta(before, after, "airlock_request_duration_seconds_count"),
                         len(sent))

    def test_bytes_by_direction(self):
        before = self.proxy.metrics()
        r = send(self.port, get_request(self.url("/bytes/5000")))
        self.assertEqual((r.status, len(r.body)), (200, 5000))
        r = send(self.port, get_request(self.url("/echo/%s" % marker()), method="POST",
                                        body=b"x" * 1234))
        self.assertEqual(r.status, 200)
        echo_len = len(r.body)
        bytes_total = "airlock_request_bytes_total"
        after = self.wait_metrics(
            (bytes_total, before.value(bytes_total, agent="default", direction="to_client") +
             5000 + echo_len, {"agent": "default", "direction": "to_client"}),
            (bytes_total, before.value(bytes_total, agent="default", direction="from_client") +
             1234, {"agent": "default", "direction": "from_client"}))
        self.assertEqual(self.delta(before, after, "airlock_request_bytes_total",
                                    agent="default", direction="to_client"), 5000 + echo_len)
        self.assertEqual(self.delta(before, after, "airlock_request_bytes_total",
                                    agent="default", direction="from_client"), 1234)

    def test_connections_active_and_total(self):
        # Earlier tests' connections are closed; let the proxy notice before counting.
        self.proxy.wait_for(
            lambda: self.proxy.metrics().value("airlock_connections_active") == 0)
        baseline = self.proxy.metrics()
        base_active = baseline.value("airlock_connections_active")
        self.assertEqual(base_active, 0, "connections counted with no client connected")
        conns = []
        try:
            for _ in range(4):
                c = clients.RawClient(self.port)
                conns.append(c)
                c.send(get_request(self.url("/echo/%s" % marker())))
                self.assertEqual(c.read_response().status, 200)
            m = self.proxy.metrics()
            self.assertEqual(m.value("airlock_connections_active"), base_active + 4, m.text)
            self.assertGreaterEqual(self.delta(baseline, m, "airlock_connections_total"), 4)
        finally:
            for c in conns:
                c.close()
        settled = self.proxy.wait_for(
            lambda: self.proxy.metrics().value("airlock_connections_active") == base_active)
        self.assertTrue(settled, "connections_active did not come back to %s: %s" % (
            base_active, self.proxy.metrics().value("airlock_connections_active")))

    def test_upstream_connect_refused(self):
        before = self.proxy.metrics()
        m = marker()
        url = "http://refused.test:%d/echo/%s" % (self.refused_port, m)
        r = send(self.port, get_request(url))
        self.assert_answer(r, "connect_refused")
        after = self.wait_metrics(
            ("airlock_upstream_errors_total", before.value("airlock_upstream_errors_total") + 1,
             {}),
            ("airlock_requests_total", before.value("airlock_requests_total", rule="refused") + 1,
             {"rule": "refused"}))
        self.assertEqual(self.delta(before, after, "airlock_upstream_errors_total",
                                    kind="connect_refused"), 1, after.text)
        self.assertEqual(self.delta(before, after, "airlock_upstream_errors_total"), 1)
        agent, rule, decision, reason = self.audit_tuple(m)
        self.assertEqual((agent, rule, reason), ("default", "refused", "connect_refused"))
        self.assertEqual(self.delta(before, after, "airlock_requests_total", agent="default",
                                    rule="refused", decision=decision,
                                    reason="connect_refused"), 1)

    def test_pool_counts(self):
        before = self.proxy.metrics()
        c = clients.RawClient(self.port)
        self.addCleanup(c.close)
        for _ in range(3):
            c.send(get_request(self.url("/echo/%s" % marker())))
            self.assertEqual(c.read_response().status, 200)
        after = self.wait_metric("airlock_upstream_pool_total",
                                 before.value("airlock_upstream_pool_total") + 3)
        self.assertEqual(self.delta(before, after, "airlock_upstream_pool_total"), 3)
        self.assertGreaterEqual(self.delta(before, after, "airlock_upstream_pool_total",
                                           result="hit"), 2, "keep-alive upstream not reused")

    def test_label_values_never_carry_request_data(self):
        m = marker()
        odd = "zq" + m  # appears nowhere but in what we send
        o = self.origin.port
        requests = [
            get_request("http://%s.test:%d/echo" % (odd, o)),
            get_request("http://origin.test:%d/echo/%s?%s=%s" % (o, odd, odd, odd)),
            get_request("http://origin.test:%d/%s" % (o, odd)),
            get_request("http://origin.test:%d/echo" % o, headers=[("User-Agent", odd),
                                                                  ("X-" + odd, odd)]),
            get_request("http://origin.test:%d/echo" % o,
                        headers=[("Proxy-Authorization", basic(odd, odd))]),
            get_request("http://origin.test:%d/echo" % o,
                        headers=[("Proxy-Authorization", basic("coder", odd))]),
            get_request("http://origin.test:%d/echo/%s" % (o, odd), method="DELETE"),
            get_request("http://origin.test:%d/echo" % o, method="X" + odd.upper()),
            get_request("http://%s.test:%d/echo" % (odd, self.refused_port)),
            get_request("http://origin.test:%d/echo/%%ff%%fe%s" % (o, odd)),
            get_request("http://%s:%d/echo" % ("\u00e9" + odd, o)),
            ("CONNECT %s.test:443 HTTP/1.1\r\nHost: %s.test:443\r\n\r\n" % (odd, odd)).encode(),
            ("GET ftp://%s.test/ HTTP/1.1\r\nHost: %s.test\r\n\r\n" % (odd, odd)).encode(),
            ("GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (odd, odd)).encode(),
            b"\x16\x03\x01garbage-" + odd.encode() + b"\r\n\r\n",
        ]
        for data in requests:
            try:
                send(self.port, data)
            except OSError:
                pass
        self.assertTrue(self.proxy.alive())
        text = self.proxy.metrics().text
        self.assertNotIn(m, text.lower(), "request data in /metrics:\n" + "\n".join(
            line for line in text.splitlines() if m in line.lower()))
        # Every label value of the request series comes from the policy or a fixed set.
        decisions = {"allow", "deny", "report", "error"}
        reasons = set(REASONS) | {"ok", "other"}
        # "-": refused before the agent was known (bad request, failed credentials).
        agents = {"default", "coder", "-", "_overflow", "_invalid"}
        rules = {"origin", "other", "refused", "none", "_overflow", "_invalid"}
        metrics = Metrics(text)
        for s in metrics.series("airlock_requests_total"):
            with self.subTest(series=s):
                self.assertEqual(set(s.labels), {"agent", "rule", "decision", "reason",
                                                 "protocol"})
                self.assertIn(s.labels["protocol"], {"h1", "h2", "ws"})
                self.assertIn(s.labels["agent"], agents)
                self.assertIn(s.labels["rule"], rules)
                self.assertIn(s.labels["decision"], decisions)
                self.assertIn(s.labels["reason"], reasons)
        for s in metrics.series("airlock_upstream_errors_total"):
            self.assertIn(s.labels["kind"], reasons, s)
        for s in metrics.series("airlock_request_bytes_total"):
            self.assertIn(s.labels["agent"], agents, s)

    def test_promtool_check_metrics(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            capabilities.require(self, "promtool")
        # Traffic of every kind first, so every family has series.
        o = self.origin.port
        send(self.port, get_request(self.url("/echo/%s" % marker())))
        send(self.port, get_request("http://nothere.test:%d/x" % o))
        send(self.port, get_request("http://refused.test:%d/echo" % self.refused_port))
        send(self.port, b"CONNECT nothere.test:443 HTTP/1.1\r\nHost: nothere.test:443\r\n\r\n")
        self.proxy.admin_call("POST", "/reload")
        r = self.proxy.admin_call("GET", "/metrics")
        self.assertEqual(r.status, 200)
        out = subprocess.run([promtool, "check", "metrics"], input=r.body, capture_output=True,
                             timeout=env.t(30))
        problems = (out.stdout + out.stderr).decode("utf-8", "replace")
        self.assertEqual(out.returncode, 0, "promtool check metrics found problems:\n%s"
                         % problems)
        self.assertEqual(problems.strip(), "", problems)


# -- reloads by every trigger --------------------------------------------------------------------

# (name, layout, how the file is written, trigger label, how the reload is fired)
TRIGGERS = [
    ("sighup", "linked", "inplace", "signal", "sighup"),
    ("file_rewrite", "plain", "inplace", "file", None),
    ("write_and_rename", "plain", "rename", "file", None),
    ("symlink_swap", "linked", "relink", "file", None),
    ("configmap_data_swap", "configmap", "swap", "file", None),
    ("post_reload", "linked", "inplace", "api", "post"),
]


class ReloadTriggerTest(unittest.TestCase):
    """Each generation N of the policy allows host gen-N.test (and origin.test always), so the
    decision for gen-N.test shows which generation is in force."""

    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def gen(self, n):
        p = self.origin.port
        return ops_policy([origin_rule(p), origin_rule(p, name="gen",
                                                       hosts=["gen-%d.test" % n])])

    def start(self, layout):
        proxy = OpsAirlock(self.gen(0), layout=layout, name="reload-" + layout)
        self.addCleanup(proxy.cleanup)
        proxy.start()
        self.addCleanup(self.check_clean_exit, proxy)
        return proxy

    def check_clean_exit(self, proxy):
        if proxy.alive():
            self.assertEqual(proxy.stop(), 0, proxy.stderr()[-3000:])
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])

    def decide(self, proxy, n):
        m = marker()
        r = send(proxy.port, get_request(self.origin.url("/echo/%s" % m, "gen-%d.test" % n)))
        self.assertIsNotNone(r, "no answer for gen-%d.test" % n)
        return r

    def assert_in_force(self, proxy, n, other):
        r = self.decide(proxy, n)
        self.assertEqual(r.status, 200, "gen-%d.test should be allowed: %r\nstderr:\n%s"
                         % (n, r, proxy.stderr()[-2000:]))
        r = self.decide(proxy, other)
        self.assertEqual((r.status, r.header("X-Airlock-Reason")), (403, "host_denied"),
                         "gen-%d.test should be denied: %r" % (other, r))

    def fire(self, proxy, fire):
        if fire == "sighup":
            proxy.send_signal(signal.SIGHUP)
        elif fire == "post":
            return proxy.admin_call("POST", "/reload")
        return None

    def settle(self):
        # Longer than the watcher's debounce (150 ms): a second, unwanted reload would show.
        time.sleep(env.t(0.6))

    def check_reload(self, layout, how, trigger, fire):
        proxy = self.start(layout)
        first = proxy.policy_version()
        self.assert_in_force(proxy, 0, 1)
        _, version = proxy.write_policy(self.gen(1), how)
        self.assertNotEqual(version, first)
        answer = self.fire(proxy, fire)
        if fire == "post":
            self.assertEqual(answer.status, 200, answer)
            self.assertIn(version[:12], answer.text())
        status = proxy.wait_version(version)
        self.assertIsNone(status["last_error"], status)
        self.assert_in_force(proxy, 1, 0)
        self.settle()
        m = proxy.metrics()
        counts = {(s.labels["result"], s.labels["trigger"]): s.value
                  for s in m.series("airlock_policy_reloads_total")}
        self.assertEqual(counts, {("success", "startup"): 1, ("success", trigger): 1},
                         "one change, one reload by %s" % trigger)
        self.assertEqual([s.labels["version"] for s in m.series("airlock_policy_info")],
                         [version])
        self.assertEqual(m.value("airlock_policy_reload_failures_total"), 0)
        self.assertIn("(%s)" % trigger, proxy.stderr())

    def check_refused(self, layout, how, trigger, fire):
        proxy = self.start(layout)
        first = proxy.policy_version()
        _, bad_version, line, key = proxy.write_bad_policy(self.gen(1), how)
        answer = self.fire(proxy, fire)
        where = r"%s:%d:\d+: %s: \S" % (re.escape(proxy.config_path), line, re.escape(key))
        if fire == "post":
            self.assertEqual(answer.status, 422, answer)
            self.assertEqual(answer.content_type, "text/plain; charset=utf-8", answer)
            self.assertRegex(answer.text(), where)
        proxy.wait_reload_count("failure", trigger, 1)
        stderr = proxy.wait_for(lambda: re.search(where, proxy.stderr()))
        self.assertTrue(stderr, "stderr lacks %r:\n%s" % (where, proxy.stderr()[-3000:]))
        status = proxy.policy_status()
        self.assertEqual(status["version"], first, status)
        self.assertIsNotNone(status["last_error"], status)
        self.assertRegex(status["last_error"], where)
        self.assertNotEqual(status["last_attempt"], None)
        # The previous policy still decides.
        self.assert_in_force(proxy, 0, 1)
        self.settle()
        m = proxy.metrics()
        counts = {(s.labels["result"], s.labels["trigger"]): s.value
                  for s in m.series("airlock_policy_reloads_total")}
        self.assertEqual(counts, {("success", "startup"): 1, ("failure", trigger): 1})
        self.assertEqual(m.value("airlock_policy_reload_failures_total"), 1)
        self.assertEqual([s.labels["version"] for s in m.series("airlock_policy_info")], [first])
        self.assertNotEqual(bad_version, first)
        return proxy

    def test_good_policy_after_a_bad_one_clears_last_error(self):
        proxy = self.check_refused("linked", "inplace", "signal", "sighup")
        _, version = proxy.write_policy(self.gen(2), "inplace")
        proxy.send_signal(signal.SIGHUP)
        status = proxy.wait_version(version)
        self.assertIsNone(status["last_error"], status)
        self.assert_in_force(proxy, 2, 0)
        self.assertEqual(proxy.reload_count("success", "signal"), 1)

    def test_unchanged_bytes_do_not_reload(self):
        # Touching the file (same bytes) is not a change.
        proxy = self.start("plain")
        with open(proxy.config_path, "rb") as f:
            data = f.read()
        with open(proxy.config_path, "wb") as f:
            f.write(data)
        os.utime(proxy.config_path)
        self.settle()
        self.assertEqual(proxy.reload_count("success", "file"), 0)
        self.assertEqual(proxy.reload_count("failure"), 0)

    def test_file_change_reloads_while_audit_in_same_folder_is_busy(self):
        """The audit file in the policy's folder (one working folder for everything): under
        steady traffic the audit file is written every flush (100 ms), which the watcher sees
        as changes in the folder; a policy change must still be picked up in bounded time."""
        proxy = OpsAirlock(self.gen(0), layout="plain", audit_beside_policy=True,
                           name="reload-busy-folder")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        self.addCleanup(self.check_clean_exit, proxy)
        stop = threading.Event()
        failures = []

        def load():
            c = clients.RawClient(proxy.port)
            try:
                for _ in range(2000):  # bounded; stopped much earlier
                    if stop.is_set():
                        return
                    c.send(get_request(self.origin.url("/echo/busy")))
                    r = c.read_response()
                    if r is None or r.status != 200:
                        failures.append(r)
                        return
                    time.sleep(0.02)
            finally:
                c.close()

        t = threading.Thread(target=load)
        t.start()
        try:
            # The load is going (some exchanges recorded) before the policy changes.
            self.assertTrue(proxy.wait_for(lambda: len(proxy.audit()) >= 5, timeout=env.t(10)))
            _, version = proxy.write_policy(self.gen(1), "rename")
            switched = proxy.wait_for(lambda: proxy.policy_status()["version"] == version,
                                      timeout=env.t(3))
        finally:
            stop.set()
            t.join(env.t(10))
        self.assertEqual(failures, [])
        if not switched:
            # Tell a starved debounce from a missed change: does it reload once traffic stops?
            quiet = time.monotonic()
            later = proxy.wait_for(lambda: proxy.policy_status()["version"] == version,
                                   timeout=env.t(2))
            self.fail("the policy file was replaced under steady traffic (audit file in the "
                      "same folder) and the proxy did not reload it within %.0f s; after the "
                      "traffic stopped it %s. Each audit flush re-arms the watcher's 150 ms "
                      "debounce, so it never fires while traffic flows." % (
                          env.t(3), "reloaded %.0f ms later" % ((time.monotonic() - quiet) *
                                                                1000) if later else
                          "still did not reload"))
        self.assert_in_force(proxy, 1, 0)


class WatcherStartupTest(unittest.TestCase):
    """Once the listening line is out, a change of the policy file must not be lost. The proxy
    sets up its file watch (and reads the bytes it compares against) only after printing that
    line, so a change made in between is taken as the starting state and never loaded."""

    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def test_change_right_after_listening_line_is_loaded(self):
        p = self.origin.port
        missed = []
        for i in range(8):
            proxy = OpsAirlock(ops_policy([origin_rule(p)]), name="watch-start")
            self.addCleanup(proxy.cleanup)
            proxy.start(wait_watch=False)
            _, version = proxy.write_policy(
                ops_policy([origin_rule(p), origin_rule(p, name="late", hosts=["late.test"])]),
                "rename")
            if not proxy.wait_for(lambda: proxy.policy_status()["version"] == version,
                                  timeout=env.t(2)):
                missed.append(i)
            self.assertEqual(proxy.stop(), 0)
        self.assertEqual(missed, [], "in %d of 8 starts a policy written right after the "
                         "listening line was never loaded (the file now differs from the "
                         "policy in force, and no later event comes)" % len(missed))


def _add_trigger_tests():
    for name, layout, how, trigger, fire in TRIGGERS:
        def good(self, layout=layout, how=how, trigger=trigger, fire=fire):
            self.check_reload(layout, how, trigger, fire)

        def bad(self, layout=layout, how=how, trigger=trigger, fire=fire):
            self.check_refused(layout, how, trigger, fire)

        good.__doc__ = "reload by %s (%s layout, %s) changes the decision" % (name, layout, how)
        bad.__doc__ = "a bad policy by %s is refused; the old one decides" % name
        setattr(ReloadTriggerTest, "test_reload_by_%s" % name, good)
        setattr(ReloadTriggerTest, "test_bad_policy_by_%s_refused" % name, bad)


_add_trigger_tests()


# -- SIGHUP reopens the audit file ---------------------------------------------------------------


class AuditReopenTest(OpsTestCase):
    @classmethod
    def policy(cls):
        return ops_policy([origin_rule(cls.origin.port)])

    def lines_with(self, path, m):
        try:
            with open(path, "rb") as f:
                return [line for line in f.read().split(b"\n") if m.encode() in line]
        except FileNotFoundError:
            return []

    def request(self, m):
        r = send(self.port, get_request(self.url("/echo/%s" % m)))
        self.assertEqual(r.status, 200, r)

    def test_sighup_reopens_audit_file(self):
        audit = self.proxy.audit_path
        rotated = audit + ".1"
        m1, m2, m3 = marker(), marker(), marker()
        self.request(m1)
        self.assertTrue(self.proxy.wait_for(lambda: self.lines_with(audit, m1)),
                        "first record never written")
        os.rename(audit, rotated)
        # Still the old file (the proxy holds it open) until SIGHUP.
        self.request(m2)
        self.assertTrue(self.proxy.wait_for(lambda: self.lines_with(rotated, m2)),
                        "record after the rename did not go to the renamed file")
        self.assertFalse(os.path.exists(audit), "the audit file came back before SIGHUP")
        before = self.proxy.reload_count("success", "signal")
        self.proxy.send_signal(signal.SIGHUP)
        self.proxy.wait_reload_count("success", "signal", before + 1)
        self.assertTrue(self.proxy.wait_for(lambda: os.path.exists(audit)),
                        "no new audit file at %s after SIGHUP" % audit)
        self.request(m3)
        self.assertTrue(self.proxy.wait_for(lambda: self.lines_with(audit, m3)),
                        "record after SIGHUP is not in the new file")
        self.assertEqual(self.lines_with(rotated, m3), [])
        self.assertEqual(self.lines_with(audit, m1) + self.lines_with(audit, m2), [])
        self.assertEqual(len(self.lines_with(rotated, m1)), 1)
        self.assertEqual(len(self.lines_with(rotated, m2)), 1)
        # Mode 0640 as documented for a new file.
        self.assertEqual(os.stat(audit).st_mode & 0o777, 0o640)


if __name__ == "__main__":
    unittest.main()
