"""Approvals across replicas (`state: redis`, docs/operations.md "Approvals" and "Shared
state"): a request held on replica A is listed by B and C with a replica-qualified id, and a
decision on B or C reaches the client waiting on A; an agent_host grant decided on one replica
applies on the others; a stop sent to one replica ends the agent's holds on another and
revokes its grants on every replica and in the store; unknown
ids are 404; with the store stopped, each replica still lists
its own holds, says the fleet is unavailable, and a decision for another replica's hold fails
within its bound instead of hanging; a replica that starts later learns the grants in force, and
holds forgotten by the store are listed again."""

import concurrent.futures
import json
import signal
import time
import unittest

from harness import env
from harness.base import marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule
from test_shared_state import FleetCase


class FleetApprovalTest(FleetCase):
    @classmethod
    def policy(cls):
        p = super().policy()
        p["rules"] = make_policy([origin_rule(cls.origin.port, name="asked",
                                              ask={"timeout": "30s"})])["rules"]
        p["agents"] = {"default": {"rules": ["asked"]}}
        return p

    def setUp(self):
        super().setUp()
        # The store answering (super) is not yet every replica listening on its decision
        # channel again after a test stopped the store: a decision sent meanwhile is lost (and
        # its decider answers 504), so wait for a subscriber on each.
        channels = ["%sapprovals:to:%s" % (self.key_prefix, self.replica(p))
                    for p in self.proxies]

        def subscribed():
            counts = self.redis.call("PUBSUB", "NUMSUB", *channels)[1::2]
            return all(int(n) >= 1 for n in counts)
        self.wait_for(subscribed, "every replica listens for decisions")
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        self.addCleanup(self.pool.shutdown, wait=True)

    def approvals(self, proxy):
        r = admin_call(proxy.admin, "GET", "/approvals")
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)

    def replica(self, proxy):
        return self.approvals(proxy)["replica"]

    def held(self, proxy, path):
        """A GET through `proxy` that waits for a decision: a future of (status, reason)."""
        return self.pool.submit(lambda: self.get(proxy, timeout=env.t(40), path=path)[:2])

    def wait_listed(self, proxy, path):
        """The pending entry for `path` in `proxy`'s GET /approvals (waits for it)."""
        found = []

        def listed():
            found[:] = [p for p in self.approvals(proxy)["pending"] if p["path"] == path]
            return bool(found)
        self.wait_for(listed, "%s listed on %s" % (path, proxy.admin))
        return found[0]

    def decide(self, proxy, pid, action="approve", **body):
        return admin_call(proxy.admin, "POST", "/approvals/%s/%s" % (pid, action),
                          body=json.dumps(body) if body else None)

    def test_listed_everywhere_approved_on_another_replica(self):
        a, b, c = self.proxies
        path = "/echo/fleet-%s" % marker()
        f = self.held(a, path)
        local = self.wait_listed(a, path)
        self.assertIsInstance(local["id"], int)  # a replica's own ids are unchanged
        qualified = "%s:%d" % (self.replica(a), local["id"])
        for other in (b, c):
            p = self.wait_listed(other, path)
            self.assertEqual((p["id"], p["replica"], p["agent"], p["rule"]),
                             (qualified, self.replica(a), "default", "asked"))
            self.assertGreater(p["seconds_left"], 0)
            self.assertEqual(self.approvals(other)["fleet"], "ok")
        self.assertEqual(self.origin.seen(path.rsplit("-", 1)[1]), [])
        r = self.decide(b, qualified, scope="once")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(f.result(env.t(20)), (200, None))
        # One operator record, where it was decided; the hold's own records where it was held.
        b.wait_audit(type="operator", action="approve", outcome="ok", path=path,
                     approval_id=local["id"], scope="once")
        a.wait_audit(type="approval", action="held", path=path)
        a.wait_audit(path=path, decision="allow", status=200)
        for p in (a, c):
            self.assertFalse([e for e in p.audit() if e.get("type") == "operator"
                              and e.get("path") == path], "an operator record on another replica")
        # Gone from every listing once decided.
        for p in self.proxies:
            self.wait_for(lambda: not any(e["path"] == path for e in self.approvals(p)["pending"]),
                          "decided request unlisted")
        # Decided already: the holder knows no such pending approval.
        self.assertEqual(self.decide(c, qualified).status, 404)

    def test_refused_on_another_replica(self):
        a, _, c = self.proxies
        path = "/echo/refuse-%s" % marker()
        f = self.held(a, path)
        p = self.wait_listed(c, path)
        r = self.decide(c, p["id"], "refuse")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))

    def test_agent_host_grant_applies_on_every_replica(self):
        a, b, c = self.proxies
        m = marker()
        path = "/echo/grant-%s/1" % m
        f = self.held(a, path)
        p = self.wait_listed(b, path)
        # Narrowed to this test's paths, so that no other test's request is let through.
        r = self.decide(b, p["id"], scope="agent_host", duration="1h", method=True,
                        path_prefix="/echo/grant-%s/" % m)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(f.result(env.t(20))[0], 200)
        self.wait_for(lambda: any(g["path_prefix"] == "/echo/grant-%s/" % m
                                  for g in self.approvals(c)["grants"]), "grant on C")
        status, _, _ = self.get(c, timeout=env.t(10), path="/echo/grant-%s/2" % m)
        self.assertEqual(status, 200, "a covered request through C was held")
        # A replica that starts later reads the grants kept in the store.
        fresh = self.restart(2)
        self.wait_for(lambda: any(g["path_prefix"] == "/echo/grant-%s/" % m
                                  for g in self.approvals(fresh)["grants"]), "grant on a new C")
        status, _, _ = self.get(fresh, timeout=env.t(10), path="/echo/grant-%s/3" % m)
        self.assertEqual(status, 200, "a covered request through a restarted C was held")

    def test_stop_on_one_replica_ends_holds_on_another(self):
        a, b, _ = self.proxies
        path = "/echo/stop-%s" % marker()
        f = self.held(a, path)
        local = self.wait_listed(a, path)
        r = admin_call(b.admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r)
        self.addCleanup(admin_call, b.admin, "POST", "/agents/default/resume")
        self.assertEqual(f.result(env.t(20)), (403, "agent_stopped"))
        self.assertIsNotNone(a.wait_audit(type="approval", action="agent_stopped", path=path,
                                          approval_id=local["id"]))
        for p in self.proxies:
            self.wait_for(lambda: not any(e["path"] == path for e in self.approvals(p)["pending"]),
                          "the stopped agent's hold unlisted")

    def test_a_stop_revokes_the_agents_grants_on_every_replica(self):
        a, b, _ = self.proxies
        m = marker()
        prefix = "/echo/revoked-%s/" % m
        f = self.held(a, prefix + "1")
        p = self.wait_listed(b, prefix + "1")
        r = self.decide(b, p["id"], scope="agent_host", duration="1h", path_prefix=prefix)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(f.result(env.t(20))[0], 200)
        for proxy in self.proxies:
            self.wait_for(lambda: any(g["path_prefix"] == prefix
                                      for g in self.approvals(proxy)["grants"]), "the grant")
        self.assertEqual(admin_call(a.admin, "POST", "/agents/default/stop").status, 200)
        self.addCleanup(admin_call, a.admin, "POST", "/agents/default/resume")
        for proxy in self.proxies:
            self.wait_for(lambda: not any(g["path_prefix"] == prefix
                                          for g in self.approvals(proxy)["grants"]),
                          "the grant revoked on %s" % proxy.admin)
        self.assertEqual(admin_call(a.admin, "POST", "/agents/default/resume").status, 200)
        # Resumed, the agent starts from the policy: held again, on a replica that saw the
        # grant and on one that starts now (the store kept no copy).
        fresh = self.restart(2)
        for i, proxy in enumerate((b, fresh)):
            path = prefix + "after-%d" % i
            f = self.held(proxy, path)
            p = self.wait_listed(proxy, path)
            self.decide(proxy, p["id"], "refuse")
            self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))
        self.assertEqual([g for g in self.approvals(fresh)["grants"]
                          if g["path_prefix"] == prefix], [])

    def test_unknown_ids(self):
        a, b, _ = self.proxies
        for pid in ("%s:999999" % self.replica(a), "no-such-replica:1", "999999", "a:b:c"):
            self.assertEqual(self.decide(b, pid).status, 404, pid)

    def test_holds_listed_again_after_redis_forgets_them(self):
        a, b, _ = self.proxies
        path = "/echo/again-%s" % marker()
        f = self.held(a, path)
        self.wait_listed(b, path)
        self.redis.call("FLUSHALL")  # as a restarted Redis without persistence
        p = self.wait_listed(b, path)
        self.assertEqual(self.decide(b, p["id"], "refuse").status, 200)
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))

    def test_store_down_lists_local_holds_and_fails_remote_decisions_in_time(self):
        a, b, _ = self.proxies
        path = "/echo/down-%s" % marker()
        f = self.held(a, path)
        local = self.wait_listed(a, path)
        remote = self.wait_listed(b, path)
        self.redis.stop()
        self.wait_for(lambda: self.store_up(b) == 0 and self.store_up(a) == 0, "store down")
        listing = self.approvals(a)
        self.assertEqual(listing["fleet"], "unavailable")
        self.assertTrue(any(p["path"] == path for p in listing["pending"]), listing)
        started = time.monotonic()
        r = self.decide(b, remote["id"])
        self.assertIn(r.status, (503, 504), r.body)
        self.assertLess(time.monotonic() - started, env.t(5), "the decision hung")
        # Nothing was approved: the client still waits, and its own replica decides it.
        self.assertFalse(f.done())
        self.assertEqual(self.decide(a, local["id"], "refuse").status, 200)
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))

    def test_admin_serves_probes_while_a_remote_decision_waits(self):
        """A decision for a hold on a replica that does not answer waits for its bound (2 s,
        then 504) without stopping the deciding replica's admin listener: its probe, scrape
        and listing are answered meanwhile, not after."""
        a, b, _ = self.proxies
        path = "/echo/busy-%s" % marker()
        f = self.held(a, path)
        remote = self.wait_listed(b, path)
        to_a = self.redis.subscribe("%sapprovals:to:%s" % (self.key_prefix, self.replica(a)))
        self.addCleanup(to_a.close)
        a.send_signal(signal.SIGSTOP)  # A holds the request and cannot answer
        stopped = [True]

        def resume():
            if stopped[0]:
                a.send_signal(signal.SIGCONT)
                stopped[0] = False
        self.addCleanup(resume)

        def decide():
            r = self.decide(b, remote["id"], "refuse")
            return r, time.monotonic()
        decision = self.pool.submit(decide)
        to_a.next_message(env.t(10))  # B has sent the decision and waits for A's answer
        for route in ("/readyz", "/metrics", "/approvals"):
            self.assertEqual(admin_call(b.admin, "GET", route).status, 200, route)
        answered = time.monotonic()
        r, decided = decision.result(env.t(20))
        self.assertEqual(r.status, 504, r.body)
        self.assertIn(b"did not answer within 2000 ms", r.body)
        self.assertGreater(decided - answered, 0.5,
                           "the probes were answered only once the decision was")
        # One truthful record where it was decided: failed, the holder's target unknown.
        rec = b.wait_audit(type="operator", action="refuse",
                           approval_id=int(remote["id"].rsplit(":", 1)[1]))
        self.assertIsNotNone(rec, [e for e in b.audit() if e.get("type") == "operator"])
        self.assertEqual(rec["outcome"], "failed", rec)
        self.assertIn("did not answer", rec["detail"])
        # Late, the refusal still reaches A (as the 504 says it may).
        resume()
        self.assertEqual(f.result(env.t(20)), (403, "approval_refused"))


if __name__ == "__main__":
    unittest.main()
