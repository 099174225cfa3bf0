"""The fleet's kill switch and breaker (`state: redis`, docs/operations.md "Shared state") when
the store is not there at the moment it matters: a stop or a breaker trip issued while Redis is
down (answered 202, kept, and delivered when Redis is back), a stop whose pub/sub message a
replica never heard (read back within the sync interval), a replica that starts while Redis is
unreachable under `on_unavailable: deny` (serves nobody until it has read the stored stops),
and a forged `trip` with a huge number (suspends; no overflow). Three replicas, one
redis-server, all on loopback."""

import os
import signal

from harness import env
from harness.ops_admin import admin_call
from test_shared_state import REPLICAS, ControlFleetCase

STOPPED = "agent_stopped"
SUSPENDED = "agent_suspended"


class ControlCase(ControlFleetCase):
    def stopped_set(self):
        return self.redis.call("SMEMBERS", self.key_prefix + "stopped")


class StoreDownControlTest(ControlCase):
    def test_stop_while_the_store_is_down_is_pending_then_reaches_the_fleet(self):
        self.redis.stop()
        self.wait_for(lambda: all(self.store_up(p) == 0 for p in self.proxies), "store down")
        mark = self.proxies[0].audit_mark()
        r = admin_call(self.proxies[0].admin, "POST", "/agents/default/stop")
        body = r.body.decode()
        self.assertEqual(r.status, 202, body)
        self.assertIn("stopped on this replica", body)
        self.assertIn("when the store is back", body)
        rec = self.proxies[0].wait_audit(after=mark, type="operator", action="stop")
        self.assertIsNotNone(rec)
        self.assertEqual(rec.get("outcome"), "pending", rec)
        self.assertEqual(self.get(self.proxies[0])[1], STOPPED)  # here: at once

        self.redis.start()  # empty (no persistence): only the replay can bring the stop back
        for p in self.proxies[1:]:
            self.wait_for(lambda: self.get(p)[1] == STOPPED, "stopped on the others")
        self.assertEqual(self.stopped_set(), ["default"])
        fresh = self.restart(2)
        self.assertEqual(self.get(fresh)[1], STOPPED, "a replica started afterwards")
        # With the store up, the answer is the plain one.
        r = admin_call(self.proxies[1].admin, "POST", "/agents/default/resume")
        self.assertEqual((r.status, r.body.decode()), (200, "agent 'default' resumed\n"))
        for p in self.proxies:
            self.wait_for(lambda: self.get(p)[0] == 200, "resumed everywhere")

    def test_breaker_trip_while_the_store_is_down_reaches_the_fleet(self):
        self.redis.stop()
        self.wait_for(lambda: all(self.store_up(p) == 0 for p in self.proxies), "store down")
        for _ in range(3):
            self.assertEqual(self.get(self.proxies[0], path="/denied")[1], "path_denied")
        self.assertEqual(self.get(self.proxies[0])[1], SUSPENDED)
        self.assertEqual(self.get(self.proxies[1])[0], 200)  # not told yet
        self.redis.start()
        for p in self.proxies[1:]:
            self.wait_for(lambda: self.get(p)[1] == SUSPENDED, "suspended on the others")
        self.assertGreater(self.redis.call("PTTL", self.key_prefix + "suspended:default"), 0)


class MissedMessageTest(ControlCase):
    def test_stored_stop_never_announced_is_applied_within_the_sync_interval(self):
        # A stop published while the replicas' pub/sub connections were down looks like this to
        # them: in the stored set, never heard. Their command connections stay up.
        self.redis.call("SADD", self.key_prefix + "stopped", "default")
        for p in self.proxies:
            self.wait_for(lambda: self.get(p)[1] == STOPPED, "read back", within=env.t(3))

    def test_stop_while_the_subscriptions_reconnect_reaches_every_replica(self):
        channel = self.key_prefix + "control"
        self.wait_for(lambda: self.redis.call("PUBSUB", "NUMSUB", channel)[1] >= REPLICAS,
                      "all subscribed")
        self.redis.call("CLIENT", "KILL", "TYPE", "pubsub")
        r = admin_call(self.proxies[0].admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r.body)
        for p in self.proxies[1:]:
            self.wait_for(lambda: self.get(p)[1] == STOPPED, "stopped", within=env.t(3))

    def test_forged_trip_with_a_huge_number_suspends_and_overflows_nothing(self):
        self.redis.call("PUBLISH", self.key_prefix + "control",
                        "trip default 9223372036854775807")
        for p in self.proxies:
            self.wait_for(lambda: self.get(p)[1] == SUSPENDED, "suspended")
            self.assertTrue(p.alive())
            self.assertEqual(p.sanitizer_reports(), [])


class NewReplicaStoreDownDenyTest(ControlCase):
    on_unavailable = "deny"

    def test_replica_started_while_the_store_is_unreachable_serves_nobody(self):
        r = admin_call(self.proxies[0].admin, "POST", "/agents/default/stop")
        self.assertEqual(r.status, 200, r.body)
        self.wait_for(lambda: self.stopped_set() == ["default"], "stored")
        # Unreachable, data intact: frozen (SIGSTOP), as a partition would leave it.
        pid = self.redis.proc.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            fresh = self.restart(1)
            status, reason, _ = self.get(fresh)
        finally:
            os.kill(pid, signal.SIGCONT)
        # Not the 200 of an agent with no shared limit: the fleet's stops are not known yet.
        self.assertEqual((status, reason), (503, "store_unavailable"))
        self.wait_for(lambda: self.get(fresh)[1] == STOPPED, "the stored stop, once read")


if __name__ == "__main__":
    import unittest

    unittest.main()
