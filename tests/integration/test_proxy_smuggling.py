"""Request smuggling over raw sockets: ambiguous framing is refused (400 and close), never
forwarded; a pipelined request is judged on its own, and the origin never sees a request
the proxy did not allow. RFC 9112 sections 5, 6 and 11.2."""

import hashlib
import unittest

from harness import env
from harness.base import ProxyTestCase, marker


class SmugglingTest(ProxyTestCase):
    adversarial = True

    def head(self, method, path, extra=""):
        """A request head (string) to the origin, with extra raw header lines."""
        return ("%s %s HTTP/1.1\r\nHost: origin.test:%d\r\n%s\r\n"
                % (method, self.url(path), self.origin.port, extra))

    def smuggled_get(self, m):
        # A request the proxy would deny if it judged it: if the origin ever sees it, it was
        # smuggled past the policy.
        return self.head("GET", "/secret/smuggled-%s" % m)

    def assert_refused_and_closed(self, data, m, reasons=("bad_request",), allow_close=False):
        """The proxy answers 400 (one of `reasons`) or, when allow_close, may just close; then
        it closes the connection; the origin never completes a request carrying marker m."""
        client = self.raw()
        self.addCleanup(client.close)
        client.try_send(data.encode("latin-1") if isinstance(data, str) else data)
        closed = client.read_until_close(env.t(5))
        from harness.clients import parse_responses
        responses, _ = parse_responses(bytes(client.buffer))
        responses = [r for r in responses if r.status >= 200]
        if responses or not allow_close:
            self.assertTrue(responses, "no answer at all; raw bytes %r" % bytes(client.buffer))
            self.assertEqual(len(responses), 1, "more than one answer: %r" % responses)
            self.assertIn(responses[0].header("X-Airlock-Reason"), reasons, responses[0])
            self.assert_answer(responses[0], responses[0].header("X-Airlock-Reason"))
        self.assertTrue(closed, "the proxy kept the connection open after a framing error")
        self.assertEqual(self.origin.completed(m), [],
                         "the origin received a complete request: %r" % self.origin.completed(m))
        return responses

    # -- conflicting framing ------------------------------------------------------------------

    def test_content_length_and_transfer_encoding(self):
        m = marker()
        body = "0\r\n\r\n" + self.smuggled_get(m)
        data = self.head("POST", "/echo/clte-%s" % m,
                         "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + body
        self.assert_refused_and_closed(data, m)
        self.assertEqual(self.origin.seen(m), [], "origin saw part of a CL+TE request")

    def test_transfer_encoding_then_content_length(self):
        m = marker()
        body = "0\r\n\r\n" + self.smuggled_get(m)
        data = self.head("POST", "/echo/tecl-%s" % m,
                         "Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % len(body)) + body
        self.assert_refused_and_closed(data, m)
        self.assertEqual(self.origin.seen(m), [])

    def test_duplicate_content_length_differing(self):
        m = marker()
        data = (self.head("POST", "/echo/dupcl-%s" % m,
                          "Content-Length: 5\r\nContent-Length: 41\r\n") + "hello" +
                self.smuggled_get(m))
        self.assert_refused_and_closed(data, m)
        self.assertEqual(self.origin.seen(m), [])

    def test_content_length_list(self):
        m = marker()
        data = self.head("POST", "/echo/cllist-%s" % m, "Content-Length: 5, 41\r\n") + "hello"
        self.assert_refused_and_closed(data, m)

    def test_content_length_odd_spellings(self):
        for value in ("+5", "0x5", "5 5", "-5", "5.0", "99999999999999999999999"):
            with self.subTest(value=value):
                m = marker()
                data = self.head("POST", "/echo/clodd-%s" % m,
                                 "Content-Length: %s\r\n" % value) + "hello"
                # An overflowing length may fairly be called too large.
                reasons = ("bad_request", "body_too_large") if len(value) > 20 else \
                    ("bad_request",)
                self.assert_refused_and_closed(data, m, reasons=reasons)
                self.assertEqual(self.origin.seen(m), [])

    def test_transfer_encoding_not_chunked_last(self):
        # RFC 9112 section 6.3 (4): chunked not final in a request -> 400 and close.
        for te in ("chunked, identity", "identity", "gzip", "xchunked",
                   "chunked\r\nTransfer-Encoding: identity"):
            with self.subTest(te=te):
                m = marker()
                data = self.head("POST", "/echo/te-%s" % m,
                                 "Transfer-Encoding: %s\r\n" % te) + "5\r\nhello\r\n0\r\n\r\n"
                self.assert_refused_and_closed(data, m)
                self.assertEqual(self.origin.seen(m), [])

    def test_transfer_encoding_case_insensitive_ok(self):
        data = self.head("POST", "/echo/te-case", "Transfer-Encoding: Chunked\r\n") + \
            "5\r\nhello\r\n0\r\n\r\n"
        [r], _ = self.send_raw(data.encode())
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(b"hello").hexdigest())

    def test_invalid_chunk_sizes(self):
        for size in ("zz", "-1", "fffffffffffffffffffff", "5 5", "0x5", ""):
            with self.subTest(size=size):
                m = marker()
                data = (self.head("POST", "/echo/chunk-%s" % m, "Transfer-Encoding: chunked\r\n")
                        + "%s\r\nhello\r\n0\r\n\r\n" % size + self.smuggled_get(m))
                # The head may already be on its way upstream when the bad size arrives; then
                # the proxy can only cut the connection. Either way nothing completes.
                self.assert_refused_and_closed(data, m, allow_close=True)
                self.assertEqual(self.origin.seen("smuggled-" + m), [])

    def test_chunk_data_longer_than_size(self):
        m = marker()
        data = (self.head("POST", "/echo/chunklong-%s" % m, "Transfer-Encoding: chunked\r\n")
                + "3\r\nhello\r\n0\r\n\r\n" + self.smuggled_get(m))
        self.assert_refused_and_closed(data, m, allow_close=True)
        self.assertEqual(self.origin.seen("smuggled-" + m), [])

    # -- pipelining ---------------------------------------------------------------------------

    def test_pipelined_denied_request_behind_allowed(self):
        m = marker()
        data = (self.head("GET", "/echo/first-%s" % m) +
                self.head("GET", "/secret/second-%s" % m) +
                self.head("GET", "/echo/third-%s" % m))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        rs = [r for r in client.read_responses(3) if r.status >= 200]
        self.assertGreaterEqual(len(rs), 2, rs)
        self.assertEqual(rs[0].status, 200, rs[0])
        self.assertEqual(rs[0].json()["path"], "/echo/first-%s" % m)
        self.assert_answer(rs[1], "path_denied")
        self.assertEqual(self.origin.seen("second-" + m), [], "origin saw the denied request")
        if len(rs) > 2:  # the proxy may keep the connection; then the third must be served
            self.assertEqual(rs[2].json()["path"], "/echo/third-%s" % m)

    def test_pipelined_other_host_behind_allowed(self):
        # Same upstream socket, other host: the second request must be judged, not spliced.
        m = marker()
        data = (self.head("GET", "/echo/first-%s" % m) +
                "GET http://127.0.0.1:%d/echo/direct-%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
                % (self.origin.port, m, self.origin.port))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        rs = [r for r in client.read_responses(2) if r.status >= 200]
        self.assertEqual(len(rs), 2, rs)
        self.assertEqual(rs[0].status, 200)
        self.assert_answer(rs[1], "host_denied")
        self.assertEqual(self.origin.seen("direct-" + m), [])

    def test_request_inside_body_is_just_body(self):
        m = marker()
        inner = self.smuggled_get(m)
        data = self.head("POST", "/echo/outer-%s" % m,
                         "Content-Length: %d\r\n" % len(inner)) + inner
        [r], _ = self.send_raw(data.encode())
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["body_sha256"], hashlib.sha256(inner.encode()).hexdigest())
        self.assertEqual(self.origin.seen("smuggled-" + m), [])

    def test_get_with_body_then_pipelined(self):
        m = marker()
        data = (self.head("GET", "/echo/getbody-%s" % m, "Content-Length: 4\r\n") + "abcd" +
                self.head("GET", "/echo/after-%s" % m))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        rs = [r for r in client.read_responses(2) if r.status >= 200]
        self.assertEqual([r.status for r in rs], [200, 200], rs)
        self.assertEqual(rs[0].json()["body_length"], 4)
        self.assertEqual(rs[1].json()["path"], "/echo/after-%s" % m)

    # -- header syntax ------------------------------------------------------------------------

    def test_obs_fold(self):
        # RFC 9112 section 5.2: reject with 400, or replace each obs-fold with SP before
        # forwarding. Never forward the fold itself.
        m = marker()
        data = self.head("GET", "/echo/fold-%s" % m, "X-Folded: first\r\n second\r\n")
        [r], _ = self.send_raw(data.encode())
        if r.status == 400:
            self.assert_answer(r, "bad_request")
            self.assertEqual(self.origin.seen(m), [])
        else:
            self.assertEqual(r.status, 200, r)
            values = [v for k, v in r.json()["headers"] if k.lower() == "x-folded"]
            self.assertEqual(len(values), 1, r.json()["headers"])
            self.assertNotIn("\n", values[0])
            self.assertNotIn("\r", values[0])

    def test_obs_fold_hiding_transfer_encoding(self):
        m = marker()
        data = (self.head("POST", "/echo/foldte-%s" % m,
                          "X-Foo: bar\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") +
                "hello" + self.smuggled_get(m))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        client.read_responses(2, timeout=env.t(3))
        self.assertEqual(self.origin.seen("smuggled-" + m), [])
        for rec in self.origin.seen(m):
            te = [v for k, v in rec["headers"] if k.lower() == "transfer-encoding"]
            self.assertEqual(te, [], "a folded Transfer-Encoding reached the origin: %r" % rec)

    def test_space_before_colon(self):
        # RFC 9112 section 5.1: MUST reject with 400.
        for line in ("Content-Length : 5", "X-Spaced : value", "Transfer-Encoding\t: chunked"):
            with self.subTest(line=line):
                m = marker()
                data = self.head("POST", "/echo/sp-%s" % m, line + "\r\n") + "hello"
                self.assert_refused_and_closed(data, m)
                self.assertEqual(self.origin.seen(m), [])

    def test_invalid_header_names(self):
        for line in ("X Space: v", "X(Paren): v", ": novalue", "X-\x01: v", "X-Ü: v"):
            with self.subTest(line=line):
                m = marker()
                data = self.head("GET", "/echo/hdr-%s" % m, line + "\r\n")
                self.assert_refused_and_closed(data, m)
                self.assertEqual(self.origin.seen(m), [])

    def test_cr_and_nul_in_values(self):
        # RFC 9110 section 5.5: reject, or replace CR / NUL with SP before forwarding.
        for name, value in (("X-Nul", "a\x00b"), ("X-Cr", "a\rb"),
                            ("X-Crlf-Injection", "a\rX-Injected: 1")):
            with self.subTest(name=name):
                m = marker()
                data = self.head("GET", "/echo/val-%s" % m, "%s: %s\r\n" % (name, value))
                [r], _ = self.send_raw(data.encode("latin-1"))
                if r.status == 400:
                    self.assert_answer(r, "bad_request")
                    self.assertEqual(self.origin.seen(m), [])
                    continue
                self.assertEqual(r.status, 200, r)
                headers = r.json()["headers"]
                self.assertNotIn("x-injected", [k.lower() for k, _ in headers], headers)
                for k, v in headers:
                    self.assertNotIn("\r", v)
                    self.assertNotIn("\x00", v)

    def test_multiple_host_headers(self):
        # RFC 9112 section 3.2: more than one Host -> 400.
        m = marker()
        data = ("GET %s HTTP/1.1\r\nHost: origin.test:%d\r\nHost: evil.test\r\n\r\n"
                % (self.url("/echo/twohosts-%s" % m), self.origin.port))
        self.assert_refused_and_closed(data, m)

    def test_bare_lf_line_endings(self):
        # RFC 9112 section 2.2 lets a recipient accept a bare LF as a line terminator; it must
        # then parse consistently. Either 400 + close, or a correctly framed exchange where the
        # origin sees exactly one request and a well-formed header.
        m = marker()
        data = ("GET %s HTTP/1.1\nHost: origin.test:%d\nX-After: 1\n\n"
                % (self.url("/echo/lf-%s" % m), self.origin.port))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        r = client.read_response(timeout=env.t(5))
        if r is not None and r.status == 200:
            echo = r.json()
            self.assertEqual(echo["path"], "/echo/lf-%s" % m)
            self.assertEqual(len(self.origin.seen(m)), 1)
        else:
            self.assertTrue(r is None or r.status == 400, r)
            self.assertEqual(self.origin.completed(m), [])

    def test_bare_lf_inside_header_block(self):
        # A bare LF that hides a Transfer-Encoding from a CRLF-only parser.
        m = marker()
        data = ("POST %s HTTP/1.1\r\nHost: origin.test:%d\r\nX-A: 1\nTransfer-Encoding: chunked"
                "\r\nContent-Length: 5\r\n\r\nhello" % (self.url("/echo/lfte-%s" % m),
                                                        self.origin.port)
                + self.smuggled_get(m))
        client = self.raw()
        self.addCleanup(client.close)
        client.send(data)
        client.read_responses(2, timeout=env.t(3))
        self.assertEqual(self.origin.seen("smuggled-" + m), [])
        for rec in self.origin.seen("lfte-" + m):
            self.assertFalse(any("\n" in v or "\r" in v for _, v in rec["headers"]), rec)


if __name__ == "__main__":
    unittest.main()
