"""Self-tests of the harness: the origins, the CA and the clients work on their own, without
airlock, so a failure elsewhere points at the proxy and not at the test tooling."""

import hashlib
import http.client
import json
import socket
import ssl
import subprocess
import unittest

from harness import clients, env, netns, runner
from harness.base import parse_proxy_status
from harness.certs import TestCA
from harness.origin import OriginServer, RawOrigin, pattern_bytes, pattern_sha256


def direct(port, data, count=1, head_request=()):
    c = clients.RawClient(port, timeout=5)
    c.send(data)
    responses = c.read_responses(count, head_request=head_request)
    c.close()
    return responses


class OriginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = OriginServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.origin.stop()

    def test_echo_reports_request(self):
        body = b"x" * 1000
        [r] = direct(self.origin.port,
                     b"POST /echo/a%2Fb?q=1 HTTP/1.1\r\nHost: h\r\nX-One: 1\r\n"
                     b"Content-Length: 1000\r\n\r\n" + body)
        self.assertEqual(r.status, 200)
        echo = r.json()
        self.assertEqual(echo["method"], "POST")
        self.assertEqual(echo["path"], "/echo/a%2Fb")
        self.assertEqual(echo["query"], "q=1")
        self.assertEqual(echo["body_length"], 1000)
        self.assertEqual(echo["body_sha256"], hashlib.sha256(body).hexdigest())
        self.assertIn(["X-One", "1"], echo["headers"])

    def test_echo_reads_chunked_body(self):
        [r] = direct(self.origin.port,
                     b"PUT /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: x\r\n\r\n")
        echo = r.json()
        self.assertTrue(echo["chunked"])
        self.assertEqual(echo["body_length"], 5)
        self.assertEqual(echo["body_sha256"], hashlib.sha256(b"abcde").hexdigest())

    def test_bad_chunk_size_is_recorded_incomplete(self):
        [r] = direct(self.origin.port, b"POST /echo/badchunk HTTP/1.1\r\nHost: h\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")
        self.assertEqual(r.status, 400)
        self.assertEqual(self.origin.completed("/echo/badchunk"), [])
        self.assertEqual(len(self.origin.seen("/echo/badchunk")), 1)

    def test_bytes_and_chunked_bodies(self):
        n = 200_000
        [a, b] = direct(self.origin.port, b"GET /bytes/%d HTTP/1.1\r\nHost: h\r\n\r\n"
                        b"GET /chunked/%d HTTP/1.1\r\nHost: h\r\n\r\n" % (n, n), count=2)
        self.assertEqual(a.body, pattern_bytes(n))
        self.assertEqual(a.header("Content-Length"), str(n))
        self.assertEqual(b.header("Transfer-Encoding"), "chunked")
        self.assertEqual(b.body, pattern_bytes(n))
        self.assertEqual(hashlib.sha256(a.body).hexdigest(), pattern_sha256(n))

    def test_head_has_no_body(self):
        [a, b] = direct(self.origin.port, b"HEAD /bytes/100 HTTP/1.1\r\nHost: h\r\n\r\n"
                        b"GET /status/201 HTTP/1.1\r\nHost: h\r\n\r\n", count=2,
                        head_request=(0,))
        self.assertEqual(a.header("Content-Length"), "100")
        self.assertEqual(a.body, b"")
        self.assertEqual(b.status, 201)

    def test_status_and_slow(self):
        [r] = direct(self.origin.port, b"GET /status/204 HTTP/1.1\r\nHost: h\r\n\r\n")
        self.assertEqual((r.status, r.body), (204, b""))
        [r] = direct(self.origin.port, b"GET /slow/50 HTTP/1.1\r\nHost: h\r\n\r\n")
        self.assertEqual(r.json(), {"slept_ms": 50})

    def test_keep_alive_and_conn_id(self):
        before = self.origin.accepted
        conn = http.client.HTTPConnection("127.0.0.1", self.origin.port, timeout=5)
        ids = []
        for _ in range(3):
            conn.request("GET", "/conn-id")
            ids.append(conn.getresponse().read())
        conn.close()
        self.assertEqual(len(set(ids)), 1)
        self.assertEqual(self.origin.accepted - before, 1)

    def test_websocket_echo(self):
        c = clients.RawClient(self.origin.port, timeout=5)
        c.send(b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               b"\r\n")
        r = c.read_response()
        self.assertEqual(r.status, 101)
        self.assertEqual(r.header("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        c.take()
        c.send(b"ping-bytes")
        self.assertEqual(c.recv_exact(10), b"ping-bytes")
        c.close()


class TlsOriginTest(unittest.TestCase):
    def test_tls_origin_with_test_ca(self):
        ca = TestCA()
        self.addCleanup(ca.cleanup)
        with OriginServer(ca.server_context()) as origin:
            ctx = ca.client_context()
            conn = http.client.HTTPSConnection("127.0.0.1", origin.port, timeout=5,
                                               context=ctx)
            conn.request("GET", "/echo")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
            # SAN DNS:origin.test verifies when the name is used for SNI and the check.
            with socket.create_connection(("127.0.0.1", origin.port), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname="origin.test") as tls:
                    tls.sendall(b"GET /status/200 HTTP/1.1\r\nHost: origin.test\r\n"
                                b"Connection: close\r\n\r\n")
                    self.assertIn(b"200", tls.recv(100))
            self.assertIn("origin.test", origin.tls_server_names)
            # A name that is not in the certificate fails verification.
            with socket.create_connection(("127.0.0.1", origin.port), timeout=5) as s:
                with self.assertRaises(ssl.SSLCertVerificationError):
                    ctx.wrap_socket(s, server_hostname="other.test")
            # curl with the CA file, straight to the origin.
            out = subprocess.run(["curl", "-sS", "--cacert", ca.ca_cert, "--resolve",
                                  "origin.test:%d:127.0.0.1" % origin.port,
                                  origin.url("/echo")], capture_output=True, timeout=20)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(json.loads(out.stdout)["path"], "/echo")


class RawToolsTest(unittest.TestCase):
    def test_raw_origin_records_and_replies(self):
        with RawOrigin(RawOrigin.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")) as o:
            [r] = direct(o.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(r.body, b"hi")
            self.assertTrue(o.received().startswith(b"GET / HTTP/1.1"))

    def test_client_hello_has_sni(self):
        hello = clients.client_hello("origin.test")
        self.assertEqual(hello[0], 0x16)  # TLS handshake record
        self.assertIn(b"origin.test", hello)
        self.assertNotIn(b"origin.test", clients.client_hello(None))

    def test_parse_responses_pipelined_and_truncated(self):
        data = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        rs, rest = parse = clients.parse_responses(data)
        self.assertEqual([r.status for r in rs], [100, 200, 200, 200])
        self.assertEqual(rs[1].body, b"abc")
        self.assertEqual(rs[2].body, b"xyz")
        self.assertFalse(rs[3].complete)
        self.assertEqual(rest, b"")
        del parse

    def test_proxy_status_parser(self):
        ps = parse_proxy_status('airlock; error=http_request_denied; details="a; b \\"c\\""')
        self.assertEqual(ps, {"name": "airlock", "error": "http_request_denied",
                              "details": 'a; b "c"'})

    def test_network_is_isolated(self):
        netns.require_isolation(self)
        self.assertTrue(netns.isolated())
        with socket.socket() as s:
            s.settimeout(2)
            with self.assertRaises(OSError):
                s.connect(("10.0.0.1", 80))


class SkipPolicyTest(unittest.TestCase):
    """harness/runner.py's verdict: a skip never passes for a pass, and CI refuses the ones
    not on its allow-list."""

    def verdict(self, skips, ci, failed=False):
        class Result:
            skipped = [(type("T", (), {"id": lambda self, i=tid: i})(), why)
                       for tid, why in skips]

            def wasSuccessful(self):
                return not failed

        import io
        from unittest import mock
        with mock.patch.dict("os.environ", {"CI": "true" if ci else "false"}):
            return runner.verdict(Result(), out=io.StringIO())

    def test_verdicts(self):
        odd = [("test_x.T.test_a", "lacks capture: kernel lacks CONFIG_NFT_NAT")]
        kubectl = [("test_deploy.KubernetesTest.test_kustomize_builds", "lacks kubectl: x")]
        self.assertEqual(self.verdict([], ci=True), 0)
        self.assertEqual(self.verdict(odd, ci=False), 77)
        self.assertEqual(self.verdict(odd, ci=True), 1)
        self.assertEqual(self.verdict(kubectl, ci=True), 77)
        self.assertEqual(self.verdict(kubectl, ci=True, failed=True), 1)


class SanitizerOptionsTest(unittest.TestCase):
    def test_harness_options_are_appended_and_win(self):
        e = env.sanitizer_env({"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1"})
        self.assertTrue(e["ASAN_OPTIONS"].startswith("detect_leaks=1:abort_on_error=1:"))
        self.assertTrue(e["ASAN_OPTIONS"].endswith(env.HARNESS_ASAN_OPTIONS))
        self.assertEqual(env.sanitizer_env({})["ASAN_OPTIONS"], env.HARNESS_ASAN_OPTIONS)


if __name__ == "__main__":
    unittest.main()
