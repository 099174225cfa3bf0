"""TLS interception (`inspect: true`): the proxy answers the client's handshake with a leaf
minted by its own CA (made here by `airlock ca init`), verifies the origin against
`tls.upstream_ca`, and runs every decrypted request through the policy.

Shown with curl, Python requests and openssl s_client: allowed and refused requests inside
TLS, keep-alive in the tunnel, uploads, the minted chain and its properties, the leaf cache
(and its metrics), origins that fail verification, clients that do not trust the CA or speak
TLS 1.1, SNI checks, and that opaque tunnels still work when a CA is configured.
"""

import hashlib
import json
import os
import re
import select
import ssl
import subprocess
import tempfile
import time
import unittest
from unittest import mock

import requests
import yaml

from harness import clients, env
from harness.base import CurlAnswer, ProxyTestCase, marker, parse_proxy_status
from harness.origin import pattern_sha256
from harness.proxy import make_policy, origin_rule, run_airlock, tunnel_rule
from harness.tls_support import (AirlockCA, AlpnOrigin, OriginCerts, TlsTunnel, fetch_metrics,
                                 pem_certificates, s_client, verify, x509_field, x509_text)

INSPECT_PATHS = [r"^/echo/allowed.*", r"^/bytes/[0-9]+$"]
EIGHT_DAYS = 8 * 24 * 3600


def inspect_rule(port, name="inspected", hosts=("insp.test",), **extra):
    """An intercepted rule: pinned to loopback, GET and POST under /echo/allowed* and
    /bytes/N only."""
    rule = {
        "name": name,
        "hosts": list(hosts),
        "addresses": ["127.0.0.1"],
        "allow_cidrs": ["127.0.0.1/32"],
        "ports": [port],
        "inspect": True,
        "methods": ["GET", "POST"],
        "paths": list(INSPECT_PATHS),
    }
    rule.update(extra)
    return {k: v for k, v in rule.items() if v is not None}


def http_get(path, host, close=True):
    head = "GET %s HTTP/1.1\r\nHost: %s\r\n" % (path, host)
    if close:
        head += "Connection: close\r\n"
    return (head + "\r\n").encode()


class InterceptionCase(ProxyTestCase):
    """Shared setup: the interception CA, origin certificates, three TLS origins (trusted,
    self-signed, wrong name) and a policy whose tls section names them."""

    admin = False

    @classmethod
    def extra_setup(cls):
        cls.ica = AirlockCA()
        cls.certs = OriginCerts()
        cls.good = AlpnOrigin(OriginCerts.server_context(cls.certs.good)).start()
        cls.selfsigned = AlpnOrigin(OriginCerts.server_context(cls.certs.self_signed)).start()
        cls.wrongname = AlpnOrigin(OriginCerts.server_context(cls.certs.other_name)).start()

    @classmethod
    def extra_teardown(cls):
        for origin in (cls.good, cls.selfsigned, cls.wrongname):
            origin.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()

    @classmethod
    def tls_section(cls):
        return {"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert}

    @classmethod
    def policy(cls):
        p = make_policy([
            origin_rule(cls.origin.port),
            inspect_rule(cls.good.port),
            inspect_rule(cls.good.port, name="inspected-ip", hosts=["127.0.0.1"],
                         addresses=None),
            # Same name as the trusted one: the only fault is the certificate.
            inspect_rule(cls.selfsigned.port, name="self-signed"),
            inspect_rule(cls.wrongname.port, name="wrong-name"),
            tunnel_rule(cls.good.port, name="opaque", hosts=["origin.test"]),
        ], tls=cls.tls_section())
        if cls.admin:
            p["listen"]["admin"] = "127.0.0.1:0"
        return p

    def insp_url(self, path, host="insp.test", origin=None):
        return "https://%s:%d%s" % (host, (origin or self.good).port, path)

    def curl_ica(self, *urls, args=(), **kw):
        """curl trusting the interception CA (and nothing else)."""
        return self.curl(*urls, args=["--cacert", self.ica.cert, *args], **kw)

    def showcerts(self, connect, servername):
        """The chain the proxy presents for CONNECT `connect`: s_client -showcerts, stdin
        closed at once (no request). Returns (certs as PEM bytes, stdout)."""
        name = ["-servername", servername] if servername else ["-noservername"]
        out = s_client(self.proxy.port, connect, ["-showcerts", *name])
        certs = pem_certificates(out.stdout)
        self.assertGreaterEqual(len(certs), 1, "no certificate from s_client: %s %s"
                                % (out.stdout[-2000:], out.stderr[-2000:]))
        return certs, out.stdout

    def wait_new_audit(self, before, **match):
        """The first audit record after the first `before` ones that matches `match`."""
        deadline = time.monotonic() + env.t(3)
        while True:
            for rec in self.proxy.audit()[before:]:
                if all(v(rec.get(k)) if callable(v) else rec.get(k) == v
                       for k, v in match.items()):
                    return rec
            if time.monotonic() >= deadline:
                self.fail("no new audit record with %r; last records: %r"
                          % (match, self.proxy.audit()[-4:]))
            time.sleep(0.05)

    def assert_origin_never_saw(self, origin, m, **record):
        """The origin never saw marker m: checked once the exchange is known to be over, i.e.
        once the proxy wrote its audit record (`record`, which must identify this test's own
        exchange: a marker in the path, the client's port, or records after a mark)."""
        self.assert_audit(**record)
        self.assertEqual(origin.seen(m), [], "the origin got a request it must not see")


class InterceptionTest(InterceptionCase):
    adversarial = True

    # -- allowed requests ---------------------------------------------------------------------

    def test_curl_get_through_inspected_rule(self):
        m = marker()
        r = self.curl_ica(self.insp_url("/echo/allowed-%s?q=1" % m), args=["-v"])
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.responses[0].status, 200, "CONNECT answer: %r" % r.responses)
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["path"], "/echo/allowed-%s" % m)
        self.assertEqual(echo["query"], "q=1")
        host = [v for k, v in echo["headers"] if k.lower() == "host"]
        self.assertEqual(host, ["insp.test:%d" % self.good.port])
        # The proxy spoke TLS to the origin with SNI = the CONNECT name, offering http/1.1.
        self.assertEqual(echo["sni"], "insp.test")
        self.assertIn("http/1.1", self.good.alpn)
        # curl offers h2 and http/1.1; the proxy picks h2 (the rule's protocols allow it; the
        # origin is still spoken to over HTTP/1.1).
        self.assertRegex(r.stderr, r"ALPN.*accepted.*h2", r.stderr[-3000:])
        self.assertRegex(r.stderr, r"issuer: [^\n]*%s" % re.escape(self.ica.subject.split(
            ",")[0]), "curl did not see a leaf issued by the airlock CA")
        rec = self.assert_audit(scheme="https", path="/echo/allowed-%s" % m)
        self.assertEqual(rec["method"], "GET")
        self.assertEqual(rec["host"], "insp.test")
        self.assertEqual(rec["port"], self.good.port)
        self.assertEqual(rec["rule"], "inspected")
        self.assertEqual(rec["decision"], "allow")
        self.assertEqual(rec["status"], 200)
        self.assertEqual(rec["upstream"], "127.0.0.1:%d" % self.good.port)

    def test_large_download(self):
        n = 3_000_000
        r = self.curl_ica(self.insp_url("/bytes/%d" % n))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.body), n)
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), pattern_sha256(n))
        self.assert_audit(scheme="https", path="/bytes/%d" % n, decision="allow",
                          bytes_out=lambda b: isinstance(b, int) and b >= n)

    def test_post_body_through_interception(self):
        m = marker()
        body = bytes(range(256)) * 1200  # 300 KiB
        r = self.curl_ica(self.insp_url("/echo/allowed-post-%s" % m), input=body,
                          args=["--data-binary", "@-", "-H", "Content-Type: application/x-bin"])
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["method"], "POST")
        self.assertEqual(echo["body_length"], len(body))
        self.assertEqual(echo["body_sha256"], hashlib.sha256(body).hexdigest())
        rec = self.assert_audit(scheme="https", path="/echo/allowed-post-%s" % m)
        self.assertEqual(rec["method"], "POST")
        self.assertEqual(rec["decision"], "allow")
        self.assertGreaterEqual(rec["bytes_in"], len(body))

    def test_chunked_upload_through_interception(self):
        m = marker()
        body = os.urandom(100_000)
        r = self.curl_ica(self.insp_url("/echo/allowed-chunked-%s" % m), input=body,
                          args=["--data-binary", "@-", "-H", "Transfer-Encoding: chunked"])
        self.assertEqual(r.status, 200, r)
        echo = r.json()
        self.assertEqual(echo["body_sha256"], hashlib.sha256(body).hexdigest())
        self.assert_audit(scheme="https", method="POST", path="/echo/allowed-chunked-%s" % m,
                          decision="allow")

    def test_client_hangs_up_during_handshake(self):
        """Half a handshake, then nothing: the proxy drops the connection and keeps serving
        (adversarial: the tearDown checks that a normal request still works)."""
        for cut in (0, 1, 2):
            c = self.raw()
            c.send("CONNECT insp.test:%d HTTP/1.1\r\nHost: insp.test\r\n\r\n" % self.good.port)
            self.assertEqual(c.read_response(tunnel=True).status, 200)
            hello = clients.client_hello("insp.test")
            if cut == 0:
                c.send(hello)               # the whole hello, then hang up before Finished
            elif cut == 1:
                c.send(hello[:len(hello) // 2])  # half a hello
            else:
                c.send(hello)
                time.sleep(0.1)
                c.send(b"\x16\x03\x03\x00\x05junk")  # garbage where the next flight goes
            time.sleep(0.05)
            c.close()
        r = self.curl_ica(self.insp_url("/echo/allowed-after-hangup-%s" % marker()))
        self.assertEqual(r.status, 200, r)

    # -- refusals inside TLS ------------------------------------------------------------------

    def test_path_outside_rule_refused_inside_tls(self):
        m = marker()
        r = self.curl_ica(self.insp_url("/echo/denied-%s" % m))
        self.assertEqual(r.returncode, 0, r)
        # The CONNECT itself was accepted; the 403 came over the intercepted TLS session.
        self.assertEqual(r.responses[0].status, 200, r.responses)
        self.assert_answer(CurlAnswer(r), "path_denied")
        self.assert_origin_never_saw(self.good, m, scheme="https", path="/echo/denied-%s" % m)
        rec = self.assert_audit(scheme="https", path="/echo/denied-%s" % m)
        self.assertEqual(rec["decision"], "deny")
        self.assertEqual(rec["reason"], "path_denied")
        self.assertEqual(rec["status"], 403)
        self.assertEqual(rec["host"], "insp.test")

    def test_method_outside_rule_refused_inside_tls(self):
        m = marker()
        r = self.curl_ica(self.insp_url("/echo/allowed-put-%s" % m), args=["-X", "PUT"])
        self.assert_answer(CurlAnswer(r), "method_denied")
        self.assert_origin_never_saw(self.good, m, scheme="https", method="PUT",
                                     reason="method_denied", path="/echo/allowed-put-%s" % m)

    def test_keep_alive_inside_tunnel(self):
        """Three URLs in one curl call share one tunnel; the refused one in the middle does not
        break the connection, and every request is audited."""
        a, b, c = marker(), marker(), marker()
        urls = [self.insp_url("/echo/allowed-ka-%s" % a), self.insp_url("/echo/denied-ka-%s" % b),
                self.insp_url("/echo/allowed-ka-%s" % c)]
        with tempfile.TemporaryDirectory(prefix="airlock-itest-ka-") as tmp:
            outs = [os.path.join(tmp, "body%d" % i) for i in range(3)]
            cmd = ["curl", "-sS", "--max-time", str(env.t(20)), "--cacert", self.ica.cert,
                   "-x", "http://127.0.0.1:%d" % self.proxy.port,
                   "-w", "%{http_code} %{num_connects}\\n"]
            for out, url in zip(outs, urls):
                cmd += ["-o", out, url]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=env.t(30))
            bodies = []
            for out in outs:
                with open(out, "rb") as f:
                    bodies.append(f.read())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = [ln.split() for ln in proc.stdout.splitlines()]
        self.assertEqual([ln[0] for ln in lines], ["200", "403", "200"], proc.stdout)
        # One connection (CONNECT + handshake) for all three transfers.
        self.assertEqual([ln[1] for ln in lines], ["1", "0", "0"], proc.stdout)
        first, third = json.loads(bodies[0]), json.loads(bodies[2])
        self.assertEqual(first["path"], "/echo/allowed-ka-%s" % a)
        self.assertEqual(third["path"], "/echo/allowed-ka-%s" % c)
        # The upstream TLS connection is kept too.
        self.assertEqual(first["conn_id"], third["conn_id"])
        self.assertTrue(bodies[1].strip(), "the refusal has an empty body")
        self.assertEqual(self.good.seen(b), [])
        self.assert_audit(scheme="https", path="/echo/allowed-ka-%s" % a, decision="allow")
        self.assert_audit(scheme="https", path="/echo/denied-ka-%s" % b, decision="deny",
                          reason="path_denied")
        self.assert_audit(scheme="https", path="/echo/allowed-ka-%s" % c, decision="allow")

    def test_host_header_and_absolute_form_cannot_redirect(self):
        """Inside the tunnel the target is the CONNECT host, whatever the request says."""
        m1, m2 = marker(), marker()
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
        self.addCleanup(t.close)
        self.assertEqual(t.connect_response.status, 200)
        self.assertEqual(t.tls.selected_alpn_protocol(), "http/1.1")
        t.send("GET /echo/allowed-%s HTTP/1.1\r\nHost: evil.test\r\n\r\n" % m1)
        r = t.read_responses(1)
        self.assertEqual(len(r), 1, t.buffer[:500])
        self.assertEqual(r[0].status, 200, r[0])
        host = [v for k, v in r[0].json()["headers"] if k.lower() == "host"]
        self.assertEqual(host, ["insp.test:%d" % self.good.port])
        rec = self.assert_audit(scheme="https", path="/echo/allowed-%s" % m1)
        self.assertEqual(rec["host"], "insp.test")
        # Absolute form naming another host: refused, nothing reaches any origin.
        t.send("GET https://evil.test:%d/echo/allowed-%s HTTP/1.1\r\nHost: evil.test\r\n\r\n"
               % (self.good.port, m2))
        r = t.read_responses(2)
        self.assertEqual(len(r), 2, t.buffer[-500:])
        self.assert_answer(r[1], "bad_request")
        # The refusal's own record (same tunnel, so the same client port) ends that exchange.
        self.assert_origin_never_saw(self.good, m2, scheme="https", reason="bad_request",
                                     client_port=t.raw.local_port)

    def test_target_bytes_no_target_may_hold_are_refused_inside_tls(self):
        # As for an absolute-form target outside a tunnel: a fragment, a backslash (WHATWG
        # reads it as '/') or a raw non-ASCII byte could make the origin see another path than
        # the one the policy matched.
        for i, target in enumerate((b"/echo/allowed-%s#/../x", b"/echo/allowed-%s\\..\\x",
                                    b"/echo/allowed-%s/\xc3\xa9")):
            m = marker()
            t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert)
            self.addCleanup(t.close)
            t.send(b"GET " + (target % m.encode()) + b" HTTP/1.1\r\nHost: insp.test\r\n\r\n")
            (r,) = t.read_responses(1)
            self.assert_answer(r, "bad_request")
            self.assertIn(b"RFC 9112 section 3.2", r.body, (i, r))
            self.assert_origin_never_saw(self.good, m, scheme="https", reason="bad_request",
                                         client_port=t.raw.local_port)

    # -- Python requests ----------------------------------------------------------------------

    def test_python_requests(self):
        m = marker()
        proxies = {"https": "http://127.0.0.1:%d" % self.proxy.port}
        with mock.patch.dict(os.environ, {"REQUESTS_CA_BUNDLE": self.ica.cert}):
            with requests.Session() as s:
                r = s.get(self.insp_url("/echo/allowed-rq-%s" % m), proxies=proxies,
                          timeout=env.t(15))
                self.assertEqual(r.status_code, 200, r.text)
                self.assertEqual(r.json()["path"], "/echo/allowed-rq-%s" % m)
                payload = {"marker": m, "items": list(range(100))}
                r = s.post(self.insp_url("/echo/allowed-rq-post-%s" % m), json=payload,
                           proxies=proxies, timeout=env.t(15))
                self.assertEqual(r.status_code, 200, r.text)
                sent = r.request.body
                self.assertEqual(r.json()["body_sha256"], hashlib.sha256(sent).hexdigest())
                r = s.get(self.insp_url("/echo/denied-rq-%s" % m), proxies=proxies,
                          timeout=env.t(15))
                self.assertEqual(r.status_code, 403, r.text)
                self.assertEqual(r.headers.get("X-Airlock-Reason"), "path_denied")
                ps = parse_proxy_status(r.headers.get("Proxy-Status"))
                self.assertEqual(ps.get("error"), "http_request_denied", r.headers)
        self.assert_audit(scheme="https", path="/echo/allowed-rq-%s" % m, decision="allow")
        self.assert_audit(scheme="https", method="POST", path="/echo/allowed-rq-post-%s" % m)
        self.assert_audit(scheme="https", path="/echo/denied-rq-%s" % m, decision="deny")
        self.assertEqual(self.good.seen("denied-rq-%s" % m), [])  # its exchange is over

    def test_python_requests_without_the_ca_fails(self):
        m = marker()
        proxies = {"https": "http://127.0.0.1:%d" % self.proxy.port}
        mark = self.proxy.audit_mark()
        with self.assertRaises(requests.exceptions.SSLError):
            requests.get(self.insp_url("/echo/allowed-rqno-%s" % m), proxies=proxies,
                         timeout=env.t(15), verify=self.certs.ca_cert)
        self.assert_origin_never_saw(self.good, m, scheme="connect", host="insp.test",
                                     after=mark)

    # -- the minted chain ---------------------------------------------------------------------

    def test_openssl_chain_verifies_for_requested_name(self):
        m = marker()
        out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                       ["-servername", "insp.test", "-showcerts", "-ign_eof"],
                       send=http_get("/echo/allowed-sc-%s" % m, "insp.test"))
        self.assertIn(b"HTTP/1.1 200", out.stdout, out.stderr[-2000:])
        certs = pem_certificates(out.stdout)
        self.assertGreaterEqual(len(certs), 1)
        leaf, chain = certs[0], certs[1:]
        ok = verify(self.ica.cert, leaf, chain, ["-verify_hostname", "insp.test",
                                                 "-purpose", "sslserver"])
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        self.assertIn("OK", ok.stdout)
        bad = verify(self.ica.cert, leaf, chain, ["-verify_hostname", "other.test"])
        self.assertNotEqual(bad.returncode, 0, "leaf verified for a name it was not minted for")
        # Not the origin's certificate: it does not chain to the origin CA.
        origin = verify(self.certs.ca_cert, leaf, chain)
        self.assertNotEqual(origin.returncode, 0)
        self.assertEqual(x509_field(leaf, "issuer"), self.ica.subject)
        # The leaf alone: the airlock CA is a self-signed root, which a client that accepts the
        # leaf holds already (RFC 8446 section 4.4.2); test_tls_intermediate_ca.py shows an
        # intermediate CA sent.
        self.assertEqual(len(chain), 0, "chain: %d certificates after the leaf" % len(chain))

    def test_leaf_properties(self):
        certs, _ = self.showcerts("insp.test:%d" % self.good.port, "insp.test")
        leaf = certs[0]
        text = x509_text(leaf)
        san = re.search(r"Subject Alternative Name:.*?\n\s*(.*)\n", text)
        self.assertIsNotNone(san, text)
        self.assertEqual(san.group(1).strip(), "DNS:insp.test")
        self.assertRegex(text, r"Extended Key Usage:.*\n\s*TLS Web Server Authentication\s*\n")
        self.assertRegex(text, r"Basic Constraints: critical\n\s*CA:FALSE")
        self.assertNotIn("Certificate Sign", text)
        start = ssl.cert_time_to_seconds(x509_field(leaf, "startdate"))
        end = ssl.cert_time_to_seconds(x509_field(leaf, "enddate"))
        now = time.time()
        self.assertLessEqual(start, now + 5)
        self.assertGreater(end, now)
        self.assertLessEqual(end - start, EIGHT_DAYS, "leaf valid for %.1f days"
                             % ((end - start) / 86400))

    def test_ip_literal_leaf_verifies_for_ip(self):
        m = marker()
        certs, _ = self.showcerts("127.0.0.1:%d" % self.good.port, None)
        leaf, chain = certs[0], certs[1:]
        ok = verify(self.ica.cert, leaf, chain, ["-verify_ip", "127.0.0.1"])
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        bad = verify(self.ica.cert, leaf, chain, ["-verify_ip", "127.0.0.2"])
        self.assertNotEqual(bad.returncode, 0)
        text = x509_text(leaf)
        # The IP first, then the names of the verified origin certificate (test_ip_literal_leaf).
        self.assertIn("IP Address:127.0.0.1, DNS:insp.test, DNS:origin.test", text)
        # And a real request: the proxy verifies the origin for IP 127.0.0.1 too.
        r = self.curl_ica(self.insp_url("/echo/allowed-ip-%s" % m, host="127.0.0.1"))
        self.assertEqual(r.status, 200, r)
        rec = self.assert_audit(scheme="https", path="/echo/allowed-ip-%s" % m)
        self.assertEqual(rec["host"], "127.0.0.1")
        self.assertEqual(rec["rule"], "inspected-ip")

    # -- origins that fail verification -------------------------------------------------------

    def assert_upstream_tls_failed(self, origin, detail_pattern):
        m = marker()
        r = self.curl_ica(self.insp_url("/echo/allowed-bad-%s" % m, origin=origin))
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.responses[0].status, 200, r.responses)  # the answer is inside TLS
        answer = CurlAnswer(r)
        self.assert_answer(answer, "upstream_tls_failed")
        details = parse_proxy_status(answer.header("Proxy-Status")).get("details", "")
        self.assertRegex(details, detail_pattern)
        self.assert_origin_never_saw(origin, m, scheme="https", path="/echo/allowed-bad-%s" % m)
        rec = self.assert_audit(scheme="https", path="/echo/allowed-bad-%s" % m)
        self.assertEqual(rec["reason"], "upstream_tls_failed")
        self.assertEqual(rec["status"], 502)
        self.assertIn(rec["decision"], ("error",))
        self.assertRegex(rec["detail"], detail_pattern)

    def test_self_signed_origin_refused(self):
        self.assert_upstream_tls_failed(self.selfsigned, r"(?i)self.signed|unable to get")

    def test_wrong_name_origin_refused(self):
        self.assert_upstream_tls_failed(self.wrongname, r"(?i)hostname mismatch|name")

    # -- clients that must fail ---------------------------------------------------------------

    def test_client_without_ca_fails_handshake(self):
        # The system store, then only the origin's CA: neither trusts the minted leaf.
        for trust in ([], ["--capath", "/nonexistent", "--cacert", self.certs.ca_cert]):
            m = marker()
            names_before = len(self.good.tls_server_names)
            records_before = len(self.proxy.audit())
            r = self.curl(self.insp_url("/echo/allowed-noca-%s" % m), args=trust)
            self.assertEqual(r.returncode, 60, "curl must refuse the leaf: %r" % r)
            rec = self.wait_new_audit(records_before, scheme="connect", host="insp.test",
                                      client=lambda v, p=r.local_port: str(v).endswith(
                                          ":%d" % p),
                                      detail=lambda d: "handshake" in (d or ""))
            self.assert_origin_never_saw(self.good, m, scheme="connect",
                                         client_port=r.local_port)
            # The proxy never even started TLS to the origin.
            self.assertNotIn("insp.test", self.good.tls_server_names[names_before:])
            self.assertEqual(rec["decision"], "deny")
            self.assertIn("unknown ca", rec["detail"])

    def test_tls11_client_refused(self):
        m = marker()
        mark = self.proxy.audit_mark()  # s_client's port is unknown: records after this
        out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                       ["-servername", "insp.test", "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0",
                        "-ign_eof"], send=http_get("/echo/allowed-tls11-%s" % m, "insp.test"))
        self.assertNotEqual(out.returncode, 0, out.stdout[-2000:])
        self.assertNotIn(b"HTTP/1.1", out.stdout)
        # s_client did send its TLS 1.1 hello, and no session came of it.
        self.assertNotRegex(out.stdout, rb"written 0 bytes")
        self.assertNotRegex(out.stdout, rb"New, TLSv1\.1")
        self.assertNotIn(b"BEGIN CERTIFICATE", out.stdout)
        rec = self.assert_audit(scheme="connect", host="insp.test", after=mark,
                                detail=lambda d: isinstance(d, str) and "handshake" in d and
                                "unsupported protocol" in d)
        self.assertEqual(rec["decision"], "deny")
        self.assert_origin_never_saw(self.good, m, scheme="connect", after=mark)

    def test_tls12_and_tls13_clients_accepted(self):
        for version in ("-tls1_2", "-tls1_3"):
            m = marker()
            out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                           ["-servername", "insp.test", version, "-CAfile", self.ica.cert,
                            "-verify_return_error", "-verify_hostname", "insp.test",
                            "-alpn", "http/1.1", "-ign_eof"],
                           send=http_get("/echo/allowed-v-%s" % m, "insp.test"))
            self.assertIn(b"HTTP/1.1 200", out.stdout, (version, out.stderr[-2000:]))
            self.assertIn(b"Verify return code: 0 (ok)", out.stdout)
            self.assertIn(b"ALPN protocol: http/1.1", out.stdout, version)

    def open_tls(self, ctx, session=None):
        """CONNECT insp.test, then TLS with `ctx`, offering `session`."""
        t = TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert, ctx=ctx,
                      session=session)
        self.addCleanup(t.close)
        self.assertEqual(t.connect_response.status, 200)
        return t

    def resumed_get(self, ctx, path, session=None):
        """CONNECT, TLS with `ctx` (offering `session`), one GET; returns (answer status,
        whether the session was resumed, the session after the answer, whether the proxy had
        sent anything between the handshake and the request)."""
        t = self.open_tls(ctx, session)
        early, _, _ = select.select([t.tls], [], [], env.t(0.5))
        t.send(http_get(path, "insp.test"))
        responses = t.read_responses()
        self.assertTrue(responses, "no answer")
        return responses[0].status, t.tls.session_reused, t.tls.session, bool(early)

    def test_clients_resume_their_tls_sessions(self):
        """A client resumes its TLS session with the proxy (TLS 1.3 ticket, TLS 1.2 ticket), and
        each resumption brings the next ticket. In TLS 1.3 the ticket comes with the first answer:
        nothing follows the handshake before the client asks."""
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            ctx = ssl.create_default_context(cafile=self.ica.cert)
            ctx.maximum_version = version
            ctx.set_alpn_protocols(["http/1.1"])
            status, resumed, session, early = self.resumed_get(ctx, "/echo/allowed-r1-" + marker())
            self.assertEqual((status, resumed), (200, False), version)
            self.assertTrue(session.has_ticket, version)
            if version == ssl.TLSVersion.TLSv1_3:
                self.assertFalse(early, "the proxy wrote after the handshake, unasked")
            for _ in range(2):
                status, resumed, session, _ = self.resumed_get(ctx, "/echo/allowed-r-" + marker(),
                                                               session)
                self.assertEqual((status, resumed), (200, True), version)
                self.assertTrue(session.has_ticket, version)

    def test_http2_clients_resume_too(self):
        """An HTTP/2 client's TLS 1.3 ticket comes with the proxy's server preface, and the
        client resumes with it (each resumption bringing the next)."""
        ctx = ssl.create_default_context(cafile=self.ica.cert)
        ctx.set_alpn_protocols(["h2"])
        session = None
        for attempt in range(3):
            tls = self.open_tls(ctx, session).tls
            self.assertEqual(tls.selected_alpn_protocol(), "h2")
            self.assertEqual(tls.session_reused, attempt > 0, attempt)
            head = b""
            while len(head) < 9:
                chunk = tls.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
            # RFC 9113 section 3.4: the server preface is a SETTINGS frame (type 4).
            self.assertEqual(head[3:4], b"\x04", head)
            session = tls.session
            self.assertTrue(session.has_ticket, attempt)

    def test_sni_other_than_connect_host_refused(self):
        m = marker()
        mark = self.proxy.audit_mark()
        out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                       ["-servername", "other.test", "-ign_eof"],
                       send=http_get("/echo/allowed-sni-%s" % m, "other.test"))
        self.assertNotEqual(out.returncode, 0, "handshake with SNI other.test succeeded")
        self.assertNotIn(b"HTTP/1.1", out.stdout)
        self.assertNotIn(b"BEGIN CERTIFICATE", out.stdout, "a leaf was presented anyway")
        rec = self.assert_audit(scheme="connect", reason="sni_mismatch", host="insp.test",
                                after=mark)
        self.assert_origin_never_saw(self.good, m, scheme="connect", after=mark)
        self.assertEqual(rec["decision"], "deny")

    def test_sni_mismatch_alert_is_unrecognized_name(self):
        # What a real TLS stack reports: the fatal unrecognized_name alert (RFC 6066 section 3).
        mark = self.proxy.audit_mark()
        with self.assertRaises(ssl.SSLError) as caught:
            TlsTunnel(self.proxy.port, "insp.test:%d" % self.good.port, self.ica.cert,
                      server_name="other.test")
        self.assertIn("UNRECOGNIZED_NAME", str(caught.exception).upper())
        self.assert_audit(scheme="connect", reason="sni_mismatch", host="insp.test", after=mark)

    def test_missing_sni_for_name_refused(self):
        mark = self.proxy.audit_mark()
        out = s_client(self.proxy.port, "insp.test:%d" % self.good.port,
                       ["-noservername"])
        self.assertNotIn(b"BEGIN CERTIFICATE", out.stdout, "a leaf was presented without SNI")
        self.assert_audit(scheme="connect", reason="sni_mismatch", host="insp.test", after=mark,
                          detail=lambda d: isinstance(d, str) and "no SNI" in d)

    def test_plaintext_in_inspected_tunnel_refused(self):
        m = marker()
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT insp.test:%d HTTP/1.1\r\nHost: insp.test\r\n\r\n" % self.good.port)
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        # Neither TLS nor an HTTP/1.x request line (plain HTTP is served: the test below).
        c.send("hello %s, not a request\r\n\r\n" % m)
        self.assertTrue(c.closed_by_peer(env.t(5)), "plain-text inspected tunnel left open")
        self.assertNotIn(b"HTTP/1.1 200", bytes(c.buffer))
        self.assert_origin_never_saw(self.good, m, scheme="connect", reason="not_tls",
                                     host="insp.test", client_port=c.local_port)

    def test_plain_http_in_inspected_tunnel_to_tls_origin_fails_alone(self):
        # Plain HTTP through the tunnel is a plain http request (scheme http): sent as such, to
        # an origin that speaks only TLS, it fails with an answer of its own; the origin never
        # sees it as a request.
        m = marker()
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT insp.test:%d HTTP/1.1\r\nHost: insp.test\r\n\r\n" % self.good.port)
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        c.send(http_get("/echo/allowed-plain-%s" % m, "insp.test"))
        r = c.read_response()
        self.assertGreaterEqual(r.status, 500, r)
        self.assert_origin_never_saw(self.good, m, scheme="http", decision="error",
                                     host="insp.test", path="/echo/allowed-plain-%s" % m)

    # -- opaque tunnels are untouched ---------------------------------------------------------

    def test_opaque_tunnel_still_works_with_ca_configured(self):
        m = marker()
        url = "https://origin.test:%d/echo/opaque-%s" % (self.good.port, m)
        r = self.curl(url, args=["--cacert", self.certs.ca_cert])
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "/echo/opaque-%s" % m)
        rec = self.assert_audit(scheme="connect", host="origin.test", decision="allow",
                                rule="opaque", client_port=r.local_port)
        self.assertEqual(rec["port"], self.good.port)
        # No inner records: the proxy did not see the request.
        self.assertIsNone(self.proxy.wait_audit(timeout=0.3, scheme="https",
                                                path="/echo/opaque-%s" % m))
        # The origin's own certificate reached the client, not a minted leaf.
        r = self.curl(url, args=["--cacert", self.ica.cert])
        self.assertEqual(r.returncode, 60, "opaque tunnel presented an airlock leaf: %r" % r)


class LeafCacheMetricsTest(InterceptionCase):
    """A fresh proxy with the admin port on: one mint per host, then cache hits."""

    admin = True

    def serial(self, connect, servername):
        certs, _ = self.showcerts(connect, servername)
        return x509_field(certs[0], "serial")

    def counters(self):
        samples = fetch_metrics(self.proxy.admin)
        return (samples.get("airlock_tls_leaf_mints_total"),
                samples.get("airlock_tls_leaf_cache_hits_total"))

    def test_leaf_cached_per_host_and_counted(self):
        self.assertRegex(self.proxy.admin, r"^127\.0\.0\.1:\d+$")
        self.assertNotEqual(self.proxy.admin.rsplit(":", 1)[1], "0")
        mints, hits = self.counters()
        self.assertEqual(mints, 0, "mints before any interception")
        authority = "insp.test:%d" % self.good.port
        first = self.serial(authority, "insp.test")
        second = self.serial(authority, "insp.test")
        self.assertTrue(first)
        self.assertEqual(first, second, "second connection got a new leaf")
        # A request in between does not mint either.
        r = self.curl_ica(self.insp_url("/echo/allowed-cache-%s" % marker()))
        self.assertEqual(r.status, 200, r)
        mints, hits = self.counters()
        self.assertEqual(mints, 1)
        self.assertGreaterEqual(hits, 1)
        # Another host (the IP literal) gets its own leaf.
        other = self.serial("127.0.0.1:%d" % self.good.port, None)
        self.assertNotEqual(other, first)
        mints, _ = self.counters()
        self.assertEqual(mints, 2)


class PolicyLoaderTest(unittest.TestCase):
    """`airlock check` on tls / inspect combinations."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-tlscheck-")
        cls.ica = AirlockCA()

    @classmethod
    def tearDownClass(cls):
        cls.ica.cleanup()
        cls.tmp.cleanup()

    def write(self, policy, name):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            yaml.safe_dump(policy, f, sort_keys=False)
        return path

    def policy(self, **extra):
        return make_policy([inspect_rule(8443)], audit={"path": "off"}, **extra)

    def test_inspect_without_tls_section_refused(self):
        path = self.write(self.policy(), "no-tls.yaml")
        out = run_airlock(["check", "--config", path])
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"(?m)^%s:\d+:\d+: rules\[0\]\.inspect: .*tls"
                         % re.escape(path))

    def test_inspect_with_tls_section_accepted(self):
        path = self.write(self.policy(tls={"ca_cert": self.ica.cert, "ca_key": self.ica.key}),
                          "ok.yaml")
        out = run_airlock(["check", "--config", path])
        self.assertEqual(out.returncode, 0, out)

    def test_ca_cert_without_key_refused(self):
        path = self.write(self.policy(tls={"ca_cert": self.ica.cert}), "half.yaml")
        out = run_airlock(["check", "--config", path])
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"tls\.ca_key")

    def test_missing_upstream_ca_refused(self):
        missing = os.path.join(self.tmp.name, "nope.pem")
        path = self.write(self.policy(tls={"ca_cert": self.ica.cert, "ca_key": self.ica.key,
                                           "upstream_ca": missing}), "noupstream.yaml")
        out = run_airlock(["check", "--config", path])
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"tls\.upstream_ca")

    def test_unknown_tls_key_refused(self):
        path = self.write(self.policy(tls={"ca_cert": self.ica.cert, "ca_key": self.ica.key,
                                           "ca_pass": "x"}), "unknown.yaml")
        out = run_airlock(["check", "--config", path])
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"tls\.ca_pass")


if __name__ == "__main__":
    unittest.main()
