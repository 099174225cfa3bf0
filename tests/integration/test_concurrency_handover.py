"""`concurrent: 1` and an agent that asks again the moment it has its answer, on another
connection: the slot is free by then (chain::answered runs before the answer's last byte is
written). The race these tests look for shows only when the proxy's worker is preempted between
that write and the exchange's end, so each runs under CPU contention (harness/contention.py);
ctest runs this module alone (RUN_SERIAL in CMakeLists.txt), so that the contention does not
slow a neighbouring suite past its timeouts."""

import unittest

from harness import clients
from harness.base import marker
from harness.contention import busy_cpus
from harness.proxy import make_policy, origin_rule
from test_request_controls import ControlsTestCase
from test_tunnel_concurrency import TunnelConcurrencyBase

class ConcurrencyHandOverTest(ControlsTestCase):
    """An agent under `concurrent: 1` that asks again the moment it has read an answer, on a new
    connection each time (a client without a connection pool): the slot is free by then. It
    goes back before the answer's last byte is written (chain::answered); freed after that
    write, a request accepted by the other worker thread in between was refused 429."""

    ROUNDS = 150

    @classmethod
    def extra_setup(cls):
        cls.closed = clients.closed_port()

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p), origin_rule(cls.closed, name="closed", hosts=["closed.test"])],
            agents={"default": {"rules": ["origin", "closed"], "rate": {"concurrent": 1}}})

    def assert_each_finds_the_slot_free(self, url, method="GET", status=200):
        refused = []
        # Busy CPUs: the proxy's worker is preempted between its last write and the exchange's
        # end often enough that a slot freed only then shows within these rounds.
        with busy_cpus():
            for i in range(self.ROUNDS):
                client = self.raw()
                self.addCleanup(client.close)
                client.send(self.request(method, url))
                [r] = client.read_responses(1, head_request=(0,) if method == "HEAD" else ())
                if r.status != status:
                    refused.append((i, r.status, r.header("X-Airlock-Reason")))
        self.assertEqual(refused, [], "%s %s: refused right after the previous answer"
                         % (method, url))

    def test_small_answer(self):
        self.assert_each_finds_the_slot_free(self.url("/echo/again"))

    def test_answer_written_in_several_sends(self):
        self.assert_each_finds_the_slot_free(self.url("/bytes/400000"))

    def test_chunked_answer(self):
        self.assert_each_finds_the_slot_free(self.url("/chunked/100000"))

    def test_answer_without_body(self):
        self.assert_each_finds_the_slot_free(self.url("/bytes/10"), method="HEAD")

    def test_proxys_own_answer_to_an_upstream_failure(self):
        # Nothing listens there: each answer is the proxy's 502 connect_refused, written from the
        # record (send_answer tells the chain first).
        self.assert_each_finds_the_slot_free(
            "http://closed.test:%d/echo/down" % self.closed, status=502)



class TunnelHandOverTest(TunnelConcurrencyBase):
    def test_next_stream_at_once_finds_the_slot_free(self):
        # The `narrow` rule's one slot, asked for again the moment each answer has been read,
        # alternately in two tunnels (two connections, maybe two worker threads). The slot goes
        # back before the answer's last frame is queued (chain::answered); freed when the
        # stream's exchange ended, after the connection's writer had sent that frame, the next
        # stream could be refused 429.
        m = marker()
        tunnels = (self.tunnel("narrow.test"), self.tunnel("narrow.test"))
        refused = []
        with busy_cpus():  # (see harness/contention.py)
            for i in range(120):
                t = tunnels[i % 2]
                (r,) = t.wait(t.request("/slow/0?m=%s-%d" % (m, i)))
                if r["headers"][":status"] != "200":
                    refused.append((i, r["headers"][":status"],
                                    r["headers"].get("x-airlock-reason")))
        self.assertEqual(refused, [])



if __name__ == "__main__":
    unittest.main()
