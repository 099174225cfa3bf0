"""Limits: oversized heads (431), slow heads (408 or cut) while other clients are served,
request bodies over the limit (413, never delivered whole), responses over the limit (cut
off, never delivered whole), and connection caps per client and overall (503 or close)."""

import hashlib
import os
import time
import unittest

from harness import clients, env
from harness.base import ProxyTestCase, marker
from harness.origin import RawOrigin, pattern_bytes
from harness.proxy import make_policy, origin_rule, tunnel_rule

KIB = 1024
MIB = 1024 * 1024


class HeadLimitsTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port)],
                           limits={"header_bytes": "8KiB", "header_count": 30,
                                   "head_timeout": "1s"})

    def test_header_too_large(self):
        m = marker()
        [r], c = self.send_raw(self.request("GET", self.url("/echo/%s" % m),
                                            headers=[("X-Big", "b" * (16 * KIB))]))
        self.assert_answer(r, "header_too_large")
        self.assertTrue(c.closed_by_peer(env.t(5)), "connection kept after 431")
        self.assert_audit(reason="header_too_large", client_port=c.local_port)
        self.assertEqual(self.origin.seen(m), [])  # the exchange is over: its record is there

    def test_header_just_below_limit(self):
        m = marker()
        r = self.curl(self.url("/echo/%s" % m), args=["-H", "X-Big: " + "b" * (6 * KIB)])
        self.assertEqual(r.status, 200, r)

    def test_request_line_too_large(self):
        m = marker()
        [r], _ = self.send_raw(self.request("GET", self.url("/echo/%s/%s" % (m, "p" * 20000))))
        self.assert_answer(r, "header_too_large")
        self.assertEqual(self.origin.seen(m), [])

    def test_too_many_headers(self):
        m = marker()
        headers = [("X-H%d" % i, "v") for i in range(60)]
        [r], _ = self.send_raw(self.request("GET", self.url("/echo/%s" % m), headers=headers))
        self.assert_answer(r, "header_too_large")
        self.assertEqual(self.origin.seen(m), [])

    def test_endless_head_is_cut(self):
        # Keeps sending header lines without ever ending the head: the size limit must stop
        # it with a 431 (or, once the proxy stops reading, a reset), long before 1 MiB.
        c = self.raw()
        self.addCleanup(c.close)
        c.send(b"GET %s HTTP/1.1\r\nHost: origin.test\r\n" % self.url("/echo/endless").encode())
        sent = 0
        while sent < 1 * MIB and c.try_send(b"X-Pad: " + b"p" * 1000 + b"\r\n"):
            sent += 1009
            if sent % (64 * KIB) < 1009 and (c.poll_closed() or c.buffer):
                break
        self.assertTrue(c.read_until_close(env.t(5)) or c.reset,
                        "the proxy kept reading an endless head (%d bytes sent)" % sent)
        rs, _ = clients.parse_responses(bytes(c.buffer))
        if rs:
            self.assert_answer(rs[0], "header_too_large")
        self.assertEqual(self.origin.seen("/echo/endless"), [])

    def test_slow_head_cut_while_others_served(self):
        m = marker()
        slow = self.raw()
        self.addCleanup(slow.close)
        start = time.monotonic()
        slow.send(b"GET %s HTTP/1.1\r\nHost: origin.test\r\n" % self.url("/echo/" + m).encode())
        # Meanwhile a normal client is served at once.
        r = self.curl(self.url("/echo/concurrent"))
        self.assertEqual(r.status, 200, r)
        self.assertLess(time.monotonic() - start, 1.0 + env.t(1),
                        "a normal request waited for the slow client")
        closed = slow.read_until_close(env.t(6))
        elapsed = time.monotonic() - start
        self.assertTrue(closed, "a head that never finished was not cut off")
        self.assertGreaterEqual(elapsed, 0.9, "cut before head_timeout")
        rs, _ = clients.parse_responses(bytes(slow.buffer))
        if rs:
            self.assert_answer(rs[0], "head_timeout")
        self.assert_audit(reason="head_timeout", client_port=slow.local_port)
        self.assertEqual(self.origin.seen(m), [])

    def test_slowloris_trickle_is_cut(self):
        # One byte every 200 ms: each read makes progress, but the whole head must still
        # arrive within head_timeout (1 s).
        c = self.raw()
        self.addCleanup(c.close)
        data = self.request("GET", self.url("/echo/trickle"),
                            headers=[("X-Pad", "p" * 200)])
        start = time.monotonic()
        for byte in data[:-1]:
            if not c.try_send(bytes([byte])):
                break
            if time.monotonic() - start > env.t(8):
                break
            time.sleep(0.2)
            if c.poll_closed():
                break
        elapsed = time.monotonic() - start
        c.read_until_close(env.t(2))
        self.assertTrue(c.eof or c.reset, "trickling client never cut off")
        self.assertLess(elapsed, env.t(5), "cut only after %.1fs" % elapsed)
        self.assertEqual(self.origin.seen("/echo/trickle"), [])

    def test_idle_connection_before_first_byte_is_cut(self):
        c = self.raw()
        self.addCleanup(c.close)
        self.assertTrue(c.read_until_close(env.t(6)), "a silent connection was kept open")


class IdleTimeoutTest(ProxyTestCase):
    @classmethod
    def extra_setup(cls):
        cls.sink = RawOrigin(RawOrigin.record_only).start()

    @classmethod
    def extra_teardown(cls):
        cls.sink.stop()

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port),
                            tunnel_rule(cls.sink.port, name="sink", hosts=["sink.test"])],
                           limits={"idle_timeout": "1s", "head_timeout": "10s"})

    def test_idle_keep_alive_connection_closed(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/echo/idle")))
        self.assertEqual(c.read_response().status, 200)
        start = time.monotonic()
        self.assertTrue(c.read_until_close(env.t(6)), "idle keep-alive connection kept open")
        self.assertGreaterEqual(time.monotonic() - start, 0.8)

    def test_idle_tunnel_closed_both_sides(self):
        before = len(self.sink.connections)
        c = self.raw()
        self.addCleanup(c.close)
        c.send(b"CONNECT sink.test:%d HTTP/1.1\r\nHost: sink.test:%d\r\n\r\n"
               % (self.sink.port, self.sink.port))
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        c.send(clients.client_hello("sink.test"))
        self.assertTrue(c.read_until_close(env.t(6)), "idle tunnel kept open")
        deadline = time.monotonic() + env.t(3)
        while time.monotonic() < deadline and not (
                len(self.sink.connections) > before and self.sink.connections[before]["closed"]):
            time.sleep(0.05)
        self.assertGreater(len(self.sink.connections), before)
        self.assertTrue(self.sink.connections[before]["closed"], "upstream side left open")


class BodyLimitsTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port)],
                           limits={"body_bytes": "1MiB", "response_bytes": "1MiB"})

    def test_body_over_limit_with_content_length(self):
        m = marker()
        body = os.urandom(2 * MIB)
        r = self.curl(self.url("/echo/%s" % m), input=body, args=["--data-binary", "@-"])
        self.assertIsNotNone(r.final, r)
        self.assertEqual(r.status, 413, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "body_too_large")
        self.assertEqual(self.origin.completed(m), [], "origin received the whole body")
        self.assert_audit(path="/echo/%s" % m, reason="body_too_large")

    def test_body_over_limit_raw_refused_before_forwarding(self):
        # With Content-Length known up front there is no reason to forward anything.
        m = marker()
        head = self.request("POST", self.url("/echo/%s" % m),
                            headers=[("Content-Length", str(2 * MIB))])
        c = self.raw()
        self.addCleanup(c.close)
        c.send(head)
        r = c.read_response(timeout=env.t(5))
        self.assert_answer(r, "body_too_large")
        self.assert_audit(path="/echo/%s" % m, reason="body_too_large",
                          client_port=c.local_port)  # the exchange is over
        self.assertEqual(self.origin.seen(m), [])

    def test_chunked_body_over_limit(self):
        m = marker()
        body = os.urandom(3 * MIB)
        r = self.curl(self.url("/echo/%s" % m), input=body,
                      args=["-H", "Transfer-Encoding: chunked", "-T", "-"])
        if r.final is not None and r.status == 413:
            self.assertEqual(r.header("X-Airlock-Reason"), "body_too_large")
        else:
            self.assertNotEqual(r.returncode, 0, "a 3 MiB chunked body passed: %r" % r)
        self.assertEqual(self.origin.completed(m), [], "origin received the whole body")
        self.assert_audit(path="/echo/%s" % m, reason="body_too_large")

    def test_body_at_limit_passes(self):
        body = os.urandom(1 * MIB)
        r = self.curl(self.url("/echo/at-limit"), input=body, args=["--data-binary", "@-"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(body).hexdigest())
        r = self.curl(self.url("/echo/at-limit-chunked"), input=body,
                      args=["-H", "Transfer-Encoding: chunked", "-T", "-"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_length"], MIB)

    def assert_not_whole(self, kind, n):
        m = marker()
        path = "/%s/%d" % (kind, n)
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url(path) + "?" + m))
        c.read_until_close(env.t(10))
        self.assertTrue(c.eof, "connection left open after a cut-off response")
        rs, _ = clients.parse_responses(bytes(c.buffer), eof=True)
        if rs and rs[0].status == 502:
            self.assert_answer(rs[0], "response_too_large")
        else:
            self.assertTrue(rs, "no response bytes at all")
            self.assertEqual(rs[0].status, 200)
            self.assertFalse(rs[0].complete, "a %s response over the limit arrived whole" % kind)
            self.assertLessEqual(len(rs[0].body), MIB + 64 * 1024)
            self.assertEqual(rs[0].body, pattern_bytes(len(rs[0].body)))
        rec = self.assert_audit(path=path, reason="response_too_large", client_port=c.local_port)
        self.assertIn(rec["decision"], ("error", "deny"))

    def test_response_over_limit_content_length(self):
        self.assert_not_whole("bytes", 3 * MIB)

    def test_response_over_limit_chunked(self):
        self.assert_not_whole("chunked", 3 * MIB)

    def test_response_over_limit_curl_sees_failure(self):
        r = self.curl(self.url("/chunked/%d" % (2 * MIB)))
        self.assertFalse(r.returncode == 0 and r.status == 200 and len(r.body) == 2 * MIB,
                         "curl got the whole over-limit response")

    def test_response_at_limit_passes(self):
        r = self.curl(self.url("/bytes/%d" % MIB))
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, pattern_bytes(MIB))


class ConnectionCapsTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port)],
                           limits={"max_connections_per_client": 3, "max_connections": 6,
                                   "head_timeout": "20s"})

    def open_idle(self, n, source):
        conns = []
        for _ in range(n):
            c = clients.RawClient(self.proxy.port, source=source)
            conns.append(c)
            self.addCleanup(c.close)
        # Wait until the proxy process holds each of them (accepted, not just queued).
        deadline = time.monotonic() + env.t(5)
        waiting = list(conns)
        while waiting and time.monotonic() < deadline:
            waiting = [c for c in waiting if not self.proxy.holds_connection_from(c.local_port)]
            time.sleep(0.02)
        self.assertEqual(waiting, [], "the proxy did not accept every connection")
        return conns

    def assert_refused(self, source):
        c = clients.RawClient(self.proxy.port, source=source)
        self.addCleanup(c.close)
        c.try_send(self.request("GET", self.url("/echo/over-cap")))
        c.read_until_close(env.t(5))
        self.assertTrue(c.eof, "connection over the cap from %s was served/kept" % source)
        rs, _ = clients.parse_responses(bytes(c.buffer))
        if rs:
            self.assert_answer(rs[0], "too_many_connections")

    def served(self, source):
        c = clients.RawClient(self.proxy.port, source=source)
        self.addCleanup(c.close)
        m = marker()
        c.send(self.request("GET", self.url("/echo/%s" % m)))
        r = c.read_response()
        c.close()
        return r is not None and r.status == 200

    def test_per_client_cap(self):
        conns = self.open_idle(3, "127.0.0.1")
        self.assert_refused("127.0.0.1")
        self.assertEqual(self.origin.seen("/echo/over-cap"), [])
        # Another client address is still served.
        self.assertTrue(self.served("127.0.0.2"), "a different client was refused")
        for c in conns:
            c.close()
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and not self.served("127.0.0.1"):
            time.sleep(0.1)
        self.assertTrue(self.served("127.0.0.1"), "client still refused after closing")

    def test_global_cap(self):
        conns = self.open_idle(3, "127.0.0.3") + self.open_idle(3, "127.0.0.4")
        self.assert_refused("127.0.0.5")
        for c in conns:
            c.close()
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and not self.served("127.0.0.5"):
            time.sleep(0.1)
        self.assertTrue(self.served("127.0.0.5"))

    def test_proxy_survives_connection_flood(self):
        # 200 connections opened and dropped at once; the proxy must keep serving.
        for _ in range(200):
            try:
                c = clients.RawClient(self.proxy.port, source="127.0.0.9", timeout=2)
                c.close()
            except OSError:
                pass
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and not self.served("127.0.0.1"):
            time.sleep(0.1)
        self.assertTrue(self.served("127.0.0.1"))


if __name__ == "__main__":
    unittest.main()
