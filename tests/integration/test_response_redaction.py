"""Response redaction with the real binary (issue 5).

The origin scripts each response (harness/echo_origin.py routes): the redactors a rule names
fire in JSON, text/plain and untyped bodies and in response headers, never in binary content
(byte-identical); a match split across chunks is still caught; gzip and deflate bodies are
decoded, redacted and re-encoded (the client decodes them), br fails closed; server-sent
events arrive event by event; 100 MiB stream through with bounded proxy memory; a body over
the rule's max_bytes is cut off with a marker line. Audit records count the redactions and
the admin /metrics has airlock_redactions_total. The class ends by scanning the audit log and
the proxy's stderr for every secret value.
"""

import gzip
import hashlib
import json
import os
import subprocess
import threading
import time
import unittest
import urllib.parse
import zlib

from harness import env, secret_scan
from harness.base import marker
from harness.echo_origin import ranged
from harness.proxy import RssSampler, make_policy, origin_rule
from harness.tls_support import fetch_metrics
from test_credential_injection import SecretsCase

MIB = 1024 * 1024
RED_SECRET = "rs-AIRLOCKTEST-redactme-77777777abcdef"
# A secret with characters that JSON and percent-encoding spell differently.
SYM_SECRET = "sym-AIRLOCKTEST/plus+eq=amp&0042<x>"
AWS_KEY = "AKIAAIRLOCKTEST12345"          # shaped like an AWS access key id (fake)
EMAIL = "alice.airlocktest@example.com"
TICKET = "TICKET-424242"
R_AWS = "[REDACTED:aws-access-key]"
R_EMAIL = "[REDACTED:email]"
R_TICKET = "[REDACTED:ticket]"
R_SECRET = "[REDACTED:secret:red_secret]"
R_SYM = "[REDACTED:secret:sym_secret]"
CUT_LIMIT = 4096


def text_body(*parts):
    return "".join(parts).encode()


class RedactionTest(SecretsCase):
    adversarial = True
    admin = True
    SECRETS = {"red_secret": RED_SECRET, "sym_secret": SYM_SECRET}

    @classmethod
    def leak_needles(cls):
        # Response content must never reach the logs either.
        return {"aws key sample": AWS_KEY.encode(), "email sample": EMAIL.encode()}

    @classmethod
    def policy(cls):
        pe, pt = cls.echo.port, cls.tls_echo.port
        rules = [
            origin_rule(cls.origin.port),
            cls.echo_rule(pe, "red", ["red.test"], redact=["aws-access-key", "email", "ticket"],
                          inject={"headers": {"X-Api-Key": "${secrets.red_secret}"}}),
            cls.echo_rule(pe, "cut", ["cut.test"],
                          redact={"redactors": ["aws-access-key"], "max_bytes": CUT_LIMIT}),
            cls.echo_rule(pe, "big", ["big.test"], redact=["aws-access-key", "email"]),
            cls.echo_rule(pe, "plain", ["plain.test"]),
            cls.insp_rule(pt, "insp-red", ["red.test"], redact=["aws-access-key", "email"]),
        ]
        p = make_policy(rules, tls=cls.tls_section(),
                        secrets={"red_secret": cls.secret_decl("red_secret"),
                                 "sym_secret": cls.secret_decl("sym_secret")},
                        redactors=[{"name": "ticket", "pattern": "TICKET-[0-9]{6}"}],
                        limits={"response_bytes": "1GiB"})
        p["listen"]["admin"] = "127.0.0.1:0"
        return p

    # -- helpers ------------------------------------------------------------------------------

    def serve(self, m, fn, origin=None):
        path = "/r/%s" % m
        (origin or self.echo).route(path, fn)
        return path

    def get_raw(self, host, path, headers=(), origin=None, timeout=None):
        """GET through the proxy on a raw connection; (response, client)."""
        url = (origin or self.echo).url(path, host)
        [r], c = self.send_raw(self.request("GET", url, headers=list(headers)), timeout=timeout)
        return r

    def assert_redacted_text(self, body, want_present, want_absent=(AWS_KEY, EMAIL, TICKET)):
        text = body.decode("latin-1")
        for s in want_absent:
            self.assertNotIn(s, text)
        for s in want_present:
            self.assertIn(s, text)
        self.assert_no_secret(body, "body")

    # -- content types ------------------------------------------------------------------------

    def test_json_body_redacted(self):
        m = marker()
        doc = {"key": AWS_KEY, "owner": EMAIL, "ticket": TICKET, "keep": "nothing-to-see-" + m,
               "nested": {"note": "key %s of %s" % (AWS_KEY, EMAIL)}}
        path = self.serve(m, lambda req: req.send(200, body=json.dumps(doc).encode(),
                                                  ctype="application/json; charset=utf-8"))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assert_redacted_text(r.body, [R_AWS, R_EMAIL, R_TICKET])
        got = json.loads(r.body)
        self.assertEqual(got["key"], R_AWS)
        self.assertEqual(got["owner"], R_EMAIL)
        self.assertEqual(got["ticket"], R_TICKET)
        self.assertEqual(got["keep"], "nothing-to-see-" + m)
        self.assertEqual(got["nested"]["note"], "key %s of %s" % (R_AWS, R_EMAIL))
        self.assertIsNone(r.header("Content-Length"))
        rec = self.audit_for(m)
        self.assertEqual(rec.get("redactions"), {"aws-access-key": 2, "email": 2, "ticket": 1},
                         rec)
        self.assertEqual(rec.get("injected"), ["red_secret"], rec)
        self.assert_audit_clean(rec)

    def test_text_plain_redacted(self):
        m = marker()
        body = text_body("line one ", AWS_KEY, "\nmail: <", EMAIL, ">\n", TICKET, " done\n")
        path = self.serve(m, lambda req: req.send(200, body=body, ctype="text/plain"))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, text_body("line one ", R_AWS, "\nmail: <", R_EMAIL, ">\n",
                                           R_TICKET, " done\n"))

    def test_missing_content_type_is_text(self):
        m = marker()
        body = text_body("no type ", AWS_KEY, "\n")
        path = self.serve(m, lambda req: req.send(200, body=body, ctype=None))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, text_body("no type ", R_AWS, "\n"))

    def test_text_like_media_types_redacted(self):
        """Every text-like type, including structured-syntax suffixes (RFC 6839: +json, +xml)
        and upper-case spellings (media types are case-insensitive, RFC 9110 section 8.3.1):
        error documents such as application/problem+json (RFC 9457) are where tokens get
        echoed back."""
        for ctype in ("application/problem+json", "application/vnd.github+json",
                      "Application/JSON", "TEXT/HTML; charset=UTF-8", "application/xml",
                      "application/atom+xml", "application/javascript", "text/javascript",
                      "application/x-www-form-urlencoded", "application/x-ndjson", "text/csv"):
            with self.subTest(ctype=ctype):
                m = marker()
                body = text_body("detail: token ", RED_SECRET, " key ", AWS_KEY, "\n")
                path = self.serve(m, lambda req, body=body, ctype=ctype: req.send(
                    200, body=body, ctype=ctype))
                r = self.curl(self.echo.url(path, "red.test"))
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.body, text_body("detail: token ", R_SECRET, " key ", R_AWS,
                                                   "\n"))

    def test_close_delimited_response_redacted(self):
        """An origin that ends the body by closing (no Content-Length, not chunked)."""
        m = marker()

        def fn(req):
            req.send_head(200, ctype="text/plain", chunked=False)
            req.write_raw(b"first " + AWS_KEY.encode() + b"\n")
            time.sleep(0.1)
            req.write_raw(b"then " + RED_SECRET.encode() + b"\n")

        path = self.serve(m, fn)
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.body, text_body("first ", R_AWS, "\nthen ", R_SECRET, "\n"))

    def test_binary_body_byte_identical(self):
        m = marker()
        payload = bytearray(os.urandom(MIB))
        # Things that would be redacted in text, at a few offsets (one across a 64 KiB edge).
        for off in (100, 65536 - 7, 500_000):
            payload[off:off + len(AWS_KEY)] = AWS_KEY.encode()
        payload = bytes(payload)
        path = self.serve(m, lambda req: req.send(200, body=payload, ctype="image/png"))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.body), len(payload))
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), hashlib.sha256(payload).hexdigest())
        rec = self.audit_for(m)
        raw = self.get_raw("red.test", path)
        self.assertTrue(raw.complete, raw)
        self.assertEqual(raw.body, payload)
        self.assertEqual(raw.header("content-length"), str(len(payload)), raw)
        self.assertFalse(rec.get("redactions"), rec)

    def test_binary_body_carrying_a_secret_is_cut_off(self):
        """Binary bodies pass untouched, but an injected secret never goes back: a binary body
        that carries one (an origin echoing the request as application/octet-stream) is cut
        off before any byte of the secret, and the audit record says why."""
        m = marker()
        payload = bytearray(os.urandom(MIB))
        payload[600_000:600_000 + len(RED_SECRET)] = RED_SECRET.encode()
        payload = bytes(payload)
        path = self.serve(m, lambda req: req.send(200, body=payload,
                                                  ctype="application/octet-stream"))
        r = self.get_raw("red.test", path)
        self.assertIsNotNone(r)
        # A 502 when nothing was sent yet, else a connection cut before the secret.
        self.assertFalse(r.status == 200 and r.complete,
                         "a binary body with a secret was delivered whole: %r" % r)
        self.assertNotIn(RED_SECRET[:12].encode(), r.body)
        self.assertLessEqual(len(r.body), 600_000)
        rec = self.audit_for(m)
        self.assertEqual(rec["reason"], "unredactable_response", rec)
        self.assertIn("binary", rec["detail"])

    def test_request_is_not_redacted_but_echo_is(self):
        m = marker()
        sent = json.dumps({"key": AWS_KEY, "mail": EMAIL}).encode()
        r = self.curl(self.echo.url("/echo/post-%s" % m, "red.test"), input=sent,
                      args=["--data-binary", "@-", "-H", "Content-Type: application/json"])
        self.assertEqual(r.status, 200, r)
        # The origin got the agent's body as sent, and the injected key.
        rec = self.origin_record(self.echo, m)
        self.assertEqual(rec["body_bytes"], sent)
        self.assertEqual([v for k, v in rec["headers"] if k.lower() == "x-api-key"], [RED_SECRET])
        echo = json.loads(r.body)
        self.assertEqual(json.loads(echo["body"]), {"key": R_AWS, "mail": R_EMAIL})
        self.assertEqual([v for k, v in echo["headers"] if k.lower() == "x-api-key"],
                         [R_SECRET])
        self.assert_response_clean(r)

    def test_rule_without_redact_passes_unchanged(self):
        m = marker()
        body = text_body("untouched ", AWS_KEY, " ", EMAIL, "\n")
        path = self.serve(m, lambda req: req.send(200, body=body, ctype="text/plain"))
        r = self.curl(self.echo.url(path, "plain.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, body)
        self.assertEqual(r.header("Content-Length"), str(len(body)))

    def test_inspected_tunnel_redacted(self):
        m = marker()
        body = json.dumps({"key": AWS_KEY, "mail": EMAIL}).encode()
        path = self.serve(m, lambda req: req.send(200, body=body, ctype="application/json"),
                          origin=self.tls_echo)
        r = self.curl_ica(self.tls_echo.url(path, "red.test"))
        self.assertEqual(r.responses[0].status, 200, r.responses)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(json.loads(r.body), {"key": R_AWS, "mail": R_EMAIL})
        rec = self.audit_for(m, scheme="https")
        self.assertEqual(rec.get("redactions"), {"aws-access-key": 1, "email": 1}, rec)

    # -- headers ------------------------------------------------------------------------------

    def test_response_headers_redacted(self):
        m = marker()
        path = self.serve(m, lambda req: req.send(
            200, [("X-Leak", "key=%s mail=%s" % (AWS_KEY, EMAIL)),
                  ("X-Secret-Echo", "token " + RED_SECRET), ("X-Plain", "fine-" + m)],
            body=b"ok\n"))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("X-Leak"), "key=%s mail=%s" % (R_AWS, R_EMAIL))
        self.assertEqual(r.header("X-Secret-Echo"), "token " + R_SECRET)
        self.assertEqual(r.header("X-Plain"), "fine-" + m)
        self.assert_response_clean(r)

    # -- streaming ----------------------------------------------------------------------------

    def test_match_split_across_chunks(self):
        m = marker()
        pieces = [b"prefix " + AWS_KEY[:10].encode(),
                  AWS_KEY[10:].encode() + b" middle " + RED_SECRET[:9].encode(),
                  RED_SECRET[9:].encode() + b" mail " + EMAIL[:6].encode(),
                  EMAIL[6:].encode() + b" end\n"]
        path = self.serve(m, lambda req: req.send_chunked(pieces, delay=0.3))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, text_body("prefix ", R_AWS, " middle ", R_SECRET, " mail ",
                                           R_EMAIL, " end\n"))
        rec = self.audit_for(m)
        self.assertEqual(rec.get("redactions", {}).get("aws-access-key"), 1, rec)
        self.assertEqual(rec.get("redactions", {}).get("email"), 1, rec)
        self.assert_audit_clean(rec)

    def test_secret_one_byte_per_chunk(self):
        m = marker()
        text = b"<<" + RED_SECRET.encode() + b"|" + AWS_KEY.encode() + b">>\n"
        pieces = [text[i:i + 1] for i in range(len(text))]
        path = self.serve(m, lambda req: req.send_chunked(pieces, delay=0.005))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, text_body("<<", R_SECRET, "|", R_AWS, ">>\n"))

    def test_secret_json_and_percent_spellings(self):
        m = marker()
        spellings = [SYM_SECRET,
                     json.dumps(SYM_SECRET)[1:-1],                          # minimal JSON
                     json.dumps(SYM_SECRET)[1:-1].replace("/", "\\/"),     # \/ (PHP, Java)
                     SYM_SECRET.replace("&", "\\u0026").replace("<", "\\u003c")
                     .replace(">", "\\u003e"),                             # HTML-safe JSON (Go)
                     urllib.parse.quote(SYM_SECRET, safe=""),                # %2F ... upper
                     urllib.parse.quote(SYM_SECRET, safe="").replace("%2F", "%2f")
                     .replace("%2B", "%2b").replace("%3D", "%3d").replace("%3C", "%3c")
                     .replace("%3E", "%3e")]                                 # lower-case hex
        body = ("\n".join("v%d=[%s]" % (i, sp) for i, sp in enumerate(spellings)) + "\n")
        path = self.serve(m, lambda req: req.send(200, body=body.encode(), ctype="text/plain"))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        lines = r.body.decode().splitlines()
        self.assertEqual(len(lines), len(spellings), r.body)
        for i, line in enumerate(lines):
            self.assertEqual(line, "v%d=[%s]" % (i, R_SYM), "spelling %d: %r" % (i, spellings[i]))
        self.assert_no_secret(r.body, "body")

    def test_secret_percent_encoded_keeping_slash(self):
        """RFC 3986 lets '/' stand unencoded in a query, and urllib.parse.quote() (safe='/')
        or JavaScript's encodeURI write it so: an origin that echoes a URL re-encoded that way
        must not leak the secret."""
        m = marker()
        mixed = urllib.parse.quote(SYM_SECRET)  # '/' kept, the rest encoded
        self.assertIn("/", mixed)
        path = self.serve(m, lambda req: req.send(200, body=("url=" + mixed + "\n").encode()))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(mixed.encode(), r.body, "the secret leaked as %r" % mixed)
        self.assertIn(R_SYM.encode(), r.body)

    def test_head_204_304_and_keep_alive_under_redaction(self):
        """Bodiless answers stay bodiless (no chunked framing added), and redacted chunked
        responses keep the client connection usable."""
        m = marker()
        body = text_body("k ", AWS_KEY, "\n")
        path = self.serve(m, lambda req: req.send(200, body=body))
        self.serve(m + "-204", lambda req: req.send(204, ctype=None))
        self.serve(m + "-304", lambda req: req.head(304, [("ETag", '"e1"')]))
        url = self.echo.url(path, "red.test")
        c = self.raw()
        self.addCleanup(c.close)
        reqs = [self.request("HEAD", url), self.request("GET", url),
                self.request("GET", url + "-204"), self.request("GET", url + "-304"),
                self.request("GET", url)]
        got = []
        for i, data in enumerate(reqs):
            c.send(data)
            rs = c.read_responses(1, head_request=(0,) if i == 0 else ())
            self.assertEqual(len(rs), 1, "request %d: %r" % (i, bytes(c.buffer)[:300]))
            got.append(rs[0])
            self.assertTrue(rs[0].complete, rs[0])
            c.buffer.clear()
        self.assertEqual([r.status for r in got], [200, 200, 204, 304, 200])
        self.assertEqual(got[0].body, b"")
        self.assertEqual(got[1].body, text_body("k ", R_AWS, "\n"))
        self.assertEqual(got[2].body, b"")
        self.assertEqual(got[3].body, b"")
        self.assertEqual(got[4].body, got[1].body)
        for r in got[2:4]:
            self.assertIsNone(r.header("Transfer-Encoding"), r)

    def test_trailer_with_secret_does_not_leak(self):
        m = marker()

        def fn(req):
            req.send_head(200, [("Trailer", "X-Checksum")], ctype="text/plain")
            req.write_chunk(b"body " + AWS_KEY.encode() + b"\n")
            req.write_raw(b"0\r\nX-Checksum: " + RED_SECRET.encode() + b" " +
                          AWS_KEY.encode() + b"\r\n\r\n")

        path = self.serve(m, fn)
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.echo.url(path, "red.test"), headers=[("TE", "trailers")]))
        r = c.read_response()
        self.assertIsNotNone(r)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.complete, r)
        time.sleep(0.2)
        c._recv(time.monotonic() + 0.2)
        wire = bytes(c.buffer)
        self.assertNotIn(RED_SECRET.encode(), wire, "the secret came back in a trailer")
        self.assertNotIn(AWS_KEY.encode(), wire)
        self.assert_no_secret(wire, "the response on the wire")

    def test_server_sent_events_event_by_event(self):
        m = marker()
        release = threading.Event()
        second_sent = threading.Event()

        def fn(req):
            req.send_head(200, [("Cache-Control", "no-cache")], ctype="text/event-stream")
            req.write_chunk(("id: 1\ndata: {\"key\": \"%s\"}\n\n" % AWS_KEY).encode())
            # Hold the second event until the client has the first (at most 15 s scaled).
            release.wait(env.t(15))
            second_sent.set()
            req.write_chunk(("id: 2\ndata: mail %s\n\n" % EMAIL).encode())
            req.end_chunks()

        path = self.serve(m, fn)
        c = self.raw(timeout=env.t(30))
        self.addCleanup(c.close)
        self.addCleanup(release.set)
        c.send(self.request("GET", self.echo.url(path, "red.test"),
                            headers=[("Accept", "text/event-stream")]))
        deadline = time.monotonic() + env.t(8)
        while R_AWS.encode() not in bytes(c.buffer) and time.monotonic() < deadline:
            if not c._recv(min(deadline, time.monotonic() + 0.2)) and c.eof:
                break
        got_first = R_AWS.encode() in bytes(c.buffer)
        was_second_sent = second_sent.is_set()
        release.set()
        self.assertTrue(got_first, "the first event did not arrive while the origin held the "
                        "second one: %r" % bytes(c.buffer)[:500])
        self.assertFalse(was_second_sent)
        self.assertNotIn(AWS_KEY.encode(), bytes(c.buffer))
        r = c.read_response(timeout=env.t(10))
        self.assertIsNotNone(r)
        self.assertTrue(r.complete, r)
        self.assertEqual(r.body, ("id: 1\ndata: {\"key\": \"%s\"}\n\nid: 2\ndata: mail %s\n\n"
                                  % (R_AWS, R_EMAIL)).encode())

    def test_100mib_text_streams_with_bounded_memory(self):
        m = marker()
        line = ("%s lorem ipsum dolor sit amet, consectetur adipiscing elit %s\n"
                % ("x" * 8, "y" * 8)).encode()
        block = bytearray()
        while len(block) < 64 * 1024 - 200:
            block += line
        block = bytes(block) + AWS_KEY.encode() + b" and " + EMAIL.encode() + b"\n"
        count = (100 * MIB) // len(block)
        total = count * len(block)
        expected_block = block.replace(AWS_KEY.encode(), R_AWS.encode()).replace(
            EMAIL.encode(), R_EMAIL.encode())
        want = hashlib.sha256()
        for _ in range(count):
            want.update(expected_block)

        def fn(req):
            req.send_head(200, [("Content-Length", str(total))], ctype="text/plain",
                          chunked=False)
            for _ in range(count):
                req.write_raw(block)

        path = self.serve(m, fn)
        # Warm up: the proxy's steady-state buffers and the redaction engine.
        warm = self.serve(marker(), lambda req: req.send(200, body=block * 16))
        self.curl(self.echo.url(warm, "big.test"), body_file=os.devnull)
        rss_before = self.proxy.rss_kib()
        hwm_before = self.proxy.hwm_kib()
        start = time.monotonic()
        with RssSampler(self.proxy) as sampler:
            with subprocess.Popen(["curl", "-sS", "--max-time", str(env.t(90)), "-x",
                                   "http://127.0.0.1:%d" % self.port,
                                   self.echo.url(path, "big.test")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
                got = hashlib.sha256()
                n = 0
                while True:
                    piece = proc.stdout.read(MIB)
                    if not piece:
                        break
                    got.update(piece)
                    n += len(piece)
                err = proc.stderr.read()
                rc = proc.wait(env.t(30))
        elapsed = time.monotonic() - start
        self.assertEqual(rc, 0, err)
        self.assertEqual(n, count * len(expected_block),
                         "received %d bytes of %d (%.1fs)" % (n, count * len(expected_block),
                                                              elapsed))
        self.assertEqual(got.hexdigest(), want.hexdigest())
        hwm_growth_mib = (self.proxy.hwm_kib() - max(hwm_before, rss_before)) / 1024
        self.assertLess(hwm_growth_mib, 60, "proxy VmHWM grew %.1f MiB" % hwm_growth_mib)
        growth_mib = (sampler.peak - rss_before) / 1024
        self.assertLess(growth_mib, 60, "proxy RSS grew %.1f MiB (before %d KiB, peak %d KiB, "
                        "%d samples) during a 100 MiB redacted stream"
                        % (growth_mib, rss_before, sampler.peak, sampler.samples))
        rec = self.audit_for(m)
        self.assertEqual(rec.get("redactions"), {"aws-access-key": count, "email": count}, rec)
        print("\n100 MiB redacted in %.1fs (%.0f MB/s), RSS growth %.1f MiB"
              % (elapsed, total / elapsed / 1e6, growth_mib))

    def test_cut_off_with_marker(self):
        m = marker()
        body = bytearray()
        i = 0
        while len(body) < 5 * CUT_LIMIT:
            body += b"row %06d of a long text body that goes over the limit\n" % i
            i += 1
        body = bytes(body)
        path = self.serve(m, lambda req: req.send(200, body=body, ctype="text/plain"))
        r = self.get_raw("cut.test", path)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.complete, "the cut-off body is not properly terminated: %r" % r)
        want = body[:CUT_LIMIT] + (b"\n[airlock: response cut off after %d bytes by rule cut]\n"
                                   % CUT_LIMIT)
        self.assertEqual(r.body, want, "tail: %r" % r.body[-200:])
        rec = self.audit_for(m)
        self.assertRegex(rec.get("detail") or "", r"cut off", rec)
        self.assertRegex(self.proxy.stderr(), r"(?m) warn .*cut off")
        # The connection stays usable when the body was terminated properly, or is closed;
        # either way the proxy serves the next request.
        self.assertEqual(self.curl(self.echo.url("/echo/after-cut-%s" % m, "cut.test")).status,
                         200)

    def test_cut_off_chunked_origin(self):
        m = marker()
        piece = (b"chunk of text " * 64)[:1000]
        path = self.serve(m, lambda req: req.send_chunked([piece] * 10))
        r = self.get_raw("cut.test", path)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.complete, r)
        self.assertTrue(r.body.endswith(b"\n[airlock: response cut off after %d bytes by rule "
                                        b"cut]\n" % CUT_LIMIT), r.body[-200:])
        self.assertEqual(r.body[:CUT_LIMIT], (piece * 10)[:CUT_LIMIT])

    # -- content codings ----------------------------------------------------------------------

    def coded_body(self):
        doc = {"rows": [{"key": AWS_KEY, "mail": EMAIL, "n": i} for i in range(50)]}
        plain = json.dumps(doc).encode()
        want = json.dumps({"rows": [{"key": R_AWS, "mail": R_EMAIL, "n": i}
                                    for i in range(50)]}).encode()
        return plain, want

    def check_coding(self, coding, encode, decode):
        m = marker()
        plain, want = self.coded_body()
        path = self.serve(m, lambda req: req.send(
            200, [("Content-Encoding", coding)], body=encode(plain), ctype="application/json"))
        # curl decodes for us.
        r = self.curl(self.echo.url(path, "red.test"), args=["--compressed"])
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Content-Encoding"), coding)
        self.assertEqual(r.body, want)
        # By hand: the bytes on the wire are a valid stream of the same coding.
        raw = self.get_raw("red.test", path, [("Accept-Encoding", coding)])
        self.assertEqual(raw.status, 200, raw)
        self.assertTrue(raw.complete, raw)
        self.assertEqual(raw.header("Content-Encoding"), coding)
        self.assertEqual(decode(raw.body), want)
        self.assertNotIn(AWS_KEY.encode(), decode(raw.body))
        rec = self.audit_for(m)
        self.assertEqual(rec.get("redactions", {}).get("aws-access-key"), 50, rec)

    def test_gzip_redacted_and_reencoded(self):
        self.check_coding("gzip", gzip.compress, gzip.decompress)

    def test_deflate_redacted_and_reencoded(self):
        # HTTP "deflate" is the zlib format (RFC 9110 section 8.4.1.2).
        self.check_coding("deflate", zlib.compress, zlib.decompress)

    def test_gzip_secret_split_across_chunks(self):
        m = marker()
        plain = text_body("before ", RED_SECRET, " after ", AWS_KEY, "\n")
        z = gzip.compress(plain)
        pieces = [z[i:i + 7] for i in range(0, len(z), 7)]
        path = self.serve(m, lambda req: req.send_chunked(
            pieces, headers=[("Content-Encoding", "gzip")], delay=0.02))
        r = self.curl(self.echo.url(path, "red.test"), args=["--compressed"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, text_body("before ", R_SECRET, " after ", R_AWS, "\n"))

    def assert_no_leak_or_refused(self, r, want_text, decode):
        """Either the redacted text (decoded) or a 502; never the secret."""
        self.assertIsNotNone(r)
        self.assertNotIn(AWS_KEY.encode(), r.body)
        self.assertNotIn(RED_SECRET.encode(), r.body)
        if r.status == 502:
            self.assertEqual(r.header("X-Airlock-Reason") in ("unredactable_response",
                                                              "upstream_error"), True, r)
            return
        self.assertEqual(r.status, 200, r)
        try:
            got = decode(r.body)
        except Exception as e:  # noqa: BLE001 - any decoding failure is the finding
            self.fail("200 with a body that does not decode (%r): %r" % (e, r.body[:200]))
        self.assertNotIn(AWS_KEY.encode(), got)
        self.assertNotIn(RED_SECRET.encode(), got)
        self.assertEqual(got, want_text, "the body is not the whole redacted text")

    def test_gzip_with_two_members(self):
        """RFC 1952 section 2.2: a gzip file is a series of members. The secret is in the
        second one: it must not pass undecoded."""
        m = marker()
        one = b"first member\n" * 10
        two = text_body("second member ", RED_SECRET, " ", AWS_KEY, "\n")
        path = self.serve(m, lambda req: req.send(200, [("Content-Encoding", "gzip")],
                                                  body=gzip.compress(one) + gzip.compress(two)))
        r = self.get_raw("red.test", path, [("Accept-Encoding", "gzip")])
        self.assert_no_leak_or_refused(
            r, one + text_body("second member ", R_SECRET, " ", R_AWS, "\n"), gzip.decompress)

    def test_gzip_that_does_not_decode_fails_closed(self):
        m = marker()
        junk = b"\x1f\x8b\x08\x00not really gzip " + AWS_KEY.encode() + b" " + \
            RED_SECRET.encode()
        path = self.serve(m, lambda req: req.send(200, [("Content-Encoding", "gzip")],
                                                  body=junk))
        r = self.get_raw("red.test", path, [("Accept-Encoding", "gzip")])
        self.assertIsNotNone(r)
        self.assertNotIn(AWS_KEY.encode(), r.body)
        self.assertNotIn(RED_SECRET.encode(), r.body)
        self.assertFalse(r.status == 200 and r.complete,
                         "a broken gzip body was answered as a complete 200: %r" % r)

    def test_raw_deflate_without_zlib_header(self):
        """Some servers send raw DEFLATE (RFC 1951) as "deflate": decode it or refuse it."""
        m = marker()
        text = text_body("raw deflate ", RED_SECRET, " ", AWS_KEY, "\n")
        co = zlib.compressobj(wbits=-15)
        raw_deflate = co.compress(text) + co.flush()
        path = self.serve(m, lambda req: req.send(200, [("Content-Encoding", "deflate")],
                                                  body=raw_deflate))
        r = self.get_raw("red.test", path, [("Accept-Encoding", "deflate")])

        def decode(data):
            try:
                return zlib.decompress(data)
            except zlib.error:
                return zlib.decompress(data, -15)
        self.assert_no_leak_or_refused(
            r, text_body("raw deflate ", R_SECRET, " ", R_AWS, "\n"), decode)

    def test_content_coding_names_are_case_insensitive(self):
        # RFC 9110 section 8.4.1: content-coding values are case-insensitive.
        m = marker()
        plain, want = self.coded_body()
        path = self.serve(m, lambda req: req.send(
            200, [("Content-Encoding", "GZIP")], body=gzip.compress(plain),
            ctype="application/json"))
        raw = self.get_raw("red.test", path, [("Accept-Encoding", "gzip")])
        self.assertEqual(raw.status, 200, raw)
        self.assertEqual(gzip.decompress(raw.body), want)

    def test_cut_off_gzip_body(self):
        """Cut off by the decoded size: the client gets a complete, valid gzip stream whose
        text ends with the marker."""
        m = marker()
        text = b"".join(b"gzip row %06d of a text that is much longer than the limit\n" % i
                        for i in range(2000))
        path = self.serve(m, lambda req: req.send(200, [("Content-Encoding", "gzip")],
                                                  body=gzip.compress(text)))
        r = self.get_raw("cut.test", path, [("Accept-Encoding", "gzip")])
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.complete, r)
        self.assertEqual(r.header("Content-Encoding"), "gzip")
        got = gzip.decompress(r.body)
        self.assertEqual(got, text[:CUT_LIMIT] + (
            b"\n[airlock: response cut off after %d bytes by rule cut]\n" % CUT_LIMIT))
        self.assertRegex(self.audit_for(m).get("detail") or "", "cut off")

    def test_brotli_fails_closed(self):
        m = marker()
        fake_br = b"\x1b\x03\x00\xf8" + AWS_KEY.encode() + os.urandom(64)
        path = self.serve(m, lambda req: req.send(200, [("Content-Encoding", "br")],
                                                  body=fake_br, ctype="application/json"))
        r = self.get_raw("red.test", path, [("Accept-Encoding", "br")])
        self.assert_answer(r, "unredactable_response")
        self.assertNotIn(AWS_KEY.encode(), r.body)
        rec = self.audit_for(m)
        self.assertEqual(rec.get("reason"), "unredactable_response", rec)
        # An unknown coding too.
        m2 = marker()
        path = self.serve(m2, lambda req: req.send(200, [("Content-Encoding", "x-weird")],
                                                   body=b"whatever " + AWS_KEY.encode()))
        r = self.get_raw("red.test", path)
        self.assert_answer(r, "unredactable_response")
        self.assertNotIn(AWS_KEY.encode(), r.body)
        self.assertEqual(self.audit_for(m2).get("reason"), "unredactable_response")

    def test_accept_encoding_narrowed_under_redacting_rule(self):
        m = marker()
        r = self.get_raw("red.test", "/echo/ae-%s" % m,
                         [("Accept-Encoding", "br, zstd, gzip;q=0.5, deflate")])
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m)
        ae = ",".join(v for k, v in rec["headers"] if k.lower() == "accept-encoding")
        codings = {c.split(";")[0].strip().lower() for c in ae.split(",") if c.strip()}
        self.assertTrue(codings <= {"gzip", "deflate", "identity"}, ae)
        # Without redaction the header is passed as sent.
        m2 = marker()
        r = self.get_raw("plain.test", "/echo/ae-plain-%s" % m2,
                         [("Accept-Encoding", "br, zstd, gzip;q=0.5")])
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m2)
        self.assertEqual([v for k, v in rec["headers"] if k.lower() == "accept-encoding"],
                         ["br, zstd, gzip;q=0.5"])

    def test_range_request_gets_the_whole_body_redacted(self):
        # Fetched in two ranges, neither part of the key matches a redactor; the proxy asks
        # for the whole body instead (no Range, no If-Range) and redacts it.
        body = text_body("key: ", AWS_KEY, "\n")
        m = marker()
        path = self.serve(m, ranged(body))
        for first, last in ((0, 9), (10, len(body) - 1)):
            with self.subTest(range=(first, last)):
                r = self.curl(self.echo.url(path, "red.test"),
                              args=["-r", "%d-%d" % (first, last), "-H", 'If-Range: "v1"'])
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.body, text_body("key: ", R_AWS, "\n"))
        seen = [x for x in self.echo.requests if x["path"] == path]
        self.assertEqual(len(seen), 2)
        for rec in seen:
            names = {k.lower() for k, _ in rec["headers"]}
            self.assertFalse(names & {"range", "if-range"}, rec["headers"])
        # Without redaction the range passes and the route answers it with a part.
        r = self.curl(self.echo.url(path, "plain.test"), args=["-r", "5-14"])
        self.assertEqual(r.status, 206, r)
        self.assertEqual(r.body, AWS_KEY[:10].encode())

    def test_a_part_sent_unasked_is_refused(self):
        m = marker()
        path = self.serve(m, ranged(text_body("key: ", AWS_KEY, "\n"), always_part=True))
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.header("X-Airlock-Reason"), "unredactable_response", r)
        self.assertNotIn(AWS_KEY[:8].encode(), r.body)
        rec = self.audit_for(m)
        self.assertEqual(rec["status"], 502, rec)
        self.assertIn("206", rec.get("detail", ""), rec)

    # -- metrics ------------------------------------------------------------------------------

    def test_redactions_metric(self):
        m = marker()
        body = text_body(AWS_KEY, " ", AWS_KEY, "\n")
        path = self.serve(m, lambda req: req.send(200, body=body))
        before = self.redaction_samples()
        r = self.curl(self.echo.url(path, "red.test"))
        self.assertEqual(r.body, text_body(R_AWS, " ", R_AWS, "\n"))
        deadline = time.monotonic() + env.t(3)
        while True:
            after = self.redaction_samples()
            key = self.series(after, "red", "aws-access-key")
            if key is not None and after[key] - before.get(key, 0) >= 2:
                break
            if time.monotonic() > deadline:
                self.fail("airlock_redactions_total{rule=red,redactor=aws-access-key} did not "
                          "grow by 2: before %r after %r" % (before, after))
            time.sleep(0.1)
        text = "\n".join(after)
        self.assertNotIn(AWS_KEY, text)
        self.assert_no_secret(text, "metric labels")

    def redaction_samples(self):
        return {k: v for k, v in fetch_metrics(self.proxy.admin).items()
                if k.startswith("airlock_redactions_total")}

    @staticmethod
    def series(samples, rule, redactor):
        for k in samples:
            if 'rule="%s"' % rule in k and 'redactor="%s"' % redactor in k:
                return k
        return None

    # -- the leak scan so far -----------------------------------------------------------------

    def test_zz_no_secret_in_audit_or_stderr(self):
        time.sleep(0.5)
        problems = secret_scan.scan_proxy_files(self.proxy, self.SECRETS, self.leak_needles())
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
