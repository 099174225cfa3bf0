"""Where a placeholder becomes its secret's value on a host the secret is bound to
(`secrets.NAME.swap_in`), with the real binary.

Only where a credential goes: by default a header whose value is the placeholder (alone or
after an auth scheme, `Bearer <placeholder>`) or a query parameter whose whole value is it.
Anywhere else on those hosts the request is refused (403 `placeholder_misplaced`) and nothing is
forwarded: the red-team's webhook (`POST /hooks?url=http://elsewhere/?k=<placeholder>`, which
the bound host would have called with the real value), a placeholder in the path (unless
`swap_in` lists `path`), in a header that `header:NAME` does not name, in a parameter that
`query:NAME` does not name. `anywhere` keeps the old behaviour (every occurrence swapped).
The same inside an inspected tunnel (HTTP/2 there, as curl picks it).
"""

import re
import time
import unittest
import urllib.parse

from harness import env
from harness.base import CurlAnswer, marker, parse_proxy_status
from harness.proxy import make_policy, origin_rule
from test_credential_injection import SecretsCase, header_values, placeholder_for

DEFAULT_VALUE = "tok_AIRLOCKTEST_default_0123456789abcd"
PATH_VALUE = "bot-AIRLOCKTEST-pathvalue-987654321"
NAMED_VALUE = "key_AIRLOCKTEST_namedvalue_4242424242"
ANY_VALUE = "any-AIRLOCKTEST-anywherevalue-1357"

DEFAULT_PH = placeholder_for(DEFAULT_VALUE, "tok_")
PATH_PH = placeholder_for(PATH_VALUE, "bot-")
NAMED_PH = placeholder_for(NAMED_VALUE, "key_")
ANY_PH = placeholder_for(ANY_VALUE, "any-")
ALL_PH = (DEFAULT_PH, PATH_PH, NAMED_PH, ANY_PH)


class PlacementCase(SecretsCase):
    """A plain echo origin behind rules for hook.test, bot.test, named.test and any.test, and an
    HTTPS one behind an inspecting rule for insp.test; subclasses declare the secrets."""
    adversarial = True

    @classmethod
    def secret_decls(cls):
        raise NotImplementedError

    @classmethod
    def policy(cls):
        pe, pt = cls.echo.port, cls.tls_echo.port
        rules = [
            origin_rule(cls.origin.port),
            cls.echo_rule(pe, "hook", ["hook.test"]),
            cls.echo_rule(pe, "bot", ["bot.test"]),
            cls.echo_rule(pe, "named", ["named.test"]),
            cls.echo_rule(pe, "any", ["any.test"]),
            cls.insp_rule(pt, "insp", ["insp.test"]),
        ]
        return make_policy(rules, tls=cls.tls_section(), secrets=cls.secret_decls())

    # -- helpers ------------------------------------------------------------------------------

    def assert_swapped(self, r, m, origin=None):
        origin = origin or self.echo
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(origin, m)
        received = origin.all_received_bytes()
        for ph in ALL_PH:
            self.assertNotIn(ph.encode(), received, "the origin got a placeholder")
        self.assert_response_clean(r)
        self.assert_audit_clean(self.audit_for(m))
        return rec

    def assert_misplaced(self, answer, m, secret, where, origin=None):
        """403 placeholder_misplaced naming the secret and the place, never the placeholder or
        the value; the origin saw nothing; one audit record; a warning on stderr."""
        self.assert_answer(answer, "placeholder_misplaced")
        details = parse_proxy_status(answer.header("Proxy-Status")).get("details", "")
        self.assertIn(secret, details)
        self.assertIn(where, details)
        for text in (answer.header("Proxy-Status"), answer.body):
            data = text if isinstance(text, bytes) else text.encode()
            self.assert_no_secret(data, "the refusal")
            for ph in ALL_PH:
                self.assertNotIn(ph.encode(), data, "the refusal echoes a placeholder")
        self.assert_origin_never_saw(origin or self.echo, m)
        recs = [r for r in self.proxy.audit()
                if isinstance(r.get("path"), str) and m in r["path"]]
        self.assertEqual(len(recs), 1, recs)
        rec = recs[0]
        self.assertEqual((rec["decision"], rec["reason"]), ("deny", "placeholder_misplaced"), rec)
        self.assert_audit_clean(rec)  # no value; the path is the agent's, as it sent it
        for ph in ALL_PH:
            self.assertNotIn(ph, rec["detail"])
        deadline = time.monotonic() + env.t(3)
        pattern = r"misplaced placeholder: .*secret %s\b" % re.escape(secret)
        while not re.search(pattern, self.stderr_since_start()):
            if time.monotonic() > deadline:
                self.fail("no warning on stderr for this request:\n%s"
                          % self.stderr_since_start()[-2000:])
            time.sleep(0.05)
        self.assert_no_secret(self.proxy.stderr(), "stderr")



class DefaultPlacementTest(PlacementCase):
    """A secret without swap_in: [header, query]."""
    SECRETS = {"dflt": DEFAULT_VALUE}

    @classmethod
    def secret_decls(cls):
        return {"dflt": cls.secret_decl("dflt", placeholder=DEFAULT_PH,
                                        hosts=["hook.test", "bot.test", "insp.test"])}

    # -- the red-team's webhook ---------------------------------------------------------------

    def test_webhook_url_carrying_the_placeholder_is_refused(self):
        """POST /hooks?url=http://B/collect?k=<placeholder> to the bound host: its webhook would
        have called B with the value. Refused; nothing reaches the bound host."""
        m = marker()
        hook = "http://127.0.0.1:9/collect?k=%s" % DEFAULT_PH
        url = self.echo.url("/echo/hooks-%s?url=%s" % (m, urllib.parse.quote(hook, safe="")),
                            "hook.test")
        r = self.curl(url, args=["-X", "POST", "-H", "Authorization: Bearer " + DEFAULT_PH])
        self.assert_misplaced(CurlAnswer(r), m, "dflt", "query parameter url")

    def test_webhook_url_unencoded_is_refused(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/hooks-raw-%s?url=http://127.0.0.1:9/c?k=%s"
                                    % (m, DEFAULT_PH), "hook.test"))
        self.assert_misplaced(CurlAnswer(r), m, "dflt", "query parameter url")

    def test_placeholder_inside_another_header_value_is_refused(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/wrapped-%s" % m, "hook.test"),
                      args=["-H", "X-Callback: http://127.0.0.1:9/?k=" + DEFAULT_PH])
        self.assert_misplaced(CurlAnswer(r), m, "dflt", "header X-Callback")

    # -- the default: credentials swapped -----------------------------------------------------

    def test_default_swaps_bearer_api_key_header_and_key_parameter(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/dflt-%s?key=%s&page=2" % (m, DEFAULT_PH), "hook.test"),
                      args=["-H", "Authorization: Bearer " + DEFAULT_PH,
                            "-H", "X-Api-Key: " + DEFAULT_PH])
        rec = self.assert_swapped(r, m)
        self.assertEqual(header_values(rec["headers"], "Authorization"),
                         ["Bearer " + DEFAULT_VALUE])
        self.assertEqual(header_values(rec["headers"], "X-Api-Key"), [DEFAULT_VALUE])
        self.assertIn("?key=%s&page=2" % DEFAULT_VALUE, rec["target"])

    def test_default_swaps_inside_an_inspected_tunnel(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-dflt-%s?key=%s" % (m, DEFAULT_PH),
                                            "insp.test"),
                          args=["-H", "Authorization: Bearer " + DEFAULT_PH])
        rec = self.assert_swapped(r, m, self.tls_echo)
        self.assertEqual(header_values(rec["headers"], "Authorization"),
                         ["Bearer " + DEFAULT_VALUE])
        self.assertIn("key=" + DEFAULT_VALUE, rec["target"])

    def test_default_refuses_misplaced_inside_an_inspected_tunnel(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-hook-%s?url=http%%3A%%2F%%2Fb%%2F%%3Fk%%3D%s"
                                            % (m, DEFAULT_PH), "insp.test"))
        self.assertEqual(r.responses[0].status, 200, "CONNECT answer: %r" % r.responses)
        self.assert_misplaced(CurlAnswer(r), m, "dflt", "query parameter url", self.tls_echo)

    # -- path ---------------------------------------------------------------------------------

    def test_path_refused_by_default(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/bot%s/send-%s" % (DEFAULT_PH, m), "bot.test"))
        self.assert_misplaced(CurlAnswer(r), m, "dflt", "the path")



class SwapInTest(PlacementCase):
    """Secrets that say where: [path], [header:X-Api-Key, query:key], [anywhere]."""
    SECRETS = {"pathy": PATH_VALUE, "named": NAMED_VALUE, "anyw": ANY_VALUE}

    @classmethod
    def secret_decls(cls):
        return {
            "pathy": cls.secret_decl("pathy", placeholder=PATH_PH, hosts=["bot.test"],
                                     swap_in=["path"]),
            "named": cls.secret_decl("named", placeholder=NAMED_PH, hosts=["named.test"],
                                     swap_in=["header:X-Api-Key", "query:key"]),
            "anyw": cls.secret_decl("anyw", placeholder=ANY_PH, hosts=["any.test"],
                                    swap_in=["anywhere"]),
        }

    def test_path_swapped_with_swap_in_path(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/bot%s/send-%s" % (PATH_PH, m), "bot.test"))
        rec = self.assert_swapped(r, m)
        self.assertIn("/echo/bot%s/send-%s" % (PATH_VALUE, m), rec["target"])

    def test_swap_in_path_alone_refuses_a_header(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/bot-hdr-%s" % m, "bot.test"),
                      args=["-H", "Authorization: Bearer " + PATH_PH])
        self.assert_misplaced(CurlAnswer(r), m, "pathy", "header Authorization")

    # -- header:NAME and query:NAME -----------------------------------------------------------

    def test_named_header_and_parameter_swapped(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/named-%s?key=%s" % (m, NAMED_PH), "named.test"),
                      args=["-H", "X-Api-Key: " + NAMED_PH])
        rec = self.assert_swapped(r, m)
        self.assertEqual(header_values(rec["headers"], "X-Api-Key"), [NAMED_VALUE])
        self.assertIn("key=" + NAMED_VALUE, rec["target"])

    def test_header_name_restricts(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/named-auth-%s" % m, "named.test"),
                      args=["-H", "Authorization: Bearer " + NAMED_PH])
        self.assert_misplaced(CurlAnswer(r), m, "named", "header Authorization")

    def test_query_name_restricts(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/named-q-%s?text=%s" % (m, NAMED_PH), "named.test"))
        self.assert_misplaced(CurlAnswer(r), m, "named", "query parameter text")

    # -- anywhere -----------------------------------------------------------------------------

    def test_anywhere_swaps_every_occurrence(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/any%s-%s?u=http://b/?k=%s" % (ANY_PH, m, ANY_PH),
                                    "any.test"),
                      args=["-H", "X-Wrapped: Token " + ANY_PH + " end"])
        rec = self.assert_swapped(r, m)
        self.assertEqual(header_values(rec["headers"], "X-Wrapped"),
                         ["Token " + ANY_VALUE + " end"])
        self.assertIn("/echo/any%s-%s?u=http://b/?k=%s" % (ANY_VALUE, m, ANY_VALUE),
                      rec["target"])


if __name__ == "__main__":
    unittest.main()
