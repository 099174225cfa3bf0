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

from harness import clients, env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.origin import RawOrigin
from harness.proxy import make_policy, origin_rule, sha256_hex, tunnel_rule
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

    def wait_for_status(self, status, path, headers=(), host="origin.test", deadline=10):
        """Asks again (a fresh request each time) until the answer has `status`, within a
        generous deadline: waiting on the condition, not on a clock."""
        end = time.monotonic() + env.t(deadline)
        while True:
            r = self.get(path, headers, host=host)
            if r is not None and r.status == status or time.monotonic() > end:
                return r
            time.sleep(0.1)

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
            # One per second with a burst of 3: whatever the machine's speed, the fourth request
            # within the same second (or the first unanswered one) is refused, since tests
            # count requests, not time.
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
        # The burst passes; then requests are refused. On a slow (sanitizer) build a token may
        # refill between requests, so count: at least the burst passed, and a refusal came
        # within a bounded number of requests (each refill needs a whole second).
        statuses = []
        for _ in range(12):
            m = marker()
            r = self.get("/echo/" + m, [bearer(ALPHA_TOKEN)], host="limited.test")
            statuses.append(r.status)
            if r.status != 200:
                break
        self.assertGreaterEqual(statuses.count(200), 3, statuses)
        self.assertEqual(statuses[-1], 429, statuses)
        self.assert_answer(r, "rate_limited")
        self.assertIn("requests_per_second=1", r.header("Proxy-Status"))
        self.assertIn("limited", r.header("Proxy-Status"))
        wait = self.retry_after(r)
        self.assertGreaterEqual(wait, 1)
        self.assertLessEqual(wait, 2)
        rec = self.assert_audit(path="/echo/" + m)
        self.assertEqual(self.origin.seen(m), [], "a rate-limited request reached the origin")
        self.assertEqual(rec["reason"], "rate_limited")
        self.assertEqual(rec["status"], 429)
        # Other rules of the same agent are not affected (the bucket is per agent and rule).
        self.assertEqual(self.get("/echo/f", [bearer(ALPHA_TOKEN)], host="free.test").status, 200)
        # Another agent on the same rule has its own bucket.
        self.assertEqual(self.get("/echo/d", host="limited.test").status, 200)
        # And passes again once a token refilled (Retry-After seconds; polled, not slept).
        r = self.wait_for_status(200, "/echo/again", [bearer(ALPHA_TOKEN)], host="limited.test",
                                 deadline=wait + 5)
        self.assertEqual(r.status, 200, r)

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
    TUNNEL_BYTES = 1024 * 1024

    @classmethod
    def extra_setup(cls):
        # An opaque-tunnel origin: after the client's first bytes (a ClientHello), it sends
        # TUNNEL_BYTES and closes.
        cls.sink = RawOrigin(cls.send_after_hello).start()

    @classmethod
    def extra_teardown(cls):
        cls.sink.stop()

    @classmethod
    def send_after_hello(cls, conn, record):
        record["data"] += conn.recv(65536)
        conn.sendall(b"x" * cls.TUNNEL_BYTES)

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p, name="slow", hosts=["slow.test"],
                         rate={"download_bytes_per_second": cls.RATE,
                               "upload_bytes_per_second": cls.RATE}),
             origin_rule(p, name="fast", hosts=["fast.test"]),
             tunnel_rule(cls.sink.port, name="slow-tunnel", hosts=["127.0.0.1"], addresses=None,
                         rate={"download_bytes_per_second": cls.RATE})])

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

    # Throttling is asserted as a floor on the time the transfer needs, which a slow machine
    # only makes longer: (size - burst) / RATE seconds at least (20% slack for the token
    # bucket's granularity). Exact rates are a benchmark (bench/), not a test. The upper bounds
    # are there only to catch a transfer stuck far beyond its rate, scaled for sanitizers.

    def floor_seconds(self, size):
        return (size - self.RATE) / self.RATE * 0.8

    def test_download_is_throttled_to_its_rate(self):
        size = 1024 * 1024
        moved, seconds = self.timed_download("slow.test", size)
        self.assertGreaterEqual(seconds, (moved - self.RATE) / self.RATE * 0.8,
                                "%d bytes in %.2fs: faster than the rate" % (moved, seconds))
        self.assertLess(seconds, env.t(4 * moved / self.RATE + 5), "far slower than the rate")

    def test_unthrottled_rule_is_not_throttled(self):
        # 4 MiB through the unthrottled rule must not take what the slow rule's rate would
        # impose ((4 MiB - burst) / RATE = 15 s): the rate belongs to its rule only.
        size = 4 * 1024 * 1024
        moved, seconds = self.timed_download("fast.test", size)
        self.assertLess(seconds, self.floor_seconds(moved),
                        "%d bytes in %.2fs: throttled like the slow rule" % (moved, seconds))

    def test_tunnel_download_is_throttled(self):
        # docs/policy.md: byte rates apply to tunnels too (counted on the tunnel's bytes).
        c = self.raw(timeout=env.t(60))
        self.addCleanup(c.close)
        c.send("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % self.sink.port)
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        c.take()
        c.send(clients.client_hello(None))
        start = time.monotonic()
        c.read_until_close(env.t(60))
        seconds = time.monotonic() - start
        self.assertEqual(len(c.buffer), self.TUNNEL_BYTES, "the tunnel's bytes arrived whole")
        self.assertGreaterEqual(seconds, self.floor_seconds(self.TUNNEL_BYTES),
                                "%d bytes in %.2fs: the tunnel was not throttled"
                                % (self.TUNNEL_BYTES, seconds))

    def test_upload_is_throttled(self):
        body = os.urandom(768 * 1024)
        start = time.monotonic()
        r = self.curl(self.url("/echo/up", host="slow.test"),
                      args=["--data-binary", "@-", "-H", "Content-Type: application/octet-stream"],
                      input=body, max_time=env.t(60))
        seconds = time.monotonic() - start
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(body).hexdigest())
        # One second of burst, then the rest at RATE: (768 - 256) KiB at 256 KiB/s = 2 s.
        self.assertGreaterEqual(seconds, self.floor_seconds(len(body)))
        self.assertLess(seconds, env.t(4 * len(body) / self.RATE + 5))


class ConcurrencyTest(ControlsTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p)],
            agents={"default": {"rules": ["origin"], "rate": {"concurrent": 2}}})

    def test_cap_holds_and_frees(self):
        results = []
        m = marker()
        # Long enough that both are still in flight when the third is sent, on any machine:
        # the third goes out as soon as the origin saw both.
        hold = int(env.t(3000))

        def slow(i):
            results.append(self.curl(self.url("/slow/%d?%s-%d" % (hold, m, i)),
                                     max_time=env.t(30)).status)

        threads = [threading.Thread(target=slow, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + env.t(10)
        while len(self.origin.seen(m)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(len(self.origin.seen(m)), 2, "both slow requests reach the origin")
        r = self.get("/echo/third")
        self.assert_answer(r, "concurrency_limited")
        self.assertIn("concurrent=2", r.header("Proxy-Status"))
        for t in threads:
            t.join()
        self.assertEqual(results, [200, 200])
        self.assertEqual(self.get("/echo/after").status, 200)


class QuotaStatusTest(ControlsTestCase):
    """GET /agents says what is left of an agent's hourly quotas (the console shows it)."""

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p)],
            agents={"default": {"rules": ["origin"],
                                "rate": {"requests_per_hour": 5, "bytes_per_hour": "1MiB"}},
                    "alpha": {"rules": ["origin"], "token_sha256": sha256_hex(ALPHA_TOKEN)}},
            listen=dict(ADMIN))

    def test_left_of_each_quota(self):
        for _ in range(2):
            self.assertEqual(self.get("/echo/q").status, 200)
        self.assertEqual(self.get("/echo/a", [bearer(ALPHA_TOKEN)]).status, 200)
        agents = {a["name"]: a for a in
                  admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]}
        self.assertEqual(agents["default"]["requests_per_hour_left"], 3, agents)
        left = agents["default"]["bytes_per_hour_left"]
        self.assertIsNotNone(left, agents)
        self.assertLessEqual(left, 1 << 20)
        self.assertGreater(left, (1 << 20) - 4096)  # two small echoed bodies
        # No quota: null, not a number that reads as exhausted.
        self.assertIsNone(agents["alpha"]["requests_per_hour_left"], agents)
        self.assertIsNone(agents["alpha"]["bytes_per_hour_left"], agents)


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
        # A host no rule allows gets the same answer: a suspended agent cannot sort hosts into
        # allowed (agent_suspended) and not (host_denied) by its refusals.
        self.assert_answer(self.get("/echo/x", host="elsewhere.test"), "agent_suspended")
        agents = admin_call(self.proxy.admin, "GET", "/agents").json()["agents"]
        me = [a for a in agents if a["name"] == "default"][0]
        self.assertGreater(me["suspended_seconds_left"], 0)
        metrics = admin_call(self.proxy.admin, "GET", "/metrics").text()
        self.assertIn('airlock_breaker_trips_total{agent="default"} 1', metrics)
        # Recovers after the cooldown (polled with a generous deadline, not slept).
        r = self.wait_for_status(200, "/echo/recovered", deadline=wait + 5)
        self.assertEqual(r.status, 200, r)

    def test_kill_switch(self):
        r = admin_call(self.proxy.admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r)
        try:
            m = marker()
            self.assert_answer(self.get("/echo/" + m), "agent_stopped")
            self.assertEqual(self.origin.seen(m), [])
            # The same for a host no rule allows, a port and a CONNECT: no answer tells the
            # stopped agent what its rules allow.
            self.assert_answer(self.get("/echo/x", host="elsewhere.test"), "agent_stopped")
            [r], _ = self.send_raw(b"CONNECT elsewhere.test:443 HTTP/1.1\r\n"
                                   b"Host: elsewhere.test:443\r\n\r\n")
            self.assert_answer(r, "agent_stopped")
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
    CONNECT is a request too, and its tunnel holds the agent's concurrency slot, so its own
    requests are not refused by it."""

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port),
            # A burst of 3, refilled once a minute: no token can come back during the test,
            # however slow the (sanitizer) build, so the third request is refused for sure.
            inspect_rule(cls.good.port, rate={"requests_per_minute": 1, "burst": 3},
                         query={"params": {"q": "^[a-z]+$"}}),
            inspect_rule(cls.good.port, name="validated", hosts=["valid.test"],
                         query={"params": {"q": "^[a-z]+$"}}),
        ], tls=cls.tls_section(),
            agents={"default": {"rules": ["origin", "inspected", "validated"],
                                "rate": {"concurrent": 1}}})
        return p

    def test_rate_and_validation_inside_tls(self):
        m = marker()
        urls = [self.insp_url("/echo/allowed-%s-%d?q=abc" % (m, i)) for i in range(3)]
        # One kept-alive tunnel: its CONNECT takes a token (it is a request), two requests
        # pass (burst 3, concurrent 1 held by the tunnel itself), and the third is refused 429
        # inside TLS, with its reason.
        r = self.curl_ica(*urls)
        # (The first response curl lists is the proxy's 200 to CONNECT.)
        self.assertEqual([x.status for x in r.responses], [200, 200, 200, 429], r)
        self.assertEqual(r.header("X-Airlock-Reason"), "rate_limited")
        self.assertIsNotNone(r.header("Retry-After"))
        self.assert_audit(scheme="https", path="/echo/allowed-%s-2" % m, reason="rate_limited")
        self.assertEqual(self.good.seen("%s-2" % m), [])
        # Validation inside TLS (a rule without a rate, so no bucket is involved).
        r = self.curl_ica(self.insp_url("/echo/allowed-%s-5?q=ABC" % m, host="valid.test"))
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "query_denied")
        self.assert_audit(scheme="https", path="/echo/allowed-%s-5" % m, reason="query_denied")
        self.assertEqual(self.good.seen("%s-5" % m), [])


if __name__ == "__main__":
    unittest.main()
