"""Replicas sharing their limits through Redis (`state: redis`, docs/operations.md "Shared
state"): a real redis-server on loopback and three `airlock proxy` replicas. An agent's rate
limit and hourly quota hold for the fleet under concurrent load spread over all three (within
the documented bound); with the store stopped mid-load, each on_unavailable mode does what it
says, no request hangs past the timeout, and the replicas recover by themselves."""

import json
import threading
import time
import unittest

from harness import env
from harness.base import marker
from harness.certs import TestCA
from harness.clients import exchange
from harness.ops_admin import admin_call, parse_metrics
from harness.origin import OriginServer
from harness.proxy import Airlock, make_policy, origin_rule
from harness.redis import RedisServer

REPLICAS = 3


class FleetCase(unittest.TestCase):
    """One origin, one redis-server, REPLICAS proxies per class."""

    rate = {"requests_per_minute": 30}
    on_unavailable = "local"
    timeout_ms = 200
    redis_tls = False  # a TLS-only redis-server (state.tls), its CA made at run time

    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()
        cls.ca = TestCA() if cls.redis_tls else None
        cls.redis = RedisServer(tls=cls.ca).start()
        cls.key_prefix = "t%s:" % marker()  # the same for a replica that restarts
        cls.proxies = []
        try:
            for i in range(REPLICAS):
                cls.proxies.append(cls.start_replica(i))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(cls.origin.port)],
                        agents={"default": {"rules": ["origin"], "rate": dict(cls.rate)}})
        p["listen"]["admin"] = "127.0.0.1:0"
        p["state"] = {"backend": "redis", "address": cls.redis.address,
                      "key_prefix": cls.key_prefix, "timeout_ms": cls.timeout_ms,
                      "on_unavailable": cls.on_unavailable, "replicas": REPLICAS}
        if cls.ca is not None:
            p["state"]["tls"] = {"ca": cls.ca.ca_cert}  # the name: the address's 127.0.0.1
        return p

    @classmethod
    def start_replica(cls, i):
        proxy = Airlock(cls.policy(), threads=1, name="%s-%d" % (cls.__name__, i))
        try:
            return proxy.start()
        except BaseException:
            proxy.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        problems = []
        for p in getattr(cls, "proxies", []):
            if p.alive() and p.stop() != 0:
                problems.append("a replica exited %s" % p.returncode)
            reports = p.sanitizer_reports()
            if reports:
                problems.append("sanitizer reports:\n" + "\n".join(reports[:20]))
            p.cleanup()
        cls.redis.cleanup()
        if cls.ca is not None:
            cls.ca.cleanup()
        cls.origin.stop()
        if problems:
            raise AssertionError("; ".join(problems))

    def setUp(self):
        # Every test starts with a reachable store and full buckets.
        if self.redis.proc is None:
            self.redis.start()
        self.wait_for(lambda: all(self.store_up(p) == 1 for p in self.proxies),
                      "every replica sees the store")
        self.redis.call("FLUSHALL")

    def wait_for(self, condition, what, within=None):
        deadline = time.monotonic() + (within or env.t(15))
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.05)
        self.fail("not within the deadline: %s" % what)

    def store_up(self, proxy):
        r = admin_call(proxy.admin, "GET", "/metrics")
        for s in parse_metrics(r.body.decode())[0]:
            if s.name == "airlock_state_store_up":
                return s.value
        return None

    def get(self, proxy, timeout=None, path=None):
        """One GET through `proxy`: (status, reason token, seconds it took)."""
        url = "http://origin.test:%d%s" % (self.origin.port, path or "/echo/" + marker())
        data = ("GET %s HTTP/1.1\r\nHost: origin.test:%d\r\nConnection: close\r\n\r\n"
                % (url, self.origin.port)).encode()
        started = time.monotonic()
        responses, client = exchange(proxy.port, data, timeout=timeout or env.t(10))
        client.close()
        took = time.monotonic() - started
        if not responses:
            return None, None, took
        r = responses[0]
        return r.status, r.header("X-Airlock-Reason"), took

    def restart(self, i):
        """Stops replica i and starts a new one with the same policy (and store)."""
        old = self.proxies[i]
        self.assertEqual(old.stop(), 0)
        self.assertEqual(old.sanitizer_reports(), [])
        old.cleanup()
        self.proxies[i] = self.start_replica(i)
        return self.proxies[i]

    def load(self, per_replica, path=None):
        """`per_replica` requests on each replica, all replicas at once: every answer."""
        answers = []
        lock = threading.Lock()

        def run(proxy):
            for _ in range(per_replica):
                a = self.get(proxy, path=path)
                with lock:
                    answers.append(a)

        threads = [threading.Thread(target=run, args=(p,)) for p in self.proxies]
        for t in threads:
            t.start()
        for t in threads:
            t.join(env.t(120))
        self.assertEqual(len(answers), per_replica * len(self.proxies), "a request hung")
        return answers


class SharedRateLimitTest(FleetCase):
    rate = {"requests_per_minute": 30}

    def test_rate_limit_holds_for_the_fleet(self):
        started = time.monotonic()
        answers = self.load(30)  # 90 requests; one replica alone would admit 30
        elapsed = time.monotonic() - started
        admitted = sum(1 for s, _, _ in answers if s == 200)
        refused = [r for s, r, _ in answers if s != 200]
        # docs/operations.md: at most the bucket (30) plus what refills meanwhile (30/min)
        # plus the units leased and unused on each replica (batch 2: 1 each).
        bound = 30 + elapsed * 30 / 60 + REPLICAS * 1 + 1
        self.assertLessEqual(admitted, bound, answers)
        self.assertGreaterEqual(admitted, 20, answers)
        self.assertTrue(refused and all(r == "rate_limited" for r in refused), refused)



class SharedQuotaTest(FleetCase):
    rate = {"requests_per_hour": 12}

    def test_hourly_quota_holds_for_the_fleet(self):
        answers = self.load(10)  # 30 requests; one replica alone would admit 12
        admitted = sum(1 for s, _, _ in answers if s == 200)
        # The lease batch is 1 here (12 / (4 x 3) rounds down to 1): nothing leased is left
        # over, and the quota refills one request every 5 minutes.
        self.assertLessEqual(admitted, 12 + 1, answers)
        self.assertGreaterEqual(admitted, 10, answers)
        reasons = {r for s, r, _ in answers if s != 200}
        self.assertEqual(reasons, {"quota_exceeded"}, answers)


class SharedByteQuotaTest(FleetCase):
    """bytes_per_hour for the fleet: 100 kB an hour, responses of 10 kB (36 ms of the quota a
    byte: 360 s a response, so nothing measurable refills during the test)."""

    rate = {"bytes_per_hour": 100000}
    size = 10000

    def admitted(self, answers):
        reasons = {r for s, r, _ in answers if s != 200}
        self.assertLessEqual(reasons, {"quota_exceeded"}, answers)
        return sum(1 for s, _, _ in answers if s == 200)

    def test_byte_quota_holds_for_the_fleet(self):
        path = "/bytes/%d" % self.size
        # One replica alone uses the fleet's quota: 10 responses fill it (the 11th is admitted
        # because the quota is not in debt until then; bytes are charged after the fact), where
        # its own share (on_unavailable: local) would stop it after 4.
        alone = self.admitted([self.get(self.proxies[0], path=path) for _ in range(13)])
        self.assertGreaterEqual(alone, 10)
        self.assertLessEqual(alone, 12)
        # The others learn it from the store before their first admission.
        for p in self.proxies[1:]:
            self.assertEqual(self.get(p, path=path)[:2], (429, "quota_exceeded"))

        # Concurrent load spread over the replicas, from a full quota: within the bound of
        # docs/operations.md (the quota, plus per replica the exchange in flight when the quota
        # ran out and one admitted before the store's answer said so).
        self.redis.call("FLUSHALL")
        for p in self.proxies:  # each asks the store again (a small answer, not a byte budget)
            self.wait_for(lambda: self.get(p)[0] == 200, "the fresh quota seen")
        self.redis.call("FLUSHALL")
        answers = self.load(8, path=path)
        together = self.admitted(answers)
        self.assertGreaterEqual(together, 10, answers)
        self.assertLessEqual(together, 11 + 2 * REPLICAS, answers)


class StoreOverTlsTest(FleetCase):
    """state.tls: the replicas share a limit through a redis-server that speaks TLS only, its
    certificate verified against the test's CA; a replica given another CA refuses the server,
    and says so (on_unavailable: deny makes it visible in /readyz)."""

    redis_tls = True
    on_unavailable = "deny"
    timeout_ms = 1000  # TLS handshakes under the sanitizers
    rate = {"requests_per_minute": 12}

    def test_limit_shared_over_tls(self):
        started = time.monotonic()
        answers = self.load(8)  # 24 requests; one replica alone would admit 12
        elapsed = time.monotonic() - started
        admitted = sum(1 for s, _, _ in answers if s == 200)
        # Lease batch 1 (12 / (4 x 3)): the burst plus what refills meanwhile.
        self.assertLessEqual(admitted, 12 + elapsed * 12 / 60 + 1, answers)
        self.assertGreaterEqual(admitted, 8, answers)
        self.assertEqual({r for s, r, _ in answers if s != 200}, {"rate_limited"}, answers)

    def test_wrong_ca_is_refused_visibly(self):
        stranger = TestCA()
        policy = self.policy()
        policy["state"]["tls"] = {"ca": stranger.ca_cert}
        proxy = Airlock(policy, threads=1, name="stranger-ca")
        try:
            proxy.start()
            self.wait_for(lambda: "certificate verify failed" in proxy.stderr(),
                          "the refusal logged")
            self.assertEqual(self.store_up(proxy), 0)
            self.assertEqual(admin_call(proxy.admin, "GET", "/readyz").status, 503)
            self.assertEqual(self.get(proxy)[:2], (503, "store_unavailable"))
            self.assertEqual(proxy.stop(), 0)
            self.assertEqual(proxy.sanitizer_reports(), [])
        finally:
            proxy.cleanup()
            stranger.cleanup()


class StoreDownLocalTest(FleetCase):
    on_unavailable = "local"
    rate = {"requests_per_second": 50}

    def test_store_stopped_mid_load_then_back(self):
        self.assertEqual(self.get(self.proxies[0])[0], 200)
        self.redis.stop()
        # No request waits past the store's timeout (plus a generous margin for a sanitized
        # build); each replica serves on its own share of the limit.
        answers = self.load(5)
        self.assertTrue(all(s == 200 for s, _, _ in answers), answers)
        self.assertTrue(all(t < env.t(5) for _, _, t in answers), answers)
        self.wait_for(lambda: all(self.store_up(p) == 0 for p in self.proxies),
                      "the replicas report the store down")
        r = admin_call(self.proxies[0].admin, "GET", "/readyz")
        self.assertEqual(r.status, 200, "on_unavailable: local stays ready")
        self.redis.start()
        self.wait_for(lambda: all(self.store_up(p) == 1 for p in self.proxies),
                      "the replicas reconnect by themselves")
        self.assertEqual(self.get(self.proxies[1])[0], 200)
        text = admin_call(self.proxies[2].admin, "GET", "/metrics").body.decode()
        changes = [s.value for s in parse_metrics(text)[0]
                   if s.name == "airlock_state_store_mode_changes_total"]
        self.assertEqual(changes, [2], "down, then up again")
        self.assertIn("unavailable", self.proxies[2].stderr())


class StoreDownDenyTest(FleetCase):
    on_unavailable = "deny"
    rate = {"requests_per_second": 50}

    def test_store_stopped_mid_load_then_back(self):
        self.assertEqual(self.get(self.proxies[0])[0], 200)
        self.redis.stop()
        answers = self.load(5)
        self.assertTrue(all(t < env.t(5) for _, _, t in answers), answers)
        self.wait_for(lambda: all(self.store_up(p) == 0 for p in self.proxies),
                      "the replicas report the store down")
        status, reason, _ = self.get(self.proxies[1])
        self.assertEqual((status, reason), (503, "store_unavailable"))
        self.assertEqual(admin_call(self.proxies[0].admin, "GET", "/readyz").status, 503)
        self.redis.start()
        self.wait_for(lambda: self.get(self.proxies[2])[0] == 200, "served again")
        self.wait_for(lambda: admin_call(self.proxies[0].admin, "GET", "/readyz").status == 200,
                      "ready again")


class ControlFleetCase(FleetCase):
    """Agent `default` with a breaker and no shared limit (so that only the kill switch and the
    breaker decide what it gets), nothing stopped or suspended at the start of each test."""

    breaker = {"max_failures": 2, "window": "60s", "cooldown": "60s"}

    @classmethod
    def policy(cls):
        p = super().policy()
        p["agents"]["default"] = {"rules": ["origin"], "breaker": dict(cls.breaker)}
        return p

    def setUp(self):
        super().setUp()
        for p in self.proxies:  # a fresh start: nothing stopped or suspended
            admin_call(p.admin, "POST", "/agents/default/resume")
        self.wait_for(lambda: all(self.get(p)[0] == 200 for p in self.proxies), "all serve")


class FleetControlTest(ControlFleetCase):
    """The kill switch and the breaker: what one replica decides, the others apply within a
    second (pub/sub), and a replica that restarts reads it from the store."""

    def test_kill_switch_reaches_every_replica_and_survives_a_restart(self):
        r = admin_call(self.proxies[0].admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r.body)
        # "Within 1 s": polled, with the harness's scale for sanitized builds.
        for p in self.proxies[1:]:
            self.wait_for(lambda: self.get(p)[1] == "agent_stopped", "stopped on the others",
                          within=env.t(1))
        agents = json.loads(admin_call(self.proxies[2].admin, "GET", "/agents").body)
        self.assertTrue(agents["shared"])
        self.assertTrue(agents["agents"][0]["stopped"], agents)
        fresh = self.restart(1)
        self.assertEqual(self.get(fresh)[1], "agent_stopped", "first request after a restart")
        r = admin_call(self.proxies[2].admin, "POST", "/agents/default/resume")
        self.assertEqual(r.status, 200, r.body)
        for p in self.proxies:
            self.wait_for(lambda: self.get(p)[0] == 200, "resumed everywhere", within=env.t(1))

    def test_breaker_trip_reaches_every_replica_and_survives_a_restart(self):
        # Three refusals on replica 0 (a path no rule allows) trip its breaker.
        for _ in range(3):
            self.assertEqual(self.get(self.proxies[0], path="/denied")[1], "path_denied")
        for p in self.proxies:
            self.wait_for(lambda: self.get(p)[1] == "agent_suspended", "suspended everywhere",
                          within=env.t(1))
        agents = json.loads(admin_call(self.proxies[1].admin, "GET", "/agents").body)
        self.assertGreater(agents["agents"][0]["suspended_seconds_left"], 0, agents)
        fresh = self.restart(2)
        self.assertEqual(self.get(fresh)[1], "agent_suspended", "first request after a restart")


if __name__ == "__main__":
    unittest.main()
