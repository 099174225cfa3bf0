"""Response redaction against an agent that wants a value back (the red team's findings of
session 15, each shown through the release binary before its fix): the head's every line
counts (two Content-Encoding lines, two Content-Type lines), a transfer coding other than
chunked is refused, a binary body in gzip is guarded decoded, the parts of a head a client
can read (Content-Type, field names, the reason phrase) are redacted, a charset the
redactors cannot read is refused whatever its spelling, text that sniffs as UTF-16 is
refused whatever its label, gRPC compression is refused, a value split across gRPC messages or
written in UTF-16 or UTF-32 is caught, and a cut at max_bytes never
releases the first part of a value, nor does a secret streamed in pieces across server-sent
events reach the client joined.
"""

import base64
import gzip
import json
import re
import urllib.parse

from harness.base import marker
from harness.proxy import make_policy, origin_rule
from test_credential_injection import SecretsCase

SECRET = "rs-AIRLOCKTEST/evasion+0123456789=abcdef"  # "/+=" are percent-encoded
AWS_KEY = "AKIAAIRLOCKTEST12345"
R_SECRET = "[REDACTED:secret:red_secret]"
CUT_LIMIT = 4096


class RedactionEvasionTest(SecretsCase):
    adversarial = True
    SECRETS = {"red_secret": SECRET}

    @classmethod
    def policy(cls):
        pe = cls.echo.port
        rules = [
            origin_rule(cls.origin.port),
            cls.echo_rule(pe, "red", ["red.test"], redact=["aws-access-key"],
                          inject={"headers": {"X-Api-Key": "${secrets.red_secret}"}}),
            cls.echo_rule(pe, "cut", ["cut.test"],
                          redact={"redactors": ["aws-access-key"], "max_bytes": CUT_LIMIT}),
        ]
        return make_policy(rules, secrets={"red_secret": cls.secret_decl("red_secret")})

    def serve(self, fn):
        m = marker()
        path = "/r/%s" % m
        self.echo.route(path, fn)
        return m, path

    def get(self, path, host="red.test", headers=()):
        [r], _ = self.send_raw(self.request("GET", self.echo.url(path, host),
                                            headers=list(headers)))
        return r

    def assert_nothing_back(self, r, *values):
        """No spelling of a value in the status line, the head or the body."""
        seen = ("%s %s\n" % (r.status, r.reason)).encode() + b"".join(
            ("%s: %s\n" % (k, v)).encode() for k, v in r.headers) + r.body
        for v in values or (SECRET, AWS_KEY):
            self.assertNotIn(v.encode(), seen)
            self.assertNotIn(v[:12].encode(), seen)

    def assert_refused(self, r, m, reason="unredactable_response"):
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.header("X-Airlock-Reason"), reason, r)
        self.assert_nothing_back(r)
        rec = self.audit_for(m)
        self.assertEqual(rec["status"], 502, rec)
        self.assert_audit_clean(rec)

    def assert_binary_cut(self, r, m):
        """A binary body with the value: a 502 when nothing was sent yet, else a connection cut
        before the value (the head goes on before the bytes); the record says why."""
        self.assertFalse(r.status == 200 and r.complete, "delivered whole: %r" % r)
        rec = self.audit_for(m)
        self.assertEqual(rec["reason"], "unredactable_response", rec)
        return rec

    # -- every field line counts --------------------------------------------------------------

    def test_a_coding_in_a_second_content_encoding_line_is_decoded(self):
        # "identity" then "gzip": a client joins them (RFC 9110 section 5.3) and gunzips.
        text = ("key %s and %s\n" % (SECRET, AWS_KEY)).encode()
        m, path = self.serve(lambda req: req.send(
            200, [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")],
            body=gzip.compress(text)))
        r = self.get(path, headers=[("Accept-Encoding", "gzip")])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(gzip.decompress(r.body),
                         ("key %s and [REDACTED:aws-access-key]\n" % R_SECRET).encode())

    def test_two_content_type_lines_are_refused(self):
        m, path = self.serve(lambda req: req.send(
            200, [("Content-Type", "image/png"), ("Content-Type", "text/plain")],
            body=("key " + SECRET).encode(), ctype=None))
        self.assert_refused(self.get(path), m)

    def test_a_transfer_coding_other_than_chunked_is_refused(self):
        # Decoded only of its chunks, the gzip would reach the client, which undoes it itself.
        text = ("key %s\n" % SECRET).encode()

        def fn(req):
            req.head(200, [("Content-Type", "text/plain"),
                           ("Transfer-Encoding", "gzip, chunked")])
            z = gzip.compress(text)
            req.write_raw(b"%x\r\n%s\r\n0\r\n\r\n" % (len(z), z))
        m, path = self.serve(fn)
        self.assert_refused(self.get(path), m, reason="upstream_error")

    # -- bodies -------------------------------------------------------------------------------

    def test_binary_in_gzip_is_guarded_decoded(self):
        blob = b"\x00\x01\x02binary " + SECRET.encode() + b" \xff\xfe"
        m, path = self.serve(lambda req: req.send(
            200, [("Content-Encoding", "gzip")], body=gzip.compress(blob),
            ctype="application/octet-stream"))
        r = self.get(path, headers=[("Accept-Encoding", "gzip")])
        self.assertFalse(r.status == 200 and r.complete, r)
        self.assert_nothing_back(r)
        try:
            self.assertNotIn(SECRET[:12].encode(), gzip.decompress(r.body))
        except (OSError, EOFError):
            pass  # cut before the gzip stream ended: nothing of it can be read
        # Without a secret, the same kind of body arrives whole, in gzip.
        clean = b"\x00\x01\x02binary, nothing to hide \xff\xfe" * 100
        m, path = self.serve(lambda req: req.send(
            200, [("Content-Encoding", "gzip")], body=gzip.compress(clean),
            ctype="application/octet-stream"))
        r = self.get(path, headers=[("Accept-Encoding", "gzip")])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(gzip.decompress(r.body), clean)

    def test_a_charset_the_redactors_cannot_read_is_refused(self):
        for ctype, body in (
                ("text/plain; charset=utf-7", ("key " + SECRET).encode()),
                ("text/plain; charset=cp037", ("key " + SECRET).encode("cp037")),
                ("application/json; charset=utf-8; charset=utf-16",
                 json.dumps({"k": SECRET}).encode("utf-16"))):
            with self.subTest(ctype=ctype):
                m, path = self.serve(lambda req, c=ctype, b=body: req.send(200, body=b, ctype=c))
                self.assert_refused(self.get(path), m)

    def test_text_that_sniffs_as_utf16_is_refused_whatever_its_label(self):
        # Python's requests reads JSON in UTF-16 from its NUL bytes; browsers follow a BOM.
        for ctype, body in (("application/json", json.dumps({"k": SECRET}).encode("utf-16-le")),
                            ("text/plain; charset=utf-8", ("key " + SECRET).encode("utf-16")),
                            (None, ("key " + SECRET).encode("utf-16"))):
            with self.subTest(ctype=ctype):
                m, path = self.serve(lambda req, c=ctype, b=body: req.send(200, body=b, ctype=c))
                r = self.get(path)
                self.assertFalse(r.status == 200 and r.complete, r)
                for coding in ("utf-16", "utf-16-le"):
                    self.assertNotIn(SECRET[:12], r.body.decode(coding, errors="ignore"))
                rec = self.audit_for(m)
                self.assertEqual(rec["reason"], "unredactable_response", rec)
                self.assertIn("UTF-16", rec["detail"])

    def test_grpc_compression_is_refused(self):
        for lines in ([("grpc-encoding", "gzip")],
                      [("grpc-encoding", "identity"), ("grpc-encoding", "gzip")],
                      [("connect-content-encoding", "gzip")]):
            with self.subTest(lines=lines):
                ctype = ("application/connect+proto" if lines[0][0].startswith("connect")
                         else "application/grpc")
                m, path = self.serve(lambda req, h=lines, t=ctype: req.send(
                    200, h, body=b"\x01\x00\x00\x00\x05zzzzz", ctype=t))
                self.assert_refused(self.get(path), m)
        seen = [x for x in self.echo.requests if x["path"] == path]
        for name in ("grpc-accept-encoding", "connect-accept-encoding"):
            self.assertEqual([v for k, v in seen[0]["headers"] if k.lower() == name],
                             ["identity"], name)

    def test_a_value_split_across_grpc_messages_is_refused(self):
        # A gRPC client reads a call's messages one after another and can join them: the five
        # bytes of the second message's prefix between the halves must not hide the value.
        def frame(payload):
            return b"\x00" + len(payload).to_bytes(4, "big") + payload

        def fn(req):
            key = req.header("X-Api-Key").encode()
            req.send(200, body=frame(b"\x0a\x10" + key[:16]) + frame(key[16:]),
                     ctype="application/grpc")
        m, path = self.serve(fn)
        r = self.get(path)
        rec = self.assert_binary_cut(r, m)
        self.assert_nothing_back(r)
        self.assertIn("binary", rec["detail"])
        self.assert_audit_clean(rec)
        # A call's messages without the value pass byte for byte.
        clean = frame(b"\x0a\x05hello") + frame(b"") + frame(b"rs-AIRLOCK")
        m, path = self.serve(lambda req: req.send(200, body=clean, ctype="application/grpc"))
        r = self.get(path)
        self.assertEqual((r.status, r.body), (200, clean), r)

    def test_a_value_in_utf16_or_utf32_is_caught(self):
        # An echo that writes the header out wide: in a binary body (a Windows tool's strings)
        # the body is cut before it; in text past the first KiB (where no sniffing looks) it is
        # redacted, so a client that drops the NUL bytes finds nothing.
        for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
            with self.subTest(codec=codec):
                m, path = self.serve(lambda req, c=codec: req.send(
                    200, body=b"MZ\x90\x00" + req.header("X-Api-Key").encode(c) + b"\x00" * 64,
                    ctype="application/octet-stream"))
                r = self.get(path)
                self.assert_binary_cut(r, m)
                self.assertNotIn(SECRET[:12].encode(codec), r.body)

                m, path = self.serve(lambda req, c=codec: req.send(
                    200, body=b"x" * 2048 + req.header("X-Api-Key").encode(c) + b" end\n",
                    ctype="text/plain"))
                r = self.get(path)
                self.assertEqual(r.status, 200, r)
                self.assertNotIn(SECRET[:12].encode(codec), r.body)
                self.assertIn(R_SECRET.encode(), r.body)
                self.assertTrue(r.body.endswith(b" end\n"), r.body[-40:])

    def test_a_value_percent_encoded_twice_is_redacted(self):
        # An origin that puts the request's URL into a redirect's query encodes it twice.
        def fn(req):
            key = urllib.parse.quote(urllib.parse.quote(req.header("X-Api-Key"), safe=""),
                                     safe="")
            req.send(200, body=json.dumps({"next": "/login?next=" + key}).encode(),
                     ctype="application/json")
        m, path = self.serve(fn)
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"next": "/login?next=" + R_SECRET})

    def test_a_value_the_origin_returns_in_base64_is_redacted(self):
        # An echo service that hands headers back base64-encoded (alone, and inside a longer
        # encoded blob at each offset), in both alphabets.
        def fn(req):
            key = req.header("X-Api-Key").encode()
            blobs = [base64.b64encode(key).decode()]
            for lead in (b"", b"a", b"ab"):
                blobs.append(base64.b64encode(lead + b"x-api-key: " + key + b"\n").decode())
                blobs.append(base64.urlsafe_b64encode(lead + key + b"?>").decode())
            req.send(200, body=json.dumps({"blobs": blobs}).encode(), ctype="application/json")
        m, path = self.serve(fn)
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        for blob in r.json()["blobs"]:
            self.assertIn(R_SECRET, blob)
            for part in blob.split(R_SECRET):
                for decode in (base64.b64decode, base64.urlsafe_b64decode):
                    try:
                        text = decode(part + "=" * (-len(part) % 4))
                    except ValueError:
                        continue
                    self.assertNotIn(SECRET[:6].encode(), text)

    def test_a_value_the_origin_returns_in_hex_or_base32_is_redacted(self):
        # A debug endpoint that dumps a header in hex (either case; also a separator between
        # the bytes, as bytes.hex(sep) writes it), or hands it back in base32 alone or inside a
        # longer encoded blob at each of base32's five offsets.
        def fn(req):
            key = req.header("X-Api-Key").encode()
            blobs = [key.hex(), key.hex().upper(), (b"x-api-key: " + key).hex()]
            blobs += [(b"x-api-key: " + key).hex(sep) for sep in (" ", ":", "-")]
            blobs.append(key.hex(":").upper())
            for lead in (b"", b"a", b"ab", b"abc", b"abcd"):
                enc = base64.b32encode(lead + key + b"\n").decode()
                blobs += [enc, enc.lower()]
            req.send(200, body=json.dumps({"blobs": blobs}).encode(), ctype="application/json")
        m, path = self.serve(fn)
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        for blob in r.json()["blobs"]:
            self.assertIn(R_SECRET, blob)
        self.assertNotIn(SECRET.encode().hex(), r.body.decode().lower())
        self.assertNotIn(SECRET.encode().hex(":"), r.body.decode().lower())

    # -- the head -----------------------------------------------------------------------------

    def test_the_heads_free_text_is_redacted(self):
        # The injected credential echoed in Content-Type, in a field name, in the reason phrase.
        def fn(req):
            key = req.header("X-Api-Key")
            req._h.send_response(200, "OK " + key)
            req._h.send_header("Content-Type", "text/plain; note=" + key)
            req._h.send_header("X-" + AWS_KEY, "1")
            req._h.send_header("x-lower-" + AWS_KEY.lower(), "1")  # as an HTTP/2 origin sends it
            req._h.send_header("Content-Length", "2")
            req._h.end_headers()
            req.write_raw(b"ok")
        m, path = self.serve(fn)
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.reason, "OK")
        self.assertEqual(r.header("Content-Type"), "text/plain; note=" + R_SECRET)
        self.assertFalse([k for k, _ in r.headers if AWS_KEY.lower() in k.lower()], r.headers)
        # A bodiless answer's Content-Encoding is read too.
        m, path = self.serve(lambda req: req.head(204, [("Content-Encoding", SECRET)]))
        r = self.get(path)
        self.assertEqual(r.status, 204, r)
        self.assert_nothing_back(r)
        self.assert_nothing_back(r)
        self.assert_audit_clean(self.audit_for(m))

    # -- the cut at max_bytes -----------------------------------------------------------------

    def test_a_cut_through_a_value_releases_no_part_of_it(self):
        # The agent pads what the origin echoes so that the cut falls inside the key.
        for before in (CUT_LIMIT - 10, CUT_LIMIT - 1, CUT_LIMIT - len(AWS_KEY) + 1):
            with self.subTest(before=before):
                text = ("a" * (before - 1) + " " + AWS_KEY + " " + "b" * 9000).encode()
                m, path = self.serve(lambda req, t=text: req.send(200, body=t))
                r = self.get(path, host="cut.test")
                self.assertEqual(r.status, 200, r)
                self.assertTrue(r.body.endswith(b"by rule cut]\n"), r.body[-100:])
                self.assertNotIn(AWS_KEY[:4].encode(), r.body)
                want = "a" * (before - 1) + " [REDACTED:aws-access-key]"
                self.assertEqual(r.body[:CUT_LIMIT], want.encode()[:CUT_LIMIT])

    # -- a value split across server-sent events ----------------------------------------------

    @staticmethod
    def deltas(*pieces):
        """A model API's stream: one JSON delta per event, then [DONE]."""
        return [("data: %s\n\n" % json.dumps({"id": "c1", "choices": [
            {"index": 0, "delta": {"content": p}}]})).encode() for p in pieces] + [
            b"data: [DONE]\n\n"]

    @staticmethod
    def joined(body):
        out = ""
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data: {"):
                out += json.loads(line[6:])["choices"][0]["delta"]["content"]
        return out

    def test_a_secret_split_across_server_sent_events_is_not_delivered(self):
        for cut in (4, 15, len(SECRET) - 1):
            with self.subTest(cut=cut):
                pieces = self.deltas("your key is ", SECRET[:cut], SECRET[cut:], ".")
                m, path = self.serve(lambda req, p=pieces: req.send_chunked(
                    p, ctype="text/event-stream", delay=0.05))
                r = self.get(path)
                self.assertEqual(r.status, 200, r)
                self.assertNotIn(SECRET[:cut], self.joined(r.body))
                self.assertNotIn(SECRET[:4].encode(), r.body)
                self.assertTrue(r.body.startswith(pieces[0]), r.body)  # what came before did
                rec = self.audit_for(m)
                self.assertEqual(rec["reason"], "unredactable_response", rec)
                self.assert_audit_clean(rec)

    def assert_stream_delivered(self, pieces):
        """The event stream `pieces` reaches the client whole; its audit record."""
        m, path = self.serve(lambda req: req.send_chunked(
            pieces, ctype="text/event-stream", delay=0.05))
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"".join(pieces))
        return self.audit_for(m)

    def test_the_start_of_a_secret_that_does_not_go_on_is_delivered(self):
        rec = self.assert_stream_delivered(
            self.deltas("a path: ", SECRET[:15], "other/things", " done"))
        self.assertEqual(rec["status"], 200, rec)

    def test_a_secret_split_across_ndjson_records_is_not_delivered(self):
        # Ollama's stream: a JSON record a line, the answer a few characters per record.
        records = [(json.dumps({"message": {"content": p}, "done": False}) + "\n").encode()
                   for p in ("key: ", SECRET[:12], SECRET[12:], ".")]
        m, path = self.serve(lambda req: req.send_chunked(
            records, ctype="application/x-ndjson", delay=0.05))
        r = self.get(path)
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(SECRET[:4].encode(), r.body)
        self.assertTrue(r.body.startswith(records[0]), r.body)
        self.assertEqual(self.audit_for(m)["reason"], "unredactable_response")

    def test_a_secret_behind_json_or_html_escapes_is_not_delivered(self):
        # A JSON parser reads "\u0073..." as "s...", an HTML one "&#115;..." so: no list of
        # spellings covers every escaped character, so the body is read through them.
        spelled = {
            "json": ("application/json", '{"echo": "\\u%04x%s"}' % (ord(SECRET[0]), SECRET[1:])),
            "html": ("text/html", "<p>&#%d;%s</p>" % (ord(SECRET[0]), SECRET[1:])),
            "percent": ("text/plain", "next=" + "".join("%%%02X" % ord(c) for c in SECRET)),
            # A browser reads any number of leading zeros, and named references to ASCII.
            "html-zeros": ("text/html", "<p>&#%s%d;%s</p>" % ("0" * 30, ord(SECRET[0]),
                                                              SECRET[1:])),
            "html-named": ("text/html", "<p>%s</p>" % SECRET.replace("/", "&sol;").replace(
                "+", "&plus;").replace("=", "&equals;")),
            # Escaped twice: HTML inside JSON as Go writes it, and a URL inside a URL.
            "json-html": ("application/json", '{"html": "<p>\\u0026#%d;%s</p>"}' % (
                ord(SECRET[0]), SECRET[1:])),
            "percent-twice": ("text/plain", "next=%%25%02x%s" % (ord(SECRET[0]), SECRET[1:])),
            "javascript": ("application/javascript", "var k = '\\x%02x%s';" % (
                ord(SECRET[0]), SECRET[1:])),
        }
        for name, (ctype, text) in spelled.items():
            with self.subTest(name=name):
                m, path = self.serve(lambda req, c=ctype, t=text: req.send(
                    200, body=t.encode(), ctype=c))
                r = self.get(path)
                self.assertNotIn(text[:20].encode(), r.body)
                self.assertNotIn(SECRET[1:12].encode(), r.body)
                rec = self.audit_for(m)
                self.assertEqual(rec["reason"], "unredactable_response", rec)
                self.assert_audit_clean(rec)

    def test_an_encoded_secret_wrapped_across_lines_is_not_delivered(self):
        # MIME writes base64 76 characters a line (RFC 2045), PEM 64, `xxd -p` hex 60; their
        # decoders skip the breaks, so the value is read across them. 30 bytes before it put a
        # break inside its spelling in each.
        data = b"x" * 30 + SECRET.encode() + b" end"
        b64, hexed = base64.b64encode(data).decode(), data.hex()

        def wrap(text, width, line_break):
            return line_break.join(text[i:i + width] for i in range(0, len(text), width))
        # The encoded form of the value's first six bytes (30 bytes are 40 base64 characters).
        cases = {
            "mime": (wrap(b64, 76, "\r\n"), b64[40:48]),
            "pem": (wrap(b64, 64, "\n"), b64[40:48]),
            "json-pem": ('{"pem": "%s"}' % wrap(b64, 64, "\\n"), b64[40:48]),
            "xxd": (wrap(hexed, 60, "\n"), hexed[60:72]),
            # Indented after each break: a PEM in a YAML block scalar, hex in a tabbed file.
            "yaml-pem": ("tls:\n  key: |\n    %s\n" % wrap(b64, 64, "\n    "), b64[40:48]),
            "tabbed-xxd": ("\t" + wrap(hexed, 60, "\r\n\t"), hexed[60:72]),
        }
        for name, (text, start) in cases.items():
            with self.subTest(name=name):
                m, path = self.serve(lambda req, t=text: req.send(
                    200, body=t.encode(), ctype="text/plain"))
                r = self.get(path)
                # What came through, its breaks and indentation removed as the agent's decoder
                # does, does not begin the value.
                unwrapped = re.sub(rb"\\n|[\r\n \t]", b"", r.body)
                self.assertNotIn(start.encode(), unwrapped)
                rec = self.audit_for(m)
                self.assertEqual(rec["reason"], "unredactable_response", rec)
                self.assert_audit_clean(rec)

    def test_interleaved_choices_and_a_mislabelled_stream_do_not_hide_a_split_secret(self):
        a, b = SECRET[:12], SECRET[12:]
        def choice(i, text):
            return ("data: %s\n\n" % json.dumps({"choices": [
                {"index": i, "delta": {"content": text}}]})).encode()
        cases = {
            "choices": ("text/event-stream", [choice(0, a), choice(1, "Hello"), choice(0, b)]),
            "text/plain": ("text/plain", self.deltas("key: ", a, b)),
        }
        for name, (ctype, pieces) in cases.items():
            with self.subTest(name=name):
                m, path = self.serve(lambda req, c=ctype, p=pieces: req.send_chunked(
                    p, ctype=c, delay=0.05))
                r = self.get(path)
                self.assertNotIn(a[:6].encode(), r.body)
                self.assertEqual(self.audit_for(m)["reason"], "unredactable_response")

    def test_an_escaped_secret_split_across_events_and_keys_is_not_delivered(self):
        # A client that joins a field's deltas and then percent-decodes them (or reads HTML
        # references in them), or joins the keys of its events, sees the secret whole.
        pct = "".join("%%%02x" % ord(c) for c in SECRET)
        refs = "".join("&#%d" % ord(c) for c in SECRET)
        a, b = SECRET[:14], SECRET[14:]
        cases = {
            "percent": self.deltas("go to ", pct[:19], pct[19:], "."),  # (cut inside "%2f")
            "html": self.deltas("see ", refs[:30], refs[30:]),
            "keys": [("data: %s\n\n" % json.dumps({k: 1})).encode() for k in (a, b)],
        }
        for name, pieces in cases.items():
            with self.subTest(name=name):
                m, path = self.serve(lambda req, p=pieces: req.send_chunked(
                    p, ctype="text/event-stream", delay=0.05))
                r = self.get(path)
                self.assertEqual(r.status, 200, r)
                self.assertNotIn(pieces[1], r.body)
                decoded = urllib.parse.unquote(r.body.decode())
                self.assertNotIn(SECRET[:14], decoded)
                rec = self.audit_for(m)
                self.assertEqual(rec["reason"], "unredactable_response", rec)
                self.assert_audit_clean(rec)

    def test_reasoning_then_answer_in_the_chunk_envelope_is_not_delivered(self):
        # DeepSeek-style reasoning_content, then content: the envelope's id, object and model
        # come between the two parts in every event; the client shows one after the other.
        def chunk(field, text):
            return ("data: %s\n\n" % json.dumps({
                "id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {field: text}}]})).encode()
        a, b = SECRET[:14], SECRET[14:]
        pieces = [chunk("reasoning_content", a), chunk("content", b), b"data: [DONE]\n\n"]
        m, path = self.serve(lambda req: req.send_chunked(
            pieces, ctype="text/event-stream", delay=0.05))
        r = self.get(path)
        self.assertNotIn(a.encode(), r.body)
        self.assertEqual(self.audit_for(m)["reason"], "unredactable_response")

    def test_plain_text_events_that_start_like_json_flow(self):
        pieces = [b"data: [INFO] starting\n\n", b"data: [1/3] fetching\n\n",
                  b"data: {user} joined\n\n", b"data: [DONE]\n\n"]
        rec = self.assert_stream_delivered(pieces)
        self.assertEqual(rec["decision"], "allow", rec)

    def test_a_stream_with_nan_or_a_lone_surrogate_flows(self):
        # Python's json.dumps writes NaN; JSON.parse reads a lone surrogate escape. Neither is
        # a reason to cut a stream that holds no secret (the guard reads them relaxed).
        pieces = [b'data: {"score": NaN, "choices": [{"delta": {"content": "sk-li"}}]}\n\n',
                  b'data: {"p": "\\ud800", "choices": [{"delta": {"content": "on"}}]}\n\n',
                  b"data: [DONE]\n\n"]
        rec = self.assert_stream_delivered(pieces)
        self.assertEqual(rec["decision"], "allow", rec)
