"""A decompression bomb under redaction (the red team's finding of session 18): on a rule that
injects a secret, a binary gzip body is decoded so the guard can look for the secret, then
encoded again. limits.response_bytes counts the coded bytes on the wire; the decoded body is
now bounded by it too, and so is what the agent gets encoded again. Past it the response is
cut off (502 response_too_large, or a cut connection when the head already went), with one
audit record that names the limit, and the proxy goes on serving.
"""

import gzip
import os
import zlib

from harness.base import marker
from harness.proxy import make_policy, origin_rule
from test_credential_injection import SecretsCase

MIB = 1024 * 1024
LIMIT = MIB  # limits.response_bytes
SECRET = "rs-AIRLOCKTEST-bounds-0123456789abcdef"
BOMB_DECODED = 256 * MIB


def gzip_zeros(n):
    """n zero bytes in gzip at level 9: about a thousandth of their size."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    zero = b"\0" * MIB
    parts = [co.compress(zero) for _ in range(n // MIB)]
    parts.append(co.compress(b"\0" * (n % MIB)))
    return b"".join(parts) + co.flush()


BOMB = gzip_zeros(BOMB_DECODED)


class RedactionBoundsTest(SecretsCase):
    adversarial = True
    SECRETS = {"tok": SECRET}

    @classmethod
    def policy(cls):
        rules = [
            origin_rule(cls.origin.port),
            cls.echo_rule(cls.echo.port, "inj", ["inj.test"],
                          inject={"headers": {"Authorization": "Bearer ${secrets.tok}"}}),
            # Its redact.max_bytes is over limits.response_bytes: the lesser cuts.
            cls.echo_rule(cls.echo.port, "wide", ["wide.test"],
                          redact={"redactors": [], "max_bytes": "64MiB"}),
        ]
        return make_policy(rules, secrets={"tok": cls.secret_decl("tok")},
                           limits={"response_bytes": str(LIMIT)})

    def serve(self, body, ctype="application/octet-stream"):
        m = marker()
        path = "/r/%s" % m
        self.echo.route(path, lambda req: req.send(
            200, [("Content-Encoding", "gzip")], body=body, ctype=ctype))
        return m, path

    def get(self, path, host="inj.test"):
        [r], _ = self.send_raw(self.request("GET", self.echo.url(path, host),
                                            headers=[("Accept-Encoding", "gzip")]))
        return r

    def records_for(self, m):
        return [a for a in self.proxy.audit() if m in (a.get("path") or "")]

    def test_a_binary_gzip_bomb_is_cut_off_at_response_bytes(self):
        self.assertLess(len(BOMB), LIMIT)  # on the wire, well within the limit
        m, path = self.serve(BOMB)
        r = self.get(path)
        self.assertIsNotNone(r)
        # A 502 when nothing was sent yet, else a connection cut before the end.
        self.assertFalse(r.status == 200 and r.complete,
                         "a %d MiB decoded body was relayed whole under response_bytes %d: %r"
                         % (BOMB_DECODED // MIB, LIMIT, r))
        if r.status == 502:
            self.assertEqual(r.header("X-Airlock-Reason"), "response_too_large", r)
        self.assertLessEqual(len(r.body), LIMIT)
        rec = self.audit_for(m)
        self.assertEqual(rec["reason"], "response_too_large", rec)
        self.assertIn("limits.response_bytes", rec["detail"])
        self.assertIn(str(LIMIT), rec["detail"])
        self.assertLessEqual(rec.get("bytes_out", 0), LIMIT, rec)
        self.assert_audit_clean(rec)

        # The proxy goes on serving: a small gzip body on the same rule passes whole.
        small = os.urandom(1000) + b"\0" * (LIMIT // 2)
        m2, path2 = self.serve(gzip.compress(small))
        r2 = self.get(path2)
        self.assertEqual(r2.status, 200, r2)
        self.assertTrue(r2.complete, r2)
        self.assertEqual(gzip.decompress(r2.body), small)
        self.audit_for(m2)
        # Its record was written after the bomb's: the bomb left one record, no more.
        self.assertEqual(len(self.records_for(m)), 1, self.records_for(m))

    def test_a_text_gzip_bomb_is_cut_at_response_bytes_with_the_marker(self):
        """Text is redacted, not guarded: it is cut with the marker line at redact.max_bytes or
        limits.response_bytes, the lesser, never decoded past it."""
        m, path = self.serve(gzip.compress(b"a" * (32 * MIB), 9), ctype="text/plain")
        r = self.get(path, "wide.test")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.complete, r)
        text = gzip.decompress(r.body)
        self.assertLessEqual(len(text), LIMIT + 100)
        self.assertTrue(text.endswith(b"[airlock: response cut off after %d bytes by rule wide]\n"
                                      % LIMIT), text[-200:])
        rec = self.audit_for(m)
        self.assertIn("limits.response_bytes", rec["detail"])
