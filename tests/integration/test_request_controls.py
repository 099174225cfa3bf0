"""Request controls with the real binary: identity (tokens, source, the launcher's relay),
rate limits and quotas (429 with Retry-After), byte-rate throttling, concurrency caps, the
circuit breaker and the operator's kill switch."""

import hashlib
import os
import socket
import struct
import tempfile
import threading
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule, sha256_hex
from test_tls_interception import InterceptionCase, inspect_rule

ALPHA_TOKEN = "alpha-token-5d1e"
BETA_TOKEN = "beta-token-77c2"
ADMIN = {"proxy": "127.0.0.1:0", "admin": "127.0.0.1:0"}


def bearer(token):
    return ("Proxy-Authorization", "Bearer " + token)


class ControlsTestCase(ProxyTestCase):
    def get(self, path, headers=(), host="origin.test", method="GET", body=b""):
        """One request on a fresh connection; the final response (or None)."""
        [r], _ = self.send_raw(self.request(method, self.url(path, host=host), headers=headers,
                                            body=body))
        return r

    def retry_after(self, r):
        value = r.header("Retry-After")
        self.assertIsNotNone(value, "no Retry-After on %r" % r)
        self.assertTrue(value.isdigit(), value)
        return int(value)


class IdentityTest(ControlsTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p, name="alpha-only", hosts=["alpha.test"]),
             origin_rule(p, name="beta-only", hosts=["beta.test"]),
             origin_rule(p)],
            agents={"default": {"rules": ["origin"]},
                    "alpha": {"rules": ["alpha-only"], "token_sha256": sha256_hex(ALPHA_TOKEN)},
                    "beta": {"rules": ["beta-only"], "token_sha256": sha256_hex(BETA_TOKEN)}})

    def test_two_agents_get_their_own_rules(self):
        m = marker()
        r = self.get("/echo/" + m, [bearer(ALPHA_TOKEN)], host="alpha.test")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.assert_audit(path="/echo/" + m)["agent"], "alpha")
        self.assert_answer(self.get("/echo/x", [bearer(ALPHA_TOKEN)], host="beta.test"),
                           "host_denied")
        r = self.get("/echo/" + m + "b", [bearer(BETA_TOKEN)], host="beta.test")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.assert_audit(path="/echo/" + m + "b")["agent"], "beta")
        self.assert_answer(self.get("/echo/x", [bearer(BETA_TOKEN)], host="alpha.test"),
                           "host_denied")
        # Nobody's token: the default agent, which has neither rule.
        self.assert_answer(self.get("/echo/x", host="alpha.test"), "host_denied")

    def test_forged_identity_headers_change_nothing(self):
        forged = [("X-Airlock-Agent", "alpha"), ("Forwarded", "for=127.0.0.9;by=alpha"),
                  ("X-Forwarded-For", "127.0.0.9"), ("X-Forwarded-User", "alpha"),
                  ("From", "alpha"), ("Authorization", "Bearer " + ALPHA_TOKEN)]
        m = marker()
        r = self.get("/echo/" + m, forged, host="alpha.test")
        self.assert_answer(r, "host_denied")
        rec = self.assert_audit(path="/echo/" + m)
        self.assertEqual(rec["agent"], "default")

    def test_name_without_its_token_is_refused(self):
        import base64
        for value in ("Basic " + base64.b64encode(b"alpha:" + BETA_TOKEN.encode()).decode(),
                      "Basic " + base64.b64encode(b"alpha:").decode(),
                      "Bearer " + ALPHA_TOKEN + "x",
                      "Bearer " + sha256_hex(ALPHA_TOKEN)):
            r = self.get("/echo/x", [("Proxy-Authorization", value)], host="alpha.test")
            self.assert_answer(r, "auth_required", msg=value)


def proxy_v2_header(agent, src=("127.0.0.1", 40000), dst=("127.0.0.1", 3128)):
    """A PROXY protocol v2 header (PROXY command, TCP over IPv4) with the agent TLV 0xE0."""
    addresses = socket.inet_aton(src[0]) + socket.inet_aton(dst[0]) + struct.pack(
        "!HH", src[1], dst[1])
    value = agent.encode()
    tlv = struct.pack("!BH", 0xE0, len(value)) + value
    body = addresses + tlv
    return (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) +
            body)


class RelayIdentityTest(ControlsTestCase):
    """The relay listener (a Unix socket here): the agent named in the PROXY v2 header is the
    identity of every request on the connection; nothing the requests say changes it."""

    @classmethod
    def extra_setup(cls):
        cls.sock_dir = tempfile.TemporaryDirectory(prefix="airlock-relay-")
        cls.sock_path = os.path.join(cls.sock_dir.name, "relay.sock")

    @classmethod
    def extra_teardown(cls):
        cls.sock_dir.cleanup()

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p, name="alpha-only", hosts=["alpha.test"]),
             origin_rule(p, name="beta-only", hosts=["beta.test"])],
            agents={"default": {"rules": []},
                    "alpha": {"rules": ["alpha-only"], "token_sha256": sha256_hex(ALPHA_TOKEN)},
                    "beta": {"rules": ["beta-only"], "token_sha256": sha256_hex(BETA_TOKEN)}},
            listen={"proxy": "127.0.0.1:0", "admin": "off", "relay": cls.sock_path})

    def relay(self, data, header=None):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(env.t(10))
        self.addCleanup(s.close)
        s.connect(self.sock_path)
        s.sendall((proxy_v2_header("alpha") if header is None else header) + data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out

    def test_socket_is_private(self):
        mode = os.stat(self.sock_path).st_mode & 0o777
        self.assertEqual(mode & 0o007, 0, oct(mode))

    def test_relay_agent_is_the_identity(self):
        m = marker()
        req = self.request("GET", self.url("/echo/" + m, host="alpha.test"),
                           headers=[("Connection", "close")])
        out = self.relay(req)
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out[:300])
        self.assertEqual(self.assert_audit(path="/echo/" + m)["agent"], "alpha")

    def test_other_agents_credentials_do_not_change_it(self):
        m = marker()
        req = self.request("GET", self.url("/echo/" + m, host="beta.test"),
                           headers=[bearer(BETA_TOKEN), ("Connection", "close")])
        out = self.relay(req)
        self.assertTrue(out.startswith(b"HTTP/1.1 403"), out[:300])
        rec = self.assert_audit(path="/echo/" + m)
        self.assertEqual(rec["agent"], "alpha")
        self.assertEqual(rec["reason"], "host_denied")

    def test_connection_without_header_is_closed_unanswered(self):
        req = self.request("GET", self.url("/echo/x", host="alpha.test"))
        out = self.relay(req, header=b"")
        self.assertEqual(out, b"")
        out = self.relay(req, header=b"PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\n")
        self.assertEqual(out, b"")

    def test_unknown_agent_is_refused(self):
        req = self.request("GET", self.url("/echo/x", host="alpha.test"),
                           headers=[("Connection", "close")])
        out = self.relay(req, header=proxy_v2_header("nobody"))
        self.assertTrue(out.startswith(b"HTTP/1.1 407"), out[:300])


class RateLimitTest(ControlsTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p, name="limited", hosts=["limited.test"],
                         rate={"requests_per_second": 1, "burst": 3}),
             origin_rule(p, name="reloaded", hosts=["reloaded.test"],
                         rate={"requests_per_minute": 1}),
             origin_rule(p, name="free", hosts=["free.test"]),
             origin_rule(p, name="quota", hosts=["quota.test"],
                         rate={"requests_per_hour": 2})],
            agents={"default": {"rules": ["limited", "free", "quota"]},
                    "alpha": {"rules": ["limited", "reloaded", "free"],
                              "token_sha256": sha256_hex(ALPHA_TOKEN)}},
            listen=dict(ADMIN))

    def test_burst_then_429_with_retry_after_then_pass_again(self):
        statuses = [self.get("/echo/r", [bearer(ALPHA_TOKEN)], host="limited.test").status
                    for _ in range(3)]
        self.assertEqual(statuses, [200, 200, 200])
        m = marker()
        r = self.get("/echo/" + m, [bearer(ALPHA_TOKEN)], host="limited.test")
        self.assert_answer(r, "rate_limited")
        self.assertIn("requests_per_second=1", r.header("Proxy-Status"))
        self.assertIn("limited", r.header("Proxy-Status"))
        wait = self.retry_after(r)
        self.assertGreaterEqual(wait, 1)
        self.assertLessEqual(wait, 2)
        self.assertEqual(self.origin.seen(m), [], "a rate-limited request reached the origin")
        rec = self.assert_audit(path="/echo/" + m)
        self.assertEqual(rec["reason"], "rate_limited")
        self.assertEqual(rec["status"], 429)
        # Other rules of the same agent are not affected (the bucket is per agent and rule).
        self.assertEqual(self.get("/echo/f", [bearer(ALPHA_TOKEN)], host="free.test").status, 200)
        # Another agent on the same rule has its own bucket.
        self.assertEqual(self.get("/echo/d", host="limited.test").status, 200)
        time.sleep(wait + 0.1)
        self.assertEqual(
            self.get("/echo/again", [bearer(ALPHA_TOKEN)], host="limited.test").status, 200)

    def test_quota_per_hour(self):
        for _ in range(2):
            self.assertEqual(self.get("/echo/q", host="quota.test").status, 200)
        r = self.get("/echo/q", host="quota.test")
        self.assert_answer(r, "quota_exceeded")
        self.assertIn("requests_per_hour=2", r.header("Proxy-Status"))
        # The quota refills at 2 per hour: the next request in half an hour (1800 s).
        self.assertTrue(1700 <= self.retry_after(r) <= 1800, r.header("Retry-After"))

    def test_buckets_survive_a_reload(self):
        self.assertEqual(
            self.get("/echo/s", [bearer(ALPHA_TOKEN)], host="reloaded.test").status, 200)
        self.assert_answer(self.get("/echo/s", [bearer(ALPHA_TOKEN)], host="reloaded.test"),
                           "rate_limited")
        r = admin_call(self.proxy.admin, "POST", "/reload")
        self.assertEqual(r.status, 200, r)
        r = self.get("/echo/s", [bearer(ALPHA_TOKEN)], host="reloaded.test")
        self.assert_answer(r, "rate_limited")


class ByteRateTest(ControlsTestCase):
    RATE = 256 * 1024  # bytes per second

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p, name="slow", hosts=["slow.test"],
                         rate={"download_bytes_per_second": cls.RATE,
                               "upload_bytes_per_second": cls.RATE}),
             origin_rule(p, name="fast", hosts=["fast.test"])])

    def timed_download(self, host, size):
        """(bytes, seconds) of the body after the first RATE bytes (the bucket's burst)."""
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=env.t(20))
        self.addCleanup(s.close)
        s.sendall(self.request("GET", self.url("/bytes/%d" % size, host=host),
                               headers=[("Connection", "close")]))
        data = b""
        start = None
        start_len = 0
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if start is None and len(data) >= self.RATE + 1024:
                start, start_len = time.monotonic(), len(data)
        end = time.monotonic()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head[:200])
        self.assertEqual(len(body), size)
        return len(data) - start_len, end - start

    def test_download_is_throttled_to_its_rate(self):
        moved, seconds = self.timed_download("slow.test", 1024 * 1024)
        rate = moved / seconds
        self.assertGreater(rate, self.RATE * 0.8, "%.0f B/s" % rate)
        self.assertLess(rate, self.RATE * 1.2, "%.0f B/s" % rate)

    def test_unthrottled_rule_is_fast(self):
        moved, seconds = self.timed_download("fast.test", 4 * 1024 * 1024)
        self.assertGreater(moved / seconds, self.RATE * 4)

    def test_upload_is_throttled(self):
        body = os.urandom(768 * 1024)
        start = time.monotonic()
        r = self.curl(self.url("/echo/up", host="slow.test"),
                      args=["--data-binary", "@-", "-H", "Content-Type: application/octet-stream"],
                      input=body)
        seconds = time.monotonic() - start
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(body).hexdigest())
        # One second of burst, then the rest at RATE: (768 - 256) KiB at 256 KiB/s = 2 s.
        self.assertGreater(seconds, 2 * 0.8)
        self.assertLess(seconds, 2 * 1.2 + 0.5)


class ConcurrencyTest(ControlsTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p)],
            agents={"default": {"rules": ["origin"], "rate": {"concurrent": 2}}})

    def test_cap_holds_and_frees(self):
        results = []

        def slow():
            results.append(self.curl(self.url("/slow/1500")).status)

        threads = [threading.Thread(target=slow) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)  # both are in flight at the origin now
        r = self.get("/echo/third")
        self.assert_answer(r, "concurrency_limited")
        self.assertIn("concurrent=2", r.header("Proxy-Status"))
        for t in threads:
            t.join()
        self.assertEqual(results, [200, 200])
        self.assertEqual(self.get("/echo/after").status, 200)


class BreakerTest(ControlsTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p)],
            agents={"default": {"rules": ["origin"],
                                "breaker": {"max_failures": 3, "window": "10s",
                                            "cooldown": "2s"}}},
            listen=dict(ADMIN))

    def test_trips_on_refusals_and_recovers(self):
        self.assertEqual(self.get("/echo/ok").status, 200)
        for _ in range(4):
            self.assert_answer(self.get("/echo/x", host="elsewhere.test"), "host_denied")
        # A refusal is counted when its exchange is recorded, just after the answer went out:
        # wait for the fourth to land.
        deadline = time.monotonic() + env.t(3)
        while time.monotonic() < deadline:
            agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
            if [a for a in agents if a["name"] == "default"][0]["suspended_seconds_left"] > 0:
                break
            time.sleep(0.02)
        m = marker()
        r = self.get("/echo/" + m)
        self.assert_answer(r, "agent_suspended")
        self.assertEqual(self.origin.seen(m), [])
        wait = self.retry_after(r)
        self.assertTrue(1 <= wait <= 2, wait)
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        me = [a for a in agents if a["name"] == "default"][0]
        self.assertGreater(me["suspended_seconds_left"], 0)
        metrics = admin_call(self.proxy.admin, "GET", "/metrics").text()
        self.assertIn('airlock_breaker_trips_total{agent="default"} 1', metrics)
        time.sleep(wait + 0.2)
        self.assertEqual(self.get("/echo/recovered").status, 200)

    def test_kill_switch(self):
        r = admin_call(self.proxy.admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r)
        try:
            m = marker()
            self.assert_answer(self.get("/echo/" + m), "agent_stopped")
            self.assertEqual(self.origin.seen(m), [])
            agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
            self.assertTrue([a for a in agents if a["name"] == "default"][0]["stopped"])
            # A reload does not resume a stopped agent.
            self.assertEqual(admin_call(self.proxy.admin, "POST", "/reload").status, 200)
            self.assert_answer(self.get("/echo/still"), "agent_stopped")
        finally:
            r = admin_call(self.proxy.admin, "POST", "/agents/default/resume")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.get("/echo/resumed").status, 200)

    def test_kill_switch_unknown_agent(self):
        r = admin_call(self.proxy.admin, "POST", "/agents/nobody/stop")
        self.assertEqual(r.status, 404, r)
        r = admin_call(self.proxy.admin, "GET", "/agents/default/stop")
        self.assertEqual(r.status, 405, r)


class InspectedControlsTest(InterceptionCase):
    """Inside an intercepted tunnel each request is rated and validated like a plain one; the
    tunnel itself holds the agent's concurrency slot, so its own requests are not refused by
    it."""

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port),
            inspect_rule(cls.good.port, rate={"requests_per_second": 1, "burst": 3},
                         query={"params": {"q": "^[a-z]+$"}}),
        ], tls=cls.tls_section(),
            agents={"default": {"rules": ["origin", "inspected"], "rate": {"concurrent": 1}}})
        return p

    def test_rate_and_validation_inside_tls(self):
        m = marker()
        urls = [self.insp_url("/echo/allowed-%s-%d?q=abc" % (m, i)) for i in range(3)]
        # Three requests on one kept-alive tunnel: all pass (burst 3, concurrent 1 held by the
        # tunnel itself).
        r = self.curl_ica(*urls)
        self.assertEqual(r.returncode, 0, r)
        # (The first response curl lists is the proxy's 200 to CONNECT.)
        self.assertEqual([x.status for x in r.responses], [200, 200, 200, 200], r)
        # The fourth in the same second: 429 inside TLS, with its reason.
        r = self.curl_ica(self.insp_url("/echo/allowed-%s-4?q=abc" % m))
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "rate_limited")
        self.assertIsNotNone(r.header("Retry-After"))
        time.sleep(1.1)
        r = self.curl_ica(self.insp_url("/echo/allowed-%s-5?q=ABC" % m))
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "query_denied")
        self.assertEqual(self.good.seen("%s-5" % m), [])


if __name__ == "__main__":
    unittest.main()
