"""Credential injection and placeholders with the real binary (issue 5).

An origin that echoes what it received (harness/echo_origin.py) shows both sides: the origin
gets the injected credential (a header, a query parameter, Basic credentials; from an
environment variable or a file) in place of whatever the agent sent, and the agent gets the
echo back with `[REDACTED:secret:<name>]` where the secret was, in the body and in the
response headers. The same over plain http:// and inside an inspected HTTPS tunnel.

Placeholders: swapped for the real value on the secret's hosts, refused (and logged as an
exfiltration attempt) anywhere else, also in a CONNECT head; `require` refuses requests that
do not carry one. A secret bound to hosts is not injected on another host that a wildcard rule
matches. Redirects to another host carry no secret. The class ends by scanning the audit log
and the proxy's stderr for every secret value (raw and encoded): none may appear.
"""

import base64
import json
import os
import re
import signal
import stat
import tempfile
import time
import unittest
import urllib.parse

import requests

from harness import env, secret_scan
from harness.base import CurlAnswer, ProxyTestCase, marker, parse_proxy_status
from harness.echo_origin import EchoOrigin
from harness.proxy import Airlock, make_policy, origin_rule, tunnel_rule
from harness.tls_support import AirlockCA, OriginCerts
from test_tls_interception import inspect_rule

# Fake secrets: unique, recognisable, never real. Names -> values.
API_TOKEN = "sk-live-AIRLOCKTEST-1234567890abcdef"          # env, header injection
FILE_KEY = "filekey-AIRLOCKTEST/fedcba+0987654321"          # file, query injection
BASIC_PW = "pw-AIRLOCKTEST-Zq9Xv8Wu7Ts6Rr5"                # env, Basic password
PH_VALUE = "tok_AIRLOCKTEST_phvalue_0123456789abcd"          # env, has a placeholder
BOUND = "bnd-AIRLOCKTEST-boundsecret-42424242"               # env, bound to hosts
BASIC_USER = "itest-user"


def placeholder_for(value, prefix):
    """Same length and prefix as `value`, no character equal past the prefix."""
    return prefix + ("PLACEHOLDER" + "z" * len(value))[:len(value) - len(prefix)]


PH_PLACEHOLDER = placeholder_for(PH_VALUE, "tok_")
AGENT_OWN = "agent-own-credential-0000"

TLS_ORIGIN_NAMES = ("insp.test", "inspb.test", "origin.test", "red.test")


def header_values(headers, name):
    name = name.lower()
    return [v for k, v in headers if k.lower() == name]


class SecretsCase(ProxyTestCase):
    """Shared setup: secrets (env and file), the interception CA, origin certificates, two
    plain echo origins (A and B) and one HTTPS echo origin. Subclasses set SECRETS,
    FILE_SECRETS and write policy()."""

    SECRETS = {}          # name -> value (every secret the policy declares)
    FILE_SECRETS = ()     # names read from a file; the others come from the environment
    admin = False

    @classmethod
    def env_name(cls, name):
        return "AIRLOCK_ITEST_SECRET_" + name.upper()

    @classmethod
    def extra_setup(cls):
        cls.secret_dir = tempfile.TemporaryDirectory(prefix="airlock-itest-secrets-")
        cls.secret_files = {}
        for name in cls.FILE_SECRETS:
            path = os.path.join(cls.secret_dir.name, name + ".key")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(cls.SECRETS[name] + "\n")  # a trailing newline is dropped
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            cls.secret_files[name] = path
        cls.ica = AirlockCA()
        cls.certs = OriginCerts(names=TLS_ORIGIN_NAMES)
        cls.echo = EchoOrigin().start()
        cls.echo_b = EchoOrigin().start()
        cls.tls_echo = EchoOrigin(OriginCerts.server_context(cls.certs.good)).start()

    @classmethod
    def extra_teardown(cls):
        for o in (cls.echo, cls.echo_b, cls.tls_echo):
            o.stop()
        cls.certs.cleanup()
        cls.ica.cleanup()
        cls.secret_dir.cleanup()

    @classmethod
    def secret_env(cls):
        return {cls.env_name(n): v for n, v in cls.SECRETS.items() if n not in cls.FILE_SECRETS}

    @classmethod
    def _new_proxy(cls):
        return Airlock(cls.policy(), threads=cls.threads, args=cls.proxy_args,
                       name=cls.__name__, env_extra=cls.secret_env())

    @classmethod
    def secret_decl(cls, name, **extra):
        d = ({"file": cls.secret_files[name]} if name in cls.FILE_SECRETS
             else {"env": cls.env_name(name)})
        d.update(extra)
        return d

    @classmethod
    def tls_section(cls):
        return {"ca_cert": cls.ica.cert, "ca_key": cls.ica.key,
                "upstream_ca": cls.certs.ca_cert}

    @staticmethod
    def echo_rule(port, name, hosts, **extra):
        """A plain rule for an echo origin: any path, GET/POST/PUT/HEAD, no upgrades key (a
        rule with upgrades cannot inject or redact)."""
        extra.setdefault("paths", None)
        extra.setdefault("upgrades", None)
        return origin_rule(port, name=name, hosts=hosts, **extra)

    @staticmethod
    def insp_rule(port, name, hosts, **extra):
        extra.setdefault("paths", None)
        return inspect_rule(port, name=name, hosts=hosts, **extra)

    @classmethod
    def leak_needles(cls):
        """Extra literal byte strings the leak scan looks for."""
        return {}

    @classmethod
    def tearDownClass(cls):
        problems = []
        proxy = cls.proxy
        if proxy is not None and proxy.alive():
            # Stop first so the audit log is flushed, then scan it whole.
            try:
                rc = proxy.stop(signal.SIGTERM)
                if rc != 0:
                    problems.append("proxy exited %s after SIGTERM" % rc)
            except AssertionError as e:
                problems.append(str(e))
        if proxy is not None:
            problems += secret_scan.scan_proxy_files(proxy, cls.SECRETS, cls.leak_needles())
        try:
            super().tearDownClass()
        except AssertionError as e:
            problems.append(str(e))
        if problems:
            raise AssertionError("; ".join(problems))

    # -- helpers ------------------------------------------------------------------------------

    def curl_ica(self, *urls, args=(), **kw):
        return self.curl(*urls, args=["--cacert", self.ica.cert, *args], **kw)

    def assert_no_secret(self, data, where, secrets=None):
        if isinstance(data, str):
            data = data.encode("latin-1", "replace")
        found = secret_scan.scan(data, self.SECRETS if secrets is None else secrets,
                                 self.leak_needles())
        self.assertEqual(found, [], "%s holds a secret: %r" % (where, found))

    def assert_response_clean(self, result):
        """No secret spelling in the body or any response header the client got."""
        self.assert_no_secret(result.body, "response body")
        for block in result.responses:
            for k, v in block.headers:
                self.assert_no_secret(v, "response header %s" % k)

    def origin_record(self, origin, m):
        recs = origin.wait_seen(m, env.t(5))
        self.assertEqual(len(recs), 1, "origin records for %s: %r" % (m, recs))
        return recs[0]

    def setUp(self):
        super().setUp()
        # Where this test's stderr starts: a warning looked for must be this test's own, not
        # one an earlier test left behind.
        self.stderr_start = len(self.proxy.stderr())

    def stderr_since_start(self):
        return self.proxy.stderr()[self.stderr_start:]

    def assert_origin_never_saw(self, origin, m):
        """Once the exchange is over (its audit record, path carrying m, is written)."""
        self.audit_for(m)
        self.assertEqual(origin.seen(m), [], "the origin got a request it must not see")

    def audit_for(self, m, **match):
        return self.assert_audit(path=lambda p: isinstance(p, str) and m in p, **match)

    def assert_audit_clean(self, rec):
        self.assert_no_secret(json.dumps(rec), "audit record")


class InjectionTest(SecretsCase):
    adversarial = True
    SECRETS = {"api_token": API_TOKEN, "file_key": FILE_KEY, "basic_pw": BASIC_PW,
               "ph_token": PH_VALUE, "bound": BOUND}
    FILE_SECRETS = ("file_key",)

    @classmethod
    def leak_needles(cls):
        return {"basic credential": secret_scan.basic_spelling(BASIC_USER, BASIC_PW)}

    @classmethod
    def policy(cls):
        pe, pb, pt = cls.echo.port, cls.echo_b.port, cls.tls_echo.port
        bearer = {"headers": {"Authorization": "Bearer ${secrets.api_token}",
                              "X-Client": "airlock"}}
        basic = {"username": BASIC_USER, "password": "${secrets.basic_pw}"}
        rules = [
            origin_rule(cls.origin.port),
            origin_rule(cls.origin.port, name="other", hosts=["other.test"]),
            origin_rule(cls.origin.port, name="anymethod", hosts=["any.test"], methods=None),
            cls.echo_rule(pe, "api", ["api.test"], inject=bearer),
            cls.echo_rule(pe, "query", ["q.test"],
                          inject={"query": {"api_key": "${secrets.file_key}"}}),
            cls.echo_rule(pe, "basic", ["basic.test"], inject={"basic": basic}),
            cls.echo_rule(pe, "require", ["req.test"], inject={"require": ["ph_token"]}),
            cls.echo_rule(pe, "wild", ["*.wild.test"],
                          inject={"headers": {"X-Bound": "${secrets.bound}"}}),
            cls.echo_rule(pb, "landing", ["b.test"]),
            cls.insp_rule(pt, "insp", ["insp.test"], inject=bearer),
            cls.insp_rule(pt, "inspb", ["inspb.test"],
                          inject={"basic": basic, "query": {"api_key": "${secrets.file_key}"}}),
            cls.insp_rule(pt, "insp-other", ["origin.test"]),
            tunnel_rule(pt, name="opaque", hosts=["tunnel.test"]),
            cls.echo_rule(pt, "opaque-inject", ["apitls.test"], inject=bearer),
        ]
        secrets = {
            "api_token": cls.secret_decl("api_token"),
            "file_key": cls.secret_decl("file_key"),
            "basic_pw": cls.secret_decl("basic_pw"),
            "ph_token": cls.secret_decl("ph_token", placeholder=PH_PLACEHOLDER,
                                        hosts=["api.test", "req.test", "insp.test"]),
            "bound": cls.secret_decl("bound", hosts=["api.test", "ok.wild.test"]),
        }
        return make_policy(rules, tls=cls.tls_section(), secrets=secrets)

    # -- header injection ---------------------------------------------------------------------

    def check_bearer_exchange(self, r, origin, m, scheme):
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.status, 200, r)
        # Origin side: exactly the injected Authorization, the agent's one removed.
        rec = self.origin_record(origin, m)
        self.assertEqual(header_values(rec["headers"], "Authorization"), ["Bearer " + API_TOKEN])
        self.assertEqual(header_values(rec["headers"], "X-Client"), ["airlock"])
        self.assertNotIn(AGENT_OWN.encode(), origin.all_received_bytes())
        # Agent side: the echo with the secret redacted, in the body and the headers.
        self.assert_response_clean(r)
        echo = r.json()
        auth = header_values(echo["headers"], "Authorization")
        self.assertEqual(len(auth), 1, echo["headers"])
        self.assertIn("[REDACTED:secret:api_token]", auth[0])
        self.assertIn("[REDACTED:secret:api_token]", r.header("X-Echo-Authorization") or "",
                      r.final.headers)
        # The body changed length: sent without the origin's Content-Length (chunked over
        # HTTP/1.1; over HTTP/2, which curl picks inside an inspected tunnel, DATA frames).
        self.assertIsNone(r.header("Content-Length"), r.final.headers)
        if r.final.version != "HTTP/2":
            self.assertIn("chunked", (r.header("Transfer-Encoding") or "").lower())
        rec = self.audit_for(m, scheme=scheme)
        self.assertEqual(rec["decision"], "allow", rec)
        self.assertEqual(rec.get("injected"), ["api_token"], rec)
        self.assert_audit_clean(rec)
        return echo

    def test_header_injected_replaces_agent_authorization(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/hdr-%s" % m, "api.test"),
                      args=["-H", "Authorization: Bearer " + AGENT_OWN, "-H", "X-Client: agent",
                            "-H", "X-Client: agent-two"])
        self.check_bearer_exchange(r, self.echo, m, "http")

    def test_every_agent_spelling_of_the_header_is_replaced(self):
        """Two Authorization fields, one in lower case, and an X-Client: the origin gets one
        of each, the injected ones."""
        m = marker()
        [r], _ = self.send_raw(self.request(
            "GET", self.echo.url("/echo/dup-%s" % m, "api.test"),
            headers=[("Authorization", "Bearer " + AGENT_OWN),
                     ("authorization", "Basic " + base64.b64encode(b"a:b").decode()),
                     ("x-client", "agent"), ("X-Other", "kept-" + m)]))
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m)
        self.assertEqual(header_values(rec["headers"], "Authorization"), ["Bearer " + API_TOKEN])
        self.assertEqual(header_values(rec["headers"], "X-Client"), ["airlock"])
        self.assertEqual(header_values(rec["headers"], "X-Other"), ["kept-" + m])
        self.assertNotIn(AGENT_OWN.encode(), self.echo.all_received_bytes())
        self.assertTrue(r.complete, r)
        self.assert_no_secret(r.body, "response body")

    def test_inject_rule_refuses_opaque_tunnel(self):
        """A rule that injects must see the request: an opaque CONNECT is refused, so the
        secret can never be needed where the proxy cannot put it."""
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT apitls.test:%d HTTP/1.1\r\nHost: apitls.test:%d\r\n\r\n"
               % (self.tls_echo.port, self.tls_echo.port))
        r = c.read_response(tunnel=True)
        self.assert_answer(r, "needs_inspection")

    def test_header_injected_inside_inspected_tunnel(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-hdr-%s" % m, "insp.test"),
                          args=["-H", "Authorization: Bearer " + AGENT_OWN])
        self.assertEqual(r.responses[0].status, 200, "CONNECT answer: %r" % r.responses)
        self.check_bearer_exchange(r, self.tls_echo, m, "https")

    def test_header_injected_with_python_requests(self):
        m = marker()
        proxies = {"http": "http://127.0.0.1:%d" % self.port,
                   "https": "http://127.0.0.1:%d" % self.port}
        for url, origin in ((self.echo.url("/echo/rq-%s" % m, "api.test"), self.echo),
                            (self.tls_echo.url("/echo/rq-tls-%s" % m, "insp.test"),
                             self.tls_echo)):
            r = requests.post(url, json={"hello": m}, proxies=proxies, verify=self.ica.cert,
                              headers={"Authorization": "Bearer " + AGENT_OWN},
                              timeout=env.t(15))
            self.assertEqual(r.status_code, 200, r.text)
            self.assertNotIn(API_TOKEN, r.text)
            self.assertNotIn(API_TOKEN, json.dumps(dict(r.headers)))
            echo = r.json()
            self.assertEqual(json.loads(echo["body"]), {"hello": m})
            self.assertIn("[REDACTED:secret:api_token]",
                          header_values(echo["headers"], "Authorization")[0])
        for rec in self.echo.seen("rq-%s" % m) + self.tls_echo.seen("rq-tls-%s" % m):
            self.assertEqual(header_values(rec["headers"], "Authorization"),
                             ["Bearer " + API_TOKEN])

    # -- query and Basic ----------------------------------------------------------------------

    def check_query_injected(self, r, origin, m):
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(origin, m)
        params = urllib.parse.parse_qs(rec["query"], keep_blank_values=True)
        self.assertEqual(params.get("api_key"), [FILE_KEY], rec["query"])
        self.assertEqual(params.get("x"), ["1"], rec["query"])
        self.assertNotIn(AGENT_OWN, rec["target"])
        self.assert_response_clean(r)
        echo = r.json()
        self.assertIn("[REDACTED:secret:file_key]", echo["query"])
        self.assertEqual(echo["params"].get("x"), ["1"])
        self.assertIn("[REDACTED:secret:file_key]", r.header("X-Echo-Query") or "")
        return rec

    def test_query_parameter_injected_from_file_secret(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/q-%s?api_key=%s&x=1&api_keys=keep&api_key=again"
                                    "&api%%5Fkey=encoded" % (m, AGENT_OWN), "q.test"))
        rec = self.check_query_injected(r, self.echo, m)
        # Every agent value of the parameter is gone; a parameter of another name stays.
        self.assertIn("api_keys=keep", rec["query"])
        self.assertNotIn("again", rec["query"])
        self.assertNotIn("encoded", rec["query"])
        audit = self.audit_for(m)
        self.assertEqual(audit.get("injected"), ["file_key"], audit)
        self.assert_audit_clean(audit)

    def test_query_parameter_injected_without_agent_parameter(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/q0-%s?x=1" % m, "q.test"))
        self.check_query_injected(r, self.echo, m)

    def check_basic(self, r, origin, m):
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(origin, m)
        auth = header_values(rec["headers"], "Authorization")
        self.assertEqual(len(auth), 1, auth)
        self.assertTrue(auth[0].startswith("Basic "), auth)
        decoded = base64.b64decode(auth[0][6:]).decode()
        self.assertEqual(decoded, "%s:%s" % (BASIC_USER, BASIC_PW))
        self.assert_response_clean(r)
        echo = r.json()
        # The origin decoded the credentials; the agent sees the password redacted.
        self.assertEqual(echo["basic"]["user"], BASIC_USER)
        self.assertIn("[REDACTED:secret:basic_pw]", echo["basic"]["password"])
        echoed = header_values(echo["headers"], "Authorization")[0]
        self.assertNotIn(auth[0][6:], echoed)
        self.assertIn("[REDACTED", echoed)
        self.assertIn("[REDACTED", r.header("X-Echo-Authorization") or "")

    def test_basic_credentials(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/basic-%s" % m, "basic.test"),
                      args=["-u", "agent:" + AGENT_OWN])
        self.check_basic(r, self.echo, m)
        rec = self.audit_for(m)
        self.assertEqual(rec.get("injected"), ["basic_pw"], rec)

    def test_basic_and_query_inside_inspected_tunnel(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-bq-%s?x=1&api_key=%s" % (m, AGENT_OWN),
                                            "inspb.test"),
                          args=["-H", "Authorization: Bearer " + AGENT_OWN])
        self.check_basic(r, self.tls_echo, m)
        self.check_query_injected(r, self.tls_echo, m)
        rec = self.audit_for(m, scheme="https")
        self.assertEqual(sorted(rec.get("injected") or []), ["basic_pw", "file_key"], rec)

    # -- placeholders -------------------------------------------------------------------------

    def test_placeholder_swapped_on_bound_host(self):
        """Where a credential goes (the default swap_in): a header that is the placeholder, one
        after an auth scheme, a parameter that is it. (Embedded elsewhere: refused, or swapped
        with swap_in: [anywhere], test_placeholder_placement.py.)"""
        m = marker()
        r = self.curl(self.echo.url("/echo/ph-%s?tok=%s" % (m, PH_PLACEHOLDER), "api.test"),
                      args=["-H", "X-Token: " + PH_PLACEHOLDER,
                            "-H", "X-Wrapped: Token " + PH_PLACEHOLDER])
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m)
        self.assertEqual(header_values(rec["headers"], "X-Token"), [PH_VALUE])
        self.assertEqual(header_values(rec["headers"], "X-Wrapped"), ["Token " + PH_VALUE])
        self.assertIn("tok=" + PH_VALUE, rec["target"])
        self.assertNotIn(PH_PLACEHOLDER.encode(), self.echo.all_received_bytes())
        self.assert_response_clean(r)
        echo = r.json()
        self.assertEqual(header_values(echo["headers"], "X-Token"),
                         ["[REDACTED:secret:ph_token]"])
        self.assertIn("[REDACTED:secret:ph_token]", echo["target"])
        self.assert_audit_clean(self.audit_for(m))

    def test_placeholder_swapped_inside_tunnel_on_bound_host(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-ph-%s" % m, "insp.test"),
                          args=["-H", "X-Token: " + PH_PLACEHOLDER])
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.tls_echo, m)
        self.assertEqual(header_values(rec["headers"], "X-Token"), [PH_VALUE])
        self.assert_response_clean(r)
        self.assertEqual(header_values(r.json()["headers"], "X-Token"),
                         ["[REDACTED:secret:ph_token]"])

    def assert_placeholder_refused(self, answer, m, origin, scheme, client_port=None):
        self.assert_answer(answer, "placeholder_refused")
        details = parse_proxy_status(answer.header("Proxy-Status")).get("details", "")
        self.assertIn("ph_token", details)
        for text in (answer.header("Proxy-Status"), answer.body):
            self.assert_no_secret(text, "the refusal")
            data = text if isinstance(text, bytes) else text.encode()
            self.assertNotIn(PH_PLACEHOLDER.encode(), data, "the refusal echoes the placeholder")
        if m is not None:
            self.assert_origin_never_saw(origin, m)
            rec = self.audit_for(m, scheme=scheme)
        else:
            rec = self.assert_audit(scheme=scheme, reason="placeholder_refused",
                                    host="tunnel.test", client_port=client_port)
        self.assertEqual(rec["decision"], "deny", rec)
        self.assertEqual(rec["reason"], "placeholder_refused", rec)
        self.assert_audit_clean(rec)
        self.assertNotIn(PH_PLACEHOLDER, json.dumps(rec))
        # A warning naming the attempt, without the value.
        deadline = time.monotonic() + env.t(3)
        while not re.search(r"(?i)exfiltration", self.stderr_since_start()):
            if time.monotonic() > deadline:
                self.fail("no exfiltration warning on stderr for this request:\n%s"
                          % self.stderr_since_start()[-2000:])
            time.sleep(0.05)
        lines = [ln for ln in self.stderr_since_start().splitlines()
                 if re.search(r"(?i)exfiltration", ln)]
        self.assertTrue(any(" warn " in ln or " error " in ln for ln in lines), lines)
        self.assertTrue(any("ph_token" in ln for ln in lines), lines)
        self.assert_no_secret(self.proxy.stderr(), "stderr")

    def test_placeholder_to_unbound_host_refused(self):
        m = marker()
        r = self.curl(self.url("/echo/ph-out-%s" % m, host="other.test"),
                      args=["-H", "X-Token: " + PH_PLACEHOLDER])
        self.assert_placeholder_refused(CurlAnswer(r), m, self.origin, "http")

    def test_placeholder_in_a_header_name_to_unbound_host_refused(self):
        m = marker()
        r = self.curl(self.url("/echo/ph-name-%s" % m, host="other.test"),
                      args=["-H", "X-%s: 1" % PH_PLACEHOLDER])
        self.assert_placeholder_refused(CurlAnswer(r), m, self.origin, "http")

    def test_placeholder_as_the_method_to_unbound_host_refused(self):
        # A rule without `methods` takes any token as the method.
        m = marker()
        [r], _ = self.send_raw(self.request(PH_PLACEHOLDER,
                                            self.url("/echo/ph-method-%s" % m, host="any.test")))
        self.assert_placeholder_refused(r, m, self.origin, "http")

    def test_placeholder_in_target_to_unbound_host_refused(self):
        m = marker()
        r = self.curl(self.url("/echo/ph-q-%s?k=%s" % (m, PH_PLACEHOLDER), host="other.test"))
        self.assert_placeholder_refused(CurlAnswer(r), m, self.origin, "http")

    def test_placeholder_in_body_to_unbound_host_refused(self):
        m = marker()
        body = json.dumps({"note": "paste", "key": PH_PLACEHOLDER})
        r = self.curl(self.url("/echo/ph-body-%s" % m, host="other.test"),
                      args=["-X", "POST", "-H", "Content-Type: application/json",
                            "--data-binary", body])
        self.assert_placeholder_refused(CurlAnswer(r), m, self.origin, "http")

    def test_placeholder_deep_in_streamed_body_refused(self):
        """A placeholder 300 KB into a chunked upload, split across two chunks: refused before
        the piece that holds it is sent."""
        half = len(PH_PLACEHOLDER) // 2
        chunks = [b"a" * 300_000 + PH_PLACEHOLDER[:half].encode(),
                  PH_PLACEHOLDER[half:].encode() + b"b" * 1000]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        c = self.raw()
        self.addCleanup(c.close)
        c.send(("POST %s HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: chunked\r\n"
                "Content-Type: text/plain\r\n\r\n" % self.url("/echo/deep", host="other.test")
                ).encode() + wire)
        r = c.read_response()
        self.assert_answer(r, "placeholder_refused")
        rec = self.assert_audit(scheme="http", reason="placeholder_refused", host="other.test")
        self.assertNotIn(PH_PLACEHOLDER, json.dumps(rec))

    def test_placeholder_refused_inside_tunnel_to_unbound_host(self):
        m = marker()
        r = self.curl_ica(self.tls_echo.url("/echo/tls-ph-out-%s" % m, "origin.test"),
                          args=["-H", "Authorization: Bearer " + PH_PLACEHOLDER])
        self.assertEqual(r.responses[0].status, 200, "CONNECT answer: %r" % r.responses)
        self.assert_placeholder_refused(CurlAnswer(r), m, self.tls_echo, "https")

    def test_placeholder_in_connect_head_refused(self):
        c = self.raw()
        self.addCleanup(c.close)
        c.send("CONNECT tunnel.test:%d HTTP/1.1\r\nHost: tunnel.test:%d\r\n"
               "X-Token: %s\r\n\r\n" % (self.tls_echo.port, self.tls_echo.port, PH_PLACEHOLDER))
        r = c.read_response(tunnel=True)
        self.assert_placeholder_refused(r, None, None, "connect", client_port=c.local_port)
        # The same CONNECT without the placeholder is an ordinary tunnel.
        c2 = self.raw()
        self.addCleanup(c2.close)
        c2.send("CONNECT tunnel.test:%d HTTP/1.1\r\nHost: tunnel.test:%d\r\n\r\n"
                % (self.tls_echo.port, self.tls_echo.port))
        self.assertEqual(c2.read_response(tunnel=True).status, 200)

    def test_require_placeholder(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/req-none-%s" % m, "req.test"),
                      args=["-H", "Authorization: Bearer " + AGENT_OWN])
        answer = CurlAnswer(r)
        self.assert_answer(answer, "placeholder_required")
        self.assertIn("ph_token", parse_proxy_status(answer.header("Proxy-Status"))
                      .get("details", ""))
        self.assert_origin_never_saw(self.echo, m)
        rec = self.audit_for(m)
        self.assertEqual(rec["reason"], "placeholder_required", rec)
        # With the placeholder (a header, or the target): forwarded with the real value.
        m2 = marker()
        r = self.curl(self.echo.url("/echo/req-hdr-%s" % m2, "req.test"),
                      args=["-H", "Authorization: Bearer " + PH_PLACEHOLDER])
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m2)
        self.assertEqual(header_values(rec["headers"], "Authorization"), ["Bearer " + PH_VALUE])
        self.assert_response_clean(r)
        m3 = marker()
        r = self.curl(self.echo.url("/echo/req-q-%s?key=%s" % (m3, PH_PLACEHOLDER), "req.test"))
        self.assertEqual(r.status, 200, r)
        self.assertIn("key=" + PH_VALUE, self.origin_record(self.echo, m3)["target"])
        self.assert_response_clean(r)

    # -- host binding -------------------------------------------------------------------------

    def test_bound_secret_not_injected_on_other_wildcard_host(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/wild-ok-%s" % m, "ok.wild.test"))
        self.assertEqual(r.status, 200, r)
        rec = self.origin_record(self.echo, m)
        self.assertEqual(header_values(rec["headers"], "X-Bound"), [BOUND])
        self.assert_response_clean(r)
        m2 = marker()
        r = self.curl(self.echo.url("/echo/wild-no-%s" % m2, "x.wild.test"))
        answer = CurlAnswer(r)
        self.assert_answer(answer, "secret_not_bound")
        self.assertIn("bound", parse_proxy_status(answer.header("Proxy-Status"))
                      .get("details", ""))
        self.assert_no_secret(r.body, "the refusal")
        self.assert_origin_never_saw(self.echo, m2)
        rec = self.audit_for(m2)
        self.assertEqual(rec["reason"], "secret_not_bound", rec)
        self.assertEqual(rec["host"], "x.wild.test")
        self.assert_audit_clean(rec)

    # -- redirects ----------------------------------------------------------------------------

    def redirect_route(self, origin, m):
        target = self.echo_b.url("/echo/landed-%s" % m, "b.test")

        def fn(req):
            req.send(302, [("Location", target)], b"moved\n")
        origin.route("/redirect-%s" % m, fn)
        return target

    def check_landed(self, m, via):
        landed = self.origin_record(self.echo_b, "landed-" + m)
        self.assertEqual(header_values(landed["headers"], "Authorization"), [],
                         "%s: the redirected request carried an Authorization" % via)
        self.assertEqual(header_values(landed["headers"], "X-Client"), [])
        self.assert_no_secret(self.echo_b.all_received_bytes(), "what origin B received")
        # Origin A got the injected credential; it did not follow the redirect itself.
        first = self.echo.seen("redirect-%s" % m) or self.tls_echo.seen("redirect-%s" % m)
        self.assertEqual(len(first), 1)
        self.assertEqual(header_values(first[0]["headers"], "Authorization"),
                         ["Bearer " + API_TOKEN])
        self.assertEqual(len(self.echo_b.seen("landed-" + m)), 1)

    def test_redirect_to_other_host_carries_no_secret_curl(self):
        m = marker()
        self.redirect_route(self.echo, m)
        r = self.curl(self.echo.url("/redirect-%s" % m, "api.test"),
                      args=["-L", "-H", "X-Agent: " + m])
        self.assertEqual(r.status, 200, r)
        self.assertEqual([b.status for b in r.responses], [302, 200])
        self.assertEqual(r.json()["path"], "/echo/landed-%s" % m)
        self.check_landed(m, "curl -L")
        self.assertEqual(self.audit_for("landed-" + m).get("injected") or [], [])

    def test_redirect_location_echoing_the_secret_is_redacted(self):
        """Origin A (query injection) redirects to B with the query it received, secret and
        all, in Location: the agent sees the Location redacted, so following it sends B no
        secret."""
        m = marker()

        def fn(req):
            req.send(302, [("Location", self.echo_b.url("/echo/landed-%s?%s" % (m, req.query),
                                                        "b.test"))], b"moved\n")
        self.echo.route("/redirect-q-%s" % m, fn)
        r = self.curl(self.echo.url("/redirect-q-%s" % m, "q.test"), args=["-L"])
        self.assertEqual([b.status for b in r.responses], [302, 200], r)
        location = r.responses[0].header("Location") or ""
        self.assertIn("[REDACTED:secret:file_key]", urllib.parse.unquote(location), location)
        first = self.echo.seen("redirect-q-%s" % m)
        self.assertIn("api_key=", first[0]["target"])
        self.assert_no_secret(self.echo_b.all_received_bytes(), "what origin B received")
        self.assert_response_clean(r)

    def test_redirect_to_other_host_carries_no_secret_requests(self):
        m = marker()
        self.redirect_route(self.echo, m)
        r = requests.get(self.echo.url("/redirect-%s" % m, "api.test"),
                         proxies={"http": "http://127.0.0.1:%d" % self.port},
                         headers={"Authorization": "Bearer " + AGENT_OWN}, timeout=env.t(15))
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual([h.status_code for h in r.history], [302])
        self.check_landed(m, "requests")

    def test_redirect_from_tunnel_to_plain_host_carries_no_secret(self):
        m = marker()
        self.redirect_route(self.tls_echo, m)
        r = self.curl_ica(self.tls_echo.url("/redirect-%s" % m, "insp.test"), args=["-L"])
        self.assertEqual(r.status, 200, r)
        self.check_landed(m, "curl -L from https")

    # -- the leak scan so far (the class ends with the full one, after the proxy stopped) -----

    def test_zz_no_secret_in_audit_or_stderr(self):
        time.sleep(0.5)
        self.assertTrue(self.proxy.audit(), "no audit records at all")
        problems = secret_scan.scan_proxy_files(self.proxy, self.SECRETS, self.leak_needles())
        self.assertEqual(problems, [])


class SecretRotationTest(SecretsCase):
    """A file secret replaced on disk is injected (and redacted) with its new value after a
    reload; requests never carry a mix."""

    OLD = "rot-AIRLOCKTEST-before-1111111111"
    NEW = "rot-AIRLOCKTEST-after-22222222222"
    SECRETS = {"file_key": OLD, "rotated": NEW}  # "rotated" is only scanned for
    FILE_SECRETS = ("file_key",)

    @classmethod
    def policy(cls):
        return make_policy(
            [origin_rule(cls.origin.port),
             cls.echo_rule(cls.echo.port, "rot", ["rot.test"],
                           inject={"headers": {"X-Key": "${secrets.file_key}"}}),
             # An origin that still sends the old value back (a cache, a key listing).
             cls.echo_rule(cls.origin.port, "stale", ["stale.test"],
                           inject={"headers": {"X-Key": "${secrets.file_key}"}}),
             # Where an agent that learnt a value might send it: DLP refuses it.
             cls.echo_rule(cls.echo.port, "out", ["out.test"], dlp={"action": "block"})],
            secrets={"file_key": cls.secret_decl("file_key")})

    def stale_answer(self):
        """What the agent reads from an origin whose answer quotes the secret's first value."""
        self.origin.fallback = ("old key: %s\n" % self.OLD).encode()
        try:
            r = self.curl(self.url("/keys-%s" % marker(), host="stale.test"))
        finally:
            self.origin.fallback = None
        self.assertEqual(r.status, 200, r)
        return r.body

    def fetch(self):
        m = marker()
        r = self.curl(self.echo.url("/echo/rot-%s" % m, "rot.test"))
        self.assertEqual(r.status, 200, r)
        self.assert_response_clean(r)
        return header_values(self.origin_record(self.echo, m)["headers"], "X-Key"), r

    def test_rotation_on_reload(self):
        seen, r = self.fetch()
        self.assertEqual(seen, [self.OLD])
        self.assertEqual(self.stale_answer(), b"old key: [REDACTED:secret:file_key]\n")
        self.assertEqual(header_values(r.json()["headers"], "X-Key"),
                         ["[REDACTED:secret:file_key]"])
        path = self.secret_files["file_key"]
        tmp = path + ".new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.NEW + "\n")
        os.replace(tmp, path)
        self.proxy.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + env.t(5)
        while True:
            seen, r = self.fetch()
            self.assertIn(seen, ([self.OLD], [self.NEW]))
            if seen == [self.NEW]:
                break
            if time.monotonic() > deadline:
                self.fail("the rotated secret was not injected after SIGHUP; stderr:\n%s"
                          % self.proxy.stderr()[-2000:])
            time.sleep(0.1)
        self.assertEqual(header_values(r.json()["headers"], "X-Key"),
                         ["[REDACTED:secret:file_key]"])
        # The old value may still be valid at its provider: an origin that sends it back
        # after the rotation has it redacted as before (retired_secrets.hpp).
        self.assertEqual(self.stale_answer(), b"old key: [REDACTED:secret:file_key]\n")
        # Nor may a request carry it out, as it may not carry the new one.
        for value in (self.NEW, self.OLD):
            m = marker()
            r = self.curl(self.echo.url("/echo/out-%s" % m, "out.test"),
                          args=["-H", "X-Note: %s" % value])
            self.assertEqual(r.status, 403, value)
            self.assertEqual(r.header("X-Airlock-Reason"), "dlp_blocked", value)
            rec = self.assert_audit(path=lambda v, m=m: v is not None and m in v)
            self.assertEqual([d["class"] for d in rec["dlp"]], ["secret:file_key"], rec)
            self.assertNotIn(m.encode(), self.echo.all_received_bytes())
        self.assert_no_secret(self.proxy.stderr(), "stderr")


class PolicyCheckTest(unittest.TestCase):
    """`airlock check` on inject keys the proxy must refuse, naming the key, never a value."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="airlock-itest-injcheck-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, rule_extra, secrets=None, name="p.yaml"):
        import yaml
        rule = SecretsCase.echo_rule(8080, "check-rule", ["api.test"], **rule_extra)
        policy = make_policy([rule], audit={"path": "off"},
                             secrets=secrets or {"tok": {"env": "AIRLOCK_ITEST_CHECK_TOK"}})
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            yaml.safe_dump(policy, f, sort_keys=False)
        import subprocess
        out = subprocess.run([env.airlock_bin(), "check", "--config", path], capture_output=True,
                             text=True, timeout=env.t(20),
                             env=dict(os.environ, AIRLOCK_ITEST_CHECK_TOK=API_TOKEN))
        self.assertNotIn(API_TOKEN, out.stdout + out.stderr)
        return out

    def test_valid_inject_accepted(self):
        out = self.check({"inject": {"headers": {"Authorization": "Bearer ${secrets.tok}"}}})
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_unknown_secret_refused(self):
        out = self.check({"inject": {"headers": {"Authorization": "Bearer ${secrets.nope}"}}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.inject.*unknown secret 'nope'")

    def test_framing_header_refused(self):
        out = self.check({"inject": {"headers": {"Content-Length": "${secrets.tok}"}}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.inject")

    def test_empty_inject_refused(self):
        out = self.check({"inject": {}})
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("inject needs headers, query, basic or require", out.stderr)

    def test_upgrades_with_inject_refused(self):
        out = self.check({"upgrades": ["websocket"],
                          "inject": {"headers": {"Authorization": "Bearer ${secrets.tok}"}}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]")

    def test_authorization_header_and_basic_refused(self):
        out = self.check({"inject": {"headers": {"Authorization": "Bearer ${secrets.tok}"},
                                     "basic": {"username": "u", "password": "${secrets.tok}"}}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.inject")

    def test_require_without_placeholder_refused(self):
        out = self.check({"inject": {"require": ["tok"]}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.inject\.require")

    def test_exact_host_not_bound_refused(self):
        out = self.check({"inject": {"headers": {"X-Key": "${secrets.tok}"}}},
                         secrets={"tok": {"env": "AIRLOCK_ITEST_CHECK_TOK",
                                          "hosts": ["elsewhere.test"]}})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.inject")
        for word in ("tok", "api.test", "check-rule"):
            self.assertIn(word, out.stderr)

    def test_missing_env_secret_refused_naming_it(self):
        out = self.check({"inject": {"headers": {"X-Key": "${secrets.tok}"}}},
                         secrets={"tok": {"env": "AIRLOCK_ITEST_CHECK_UNSET"}})
        self.assertEqual(out.returncode, 1, out)
        self.assertIn("secrets.tok", out.stderr)
        self.assertIn("AIRLOCK_ITEST_CHECK_UNSET", out.stderr)

    def test_unknown_redactor_refused(self):
        out = self.check({"redact": ["no-such-redactor"]})
        self.assertEqual(out.returncode, 1, out)
        self.assertRegex(out.stderr, r"rules\[0\]\.redact.*no-such-redactor")


if __name__ == "__main__":
    unittest.main()
