"""Policy decisions: default deny by host, port, method and path; host forms; agents and
their credentials; report mode (policy-wide and per rule); protocol upgrades."""

import base64
import hashlib
import unittest

from harness import env
from harness.base import CurlAnswer, ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule

TOKEN = "tok-3f9a1c"
TOKEN_SHA256 = hashlib.sha256(TOKEN.encode()).hexdigest()


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class DenyTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p),
             origin_rule(p, name="wild", hosts=["*.wild.test"]),
             origin_rule(p, name="regex", hosts=None, host_regex=[r"api[0-9]+\.regex\.test"]),
             origin_rule(p, name="other", hosts=["other.test"])],
            agents={"default": {"rules": ["origin", "wild", "regex"]},
                    "coder": {"rules": ["origin", "other"], "token_sha256": TOKEN_SHA256}})

    def deny(self, url, reason, method="GET", headers=()):
        m = marker()
        if "?" in url:
            url = url.replace("?", "/%s?" % m, 1)
        else:
            url = url + "/" + m
        before = len(self.origin.seen(m))
        [r], _ = self.send_raw(self.request(method, url, headers=headers))
        self.assert_answer(r, reason, msg="for %s %s" % (method, url))
        rec = self.assert_audit(path=lambda p: p is not None and m in p)
        self.assertEqual(rec["decision"], "deny", rec)
        self.assertEqual(rec["reason"], reason, rec)
        self.assertEqual(rec["status"], r.status, rec)
        self.assertEqual(rec["method"], method, rec)
        self.assertEqual(self.origin.seen(m)[before:], [], "origin received a denied request")
        return r, rec

    def test_denied_host(self):
        _, rec = self.deny("http://not-listed.test:%d/echo" % self.origin.port, "host_denied")
        self.assertEqual(rec["host"], "not-listed.test")
        self.assertIn(rec["rule"], ("", None))

    def test_denied_host_of_another_agent(self):
        # `other` exists, but the default agent is not given it.
        self.deny(self.url("/echo", host="other.test"), "host_denied")

    def test_denied_port(self):
        _, rec = self.deny("http://origin.test:%d/echo" % (self.origin.port + 1), "port_denied")
        self.assertEqual(rec["port"], self.origin.port + 1)

    def test_default_port_denied(self):
        # No port in the URL means 80, which the rule does not list.
        self.deny("http://origin.test/echo", "port_denied")

    def test_denied_method(self):
        _, rec = self.deny(self.url("/echo"), "method_denied", method="DELETE")
        self.assertEqual(rec["rule"], "origin")
        self.deny(self.url("/echo"), "method_denied", method="PATCH")
        self.deny(self.url("/echo"), "method_denied", method="OPTIONS")

    def test_denied_path(self):
        r, rec = self.deny(self.url("/secret"), "path_denied")
        self.assertEqual(rec["rule"], "origin")
        self.deny(self.url("/echoes"), "path_denied")

    def test_dot_segments_denied(self):
        # An origin removes dot segments after our check (RFC 3986 section 5.2.4), so
        # /echo/../secret would reach /secret through a rule for /echo.
        # Also behind an encoded slash or backslash (decoded by many servers before they
        # route) and before ";" parameters (dropped by servlet containers).
        for path in ("/echo/../secret", "/echo/./x", "/echo/%2e%2e/secret", "/echo/.%2E/x",
                     "/echo/..%2fsecret", "/echo/..%5Csecret", "/echo/..;/secret"):
            with self.subTest(path=path):
                self.deny(self.url(path), "path_denied")

    def test_query_is_not_part_of_the_path_match(self):
        # /secret?x=/echo must not pass because the query mentions an allowed path ...
        self.deny(self.url("/secret?x=/echo"), "path_denied")
        # ... and an allowed path with an odd query passes.
        r = self.curl(self.url("/echo/q?x=/secret"))
        self.assertEqual(r.status, 200)

    def test_curl_sees_deny_headers(self):
        r = self.curl(self.url("/secret"))
        self.assert_answer(CurlAnswer(r), "path_denied")

    def test_host_forms_normalised(self):
        for host in ("ORIGIN.TEST", "Origin.Test.", "origin.test."):
            m = marker()
            url = "http://%s:%d/echo/%s" % (host, self.origin.port, m)
            [r], _ = self.send_raw(self.request("GET", url))
            self.assertEqual(r.status, 200, "%s: %r" % (host, r))
            rec = self.assert_audit(path="/echo/%s" % m)
            self.assertEqual(rec["host"], "origin.test")

    def test_lookalike_hosts_denied(self):
        for host in ("origin.test.evil", "xorigin.test", "origin.tes", "origin-test"):
            self.deny("http://%s:%d/echo" % (host, self.origin.port), "host_denied")

    def test_wildcard_host(self):
        r = self.curl(self.url("/echo", host="a.wild.test"))
        self.assertEqual(r.status, 200, r)
        r = self.curl(self.url("/echo", host="deep.er.wild.test"))
        self.assertEqual(r.status, 200, r)
        # `*.wild.test` does not cover the bare suffix or a look-alike.
        self.deny(self.url("/echo", host="wild.test"), "host_denied")
        self.deny(self.url("/echo", host="a.notwild.test"), "host_denied")
        self.deny(self.url("/echo", host="a.wild.test.evil"), "host_denied")

    def test_host_regex_full_match(self):
        r = self.curl(self.url("/echo", host="api12.regex.test"))
        self.assertEqual(r.status, 200, r)
        rec = self.assert_audit(host="api12.regex.test")
        self.assertEqual(rec["rule"], "regex")
        self.deny(self.url("/echo", host="xapi1.regex.test"), "host_denied")
        self.deny(self.url("/echo", host="api1.regex.test.evil"), "host_denied")

    def test_connect_to_denied_host(self):
        m = marker()
        host = "%s.denied.test" % m
        [r], _ = self.send_raw(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n"
                               % (host.encode(), host.encode()))
        self.assert_answer(r, "host_denied")
        rec = self.assert_audit(host=host)
        self.assertEqual(rec["scheme"], "connect")
        self.assertEqual(rec["decision"], "deny")

    def test_connect_to_rule_with_paths_needs_inspection(self):
        # The origin rule checks methods and paths; an opaque tunnel cannot honour that.
        before = self.origin.accepted
        [r], _ = self.send_raw(b"CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n"
                               % (self.origin.port, self.origin.port))
        self.assert_answer(r, "needs_inspection")
        self.assertEqual(self.origin.accepted, before, "a refused tunnel connected upstream")

    # -- agents -------------------------------------------------------------------------------

    def test_agent_with_token_reaches_its_rule(self):
        m = marker()
        r = self.curl(self.url("/echo/%s" % m, host="other.test"),
                      args=["--proxy-user", "coder:" + TOKEN])
        self.assertEqual(r.status, 200, r)
        names = [k.lower() for k, _ in r.json()["headers"]]
        self.assertNotIn("proxy-authorization", names)
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual(rec["agent"], "coder")
        self.assertEqual(rec["rule"], "other")

    def test_agent_rules_do_not_leak_to_other_agents(self):
        # coder is not given `wild`.
        [r], _ = self.send_raw(self.request("GET", self.url("/echo", host="a.wild.test"),
                                            headers=[("Proxy-Authorization",
                                                      basic("coder", TOKEN))]))
        self.assert_answer(r, "host_denied")

    def test_wrong_token_is_407(self):
        for creds in (basic("coder", "wrong"), basic("coder", ""), basic("nobody", TOKEN),
                      "Basic !!notbase64!!", "Bearer wrong-" + TOKEN):
            m = marker()
            [r], _ = self.send_raw(self.request(
                "GET", self.url("/echo/%s" % m, host="other.test"),
                headers=[("Proxy-Authorization", creds)]))
            self.assert_answer(r, "auth_required", msg="credentials %r" % creds)
            self.assertIsNotNone(r.header("Proxy-Authenticate"), r)
            self.assertTrue(r.header("Proxy-Authenticate").lower().startswith("basic"), r)
            rec = self.assert_audit(path="/echo/%s" % m)
            self.assertEqual(self.origin.seen(m), [])
            self.assertEqual(rec["reason"], "auth_required")
            # The token must never be written anywhere.
            self.assertNotIn(TOKEN, str(rec))
        self.assertNotIn(TOKEN, self.proxy.stderr())

    def test_empty_or_repeated_proxy_authorization_is_407(self):
        # An empty header is not "no credentials" (this policy's default agent would answer
        # for it), and of two the proxy must not pick one: either way 407 and nothing sent.
        cases = {"empty Proxy-Authorization header": [("Proxy-Authorization", "")],
                 "more than one Proxy-Authorization header":
                     [("Proxy-Authorization", basic("coder", TOKEN)),
                      ("Proxy-Authorization", basic("coder", TOKEN))]}
        for why, headers in cases.items():
            m = marker()
            [r], _ = self.send_raw(self.request("GET", self.url("/echo/%s" % m),
                                                headers=headers))
            self.assert_answer(r, "auth_required", msg=why)
            rec = self.assert_audit(path="/echo/%s" % m)
            self.assertEqual(rec["reason"], "auth_required", rec)
            self.assertIn(why, rec.get("detail", ""), rec)
            self.assertEqual(self.origin.seen(m), [])
        # The same on CONNECT.
        [r], _ = self.send_raw(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n"
                               b"Proxy-Authorization: \r\n\r\n")
        self.assert_answer(r, "auth_required")

    def test_wrong_token_on_connect_is_407(self):
        [r], _ = self.send_raw(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n"
                               b"Proxy-Authorization: %s\r\n\r\n" % basic("coder", "x").encode())
        self.assert_answer(r, "auth_required")

    # -- upgrades -----------------------------------------------------------------------------

    def test_websocket_upgrade_denied(self):
        self.deny(self.url("/echo"), "upgrade_denied",
                  headers=[("Connection", "Upgrade"), ("Upgrade", "websocket"),
                           ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                           ("Sec-WebSocket-Version", "13")])

    def test_h2c_upgrade_denied(self):
        self.deny(self.url("/echo"), "upgrade_denied",
                  headers=[("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"),
                           ("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")])


class UpgradeAllowedTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy([origin_rule(p, name="ws", hosts=["ws.test"], paths=["^/ws$"],
                                        upgrades=["websocket"])])

    def test_websocket_upgrade_frames_are_read(self):
        # After the 101 the proxy reads WebSocket frames (test_websocket.py has the echo): bytes
        # that are not a client's masked frames get a close 1002, not a blind relay.
        c = self.raw()
        self.addCleanup(c.close)
        c.send(self.request("GET", self.url("/ws", host="ws.test"), headers=[
            ("Connection", "Upgrade"), ("Upgrade", "websocket"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]))
        r = c.read_response()
        self.assertIsNotNone(r)
        self.assertEqual(r.status, 101, r)
        self.assertEqual(r.header("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        c.take()
        payload = bytes(range(256)) * 40
        c.send(payload)
        close = c.recv_exact(4, env.t(10))  # FIN+close, length, the code
        self.assertEqual(close[0], 0x88, close)
        self.assertEqual(int.from_bytes(close[2:4], "big"), 1002, close)

    def test_other_upgrade_still_denied(self):
        [r], _ = self.send_raw(self.request("GET", self.url("/ws", host="ws.test"), headers=[
            ("Connection", "Upgrade"), ("Upgrade", "h2c")]))
        self.assert_answer(r, "upgrade_denied")


class ReportModePolicyTest(ProxyTestCase):
    """mode: report for the whole policy: what would be denied passes, and says so."""

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port, mode=None)], mode="report")

    def test_denied_path_passes_and_is_reported(self):
        m = marker()
        r = self.curl(self.url("/secret/%s" % m))
        self.assertEqual(r.status, 404, "the origin answers /secret with 404: %r" % r)
        self.assertIsNone(r.header("X-Airlock-Reason"))
        self.assertEqual(len(self.origin.completed("/secret/%s" % m)), 1)
        rec = self.assert_audit(path="/secret/%s" % m)
        self.assertEqual(rec["decision"], "report", rec)
        self.assertEqual(rec["reason"], "path_denied", rec)

    def test_denied_method_passes_and_is_reported(self):
        m = marker()
        r = self.curl(self.url("/echo/%s" % m), args=["-X", "DELETE"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["method"], "DELETE")
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual((rec["decision"], rec["reason"]), ("report", "method_denied"), rec)

    def test_allowed_request_is_allow(self):
        m = marker()
        self.assertEqual(self.curl(self.url("/echo/%s" % m)).status, 200)
        rec = self.assert_audit(path="/echo/%s" % m)
        self.assertEqual(rec["decision"], "allow", rec)


class ReportModeRuleTest(ProxyTestCase):
    """mode: report on one rule only; the others still enforce."""

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy([origin_rule(p),
                            origin_rule(p, name="lenient", hosts=["lenient.test"],
                                        mode="report")])

    def test_report_rule_passes_denied_path(self):
        m = marker()
        r = self.curl(self.url("/secret/%s" % m, host="lenient.test"))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(len(self.origin.completed("/secret/%s" % m)), 1)
        rec = self.assert_audit(path="/secret/%s" % m)
        self.assertEqual((rec["decision"], rec["reason"], rec["rule"]),
                         ("report", "path_denied", "lenient"), rec)

    def test_enforce_rule_still_denies(self):
        m = marker()
        [r], _ = self.send_raw(self.request("GET", self.url("/secret/%s" % m)))
        self.assert_answer(r, "path_denied")
        rec = self.assert_audit(path="/secret/%s" % m)
        self.assertEqual(self.origin.seen(m), [])
        self.assertEqual(rec["decision"], "deny")


class ReportModeKeepsAddressGuardTest(ProxyTestCase):
    """Report mode relaxes policy decisions, never the address guard (DESIGN.md invariant:
    no request reaches loopback unless a CIDR exception names it)."""

    @classmethod
    def policy(cls):
        return make_policy([origin_rule(cls.origin.port, name="unguarded", hosts=["ug.test"],
                                        allow_cidrs=[], mode="report")], mode="report")

    def test_guard_enforced_in_report_mode(self):
        m = marker()
        [r], _ = self.send_raw(self.request("GET", self.url("/echo/%s" % m, host="ug.test")))
        self.assert_answer(r, "destination_ip_prohibited")
        self.assertEqual(self.origin.seen(m), [])


if __name__ == "__main__":
    unittest.main()
