"""Outbound DLP over what a refusal repeats, with the real binary: a secret the agent puts in
the path, an unknown query parameter's name, an MCP tool name, the TLS server name of an opaque
tunnel, or the host of a request no rule names, is refused by a filter before DLP reads the
request (the decision, validation, MCP) or by the tunnel after it (the SNI check). The secret
appears in none of the answer's body, its Proxy-Status and the audit record; the record keeps
where the secret was, replaced by [REDACTED:...]. A rule with `dlp: off` repeats what it was
sent, as it records an allowed request's path. The values are fakes shaped like the real thing."""

import json

from harness import clients, env
from harness.base import ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule, tunnel_rule

TOKEN = "ghp_" + "Zq8mR2vX7kP4nL9wT3yB6cF1hJ5sD0aGe2Uo"  # the shape of a GitHub token


class DlpRefusedRecordTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        rules = [
            origin_rule(p, name="api", hosts=["api.test"], paths=[r"^/echo(/.*)?$"],
                        query={"params": {"page": ""}, "unknown": "refuse"},
                        dlp={"action": "block"}),
            origin_rule(p, name="mcp", hosts=["mcp.test"], methods=["POST"],
                        paths=[r"^/echo(/.*)?$"], mcp={"tools": ["search"]},
                        dlp={"action": "block"}),
            tunnel_rule(p, name="tls", hosts=["tls.test"], dlp={"action": "block"}),
            origin_rule(p, name="plain", hosts=["plain.test"], paths=[r"^/echo(/.*)?$"],
                        dlp="off"),
            origin_rule(p),
        ]
        # The policy-wide dlp applies to a request no rule names.
        return make_policy(rules, dlp={"action": "block"})

    def assert_no_token(self, rec, answer=None):
        for text in (TOKEN, TOKEN.lower()):
            self.assertNotIn(text, json.dumps(rec), rec)
            if answer is not None:
                self.assertNotIn(text.encode(), answer.body, answer)
                self.assertNotIn(text, answer.header("Proxy-Status") or "", answer)

    def refused(self, data, reason):
        [r], c = self.send_raw(data)
        self.assertEqual(r.header("X-Airlock-Reason"), reason, r)
        rec = self.assert_audit(client_port=c.local_port, reason=reason)
        return r, rec

    def test_path_refused_by_the_decision(self):
        m = marker()
        url = self.url("/other/%s/%s" % (m, TOKEN), host="api.test")
        r, rec = self.refused(self.request("GET", url), "path_denied")
        self.assert_answer(r, "path_denied")
        self.assert_no_token(rec, r)
        self.assertEqual(rec["path"], "/other/%s/[REDACTED:dlp]" % m)
        self.assertEqual(rec["rule"], "api")

    def test_unknown_query_parameter_name(self):
        url = self.url("/echo/%s?%s=1" % (marker(), TOKEN), host="api.test")
        r, rec = self.refused(self.request("GET", url), "query_denied")
        self.assert_answer(r, "query_denied")
        self.assert_no_token(rec, r)
        # The detail still says what was wrong, with the name cut out.
        self.assertIn("query parameter '[REDACTED:github-token]' is not allowed", rec["detail"])

    def test_mcp_tool_name(self):
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": TOKEN, "arguments": {}}}).encode()
        url = self.url("/echo/" + marker(), host="mcp.test")
        r, rec = self.refused(self.request(
            "POST", url, body=body, headers=[("Content-Type", "application/json"),
                                             ("Accept", "application/json, text/event-stream")]),
            "mcp_tool_denied")
        self.assertEqual(r.status, 200, r)
        self.assert_no_token(rec, r)
        answer = r.json()  # still a JSON-RPC error for the same id
        self.assertEqual(answer["id"], 7, answer)
        self.assertEqual(answer["error"]["data"]["reason"], "mcp_tool_denied", answer)

    def test_tls_server_name_of_an_opaque_tunnel(self):
        connect = "tls.test:%d" % self.origin.port
        c = self.raw()
        self.addCleanup(c.close)
        c.send(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (connect, connect)).encode())
        r = c.read_response(tunnel=True)
        self.assertEqual(r.status, 200, r)
        c.send(clients.client_hello(TOKEN.lower() + ".tls.test"))
        self.assertTrue(c.closed_by_peer(env.t(5)), "the tunnel with a foreign SNI stayed open")
        rec = self.assert_audit(client_port=c.local_port, reason="sni_mismatch")
        self.assert_no_token(rec)
        self.assertIn("but SNI [REDACTED:github-token].tls.test", rec["detail"])

    def test_host_no_rule_names_under_the_policy_wide_dlp(self):
        m = marker()
        url = self.url("/echo/" + m, host=TOKEN.lower() + ".nowhere.test")
        r, rec = self.refused(self.request("GET", url), "host_denied")
        self.assert_answer(r, "host_denied")
        self.assert_no_token(rec, r)
        self.assertEqual(rec["host"], "[REDACTED:dlp].nowhere.test")

    def test_allowed_path_is_redacted_as_before(self):
        url = self.url("/echo/%s/%s" % (marker(), TOKEN), host="api.test")
        r, rec = self.refused(self.request("GET", url), "dlp_blocked")
        self.assert_no_token(rec, r)

    def test_a_rule_without_dlp_repeats_what_it_was_sent(self):
        m = marker()
        url = self.url("/other/%s/%s" % (m, TOKEN), host="plain.test")
        _, rec = self.refused(self.request("GET", url), "path_denied")
        self.assertEqual(rec["path"], "/other/%s/%s" % (m, TOKEN))
