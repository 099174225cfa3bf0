"""Reloads lose no request: a bounded keep-alive load (several client threads, at least 2,000
requests to the origin through the proxy) runs while the policy is reloaded at least 20 times,
alternating SIGHUP, a file change and POST /reload, with every 4th version invalid.

The two valid versions differ only in a probe rule the load does not use (probe-a.test in A,
probe-b.test in B), so every load request must be allowed, and a probe request shows which
version is in force. Each invalid version must be refused (POST answers 422; the failure
counter ends equal to the number of invalid versions) with the previous valid version still
deciding.

The policy path is a link into a store folder (OpsAirlock layout "linked"): SIGHUP and POST
rewrite the store file in place, which the folder watcher does not see, so they are the only
trigger of their reload; the file change is a new link renamed over the path, which only the
watcher sees. Every reload is then counted under exactly one trigger.
"""

import http.client
import signal
import sys
import threading
import time
import unittest

from harness import env
from harness.ops_admin import OpsAirlock, ops_policy
from harness.ops_origin import FastOriginServer
from harness.proxy import origin_rule

RELOADS = 24
TRIGGERS = ("signal", "file", "api")
LOAD_THREADS = 4
MIN_REQUESTS = 2000
# Before each reload the load must have made this much progress: the test counts requests
# and reloads, it does not bet on how many fit in some time (that is bench/'s business).
PER_STEP = -(-MIN_REQUESTS // RELOADS)
STEP_DEADLINE = 30  # seconds (scaled) for PER_STEP requests: generous; a stalled load fails
MAX_REQUESTS = 40000  # bound, whatever the speed


def invalid_step(i):
    return i % 4 == 3


class ReloadUnderLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = FastOriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def version(self, which):
        p = self.origin.port
        return ops_policy([origin_rule(p),
                           origin_rule(p, name="probe-" + which, hosts=["probe-%s.test" % which],
                                       methods=["GET"])])

    # -- the load -----------------------------------------------------------------------------

    def load(self, index, proxy_port, stop, stats, lock):
        """One keep-alive client: GETs until told to stop or the shared bound is reached."""
        o = self.origin.port
        host = "origin.test:%d" % o
        conn = None
        n = 0
        try:
            while not stop.is_set():
                with lock:
                    if stats["sent"] >= MAX_REQUESTS:
                        return
                    stats["sent"] += 1
                n += 1
                path = "/echo/load-%d-%d" % (index, n)
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", proxy_port,
                                                          timeout=env.t(10))
                        stats["connections"][index] += 1
                    conn.request("GET", "http://%s%s" % (host, path), headers={"Host": host})
                    resp = conn.getresponse()
                    body = resp.read()
                    if resp.status != 200 or path.encode() not in body:
                        with lock:
                            stats["failures"].append(
                                (time.monotonic(), path, resp.status,
                                 resp.getheader("X-Airlock-Reason"), body[:200]))
                    else:
                        with lock:
                            stats["ok"] += 1
                            stats["times"].append(time.monotonic())
                    if resp.will_close:
                        conn.close()
                        conn = None
                except (OSError, http.client.HTTPException) as e:
                    with lock:
                        stats["failures"].append((time.monotonic(), path, None, None, repr(e)))
                    if conn is not None:
                        conn.close()
                    conn = None
        finally:
            if conn is not None:
                conn.close()

    # -- the test -----------------------------------------------------------------------------

    def probe(self, proxy, which):
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=env.t(10))
        try:
            host = "probe-%s.test:%d" % (which, self.origin.port)
            conn.request("GET", "http://%s/echo/probe" % host, headers={"Host": host})
            resp = conn.getresponse()
            resp.read()
            return resp.status, resp.getheader("X-Airlock-Reason")
        finally:
            conn.close()

    def assert_in_force(self, proxy, which, step):
        other = "b" if which == "a" else "a"
        self.assertEqual(self.probe(proxy, which), (200, None),
                         "step %d: version %s should allow probe-%s.test" % (step, which, which))
        self.assertEqual(self.probe(proxy, other), (403, "host_denied"),
                         "step %d: version %s should deny probe-%s.test" % (step, which, other))

    def test_reloads_lose_no_request(self):
        proxy = OpsAirlock(self.version("a"), layout="linked", threads=2, name="reload-load")
        self.addCleanup(proxy.cleanup)
        proxy.start()
        current = "a"
        current_version = proxy.policy_version()
        self.assert_in_force(proxy, current, -1)

        stats = {"sent": 0, "ok": 0, "failures": [], "times": [],
                 "connections": [0] * LOAD_THREADS}
        lock = threading.Lock()
        stop = threading.Event()
        threads = [threading.Thread(target=self.load, args=(i, proxy.port, stop, stats, lock))
                   for i in range(LOAD_THREADS)]
        for t in threads:
            t.start()
        expected = {(r, t): 0 for r in ("success", "failure") for t in TRIGGERS}
        steps = []
        try:
            # Let the load get going before the first reload.
            proxy.wait_for(lambda: stats["ok"] >= 50, timeout=env.t(5))
            window_start = time.monotonic()
            ok_at_start = stats["ok"]
            for i in range(RELOADS):
                # The load goes on between reloads: wait until it made its share of progress.
                progressed = proxy.wait_for(
                    lambda: stats["ok"] - ok_at_start >= i * PER_STEP or stats["failures"],
                    timeout=env.t(STEP_DEADLINE))
                self.assertTrue(progressed, "step %d: the load stalled at %d requests"
                                % (i, stats["ok"]))
                if stats["failures"]:
                    break
                trigger = TRIGGERS[i % len(TRIGGERS)]
                how = "relink" if trigger == "file" else "inplace"
                bad = invalid_step(i)
                target = current if bad else ("b" if current == "a" else "a")
                if bad:
                    _, version, line, key = proxy.write_bad_policy(self.version(target), how)
                else:
                    _, version = proxy.write_policy(self.version(target), how)
                if trigger == "signal":
                    proxy.send_signal(signal.SIGHUP)
                elif trigger == "api":
                    r = proxy.admin_call("POST", "/reload")
                    self.assertEqual(r.status, 422 if bad else 200,
                                     "step %d: POST /reload: %r" % (i, r))
                    if bad:
                        self.assertIn("%s:%d:" % (proxy.config_path, line), r.text())
                        self.assertIn(key, r.text())
                result = "failure" if bad else "success"
                expected[(result, trigger)] += 1
                proxy.wait_reload_count(result, trigger, expected[(result, trigger)],
                                        timeout=env.t(5))
                status = proxy.policy_status()
                if bad:
                    self.assertEqual(status["version"], current_version,
                                     "step %d: a refused version replaced the policy" % i)
                    self.assertIsNotNone(status["last_error"], status)
                else:
                    proxy.wait_version(version)
                    current, current_version = target, version
                self.assert_in_force(proxy, current, i)
                steps.append((i, trigger, "bad" if bad else target, stats["ok"]))
            # And after the last reload, until the load has its whole count.
            proxy.wait_for(lambda: stats["ok"] - ok_at_start >= MIN_REQUESTS or
                           stats["failures"], timeout=env.t(STEP_DEADLINE))
            window_end = time.monotonic()
        finally:
            stop.set()
            for t in threads:
                t.join(env.t(15))
        hung = [t.name for t in threads if t.is_alive()]
        self.assertEqual(hung, [], "load threads did not finish")

        failures = stats["failures"]
        self.assertEqual(failures, [], "%d of %d load requests failed during reloads; first: "
                         "%r\nsteps (step, trigger, version, ok so far): %r\nstderr:\n%s"
                         % (len(failures), stats["sent"], failures[:5], steps[-30:],
                            proxy.stderr()[-3000:]))
        reloads = len(steps)
        self.assertEqual(reloads, RELOADS, steps)
        during = sum(1 for t in stats["times"] if window_start <= t <= window_end)
        self.assertGreaterEqual(during, MIN_REQUESTS, "only %d load requests while reloading "
                                "(%.1fs)" % (during, window_end - window_start))
        self.assertTrue(all(c >= 1 for c in stats["connections"]), stats["connections"])
        # Keep-alive really was used: far fewer connections than requests.
        self.assertLess(sum(stats["connections"]), stats["ok"] / 10, stats["connections"])
        # Every load request reached the origin.
        self.assertEqual(len(self.origin.completed("/echo/load-")), stats["ok"])

        # A request's series are updated when its exchange ends, just after the client has
        # its answer: wait for the last ones.
        proxy.wait_for(lambda: proxy.metrics().value("airlock_requests_total", rule="origin")
                       >= stats["ok"])
        m = proxy.metrics()
        counts = {(s.labels["result"], s.labels["trigger"]): s.value
                  for s in m.series("airlock_policy_reloads_total")}
        want = {k: v for k, v in expected.items() if v}
        want[("success", "startup")] = 1
        self.assertEqual(counts, want, "reloads by result and trigger")
        invalid = sum(1 for i in range(reloads) if invalid_step(i))
        self.assertEqual(m.value("airlock_policy_reload_failures_total"), invalid)
        self.assertEqual(m.value("airlock_requests_total", rule="origin", decision="allow"),
                         stats["ok"])
        self.assertEqual(m.value("airlock_requests_total", decision="error"), 0)
        print("\n  %d load requests on %d connections, %d during %d reloads (%.1fs); %d refused"
              % (stats["ok"], sum(stats["connections"]), during, reloads,
                 window_end - window_start, invalid), file=sys.stderr)
        self.assertEqual(proxy.stop(), 0, proxy.stderr()[-3000:])
        self.assertEqual(proxy.sanitizer_reports(), [], proxy.stderr()[-4000:])


if __name__ == "__main__":
    unittest.main()
