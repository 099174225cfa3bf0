"""Allowed plain-HTTP traffic: bodies both ways, framing, keep-alive, header hygiene, audit."""

import hashlib
import json
import os
import tempfile
import time
import unittest

import requests

from harness import clients, env
from harness.base import ProxyTestCase, marker
from harness.origin import pattern_bytes, pattern_sha256
from harness.proxy import make_policy, origin_rule


def header_names(echo):
    return [k.lower() for k, _ in echo["headers"]]


def header_values(echo, name):
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


class AllowedRequestsTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        token = "s3cret-token"
        cls.token = token
        return make_policy(
            [origin_rule(cls.origin.port)],
            agents={"default": {"rules": ["origin"]},
                    "coder": {"rules": ["origin"],
                              "token_sha256": hashlib.sha256(token.encode()).hexdigest()}})

    def test_get_with_curl(self):
        m = marker()
        r = self.curl(self.url("/echo/%s?a=1&b=two" % m))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.status, 200)
        echo = r.json()
        self.assertEqual(echo["method"], "GET")
        self.assertEqual(echo["path"], "/echo/%s" % m)
        self.assertEqual(echo["query"], "a=1&b=two")
        # RFC 9112 section 3.2.1: a proxy forwards in origin-form.
        self.assertEqual(echo["target"], "/echo/%s?a=1&b=two" % m)
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual(rec["decision"], "allow")
        self.assertEqual(rec["method"], "GET")
        self.assertEqual(rec["scheme"], "http")
        self.assertEqual(rec["host"], "origin.test")
        self.assertEqual(rec["port"], self.origin.port)
        self.assertEqual(rec["rule"], "origin")
        self.assertEqual(rec["agent"], "default")
        self.assertEqual(rec["status"], 200)
        self.assertEqual(rec["upstream"], "127.0.0.1:%d" % self.origin.port)
        self.assertTrue(rec["client"].startswith("127.0.0.1:"), rec)
        self.assertEqual(rec["policy_version"], self.proxy.policy_version())
        self.assertEqual(rec["bytes_out"], len(r.body))
        for key in ("time", "reason", "detail", "bytes_in", "duration_ms"):
            self.assertIn(key, rec)
        # The audit never carries the query string.
        self.assertNotIn("b=two", json.dumps(rec))

    def test_post_body_with_curl(self):
        body = os.urandom(300_000)
        with tempfile.NamedTemporaryFile() as f:
            f.write(body)
            f.flush()
            m = marker()
            r = self.curl(self.url("/echo/%s" % m),
                          args=["--data-binary", "@" + f.name, "-H",
                                "Content-Type: application/octet-stream"])
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["method"], "POST")
        self.assertEqual(echo["body_length"], len(body))
        self.assertEqual(echo["body_sha256"], hashlib.sha256(body).hexdigest())
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual(rec["bytes_in"], len(body))

    def test_post_with_expect_100_continue(self):
        body = os.urandom(2 << 20)
        r = self.curl(self.url("/echo/expect"), input=body,
                      args=["--data-binary", "@-", "-H", "Expect: 100-continue"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(body).hexdigest())

    def test_urllib_get_and_post(self):
        status, headers, body = clients.urllib_open(self.url("/echo/urllib?x=1"),
                                                    self.proxy.port)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["query"], "x=1")
        payload = b'{"hello": "world"}'
        status, headers, body = clients.urllib_open(
            self.url("/echo/urllib-post"), self.proxy.port, data=payload,
            headers={"Content-Type": "application/json"})
        self.assertEqual(status, 200)
        echo = json.loads(body)
        self.assertEqual(echo["method"], "POST")
        self.assertEqual(echo["body_sha256"], hashlib.sha256(payload).hexdigest())

    def test_requests_put(self):
        proxies = {"http": "http://127.0.0.1:%d" % self.proxy.port}
        payload = os.urandom(70_000)
        r = requests.put(self.url("/echo/requests"), data=payload, proxies=proxies,
                         timeout=env.t(15))
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.json()["body_length"], len(payload))
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(payload).hexdigest())

    def test_chunked_upload_with_curl(self):
        body = os.urandom(1_000_003)
        r = self.curl(self.url("/echo/chunked-up"), input=body,
                      args=["-H", "Transfer-Encoding: chunked", "-T", "-"])
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["method"], "PUT")
        self.assertEqual(echo["body_length"], len(body))
        self.assertEqual(echo["body_sha256"], hashlib.sha256(body).hexdigest())

    def test_chunked_upload_raw_with_extensions_and_trailers(self):
        req = (b"POST %s HTTP/1.1\r\nHost: origin.test:%d\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
               % (self.url("/echo/trailers").encode(), self.origin.port))
        [r], _ = self.send_raw(req)
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["body_length"], 11)
        self.assertEqual(echo["body_sha256"], hashlib.sha256(b"hello world").hexdigest())

    def test_download_fixed_and_chunked(self):
        for kind in ("bytes", "chunked"):
            r = self.curl(self.url("/%s/1000001" % kind))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.status, 200)
            self.assertEqual(len(r.body), 1000001, kind)
            self.assertEqual(hashlib.sha256(r.body).hexdigest(), pattern_sha256(1000001), kind)

    def test_status_codes_pass_through(self):
        for code in (201, 204, 304, 404, 418, 500, 503):
            r = self.curl(self.url("/status/%d" % code))
            self.assertEqual(r.status, code, r)
            self.assertIsNone(r.header("X-Airlock-Reason"), "origin status %d relabelled" % code)

    def test_head_then_get_on_one_connection(self):
        # A HEAD response has Content-Length but no body; a proxy that waits for the body
        # desynchronises the connection (RFC 9112 section 6.3 rule 1).
        get = self.request("GET", self.url("/bytes/7"))
        head = self.request("HEAD", self.url("/bytes/100000"))
        c = self.raw()
        self.addCleanup(c.close)
        c.send(head + get)
        rs = [r for r in c.read_responses(2, head_request=(0,)) if r.status >= 200]
        self.assertEqual(len(rs), 2, rs)
        self.assertEqual(rs[0].header("Content-Length"), "100000")
        self.assertEqual(rs[0].body, b"")
        self.assertEqual(rs[1].body, pattern_bytes(7))

    def test_keep_alive_client_connection_reused(self):
        # curl with two URLs on one command line reuses the connection to the proxy.
        r = self.curl(self.url("/echo/ka1"), self.url("/echo/ka2"),
                      args=["-o", os.devnull, "-o", os.devnull, "-w", "|%{num_connects}|\n"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([x.status for x in r.responses], [200, 200], r.responses)
        out = r.write_out
        counts = [int(x) for x in out.decode().split("|")[1::2]]
        self.assertEqual(counts, [1, 0], "second request opened a new connection: %r" % out)

    def test_keep_alive_raw_pipelined(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/echo/p1")) +
               self.request("GET", self.url("/echo/p2")))
        rs = c.read_responses(2)
        self.assertEqual([r.status for r in rs], [200, 200], rs)
        self.assertEqual([r.json()["path"] for r in rs], ["/echo/p1", "/echo/p2"])
        # and the connection is still usable afterwards
        c.send(self.request("GET", self.url("/echo/p3")))
        rs = c.read_responses(3)
        self.assertEqual(rs[2].json()["path"], "/echo/p3")

    def test_upstream_connection_reused_for_sequential_requests(self):
        before = self.origin.accepted
        urls = [self.url("/conn-id") for _ in range(5)]
        r = self.curl(*urls)
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = [b.status for b in r.responses]
        self.assertEqual(ids, [200] * 5)
        # One new upstream connection at most (none when an idle pooled one is reused).
        self.assertLessEqual(self.origin.accepted - before, 1,
                             "origin accepted %d connections for 5 sequential keep-alive "
                             "requests" % (self.origin.accepted - before))

    def test_upstream_connection_pooled_across_client_connections(self):
        # DESIGN.md: src/proxy has a connection pool; sequential requests from separate
        # client connections should reuse one idle upstream connection.
        self.curl(self.url("/conn-id"))
        before = self.origin.accepted
        for _ in range(4):
            r = self.curl(self.url("/conn-id"))
            self.assertEqual(r.status, 200)
        self.assertEqual(self.origin.accepted - before, 0,
                         "new upstream connections for sequential requests: %d"
                         % (self.origin.accepted - before))

    def test_pooled_upstream_carries_requests_after_large_bodies(self):
        # A pooled connection waits with its read buffer (the one a large body grew is freed
        # first): each exchange after a large answer, sized or chunked, on the same upstream
        # connection, gets its own answer whole and nothing of the one before.
        # (The first exchange leaves its upstream connection in the pool before the client
        # connection reads its next request: the ones after it find it there.)
        c = self.raw()
        self.addCleanup(c.close)
        asks = [("/conn-id", None), ("/bytes/300000", pattern_bytes(300000)), ("/conn-id", None),
                ("/chunked/200000", pattern_bytes(200000)), ("/bytes/7", pattern_bytes(7)),
                ("/conn-id", None)]
        ids = []
        for n, (path, want) in enumerate(asks):
            c.send(self.request("GET", self.url(path)))
            rs = c.read_responses(n + 1)
            self.assertEqual(len(rs), n + 1, (path, rs))
            r = rs[n]
            self.assertEqual(r.status, 200, (path, r))
            if want is None:
                ids.append(r.body)
            else:
                self.assertEqual(r.body, want, path)
            if n == 0:
                before = self.origin.accepted
        self.assertEqual(len(set(ids)), 1, "the pooled connection was not the one reused")
        self.assertEqual(self.origin.accepted - before, 0)
        # Each exchange on the reused connection names the origin's address it went to.
        def records():
            return [r for r in self.proxy.audit()
                    if str(r.get("client", "")).endswith(":%d" % c.local_port)]
        deadline = time.monotonic() + 5
        while len(records()) < len(asks) and time.monotonic() < deadline:
            time.sleep(0.05)
        records = records()
        self.assertEqual([r["path"] for r in records], [path for path, _ in asks], records)
        for r in records:
            self.assertEqual(r["upstream"], "127.0.0.1:%d" % self.origin.port, r)

    def test_hop_by_hop_headers_removed_and_host_rewritten(self):
        auth = "Basic " + __import__("base64").b64encode(
            ("coder:" + self.token).encode()).decode()
        req = (
            "GET %s HTTP/1.1\r\n"
            "Host: evil.example\r\n"
            "Proxy-Authorization: %s\r\n"
            "Proxy-Connection: keep-alive\r\n"
            "Keep-Alive: timeout=5, max=100\r\n"
            "TE: trailers\r\n"
            "Connection: keep-alive, X-Drop-Me, X-Drop-Too\r\n"
            "X-Drop-Me: 1\r\n"
            "X-Drop-Too: 2\r\n"
            "X-Keep-Me: 3\r\n"
            "\r\n" % (self.url("/echo/hop"), auth)).encode()
        [r], _ = self.send_raw(req)
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        names = header_names(echo)
        for hop in ("proxy-authorization", "proxy-connection", "keep-alive", "te",
                    "x-drop-me", "x-drop-too", "upgrade"):
            self.assertNotIn(hop, names, "origin saw hop-by-hop %s: %r" % (hop, echo["headers"]))
        for value in header_values(echo, "Connection"):
            self.assertNotIn("x-drop", value.lower())
        self.assertEqual(header_values(echo, "X-Keep-Me"), ["3"])
        # RFC 9112 section 3.2.2: the Host header comes from the target URI.
        self.assertEqual(header_values(echo, "Host"), ["origin.test:%d" % self.origin.port])
        rec = self.assert_audit(path="/echo/hop")
        self.assertEqual(rec["agent"], "coder")

    def test_response_hop_by_hop_headers_removed(self):
        r = self.curl(self.url("/echo/resp-hop?set-header=Connection:X-Resp-Hop"
                               "&set-header=X-Resp-Hop:1&set-header=Keep-Alive:timeout%3D5"
                               "&set-header=X-Resp-Keep:2"))
        self.assertEqual(r.status, 200, r)
        names = [k.lower() for k, _ in r.final.headers]
        self.assertNotIn("x-resp-hop", names)
        self.assertNotIn("keep-alive", names)
        self.assertIn("x-resp-keep", names)

    def test_path_and_query_forwarded_verbatim(self):
        # No normalisation of percent-encoding: the origin gets the bytes the client sent.
        path = "/echo/a%2Fb/%7Euser/sp%20ace?q=%2F%3F&x=1+2"
        [r], _ = self.send_raw(self.request("GET", self.url(path)))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["target"], path)

    def test_http10_client(self):
        req = ("GET %s HTTP/1.0\r\nHost: origin.test:%d\r\n\r\n"
               % (self.url("/bytes/1000"), self.origin.port)).encode()
        c = self.raw()
        self.addCleanup(c.close)
        c.send(req)
        self.assertTrue(c.read_until_close(env.t(10)),
                        "HTTP/1.0 without keep-alive: the proxy must close after the response")
        rs, _ = clients.parse_responses(bytes(c.buffer))
        self.assertEqual(rs[0].status, 200, rs)
        self.assertEqual(rs[0].body, pattern_bytes(1000))

    def test_connection_close_honoured(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/echo/close"), headers=[("Connection", "close")]))
        self.assertTrue(c.read_until_close(env.t(10)))
        rs, _ = clients.parse_responses(bytes(c.buffer))
        self.assertEqual(rs[0].status, 200)

    def test_large_request_headers_below_limit(self):
        big = "v" * 30_000
        r = self.curl(self.url("/echo/bighdr"), args=["-H", "X-Big: " + big])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(header_values(r.json(), "X-Big"), [big])


if __name__ == "__main__":
    unittest.main()
