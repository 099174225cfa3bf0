"""MCP / JSON-RPC tool calls as policy (issue 22) with the real binary and raw JSON-RPC bodies:
methods, tools, argument rules, DLP in arguments, batches, notifications and malformed bodies.
A refused call is answered as JSON-RPC (HTTP 200, the same id, an error code and a message
saying why) and never reaches the origin; the audit record names method and tool. The real MCP
SDK client and server are driven in test_mcp_sdk.py."""

import base64
import json
import os
import re
import tempfile
import unittest

import yaml

from harness.base import ProxyTestCase, marker
from harness.proxy import make_policy, origin_rule, run_airlock

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key, not a secret


def call(tool, arguments, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


class McpJsonRpcTest(ProxyTestCase):
    adversarial = True

    @classmethod
    def policy(cls):
        p = cls.origin.port
        return make_policy(
            [origin_rule(p),
             origin_rule(p, name="mcp", hosts=["mcp.test"],
                         mcp={"methods": ["initialize", "notifications/initialized",
                                          "tools/list", "tools/call"],
                              "tools": {"echo": None,
                                        "read_file": {"arguments": {
                                            "path": {"type": "string",
                                                     "pattern": "/workspace/.*",
                                                     "required": True}}}},
                              "max_batch": 8})])

    def post(self, payload, raw=None):
        m = marker()
        body = raw if raw is not None else json.dumps(payload).encode()
        url = self.url("/echo/" + m, host="mcp.test")
        [r], _ = self.send_raw(self.request(
            "POST", url, headers=[("Content-Type", "application/json"),
                                  ("Accept", "application/json, text/event-stream")],
            body=body))
        return r, m

    def refused(self, payload, reason, code, raw=None, status=200):
        r, m = self.post(payload, raw)
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("X-Airlock-Reason"), reason, r)
        self.assertEqual(r.header("Content-Type"), "application/json", r)
        self.assertEqual(self.origin.seen(m), [], "a refused call reached the origin")
        answer = r.json()
        rec = self.assert_audit(path=lambda p: p is not None and m in p)
        self.assertEqual(rec["reason"], reason)
        self.assertEqual(rec["decision"], "deny")
        if isinstance(answer, dict):
            self.assertEqual(answer["jsonrpc"], "2.0")
            self.assertEqual(answer["error"]["code"], code, answer)
            self.assertEqual(answer["error"]["data"]["reason"], reason)
        return answer, rec

    def test_allowed_call_reaches_the_origin(self):
        r, m = self.post(call("read_file", {"path": "/workspace/notes.txt"}))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "/echo/" + m)  # the origin's echo
        rec = self.assert_audit(path=lambda p: p is not None and m in p)
        self.assertEqual(rec["decision"], "allow")
        self.assertEqual(rec["mcp"], [{"method": "tools/call", "tool": "read_file"}])

    def test_disallowed_tool(self):
        answer, rec = self.refused(call("delete_repository", {"repo": "x"}, id="req-7"),
                                   "mcp_tool_denied", -32001)
        self.assertEqual(answer["id"], "req-7")
        self.assertIn("delete_repository", answer["error"]["message"])
        self.assertEqual(rec["mcp"], [{"method": "tools/call", "tool": "other"}])

    def test_bad_argument_names_the_rule_not_the_value(self):
        answer, rec = self.refused(call("read_file", {"path": "/etc/shadow"}, id=3),
                                   "mcp_params_denied", -32602)
        self.assertEqual(answer["id"], 3)
        self.assertIn("argument 'path'", answer["error"]["message"])
        self.assertNotIn("/etc/shadow", json.dumps(answer))
        self.assertNotIn("/etc/shadow", json.dumps(rec))
        self.refused(call("read_file", {}, id=4), "mcp_params_denied", -32602)

    def test_secret_in_an_argument(self):
        answer, rec = self.refused(call("echo", {"text": "use " + AWS_KEY}, id=5),
                                   "dlp_blocked", -32002)
        self.assertIn("aws-access-key", answer["error"]["message"])
        self.assertNotIn(AWS_KEY, json.dumps(answer))
        self.assertIn({"class": "aws-access-key", "location": "mcp-arguments",
                       "action": "block"}, rec["dlp"])

    def test_method_not_allowed(self):
        self.refused({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "file:///etc/passwd"}}, "mcp_method_denied", -32601)

    def test_batch_with_one_bad_call_is_refused_whole(self):
        answer, rec = self.refused(
            [call("echo", {"text": "hi"}, id=1),
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             call("delete_repository", {}, id=2)],
            "mcp_tool_denied", None)
        self.assertEqual(sorted(a["id"] for a in answer), [1, 2])  # no answer for the notification
        by_id = {a["id"]: a["error"]["code"] for a in answer}
        self.assertEqual(by_id, {1: -32003, 2: -32001})
        self.assertEqual(len(rec["mcp"]), 3)

    def test_allowed_batch_passes(self):
        r, m = self.post([call("echo", {"text": "a"}, id=1), call("echo", {"text": "b"}, id=2)])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "/echo/" + m)

    def test_refused_notification_gets_an_http_error(self):
        r, m = self.post({"jsonrpc": "2.0", "method": "notifications/cancelled"})
        self.assert_answer(r, "mcp_method_denied")
        self.assertEqual(self.origin.seen(m), [])

    def test_malformed_bodies(self):
        answer, _ = self.refused(None, "mcp_invalid", -32700, raw=b'{"jsonrpc": "2.0", ',
                                 status=400)
        self.assertIsNone(answer["id"])
        # A duplicated key: which "name" the server would read is a guess.
        self.refused(None, "mcp_invalid", -32700, status=400,
                     raw=b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                         b'"params":{"name":"echo","name":"delete_repository"}}')
        answer, _ = self.refused({"jsonrpc": "1.0", "id": 9, "method": "ping"}, "mcp_invalid",
                                 -32600, status=400)
        self.assertEqual(answer["id"], 9)
        self.refused([call("echo", {}, id=i) for i in range(9)], "mcp_invalid", -32600,
                     status=400)

    def test_body_is_read_only_as_utf8_json(self):
        # A server may decode the body in the charset the request names (the TypeScript SDK's
        # HTTP+SSE server transport decodes UTF-7): this ASCII body calls `echo` as the proxy
        # reads it, and `delete_repository` in UTF-7. Only application/json in UTF-8,
        # unencoded, is read; anything else is refused before it is read.
        hidden = '"},"name":"delete_repository","arguments":{"repo":"prod'
        utf7 = "+" + base64.b64encode(hidden.encode("utf-16-be")).decode().rstrip("=") + "-"
        body = json.dumps(call("echo", {"text": utf7})).encode()
        json_type = ("Content-Type", "application/json")
        for headers, why in [
                ([("Content-Type", "application/json; charset=utf-7")], "charset 'utf-7'"),
                ([("Content-Type", 'application/json; Charset="UTF-7"')], "charset 'UTF-7'"),
                ([("Content-Type", "application/json;charset=utf-8;charset=utf-7")],
                 "several charset parameters"),
                ([json_type, ("Content-Type", "application/json; charset=utf-7")],
                 "Content-Type in several field lines"),
                ([json_type, ("Content-Encoding", "gzip")], "Content-Encoding 'gzip'"),
                ([("Content-Type", "text/plain")], "application/json expected"),
                ([], "no Content-Type")]:
            m = marker()
            [r], _ = self.send_raw(self.request("POST", self.url("/echo/" + m, host="mcp.test"),
                                                headers=headers, body=body))
            self.assert_answer(r, "mcp_invalid", msg=why)
            self.assertIn(why, r.header("Proxy-Status"))
            self.assertEqual(self.origin.seen(m), [], "a body the proxy did not read went on")
            rec = self.assert_audit(path=lambda p: p is not None and m in p)
            self.assertEqual((rec["decision"], rec["reason"]), ("deny", "mcp_invalid"), rec)
            self.assertIn(why, rec["detail"])
            self.assertEqual(len([x for x in self.proxy.audit() if m in (x.get("path") or "")]),
                             1, "one record per refused request")
        # UTF-8 named in any case, quoted or not: read as usual.
        for value in ("application/json; charset=utf-8", 'Application/JSON;CHARSET="UTF-8"'):
            m = marker()
            [r], _ = self.send_raw(self.request("POST", self.url("/echo/" + m, host="mcp.test"),
                                                headers=[("Content-Type", value)], body=body))
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["path"], "/echo/" + m)

    def test_get_and_other_rules_are_untouched(self):
        r = self.curl(self.url("/echo/get-" + marker(), host="mcp.test"))
        self.assertEqual(r.status, 200, r)
        # A rule without `mcp` forwards any body.
        m = marker()
        [r], _ = self.send_raw(self.request("POST", self.url("/echo/" + m), body=b"not json"))
        self.assertEqual(r.status, 200, r)


class McpPolicyTest(unittest.TestCase):
    """A rule with `mcp` cannot allow upgrades: the MCP filter reads HTTP bodies, and JSON-RPC
    sent as WebSocket messages (the SDK's WebSocket transport) would pass uninspected."""

    def test_mcp_with_upgrades_does_not_load(self):
        policy = make_policy([origin_rule(8080, name="mcp-ws", hosts=["mcp.test"],
                                          upgrades=["websocket"], mcp={"tools": ["echo"]})])
        with tempfile.TemporaryDirectory(prefix="airlock-itest-mcp-ws-") as d:
            config = os.path.join(d, "policy.yaml")
            with open(config, "w") as f:
                f.write(yaml.safe_dump(policy, sort_keys=False))
            with open(config) as f:
                # The error stands where the value starts (the list of upgrades).
                line = next(i for i, text in enumerate(f, 1) if "websocket" in text)
            r = run_airlock(["check", "--config", config])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"(?m)^%s:%d:\d+: rules\[0\]\.upgrades: a rule with mcp "
                         r"cannot allow upgrades: the MCP filter reads HTTP bodies, not "
                         r"WebSocket messages" % (re.escape(config), line))


class McpExplainTest(unittest.TestCase):
    """`airlock explain --body`: which method, which tool, which argument rule decided."""

    def explain(self, body):
        policy = make_policy([origin_rule(8080, name="mcp", hosts=["mcp.test"], mcp={
            "methods": ["tools/call"],
            "tools": {"read_file": {"arguments": {"path": {"type": "string",
                                                           "pattern": "/workspace/.*"}}}}})])
        with tempfile.TemporaryDirectory(prefix="airlock-itest-mcp-explain-") as d:
            config = os.path.join(d, "policy.yaml")
            with open(config, "w") as f:
                yaml.safe_dump(policy, f)
            body_file = os.path.join(d, "body.json")
            with open(body_file, "w") as f:
                f.write(json.dumps(body))
            return run_airlock(["explain", "--config", config, "--body", body_file, "POST",
                                "http://mcp.test:8080/echo/x"])

    def test_allowed_call(self):
        r = self.explain(call("read_file", {"path": "/workspace/a"}))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("mcp (rule mcp):", r.stdout)
        self.assertIn("request tools/call (method listed), tool 'read_file' (listed)", r.stdout)
        self.assertIn("argument rules: path", r.stdout)
        self.assertIn("body: allowed", r.stdout)

    def test_refusals_name_what_decided(self):
        r = self.explain([call("read_file", {"path": "/etc/passwd"}, id=1),
                          call("delete_repository", {}, id=2),
                          {"jsonrpc": "2.0", "id": 3, "method": "resources/read"}])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        out = r.stdout
        self.assertIn("body: a batch of 3 messages", out)
        self.assertIn("=> refused: mcp_params_denied, JSON-RPC -32602 (tool 'read_file': "
                      "argument 'path' breaks pattern '/workspace/.*')", out)
        self.assertIn("tool 'delete_repository' (not listed)", out)
        self.assertIn("=> refused: mcp_tool_denied, JSON-RPC -32001", out)
        self.assertIn("request resources/read (method not listed)", out)
        self.assertIn("=> refused: mcp_method_denied, JSON-RPC -32601", out)
        self.assertIn("body: refused (one refused message refuses the whole batch)", out)
        self.assertNotIn("/etc/passwd", out)


if __name__ == "__main__":
    unittest.main()
