"""HTTP/2 on inspected tunnels: a client that picks "h2" in ALPN has each stream served as an
exchange through the same checks as an HTTP/1.1 request in the tunnel (decision, limits,
injection, audit), bridged to an HTTP/1.1 origin.

Shown with curl --http2 (one stream, several multiplexed, an upload) and a Python h2 client
(Debian python3-h2) that puts an allowed and a refused stream on one connection; a rule whose
`protocols` leave out h2 gets HTTP/1.1.
"""

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

from harness import env
from harness.base import marker, parse_proxy_status
from harness.h2_client import ConnectForwarder, H2Tunnel
from harness.origin import pattern_sha256
from harness.proxy import make_policy, origin_rule
from harness.tls_support import InspectedOriginCase

PATHS = [r"^/echo/allowed.*", r"^/bytes/[0-9]+$", r"^/chunked/[0-9]+$", r"^/slow/[0-9]+$"]


def inspect_rule(port, name, hosts, **extra):
    rule = {"name": name, "hosts": list(hosts), "addresses": ["127.0.0.1"],
            "allow_cidrs": ["127.0.0.1/32"], "ports": [port], "inspect": True,
            "methods": ["GET", "POST"], "paths": list(PATHS)}
    rule.update(extra)
    return rule


class H2Case(InspectedOriginCase):
    admin = False

    origin_names = ("insp.test", "h1only.test", "h2only.test", "origin.test", "redact.test")

    @classmethod
    def policy(cls):
        return make_policy([
            origin_rule(cls.origin.port),
            inspect_rule(cls.good.port, "inspected", ["insp.test"],
                         inject={"headers": {"X-Injected": "injected-value"}}),
            inspect_rule(cls.good.port, "h1-only", ["h1only.test"], protocols=["http/1.1"]),
            inspect_rule(cls.good.port, "h2-only", ["h2only.test"], protocols=["h2"]),
            inspect_rule(cls.good.port, "redact", ["redact.test"], dlp={"action": "redact"}),
            # An IP literal, for nghttp (no proxy support: a local CONNECT forwarder).
            inspect_rule(cls.good.port, "by-ip", ["127.0.0.1"]),
        ], tls={"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert},
            # Short: a connection outliving it must still work (the handshake's deadline
            # must not stay on the HTTP/2 connection).
            limits={"head_timeout": "2s"})

    def url(self, path, host="insp.test"):
        return "https://%s:%d%s" % (host, self.good.port, path)

    def curl2(self, *urls, args=()):
        return self.curl(*urls, args=["--http2", "--cacert", self.ica.cert,
                                      "-w", "%{stderr}version=%{http_version}\n", *args])

    def tunnel(self, host="insp.test", **kw):
        t = H2Tunnel(self.port, "%s:%d" % (host, self.good.port), self.ica.cert, **kw)
        self.addCleanup(t.close)
        return t

    def test_curl_http2_allowed(self):
        m = marker()
        r = self.curl2(self.url("/echo/allowed?m=" + m))
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("version=2", r.stderr)
        seen = json.loads(r.body)
        self.assertEqual(seen["path"], "/echo/allowed")
        self.assertEqual(seen["http_version"], "HTTP/1.1")  # bridged to the HTTP/1.1 origin
        rec = self.proxy.wait_audit(path="/echo/allowed", protocol="h2")
        self.assertIsNotNone(rec, self.proxy.audit()[-3:])
        self.assertEqual(rec["decision"], "allow")
        self.assertEqual(rec["status"], 200)
        self.assertEqual(rec["scheme"], "https")
        self.assertNotIn("not delivered", rec.get("detail") or "", rec)  # curl read it all

    def test_dlp_redact_rewrites_a_stream_body(self):
        # The body held whole goes on as DLP rewrote it, with its length corrected, as on
        # HTTP/1.1 (test_dlp.DlpRedactTest).
        key = "AKIAIOSFODNN7EXAMPLE"
        m = marker()
        t = self.tunnel("redact.test")
        body = json.dumps({"note": m, "aws": key}).encode()
        sid = t.request("/echo/allowed/" + m, method="POST", body=body,
                        extra=[("content-type", "application/json"),
                               ("content-length", str(len(body)))])
        (r,) = t.wait(sid)
        self.assertEqual(r["headers"][":status"], "200", r)
        seen = json.loads(r["body"])
        sent_on = body.replace(key.encode(), b"[REDACTED:aws-access-key]")
        self.assertEqual(seen["body_sha256"], hashlib.sha256(sent_on).hexdigest(), seen)
        headers = {k.lower(): v for k, v in seen["headers"]}
        self.assertEqual(int(headers["content-length"]), len(sent_on))
        rec = self.proxy.wait_audit(path="/echo/allowed/" + m, protocol="h2")
        self.assertIn({"class": "aws-access-key", "location": "body", "action": "redact"},
                      rec["dlp"])

    def test_refused_stream_while_other_succeeds(self):
        t = self.tunnel()
        self.assertEqual(t.alpn, "h2")
        ok = t.request("/echo/allowed/one")
        denied = t.request("/not/allowed")
        big = t.request("/bytes/300000")
        r_ok, r_denied, r_big = t.wait(ok, denied, big)
        self.assertEqual(r_ok["headers"][":status"], "200", r_ok)
        self.assertEqual(r_denied["headers"][":status"], "403", r_denied)
        status = parse_proxy_status(r_denied["headers"].get("proxy-status"))
        self.assertEqual(status.get("error"), "http_request_denied", r_denied)
        self.assertEqual(r_denied["headers"].get("x-airlock-reason"), "path_denied")
        self.assertEqual(r_big["headers"][":status"], "200")
        self.assertEqual(hashlib.sha256(r_big["body"]).hexdigest(), pattern_sha256(300000))
        # The connection carries on after the refusal.
        again = t.request("/echo/allowed/again")
        (r_again,) = t.wait(again)
        self.assertEqual(r_again["headers"][":status"], "200")
        seen = json.loads(r_again["body"])
        headers = {k.lower(): v for k, v in seen["headers"]}
        self.assertEqual(headers.get("x-injected"), "injected-value")
        rec = self.proxy.wait_audit(path="/not/allowed")
        self.assertEqual(rec["reason"], "path_denied")
        self.assertEqual(rec["protocol"], "h2")

    def test_answer_the_client_resets_is_recorded_as_not_delivered(self):
        t = self.tunnel()
        mark = self.proxy.audit_mark()
        sid = t.request("/bytes/3000000")
        t.pump(lambda: t.responses[sid]["headers"] is not None)
        self.assertEqual(t.responses[sid]["headers"][":status"], "200")
        t.conn.reset_stream(sid, error_code=8)  # CANCEL
        t.flush()
        rec = self.proxy.wait_audit(after=mark, path="/bytes/3000000", protocol="h2")
        self.assertIsNotNone(rec)
        self.assertEqual((rec["decision"], rec["status"]), ("allow", 200), rec)
        self.assertIn("response not delivered: the client reset the stream (CANCEL)",
                      rec["detail"])
        self.assertLess(rec["bytes_out"], 3000000)
        # bytes_out is what the HTTP/2 codec took for the client, the count the detail names,
        # not what was queued behind the client's window.
        sent = re.search(r"after (\d+) body bytes", rec["detail"])
        self.assertEqual(rec["bytes_out"], int(sent.group(1)), rec)
        # One record, and the connection goes on.
        (r,) = t.wait(t.request("/echo/allowed/after-reset"))
        self.assertEqual(r["headers"][":status"], "200")
        recs = [x for x in self.proxy.audit()[mark:] if x.get("path") == "/bytes/3000000"]
        self.assertEqual(len(recs), 1, recs)

    def test_stream_reset_before_its_answer_is_recorded_as_not_delivered(self):
        # The origin is still working when the client gives up: its answer reaches nobody, so
        # the record has no status (not the origin's 200) and says why.
        t = self.tunnel()
        m = marker()
        mark = self.proxy.audit_mark()
        sid = t.request("/slow/1500?" + m)
        self.assertTrue(self.good.wait_seen(m, env.t(10), complete=False))
        t.conn.reset_stream(sid, error_code=8)  # CANCEL
        t.flush()
        rec = self.proxy.wait_audit(after=mark, path="/slow/1500", protocol="h2",
                                    timeout=env.t(15))
        self.assertEqual((rec["decision"], rec["status"], rec["bytes_out"]), ("allow", 0, 0), rec)
        self.assertIn("response not delivered: the client reset the stream (CANCEL)",
                      rec["detail"])

    def test_stream_reset_ends_its_exchange_without_waiting_for_the_origin(self):
        # The origin would answer after a minute: the reset stream's exchange ends (its origin
        # connection closed under the read) at the reset, not when the origin answers or
        # limits.response_timeout passes, and its record blames no origin.
        t = self.tunnel()
        m = marker()
        mark = self.proxy.audit_mark()
        sid = t.request("/slow/60000?" + m)
        self.assertTrue(self.good.wait_seen(m, env.t(10), complete=False))
        t.conn.reset_stream(sid, error_code=8)  # CANCEL
        t.flush()
        rec = self.proxy.wait_audit(after=mark, path="/slow/60000", protocol="h2",
                                    timeout=env.t(15))
        self.assertIsNotNone(rec, "no record before the origin's answer")
        self.assertEqual((rec["decision"], rec["reason"], rec["status"]), ("allow", "ok", 0), rec)
        self.assertIn("the client reset the stream (CANCEL)", rec["detail"])
        (r,) = t.wait(t.request("/echo/allowed/after-reset-" + m))
        self.assertEqual(r["headers"][":status"], "200")

    def test_client_closing_with_streams_waiting_does_not_blame_the_origin(self):
        # The client sends GOAWAY and closes while two streams wait on a healthy origin: their
        # records say the answers were not delivered, never an upstream error.
        t = self.tunnel()
        m = marker()
        mark = self.proxy.audit_mark()
        for i in range(2):
            t.request("/slow/1500?%s-%d" % (m, i))
        self.assertTrue(self.good.wait_seen("%s-1" % m, env.t(10), complete=False))
        t.conn.close_connection()
        t.flush()
        t.sock.close()
        deadline = time.monotonic() + env.t(15)
        recs = []
        while len(recs) < 2 and time.monotonic() < deadline:
            recs = [r for r in self.proxy.audit()[mark:] if r.get("path") == "/slow/1500"]
            time.sleep(0.05)
        self.assertEqual(len(recs), 2, recs)
        for rec in recs:
            self.assertEqual((rec["decision"], rec["reason"], rec["status"]), ("allow", "ok", 0),
                             rec)
            self.assertIn("response not delivered", rec["detail"])

    def test_connection_outlives_the_head_timeout(self):
        t = self.tunnel()
        (r,) = t.wait(t.request("/echo/allowed/first"))
        self.assertEqual(r["headers"][":status"], "200")
        time.sleep(3)  # > head_timeout, < idle_timeout
        (r,) = t.wait(t.request("/echo/allowed/later"))
        self.assertEqual(r["headers"][":status"], "200", r)

    def test_upload_streams_both_ways(self):
        size = 3 * 1024 * 1024 + 17
        with tempfile.NamedTemporaryFile(prefix="airlock-h2-") as f:
            f.write(os.urandom(size))
            f.flush()
            f.seek(0)
            digest = hashlib.sha256(f.read()).hexdigest()
            r = self.curl2(self.url("/echo/allowed/upload"),
                           args=["--data-binary", "@" + f.name,
                                 "-H", "Content-Type: application/octet-stream"])
        self.assertEqual(r.returncode, 0, r)
        seen = json.loads(r.body)
        self.assertEqual(seen["body_length"], size)
        self.assertEqual(seen["body_sha256"], digest)
        r = self.curl2(self.url("/chunked/2000000"))
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), pattern_sha256(2000000))

    def test_h2_client_body_without_length(self):
        t = self.tunnel()
        body = os.urandom(200000)
        sid = t.request("/echo/allowed/nolength", method="POST", body=body)
        (r,) = t.wait(sid)
        self.assertEqual(r["headers"][":status"], "200", r)
        seen = json.loads(r["body"])
        self.assertEqual(seen["body_length"], len(body))
        self.assertTrue(seen["chunked"])

    def test_multiplexed_curl(self):
        urls = [self.url("/echo/allowed/%d" % i) for i in range(6)]
        r = self.curl2(*urls, args=["-Z", "--parallel-max", "6", "-o", "/dev/null"] * 1)
        self.assertEqual(r.returncode, 0, r)
        recs = [self.proxy.wait_audit(path="/echo/allowed/%d" % i) for i in range(6)]
        self.assertTrue(all(rec and rec["protocol"] == "h2" for rec in recs), recs)
        self.assertEqual(len({rec["client"] for rec in recs}), 1, recs)

    def test_rule_without_h2_gets_http11(self):
        r = self.curl2(self.url("/echo/allowed", host="h1only.test"))
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("version=1.1", r.stderr)
        rec = self.proxy.wait_audit(host="h1only.test", path="/echo/allowed")
        self.assertEqual(rec["protocol"], "http/1.1")

    def test_http11_request_under_h2_only_rule_refused(self):
        r = self.curl(self.url("/echo/allowed", host="h2only.test"),
                      args=["--http1.1", "--cacert", self.ica.cert])
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "protocol_denied")
        r = self.curl2(self.url("/echo/allowed", host="h2only.test"))
        self.assertEqual(r.status, 200, r)
        self.assertIn("version=2", r.stderr)

    def test_nghttp_refused_stream_while_other_succeeds(self):
        fwd = ConnectForwarder(self.port, "127.0.0.1:%d" % self.good.port)
        self.addCleanup(fwd.stop)
        base = "https://127.0.0.1:%d" % fwd.port
        # One connection, three streams at once (nghttp sends every URI on one connection).
        proc = subprocess.run(["nghttp", "-v", "-n", base + "/echo/allowed/ng1",
                               base + "/not/allowed/ng", base + "/bytes/100000"],
                              capture_output=True, text=True, timeout=env.t(30))
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr[-2000:])
        out = proc.stdout
        self.assertIn("h2", out)
        self.assertRegex(out, r"recv \(stream_id=\d+\) :status: 403")
        self.assertEqual(len(re.findall(r"recv \(stream_id=\d+\) :status: 200", out)), 2, out)
        self.assertRegex(out, r"recv \(stream_id=\d+\) x-airlock-reason: path_denied")
        recs = [self.proxy.wait_audit(path=p, host="127.0.0.1")
                for p in ("/echo/allowed/ng1", "/not/allowed/ng", "/bytes/100000")]
        self.assertEqual([r["protocol"] for r in recs], ["h2"] * 3, recs)
        self.assertEqual([r["status"] for r in recs], [200, 403, 200], recs)
        self.assertEqual(len({r["client"] for r in recs}), 1, recs)


if __name__ == "__main__":
    unittest.main()
