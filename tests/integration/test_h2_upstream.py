"""HTTP/2 to the origin: on an inspected tunnel the proxy offers "h2" and "http/1.1" in ALPN to
the origin and, when it picks h2, sends the tunnel's requests as streams on one HTTP/2
connection. The origin here is nghttpd (Debian nghttp2-server), which speaks HTTP/2 only, with a
certificate from the test CA on 127.0.0.1 (nghttpd cannot bind port 0: a free port is picked).

Shown: an HTTP/1.1 client reaching the h2-only origin (body, refused path, the origin's trailers
in the last chunk); an HTTP/2 client carried end to end as h2 (curl --http2, an upload echoed,
a refused stream beside an allowed one, trailers both ways, injection; more streams than the
origin's SETTINGS_MAX_CONCURRENT_STREAMS waiting for a free one); a rule whose `protocols` leave
out h2 never offers it upstream.
"""

import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from harness import env
from harness.base import ProxyTestCase, marker, parse_proxy_status
from harness.h2_client import H2Tunnel
from harness.proxy import make_policy, origin_rule
from harness.redis import free_port
from harness.tls_support import AirlockCA, OriginCerts, TlsTunnel

BIG = 300000


class Nghttpd:
    """nghttpd on 127.0.0.1:`port` serving `htdocs`, echoing uploads, adding a trailer."""

    def __init__(self, pair, htdocs):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="nghttpd-", suffix=".log", delete=False)
        cert, key = pair
        self.proc = subprocess.Popen(
            # Two streams at a time: the proxy must wait for a free one rather than open more
            # (which nghttpd would refuse with RST_STREAM REFUSED_STREAM).
            ["nghttpd", "-a", "127.0.0.1", "-d", htdocs, "--echo-upload", "-v",
             "--max-concurrent-streams=2",
             "--trailer=x-origin-trailer: t1", str(self.port), key, cert],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + env.t(10)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("nghttpd exited: %s" % self.output())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("nghttpd did not listen: %s" % self.output())

    def output(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=env.t(5))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)


class H2UpstreamCase(ProxyTestCase):
    admin = False

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=("h2o.test", "h1rule.test", "dlp.test"))
        cls.htdocs = tempfile.mkdtemp(prefix="airlock-htdocs-")
        with open(os.path.join(cls.htdocs, "hello.txt"), "w") as f:
            f.write("hello from nghttpd\n")
        cls.big = os.urandom(BIG)
        with open(os.path.join(cls.htdocs, "big.bin"), "wb") as f:
            f.write(cls.big)
        os.mkdir(os.path.join(cls.htdocs, "echo"))
        for name in ("upload", "dlp"):
            with open(os.path.join(cls.htdocs, "echo", name), "w") as f:
                f.write("")
        cls.nghttpd = Nghttpd(cls.certs.good, cls.htdocs)

    @classmethod
    def extra_teardown(cls):
        cls.nghttpd.stop()
        shutil.rmtree(cls.htdocs, ignore_errors=True)
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def policy(cls):
        base = {"addresses": ["127.0.0.1"], "allow_cidrs": ["127.0.0.1/32"],
                "ports": [cls.nghttpd.port], "inspect": True, "methods": ["GET", "POST"],
                "paths": [r"^/hello\.txt$", r"^/big\.bin$", r"^/echo/upload$"]}
        return make_policy([
            origin_rule(cls.origin.port),
            dict(base, name="h2o", hosts=["h2o.test"],
                 inject={"headers": {"X-Injected": "injected-value"}}),
            dict(base, name="h1rule", hosts=["h1rule.test"], protocols=["http/1.1"]),
            dict(base, name="dlp", hosts=["dlp.test"], dlp={"action": "block"},
                 paths=[r"^/echo/dlp$"]),
            # CONNECT by IP literal: the proxy connects first to read the origin's names.
            dict(base, name="by-ip", hosts=["127.0.0.1"]),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert})

    def url(self, path, host="h2o.test"):
        return "https://%s:%d%s" % (host, self.nghttpd.port, path)

    def tunnel(self, host="h2o.test"):
        t = H2Tunnel(self.port, "%s:%d" % (host, self.nghttpd.port), self.ica.cert)
        self.addCleanup(t.close)
        return t

    def test_http1_client_reaches_h2_only_origin(self):
        r = self.curl(self.url("/hello.txt"), self.url("/big.bin"),
                      args=["--http1.1", "--cacert", self.ica.cert,
                            "-w", "%{stderr}version=%{http_version}\n"])
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("version=1.1", r.stderr)
        self.assertEqual(r.body[:19], b"hello from nghttpd\n")
        self.assertEqual(hashlib.sha256(r.body[19:]).digest(), hashlib.sha256(self.big).digest())
        rec = self.proxy.wait_audit(path="/big.bin", protocol="http/1.1")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual(rec.get("upstream_protocol"), "h2")
        self.assertEqual(rec["status"], 200)
        self.assertEqual(rec["bytes_out"], BIG)

    def test_http1_client_gets_trailers_and_refusals(self):
        t = TlsTunnel(self.port, "h2o.test:%d" % self.nghttpd.port, self.ica.cert)
        self.addCleanup(t.close)
        t.send(b"GET /hello.txt HTTP/1.1\r\nHost: h2o.test\r\n\r\n"
               b"GET /secret HTTP/1.1\r\nHost: h2o.test\r\n\r\n")
        ok, denied = t.read_responses(2)
        self.assertEqual(ok.status, 200)
        self.assertEqual(ok.body, b"hello from nghttpd\n")
        # No Content-Length from the origin with a trailer: chunked, the trailer in the last
        # chunk (RFC 9112 section 7.1.2).
        self.assertIn(b"x-origin-trailer: t1", bytes(t.buffer).lower())
        self.assertEqual(denied.status, 403)
        rec = self.proxy.wait_audit(path="/secret")
        self.assertEqual(rec["reason"], "path_denied")

    def test_http2_client_end_to_end(self):
        m = marker()
        r = self.curl(self.url("/echo/upload"),
                      args=["--http2", "--cacert", self.ica.cert, "--data-binary", "upload " + m,
                            "-w", "%{stderr}version=%{http_version}\n"])
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("version=2", r.stderr)
        self.assertEqual(r.body, ("upload " + m).encode())
        rec = self.proxy.wait_audit(path="/echo/upload", protocol="h2")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual(rec.get("upstream_protocol"), "h2")
        self.assertEqual(rec["bytes_in"], len("upload " + m))

    def test_streams_trailers_and_injection_over_one_origin_connection(self):
        t = self.tunnel()
        self.assertEqual(t.alpn, "h2")
        ok = t.request("/hello.txt")
        denied = t.request("/not/allowed")
        big = t.request("/big.bin")
        upload = t.headers("/echo/upload", method="POST", end_stream=False)
        t.send_body(upload, b"x" * 100000, end=False)
        t.conn.send_headers(upload, [("x-client-trailer", "c1")], end_stream=True)
        t.flush()
        r_ok, r_denied, r_big, r_up = t.wait(ok, denied, big, upload)
        self.assertEqual(r_ok["headers"][":status"], "200", r_ok)
        self.assertEqual(r_ok["body"], b"hello from nghttpd\n")
        self.assertEqual(r_ok["trailers"], {"x-origin-trailer": "t1"})
        self.assertEqual(r_denied["headers"][":status"], "403", r_denied)
        status = parse_proxy_status(r_denied["headers"].get("proxy-status"))
        self.assertEqual(status.get("error"), "http_request_denied")
        self.assertEqual(r_big["body"], self.big)
        self.assertEqual(r_up["headers"][":status"], "200", r_up)
        self.assertEqual(r_up["body"], b"x" * 100000)
        # What nghttpd saw (its -v log): the injected header and the client's trailer, on the
        # one connection the proxy opened.
        deadline = time.monotonic() + env.t(5)
        while time.monotonic() < deadline and "x-client-trailer" not in self.nghttpd.output():
            time.sleep(0.05)
        log = self.nghttpd.output()
        self.assertIn("x-injected: injected-value", log)
        self.assertIn("x-client-trailer: c1", log)

    def test_dlp_reads_request_trailers(self):
        # A key in a request trailer (name or value) is refused before the trailers are sent
        # on (the stream refused or reset, or only its end withheld when nghttpd's echo has
        # already answered); a clean trailer passes.
        key = "AKIAIOSFODNN7EXAMPLE"
        t = self.tunnel("dlp.test")
        sids = []
        for trailer in (("x-client-trailer", "c1"), ("x-checksum", key), ("x-" + key, "1")):
            sid = t.headers("/echo/dlp", method="POST", end_stream=False)
            t.send_body(sid, b"y" * 1000, end=False)
            t.conn.send_headers(sid, [trailer], end_stream=True)
            t.flush()
            sids.append(sid)
        clean = t.wait(*sids)[0]
        self.assertEqual(clean["headers"][":status"], "200", clean)
        deadline = time.monotonic() + env.t(5)
        recs = []
        while time.monotonic() < deadline and len(recs) < 2:
            recs = [rec for rec in self.proxy.audit()
                    if rec.get("host") == "dlp.test" and rec.get("reason") == "dlp_blocked"]
            time.sleep(0.05)
        self.assertEqual(len(recs), 2, self.proxy.audit()[-4:])
        for rec in recs:
            self.assertIn({"class": "aws-access-key", "location": "trailer", "action": "block"},
                          rec["dlp"])
        time.sleep(0.2)
        self.assertNotIn(key, self.nghttpd.output())

    def test_more_streams_than_the_origin_allows_wait_their_turn(self):
        t = self.tunnel()
        sids = [t.request("/big.bin") for _ in range(6)]
        for r in t.wait(*sids):
            self.assertEqual(r["headers"][":status"], "200", r)
            self.assertIsNone(r["reset"], r)
            self.assertEqual(r["body"], self.big)

    def test_http1_client_reaches_h2_only_origin_by_ip_literal(self):
        # For an IP-literal CONNECT the proxy connects to the origin before the client's
        # handshake (the minted leaf also carries the origin's names); that connection offers h2
        # too, so an h2-only origin still serves the tunnel's HTTP/1.1 requests.
        r = self.curl("https://127.0.0.1:%d/hello.txt" % self.nghttpd.port,
                      args=["--http1.1", "--cacert", self.ica.cert])
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.body, b"hello from nghttpd\n")
        rec = self.proxy.wait_audit(host="127.0.0.1", path="/hello.txt")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual((rec["rule"], rec["status"], rec.get("upstream_protocol")),
                         ("by-ip", 200, "h2"))

    def test_rule_without_h2_stays_on_http1(self):
        # nghttpd speaks only h2: a rule that leaves h2 out offers only http/1.1, and the
        # handshake fails (ALPN no_application_protocol), answered 502.
        r = self.curl(self.url("/hello.txt", host="h1rule.test"),
                      args=["--http1.1", "--cacert", self.ica.cert])
        rec = self.proxy.wait_audit(host="h1rule.test", path="/hello.txt")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertNotEqual(rec.get("upstream_protocol"), "h2")
        self.assertEqual(rec["decision"], "error", rec)
        self.assertNotEqual(r.body, b"hello from nghttpd\n")


if __name__ == "__main__":
    unittest.main()
