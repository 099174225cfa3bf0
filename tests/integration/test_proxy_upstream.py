"""Upstream failures: refused connections, garbage and truncated responses, ambiguous
response framing, slow origins and unresolvable names each get their 5xx answer with reason
(or, once the response has started, a cut connection), and the proxy keeps serving."""

import time
import unittest

from harness import clients, env, netns
from harness.base import ProxyTestCase, marker
from harness.origin import RawOrigin
from harness.proxy import make_policy, origin_rule




class UpstreamFailureTest(ProxyTestCase):
    adversarial = True

    SCRIPTS = {
        "garbage": b"NOT HTTP AT ALL\r\n\r\n",
        "empty": b"",
        "truncated": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 100,
        "truncated_chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"64\r\n" + b"y" * 100 + b"\r\n",
        "clte": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"0\r\n\r\n",
        "dupcl": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!",
        "badstatus": b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        "fold": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok",
    }

    @classmethod
    def extra_setup(cls):
        cls.raw_origins = {name: RawOrigin(RawOrigin.reply(payload)).start()
                           for name, payload in cls.SCRIPTS.items()}
        cls.closed = clients.closed_port()

    @classmethod
    def extra_teardown(cls):
        for o in cls.raw_origins.values():
            o.stop()

    @classmethod
    def policy(cls):
        rules = [origin_rule(cls.origin.port),
                 origin_rule(cls.closed, name="closed", hosts=["closed.test"]),
                 {"name": "nx", "hosts": ["nx.invalid"], "ports": [80], "methods": ["GET"],
                  "paths": ["^/.*$"]}]
        for name, o in cls.raw_origins.items():
            rules.append(origin_rule(o.port, name="raw-" + name,
                                     hosts=["%s.raw.test" % name.replace("_", "-")],
                                     paths=["^/.*$"]))
        return make_policy(rules)

    def raw_url(self, name, path="/x"):
        return "http://%s.raw.test:%d%s" % (name.replace("_", "-"),
                                           self.raw_origins[name].port, path)

    def get(self, url):
        [r], c = self.send_raw(self.request("GET", url))
        return r, c

    def test_connect_refused(self):
        m = marker()
        r, _ = self.get("http://closed.test:%d/echo/%s" % (self.closed, m))
        self.assert_answer(r, "connect_refused")
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual((rec["decision"], rec["reason"], rec["status"]),
                         ("error", "connect_refused", 502), rec)

    def test_garbage_response(self):
        r, _ = self.get(self.raw_url("garbage"))
        self.assert_answer(r, "upstream_error")

    def test_upstream_closes_without_response(self):
        r, _ = self.get(self.raw_url("empty"))
        self.assert_answer(r, "upstream_error")

    def test_ambiguous_response_framing(self):
        for name in ("clte", "dupcl"):
            with self.subTest(name=name):
                r, _ = self.get(self.raw_url(name))
                self.assert_answer(r, "upstream_error")

    def test_bad_status_line(self):
        r, _ = self.get(self.raw_url("badstatus"))
        self.assert_answer(r, "upstream_error")

    def test_folded_response_header_not_forwarded(self):
        r, _ = self.get(self.raw_url("fold"))
        if r.status == 502:
            self.assert_answer(r, "upstream_error")
        else:
            self.assertEqual(r.status, 200)
            for _, v in r.headers:
                self.assertNotIn("\n", v)

    def test_truncated_body_is_not_presented_whole(self):
        for name, full in (("truncated", 1000), ("truncated_chunked", None)):
            with self.subTest(name=name):
                c = self.raw()
                self.addCleanup(c.close)
                c.send(self.request("GET", self.raw_url(name, "/" + name)))
                self.assertTrue(c.read_until_close(env.t(10)),
                                "connection left open after the upstream cut the body")
                rs, _ = clients.parse_responses(bytes(c.buffer))
                self.assertTrue(rs, bytes(c.buffer))
                if rs[0].status == 502:
                    self.assert_answer(rs[0], "upstream_error")
                else:
                    self.assertEqual(rs[0].status, 200)
                    self.assertFalse(rs[0].complete, "a truncated body was completed: %r" % rs[0])
                rec = self.assert_audit(path="/" + name)
                self.assertEqual(rec["reason"], "upstream_error", rec)

    def test_dns_failure(self):
        netns.require_isolation(self)  # the lookup must not leave this machine
        r, _ = self.get("http://nx.invalid/x")
        self.assertIn(r.header("X-Airlock-Reason"), ("dns_error", "dns_timeout"), r)
        self.assert_answer(r, r.header("X-Airlock-Reason"))


def interim_flood(conn, record):
    """Reads a request head, then sends "102 Processing" every 0.3 s for 4 s, then a 200."""
    while b"\r\n\r\n" not in record["data"]:
        data = conn.recv(4096)
        if not data:
            return
        record["data"] += data
    for _ in range(13):
        conn.sendall(b"HTTP/1.1 102 Processing\r\n\r\n")
        time.sleep(0.3)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


class UpstreamTimeoutTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.flood = RawOrigin(interim_flood).start()

    @classmethod
    def extra_teardown(cls):
        cls.flood.stop()

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port),
                            origin_rule(cls.flood.port, name="flood", hosts=["flood.test"],
                                        paths=["^/.*$"])],
                           limits={"response_timeout": "1s"})

    def test_interim_heads_do_not_extend_the_response_timeout(self):
        # Each 102 comes well within the timeout, the final head long after it.
        [r], _ = self.send_raw(self.request("GET", "http://flood.test:%d/x" % self.flood.port),
                               timeout=env.t(10))
        self.assert_answer(r, "upstream_timeout")

    def test_slow_origin_times_out(self):
        m = marker()
        [r], _ = self.send_raw(self.request("GET", self.url("/slow/3000?" + m)),
                               timeout=env.t(10))
        self.assert_answer(r, "upstream_timeout")
        self.assertEqual(self.curl(self.url("/slow/100")).status, 200)


if __name__ == "__main__":
    unittest.main()
